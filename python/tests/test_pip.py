"""pip builds a wheel of the repository, a fresh venv installs it, and the
package works from there without PYTHONPATH: the module, the Torch plugin
beside it, and the examples (issue 43, item 1)."""

import glob
import os
import re
import subprocess
import sys

import pytest

SOURCE = os.environ.get("FEDLDP_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("FEDLDP_BINARY_DIR")

# Run in the venv with the module found only where pip put it.
CHECK = r"""
import os, sys
import numpy as np
import fedldp
print("file", fedldp.__file__)
print("version", fedldp.__version__)
rng = np.random.default_rng(1)
X = rng.standard_normal((200, 784)).astype(np.float32)
y = (np.arange(200) % 10).astype(np.int64)
run = fedldp.train_ldpfl(X=X, y=y, X_test=X[:50], y_test=y[:50], clients=4, rounds=1,
                         epsilon=1.0, threads=1)
print("parameters", run["parameters"])
r = fedldp.VectorRandomizer("privunitg", 16, 4.0, 1.0)
print("report", len(r.randomize(np.ones(16) / 4, rng=1)))
"""


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "FEDLDP_TORCH"))}
    env.update(extra)
    return env


def run(command, cwd, **env):
    out = subprocess.run(command, cwd=cwd, env=clean_env(**env), capture_output=True, text=True,
                         timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if not BINARY:
        pytest.skip("FEDLDP_BINARY_DIR names the configured build pip reuses (ctest sets it)")
    root = tmp_path_factory.mktemp("pip")
    env = str(root / "venv")
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", env], root)
    wheels = root / "wheels"
    build = {"FEDLDP_CMAKE_BUILD_DIR": BINARY}
    run([f"{env}/bin/pip", "wheel", "--no-build-isolation", "--no-index", "--no-deps", "-w",
         str(wheels), SOURCE], root, **build)
    (wheel,) = glob.glob(str(wheels / "fedldp-*.whl"))
    run([f"{env}/bin/pip", "install", "--no-index", wheel], root)
    return root, env, os.path.basename(wheel)


def test_the_wheel_carries_cmakes_version(venv):
    _, _, wheel = venv
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        version = re.search(r"project\(fedldp VERSION ([0-9.]+)", f.read()).group(1)
    assert wheel.startswith(f"fedldp-{version}-"), wheel


def test_the_installed_package_runs_from_the_venv(venv):
    root, env, wheel = venv
    out = run([f"{env}/bin/python", "-c", CHECK], root)
    assert f"file {env}/lib/" in out, out
    assert re.search(r"^version \S+$", out, re.M) and wheel.split("-")[1] in out, out
    assert re.search(r"^parameters \d+$", out, re.M), out  # the Torch plugin loaded
    assert "report 16" in out, out


@pytest.mark.parametrize("example", [["fedsel_adult.py"],
                                     ["ldpfl_torch.py", "--quick", "--seed-noise"]])
def test_the_examples_run_from_the_venv(venv, example):
    root, env, _ = venv
    out = run([f"{env}/bin/python", os.path.join(SOURCE, "examples", "python", *example[:1]),
               *example[1:]], root)
    assert "majority class" in out, out

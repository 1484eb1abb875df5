"""The scripts in examples/python run and say what they promise."""

import os
import re
import subprocess
import sys

import pytest

SOURCE = os.environ.get("FEDLDP_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))


def run(script, *args):
    path = os.path.join(SOURCE, "examples", "python", script)
    out = subprocess.run([sys.executable, path, *args], check=True, capture_output=True,
                         text=True, timeout=600)
    return out.stdout


@pytest.mark.parametrize("randomizer", [["--randomizer", "twopoint"],
                                        ["--randomizer", "privunitg", "--epsilon", "4"]])
def test_the_pytorch_example_trains_a_private_model(randomizer):
    out = run("ldpfl_torch.py", "--quick", "--seed-noise", *randomizer)
    final = re.search(r"final: \S+ ([\d.]+) %, noise-free ([\d.]+) %, majority class ([\d.]+) %",
                      out)
    assert final, out
    private, noise_free, majority = map(float, final.groups())
    assert noise_free > majority + 20
    assert "privacy:" in out


def test_the_adult_example_prints_every_model():
    out = run("fedsel_adult.py")
    for name in ["np (non-private)", "ps-pm", "privunitg, eps", "privunitg, shuffled",
                 "majority class"]:
        assert name in out, out
    shuffled = re.search(r"privunitg, shuffled\s+([\d.]+) %\s+privacy: \(([\d.]+), 1e-06\)", out)
    assert shuffled and float(shuffled.group(2)) <= 1.0, out


def test_the_example_refuses_bad_options():
    with pytest.raises(subprocess.CalledProcessError):
        run("ldpfl_torch.py", "--randomizer", "nope")

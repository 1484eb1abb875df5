"""setuptools drives CMake: `pip install --no-build-isolation .` and `pip wheel`.

The extension fedldp._fedldp and the Torch plugin it loads (libfedldp_torch.so,
beside it) are CMake targets of this project; this file configures a release
build of them (without tests and benchmarks) in setuptools' build folder, or
reuses the configured build named by FEDLDP_CMAKE_BUILD_DIR, and copies both
into the package. The version is the one CMakeLists.txt's project() gives.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
GIVEN_BUILD = os.environ.get("FEDLDP_CMAKE_BUILD_DIR")
# Everything setuptools writes (its build folders, the egg-info) goes under
# the git-ignored build/ (or the given build), not beside the sources.
WORK = (Path(GIVEN_BUILD).resolve() if GIVEN_BUILD else ROOT / "build") / "pip"


def version():
    text = (ROOT / "CMakeLists.txt").read_text()
    found = re.search(r"project\(fedldp VERSION ([0-9][0-9.]*)", text)
    if not found:
        raise RuntimeError("CMakeLists.txt: no project(fedldp VERSION ...)")
    return found.group(1)


def run(command):
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True)


class CMakeBuild(build_ext):
    """Builds the CMake targets and copies what they made into the package."""

    def build_extension(self, ext):
        build = Path(GIVEN_BUILD or Path(self.build_temp) / "cmake").resolve()
        if not (build / "CMakeCache.txt").exists():
            if GIVEN_BUILD:
                raise RuntimeError(f"FEDLDP_CMAKE_BUILD_DIR={GIVEN_BUILD} is not a configured build")
            # Debian's interpreter, not a venv's link to it: the module is
            # built against the Python whose headers and numpy it finds.
            python = getattr(sys, "_base_executable", sys.executable)
            run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
                 "-DCMAKE_BUILD_TYPE=Release", "-DFEDLDP_BUILD_TESTS=OFF",
                 "-DFEDLDP_BUILD_BENCHMARKS=OFF", f"-DFEDLDP_PYTHON={python}"])
        run(["cmake", "--build", str(build), "--target", "_fedldp", "fedldp_torch",
             "-j", str(os.cpu_count() or 1)])
        package = Path(self.get_ext_fullpath(ext.name)).parent
        package.mkdir(parents=True, exist_ok=True)
        module = Path(self.get_ext_fullpath(ext.name)).name
        shutil.copy2(build / "python" / "fedldp" / module, package / module)
        shutil.copy2(build / "libfedldp_torch.so", package / "libfedldp_torch.so")


WORK.mkdir(parents=True, exist_ok=True)
setup(
    version=version(),
    options={"build": {"build_base": str(WORK)}, "egg_info": {"egg_base": str(WORK)}},
    ext_modules=[Extension("fedldp._fedldp", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)

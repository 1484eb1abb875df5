"""The `fedldp` binary of the build under test, for tests that compare the
module with the command or drive a deployment (ctest sets
FEDLDP_BINARY_DIR); a test without it is skipped."""

import os

import pytest


def cli():
    build = os.environ.get("FEDLDP_BINARY_DIR")
    path = os.path.join(build, "apps", "fedldp", "fedldp") if build else None
    if not path or not os.path.exists(path):
        pytest.skip("the fedldp binary is not known (FEDLDP_BINARY_DIR)")
    return path

"""What every test of the module gets."""

import pytest

from fedldp_cli import kill_started


@pytest.fixture(autouse=True)
def no_process_outlives_its_test():
    yield
    kill_started()

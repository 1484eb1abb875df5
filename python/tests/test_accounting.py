"""The accountant through the Python module: the same statement as the
`fedldp account run` command, the inverse, and the published shuffle
example."""

import os
import shlex
import subprocess

import pytest

import fedldp


def cli():
    build = os.environ.get("FEDLDP_BINARY_DIR")
    path = os.path.join(build, "apps", "fedldp", "fedldp") if build else None
    if not path or not os.path.exists(path):
        pytest.skip("the fedldp binary is not known (FEDLDP_BINARY_DIR)")
    return path


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(local_epsilon=2.0, rounds=4),
        dict(local_epsilon=4.0, rounds=8, shuffle=True, reports_per_round=20_000, delta=1e-5),
        dict(local_epsilon=3.0, rounds=20, shuffle=True, reports_per_round=5_000,
             sampling_rate=0.25),
        dict(local_epsilon=2.0, rounds=4, mechanism="pm"),
        dict(local_epsilon=2.0, rounds=4, mechanism="privunitg"),
        dict(local_epsilon=4.0, rounds=5, shuffle=True, reports_per_round=10_000,
             mechanism="privunitg", report_deviation=1e-12),
    ],
)
def test_the_statement_is_the_commands(kwargs):
    p = fedldp.account_run(**kwargs)
    out = subprocess.run(
        [cli(), "account", "run", *shlex.split(p["arguments"])],
        check=True, capture_output=True, text=True,
    ).stdout
    assert out.strip() == p["description"].strip()
    # The statement ends with whether eps0 holds in floating point (issue 39).
    assert p["description"].strip().endswith(p["floating_point"])
    assert p["floating_point"].startswith("floating point: ")
    if kwargs.get("mechanism") == "privunitg":
        assert "the nearest to PrivUnitG's real report" in p["floating_point"]
    elif kwargs.get("mechanism") == "pm":
        assert "drawn with exact probabilities" in p["floating_point"]
    # A report's deviation from the ideal law costs delta on top (issue 39).
    assert (p["allowance"] > 0) == ("report_deviation" in kwargs)
    assert p["total"]["delta"] <= kwargs.get("delta", 1e-6) + p["allowance"]
    assert p["shuffled"] == kwargs.get("shuffle", False)
    if not p["shuffled"]:
        assert p["round"] is None
        assert p["total"]["epsilon"] <= kwargs["local_epsilon"] * kwargs["rounds"]


def test_the_inverse_is_tight():
    eps0 = fedldp.local_epsilon_for_central(5.0, rounds=8, reports_per_round=20_000, delta=1e-5)
    at = fedldp.account_run(eps0, rounds=8, shuffle=True, reports_per_round=20_000, delta=1e-5)
    above = fedldp.account_run(eps0 * 1.01, rounds=8, shuffle=True, reports_per_round=20_000,
                               delta=1e-5)
    assert at["total"]["epsilon"] <= 5.0 < above["total"]["epsilon"]


def test_the_published_shuffle_example():
    # Feldman, McMillan & Talwar (FOCS 2021): n = 100,000, eps0 = 4,
    # delta = 1e-6 gives eps between 0.1675 and 0.1728.
    b = fedldp.shuffle_epsilon(100_000, 4.0, 1e-6)
    assert 0.1675 <= b["epsilon_lower"] <= b["epsilon"] <= 0.1728


def test_bad_configurations_raise():
    with pytest.raises(ValueError):
        fedldp.account_run(-1.0)
    with pytest.raises(ValueError):
        fedldp.account_run(1.0, shuffle=True, reports_per_round=0)
    with pytest.raises(ValueError, match="unknown mechanism 'pmm'"):
        fedldp.account_run(1.0, mechanism="pmm")
    with pytest.raises(ValueError):
        fedldp.local_epsilon_for_central(1e-9, rounds=100, reports_per_round=10)

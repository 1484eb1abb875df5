"""Vector randomizers through the Python module: the exact mean squared
error, unbiasedness, the clip, report validation and seeding."""

import math

import numpy as np
import pytest

import fedldp

Z = 5.0


def squared_error_holds(r, x, reports, scale=1.0):
    """True iff the sample mean of ||R(x) - x||^2 matches r.squared_error
    (times scale) within 5 standard errors."""
    e = ((reports - x) ** 2).sum(axis=1)
    return abs(e.mean() - scale * r.squared_error(np.linalg.norm(x))) <= Z * e.std() / math.sqrt(e.size)


@pytest.mark.parametrize("name", ["privunitg", "gaussian", "duchi"])
def test_error_and_mean_match_the_closed_form(name):
    d, n = 64, 40_000
    delta = 1e-6 if name == "gaussian" else 0.0
    r = fedldp.VectorRandomizer(name, d, 2.0, clip=1.5, delta=delta)
    x = np.linspace(-1, 1, d)
    x *= 1.2 / np.linalg.norm(x)
    reports = r.randomize(np.tile(x, (n, 1)), fedldp.Rng(9))
    assert reports.shape == (n, d)
    assert squared_error_holds(r, x, reports)
    assert not squared_error_holds(r, x, reports, scale=1.05)
    # Unbiased: E||mean - x||^2 = squared_error / n; its sample is a sum of d
    # near-independent squares, so allow 1 + 5 sqrt(2 / d).
    err = ((reports.mean(axis=0) - x) ** 2).sum()
    assert err <= r.squared_error(1.2) / n * (1 + Z * math.sqrt(2 / d))
    assert r.unbiased


def test_fastprojunit_error_is_within_its_stated_bound():
    d, n = 300, 4000
    r = fedldp.VectorRandomizer("fastprojunit", d, 4.0, k=64)
    x = np.zeros(d)
    x[:3] = [0.6, -0.5, 0.2]
    reports = r.randomize(np.tile(x, (n, 1)), 4)
    e = ((reports - x) ** 2).sum(axis=1)
    assert e.mean() <= r.squared_error(np.linalg.norm(x)) + Z * e.std() / math.sqrt(n)
    assert not r.unbiased


def test_longer_inputs_are_clipped_onto_the_ball():
    d, n = 32, 40_000
    r = fedldp.VectorRandomizer("privunitg", d, 3.0, clip=1.0)
    x = np.full(d, 1.0)  # norm sqrt(32)
    clipped = x / np.linalg.norm(x)
    reports = r.randomize(np.tile(x, (n, 1)), 1)
    err = ((reports.mean(axis=0) - clipped) ** 2).sum()
    assert err <= r.squared_error(1.0) / n * (1 + Z * math.sqrt(2 / d))


def test_reports_validate_and_forgeries_do_not():
    r = fedldp.VectorRandomizer("privunitg", 16, 2.0)
    report = r.randomize(np.zeros(16), 3)
    r.validate(report)
    with pytest.raises(ValueError):
        r.validate(report[:15])
    bad = report.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError):
        r.validate(bad)


def test_seeds_reproduce_and_shapes_are_checked():
    r = fedldp.VectorRandomizer("privunitg", 10, 1.0)
    x = np.full(10, 0.1)
    assert np.array_equal(r.randomize(x, 5), r.randomize(x, 5))
    assert not np.array_equal(r.randomize(x), r.randomize(x))
    with pytest.raises(ValueError, match=r"shape \(10,\) or \(n, 10\)"):
        r.randomize(np.zeros(9), 1)
    with pytest.raises(ValueError, match="delta"):
        fedldp.VectorRandomizer("privunitg", 10, 1.0, delta=1e-6)
    with pytest.raises(ValueError):
        fedldp.VectorRandomizer("privunit", 10, 1.0)
    assert "fastprojunit" in fedldp.vector_randomizer_names()


def test_seeded_reports_are_sixteen_bytes_and_decode_to_randomize():
    d = 200
    r = fedldp.VectorRandomizer("privunitg-seed", d, 3.0)
    assert r.max_sent_bytes == 16
    x = np.linspace(-1, 1, d) / 20
    sent = r.encode_sent(x, 4)
    assert isinstance(sent, bytes) and len(sent) == 16
    assert np.array_equal(r.decode_sent(sent), r.randomize(x, 4))
    with pytest.raises(ValueError):
        r.decode_sent(sent[:15])
    plain = fedldp.VectorRandomizer("privunitg", d, 3.0)
    assert plain.max_sent_bytes == 0 and plain.encode_sent(x, 4) is None
    with pytest.raises(ValueError):
        plain.decode_sent(sent)

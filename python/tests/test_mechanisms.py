"""Scalar mechanisms and selectors through the Python module, checked by
their mathematics: unbiasedness and variance against the closed form, exact
likelihood ratios against e^eps, selection frequencies against the exact
probabilities. Seeds are fixed; tolerances are 5 standard errors of the
sample, and each check is shown to reject a wrong constant."""

import math
import threading

import numpy as np
import pytest

import fedldp

N = 400_000
Z = 5.0


def mean_and_variance_hold(mech, x, y, variance_scale=1.0):
    """True iff y's sample mean and variance match mech's exact law at x
    (variance scaled by variance_scale, to show the check has power)."""
    var = mech.variance(x) * variance_scale
    mean_ok = abs(y.mean() - mech.mean(x)) <= Z * math.sqrt(var / y.size)
    # Var of the sample variance: (mu4 - var^2) / n; mu4 from the sample.
    c = y - y.mean()
    se_var = math.sqrt(max((c**4).mean() - c.var() ** 2, 1e-300) / y.size)
    var_ok = abs(c.var() - var) <= Z * se_var
    return mean_ok and var_ok


@pytest.mark.parametrize("name", ["duchi", "pm", "hm", "laplace", "twopoint"])
@pytest.mark.parametrize("x", [-1.0, -0.3, 0.0, 0.8])
def test_sample_is_unbiased_with_the_stated_variance(name, x):
    mech = fedldp.ValueMechanism(name, 1.5)
    y = mech.sample(np.full(N, x), fedldp.Rng(7))
    assert y.shape == (N,)
    assert mean_and_variance_hold(mech, x, y)
    # The same check rejects a variance 5 % off.
    assert not mean_and_variance_hold(mech, x, y, variance_scale=1.05)


def test_inputs_outside_the_domain_are_clipped_first():
    mech = fedldp.ValueMechanism("pm", 2.0)
    y = mech.sample(np.full(N, 7.0), 3)
    assert mech.clip(7.0) == 1.0 and mech.clip(float("nan")) == 0.0
    assert abs(y.mean() - 1.0) <= Z * math.sqrt(mech.variance(1.0) / N)


@pytest.mark.parametrize("name,eps", [("duchi", 1.0), ("twopoint", 0.5), ("pm", 2.0), ("hm", 1.0)])
def test_likelihood_ratios_stay_within_e_eps(name, eps):
    mech = fedldp.ValueMechanism(name, eps)
    ys = np.array(mech.atoms)
    if mech.grid:
        step, lo, hi = mech.grid
        ys = np.concatenate([ys, step * np.unique(np.linspace(lo, hi, 2001).round())])
    xs = np.linspace(-1, 1, 41)
    lik = np.array([[mech.likelihood(y, x) for x in xs] for y in ys])
    worst = (lik.max(axis=1) / lik.min(axis=1)).max()
    assert worst <= math.exp(eps) * (1 + 1e-12)
    # Reached: the bound is tight (pm's ratio is an integer fraction (b + c) / b
    # with b >= 2^24, below e^eps by at most 2^-24).
    assert worst >= math.exp(eps) * (1 - 2**-24)


@pytest.mark.parametrize("name", ["pm", "hm", "laplace"])
def test_outputs_are_grid_values_fixed_before_the_input(name):
    mech = fedldp.ValueMechanism(name, 1.0)
    step, lo, hi = mech.grid
    y = mech.sample(np.linspace(-1, 1, 10_000), 5)
    m = np.round(y / step)
    on_grid = (m * step == y) & (m >= lo) & (m <= hi)
    assert on_grid.all() or (name == "hm" and np.isin(y[~on_grid], mech.atoms).all())
    assert mech.can_output(y).all()
    assert not mech.can_output(np.nextafter(y, np.inf)).any()


def test_twopoint_takes_a_range():
    mech = fedldp.ValueMechanism("twopoint", 1.0, center=0.5, radius=0.1)
    assert mech.input_domain == pytest.approx((0.4, 0.6))
    b = (math.e + 1) / (math.e - 1)
    assert sorted(mech.atoms) == pytest.approx([0.5 - 0.1 * b, 0.5 + 0.1 * b])


def test_rng_seeds_reproduce_and_secure_draws_differ():
    mech = fedldp.ValueMechanism("pm", 1.0)
    x = np.linspace(-1, 1, 1000)
    assert np.array_equal(mech.sample(x, 11), mech.sample(x, 11))
    assert np.array_equal(mech.sample(x, fedldp.Rng(11)), mech.sample(x, 11))
    rng = fedldp.Rng(11)
    first, second = mech.sample(x, rng), mech.sample(x, rng)
    assert not np.array_equal(first, second)  # the stream continues
    assert rng.position > 0
    assert not np.array_equal(mech.sample(x), mech.sample(x))  # secure
    assert fedldp.Rng().secure and not fedldp.Rng(1).secure
    with pytest.raises(ValueError):
        fedldp.Rng().position


def test_shapes_are_kept_and_scalars_give_floats():
    mech = fedldp.ValueMechanism("duchi", 1.0)
    assert isinstance(mech.sample(0.2, 1), float)
    assert mech.sample(np.zeros((3, 4)), 1).shape == (3, 4)
    assert mech.sample([0.1, 0.2], 1).shape == (2,)
    assert mech.variance(np.zeros(5)).shape == (5,)


def test_bad_arguments_raise_with_a_reason():
    with pytest.raises(ValueError, match="unknown mechanism"):
        fedldp.ValueMechanism("pmm", 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        fedldp.ValueMechanism("pm", -1.0)
    with pytest.raises(TypeError, match="rng must be"):
        fedldp.ValueMechanism("pm", 1.0).sample(0.1, "seed")
    with pytest.raises(ValueError, match="seed must be"):
        fedldp.Rng(-1)
    assert "pm" in fedldp.value_mechanism_names()


def test_a_shared_rng_is_safe_across_threads():
    mech = fedldp.ValueMechanism("pm", 1.0)
    rng = fedldp.Rng(5)
    outs = [None] * 4

    def work(i):
        outs[i] = mech.sample(np.zeros(200_000), rng)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Every word of the stream was drawn once: the four blocks are disjoint
    # pieces of one stream, together the stream of one call of 800,000.
    together = np.sort(np.concatenate(outs))
    assert np.array_equal(together, np.sort(mech.sample(np.zeros(800_000), fedldp.Rng(5))))


def test_selector_frequencies_match_the_exact_probabilities():
    d, k, eps = 20, 4, 1.0
    r = np.linspace(1, 2, d)[::-1].copy()
    for name in ["exp", "ps", "pe"]:
        sel = fedldp.Selector(name, eps, d, k)
        p = sel.probabilities(r)
        assert p.sum() + sel.none_probability == pytest.approx(1.0, abs=1e-12)
        n = 200_000
        picks = sel.select(np.tile(r, (n, 1)), fedldp.Rng(2))
        counts = np.bincount(picks[picks >= 0], minlength=d)
        se = np.sqrt(p * (1 - p) / n)
        assert np.all(np.abs(counts / n - p) <= Z * se + 1e-12), name
        assert sel.worst_case_ratio <= math.exp(eps) * (1 + 1e-9)


def test_pe_as_published_exceeds_its_budget():
    # FedSel's Lemma 2 does not hold as written: d = 10, k = 1, eps = 1
    # gives a worst-case ratio of e^1.173; "pe" is calibrated to e^1.
    published = fedldp.Selector("pe-published", 1.0, 10, 1)
    assert math.log(published.worst_case_ratio) == pytest.approx(1.173, abs=1e-3)
    assert fedldp.Selector("pe", 1.0, 10, 1).worst_case_ratio <= math.exp(1.0) * (1 + 1e-9)


def test_selector_checks_its_input():
    sel = fedldp.Selector("ps", 1.0, 5, 2)
    assert sel.select(np.array([0.0, 5.0, 0.0, 0.0, 0.0]), 1) in range(5)
    with pytest.raises(ValueError, match=r"shape \(5,\)"):
        sel.select(np.zeros(4), 1)
    with pytest.raises(ValueError):
        fedldp.Selector("ps", 1.0, 5, 6)


# Sizes are checked before arithmetic (issue 41): layer sizes whose sum
# wraps around 2^64 passed the length check and crashed the interpreter, and
# an empty layer read past its buffer. Each is a ValueError with a reason.
@pytest.mark.parametrize(
    "sizes, weights, reason",
    [
        ([2**64 - 1, 5], 4, "overflow"),
        ([2**63, 2**63, 4], 4, "overflow"),
        ([0, 4], 4, "layer 0 is empty"),
        ([2, 0, 2], 4, "layer 1 is empty"),
        ([3, 3], 4, "the layers hold 6 weights, the model 4"),
    ],
)
def test_layer_sizes_are_checked_before_arithmetic(sizes, weights, reason):
    w = np.linspace(-1, 1, weights, dtype=np.float32)
    with pytest.raises(ValueError, match=reason):
        fedldp.LdpFlRandomizer.layer_ranges(w, sizes)
    if "weights, the model" not in reason:  # the constructor checks the sizes themselves
        with pytest.raises(ValueError, match=reason):
            fedldp.LdpFlRandomizer(1.0, sizes, [(0.0, 1.0)] * len(sizes))


def test_layer_ranges_refuse_what_they_imply():
    w = np.array([0.0, np.nan, 1.0, 2.0], dtype=np.float32)
    with pytest.raises(ValueError, match="weight 1 is not finite"):
        fedldp.LdpFlRandomizer.layer_ranges(w, [2, 2])
    w = np.zeros(4, dtype=np.float32)
    for margin in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="margin"):
            fedldp.LdpFlRandomizer.layer_ranges(w, [2, 2], margin)
    assert fedldp.LdpFlRandomizer.layer_ranges(w + 1, [1, 3]) == [(1.0, 1e-6)] * 2

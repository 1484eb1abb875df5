"""fedldp.torch: the randomizer/aggregator pairs on PyTorch state_dicts are
unbiased for the clipped weights or update, keep shapes, dtypes and
non-float tensors, and check what they are given."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import fedldp
import fedldp.torch as ftorch

Z = 5.0


def model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))


def test_per_weight_mean_is_unbiased_for_the_clipped_weights():
    global_state = model(0).state_dict()
    local_state = model(1).state_dict()
    eps, n = 1.0, 20_000
    perturber = ftorch.PerWeightPerturber(global_state, eps, ranges=(0.0, 0.4))
    server = perturber.aggregator()
    rng = fedldp.Rng(3)
    for _ in range(n):
        server.add(perturber.report(local_state, rng))
    assert server.count == n
    out = server.state_dict()
    assert out.keys() == global_state.keys()
    # The step counter is an integer buffer: taken from the global model.
    assert out["1.num_batches_tracked"].dtype == torch.int64
    mech = fedldp.ValueMechanism("twopoint", eps, center=0.0, radius=0.4)
    for k in ftorch.float_keys(global_state):
        assert out[k].shape == global_state[k].shape and out[k].dtype == torch.float32
        w = local_state[k].numpy().astype(np.float64).ravel()
        target = np.clip(w, -0.4, 0.4)
        se = np.sqrt(mech.variance(w) / n)
        assert np.all(np.abs(out[k].numpy().ravel() - target) <= Z * se + 1e-6), k
        # A wrong range (no clipping) is caught wherever a weight lies outside.
        if np.any(np.abs(w) > 0.4 + Z * se.max()):
            assert not np.all(np.abs(out[k].numpy().ravel() - w) <= Z * se + 1e-6)


def test_adaptive_ranges_come_from_the_global_weights():
    global_state = model(0).state_dict()
    perturber = ftorch.PerWeightPerturber(global_state, 2.0, margin=1.5)
    keys = ftorch.float_keys(global_state)
    assert len(perturber.ranges) == len(keys)
    w = global_state[keys[0]].numpy().astype(np.float64)
    c, r = perturber.ranges[0]
    assert c == pytest.approx((w.max() + w.min()) / 2, rel=1e-6)
    assert r == pytest.approx(1.5 * (w.max() - w.min()) / 2, rel=1e-6)


def test_update_privatizer_is_unbiased_for_the_clipped_update():
    global_state = model(0).state_dict()
    local = model(0)
    with torch.no_grad():
        for p in local.parameters():
            p.add_(0.05)
    local_state = local.state_dict()
    keys = ftorch.float_keys(global_state)
    update = ftorch.flatten(local_state, keys) - ftorch.flatten(global_state, keys)
    clip = 0.2
    clipped = update * min(1.0, clip / np.linalg.norm(update))
    n = 20_000
    privatizer = ftorch.UpdatePrivatizer(global_state, "privunitg", epsilon=4.0, clip=clip)
    server = privatizer.aggregator()
    rng = fedldp.Rng(8)
    for _ in range(n):
        server.add(privatizer.report(local_state, rng))
    mean = ftorch.flatten(server.state_dict(), keys) - ftorch.flatten(global_state, keys)
    d = update.size
    # E||mean - u||^2 = squared_error / n, a sum of d near-independent squares
    # (float32 state adds ~1e-7 per weight).
    bound = privatizer.randomizer.squared_error(clip) / n * (1 + Z * math.sqrt(2 / d))
    assert ((mean - clipped) ** 2).sum() <= bound + d * 1e-12
    assert ((mean - update) ** 2).sum() > bound  # unclipped: the clip did act


def test_bad_inputs_are_refused():
    global_state = model(0).state_dict()
    perturber = ftorch.PerWeightPerturber(global_state, 1.0)
    with pytest.raises(KeyError):
        perturber.report({"0.weight": global_state["0.weight"]})
    privatizer = ftorch.UpdatePrivatizer(global_state, "privunitg", epsilon=1.0)
    server = privatizer.aggregator()
    with pytest.raises(ValueError):
        server.state_dict()  # nothing added
    with pytest.raises(ValueError):
        server.add(np.zeros(3))
    with pytest.raises(ValueError):
        ftorch.UpdatePrivatizer(global_state, "no-such", epsilon=1.0)
    other = ftorch.PerWeightPerturber(global_state, 1.0, ranges=(0.0, 1.0))
    with pytest.raises(ValueError, match="another"):
        perturber.aggregator().add(other.report(global_state, 1))

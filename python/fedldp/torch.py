"""fedldp for a PyTorch training loop: privatise a model on the client,
aggregate the reports on the server, both on state_dicts.

Two pairs, each built from the round's global state_dict (what the server
announces, so clients and server derive the same ranges and sizes):

- PerWeightPerturber / its aggregator(): LDP-FL's per-weight two-point
  mechanism (Sun, Qian & Chen, IJCAI 2021), eps per weight, over a range
  (centre, radius) per tensor: fixed, or LDP-FL's adaptive rule from the
  global weights. Each report is a bit per weight.
- UpdatePrivatizer / its aggregator(): a vector randomizer (PrivUnitG by
  default) on the client's whole update, local - global, l2-clipped: eps per
  report, not per weight.

Either takes accountant=fedldp.Accountant(): its aggregator's state_dict()
(the round's close) records the round there once, as one report per client
(shuffled=False: each client sends one report a round) or, with
shuffled=True, as a shuffled round of the reports aggregated (sampling_rate:
the share of the clients sampled per round, in secret from the server), so
that accountant.get_epsilon(delta) follows the run. A per-weight report is
charged eps times its weights (its per-weight shuffling is not credited).

Only floating-point tensors are privatised (by default every one of the
state_dict, buffers included); the others (e.g. BatchNorm's step counter)
are taken from the global state. The noise comes from the C++ core (the GIL
released); rng is None (secure), an int seed or a fedldp.Rng, as everywhere.
"""

import numpy as np
import torch

from . import _fedldp


def float_keys(state_dict):
    """The keys of state_dict's floating-point tensors, in order."""
    return [k for k, v in state_dict.items() if torch.is_floating_point(v)]


def flatten(state_dict, keys):
    """The tensors of `keys`, flattened and concatenated, as float32 numpy."""
    if not keys:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(
        [state_dict[k].detach().cpu().reshape(-1).to(torch.float32).numpy() for k in keys]
    )


def unflatten(vector, like, keys):
    """A copy of state_dict `like` whose tensors `keys` hold `vector`."""
    vector = np.asarray(vector)
    out = {k: v.detach().clone() for k, v in like.items()}
    offset = 0
    for k in keys:
        t = like[k]
        n = t.numel()
        part = torch.from_numpy(np.ascontiguousarray(vector[offset : offset + n]))
        out[k] = part.reshape(t.shape).to(dtype=t.dtype, device=t.device)
        offset += n
    if offset != vector.size:
        raise ValueError(f"vector has {vector.size} values, the tensors {offset}")
    return out


class _Charge:
    """What a round's close records in an accountant (if any), once."""

    def __init__(self, accountant, shuffled, sampling_rate):
        if accountant is not None and not hasattr(accountant, "record_randomizer"):
            raise TypeError(
                f"accountant must be a fedldp.Accountant, not {type(accountant).__name__}"
            )
        self.accountant = accountant
        self.shuffled = bool(shuffled)
        self.sampling_rate = float(sampling_rate)

    def round(self, randomizer, reports, done):
        """Records the round of `reports` unless `done`; returns True."""
        if self.accountant is not None and not done:
            self.accountant.record_randomizer(
                randomizer,
                reports_per_round=reports if self.shuffled else 0,
                sampling_rate=self.sampling_rate,
            )
        return True


def _check_keys(state_dict, keys, what):
    missing = [k for k in keys if k not in state_dict]
    if missing:
        raise KeyError(f"{what} lacks {missing[:3]} (the global model's tensors)")
    for k in keys:
        if not torch.is_floating_point(state_dict[k]):
            raise TypeError(f"{what}[{k!r}] is not a floating-point tensor")


class PerWeightPerturber:
    """The client's side of LDP-FL: every weight of tensor t is clipped to
    [c_t - r_t, c_t + r_t] and reported as c_t +- r_t B, eps per weight.

    ranges: one (centre, radius) per tensor, or one pair for all; None takes
    LDP-FL's adaptive rule from the global weights (centre and half-width of
    each tensor, times margin).
    """

    def __init__(self, global_state, epsilon, ranges=None, margin=1.0, keys=None,
                 accountant=None, shuffled=False, sampling_rate=1.0):
        self.charge = _Charge(accountant, shuffled, sampling_rate)
        self.keys = list(keys) if keys is not None else float_keys(global_state)
        if not self.keys:
            raise ValueError("the state_dict has no floating-point tensor to perturb")
        _check_keys(global_state, self.keys, "global_state")
        self.global_state = {k: v.detach().clone() for k, v in global_state.items()}
        sizes = [global_state[k].numel() for k in self.keys]
        if ranges is None:
            ranges = _fedldp.LdpFlRandomizer.layer_ranges(
                flatten(global_state, self.keys), sizes, margin
            )
        elif len(ranges) == 2 and np.isscalar(ranges[0]):
            ranges = [tuple(ranges)] * len(sizes)
        self.ranges = [tuple(r) for r in ranges]
        self.randomizer = _fedldp.LdpFlRandomizer(epsilon, sizes, self.ranges)

    def report(self, local_state, rng=None):
        """One client's report (a fedldp.LdpFlReport) of its trained weights."""
        _check_keys(local_state, self.keys, "local_state")
        return self.randomizer.randomize(flatten(local_state, self.keys), rng)

    def aggregator(self):
        return PerWeightAggregator(self)


class PerWeightAggregator:
    """The server's side: the mean of the reports per weight, unbiased for the
    mean of the clients' clipped weights, as a state_dict."""

    def __init__(self, perturber):
        self._perturber = perturber
        self._aggregator = _fedldp.LdpFlAggregator(perturber.randomizer)
        self._charged = False

    def add(self, report):
        self._aggregator.add(report)

    @property
    def count(self):
        return self._aggregator.count

    def state_dict(self):
        """The round's model; the first call records the round's cost."""
        mean = self._aggregator.mean()
        p = self._perturber
        self._charged = p.charge.round(p.randomizer, self.count, self._charged)
        return unflatten(mean, p.global_state, p.keys)


class UpdatePrivatizer:
    """The client's side of a whole-update randomizer: the update
    local - global (l2-clipped to `clip`) privatised by `randomizer`
    (privunitg, fastprojunit, gaussian, ...; fedldp.VectorRandomizer's
    options) at eps per report."""

    def __init__(self, global_state, randomizer="privunitg", epsilon=4.0, clip=1.0, keys=None,
                 accountant=None, shuffled=False, sampling_rate=1.0, **options):
        self.charge = _Charge(accountant, shuffled, sampling_rate)
        self.keys = list(keys) if keys is not None else float_keys(global_state)
        if not self.keys:
            raise ValueError("the state_dict has no floating-point tensor to privatise")
        _check_keys(global_state, self.keys, "global_state")
        self.global_state = {k: v.detach().clone() for k, v in global_state.items()}
        self._global = flatten(global_state, self.keys)
        self.randomizer = _fedldp.VectorRandomizer(
            randomizer, self._global.size, epsilon, clip, **options
        )

    def report(self, local_state, rng=None):
        """One client's report: a float64 vector of the model's size."""
        _check_keys(local_state, self.keys, "local_state")
        return _fedldp.privatize_update(
            self.randomizer, flatten(local_state, self.keys), self._global, rng
        )

    def aggregator(self):
        return UpdateAggregator(self)


class UpdateAggregator:
    """The server's side: checks each report and adds the mean of the
    reports to the global model."""

    def __init__(self, privatizer):
        self._privatizer = privatizer
        self._sum = np.zeros(privatizer.randomizer.dimension)
        self.count = 0
        self._charged = False

    def add(self, report):
        report = np.asarray(report, dtype=np.float64)
        self._privatizer.randomizer.validate(report)
        self._sum += report
        self.count += 1

    def state_dict(self):
        """The round's model; the first call records the round's cost."""
        if self.count == 0:
            raise ValueError("no report was added")
        p = self._privatizer
        self._charged = p.charge.round(p.randomizer, self.count, self._charged)
        return unflatten(p._global + self._sum / self.count, p.global_state, p.keys)

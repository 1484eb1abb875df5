"""fedldp: federated learning under local differential privacy.

The native core is the C++ library the `fedldp` command runs; this module
calls the same functions on numpy arrays:

- ValueMechanism: scalar eps-LDP mechanisms (duchi, pm, hm, laplace, twopoint).
- Selector: FedSel's private Top-k dimension selection (exp, pe, ps, ...).
- VectorRandomizer: PrivUnitG, FastProjUnit and baselines on whole vectors.
- account_run, local_epsilon_for_central, shuffle_epsilon: the accountant's
  statements of a planned run; Accountant: what a run actually spent, recorded
  as it goes (get_epsilon(delta) at any moment); calibrate: the eps0 that meets
  a target (eps, delta) for a planned run, local or shuffled;
  gaussian_steps_epsilon: DP-SGD's Gaussian steps, Poisson-sampled or allocated.
- load_dataset, load_file (CSV or LIBSVM), train_fedsel, train_ldpfl: data
  as numpy, runs that return dicts; partition: the simulators' split of rows
  among clients (IID, Dirichlet, label shards) as index arrays;
  reproduce_frontier: every method at every budget on a dataset or your file.
- LdpFlRandomizer, LdpFlAggregator, privatize_update: the client's and the
  server's side of one round, for your own training loop; fedldp.torch wraps
  them for PyTorch state_dicts.

Every randomized call takes rng=None (a fresh secure generator: what a
deployment needs), an int seed, or a fedldp.Rng (a stream that continues).
Arrays are processed with the GIL released.
"""

from ._fedldp import (
    Accountant,
    LdpFlAggregator,
    LdpFlRandomizer,
    LdpFlReport,
    Rng,
    Selector,
    ValueMechanism,
    VectorRandomizer,
    __version__,
    account_run,
    calibrate,
    dataset_names,
    fedsel_options,
    gaussian_steps_epsilon,
    ldpfl_options,
    load_dataset,
    load_file,
    local_epsilon_for_central,
    partition,
    privatize_update,
    reproduce_frontier,
    selector_names,
    shuffle_epsilon,
    train_fedsel,
    train_ldpfl,
    value_mechanism_names,
    vector_randomizer_names,
)

__all__ = [
    "Accountant",
    "LdpFlAggregator",
    "LdpFlRandomizer",
    "LdpFlReport",
    "Rng",
    "Selector",
    "ValueMechanism",
    "VectorRandomizer",
    "__version__",
    "account_run",
    "calibrate",
    "dataset_names",
    "fedsel_options",
    "gaussian_steps_epsilon",
    "ldpfl_options",
    "load_dataset",
    "load_file",
    "local_epsilon_for_central",
    "partition",
    "privatize_update",
    "reproduce_frontier",
    "selector_names",
    "shuffle_epsilon",
    "train_fedsel",
    "train_ldpfl",
    "value_mechanism_names",
    "vector_randomizer_names",
]

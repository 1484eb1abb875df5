"""Runs through the Python module: datasets as numpy, FedSel and LDP-FL
runs as dicts, reproducible from a seed, beside the majority class."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import fedldp


@pytest.fixture(scope="module")
def adult():
    train = fedldp.load_dataset("adult-train")
    test = fedldp.load_dataset("adult-test")
    return train, test


def test_datasets_come_as_numpy(adult):
    train, test = adult
    assert train["X"].dtype == np.float32 and train["y"].dtype == np.int64
    assert train["X"].shape == (32_561, test["X"].shape[1])
    assert train["classes"] == 2 and set(np.unique(train["y"])) == {0, 1}
    assert len(train["feature_names"]) == train["X"].shape[1]
    with pytest.raises(ValueError):
        fedldp.load_dataset("no-such-data")


def test_load_dataset_pools_then_centres_like_the_cli():
    raw = fedldp.load_dataset("mnist-test")["X"][:50].reshape(50, 14, 2, 14, 2)
    pooled = fedldp.load_dataset("mnist-test", pool=2)["X"][:50]
    centred = fedldp.load_dataset("mnist-test", pool=2, center=0.13)["X"][:50]
    np.testing.assert_allclose(pooled, raw.mean(axis=(2, 4)).reshape(50, 196), atol=1e-6)
    np.testing.assert_array_equal(centred, pooled - np.float32(0.13))
    for bad in (1.5, float("nan")):
        with pytest.raises(ValueError, match="centre must be a number in"):
            fedldp.load_dataset("adult", center=bad)


def test_fedsel_and_privunitg_learn_and_state_their_privacy(adult):
    train, test = adult
    args = dict(X_test=test["X"], y_test=test["y"], seed=3)
    # lr 1: the CLI reference's (`--reference-lr`); the paper's lr 4 overshoots.
    np_run = fedldp.train_fedsel(train["X"], train["y"], "np", learning_rate=1.0, **args)
    private = fedldp.train_fedsel(train["X"], train["y"], "privunitg", epsilon=2.0, **args)
    majority = private["majority"]  # accuracies in percent, as everywhere
    assert private["accuracy_unit"] == "percent"
    assert 75 < majority < 77
    assert np_run["test_accuracy"] > majority + 5
    assert private["test_accuracy"] > majority + 2
    assert np_run["privacy"] is None and np_run["budget"] is None
    assert private["privacy"]["total"]["epsilon"] <= 2.0 + 1e-9
    assert private["config"]["variant"] == "privunitg"
    assert private["rejected"] == 0 and private["updates"] == 32_561
    ps = fedldp.train_fedsel(train["X"], train["y"], "ps-pm", epsilon=2.0, **args)
    assert ps["selector"] == "ps" and ps["k"] >= 1
    assert ps["budget"]["select_epsilon"] + ps["budget"]["value_epsilon"] <= 2.0 + 1e-12


def test_a_seed_reproduces_a_run_on_any_number_of_threads(adult):
    train, _ = adult
    X, y = train["X"][:5000], train["y"][:5000]
    a = fedldp.train_fedsel(X, y, "privunitg", seed=5, threads=1, epochs=2)
    b = fedldp.train_fedsel(X, y, "privunitg", seed=5, threads=2, epochs=2)
    c = fedldp.train_fedsel(X, y, "privunitg", seed=6, threads=2, epochs=2)
    assert np.array_equal(a["weights"], b["weights"])
    assert not np.array_equal(a["weights"], c["weights"])


def test_the_effective_config_reruns_the_same_model(adult):
    train, _ = adult
    X, y = train["X"][:3000], train["y"][:3000]
    first = fedldp.train_fedsel(X, y, "fastprojunit", seed=2, epochs=2, clip=0.5)
    again = fedldp.train_fedsel(X, y, seed=2, **first["config"])
    assert again["config"] == first["config"]
    assert np.array_equal(again["weights"], first["weights"])


def test_own_csv_and_clients_of_several_rows(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(3000, 3))
    y = np.where(X[:, 0] - X[:, 2] > 0, "up", "down")
    path = tmp_path / "own.csv"
    with open(path, "w") as f:
        f.write("x,label,z,w\n")
        for row, label in zip(X, y):
            f.write(f"{row[0]:.5f},{label},{row[1]:.5f},{row[2]:.5f}\n")
    data = fedldp.load_file(str(path), label_column="label")
    assert data["X"].shape == (3000, 3) and data["feature_names"] == ["x", "z", "w"]
    assert np.array_equal(data["y"], (y == "up").astype(np.int64))  # down < up
    run = fedldp.train_fedsel(data["X"], data["y"], "privunitg", epsilon=4.0, clients=300,
                              dirichlet_alpha=0.5, epochs=3, batch_fraction=0.1)
    assert run["config"]["clients"] == 300 and run["updates"] == 900
    assert run["train_accuracy"] > run["majority"] + 5
    with pytest.raises(ValueError, match="no column is named"):
        fedldp.load_file(str(path), label_column="nope")


def test_shuffled_runs_are_calibrated_to_the_central_budget(adult):
    train, _ = adult
    run = fedldp.train_fedsel(train["X"], train["y"], "privunitg", shuffle=True,
                              central_epsilon=1.0, central_delta=1e-6)
    total = run["privacy"]["total"]
    assert total["epsilon"] <= 1.0 and total["delta"] <= 1e-6
    assert run["config"]["epsilon"] > 1.0  # the shuffler buys a larger local budget
    assert run["privacy"]["reports_per_round"] > 1  # shuffled
    assert run["privacy"]["local"]["epsilon"] == run["config"]["epsilon"]
    assert run["privacy"]["local_total"]["epsilon"] > total["epsilon"]


def test_the_options_listed_are_the_config_returned(adult):
    train, _ = adult
    # The listed defaults are the default variant's (privunitg, README's choice).
    run = fedldp.train_fedsel(train["X"][:200], train["y"][:200], epochs=1, threads=1)
    assert run["config"]["variant"] == "privunitg"
    options = fedldp.fedsel_options()
    assert [o["name"] for o in options] == [k for k in run["config"] if k != "variant"]
    by_name = {o["name"]: o for o in options}
    assert by_name["learning_rate"]["flag"] == "--lr"
    assert by_name["learning_rate"]["record"] == "lr"
    for name, o in by_name.items():
        if not o["default_varies"]:
            assert run["config"][name] == o["default"], name


def test_bad_runs_raise_with_a_reason(adult):
    train, test = adult
    X, y = train["X"][:100], train["y"][:100]
    with pytest.raises(TypeError, match="unknown option 'epsilom'.*epsilon"):
        fedldp.train_fedsel(X, y, "ps-pm", epsilom=1.0)
    with pytest.raises(ValueError, match="rows"):
        fedldp.train_fedsel(X, y[:50])
    # The CLI's rules and sentences (fl/fedsel_options.h), not a silent no-op.
    with pytest.raises(ValueError, match="clip applies to the vector variants only"):
        fedldp.train_fedsel(X, y, "ps-pm", clip=0.5)
    with pytest.raises(ValueError, match="dirichlet_alpha needs clients"):
        fedldp.train_fedsel(X, y, "ps-pm", dirichlet_alpha=0.5)
    with pytest.raises(ValueError, match=r"mu must be in \[0, 1\)"):
        fedldp.train_fedsel(X, y, "ps-pm", mu=1.5)
    with pytest.raises(TypeError, match="wrong type"):
        fedldp.train_fedsel(X, y, "ps-pm", epochs=[1])
    with pytest.raises(ValueError, match="central_epsilon needs shuffle"):
        fedldp.train_fedsel(X, y, "privunitg", central_epsilon=1.0)
    with pytest.raises(ValueError, match="give it or epsilon, not both"):
        fedldp.train_fedsel(X, y, "privunitg", shuffle=True, central_epsilon=1.0, epsilon=2.0)
    with pytest.raises(ValueError):
        fedldp.train_fedsel(X, y, "no-such-variant")
    with pytest.raises(ValueError, match="X_test"):
        fedldp.train_fedsel(X, y, X_test=test["X"][:, :3], y_test=test["y"])
    with pytest.raises(ValueError, match="labels"):
        fedldp.train_fedsel(X, -np.ones(100, dtype=int))


# The Python API has the CLI's bounds and sentences (issue 41): counts from
# one table (base/limits.h), seeds as the CLI says them, and a str is no
# number. (Before: threads=10**6 tried a million threads, classes=10**9 died
# of bad_alloc, seed=-1 raised a TypeError printing the whole signature, and
# epsilon="4" ran.)
@pytest.mark.parametrize(
    "function, arguments, error, sentence",
    [
        ("train_fedsel", dict(threads=10**6), ValueError,
         r"threads must be a whole number from 0 to 1024 \(0: one per core\), got 1000000"),
        ("train_fedsel", dict(threads=-1), ValueError, "threads must be a whole number"),
        ("train_fedsel", dict(threads=True), TypeError, "threads must be an int, not bool"),
        ("train_fedsel", dict(classes=10**9), ValueError,
         r"classes must be a whole number from 0 to 65536"),
        ("train_fedsel", dict(classes=-3), ValueError, "classes must be a whole number"),
        ("train_fedsel", dict(seed=-1), ValueError,
         "seed must be a whole number from 0 to 18446744073709551615, got -1"),
        ("train_fedsel", dict(seed=2**64), ValueError, "seed must be a whole number"),
        ("train_fedsel", dict(seed="1"), TypeError, "seed must be an int, not str"),
        ("train_fedsel", dict(epsilon="4"), TypeError,
         "option 'epsilon' takes a number, not the str '4'"),
        ("train_fedsel", dict(shuffle="yes"), TypeError, "option 'shuffle' takes True or False"),
        ("train_fedsel", dict(epsilon=math.nan), ValueError, "epsilon must be a finite number"),
        ("train_ldpfl", dict(threads=5000), ValueError, "threads must be a whole number from 0"),
        ("train_ldpfl", dict(seed=-2), ValueError, "seed must be a whole number"),
        ("train_ldpfl", dict(rounds="3"), TypeError, "option 'rounds' takes a number"),
        # Work that would run without end (epochs=10**9 was accepted).
        ("train_fedsel", dict(epochs=10**9), ValueError,
         "epochs must be a whole number from 1 to 10000, got 1000000000"),
        ("train_ldpfl", dict(rounds=10**6), ValueError,
         "rounds must be a whole number from 1 to 100000, got 1000000"),
        ("train_ldpfl", dict(local_epochs=5000), ValueError,
         "local epochs must be a whole number from 1 to 1000"),
        ("train_ldpfl", dict(batch=0), ValueError, "batch size must be a whole number from 1"),
        # A learning rate that overflows the weights (lr=1e308 trained inf
        # without a word; LDP-FL took inf).
        ("train_fedsel", dict(learning_rate=1e308), ValueError,
         r"learning rate must be a finite number in \(0, 1e\+06\], got 1e\+308"),
        ("train_ldpfl", dict(learning_rate=math.inf), ValueError,
         "learning rate must be a finite number in"),
    ],
)
def test_arguments_have_the_cli_bounds_and_sentences(adult, function, arguments, error, sentence):
    train, _ = adult
    if function == "train_fedsel":
        call = lambda: fedldp.train_fedsel(train["X"][:100], train["y"][:100], **arguments)
    else:
        call = lambda: fedldp.train_ldpfl("mnist", **arguments)
    with pytest.raises(error, match=sentence):
        call()


# Dimensions and sample counts have the CLI's bounds and sentences too
# (before: Selector took d = 10**10, where audit --d stopped at 10**5, and a
# negative or float d raised a TypeError printing the whole signature).
@pytest.mark.parametrize(
    "call, error, sentence",
    [
        (lambda: fedldp.Selector("exp", 1.0, 10**10, 1), ValueError,
         "dimension must be a whole number from 1 to 16777216, got 10000000000"),
        (lambda: fedldp.Selector("exp", 1.0, 0, 1), ValueError, "dimension must be a whole number"),
        (lambda: fedldp.Selector("exp", 1.0, -1, 1), ValueError,
         "dimension must be a whole number"),
        (lambda: fedldp.Selector("exp", 1.0, 5.0, 1), TypeError,
         "dimension must be an int, not float"),
        (lambda: fedldp.VectorRandomizer("privunitg", 2**30, 1.0), ValueError,
         "dimension must be a whole number from 1 to 16777216"),
        (lambda: fedldp.VectorRandomizer("privunitg", math.nan, 1.0), TypeError,
         "dimension must be an int, not float"),
        (lambda: fedldp.Rng(1).integers(10**12), ValueError,
         "draws must be a whole number from 1 to 1000000000, got 1000000000000"),
        (lambda: fedldp.Rng(1).integers(-1), ValueError, "draws must be a whole number"),
        (lambda: fedldp.account_run(1.0, rounds=10**7), ValueError,
         "rounds must be a whole number from 1 to 1000000, got 10000000"),
        (lambda: fedldp.account_run(1.0, rounds=0), ValueError, "rounds must be a whole number"),
        (lambda: fedldp.local_epsilon_for_central(1.0, "5", 100), TypeError,
         "rounds must be an int, not str"),
    ],
)
def test_sizes_have_the_cli_bounds_and_sentences(call, error, sentence):
    with pytest.raises(error, match=sentence):
        call()


def test_ldpfl_runs_on_arrays_and_reports_every_round():
    train = fedldp.load_dataset("mnist")
    test = fedldp.load_dataset("mnist-test")
    seen = []
    run = fedldp.train_ldpfl(
        X=train["X"][:2000], y=train["y"][:2000], X_test=test["X"][:500], y_test=test["y"][:500],
        clients=20, rounds=2, fraction=0.5, epsilon=1.0, learning_rate=0.1, threads=1,
        on_round=seen.append)
    assert [r["round"] for r in run["rounds"]] == [1, 2]
    assert seen == run["rounds"]
    assert run["privacy"]["mechanism"] == "twopoint"
    assert run["privacy"]["local"]["epsilon"] == run["parameters"] * 1.0  # d eps a report
    # One layout for both protocols' results (issue 43, item 4).
    fedsel = fedldp.train_fedsel(train["X"][:300], train["y"][:300], "ps-pm", epochs=1, threads=1)
    assert fedsel["privacy"].keys() == run["privacy"].keys()
    assert run["parameters"] == run["weights"].size
    assert run["accuracy_unit"] == "percent"
    assert 0 < run["majority"] < 20
    assert all(0 <= r["accuracy"] <= 100 for r in run["rounds"])
    assert run["config"]["clients"] == 20 and run["config"]["range"] == "fixed"
    with pytest.raises(TypeError, match="unknown option"):
        fedldp.train_ldpfl(clientz=3)


def test_ldpfl_options_are_the_library_rows_and_refuse_as_the_cli():
    options = {o["name"]: o for o in fedldp.ldpfl_options()}
    assert options["learning_rate"]["flag"] == "--lr"
    assert options["range"]["choices"] == ["fixed", "adaptive"]
    assert options["private"]["flag"] is None
    assert "privunitg" in options["randomizer"]["choices"]
    with pytest.raises(ValueError, match="clip applies to the vector randomizers only"):
        fedldp.train_ldpfl(clip=0.5)
    with pytest.raises(ValueError, match="'Fixed' is not fixed or adaptive"):
        fedldp.train_ldpfl(range="Fixed")
    with pytest.raises(ValueError, match="no adaptive ranges"):
        fedldp.train_ldpfl(range="adaptive", randomizer="privunitg")
    # The server's optimiser and averaging (issue 42), from the same rows.
    assert options["server_optimizer"]["choices"] == ["fedavg", "momentum", "adam", "yogi"]
    assert options["average"]["choices"] == ["none", "ema", "tail"]
    with pytest.raises(ValueError, match=r"server beta1 must be in \[0, 1\), got 1"):
        fedldp.train_ldpfl(server_optimizer="adam", server_beta1=1.0)
    with pytest.raises(ValueError, match="secret sampling takes a vector randomizer"):
        fedldp.train_ldpfl(secret_sampling=True)
    # A central target sets the budget per report, as fedldp ldpfl's does.
    with pytest.raises(ValueError, match="give one of them, not both"):
        fedldp.train_ldpfl(randomizer="privunitg", central_epsilon=3.0, epsilon=2.0)
    with pytest.raises(ValueError, match="a central epsilon takes a vector randomizer"):
        fedldp.train_ldpfl(central_epsilon=3.0)


def test_ldpfl_central_target_sets_the_budget_per_report():
    train = fedldp.load_dataset("mnist")
    test = fedldp.load_dataset("mnist-test")
    run = fedldp.train_ldpfl(
        X=train["X"][:2000], y=train["y"][:2000], X_test=test["X"][:200], y_test=test["y"][:200],
        clients=2000, rounds=1, fraction=0.5, randomizer="privunitg", clip=0.5,
        central_epsilon=3.0, threads=1)
    assert run["config"]["central_epsilon"] == 3.0
    assert run["config"]["epsilon"] > 3.5  # 1,000 shuffled reports a round amplify


def test_results_and_cli_records_share_the_privacy_layout(adult, tmp_path):
    build = os.environ.get("FEDLDP_BINARY_DIR")
    binary = os.path.join(build, "apps", "fedldp", "fedldp") if build else ""
    if not os.path.exists(binary):
        pytest.skip("the fedldp binary is not known (FEDLDP_BINARY_DIR)")
    out = tmp_path / "train.jsonl"
    subprocess.run([binary, "train", "--dataset", "syn-L-0.1-0.6", "--repeats", "1", "--folds",
                    "2", "--no-reference", "--out", str(out)], check=True, capture_output=True)
    record = json.loads(out.read_text().splitlines()[0])["privacy"]
    train, _ = adult
    run = fedldp.train_fedsel(train["X"][:300], train["y"][:300], "ps-pm", epochs=1, threads=1)
    assert list(run["privacy"]) == list(record)  # the same keys, in the same order
    assert record["mechanism"] == "privunitg"  # the default variant
    assert run["privacy"]["mechanism"] == "ps-pm"


def test_partition_gives_the_simulators_shards_as_index_arrays():
    y = np.repeat(np.arange(4), 150)
    rng = np.random.default_rng(0)
    y = y[rng.permutation(y.size)]
    iid = fedldp.partition(y, 7, seed=3)
    assert [a.dtype for a in iid] == [np.int64] * 7
    assert [a.size for a in iid] == [600 // 7] * 7
    assert np.unique(np.concatenate(iid)).size == 7 * (600 // 7)  # disjoint
    shards = fedldp.partition(y, 10, label_shards=2, seed=5)
    assert all(np.unique(y[a]).size <= 3 for a in shards)
    assert np.concatenate(shards).size == 600 and np.unique(np.concatenate(shards)).size == 600
    skew = fedldp.partition(y, 5, dirichlet_alpha=0.1, seed=2)
    assert sum(a.size for a in skew) == 600  # every row, once
    # The same draw for the same seed; FedSel's runs draw with a seed of their own.
    again = fedldp.partition(y, 10, label_shards=2, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(shards, again))
    assert not all(np.array_equal(a, b) for a, b in
                   zip(iid, fedldp.partition(y, 7, seed=3, run="fedsel")))
    assert all(np.array_equal(a, b) for a, b in
               zip(iid, fedldp.partition(y, 7, seed=3, run="ldpfl")))
    with pytest.raises(ValueError, match="not both"):
        fedldp.partition(y, 3, dirichlet_alpha=0.5, label_shards=2)
    with pytest.raises(ValueError, match="clients"):
        fedldp.partition(y, 601)
    with pytest.raises(TypeError, match="run must be"):
        fedldp.partition(y, 3, run=1)


def test_the_frontier_runs_on_your_own_file(tmp_path):
    rng = np.random.default_rng(5)
    a, b = rng.uniform(-1, 1, 1500), rng.uniform(-1, 1, 1500)
    csv = tmp_path / "own.csv"
    with open(csv, "w") as f:
        f.write("label,a,b\n")
        for x, z in zip(a, b):
            f.write(f"{int(x - 0.5 * z > 0)},{x},{z}\n")
    seen = []
    out = tmp_path / "frontier"
    result = fedldp.reproduce_frontier(str(out), data=csv, label_column="label", quick=True,
                                       figures=False, on_row=lambda *row: seen.append(row))
    assert result["data"] == str(csv) and result["accuracy_unit"] == "percent"
    rows = result["rows"]
    assert len(rows) == 25 and seen[-1][:2] == (25, 25)
    assert [json.loads(line) for line in (out / "frontier.jsonl").read_text().splitlines()] == rows
    np_row = next(r for r in rows if r["method"] == "np")
    assert np_row["privacy"] is None and np_row["accuracy_mean"] > 90
    private = [r for r in rows if r["privacy"] is not None]
    assert all(r["privacy"]["total"]["epsilon"] <= r["target_epsilon"] + 1e-9 for r in private)
    with pytest.raises(TypeError, match="data must be a path"):
        fedldp.reproduce_frontier(str(out), data=3)
    with pytest.raises(ValueError, match="folds must be a whole number"):
        fedldp.reproduce_frontier(str(out), folds=1)


INTERRUPTED = """
import os, signal, sys, threading, time
import numpy as np
import fedldp
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (2000, 20)).astype(np.float32)
y = (X[:, 0] > 0).astype(np.int64)
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
start = time.monotonic()
try:
    fedldp.train_fedsel(X, y, "privunitg", epsilon=10000.0, epochs=10000, batch_fraction=0.01,
                        threads=1)
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - start:.2f} s")
    sys.exit(0)
print(f"finished after {time.monotonic() - start:.2f} s")
sys.exit(1)
"""


def test_ctrl_c_ends_a_long_training_at_its_next_round(tmp_path):
    """Ctrl-C while a run trains without the GIL raises KeyboardInterrupt
    within a round or so, not when the run would have ended (minutes)."""
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED)
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120,
                         env=os.environ)
    assert out.returncode == 0, out.stdout + out.stderr
    seconds = float(out.stdout.split()[2])
    assert 1.0 <= seconds < 5.0, out.stdout

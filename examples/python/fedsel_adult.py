#!/usr/bin/python3
"""Logistic regression on UCI Adult, one client per person, from Python:
FedSel (the paper's PS-PM), PrivUnitG locally and through a shuffler, each
beside the non-private model and the majority class, with the privacy each
one states (fedldp.account_run's claim per client).

  /usr/bin/python3 examples/python/fedsel_adult.py [--epsilon 2] [--seed 1]

Run with PYTHONPATH=<build>/python (or an installed fedldp).
"""

import argparse

import fedldp


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epsilon", type=float, default=2.0, help="local eps per client in total")
    p.add_argument("--central-epsilon", type=float, default=1.0,
                   help="the shuffled run's central eps per client")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()

    train = fedldp.load_dataset("adult-train")
    test = fedldp.load_dataset("adult-test")
    common = dict(X_test=test["X"], y_test=test["y"], seed=args.seed)
    runs = [
        ("np (non-private)", fedldp.train_fedsel(train["X"], train["y"], "np",
                                                 learning_rate=1.0, **common)),
        (f"ps-pm, eps {args.epsilon:g}", fedldp.train_fedsel(
            train["X"], train["y"], "ps-pm", epsilon=args.epsilon, **common)),
        (f"privunitg, eps {args.epsilon:g}", fedldp.train_fedsel(
            train["X"], train["y"], "privunitg", epsilon=args.epsilon, **common)),
        (f"privunitg, shuffled", fedldp.train_fedsel(
            train["X"], train["y"], "privunitg", shuffle=True, epochs=4, batch_fraction=0.2,
            learning_rate=8, clip=1, central_epsilon=args.central_epsilon,
            central_delta=1e-6, **common)),
    ]
    majority = runs[0][1]["majority"]
    print(f"UCI Adult: {len(train['y'])} clients, tested on {len(test['y'])} rows")
    for name, run in runs:
        privacy = run["privacy"]
        stated = "none"
        if privacy:
            t = privacy["total"]
            stated = f"({t['epsilon']:.4g}, {t['delta']:g}) per client, {privacy['rule']}"
        flag = "" if run["test_accuracy"] > majority else "   <- learned nothing"
        print(f"  {name:<24} {run['test_accuracy']:6.2f} %   privacy: {stated}{flag}")
    print(f"  {'majority class':<24} {majority:6.2f} %")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Federated training of your own PyTorch model under local differential
privacy, with fedldp's randomizer and aggregator in a plain training loop.

Each round, every client copies the global model, trains on its own images,
and reports its model privatised on the device:
  --randomizer twopoint    LDP-FL's per-weight two-point mechanism, eps per
                           weight, over per-tensor ranges from the global model
                           (what the IJCAI 2021 paper does);
  --randomizer privunitg   PrivUnitG on the whole update, eps per report
                           (fastprojunit, gaussian, ... work too).
The server averages the reports into the next global model. The same loop
without noise and the majority class are printed beside it.

  /usr/bin/python3 examples/python/ldpfl_torch.py                # MNIST, 5 rounds
  /usr/bin/python3 examples/python/ldpfl_torch.py --randomizer privunitg --epsilon 4
  /usr/bin/python3 examples/python/ldpfl_torch.py --quick        # a few seconds

Run with PYTHONPATH=<build>/python (or an installed fedldp).
"""

import argparse
import copy
import time

import numpy as np
import torch
from torch import nn

import fedldp
import fedldp.torch as ftorch


class Mlp(nn.Module):
    """The user's model: any nn.Module works; this one is small."""

    def __init__(self, hidden=32):
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(784, hidden), nn.ReLU(),
                                    nn.Linear(hidden, 10))

    def forward(self, x):
        return self.layers(x)


def local_training(model, X, y, epochs, lr, batch):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss = nn.CrossEntropyLoss()
    for _ in range(epochs):
        order = torch.randperm(len(y))
        for start in range(0, len(y), batch):
            idx = order[start : start + batch]
            opt.zero_grad()
            loss(model(X[idx]), y[idx]).backward()
            opt.step()


def accuracy(model, X, y):
    with torch.no_grad():
        return (model(X).argmax(dim=1) == y).float().mean().item()


def train(args, X, y, X_test, y_test, private):
    torch.manual_seed(args.seed)
    rng = fedldp.Rng(args.seed) if args.seed_noise else None  # None: secure noise
    model = Mlp(args.hidden)
    shards = np.array_split(np.random.default_rng(args.seed).permutation(len(y)), args.clients)
    history = []
    for r in range(1, args.rounds + 1):
        start = time.time()
        global_state = copy.deepcopy(model.state_dict())
        if private and args.randomizer == "twopoint":
            side = ftorch.PerWeightPerturber(global_state, args.epsilon, margin=args.margin)
        elif private:
            side = ftorch.UpdatePrivatizer(global_state, args.randomizer, args.epsilon,
                                           clip=args.clip)
        server = side.aggregator() if private else None
        states = []
        for shard in shards:
            client = Mlp(args.hidden)
            client.load_state_dict(global_state)
            local_training(client, X[shard], y[shard], args.local_epochs, args.lr, args.batch)
            if private:
                server.add(side.report(client.state_dict(), rng))
            else:
                states.append(client.state_dict())
        if private:
            model.load_state_dict(server.state_dict())
        else:
            model.load_state_dict({k: torch.stack([s[k] for s in states]).mean(dim=0)
                                   for k in global_state})
        acc = accuracy(model, X_test, y_test)
        history.append(acc)
        label = args.randomizer if private else "noise-free"
        print(f"  round {r:2d}  {label:<12} test accuracy {100 * acc:6.2f} %   "
              f"({time.time() - start:.1f} s)", flush=True)
    return history


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="mnist", help="mnist or fmnist")
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--images", type=int, default=20_000, help="training images used")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--local-epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--randomizer", default="twopoint",
                   help="twopoint (per weight) or a vector randomizer: "
                        + ", ".join(fedldp.vector_randomizer_names()))
    p.add_argument("--epsilon", type=float, default=1.0,
                   help="per weight (twopoint) or per report (vector randomizers)")
    p.add_argument("--margin", type=float, default=1.0, help="twopoint: range margin")
    p.add_argument("--clip", type=float, default=1.0, help="vector randomizers: l2 clip")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seed-noise", action="store_true",
                   help="draw the noise from the seed too (reproducible, not private)")
    p.add_argument("--quick", action="store_true", help="a small run for tests")
    args = p.parse_args()
    if args.quick:
        args.clients, args.images, args.rounds, args.local_epochs = 20, 1000, 2, 1
    if args.randomizer != "twopoint" and args.randomizer not in fedldp.vector_randomizer_names():
        p.error(f"unknown randomizer {args.randomizer!r}")
    if args.clients < 1 or args.images < args.clients or args.rounds < 1:
        p.error("need rounds >= 1 and at least one image per client")
    torch.set_num_threads(1)

    train_set = fedldp.load_dataset(args.dataset)
    test_set = fedldp.load_dataset(args.dataset + "-test")
    mean, sd = train_set["X"].mean(), train_set["X"].std()
    X = torch.from_numpy((train_set["X"][: args.images] - mean) / sd)
    y = torch.from_numpy(train_set["y"][: args.images])
    X_test = torch.from_numpy((test_set["X"] - mean) / sd)
    y_test = torch.from_numpy(test_set["y"])
    majority = np.bincount(test_set["y"]).max() / len(test_set["y"])

    print(f"{args.dataset}: {args.clients} clients of {args.images // args.clients} images, "
          f"{args.rounds} rounds, all clients every round; {args.randomizer} at eps "
          f"{args.epsilon} per {'weight' if args.randomizer == 'twopoint' else 'report'}")
    private = train(args, X, y, X_test, y_test, private=True)
    reference = train(args, X, y, X_test, y_test, private=False)
    print(f"final: {args.randomizer} {100 * private[-1]:.2f} %, noise-free "
          f"{100 * reference[-1]:.2f} %, majority class {100 * majority:.2f} %")
    if private[-1] <= majority:
        print(f"note: {args.randomizer} is not better than the majority class: "
              "it has learned nothing")
    if args.randomizer == "twopoint":
        n_weights = sum(t.numel() for t in Mlp(args.hidden).state_dict().values())
        print(f"privacy: eps {args.epsilon} per weight; a client's whole report of "
              f"{n_weights} weights is {n_weights * args.epsilon:g}-LDP per round "
              f"(fedldp.account_run gives the run's total)")
    else:
        p_run = fedldp.account_run(args.epsilon, rounds=args.rounds, shuffle=True,
                                   reports_per_round=args.clients, delta=1e-5)
        print(f"privacy: eps {args.epsilon} per report, {args.rounds} reports per client; "
              f"shuffled with the round's {args.clients} reports: "
              f"({p_run['total']['epsilon']:.4g}, {p_run['total']['delta']:g}) per client")


if __name__ == "__main__":
    main()

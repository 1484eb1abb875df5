#!/usr/bin/python3
"""The paper's CNN trained centrally on Fashion-MNIST with plain PyTorch,
independently of fedldp: the check in docs/ldpfl.md ("where the 10 points
to the paper go").

    /usr/bin/python3 docs/ldpfl/fmnist_central.py [LR] [EPOCHS] [STEPS,...]

prints the test accuracy after each listed SGD step and after each epoch
(defaults: lr 0.03, 4 epochs, steps 750,1500,2250,3000; B = 10, inputs
standardised by the training pixels' mean and sd, seed 1, one thread).
"""
import gzip
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist/"


def images(name):
    raw = gzip.open(DATA + name).read()
    return np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28).astype(np.float32) / 255


def labels(name):
    return np.frombuffer(gzip.open(DATA + name).read(), np.uint8, offset=8).astype(np.int64)


class Net(nn.Module):  # the PyTorch MNIST example's network, 21,840 weights
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 10, 5), nn.Conv2d(10, 20, 5)
        self.drop = nn.Dropout2d()
        self.fc1, self.fc2 = nn.Linear(320, 50), nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.drop(self.conv2(x)), 2)).view(-1, 320)
        x = F.dropout(F.relu(self.fc1(x)), training=self.training)
        return F.log_softmax(self.fc2(x), 1)


def main():
    lr = float(sys.argv[1]) if len(sys.argv) > 1 else 0.03
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    marks = {int(s) for s in (sys.argv[3] if len(sys.argv) > 3 else "750,1500,2250,3000").split(",")}
    torch.set_num_threads(1)
    torch.manual_seed(1)
    x, y = images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz")
    xt, yt = images("t10k-images-idx3-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz")
    mean, sd = x.mean(), x.std()
    x, xt = torch.tensor((x - mean) / sd), torch.tensor((xt - mean) / sd)
    y, yt = torch.tensor(y), torch.tensor(yt)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=lr)

    def accuracy():
        net.eval()
        with torch.no_grad():
            a = (net(xt).argmax(1) == yt).float().mean().item()
        net.train()
        return 100 * a

    step = 0
    for epoch in range(1, epochs + 1):
        order = torch.randperm(len(x))
        for i in range(0, len(x), 10):
            batch = order[i:i + 10]
            opt.zero_grad()
            F.nll_loss(net(x[batch]), y[batch]).backward()
            opt.step()
            step += 1
            if step in marks:
                print(f"step {step}: {accuracy():.2f} %", flush=True)
        print(f"epoch {epoch}: {accuracy():.2f} %", flush=True)


if __name__ == "__main__":
    main()

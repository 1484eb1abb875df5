#!/usr/bin/python3
"""PrivUnitG and FastProjUnit's client step in numpy, for the speed comparison
of docs/testing.md (the same algorithm as src/vector/, written the way a numpy
user would: vectorised Gaussian draws, two dot products, a Walsh-Hadamard
transform by reshaping). Not a reference for correctness: fedldp's tests are.

    /usr/bin/python3 bench/privunitg_numpy.py [--d 1000000] [--k 1000] [--repeats 20]
"""
import argparse
import math
import time

import numpy as np


def params(eps, d):
    # gamma minimising sigma^2 d + sigma gamma on a grid, as fedldp does (coarser).
    best = None
    for gamma in np.arange(-4, 40, 0.001):
        q = 0.5 * math.erfc(gamma / math.sqrt(2))
        em1 = math.expm1(eps)
        den = 1 + em1 * q
        p = math.exp(eps) * q / den
        mu = math.exp(-0.5 * gamma * gamma) / math.sqrt(2 * math.pi) * em1 / den
        if mu < 1e-150:  # sigma^2 would overflow
            continue
        sigma = 1 / mu
        cost = sigma * sigma * d + sigma * gamma
        if best is None or cost < best[0]:
            best = (cost, gamma, p, sigma)
    return best[1:]


def truncated(rng, gamma, above):
    while True:  # rejection from N(0, 1), unbounded (gamma is moderate here)
        a = rng.standard_normal()
        if (a >= gamma) == above:
            return a


def privunitg(x, clip, gamma, p, sigma, rng):
    norm = np.linalg.norm(x)
    u = x / norm
    sign = 1.0 if rng.random() < 0.5 * (1 + min(1.0, norm / clip)) else -1.0
    u = sign * u
    g = rng.standard_normal(x.shape[0])
    a = truncated(rng, gamma, rng.random() < p)
    return clip * sigma * (g + (a - g @ u) * u)


def fwht(v):
    n = v.shape[0]
    h = 1
    while h < n:
        v = v.reshape(-1, 2, h)
        v = np.stack((v[:, 0] + v[:, 1], v[:, 0] - v[:, 1]), axis=1)
        h *= 2
    return v.reshape(n)


def fastprojunit_encode(x, k, gamma, p, sigma, rng):
    d = x.shape[0]
    dp = 1 << (d - 1).bit_length()
    signs = rng.integers(0, 2, dp) * 2 - 1
    rows = rng.choice(dp, k, replace=False)
    w = np.zeros(dp)
    w[:d] = x
    y = fwht(w * signs)[rows] / math.sqrt(k)
    return privunitg(y / np.linalg.norm(y), 1.0, gamma, p, sigma, rng)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--eps", type=float, default=4.0)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    x = rng.standard_normal(args.d)
    x *= 0.7 / np.linalg.norm(x)
    out = np.empty(args.d)
    start = time.perf_counter()
    for _ in range(args.repeats):
        np.copyto(out, x)
    copy = (time.perf_counter() - start) / args.repeats
    gamma, p, sigma = params(args.eps, args.d)
    start = time.perf_counter()
    for _ in range(args.repeats):
        privunitg(x, 1.0, gamma, p, sigma, rng)
    full = (time.perf_counter() - start) / args.repeats
    gk, pk, sk = params(args.eps, args.k)
    start = time.perf_counter()
    for _ in range(args.repeats):
        fastprojunit_encode(x, args.k, gk, pk, sk, rng)
    proj = (time.perf_counter() - start) / args.repeats
    print(f"numpy {np.__version__}, d = {args.d}, eps = {args.eps}")
    print(f"copy of x:                {copy * 1e3:8.2f} ms ({args.d * 8 / copy / 1e9:.2f} GB/s)")
    print(f"privunitg:                {full * 1e3:8.2f} ms ({args.d / full / 1e6:.1f} M coords/s)")
    print(f"fastprojunit encode k={args.k}: {proj * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()

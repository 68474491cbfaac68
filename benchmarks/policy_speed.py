"""Policy updates per second (one core), at n = 20, 1e3, 1e5 arms.

Measures ``next_request`` + ``update`` per reward with rewards drawn in advance (so the simulator's
cost is not counted). Each measurement runs a fixed number of pulls after the initial round (or to
termination if sooner) and reports updates/s. Usage::

    python benchmarks/policy_speed.py            # all registered policies, all sizes
    python benchmarks/policy_speed.py rr wrr     # some policies
"""

from __future__ import annotations

import random
import sys
import time

import numpy as np

from streamarms.registry import POLICIES, build_policy

SIZES = [(20, 300_000), (1_000, 300_000), (100_000, 400_000)]


def instance(n: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    means = [rng.uniform(0.2, 0.4) for _ in range(n - 2)] + [0.8, 0.9]
    return means


def measure(name: str, n: int, pulls: int, bound: str, **extra) -> tuple[float, int]:
    means = instance(n)
    names = [str(i) for i in range(n)]
    # NRR stops after 1/delta unchanged pulls: a tiny delta keeps it running for the measurement
    delta = 1e-7 if name == "nrr" else 0.1
    pol = build_policy(name, names, k=2.0, delta=delta, bound=bound, **extra)
    rng = np.random.default_rng(1)
    total = n + pulls
    u = rng.random(total)
    mean_arr = np.array(means)
    # warm up: the initial round (not timed)
    for i in range(n):
        req = pol.next_request()
        if req is None:
            break
        j = int(req.arm)
        pol.update(req.arm, 1.0 if u[i] < mean_arr[j] else 0.0, req)
    index = {a: i for i, a in enumerate(names)}
    done = 0
    t0 = time.process_time()
    nxt, upd = pol.next_request, pol.update
    for t in range(n, total):
        req = nxt()
        if req is None:
            break
        upd(req.arm, 1.0 if u[t] < means[index[req.arm]] else 0.0, req)
        done += 1
    dt = time.process_time() - t0
    return done / dt, done


def main(argv: list[str]) -> None:
    names = argv or [p for p in ("rr", "wrr", "nrr", "cs") if p in POLICIES]
    print(f"{'policy':<8} {'bound':<10} {'n':>8} {'pulls':>9} {'updates/s':>12}")
    for name in names:
        for bound in ("hoeffding", "bernoulli"):
            for n, pulls in SIZES:
                rate, done = measure(name, n, pulls, bound)
                print(f"{name:<8} {bound:<10} {n:>8} {done:>9} {rate:>12,.0f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

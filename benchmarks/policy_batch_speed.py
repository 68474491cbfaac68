"""Policy ingestion: ``update_batch`` (batched) vs ``update`` reward by reward (issue 15).

A fixed stream of 0/1 rewards over n arms (two outliers), fed to fresh policies until the stream ends
or the policy is done; both paths must end in equal snapshots (checked). Process time, best of
``--repeat``, the two paths interleaved (the machine may be shared).

Usage::

    python benchmarks/policy_batch_speed.py --arms 20 1000 --rewards 300000 --batch 1000 10000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamarms.policies.anytime import AnytimeKSigma  # noqa: E402
from streamarms.policies.ksigma import WeightedRoundRobin  # noqa: E402

POLICIES = {"cs": lambda names: AnytimeKSigma(names, k=2.0, delta=0.1),
            "wrr": lambda names: WeightedRoundRobin(names, k=2.0, delta=0.1)}


def per_record(p, names, arms, xs) -> float:
    t0 = time.process_time()
    update = p.update
    for a, x in zip(arms, xs):
        if p.done:
            break
        update(names[a], x)
    return time.process_time() - t0


def batched(p, arms, xs, size: int) -> float:
    t0 = time.process_time()
    pos, n = 0, len(xs)
    while pos < n and not p.done:
        end = min(n, (pos // size + 1) * size)
        k, _ = p.update_batch(arms[pos:end], xs[pos:end])
        pos += k
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arms", type=int, nargs="+", default=[20, 1000])
    ap.add_argument("--rewards", type=int, default=300_000)
    ap.add_argument("--batch", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--policy", nargs="+", default=["cs", "wrr"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"process time, best of {args.repeat}; rewards/s = rewards ingested / process seconds")
    for n in args.arms:
        rng = random.Random(n)
        means = [0.2] * (n - 2) + [0.8, 0.9]
        arms = [rng.randrange(n) for _ in range(args.rewards)]
        xs = [float(rng.random() < means[a]) for a in arms]
        names = [f"a{i}" for i in range(n)]
        for pol in args.policy:
            best = {"update": 1e9, **{f"batch {b}": 1e9 for b in args.batch}}
            pulls = {}
            for _ in range(args.repeat):
                p = POLICIES[pol](names)
                best["update"] = min(best["update"], per_record(p, names, arms, xs))
                pulls["update"], ref = p.pulls, json.dumps(p.snapshot())
                for b in args.batch:
                    q = POLICIES[pol](names)
                    best[f"batch {b}"] = min(best[f"batch {b}"], batched(q, arms, xs, b))
                    assert json.dumps(q.snapshot()) == ref, "batched path differs"
                    pulls[f"batch {b}"] = q.pulls
            for label, t in best.items():
                print(f"  {pol:<4} n={n:<6} {label:<12} {pulls[label] / t:>12,.0f} rewards/s  ({pulls[label]:,} rewards)")


if __name__ == "__main__":
    main()

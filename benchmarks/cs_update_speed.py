"""Per-reward cost of the ``cs`` policy's ``update()`` vs the number of arms n (issue 9, "Speed").

The daemon feeds cs every reward of a stream one at a time (``passive_feed="all"``), so this times
``update()`` alone on a stream of uniformly random arms (0/1 rewards drawn in advance; means U[0.2, 0.4]
and two outliers). Two regimes:

* ``fixed``: P rewards after the first reward of every arm (like ``policy_speed.py``): at n = 1e5 that
  is 4 rewards an arm, where every count 1..8 is a level of the threshold track (an interval and a
  record per reward) and every n rewards the track advances (O(n) work), so it measures the regime,
  not n;
* ``per-arm``: every arm warmed (untimed) to W rewards, then W more rewards an arm timed: the same
  counts per arm for every n, so the cost differs only by what scales with n (heap, caches, the O(n)
  work per level amortised over the level's n * 0.2 m rewards).

Process time, best of ``--repeat`` (the machine may be shared: say the load). Usage::

    python benchmarks/cs_update_speed.py --arms 1000 10000 100000 --warm 32
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamarms.policies.anytime import AnytimeKSigma  # noqa: E402


def stream(n: int, length: int, seed: int) -> tuple[list[str], list[float]]:
    rng = np.random.default_rng(seed)
    means = np.r_[rng.uniform(0.2, 0.4, n - 2), 0.8, 0.9]
    arms = rng.integers(0, n, length)
    xs = (rng.random(length) < means[arms]).astype(float)
    names = [str(i) for i in range(n)]
    return [names[a] for a in arms.tolist()], xs.tolist()


def timed(pol: AnytimeKSigma, arms: list[str], xs: list[float]) -> float:
    upd = pol.update
    t0 = time.process_time()
    for a, x in zip(arms, xs):
        upd(a, x)
    return time.process_time() - t0


def one(n: int, regime: str, pulls: int, warm: int, seed: int) -> float:
    """Microseconds per update."""
    names = [str(i) for i in range(n)]
    pol = AnytimeKSigma(names, k=2.0, delta=0.1)
    if regime == "fixed":
        for a in names:
            pol.update(a, 0.0)
        arms, xs = stream(n, pulls, seed)
    else:
        wa, wx = stream(n, n * warm, seed)
        for a, x in zip(wa, wx):
            pol.update(a, x)
        arms, xs = stream(n, n * warm, seed + 1)
    return timed(pol, arms, xs) / len(xs) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arms", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--regime", nargs="+", default=["fixed", "per-arm"], choices=["fixed", "per-arm"])
    ap.add_argument("--pulls", type=int, default=300_000)
    ap.add_argument("--warm", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"cs update() per reward, process time, best of {args.repeat}; load avg {os.getloadavg()[0]:.1f}")
    print(f"{'regime':<8} {'n':>8} {'us/update':>10} {'updates/s':>10}")
    for regime in args.regime:
        for n in args.arms:
            us = min(one(n, regime, args.pulls, args.warm, r) for r in range(args.repeat))
            print(f"{regime:<8} {n:>8} {us:>10.2f} {1e6 / us:>10,.0f}", flush=True)


if __name__ == "__main__":
    main()

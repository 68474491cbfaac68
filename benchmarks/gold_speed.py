"""GOLD and robust k-sigma (roai): updates per second (one core) at n = 1e3 and 1e4 arms.

Same protocol as ``policy_speed.py``: rewards drawn in advance, ``next_request`` + ``update`` timed per
reward with ``time.process_time``, the initial round (every arm once) not timed. GOLD's cost depends on
the phase of the run, so it is measured in phases:

* ``early``: right after the initial round (one big community, cores shrinking);
* ``dense``: after ``dense_rounds`` untimed rounds, when intervals are narrower than the clusters of
  means: edges whose arms' cores are already apart are kept explicitly (``S-edges``) and removed edges
  are checked for a detour;
* ``full``: a whole run to the stopping rule (splits, terminal arms; at n = 1e4 only with ``--full``:
  GOLD needs tens of millions of Bernoulli samples there, minutes of CPU).

For contrast, the literal O(n^2)-per-pull transcription of Alg. 1 used by the tests
(``tests/gold_reference.py``) is timed at n = 1e3 on a few hundred pulls. Usage::

    python benchmarks/gold_speed.py            # GOLD and roai (about two minutes)
    python benchmarks/gold_speed.py gold       # GOLD only
    python benchmarks/gold_speed.py roai       # robust k-sigma only
    python benchmarks/gold_speed.py --full     # also a whole GOLD run at n = 1e4
"""

from __future__ import annotations

import os
import random
import sys
import time

import numpy as np

from streamarms.models import BoundedModel
from streamarms.policies.gold import GenericOutlierDetection
from streamarms.policies.robust import RobustOutlierArmIdentification


def instance(n: int, seed: int = 0) -> list[float]:
    """Two clusters of normal arms (90%) and two groups of in-between / high outliers (5% each)."""
    rng = random.Random(seed)
    k = n // 20
    normal = n - 2 * k
    means = [rng.uniform(0.05, 0.25) for _ in range(normal // 2)]
    means += [rng.uniform(0.65, 0.85) for _ in range(normal - normal // 2)]
    means += [rng.uniform(0.42, 0.48) for _ in range(k)]
    means += [rng.uniform(0.99, 1.0) for _ in range(k)]
    return means


def drive(pol, means: list[float], pulls: int, rng: np.random.Generator, timed: bool) -> tuple[float, int]:
    u = rng.random(pulls)
    nxt, upd = pol.next_request, pol.update
    index = pol.index
    done = 0
    t0 = time.process_time()
    for t in range(pulls):
        req = nxt()
        if req is None:
            break
        upd(req.arm, 1.0 if u[t] < means[index[req.arm]] else 0.0, req)
        done += 1
    dt = time.process_time() - t0
    return (done / dt if dt > 0 else float("inf")), done


def _stats_line(pol, before: dict[str, int]) -> str:
    s_edges = sum(len(p) for p in pol.S_adj.values()) // 2
    d = {k: pol.stats[k] - before[k] for k in pol.stats}
    return (f"{len(pol.communities())} communities, {pol.n_terminal} terminal, {s_edges} S-edges; "
            f"{d['splits']} splits, {d['recomputes']} recomputes, {d['detours']} detour checks while timed")


def bench_gold(n: int, pulls: int, dense_rounds: int, model, full: bool) -> None:
    means = instance(n)
    names = [str(i) for i in range(n)]
    mname = model if isinstance(model, str) else "hoeffding"
    pol = GenericOutlierDetection(names, epsilon=2.5, rho=0.9, delta=0.1, model=model)
    rng = np.random.default_rng(1)
    drive(pol, means, n, rng, timed=False)                       # initial round
    before = dict(pol.stats)
    rate, done = drive(pol, means, pulls, rng, timed=True)
    print(f"gold  {mname:<10} {n:>6} {'early':>6} {done:>11} {rate:>12,.0f}   {_stats_line(pol, before)}",
          flush=True)
    drive(pol, means, dense_rounds * n - pulls, rng, timed=False)
    before = dict(pol.stats)
    rate, done = drive(pol, means, pulls, rng, timed=True)
    print(f"gold  {mname:<10} {n:>6} {'dense':>6} {done:>11} {rate:>12,.0f}   after {pol.pulls - done:,} pulls: "
          f"{_stats_line(pol, before)}", flush=True)
    if not full:
        return
    pol = GenericOutlierDetection(names, epsilon=2.5, rho=0.9, delta=0.1, model=model)
    rng = np.random.default_rng(2)
    before = dict(pol.stats)
    done_total, t_total = 0, 0.0
    while not pol.done:
        t0 = time.process_time()
        _, done = drive(pol, means, 1_000_000, rng, timed=True)
        t_total += time.process_time() - t0
        done_total += done
    top = set(pol.decision().ranking[:2 * (n // 20)])
    want = {str(i) for i in range(n - 2 * (n // 20), n)}
    print(f"gold  {mname:<10} {n:>6} {'full':>6} {done_total:>11} {done_total / t_total:>12,.0f}   "
          f"{_stats_line(pol, before)}; outliers ranked first: {top == want}", flush=True)


def bench_literal(n: int, pulls: int) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
    from gold_reference import LiteralGOLD

    means = instance(n)
    ref = LiteralGOLD(n, epsilon=2.5, rho=0.9, delta=0.1)
    rng = np.random.default_rng(1)
    u = rng.random(n + pulls)
    for t in range(n):
        i = ref.next_request()
        ref.update(i, 1.0 if u[t] < means[i] else 0.0)
    t0 = time.process_time()
    for t in range(n, n + pulls):
        i = ref.next_request()
        ref.update(i, 1.0 if u[t] < means[i] else 0.0)
    dt = time.process_time() - t0
    print(f"gold-literal-O(n^2) bernoulli {n:>6} {'early':>6} {pulls:>11} {pulls / dt:>12,.0f}", flush=True)


def bench_roai(n: int, pulls: int, model) -> None:
    means = instance(n)
    names = [str(i) for i in range(n)]
    pol = RobustOutlierArmIdentification(names, k=3.0, delta=0.1, model=model)
    rng = np.random.default_rng(1)
    drive(pol, means, n, rng, timed=False)
    rate, done = drive(pol, means, pulls, rng, timed=True)
    mname = model if isinstance(model, str) else "hoeffding"
    print(f"roai  {mname:<10} {n:>6} {'':>6} {done:>11} {rate:>12,.0f}   ({pol.rounds} rounds)", flush=True)


def main(argv: list[str]) -> None:
    full = "--full" in argv
    which = {a for a in argv if not a.startswith("--")} or {"gold", "roai"}
    print(f"{'policy':<5} {'bound':<10} {'n':>6} {'phase':>6} {'pulls':>11} {'updates/s':>12}")
    if "gold" in which:
        for model in ("bernoulli", BoundedModel(0, 1)):
            bench_gold(1_000, 200_000, dense_rounds=600, model=model, full=True)
            bench_gold(10_000, 200_000, dense_rounds=150, model=model, full=full)
        bench_literal(1_000, 100)
    if "roai" in which:
        for model in ("bernoulli", BoundedModel(0, 1)):
            for n in (1_000, 10_000):
                bench_roai(n, 300_000, model)


if __name__ == "__main__":
    main(sys.argv[1:])

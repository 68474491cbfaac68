"""ADE vs RR vs WRR at one pull per step: where does ADE overtake? And WRR's saving over RR.

Two experiments, all policies run one pull per step through ``streamarms.sim.run_policy`` on Bernoulli
arms, delta = 0.1:

1. [ZZZZ20] (AAAI'20) synthetic family: n arm means uniform in [0, 1], k = 2.5 (no arm is an outlier),
   redrawn until the smallest gap ``Delta_min = theta - max_i y_i`` lies in [0.20, 0.25] (the paper's
   Fig. 2(a) also fixes a range of Delta_min, [0.1, 0.2]; pull counts scale like 1/Delta_min^2, so
   without this the n-trend drowns in instance noise; for large n the family gives about 0.22
   anyway). Mean pulls of ADE, RR and WRR for growing n, with Hoeffding intervals
   (``--bound hoeffding``: the papers' bounded-reward radii) and with Bernoulli intervals
   (Agresti-Coull arm radii; RR/WRR propagate them to the threshold by the delta method, ADE keeps the
   paper's threshold radius, which exists only for bounded rewards). The paper ran RR/WRR 1000 pulls
   per step, which inflates their counts; here every policy stops at the pull its rule fires. Reports
   the n at which ADE needs fewer pulls than RR and than WRR (log-log interpolation between grid
   points; beyond the grid, extrapolated from the last two points and labelled as such).
2. [ZWW17] (NeurIPS'17) synthetic setup with Bernoulli intervals: n in {20, 50, 100, 200},
   k in {2, 2.5, 3}, ``sim.zww17_synthetic`` instances; WRR's saving ``1 - pulls(WRR) / pulls(RR)`` per
   test case (the paper: "in 80% of the test cases WRR saves more than 40% ..., in about half more than
   60%").

Usage::

    python benchmarks/ade_vs_rr.py              # full grid (about 5-10 minutes on one core)
    python benchmarks/ade_vs_rr.py --quick      # smaller grid (about 2 minutes)
    python benchmarks/ade_vs_rr.py --sizes 100,400 --runs 2 --cases 3
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time

from streamarms.registry import POLICIES, build_policy
from streamarms.sim import Environment, ade_uniform, run_policy, zww17_synthetic

CAP = 10 ** 8
GAP_BAND = (0.20, 0.25)


def gap(means: list[float], k: float) -> float:
    n = len(means)
    mu = sum(means) / n
    theta = mu + k * math.sqrt(sum((y - mu) ** 2 for y in means) / n)
    return min(abs(y - theta) for y in means)


def aaai_instance(n: int, r: int, k: float) -> list[float]:
    """A [ZZZZ20] uniform instance with Delta_min in GAP_BAND (seeded by n and r)."""
    rng = random.Random(1000 * n + r)
    while True:
        means = ade_uniform(n, rng)
        if GAP_BAND[0] <= gap(means, k) <= GAP_BAND[1]:
            return means


def run(name: str, means: list[float], k: float, bound: str, seed: int) -> tuple[int, bool]:
    """Pulls and correctness of one run."""
    env = Environment(means, seed=seed)
    opts = dict(k=k, delta=0.1, bound=bound, seed=seed)
    policy = build_policy(name, env.arm_names, **opts)
    res = run_policy(policy, env, max_pulls=CAP, keep_events=False)
    d = res.decision
    truth = POLICIES[name].truth(means, **opts) or []
    return res.pulls, d.done and sorted(d.outliers, key=int) == sorted(truth, key=int)


def crossover(ns: list[int], a: list[float], b: list[float]) -> str:
    """The n at which series ``a`` (ADE) drops below ``b`` (a baseline), as text."""
    ln = [math.log(n) for n in ns]
    diff = [math.log(x) - math.log(y) for x, y in zip(a, b)]
    if diff[0] < 0:
        return f"ADE already fewer at n = {ns[0]}"
    for i in range(1, len(ns)):
        if diff[i] < 0:
            x = ln[i - 1] + (ln[i] - ln[i - 1]) * diff[i - 1] / (diff[i - 1] - diff[i])
            return f"n ~ {math.exp(x):.0f} (between {ns[i - 1]} and {ns[i]})"
    if len(ns) >= 2:
        # power-law fits through the last two points of each series
        sa = (math.log(a[-1]) - math.log(a[-2])) / (ln[-1] - ln[-2])
        sb = (math.log(b[-1]) - math.log(b[-2])) / (ln[-1] - ln[-2])
        if sb > sa:
            x = ln[-1] + diff[-1] / (sb - sa)
            return (f"not within n <= {ns[-1]}; extrapolated n ~ {math.exp(x):.0f} "
                    f"(slopes ADE {sa:.2f}, baseline {sb:.2f})")
        return f"not within n <= {ns[-1]}, and not approaching (slopes ADE {sa:.2f}, baseline {sb:.2f})"
    return f"not within n <= {ns[-1]}"


def aaai_family(sizes: list[int], runs: int, bounds_: list[str], ade_sizes: dict[str, list[int]]) -> None:
    k = 2.5
    print(f"\n[ZZZZ20] family: means uniform in [0, 1], k = {k}, delta = 0.1, one pull per step, "
          f"{runs} instance(s) per n with Delta_min in {list(GAP_BAND)}")
    for bound in bounds_:
        print(f"\n  intervals: {bound}")
        print(f"  {'n':>6} {'D_min':>6} {'ADE':>12} {'RR':>12} {'WRR':>12} {'ADE/RR':>8} {'ADE/WRR':>8} "
              f"{'correct':>8} {'seconds':>8}")
        rows: dict[str, list[tuple[int, float]]] = {"ade": [], "rr": [], "wrr": []}
        for n in sizes:
            t0 = time.time()
            mean: dict[str, float] = {}
            ok = total = 0
            for name in ("ade", "rr", "wrr"):
                if name == "ade" and n not in ade_sizes[bound]:
                    continue
                pulls = []
                for r in range(runs):
                    means = aaai_instance(n, r, k)
                    p, c = run(name, means, k, bound, seed=r)
                    pulls.append(p)
                    ok += c
                    total += 1
                mean[name] = statistics.fmean(pulls)
                rows[name].append((n, mean[name]))
            ade = mean.get("ade")
            a_txt = f"{ade:>12,.0f}" if ade is not None else f"{'-':>12}"
            r1 = f"{ade / mean['rr']:>8.2f}" if ade is not None else f"{'-':>8}"
            r2 = f"{ade / mean['wrr']:>8.2f}" if ade is not None else f"{'-':>8}"
            dmin = statistics.fmean(gap(aaai_instance(n, r, k), k) for r in range(runs))
            print(f"  {n:>6} {dmin:>6.3f} {a_txt} {mean['rr']:>12,.0f} {mean['wrr']:>12,.0f} {r1} {r2} "
                  f"{ok:>4}/{total:<3} {time.time() - t0:>8.1f}", flush=True)
        ade_ns = [n for n, _ in rows["ade"]]
        a = [v for _, v in rows["ade"]]
        for base in ("rr", "wrr"):
            b = [v for n, v in rows[base] if n in ade_ns]
            print(f"  ADE overtakes {base.upper()} ({bound}): {crossover(ade_ns, a, b)}")
        if len(rows["rr"]) >= 2:
            (n0, r0), (n1, r1_) = rows["rr"][0], rows["rr"][-1]
            print(f"  RR pulls per arm: {r0 / n0:,.0f} at n = {n0}, {r1_ / n1:,.0f} at n = {n1}")


def zww17_saving(cases: int) -> None:
    print(f"\n[ZWW17] synthetic setup, Bernoulli intervals, delta = 0.1, one pull per step, "
          f"{cases} test case(s) per (n, k)")
    print(f"  {'n':>4} {'k':>4} {'RR':>10} {'WRR':>10} {'saving':>8}")
    savings = []
    wrong = 0
    for n in (20, 50, 100, 200):
        for k in (2.0, 2.5, 3.0):
            for c in range(cases):
                means = zww17_synthetic(n, k, random.Random(7919 * n + 31 * int(10 * k) + c))
                rr, ok1 = run("rr", means, k, "bernoulli", seed=c)
                wrr, ok2 = run("wrr", means, k, "bernoulli", seed=c)
                wrong += (not ok1) + (not ok2)
                s = 1.0 - wrr / rr
                savings.append(s)
                print(f"  {n:>4} {k:>4} {rr:>10,} {wrr:>10,} {s:>8.1%}", flush=True)
    above40 = sum(s > 0.4 for s in savings) / len(savings)
    above60 = sum(s > 0.6 for s in savings) / len(savings)
    print(f"  WRR saving over RR: median {statistics.median(savings):.1%}, mean {statistics.fmean(savings):.1%}; "
          f"cases saving > 40%: {above40:.0%}, > 60%: {above60:.0%} (paper: 80% and about 50%); "
          f"wrong answers: {wrong} of {2 * len(savings)}")


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=None, help="comma-separated n for the AAAI'20 family")
    ap.add_argument("--runs", type=int, default=1, help="instances per n (default 1)")
    ap.add_argument("--cases", type=int, default=2, help="ZWW17 test cases per (n, k) (default 2)")
    ap.add_argument("--quick", action="store_true", help="a smaller grid")
    ap.add_argument("--skip-zww17", action="store_true")
    ap.add_argument("--skip-aaai", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.time()
    if not args.skip_aaai:
        if args.sizes:
            sizes = [int(v) for v in args.sizes.split(",")]
            ade_sizes = {"hoeffding": sizes, "bernoulli": sizes}
        elif args.quick:
            sizes = [100, 400, 1600]
            ade_sizes = {"hoeffding": sizes, "bernoulli": [100, 1600]}
        else:
            # ADE's pulls barely grow with n; with Bernoulli intervals RR/WRR are cheap, so their grid
            # extends further to show whether they ever catch up with ADE
            sizes = [100, 200, 400, 800, 1600]
            ade_sizes = {"hoeffding": sizes, "bernoulli": [100, 400, 1600, 6400]}
        aaai_family(sizes, args.runs, ["hoeffding"], ade_sizes)
        bern_sizes = sorted(set(sizes) | set(ade_sizes["bernoulli"]))
        aaai_family(bern_sizes, args.runs, ["bernoulli"], ade_sizes)
    if not args.skip_zww17:
        zww17_saving(args.cases)
    print(f"\ntotal {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Known threshold on a budget: the three Bernoulli setups of Tao et al., NeurIPS 2019, Sec. 5.

Prints, for each setup and budget T, the mean number of misclassified arms (the aggregate regret) of
LSA (alpha = 1.35), APT(eps) for eps in {0, .025, .05, .1}, UCBE(b) for b in {-1, 0, 4} (a = 4^b (T-K)/H with
the true H) and Uniform, over seeded runs with common random numbers (run r uses the same per-arm
reward streams for every policy), with the standard error; then the cost per sample of the heap argmin.

LSA, APT and Uniform do not depend on T (anytime), so one run to the largest budget gives every smaller
budget's decision; UCBE's a depends on T, so it runs once per budget.

    python benchmarks/thresholding.py                 # 200 runs per setup (a few minutes)
    python benchmarks/thresholding.py --runs 1000 --setups 2
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamarms.policies.thresholding import APT, LSA, UCBE, Uniform, complexity_H  # noqa: E402
from streamarms.sim import tbpz19_setup  # noqa: E402

THETA = 0.5
BUDGETS = {1: [200, 400, 600, 800, 1000], 2: [2500, 5000, 10000, 20000, 40000],
           3: [10000, 20000, 40000, 60000, 100000]}
ANYTIME = [("LSA", LSA, {}), ("APT(0)", APT, {"epsilon": 0.0}), ("APT(.025)", APT, {"epsilon": 0.025}),
           ("APT(.05)", APT, {"epsilon": 0.05}), ("APT(.1)", APT, {"epsilon": 0.1}), ("Uniform", Uniform, {})]
UCBE_B = [-1.0, 0.0, 4.0]


def reward_rows(means: list[float], T: int, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return (rng.random((len(means), T)) < np.asarray(means)[:, None]).astype(float).tolist()


def errors_now(pol, truth_above: list[bool]) -> int:
    th = pol.threshold
    return sum((pol.m[i] == 0) or ((pol.s[i] / pol.m[i] >= th) != up) for i, up in enumerate(truth_above))


def run(pol, rows, checkpoints: list[int], truth_above: list[bool]) -> list[int]:
    pos = [0] * len(rows)
    index, nxt, update = pol.index, pol.next_request, pol.update
    out, ci = [], 0
    while ci < len(checkpoints):
        arm = nxt().arm
        i = index[arm]
        update(arm, rows[i][pos[i]])
        pos[i] += 1
        if pol.pulls == checkpoints[ci]:
            out.append(errors_now(pol, truth_above))
            ci += 1
    return out


def bench_setup(setup: int, runs: int, seed0: int) -> None:
    means = tbpz19_setup(setup)
    K = len(means)
    arms = [str(i) for i in range(K)]
    truth = [mu >= THETA for mu in means]
    budgets = BUDGETS[setup]
    H = complexity_H(means, THETA)
    names = [n for n, _, _ in ANYTIME] + [f"UCBE({b:g})" for b in UCBE_B]
    err = {n: np.zeros((runs, len(budgets))) for n in names}
    t0 = time.perf_counter()
    for r in range(runs):
        rows = reward_rows(means, budgets[-1], seed0 + r)
        for name, cls, kw in ANYTIME:
            err[name][r] = run(cls(arms, threshold=THETA, budget=budgets[-1], **kw), rows, budgets, truth)
        for b in UCBE_B:
            err[f"UCBE({b:g})"][r] = [run(UCBE(arms, threshold=THETA, budget=T, b=b, H=H), rows, [T], truth)[0]
                                      for T in budgets]
    dt = time.perf_counter() - t0
    print(f"\nSetup {setup}: K = {K}, theta = {THETA}, means = {means}")
    print(f"mean misclassified arms over {runs} runs (+- standard error); {dt:.0f} s")
    print(f"| {'T':>7} | " + " | ".join(f"{n:>13}" for n in names) + " |")
    print("|" + "|".join("-" * w for w in [9] + [15] * len(names)) + "|")
    for j, T in enumerate(budgets):
        cells = []
        best = min(err[n][:, j].mean() for n in names)
        for n in names:
            e = err[n][:, j]
            s = f"{e.mean():.3f}±{e.std(ddof=1) / math.sqrt(runs):.3f}"
            cells.append(f"{('*' if e.mean() == best else '') + s:>13}")
        print(f"| {T:>7} | " + " | ".join(cells) + " |")
    lsa = err["LSA"][:, budgets.index(10000)] if 10000 in budgets else None
    if lsa is not None:
        for other in ("Uniform", "APT(.05)"):
            d = err[other][:, budgets.index(10000)] - lsa
            print(f"T = 10000: {other} - LSA = {d.mean():+.3f} (paired se {d.std(ddof=1) / math.sqrt(runs):.3f})")


def bench_argmin_cost() -> None:
    """Cost per sample of LSA's heap argmin against a numpy argmin over all arms, by number of arms."""
    print("\nLSA cost per sample (policy only: next_request + update), heap vs. numpy argmin over all arms")
    print(f"| {'arms':>7} | {'heap (us)':>10} | {'numpy argmin (us)':>18} |")
    print(f"|{'-' * 9}|{'-' * 12}|{'-' * 20}|")
    rng = np.random.default_rng(0)
    for n in (20, 1000, 100000):
        means = rng.uniform(0.3, 0.7, n).tolist()
        arms = [str(i) for i in range(n)]
        T = max(3 * n, 60000)
        L = 256  # per-arm reward streams, reused cyclically (timing only)
        rows = reward_rows(means, L, 1)
        pol = LSA(arms, threshold=0.5, budget=T)
        pos = [0] * n
        nxt, update, index = pol.next_request, pol.update, pol.index
        t = time.perf_counter()
        while not pol.done:
            arm = nxt().arm
            i = index[arm]
            update(arm, rows[i][pos[i] % L])
            pos[i] += 1
        heap_us = (time.perf_counter() - t) / T * 1e6
        # the literal argmin: recompute every index with numpy each sample (after the first round)
        m = np.ones(n)
        s = np.array([rows[i][0] for i in range(n)])
        steps = 2000
        t = time.perf_counter()
        for _ in range(steps):
            d = s / m - 0.5
            i = int(np.argmin(1.35 * m * d * d + 0.5 * np.log(m)))
            s[i] += rows[i][int(m[i]) % L]
            m[i] += 1
        np_us = (time.perf_counter() - t) / steps * 1e6
        print(f"| {n:>7} | {heap_us:>10.2f} | {np_us:>18.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--setups", type=int, nargs="*", default=[1, 2, 3])
    ap.add_argument("--seed", type=int, default=2019)
    ap.add_argument("--no-cost", action="store_true", help="skip the argmin cost table")
    a = ap.parse_args()
    for setup in a.setups:
        bench_setup(setup, a.runs, a.seed)
    if not a.no_cost:
        bench_argmin_cost()


if __name__ == "__main__":
    main()

"""Best arm with heavy tails: the synthetic instances S1 and S2 of Yu, Shao, Lyu, King, UAI 2018, Sec. 5.

One arm at 2.0 and nine evenly spaced over [0.7, 1.5] (S1) or [1.0, 1.8] (S2), Student-t noise with 3
degrees of freedom, p = 2, B = 7 (raw second moment of the best arm), C = 3 (variance).

* SE-delta (delta = 0.1): fraction of runs returning the best arm, and mean number of samples, with the
  empirical average (EA, the paper's Chebyshev-type radius), the truncated average (TEA), the median of
  means (MoM), and, for contrast, EA with a Hoeffding-style radius for a range of width 2 (sigma = 1).
* SR-T: probability of returning a wrong arm for several budgets, EA vs TEA (epsilon = 0.5, the smallest
  gap) vs MoM.

    python benchmarks/heavy_tails.py            # ~ a few minutes
    python benchmarks/heavy_tails.py --se-runs 100 --sr-runs 1000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamarms.models import HeavyTailedModel, SubGaussianModel  # noqa: E402
from streamarms.policies.best_arm import SuccessiveElimination, SuccessiveRejects  # noqa: E402
from streamarms.sim import yslk18_instance  # noqa: E402

DF, P, B, C = 3.0, 2.0, 7.0, 3.0


class Streams:
    def __init__(self, means, seed, chunk=4096):
        self.means, self.chunk = means, chunk
        self.rng = np.random.default_rng(seed)
        self.buf = [self._fresh(i) for i in range(len(means))]
        self.pos = [0] * len(means)

    def _fresh(self, i):
        return (self.means[i] + self.rng.standard_t(DF, self.chunk)).tolist()

    def next(self, i):
        if self.pos[i] == self.chunk:
            self.buf[i], self.pos[i] = self._fresh(i), 0
        x = self.buf[i][self.pos[i]]
        self.pos[i] += 1
        return x


def drive(pol, st, cap=10 ** 7):
    index, nxt, update = pol.index, pol.next_request, pol.update
    while not pol.done and pol.pulls < cap:
        arm = nxt().arm
        update(arm, st.next(index[arm]))
    return pol


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--se-runs", type=int, default=40)
    ap.add_argument("--sr-runs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2018)
    a = ap.parse_args()
    delta = 0.1
    se_models = [("EA", HeavyTailedModel(P, B, "ea", C=C)), ("TEA", HeavyTailedModel(P, B, "tea")),
                 ("MoM", HeavyTailedModel(P, B, "mom", C=C)), ("EA+Hoeffding(sigma=1)", SubGaussianModel(1.0))]
    print(f"SE-delta, delta = {delta}, {a.se_runs} runs per cell: fraction correct / mean samples")
    print(f"| {'instance':>8} | " + " | ".join(f"{n:>24}" for n, _ in se_models) + " |")
    print("|" + "|".join("-" * w for w in [10] + [26] * len(se_models)) + "|")
    for inst in ("S1", "S2"):
        means = yslk18_instance(inst)
        arms = [str(i) for i in range(len(means))]
        cells = []
        for _, model in se_models:
            ok, pulls = 0, []
            for r in range(a.se_runs):
                pol = drive(SuccessiveElimination(arms, delta=delta, model=model), Streams(means, a.seed + r))
                ok += pol.done and pol.decision().outliers == ["0"]
                pulls.append(pol.pulls)
            cells.append(f"{ok / a.se_runs:.3f} / {np.mean(pulls):>10.0f}")
        print(f"| {inst:>8} | " + " | ".join(f"{c:>24}" for c in cells) + " |")

    budgets = [200, 500, 1000, 2000]
    sr_models = [("EA", HeavyTailedModel(P, B, "ea", C=C)), ("TEA(eps=0.5)", HeavyTailedModel(P, B, "tea")),
                 ("MoM", HeavyTailedModel(P, B, "mom", C=C, delta0=delta / 10))]
    print(f"\nSR-T: fraction of {a.sr_runs} runs returning a wrong arm")
    for inst in ("S1", "S2"):
        means = yslk18_instance(inst)
        arms = [str(i) for i in range(len(means))]
        print(f"{inst}:")
        print(f"| {'T':>6} | " + " | ".join(f"{n:>12}" for n, _ in sr_models) + " |")
        print("|" + "|".join("-" * w for w in [8] + [14] * len(sr_models)) + "|")
        t0 = time.perf_counter()
        for T in budgets:
            cells = []
            for _, model in sr_models:
                wrong = 0
                for r in range(a.sr_runs):
                    pol = drive(SuccessiveRejects(arms, budget=T, model=model, epsilon=0.5, seed=r),
                                Streams(means, a.seed + r))
                    wrong += pol.decision().outliers != ["0"]
                cells.append(f"{wrong / a.sr_runs:.3f}")
            print(f"| {T:>6} | " + " | ".join(f"{c:>12}" for c in cells) + " |")
        print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()

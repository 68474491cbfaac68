"""Widths of the per-arm confidence sequences (the factory's choice is made from this table).

For Bernoulli rewards at several rates, the median half-width after m rewards (over 40 seeded paths)
of each sequence at alpha = 5e-5 (about delta / (2 n) for delta = 0.1, n = 1000), next to the Hoeffding
radius with the NeurIPS'17 union over time (``6 delta / (pi^2 (n+1) T^2)``, here with T = m n) for scale.
Usage::

    python benchmarks/confidence_widths.py
"""

from __future__ import annotations

import math

import numpy as np

from streamarms.confidence import BetaBinomialCS, EmpiricalBernsteinCS, StitchedCS

ALPHA = 5e-5
MS = (100, 1000, 10000)
RATES = (0.01, 0.05, 0.3, 0.5)
PATHS = 40


def main() -> None:
    print(f"median half-width, alpha = {ALPHA}, {PATHS} paths")
    print(f"{'p':>6} {'m':>6} {'beta-binomial':>14} {'PrPl-EB':>9} {'stitched':>9} {'hoeffding+union':>16}")
    rng = np.random.default_rng(0)
    for p in RATES:
        xs = (rng.random((PATHS, max(MS))) < p).astype(float)
        widths = {m: {"bb": [], "eb": [], "st": []} for m in MS}
        for path in xs:
            seqs = {"bb": BetaBinomialCS(ALPHA), "eb": EmpiricalBernsteinCS(ALPHA), "st": StitchedCS(ALPHA, low=0, high=1)}
            for t, x in enumerate(path, 1):
                for cs in seqs.values():
                    cs.update(x)
                if t in widths:
                    for key, cs in seqs.items():
                        widths[t][key].append(cs.radius())
        for m in MS:
            n, delta = 1000, 0.1
            dprime = 6 * delta / (math.pi ** 2 * (n + 1) * (m * n) ** 2)
            hoeff = math.sqrt(math.log(2 / dprime) / (2 * m))
            w = {k: float(np.median(v)) for k, v in widths[m].items()}
            print(f"{p:>6} {m:>6} {w['bb']:>14.4f} {w['eb']:>9.4f} {w['st']:>9.4f} {hoeff:>16.4f}", flush=True)


if __name__ == "__main__":
    main()

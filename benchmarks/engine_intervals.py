"""What the engine's confidence sequences save two papers' rules (issue 9 item 3): GOLD (Ban & He, KDD
2020) and roai (median/MAD, after Zhu et al., ICML 2020) with their own union-bound arm intervals
(``intervals="paper"``) vs the engine's anytime sequences at ``delta / n`` (``intervals="cs"``,
registered as ``gold-cs`` / ``roai-cs``), the rules unchanged. Mean pulls until each stops, Bernoulli
rewards, delta = 0.1, 5 seeds; every run's answer is checked against the rule's truth.

Usage::

    python benchmarks/engine_intervals.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streamarms.policies.gold import GenericOutlierDetection, outlier_groups, ranking_respects_groups  # noqa: E402
from streamarms.policies.robust import RobustOutlierArmIdentification, robust_true_outliers  # noqa: E402
from streamarms.sim import Environment, run_policy  # noqa: E402

FIVE = list(np.linspace(0.05, 0.20, 23)) + list(np.linspace(0.80, 0.95, 22)) + [0.35, 0.37, 0.58, 0.60, 0.62]
PAIRS = list(np.linspace(0.05, 0.15, 8)) + list(np.linspace(0.85, 0.95, 8)) + [0.4, 0.42, 0.6, 0.62]
MASKING = list(np.linspace(0.2, 0.3, 45)) + [0.6, 0.65, 0.7, 0.9, 0.95]


def gold(means: list[float], rho: float, intervals: str, seed: int) -> int:
    env = Environment(means, seed=seed)
    res = run_policy(GenericOutlierDetection(env.arm_names, epsilon=2.5, rho=rho, intervals=intervals), env)
    assert ranking_respects_groups([int(a) for a in res.decision.ranking], outlier_groups(means, 2.5, rho))
    return res.pulls


def roai(means: list[float], k: float, intervals: str, seed: int) -> int:
    env = Environment(means, seed=seed)
    res = run_policy(RobustOutlierArmIdentification(env.arm_names, k=k, intervals=intervals), env)
    assert sorted(map(int, res.decision.outliers)) == robust_true_outliers(means, k)
    return res.pulls


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    cases = [("gold", "five in between (n = 50, rho = 0.9)", lambda iv, s: gold(FIVE, 0.9, iv, s)),
             ("gold", "two pairs (n = 20, rho = 0.8)", lambda iv, s: gold(PAIRS, 0.8, iv, s)),
             ("roai", "masking (n = 50, k = 3)", lambda iv, s: roai(MASKING, 3.0, iv, s))]
    print(f"{'policy':<6} {'instance':<38} {'paper':>10} {'cs':>10} {'cs / paper':>11}")
    for pol, name, run in cases:
        mean = {iv: statistics.mean(run(iv, s) for s in range(args.seeds)) for iv in ("paper", "cs")}
        print(f"{pol:<6} {name:<38} {mean['paper']:>10,.0f} {mean['cs']:>10,.0f} {mean['cs'] / mean['paper']:>11.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

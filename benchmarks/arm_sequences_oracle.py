r"""The next lever on the keys' side of issue 9: which Bernoulli confidence sequence a known-threshold
oracle stops earliest with -- the engine's two-sided Beta-Binomial mixture, or discrete mixtures of the
exact Bernoulli likelihood ratios, two-sided or one-sided.

Measured on the known-threshold oracle of ``known_threshold_oracle.py`` (each arm sampled until its
sequence excludes the true theta; arms independent, so the oracle's total is the sum of the arms' stopping
times), on the instances of ``engine_vs_papers.py``, with *common random numbers*: every sequence reads
the same reward path of each arm, so the ratios are paired, not two noisy means.

**The sequences** (each a nonnegative martingale under p with ``M_0 = 1``, closed by Ville's inequality:
``P(exists m: M_m(p) >= 1/alpha) <= alpha``; Howard, Ramdas, McAuliffe, Sekhon, Ann. Statist. 2021, Sec. 3;
Kaufmann & Koolen, JMLR 2021, discrete priors):

* ``bb``: the engine's ``BetaBinomialCS``, the Beta(1/2, 1/2) conjugate mixture of ``(q/p)^S ((1 - q)/
  (1 - p))^(m - S)`` (Robbins 1970). Its price over ``log(1/alpha)`` grows like ``(1/2) log m``.
* ``disc2``: ``M_m(p) = sum_j (w_j / 2) [exp(l_j S - m A_p(l_j)) + exp(-l_j S - m A_p(-l_j))]``,
  ``A_p(l) = log(1 - p + p e^l)`` the Bernoulli log-MGF: each term is the likelihood ratio of the tilted
  law ``q = p e^l / (1 - p + p e^l)``, so a martingale under p; the grid ``l_j = 4 * 1.5^-j``, ``j < 40``,
  and ``w_j ~ (j + 3)^-1.2`` (the prior of ``streamarms/confidence/mixture.py``, fixed before any data and
  not tuned here). Its price grows like ``log log m``. Same guarantee as ``bb``: two-sided at alpha.
* ``disc1``: the two halves as two *one-sided* sequences, each at the full alpha (``l > 0``: the lower
  end, ``l < 0``: the upper end). For a classifier against theta only one side of each arm can err (an arm
  below theta is misclassified only if its *lower* end passes its mean; above, only the upper end), so a
  union over the arms of the relevant sides keeps the oracle's error <= n alpha = delta. In the engine the
  threshold track also reads both ends of every arm's interval (variance bounds, the box), so ``disc1``
  would need the track's own two-sided arm intervals at a share of delta of their own -- the accounting a
  change to the engine has to carry; the oracle has no track, so ``disc1`` is its exact rule here.

All at ``alpha = delta / n`` (the oracle's), delta = 0.1. What this measures is the arm side only: the
engine pays the same arms' price under its threshold's, so on instances where the arms decide (low rates,
star98) its samples move by about the same factor, and where the threshold decides (zww17-20, small n) by
less. The oracle bar (engine / oracle) is unchanged by construction (the oracle uses the engine's arm
sequences); the papers' bar moves by the factor.

Needs the ``bench`` extra (matplotlib; scipy comes with statsmodels). Usage::

    python benchmarks/arm_sequences_oracle.py                  # 5 draws an instance, table + PNG
    python benchmarks/arm_sequences_oracle.py --draws 2 --only zww17-20,lowrate-n50
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy.special import betaln

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_vs_papers as evp  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = ("bb", "disc2", "disc1")
_J = np.arange(40, dtype=float)
LAMBDAS = 4.0 * 1.5 ** -_J
LOG_W = -1.2 * np.log(_J + 3.0)
LOG_W -= np.log(np.exp(LOG_W).sum())


def _logsumexp(e: np.ndarray) -> np.ndarray:
    t = e.max(axis=1)
    return t + np.log(np.exp(e - t[:, None]).sum(axis=1))


def log_disc(p: float, m: np.ndarray, S: np.ndarray, sign: float) -> np.ndarray:
    """``log sum_j w_j exp(l S - m A_p(l))`` with ``l = sign * l_j`` (one side of ``disc2``)."""
    lam = sign * LAMBDAS
    return _logsumexp(LOG_W[None, :] + lam[None, :] * S[:, None] - m[:, None] * np.log1p(p * np.expm1(lam))[None, :])


def excluded(kind: str, theta: float, m: np.ndarray, S: np.ndarray, alpha: float) -> np.ndarray:
    """Whether each ``(m, S)`` puts theta outside the sequence ``kind`` (module docstring)."""
    c = math.log(1.0 / alpha)
    if kind == "bb":
        return betaln(0.5 + S, 0.5 + m - S) - betaln(0.5, 0.5) - S * math.log(theta) - (m - S) * math.log1p(-theta) >= c
    out = np.zeros(len(m), dtype=bool)
    ph = np.clip(S / m, 1e-12, 1 - 1e-12)  # every log M here is <= m KL(phat, theta) (Chernoff): skip the rest
    kl = ph * np.log(ph / theta) + (1 - ph) * np.log((1 - ph) / (1 - theta))
    idx = np.nonzero(m * kl >= c)[0]
    if len(idx) == 0:
        return out
    mi, Si = m[idx], S[idx]
    up, dn = log_disc(theta, mi, Si, 1.0), log_disc(theta, mi, Si, -1.0)
    if kind == "disc1":
        out[idx] = np.where(Si / mi > theta, up, dn) >= c
    else:
        out[idx] = np.logaddexp(up, dn) - math.log(2.0) >= c
    return out


def stopping_times(p: float, theta: float, alpha: float, rng: np.random.Generator, cap: int) -> dict[str, int]:
    """The first count at which each sequence excludes theta, all on one reward path of a Bernoulli(p) arm."""
    out: dict[str, int] = {}
    s0, m0, chunk = 0.0, 0, 4000
    while m0 < cap and len(out) < len(KINDS):
        S = s0 + np.cumsum(rng.random(chunk) < p)
        m = m0 + np.arange(1, chunk + 1)
        for kind in KINDS:
            if kind not in out:
                hit = excluded(kind, theta, m, S, alpha)
                if hit.any():
                    out[kind] = int(m[np.argmax(hit)])
        s0, m0 = float(S[-1]), int(m[-1])
    return {kind: out.get(kind, cap) for kind in KINDS}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=5, help="draws per instance (the benchmark's first runs)")
    ap.add_argument("--only", default="zww17-20,neurips17-n10,neurips17-n50,neurips17-n200,lowrate-n50,star98")
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--cap", type=int, default=5_000_000, help="pulls an arm at most (a capped arm counts the cap)")
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args(argv)
    names = args.only.split(",")
    rows = []
    print(f"Known-threshold oracle, mean samples per run over {args.draws} draws, delta = {args.delta}, "
          "common random numbers (seed 0 per instance)\n")
    print("| instance | n | bb (engine's) | disc2 | disc1 | disc2 / bb | disc1 / bb |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for inst in evp.instances(False):
        if inst.name not in names:
            continue
        rng = np.random.default_rng(0)
        tot = dict.fromkeys(KINDS, 0)
        for r in range(args.draws):
            y = inst.draw(r)
            theta, n = evp.ksigma_theta(y, inst.k), len(y)
            for p in y:
                for kind, t in stopping_times(p, theta, args.delta / n, rng, args.cap).items():
                    tot[kind] += t
            print(f"  {inst.name} draw {r}: " + ", ".join(f"{k} {v}" for k, v in tot.items()), file=sys.stderr)
        mean = {k: v / args.draws for k, v in tot.items()}
        rows.append((inst.name, mean["disc2"] / mean["bb"], mean["disc1"] / mean["bb"]))
        print(f"| `{inst.name}` | {len(inst.draw(0))} | {mean['bb']:,.0f} | {mean['disc2']:,.0f} | {mean['disc1']:,.0f} "
              f"| {rows[-1][1]:.3f} | {rows[-1][2]:.3f} |", flush=True)
    if not args.no_plot and rows:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 3.2))
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r[1] for r in rows], 0.4, label="disc2 (two-sided, same guarantee)")
        ax.bar(x + 0.2, [r[2] for r in rows], 0.4, label="disc1 (relevant side, oracle's union)")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(x, [r[0] for r in rows], rotation=20, fontsize=8)
        ax.set_ylabel("oracle samples / Beta-Binomial's")
        ax.set_ylim(0.6, 1.1)
        ax.legend(fontsize=8)
        ax.set_title("Known-threshold oracle: Bernoulli sequences compared (paired paths)", fontsize=9)
        fig.tight_layout()
        fig.savefig(RESULTS / "arm_sequences_oracle.png", dpi=120)


if __name__ == "__main__":
    main()

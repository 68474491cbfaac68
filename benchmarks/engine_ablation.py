"""Ablations of the engine (``cs``, issue 9): what its own knobs are worth, and why free allocation of the
threshold's samples does not pay, measured on the instances of ``engine_vs_papers.py``.

Issue 9 asks for the engine within 3x of a known-threshold oracle. What separates the two is the
threshold: the engine's track (:mod:`streamarms.confidence.threshold`) reads the first m rewards of
*every* key ("uniform rows"), and bounds the variance of its linear term ``sum_i w_i e_i`` (weights
``w_i = (1 + k z_i) / n``, ``z_i`` the standard scores of the true means) from the keys' intervals. This
script measures the knobs around that design, in two parts.

**Variants** (``--variants``; each run in a fresh process, the change patched in for that run only;
mean samples over the runs, seeds and instances as ``engine_vs_papers.py``; ratio to ``base``):

* ``base``: the engine as shipped;
* ``grid:R``: the track's level grid with ratio R (shipped: 1.2). A finer grid moves ``m_theta`` in
  smaller steps (no statistical price: every level is on the same event);
* ``balance:C``: the sampling rule's comparison "one more round of the threshold vs one more sample of
  the key" (``AnytimeKSigma._threshold_first``) with the threshold's gain times C (shipped: 1);
* ``blocked``: threshold first also whenever the key's own mean lies inside the threshold's interval (no
  sample of the key can classify it before the threshold's interval shrinks);
* ``told`` / ``told:S``: the threshold *told* (its interval the true ``theta``, zero width), all else as
  shipped (``told``: the arms' share of delta too) or with ``arm_share`` S (``told:0.999``: nearly all of
  delta to the arms, like the oracle's ``delta / n``). Not a policy: the decomposition of engine / oracle
  into the threshold's width (``base`` / ``told``), the share of delta it takes (``told`` / ``told:0.999``)
  and what remains between the engine's sampling and classification and the oracle's;
* ``limit:bilinear``, ``limit:bilinear:F``, ``limit:lin:F``: **not valid** (no guarantee), limits for the next
  design: the bias-free lower side's bilinear bound taken as 0 (the most any tighter bound of that term
  could give) or times F, the linear term's boundary times F (what a linear term F times narrower gives);
* ``signed``: the linear term's variance bound (:func:`~streamarms.confidence.threshold.linear_variance_bound`,
  a knapsack over ``|w_i|`` caps) also with *signed* weight intervals: ``y_i - mu`` in ``[lo_i - mu_hi,
  hi_i - mu_lo]`` (``mu`` within ``rms(e)`` of the track's estimate), ``sigma`` in ``[sigma_lo, sd_hat +
  rms(e)]``, so ``w_i`` in an interval that may exclude 0 (a lower cap) -- the smaller of the two bounds.

**Certification** (``--certify``): at the last level of run 0 of each instance, the variance ``V`` of the
linear term per row and what a row costs, for uniform rows (every key once a row) and for free allocation
(key i ``r_i ~ |w_i| sqrt(v_i)`` times a row, rounded, at least once: the allocation that minimises
``V x cost`` when the weights are known), each (a) with the true weights (``true``) and (b) as the
knapsack can certify it from the keys' intervals (``bound``), with the track's own bounds on ``mu`` and
``sigma`` and with ``mu``, ``sigma`` exact (only the keys' intervals uncertain). ``V x cost`` is what the
threshold's half-width costs in samples (smaller is better). Free allocation pays only if its *bound*
beats uniform rows' bound: this is the measurement behind the engine staying on uniform rows (and behind
the rows-with-multiplicities attempt of session 14, not beating ``cs``; README, "rows with per-key
multiplicities").
The last column (``dual``) certifies with more structure than the knapsack: the standard scores satisfy
``sum z_i = 0`` and ``sum z_i^2 = n`` exactly, each ``z_i`` in the interval its key's interval and the
bounds on ``mu``, ``sigma`` allow; :func:`dual_variance_bound` bounds ``max sum c_i w_i^2`` over that set
by Lagrangian weak duality (any multipliers give a valid bound).

Usage::

    python benchmarks/engine_ablation.py --runs 10           # every variant, every instance with n >= 20
    python benchmarks/engine_ablation.py --certify           # the certification table
    python benchmarks/engine_ablation.py --variants base,grid:1.05 --only zww17-20 --runs 4
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

from engine_vs_papers import DELTA, instances  # noqa: E402

from streamarms.confidence import threshold as TH  # noqa: E402
from streamarms.policies import anytime as AT  # noqa: E402
from streamarms.sim import Environment, run_policy  # noqa: E402

DEFAULT_VARIANTS = "base,grid:1.1,grid:1.05,balance:0.5,balance:2,signed"
DEFAULT_ONLY = "zww17-20,neurips17-n50,neurips17-n200,neurips17-n1000,aaai20-n400,lowrate-n50,star98"
CAP = 20_000_000


# ------------------------------------------------------------------------------------------------
# the variants (patched into a worker process that runs one job, then exits)
# ------------------------------------------------------------------------------------------------
def _grid(ratio: float) -> None:
    levels = TH.grid_levels(10 ** 12, 8, ratio)
    TH._LEVELS = levels
    TH.ThresholdTrack.levels = frozenset(levels)
    AT._LEVELS = levels
    AT._LEVEL_SET = frozenset(levels)


def _balance(c: float) -> None:
    """The shipped rule with the threshold's gain times c (one-sided: the benchmark's instances are)."""

    def threshold_first(self: AT.AnytimeKSigma, i: int) -> bool:
        cs = self.cs[i]
        mean = cs.s / cs.m
        th, (lo, hi) = self._th_u, self._u
        w = hi - th if mean > th else th - lo
        return c * self.n_undecided * w / (len(self.arms) * self.track.m_theta) > self._rp[i] / cs.m

    AT.AnytimeKSigma._threshold_first = threshold_first  # type: ignore[method-assign]


def _blocked() -> None:
    """Threshold first also whenever the key's own mean lies inside the threshold's interval on the side its
    classification needs: no sample of the key can classify it until the threshold's interval shrinks."""
    shipped = AT.AnytimeKSigma._threshold_first

    def threshold_first(self: AT.AnytimeKSigma, i: int) -> bool:
        cs = self.cs[i]
        mean = cs.s / cs.m
        lo, hi = self._u
        if lo <= mean <= hi:
            return True
        return shipped(self, i)

    AT.AnytimeKSigma._threshold_first = threshold_first  # type: ignore[method-assign]


def signed_variance_bound(lo: Any, hi: Any, vbar: Any, k: float, sigma_lo: float, sigma_hi: float,
                          mu_lo: float, mu_hi: float) -> float | None:
    """The knapsack of ``linear_variance_bound`` with signed caps ``w_i in [w_lo, w_hi]`` (module docstring,
    ``signed``; one-sided weights ``(1 + k z_i) / n``). ``None`` when sigma has no positive lower bound."""
    lo_a, hi_a, v_a = (np.asarray(x, dtype=float) for x in (lo, hi, vbar))
    n = lo_a.shape[-1]
    if not sigma_lo > 0 or not (np.all(np.isfinite(lo_a)) and np.all(np.isfinite(hi_a))):
        return None
    z_a, z_b = _z_box(lo_a, hi_a, sigma_lo, sigma_hi, mu_lo, mu_hi)
    w1, w2 = (1.0 + k * z_a) / n, (1.0 + k * z_b) / n
    upper = np.maximum(w1 * w1, w2 * w2)
    lower = np.where(w1 * w2 <= 0, 0.0, np.minimum(w1 * w1, w2 * w2))
    budget = (1.0 + k * k) / n
    if lower.sum() > budget:
        lower = np.zeros_like(lower)
    return _knapsack(v_a, lower, upper, budget)


def _knapsack(value: np.ndarray, lower: np.ndarray, upper: np.ndarray, budget: float) -> float:
    """``max sum a_i value_i`` subject to ``sum a_i = budget``, ``lower_i <= a_i <= upper_i`` (greedy)."""
    out, rest = float((lower * value).sum()), budget - float(lower.sum())
    for i in np.argsort(-value, kind="stable"):
        take = min(float(upper[i] - lower[i]), max(rest, 0.0))
        out += take * float(value[i])
        rest -= take
    return out


def dual_variance_bound(c: Any, z_lo: Any, z_hi: Any, k: float, iters: int = 60) -> float:
    """An upper bound on ``max sum_i c_i w_i^2``, ``w_i = (1 + k z_i) / n``, over ``z_lo <= z <= z_hi``,
    ``sum z = 0``, ``sum z^2 = n``: for any multipliers ``(a, b)``, ``g(a, b) = b n + sum_i max_{z_i in box}
    (c_i w_i^2 - a z_i - b z_i^2)`` is at least the maximum (weak duality: on the feasible set the penalty
    terms vanish), and ``g`` is convex; nested ternary searches minimise it (any point is still valid).

    >>> round(dual_variance_bound([1.0, 1.0], [-1.0, -1.0], [1.0, 1.0], 1.0), 6)   # z = (1, -1): (4 + 0) / 4
    1.0
    """
    c_a, lo, hi = (np.asarray(x, dtype=float) for x in (c, z_lo, z_hi))
    n = c_a.shape[-1]
    q2, q1 = c_a * k * k / n ** 2, 2.0 * c_a * k / n ** 2  # c_i w_i^2 = q2 z^2 + q1 z + c_i / n^2

    def g(a: float, b: float) -> float:
        A, B = q2 - b, q1 - a
        best = np.maximum(A * lo * lo + B * lo, A * hi * hi + B * hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            zv = np.clip(np.where(A < 0, -B / (2.0 * A), lo), lo, hi)
        best = np.where(A < 0, np.maximum(best, A * zv * zv + B * zv), best)
        return float(best.sum() + c_a.sum() / n ** 2 + b * n)

    span = 10.0 * float(q2.max() * n + q1.max() * math.sqrt(n)) + 1.0

    def argmin(f: Any) -> float:
        lo_, hi_ = -span, span
        for _ in range(iters):
            m1, m2 = lo_ + (hi_ - lo_) / 3.0, hi_ - (hi_ - lo_) / 3.0
            if f(m1) < f(m2):
                hi_ = m2
            else:
                lo_ = m1
        return (lo_ + hi_) / 2.0

    def inner(b: float) -> float:
        return g(argmin(lambda a: g(a, b)), b)

    return inner(argmin(inner))


def _z_box(lo: Any, hi: Any, s_lo: float, s_hi: float, mu_lo: float, mu_hi: float) -> tuple[Any, Any]:
    """Each key's standard score interval from its interval and the bounds on mu and sigma (``y_i - mu`` in
    ``[lo_i - mu_hi, hi_i - mu_lo]``, sigma in ``[s_lo, s_hi]``; an unusable ``s_hi`` counts as infinite), each
    end clipped to ``+- sqrt(n - 1)``."""
    n = len(lo)
    cap = math.sqrt(n - 1.0)
    s_hi = s_hi if s_hi > 0 and math.isfinite(s_hi) else math.inf
    a, b = np.asarray(lo) - mu_hi, np.asarray(hi) - mu_lo
    return (np.clip(np.where(a >= 0, a / s_hi, a / s_lo), -cap, cap),
            np.clip(np.where(b >= 0, b / s_lo, b / s_hi), -cap, cap))


def _estimates(g: Any, n: int, alpha_lin: float, kw: dict[str, Any]) -> tuple[float, float, float]:
    """``(mu_hat, sd_hat, rms(e))`` at level g from the track's totals ``kw`` (the arguments of
    :func:`~streamarms.confidence.threshold.threshold_bounds`), as that function computes them."""
    mu_hat = kw["sum_y"] / n
    sd_hat = math.sqrt(max(kw["sum_y2"] / n - mu_hat * mu_hat, 0.0))
    sum_r2 = kw["sum_r2"]
    if kw.get("span") is not None:
        sum_r2 = min(sum_r2, TH.quadratic_bound(g, n, kw["span"] ** 2 / 4.0, alpha_lin * TH.Q_SHARE, kw.get("sum_lq")))
    return mu_hat, sd_hat, math.sqrt(max(sum_r2, 0.0) / n)


def _signed() -> None:
    shipped_bounds, shipped_lvb = TH.threshold_bounds, TH.linear_variance_bound
    state: dict[str, float] = {}

    def threshold_bounds(g: Any, n: int, k: float, alpha_lin: float, **kw: Any) -> dict[str, Any]:
        mu_hat, sd_hat, rms_e = _estimates(g, n, alpha_lin, kw)
        sd_c = math.sqrt(max(kw["sum_c2"] / n - (kw["sum_c"] / n) ** 2, 0.0))
        rms_h = math.sqrt(max(kw["sum_h2"], 0.0) / n)
        state.update(s_hi=min(sd_hat + rms_e, sd_c + rms_h), mu_lo=max(mu_hat - rms_e, kw["sum_lo"] / n),
                     mu_hi=min(mu_hat + rms_e, kw["sum_hi"] / n))
        return shipped_bounds(g, n, k, alpha_lin, **kw)

    def linear_variance_bound(lo: Any, hi: Any, vbar: Any, k: float, sigma_lo: Any) -> tuple[Any, Any]:
        V, w = shipped_lvb(lo, hi, vbar, k, sigma_lo)
        s = signed_variance_bound(lo, hi, vbar, k, float(sigma_lo), state["s_hi"], state["mu_lo"], state["mu_hi"])
        return (V if s is None else min(V, s)), w

    TH.threshold_bounds = threshold_bounds
    TH.linear_variance_bound = linear_variance_bound


def _told(theta: float) -> None:
    """The threshold's interval is ``[theta, theta]`` at every refresh (one-sided, as the instances)."""
    shipped = AT.AnytimeKSigma._refresh_threshold

    def refresh(self: AT.AnytimeKSigma) -> None:
        shipped(self)
        self._u, self._th_u, self._W = (theta, theta), theta, 0.0

    AT.AnytimeKSigma._refresh_threshold = refresh  # type: ignore[method-assign]


def _limit(what: str) -> None:
    """Not valid (module docstring): the bilinear bound as 0, or the linear term's boundary times F."""
    part, _, f = what.partition(":")
    if part == "bilinear":  # limit:bilinear (as 0) or limit:bilinear:F (times F)
        shipped_b, factor = TH.bilinear_bound, float(f or 0.0)

        def bilinear(*a: Any, **kw: Any) -> Any:
            b = shipped_b(*a, **kw)
            return np.where(np.isfinite(b), factor * b, b)  # inf (below g = 2: no bound) stays

        TH.bilinear_bound = bilinear  # type: ignore[assignment]
    elif part == "lin" and f:  # the linear term's call only: the bilinear bound keeps the shipped boundary
        shipped, shipped_b = TH.mixture_boundary, TH.bilinear_bound

        def scaled(*a: Any, **kw: Any) -> Any:
            return float(f) * shipped(*a, **kw)

        def bilinear(*a: Any, **kw: Any) -> Any:
            TH.mixture_boundary = shipped
            try:
                return shipped_b(*a, **kw)
            finally:
                TH.mixture_boundary = scaled

        TH.mixture_boundary, TH.bilinear_bound = scaled, bilinear  # type: ignore[assignment]
    elif part == "upper":  # limit:upper: the upper side without the bias (sd_hat^2 -> A), nothing paid for it
        shipped_tb = TH.threshold_bounds

        def tb(g: Any, n: int, k: float, alpha_lin: float, **kw: Any) -> dict[str, Any]:
            out = shipped_tb(g, n, k, alpha_lin, **kw)
            if kw.get("sum_w") is None:
                return out
            mu = kw["sum_y"] / n
            sd2 = max(kw["sum_y2"] / n - mu * mu, 0.0)
            extra = float(f) if f else 0.0  # limit:upper:X adds X * (the bias) back
            A = sd2 - (1.0 - extra) * kw["sum_w"] / n
            t_lo, t_hi = out["upper_track"]
            t_hi = min(t_hi, t_hi - k * math.sqrt(sd2) + k * math.sqrt(max(A, 0.0)))
            b_lo, b_hi = out["upper_box"]
            lo, hi = max(t_lo, b_lo), min(t_hi, b_hi)
            out["upper"], out["upper_track"] = (lo, max(hi, lo)), (t_lo, t_hi)
            return out

        TH.threshold_bounds = tb  # type: ignore[assignment]
    else:
        raise SystemExit(f"unknown limit {what!r}; known: limit:bilinear[:F], limit:lin:F, limit:upper[:X]")


def apply(variant: str, theta: float = math.nan) -> dict[str, Any]:
    """Patch ``variant`` in; the policy's constructor options it needs."""
    name, _, arg = variant.partition(":")
    if name == "base":
        return {}
    if name == "told":
        _told(theta)
        return {"arm_share": float(arg)} if arg else {}
    if name == "grid":
        _grid(float(arg))
    elif name == "balance":
        _balance(float(arg))
    elif name == "signed":
        _signed()
    elif name == "blocked":
        _blocked()
    elif name == "limit":
        _limit(arg)
    else:
        raise SystemExit(f"unknown variant {variant!r}; known: base, grid:R, balance:C, signed, blocked, told, told:S, limit:bilinear, limit:lin:F")
    return {}


# ------------------------------------------------------------------------------------------------
# runs
# ------------------------------------------------------------------------------------------------
def _instance(name: str) -> Any:
    for inst in instances(False):
        if inst.name == name:
            return inst
    raise SystemExit(f"unknown instance {name!r}")


def one_run(job: tuple[str, str, int]) -> tuple[str, str, int, int, bool]:
    variant, name, r = job
    inst = _instance(name)
    means = inst.draw(r)
    y = np.asarray(means)
    theta = float(y.mean() + inst.k * y.std())
    opts = apply(variant, theta)
    env = Environment(means, seed=r)
    pol = AT.AnytimeKSigma(env.arm_names, k=inst.k, delta=DELTA, **opts)
    res = run_policy(pol, env, max_pulls=CAP, keep_events=False)
    ok = res.decision.done and set(res.decision.outliers) == {str(i) for i, v in enumerate(means) if v > theta}
    return variant, name, r, res.pulls, bool(ok)


def variants_table(variants: list[str], names: list[str], runs: int, first: int = 0) -> None:
    jobs = [(v, n, r) for n in names for r in range(first, first + runs) for v in variants]
    out: dict[tuple[str, str], list[tuple[int, bool]]] = {}
    t0 = time.time()
    with Pool(2, maxtasksperchild=1) as pool:
        for i, (v, n, _r, pulls, ok) in enumerate(pool.imap_unordered(one_run, jobs), 1):
            out.setdefault((n, v), []).append((pulls, ok))
            print(f"\r{i}/{len(jobs)} runs, {time.time() - t0:.0f} s", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"mean samples over runs {first}..{first + runs - 1} (ratio to base); errors = wrong or undecided answers")
    print("| instance | " + " | ".join(variants) + " |")
    print("| --- |" + " --- |" * len(variants))
    for n in names:
        base = float(np.mean([p for p, _ in out[(n, variants[0])]]))
        cells = []
        for v in variants:
            xs = out[(n, v)]
            m = float(np.mean([p for p, _ in xs]))
            err = sum(not ok for _, ok in xs)
            cells.append(f"{m:,.0f} ({m / base:.3f})" + (f" {err} err" if err else ""))
        print(f"| `{n}` | " + " | ".join(cells) + " |")


# ------------------------------------------------------------------------------------------------
# certification of free allocation
# ------------------------------------------------------------------------------------------------
def certify(name: str) -> list[str]:
    inst = _instance(name)
    means = inst.draw(0)
    k = inst.k
    seen: dict[str, Any] = {}
    shipped = TH.threshold_bounds

    def capture(g: Any, n: int, kk: float, alpha: float, **kw: Any) -> dict[str, Any]:
        seen.update(kw, g=g, alpha=alpha)
        return shipped(g, n, kk, alpha, **kw)

    TH.threshold_bounds = capture  # type: ignore[assignment]
    try:
        env = Environment(means, seed=0)
        pol = AT.AnytimeKSigma(env.arm_names, k=k, delta=DELTA)
        run_policy(pol, env, max_pulls=CAP, keep_events=False)
    finally:
        TH.threshold_bounds = shipped
    n, g = len(means), seen["g"]
    y = np.asarray(means)
    w = (1.0 + k * (y - y.mean()) / y.std()) / n
    v = y * (1.0 - y)
    lo, hi, vbar = (np.asarray(x, dtype=float) for x in seen["box"][:3])
    mu_hat, sd_hat, rms_e = _estimates(g, n, seen["alpha"], seen)
    means_hat = np.array([c.s / c.m for c in pol.cs])
    w_hat = np.abs(1.0 + k * (means_hat - mu_hat) / sd_hat) / n
    score = w_hat * np.sqrt(vbar)
    rows = []
    for label, s_lo, s_hi, mu_lo, mu_hi in [
            ("track's mu, sigma", max(sd_hat - rms_e, TH.min_sd_over_box(lo, hi)), sd_hat + rms_e,
             mu_hat - rms_e, mu_hat + rms_e),
            ("mu, sigma exact", float(y.std()), float(y.std()), float(y.mean()), float(y.mean()))]:
        for scheme in ("uniform", "free"):
            r = np.ones(n) if scheme == "uniform" else np.maximum(1.0, np.round(score / np.median(score)))
            c = vbar / r
            bound = signed_variance_bound(lo, hi, c, k, s_lo, s_hi, mu_lo, mu_hi)
            dual = dual_variance_bound(c, *_z_box(lo, hi, s_lo, s_hi, mu_lo, mu_hi), k) if s_lo > 0 else math.inf
            true = float((w * w * v / r).sum())
            cost = float(r.sum())
            rows.append(f"| `{name}` | {label} | {scheme} | {cost:,.0f} | {true * cost:.3g} | "
                        f"{(bound or math.inf) * cost:.3g} | {dual * cost:.3g} |")
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default=DEFAULT_VARIANTS, help=f"comma-separated (default {DEFAULT_VARIANTS})")
    ap.add_argument("--only", default=DEFAULT_ONLY, help="comma-separated instances (default: n >= 20)")
    ap.add_argument("--runs", type=int, default=10, help="runs per instance and variant (default 10)")
    ap.add_argument("--first", type=int, default=0, help="first run index (default 0)")
    ap.add_argument("--certify", action="store_true", help="the certification table instead of the variants")
    a = ap.parse_args(argv)
    names = a.only.split(",")
    if a.certify:
        print(f"V x cost per row at the last level of run 0 (delta = {DELTA}); smaller is better")
        print("| instance | mu, sigma | rows | row cost | V x cost, true weights | V x cost, certified | certified, dual |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name in names:
            for line in certify(name):
                print(line, flush=True)
        return
    variants = a.variants.split(",")
    if variants[0] != "base":
        variants.insert(0, "base")
    variants_table(variants, names, a.runs, a.first)


if __name__ == "__main__":
    main()

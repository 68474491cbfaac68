"""k-sigma outlier arms: Round-Robin, Weighted Round-Robin and the Naive Round-Robin baseline.

Zhuang, Wang, Wang. *Identifying Outlier Arms in Multi-Armed Bandit*. NeurIPS 2017 ([ZWW17]).

An arm ``i`` with mean ``y_i`` is an outlier iff ``y_i > theta = mu_y + k sigma_y`` (population mean
and standard deviation over the arms' means) and normal iff ``y_i < theta``. With ``two_sided=True``
an arm below ``mu_y - k sigma_y`` is an outlier too (a streamarms extension, see below).

* :class:`RoundRobin` (RR, Alg. 1) pulls the arms in turn; :class:`WeightedRoundRobin` (WRR, Alg. 2)
  gives active arms about ``rho`` pulls per round (stride scheduling, ``rho* = ((n-1)^2 / l(k))^(1/3)``,
  Eq. 6). Both stop when no arm is active (Eq. 2: its interval overlaps the threshold's interval) and
  return ``{i : y_hat_i > theta_hat}`` (Eq. 3); significance ``delta' = 6 delta / (pi^2 (n+1) T^2)``
  after T pulls (Eq. 1).
* :class:`NaiveRoundRobin` (NRR, the paper's Sec. 5.2 baseline) pulls like RR and stops when the
  estimated outlier set has not changed in the last ``1/delta`` consecutive pulls. It has no guarantee.

Confidence intervals (Sec. 4.3), chosen by the reward model:

* ``bounded`` [a, b]: Hoeffding arm radius and the McDiarmid threshold radius
  ``R sqrt(l(k) log(1/delta') / (2 h(m)))`` (h = harmonic mean of the pull counts);
* ``bernoulli``: Agresti-Coull arm radius and the threshold radius that propagates the arm radii
  through mu and sigma (:func:`streamarms.bounds.delta_method_threshold_radius`; the paper calls these
  Bernoulli intervals heuristic);
* any other model: its own arm radius and the Lipschitz threshold radius
  (:func:`streamarms.bounds.lipschitz_threshold_radius`), implied by the arm intervals.

Two-sided rule: the lower threshold ``mu - k sigma`` has the same radius as the upper one (the same
bounded differences for McDiarmid, the mirrored weights for the delta method); the union bound then
covers n arm intervals and 2 threshold intervals, so ``delta' = 6 delta / (pi^2 (n+2) T^2)``.

Speed (a deviation in *how*, not *what*): the paper re-evaluates every arm's activity after every
pull, O(n) work per pull. Here a pull costs O(1) amortised and the stopping time, the activity
used by WRR and the returned set are exactly the paper's:

* theta_hat, the harmonic mean and (for Bernoulli) the threshold radius come from running sums;
* the stopping rule keeps a *certificate*: an arm that was active at a reference time and has not been
  pulled since stays active while its overlap exceeds the threshold's drift since then (an unpulled
  arm's radius only grows as delta' shrinks). Only when no certificate is left is the full, vectorised
  Eq. 2 check run; so termination is detected at exactly the pull the paper's rule fires.
* Bernoulli threshold radius: the z of the Agresti-Coull interval changes with every pull; running
  sums are kept for z at both ends of a short window of T, bracketing the exact radius; the exact
  O(n) value is computed only when the bracket cannot decide.

``tests/policies/test_ksigma.py`` runs a literal O(n)-per-pull reference of Alg. 1 and Alg. 2 side by side and
checks the same pulls, the same stopping time and the same answer.

Classification events: an arm whose interval is disjoint from the threshold's interval is reported as
``outlier`` or ``normal`` the first time this is seen (at the latest at the next full check). Under the
event that all intervals hold (probability >= 1 - delta), every such report is correct.

>>> from streamarms.sim import Environment, run_policy
>>> env = Environment([0.1, 0.12, 0.11, 0.09, 0.1, 0.9], seed=1, model="bernoulli")
>>> result = run_policy(WeightedRoundRobin(env.arm_names, k=1.5, delta=0.1), env)
>>> result.decision.outliers, result.decision.done
(['5'], True)
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .. import bounds
from ..models import BernoulliModel, BoundedModel, RewardModel, make_model
from ..validation import check_ksigma_params
from . import ksigma_batch, ksigma_snapshot
from .base import Decision, Event, Policy, Request
from .snapshot_fields import guarded

__all__ = ["RoundRobin", "WeightedRoundRobin", "NaiveRoundRobin", "ksigma_outliers"]

#: below this population standard deviation the delta-method weights are undefined (all means equal)
_SIGMA_FLOOR = 1e-6


def ksigma_outliers(means: Sequence[float], k: float, two_sided: bool = False) -> list[int]:
    """Indices of the true k-sigma outliers of ``means`` ([ZWW17] Sec. 3).

    >>> ksigma_outliers([0.1, 0.1, 0.1, 0.1, 0.9], k=1.5)
    [4]
    """
    lo, hi = ksigma_thresholds(means, k)
    return [i for i, v in enumerate(means) if v > hi or (two_sided and v < lo)]


def ksigma_thresholds(means: Sequence[float], k: float) -> tuple[float, float]:
    """``(mu - k sigma, mu + k sigma)`` of the means (population sd).

    >>> ksigma_thresholds([0.0, 1.0, 0.0, 1.0], 1.0)
    (0.0, 1.0)
    """
    y = np.asarray(means, dtype=float)
    mu, sigma = float(y.mean()), float(y.std())
    return mu - k * sigma, mu + k * sigma


def at_threshold(means: Sequence[float], lo: float, hi: float, two_sided: bool = False) -> list[int]:
    """Indices of the means equal (to rounding) to the threshold ``hi`` (or, ``two_sided``, to ``lo``): no
    fixed-confidence policy can classify such an arm, so a run on the instance never stops.

    >>> at_threshold([0.1, 0.5, 0.5000000000001], 0.0, 0.5)
    [1, 2]
    """
    ths = [hi] + ([lo] if two_sided else [])
    return [i for i, v in enumerate(means) if any(abs(v - t) <= 1e-12 * max(1.0, abs(t)) for t in ths)]


class _KSigmaEstimates(Policy):
    """Shared state of the k-sigma policies: counts, sums, running sums, theta_hat, RR cursor."""

    two_sided: bool

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"k": 1.5, "model": "bounded"}]

    def __init__(self, arms: Sequence[str], *, k: float = 2.0, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", two_sided: bool = False) -> None:
        super().__init__(arms)
        n = len(self.arms)
        check_ksigma_params(k, delta, n)
        self.k = float(k)
        self.delta = float(delta)
        self.model = make_model(model)
        if hasattr(self.model, "require_sum_based"):
            self.model.require_sum_based(self.name)
        # estimates other than the plain mean (TEA): the sum adds model.contribution(j, x)
        self._transforms = bool(getattr(self.model, "transforms", False))
        self._transformed = 0  # samples whose contribution differs from the reward (e.g. truncated)
        self.two_sided = bool(two_sided)
        self.n = n
        self.m: list[int] = [0] * n
        self.s: list[float] = [0.0] * n
        self._np_dirty: list[int] = []  # arms whose counts the arrays below do not show yet (_sync_np)
        self._m_np = np.zeros(n)
        self._s_np = np.zeros(n)
        self.T = 0
        self._n_unpulled = n
        self._init_ptr = 0          # first arm that may still have no sample
        self._cur = 0               # RR cursor: the arm wanted next (after initialisation)
        self._ignored_after_done = 0
        # running sums over sampled arms
        self._sy = 0.0
        self._syy = 0.0
        self._sinv = 0.0
        self._done = False
        self._requests: list[Request | None] = [None] * n

    # -- the counts as arrays (numpy work on all arms) ---------------------------------------------
    # ``m``/``s`` (lists) are the counts; the arrays repeat them for numpy. The fused pull of
    # ksigma_batch.update_one only notes the arm in ``_np_dirty`` (two numpy item stores were ~0.2 us of
    # its ~5 us); whoever reads an array first brings it up to date from the lists (same values).
    @property
    def _m_np(self) -> np.ndarray:
        if self._np_dirty:
            self._sync_np()
        return self._m_arr

    @_m_np.setter
    def _m_np(self, value: np.ndarray) -> None:
        self._np_dirty.clear()
        self._m_arr = value

    @property
    def _s_np(self) -> np.ndarray:
        if self._np_dirty:
            self._sync_np()
        return self._s_arr

    @_s_np.setter
    def _s_np(self, value: np.ndarray) -> None:
        self._np_dirty.clear()
        self._s_arr = value

    def _sync_np(self) -> None:
        dirty, m, s, ma, sa = self._np_dirty, self.m, self.s, self._m_arr, self._s_arr
        if len(dirty) > self.n:
            ma[:], sa[:] = m, s
        else:
            for j in dirty:
                ma[j], sa[j] = m[j], s[j]
        dirty.clear()

    # -- estimates ------------------------------------------------------------------------------
    @property
    def pulls(self) -> int:
        return self.T

    @property
    def done(self) -> bool:
        return self._done

    @property
    def initialised(self) -> bool:
        """Every arm has at least one sample (end of line 1 of Alg. 1 / Alg. 2)."""
        return self._n_unpulled == 0

    def _theta(self) -> tuple[float, float, float, float]:
        """(mu_hat, sigma_hat, theta_hat_upper, theta_hat_lower) from the running sums."""
        n = self.n
        mu = self._sy / n
        var = self._syy / n - mu * mu
        sigma = math.sqrt(var) if var > 0.0 else 0.0
        return mu, sigma, mu + self.k * sigma, mu - self.k * sigma

    def _resync_sums(self) -> None:
        """Recompute the running sums exactly (bounds floating-point drift)."""
        m = self._m_np
        pulled = m > 0
        y = np.divide(self._s_np, m, out=np.zeros(self.n), where=pulled)
        self._sy = float(y.sum())
        self._syy = float((y * y).sum())
        self._sinv = float(np.divide(1.0, m, out=np.zeros(self.n), where=pulled).sum())

    def _ingest(self, i: int, x: float) -> None:
        """Add one (validated) reward of arm i to counts and running sums."""
        mi, si = self.m[i], self.s[i]
        if mi:
            yo = si / mi
            self._sy -= yo
            self._syy -= yo * yo
            self._sinv -= 1.0 / mi
        else:
            self._n_unpulled -= 1
        mi += 1
        if self._transforms:
            cx = self.model.contribution(mi, x)
            if cx != x:
                self._transformed += 1
            x = cx
        si += x
        self.m[i], self.s[i] = mi, si
        self._m_np[i], self._s_np[i] = mi, si
        yn = si / mi
        self._sy += yn
        self._syy += yn * yn
        self._sinv += 1.0 / mi
        self.T += 1

    def _accept(self, arm: str, reward: Any) -> tuple[int, float] | None:
        """The arm's index and the checked reward (``ValueError`` if bad); ``None`` once done (a reward
        after the stop is counted and ignored)."""
        i = self._arm_index(arm)
        x = self.model.check(arm, reward)
        if self._done:
            self._ignored_after_done += 1
            return None
        return i, x

    def _estimated_outliers(self) -> list[int]:
        if not self.initialised:
            return []
        _, _, hi, lo = self._theta()
        y = self._s_np / self._m_np
        mask = y > hi
        if self.two_sided:
            mask |= y < lo
        return [int(i) for i in np.nonzero(mask)[0]]

    # -- round-robin plan ----------------------------------------------------------------------------
    def _init_request(self) -> int | None:
        while self._init_ptr < self.n and self.m[self._init_ptr] > 0:
            self._init_ptr += 1
        return self._init_ptr if self._init_ptr < self.n else None

    def _start_regular(self) -> None:
        # Alg. 1/2: i <- 1 (1-based), then i <- i % n + 1 before the first regular pull: arm 2.
        self._cur = 1 % self.n

    def _request(self, i: int) -> Request:
        """Arm i's request (frozen, so made once per arm and shared: the planned feed asks per sample)."""
        r = self._requests[i]
        if r is None:
            r = self._requests[i] = Request(self.arms[i])
        return r

    def next_request(self) -> Request | None:
        if self._done:
            return None
        if self._n_unpulled:  # not initialised
            i = self._init_request()
            assert i is not None
            return self._request(i)
        r = self._requests[self._cur]  # (_request, inline: the planned feed asks once per sample)
        return r if r is not None else self._request(self._cur)

    def wanted(self, k: int) -> list[Request]:
        if self._done or k <= 0:
            return []
        if not self.initialised:
            out: list[Request] = []
            j = self._init_request() or 0
            while j < self.n and len(out) < k:
                if self.m[j] == 0:
                    out.append(self._request(j))
                j += 1
            return out
        n, cur, reqs, make = self.n, self._cur, self._requests, self._request
        # (_request, its cache read inline: the planned feed asks for the window every few samples)
        return [reqs[i] or make(i) for i in [(cur + j) % n for j in range(min(k, n))]]

    def _params(self) -> dict[str, Any]:
        return {"k": self.k, "delta": self.delta, "model": self.model.to_dict(),
                "two_sided": self.two_sided}

    def _base_state(self) -> dict[str, Any]:
        return {"policy": type(self).__name__, "arms": list(self.arms), "params": self._params(),
                "m": list(self.m), "s": list(self.s), "T": self.T, "cur": self._cur,
                "done": self._done, "ignored_after_done": self._ignored_after_done,
                "transformed": self._transformed,
                "sums": [self._sy, self._syy, self._sinv]}

class _ConfidentKSigma(_KSigmaEstimates):
    """Confidence intervals, Eq. 2 activity, Eq. 3 output and the incremental stopping check."""

    SIGMA_FLOOR: ClassVar[float] = _SIGMA_FLOOR  # (for ksigma_batch, which cannot import this module)

    def __init__(self, arms: Sequence[str], *, k: float = 2.0, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", two_sided: bool = False) -> None:
        super().__init__(arms, k=k, delta=delta, model=model, two_sided=two_sided)
        self._n_thr = 2 if self.two_sided else 1
        self._sig_const = bounds.zww17_significance(self.delta, self.n, 1, self._n_thr)  # delta' * T^2
        if isinstance(self.model, BoundedModel):
            self._radius_kind = "mcdiarmid"
            self._lk = bounds.l_k(self.k, self.n, self.delta)
        elif isinstance(self.model, BernoulliModel):
            self._radius_kind = "delta_method"
        else:
            self._radius_kind = "lipschitz"
        self._reported = bytearray(self.n)
        self._events_total = 0
        # certificate of "not done": arms active at the reference time, by certificate value
        self._cert_idx: list[int] = []
        self._cert_val: list[float] = []
        self._cert_ptr = 0
        self._cert_hi0 = 0.0
        self._cert_lo0 = 0.0
        self._pulled_since: set[int] = set()
        # Bernoulli / generic threshold radius brackets: z window [T_lo, T_hi]
        self._win_lo = 0
        self._win_hi = 0
        self._rad_lo: list[float] = []
        self._rad_hi: list[float] = []
        self._bsums = [0.0] * 8  # lo: Sb, S0, S1, S2 ; hi: Sb, S0, S1, S2
        self._rfn_lo = self._rfn_hi = self.model.radius_fn(0.5)
        self._last_threshold_interval: tuple[float, float] | None = None
        self._ctx_T = -1
        self._ctx: tuple[float, float, float, float, float, float, float] = (0.0,) * 7

    # -- significance and radii ---------------------------------------------------------------------
    def significance(self, T: int | None = None) -> float:
        """delta' after T pulls (Eq. 1; n + 2 for the two-sided rule)."""
        return bounds.zww17_significance(self.delta, self.n, self.T if T is None else T, self._n_thr)

    def _arm_radius(self, i: int, dprime: float) -> float:
        return self.model.radius(self.m[i], self.s[i], dprime)

    def _threshold_radius_exact(self, dprime: float) -> float:
        if self._radius_kind == "mcdiarmid":
            h = self.n / self._sinv
            return bounds.ksigma_threshold_radius(self.model.span, self._lk, h, dprime)
        beta = self.model.radii(self._m_np, self._s_np, dprime)
        if self._radius_kind == "delta_method":
            y = self._s_np / self._m_np
            return bounds.delta_method_threshold_radius(self.k, y, beta, self.two_sided)
        return bounds.lipschitz_threshold_radius(self.k, beta)

    def _open_window(self) -> None:
        """Bracket the z of the next pulls: radii at T (lower end) and at the window's end."""
        T = max(self.T, 1)
        self._win_lo = T
        self._win_hi = T + max(1, T // 32)
        d_lo, d_hi = self.significance(T), self.significance(self._win_hi)
        self._rfn_lo, self._rfn_hi = self.model.radius_fn(d_lo), self.model.radius_fn(d_hi)
        m_np, s_np = self._m_np, self._s_np
        y = s_np / m_np
        yy = y * y
        rl = self.model.radii(m_np, s_np, d_lo)
        rh = self.model.radii(m_np, s_np, d_hi)
        self._rad_lo, self._rad_hi = rl.tolist(), rh.tolist()
        bs = self._bsums
        total = np.add.reduce  # what ndarray.sum runs, without its Python wrapper (a window opens ~200 times an episode)
        for off, r in ((0, rl), (4, rh)):
            r2 = r * r
            bs[off] = float(total(r))
            bs[off + 1] = float(total(r2))
            bs[off + 2] = float(total(y * r2))
            bs[off + 3] = float(total(yy * r2))

    def _window_update(self, i: int, y_old: float, y_new: float) -> None:
        """Replace arm i's terms in the bracket sums after it was pulled.

        The lower end uses z at the window's start, the upper end z at its end: z grows with T,
        radii grow with z, so the sums bracket the exact threshold radius for every T in the window.
        """
        bs = self._bsums
        m, s = float(self.m[i]), self.s[i]
        for off, rads, fn in ((0, self._rad_lo, self._rfn_lo), (4, self._rad_hi, self._rfn_hi)):
            ro = rads[i]
            rn = fn(m, s)
            rads[i] = rn
            ro2, rn2 = ro * ro, rn * rn
            bs[off] += rn - ro
            bs[off + 1] += rn2 - ro2
            bs[off + 2] += y_new * rn2 - y_old * ro2
            bs[off + 3] += y_new * y_new * rn2 - y_old * y_old * ro2

    def _bracket_value(self, off: int, mu: float, sigma: float) -> float:
        Sb, S0, S1, S2 = self._bsums[off:off + 4]
        n, k = self.n, self.k
        if self._radius_kind == "lipschitz" or sigma <= 0.0:
            return Sb / n + k * math.sqrt(max(S0, 0.0) / n)
        best = 0.0
        for sign in ((1.0, -1.0) if self.two_sided else (1.0,)):
            b = sign * k / (n * sigma)
            c0 = 1.0 / n - b * mu
            v = c0 * c0 * S0 + 2.0 * c0 * b * S1 + b * b * S2
            best = max(best, v)
        return math.sqrt(best)

    def _threshold_radius_bracket(self, mu: float, sigma: float) -> tuple[float, float]:
        """(lower, upper) bounds on the exact threshold radius at the current T, in O(1)."""
        dprime = self.significance()
        if self._radius_kind == "mcdiarmid":
            r = self._threshold_radius_exact(dprime)
            return r, r
        if self.T > self._win_hi:
            self._open_window()
        if self._radius_kind == "delta_method" and sigma < _SIGMA_FLOOR:
            return 0.0, math.inf  # degenerate: let the exact computation decide
        lo = self._bracket_value(0, mu, sigma)
        hi = self._bracket_value(4, mu, sigma)
        return lo * (1.0 - 1e-9), hi * (1.0 + 1e-9) + 1e-15

    # -- activity ---------------------------------------------------------------------------------------
    def _dist(self, y: float, hi: float, lo: float) -> float:
        d = abs(y - hi)
        if self.two_sided:
            d = min(d, abs(y - lo))
        return d

    def _is_outlier_side(self, y: float, hi: float, lo: float) -> bool:
        return y > hi or (self.two_sided and y < lo)

    def _context(self) -> tuple[float, float, float, float, float, float, float]:
        """(mu, sigma, theta_hi, theta_lo, delta', r_lo, r_hi) at the current T, computed once per pull."""
        T = self.T
        if self._ctx_T == T:
            return self._ctx
        n = self.n
        mu = self._sy / n
        var = self._syy / n - mu * mu
        sigma = math.sqrt(var) if var > 0.0 else 0.0
        ks = self.k * sigma
        dprime = self._sig_const / (float(T) * T)
        if self._radius_kind == "mcdiarmid":
            # Hoeffding/McDiarmid threshold radius with h(m) = n / sum(1/m_i), from running sums
            r_lo = r_hi = bounds.ksigma_threshold_radius(self.model.span, self._lk, n / self._sinv, dprime)
        else:
            r_lo, r_hi = self._threshold_radius_bracket(mu, sigma)
        self._ctx = ctx = (mu, sigma, mu + ks, mu - ks, dprime, r_lo, r_hi)
        self._ctx_T = T
        return ctx

    def _arm_margin_bounds(self, i: int) -> tuple[float, float]:
        """Bounds on arm i's Eq. 2 margin (active iff margin < 0): (lower, upper)."""
        _, _, hi, lo, dprime, r_lo, r_hi = self._context()
        y = self.s[i] / self.m[i]
        base = self._dist(y, hi, lo) - self._arm_radius(i, dprime)
        return base - r_hi, base - r_lo

    def _arm_active(self, i: int) -> bool:
        """Exact Eq. 2 activity of arm i at the current T."""
        m_lo, m_hi = self._arm_margin_bounds(i)
        if m_hi < 0.0:
            return True
        if m_lo >= 0.0:
            return False
        _, _, hi, lo, dprime, _, _ = self._context()
        y = self.s[i] / self.m[i]
        margin = self._dist(y, hi, lo) - self._arm_radius(i, dprime) - self._threshold_radius_exact(dprime)
        return margin < 0.0

    def _event(self, i: int, y: float, beta: float, hi: float, lo: float, rth: float) -> Event:
        self._reported[i] = 1
        self._events_total += 1
        kind = "outlier" if self._is_outlier_side(y, hi, lo) else "normal"
        thr = hi
        if self.two_sided and kind == "outlier" and y < lo:
            thr = lo
        return Event(self.arms[i], kind, estimate=y, interval=(y - beta, y + beta), threshold=thr,
                     threshold_interval=(thr - rth, thr + rth), samples=self.m[i], pulls=self.T)

    def _full_check(self) -> list[Event]:
        """Vectorised Eq. 2 over all arms; events; termination; a new certificate."""
        self._resync_sums()
        mu, sigma, hi, lo = self._theta()
        dprime = self.significance()
        y = self._s_np / self._m_np
        beta = self.model.radii(self._m_np, self._s_np, dprime)
        rth = self._threshold_radius_exact(dprime)
        self._last_threshold_interval = (hi - rth, hi + rth)
        dist = np.abs(y - hi)
        if self.two_sided:
            dist = np.minimum(dist, np.abs(y - lo))
        margin = dist - beta - rth
        active = margin < 0.0
        events: list[Event] = []
        rep = np.frombuffer(self._reported, dtype=np.uint8)
        for i in np.nonzero(~active & (rep == 0))[0].tolist():
            events.append(self._event(i, float(y[i]), float(beta[i]), hi, lo, rth))
        if not active.any():
            self._done = True
            return events
        idx = np.nonzero(active)[0]
        self._set_certificate(idx, (beta - dist)[idx], hi, lo)
        return events

    def _set_certificate(self, idx: np.ndarray, vals: np.ndarray, hi: float, lo: float) -> None:
        order = np.argsort(-vals, kind="stable")
        self._cert_idx = idx[order].tolist()
        self._cert_val = vals[order].tolist()
        self._cert_ptr = 0
        self._cert_hi0, self._cert_lo0 = hi, lo
        self._pulled_since.clear()

    def _partial_refresh(self, hi: float, lo: float, r_lo: float) -> bool:
        """Re-certify the previously active arms at the current T; False if none stays certified."""
        idx = np.asarray(self._cert_idx, dtype=np.intp)
        dprime = self.significance()
        y = self._s_np[idx] / self._m_np[idx]
        beta = self.model.radii(self._m_np[idx], self._s_np[idx], dprime)
        dist = np.abs(y - hi)
        if self.two_sided:
            dist = np.minimum(dist, np.abs(y - lo))
        vals = beta - dist
        keep = vals > -r_lo
        if not keep.any():
            return False
        self._set_certificate(idx[keep], vals[keep], hi, lo)
        return True

    def _check_stop(self) -> list[Event]:
        """Exact A = {} test, O(1) amortised."""
        if not self._cert_idx:
            return self._full_check()
        mu, sigma, hi, lo, _, r_lo, _ = self._context()
        drift = abs(hi - self._cert_hi0)
        if self.two_sided:
            drift = max(drift, abs(lo - self._cert_lo0))
        D = drift - r_lo
        idx, val, pulled = self._cert_idx, self._cert_val, self._pulled_since
        p = self._cert_ptr
        while p < len(idx):
            if val[p] > D and idx[p] not in pulled:
                self._cert_ptr = p
                return []
            p += 1
        self._cert_ptr = p
        if self._partial_refresh(hi, lo, r_lo):
            return []
        return self._full_check()

    # -- the interface ------------------------------------------------------------------------------------
    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        if (taken := self._accept(arm, reward)) is None:
            return []
        i, x = taken
        was_init = self.initialised
        y_old = self.s[i] / self.m[i] if self.m[i] else 0.0
        self._ingest(i, x)
        if not self.initialised:
            return []
        if not was_init:
            # line 3 of Alg. 1/2: everything estimated; start the regular pulls
            self._start_regular()
            self._after_init()
            if self._radius_kind != "mcdiarmid":
                self._open_window()
            return self._full_check()
        if self._radius_kind != "mcdiarmid":
            if self.T > self._win_hi:
                self._open_window()
            else:
                self._window_update(i, y_old, self.s[i] / self.m[i])
        self._pulled_since.add(i)
        events = self._check_stop()
        if not self._done:
            events.extend(self._after_pull(i, arm))
        return events

    def _after_init(self) -> None:
        """Hook: set up the regular-pull schedule."""

    def _after_pull(self, i: int, arm: str) -> list[Event]:
        """Hook: advance the schedule after a pull of arm i (run only if not done)."""
        return []

    def _pulled_arm_event(self, i: int) -> list[Event]:
        if self._reported[i] or self._arm_active(i):
            return []
        # the event's threshold interval uses the O(1) upper bracket of the radius (exact for bounded
        # rewards; for Bernoulli at most a window's worth of z wider): no O(n) work per event
        _, _, hi, lo, dprime, _, r_hi = self._context()
        if r_hi == math.inf:
            r_hi = self._threshold_radius_exact(dprime)
        y = self.s[i] / self.m[i]
        return [self._event(i, y, self._arm_radius(i, dprime), hi, lo, r_hi)]

    def arm_evidence(self, arm: str) -> dict[str, Any] | None:
        """Arm ``arm``'s mean, its Eq. 2 interval at the current significance, and samples (``KeyError`` for
        an unknown arm)."""
        i = self.index[arm]
        m = self.m[i]
        if m == 0:
            return {"estimate": None, "interval": None, "samples": 0}
        y = self.s[i] / m
        beta = self._arm_radius(i, self.significance())
        return {"estimate": y, "interval": [y - beta, y + beta], "samples": m}

    def threshold_interval(self) -> tuple[float, float] | None:
        """The current threshold estimate's confidence interval (O(n) for Bernoulli)."""
        if not self.initialised:
            return None
        _, _, hi, _ = self._theta()
        r = self._threshold_radius_exact(self.significance())
        return (hi - r, hi + r)

    def decision(self) -> Decision:
        arms = self.arms
        if not self.initialised:
            return Decision([], [], list(arms), [], None, None, self.T, False,
                            extra={"initialised": False})
        y = self._s_np / self._m_np
        mu, sigma = float(y.mean()), float(y.std())
        hi, lo = mu + self.k * sigma, mu - self.k * sigma
        dprime = self.significance()
        beta = self.model.radii(self._m_np, self._s_np, dprime)
        rth = self._threshold_radius_exact(dprime)
        dist = np.abs(y - hi)
        outside = y > hi
        if self.two_sided:
            dist = np.minimum(dist, np.abs(y - lo))
            outside |= y < lo
        active = (dist - beta - rth) < 0.0
        outliers = [arms[i] for i in np.nonzero(~active & outside)[0]]
        normals = [arms[i] for i in np.nonzero(~active & ~outside)[0]]
        undecided = [arms[i] for i in np.nonzero(active)[0]]
        est = [arms[i] for i in np.nonzero(outside)[0]]
        extra: dict[str, Any] = {"mu": mu, "sigma": sigma, "significance": dprime,
                                 "ignored_after_done": self._ignored_after_done,
                                 "transformed_samples": self._transformed}
        if self.two_sided:
            extra["lower_threshold"] = lo
            extra["lower_threshold_interval"] = (lo - rth, lo + rth)
        return Decision(outliers, normals, undecided, est, hi, (hi - rth, hi + rth), self.T,
                        self._done, extra=extra)

    def snapshot(self) -> dict[str, Any]:
        st = self._base_state()
        st["reported"] = list(self._reported)
        # the incremental stopping check's state too, so that a restored policy continues bit for bit
        # as the original would (the streaming daemon's restart-equals-uninterrupted guarantee)
        lti = self._last_threshold_interval
        if self._ctx_T == ksigma_batch.CTX_LAZY:  # (after a fused pull: the context it did not store)
            self._context()
        st["check"] = {
            "events_total": self._events_total, "cert_idx": [int(i) for i in self._cert_idx],
            "cert_val": [float(v) for v in self._cert_val], "cert_ptr": self._cert_ptr,
            "cert_hi0": self._cert_hi0, "cert_lo0": self._cert_lo0, "pulled_since": sorted(self._pulled_since),
            "win_lo": self._win_lo, "win_hi": self._win_hi, "rad_lo": list(self._rad_lo),
            "rad_hi": list(self._rad_hi), "bsums": list(self._bsums),
            "last_threshold_interval": None if lti is None else list(lti),
            "ctx_T": self._ctx_T, "ctx": list(self._ctx)}
        return st

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> _ConfidentKSigma:
        """Rebuild from :meth:`snapshot` output; a malformed snapshot raises ``ValueError`` naming the field
        (:mod:`streamarms.policies.ksigma_snapshot`)."""
        pol, f = ksigma_snapshot.construct(cls, state)
        ksigma_snapshot.load_base_state(pol, f)
        if isinstance(pol, WeightedRoundRobin):
            ksigma_snapshot.load_schedule(pol, f)
        ksigma_snapshot.load_check(pol, f)
        return pol


class RoundRobin(_ConfidentKSigma):
    """Round-Robin (RR, [ZWW17] Alg. 1): pull the arms in turn until no arm is active.

    Parameters: ``arms`` (string keys), ``k`` (outlier parameter, > 0), ``delta`` (error probability),
    ``model`` (``"bernoulli"`` (default), ``"bounded"`` / a :class:`~streamarms.models.BoundedModel`,
    or any reward model), ``two_sided`` (flag arms below ``mu - k sigma`` too).

    >>> from streamarms.sim import Environment, run_policy
    >>> env = Environment([0.2, 0.25, 0.2, 0.22, 0.21, 0.95], seed=3, model="bernoulli")
    >>> r = run_policy(RoundRobin(env.arm_names, k=1.5), env)
    >>> r.decision.outliers
    ['5']
    """

    name: ClassVar[str] = "rr"

    def _after_pull(self, i: int, arm: str) -> list[Event]:
        if i == self._cur:
            self._cur = (self._cur + 1) % self.n
        return []

    def defer(self, arm: str) -> None:
        i = self._arm_index(arm)
        if self.initialised and i == self._cur:
            self._cur = (self._cur + 1) % self.n


class WeightedRoundRobin(_ConfidentKSigma):
    """Weighted Round-Robin (WRR, [ZWW17] Alg. 2): active arms get about ``rho`` pulls per round.

    After each regular pull of arm i (one per round), ``c_i += rho``; arm i is pulled again ("extra
    pulls") while it is active and ``m_i < c_i``. ``rho`` defaults to ``rho* = ((n-1)^2 / l(k))^(1/3)``
    (Eq. 6). Same stopping rule, guarantee and output as :class:`RoundRobin`.

    >>> from streamarms.sim import Environment, run_policy
    >>> env = Environment([0.2, 0.25, 0.2, 0.22, 0.21, 0.95], seed=3, model="bernoulli")
    >>> pol = WeightedRoundRobin(env.arm_names, k=1.5)
    >>> round(pol.rho, 3)
    1.756
    >>> run_policy(pol, env).decision.outliers
    ['5']
    """

    name: ClassVar[str] = "wrr"

    def __init__(self, arms: Sequence[str], *, k: float = 2.0, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", two_sided: bool = False,
                 rho: float | None = None) -> None:
        super().__init__(arms, k=k, delta=delta, model=model, two_sided=two_sided)
        if rho is None:
            rho = bounds.optimal_rho(self.k, self.n, self.delta)
        if not (math.isfinite(rho) and rho >= 1.0):
            raise ValueError(f"rho must be a finite number >= 1, got {rho!r}")
        self.rho = float(rho)
        self.c: list[float] = [0.0] * self.n
        self._fused = ksigma_batch.fast_ok(self)  # update_one applies (Bernoulli, one-sided, this class)

    def _params(self) -> dict[str, Any]:
        p = super()._params()
        p["rho"] = self.rho
        return p

    def _after_init(self) -> None:
        self.c[self._cur] += self.rho

    def _advance(self) -> None:
        self._cur = (self._cur + 1) % self.n
        self.c[self._cur] += self.rho

    def _after_pull(self, i: int, arm: str) -> list[Event]:
        if i != self._cur:
            return self._pulled_arm_event(i)
        # "until i not in A or m_i >= c_i"
        if self.m[i] >= self.c[i]:
            self._advance()
            return self._pulled_arm_event(i)
        if self._arm_active(i):
            return []
        self._advance()
        return self._pulled_arm_event(i)

    def defer(self, arm: str) -> None:
        i = self._arm_index(arm)
        if self.initialised and i == self._cur:
            self._advance()

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        # the common pull in one fused step (ksigma_batch.update_one: the same floats); else the rules
        if self._fused and (events := ksigma_batch.update_one(self, arm, reward)) is not None:
            return events
        return super().update(arm, reward, request)

    def update_batch(self, arms: Sequence[int], rewards: Sequence[float]) -> tuple[int, list[Event]]:
        """:meth:`Policy.update_batch`, skipping ahead with numpy: exactly :meth:`update` reward by reward.

        Why that is exact: :mod:`streamarms.policies.ksigma_batch`.

        >>> import random
        >>> rng = random.Random(1); arms = [rng.randrange(300) for _ in range(20000)]
        >>> xs = [float(rng.random() < (0.9 if a == 7 else 0.2)) for a in arms]
        >>> names = [str(i) for i in range(300)]
        >>> p, q = WeightedRoundRobin(names), WeightedRoundRobin(names)
        >>> ev_p = [e for a, x in zip(arms, xs) for e in p.update(str(a), x)]
        >>> ev_q, pos = [], 0
        >>> while pos < len(xs):
        ...     n, ev = q.update_batch(arms[pos:], xs[pos:]); pos += n; ev_q += ev
        >>> ev_p == ev_q and p.snapshot() == q.snapshot(), len(ev_p) > 0
        (True, True)
        """
        return ksigma_batch.update_batch(self, arms, rewards)

    def snapshot(self) -> dict[str, Any]:
        st = super().snapshot()
        st["c"] = list(self.c)
        return st


class NaiveRoundRobin(_KSigmaEstimates):
    """Naive Round-Robin (NRR, [ZWW17] Sec. 5.2 baseline): RR pulls, heuristic stop.

    Stops as soon as the estimated outlier set (Eq. 3) has not changed in the last ``ceil(1/delta)``
    consecutive pulls. No confidence intervals, no guarantee (the paper shows it falls short of
    1 - delta); it is here to be compared against. Tracking the set costs O(log n) per pull: arms are
    kept sorted by estimate, and only arms between the old and new threshold can change side.

    >>> from streamarms.sim import Environment, run_policy
    >>> env = Environment([0.2, 0.25, 0.2, 0.22, 0.21, 0.95], seed=3, model="bernoulli")
    >>> r = run_policy(NaiveRoundRobin(env.arm_names, k=1.5, delta=0.01), env)
    >>> r.decision.done
    True
    """

    name: ClassVar[str] = "nrr"

    def __init__(self, arms: Sequence[str], *, k: float = 2.0, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", two_sided: bool = False) -> None:
        super().__init__(arms, k=k, delta=delta, model=model, two_sided=two_sided)
        self.patience = math.ceil(1.0 / self.delta)
        self._sorted: list[tuple[float, int]] = []
        self._last_change = 0
        self._theta_prev: tuple[float, float] = (0.0, 0.0)

    def _members_between(self, a: float, b: float, exclude: int) -> bool:
        """Is some arm other than ``exclude`` with estimate in [min(a,b), max(a,b)]?"""
        lo_v, hi_v = (a, b) if a <= b else (b, a)
        j = bisect.bisect_left(self._sorted, (lo_v, -1))
        while j < len(self._sorted) and self._sorted[j][0] <= hi_v:
            if self._sorted[j][1] != exclude:
                return True
            j += 1
        return False

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        if (taken := self._accept(arm, reward)) is None:
            return []
        i, x = taken
        was_init = self.initialised
        y_old = self.s[i] / self.m[i] if self.m[i] else None
        if y_old is not None:
            del self._sorted[bisect.bisect_left(self._sorted, (y_old, i))]
        self._ingest(i, x)
        y_new = self.s[i] / self.m[i]
        bisect.insort(self._sorted, (y_new, i))
        if not self.initialised:
            return []
        _, _, hi, lo = self._theta()
        if not was_init:
            self._start_regular()
            self._last_change = self.T
        else:
            if i == self._cur:
                self._cur = (self._cur + 1) % self.n
            ohi, olo = self._theta_prev
            side = (lambda v, h, low: v > h or (self.two_sided and v < low))
            changed = side(y_old, ohi, olo) != side(y_new, hi, lo)
            changed = changed or self._members_between(ohi, hi, i)
            if self.two_sided:
                changed = changed or self._members_between(olo, lo, i)
            if changed:
                self._last_change = self.T
        self._theta_prev = (hi, lo)
        if self.T - self._last_change >= self.patience:
            self._done = True
        return []

    def defer(self, arm: str) -> None:
        i = self._arm_index(arm)
        if self.initialised and i == self._cur:
            self._cur = (self._cur + 1) % self.n

    def decision(self) -> Decision:
        est = [self.arms[i] for i in self._estimated_outliers()]
        if self._done:
            normals = [a for a in self.arms if a not in set(est)]
            return Decision(est, normals, [], est, self._theta()[2], None, self.T, True)
        thr = self._theta()[2] if self.initialised else None
        return Decision([], [], list(self.arms), est, thr, None, self.T, False)

    def snapshot(self) -> dict[str, Any]:
        st = self._base_state()
        st["last_change"] = self._last_change
        st["theta_prev"] = list(self._theta_prev)
        return st

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> NaiveRoundRobin:
        pol, f = ksigma_snapshot.construct(cls, state)
        ksigma_snapshot.load_base_state(pol, f)
        ksigma_snapshot.load_naive(pol, f)
        return pol

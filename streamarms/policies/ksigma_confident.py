"""The confidence machinery of RR and WRR ([ZWW17]: Zhuang, Wang, Wang. *Identifying Outlier Arms in Multi-Armed
Bandit*. NeurIPS 2017; the policies: :mod:`streamarms.policies.ksigma`): the intervals of Sec. 4.3, an arm's activity
(Eq. 2), the output (Eq. 3) and a stopping check that costs O(1) amortised a pull.

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

Classification events: an arm whose interval is disjoint from the threshold's interval is reported as
``outlier`` or ``normal`` the first time this is seen (at the latest at the next full check). Under the
event that all intervals hold (probability >= 1 - delta), every such report is correct.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .. import bounds
from ..models import BernoulliModel, BoundedModel, RewardModel
from . import ksigma_batch, ksigma_snapshot
from .base import Decision, Event, Request
from .ksigma_estimates import _KSigmaEstimates
from .snapshot_fields import guarded

#: below this population standard deviation the delta-method weights are undefined (all means equal)
_SIGMA_FLOOR = 1e-6


class _ConfidentKSigma(_KSigmaEstimates):
    """Confidence intervals, Eq. 2 activity, Eq. 3 output and the incremental stopping check."""

    SIGMA_FLOOR: ClassVar[float] = _SIGMA_FLOOR  # (for ksigma_batch, which cannot import this module)
    #: the class keeps a pull schedule in its snapshot (WRR's stride counters)
    SCHEDULED: ClassVar[bool] = False

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
        if cls.SCHEDULED:
            ksigma_snapshot.load_schedule(pol, f)
        ksigma_snapshot.load_check(pol, f)
        return pol

"""ADE's confidence parts: the threshold-pair estimator, the arm radii, and the candidates' checks.

Zhang, Zhuang, Zhang, Zhou. *Adaptive Double-Exploration Tradeoff for Outlier Detection*. AAAI 2020
([ZZZZ20]); see :mod:`streamarms.policies.ade` for the algorithm, its reading and the proofs of the
amortised check. :class:`ThresholdEstimator` is the confidence computation for ``theta = mu + k sigma``
from pairs of samples of one uniformly drawn arm (Eq. 3, Lemmas 3-4); :func:`scalar_radius_at` the arm
radius ``r_i`` at ``delta_t``; :func:`check_all` checks every candidate; :class:`ClassificationHeaps` keeps,
per candidate arm, stale-but-valid bounds on ``U_i`` / ``L_i`` so that a threshold round checks only the
arms whose interval can have crossed the threshold's. Neither decides what to sample next.

>>> est = ThresholdEstimator(n=3, k=1.0, delta=0.1, a=0.0, R=1.0)
>>> est.add_pair(1.0, 1.0); est.add_pair(0.0, 0.0); est.update(3)
>>> est.mu_hat, est.sigma_hat
(0.5, 0.5)
>>> h = ClassificationHeaps(two_sided=False)
>>> h.push(0, 0.9, 0.05, 0); h.push(1, 0.1, 0.05, 0)
>>> [f[:3] for f in h.scan((0.4, 0.6, 0.0, 0.0), lambda m, s: 0.05, bytearray(b"\\x01\\x01"), [0, 0],
...                       [1, 1], [0.9, 0.1], bytearray(2), bytearray(2))]
[(0, 'outlier', 'high'), (1, 'normal', None)]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import bounds
from ..confidence.restored import number, whole
from ..models import BernoulliModel, BoundedModel, RewardModel

__all__ = ["ThresholdEstimator", "ClassificationHeaps", "Found", "check_all", "scalar_radius_at"]

#: (arm, "outlier" / "normal", "high" / "low" / None, y_hat, L, U)
Found = tuple[int, str, "str | None", float, float, float]


def scalar_radius_at(model: RewardModel) -> Callable[[float], Callable[[int, float], float]]:
    """``radius_at(delta)`` -> scalar ``r(m, s)``, identical to ``model.radius(m, s, delta)`` (the paper's
    models without the generic dispatch; ``delta_t`` changes once a round, so the last one is cached).

    >>> r = scalar_radius_at(BoundedModel(0.0, 1.0))(0.1)
    >>> r(10, 5.0) == BoundedModel(0.0, 1.0).radius(10, 5.0, 0.1)
    True
    """
    cache: list[Any] = [None, None]     # the last (delta, radius function)

    def cached(d: float) -> Callable[[int, float], float]:
        if cache[0] != d:
            cache[0], cache[1] = d, at(d)
        return cache[1]

    if type(model) is BoundedModel:
        R = model.span

        def at(d: float) -> Callable[[int, float], float]:
            return lambda m, s: float(bounds.hoeffding_radius(m, R, d))
    elif type(model) is BernoulliModel:
        bern = model

        def at(d: float) -> Callable[[int, float], float]:
            z = bern.z(d)
            return lambda m, s: float(bounds.agresti_coull_radius(m, s, z))
    else:
        def at(d: float) -> Callable[[int, float], float]:
            return lambda m, s: model.radius(m, s, d)
    return cached


#: candidate sets at least this large are evaluated with numpy
_VECTOR_MIN = 64


def intervals(cand: Sequence[int], m_: Sequence[int], s_: Sequence[float], rad: Callable[[int, float], float],
              model: RewardModel, d: float) -> tuple[list[float], list[float]]:
    """``y_hat_i = s_i / m_i`` and ``r_i`` at ``delta_t = d`` for the arms ``cand``: ``rad`` (the scalar
    radius at ``d``) for a few, ``model.radii`` vectorised for many (the same values)."""
    if len(cand) < _VECTOR_MIN:
        return [s_[i] / m_[i] for i in cand], [rad(m_[i], s_[i]) for i in cand]
    m = np.fromiter((m_[i] for i in cand), dtype=np.float64, count=len(cand))
    s = np.fromiter((s_[i] for i in cand), dtype=np.float64, count=len(cand))
    return (s / m).tolist(), np.asarray(model.radii(m, s, d), dtype=np.float64).tolist()


def check_all(cand: Sequence[int], y: Sequence[float], r: Sequence[float],
              theta_bounds: tuple[float, float, float, float], two_sided: bool,
              hi_clear: bytearray, lo_clear: bytearray) -> list[Found]:
    """Alg. 1 lines 23-31 for every candidate ``cand[j]`` with ``y_hat = y[j]``, ``r_i = r[j]`` (the check
    after a sequential round). Two-sided: sets ``hi_clear`` / ``lo_clear`` for arms cleared on one side."""
    Lt, Ut, Llo, Ulo = theta_bounds
    found: list[Found] = []
    for j, i in enumerate(cand):
        U, L = y[j] + r[j], y[j] - r[j]
        if not two_sided:
            if U <= Lt:
                found.append((i, "normal", None, y[j], L, U))
            elif L >= Ut:
                found.append((i, "outlier", "high", y[j], L, U))
            continue
        if not hi_clear[i] and L >= Ut:
            found.append((i, "outlier", "high", y[j], L, U))
        elif not lo_clear[i] and U <= Llo:
            found.append((i, "outlier", "low", y[j], L, U))
        else:
            if U <= Lt:
                hi_clear[i] = 1
            if L >= Ulo:
                lo_clear[i] = 1
            if hi_clear[i] and lo_clear[i]:
                found.append((i, "normal", None, y[j], L, U))
    return found


class ThresholdEstimator:
    """Eq. 3 and Lemmas 3-4 of [ZZZZ20]: ``theta_hat``, ``r_theta`` and ``U_sigma`` from threshold pairs.

    Rewards are translated by ``a`` (the model's low end) so that they lie in ``[0, R]``; ``b' = R`` and
    ``R' = R^2`` are the ranges of ``x - a`` and of a product of two of them.
    """

    def __init__(self, n: int, k: float, delta: float, a: float, R: float) -> None:
        self.n, self.k, self.delta = n, k, delta
        self.a, self.R, self.Rp, self.b = a, R, R * R, R
        self.m_theta = 0
        self.S1 = self.S2 = self.S12 = 0.0          # sums over pairs of x1-a, x2-a, (x1-a)(x2-a)
        self.U_sigma = math.inf
        self.delta_t: float | None = None
        self.mu_hat: float | None = None
        self.sigma_hat: float | None = None
        self.theta_hat: float | None = None
        self.r_theta: float | None = None

    def add_pair(self, x1: float, x2: float) -> None:
        u1, u2 = x1 - self.a, x2 - self.a
        self.m_theta += 1
        self.S1 += u1
        self.S2 += u2
        self.S12 += u1 * u2

    def update(self, schedule_index: int) -> None:
        """Eq. 3, U_sigma and r_theta at the round whose schedule index is ``max(t, max_i m_i)``."""
        d = bounds.ade_significance(self.delta, self.n, schedule_index)
        self.delta_t = d
        m = self.m_theta
        mu = self.S1 / m
        V = self.S12 / m - mu * (self.S2 / m)
        sig2 = abs(V)
        eps = bounds.ade_sigma_epsilon(self.R, self.Rp, self.b, m, d)
        if sig2 + eps < self.U_sigma:
            self.U_sigma = sig2 + eps
        self.mu_hat = self.a + mu
        self.sigma_hat = math.sqrt(sig2)
        self.theta_hat = self.mu_hat + self.k * self.sigma_hat
        self.r_theta = bounds.ade_threshold_radius(self.R, self.Rp, self.b, self.k, self.U_sigma, m, d)

    @property
    def d(self) -> float:
        """``delta_t`` of the current round (only valid once a pair has been used)."""
        assert self.delta_t is not None
        return self.delta_t

    def lower(self) -> float:
        """``theta_L = mu_hat - k sigma_hat`` (two-sided mode)."""
        assert self.mu_hat is not None and self.sigma_hat is not None
        return self.mu_hat - self.k * self.sigma_hat

    def bounds(self) -> tuple[float, float, float, float]:
        """``(L_theta, U_theta, L_theta_L, U_theta_L)``."""
        assert self.theta_hat is not None and self.r_theta is not None
        th, r, lo = self.theta_hat, self.r_theta, self.lower()
        return th - r, th + r, lo - r, lo + r

    def to_dict(self) -> dict[str, Any]:
        return {"m_theta": self.m_theta, "S": [self.S1, self.S2, self.S12],
                "U_sigma": None if math.isinf(self.U_sigma) else self.U_sigma,
                "est": [self.delta_t, self.mu_hat, self.sigma_hat, self.theta_hat, self.r_theta]}

    def load(self, state: dict[str, Any]) -> None:
        self.m_theta = whole("ADE's threshold estimate", "m_theta", state["m_theta"])
        self.S1, self.S2, self.S12 = (float(v) for v in state["S"])
        # (a running minimum of sigma_hat^2 + eps_sigma, eps_sigma > 0: never 0, which r_theta divides by)
        self.U_sigma = math.inf if state["U_sigma"] is None else number("ADE's threshold estimate", "U_sigma",
                                                                           state["U_sigma"], positive=True)
        self.delta_t, self.mu_hat, self.sigma_hat, self.theta_hat, self.r_theta = state["est"]


class ClassificationHeaps:
    """Four heaps of ``(key, arm, version)``: outlier above theta (``-L_i``), cleared below theta (``U_i``),
    and in two-sided mode outlier below theta_L (``U_i``) and cleared above theta_L (``-L_i``).

    An entry whose version differs from the arm's current version is stale and skipped.
    """

    def __init__(self, two_sided: bool) -> None:
        self.two_sided = two_sided
        self.hi_out: list[tuple[float, int, int]] = []
        self.hi_clr: list[tuple[float, int, int]] = []
        self.lo_out: list[tuple[float, int, int]] = []
        self.lo_clr: list[tuple[float, int, int]] = []

    def size(self) -> int:
        return max(len(self.hi_clr), len(self.lo_out))

    def push(self, i: int, y: float, r: float, v: int, hi_clear: int = 0, lo_clear: int = 0) -> None:
        if not hi_clear:
            heapq.heappush(self.hi_out, (-(y - r), i, v))
            heapq.heappush(self.hi_clr, (y + r, i, v))
        if self.two_sided and not lo_clear:
            heapq.heappush(self.lo_out, (y + r, i, v))
            heapq.heappush(self.lo_clr, (-(y - r), i, v))

    def rebuild(self, entries: Sequence[tuple[int, float, float, int, int, int]]) -> None:
        """Fresh heaps from ``(arm, y, r, version, hi_clear, lo_clear)`` (O(len), heapify)."""
        self.hi_out, self.hi_clr, self.lo_out, self.lo_clr = [], [], [], []
        for i, y, r, v, hc, lc in entries:
            U, L = y + r, y - r
            if not hc:
                self.hi_out.append((-L, i, v))
                self.hi_clr.append((U, i, v))
            if self.two_sided and not lc:
                self.lo_out.append((U, i, v))
                self.lo_clr.append((-L, i, v))
        for h in (self.hi_out, self.hi_clr, self.lo_out, self.lo_clr):
            heapq.heapify(h)

    def scan(self, theta_bounds: tuple[float, float, float, float], rad: Callable[[int, float], float],
             alive: bytearray, ver: list[int], m_: list[int], s_: list[float],
             hi_clear: bytearray, lo_clear: bytearray) -> list[Found]:
        """The candidates whose interval now lies beyond a threshold bound (Alg. 1 lines 23-31).

        Each heap holds, per candidate, a bound on ``U_i`` (lower) or ``L_i`` (upper) computed at an
        earlier round with the arm's current samples; ``r_i`` only grows as ``delta_t`` shrinks, so an
        arm that is not near the top of a heap cannot satisfy that heap's condition now. Popped arms
        are checked exactly and, if not classified, pushed back with their current (tighter) bound.
        Sets ``hi_clear`` / ``lo_clear`` for arms cleared on one side (two-sided mode).

        (The four heap loops are written out on purpose, not one helper taking a key sign and a
        predicate: this runs after every threshold pair, ADE's hot path, and a call per popped entry
        would cost more than the lines it saves.)
        """
        Lt, Ut, Llo, Ulo = theta_bounds
        found: list[Found] = []
        taken: set[int] = set()
        cleared: list[int] = []
        heappop, heappush = heapq.heappop, heapq.heappush

        # upper side, outlier: L_i >= U_theta
        h = self.hi_out
        while h and -h[0][0] >= Ut:
            _, i, v = heappop(h)
            if not alive[i] or v != ver[i] or hi_clear[i] or i in taken:
                continue
            y = s_[i] / m_[i]
            r = rad(m_[i], s_[i])
            if y - r >= Ut:
                taken.add(i)
                found.append((i, "outlier", "high", y, y - r, y + r))
            else:
                heappush(h, (-(y - r), i, v))
        # upper side cleared (one-sided: normal): U_i <= L_theta
        h = self.hi_clr
        while h and h[0][0] <= Lt:
            _, i, v = heappop(h)
            if not alive[i] or v != ver[i] or hi_clear[i] or i in taken:
                continue
            y = s_[i] / m_[i]
            r = rad(m_[i], s_[i])
            if y + r <= Lt:
                if self.two_sided:
                    hi_clear[i] = 1
                    cleared.append(i)
                else:
                    taken.add(i)
                    found.append((i, "normal", None, y, y - r, y + r))
            else:
                heappush(h, (y + r, i, v))
        if self.two_sided:
            # lower side, outlier: U_i <= L_theta_L
            h = self.lo_out
            while h and h[0][0] <= Llo:
                _, i, v = heappop(h)
                if not alive[i] or v != ver[i] or lo_clear[i] or i in taken:
                    continue
                y = s_[i] / m_[i]
                r = rad(m_[i], s_[i])
                if y + r <= Llo:
                    taken.add(i)
                    found.append((i, "outlier", "low", y, y - r, y + r))
                else:
                    heappush(h, (y + r, i, v))
            # lower side cleared: L_i >= U_theta_L
            h = self.lo_clr
            while h and -h[0][0] >= Ulo:
                _, i, v = heappop(h)
                if not alive[i] or v != ver[i] or lo_clear[i] or i in taken:
                    continue
                y = s_[i] / m_[i]
                r = rad(m_[i], s_[i])
                if y - r >= Ulo:
                    lo_clear[i] = 1
                    cleared.append(i)
                else:
                    heappush(h, (-(y - r), i, v))
            # normal once both sides are cleared; only an arm cleared this round can newly qualify
            for i in cleared:
                if i not in taken and hi_clear[i] and lo_clear[i]:
                    taken.add(i)
                    y = s_[i] / m_[i]
                    r = rad(m_[i], s_[i])
                    found.append((i, "normal", None, y, y - r, y + r))
        return found

"""Robust k-sigma: outliers above ``median + k * 1.4826 * MAD`` of the arms' means (optionally below
``median - k * 1.4826 * MAD`` too), with a fixed-confidence guarantee.

In the manner of Zhu, Katariya, Nowak. *Robust Outlier Arm Identification*. ICML 2020 ([ZKN20], not in
the seed papers): the threshold is built from the median and the median absolute deviation (MAD) of the
arms' expected rewards, so the outliers themselves cannot drag it up the way they inflate mean + k sigma
(the masking effect of [ZWW17]'s rule). The confidence bounds and the sampling rule below are derived
here, not copied; every step is stated so that it can be checked.

**Arm intervals.** Arm i's m-th sample mean gets the reward model's radius at the per-arm anytime level
``delta_m = 6 delta / (pi^2 n m^2)`` (:func:`streamarms.bounds.anytime_arm_significance`): a union bound
over arms and sample counts gives ``P(some y_i ever leaves [L_i, U_i]) <= delta`` under *any* sampling
order, even one that depends on the rewards (ours does). ``[L_i, U_i]`` is clipped to the model's range.
Bernoulli arms use the Agresti-Coull interval around its own centre ``p~``; bounded arms use Hoeffding
around ``y_hat``. Option ``intervals="cs"``: each arm's interval is instead the engine's anytime-valid
confidence sequence (:func:`streamarms.confidence.sequence_for`: Beta-Binomial mixture for Bernoulli
arms, empirical Bernstein for bounded ones) at level ``delta / n``, valid at every count at once, so the
union bound over counts disappears; everything below (threshold, classification, sampling) is unchanged.

**Threshold interval** (:func:`streamarms.bounds.median_mad_bounds`, deterministic given the arm
intervals, so no extra confidence is spent): the median is monotone in every coordinate, so
``median(L) <= median(y) <= median(U)``; each ``|y_i - median|`` lies between the gap and the far distance
of ``[L_i, U_i]`` to ``[median(L), median(U)]``; the median of those bounds brackets the MAD. With
``c = 1.4826 k`` the upper threshold lies in ``[med_lo + c mad_lo, med_hi + c mad_hi]`` and the lower one
in ``[med_lo - c mad_hi, med_hi - c mad_lo]``.

**Classification.** Arm i is an outlier once ``L_i`` exceeds the upper threshold's upper bound (or, two-
sided, ``U_i`` is below the lower threshold's lower bound); normal once it is certainly between the
thresholds. On the good event every classification is correct, so each one is emitted as an
:class:`~streamarms.policies.base.Event` at once. Stop when every arm is classified.

**Sampling.** Round-robin. A round samples the unclassified arms and, while any arm is unclassified, the
arms that limit the threshold's precision: those whose interval meets ``[med_lo, med_hi]`` and those whose
distance interval meets ``[mad_lo, mad_hi]``. (Some arm's interval contains ``[med_lo, med_hi]``, and some
distance interval contains ``[mad_lo, mad_hi]``, so the threshold interval shrinks with theirs; classified
arms keep being sampled if the threshold needs them, which an elimination of classified arms would not
do.) The threshold and the classifications are recomputed at the end of each round: O(n) numpy per
round, O(1) per reward.

A mean exactly on a threshold (e.g. every arm identical: MAD = 0 and every arm sits on the median) can
never be classified with confidence; such a run only stops at a pull cap, reporting nothing confidently.

>>> import random
>>> means = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.99]
>>> pol = RobustOutlierArmIdentification([str(i) for i in range(7)], k=3.0, delta=0.1)
>>> rng = random.Random(3)
>>> while not pol.done:
...     arm = pol.next_request().arm
...     _ = pol.update(arm, float(rng.random() < means[int(arm)]))
>>> pol.decision().outliers
['6']
>>> robust_true_outliers(means, k=3.0)
[6]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from .. import bounds
from ..confidence.arms import ArmSequences
from ..models import BernoulliModel, RewardModel, make_model
from ..validation import check_k
from . import planned_snapshot
from .base import Decision, Event, Policy, Request
from .rounds import RoundPlan, RoundPlanned
from .snapshot_fields import guarded

__all__ = ["RobustOutlierArmIdentification", "robust_threshold", "robust_true_outliers"]

_UNDECIDED, _NORMAL, _OUTLIER = 0, 1, 2


def _check_k(k: float) -> float:
    return check_k(k, rule=" (threshold = median + k * 1.4826 * MAD)")


def robust_threshold(means: Sequence[float] | np.ndarray, k: float) -> tuple[float, float]:
    """``(median - c MAD, median + c MAD)`` of the means, ``c = 1.4826 k``.

    >>> [round(v, 4) for v in robust_threshold([1.0, 2.0, 3.0, 4.0, 100.0], 2.0)]
    [0.0348, 5.9652]
    """
    c = bounds.MAD_NORMAL_CONSTANT * _check_k(k)
    y = np.asarray(means, dtype=float)
    med = float(np.median(y))
    mad = float(np.median(np.abs(y - med)))
    return med - c * mad, med + c * mad


def robust_true_outliers(means: Sequence[float], k: float, two_sided: bool = False) -> list[int]:
    """Indices of the arms above ``median + 1.4826 k MAD`` (and below ``median - 1.4826 k MAD`` if
    ``two_sided``) of the true means.

    >>> robust_true_outliers([0.0, 0.2] + [0.5] * 5 + [0.51, 0.9], k=3.0, two_sided=True)
    [0, 1, 7, 8]
    """
    lo, hi = robust_threshold(means, k)
    y = np.asarray(means, dtype=float)
    out = (y > hi) | ((y < lo) if two_sided else False)
    return np.flatnonzero(out).tolist()


class RobustOutlierArmIdentification(RoundPlanned, Policy):
    """Fixed-confidence outlier arms under the median/MAD rule (see the module docstring).

    Parameters: ``k`` (in (0, 1000]; threshold ``median + 1.4826 k MAD``), ``two_sided`` (also flag arms below
    ``median - 1.4826 k MAD``), ``delta``, ``model`` (``"bernoulli"`` or a bounded model), ``seed``
    (accepted for interface uniformity; the policy is deterministic), ``intervals`` (``"paper"``: the
    union-bound intervals of the module docstring; ``"cs"``: the engine's confidence sequences).

    >>> pol = RobustOutlierArmIdentification(["a", "b", "c"], k=2.0)
    >>> pol.next_request()
    Request(arm='a', kind='arm', request_id=None)
    >>> RobustOutlierArmIdentification(["a", "b"], k=0)
    Traceback (most recent call last):
    ...
    ValueError: k must be a finite number > 0 (threshold = median + k * 1.4826 * MAD) and at most 1000, got 0
    """

    name = "roai"

    def __init__(self, arms: Sequence[str], *, k: float = 3.0, two_sided: bool = False, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", seed: int | None = None, intervals: str = "paper") -> None:
        super().__init__(arms)
        self.k = _check_k(k)
        self.grid = 9   # evaluations of the median-position grid in bounds.median_mad_bounds
        if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
            raise ValueError(f"delta must lie strictly between 0 and 1, got {delta!r}")
        self.delta = float(delta)
        self.two_sided = bool(two_sided)
        self.model = make_model(model)
        # count-and-sum estimates only (MoM is refused with a clear message); TEA adds contributions
        self.model.require_sum_based(self.name)
        self.seed = seed
        self.c = bounds.MAD_NORMAL_CONSTANT * self.k
        n = self.n = len(self.arms)
        if intervals not in ("paper", "cs"):
            raise ValueError(f"intervals must be 'paper' or 'cs', got {intervals!r}")
        self.intervals = intervals
        #: the engine's per-arm confidence sequences (intervals="cs"), else None
        self._cs = ArmSequences(self.model, self.delta / n, self.arms) if intervals == "cs" else None
        self.m = np.zeros(n, dtype=np.int64)
        self.s = np.zeros(n, dtype=float)
        self._low = -math.inf if self.model.low is None else float(self.model.low)
        self._high = math.inf if self.model.high is None else float(self.model.high)
        self._z: dict[int, float] | None = {} if isinstance(self.model, BernoulliModel) else None
        self.L = np.full(n, self._low)
        self.U = np.full(n, self._high)
        self.status = np.zeros(n, dtype=np.int8)
        self._pulls = 0
        self._done = False
        self.rounds = 0
        # threshold bounds as of the last round end: (med_lo, med_hi, mad_lo, mad_hi)
        self._stats: tuple[float, float, float, float] | None = None
        self._plan = RoundPlan()
        self._plan.start(range(n))

    # ----------------------------------------------------------------------------------------
    def _arm_interval(self, i: int) -> tuple[float, float]:
        if self._cs is not None:
            lo, hi = self._cs.interval(i)
            return max(lo, self._low), min(hi, self._high)
        m = int(self.m[i])
        s = float(self.s[i])
        if self._z is not None:           # Bernoulli: Agresti-Coull interval around its centre p~
            z = self._z.get(m)
            if z is None:
                model = cast(BernoulliModel, self.model)  # _z is set only for a BernoulliModel
                z = self._z[m] = model.z(bounds.anytime_arm_significance(self.delta, self.n, m))
            centre = bounds.agresti_coull_center(m, s, z)
            r = bounds.agresti_coull_radius(m, s, z)
        else:
            r = float(self.model.radius(m, s, bounds.anytime_arm_significance(self.delta, self.n, m)))
            centre = s / m
        return max(centre - r, self._low), min(centre + r, self._high)

    def thresholds(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """``((upper_lo, upper_hi), (lower_lo, lower_hi))``: confidence intervals of the two thresholds
        as of the last round end (``None`` before the first)."""
        if self._stats is None:
            return None
        return self._threshold_intervals(self._stats)

    def _threshold_intervals(self, stats: tuple[float, float, float, float]
                             ) -> tuple[tuple[float, float], tuple[float, float]]:
        med_lo, med_hi, mad_lo, mad_hi = stats
        c = self.c
        return (med_lo + c * mad_lo, med_hi + c * mad_hi), (med_lo - c * mad_hi, med_hi - c * mad_lo)

    # ----------------------------------------------------------------------------------------
    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        i = self._arm_index(arm)
        x = self.model.check(arm, reward)
        self._pulls += 1
        self.m[i] += 1
        x = self.model.contribution(int(self.m[i]), x)  # x itself, but 0 above TEA's truncation level
        self.s[i] += x  # (the count-and-sum step of GOLD's update too: each policy owns its arrays and counter)
        if self._cs is not None:
            self._cs.update(i, x)
        self.L[i], self.U[i] = self._arm_interval(i)
        plan = self._plan
        if self._done or not plan.tick(i) or not plan.empty:
            return []
        return self._end_round()

    def _end_round(self) -> list[Event]:
        self.rounds += 1
        sampled = self.m > 0
        if not sampled.all():          # only rewards of some arms so far: finish the first round
            self._plan.start(np.flatnonzero(~sampled).tolist())
            return []
        L, U = self.L, self.U
        self._stats = stats = bounds.median_mad_bounds(L, U, self.grid)
        (up_lo, up_hi), (low_lo, low_hi) = self._threshold_intervals(stats)
        out = L > up_hi
        normal = U < up_lo
        if self.two_sided:
            out |= U < low_lo
            normal &= L > low_hi
        events: list[Event] = []
        new = np.flatnonzero((self.status == _UNDECIDED) & (out | normal))
        if len(new):
            theta = self._point_threshold()
            for i in new.tolist():
                self.status[i] = _OUTLIER if out[i] else _NORMAL
                upper_side = not self.two_sided or not (out[i] and U[i] < low_lo)
                events.append(Event(
                    arm=self.arms[i], kind="outlier" if out[i] else "normal",
                    estimate=float(self.s[i] / self.m[i]), interval=(float(L[i]), float(U[i])),
                    threshold=theta[1] if upper_side else theta[0],
                    threshold_interval=(up_lo, up_hi) if upper_side else (low_lo, low_hi),
                    samples=int(self.m[i]), pulls=self._pulls))
        undecided = self.status == _UNDECIDED
        if not undecided.any():
            self._done = True
            self._plan.clear()
            return events
        med_lo, med_hi, mad_lo, mad_hi = self._stats
        d_lo, d_hi = bounds.distance_bounds(L, U, med_lo, med_hi)
        needed = undecided | ((L <= med_hi) & (U >= med_lo)) | ((d_lo <= mad_hi) & (d_hi >= mad_lo))
        self._plan.start(np.flatnonzero(needed).tolist())
        return events

    def _point_threshold(self) -> tuple[float, float]:
        y = np.where(self.m > 0, self.s / np.maximum(self.m, 1), np.nan)
        if np.isnan(y).any():
            return math.nan, math.nan
        return robust_threshold(y, self.k)

    # ----------------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._done

    @property
    def pulls(self) -> int:
        return self._pulls

    def decision(self) -> Decision:
        lo_t, hi_t = self._point_threshold()
        est: list[str] = []
        if not math.isnan(hi_t):
            y = self.s / np.maximum(self.m, 1)
            flag = (y > hi_t) | ((y < lo_t) if self.two_sided else False)
            est = [self.arms[i] for i in np.flatnonzero(flag).tolist()]
        th = self.thresholds()
        extra: dict[str, Any] = {"k": self.k, "two_sided": self.two_sided, "rounds": self.rounds}
        if th is not None and self._stats is not None:  # both set by the first round end
            med_lo, med_hi, mad_lo, mad_hi = self._stats
            extra.update(median_interval=(med_lo, med_hi), mad_interval=(mad_lo, mad_hi))
            if self.two_sided:
                extra.update(lower_threshold=lo_t, lower_threshold_interval=th[1])
        return Decision(
            outliers=[self.arms[i] for i in np.flatnonzero(self.status == _OUTLIER).tolist()],
            normals=[self.arms[i] for i in np.flatnonzero(self.status == _NORMAL).tolist()],
            undecided=[self.arms[i] for i in np.flatnonzero(self.status == _UNDECIDED).tolist()],
            estimated_outliers=est,
            threshold=None if math.isnan(hi_t) else hi_t,
            threshold_interval=None if th is None else th[0],
            pulls=self._pulls, done=self._done, extra=extra)

    # ----------------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {"policy": self.name, "arms": list(self.arms), "k": self.k, "two_sided": self.two_sided,
                "delta": self.delta, "model": self.model.to_dict(), "seed": self.seed,
                "m": self.m.tolist(), "s": self.s.tolist(), "status": self.status.tolist(),
                "pulls": self._pulls, "done": self._done, "rounds": self.rounds,
                "stats": None if self._stats is None else list(self._stats), "plan": self._plan.to_list(),
                "intervals": self.intervals, "cs": None if self._cs is None else self._cs.snapshot()}

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> RobustOutlierArmIdentification:
        """Rebuild from :meth:`snapshot` output; a malformed snapshot raises ``ValueError`` naming the field
        (:mod:`streamarms.policies.planned_snapshot`)."""
        pol, f = planned_snapshot.construct(cls, state, ("k", "delta"), ("two_sided",))
        planned_snapshot.load_robust(pol, f)
        return pol

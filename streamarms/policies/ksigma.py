"""k-sigma outlier arms: Round-Robin, Weighted Round-Robin and the Naive Round-Robin baseline.

Zhuang, Wang, Wang. *Identifying Outlier Arms in Multi-Armed Bandit*. NeurIPS 2017 ([ZWW17]).

An arm ``i`` with mean ``y_i`` is an outlier iff ``y_i > theta = mu_y + k sigma_y`` (population mean
and standard deviation over the arms' means) and normal iff ``y_i < theta``. With ``two_sided=True``
an arm below ``mu_y - k sigma_y`` is an outlier too (a streamarms extension: "Two-sided rule" in
:mod:`streamarms.policies.ksigma_confident`).

* :class:`RoundRobin` (RR, Alg. 1) pulls the arms in turn; :class:`WeightedRoundRobin` (WRR, Alg. 2)
  gives active arms about ``rho`` pulls per round (stride scheduling, ``rho* = ((n-1)^2 / l(k))^(1/3)``,
  Eq. 6). Both stop when no arm is active (Eq. 2: its interval overlaps the threshold's interval) and
  return ``{i : y_hat_i > theta_hat}`` (Eq. 3); significance ``delta' = 6 delta / (pi^2 (n+1) T^2)``
  after T pulls (Eq. 1).
* :class:`NaiveRoundRobin` (NRR, the paper's Sec. 5.2 baseline) pulls like RR and stops when the
  estimated outlier set has not changed in the last ``1/delta`` consecutive pulls. It has no guarantee.

The intervals, Eq. 2 and the O(1) stopping check: :mod:`streamarms.policies.ksigma_confident`; the counts, sums and
the round-robin plan: :mod:`streamarms.policies.ksigma_estimates`. ``tests/policies/test_ksigma.py`` runs a literal
O(n)-per-pull reference of Alg. 1 and Alg. 2 side by side and checks the same pulls, the same stopping time and the
same answer.

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

from .. import bounds
from ..models import RewardModel
from . import ksigma_batch, ksigma_snapshot
from .base import Decision, Event, Request
from .ksigma_confident import _ConfidentKSigma
from .ksigma_estimates import _KSigmaEstimates, ksigma_outliers
from .snapshot_fields import guarded

__all__ = ["RoundRobin", "WeightedRoundRobin", "NaiveRoundRobin", "ksigma_outliers"]


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
    SCHEDULED: ClassVar[bool] = True

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

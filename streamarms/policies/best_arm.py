"""Best-arm identification with heavy-tailed rewards: Successive Elimination and Successive Rejects.

Yu, Shao, Lyu, King. *Pure Exploration of Multi-Armed Bandits with Heavy-Tailed Payoffs*. UAI 2018
([YSLK18]). Rewards need only a finite p-th moment, p in (1, 2]; the arm estimate is the empirical
average (EA), the truncated empirical average (TEA) or the median of means (MoM), chosen by the
:class:`~streamarms.models.HeavyTailedModel` passed as ``model`` (any other reward model works too, with
the plain mean and that model's radius). For an operator, "best" is the key with the highest mean, e.g.
the worst latency; ``maximize=False`` looks for the lowest mean instead.

* :class:`SuccessiveElimination` (SE-delta, [YSLK18] Alg. 1, fixed confidence): in round t every
  surviving arm is sampled once; then arm k is eliminated when
  ``mu_hat(a_t) - mu_hat(k) >= 2 c_t``, a_t the empirical best. Stops when one arm is left and returns it.
  ``c_t`` is the arm radius at significance ``delta / K`` (a union bound over the K arms):
  TEA ``5 B^(1/p) (log(2K/delta) / t)^((p-1)/p)`` with truncation ``b_t = (B t / log(2K/delta))^(1/p)``
  (Alg. 1 lines 5-6), EA ``(2 K C / (t^(p-1) delta))^(1/p)`` (the proof of Theorem 1), MoM
  :func:`~streamarms.bounds.mom_radius`. Note: like the paper, c_t has no union bound over t.
* :class:`SuccessiveRejects` (SR-T, [YSLK18] Alg. 2, fixed budget T): K-1 phases; in phase k every
  surviving arm is sampled up to ``n_k = ceil((T - K) / (log_bar(K) (K + 1 - k)))`` times
  (:func:`~streamarms.bounds.sr_phase_lengths`), then the empirically worst arm is rejected. TEA uses the
  fixed level ``b = (3 B / epsilon)^(1/(p-1))`` (:func:`~streamarms.bounds.sr_truncation_level`), epsilon
  a design parameter at most the smallest gap. The extracted text of the paper loses the exponents of
  ``K_bar`` and ``n_k``; we use the allocation of Audibert & Bubeck (COLT 2010), which SR-T(EA) is stated
  to follow and which never exceeds the budget.

Streaming (a deviation in *how*): ``update`` accepts a reward of any arm at any time. A surviving arm
may then hold more samples than the round/phase asks; SE then uses each arm's own radius
(``c(m_a) + c(m_k)``, which is ``2 c_t`` when every count is t, the paper's case), SR just uses them.
Rewards of eliminated arms (or after the end) are counted in ``extra["ignored"]`` and not used. A TEA sample
above its truncation level contributes 0, as the estimator says, and is counted in ``extra["truncated"]``.

Events: SE reports each eliminated arm as ``normal`` and, at the end, the returned arm as ``outlier``
(under the good event of probability >= 1 - delta they are correct). SR, a fixed-budget method without
confidence intervals, reports none: read :meth:`~SuccessiveRejects.decision`.

>>> import random
>>> from streamarms.models import HeavyTailedModel
>>> rng = random.Random(3)
>>> means = [0.0, 0.2, 3.0]
>>> se = SuccessiveElimination(["a", "b", "c"], delta=0.1,
...                            model=HeavyTailedModel(p=2.0, B=10.0, estimator="tea"))
>>> while not se.done:
...     arm = se.next_request().arm
...     _ = se.update(arm, means[se.index[arm]] + rng.gauss(0.0, 1.0))
>>> se.decision().outliers
['c']
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar

from .. import bounds
from ..models import HeavyTailedModel, RewardModel, make_model, model_from_dict
from .base import Decision, Event, Policy, Request
from .snapshot_fields import Fields, guarded
from .thresholding import check_budget

__all__ = ["SuccessiveElimination", "SuccessiveRejects", "best_arm_truth"]


def best_arm_truth(means: Sequence[float], maximize: bool = True) -> list[int]:
    """Index of the best arm (a one-element list; ``[]`` when the best mean is not unique).

    >>> best_arm_truth([0.7, 2.0, 1.5]), best_arm_truth([1.0, 1.0])
    ([1], [])
    """
    target = max(means) if maximize else min(means)
    idx = [i for i, mu in enumerate(means) if mu == target]
    return idx if len(idx) == 1 else []


class _Eliminator(Policy):
    """Shared state of SE and SR: surviving arms, per-arm counts and estimates, a request queue."""

    name: ClassVar[str] = "best-arm"

    def __init__(self, arms: Sequence[str], model: RewardModel, maximize: bool) -> None:
        super().__init__(arms)
        self.model = model
        self.maximize = bool(maximize)
        n = len(self.arms)
        self.m: list[int] = [0] * n
        self.s: list[float] = [0.0] * n
        self._est: list[Any] | None = None if model.sum_based else [model.make_estimator() for _ in range(n)]
        self.active: list[int] = list(range(n))
        self._alive: list[bool] = [True] * n
        self.eliminated: list[int] = []
        self.n_truncated = 0
        self.ignored = 0
        self._T = 0
        self._target = 0  # samples each surviving arm must reach in the current round / phase
        self._remaining = 0  # surviving arms still below the target
        self._queue: deque[int] = deque()
        self._deferred: set[int] = set()
        self._requests = [Request(a) for a in self.arms]  # immutable: one per arm, reused

    # -- helpers ---------------------------------------------------------------------------------
    def _contribution(self, i: int, j: int, x: float) -> float:
        return self.model.contribution(j, x) if self.model.transforms else x

    def estimate(self, i: int) -> float:
        """Arm i's current estimate (0.0 before its first sample)."""
        if self._est is not None:
            return float(self._est[i].get())
        return self.s[i] / self.m[i] if self.m[i] else 0.0

    def _score(self, i: int) -> float:
        return self.estimate(i) if self.maximize else -self.estimate(i)

    def _start(self, target: int) -> None:
        self._target = target
        self._queue = deque(i for i in self.active if self.m[i] < target)

    def _head(self, skip: set[int]) -> list[int]:
        while self._queue and self.m[self._queue[0]] >= self._target:
            self._queue.popleft()
        if not skip:
            return [self._queue[0]] if self._queue else []
        return [i for i in self._queue if i not in skip and self.m[i] < self._target][:1]

    # -- Policy interface ------------------------------------------------------------------------
    def next_request(self) -> Request | None:
        if self.done:
            return None
        head = self._head(self._deferred)
        if not head:
            self._deferred.clear()
            head = self._head(self._deferred)
        return self._requests[head[0]] if head else None

    def wanted(self, k: int) -> list[Request]:
        if self.done or k <= 0:
            return []
        self._head(set())
        out = [i for i in self._queue if i not in self._deferred and self.m[i] < self._target][:k]
        return [Request(self.arms[i]) for i in out]

    def defer(self, arm: str) -> None:
        self._deferred.add(self._arm_index(arm))

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        i = self._arm_index(arm)
        x = self.model.check(arm, reward)
        if self.done or not self._alive[i]:
            self.ignored += 1
            return []
        j = self.m[i] + 1
        c = self._contribution(i, j, x)
        if c != x:
            self.n_truncated += 1
        if self._est is not None:
            self._est[i].update(x)
        self.m[i] = j
        self.s[i] += c
        self._T += 1
        self._deferred.clear()
        if j == self._target:
            self._remaining -= 1
            if self._remaining == 0:
                return self._settle()
        return []

    def _set_active(self, active: list[int]) -> None:
        self.active = active
        self._alive = [False] * len(self.arms)
        for i in active:
            self._alive[i] = True

    def _begin(self, target: int) -> None:
        """Start a round/phase in which every surviving arm must reach ``target`` samples."""
        self._start(target)
        self._remaining = sum(1 for i in self.active if self.m[i] < target)

    def _settle(self) -> list[Event]:
        """End every stage whose target all surviving arms already reach (usually exactly one)."""
        events: list[Event] = []
        while not self.done and self._remaining == 0:
            events.extend(self._end_stage())
        return events

    def _end_stage(self) -> list[Event]:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def pulls(self) -> int:
        return self._T

    def _ranking(self) -> list[str]:
        act = sorted(self.active, key=lambda i: (-self._score(i), i))
        return [self.arms[i] for i in act] + [self.arms[i] for i in reversed(self.eliminated)]

    def _state(self) -> dict[str, Any]:
        st: dict[str, Any] = {"arms": list(self.arms), "model": self.model.to_dict(), "maximize": self.maximize,
                              "m": list(self.m), "s": list(self.s), "active": list(self.active),
                              "eliminated": list(self.eliminated), "truncated": self.n_truncated,
                              "ignored": self.ignored, "pulls": self._T, "target": self._target}
        if self._est is not None:
            st["est"] = [{"counts": list(e._counts), "sums": list(e._sums), "n": e.n} for e in self._est]
        return st

    def _load(self, f: Fields) -> None:
        """The state of :meth:`_state`, every field checked (``ValueError`` naming it): counts adding up to the
        pulls, sums in the reward range, the surviving and eliminated arms splitting the arms, a stage
        open while not done, per-arm estimators counting the arm's samples."""
        self.m, self.s = f.counts("m"), f.numbers("s")
        if not self.model.transforms:  # (TEA's sums are of truncated rewards)
            f.sums_within("s", self.m, self.s, self.model.low, self.model.high)
        self._set_active(f.indices("active", distinct=True))
        self.eliminated = f.indices("eliminated", distinct=True)
        if not self.active or sorted(self.active + self.eliminated) != list(range(len(self.arms))):
            raise f.fail("active", "and 'eliminated' must split the arms, with at least one surviving")
        self._T = f.integer("pulls")
        f.total("pulls", self._T, self.m)
        self.n_truncated, self.ignored = f.integer("truncated", high=self._T), f.integer("ignored")
        if self._est is not None:
            for i, (e, d) in enumerate(zip(self._est, f.sequence("est"))):
                ef = Fields(d, len(self.arms), where=f"est[{i}].")
                counts = ef.counts("counts", len(e._counts))
                e._counts, e._sums, e.n = counts, ef.numbers("sums", len(e._sums)), ef.integer("n")
                if e.n != self.m[i] or sum(counts) not in (0, e.n):
                    raise ef.fail("n", f"is {e.n}, but the arm has {self.m[i]} samples")
        self._begin(f.integer("target"))
        if not self.done and self._remaining == 0:
            raise f.fail("target", f"is {self._target}: every surviving arm has reached it, yet the run goes on")


class SuccessiveElimination(_Eliminator):
    """SE-delta ([YSLK18] Alg. 1): sample every surviving arm once per round, drop the clearly worse ones.

    With a :class:`~streamarms.models.HeavyTailedModel` the estimator is re-tuned to significance
    ``delta / K`` (the paper's truncation schedule and ``c_t``); other models use their own radius at
    ``delta / K`` with the plain mean (e.g. ``SubGaussianModel``: the sub-Gaussian/Hoeffding-style SE
    that heavy tails break).

    >>> se = SuccessiveElimination(["0", "1"], delta=0.1, model="bernoulli")
    >>> se.next_request().arm, se.round
    ('0', 1)
    """

    name = "se"

    def __init__(self, arms: Sequence[str], *, delta: float = 0.1, model: RewardModel | str = "bernoulli",
                 seed: int | None = None, maximize: bool = True) -> None:
        if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        n = len(list(arms))
        model = make_model(model)
        self.level = delta / max(n, 1)
        if isinstance(model, HeavyTailedModel):
            model = model.tuned(self.level)
        super().__init__(arms, model, maximize)
        self.delta = float(delta)
        self.seed = seed
        self.round = 1
        self._begin(1)
        self._settle()

    def radius(self, i: int) -> float:
        """``c`` of arm i at significance ``delta / K`` for its current number of samples."""
        return self.model.radius(self.m[i], self.s[i], self.level)

    def _event(self, i: int, kind: str) -> Event:
        est, r = self.estimate(i), self.radius(i)
        return Event(self.arms[i], kind, estimate=est, interval=(est - r, est + r), threshold=None,
                     threshold_interval=None, samples=self.m[i], pulls=self._T)

    def _end_stage(self) -> list[Event]:
        act = self.active
        score = {i: self._score(i) for i in act}
        rad = {i: self.radius(i) for i in act}
        a = max(act, key=lambda i: (score[i], -i))  # first empirical best
        keep, events = [], []
        for k in act:
            if k != a and score[a] - score[k] >= rad[a] + rad[k]:
                self.eliminated.append(k)
                events.append(self._event(k, "normal"))
            else:
                keep.append(k)
        self._set_active(keep)
        self.round += 1
        self._begin(self.round)
        if len(self.active) == 1:
            self._queue.clear()
            events.append(self._event(self.active[0], "outlier"))
        return events

    @property
    def done(self) -> bool:
        return len(self.active) == 1

    def decision(self) -> Decision:
        best = [self.arms[self.active[0]]] if self.done else []
        emp = max(self.active, key=lambda i: (self._score(i), -i))
        return Decision(outliers=best, normals=[self.arms[i] for i in self.eliminated],
                        undecided=[] if self.done else [self.arms[i] for i in self.active],
                        estimated_outliers=[self.arms[emp]], threshold=None, threshold_interval=None,
                        pulls=self._T, done=self.done, ranking=self._ranking(),
                        extra={"policy": self.name, "best": best[0] if best else None, "round": self.round,
                               "truncated": self.n_truncated, "ignored": self.ignored})

    def snapshot(self) -> dict[str, Any]:
        st = self._state()
        st.update(policy=self.name, delta=self.delta, seed=self.seed, round=self.round,
                  model=self.model.to_dict())
        return st

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> SuccessiveElimination:
        f = Fields(state, policy=cls.name)
        with f.part("model"):
            model = model_from_dict(f.raw("model"))
        with f.part("delta"):  # the constructor's checks
            pol = cls(f.arms(), delta=f.number("delta"), model=model, seed=f.raw("seed", None),
                      maximize=f.flag("maximize"))
        pol.round = f.integer("round", low=1)
        pol._load(f)
        if not pol.done and pol._target != pol.round:  # (round r: every surviving arm reaches r samples)
            raise f.fail("target", f"is {pol._target}, but round {pol.round} asks {pol.round} samples of each arm")
        return pol


class SuccessiveRejects(_Eliminator):
    """SR-T ([YSLK18] Alg. 2, after Audibert & Bubeck 2010): K-1 phases, reject the empirically worst arm after each.

    ``budget`` T >= K is required. Estimators: the plain mean (EA; any non-heavy-tailed model too), TEA with
    the fixed level ``(3 B / epsilon)^(1/(p-1))`` (needs ``epsilon``, at most the smallest gap), or MoM
    (tuned to the model's ``delta0``). Ties for the worst arm are broken with the seeded generator.

    >>> sr = SuccessiveRejects(["0", "1", "2"], budget=100)
    >>> sr.phase_lengths
    [25, 37]
    """

    name = "sr"

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        return [{"budget": 2_000, "seed": 1}]

    def __init__(self, arms: Sequence[str], *, budget: int, model: RewardModel | str = "bernoulli",
                 epsilon: float | None = None, seed: int | None = None, maximize: bool = True) -> None:
        model = make_model(model)
        super().__init__(arms, model, maximize)
        T = check_budget(budget, len(self.arms))
        if T is None:
            raise ValueError("SR-T needs a budget: an integer >= the number of arms")
        self.budget: int = T
        self.epsilon = epsilon
        self.trunc_level: float | None = None
        if isinstance(model, HeavyTailedModel) and model.estimator == "tea":
            if epsilon is None or not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
                raise ValueError("SR-T with the TEA estimator needs epsilon > 0, at most the smallest gap "
                                 f"between arm means (its truncation level is (3B/epsilon)^(1/(p-1))); got {epsilon!r}")
            self.trunc_level = bounds.sr_truncation_level(model.p, model.B, float(epsilon))
        self.seed = seed
        self._rng = random.Random(seed)
        self.phase_lengths = bounds.sr_phase_lengths(len(self.arms), self.budget)
        self.phase = 1
        self._begin(self.phase_lengths[0] if self.phase_lengths else 0)
        self._settle()

    def _contribution(self, i: int, j: int, x: float) -> float:
        if self.trunc_level is not None and abs(x) > self.trunc_level:
            return 0.0
        return x

    def _end_stage(self) -> list[Event]:
        scores = [self._score(i) for i in self.active]
        worst = min(scores)
        tied = [i for i, sc in zip(self.active, scores) if sc == worst]
        r = tied[0] if len(tied) == 1 else self._rng.choice(tied)
        self.eliminated.append(r)
        self._set_active([i for i in self.active if i != r])
        self.phase += 1
        if len(self.active) > 1:
            self._begin(self.phase_lengths[self.phase - 1])
        else:
            self._queue.clear()
        return []

    @property
    def done(self) -> bool:
        return len(self.active) <= 1 or self._T >= self.budget

    def decision(self) -> Decision:
        emp = max(self.active, key=lambda i: (self._score(i), -i))
        best = [self.arms[emp]] if self.done else []
        return Decision(outliers=best, normals=[self.arms[i] for i in self.eliminated],
                        undecided=[] if self.done else [self.arms[i] for i in self.active],
                        estimated_outliers=[self.arms[emp]], threshold=None, threshold_interval=None,
                        pulls=self._T, done=self.done, ranking=self._ranking(),
                        extra={"policy": self.name, "best": best[0] if best else None, "phase": self.phase,
                               "budget": self.budget, "truncated": self.n_truncated, "ignored": self.ignored})

    def snapshot(self) -> dict[str, Any]:
        st = self._state()
        version, internal, gauss = self._rng.getstate()
        st.update(policy=self.name, budget=self.budget, epsilon=self.epsilon, seed=self.seed, phase=self.phase,
                  rng=[version, list(internal), gauss])
        return st

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> SuccessiveRejects:
        f = Fields(state, policy=cls.name)
        with f.part("model"):
            model = model_from_dict(f.raw("model"))
        with f.part("budget"):  # the constructor's checks
            pol = cls(f.arms(), budget=f.raw("budget"), model=model, epsilon=f.raw("epsilon"),
                      seed=f.raw("seed", None), maximize=f.flag("maximize"))
        pol.phase = f.integer("phase", low=1)
        with f.part("rng"):
            v, internal, g = f.raw("rng")
            pol._rng.setstate((v, tuple(internal), g))
        pol._load(f)
        if pol.phase != 1 + len(pol.eliminated):  # (one arm rejected per phase)
            raise f.fail("phase", f"is {pol.phase}, but {len(pol.eliminated)} arms were rejected")
        if len(pol.active) > 1 and pol._target != pol.phase_lengths[pol.phase - 1]:
            raise f.fail("target", f"is {pol._target}, but phase {pol.phase} asks {pol.phase_lengths[pol.phase - 1]}")
        return pol

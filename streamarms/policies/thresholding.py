"""Known threshold, fixed budget: classify every arm as above or below a given threshold.

Tao, Blanco, Peng, Zhou. *Thresholding Bandit with Optimal Aggregate Regret*. NeurIPS 2019 ([TBPZ19]).

Given a threshold ``theta`` and a budget of ``T`` samples, label each arm ``i`` as above
(``theta_i >= theta``) or below, making as few mistakes as possible: the *aggregate regret* is the expected
number of misclassified arms (:func:`misclassified` counts them for one run). Every policy here is
*anytime*: after any number of samples, :meth:`~ThresholdingPolicy.decision` labels each pulled arm by its
empirical mean (``theta_hat_i >= theta``: above, reported in ``outliers``); with a ``budget`` the policy is
done after that many samples.

All four policies pull each arm once, then the arm that minimises an index that depends on that arm's
own count ``T_i`` and empirical gap ``Delta_hat_i = |theta_hat_i - theta|`` only:

* :class:`LSA` (Logarithmic-Sample Algorithm, [TBPZ19] Alg. 1): ``alpha T_i Delta_hat_i^2 + 0.5 ln T_i``,
  ``alpha = 1.35`` as in the paper's experiments.
* :class:`APT` (Locatelli, Gutzeit, Carpentier, ICML 2016, as adapted in [TBPZ19] Sec. 5):
  ``sqrt(T_i) (Delta_hat_i + epsilon)``.
* :class:`UCBE` (Audibert, Bubeck, COLT 2010, as adapted in [TBPZ19] Sec. 5):
  ``Delta_hat_i - sqrt(a / T_i)`` with ``a = 4^b (T - K) / H``, ``H = sum_i 1 / Delta_i^2`` (an oracle
  quantity: pass ``H``, e.g. from :func:`complexity_H`, or ``a`` itself).
* :class:`Uniform`: ``T_i``, i.e. the arms in turn (round-robin).

Ties go to the arm listed first (the ``argmin`` of numpy).

Speed (a deviation in *how*, not *what*): since an arm's index changes only when that arm gets a sample,
the argmin is kept in a binary heap with lazy invalidation (an entry is stale when its key is no longer
the arm's current key; the heap is rebuilt in O(n) when it holds more than 2n + 64 entries). A sample
costs amortised O(log n), not the O(n) scan of the paper's argmin; ``tests/policies/test_thresholding.py``
checks that the pull sequence equals a literal numpy-argmin implementation, and
``benchmarks/thresholding.py`` prints the cost per sample.

Rewards: any count-and-sum reward model (``bernoulli`` by default, as in the paper's experiments;
``bounded``, ``subgaussian``, or ``heavy_tailed`` with estimator ``ea`` / ``tea``); the threshold must lie
inside the model's reward range.

>>> import random
>>> rng = random.Random(0)
>>> means = [0.1, 0.45, 0.55, 0.9]
>>> lsa = LSA(["a", "b", "c", "d"], threshold=0.5, budget=400)
>>> while not lsa.done:
...     arm = lsa.next_request().arm
...     _ = lsa.update(arm, float(rng.random() < means[lsa.index[arm]]))
>>> lsa.decision().outliers, lsa.pulls
(['c', 'd'], 400)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ..models import RewardModel, make_model, model_from_dict
from .base import Decision, Event, Policy, Request
from .snapshot_fields import Fields, guarded

__all__ = ["ThresholdingPolicy", "LSA", "APT", "UCBE", "Uniform", "misclassified", "threshold_truth",
           "complexity_H", "check_budget"]


def check_budget(budget: Any, n_arms: int) -> int | None:
    """Validate a sample budget: ``None`` (anytime, no end) or an integer ``>= n_arms``.

    >>> check_budget(1e4, 20)
    10000
    >>> check_budget(-5, 20)
    Traceback (most recent call last):
    ...
    ValueError: budget must be an integer >= the number of arms (20), or None for no budget; got -5
    """
    if budget is None:
        return None
    msg = (f"budget must be an integer >= the number of arms ({n_arms}), or None for no budget; "
           f"got {budget!r}")
    if isinstance(budget, bool):
        raise ValueError(msg)
    try:
        b = float(budget)
    except (TypeError, ValueError):
        raise ValueError(msg) from None
    if not math.isfinite(b) or b != int(b) or b < n_arms:
        raise ValueError(msg)
    return int(b)


def threshold_truth(means: Sequence[float], threshold: float) -> list[int]:
    """Indices of the arms whose mean is at or above the threshold (the paper's ``d_i = 1``).

    >>> threshold_truth([0.2, 0.5, 0.7], 0.5)
    [1, 2]
    """
    return [i for i, mu in enumerate(means) if mu >= threshold]


def complexity_H(means: Sequence[float], threshold: float) -> float:
    """``H = sum_i 1 / Delta_i^2``, ``Delta_i = |theta_i - theta|``: the oracle complexity UCBE(b) is tuned with.

    >>> round(complexity_H([0.4, 0.6], 0.5), 6)
    200.0
    """
    gaps = [abs(mu - threshold) for mu in means]
    if min(gaps) <= 0.0:
        raise ValueError("complexity H is infinite: an arm's mean equals the threshold")
    return sum(1.0 / g ** 2 for g in gaps)


def misclassified(decision: Decision, means: Mapping[str, float], threshold: float) -> int:
    """Number of arms labelled wrongly by a thresholding decision (undecided arms count as wrong).

    >>> d = Decision(outliers=["b"], normals=["a", "c"], undecided=[], estimated_outliers=["b"],
    ...              threshold=0.5, threshold_interval=(0.5, 0.5), pulls=3, done=True)
    >>> misclassified(d, {"a": 0.2, "b": 0.6, "c": 0.55}, 0.5)
    1
    """
    above = set(decision.outliers)
    below = set(decision.normals)
    errors = 0
    for arm, mu in means.items():
        if mu >= threshold:
            errors += arm not in above
        else:
            errors += arm not in below
    return errors


class ThresholdingPolicy(Policy):
    """Base of the fixed-budget thresholding policies: pull each arm once, then the argmin of an index.

    Subclasses implement :meth:`key` (the index of one arm from its count and empirical mean) and
    :meth:`params`. Rewards after the budget is spent are validated and counted in
    ``decision().extra["ignored_after_budget"]``, not used.
    """

    name: ClassVar[str] = "thresholding"

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        return [{"threshold": 0.5, "budget": 2_000}, {"threshold": 0.5}]

    def __init__(self, arms: Sequence[str], *, threshold: float, budget: int | None = None,
                 model: RewardModel | str = "bernoulli", seed: int | None = None) -> None:
        super().__init__(arms)
        self.model = make_model(model)
        self.model.require_sum_based(self.name)
        try:
            theta = float(threshold)
        except (TypeError, ValueError):
            raise ValueError(f"threshold must be a number, got {threshold!r}") from None
        lo, hi = self.model.low, self.model.high
        if not math.isfinite(theta) or (lo is not None and theta <= lo) or (hi is not None and theta >= hi):
            rng = f"({lo}, {hi})" if lo is not None and hi is not None else "the reals"
            raise ValueError(f"threshold must be a finite number inside the reward range {rng} of the "
                             f"{self.model.name} reward model, got {threshold!r}")
        self.threshold = theta
        self.budget = check_budget(budget, len(self.arms))
        self.seed = seed  # no randomness: kept for a uniform constructor
        n = len(self.arms)
        self.m: list[int] = [0] * n
        self.s: list[float] = [0.0] * n
        self.n_truncated = 0
        self.ignored = 0
        self._T = 0
        self._deferred: set[int] = set()
        self._key: list[float] = [-math.inf] * n
        self._heap: list[tuple[float, int]] = [(-math.inf, i) for i in range(n)]
        self._requests = [Request(a) for a in self.arms]  # immutable: one per arm, reused

    # -- the index -------------------------------------------------------------------------------
    def key(self, m: int, theta_hat: float) -> float:  # pragma: no cover - abstract
        """The arm's index after ``m >= 1`` samples with empirical mean ``theta_hat`` (smaller: pulled first)."""
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        return {}

    def _arm_key(self, i: int) -> float:
        m = self.m[i]
        return -math.inf if m == 0 else self.key(m, self.s[i] / m)

    def _rebuild(self) -> None:
        self._key = [self._arm_key(i) for i in range(len(self.arms))]
        self._heap = [(k, i) for i, k in enumerate(self._key)]
        heapq.heapify(self._heap)

    def _clean_top(self) -> None:
        heap, key = self._heap, self._key
        while heap[0][0] != key[heap[0][1]]:
            heapq.heappop(heap)

    def _top(self, k: int, skip: set[int]) -> list[int]:
        """Up to k arm indices of smallest current key, not in ``skip``, in order (heap unchanged).

        (The same lazy-heap peek as ``AnytimeKSigma._plan`` in :mod:`~streamarms.policies.anytime`, which
        also skips decided arms; they can share one helper once the lead's split of that class lands.)
        """
        self._clean_top()
        if k == 1 and self._heap[0][1] not in skip:
            return [self._heap[0][1]]
        popped: list[tuple[float, int]] = []
        out: list[int] = []
        seen: set[int] = set()
        heap, key = self._heap, self._key
        while heap and len(out) < k:
            e = heapq.heappop(heap)
            popped.append(e)
            i = e[1]
            if e[0] != key[i] or i in seen:
                continue
            seen.add(i)
            if i not in skip:
                out.append(i)
        for e in popped:
            heapq.heappush(heap, e)
        return out

    # -- Policy interface ------------------------------------------------------------------------
    def next_request(self) -> Request | None:
        if self.done:
            return None
        if not self._deferred:  # fast path
            heap, key = self._heap, self._key
            while heap[0][0] != key[heap[0][1]]:
                heapq.heappop(heap)
            return self._requests[heap[0][1]]
        if len(self._deferred) >= len(self.arms):
            self._deferred.clear()
        top = self._top(1, self._deferred)
        if not top:  # every candidate deferred
            self._deferred.clear()
            top = self._top(1, self._deferred)
        return self._requests[top[0]]

    def wanted(self, k: int) -> list[Request]:
        if self.done or k <= 0:
            return []
        return [Request(self.arms[i]) for i in self._top(k, self._deferred)]

    def defer(self, arm: str) -> None:
        self._deferred.add(self._arm_index(arm))

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        i = self.index.get(arm)
        if i is None:
            i = self._arm_index(arm)  # raises, naming the arm
        x = self.model.check(arm, reward)
        if self.done:
            self.ignored += 1
            return []
        j = self.m[i] + 1
        if self.model.transforms:
            c = self.model.contribution(j, x)
            self.n_truncated += c != x
            x = c
        self.m[i] = j
        self.s[i] += x
        self._T += 1
        if self._deferred:
            self._deferred.clear()
        k = self.key(j, self.s[i] / j)
        self._key[i] = k
        heapq.heappush(self._heap, (k, i))
        if len(self._heap) > 2 * len(self.arms) + 64:
            self._rebuild()
        return []

    @property
    def done(self) -> bool:
        return self.budget is not None and self._T >= self.budget

    @property
    def pulls(self) -> int:
        return self._T

    def estimates(self) -> dict[str, float | None]:
        """Empirical mean of each arm (``None`` before its first sample)."""
        return {a: (self.s[i] / self.m[i] if self.m[i] else None) for i, a in enumerate(self.arms)}

    def decision(self) -> Decision:
        above, below, undecided = [], [], []
        for i, a in enumerate(self.arms):
            if self.m[i] == 0:
                undecided.append(a)
            elif self.s[i] / self.m[i] >= self.threshold:
                above.append(a)
            else:
                below.append(a)
        return Decision(outliers=above, normals=below, undecided=undecided, estimated_outliers=list(above),
                        threshold=self.threshold, threshold_interval=(self.threshold, self.threshold),
                        pulls=self._T, done=self.done,
                        extra={"policy": self.name, "budget": self.budget,
                               "ignored_after_budget": self.ignored, "truncated": self.n_truncated})

    def snapshot(self) -> dict[str, Any]:
        return {"policy": self.name, "arms": list(self.arms), "threshold": self.threshold,
                "budget": self.budget, "model": self.model.to_dict(), "seed": self.seed,
                "params": self.params(), "m": list(self.m), "s": list(self.s), "pulls": self._T,
                "truncated": self.n_truncated, "ignored": self.ignored}

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> ThresholdingPolicy:
        """Rebuild from :meth:`snapshot` output; a malformed snapshot raises ``ValueError`` naming the field
        (the parameters checked by the constructor, the counts adding up to the pulls, at most the budget)."""
        f = Fields(state, policy=cls.name)
        with f.part("model"):
            model = model_from_dict(f.raw("model"))
        with f.part("params"):  # the constructor's checks
            pol = cls(f.arms(), threshold=f.number("threshold"), budget=f.raw("budget"), model=model,
                      seed=f.raw("seed", None), **f.sub("params").state)
        pol.m, pol.s = f.counts("m"), f.numbers("s")
        if not model.transforms:  # (TEA's sums are of truncated rewards)
            f.sums_within("s", pol.m, pol.s, model.low, model.high)
        pol._T = f.integer("pulls", high=pol.budget)
        f.total("pulls", pol._T, pol.m)
        pol.n_truncated = f.integer("truncated", high=pol._T, default=0)
        pol.ignored = f.integer("ignored", default=0)
        pol._rebuild()
        return pol


class LSA(ThresholdingPolicy):
    """Logarithmic-Sample Algorithm ([TBPZ19] Alg. 1): pull ``argmin_i alpha T_i Delta_hat_i^2 + 0.5 ln T_i``.

    ``alpha > 0`` is the paper's universal tuning parameter (Theorem 1 covers ``0 < alpha <= 8``; the
    experiments use 1.35). Output (line 5): above iff ``theta_hat_i >= theta``.

    >>> lsa = LSA(["0", "1"], threshold=0.5, budget=10)
    >>> lsa.next_request().arm  # initialisation: each arm once
    '0'
    >>> _ = lsa.update("0", 1.0)
    >>> lsa.next_request().arm
    '1'
    >>> round(lsa.key(4, 0.75), 4)  # 1.35 * 4 * 0.25^2 + 0.5 ln 4
    1.0306
    """

    name = "lsa"

    def __init__(self, arms: Sequence[str], *, threshold: float, budget: int | None = None,
                 alpha: float = 1.35, model: RewardModel | str = "bernoulli", seed: int | None = None) -> None:
        if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
            raise ValueError(f"LSA alpha must be a finite number > 0 (the paper uses 1.35), got {alpha!r}")
        self.alpha = float(alpha)
        super().__init__(arms, threshold=threshold, budget=budget, model=model, seed=seed)

    def key(self, m: int, theta_hat: float) -> float:
        d = theta_hat - self.threshold
        return self.alpha * m * d * d + 0.5 * math.log(m)

    def params(self) -> dict[str, Any]:
        return {"alpha": self.alpha}


class APT(ThresholdingPolicy):
    """APT(epsilon) (Locatelli et al. 2016, as run in [TBPZ19] Sec. 5).

    Pull ``argmin_i sqrt(T_i) (Delta_hat_i + epsilon)``.

    ``epsilon >= 0`` is the precision (indifference zone); the LSA paper tests 0, 0.025, 0.05 and 0.1.

    >>> APT(["0", "1"], threshold=0.5, budget=10, epsilon=0.05).epsilon
    0.05
    """

    name = "apt"

    def __init__(self, arms: Sequence[str], *, threshold: float, budget: int | None = None,
                 epsilon: float = 0.05, model: RewardModel | str = "bernoulli", seed: int | None = None) -> None:
        if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon >= 0):
            raise ValueError(f"APT epsilon must be a finite number >= 0, got {epsilon!r}")
        self.epsilon = float(epsilon)
        super().__init__(arms, threshold=threshold, budget=budget, model=model, seed=seed)

    def key(self, m: int, theta_hat: float) -> float:
        return math.sqrt(m) * (abs(theta_hat - self.threshold) + self.epsilon)

    def params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon}


class UCBE(ThresholdingPolicy):
    """UCBE(b) (Audibert & Bubeck 2010, as adapted in [TBPZ19] Sec. 5): pull ``argmin_i Delta_hat_i - sqrt(a / T_i)``.

    ``a = 4^b (T - K) / H`` with the budget T, K arms and the oracle complexity ``H = sum_i 1 / Delta_i^2``
    (:func:`complexity_H`); the paper tests b = -1, 0, 4. Pass ``H`` (needs a budget), or ``a`` directly.

    >>> UCBE(["0", "1"], threshold=0.5, budget=102, b=0.0, H=200.0).a
    0.5
    """

    name = "ucbe"

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        return [{"threshold": 0.5, "budget": 2_000, "a": 1.0}]

    def __init__(self, arms: Sequence[str], *, threshold: float, budget: int | None = None,
                 b: float = 0.0, H: float | None = None, a: float | None = None,
                 model: RewardModel | str = "bernoulli", seed: int | None = None) -> None:
        super().__init__(arms, threshold=threshold, budget=budget, model=model, seed=seed)
        if not (isinstance(b, (int, float)) and math.isfinite(b)):
            raise ValueError(f"UCBE b must be a finite number, got {b!r}")
        self.b, self.H = float(b), H
        if a is None:
            if H is None or self.budget is None:
                raise ValueError("UCBE needs either a > 0, or the complexity H = sum_i 1/Delta_i^2 > 0 "
                                 "together with a budget (a = 4^b (T - K) / H)")
            if not (isinstance(H, (int, float)) and math.isfinite(H) and H > 0):
                raise ValueError(f"UCBE complexity H must be a finite number > 0, got {H!r}")
            try:
                a = 4.0 ** self.b * (self.budget - len(self.arms)) / H
            except OverflowError:  # (b = 600: 4^b past a float's range)
                raise ValueError(f"UCBE b = {self.b:g} makes a = 4^b (T - K) / H too large for a float: give a "
                                 "smaller b") from None
        if not (isinstance(a, (int, float)) and math.isfinite(a) and a >= 0):
            raise ValueError(f"UCBE a must be a finite number >= 0, got {a!r}")
        self.a = float(a)

    def key(self, m: int, theta_hat: float) -> float:
        return abs(theta_hat - self.threshold) - math.sqrt(self.a / m)

    def params(self) -> dict[str, Any]:
        return {"b": self.b, "H": self.H, "a": self.a}


class Uniform(ThresholdingPolicy):
    """Uniform sampling ([TBPZ19] Sec. 5): the arms in turn, about ``T / K`` samples each.

    >>> u = Uniform(["0", "1", "2"], threshold=0.5, budget=6)
    >>> for _ in range(6):
    ...     _ = u.update(u.next_request().arm, 1.0)
    >>> u.m, u.done
    ([2, 2, 2], True)
    """

    name = "uniform"

    def key(self, m: int, theta_hat: float) -> float:
        return float(m)

"""A known-threshold oracle for the k-sigma benchmarks: the same arm confidence sequences as the
engine's policy, but told the true threshold theta = mu + k sigma of the arms' means.

Rule (LUCB/APT-style, fixed confidence): among the arms not yet classified, sample the one with the
smallest margin to theta in radius units, ``|y_hat_i - theta| / r_i`` (``r_i`` = half-width of arm i's
interval; an unsampled arm has margin 0); classify arm i (outlier when above theta, normal when below)
as soon as its interval excludes theta; stop when every arm is classified. The arm sequences are
anytime-valid at level ``alpha = delta / n`` each, so by a union bound over the n arms every
classification is correct with probability >= 1 - delta at whatever time it is made.

The oracle knows what no real policy knows (theta), so its samples are a floor for any policy using
the same arm intervals: the engine's policy pays extra only for estimating theta. It is a benchmark
yardstick, not a product policy: it has no snapshot/restore and no streaming extras.

The arm sequences come from ``streamarms.confidence.sequence_for(model, alpha)`` (the engine's factory)
when that module exists; until it does, a Beta-Binomial conjugate-mixture sequence for 0/1 rewards
(Robbins 1970; Howard, Ramdas, McAuliffe, Sekhon, Ann. Statist. 2021, Sec. 3) stands in, so the
harness runs before the engine lands. Which one was used is in ``ORACLE_SEQUENCE``.

>>> from streamarms.sim import Environment, run_policy
>>> env = Environment([0.1, 0.12, 0.11, 0.1, 0.9], seed=1)
>>> oracle = KnownThresholdOracle(env.arm_names, threshold=0.5, delta=0.1)
>>> run_policy(oracle, env).decision.outliers
['4']
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any

from streamarms.policies.base import Decision, Event, Policy, Request

__all__ = ["KnownThresholdOracle", "BetaBinomialMixture", "arm_sequence_factory", "ORACLE_SEQUENCE"]


class BetaBinomialMixture:
    """Stand-in Bernoulli confidence sequence (used only while ``streamarms.confidence`` is absent).

    ``M_m(p) = [B(a + S, b + m - S) / B(a, b)] / [p^S (1 - p)^(m - S)]`` is a nonnegative martingale
    under p (a Beta(a, b) mixture of likelihood ratios), so by Ville's inequality
    ``{p : M_m(p) < 1/alpha}`` holds at every m simultaneously with probability >= 1 - alpha.
    ``log M`` is convex in p, so the set is an interval around S/m; its ends by bisection.

    >>> cs = BetaBinomialMixture(0.05)
    >>> for x in [1, 0] * 50: cs.update(x)
    >>> lo, hi = cs.interval()
    >>> 0.3 < lo < 0.5 < hi < 0.7
    True
    """

    def __init__(self, alpha: float, a: float = 0.5, b: float = 0.5) -> None:
        self.alpha, self.a, self.b = alpha, a, b
        self.n, self.s = 0, 0.0
        self._log_inv_alpha = math.log(1.0 / alpha)
        self._lbeta0 = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
        self._lo, self._hi = 0.0, 1.0

    @property
    def mean(self) -> float:
        return self.s / self.n if self.n else 0.5

    def update(self, x: float) -> None:
        self.n += 1
        self.s += x
        self._lo = self._hi = None  # type: ignore[assignment]

    def _log_m(self, p: float, lmix: float) -> float:
        s, f = self.s, self.n - self.s
        return lmix - (s * math.log(p) if s else 0.0) - (f * math.log1p(-p) if f else 0.0)

    def interval(self) -> tuple[float, float]:
        if self._lo is not None:
            return self._lo, self._hi
        s, f = self.s, self.n - self.s
        lmix = (math.lgamma(self.a + s) + math.lgamma(self.b + f) - math.lgamma(self.a + self.b + self.n)
                - self._lbeta0)
        c = self._log_inv_alpha
        phat = min(max(s / self.n, 1e-12), 1 - 1e-12)
        lo, hi = 0.0, phat
        if self._log_m(1e-15, lmix) < c:
            lo_v = 0.0
        else:
            for _ in range(50):
                mid = 0.5 * (lo + hi)
                if self._log_m(mid, lmix) >= c:
                    lo = mid
                else:
                    hi = mid
            lo_v = lo
        lo, hi = phat, 1.0
        if self._log_m(1 - 1e-15, lmix) < c:
            hi_v = 1.0
        else:
            for _ in range(50):
                mid = 0.5 * (lo + hi)
                if self._log_m(mid, lmix) >= c:
                    hi = mid
                else:
                    lo = mid
            hi_v = hi
        # running intersection (every set in the sequence holds at once on the good event)
        prev = getattr(self, "_run", (0.0, 1.0))
        self._run = (max(prev[0], lo_v), min(prev[1], hi_v))
        if self._run[0] > self._run[1]:  # can only happen off the good event: keep the latest set
            self._run = (lo_v, hi_v)
        self._lo, self._hi = self._run
        return self._lo, self._hi


ORACLE_SEQUENCE = "stand-in Beta-Binomial mixture (benchmarks/known_threshold_oracle.py)"


def arm_sequence_factory(model: str, alpha: float) -> Callable[[], Any]:
    """A maker of one arm's confidence sequence at level ``alpha``: the engine's when it exists."""
    global ORACLE_SEQUENCE
    try:
        from streamarms.confidence import sequence_for  # type: ignore[attr-defined]
        from streamarms.models import make_model
    except ImportError:
        if model != "bernoulli":
            raise ValueError(f"the stand-in oracle sequence is Bernoulli only, not {model!r}") from None
        return lambda: BetaBinomialMixture(alpha)
    m = make_model(model)
    probe = sequence_for(m, alpha)
    ORACLE_SEQUENCE = f"engine: streamarms.confidence.sequence_for -> {type(probe).__name__}"
    return lambda: sequence_for(m, alpha)


class KnownThresholdOracle(Policy):
    """Fixed-confidence classification against a KNOWN threshold with anytime arm sequences.

    ``arms``; ``threshold`` (the true theta); ``delta``; ``model`` (reward model name, ``"bernoulli"``);
    ``two_sided_lower`` (optional lower threshold for two-sided rules: an arm is then an outlier when
    above ``threshold`` or below ``two_sided_lower``).
    """

    name = "known-threshold-oracle"

    def __init__(self, arms: Sequence[str], threshold: float, delta: float = 0.1, model: str = "bernoulli",
                 two_sided_lower: float | None = None) -> None:
        super().__init__(arms)
        self.theta = float(threshold)
        self.lower = two_sided_lower
        self.delta = delta
        make = arm_sequence_factory(model, delta / len(self.arms))
        self.cs = [make() for _ in self.arms]
        self.label: list[str | None] = [None] * len(self.arms)
        self._pulls = 0
        self._open = len(self.arms)
        # heap of (margin, arm index); only the sampled arm's margin changes, so no stale entries
        self._heap: list[tuple[float, int]] = [(0.0, i) for i in range(len(self.arms))]
        heapq.heapify(self._heap)

    def _targets(self) -> list[float]:
        return [self.theta] if self.lower is None else [self.theta, self.lower]

    def next_request(self) -> Request | None:
        if not self._heap:
            return None
        return Request(self.arms[self._heap[0][1]])

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        i = self._arm_index(arm)
        x = self._finite(arm, reward)
        cs = self.cs[i]
        cs.update(x)
        self._pulls += 1
        if self.label[i] is not None:
            return []
        lo, hi = cs.interval()
        r = max((hi - lo) / 2.0, 1e-300)
        y = cs.mean
        margin = min(abs(y - t) for t in self._targets()) / r
        clear = all(lo > t or hi < t for t in self._targets())
        if self._heap and self._heap[0][1] == i:
            heapq.heappop(self._heap)
        else:  # a reward for an arm that was not the one wanted: rebuild (rare; not the benchmark path)
            self._heap = [(m, j) for m, j in self._heap if j != i]
            heapq.heapify(self._heap)
        if clear:
            out = lo > self.theta or (self.lower is not None and hi < self.lower)
            self.label[i] = "outlier" if out else "normal"
            self._open -= 1
            return [Event(arm, self.label[i], y, (lo, hi), self.theta, (self.theta, self.theta), cs.n,
                          self._pulls)]
        heapq.heappush(self._heap, (margin, i))
        return []

    @property
    def done(self) -> bool:
        return self._open == 0

    @property
    def pulls(self) -> int:
        return self._pulls

    def decision(self) -> Decision:
        out = [a for a, lab in zip(self.arms, self.label) if lab == "outlier"]
        nor = [a for a, lab in zip(self.arms, self.label) if lab == "normal"]
        und = [a for a, lab in zip(self.arms, self.label) if lab is None]
        est = [a for a, cs in zip(self.arms, self.cs)
               if cs.mean > self.theta or (self.lower is not None and cs.mean < self.lower)]
        return Decision(out, nor, und, est, self.theta, (self.theta, self.theta), self._pulls, self.done)

    def snapshot(self) -> dict[str, Any]:
        raise NotImplementedError("the benchmark oracle is not checkpointed")

    @classmethod
    def restore(cls, state: dict[str, Any]) -> KnownThresholdOracle:
        raise NotImplementedError("the benchmark oracle is not checkpointed")

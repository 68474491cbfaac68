"""AnytimeKSigma (CLI ``cs``): streamarms' own fixed-confidence k-sigma outlier policy (issue 9).

Built on anytime-valid confidence sequences (Howard, Ramdas, McAuliffe, Sekhon, *Time-uniform,
nonparametric, nonasymptotic confidence sequences*, Ann. Statist. 2021; Waudby-Smith & Ramdas, JRSS-B
2024; Robbins 1970) and the threshold interval of :mod:`streamarms.confidence.threshold`; the outlier
definition is the k-sigma rule of Zhuang, Wang, Wang, *Identifying outlier arms in multi-armed bandit*,
NeurIPS 2017 (arm i is an outlier when ``y_i > mu + k sigma``; two-sided also ``y_i < mu - k sigma``).
Sampling follows APT (Locatelli, Gutzeit, Carpentier, ICML 2016) and LUCB in spirit.

**Rule.** Every arm has a confidence sequence at ``alpha_arm = arm_share * delta / n``; the threshold
track holds ``theta`` (two-sided: both thresholds) at ``(1 - arm_share) * delta`` (split in halves
between the two thresholds when two-sided). An arm is classified (an :class:`Event`) as soon as its
interval and the threshold's are disjoint: outlier when its interval lies above the upper threshold's
interval (or below the lower one's, two-sided), normal when it lies below the upper threshold's (and
above the lower one's). The policy stops when every arm is classified.

**Guarantee.** On the event that every arm's sequence and the threshold's linear term hold (probability
``>= 1 - delta`` by a union bound; each is valid at every count at once, Ville's inequality), every
interval contains its target at every moment, so every event is correct whenever it is made, whatever
the sampling order: the answer is correct with probability ``>= 1 - delta`` at any stopping time.

**Sampling.** Among undecided arms, the one whose classification is least certain: the smallest
``|mean_i - theta_hat| sqrt(m_i / v_i)`` (APT's index in units of the arm's standard error; ``v_i`` a
variance proxy), kept in a heap with lazy invalidation (an arm's key changes only with its own samples;
all keys are recomputed when ``theta_hat`` moves, i.e. when ``m_theta`` advances a grid level). When the
threshold's half-width exceeds that arm's radius (proxy), the threshold is the bottleneck and the policy
pulls an arm holding ``m_theta`` back (the first arm below the next grid level). O(log n) per reward,
plus O(n) per grid level of ``m_theta`` (amortised O(1)).

>>> import random
>>> rng = random.Random(3)
>>> means = [0.3] * 9 + [0.9]
>>> pol = AnytimeKSigma([str(i) for i in range(10)], k=2.0, delta=0.1)
>>> while not pol.done:
...     arm = pol.next_request().arm
...     _ = pol.update(arm, float(rng.random() < means[int(arm)]))
>>> pol.decision().outliers, pol.pulls < 20000
(['9'], True)
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Sequence
from typing import Any, ClassVar, cast

from ..confidence.beta_binomial import BetaBinomialCS
from ..confidence.factory import sequence_for
from ..confidence.threshold import ThresholdTrack, grid_levels
from ..models import HeavyTailedModel, RewardModel, SubGaussianModel, make_model
from ..validation import check_ksigma_params
from . import anytime_batch, anytime_snapshot
from .base import Decision, Event, Policy, Request
from .ksigma import ksigma_outliers
from .snapshot_fields import guarded

__all__ = ["AnytimeKSigma", "ARM_SHARE"]

_LEVELS = grid_levels()
_LEVEL_SET = frozenset(_LEVELS)

#: the default part of delta spent on the arms' sequences (the rest: the threshold). Measured with
#: ``benchmarks/engine_vs_papers.py`` (10 runs an instance, shares 0.15-0.65): 0.25 against 0.5 cut the
#: mean samples on the instances where the threshold is the bottleneck (zww17-20 -17%, neurips17-n10
#: -20%, neurips17-n200 -7%, star98 -9%) and cost <= 4% on the others (lowrate-n50 +3.6%, neurips17-n1000
#: +1.9%): an arm's radius depends on ``log(n / (share delta))``, a large number already, the threshold's on
#: ``log(1 / ((1 - share) delta))``, a small one.
ARM_SHARE = 0.25


def _lil(m: int) -> float:
    """The proxy radius's iterated-logarithm term ``1.4 log(log(2 m) + 1)``."""
    return 1.4 * math.log(math.log(2.0 * m) + 1.0)


#: ``_lil(m)`` for small m (index 0 unused), read on every reward
_LIL = [0.0] + [_lil(m) for m in range(1, 1 << 16)]


def _next_level(g: int) -> int:
    """The smallest grid level > g."""
    lo, hi = 0, len(_LEVELS) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _LEVELS[mid] > g:
            hi = mid
        else:
            lo = mid + 1
    return _LEVELS[lo]


def _fresh_heap(pol: AnytimeKSigma) -> list[tuple[float, int]]:
    """The heap of the undecided arms' keys, without stale entries. Its arm numbers (like ``_lag``'s)
    are ``pol.index``'s own int objects, not fresh ones: 32 bytes less an entry (one per arm)."""
    key, state = pol.key, pol.state
    heap = [(key[i], i) for i in pol.index.values() if state[i] == 0]
    heapq.heapify(heap)
    return heap


def _request(pol: AnytimeKSigma, i: int) -> Request:
    """Arm i's request (``Request(arms[i])``), built on first use: with every reward fed (``passive_feed
    ="all"``, cs's default) few arms are ever asked for, and a million arms need not hold a million."""
    r = pol._requests[i]
    if r is None:
        r = pol._requests[i] = Request(pol.arms[i])
    return r


def _arm_evidence(pol: AnytimeKSigma, arm: str) -> dict[str, Any] | None:
    """``AnytimeKSigma.arm_evidence``: arm ``arm``'s mean, confidence-sequence interval and samples (``KeyError``
    for an unknown arm)."""
    c = pol.cs[pol.index[arm]]
    if c.m == 0:
        return {"estimate": None, "interval": None, "samples": 0}
    lo, hi = c.interval()
    return {"estimate": c.s / c.m, "interval": [lo, hi], "samples": c.m}


class AnytimeKSigma(Policy):
    """Fixed-confidence k-sigma outlier arms with anytime-valid intervals (module docstring); ``arm_share``:
    the part of delta spent on the arms' sequences (the rest on the threshold).

    >>> pol = AnytimeKSigma(["a", "b", "c"], k=1.0)
    >>> pol.update("a", 0.5)
    Traceback (most recent call last):
    ...
    ValueError: reward for arm 'a' must be 0 or 1 under the bernoulli reward model, got 0.5
    >>> pol.pulls
    0
    """

    name: ClassVar[str] = "cs"
    arm_evidence = _arm_evidence  # (a module function: the class is at the size limit)

    def __init__(self, arms: Sequence[str], *, k: float = 2.0, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", two_sided: bool = False, arm_share: float = ARM_SHARE) -> None:
        super().__init__(arms)
        n = len(self.arms)
        check_ksigma_params(k, delta, n)
        if not 0 < arm_share < 1:
            raise ValueError(f"arm_share must be in (0, 1), got {arm_share!r}")
        self.k, self.delta, self.two_sided, self.arm_share = float(k), float(delta), bool(two_sided), float(arm_share)
        self.model = make_model(model)
        self.alpha_arm = self.arm_share * self.delta / n
        self.alpha_theta = (1.0 - self.arm_share) * self.delta
        self.cs = [sequence_for(self.model, self.alpha_arm, a) for a in self.arms]
        self.track = ThresholdTrack(n, self.k, self.alpha_theta, two_sided=self.two_sided,
                                    bernoulli=self.model.name == "bernoulli", bilinear="variance",
                                    **anytime_snapshot.track_range(self.model))
        self.state = [0] * n          # 0 undecided, 1 outlier, -1 normal
        self.n_undecided = n
        self.T = 0
        self.ignored = 0
        self.key = [-math.inf] * n    # sampling index of each undecided arm (smaller: wanted first)
        self.deferred: list[int] = []
        #: sums of squared rewards (non-Bernoulli: the threshold's sample variances); None: restored from a
        #: snapshot without them (the bias-free lower side then stays off)
        self.q: list[float] | None = [0.0] * n
        self._init_derived()

    # -- derived state (rebuilt on restore) ------------------------------------------------------
    def _init_derived(self) -> None:
        self._requests: list[Request | None] = [None] * len(self.arms)  # built on first use: _request
        self._deferred = set(self.deferred)
        self._heap = _fresh_heap(self)
        m = self.model
        self._bern = m.name == "bernoulli" and all(type(c) is BetaBinomialCS for c in self.cs)
        self._heap_cap = 2 * len(self.arms) + 64
        self._vconst: float | None
        if m.name in ("bernoulli", "bounded"):
            assert m.low is not None and m.high is not None  # both models have a finite range
            self._vlo: float = m.low
            self._vhi: float = m.high
            self._span2 = (m.high - m.low) ** 2
            self._vconst = None
        elif m.name == "subgaussian":
            self._vconst = cast(SubGaussianModel, m).sigma ** 2
        else:
            ht = cast(HeavyTailedModel, m)
            self._vconst = ht.B ** (2.0 / ht.p)
        self._L = math.log(1.0 / self.alpha_arm)
        self._rp = array("d", (self._radius_proxy(i) for i in range(len(self.arms))))  # unboxed: 8 B an arm
        self._refresh_threshold()

    def _refresh_threshold(self) -> None:
        tr = self.track
        self._u = tr.upper()
        self._l = tr.lower() if self.two_sided else (-math.inf, math.inf)
        self._th_u = tr.estimate("upper")
        self._th_l = tr.estimate("lower") if self.two_sided else math.nan
        w = (self._u[1] - self._u[0]) / 2.0
        if self.two_sided:
            w = max(w, (self._l[1] - self._l[0]) / 2.0)
        self._W = w
        self._next_g = _next_level(tr.m_theta)
        self._lag = [i for i, c in zip(self.index.values(), self.cs) if c.m < self._next_g]
        self._lag.reverse()  # pop from the end: lowest index first

    # -- sampling index --------------------------------------------------------------------------
    def _var(self, mean: float, m: int) -> float:
        if self._vconst is not None:
            return self._vconst
        return (mean - self._vlo) * (self._vhi - mean) + (self._vhi - self._vlo) ** 2 / (m + 1.0)

    def _radius_proxy(self, i: int) -> float:
        c = self.cs[i]
        m = c.m
        if m == 0:
            return math.inf
        return math.sqrt(2.0 * self._var(c.s / m, m) * (self._L + 1.4 * math.log(math.log(2.0 * m) + 1.0)) / m)

    def _key_of(self, i: int) -> float:
        c = self.cs[i]
        m = c.m
        if m == 0 or self.track.m_theta == 0:
            return -math.inf
        mean = c.s / m
        gap = abs(mean - self._th_u)
        if self.two_sided:
            gap = min(gap, abs(mean - self._th_l))
        return gap * math.sqrt(m / self._var(mean, m))

    # -- classification --------------------------------------------------------------------------
    def _classify(self, i: int) -> Event | None:
        c = self.cs[i]
        u_lo, u_hi = self._u
        kind = None
        if self.two_sided:
            l_lo, l_hi = self._l
            if c.above(u_hi) or c.below(l_lo):
                kind = "outlier"
            elif c.below(u_lo) and c.above(l_hi):
                kind = "normal"
        elif c.above(u_hi):
            kind = "outlier"
        elif c.below(u_lo):
            kind = "normal"
        if kind is None:
            return None
        self.state[i] = 1 if kind == "outlier" else -1
        self.n_undecided -= 1
        c_lo, c_hi = c.interval()
        return Event(self.arms[i], kind, estimate=c.mean, interval=(c_lo, c_hi), threshold=self._th_u,
                     threshold_interval=self._u, samples=c.m, pulls=self.T)

    def _box(self) -> tuple[list[float], list[float]]:
        """The arms' current (cached) intervals, for the threshold's lower bound on sigma."""
        return [c.lo for c in self.cs], [c.hi for c in self.cs]

    def _on_advance(self) -> list[Event]:
        self._refresh_threshold()
        events = []
        for i in range(len(self.arms)):
            if self.state[i] == 0:
                ev = self._classify(i)
                if ev is not None:
                    events.append(ev)
        self.key = [self._key_of(i) if self.state[i] == 0 else math.inf for i in range(len(self.arms))]
        self._heap = _fresh_heap(self)
        return events

    # -- Policy interface ------------------------------------------------------------------------
    @property
    def pulls(self) -> int:
        return self.T

    @property
    def done(self) -> bool:
        return self.n_undecided == 0

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        # the hot path: one dict lookup for the arm, the Bernoulli check inlined for plain 0.0 / 1.0
        # floats, the LIL term from a table, attributes read once (same floats as the formulas above)
        i = self.index.get(arm)
        if i is None:
            i = self._arm_index(arm)  # raises, naming the arm
        if self._bern and reward.__class__ is float and (reward == 1.0 or reward == 0.0):
            x = reward
        else:
            x = self.model.check(arm, reward)
        if self.n_undecided == 0:
            self.ignored += 1
            return []
        c = self.cs[i]
        if self._bern:  # BetaBinomialCS._update, inlined
            g = c.m = c.m + 1
            s = c.s = c.s + x
        else:
            c._update(x)
            g, s = c.m, c.s
            if self.q is not None:
                self.q[i] += x * x
        self.T += 1
        if self._deferred:
            self._deferred.clear()
            self.deferred = []
        events: list[Event] = []
        if g in _LEVEL_SET and g > self.track.m_theta:
            lo, hi = c.interval()
            if self.track.record(g, s, lo, hi, self._box,
                                 None if self._bern or self.q is None else self.q[i]):
                events = self._on_advance()
        if self.state[i] == 0:
            m = g
            mean = s / m
            if self._vconst is None:
                var = (mean - self._vlo) * (self._vhi - mean) + self._span2 / (m + 1.0)
            else:
                var = self._vconst
            lil = _LIL[m] if m < len(_LIL) else _lil(m)
            rp = math.sqrt(2.0 * var * (self._L + lil) / m)
            self._rp[i] = rp
            # exact test only when the arm may be clear of the threshold's interval (a filter, never a
            # decision: the proxy radius is not a bound)
            u_lo, u_hi = self._u
            half = 0.5 * rp
            if (mean - half > u_hi or mean + half < u_lo
                    or (self.two_sided and (mean - half > self._l[1] or mean + half < self._l[0]))):
                ev = self._classify(i)
                if ev is not None:
                    events.append(ev)
                    self.key[i] = math.inf
                    return events
            if self.track.m_theta:
                gap = abs(mean - self._th_u)
                if self.two_sided:
                    gap = min(gap, abs(mean - self._th_l))
                k = gap * math.sqrt(m / var)
            else:
                k = -math.inf
            key = self.key
            if k != key[i]:  # (unchanged, e.g. -inf before m_theta: the heap holds its entry already)
                key[i] = k
                heap = self._heap
                heapq.heappush(heap, (k, i))
                if len(heap) > self._heap_cap:
                    self._heap = _fresh_heap(self)
        return events

    def update_batch(self, arms: Sequence[int], rewards: Sequence[float]) -> tuple[int, list[Event]]:
        """:meth:`Policy.update_batch`, skipping ahead with numpy: exactly :meth:`update` reward by reward.

        Why that is exact: :mod:`streamarms.policies.anytime_batch`.

        >>> import random
        >>> rng = random.Random(1); arms = [rng.randrange(300) for _ in range(4000)]
        >>> xs = [float(rng.random() < (0.9 if a == 7 else 0.3)) for a in arms]
        >>> p, q = AnytimeKSigma([str(i) for i in range(300)]), AnytimeKSigma([str(i) for i in range(300)])
        >>> ev_p = [e for a, x in zip(arms, xs) for e in p.update(str(a), x)]
        >>> ev_q, pos = [], 0
        >>> while pos < len(xs):
        ...     n, ev = q.update_batch(arms[pos:], xs[pos:]); pos += n; ev_q += ev
        >>> ev_p == ev_q and p.snapshot() == q.snapshot()
        True
        """
        return anytime_batch.update_batch(self, arms, rewards)

    def _laggard(self, skip: set[int] | frozenset[int] = frozenset()) -> int | None:
        lag, cs, g = self._lag, self.cs, self._next_g
        while lag and cs[lag[-1]].m >= g:
            lag.pop()
        if not skip:
            return lag[-1] if lag else None
        for j in reversed(lag):
            if cs[j].m < g and j not in skip:
                return j
        return None

    def _top(self, k: int, skip: set[int] | frozenset[int]) -> list[int]:
        heap, key, state = self._heap, self.key, self.state
        while heap and (heap[0][0] != key[heap[0][1]] or state[heap[0][1]] != 0):
            heapq.heappop(heap)
        if not heap:
            return []
        if k == 1 and heap[0][1] not in skip:
            return [heap[0][1]]
        kept: list[tuple[float, int]] = []
        out: list[int] = []
        seen: set[int] = set()
        while heap and len(out) < k:
            e = heapq.heappop(heap)
            j = e[1]
            if e[0] != key[j] or state[j] != 0 or j in seen:
                continue  # stale (the arm's key has changed, or it is decided) or a copy: dropped for good
            seen.add(j)
            kept.append(e)
            if j not in skip:
                out.append(j)
        for e in kept:  # (pushing the stale entries back too made the heap grow with every update)
            heapq.heappush(heap, e)
        return out

    def _plan(self, k: int, skip: set[int] | frozenset[int]) -> list[int]:
        if self.n_undecided == 0:
            return []
        top = self._top(k, skip)
        bottleneck = self.track.m_theta == 0 or not top or self._threshold_first(top[0])
        out: list[int] = []
        if bottleneck:
            j = self._laggard(skip)
            if j is not None:
                out.append(j)
        for j in top:
            if len(out) >= k:
                break
            if j not in out:
                out.append(j)
        if len(out) < k and not bottleneck:
            j = self._laggard(skip | set(out))
            if j is not None and j not in out:
                out.append(j)
        return out[:k]

    def _threshold_first(self, i: int) -> bool:
        """Whether one more round of the threshold track gains more than one more sample of arm i.

        Both radii shrink like ``1/sqrt(count)``, so a sample of arm i cuts its radius by about
        ``r_i / (2 m_i)`` and a pull of a laggard cuts the relevant side of the threshold's interval by
        about ``w / (2 n m_theta)`` (a round needs n pulls), a gain shared by the undecided arms: pull the
        laggard when ``n_undecided w / (n m_theta) > r_i / m_i``. ``w`` is the side of the threshold's
        interval that arm i's classification needs (above the estimate for a candidate outlier). An arm
        without a sample (its radius is unbounded) goes first: in a group, a key taken over from a value
        that names it without a state (an announcement) has none while the group's ``m_theta`` is past 0."""
        c = self.cs[i]
        if c.m == 0:
            return False
        mean = c.s / c.m
        th, (lo, hi) = self._th_u, self._u
        if self.two_sided and abs(mean - self._th_l) < abs(mean - th):
            th, (lo, hi) = self._th_l, self._l
        w = hi - th if mean > th else th - lo
        return self.n_undecided * w / (len(self.arms) * self.track.m_theta) > self._rp[i] / c.m

    def next_request(self) -> Request | None:
        if self.n_undecided == 0:
            return None
        if not self._deferred and self.track.m_theta:  # fast path of _plan(1, {})
            heap, key, state = self._heap, self.key, self.state
            while heap and (heap[0][0] != key[heap[0][1]] or state[heap[0][1]] != 0):
                heapq.heappop(heap)
            if heap:
                i = heap[0][1]
                if not self._threshold_first(i):
                    r = self._requests[i]
                    return r if r is not None else _request(self, i)
                j = self._laggard()
                return _request(self, i if j is None else j)
        out = self._plan(1, self._deferred)
        if not out and self._deferred:
            self._deferred.clear()
            self.deferred = []
            out = self._plan(1, self._deferred)
        return _request(self, out[0]) if out else None

    def wanted(self, k: int) -> list[Request]:
        if self.n_undecided == 0 or k <= 0:
            return []
        return [_request(self, j) for j in self._plan(k, self._deferred)]

    def defer(self, arm: str) -> None:
        i = self._arm_index(arm)
        if i not in self._deferred:
            self._deferred.add(i)
            self.deferred.append(i)
        if len(self._deferred) >= len(self.arms):
            self._deferred.clear()
            self.deferred = []

    def decision(self) -> Decision:
        arms, st = self.arms, self.state
        est = [arms[i] for i in ksigma_outliers([c.mean for c in self.cs], self.k, self.two_sided)] \
            if all(c.m for c in self.cs) else []
        extra: dict[str, Any] = {"m_theta": self.track.m_theta, "ignored_after_done": self.ignored,
                                 "threshold_track": self.track.result.get("upper_track"),
                                 "threshold_box": self.track.result.get("upper_box")}
        if self.two_sided:
            extra["lower_threshold"] = self._th_l
            extra["lower_threshold_interval"] = self._l
        th = None if math.isnan(self._th_u) else self._th_u
        return Decision(outliers=[a for a, s in zip(arms, st) if s == 1],
                        normals=[a for a, s in zip(arms, st) if s == -1],
                        undecided=[a for a, s in zip(arms, st) if s == 0], estimated_outliers=est,
                        threshold=th, threshold_interval=self._u if self.track.m_theta else None,
                        pulls=self.T, done=self.done, extra=extra)

    # -- persistence -----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {"policy": self.name, "arms": list(self.arms), "k": self.k, "delta": self.delta,
                "two_sided": self.two_sided, "arm_share": self.arm_share, "model": self.model.to_dict(),
                "cs": [c.snapshot() for c in self.cs], "track": self.track.snapshot(), "state": list(self.state),
                "n_undecided": self.n_undecided, "T": self.T, "ignored": self.ignored, "key": list(self.key),
                "deferred": list(self.deferred), "q": None if self.q is None else list(self.q)}

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> AnytimeKSigma:
        """Rebuild from :meth:`snapshot` output; a malformed snapshot raises ``ValueError`` naming the field
        (:mod:`streamarms.policies.anytime_snapshot`)."""
        obj, f = anytime_snapshot.restore_arms(cls, state)
        anytime_snapshot.restore_track(obj, f)
        obj._init_derived()
        return obj

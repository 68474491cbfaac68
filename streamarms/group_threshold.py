r"""The k-sigma threshold of a consumer group: per-partition additive totals, merged (issue 13).

Members of one consumer group each own some partitions of the reward topic, hence some of the keys
(arms). The threshold ``theta = mu + k sigma`` is a function of *every* arm's mean, so no member can
compute it alone. It does not need the arms themselves: the anytime-valid interval of
:mod:`streamarms.confidence.threshold` (Howard, Ramdas, McAuliffe, Sekhon, *Time-uniform, nonparametric,
nonasymptotic confidence sequences*, Ann. Statist. 2021; the k-sigma rule of Zhuang, Wang, Wang,
*Identifying outlier arms in multi-armed bandit*, NeurIPS 2017) is computed from per-level totals that
are **sums over arms** (and two maxima). Each member keeps those totals for the arms of each partition
it owns (:class:`PartitionTotals`), publishes them (a compacted topic keyed by group and partition: the
GlobalKTable pattern), and every member merges the latest value of every partition
(:func:`merge_totals`) into the group's interval (:class:`GroupThreshold`).

Why the merged interval is valid
--------------------------------
*Fixed terms.* Arm i adds its terms to level g once, when its count reaches g: functions of its first
g rewards and of its confidence interval at that count, i.e. of a prefix of its row of the reward table.
Once added they never change. The totals of level g over a set of arms are the sum (max) of those
fixed terms over the arms of the set that have reached g.

*Complete levels are exact.* The partitions split the keys, so the arm sets of the partitions are
disjoint and cover the group's n arms. If the merged count of level g is n, every arm has reached g
and its terms are in exactly one partition's value: the merged totals of level g are *the same sums*
a single process holding every arm computes at level g (up to the order of floating-point addition),
whenever each partition's value was recorded or published. A partition value that is stale (older)
holds a subset of the arms at each level, so a level it is missing arms of is simply not complete yet:
staleness delays the group's ``m_theta``, it never corrupts a level. A partition that moves to another
member keeps its key (group/partition): the new owner's value replaces the old one, nothing is summed
twice.

*Every level at once.* The single-process derivation shows that on one event of probability
``>= 1 - alpha`` (the arms' sequences, the linear term's uniform boundary, the quadratic and bilinear
bounds) the interval of *every* level contains theta at once -- that is what "anytime-valid" buys.
So the interval of any complete level, whichever moment its totals were published at, and the
intersection of any set of complete levels, contain theta on that same event: totals recorded at
different moments combine at their common level. The group's interval is that intersection over all
complete levels, in increasing order, exactly as :class:`~streamarms.confidence.threshold.ThresholdTrack`
forms it. What a group cannot use is the box refinement (``min_sd_over_box`` and the box bound on the
linear variance need every arm's current interval, which is not additive): the group interval is the
track's without ``box`` -- valid, a little wider.

*Staleness.* A member decides with the merged view it has; the view lags the truth by at most the
publish interval plus the stats topic's end-to-end delay (:func:`staleness`: the age of the oldest
partition value, exported as a metric). A lagging view has a smaller
``m_theta`` and a wider (still valid) interval: staleness costs samples, never correctness.

All partitions must use the same ``n`` (the group's arm count of the episode), ``k``, ``alpha`` and
reward range: the terms depend on them. :func:`merge_totals` refuses values that disagree.

>>> import random
>>> from streamarms.confidence import BetaBinomialCS
>>> rng = random.Random(1); means = [0.3] * 19 + [0.8]
>>> spec = dict(n=20, k=2.0, alpha=0.05, low=0.0, high=1.0, bernoulli=True)
>>> parts = {p: PartitionTotals(**spec) for p in range(3)}       # arm i lives in partition i % 3
>>> arms = [BetaBinomialCS(0.0025) for _ in means]
>>> for _ in range(400):
...     for i, p in enumerate(means):
...         arms[i].update(float(rng.random() < p))
...         parts[i % 3].record(arms[i].n, arms[i].s, *arms[i].interval())
>>> g = GroupThreshold(**spec)
>>> g.update(merge_totals([parts[p].value() for p in range(3)]))
>>> g.m_theta, [round(x, 3) for x in g.upper()]
(370, [0.451, 0.574])
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .confidence.threshold import _FIELDS, ThresholdTrack, threshold_bounds

__all__ = ["PartitionTotals", "GroupThreshold", "merge_totals", "stats_key", "staleness", "group_finished",
           "spec_mismatch"]

_MAX_FIELDS = frozenset(i for i, f in enumerate(_FIELDS) if f in ("vmax", "smax"))
_W = _FIELDS.index("sum_w")
_SPEC = ("n", "k", "alpha", "two_sided", "low", "high", "sigma_x", "bernoulli", "formula")
#: the version of what a value's totals mean: the levels grid, the fields and the interval's formula. Bump
#: it when one of them changes, so that members of two versions leave each other's values out (with a
#: warning) instead of merging totals that mean different things. A published value without it is of
#: version 1; a member's own spec (the constructors' keyword arguments, which do not name it) is of this one.
FORMULA = 1
_VALUE_DEFAULTS = {"formula": 1}  # what a published value without the field means


def stats_key(group: str, partition: str) -> str:
    """The stats topic's key of a partition's totals: ``group/partition``.

    >>> stats_key("detectors", "rewards:3")
    'detectors/rewards:3'
    """
    return f"{group}/{partition}"


class _Accumulator(ThresholdTrack):
    """A :class:`ThresholdTrack` that only adds terms: it never advances nor drops a level (its arms are
    part of the group's n; the merge decides which levels are complete)."""

    def _advance(self, g: int, box: Any = None) -> None:
        return None


class PartitionTotals:
    """The additive per-level totals of the arms of one partition (module docstring).

    ``record(g, S, lo, hi, S2=None)`` whenever an arm of the partition reaches a count ``g`` (other counts
    are ignored, so it may be called on every sample); ``value()`` is the JSON-able value published to the
    stats topic; ``restore(value)`` continues from one.

    >>> t = PartitionTotals(n=4, k=1.0, alpha=0.1, low=0.0, high=1.0)
    >>> t.record(1, 1.0, 0.1, 1.0); t.record(2, 1.0, 0.05, 0.95); t.record(9, 3.0, 0.0, 1.0)
    >>> sorted(t.value()["totals"]), t.value()["totals"]["1"][0]
    (['1', '2'], 1.0)
    """

    def __init__(self, *, n: int, k: float, alpha: float, two_sided: bool = False, low: float | None = None,
                 high: float | None = None, sigma_x: float | None = None, bernoulli: bool = False) -> None:
        self.track = _Accumulator(n, k, alpha, two_sided=two_sided, low=low, high=high, sigma_x=sigma_x,
                                  bernoulli=bernoulli)
        self.spec = {"n": int(n), "k": float(k), "alpha": float(alpha), "two_sided": bool(two_sided), "low": low,
                     "high": high, "sigma_x": sigma_x, "bernoulli": self.track.bernoulli, "formula": FORMULA}
        self.levels = self.track.levels

    def record(self, g: int, S: float, lo: float, hi: float, S2: float | None = None) -> None:
        if g in self.levels:
            self.track.record(g, S, lo, hi, S2=S2)

    def value(self, **extra: Any) -> dict[str, Any]:
        """The published value: the spec, every level's totals, and ``extra`` (member, time, offsets)."""
        return {**self.spec, "totals": {g: list(t) for g, t in self.track.totals.items()}, **extra}

    def restore(self, value: dict[str, Any]) -> None:
        _check_spec(self.spec, value)
        self.track.totals = {str(g): [float(x) for x in t] for g, t in value["totals"].items()}


def spec_mismatch(spec: dict[str, Any], value: dict[str, Any]) -> str | None:
    """The first field of the threshold spec on which a published ``value`` disagrees with ``spec``, as a
    sentence; ``None`` if they agree (values of different specs must not be merged).

    >>> print(spec_mismatch({"n": 4, "k": 2.0}, {"n": 99, "k": 2.0}))
    group stats disagree on n: 99 vs 4 (every member of a group must run with the same n, k, alpha and reward range)
    >>> spec_mismatch({"n": 4}, {"n": 4}) is None
    True
    >>> print(spec_mismatch({"n": 4, "formula": 1}, {"n": 4, "formula": 2}))
    group stats disagree on formula: 2 vs 1 (a member of another streamarms version: upgrade every member)
    """
    for f in _SPEC:
        got = value.get(f, _VALUE_DEFAULTS.get(f))
        want = spec.get(f, FORMULA if f == "formula" else None)
        if got != want:
            why = ("a member of another streamarms version: upgrade every member" if f == "formula" else
                   "every member of a group must run with the same n, k, alpha and reward range")
            return f"group stats disagree on {f}: {got!r} vs {want!r} ({why})"
    return None


def _check_spec(spec: dict[str, Any], value: dict[str, Any]) -> None:
    bad = spec_mismatch(spec, value)
    if bad is not None:
        raise ValueError(bad)


def merge_totals(values: Iterable[dict[str, Any]], above: int = 0) -> dict[str, Any]:
    """The group's totals: per level, the sum over partition values (max for ``vmax``/``smax``; the sample
    variances' sum stays "missing" if any partition lacks it). Values are merged in the order given:
    pass them in a fixed order (e.g. sorted by key) for bit-identical results on every member. Levels
    ``<= above`` are left out (a :class:`GroupThreshold` at ``m_theta = above`` has used them already).

    >>> a = {"n": 3, "k": 1.0, "alpha": 0.1, "totals": {"1": [2.0] + [0.5] * 12}}
    >>> b = {"n": 3, "k": 1.0, "alpha": 0.1, "totals": {"1": [1.0] + [0.25] * 12, "2": [1.0] + [0.1] * 12}}
    >>> m = merge_totals([a, b]); m["totals"]["1"][:5], m["totals"]["2"][0]
    ([3.0, 0.75, 0.75, 0.75, 0.5], 1.0)
    """
    out: dict[str, Any] | None = None
    totals: dict[str, list[float]] = {}
    for v in values:
        if out is None:
            out = {f: v.get(f, _VALUE_DEFAULTS.get(f)) for f in _SPEC}
        else:
            _check_spec(out, v)
        for g, t in v["totals"].items():
            if above and int(g) <= above:
                continue
            acc = totals.get(g)
            if acc is None:
                totals[g] = [float(x) for x in t]
                continue
            for i, x in enumerate(t):
                if i in _MAX_FIELDS:
                    acc[i] = max(acc[i], x)
                elif i == _W and (acc[i] < 0.0 or x < 0.0):
                    acc[i] = -1.0
                else:
                    acc[i] += x
    if out is None:
        return {"totals": {}}
    out["totals"] = totals
    return out


class GroupThreshold:
    """The group's threshold interval from merged totals (module docstring): ``update(merged)`` processes
    every complete level above :attr:`m_theta` in increasing order and intersects their intervals."""

    def __init__(self, *, n: int, k: float, alpha: float, two_sided: bool = False, low: float | None = None,
                 high: float | None = None, sigma_x: float | None = None, bernoulli: bool = False) -> None:
        self.n, self.k, self.alpha, self.two_sided = int(n), float(k), float(alpha), bool(two_sided)
        self.span = (high - low) if low is not None and high is not None else None
        self.sigma_x = sigma_x
        self.spec = {"n": self.n, "k": self.k, "alpha": self.alpha, "two_sided": self.two_sided, "low": low,
                     "high": high, "sigma_x": sigma_x, "bernoulli": bool(bernoulli) and low == 0.0 and high == 1.0,
                     "formula": FORMULA}
        self.m_theta = 0
        self.result: dict[str, tuple[float, float]] = {}
        #: the point estimates ``mu_hat +- k sd_hat`` at :attr:`m_theta`
        self.estimates: dict[str, float] = {}

    def update(self, merged: dict[str, Any]) -> None:
        if not merged.get("totals"):
            return
        _check_spec(self.spec, merged)
        done = sorted(int(g) for g, t in merged["totals"].items() if t[0] >= self.n and int(g) > self.m_theta)
        for g in done:
            t = dict(zip(_FIELDS, merged["totals"][str(g)]))
            res = threshold_bounds(g, self.n, self.k, self.alpha, sum_y=t["sum_y"], sum_y2=t["sum_y2"],
                                   sum_r2=t["sum_r2"], vmax=t["vmax"], sum_lo=t["sum_lo"], sum_hi=t["sum_hi"],
                                   sum_c=t["sum_c"], sum_c2=t["sum_c2"], sum_h2=t["sum_h2"], span=self.span,
                                   sigma_x=self.sigma_x, two_sided=self.two_sided, sum_lq=t["sum_lq"],
                                   sum_w=None if t["sum_w"] < 0.0 else t["sum_w"], smax=t["smax"],
                                   bilinear="variance")  # as AnytimeKSigma's track: the group's single process
            for side in ("upper", "lower"):
                if side in res:
                    self.estimates[side] = float(res[side + "_estimate"])
                    lo, hi = (float(x) for x in res[side])
                    p_lo, p_hi = self.result.get(side, (-math.inf, math.inf))
                    lo, hi = max(lo, p_lo), min(hi, p_hi)
                    self.result[side] = (lo, max(hi, lo))
            self.m_theta = g

    def upper(self) -> tuple[float, float]:
        return self.result.get("upper", (-math.inf, math.inf))

    def lower(self) -> tuple[float, float]:
        return self.result.get("lower", (-math.inf, math.inf))


def group_finished(values: Iterable[dict[str, Any]], n: int | None) -> bool:
    """Whether a group episode of ``n`` keys is over by these partition values (of that episode): their key
    counts sum to ``n`` and none reports an undecided key (undecided counts only decrease, so a stale value
    never ends an episode early).

    >>> group_finished([{"keys": 3, "undecided": 0}, {"keys": 2, "undecided": 0}], 5)
    True
    >>> group_finished([{"keys": 3, "undecided": 1}, {"keys": 2, "undecided": 0}], 5), group_finished([], None)
    (False, False)
    """
    vals = list(values)
    return (n is not None and sum(int(v.get("keys", 0)) for v in vals) == n
            and all(int(v.get("undecided", 1)) == 0 for v in vals))


def staleness(values: Iterable[dict[str, Any]], now: float) -> float:
    """Seconds since the oldest of the partition values was published (their ``time``): how far behind the
    group's view may be. ``inf`` when there is none.

    >>> staleness([{"time": 10.0}, {"time": 12.5}], now=13.0)
    3.0
    """
    times = [float(v["time"]) for v in values if "time" in v]
    return max(0.0, now - min(times)) if times else math.inf

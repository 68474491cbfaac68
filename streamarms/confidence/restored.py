"""Checks of a restored confidence sequence's and threshold track's state.

A checkpoint is signed, but a signed one may still be tampered with and re-signed, or written by a bug: a
state no run can reach (a count of -5, an ``alpha`` of 5, a track's sum of means of 1e308 over one arm) must be
refused at restore with a ``ValueError`` naming the field, not met later as a crash deep inside or, worse, as a
confident wrong answer (a drill's tampered track "decided" every key normal after 27 samples). What is checked
is what every reachable state satisfies: counts are whole and not negative, numbers are not NaN, a probability is
in (0, 1), and a sum of rewards (or of means) lies within the reward range times its count.

>>> from streamarms.confidence import BetaBinomialCS, sequence_from_snapshot
>>> c = BetaBinomialCS(0.05, arm="a"); c.update(1)
>>> sequence_from_snapshot(dict(c.snapshot(), m=-5))
Traceback (most recent call last):
...
ValueError: BetaBinomialCS snapshot's 'm' is -5: a whole number >= 0 expected
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

#: a sum may pass its range by rounding: each of its n additions may be off by half an ulp of the running sum, so
#: ``n eps |total|`` bounds the drift (0.3 added 6e7 times drifts past a fixed 1e-9 of the total)
_SLACK = 1e-9
_EPS = 2.0 ** -52


def sum_slack(total: Any, count: Any) -> Any:
    """How far a sum of ``count`` floats (``total``; numbers or numpy arrays) may pass its range by rounding.

    >>> float(sum_slack(1.0, 0)), bool(sum_slack(1.8e7, 6e7) > 1.8e7 * 1e-8)
    (1e-09, True)
    """
    return (_SLACK + np.asarray(count, dtype=np.float64) * _EPS) * np.maximum(1.0, np.abs(total))


def whole(owner: str, name: str, v: Any, *, at_least: int = 0, at_most: float = math.inf) -> int:
    """``v`` as an int when it is a whole number in ``[at_least, at_most]``; ``ValueError`` naming it else."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v == int(v)
    if not ok or not at_least <= v <= at_most:
        bound = f" and <= {at_most:g}" if at_most < math.inf else ""
        raise ValueError(f"{owner}'s {name!r} is {str(v)[:40]}: a whole number >= {at_least}{bound} expected")
    return int(v)


def number(owner: str, name: str, v: Any, *, finite: bool = True, positive: bool = False) -> float:
    """``v`` as a float when it is a number (finite unless ``finite=False``; never NaN; > 0 if ``positive``)."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)
    if ok and finite:
        ok = math.isfinite(v)
    if ok and positive:
        ok = v > 0
    if not ok:
        what = "a number > 0" if positive else "a finite number" if finite else "a number (not NaN)"
        raise ValueError(f"{owner}'s {name!r} is {str(v)[:40]}: {what} expected")
    return float(v)


def probability(owner: str, name: str, v: Any) -> float:
    """``v`` when it is a number in (0, 1) (a confidence level's alpha)."""
    if not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 < v < 1.0):
        raise ValueError(f"{owner}'s {name!r} is {str(v)[:40]}: a number in (0, 1) expected")
    return float(v)


def within(owner: str, name: str, total: float, count: float, low: float | None, high: float | None) -> None:
    """A sum of ``count`` values of ``[low, high]`` lies in ``[count low, count high]`` (either end ``None``:
    unbounded)."""
    slack = float(sum_slack(total, count))
    if (low is not None and total < count * low - slack) or (high is not None and total > count * high + slack):
        raise ValueError(f"{owner}'s {name!r} is {total:g}: {count:g} values of [{low}, {high}] cannot sum to it")


def check_sequence(seq: Any, state: dict[str, Any]) -> None:
    """The fields every confidence sequence has (``alpha``, ``arm``, ``m``, ``s``, ``lo``, ``hi``, the range),
    present and in range, and every other number of its snapshot ``state`` not NaN (a sum may be infinite only
    when the rewards are unbounded: 1e308 twice)."""
    owner = f"{type(seq).__name__} snapshot"
    for name in ("alpha", "arm", "m", "s", "lo", "hi"):
        if not hasattr(seq, name):
            raise ValueError(f"{owner} has no {name!r}")
    probability(owner, "alpha", seq.alpha)
    if not isinstance(seq.arm, str):
        raise ValueError(f"{owner}'s 'arm' is {str(seq.arm)[:40]}: a string expected")
    whole(owner, "m", seq.m)
    low, high = seq.low, seq.high
    number(owner, "s", seq.s, finite=low is not None and high is not None)
    for name, v in (("low", low), ("high", high)):
        if v is not None:
            number(owner, name, v)
    if low is not None and high is not None and not low < high:
        raise ValueError(f"{owner}'s range [{low}, {high}] is empty")
    within(owner, "s", seq.s, seq.m, low, high)
    for name, v in state.items():
        if isinstance(v, float) and math.isnan(v):
            raise ValueError(f"{owner}'s {name!r} is NaN")


def check_track(track: Any, fields: tuple[str, ...], infinite: dict[int, float]) -> None:
    """A restored :class:`~streamarms.confidence.threshold.ThresholdTrack`: its settings, its level ``m_theta``,
    and each pending level's totals (``fields``, in order; ``infinite``: the totals an unbounded interval may make
    infinite, with their sign): a count in ``[0, n]``, numbers, and the sums of the arms' means within the reward
    range times the count."""
    owner = "the threshold track's snapshot"
    for name in ("n", "k", "alpha", "m_theta", "low", "high", "sigma_x", "two_sided"):
        if not hasattr(track, name):
            raise ValueError(f"{owner} has no {name!r}")
    n = whole(owner, "n", track.n, at_least=2)
    number(owner, "k", track.k, positive=True)
    probability(owner, "alpha", track.alpha)
    whole(owner, "m_theta", track.m_theta)
    low, high = track.low, track.high
    if (low is None) != (high is None) or (low is not None and not number(owner, "low", low) < number(owner, "high", high)):
        raise ValueError(f"{owner}'s range [{low}, {high}] is no range")
    if track.sigma_x is not None:
        number(owner, "sigma_x", track.sigma_x, positive=True)
    if not isinstance(track.two_sided, bool):
        raise ValueError(f"{owner}'s 'two_sided' is {str(track.two_sided)[:40]}: true or false expected")
    for level, t in track.totals.items():
        at = f"level {level}"
        g = whole(owner, at, int(level) if isinstance(level, str) and level.isdigit() else level, at_least=1)
        if g < track.m_theta or g not in track.levels:
            raise ValueError(f"{owner} has totals at {at}, which is no pending level of its grid")
        if not isinstance(t, list) or not 10 <= len(t) <= len(fields) or len(t) == 12:
            raise ValueError(f"{owner}'s totals at {at} are {str(t)[:60]}: {len(fields)} numbers expected")
        cnt = whole(owner, f"count at {at}", t[0], at_most=n)
        for i, v in enumerate(t[1:], 1):
            number(owner, f"{fields[i]} at {at}", v, finite=i not in infinite)
            if math.isinf(v) and math.copysign(1.0, v) != infinite[i]:
                raise ValueError(f"{owner}'s {fields[i]!r} at {at} is {v}")
        if low is not None:
            within(owner, f"sum_y at {at}", t[1], cnt, low, high)
            within(owner, f"sum_y2 at {at}", t[2], cnt, 0.0, max(low * low, high * high))

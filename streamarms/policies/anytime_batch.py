"""The batch path of :class:`~streamarms.policies.anytime.AnytimeKSigma` (``update_batch``): skip ahead
with numpy over the rewards that cannot make an event, exactly as ``update`` reward by reward.

**Why skipping ahead is exact.** Between two rewards that can make an event, a reward of arm i only
adds to ``m_i``, ``s_i`` and ``T``, and leaves ``key_i``, ``rp_i`` and a heap entry that the next
reward of arm i overwrites (the heap is read through ``key``: stale entries are skipped, so only
an arm's last entry matters). A reward can make an event only (a) when ``m_i`` reaches a grid
level above ``m_theta`` (the threshold track may advance) or (b) when the proxy filter of
``update`` lets the exact test run (``mean_i -+ rp_i / 2`` clear of the threshold's
interval). Both are found for every reward of the batch at once (counts and sums by arm, a
cumulative sum), (b) with a margin of 1e-9 so numpy's rounding can only add candidates; the
rewards before the first candidate are applied in one pass (sums added in order, so the floats
are the same), the arms' keys computed once with the same formulas as ``update``; the
candidate itself goes through ``update``. Only for the Bernoulli model (the Beta-Binomial
sequence depends on counts and sums alone), one-sided, and at least ``_SKIP_MIN_ARMS`` arms;
otherwise the per-reward default.

These functions read and write the policy's own state (one concept: the policy's ingestion of a
batch), kept apart so that the policy class stays one screenful of rules (issue 11: no class over 400 lines).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..confidence.threshold import grid_levels
from .base import Event, Policy, arm_indices

#: ``pol`` below is an ``AnytimeKSigma`` (typed ``Any``: importing it here would make an import cycle)

__all__ = ["update_batch", "candidates", "skip_ahead"]

_LEVEL_ARRAY = np.array(grid_levels(), dtype=np.float64)

_LGAMMA = np.frompyfunc(math.lgamma, 1, 1)
#: below this many arms the candidates are too dense for skipping ahead to pay (measured:
#: ``benchmarks/policy_batch_speed.py``, n = 20 about 2x slower than update(); n = 1e3 within -20%..+5%)
_SKIP_MIN_ARMS = 256


def _may_cross(m: np.ndarray, s: np.ndarray, v: float, above: bool, cached: np.ndarray, c0: Any) -> np.ndarray:
    """Where ``BetaBinomialCS.above(v)`` (``below(v)`` if not ``above``) may hold at counts ``m``, sums
    ``s`` and cached bound ``cached`` (``lo``, resp. ``hi``): its tests, the log-mixture with a margin."""
    if above:
        if v < 0.0:
            return np.ones(len(m), dtype=bool)
        sure = cached > v
        open_ = ~((m == 0) | (v >= 1.0) | (s <= v * m))
        if v <= 0.0:
            return sure | open_
    else:
        if v > 1.0:
            return np.ones(len(m), dtype=bool)
        sure = cached < v
        open_ = ~((m == 0) | (v <= 0.0) | (s >= v * m))
        if v >= 1.0:
            return sure | open_
    if not open_.any():
        return sure
    mm, ss = m[open_], s[open_]
    lm = (_LGAMMA(c0.a + ss).astype(np.float64) + _LGAMMA(c0.b + mm - ss).astype(np.float64)
          - _LGAMMA(c0.a + c0.b + mm).astype(np.float64) - c0._lb0 - ss * math.log(v) - (mm - ss) * math.log1p(-v))
    out = sure.copy()
    out[open_] |= lm >= c0._c - 1e-7
    return out



def update_batch(pol: Any, arms: Sequence[int], rewards: Sequence[float]) -> tuple[int, list[Event]]:
    """``AnytimeKSigma.update_batch`` (its docstring says why this is exact)."""
    checked = arm_indices(arms, len(pol.arms), len(rewards))  # (ValueError for a bad index: nothing ingested)
    if pol.model.name != "bernoulli" or pol.two_sided or len(rewards) < 16 or len(pol.arms) < _SKIP_MIN_ARMS:
        return Policy._update_each(pol, arms, rewards)
    try:
        x = np.asarray(rewards, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # not numbers: found reward by reward
        return Policy._update_each(pol, arms, rewards)
    a = np.asarray(checked, dtype=np.intp)
    if x.shape != a.shape or not bool(np.all((x == 0.0) | (x == 1.0))):  # a refused reward: found reward by reward
        return Policy._update_each(pol, arms, rewards)
    if pol.n_undecided == 0:
        pol.ignored += len(x)
        return len(x), []
    al, xl, n = a.tolist(), x.tolist(), len(x)  # plain ints and floats, as update() stores
    pos = 0
    while pos < n:
        cands, level = candidates(pol, a[pos:], x[pos:])
        u = pol._u
        for p, lv in zip((cands + pos).tolist(), level.tolist()):
            if p > pos:
                skip_ahead(pol, al, xl, pos, p)
            events = pol.update(pol.arms[al[p]], xl[p])
            pos = p + 1
            if events:
                return pos, events
            # a new level may move the threshold or narrow the arm's cached interval (which
            # above/below read first): then the candidates after it are found again
            if lv and (pol._u != u or pol.cs[al[p]].lo > u[1] or pol.cs[al[p]].hi < u[0]):
                break
        else:
            skip_ahead(pol, al, xl, pos, n)
            pos = n
    return n, []

def candidates(pol: Any, a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the rewards that may make an event, in order, and whether each reaches a new
    grid level (:meth:`update_batch`): counts and sums by arm at every reward, then (a) a grid
    level above ``m_theta``, (b) the proxy filter of :meth:`update` *and* the Beta-Binomial test
    of :meth:`_classify` (with a margin: numpy's rounding only adds candidates)."""
    n = len(x)
    order = np.argsort(a, kind="stable")
    sa, sx = a[order], x[order]
    new = np.r_[True, sa[1:] != sa[:-1]]
    start = np.flatnonzero(new)
    seg = np.cumsum(new) - 1
    rank = np.arange(n) - start[seg] + 1
    ua = sa[start].tolist()
    cs = pol.cs
    m0 = np.array([cs[i].m for i in ua], dtype=np.float64)
    s0 = np.array([cs[i].s for i in ua], dtype=np.float64)
    cum = np.cumsum(sx)
    base = cum[start] - sx[start]  # the cumulative sum before each arm's first reward
    m = m0[seg] + rank
    sums = s0[seg] + (cum - base[seg])
    level = np.isin(m, _LEVEL_ARRAY) & (m > pol.track.m_theta)
    cand = level.copy()
    und = np.array([pol.state[i] == 0 for i in ua])[seg]
    if und.any():
        mean = sums / m
        var = (mean - pol._vlo) * (pol._vhi - mean) + (pol._vhi - pol._vlo) ** 2 / (m + 1.0)
        half = 0.5 * np.sqrt(2.0 * var * (pol._L + 1.4 * np.log(np.log(2.0 * m) + 1.0)) / m)
        eps = 1e-9
        u_lo, u_hi = pol._u
        f = und & ((mean - half > u_hi - eps) | (mean + half < u_lo + eps))
        if f.any():
            k = np.flatnonzero(f)
            c0 = cs[0]
            lo = np.array([cs[i].lo for i in ua])[seg[k]]
            hi = np.array([cs[i].hi for i in ua])[seg[k]]
            f[k] = (_may_cross(m[k], sums[k], u_hi, True, lo, c0) | _may_cross(m[k], sums[k], u_lo, False, hi, c0))
            cand |= f
    idx = np.flatnonzero(cand)
    pos = order[idx]
    srt = np.argsort(pos, kind="stable")
    return pos[srt], level[idx][srt]

def skip_ahead(pol: Any, arms: list[int], rewards: list[float], start: int, stop: int) -> None:
    """Apply rewards ``[start, stop)``, none of which can make an event (:meth:`update_batch`)."""
    cs, state = pol.cs, pol.state
    touched: dict[int, None] = {}
    for j in range(start, stop):  # sums in arrival order: the same floats as update()
        i = arms[j]
        c = cs[i]
        c.m += 1
        c.s += rewards[j]
        touched[i] = None
    pol.T += stop - start
    if pol._deferred:
        pol._deferred.clear()
        pol.deferred = []
    mt, th_u, L, heap, key, rps = pol.track.m_theta, pol._th_u, pol._L, pol._heap, pol.key, pol._rp
    for i in touched:
        if state[i] != 0:
            continue
        c = cs[i]
        m = c.m
        mean = c.s / m
        var = pol._var(mean, m)
        rps[i] = math.sqrt(2.0 * var * (L + 1.4 * math.log(math.log(2.0 * m) + 1.0)) / m)
        k = abs(mean - th_u) * math.sqrt(m / var) if mt else -math.inf
        key[i] = k
        heapq.heappush(heap, (k, i))
    if len(heap) > 2 * len(pol.arms) + 64:
        pol._heap = [(key[j], j) for j in range(len(pol.arms)) if state[j] == 0]
        heapq.heapify(pol._heap)

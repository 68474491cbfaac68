"""The batch path of :class:`~streamarms.policies.ksigma.WeightedRoundRobin` (``update_batch``): the
rewards that change nothing but counts, sums and schedule are applied with numpy, exactly as ``update``
reward by reward (same floats, same snapshot); every other reward goes through ``update`` itself.

Zhuang, Wang, Wang. *Identifying Outlier Arms in Multi-Armed Bandit*. NeurIPS 2017 ([ZWW17], Alg. 2).

**What a pull does** (``update`` of :mod:`streamarms.policies.ksigma`, Bernoulli rewards, one-sided,
after initialisation, not done): (1) counts, sums and the running sums ``sy``, ``syy``, ``sinv``
change by one subtraction and one addition each; (2) inside the open z window the bracket sums
``bsums`` change by one term each (``_window_update``); (3) the stopping certificate's pointer
moves to the first certified arm that is not pulled since and whose value exceeds
``D = |theta_hat - theta_0| - r_lo`` (``_check_stop``); (4) WRR's schedule advances when the current
arm reached ``c_i``; (5) the pulled arm is reported when its Eq. 2 interval left the threshold's.

**Why skipping ahead is exact.** (1) and (2) are sequences of float additions: each term is computed
elementwise with the same formula (IEEE arithmetic and ``sqrt`` are correctly rounded in numpy as in
Python), and ``np.cumsum`` adds in order, so every intermediate value -- and the context
``(mu, sigma, theta_hat, r_lo)`` from it -- is the same float ``update`` computes. Per-arm sums are
counts of ones (Bernoulli): integers, exact in any order. A reward goes through ``update`` (a
*candidate*) when it may do anything else: the window ends (``T > win_hi``: the radii are rebuilt),
``sigma`` is below the floor (the bracket gives up), the certificate runs out (a refresh), or the
pulled arm may be inactive. The last test is conservative: the exact Eq. 2 margin uses the arm's
radius at z(delta'_T), which is at least its radius at the window's lower z (z grows with T, the
Agresti-Coull radius grows with z), so ``|y_i - theta_hat| - beta_i(z_lo) - r_lo < -1e-9`` proves
the arm active (``m_hi < 0`` in ``_arm_active``) -- nothing to report. (3) and (4) can change only
at a reward of the pointed arm or of the current arm, or where ``D`` reaches the pointed value: a
short loop visits those rewards (found with numpy) and stops at a candidate too. Only then is the
state written, for the rewards before the first candidate; the candidate goes through ``update``,
and the skip resumes after it (``tests/policies/test_wrr_batch.py`` compares events, refusals and
snapshots). Initialisation (line 1 of Alg. 2, before every arm has a sample) only ingests: applied
the same way up to the reward that completes it.

**One reward at a time** (:func:`update_one`, what ``update`` runs first): the same candidate tests
for a single reward, the common pull in one fused step of scalar arithmetic (the same operations in
the same order as the rules), including the certificate's refresh; a candidate goes through the rules.
This is what the plan-following scheduler feeds (one reward per request), and the batch path's
fallback below ``_MIN_ARMS`` arms. Measured at n = 20 (``zww17_example``, rewards in WRR's own
order, process time, quiet machine): 22 us per ``update`` before, 8.5 us with it, 7.2 us with
:class:`~streamarms.bounds.AgrestiCoullRadius` inlined (load ~3.5).

These functions read and write the policy's own state (one concept: the policy's ingestion of a
batch), kept apart so that the policy class stays a screenful of rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from .. import bounds
from .base import Event, Policy, arm_indices

__all__ = ["update_batch", "update_one", "CTX_LAZY"]

#: ``_ctx_T`` after a fused pull: the context ``(mu, sigma, theta_hat, ..., r_lo, r_hi)`` at ``T`` is not
#: stored; ``_context()`` computes it from the state when it is first read (the snapshot reads it)
CTX_LAZY = -2

#: first chunk size (doubled while chunks hold no candidate, halved when one does)
_CHUNK0, _CHUNK_MAX = 1024, 16384
#: below this many arms candidates are dense and chunks short: update() one by one is faster (measured,
#: random arms, batches of 1000, process time: n = 20 0.6x, n = 32 1.0x, n = 48 1.6x, n = 128 3.7x)
_MIN_ARMS = 40
_ACR = bounds.AgrestiCoullRadius  # (update_one inlines its call)
_sqrt = math.sqrt
#: the conservative activity margin (far above the ~1e-16 relative rounding of the quantities)
_EPS = 1e-9
_first = itemgetter(0)


def fast_ok(pol: Any) -> bool:
    return (pol.model.name == "bernoulli" and pol._radius_kind == "delta_method" and not pol.two_sided
            and not pol._transforms and type(pol).__name__ == "WeightedRoundRobin")


def update_batch(pol: Any, arms: Sequence[int], rewards: Sequence[float]) -> tuple[int, list[Event]]:
    """``WeightedRoundRobin.update_batch`` (the module docstring says why this is exact)."""
    checked = arm_indices(arms, pol.n, len(rewards))  # (ValueError for a bad index: nothing ingested)
    if not fast_ok(pol) or len(rewards) < 16 or pol.n < _MIN_ARMS:
        return Policy._update_each(pol, arms, rewards)
    try:
        x = np.asarray(rewards, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # (OverflowError: an integer beyond the floats)
        return Policy._update_each(pol, arms, rewards)
    a = np.asarray(checked, dtype=np.intp)
    if x.shape != a.shape:  # (a reward that is a list, say)
        return Policy._update_each(pol, arms, rewards)
    bad = ~((x == 0.0) | (x == 1.0))
    if bad.any():  # the rewards before the first refused one; update() then says why it is refused
        k = int(np.argmax(bad))
        a, x = a[:k], x[:k]
    n = len(x)
    names = pol.arms
    pos, size = 0, _CHUNK0
    while pos < n:
        if pol._done:
            pol._ignored_after_done += n - pos
            return n, []
        if not pol.initialised:
            pos += _initialise(pol, a[pos:], x[pos:])
        elif pol._cert_idx and pol.T < pol._win_hi:
            end = min(n, pos + size, pos + pol._win_hi - pol.T)  # a new z window: a candidate
            applied, cand = _skip(pol, a[pos:end], x[pos:end])
            pos += applied
            if not cand:
                size = min(_CHUNK_MAX, size * 2)
                continue
            size = max(64, size // 2)
        if pos < n:
            events = pol.update(names[int(a[pos])], float(x[pos]))
            pos += 1
            if events or pol._done:
                return pos, events
    return n, []


def _initialise(pol: Any, a: np.ndarray, x: np.ndarray) -> int:
    """Line 1 of Alg. 2 (a sample of every arm): ``update`` only ingests until the reward that gives the
    last arm its first sample (which goes through ``update``). Applies the rewards before it; returns
    how many."""
    nc = len(a)
    order, sa, start, _ = _sort_by_arm(a, pol.n)
    unpulled = pol._m_np[sa[start]] == 0
    if int(unpulled.sum()) == pol._n_unpulled:  # the chunk completes the initialisation
        J = int(order[start[unpulled]].max())
    else:
        J = nc
    if J == 0:
        return 0
    a, x = a[:J], x[:J]
    m_new, s_new = _counts(pol, a, x)
    m_old, s_old = m_new - 1.0, s_new - x
    fresh = m_old == 0.0
    yo = np.where(fresh, 0.0, s_old / np.where(fresh, 1.0, m_old))  # no subtraction: -0.0 adds nothing
    yn = s_new / m_new
    io = np.where(fresh, 0.0, 1.0 / np.where(fresh, 1.0, m_old))
    pol._sy, pol._syy, pol._sinv = _running(pol, yo, yn, io, 1.0 / m_new)[-1].tolist()
    pol._n_unpulled -= int(fresh.sum())  # each arm's first reward is fresh once
    arms, last_rev = np.unique(a[::-1], return_index=True)
    _store_counts(pol, arms, m_new[J - 1 - last_rev], s_new[J - 1 - last_rev])
    pol.T += J
    return J


def _counts(pol: Any, a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each reward's arm count and sum after it, in the order of ``a``."""
    order, sa, start, seg = _sort_by_arm(a, pol.n)
    m_s, s_s = _sorted_counts(pol, x[order], sa, start, seg)
    inv = np.empty(len(a), dtype=np.intp)
    inv[order] = np.arange(len(a))
    return m_s[inv], s_s[inv]


def _running(pol: Any, yo: np.ndarray, yn: np.ndarray, io: np.ndarray, inew: np.ndarray) -> np.ndarray:
    """``(sy, syy, sinv)`` after each reward, as ``_ingest`` updates them: ``v -= old term`` then
    ``v += new term`` (``a - b`` is ``a + (-b)`` in IEEE arithmetic; a 0.0 old term -- an arm's first
    sample, which ``_ingest`` does not subtract -- adds -0.0, which changes nothing). One cumsum per
    column: sequential additions, the same floats."""
    u = np.empty((2 * len(yo) + 1, 3))
    u[0] = (pol._sy, pol._syy, pol._sinv)
    u[1::2, 0], u[2::2, 0] = -yo, yn
    u[1::2, 1], u[2::2, 1] = -(yo * yo), yn * yn
    u[1::2, 2], u[2::2, 2] = -io, inew
    return np.cumsum(u, axis=0)[2::2]


def _sorted_counts(pol: Any, sx: np.ndarray, sa: np.ndarray, start: np.ndarray,
                   seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts and sums after each reward, sorted by arm (``_sort_by_arm``): the stored ones plus running
    counts within each arm's segment (sums of 0/1 rewards: exact integers in any order)."""
    cum = np.cumsum(sx)
    m_s = pol._m_np[sa] + (np.arange(len(sa)) - start[seg] + 1)
    s_s = pol._s_np[sa] + (cum - (cum[start] - sx[start])[seg])
    return m_s, s_s


def _sort_by_arm(a: np.ndarray, n_arms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(order, sorted arms, segment starts, segment of each sorted reward): a stable sort by arm (a
    radix sort when the indexes fit 16 bits)."""
    key = a.astype(np.uint16) if n_arms <= 65536 else a
    order = np.argsort(key, kind="stable")
    sa = a[order]
    new = np.empty(len(a), dtype=bool)
    new[0] = True
    np.not_equal(sa[1:], sa[:-1], out=new[1:])
    return order, sa, np.flatnonzero(new), np.cumsum(new) - 1


def _skip(pol: Any, a: np.ndarray, x: np.ndarray) -> tuple[int, bool]:
    """Apply the rewards of ``a, x`` up to the first candidate; returns (how many, a candidate follows)."""
    nc, n = len(a), pol.n
    # per-arm counts and sums after each reward (stable sort by arm, then running counts)
    order, sa, start, seg = _sort_by_arm(a, n)
    m_s, s_s = _sorted_counts(pol, x[order], sa, start, seg)
    rn_lo_s = pol._rfn_lo(m_s, s_s)
    rn_hi_s = pol._rfn_hi(m_s, s_s)
    # each reward's previous radius of its arm: the stored one (first reward of the arm here), else
    # the one its previous reward here computed
    ua = sa[start]
    rads = _Radii(pol, ua)
    first_of_arm = np.zeros(nc, dtype=bool)
    first_of_arm[start] = True
    ro_lo_s = np.where(first_of_arm, rads.lo[ua][seg], np.roll(rn_lo_s, 1))
    ro_hi_s = np.where(first_of_arm, rads.hi[ua][seg], np.roll(rn_hi_s, 1))
    inv = np.empty(nc, dtype=np.intp)
    inv[order] = np.arange(nc)
    m_new, s_new = m_s[inv], s_s[inv]
    m_old, s_old = m_new - 1.0, s_new - x
    yo, yn = s_old / m_old, s_new / m_new
    run = _running(pol, yo, yn, 1.0 / m_old, 1.0 / m_new)
    sy, syy = run[:, 0], run[:, 1]
    # the z window's bracket sums (_window_update): one term per reward and sum
    rn_lo, ro_lo, rn_hi, ro_hi = rn_lo_s[inv], ro_lo_s[inv], rn_hi_s[inv], ro_hi_s[inv]
    w = np.empty((nc + 1, 8))
    w[0] = pol._bsums
    for off, rn, ro in ((0, rn_lo, ro_lo), (4, rn_hi, ro_hi)):
        rn2, ro2 = rn * rn, ro * ro
        w[1:, off] = rn - ro
        w[1:, off + 1] = rn2 - ro2
        w[1:, off + 2] = yn * rn2 - yo * ro2
        w[1:, off + 3] = yn * yn * rn2 - yo * yo * ro2
    bsq = np.cumsum(w, axis=0)[1:]
    # the context of _check_stop at every T (ksigma_confident._context / _bracket_value, same formulas)
    mu = sy / n
    var = syy / n - mu * mu
    sigma = np.where(var > 0.0, np.sqrt(np.maximum(var, 0.0)), 0.0)
    floor = sigma < pol.SIGMA_FLOOR
    sig = np.where(floor, 1.0, sigma)
    hi = mu + pol.k * sigma
    b = 1.0 * pol.k / (n * sig)
    c0 = 1.0 / n - b * mu
    v = c0 * c0 * bsq[:, 1] + 2.0 * c0 * b * bsq[:, 2] + b * b * bsq[:, 3]
    r_lo = np.sqrt(np.maximum(v, 0.0)) * (1.0 - 1e-9)
    D = np.abs(hi - pol._cert_hi0) - r_lo
    sure = np.abs(yn - hi) - rn_lo - r_lo < -_EPS
    rep = np.frombuffer(pol._reported, dtype=np.uint8)
    cand = floor | (~sure & (rep[a] == 0))  # (the chunk ends with the z window: update() opens the next)
    first = int(np.argmax(cand)) if cand.any() else nc
    # certificate pointer and WRR schedule: only where a reward pulls the pointed arm or the current
    # arm, or D reaches the pointed value, can they change; elsewhere they stay (no pulled arm passes)
    J = _follow(pol, a, first, D, m_new, sure, (ua, order[start]))
    if J == 0:
        return 0, True
    if J == nc:  # each arm's last reward: the end of its segment
        arms, last = ua, order[np.r_[start[1:] - 1, nc - 1]]
    else:
        arms, last_rev = np.unique(a[J - 1::-1], return_index=True)
        last = J - 1 - last_rev
    pol._pulled_since.update(arms.tolist())
    rads.store(arms, rn_lo[last], rn_hi[last])
    _store_counts(pol, arms, m_new[last], s_new[last])
    pol._sy, pol._syy, pol._sinv = run[J - 1].tolist()
    pol._bsums = bsq[J - 1].tolist()
    pol.T += J
    pol._ctx_T = -1
    pol._context()  # as update's last _check_stop left it
    return J, J < nc


def _dense(pol: Any, touched: int) -> bool:
    """Most arms touched: rebuild a list at C speed (``tolist``) rather than store items one by one."""
    return 8 * touched > pol.n


class _Radii:
    """The window radii ``_rad_lo`` / ``_rad_hi`` (Python lists) of the arms of a chunk, as arrays."""

    def __init__(self, pol: Any, ua: np.ndarray) -> None:
        self.pol = pol
        self.dense = _dense(pol, len(ua))
        if self.dense:
            self.lo, self.hi = np.array(pol._rad_lo), np.array(pol._rad_hi)
        else:  # indexed by position in ua through a small array: ua's arms only
            self.lo, self.hi = np.zeros(pol.n), np.zeros(pol.n)
            al = ua.tolist()
            self.lo[ua] = np.fromiter(map(pol._rad_lo.__getitem__, al), np.float64, len(al))
            self.hi[ua] = np.fromiter(map(pol._rad_hi.__getitem__, al), np.float64, len(al))

    def store(self, arms: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        pol = self.pol
        if self.dense:
            self.lo[arms], self.hi[arms] = lo, hi
            pol._rad_lo, pol._rad_hi = self.lo.tolist(), self.hi.tolist()
        else:
            al = arms.tolist()
            _scatter(pol._rad_lo, al, lo)
            _scatter(pol._rad_hi, al, hi)


def _store_counts(pol: Any, arms: np.ndarray, m: np.ndarray, s: np.ndarray) -> None:
    """Each touched arm's count and sum (lists and arrays)."""
    pol._m_np[arms] = m
    pol._s_np[arms] = s
    if _dense(pol, len(arms)):
        pol.m = pol._m_np.astype(np.int64).tolist()
        pol.s = pol._s_np.tolist()
    else:
        al = arms.tolist()
        _scatter(pol.m, al, m.astype(np.int64))
        _scatter(pol.s, al, s)


def _follow(pol: Any, a: np.ndarray, first: int, D: np.ndarray, m_new: np.ndarray, sure: np.ndarray,
            first_pos: tuple[np.ndarray, np.ndarray]) -> int:
    """``_check_stop``'s certificate pointer and WRR's ``_after_pull`` over rewards ``[0, first)``; returns
    where they need ``update`` (``first`` if nowhere). Writes ``_cert_ptr``, ``_cur``, ``c``.
    ``first_pos``: (the chunk's arms, the index of each one's first reward): "arm q pulled among rewards
    ``[0, j]``" is ``first index of q <= j``, O(1) with a dict built when first needed (a scan of
    ``a[:j + 1]`` per certified arm made this O(chunk^2 / n) at worst)."""
    idx, val, pulled0 = pol._cert_idx, pol._cert_val, pol._pulled_since
    n, L, ptr, cur, c, rho = pol.n, len(idx), pol._cert_ptr, pol._cur, pol.c, pol.rho
    nc = len(a)
    first_of: dict[int, int] | None = None
    j = 0
    while j < first:
        if j > 0:  # the next reward where pointer or schedule may move (j == 0: check the pointer)
            q = idx[ptr]
            hit = (a[j:first] == q) | (D[j:first] >= val[ptr]) | (a[j:first] == cur)
            if not hit.any():
                break
            j += int(np.argmax(hit))
        i, d = int(a[j]), float(D[j])
        p = ptr  # the first certified arm still unpulled (since the certificate, up to reward j) above D
        while p < L:
            q = idx[p]
            if val[p] > d and q not in pulled0:
                if first_of is None:
                    first_of = dict(zip(first_pos[0].tolist(), first_pos[1].tolist()))
                if first_of.get(q, nc) > j:
                    break
            p += 1
        if p == L or (i == cur and m_new[j] < c[i] and not sure[j]):
            pol._cert_ptr, pol._cur = ptr, cur
            return j
        ptr = p
        if i == cur and m_new[j] >= c[i]:
            cur = (cur + 1) % n
            c[cur] += rho
        j += 1
    pol._cert_ptr, pol._cur = ptr, cur
    return first


def _scatter(target: list[Any], at: list[int], values: np.ndarray) -> None:
    """``target[at[k]] = values[k]`` as plain Python numbers (``map`` runs the stores in C)."""
    for _ in map(target.__setitem__, at, values.tolist()):
        pass


def update_one(pol: Any, arm: str, reward: Any) -> list[Event] | None:
    """One reward of ``WeightedRoundRobin.update`` in one fused step, or ``None`` (nothing changed): then
    ``update`` itself must decide. The same sequence of float operations as ``update`` (``_ingest``,
    ``_window_update``, ``_context``, ``_check_stop``, ``_after_pull``), inlined, so the state after it is
    the same bit for bit; ``None`` exactly where :func:`_skip` stops at a candidate -- initialisation,
    the end of the z window, ``sigma`` below the floor, the certificate running out -- and where the
    pulled arm's activity is not settled by the window's radii (``beta_i(z_lo) <= beta_i(z(T)) <=
    beta_i(z_hi)``: ``|y_i - theta_hat| - beta_i(z_lo) - r_lo < -eps`` proves it active,
    ``|y_i - theta_hat| - beta_i(z_hi) - r_hi > eps`` proves it inactive) or an event may be due.
    Why: at n = 20 the per-reward ``update`` spends ~20 us in some 40 method calls, this ~5 us.
    The context at ``T`` (``_ctx``) is not stored (``_ctx_T = CTX_LAZY``): ``_context()`` computes the
    same floats from the state when something reads it (the snapshot does), and the upper threshold
    radius is computed only where the activity test needs it."""
    i = pol.index.get(arm)
    if (i is None or type(reward) is not float or (reward != 0.0 and reward != 1.0) or pol._done
            or pol._n_unpulled or not pol._cert_idx):
        return None
    T = pol.T + 1
    if T > pol._win_hi or pol._ctx_T == T:
        return None
    m, s = pol.m, pol.s
    mo, so = m[i], s[i]
    # _ingest
    yo = so / mo
    sy, syy, sinv = pol._sy - yo, pol._syy - yo * yo, pol._sinv - 1.0 / mo
    mi = mo + 1
    si = so + reward
    yn = si / mi
    sy += yn
    syy += yn * yn
    sinv += 1.0 / mi
    # _context: mu, sigma, theta_hat (SIGMA_FLOOR: the bracket gives up, update() decides)
    n, k = pol.n, pol.k
    mu = sy / n
    var = syy / n - mu * mu
    sigma = math.sqrt(var) if var > 0.0 else 0.0
    if sigma < pol.SIGMA_FLOOR:
        return None
    # _window_update
    mf = float(mi)
    f_lo, f_hi = pol._rfn_lo, pol._rfn_hi
    if type(f_lo) is _ACR and type(f_hi) is _ACR:  # AgrestiCoullRadius.__call__, inline
        q = (si + f_lo.half) / (mf + f_lo.z2)
        rn_lo = f_lo.z * _sqrt(q * (1.0 - q) / mf)
        q = (si + f_hi.half) / (mf + f_hi.z2)
        rn_hi = f_hi.z * _sqrt(q * (1.0 - q) / mf)
    else:
        rn_lo, rn_hi = f_lo(mf, si), f_hi(mf, si)
    ro_lo, ro_hi = pol._rad_lo[i], pol._rad_hi[i]
    b0, b1, b2, b3, b4, b5, b6, b7 = pol._bsums
    rn2, ro2 = rn_lo * rn_lo, ro_lo * ro_lo
    b0 += rn_lo - ro_lo
    b1 += rn2 - ro2
    b2 += yn * rn2 - yo * ro2
    b3 += yn * yn * rn2 - yo * yo * ro2
    rn2, ro2 = rn_hi * rn_hi, ro_hi * ro_hi
    b4 += rn_hi - ro_hi
    b5 += rn2 - ro2
    b6 += yn * rn2 - yo * ro2
    b7 += yn * yn * rn2 - yo * yo * ro2
    # _threshold_radius_bracket (_bracket_value at both ends, one-sided)
    ks = k * sigma
    b = 1.0 * k / (n * sigma)
    c0 = 1.0 / n - b * mu
    v = c0 * c0 * b1 + 2.0 * c0 * b * b2 + b * b * b3
    r_lo = math.sqrt(v if v > 0.0 else 0.0) * (1.0 - 1e-9)
    hi = mu + ks
    # _check_stop: the certificate's first arm still unpulled above D (none left: a refresh)
    D = abs(hi - pol._cert_hi0) - r_lo
    idx, val, pulled = pol._cert_idx, pol._cert_val, pol._pulled_since
    p, L = pol._cert_ptr, len(idx)
    cert: tuple[list[int], list[float]] | None = None
    while p < L:
        q = idx[p]
        if val[p] > D and q != i and q not in pulled:
            break
        p += 1
    else:
        cert = _refresh(pol, i, mi, si, hi, r_lo)
        if cert is None:
            return None  # no arm stays certified: the full check
    # _after_pull (WRR): the pulled arm's Eq. 2 activity, when the window's radii settle it
    dist = abs(yn - hi)
    if dist - rn_lo - r_lo < -_EPS:
        active: bool | None = True
    else:  # (the upper end of the bracket, only here: the context keeps it otherwise -- see the commit)
        v = c0 * c0 * b5 + 2.0 * c0 * b * b6 + b * b * b7
        r_hi = math.sqrt(v if v > 0.0 else 0.0) * (1.0 + 1e-9) + 1e-15
        active = False if dist - rn_hi - r_hi > _EPS else None
    cur, c = pol._cur, pol.c
    reported = pol._reported[i]
    advance = False
    if i != cur:
        if not reported and active is not True:
            return None  # an event, or undecided
    elif mi >= c[i]:
        advance = True
        if not reported and active is not True:
            return None
    else:
        if active is None:
            return None
        if not active:
            advance = True
            if not reported:
                return None  # an event
    # commit, as update() leaves the state
    m[i], s[i] = mi, si
    dirty = pol._np_dirty  # (the arrays follow the lists when next read: _KSigmaEstimates._sync_np; past
    if len(dirty) <= len(m):  # n entries it copies them all, so the list never grows beyond n + 1)
        dirty.append(i)
    pol._sy, pol._syy, pol._sinv = sy, syy, sinv
    pol.T = T
    pol._rad_lo[i], pol._rad_hi[i] = rn_lo, rn_hi
    pol._bsums = [b0, b1, b2, b3, b4, b5, b6, b7]
    if p < L:
        pulled.add(i)
        pol._cert_ptr = p
    elif cert is not None:  # _partial_refresh's new certificate (_set_certificate)
        pol._cert_idx, pol._cert_val = cert
        pol._cert_ptr = 0
        pol._cert_hi0, pol._cert_lo0 = hi, mu - ks
        pulled.clear()
    pol._ctx_T = CTX_LAZY  # the context at T: _context() computes it when first read (the same floats)
    if advance:
        cur = pol._cur = (cur + 1) % n
        c[cur] += pol.rho
    return []


def _refresh(pol: Any, i: int, mi: int, si: float, hi: float, r_lo: float) -> tuple[list[int], list[float]] | None:
    """``_partial_refresh`` after arm ``i``'s pull (count ``mi``, sum ``si``) in scalar arithmetic: the
    certificate's arms still certified at T, by value (a stable sort, as ``_set_certificate``), or
    ``None`` if none is. Elementwise the same operations as the numpy version, so the same floats: the
    radius is :class:`~streamarms.bounds.AgrestiCoullRadius`'s ``z sqrt(p (1 - p) / m)``, ``p = (m+ +
    z^2/2) / (m + z^2)``, inlined (at n = 20 one pull in eight refreshes; its ~18 radius calls were most
    of the refresh's cost); ``sort(reverse=True)`` keeps equal values in order, as the stable argsort
    of ``-vals`` does."""
    z = pol.model.z(bounds.zww17_significance(pol.delta, pol.n, pol.T + 1, pol._n_thr))
    z2 = z * z
    half = z2 / 2.0
    m, s, bound = pol.m, pol.s, -r_lo
    keep: list[tuple[float, int]] = []
    for j in pol._cert_idx:
        if j == i:
            mj, sj = float(mi), si
        else:
            mj, sj = float(m[j]), s[j]
        q = (sj + half) / (mj + z2)
        v = z * _sqrt(q * (1.0 - q) / mj) - abs(sj / mj - hi)
        if v != v:
            return None  # NaN: numpy's order may differ
        if v > bound:
            keep.append((v, j))
    if not keep:
        return None
    keep.sort(key=_first, reverse=True)
    return [j for _, j in keep], [v for v, _ in keep]

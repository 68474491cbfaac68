"""Restart rules: when a key's old evidence is dropped so that it cannot hide a change.

Candidates, compared in ``benchmarks/continuous.py`` (results in ``benchmarks/results/continuous*``):

* :class:`EDetector`: an anytime-valid change detector, the Shiryaev-Roberts e-detector of Shin,
  Ramdas, Rinaldo, *E-detectors: a nonparametric framework for sequential change detection*, New England
  Journal of Statistics in Data Science 2(2), 2024 (arXiv:2203.03532), with e-values for the mean of a
  bounded variable. It restarts a key's sequence when its mean has moved away from the mean of the current
  segment.
* :class:`WindowRestart`: restart every ``window`` samples (epochs), the classic forgetting rule;
* river's ``drift.ADWIN`` (Bifet & Gavalda, SDM 2007), measured in the benchmark only.

**The choice, by measurement** (30 keys at 0.10-0.12, key 0 shifted by d at record 200k and back at
600k, median of 2 seeds, records until the key's segment restarts / until the ``outlier`` alert):
d = 0.05: e-detector 63k / never within 400k, ADWIN 39k / never, window(4096) restarts every ~123k
records regardless / never; d = 0.1: 15k / 96k, ADWIN 9.7k / 93k, window 124k alert; d = 0.3: 1.8k / 16k,
ADWIN 1.3k / 14k, window 28k alert; restart after the shift back (d = 0.05, 0.1, 0.3):
48k / 13k / 2.8k records (e-detector) vs 38k / 13k / 3.2k (ADWIN).
Operator trial (jump to 0.8 and back): alert 3.7-4.0k records, clear 105-130k with the e-detector; ADWIN
2.6-3.9k and 105-126k; the window 14-16k and 126k / never. Stationary: no false restart in 1e7 records
for either detector. The window is clearly worse. ADWIN restarts 1.2-1.6x sooner on small shifts, but the
alert delays are nearly equal (they are dominated by the threshold's warm-up after the restart), and
ADWIN has no stated false-restart rate (the monitor's guarantee needs one) and no JSON state (a restart
of the daemon must continue bit for bit). So the default is the e-detector.

Both implement ``observe(x, lo, hi) -> bool`` (``True``: restart the key's segment now; ``lo``/``hi`` is a
*predictable* interval of the segment's mean, i.e. computed before ``x``), ``reset()``, ``snapshot()`` and
``restart_from_snapshot`` rebuilds either.

E-detector derivation
---------------------
Rewards lie in ``[low, high]`` (span ``s``). Fix ``lam in (0, 1)``. While the key's mean ``mu`` does not
change and the segment's sequence holds (``lo <= mu <= hi``; it is an anytime-valid confidence sequence, so
this holds at every sample with probability ``>= 1 - alpha_key``), the e-values::

    e_up   = 1 + lam (x - hi) / s     (tests "mean <= hi": large after an upward change)
    e_down = 1 - lam (x - lo) / s     (tests "mean >= lo": large after a downward change)

are nonnegative (``|x - hi| <= s``, ``lam < 1``) and have conditional mean ``<= 1`` given the past
(``E[x] = mu <= hi``, resp. ``>= lo``, and ``lo, hi`` are fixed before ``x``). The Shiryaev-Roberts
statistic ``R_t = e_t (R_{t-1} + 1)``, ``R_0 = 0``, is the sum over every possible change time ``j <= t``
of the product of the e-values since ``j`` (an e-detector in Shin et al.'s sense), and ``E[R_t | past]
<= R_{t-1} + 1``. The detector averages ``R`` over a grid of ``lam`` and both directions (``M_t``, the
same inequality holds for the average) and restarts when ``M_t >= 1/alpha_cd``, setting ``M`` to 0.

**Guarantee (false restarts per sample).** With ``N_t`` the number of restarts in the first ``t``
samples, ``E[M_t] <= E[M_{t-1}] + 1 - E[drop at t]`` and a restart drops ``M`` by at least
``1/alpha_cd``, so ``0 <= E[M_t] <= t - E[N_t] / alpha_cd``: **E[N_t] <= alpha_cd * t** while the mean is
constant and the segment's sequence holds -- at most ``alpha_cd`` false restarts per sample, i.e. an
average run length ``>= 1/alpha_cd`` (Shin et al., Thm 3.3 for one restart). A false restart costs no
false alert by itself; it only starts a new segment (see :mod:`.monitor`).

Detection: after a change of the mean by ``d`` (in units of ``s``) beyond the interval, the ``lam`` of the
grid nearest ``d / var`` grows ``log M`` by about ``lam d - lam^2 var / 2`` per sample, so the delay is about
``log(1/alpha_cd) / (d^2 / (2 var))`` samples plus the time the segment's interval needs to become narrower
than ``d``.

>>> det = EDetector(alpha_cd=1e-4, low=0.0, high=1.0)
>>> import random; rng = random.Random(3)
>>> any(det.observe(float(rng.random() < 0.2), 0.18, 0.22) for _ in range(5000))
False
>>> t = next(i for i in range(5000) if det.observe(float(rng.random() < 0.5), 0.18, 0.22)); t < 100
True
"""

from __future__ import annotations

from array import array
from typing import Any

__all__ = ["EDetector", "WindowRestart", "restart_from_snapshot", "LAMBDAS"]

#: the grid of bets (fractions of the maximal bet): covers changes from ~1% to ~100% of the range
LAMBDAS = (0.02, 0.05, 0.1, 0.2, 0.4, 0.7)


class EDetector:
    """Shiryaev-Roberts e-detector for a change in a bounded mean (module docstring).

    >>> EDetector(alpha_cd=0.0, low=0.0, high=1.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha_cd must be in (0, 1), got 0.0
    """

    # one per key: slots, the bets shared by every key, the statistics unboxed in one array('d') (8 bytes a
    # value, not a float object's 32; one array, not one per direction: an array object costs ~80 bytes)
    __slots__ = ("alpha_cd", "low", "high", "lambdas", "stat", "restarts")
    kind = "edetector"
    stat: array[float]  # R of each bet upward, then of each bet downward

    def __init__(self, alpha_cd: float = 1e-6, *, low: float = 0.0, high: float = 1.0,
                 lambdas: tuple[float, ...] = LAMBDAS) -> None:
        if not (isinstance(alpha_cd, (int, float)) and 0.0 < alpha_cd < 1.0):
            raise ValueError(f"alpha_cd must be in (0, 1), got {alpha_cd!r}")
        if not (high > low):
            raise ValueError(f"the e-detector needs a bounded range, got [{low}, {high}]")
        if not lambdas or not all(0.0 < lam < 1.0 for lam in lambdas):
            raise ValueError(f"every bet must be in (0, 1), got {lambdas!r}")
        self.alpha_cd, self.low, self.high = float(alpha_cd), float(low), float(high)
        self.lambdas = _shared_bets(lambdas)
        self.reset()
        self.restarts = 0

    @property
    def up(self) -> list[float]:
        return list(self.stat[:len(self.lambdas)])

    @property
    def down(self) -> list[float]:
        return list(self.stat[len(self.lambdas):])

    def statistic(self) -> float:
        """``M_t``: the average Shiryaev-Roberts statistic over the bets and both directions."""
        return (sum(self.up) + sum(self.down)) / (2 * len(self.lambdas))

    def observe(self, x: float, lo: float, hi: float) -> bool:
        """One reward with the segment's predictable interval ``(lo, hi)``; ``True``: restart now."""
        if self.step(self.stat, 0, x, lo, hi):
            self.reset()
            self.restarts += 1
            return True
        return False

    def step(self, st: array[float], off: int, x: float, lo: float, hi: float) -> bool:
        """The Shiryaev-Roberts update of the statistics held at ``st[off:off + 2 * len(lambdas)]`` (in
        place; the monitor keeps every key's in one array, :mod:`.columns`); ``True``: ``M_t >= 1/alpha_cd``
        (the caller then zeroes them: :meth:`observe`)."""
        s = self.high - self.low
        a = (x - min(max(hi, self.low), self.high)) / s
        b = (x - min(max(lo, self.low), self.high)) / s
        lams = self.lambdas
        n = len(lams)
        m = off + n
        for j, lam in enumerate(lams):  # in place: no new arrays per reward (hot path)
            st[off + j] = (1.0 + lam * a) * (st[off + j] + 1.0)
            st[m + j] = (1.0 - lam * b) * (st[m + j] + 1.0)
        mv = memoryview(st)  # the two sums as before (up, then down): the same floats, no copy
        return (sum(mv[off:m]) + sum(mv[m:m + n])) >= 2 * n / self.alpha_cd

    def reset(self) -> None:
        self.stat = array("d", bytes(16 * len(self.lambdas)))

    def snapshot(self) -> dict[str, Any]:
        return {"kind": self.kind, "alpha_cd": self.alpha_cd, "low": self.low, "high": self.high,
                "lambdas": list(self.lambdas), "up": list(self.up), "down": list(self.down),
                "restarts": self.restarts}


class WindowRestart:
    """Restart a key's segment every ``window`` samples (the epoch rule).

    >>> w = WindowRestart(3)
    >>> [w.observe(1.0, 0.0, 1.0) for _ in range(7)]
    [False, False, True, False, False, True, False]
    """

    __slots__ = ("window", "count", "restarts")
    kind = "window"

    def __init__(self, window: int = 4096) -> None:
        if not (isinstance(window, int) and window >= 1):
            raise ValueError(f"window must be a positive integer, got {window!r}")
        self.window = window
        self.count = 0
        self.restarts = 0

    def observe(self, x: float, lo: float, hi: float) -> bool:
        self.count += 1
        if self.count >= self.window:
            self.reset()
            self.restarts += 1
            return True
        return False

    def reset(self) -> None:
        self.count = 0

    def snapshot(self) -> dict[str, Any]:
        return {"kind": self.kind, "window": self.window, "count": self.count, "restarts": self.restarts}


def restart_from_snapshot(state: dict[str, Any]) -> EDetector | WindowRestart:
    """Rebuild a restart rule from its ``snapshot()``."""
    kind = state.get("kind")
    if kind == EDetector.kind:
        obj: Any = EDetector.__new__(EDetector)
    elif kind == WindowRestart.kind:
        obj = WindowRestart.__new__(WindowRestart)
    else:
        raise ValueError(f"unknown restart rule {kind!r}: one of ['edetector', 'window']")
    for k, v in state.items():
        if k == "kind":
            continue
        if kind == EDetector.kind and k in ("lambdas", "up", "down"):
            if k == "lambdas":
                v = _shared_bets(v)
            else:  # stored as two lists (the snapshot format), held as one array
                continue
        try:
            setattr(obj, k, v)
        except AttributeError:
            raise ValueError(f"restart rule {kind!r} snapshot has an unknown field {k!r}") from None
    if kind == EDetector.kind:
        try:
            up, down, bets = state["up"], state["down"], state["lambdas"]
        except KeyError as e:
            raise ValueError(f"restart rule 'edetector' snapshot lacks {e}") from None
        if not len(up) == len(down) == len(bets):
            raise ValueError(f"restart rule 'edetector' snapshot: {len(up)} up and {len(down)} down statistics "
                             f"for {len(bets)} bets")
        obj.stat = array("d", [*up, *down])
    return obj


_BETS: dict[tuple[float, ...], tuple[float, ...]] = {}


def _shared_bets(lambdas: Any) -> tuple[float, ...]:
    """The grid of bets as one tuple shared by every detector with the same grid."""
    t = tuple(float(lam) for lam in lambdas)
    return _BETS.setdefault(t, t) if len(_BETS) < 64 else t

"""Running mean estimators that resist heavy tails, as river statistics.

Rewards with only a finite p-th moment (p in (1, 2]: latencies, delays, amounts) make the empirical
mean slow to concentrate, and its Hoeffding/Gaussian confidence intervals wrong. Two classic fixes:

* :class:`TruncatedMean`: the truncated empirical average (TEA) of Yu, Shao, Lyu, King, *Pure
  Exploration of Multi-Armed Bandits with Heavy-Tailed Payoffs*, UAI 2018 ([YSLK18], Eq. 3 and
  Lemma 1): the i-th sample counts only if ``|x_i| <= b_i = (B i / log(2/delta))^(1/p)``, else it
  contributes 0 (it still counts in the denominator, and in :attr:`TruncatedMean.n_truncated`).
* :class:`MedianOfMeans`: the median of ``k`` block means (Bubeck, Cesa-Bianchi, Lugosi, *Bandits with
  Heavy Tail*, IEEE Trans. Inf. Theory 2013), streamed: sample j goes to block ``j mod k``.

Both are :class:`river.stats.base.Univariate` (``update`` / ``get``, clonable, picklable) and know
nothing of bandits: they can serve as the ``reward_obj`` of a river bandit policy. Their confidence
radii are in :mod:`streamarms.bounds` (:func:`~streamarms.bounds.tea_radius`,
:func:`~streamarms.bounds.mom_radius`); ``radius()`` is a shortcut.

>>> from river import bandit
>>> policy = bandit.UCB(delta=1.0, reward_obj=TruncatedMean(p=2.0, B=10.0), seed=0)
>>> for x in [1.0, 2.0, 1.5]:
...     policy.update("a", x)
>>> policy.pull(["a", "b"])
'b'
"""

from __future__ import annotations

import math
import statistics

from river import stats

from . import bounds
from .validation import finite_reward

__all__ = ["TruncatedMean", "MedianOfMeans"]


def _check_delta(delta: float) -> None:
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


class TruncatedMean(stats.base.Univariate):
    """Truncated empirical average (TEA) of [YSLK18], Eq. 3, with the truncation schedule of Lemma 1.

    ``get() = (1/n) sum_i x_i 1{|x_i| <= b_i}``, ``b_i = (B i / log(2/delta))^(1/p)``, i = 1-based index of the
    sample. A sample above its level is not dropped: it counts in ``n`` with contribution 0, and in
    ``n_truncated``. With probability at least ``1 - delta``, ``|get() - mu| <= radius()`` =
    ``5 B^(1/p) (log(2/delta) / n)^((p-1)/p)``.

    Parameters
    ----------
    p
        Moment order, in (1, 2].
    B
        Bound on the raw p-th moment ``E|X|^p``.
    delta
        Significance the truncation schedule is tuned for, in (0, 1).

    >>> tm = TruncatedMean(p=2.0, B=4.0, delta=0.1)
    >>> for x in [0.5, 100.0, 1.5]:
    ...     tm.update(x)
    >>> tm.get(), tm.n, tm.n_truncated
    (0.6666666666666666, 3, 1)
    >>> round(tm.truncation_level(2), 4)
    1.6342
    """

    def __init__(self, p: float = 2.0, B: float = 1.0, delta: float = 0.05) -> None:
        bounds.check_moment_params(p, B)
        _check_delta(delta)
        self.p = p
        self.B = B
        self.delta = delta
        self.n = 0
        self.total = 0.0
        self.n_truncated = 0
        self._L = math.log(2.0 / delta)

    def truncation_level(self, i: int) -> float:
        """``b_i`` of the i-th sample (1-based)."""
        return bounds.tea_truncation_level(i, self.p, self.B, self.delta)

    def update(self, x: float) -> None:
        x = finite_reward(None, x)
        i = self.n + 1
        if not bounds.moment_exceeds(x, self.p, self.B * i / self._L):  # |x| <= b_i, without the root
            self.total += x
        else:
            self.n_truncated += 1
        self.n = i

    def get(self) -> float:
        return self.total / self.n if self.n else 0.0

    def radius(self, delta: float | None = None) -> float:
        """Confidence radius at ``delta`` (default: the tuned one, where it is the paper's)."""
        d = self.delta if delta is None else delta
        _check_delta(d)
        return bounds.tea_radius_fixed_truncation(self.n, self.p, self.B, d, self.delta)

    @classmethod
    def _unit_test_params(cls):
        yield {"p": 1.5, "B": 3.0, "delta": 0.01}


class MedianOfMeans(stats.base.Univariate):
    """Median of ``k`` block means (Bubeck, Cesa-Bianchi, Lugosi 2013), streamed.

    Sample j (0-based) joins block ``j mod k``, so blocks stay balanced (sizes differ by at most one)
    and state is O(k). ``get()`` is the median of the non-empty blocks' means (of the samples themselves
    while fewer than k have arrived). With ``n_blocks=None`` the number of blocks is
    :func:`streamarms.bounds.mom_blocks` ``(delta, p)``, the k that makes the radius smallest at delta.

    Parameters
    ----------
    delta
        Significance the number of blocks is tuned for, in (0, 1).
    p
        Moment order in (1, 2] (only used to choose the number of blocks and the radius).
    n_blocks
        Number of blocks k >= 1, overriding the choice from delta.

    >>> mom = MedianOfMeans(n_blocks=3)
    >>> for x in [1.0, 2.0, 3.0, 1.0, 2.0, 300.0]:
    ...     mom.update(x)
    >>> mom.get()
    2.0
    >>> mom.k, mom.n
    (3, 6)
    """

    def __init__(self, delta: float = 0.05, p: float = 2.0, n_blocks: int | None = None) -> None:
        _check_delta(delta)
        bounds.check_moment_params(p, 1.0)
        if n_blocks is not None and not (isinstance(n_blocks, int) and n_blocks >= 1):
            raise ValueError(f"n_blocks must be an integer >= 1 or None, got {n_blocks!r}")
        self.delta = delta
        self.p = p
        self.n_blocks = n_blocks
        self.k = n_blocks if n_blocks is not None else bounds.mom_blocks(delta, p)
        self.n = 0
        self._counts = [0] * self.k
        self._sums = [0.0] * self.k

    def update(self, x: float) -> None:
        x = finite_reward(None, x)
        b = self.n % self.k
        self._counts[b] += 1
        self._sums[b] += x
        self.n += 1

    def get(self) -> float:
        if self.n == 0:
            return 0.0
        return statistics.median(s / c for s, c in zip(self._sums, self._counts) if c)

    def radius(self, C: float, delta: float | None = None) -> float:
        """Confidence radius at ``delta`` (default: the tuned one); ``C`` bounds ``E|X - mu|^p``."""
        d = self.delta if delta is None else delta
        _check_delta(d)
        if not (math.isfinite(C) and C > 0):
            raise ValueError(f"central moment bound C must be a finite number > 0, got {C!r}")
        return bounds.mom_radius(self.n, self.p, C, d, self.k)

    @classmethod
    def _unit_test_params(cls):
        yield {"delta": 0.01, "p": 1.5, "n_blocks": 4}

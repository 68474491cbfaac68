"""The exact Bernoulli confidence sequence: the Beta-Binomial conjugate mixture.

Robbins, *Statistical methods related to the law of the iterated logarithm*, Ann. Math. Statist. 41(5),
1970; Howard, Ramdas, McAuliffe, Sekhon, *Time-uniform, nonparametric, nonasymptotic confidence
sequences*, Ann. Statist. 49(2), 2021, Sec. 3.2 (conjugate mixtures).

For 0/1 rewards with mean p, after m rewards with S ones, mixing the likelihood ratio over a
``Beta(a, b)`` prior gives the nonnegative martingale (under p, with ``M_0 = 1``)::

    M_m(p) = [B(a + S, b + m - S) / B(a, b)] / [p^S (1 - p)^(m - S)].

By Ville's inequality ``P(exists m: M_m(p) >= 1/alpha) <= alpha``, so ``C_m = {p: M_m(p) < 1/alpha}`` is a
CS. ``log M_m`` is convex in p with its minimum at ``S/m``, so ``C_m`` is an interval around ``S/m``, and
a point test is O(1) with ``math.lgamma``: ``above(v)`` is true when ``v < S/m`` and
``log M_m(v) >= log(1/alpha)`` (all of ``[0, v]`` is then outside ``C_m``). :meth:`interval` finds the
two roots by Newton's method in ``log p`` (resp. ``log(1 - p)``), where ``log M`` is still convex, started
outside the set: the iterates approach each root from outside, so a stopped iteration is conservative.
The running intersection of every interval computed is kept. The default prior is Jeffreys'
``Beta(1/2, 1/2)``.

:func:`beta_binomial_interval` is the stateless form (a function of ``m`` and ``S``).

>>> cs = BetaBinomialCS(0.05)
>>> for x in [0, 0, 0, 0, 0, 0, 0, 0, 0, 1] * 100: cs.update(x)
>>> lo, hi = cs.interval(); round(lo, 3), round(hi, 3)
(0.069, 0.138)
>>> cs.above(0.06), cs.above(0.07), cs.below(0.14)
(True, False, True)
"""

from __future__ import annotations

import functools
import math

from .base import ConfidenceSequence, register_sequence

__all__ = ["BetaBinomialCS", "beta_binomial_interval", "log_mixture", "cached_interval"]

_lgamma = math.lgamma


def _lbeta(x: float, y: float) -> float:
    return _lgamma(x) + _lgamma(y) - _lgamma(x + y)


@functools.lru_cache(maxsize=64)
def _constants(alpha: float, a: float, b: float) -> tuple[float, float]:
    """``(log(1/alpha), log B(a, b))``: one pair of float objects shared by every arm of a run."""
    return math.log(1.0 / alpha), _lbeta(a, b)


def log_mixture(p: float, m: int, S: float, a: float = 0.5, b: float = 0.5) -> float:
    """``log M_m(p)`` (module docstring); ``p`` in (0, 1)."""
    return _lbeta(a + S, b + m - S) - _lbeta(a, b) - S * math.log(p) - (m - S) * math.log1p(-p)


def _root(m: int, S: float, a: float, b: float, c: float) -> float:
    """The lower root of ``log M_m(p) = c`` in ``(0, S/m)``, for ``0 < S``: Newton in ``u = log p`` from
    the left; f(u) = K - S u - (m - S) log(1 - e^u) - c is convex and decreasing there."""
    K = _lgamma(a + S) + _lgamma(b + m - S) - _lgamma(a + b + m) - _lbeta(a, b) - c
    phat = S / m
    log, exp, log1p = math.log, math.exp, math.log1p
    # start: a p with f > 0 (f(u) >= K - S u, so u0 = (K - 1) / S ... clipped below phat)
    u = min((K - 1.0) / S, log(phat)) if K < 0 else log(phat) - 50.0
    for _ in range(100):
        p = exp(u)
        f = K - S * u - (m - S) * log1p(-p)
        if f <= 1e-9:  # f > 0: still outside the set, i.e. conservative
            break
        fp = -S + (m - S) * p / (1.0 - p)
        if fp >= 0:  # at/after the minimum: should not happen from the left
            break
        u -= f / fp
    return exp(u)


def beta_binomial_interval(m: int, S: float, alpha: float, a: float = 0.5, b: float = 0.5) -> tuple[float, float]:
    """``C_m`` of the Beta-Binomial mixture CS after ``m`` rewards with ``S`` ones (no intersection).

    >>> lo, hi = beta_binomial_interval(1000, 100, 0.05); round(lo, 3), round(hi, 3)
    (0.069, 0.138)
    """
    if m <= 0:
        return 0.0, 1.0
    c = math.log(1.0 / alpha)
    lo = 0.0 if S <= 0 else _root(m, S, a, b, c)
    hi = 1.0 if S >= m else 1.0 - _root(m, m - S, b, a, c)
    return lo, hi


@functools.lru_cache(maxsize=1 << 13)
def cached_interval(m: int, S: float, alpha: float, a: float, b: float) -> tuple[float, float]:
    """:func:`beta_binomial_interval`, memoised: a pure function of ``(m, S)`` at the run's ``alpha, a, b``,
    so the cache returns the very floats a fresh call would. The arms of a run report to the threshold
    track at the same grid counts, and with many arms the same ``(m, S)`` comes back often (at counts
    <= 8 every arm of a large run shares a handful of pairs): two Newton root-findings become one lookup.

    >>> cached_interval(1000, 100.0, 0.05, 0.5, 0.5) == beta_binomial_interval(1000, 100.0, 0.05)
    True
    """
    return beta_binomial_interval(m, S, alpha, a, b)


@register_sequence
class BetaBinomialCS(ConfidenceSequence):
    """Beta-Binomial mixture CS for 0/1 rewards (module docstring).

    >>> cs = BetaBinomialCS(0.1, "k")
    >>> cs.update(0.5)
    Traceback (most recent call last):
    ...
    ValueError: reward for arm 'k' must be 0 or 1, got 0.5
    """

    # one per arm: slots, and the two constants shared (see ConfidenceSequence)
    __slots__ = ("a", "b", "lo", "hi", "_c", "_lb0")
    kind = "beta_binomial"
    SETTINGS = ("alpha", "a", "b")
    low, high = 0.0, 1.0

    def __init__(self, alpha: float, arm: str = "arm", *, a: float = 0.5, b: float = 0.5) -> None:
        super().__init__(alpha, arm)
        if not (a > 0 and b > 0):
            raise ValueError(f"Beta prior needs a, b > 0, got {a}, {b}")
        self.a, self.b = float(a), float(b)
        self.lo, self.hi = 0.0, 1.0
        self._after_restore()

    def _after_restore(self) -> None:
        self._c, self._lb0 = _constants(self.alpha, self.a, self.b)

    def check(self, x: object) -> float:
        v = super().check(x)
        if v != 0.0 and v != 1.0:
            raise ValueError(f"reward for arm {self.arm!r} must be 0 or 1, got {x!r}")
        return v

    def _update(self, x: float) -> None:
        self.m += 1
        self.s += x

    def _log_m(self, p: float) -> float:
        m, S = self.m, self.s
        return (_lgamma(self.a + S) + _lgamma(self.b + m - S) - _lgamma(self.a + self.b + m) - self._lb0
                - S * math.log(p) - (m - S) * math.log1p(-p))

    def interval(self) -> tuple[float, float]:
        lo, hi = cached_interval(self.m, self.s, self.alpha, self.a, self.b)
        if lo > self.lo:
            self.lo = lo
        if hi < self.hi:
            self.hi = hi
        return self.lo, self.hi

    def above(self, v: float) -> bool:
        if self.lo > v:
            return True
        if v < 0.0:
            return True
        m = self.m
        if m == 0 or v >= 1.0 or self.s <= v * m:
            return False
        if v <= 0.0:  # p = 0 is excluded by any 1 seen
            return True
        return self._log_m(v) >= self._c

    def below(self, v: float) -> bool:
        if self.hi < v:
            return True
        if v > 1.0:
            return True
        m = self.m
        if m == 0 or v <= 0.0 or self.s >= v * m:
            return False
        if v >= 1.0:
            return True
        return self._log_m(v) >= self._c

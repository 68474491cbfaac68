"""Heavy tails: the truncated empirical average (TEA) made anytime by a union over counts.

Yu, Shao, Lyu, King. *Pure exploration of multi-armed bandits with heavy-tailed payoffs*. UAI 2018,
Lemma 1 (TEA), with the radius re-derived for a fixed truncation schedule in
:func:`streamarms.bounds.tea_radius_fixed_truncation`.

Rewards with ``E|X|^p <= B`` (p in (1, 2]) have no exponential supermartingale, so this CS is not built
from one: the fixed-count TEA bound at count m holds with probability ``1 - alpha_m``, and the union over
every count with ``alpha_m = alpha / (m (m + 1))`` (``sum_m alpha_m = alpha``) makes it valid at every m
simultaneously. It pays ``log(m^2)`` inside the radius where a stitched boundary pays ``log log m``; heavy
tails cost far more than that anyway (the radius decays like ``m^(-(p-1)/p)``). The truncation levels
``b_j = (B j / log(2/alpha))^(1/p)`` use the CS's own alpha, fixed at construction.

>>> cs = TruncatedMeanCS(0.05, p=2.0, B=2.0)
>>> for x in [0.5, 1.5, -0.2, 1.0] * 250: cs.update(x)
>>> lo, hi = cs.interval(); lo < 0.7 < hi
True
"""

from __future__ import annotations

import math

from .. import bounds
from .base import EagerConfidenceSequence, register_sequence

__all__ = ["TruncatedMeanCS"]


@register_sequence
class TruncatedMeanCS(EagerConfidenceSequence):
    """Anytime TEA confidence sequence for rewards with ``E|X|^p <= B`` (module docstring)."""

    kind = "tea"
    SETTINGS = ("alpha", "p", "B")

    def __init__(self, alpha: float, arm: str = "arm", *, p: float = 2.0, B: float = 1.0) -> None:
        super().__init__(alpha, arm)
        bounds.check_moment_params(float(p), float(B))
        self.p, self.B = float(p), float(B)
        self.n_truncated = 0
        self.lo, self.hi = -math.inf, math.inf
        self._after_restore()

    def _after_restore(self) -> None:
        self._L0 = math.log(2.0 / self.alpha)

    def _update(self, x: float) -> None:
        j = self.m + 1
        if bounds.moment_exceeds(x, self.p, self.B * j / self._L0):  # |x| > b_j: contributes 0, still counted
            x = 0.0
            self.n_truncated += 1
        self.m = j
        self.s += x
        a_m = self.alpha / (j * (j + 1.0))
        r = float(bounds.tea_radius_fixed_truncation(float(j), self.p, self.B, a_m, self.alpha))
        mean = self.s / j
        if mean - r > self.lo:
            self.lo = mean - r
        if mean + r < self.hi:
            self.hi = mean + r

"""Heavy tails: the median of means (MoM) made anytime by epochs of doubling length.

The estimator and its fixed-sample radius are those of :func:`streamarms.bounds.mom_radius` (Bubeck,
Cesa-Bianchi, Lugosi, *Bandits with heavy tail*, IEEE Trans. Inf. Theory 2013, Lemma 2, with the
block count and the binomial step of that function; the moment condition ``E|X - mu|^p <= C``, p in
(1, 2], of Yu, Shao, Lyu, King, UAI 2018).

**Anytime validity.** A median of block means needs its blocks fixed in advance, so rewards are cut into
epochs: epoch ``j`` holds the next ``L_j = k_j 2^(j+1)`` rewards, in ``k_j = mom_blocks(alpha_j, p)``
consecutive blocks of ``2^(j+1)`` (``alpha_j = alpha / ((j + 1)(j + 2))``, summing to alpha). The
rewards of an epoch are a fixed set of the arm's iid rewards whatever the sampling order, so the median of
its block means is within ``mom_radius(L_j, p, C, alpha_j, k_j)`` of the mean with probability
``>= 1 - alpha_j``; by a union over epochs every epoch's interval holds at once with probability
``>= 1 - alpha``, and the sequence reports the running intersection of the completed epochs' intervals
(unbounded before the first one completes). Each epoch uses only its own rewards (the last one holds
about half of them: a constant factor in the radius) so memory is the current epoch's k block sums,
O(1) per reward and O(k log k) at an epoch's end.

>>> cs = MedianOfMeansCS(0.05, p=2.0, C=1.0)
>>> for x in [0.5, 1.5, -0.2, 1.0] * 250: cs.update(x)
>>> lo, hi = cs.interval(); lo < 0.7 < hi, cs.epochs
(True, 5)
"""

from __future__ import annotations

import math
import statistics

from .. import bounds
from .base import EagerConfidenceSequence, register_sequence

__all__ = ["MedianOfMeansCS"]


@register_sequence
class MedianOfMeansCS(EagerConfidenceSequence):
    """Anytime median-of-means confidence sequence for rewards with ``E|X - mu|^p <= C`` (module docstring)."""

    kind = "mom"
    SETTINGS = ("alpha", "p", "C")

    def __init__(self, alpha: float, arm: str = "arm", *, p: float = 2.0, C: float = 1.0) -> None:
        super().__init__(alpha, arm)
        bounds.check_moment_params(float(p), float(C))
        self.p, self.C = float(p), float(C)
        self.epochs = 0          # completed epochs
        self.pos = 0             # rewards of the current epoch so far
        self.lo, self.hi = -math.inf, math.inf
        self._after_restore()
        self.blocks = [0.0] * self._k

    def _after_restore(self) -> None:
        j = self.epochs
        self._alpha_j = self.alpha / ((j + 1.0) * (j + 2.0))
        self._k = bounds.mom_blocks(self._alpha_j, self.p)
        self._N = 2 ** (j + 1)
        self._L = self._k * self._N

    def _update(self, x: float) -> None:
        self.m += 1
        self.s += x
        self.blocks[self.pos // self._N] += x
        self.pos += 1
        if self.pos == self._L:
            med = statistics.median(b / self._N for b in self.blocks)
            r = float(bounds.mom_radius(float(self._L), self.p, self.C, self._alpha_j, self._k))
            self.lo, self.hi = max(self.lo, med - r), min(self.hi, med + r)
            self.hi = max(self.hi, self.lo)  # an empty intersection (off the event) reports a point
            self.epochs += 1
            self.pos = 0
            self._after_restore()
            self.blocks = [0.0] * self._k

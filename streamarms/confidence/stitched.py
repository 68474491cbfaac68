"""The stitched (polynomial-stitching) uniform boundary, and the CS it gives for bounded or sub-Gaussian arms.

Howard, Ramdas, McAuliffe, Sekhon. *Time-uniform, nonparametric, nonasymptotic confidence sequences*.
Annals of Statistics 49(2), 2021, Theorem 1 (stitching), with the parameterisation of the authors'
reference code ``confseq`` (``uniform_boundaries.h``, ``PolyStitchingBound``).

Let ``S_t`` be a sub-gamma process with variance process ``V_t`` and scale ``c >= 0``, i.e.
``exp(lambda S_t - psi_G(lambda) V_t)`` is a supermartingale for every ``lambda in [0, 1/c)``, where
``psi_G(lambda) = lambda^2 / (2 (1 - c lambda))``. Then, for fixed ``v_min > 0``, ``eta > 1``, ``s > 1``::

    P( exists t: S_t >= u(V_t) ) <= alpha,
    u(v) = sqrt(k1^2 v' l(v') + (k2 c l(v'))^2) + k2 c l(v'),     v' = max(v, v_min),
    l(v) = s log log(eta v / v_min) + log(zeta(s) / (log eta)^s) + log(1 / alpha),
    k1 = (eta^(1/4) + eta^(-1/4)) / sqrt(2),   k2 = (sqrt(eta) + 1) / 2.

(Epoch j covers ``V in [v_min eta^j, v_min eta^(j+1))`` with a line boundary at level
``alpha / (zeta(s) (j+1)^s)``; the union over epochs sums to alpha. For ``V_t < v_min`` the epoch-0 line,
increasing in V, is below ``u(v_min)``, hence the ``max``.) ``u`` is increasing in ``v``: a policy may
evaluate it at an upper bound of an unknown variance process (used by :mod:`.threshold`).

For rewards in ``[a, b]`` (Hoeffding: sub-Gaussian with ``sigma = (b - a) / 2``) or sub-Gaussian rewards,
``S_m = sum (X_j - mu)`` has ``V_m = m sigma^2``, ``c = 0``; both tails at ``alpha / 2`` give
:class:`StitchedCS`: ``|mean_m - mu| <= u(m sigma^2) / m`` for all m.

>>> round(stitched_boundary(100, 0.05, v_min=10, c=3), 5)   # confseq: poly_stitching_bound(100, .05, 10, 3)
64.48755
>>> cs = StitchedCS(0.05, low=0.0, high=1.0)
>>> for x in [1, 0, 1, 1, 0, 1, 0, 1] * 50: cs.update(x)
>>> lo, hi = cs.interval(); round(lo, 3), round(hi, 3)
(0.528, 0.722)
"""

from __future__ import annotations

import math
from typing import Any

from .base import EagerConfidenceSequence, register_sequence

__all__ = ["stitched_boundary", "stitched_radius", "zeta", "StitchedCS"]

ETA = 2.0
S_EXP = 1.4


def zeta(s: float) -> float:
    """Riemann zeta for real ``s > 1`` (Euler-Maclaurin, 10 terms + 3 corrections; abs. error < 1e-10).

    >>> abs(zeta(2.0) - math.pi ** 2 / 6) < 1e-10
    True
    """
    if not s > 1.0:
        raise ValueError(f"zeta needs s > 1, got {s}")
    N = 10
    total = sum(j ** -s for j in range(1, N))
    total += N ** (1.0 - s) / (s - 1.0) + 0.5 * N ** -s
    total += s * N ** (-s - 1.0) / 12.0
    total -= s * (s + 1.0) * (s + 2.0) * N ** (-s - 3.0) / 720.0
    total += s * (s + 1) * (s + 2) * (s + 3) * (s + 4) * N ** (-s - 5.0) / 30240.0
    return total


_A_CACHE: dict[tuple[float, float], float] = {}


def _A(s: float, eta: float) -> float:
    a = _A_CACHE.get((s, eta))
    if a is None:
        a = _A_CACHE[(s, eta)] = math.log(zeta(s) / math.log(eta) ** s)
    return a


def stitched_boundary(v: float, alpha: float, v_min: float, c: float = 0.0, s: float = S_EXP,
                      eta: float = ETA) -> float:
    """The one-sided stitched boundary ``u(v)`` at crossing probability ``alpha`` (module docstring)."""
    if not v_min > 0:
        raise ValueError(f"v_min must be > 0, got {v_min}")
    use_v = v if v > v_min else v_min
    ell = s * math.log(math.log(eta * use_v / v_min)) + _A(s, eta) + math.log(1.0 / alpha)
    k1 = (eta ** 0.25 + eta ** -0.25) / math.sqrt(2.0)
    t2 = (math.sqrt(eta) + 1.0) / 2.0 * c * ell
    return math.sqrt(k1 * k1 * use_v * ell + t2 * t2) + t2


def stitched_radius(m: int, sigma2: float, alpha: float, m0: float = 8.0) -> float:
    """Two-sided radius of a mean of ``m`` sigma-sub-Gaussian rewards: ``u(m sigma^2; alpha/2) / m``,
    ``v_min = m0 sigma^2``. A stateless function of ``m`` (so it can be read at an earlier count)."""
    if m <= 0:
        return math.inf
    return stitched_boundary(m * sigma2, alpha / 2.0, m0 * sigma2) / m


@register_sequence
class StitchedCS(EagerConfidenceSequence):
    """Stitched sub-Gaussian CS for rewards in ``[low, high]`` (sigma = (high - low)/2) or for
    unbounded sigma-sub-Gaussian rewards (pass ``sigma``). See the module docstring.

    >>> cs = StitchedCS(0.01, sigma=1.0)
    >>> cs.update(0.3); cs.update(-0.1); cs.n, round(cs.mean, 2)
    (2, 0.1)
    >>> cs.update(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: reward for arm 'arm' is not finite: nan
    """

    kind = "stitched"
    SETTINGS = ("alpha", "low", "high", "sigma2", "m0")

    def __init__(self, alpha: float, arm: str = "arm", *, low: float | None = None, high: float | None = None,
                 sigma: float | None = None, m0: float = 8.0) -> None:
        super().__init__(alpha, arm)
        if sigma is None:
            if low is None or high is None or not (math.isfinite(low) and math.isfinite(high) and low < high):
                raise ValueError("StitchedCS needs finite low < high, or sigma")
            self.low, self.high = float(low), float(high)
            sigma = (self.high - self.low) / 2.0
        sigma = float(sigma)
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be finite and > 0, got {sigma}")
        self.sigma2 = sigma * sigma
        self.m0 = float(m0)
        self.lo = -math.inf if self.low is None else self.low
        self.hi = math.inf if self.high is None else self.high

    def _update(self, x: float) -> None:
        self.m += 1
        self.s += x
        r = stitched_radius(self.m, self.sigma2, self.alpha, self.m0)
        mean = self.s / self.m
        if mean - r > self.lo:
            self.lo = mean - r
        if mean + r < self.hi:
            self.hi = mean + r

    def snapshot(self) -> dict[str, Any]:
        d = super().snapshot()
        d["low"], d["high"] = self.low, self.high
        return d

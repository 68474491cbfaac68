"""Confidence radii and significance schedules shared by every streamarms policy.

Every formula used by more than one policy lives here, once, as a pure function of counts, sums and
significance levels. Functions accept Python floats (fast scalar path, used per reward) or numpy
arrays (vectorised path, used for whole-population checks) and return the same kind.

Sources:

* [ZWW17] Zhuang, Wang, Wang. *Identifying Outlier Arms in Multi-Armed Bandit*. NeurIPS 2017:
  Eq. 1 schedule, Hoeffding/McDiarmid radii (Sec. 4.3), l(k), Agresti-Coull radius.
* [ZZZZ20] Zhang, Zhuang, Zhang, Zhou. *Adaptive Double-Exploration Tradeoff for Outlier
  Detection*. AAAI 2020: delta_t schedule, adaptive threshold radius.
* [BH20] Ban, He. *Generic Outlier Detection in Multi-Armed Bandit*. KDD 2020: GOLD schedule.
* [YSLK18] Yu, Shao, Lyu, King. *Pure Exploration of Multi-Armed Bandits with Heavy-Tailed Payoffs*.
  UAI 2018: EA and TEA radii for rewards with a finite p-th moment (Lemma 1), the TEA truncation
  schedule, the SE-delta / SR-T schedules.
* [BCL13] Bubeck, Cesa-Bianchi, Lugosi. *Bandits with Heavy Tail*. IEEE Trans. Inf. Theory 2013:
  the median-of-means estimator (our radius for it is derived below, from the same two steps).
* [AB10] Audibert, Bubeck. *Best Arm Identification in Multi-Armed Bandits*. COLT 2010: the
  Successive Rejects phase lengths that SR-T reuses.

>>> round(hoeffding_radius(100, 1.0, 0.01), 4)
0.1517
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import overload

import numpy as np

__all__ = [
    "ArrayOrFloat",
    "zww17_significance",
    "ade_significance",
    "gold_significance",
    "hoeffding_radius",
    "l_k",
    "ksigma_threshold_radius",
    "optimal_rho",
    "agresti_coull_z",
    "agresti_coull_center",
    "agresti_coull_radius",
    "AgrestiCoullRadius",
    "delta_method_threshold_radius",
    "lipschitz_threshold_radius",
    "ade_threshold_radius",
    "ade_sigma_epsilon",
    "subgaussian_radius",
    "check_moment_params",
    "central_moment_bound",
    "ea_radius",
    "moment_exceeds",
    "tea_truncation_level",
    "tea_radius",
    "tea_radius_fixed_truncation",
    "mom_blocks",
    "mom_radius",
    "sr_log_bar",
    "sr_phase_lengths",
    "sr_truncation_level",
    "GOLD_EPSILON_MIN",
    "gold_b",
    "anytime_arm_significance",
    "fast_median",
    "median_mad_bounds",
    "distance_bounds",
]

ArrayOrFloat = float | np.ndarray
_STD_NORMAL = NormalDist()


@overload
def _sqrt(x: float) -> float: ...
@overload
def _sqrt(x: np.ndarray) -> np.ndarray: ...
def _sqrt(x: ArrayOrFloat) -> ArrayOrFloat:
    return math.sqrt(x) if isinstance(x, (float, int)) else np.sqrt(x)


# --------------------------------------------------------------------------------------------
# significance schedules
# --------------------------------------------------------------------------------------------
def zww17_significance(delta: float, n: int, T: int, n_thresholds: int = 1) -> float:
    """[ZWW17] Eq. 1: ``delta' = 6 delta / (pi^2 (n + 1) T^2)`` after ``T`` pulls.

    The ``n + 1`` counts the n arm intervals and the one threshold interval of the union bound.
    A two-sided rule estimates two thresholds; ``n_thresholds=2`` makes that ``n + 2``.

    >>> round(zww17_significance(0.1, 20, 100) * 1e6, 4)
    0.2895
    """
    return 6.0 * delta / (math.pi ** 2 * (n + n_thresholds) * float(T) ** 2)


def ade_significance(delta: float, n: int, t: int) -> float:
    """[ZZZZ20] ``delta_t = 3 delta / ((n + 4) pi^2 t^2)`` in round ``t``.

    >>> round(ade_significance(0.1, 10, 1), 6)
    0.002171
    """
    return 3.0 * delta / ((n + 4) * math.pi ** 2 * float(t) ** 2)


def gold_significance(delta: float, n: int, T: int) -> float:
    """[BH20] ``delta' = 6 delta / (pi^2 n T^2)``.

    >>> round(gold_significance(0.1, 10, 1), 6)
    0.006079
    """
    return 6.0 * delta / (math.pi ** 2 * n * float(T) ** 2)


# --------------------------------------------------------------------------------------------
# bounded rewards (Hoeffding / McDiarmid)
# --------------------------------------------------------------------------------------------
@overload
def hoeffding_radius(m: float, R: float, delta: float) -> float: ...
@overload
def hoeffding_radius(m: np.ndarray, R: float, delta: float) -> np.ndarray: ...
def hoeffding_radius(m: ArrayOrFloat, R: float, delta: float) -> ArrayOrFloat:
    """[ZWW17] Sec. 4.3: ``beta_i = R sqrt(log(1/delta) / (2 m_i))`` for rewards in [a, a + R].

    >>> round(hoeffding_radius(2, 1.0, math.exp(-4)), 6)
    1.0
    """
    return R * _sqrt(math.log(1.0 / delta) / (2.0 * m))


def l_k(k: float, n: int, delta: float) -> float:
    """[ZWW17] Thm. 2: ``l(k) = [sqrt((1 + k sqrt(n-1))^2 / n) + sqrt(k^2 / (2 log(pi^2 n^3 / (6 delta))))]^2``.

    The McDiarmid constant of the threshold ``mu + k sigma`` (sum of squared bounded differences
    times n).

    >>> round(l_k(0.0, 10, 0.1), 6)
    0.1
    """
    a = math.sqrt((1.0 + k * math.sqrt(n - 1)) ** 2 / n)
    b = math.sqrt(k * k / (2.0 * math.log(math.pi ** 2 * n ** 3 / (6.0 * delta))))
    return (a + b) ** 2


def ksigma_threshold_radius(R: float, lk: float, h: float, delta: float) -> float:
    """[ZWW17] Sec. 4.3: ``beta_theta = R sqrt(l(k) log(1/delta) / (2 h(m)))``, h = harmonic mean of m_i.

    >>> round(ksigma_threshold_radius(1.0, 2.0, 1.0, math.exp(-1)), 6)
    1.0
    """
    return R * math.sqrt(lk * math.log(1.0 / delta) / (2.0 * h))


def optimal_rho(k: float, n: int, delta: float) -> float:
    """[ZWW17] Eq. 6: ``rho* = ((n - 1)^2 / l(k))^(1/3)``, at least 1 (WRR needs rho >= 1).

    >>> round(optimal_rho(2.0, 20, 0.1), 4)
    3.7804
    """
    return max(1.0, ((n - 1) ** 2 / l_k(k, n, delta)) ** (1.0 / 3.0))


# --------------------------------------------------------------------------------------------
# Bernoulli rewards (Agresti-Coull)
# --------------------------------------------------------------------------------------------
def agresti_coull_z(delta: float, rule: str = "normal") -> float:
    """The z of the Agresti-Coull interval at significance ``delta``.

    ``rule="normal"`` (default): ``z_{delta/2} = Phi^{-1}(1 - delta/2)``, the standard normal quantile
    the notation means in Agresti & Coull (1998), cited by [ZWW17]: each side of the interval then
    fails with probability about delta/2 < delta, as [ZWW17] Sec. 4 requires.
    ``rule="paper"``: ``erf^{-1}(1 - delta/2)`` exactly as printed in [ZWW17] Sec. 4.3, which equals
    ``Phi^{-1}(1 - delta/4) / sqrt(2)``: narrower intervals (fewer pulls, weaker nominal coverage).
    Both are computed from the tail so that tiny ``delta`` (1e-20 and below) stays finite.

    >>> round(agresti_coull_z(0.05), 4)
    1.96
    >>> round(agresti_coull_z(0.05, "paper"), 4)
    1.5849
    """
    if rule == "normal":
        return -_STD_NORMAL.inv_cdf(delta / 2.0)
    if rule == "paper":
        # erf^{-1}(1 - q) = Phi^{-1}(1 - q/2) / sqrt(2)
        return -_STD_NORMAL.inv_cdf(delta / 4.0) / math.sqrt(2.0)
    raise ValueError(f"unknown Agresti-Coull z rule {rule!r}: use 'normal' or 'paper'")


@overload
def agresti_coull_center(m: float, m_plus: float, z: float) -> float: ...
@overload
def agresti_coull_center(m: np.ndarray, m_plus: ArrayOrFloat, z: float) -> np.ndarray: ...
@overload
def agresti_coull_center(m: ArrayOrFloat, m_plus: np.ndarray, z: float) -> np.ndarray: ...
def agresti_coull_center(m: ArrayOrFloat, m_plus: ArrayOrFloat, z: float) -> ArrayOrFloat:
    """``p~ = (m+ + z^2/2) / (m + z^2)``.

    >>> agresti_coull_center(10, 5, 2.0)
    0.5
    """
    z2 = z * z
    return (m_plus + z2 / 2.0) / (m + z2)


@overload
def agresti_coull_radius(m: float, m_plus: float, z: float) -> float: ...
@overload
def agresti_coull_radius(m: np.ndarray, m_plus: ArrayOrFloat, z: float) -> np.ndarray: ...
@overload
def agresti_coull_radius(m: ArrayOrFloat, m_plus: np.ndarray, z: float) -> np.ndarray: ...
def agresti_coull_radius(m: ArrayOrFloat, m_plus: ArrayOrFloat, z: float) -> ArrayOrFloat:
    """[ZWW17] Sec. 4.3: ``beta_i = z sqrt(p~ (1 - p~) / m_i)``, ``m_plus`` = number of 1s.

    The radius is increasing in z (p~ moves toward 1/2 as z grows), which the incremental activity
    check of the k-sigma policies relies on.

    >>> round(agresti_coull_radius(100, 50, 2.0), 6)
    0.1
    """
    p = agresti_coull_center(m, m_plus, z)
    return z * _sqrt(p * (1.0 - p) / m)


class AgrestiCoullRadius:
    """:func:`agresti_coull_radius` with ``z`` fixed, as one call (no nested calls): the same operations
    in the same order, so the same floats -- the k-sigma policies call it twice per pull (and the
    fused pull of :mod:`streamarms.policies.ksigma_batch` inlines it from ``z``, ``z2``, ``half``).

    >>> f = AgrestiCoullRadius(2.0)
    >>> f(100.0, 50.0) == agresti_coull_radius(100.0, 50.0, 2.0), f(np.array([100.0]), np.array([50.0]))
    (True, array([0.1]))
    """

    __slots__ = ("z", "z2", "half")

    def __init__(self, z: float) -> None:
        self.z = z
        self.z2 = z2 = z * z
        self.half = z2 / 2.0

    def __call__(self, m: ArrayOrFloat, m_plus: ArrayOrFloat) -> ArrayOrFloat:
        p = (m_plus + self.half) / (m + self.z2)
        v = p * (1.0 - p) / m
        return self.z * (math.sqrt(v) if isinstance(v, (float, int)) else np.sqrt(v))


def delta_method_threshold_radius(k: float, y: np.ndarray, beta: np.ndarray,
                                  two_sided: bool = False) -> float:
    """[ZWW17] Sec. 4.3 Bernoulli threshold radius: each arm's radius propagated through mu and sigma.

    ``beta_theta = sqrt( sum_i ( (1/n) + k (y_i - mu) / (n sigma) )^2 beta_i^2 )``, the first-order
    (delta-method) propagation of the arm radii to ``theta = mu + k sigma`` (d theta / d y_i =
    1/n + k (y_i - mu)/(n sigma)). The extracted text of the paper is garbled at this formula
    (``(k y_i / (n sqrt(sigma)))^2 + beta_i^2 / n``); this is the reading that matches its stated intent
    (Zhuang, Wang, Wang, NeurIPS 2017, Sec. 4.3). For the lower threshold ``mu - k sigma`` the weights are
    ``1/n - k (y_i - mu)/(n sigma)``; ``two_sided=True`` returns the larger of the two radii.

    When sigma is 0 (all estimates equal) the derivative does not exist; we then use the
    Lipschitz bound :func:`lipschitz_threshold_radius`, which holds everywhere.

    >>> round(delta_method_threshold_radius(0.0, np.array([0.2, 0.4]), np.array([0.1, 0.1])), 6)
    0.070711
    """
    n = len(y)
    mu = float(np.mean(y))
    sigma = float(np.sqrt(np.mean((y - mu) ** 2)))
    if sigma <= 0.0:
        return lipschitz_threshold_radius(k, beta)
    w = 1.0 / n + k * (y - mu) / (n * sigma)
    r = float(np.sqrt(np.sum((w * beta) ** 2)))
    if two_sided:
        w2 = 1.0 / n - k * (y - mu) / (n * sigma)
        r = max(r, float(np.sqrt(np.sum((w2 * beta) ** 2))))
    return r


def lipschitz_threshold_radius(k: float, beta: np.ndarray) -> float:
    """A threshold radius implied by the arm intervals alone, for any reward model.

    If ``|y_hat_i - y_i| <= beta_i`` for every arm then ``|mu_hat - mu| <= mean(beta)`` and, because the
    population standard deviation is ``1/sqrt(n)``-Lipschitz in the Euclidean norm,
    ``|sigma_hat - sigma| <= sqrt(mean(beta^2))``. Hence
    ``|theta_hat - theta| <= mean(beta) + k sqrt(mean(beta^2))`` for both ``mu +- k sigma``.

    >>> round(lipschitz_threshold_radius(2.0, np.array([0.1, 0.1])), 6)
    0.3
    """
    beta = np.asarray(beta, dtype=float)
    return float(np.mean(beta) + k * np.sqrt(np.mean(beta ** 2)))


# --------------------------------------------------------------------------------------------
# AAAI'20 adaptive threshold radius (ADE)
# --------------------------------------------------------------------------------------------
def ade_sigma_epsilon(R: float, R_prime: float, b: float, m_theta: int, delta_t: float) -> float:
    """[ZZZZ20] Lemma 4: ``eps_sigma = (R' + 2 b R) sqrt(log(1 / delta_t) / (2 m_theta))``.

    The paper prints this quantity twice. Lemma 2/3 state it with ``log(6 / delta_t)`` (the event
    ``|sigma_hat^2 - sigma^2| <= eps`` then fails with probability delta_t); Lemma 4, which defines
    the threshold radius ``r_theta`` that Alg. 1 uses, and the proof of Thm. 2 restate it with
    ``log(1 / delta_t)`` (failure 6 delta_t; with the 2 delta_t of mu that is the 8 delta_t per round
    that the union bound ``sum_t (2n + 8) delta_t = delta`` of Lemma 5 pays for). ``r_theta`` contains
    ``sqrt(2 / U_sigma) eps_sigma`` with the *same* eps_sigma that enters ``U_sigma = min(sigma_hat^2 +
    eps_sigma)``: Lemma 3's last step needs ``U_sigma <= sigma_hat^2 + eps_sigma``. Building U_sigma from
    the larger log(6 / delta_t) value while r_theta uses log(1 / delta_t) would break that step (the
    worst-case sigma error then exceeds the radius by up to ~1.6%), so we use the Lemma 4 reading,
    the only one consistent with the printed r_theta and the delta_t schedule.

    >>> round(ade_sigma_epsilon(1.0, 1.0, 1.0, 2, math.exp(-4)), 6)
    3.0
    """
    return (R_prime + 2.0 * b * R) * math.sqrt(math.log(1.0 / delta_t) / (2.0 * m_theta))


def ade_threshold_radius(R: float, R_prime: float, b: float, k: float, U_sigma: float,
                         m_theta: int, delta_t: float) -> float:
    """[ZZZZ20] ``r_theta = (R + sqrt(2) k (R' + 2 b R) / sqrt(U_sigma)) sqrt(log(1/delta_t) / (2 m_theta))``.

    ``R = b - a``, ``R' = b^2 - a^2``, ``U_sigma`` the running minimum of ``sigma_hat^2 + eps_sigma``.

    >>> round(ade_threshold_radius(1.0, 1.0, 1.0, 0.0, 1.0, 2, math.exp(-4)), 6)
    1.0
    """
    return (R + math.sqrt(2.0) * k * (R_prime + 2.0 * b * R) / math.sqrt(U_sigma)) * \
        math.sqrt(math.log(1.0 / delta_t) / (2.0 * m_theta))


# --------------------------------------------------------------------------------------------
# sub-Gaussian rewards
# --------------------------------------------------------------------------------------------
@overload
def subgaussian_radius(m: float, sigma: float, delta: float) -> float: ...
@overload
def subgaussian_radius(m: np.ndarray, sigma: float, delta: float) -> np.ndarray: ...
def subgaussian_radius(m: ArrayOrFloat, sigma: float, delta: float) -> ArrayOrFloat:
    """Two-sided sub-Gaussian radius ``sigma sqrt(2 log(2/delta) / m)``.

    Rewards in ``[a, b]`` are sub-Gaussian with ``sigma = (b - a) / 2`` (Hoeffding's lemma), which gives
    Hoeffding's two-sided radius ``R sqrt(log(2/delta) / (2 m))``. Heavy-tailed rewards have no such
    sigma: using this radius on them is the mistake [YSLK18] warns about.

    >>> round(subgaussian_radius(2, 1.0, 2 * math.exp(-1)), 6)
    1.0
    """
    return sigma * _sqrt(2.0 * math.log(2.0 / delta) / m)


# --------------------------------------------------------------------------------------------
# heavy-tailed rewards: finite p-th moment, p in (1, 2] ([YSLK18], [BCL13])
# --------------------------------------------------------------------------------------------
def check_moment_params(p: float, B: float) -> None:
    """Raise ``ValueError`` unless ``p`` is in (1, 2] and ``B`` is a finite number > 0.

    >>> check_moment_params(2.5, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: moment order p must be in (1, 2], got 2.5
    """
    if not (isinstance(p, (int, float)) and 1.0 < p <= 2.0):
        raise ValueError(f"moment order p must be in (1, 2], got {p!r}")
    if not (isinstance(B, (int, float)) and math.isfinite(B) and B > 0.0):
        raise ValueError(f"moment bound B must be a finite number > 0, got {B!r}")


def central_moment_bound(p: float, B: float) -> float:
    """A bound on the central moment ``E|X - mu|^p`` implied by the raw one ``E|X|^p <= B``: ``2^p B``.

    ``|a + b|^p <= 2^(p-1) (|a|^p + |b|^p)`` and ``|mu|^p <= E|X|^p`` (Jensen).

    >>> central_moment_bound(2.0, 7.0)
    28.0
    """
    return 2.0 ** p * B


@overload
def ea_radius(m: float, p: float, C: float, delta: float) -> float: ...
@overload
def ea_radius(m: np.ndarray, p: float, C: float, delta: float) -> np.ndarray: ...
def ea_radius(m: ArrayOrFloat, p: float, C: float, delta: float) -> ArrayOrFloat:
    """[YSLK18] Lemma 1, empirical average (EA): ``(2 C / (m^(p-1) delta))^(1/p)``.

    ``C`` bounds the central p-th moment ``E|X - mu|^p``. Chebyshev-type: the radius grows like
    ``delta^(-1/p)``, not like ``sqrt(log(1/delta))``; that is the price of heavy tails for the mean.

    >>> round(ea_radius(100, 2.0, 1.0, 0.02), 6)
    1.0
    """
    return (2.0 * C / (m ** (p - 1.0) * delta)) ** (1.0 / p)


def moment_exceeds(x: float, p: float, level: float) -> bool:
    """``|x|^p > level``, the truncated mean's test (without the root, as the papers write it); a power past a
    float's range (``1e155 ** 2``) exceeds every level, where Python's ``**`` raises ``OverflowError``.

    >>> moment_exceeds(3.0, 2.0, 8.0), moment_exceeds(1e155, 2.0, 1e300), moment_exceeds(-2.0, 2.0, 4.0)
    (True, True, False)
    """
    try:
        return abs(x) ** p > level
    except OverflowError:
        return True


@overload
def tea_truncation_level(i: float, p: float, B: float, delta: float) -> float: ...
@overload
def tea_truncation_level(i: np.ndarray, p: float, B: float, delta: float) -> np.ndarray: ...
def tea_truncation_level(i: ArrayOrFloat, p: float, B: float, delta: float) -> ArrayOrFloat:
    """[YSLK18] Eq. 9 / Alg. 1 line 6: ``b_i = (B i / log(2/delta))^(1/p)``.

    The i-th sample of an arm (1-based) enters the truncated empirical average (TEA) iff
    ``|x_i| <= b_i``; otherwise it contributes 0 (and still counts in the denominator).

    >>> round(tea_truncation_level(4, 2.0, 1.0, 2 * math.exp(-1)), 6)
    2.0
    """
    return (B * i / math.log(2.0 / delta)) ** (1.0 / p)


@overload
def tea_radius(m: float, p: float, B: float, delta: float) -> float: ...
@overload
def tea_radius(m: np.ndarray, p: float, B: float, delta: float) -> np.ndarray: ...
def tea_radius(m: ArrayOrFloat, p: float, B: float, delta: float) -> ArrayOrFloat:
    """[YSLK18] Lemma 1, Eq. 9 (TEA): ``5 B^(1/p) (log(2/delta) / m)^((p-1)/p)``.

    Holds with probability ``1 - delta`` when the truncation levels were built with the same delta
    (:func:`tea_truncation_level`); for any other delta use :func:`tea_radius_fixed_truncation`.

    >>> round(tea_radius(4, 2.0, 1.0, 2 * math.exp(-1)), 6)
    2.5
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return 5.0 * B ** (1.0 / p) * (math.log(2.0 / delta) / m) ** ((p - 1.0) / p)


@overload
def tea_radius_fixed_truncation(m: float, p: float, B: float, delta: float, delta0: float) -> float: ...
@overload
def tea_radius_fixed_truncation(m: np.ndarray, p: float, B: float, delta: float, delta0: float) -> np.ndarray: ...
def tea_radius_fixed_truncation(m: ArrayOrFloat, p: float, B: float, delta: float,
                                delta0: float) -> ArrayOrFloat:
    """TEA radius at significance ``delta`` when the truncation levels were built with ``delta0``.

    The policies of the other families shrink their significance as they run (``delta'`` of
    [ZWW17] Eq. 1), while the truncation level of a sample must be fixed when it arrives; so the
    levels use a fixed ``delta0`` and the radius is re-derived for any ``delta`` with the two steps of
    [YSLK18] Lemma 1. With ``L = log(2/delta)``, ``L0 = log(2/delta0)``, ``b_i = (B i / L0)^(1/p)``:

    * bias: ``|E[x 1{|x| <= b_i}] - mu| <= B / b_i^(p-1)``; summed over ``i <= m`` and divided by m this is
      at most ``p B^(1/p) (L0 / m)^((p-1)/p)`` (``sum_i i^(-(p-1)/p) <= p m^(1/p)``);
    * deviation: the centred truncated samples are martingale differences bounded by
      ``2 b_m`` with conditional variances summing to at most ``m B b_m^(2-p)``; Freedman's inequality
      bounds their sum by ``sqrt(2 V L) + (2/3)(2 b_m) L`` with probability ``1 - delta``.

    Together: ``B^(1/p) m^(-(p-1)/p) [ sqrt(2 L) L0^(-(2-p)/(2p)) + (4/3) L L0^(-1/p) + p L0^((p-1)/p) ]``.
    At ``delta = delta0`` the bracket is ``(sqrt(2) + 4/3 + p) L^((p-1)/p) <= 4.75 L^((p-1)/p)``, inside the
    paper's constant 5. We return the larger of this and :func:`tea_radius` at ``delta``: valid for every
    delta, exactly the paper's radius at ``delta = delta0``, and increasing as delta decreases.
    ``m = 0`` gives an infinite radius.

    >>> tea_radius_fixed_truncation(100, 2.0, 1.0, 0.01, 0.01) == tea_radius(100, 2.0, 1.0, 0.01)
    True
    >>> round(tea_radius_fixed_truncation(100, 2.0, 1.0, 1e-9, 0.01), 4)
    2.3554
    """
    L = math.log(2.0 / delta)
    L0 = math.log(2.0 / delta0)
    bracket = max(5.0 * L ** ((p - 1.0) / p),
                  math.sqrt(2.0 * L) * L0 ** (-(2.0 - p) / (2.0 * p))
                  + (4.0 / 3.0) * L * L0 ** (-1.0 / p)
                  + p * L0 ** ((p - 1.0) / p))
    scale = B ** (1.0 / p) * bracket
    if isinstance(m, np.ndarray):
        with np.errstate(divide="ignore"):
            return scale * np.asarray(m, dtype=float) ** (-(p - 1.0) / p)
    return math.inf if m <= 0 else scale * m ** (-(p - 1.0) / p)


def mom_blocks(delta: float, p: float = 2.0) -> int:
    """Number of blocks of the median of means tuned for significance ``delta``: ``ceil(2 log(1/delta) / (p-1))``.

    This k minimises :func:`mom_radius` at ``delta`` (up to the rounding of block sizes): the radius^p is
    proportional to ``delta^(-2/k) k^(p-1)``. (For comparison, [BCL13] use ``8 log(e^(1/8) / delta)``
    blocks with a Hoeffding step; our binomial step allows fewer, larger blocks.)

    >>> mom_blocks(0.05)
    6
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return max(1, math.ceil(2.0 * math.log(1.0 / delta) / (p - 1.0)))


@overload
def mom_radius(m: float, p: float, C: float, delta: float, k: int) -> float: ...
@overload
def mom_radius(m: np.ndarray, p: float, C: float, delta: float, k: int) -> np.ndarray: ...
def mom_radius(m: ArrayOrFloat, p: float, C: float, delta: float, k: int) -> ArrayOrFloat:
    """Radius of the median of ``k`` block means of ``m`` samples at significance ``delta``.

    Blocks hold at least ``N = floor(m / k)`` independent samples each. A block mean is off by ``eta`` or
    more with probability ``q <= 2 C / (N^(p-1) eta^p)`` (von Bahr-Esseen and Markov, as for EA in
    [YSLK18] Lemma 1). The median is off by ``eta`` only if at least ``h = ceil(k/2)`` blocks are, which has
    probability at most ``comb(k, h) q^h``. Setting that to delta:
    ``q = (delta / comb(k, h))^(1/h)`` and ``eta = (2 C / (q N^(p-1)))^(1/p)``. Infinite while ``m < k``.
    Valid for every delta; tightest near the delta ``k`` was tuned for (:func:`mom_blocks`).

    >>> round(mom_radius(600, 2.0, 1.0, 0.05, 6), 4)
    0.3839
    >>> mom_radius(5, 2.0, 1.0, 0.05, 6)
    inf
    """
    h = (k + 1) // 2
    q = min(1.0, (delta / math.comb(k, h)) ** (1.0 / h))
    if isinstance(m, np.ndarray):
        N_arr = np.floor(m / k)
        with np.errstate(divide="ignore"):
            r = (2.0 * C / (q * N_arr ** (p - 1.0))) ** (1.0 / p)
        return np.where(N_arr >= 1, r, np.inf)
    N = math.floor(m / k)
    if N < 1:
        return math.inf
    return (2.0 * C / (q * N ** (p - 1.0))) ** (1.0 / p)


# --------------------------------------------------------------------------------------------
# Successive Rejects schedule ([AB10], reused by SR-T of [YSLK18])
# --------------------------------------------------------------------------------------------
def sr_log_bar(K: int) -> float:
    """[AB10] ``log_bar(K) = 1/2 + sum_{i=2}^{K} 1/i``.

    >>> round(sr_log_bar(3), 6)
    1.333333
    """
    return 0.5 + sum(1.0 / i for i in range(2, K + 1))


def sr_phase_lengths(K: int, T: int) -> list[int]:
    """[AB10] / [YSLK18] Alg. 2 line 8: ``n_k = ceil((T - K) / (log_bar(K) (K + 1 - k)))``, k = 1..K-1.

    ``n_k`` is the number of samples each surviving arm has at the end of phase k. The budget is never
    exceeded: ``n_1 + ... + n_{K-1} + n_{K-1} <= T`` (the two finalists both reach ``n_{K-1}``).

    >>> sr_phase_lengths(3, 100)
    [25, 37]
    """
    lb = sr_log_bar(K)
    return [math.ceil((T - K) / (lb * (K + 1 - k))) for k in range(1, K)]


def sr_truncation_level(p: float, B: float, epsilon: float) -> float:
    """SR-T(TEA) fixed truncation level ``b = (3 B / epsilon)^(1/(p-1))`` ([YSLK18] Alg. 2 line 3).

    The extracted text of the paper keeps only "b <- 3B ... p" of this line; we read it as the level
    whose truncation bias ``B / b^(p-1)`` is ``epsilon / 3``, with the design parameter ``epsilon > 0``
    set at most the smallest gap ("usually, we set epsilon <= Delta_k for any k"), which is what the
    truncation must achieve for the analysis (bias a third of the gap).

    >>> sr_truncation_level(2.0, 7.0, 0.5)
    42.0
    """
    return (3.0 * B / epsilon) ** (1.0 / (p - 1.0))


# --------------------------------------------------------------------------------------------
# KDD'20 GOLD neighbourhood coefficient
# --------------------------------------------------------------------------------------------
#: [BH20] Eq. 3 needs ``epsilon > e^(1/16) - 1`` (about 0.0645) so that ``b > 0``.
GOLD_EPSILON_MIN = math.exp(1.0 / 16.0) - 1.0


def gold_b(epsilon: float) -> float:
    """[BH20] Eq. 3: ``b = (1 + e^(1/16) + eps) / (1 - e^(1/16) + eps)``, defined for eps > e^(1/16) - 1.

    Arms i, j are neighbours while ``|y_hat_i - y_hat_j| <= b (beta_i + beta_j)``; b > 1 always.

    >>> round(gold_b(2.5), 4)
    1.8741
    >>> gold_b(0.05)
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be > e^(1/16) - 1 = 0.064494 (Ban & He, KDD 2020, Eq. 3), got 0.05
    """
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon)) or epsilon <= GOLD_EPSILON_MIN:
        raise ValueError(f"epsilon must be > e^(1/16) - 1 = {GOLD_EPSILON_MIN:.6f} "
                         f"(Ban & He, KDD 2020, Eq. 3), got {epsilon!r}")
    e = math.exp(1.0 / 16.0)
    return (1.0 + e + epsilon) / (1.0 - e + epsilon)


# --------------------------------------------------------------------------------------------
# robust threshold: median and MAD of the arms' means, bounded from the arms' intervals
# --------------------------------------------------------------------------------------------
#: consistency constant of the MAD for normal data: 1.4826 MAD estimates sigma
MAD_NORMAL_CONSTANT = 1.4826


@overload
def anytime_arm_significance(delta: float, n: int, m: float) -> float: ...
@overload
def anytime_arm_significance(delta: float, n: int, m: np.ndarray) -> np.ndarray: ...
def anytime_arm_significance(delta: float, n: int, m: ArrayOrFloat) -> ArrayOrFloat:
    """Per-arm anytime schedule ``delta_m = 6 delta / (pi^2 n m^2)`` for an arm's m-th sample mean.

    A union bound over the n arms and every sample count m >= 1 (sum_m 1/m^2 = pi^2/6) gives
    ``P(exists i, m: |y_hat_{i,m} - y_i| > beta(m, delta_m)) <= delta``. Because ``y_hat_{i,m}`` is the
    mean of arm i's first m rewards, this holds under *any* adaptive sampling order (unlike a schedule in
    the total pull count T, whose union bound conditions on the order). The radius of an arm then
    changes only when the arm is sampled.

    >>> round(anytime_arm_significance(0.1, 10, 1), 6)
    0.006079
    """
    return 6.0 * delta / (math.pi ** 2 * n * (m * m if isinstance(m, (int, float)) else np.square(m, dtype=float)))


def fast_median(a: np.ndarray, axis: int = -1) -> np.ndarray | float:
    """``np.median`` along ``axis`` via one ``np.partition`` (same values, a fraction of the overhead).

    >>> fast_median(np.array([3.0, 1.0, 2.0])), fast_median(np.array([[4.0, 1.0, 3.0, 2.0]]), axis=1).tolist()
    (2.0, [2.5])
    """
    a = np.asarray(a, dtype=float)
    n = a.shape[axis]
    k = n // 2
    if n % 2:
        out = np.take(np.partition(a, k, axis=axis), k, axis=axis)
    else:
        p = np.partition(a, (k - 1, k), axis=axis)
        out = (np.take(p, k - 1, axis=axis) + np.take(p, k, axis=axis)) / 2.0
    return float(out) if np.ndim(out) == 0 else out


def median_mad_bounds(lower: np.ndarray, upper: np.ndarray, grid: int = 9) -> tuple[float, float, float, float]:
    """Bounds on the median and the MAD of unknown means ``y`` known only through ``lower <= y <= upper``.

    Returns ``(med_lo, med_hi, mad_lo, mad_hi)`` such that, whenever every ``y_i`` lies in
    ``[lower_i, upper_i]``, ``med_lo <= median(y) <= med_hi`` and ``mad_lo <= MAD(y) <= mad_hi``, where
    ``MAD(y) = median_i |y_i - median(y)|`` (median of an even count = mean of the two middle values).

    Derivation (deterministic, so it spends no extra confidence):

    * the median is non-decreasing in every coordinate: ``median(lower) <= median(y) <= median(upper)``;
    * whatever the median's value ``c`` in ``[med_lo, med_hi]``, ``|y_i - c|`` lies between
      ``f_i(c) = dist(c, [lower_i, upper_i])`` and ``F_i(c) = max(upper_i - c, c - lower_i)``, and the median is
      monotone again, so ``f(c) = median_i f_i(c) <= MAD(y) <= median_i F_i(c) = F(c)`` at ``c = median(y)``;
    * hence ``min_c f(c) <= MAD(y) <= max_c F(c)`` over ``[med_lo, med_hi]``. ``f`` and ``F`` are
      1-Lipschitz in ``c`` (medians of 1-Lipschitz functions), so on each cell ``[c_g, c_g + h]`` of a grid
      ``min f >= (f(c_g) + f(c_g + h) - h) / 2`` and ``max F <= (F(c_g) + F(c_g + h) + h) / 2``: exact bounds
      from ``grid`` evaluations.

    Keeping the median's position and the arms' deviations together matters: bounding every
    ``|y_i - median|`` against the whole median interval at once (``grid=1``) widens the MAD interval from
    about ``MAD +- w`` to ``MAD +- 2w`` for arms of half-width w.

    >>> lo = np.array([0.0, 1.0, 2.0, 10.0]); hi = lo + 0.5
    >>> tuple(round(float(v), 6) for v in median_mad_bounds(lo, hi))
    (1.5, 2.0, 0.71875, 1.5)
    >>> y = np.linspace(0.0, 1.0, 101)
    >>> [round(float(v), 3) for v in median_mad_bounds(y - 0.01, y + 0.01)]
    [0.49, 0.51, 0.24, 0.265]
    """
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    med_lo = float(fast_median(lower))  # 1-D input: a scalar
    med_hi = float(fast_median(upper))
    if grid <= 1 or med_hi <= med_lo:
        d_lo, d_hi = distance_bounds(lower, upper, med_lo, med_hi)
        return med_lo, med_hi, float(fast_median(d_lo)), float(fast_median(d_hi))
    c = np.linspace(med_lo, med_hi, grid)[:, None]
    h = (med_hi - med_lo) / (grid - 1)
    f = np.asarray(fast_median(np.maximum(0.0, np.maximum(lower[None, :] - c, c - upper[None, :])), axis=1))
    F = np.asarray(fast_median(np.maximum(upper[None, :] - c, c - lower[None, :]), axis=1))
    mad_lo = float(np.min((f[:-1] + f[1:] - h) / 2.0))
    mad_hi = float(np.max((F[:-1] + F[1:] + h) / 2.0))
    return med_lo, med_hi, max(0.0, mad_lo), mad_hi


def distance_bounds(lower: np.ndarray, upper: np.ndarray, med_lo: float,
                    med_hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-arm bounds ``[d_lo, d_hi]`` on ``|y_i - med|`` for y_i in [lower_i, upper_i], med in [med_lo, med_hi].

    >>> [a.tolist() for a in distance_bounds(np.array([0.0, 3.0]), np.array([1.0, 4.0]), 1.5, 2.0)]
    [[0.5, 1.0], [2.0, 2.5]]
    """
    d_lo = np.maximum(0.0, np.maximum(lower - med_hi, med_lo - upper))
    d_hi = np.maximum(upper - med_lo, med_hi - lower)
    return d_lo, d_hi

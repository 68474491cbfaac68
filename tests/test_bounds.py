"""Every bound against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamarms import bounds


def test_zww17_significance():
    # 6 * 0.1 / (pi^2 * 21 * 100^2)
    assert bounds.zww17_significance(0.1, 20, 100) == pytest.approx(0.6 / (math.pi ** 2 * 21 * 1e4))
    assert bounds.zww17_significance(0.1, 20, 100, n_thresholds=2) == pytest.approx(0.6 / (math.pi ** 2 * 22 * 1e4))


def test_ade_and_gold_significance():
    assert bounds.ade_significance(0.05, 6, 3) == pytest.approx(0.15 / (10 * math.pi ** 2 * 9))
    assert bounds.gold_significance(0.05, 6, 3) == pytest.approx(0.3 / (math.pi ** 2 * 6 * 9))


def test_hoeffding_radius_hand_value():
    # R = 2, m = 8, delta = e^-4: 2 * sqrt(4 / 16) = 1
    assert bounds.hoeffding_radius(8, 2.0, math.exp(-4)) == pytest.approx(1.0)
    arr = bounds.hoeffding_radius(np.array([8.0, 32.0]), 2.0, math.exp(-4))
    assert arr == pytest.approx([1.0, 0.5])


def test_l_k_hand_value():
    # n = 5, k = 1, delta = 0.1: sqrt((1 + 2)^2 / 5) = 1.341641; sqrt(1 / (2 log(pi^2 125 / 0.6)))
    a = 3 / math.sqrt(5)
    b = math.sqrt(1 / (2 * math.log(math.pi ** 2 * 125 / 0.6)))
    assert bounds.l_k(1.0, 5, 0.1) == pytest.approx((a + b) ** 2)
    assert bounds.l_k(1.0, 5, 0.1) == pytest.approx(2.5525, abs=1e-4)


def test_ksigma_threshold_radius_uses_harmonic_mean():
    # R = 1, l = 2, h = 4, log(1/delta) = 4: sqrt(2 * 4 / 8) = 1
    assert bounds.ksigma_threshold_radius(1.0, 2.0, 4.0, math.exp(-4)) == pytest.approx(1.0)


def test_optimal_rho_eq6():
    lk = bounds.l_k(2.0, 20, 0.1)
    assert bounds.optimal_rho(2.0, 20, 0.1) == pytest.approx((19 ** 2 / lk) ** (1 / 3))
    assert bounds.optimal_rho(10.0, 2, 0.1) == 1.0  # floored at 1


def test_agresti_coull_hand_values():
    z = 2.0
    # m = 20, m+ = 4: p~ = (4 + 2) / 24 = 0.25, radius = 2 sqrt(0.1875 / 20)
    assert bounds.agresti_coull_center(20, 4, z) == pytest.approx(0.25)
    assert bounds.agresti_coull_radius(20, 4, z) == pytest.approx(2 * math.sqrt(0.1875 / 20))
    assert bounds.agresti_coull_z(0.05) == pytest.approx(1.959964, abs=1e-6)
    # erf^-1(1 - 0.05/2) = erf^-1(0.975) = 1.584911
    assert bounds.agresti_coull_z(0.05, "paper") == pytest.approx(1.584911, abs=1e-6)
    # tiny deltas stay finite (1 - delta/2 would round to 1)
    assert 9 < bounds.agresti_coull_z(1e-20) < 10
    with pytest.raises(ValueError, match="normal.*paper"):
        bounds.agresti_coull_z(0.1, "other")


def test_agresti_coull_radius_increasing_in_z():
    for m, mp in [(1, 0), (1, 1), (10, 3), (1000, 999), (50, 25)]:
        zs = np.linspace(0.5, 12, 200)
        r = [bounds.agresti_coull_radius(m, mp, z) for z in zs]
        assert all(b >= a for a, b in zip(r, r[1:]))


def test_delta_method_threshold_radius_hand_value():
    y = np.array([0.0, 1.0])
    beta = np.array([0.1, 0.2])
    # mu = .5, sigma = .5, k = 1: w = 1/2 + (y - .5)/(2 * .5) = [0, 1]: radius = 0.2
    assert bounds.delta_method_threshold_radius(1.0, y, beta) == pytest.approx(0.2)
    # lower threshold weights [1, 0]: radius 0.1; two-sided gives the larger
    assert bounds.delta_method_threshold_radius(1.0, y, beta, two_sided=True) == pytest.approx(0.2)
    # sigma = 0 falls back to the Lipschitz bound
    same = np.array([0.3, 0.3])
    assert bounds.delta_method_threshold_radius(1.0, same, beta) == pytest.approx(
        bounds.lipschitz_threshold_radius(1.0, beta))


def test_lipschitz_threshold_radius_hand_value_and_validity():
    beta = np.array([0.1, 0.3])
    assert bounds.lipschitz_threshold_radius(2.0, beta) == pytest.approx(0.2 + 2 * math.sqrt(0.05))
    rng = np.random.default_rng(0)
    for _ in range(200):  # any perturbation within the radii moves theta by at most the radius
        y = rng.random(7)
        b = rng.random(7) * 0.1
        y2 = y + b * rng.uniform(-1, 1, 7)
        th = lambda v: v.mean() + 1.5 * v.std()
        assert abs(th(y2) - th(y)) <= bounds.lipschitz_threshold_radius(1.5, b) + 1e-12


def test_ade_radius_hand_values():
    # R = 1, R' = 1, b = 1: eps = 3 sqrt(log(1/dt) / (2 m))
    # Lemma 4 reading: log(1/delta_t), not Lemma 2's log(6/delta_t) (see bounds.ade_sigma_epsilon)
    assert bounds.ade_sigma_epsilon(1.0, 1.0, 1.0, 8, math.exp(-16)) == pytest.approx(3.0)
    # r = (1 + sqrt2 * 2 * 3 / sqrt(4)) sqrt(log(1/dt)/(2 m)) with log(1/dt) = 16, m = 8: (1 + 3 sqrt2) * 1
    assert bounds.ade_threshold_radius(1.0, 1.0, 1.0, 2.0, 4.0, 8, math.exp(-16)) == pytest.approx(1 + 3 * math.sqrt(2))

"""Robust mean estimators (TEA, median of means), their radii, and the heavy_tailed reward model."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from river import bandit, stats
from river.checks import common
from stats_util import max_failures

from streamarms import bounds
from streamarms.estimators import MedianOfMeans, TruncatedMean
from streamarms.models import HeavyTailedModel, SubGaussianModel, make_model, model_from_dict

# river.checks.yield_checks(estimator): the checks that do not need a learn_one dataset. check_tags is
# for river Estimators (learners), not statistics: river's own stats.Mean has no _tags either.
RIVER_STATISTIC_CHECKS = [
    common.check_repr, common.check_str, common.check_clone_same_class, common.check_clone_is_idempotent,
    common.check_init_has_default_params_for_tests, common.check_init_default_params_are_not_mutable,
    common.check_doc, common.check_clone_changes_memory_addresses, common.check_mutate_can_be_idempotent,
    common.check_pickling_supports_roundtrip, common.check_repr_roundtrips_clone,
    common.check_clone_with_new_params_applies, common.check_get_params_matches_signature,
]


@pytest.mark.parametrize("cls", [TruncatedMean, MedianOfMeans])
@pytest.mark.parametrize("check", RIVER_STATISTIC_CHECKS, ids=lambda c: c.__name__)
def test_river_estimator_checks(cls, check):
    for params in [{}, *cls._unit_test_params()]:
        check(cls(**params).clone())


@pytest.mark.parametrize("cls", [TruncatedMean, MedianOfMeans])
def test_is_a_river_univariate_and_pickles_with_state(cls):
    est = cls()
    assert isinstance(est, stats.base.Univariate)
    for x in [0.5, -1.0, 3.0, 1e6, 2.0]:
        est.update(x)
    clone = pickle.loads(pickle.dumps(est))
    assert clone.get() == est.get() and clone.n == est.n == 5
    assert est.clone().n == 0  # clone = same parameters, fresh state


@pytest.mark.parametrize("reward_obj", [TruncatedMean(p=2.0, B=4.0), MedianOfMeans(n_blocks=3)],
                         ids=["tea", "mom"])
def test_river_ucb_runs_with_robust_reward_obj(reward_obj):
    rng = np.random.default_rng(0)
    means = {"a": 0.2, "b": 1.0, "c": 0.5}
    policy = bandit.UCB(delta=1.0, reward_obj=reward_obj, burn_in=1, seed=1)
    for _ in range(600):
        arm = policy.pull(list(means))
        policy.update(arm, means[arm] + 0.3 * rng.standard_t(3))
    assert policy.ranking[0] == "b"
    assert policy._counts["b"] > 300


def test_truncated_mean_follows_the_schedule_and_counts_truncations():
    p, B, delta = 1.5, 2.0, 0.05
    xs = np.random.default_rng(1).standard_t(2.0, 500) * 3
    tm = TruncatedMean(p=p, B=B, delta=delta)
    for x in xs:
        tm.update(float(x))
    b = (B * np.arange(1, 501) / math.log(2 / delta)) ** (1 / p)
    keep = np.abs(xs) <= b
    assert tm.get() == pytest.approx(float(np.sum(xs * keep)) / 500)
    assert tm.n_truncated == int(np.sum(~keep)) > 0
    assert tm.radius() == pytest.approx(5 * B ** (1 / p) * (math.log(2 / delta) / 500) ** ((p - 1) / p))


def test_median_of_means_blocks_and_median():
    mom = MedianOfMeans(n_blocks=4)
    xs = [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 1000.0]
    for x in xs:
        mom.update(x)
    assert mom.get() == pytest.approx(2.5)  # blocks (j mod 4) have means 1, 2, 3, 502
    assert MedianOfMeans(delta=0.05, p=2.0).k == bounds.mom_blocks(0.05, 2.0) == 6


@pytest.mark.parametrize("bad", [dict(p=1.0), dict(p=2.5), dict(p=float("nan")), dict(B=0.0), dict(B=-1.0),
                                 dict(B=float("inf")), dict(delta=0.0), dict(delta=1.0)])
def test_truncated_mean_bad_parameters(bad):
    with pytest.raises(ValueError):
        TruncatedMean(**bad)


@pytest.mark.parametrize("x", [float("nan"), float("inf"), "x", None])
def test_estimators_refuse_non_finite_values_unchanged(x):
    for est in (TruncatedMean(), MedianOfMeans()):
        est.update(0.1)
        with pytest.raises(ValueError):
            est.update(x)
        assert est.n == 1 and est.get() == 0.1


def test_radius_coverage_on_student_t():
    """The radii hold at their nominal level on t(3) samples (p = 2, B = E X^2 = mu^2 + 3, C = 3)."""
    rng = np.random.default_rng(7)
    runs, n, mu, delta = 400, 200, 1.0, 0.05
    X = mu + rng.standard_t(3.0, (runs, n))
    B = mu * mu + 3.0
    bad = {"tea": 0, "mom": 0, "ea": 0}
    for row in X:
        tm, mom = TruncatedMean(2.0, B, delta), MedianOfMeans(delta, 2.0)
        for x in row:
            tm.update(float(x))
            mom.update(float(x))
        bad["tea"] += abs(tm.get() - mu) > tm.radius()
        bad["mom"] += abs(mom.get() - mu) > mom.radius(C=3.0)
        bad["ea"] += abs(row.mean() - mu) > bounds.ea_radius(n, 2.0, 3.0, delta)
    for k, v in bad.items():
        assert v <= max_failures(runs, delta), (k, v)


def test_sub_gaussian_radius_undercovers_heavy_tails():
    """A sub-Gaussian (Hoeffding-style) radius with the scale of the bulk is wrong for t(2.2) samples:
    it fails far more often than delta, while the TEA radius at the same delta holds."""
    rng = np.random.default_rng(11)
    runs, n, delta = 1000, 30, 0.05
    X = rng.standard_t(2.2, (runs, n))
    r_sg = bounds.subgaussian_radius(n, 1.0, delta)
    sg_bad = int(np.sum(np.abs(X.mean(axis=1)) > r_sg))
    assert sg_bad > max_failures(runs, delta)
    tea_bad = 0
    for row in X[:300]:
        tm = TruncatedMean(2.0, 2.2 / 0.2, delta)
        for x in row:
            tm.update(float(x))
        tea_bad += abs(tm.get()) > tm.radius()
    assert tea_bad <= max_failures(300, delta)


# ------------------------------------------------------------------------------------------------
# radii in bounds.py
# ------------------------------------------------------------------------------------------------
def test_tea_radius_fixed_truncation_is_the_paper_at_delta0_and_monotone():
    for p in (1.2, 1.5, 2.0):
        r0 = bounds.tea_radius_fixed_truncation(50, p, 3.0, 0.01, 0.01)
        assert r0 == pytest.approx(bounds.tea_radius(50, p, 3.0, 0.01))
        deltas = np.geomspace(0.5, 1e-15, 40)
        r = [bounds.tea_radius_fixed_truncation(50, p, 3.0, d, 1e-4) for d in deltas]
        assert all(b >= a for a, b in zip(r, r[1:]))
        arr = bounds.tea_radius_fixed_truncation(np.array([0.0, 50.0]), p, 3.0, 1e-9, 1e-4)
        assert arr[0] == math.inf
        assert arr[1] == pytest.approx(bounds.tea_radius_fixed_truncation(50, p, 3.0, 1e-9, 1e-4))


def test_mom_radius_decreases_with_samples_and_delta():
    r = [bounds.mom_radius(m, 2.0, 1.0, 0.01, 10) for m in (10, 20, 100, 1000)]
    assert all(b < a for a, b in zip(r, r[1:]))
    assert bounds.mom_radius(100, 2.0, 1.0, 1e-6, 10) > bounds.mom_radius(100, 2.0, 1.0, 1e-2, 10)


def test_sr_phase_lengths_never_exceed_the_budget():
    for K in (2, 3, 10, 37):
        for T in (K, K + 1, 100, 1234, 10 ** 5):
            n = bounds.sr_phase_lengths(K, T)
            assert len(n) == K - 1 and all(b >= a for a, b in zip(n, n[1:]))
            assert sum(n) + (n[-1] if n else 0) <= T


# ------------------------------------------------------------------------------------------------
# the heavy_tailed reward model
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("params", [dict(p=1.0, B=1.0), dict(p=2.01, B=1.0), dict(p=0.5, B=1.0),
                                    dict(p=2.0, B=0.0), dict(p=2.0, B=-3.0), dict(p=2.0),
                                    dict(p=2.0, B=1.0, estimator="median"), dict(p=2.0, B=1.0, C=0.0),
                                    dict(p=2.0, B=1.0, delta0=1.5)])
def test_heavy_tailed_model_bad_parameters(params):
    with pytest.raises(ValueError) as e:
        make_model("heavy_tailed", **params)
    assert str(e.value)


def test_heavy_tailed_model_messages_state_the_valid_range():
    with pytest.raises(ValueError, match=r"p must be in \(1, 2\]"):
        HeavyTailedModel(p=3.0, B=1.0)
    with pytest.raises(ValueError, match="B must be a finite number > 0"):
        HeavyTailedModel(p=2.0, B=0.0)


def test_heavy_tailed_model_round_trip_and_hooks():
    for est in ("ea", "tea", "mom"):
        m = HeavyTailedModel(p=1.5, B=3.0, estimator=est, C=2.0, delta0=1e-3)
        assert repr(model_from_dict(m.to_dict())) == repr(m)
        assert m.transforms == (est == "tea") and m.sum_based == (est != "mom")
        radii = m.radii(np.array([0.0, 10.0, 1000.0]), np.zeros(3), 1e-6)
        assert radii[0] == math.inf
        assert radii[1] == pytest.approx(m.radius(10, 0.0, 1e-6))
        assert radii[2] == pytest.approx(m.radius_fn(1e-6)(1000, 0.0))
    m = HeavyTailedModel(p=2.0, B=7.0, estimator="tea")
    assert m.check("a", -1e9) == -1e9
    with pytest.raises(ValueError, match="'a'"):
        m.check("a", float("nan"))
    b5 = m.truncation_level(5)
    assert m.contribution(5, b5 * 0.999) == b5 * 0.999 and m.contribution(5, -b5 * 1.001) == 0.0
    assert HeavyTailedModel(p=2.0, B=7.0, estimator="ea").contribution(1, 1e9) == 1e9


def test_mom_model_is_refused_by_count_and_sum_policies():
    from streamarms.policies.thresholding import LSA
    with pytest.raises(ValueError, match="per-arm state"):
        LSA(["a", "b"], threshold=0.0, budget=10, model=HeavyTailedModel(2.0, 1.0, "mom"))
    HeavyTailedModel(2.0, 1.0, "tea").require_sum_based("rr")  # fine


def test_sub_gaussian_model():
    m = SubGaussianModel(2.0)
    assert m.radius(8, 0.0, 2 * math.exp(-1)) == pytest.approx(1.0)
    assert m.check("x", -55.5) == -55.5
    with pytest.raises(ValueError):
        SubGaussianModel(0.0)


def test_ksigma_policies_accept_the_heavy_tailed_model():
    """The k-sigma policies sum TEA contributions (truncated samples count, contribute 0) and refuse MoM."""
    import random

    from streamarms.policies.ksigma import RoundRobin, WeightedRoundRobin
    from streamarms.sim import StudentTArm

    arms = [str(i) for i in range(5)]
    pol = WeightedRoundRobin(arms, k=1.5, delta=0.1, model=HeavyTailedModel(2.0, 30.0, "tea"))
    rng = random.Random(0)
    dists = [StudentTArm(mu, 2.5) for mu in (0.0, 0.1, 0.2, 0.1, 5.0)]
    for _ in range(2000):
        arm = pol.next_request().arm
        pol.update(arm, dists[int(arm)].pull(rng))
    pol.update("0", 1e9)  # far above any truncation level: contributes 0, counted
    d = pol.decision()
    assert d.extra["transformed_samples"] >= 1 and pol.pulls == 2001
    with pytest.raises(ValueError, match="per-arm state"):
        RoundRobin(arms, k=1.5, model=HeavyTailedModel(2.0, 30.0, "mom"))

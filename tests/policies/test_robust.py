"""Robust k-sigma (median + 1.4826 k MAD): the threshold bounds, the masking instance of the issue, the
guarantee (one- and two-sided), edge cases, bad input and snapshots."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from stats_util import max_failures

from streamarms.bounds import median_mad_bounds
from streamarms.models import BoundedModel, make_model
from streamarms.policies.ksigma import RoundRobin, WeightedRoundRobin, ksigma_outliers
from streamarms.policies.robust import RobustOutlierArmIdentification, robust_threshold, robust_true_outliers
from streamarms.sim import Environment, run_policy

MASKING = list(np.linspace(0.2, 0.3, 45)) + [0.6, 0.65, 0.7, 0.9, 0.95]


def mad(y: np.ndarray) -> float:
    return float(np.median(np.abs(y - np.median(y))))


# ----------------------------------------------------------------------------------------------
# the threshold interval
# ----------------------------------------------------------------------------------------------
def test_median_mad_bounds_contain_every_consistent_configuration():
    rng = np.random.default_rng(11)
    for trial in range(250):
        n = int(rng.integers(1, 14))
        c = rng.uniform(0, 1, n) if trial % 2 else np.round(rng.uniform(0, 1, n), 1)
        w = rng.uniform(0, 0.2, n) * (rng.random(n) < 0.8)
        lo, hi = c - w, c + w
        grid = int(rng.integers(1, 12))
        mlo, mhi, alo, ahi = median_mad_bounds(lo, hi, grid)
        # vertices of the box (where the extremes of medians of order statistics lie) and random points
        pts = [lo + (hi - lo) * rng.integers(0, 2, n) for _ in range(100)]
        pts += [lo + (hi - lo) * rng.random(n) for _ in range(60)]
        for y in pts:
            assert mlo - 1e-12 <= np.median(y) <= mhi + 1e-12
            assert alo - 1e-12 <= mad(y) <= ahi + 1e-12, (trial, grid)


def test_coupled_mad_bounds_are_about_twice_as_tight():
    y = np.linspace(0.2, 0.3, 45)
    w = 0.01
    _, _, lo9, hi9 = median_mad_bounds(y - w, y + w, 9)
    _, _, lo1, hi1 = median_mad_bounds(y - w, y + w, 1)
    assert lo9 <= mad(y) <= hi9
    assert hi9 - lo9 < 0.6 * (hi1 - lo1)
    assert hi9 - lo9 < 2.6 * w


# ----------------------------------------------------------------------------------------------
# the masking instance
# ----------------------------------------------------------------------------------------------
def test_masking_instance_definitions():
    assert robust_true_outliers(MASKING, 3.0) == [45, 46, 47, 48, 49]
    assert robust_true_outliers(MASKING, 3.0, two_sided=True) == [45, 46, 47, 48, 49]
    assert ksigma_outliers(MASKING, 3.0) == [48, 49]           # the outliers inflate sigma


@pytest.mark.slow
def test_masking_robust_finds_all_five_where_ksigma_finds_two():
    # about 3.4 million Bernoulli samples: the threshold interval carries 1 + 1.4826 k times the arms'
    # uncertainty and the normal arms at 0.3 are only 0.08 below the threshold 0.377
    env = Environment(MASKING, seed=0)
    res = run_policy(RobustOutlierArmIdentification(env.arm_names, k=3.0, delta=0.1), env)
    assert res.decision.done and res.decision.outliers == ["45", "46", "47", "48", "49"]
    lo, hi = res.decision.threshold_interval
    assert lo <= robust_threshold(MASKING, 3.0)[1] <= hi
    for cls in (RoundRobin, WeightedRoundRobin):
        env = Environment(MASKING, seed=0)
        d = run_policy(cls(env.arm_names, k=3.0, delta=0.1), env).decision
        assert d.done and d.outliers == ["48", "49"]


# ----------------------------------------------------------------------------------------------
# the guarantee: every reported classification is right in >= 1 - delta of the runs
# ----------------------------------------------------------------------------------------------
ONE_SIDED = list(np.linspace(0.2, 0.6, 18)) + [0.98, 0.99]           # threshold 0.77 at k = 2
TWO_SIDED = [0.02] + list(np.linspace(0.3, 0.6, 17)) + [0.95, 0.97]  # thresholds 0.18 and 0.74


@pytest.mark.slow  # a long statistical test: run by .ci/run with the drills (-m "slow or drill")
@pytest.mark.parametrize("means, two_sided, runs, model", [
    (ONE_SIDED, False, 10, "bernoulli"),
    (TWO_SIDED, True, 4, "bernoulli"),
    (ONE_SIDED, False, 3, "bounded"),
    (ONE_SIDED, False, 10, "bernoulli-cs"),
], ids=["one-sided", "two-sided", "hoeffding", "engine-sequences"])
def test_guarantee(means, two_sided, runs, model):
    intervals = "cs" if model.endswith("-cs") else "paper"
    model = model.removesuffix("-cs")
    truth = {str(i) for i in robust_true_outliers(means, 2.0, two_sided)}
    assert truth == ({"0", "18", "19"} if two_sided else {"18", "19"})
    delta = 0.1
    wrong = 0
    for seed in range(runs):
        env = Environment(means, seed=200 + seed, model=model)
        mdl = "bernoulli" if model == "bernoulli" else BoundedModel(0, 1)
        pol = RobustOutlierArmIdentification(env.arm_names, k=2.0, two_sided=two_sided, delta=delta, model=mdl,
                                             intervals=intervals)
        res = run_policy(pol, env)
        d = res.decision
        assert d.done and not d.undecided
        events_right = all((e.kind == "outlier") == (e.arm in truth) for e in res.events)
        assert len(res.events) == len(means)                 # every arm is reported once
        wrong += (set(d.outliers) != truth) or not events_right
    assert wrong <= max_failures(runs, delta)


# ----------------------------------------------------------------------------------------------
# edge cases and parameters
# ----------------------------------------------------------------------------------------------
def test_ties_in_means():
    means = [0.3] * 3 + [0.4] * 3 + [0.5] * 3 + [0.95]
    assert robust_true_outliers(means, 2.0) == [9]
    env = Environment(means, seed=1)
    d = run_policy(RobustOutlierArmIdentification(env.arm_names, k=2.0), env).decision
    assert d.done and d.outliers == ["9"]


def test_all_identical_never_claims_anything():
    env = Environment([0.3] * 10, seed=2)
    res = run_policy(RobustOutlierArmIdentification(env.arm_names, k=2.0, two_sided=True), env, max_pulls=50000)
    d = res.decision
    assert res.capped and d.outliers == [] and d.normals == [] and len(d.undecided) == 10


@pytest.mark.parametrize("k", [0, -1.0, math.nan, math.inf])
def test_bad_k_refused(k):
    with pytest.raises(ValueError, match=r"k must be a finite number > 0"):
        RobustOutlierArmIdentification(["a", "b", "c"], k=k)


def test_bad_delta_refused():
    with pytest.raises(ValueError, match="delta must lie strictly between 0 and 1"):
        RobustOutlierArmIdentification(["a", "b", "c"], delta=1.0)


def test_a_reward_outside_the_model_leaves_state_unchanged():
    """(NaN, inf and unknown arms: the conformance suite, streamarms.checks, for every policy.)"""
    pol = RobustOutlierArmIdentification([str(i) for i in range(6)], k=2.0)
    env = Environment([0.1, 0.2, 0.3, 0.2, 0.1, 0.9], seed=0)
    run_policy(pol, env, max_pulls=333)
    before = json.dumps(pol.snapshot())
    with pytest.raises(ValueError, match="arm '2'.*0.3"):
        pol.update("2", 0.3)
    assert json.dumps(pol.snapshot()) == before


def test_unrequested_rewards_and_defer():
    pol = RobustOutlierArmIdentification(["a", "b", "c", "d"], k=2.0)
    assert [r.arm for r in pol.wanted(4)] == ["a", "b", "c", "d"]
    pol.defer("a")
    pol.update("c", 1)
    assert [r.arm for r in pol.wanted(4)] == ["b", "d", "a"]
    assert pol.decision().threshold_interval is None          # no threshold before every arm has a sample


# ----------------------------------------------------------------------------------------------
# intervals="cs": the engine's confidence sequences as arm intervals, the rule unchanged
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["bernoulli", pytest.param("bounded", marks=pytest.mark.slow)])  # (bounded: ~14 s)
def test_cs_intervals_right_answer_fewer_samples_and_snapshot(model):
    mdl = "bernoulli" if model == "bernoulli" else BoundedModel(0, 1)
    truth = {str(i) for i in robust_true_outliers(ONE_SIDED, 2.0)}
    env = Environment(ONE_SIDED, seed=7, model=model)
    paper = run_policy(RobustOutlierArmIdentification(env.arm_names, k=2.0, model=mdl), env)
    env_a = Environment(ONE_SIDED, seed=7, model=model)
    a = RobustOutlierArmIdentification(env_a.arm_names, k=2.0, model=mdl, intervals="cs")
    run_policy(a, env_a, max_pulls=3001)
    b = RobustOutlierArmIdentification.restore(json.loads(json.dumps(a.snapshot())))
    env_b = Environment(ONE_SIDED, seed=0, model=model)
    env_b.rng.setstate(env_a.rng.getstate())
    ra, rb = run_policy(a, env_a), run_policy(b, env_b)
    assert ra.decision.to_dict() == rb.decision.to_dict() and ra.decision.done
    assert set(ra.decision.outliers) == set(paper.decision.outliers) == truth
    assert ra.pulls < paper.pulls  # no union bound over counts


def test_cs_intervals_need_a_bounded_model():
    with pytest.raises(ValueError, match="intervals 'cs' needs"):
        RobustOutlierArmIdentification(["a", "b", "c"], model=make_model("heavy_tailed", p=2.0, B=1.0), intervals="cs")
    with pytest.raises(ValueError, match="intervals must be"):
        RobustOutlierArmIdentification(["a", "b", "c"], intervals="x")

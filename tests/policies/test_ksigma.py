"""RR / WRR / NRR: faithfulness to [ZWW17], guarantee, edge cases, bad input, snapshots."""

from __future__ import annotations

import json
import random

import pytest
from ksigma_reference import reference_run
from stats_util import max_failures

from streamarms.models import BernoulliModel, BoundedModel
from streamarms.policies.ksigma import NaiveRoundRobin, RoundRobin, WeightedRoundRobin, ksigma_outliers
from streamarms.sim import Environment, run_policy, zww17_example, zww17_synthetic


class RecordingEnv(Environment):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seq: list[int] = []

    def pull(self, arm):
        self.seq.append(int(arm))
        return super().pull(arm)


SMALL = [
    ([0.2, 0.25, 0.3, 0.22, 0.8], 1.5, "bernoulli"),
    ([0.2, 0.25, 0.3, 0.22, 0.8], 1.5, "bounded"),
    ([0.4, 0.5, 0.45, 0.1, 0.48, 0.52, 0.95], 1.0, "bernoulli"),
    ([0.1, 0.9], 0.5, "bounded"),
    ([0.3, 0.31, 0.33, 0.29, 0.35, 0.32, 0.3, 0.34], 2.0, "bernoulli"),
]


# the 8-arm near-equal instance (~75 s over its four variants) and the bounded 5-arm one (~70 s) run in the long
# tier (CI runs both tiers); the quick suite keeps a Bernoulli 5- and 7-arm instance and a bounded 2-arm one
SLOW_CASES = (1, len(SMALL) - 1)


@pytest.mark.parametrize("wrr", [False, True], ids=["rr", "wrr"])
@pytest.mark.parametrize("two_sided", [False, True], ids=["one", "two"])
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_CASES else c
                                  for c in range(len(SMALL))])
def test_same_pulls_stop_and_answer_as_literal_reference(case, two_sided, wrr):
    means, k, model = SMALL[case]
    cap = 60000
    for seed in range(3):
        env_ref = RecordingEnv(means, seed=seed)
        mdl = BernoulliModel() if model == "bernoulli" else BoundedModel(0, 1)
        seq, out, T, stopped = reference_run(env_ref, len(means), k, 0.1, mdl, two_sided, wrr, max_pulls=cap)
        env = RecordingEnv(means, seed=seed)
        cls = WeightedRoundRobin if wrr else RoundRobin
        pol = cls(env.arm_names, k=k, delta=0.1, model=mdl, two_sided=two_sided)
        res = run_policy(pol, env, max_pulls=cap)
        assert env.seq == seq
        assert res.pulls == T
        assert res.decision.done == stopped
        assert sorted(res.decision.estimated_outliers) == out
        if stopped:
            assert sorted(res.decision.outliers) == out


@pytest.mark.slow  # (~10-15 s: the long tier; the quick suite keeps under its 15 minutes)
def test_example_instance_rr_hoeffding_and_wrr_no_more_pulls():
    means = zww17_example()
    env = Environment(means, seed=7)
    rr = run_policy(RoundRobin(env.arm_names, k=2, delta=0.1, model="bounded"), env)
    env = Environment(means, seed=7)
    wrr = run_policy(WeightedRoundRobin(env.arm_names, k=2, delta=0.1, model="bounded"), env)
    assert rr.decision.outliers == ["18", "19"] and rr.decision.done
    assert wrr.decision.outliers == ["18", "19"] and wrr.decision.done
    assert 1e5 <= rr.pulls <= 2e6
    assert wrr.pulls <= rr.pulls


def _wrong_answers(cls, model, delta, runs, **kw):
    rng = random.Random(11)
    wrong = 0
    for r in range(runs):
        # five arms close together and one far above: which arms clear theta is a close call
        means = [rng.uniform(0.3, 0.4) for _ in range(5)] + [0.85]
        truth = sorted(str(i) for i in ksigma_outliers(means, 1.5))
        env = Environment(means, seed=1000 + r)
        res = run_policy(cls(env.arm_names, k=1.5, delta=delta, model=model, **kw), env, max_pulls=10**6)
        assert res.decision.done
        wrong += sorted(res.decision.outliers) != truth
    return wrong


@pytest.mark.slow  # a long statistical test: run by .ci/run with the drills (-m "slow or drill")
@pytest.mark.parametrize("cls", [RoundRobin, WeightedRoundRobin], ids=["rr", "wrr"])
@pytest.mark.parametrize("model", ["bernoulli", "bounded"])
def test_error_rate_at_most_delta(cls, model):
    """Over seeded runs on small instances, wrong answers <= binomial bound at rate delta."""
    runs, delta = 60, 0.2
    assert _wrong_answers(cls, model, delta, runs) <= max_failures(runs, delta)


def test_error_rate_test_has_power():
    """The same instances and bound catch a policy without a guarantee (NRR): the test can fail."""
    runs, delta = 60, 0.2
    assert _wrong_answers(NaiveRoundRobin, "bernoulli", delta, runs) > max_failures(runs, delta)


def test_edge_all_arms_equal_never_decides():
    env = Environment([0.5] * 5, seed=0)
    res = run_policy(RoundRobin(env.arm_names, k=2), env, max_pulls=20000)
    assert res.capped and not res.decision.done
    assert res.decision.outliers == []  # nothing confidently an outlier


def test_edge_no_outliers():
    env = Environment([0.2, 0.8, 0.5, 0.35, 0.65], seed=0)
    res = run_policy(WeightedRoundRobin(env.arm_names, k=2, model="bounded"), env)
    assert res.decision.done and res.decision.outliers == [] and len(res.decision.normals) == 5


@pytest.mark.slow  # (~11 s: the long tier)
def test_edge_every_arm_but_one_outlier_two_sided():
    # one arm far below, the others clustered: with k = 0.4 and two-sided, the low arm is the outlier
    means = [0.05, 0.8, 0.82, 0.81, 0.79]
    truth = sorted(str(i) for i in ksigma_outliers(means, 0.4, two_sided=True))
    env = Environment(means, seed=0)
    res = run_policy(RoundRobin(env.arm_names, k=0.4, two_sided=True), env)
    assert res.decision.done and sorted(res.decision.outliers) == truth


def test_edge_all_but_one_above_threshold():
    # k small: theta = mu + 0.1 sigma; four of five arms are above it
    means = [0.1, 0.7, 0.72, 0.74, 0.76]
    truth = sorted(str(i) for i in ksigma_outliers(means, 0.1))
    assert len(truth) == 3 or len(truth) == 4
    env = Environment(means, seed=1)
    res = run_policy(WeightedRoundRobin(env.arm_names, k=0.1), env, max_pulls=10**6)
    assert res.decision.done and sorted(res.decision.outliers) == truth


def test_edge_two_arms():
    env = Environment([0.1, 0.9], seed=0)
    res = run_policy(RoundRobin(env.arm_names, k=0.5, model="bounded"), env)
    assert res.decision.done and res.decision.outliers == ["1"]


def test_edge_zero_variance_arms():
    # deterministic rewards (constant arms): the estimates are exact from the first sample
    env = Environment([0.2, 0.2, 0.2, 0.2, 0.9], seed=0, model="constant" if False else "bounded")
    from streamarms.sim import BoundedArm
    env = Environment({str(i): BoundedArm(m, shape="constant") for i, m in enumerate([0.2, 0.2, 0.2, 0.2, 0.9])})
    res = run_policy(WeightedRoundRobin(env.arm_names, k=1.5, model="bounded"), env)
    assert res.decision.done and res.decision.outliers == ["4"]


@pytest.mark.parametrize("cls", [RoundRobin, WeightedRoundRobin, NaiveRoundRobin])
def test_bad_input_refused_and_state_unchanged(cls):
    pol = cls(["a", "b", "c"], k=1.0, model="bounded")
    pol.update("a", 0.5)
    before = json.dumps(pol.snapshot())
    for arm, x, words in [("a", float("nan"), "not finite"), ("b", float("inf"), "not finite"),
                          ("c", 1.5, "outside"), ("zz", 0.5, "unknown arm"), ("a", "x", "not a number")]:
        with pytest.raises(ValueError, match=words) as err:
            pol.update(arm, x)
        assert repr(arm) in str(err.value)
    assert json.dumps(pol.snapshot()) == before
    bern = cls(["a", "b"], k=1.0)
    with pytest.raises(ValueError, match=r"'a'.*0 or 1.*0\.3"):
        bern.update("a", 0.3)


@pytest.mark.parametrize("kw,msg", [({"k": 0}, "k must"), ({"k": -1}, "k must"), ({"delta": 0}, "delta"),
                                    ({"delta": 1.5}, "delta")])
def test_bad_parameters(kw, msg):
    with pytest.raises(ValueError, match=msg):
        RoundRobin(["a", "b"], **kw)
    with pytest.raises(ValueError, match="at least 2 arms"):
        RoundRobin(["a"])
    with pytest.raises(ValueError, match="rho"):
        WeightedRoundRobin(["a", "b"], rho=0.5)


def test_events_are_correct_and_consistent_with_decision():
    means = zww17_example()
    env = Environment(means, seed=3)
    res = run_policy(WeightedRoundRobin(env.arm_names, k=2), env)
    kinds = {e.arm: e.kind for e in res.events}
    assert set(kinds) == set(env.arm_names)  # every arm classified once, during the run
    assert sorted(a for a, k in kinds.items() if k == "outlier") == ["18", "19"]
    assert len(res.events) == len(env.arm_names)


def test_streaming_updates_for_any_arm_and_defer():
    pol = RoundRobin([str(i) for i in range(4)], k=1.0)
    for i in range(4):
        pol.update(str(i), 0)
    want = pol.next_request().arm
    pol.update("3", 1)  # not the wanted arm: accepted, plan unchanged
    assert pol.next_request().arm == want
    pol.defer(want)
    assert pol.next_request().arm != want
    assert [r.arm for r in pol.wanted(3)] == [str((int(want) + 1 + j) % 4) for j in range(3)]


def test_nrr_stops_after_patience_and_is_often_wrong_on_hard_cases():
    wrong = 0
    runs = 30
    for r in range(runs):
        means = [0.3, 0.32, 0.34, 0.31, 0.33, 0.45]
        truth = sorted(str(i) for i in ksigma_outliers(means, 1.5))
        env = Environment(means, seed=r)
        res = run_policy(NaiveRoundRobin(env.arm_names, k=1.5, delta=0.1), env)
        assert res.decision.done and res.pulls < 1000
        wrong += sorted(res.decision.outliers) != truth
    assert wrong > 0.1 * runs  # the baseline has no guarantee, and misses on a hard instance


def test_synthetic_generator_has_the_requested_outliers():
    rng = random.Random(0)
    for n in (20, 50):
        means = zww17_synthetic(n, 2.5, rng)
        assert 1 <= len(ksigma_outliers(means, 2.5)) <= 3

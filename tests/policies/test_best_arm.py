"""Best arm with heavy tails: SE-delta and SR-T (Yu, Shao, Lyu, King, UAI 2018)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from stats_util import max_failures

from streamarms import bounds
from streamarms.models import HeavyTailedModel, SubGaussianModel
from streamarms.policies.best_arm import SuccessiveElimination, SuccessiveRejects, best_arm_truth
from streamarms.sim import yslk18_instance

S1 = yslk18_instance("S1")


class TStreams:
    """Per-arm reward streams ``mean + t(df)`` drawn in numpy chunks (sample j of arm i is fixed by the seed)."""

    def __init__(self, means, df, seed, chunk=4096):
        self.means, self.df, self.chunk = list(means), df, chunk
        self.rng = np.random.default_rng(seed)
        self.buf = [self._fresh(i) for i in range(len(means))]
        self.pos = [0] * len(means)

    def _fresh(self, i):
        return (self.means[i] + self.rng.standard_t(self.df, self.chunk)).tolist()

    def next(self, i):
        if self.pos[i] == self.chunk:
            self.buf[i], self.pos[i] = self._fresh(i), 0
        x = self.buf[i][self.pos[i]]
        self.pos[i] += 1
        return x


def drive(policy, streams, cap=5_000_000):
    index, nxt, update = policy.index, policy.next_request, policy.update
    while not policy.done and policy.pulls < cap:
        arm = nxt().arm
        update(arm, streams.next(index[arm]))
    return policy


def arms_of(means):
    return [str(i) for i in range(len(means))]


# ------------------------------------------------------------------------------------------------
# literal references of the paper's algorithms
# ------------------------------------------------------------------------------------------------
def se_reference(means, df, seed, delta, p, B):
    """[YSLK18] Alg. 1 (SE-delta(TEA)) line by line."""
    K = len(means)
    st = TStreams(means, df, seed)
    L = math.log(2 * K / delta)
    S = list(range(K))
    sums = [0.0] * K
    t = 1
    eliminated = []
    while len(S) > 1:
        c = 5 * B ** (1 / p) * (L / t) ** ((p - 1) / p)
        b = (B * t / L) ** (1 / p)
        for k in S:
            x = st.next(k)
            sums[k] += x if abs(x) <= b else 0.0
        mu = {k: sums[k] / t for k in S}
        a = max(S, key=lambda k: (mu[k], -k))
        nxt = []
        for k in S:
            if mu[a] - mu[k] < 2 * c:
                nxt.append(k)
            else:
                eliminated.append(k)
        S = nxt
        t += 1
    return S[0], eliminated


def sr_reference(means, df, seed, T, p, B, eps):
    """[YSLK18] Alg. 2 (SR-T(TEA)) with the Audibert-Bubeck phase lengths."""
    K = len(means)
    st = TStreams(means, df, seed)
    b = (3 * B / eps) ** (1 / (p - 1))
    n = [0] + bounds.sr_phase_lengths(K, T)
    A = list(range(K))
    sums, cnt = [0.0] * K, [0] * K
    rejected, pulls = [], 0
    for k in range(1, K):
        for y in A:
            for _ in range(n[k] - n[k - 1]):
                x = st.next(y)
                sums[y] += x if abs(x) <= b else 0.0
                cnt[y] += 1
                pulls += 1
        mu = {y: sums[y] / cnt[y] for y in A}
        worst = min(A, key=lambda y: mu[y])
        rejected.append(worst)
        A.remove(worst)
    return A[0], rejected, pulls


def test_se_tea_is_alg1_line_by_line():
    means = [1.0, 0.0, 0.3, -0.5]
    for seed in range(3):
        pol = drive(SuccessiveElimination(arms_of(means), delta=0.1, model=HeavyTailedModel(2.0, 3.0, "tea")),
                    TStreams(means, 3.0, seed))
        best, eliminated = se_reference(means, 3.0, seed, 0.1, 2.0, 3.0)
        assert pol.decision().outliers == [str(best)]
        assert pol.eliminated == eliminated
        # every arm is sampled once per round while it survives
        assert pol.pulls == sum(pol.m) and max(pol.m) == pol.round - 1


def test_se_radius_and_truncation_are_the_papers():
    K, delta, p, B = 10, 0.1, 1.5, 7.0
    se = SuccessiveElimination(arms_of(range(K)), delta=delta, model=HeavyTailedModel(p, B, "tea"))
    L = math.log(2 * K / delta)
    for t in (1, 7, 1000):
        se.m[0] = t
        assert se.radius(0) == pytest.approx(5 * B ** (1 / p) * (L / t) ** ((p - 1) / p))
        assert se.model.truncation_level(t) == pytest.approx((B * t / L) ** (1 / p))
    ea = SuccessiveElimination(arms_of(range(K)), delta=delta, model=HeavyTailedModel(p, B, "ea", C=3.0))
    ea.m[0] = 50
    assert ea.radius(0) == pytest.approx((2 * K * 3.0 / (50 ** (p - 1) * delta)) ** (1 / p))


def test_sr_tea_is_alg2_line_by_line():
    means = [1.0, 0.0, 0.5, -0.5, 0.8]
    for seed in range(3):
        pol = drive(SuccessiveRejects(arms_of(means), budget=3000, model=HeavyTailedModel(2.0, 3.0, "tea"),
                                      epsilon=0.2), TStreams(means, 3.0, seed))
        best, rejected, pulls = sr_reference(means, 3.0, seed, 3000, 2.0, 3.0, 0.2)
        assert pol.decision().outliers == [str(best)] and pol.eliminated == rejected
        assert pol.pulls == pulls <= 3000 and pol.done


@pytest.mark.parametrize("estimator", ["ea", "tea", "mom"])
def test_se_and_sr_find_the_best_arm(estimator):
    means = [0.0, 3.0, 1.0]
    model = HeavyTailedModel(2.0, 10.0, estimator, C=1.0)
    se = drive(SuccessiveElimination(arms_of(means), delta=0.05, model=model), TStreams(means, 5.0, 1))
    assert se.done and se.decision().outliers == ["1"] and se.decision().extra["best"] == "1"
    sr = drive(SuccessiveRejects(arms_of(means), budget=600, model=model, epsilon=1.0, seed=0),
               TStreams(means, 5.0, 1))
    assert sr.done and sr.decision().extra["best"] == "1" and sr.pulls <= 600


def test_worst_key_with_maximize_false():
    means = [5.0, 0.0, 4.0]
    se = drive(SuccessiveElimination(arms_of(means), delta=0.05, model=HeavyTailedModel(2.0, 30.0, "tea"),
                                     maximize=False), TStreams(means, 3.0, 2))
    assert se.decision().outliers == ["1"] and best_arm_truth(means, maximize=False) == [1]


def test_events_eliminated_arms_normal_then_the_best_as_outlier():
    means = [0.0, 5.0, 1.0]
    se = SuccessiveElimination(arms_of(means), delta=0.1, model=HeavyTailedModel(2.0, 30.0, "tea"))
    st, events = TStreams(means, 3.0, 0), []
    while not se.done:
        arm = se.next_request().arm
        events += se.update(arm, st.next(int(arm)))
    assert [e.kind for e in events] == ["normal", "normal", "outlier"] and events[-1].arm == "1"
    assert se.next_request() is None


def test_streaming_unsolicited_and_late_rewards():
    se = SuccessiveElimination(["a", "b"], delta=0.1, model=HeavyTailedModel(2.0, 4.0, "tea"))
    for _ in range(50):  # only "a" arrives: the round cannot end, "b" stays wanted
        se.update("a", 1.0)
    assert se.next_request().arm == "b" and se.m == [50, 0] and se.round == 1
    assert [r.arm for r in se.wanted(5)] == ["b"]
    se.update("b", 0.5)
    assert se.round == 2  # round 1 complete: each arm has >= 1 sample
    with pytest.raises(ValueError, match="'b'"):
        se.update("b", float("inf"))
    sr = SuccessiveRejects(["a", "b", "c"], budget=30, model="bernoulli", seed=0)
    sr.update("c", 1.0)
    before = sr.snapshot()
    with pytest.raises(ValueError):
        sr.update("c", 0.5)
    assert sr.snapshot() == before


def test_rewards_of_eliminated_arms_are_ignored_and_counted():
    sr = SuccessiveRejects(["a", "b", "c"], budget=30, model="bernoulli", seed=0)
    while len(sr.active) == 3:
        arm = sr.next_request().arm
        sr.update(arm, 1.0 if arm == "a" else 0.0)
    gone = sr.arms[sr.eliminated[0]]
    m = list(sr.m)
    sr.update(gone, 1.0)
    assert sr.m == m and sr.decision().extra["ignored"] == 1


def test_truncated_samples_are_counted_not_dropped():
    se = SuccessiveElimination(["a", "b"], delta=0.1, model=HeavyTailedModel(2.0, 1.0, "tea"))
    se.update("a", 1e9)
    se.update("b", 0.0)
    assert se.m == [1, 1] and se.s == [0.0, 0.0] and se.decision().extra["truncated"] == 1


@pytest.mark.parametrize("cls", ["se", "sr"])
def test_snapshot_restore_continues_identically(cls):
    means = [0.0, 1.0, 0.6, 0.2]
    model = HeavyTailedModel(2.0, 3.0, "mom", C=1.0)

    def make():
        if cls == "se":
            return SuccessiveElimination(arms_of(means), delta=0.1, model=model)
        return SuccessiveRejects(arms_of(means), budget=4000, model=model, seed=4)
    a, st = make(), TStreams(means, 3.0, 9)
    for _ in range(777):
        arm = a.next_request().arm
        a.update(arm, st.next(int(arm)))
    b = type(a).restore(json.loads(json.dumps(a.snapshot())))
    while not a.done:
        ra, rb = a.next_request(), b.next_request()
        assert ra == rb
        x = st.next(int(ra.arm))
        assert a.update(ra.arm, x) == b.update(rb.arm, x)
    assert b.done and a.decision().to_dict() == b.decision().to_dict()


@pytest.mark.parametrize("make", [
    lambda: SuccessiveElimination(["a", "b"], delta=0.0),
    lambda: SuccessiveElimination(["a", "b"], delta=1.0),
    lambda: SuccessiveElimination(["a", "b"], model=HeavyTailedModel(2.0, 1.0), delta=float("nan")),
    lambda: SuccessiveRejects(["a", "b"], budget=None),
    lambda: SuccessiveRejects(["a", "b"], budget=-10),
    lambda: SuccessiveRejects(["a", "b"], budget=float("nan")),
    lambda: SuccessiveRejects(["a", "b", "c"], budget=2),
    lambda: SuccessiveRejects(["a", "b"], budget=10, model=HeavyTailedModel(2.0, 1.0, "tea")),
    lambda: SuccessiveRejects(["a", "b"], budget=10, model=HeavyTailedModel(2.0, 1.0, "tea"), epsilon=0.0),
])
def test_bad_parameters(make):
    with pytest.raises(ValueError):
        make()


def test_single_arm_and_tiny_budget():
    se = SuccessiveElimination(["only"], delta=0.1)
    assert se.done and se.decision().outliers == ["only"] and se.next_request() is None
    sr = SuccessiveRejects(["a", "b", "c"], budget=3, seed=1)  # n_k = 0: rejects on ties, no pulls
    assert sr.done and sr.pulls == 0 and len(sr.decision().outliers) == 1


# ------------------------------------------------------------------------------------------------
# statistical guarantees
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_se_tea_on_s1_returns_the_best_arm_with_probability_1_minus_delta():
    """[YSLK18] S1: one arm at 2.0, nine at 0.7..1.5, Student-t noise (3 df), p = 2, B = 7, delta = 0.1."""
    runs, delta = 30, 0.1
    wrong, pulls = 0, []
    for seed in range(runs):
        se = drive(SuccessiveElimination(arms_of(S1), delta=delta, model=HeavyTailedModel(2.0, 7.0, "tea")),
                   TStreams(S1, 3.0, 100 + seed))
        assert se.done
        wrong += se.decision().outliers != ["0"]
        pulls.append(se.pulls)
    assert wrong <= max_failures(runs, delta)
    assert 2e4 < np.mean(pulls) < 2e5


@pytest.mark.slow
def test_ea_with_hoeffding_bounds_fails_more_often_than_delta_but_tea_does_not():
    """Heavy tails break sub-Gaussian (Hoeffding-style) confidence bounds.

    Instance: one arm at 2.0, nine at 0, 0.125, ..., 1.0, noise Student-t with 2.2 degrees of freedom
    (finite variance 11, most samples within +-1.5). SE-delta with the empirical mean and Hoeffding's
    radius for rewards in a range of width 2 (sub-Gaussian sigma = 1) returns a wrong arm far more often
    than delta = 0.01; SE-delta with TEA (p = 2, B = max E X^2 = 4 + 11) does not."""
    means = [2.0] + [j / 8 for j in range(9)]
    delta, df = 0.01, 2.2
    runs = 400
    wrong = sum(drive(SuccessiveElimination(arms_of(means), delta=delta, model=SubGaussianModel(1.0)),
                      TStreams(means, df, seed), cap=10 ** 6).decision().outliers != ["0"]
                for seed in range(runs))
    assert wrong > max_failures(runs, delta), wrong
    runs_tea = 12
    wrong_tea = sum(drive(SuccessiveElimination(arms_of(means), delta=delta,
                                                model=HeavyTailedModel(2.0, 4.0 + df / (df - 2), "tea")),
                          TStreams(means, df, seed)).decision().outliers != ["0"]
                    for seed in range(runs_tea))
    assert wrong_tea <= max_failures(runs_tea, delta)

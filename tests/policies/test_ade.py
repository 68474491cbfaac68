"""Tests of AdaptiveDoubleExploration ([ZZZZ20] AAAI 2020, Alg. 1)."""

from __future__ import annotations

import json
import math
import random

import pytest
from stats_util import max_failures

from streamarms import bounds
from streamarms.models import BernoulliModel, BoundedModel, make_model
from streamarms.policies.ade import AdaptiveDoubleExploration as ADE
from streamarms.policies.base import Request


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def names(n):
    return [str(i) for i in range(n)]


def bernoulli_pull(means, seed):
    rng = random.Random(seed)
    return lambda j: 1.0 if rng.random() < means[j] else 0.0


def drive(policy, pull, cap=10 ** 7):
    """The simulation loop: ask, pull, answer. Returns all events."""
    events = []
    while not policy.done and policy.pulls < cap:
        req = policy.next_request()
        events.extend(policy.update(req.arm, pull(int(req.arm)), req))
    return events


def true_outliers(means, k, two_sided=False):
    n = len(means)
    mu = sum(means) / n
    sd = math.sqrt(sum((y - mu) ** 2 for y in means) / n)
    return [str(i) for i, y in enumerate(means) if y >= mu + k * sd or (two_sided and y <= mu - k * sd)]


def reference_ade(n, pull, *, k, delta, model, seed, two_sided=False, cap=10 ** 7):
    """Alg. 1 transcribed literally: every candidate is checked after every round (O(n) per round),
    ``r_a,t`` is the largest candidate radius, rounds 1-2 initialise without a check.

    Returns (outliers, pulls, [(arm, kind, pulls_at_event)], done).
    """
    model = make_model(model)
    rng = random.Random(seed)
    a, R = model.low, model.high - model.low
    Rp, b = R * R, R
    m, s = [0] * n, [0.0] * n
    S = list(range(n))
    status, events = {}, []
    hi_clear, lo_clear = set(), set()
    st = dict(mt=0, S1=0.0, S2=0.0, S12=0.0, U=math.inf, t=1, pulls=0)

    def upd():
        d = bounds.ade_significance(delta, n, st["t"])
        mt = st["mt"]
        mu = st["S1"] / mt
        V = st["S12"] / mt - mu * (st["S2"] / mt)
        sig2 = abs(V)
        st["U"] = min(st["U"], sig2 + bounds.ade_sigma_epsilon(R, Rp, b, mt, d))
        st["d"] = d
        st["th"] = a + mu + k * math.sqrt(sig2)
        st["thl"] = a + mu - k * math.sqrt(sig2)
        st["r"] = bounds.ade_threshold_radius(R, Rp, b, k, st["U"], mt, d)

    def threshold_sample():
        j = rng.randrange(n)
        x1, x2 = pull(j), pull(j)
        st["pulls"] += 2
        st["mt"] += 1
        st["S1"] += x1 - a
        st["S2"] += x2 - a
        st["S12"] += (x1 - a) * (x2 - a)

    def sequential_sample():
        for i in S:
            x = pull(i)
            m[i] += 1
            s[i] += x
            st["pulls"] += 1

    threshold_sample()
    st["t"] = 2
    upd()
    sequential_sample()
    st["t"] = 3
    upd()
    while S and st["pulls"] < cap:
        r_a = max(model.radius(m[i], s[i], st["d"]) for i in S)
        if r_a <= st["r"]:
            threshold_sample()
        else:
            sequential_sample()
        st["t"] += 1
        upd()
        d, th, thl, r = st["d"], st["th"], st["thl"], st["r"]
        keep = []
        for i in S:
            y = s[i] / m[i]
            ri = model.radius(m[i], s[i], d)
            L, U = y - ri, y + ri
            verdict = None
            if not two_sided:
                if U <= th - r:
                    verdict = "normal"
                elif L >= th + r:
                    verdict = "outlier"
            else:
                if i not in hi_clear and L >= th + r:
                    verdict = "outlier"
                elif i not in lo_clear and U <= thl - r:
                    verdict = "outlier"
                else:
                    if U <= th - r:
                        hi_clear.add(i)
                    if L >= thl + r:
                        lo_clear.add(i)
                    if i in hi_clear and i in lo_clear:
                        verdict = "normal"
            if verdict is None:
                keep.append(i)
            else:
                status[i] = verdict
                events.append((str(i), verdict, st["pulls"]))
        S = keep
    outs = [str(i) for i in range(n) if status.get(i) == "outlier"]
    return outs, st["pulls"], events, not S


# ----------------------------------------------------------------------------------------------
# the bounds ADE uses
# ----------------------------------------------------------------------------------------------
def test_ade_schedule_pays_for_the_union_bound():
    """Lemma 5: sum over t of (2n + 8) delta_t = delta (2 per arm interval, 8 for the threshold)."""
    for n in (2, 10, 400):
        total = sum((2 * n + 8) * bounds.ade_significance(0.1, n, t) for t in range(1, 200_000))
        assert total == pytest.approx(0.1, rel=1e-4) and total < 0.1
    assert bounds.ade_significance(0.1, 3, 2) == pytest.approx(0.3 / (7 * math.pi ** 2 * 4))


def _worst_sigma_error(sig2_hat, eps):
    """max |sigma_hat - sigma| over all sigma >= 0 with |sigma_hat^2 - sigma^2| <= eps."""
    s = math.sqrt(sig2_hat)
    return max(s - math.sqrt(max(0.0, sig2_hat - eps)), math.sqrt(sig2_hat + eps) - s)


def test_threshold_radius_covers_lemma3():
    """r_theta(k) - r_theta(0) = k sqrt(2/U) eps must cover k |sigma_hat - sigma| whenever
    |sigma_hat^2 - sigma^2| <= eps (Lemma 2's event) and U <= sigma_hat^2 + eps, for every sigma_hat."""
    for m in (1, 10, 1000):
        for d in (1e-3, 1e-12):
            eps = bounds.ade_sigma_epsilon(1.0, 1.0, 1.0, m, d)
            for j in range(1, 400):
                sig2 = eps * j / 100.0
                U = sig2 + eps
                k_part = bounds.ade_threshold_radius(1.0, 1.0, 1.0, 1.0, U, m, d) - \
                    bounds.ade_threshold_radius(1.0, 1.0, 1.0, 0.0, U, m, d)
                assert _worst_sigma_error(sig2, eps) <= k_part * (1 + 1e-12)
    # k = 0: r_theta is the Hoeffding radius of mu_hat (Lemma 1)
    assert bounds.ade_threshold_radius(2.0, 4.0, 2.0, 0.0, 1.0, 50, 1e-5) == \
        pytest.approx(bounds.hoeffding_radius(50, 2.0, 1e-5))


def test_lemma2_epsilon_in_u_sigma_would_undercover():
    """Why eps_sigma uses log(1/delta_t): building U_sigma from Lemma 2's log(6/delta_t) value while
    r_theta uses log(1/delta_t) leaves the worst case at sigma_hat^2 = eps uncovered."""
    m, d = 100, 1e-6
    eps1 = bounds.ade_sigma_epsilon(1.0, 1.0, 1.0, m, d)
    eps6 = 3.0 * math.sqrt(math.log(6 / d) / (2 * m))
    k_part_mixed = math.sqrt(2 / (eps1 + eps6)) * eps1
    assert _worst_sigma_error(eps1, eps1) > k_part_mixed


# ----------------------------------------------------------------------------------------------
# faithfulness: the amortised policy equals the literal algorithm, round by round
# ----------------------------------------------------------------------------------------------
REF_CASES = [
    # means, k, model, two_sided (smallest gap to a threshold >= 0.1)
    ([0.1, 0.2, 0.35, 0.7, 0.9], 0.0, "bounded", False),
    ([0.1, 0.2, 0.35, 0.7, 0.9], 0.0, "bernoulli", False),
    ([0.0, 0.3, 0.35, 0.4, 1.0], 0.8, "bernoulli", False),
    ([0.0, 0.1, 0.2, 1.0], 1.0, "bounded", False),
    pytest.param([0.0, 0.45, 0.5, 0.55, 1.0], 1.0, "bernoulli", True, marks=pytest.mark.slow),  # (~9 s: long tier)
    ([0.1, 0.2, 0.35, 0.7, 0.9], 0.1, "bounded", True),
]


@pytest.mark.parametrize("means,k,model,two_sided", REF_CASES)
def test_matches_literal_algorithm(means, k, model, two_sided):
    n = len(means)
    for seed in range(2):
        ref = reference_ade(n, bernoulli_pull(means, 100 + seed), k=k, delta=0.1, model=model, seed=seed,
                            two_sided=two_sided)
        p = ADE(names(n), k=k, delta=0.1, model=model, seed=seed, two_sided=two_sided)
        ev = drive(p, bernoulli_pull(means, 100 + seed))
        assert ref[3] and p.decision().outliers == ref[0] == true_outliers(means, k, two_sided)
        assert p.pulls == ref[1]
        assert [(e.arm, e.kind, e.pulls) for e in ev] == ref[2]
        assert p.done == ref[3]


def test_arms_leave_the_candidate_set_along_the_way():
    """The equivalence above is meaningful: classifications happen at different rounds."""
    means = [0.0, 0.1, 0.2, 1.0]
    p = ADE(names(4), k=1.0, model="bounded", seed=0)
    ev = drive(p, bernoulli_pull(means, 100))
    assert p.done and p.decision().outliers == true_outliers(means, 1.0) == ["3"]
    assert len(ev) == 4 and len({e.pulls for e in ev}) > 1
    assert ev[-1].pulls == p.pulls


# ----------------------------------------------------------------------------------------------
# round logic against hand-computed values
# ----------------------------------------------------------------------------------------------
def test_rounds_and_estimates_by_hand():
    """n = 3, k = 1, delta = 0.1, rewards in [0, 1]; every number below is computed by hand from the
    paper's formulas (delta_t = 3 delta / ((n+4) pi^2 t^2), eps = 3 sqrt(log(1/delta_t) / (2 m)), ...)."""
    p = ADE(["a", "b", "c"], k=1.0, delta=0.1, model="bounded", seed=0)
    # round 1 (t = 1): a threshold pair of a uniformly drawn arm
    req = p.next_request()
    assert req.kind == "threshold" and req == Request(req.arm, "threshold", 0)
    assert p.update(req.arm, 1.0, req) == []
    assert p.next_request() == req            # second half of the same pair
    p.update(req.arm, 0.0, req)
    d = p.decision()
    # m_theta = 1: mu_hat = 1, V = 1*0 - 1*0 = 0, sigma_hat = 0; t = 2
    assert d.extra["threshold_pairs"] == 1 and d.extra["rounds"] == 1
    assert d.extra["mu_hat"] == 1.0 and d.extra["sigma_hat"] == 0.0 and d.threshold == 1.0
    d2 = 0.3 / (7 * math.pi ** 2 * 4)
    assert d.extra["delta_t"] == pytest.approx(d2, rel=1e-12)
    L2 = math.log(1 / d2)
    eps2 = 3.0 * math.sqrt(L2 / 2)
    assert d.extra["U_sigma"] == pytest.approx(eps2, rel=1e-12)
    r2 = (1 + math.sqrt(2) * 1.0 * 3.0 / math.sqrt(eps2)) * math.sqrt(L2 / 2)
    assert d.extra["r_theta"] == pytest.approx(r2, rel=1e-12)
    assert round(r2, 4) == 5.1767     # (1 + sqrt(2) * 3 / sqrt(5.5422)) * sqrt(6.8257 / 2)
    # round 2 (t = 2): every arm once; no classification check (Alg. 1 line 10)
    assert [r.arm for r in p.wanted(10)] == ["a", "b", "c"]
    assert p.update("a", 1.0, Request("a")) == []
    assert p.update("b", 0.0) == []           # an update without a request is an arm sample
    assert p.update("c", 0.0) == []
    d = p.decision()
    assert d.extra["sequential_rounds"] == 1 and d.extra["rounds"] == 2 and d.undecided == ["a", "b", "c"]
    # t = 3: U_sigma = min(eps2, eps3) = eps2 (eps grows with t at fixed m_theta)
    d3 = 0.3 / (7 * math.pi ** 2 * 9)
    L3 = math.log(1 / d3)
    assert d.extra["U_sigma"] == pytest.approx(eps2, rel=1e-12)
    r3 = (1 + math.sqrt(2) * 3.0 / math.sqrt(eps2)) * math.sqrt(L3 / 2)
    assert d.extra["r_theta"] == pytest.approx(r3, rel=1e-12)
    # the rule: r_a,3 = sqrt(log(1/d3) / 2) < r_theta,3, so round 3 is a threshold sample
    assert math.sqrt(L3 / 2) < r3
    assert p.next_request().kind == "threshold"


def test_sampling_rule_with_k_zero():
    """k = 0: r_theta = R sqrt(log(1/delta_t) / (2 m_theta)) and r_a = R sqrt(log(1/delta_t) / (2 m_a)),
    so the rule r_a <= r_theta keeps m_theta and m_a within one round of each other."""
    p = ADE(names(3), k=0.0, model="bounded", seed=0)
    kinds = []
    for _ in range(3000):
        req = p.next_request()
        kinds.append(req.kind)
        p.update(req.arm, 0.5, req)      # deterministic rewards: sigma_hat = 0, no arm ever separates
        d = p.decision()
        assert abs(d.extra["threshold_pairs"] - d.extra["sequential_rounds"]) <= 1
    assert kinds[:2] == ["threshold"] * 2 and kinds[2:5] == ["arm"] * 3
    assert kinds[5:7] == ["threshold"] * 2          # t = 3: m_a = m_theta = 1, r_a = r_theta


def test_classification_by_hand():
    """Deterministic rewards: arm means 0, 0, 0, 1 with k = 1: mu = 1/4, sigma = sqrt(3)/4,
    theta = 0.683; arm 3 is the outlier. Every event must satisfy the paper's separation rule."""
    means = [0.0, 0.0, 0.0, 1.0]
    p = ADE(names(4), k=1.0, model="bounded", seed=5)
    events = drive(p, lambda j: means[j])
    assert p.done and p.decision().outliers == ["3"] and p.decision().normals == ["0", "1", "2"]
    for e in events:
        lo, hi = e.threshold_interval
        if e.kind == "outlier":
            assert e.interval[0] >= hi
        else:
            assert e.interval[1] <= lo
        # arm radius = Hoeffding at delta_t, interval centred on the arm mean
        assert e.interval[1] - e.estimate == pytest.approx(e.estimate - e.interval[0])
    # ADE's pull count is dominated by threshold pairs (r_theta carries the k (R'+2bR)/sqrt(U) factor)
    d = p.decision()
    assert 2 * d.extra["threshold_pairs"] > d.pulls / 2
    assert d.pulls == 2 * d.extra["threshold_pairs"] + sum(e.samples for e in events)


# ----------------------------------------------------------------------------------------------
# statistical guarantee
# ----------------------------------------------------------------------------------------------
STAT_CASES = [
    # (means, k, model, two_sided, runs); smallest gaps 0.1 (k = 0, 0.1) and 0.28 (k = 1)
    ([0.1, 0.2, 0.35, 0.7, 0.9], 0.0, "bernoulli", False, 150),
    ([0.1, 0.2, 0.35, 0.7, 0.9], 0.0, "bounded", False, 100),
    ([0.1, 0.2, 0.35, 0.7, 0.9], 0.1, "bernoulli", True, 40),
    ([0.0, 0.1, 0.2, 1.0], 1.0, "bernoulli", False, 20),
]


@pytest.mark.slow  # a long statistical test: run by .ci/run with the drills (-m "slow or drill")
@pytest.mark.parametrize("means,k,model,two_sided,runs", STAT_CASES)
def test_error_rate_at_most_delta(means, k, model, two_sided, runs):
    delta = 0.1
    truth = true_outliers(means, k, two_sided)
    wrong = 0
    for seed in range(runs):
        p = ADE(names(len(means)), k=k, delta=delta, model=model, seed=seed, two_sided=two_sided)
        events = drive(p, bernoulli_pull(means, 10_000 + seed))
        assert p.done
        d = p.decision()
        # every event agrees with the final answer (events are final)
        assert sorted(e.arm for e in events if e.kind == "outlier") == sorted(d.outliers)
        wrong += d.outliers != truth
    assert wrong <= max_failures(runs, delta)


# ----------------------------------------------------------------------------------------------
# edge cases
# ----------------------------------------------------------------------------------------------
def test_all_arms_equal_never_stops():
    """All arms equal: sigma = 0, theta = mu = every y_i, every arm is an outlier (y_i >= theta) with
    gap 0. No finite sample separates the intervals, so only the pull cap stops the run."""
    p = ADE(names(4), k=2.0, model="bounded", seed=0)
    drive(p, lambda j: 0.5, cap=200_000)      # deterministic rewards: sigma_hat = 0 exactly
    d = p.decision()
    assert not d.done and d.pulls >= 200_000
    assert d.outliers == [] and d.normals == [] and d.undecided == names(4)
    assert d.threshold == 0.5 and d.estimated_outliers == names(4)   # plug-in: y_hat >= theta_hat
    q = ADE(names(4), k=2.0, model="bernoulli", seed=0)
    drive(q, bernoulli_pull([0.5] * 4, 1), cap=200_000)
    assert not q.done and q.decision().outliers == [] and q.decision().normals == []


def test_no_outliers_and_n_equal_2():
    means = [0.0, 1.0]           # mu = 0.5, sigma = 0.5, k = 3: theta = 2, both arms normal
    p = ADE(names(2), k=3.0, model="bernoulli", seed=3)
    drive(p, lambda j: means[j])
    d = p.decision()
    assert d.done and d.outliers == [] and d.normals == ["0", "1"] and d.estimated_outliers == []
    q = ADE(names(2), k=0.5, model="bernoulli", seed=3)   # theta = 0.75: arm 1 is an outlier
    drive(q, lambda j: means[j])
    assert q.done and q.decision().outliers == ["1"] and q.decision().normals == ["0"]


def test_every_arm_but_one_an_outlier():
    means = [0.0, 1.0, 1.0, 1.0]  # k = 0.25: theta = 0.75 + 0.25 * 0.433 = 0.858
    p = ADE(names(4), k=0.25, model="bounded", seed=1)
    drive(p, lambda j: means[j])
    assert p.done and p.decision().outliers == ["1", "2", "3"] and p.decision().normals == ["0"]
    # two-sided: 0 and 1 are outliers on either side of the middle arm
    means2 = [0.0, 0.5, 1.0]      # mu = 0.5, sigma = 0.408, k = 0.5: [0.296, 0.704]
    q = ADE(names(3), k=0.5, model="bounded", seed=1, two_sided=True)
    drive(q, lambda j: means2[j])
    d = q.decision()
    assert d.done and d.outliers == ["0", "2"] and d.normals == ["1"]
    assert d.extra["low_outliers"] == ["0"] and d.extra["high_outliers"] == ["2"]
    assert d.extra["lower_threshold"] == pytest.approx(0.5 - 0.5 * math.sqrt(1 / 6), abs=0.05)


def test_zero_variance_arms():
    """Arms whose rewards are constant (zero variance within each arm), on a [2, 5] range."""
    values = [2.0, 2.5, 3.0, 2.2, 5.0]  # mu = 2.94, sigma = 1.07, k = 1: theta = 4.01
    p = ADE(names(5), k=1.0, model=BoundedModel(2, 5), seed=2)
    drive(p, lambda j: values[j])
    d = p.decision()
    assert d.done and d.outliers == ["4"]
    assert d.extra["mu_hat"] == pytest.approx(2.94, abs=0.05)


def test_translation_invariance():
    """Threshold statistics use x - a (the paper's WLOG a >= 0): shifting rewards and range by 2 gives
    the same run."""
    means = [0.1, 0.2, 0.3, 0.95]
    p = ADE(names(4), k=1.0, model=BoundedModel(0, 1), seed=4)
    q = ADE(names(4), k=1.0, model=BoundedModel(2, 3), seed=4)
    f, g = bernoulli_pull(means, 9), bernoulli_pull(means, 9)
    ev_p = drive(p, f)
    ev_q = drive(q, lambda j: 2.0 + g(j))
    assert p.done and q.done and p.pulls == q.pulls
    assert [(e.arm, e.kind, e.pulls) for e in ev_p] == [(e.arm, e.kind, e.pulls) for e in ev_q]
    assert q.decision().threshold == pytest.approx(p.decision().threshold + 2.0)


# ----------------------------------------------------------------------------------------------
# bad input and parameters
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model,arm,value,match", [
    ("bounded", "1", float("nan"), "'1'.*not finite"),
    ("bounded", "1", float("inf"), "'1'.*not finite"),
    ("bounded", "2", 1.5, "'2'.*1.5.*outside"),
    ("bounded", "2", -0.1, "'2'.*-0.1.*outside"),
    ("bernoulli", "0", 0.5, "'0'.*0 or 1.*0.5"),
    ("bernoulli", "0", "x", "'0'.*not a number"),
    ("bernoulli", "nope", 1.0, "unknown arm 'nope' .reward 1.0."),
])
def test_bad_rewards_raise_and_change_nothing(model, arm, value, match):
    p = ADE(names(3), k=1.0, model=model, seed=0)
    drive(p, lambda j: 1.0 if j == 2 else 0.0, cap=101)   # mid-run, inside a threshold pair
    before = json.dumps(p.snapshot())
    for req in (None, p.next_request(), Request(arm)):
        with pytest.raises(ValueError, match=match):
            p.update(arm, value, req if req is None or req.arm == arm else None)
    assert json.dumps(p.snapshot()) == before


def test_bad_requests_raise_and_change_nothing():
    p = ADE(names(3), k=1.0, model="bernoulli", seed=0)
    req = p.next_request()
    other = str((int(req.arm) + 1) % 3)
    before = json.dumps(p.snapshot())
    with pytest.raises(ValueError, match=rf"'{req.arm}'.*value 1.*not pending"):
        p.update(req.arm, 1, Request(req.arm, "threshold", 99))
    with pytest.raises(ValueError, match=rf"'{other}'.*asked for arm '{req.arm}'"):
        p.update(other, 1, Request(other, "threshold", req.request_id))
    with pytest.raises(ValueError, match=rf"'{other}'.*request for arm"):
        p.update(other, 1, req)
    with pytest.raises(ValueError, match=r"unknown kind 'probe'"):
        p.update(req.arm, 1, Request(req.arm, "probe"))
    assert json.dumps(p.snapshot()) == before
    p.update(req.arm, 1, req)
    p.update(req.arm, 0, req)
    with pytest.raises(ValueError, match="not pending"):     # a third half of a finished pair
        p.update(req.arm, 0, req)


@pytest.mark.parametrize("kwargs,match", [
    (dict(k=-1), "k must be a finite number >= 0"),
    (dict(k=float("nan")), "k must be a finite number >= 0"),
    (dict(delta=0), r"delta must be in \(0, 1\)"),
    (dict(delta=1.5), r"delta must be in \(0, 1\)"),
    (dict(model="poisson"), "unknown reward model"),
    (dict(max_pending_pairs=0), "max_pending_pairs must be an integer >= 1"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ADE(names(3), **kwargs)


def test_bad_arms():
    with pytest.raises(ValueError, match="at least 2 arms"):
        ADE(["only"])
    with pytest.raises(ValueError, match="distinct"):
        ADE(["a", "a"])


# ----------------------------------------------------------------------------------------------
# snapshot / restore
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cut", [1, 2, 3, 6, 7, 500, 4001, 9000])
@pytest.mark.parametrize("two_sided", [False, True])
def test_snapshot_restore_continues_identically(cut, two_sided):
    means = [0.1, 0.2, 0.35, 0.7, 0.9]
    k = 0.1 if two_sided else 0.0
    p = ADE(names(5), k=k, model="bernoulli", seed=11, two_sided=two_sided)
    drive(p, bernoulli_pull(means, 12), cap=cut)
    state = json.loads(json.dumps(p.snapshot(), allow_nan=False))     # plain JSON
    q = ADE.restore(state)
    assert json.dumps(q.snapshot()) == json.dumps(p.snapshot())
    assert q.wanted(10) == p.wanted(10)
    ev_p = drive(p, bernoulli_pull(means, 77))         # the same reward stream for both
    ev_q = drive(q, bernoulli_pull(means, 77))
    assert p.done and q.done and p.pulls == q.pulls > cut
    assert [e.to_dict() for e in ev_p] == [e.to_dict() for e in ev_q]
    assert p.decision().to_dict() == q.decision().to_dict()


def test_snapshot_with_pending_streaming_state():
    p = ADE(names(4), k=1.0, model="bounded", seed=3, max_pending_pairs=3)
    req = p.next_request()
    p.update(req.arm, 1.0, req)       # half a pair
    p.defer(req.arm)                  # and a second pair drawn
    q = ADE.restore(json.loads(json.dumps(p.snapshot())))
    assert q.wanted(5) == p.wanted(5)
    assert q.snapshot() == p.snapshot()


# ----------------------------------------------------------------------------------------------
# streaming contract
# ----------------------------------------------------------------------------------------------
def test_wanted_and_defer_in_a_sequential_round():
    p = ADE(names(4), k=1.0, model="bounded", seed=0)
    req = p.next_request()
    p.update(req.arm, 0.0, req)
    p.update(req.arm, 1.0, req)
    assert [r.arm for r in p.wanted(3)] == ["0", "1", "2"]
    p.defer("0")
    assert [r.arm for r in p.wanted(10)] == ["1", "2", "3", "0"]
    p.update("2", 1.0)                # out of order
    assert [r.arm for r in p.wanted(10)] == ["1", "3", "0"]
    p.update("2", 1.0)                # an extra sample of an arm already sampled this round
    assert p.pulls == 4 and p.decision().extra["sequential_rounds"] == 0
    for a in ("3", "0", "1"):
        p.update(a, 0.0)
    assert p.decision().extra["sequential_rounds"] == 1
    assert p.next_request().kind == "threshold"


def test_defer_threshold_pair_keeps_draw_order():
    """A deferred threshold arm stays pending; new pairs are drawn, but pairs enter the estimates only
    in draw order so that unavailable arms cannot bias mu_hat."""
    p = ADE(names(5), k=1.0, model="bounded", seed=8, max_pending_pairs=3)
    first = p.next_request()
    p.defer(first.arm)
    second = p.next_request()
    assert second.request_id == 1 and second.kind == "threshold"
    p.defer(second.arm)
    third = p.next_request()
    assert third.request_id == 2
    p.defer(third.arm)                # at the cap: no new pair, the deferred ones rotate
    assert len({r.request_id for r in p.wanted(5)}) == len(p.wanted(5)) <= 3
    p.update(third.arm, 1.0, third)
    p.update(third.arm, 1.0, third)
    p.update(second.arm, 1.0, second)
    p.update(second.arm, 1.0, second)
    assert p.decision().extra["threshold_pairs"] == 0      # pair 0 still outstanding
    p.update(first.arm, 0.0, first)
    p.update(first.arm, 0.0, first)
    d = p.decision()
    assert d.extra["threshold_pairs"] == 3 and d.extra["mu_hat"] == pytest.approx(2 / 3)
    assert p.next_request().kind == "arm"


def test_extra_samples_keep_the_guarantee():
    """A passive stream delivers many unrequested samples; ADE uses them for the arm estimates and
    stays correct."""
    means = [0.1, 0.2, 0.3, 0.95]
    p = ADE(names(4), k=1.0, model="bernoulli", seed=6)
    rng = random.Random(5)
    while not p.done:
        if rng.random() < 0.3:
            j = rng.randrange(4)
            p.update(str(j), 1.0 if rng.random() < means[j] else 0.0)
        else:
            req = p.next_request()
            p.update(req.arm, 1.0 if rng.random() < means[int(req.arm)] else 0.0, req)
    assert p.decision().outliers == ["3"]


def _radius_work(n, cap):
    """Arm-radius evaluations (scalar calls plus vectorised elements) per pull on an n-arm instance."""
    rng = random.Random(1)
    means = [rng.random() * 0.6 for _ in range(n - 1)] + [1.0]
    p = ADE(names(n), k=2.0, model="bernoulli", seed=1)
    work = {"n": 0}
    scalar_at, radii = p._radius_at, p.model.radii

    def counting_at(d):
        f = scalar_at(d)

        def g(m, s):
            work["n"] += 1
            return f(m, s)
        return g

    def counting_radii(m, s, d):
        work["n"] += len(m)
        return radii(m, s, d)
    p._radius_at = counting_at
    p.model.radii = counting_radii
    drive(p, bernoulli_pull(means, 2), cap=cap)
    return work["n"] / p.pulls


def test_amortised_work_per_pull():
    """No O(n) work per reward: checking every candidate after each threshold pair would cost ~n/2
    radius evaluations per pull; the amortised policy needs about one, whatever n."""
    small, large = _radius_work(20, 100_000), _radius_work(400, 100_000)
    assert small < 2.0 and large < 2.0


# ----------------------------------------------------------------------------------------------
# registry, CLI, and the done criterion
# ----------------------------------------------------------------------------------------------
def test_cli_simulate_ade(capsys):
    from streamarms.cli import main
    assert main(["simulate", "--policy", "ade", "--means", "0.0,0.1,0.2,1.0", "--k", "1", "--bound",
                 "hoeffding", "--runs", "2", "--seed", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "ade" and out["true_outliers"] == ["3"] and out["accuracy"] == 1.0
    assert all(r["done"] and r["pulls"] > 1e4 for r in out["results"])
    assert main(["simulate", "--policy", "ade", "--means", "0.5,0.5,0.5", "--max-pulls", "3000", "--json"]) == 0
    capped = json.loads(capsys.readouterr().out)
    assert capped["true_outliers"] == ["0", "1", "2"]      # y_i >= theta (AAAI'20), all at the threshold
    assert capped["results"][0]["done"] is False


def test_registry_seed_is_not_the_simulator_seed():
    from streamarms.registry import build_policy
    p = build_policy("ade", names(4), k=1.0, seed=3)
    assert isinstance(p, ADE) and p.seed != 3
    assert build_policy("ade", names(4), seed=3).seed == p.seed


@pytest.mark.slow
def test_aaai20_uniform_family_done_criterion():
    """[ZZZZ20] synthetic family: 400 arms, means uniform in [0, 1], k = 2.5, Bernoulli rewards,
    Hoeffding intervals (R = 1, as in the paper). No arm is an outlier (theta ~ 1.22, smallest gap
    ~ 0.23); ADE is right after a few million pulls, nearly all of them threshold pairs."""
    from streamarms.sim import Environment, ade_uniform, run_policy
    means = ade_uniform(400, random.Random(1000))
    assert true_outliers(means, 2.5) == []
    env = Environment(means, seed=1)
    p = ADE(env.arm_names, k=2.5, delta=0.1, model="bounded", seed=7)
    res = run_policy(p, env)
    d = res.decision
    assert d.done and d.outliers == [] and len(d.normals) == 400
    assert 1e6 < d.pulls < 2e7
    assert 2 * d.extra["threshold_pairs"] > 0.9 * d.pulls
    # the threshold interval at the end is about half the smallest gap (r_a ~ r_theta)
    assert d.threshold - d.extra["r_theta"] > max(means)


def test_runs_under_the_passive_scheduler():
    """The streaming runtime drives ADE by key only (head = next_request, prefetch = wanted, defer on
    timeouts); threshold pairs come back with their request. A scheduler snapshot taken mid-episode
    restores into a run that ends exactly like the uninterrupted one."""
    from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig

    keys, means = ["a", "b", "c", "d", "e"], [0.1, 0.2, 0.35, 0.7, 0.9]

    def make():
        clock, ends = EventClock(), []
        s = Scheduler(lambda names, ep: ADE(names, k=0.0, model="bernoulli", seed=5), clock=clock,
                      emit_alert=lambda a: None, on_episode_end=ends.append,
                      config=SchedulerConfig(discovery_records=50, max_episodes=1, want_timeout=0.05),
                      codec=RewardCodec(model=BernoulliModel()))
        return s, clock, ends

    def run(cut):
        s, clock, ends = make()
        rng = random.Random(3)
        for i in range(2_000_000):
            if i == cut:
                state = json.loads(json.dumps(s.snapshot()))
                s, clock, ends = make()
                s.restore(state)
            a = rng.randrange(5)
            x = rng.random() < means[a]
            clock.advance(i * 0.001)
            s.offer(keys[a].encode(), b'{"reward": %d}' % x)
            if s.finished:
                break
        assert s.finished and len(ends) == 1
        return s.stats()["records"], s.stats()["used"], ends[0]["outliers"], ends[0]["done"]

    whole = run(None)
    assert whole[2:] == (["d", "e"], True) and whole[1] < whole[0] / 2
    assert run(20_000) == whole

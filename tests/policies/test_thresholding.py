"""Fixed-budget thresholding: LSA, APT, UCBE, Uniform (Tao et al., NeurIPS 2019)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from streamarms.models import BoundedModel, HeavyTailedModel
from streamarms.policies.thresholding import APT, LSA, UCBE, Uniform, complexity_H, misclassified
from streamarms.sim import tbpz19_setup

SETUP2 = tbpz19_setup(2)
ARMS20 = [str(i) for i in range(20)]


def reference_run(kind, means_table, theta, T, param):
    """The paper's loop, literally: pull each arm once, then a fresh numpy argmin over all indices."""
    K = means_table.shape[0]
    m = np.zeros(K)
    s = np.zeros(K)
    order = []
    for t in range(T):
        if t < K:
            i = t
        else:
            th = s / m
            d = np.abs(th - theta)
            if kind == "lsa":
                idx = param * m * d * d + 0.5 * np.log(m)
            elif kind == "apt":
                idx = np.sqrt(m) * (d + param)
            elif kind == "ucbe":
                idx = d - np.sqrt(param / m)
            else:
                idx = m
            i = int(np.argmin(idx))
        x = means_table[i, int(m[i])]
        m[i] += 1
        s[i] += x
        order.append(i)
    return order


def run_table(policy, table):
    """Drive a policy on a per-arm reward table (sample j of arm i is table[i, j])."""
    rows = table.tolist()
    pos = [0] * len(rows)
    order = []
    index, nxt, update = policy.index, policy.next_request, policy.update
    while not policy.done:
        arm = nxt().arm
        i = index[arm]
        update(arm, rows[i][pos[i]])
        pos[i] += 1
        order.append(i)
    return order


def bernoulli_table(means, T, seed):
    rng = np.random.default_rng(seed)
    return (rng.random((len(means), T)) < np.asarray(means)[:, None]).astype(float)


@pytest.mark.parametrize("kind,cls,kw,param", [
    ("lsa", LSA, {}, 1.35), ("lsa", LSA, {"alpha": 0.5}, 0.5), ("apt", APT, {"epsilon": 0.0}, 0.0),
    ("apt", APT, {"epsilon": 0.05}, 0.05), ("ucbe", UCBE, {"a": 0.3}, 0.3), ("uniform", Uniform, {}, None)])
def test_heap_argmin_equals_the_literal_argmin(kind, cls, kw, param):
    """Same pull sequence as a literal O(n) numpy argmin (ties to the first arm), Bernoulli rewards (many ties)."""
    T = 3000
    for seed in range(3):
        table = bernoulli_table(SETUP2, T, seed)
        pol = cls(ARMS20, threshold=0.5, budget=T, **kw)
        assert run_table(pol, table) == reference_run(kind, table, 0.5, T, param)


def test_snapshot_restore_continues_identically():
    table = bernoulli_table(SETUP2, 4000, 5)
    a = LSA(ARMS20, threshold=0.5, budget=4000)
    pos = [0] * 20
    for _ in range(1234):
        i = a.index[a.next_request().arm]
        a.update(str(i), float(table[i, pos[i]]))
        pos[i] += 1
    b = LSA.restore(json.loads(json.dumps(a.snapshot())))
    while not a.done:
        ra, rb = a.next_request(), b.next_request()
        assert ra == rb
        i = a.index[ra.arm]
        a.update(ra.arm, float(table[i, pos[i]]))
        b.update(rb.arm, float(table[i, pos[i]]))
        pos[i] += 1
    assert b.done and a.decision().to_dict() == b.decision().to_dict()
    with pytest.raises(ValueError):
        APT.restore(a.snapshot())


def test_anytime_decision_budget_and_late_rewards():
    pol = LSA(["lo", "hi"], threshold=0.5, budget=4)
    d = pol.decision()
    assert d.undecided == ["lo", "hi"] and not d.done
    for arm, x in [("lo", 0.0), ("hi", 1.0), ("lo", 0.0), ("hi", 1.0)]:
        assert pol.update(arm, x) == []
    d = pol.decision()
    assert d.done and d.outliers == ["hi"] and d.normals == ["lo"] and pol.next_request() is None
    pol.update("lo", 1.0)  # after the budget: validated, counted, not used
    assert pol.decision().extra["ignored_after_budget"] == 1 and pol.pulls == 4
    no_budget = Uniform(["a", "b"], threshold=0.5)
    for _ in range(100):
        no_budget.update(no_budget.next_request().arm, 1.0)
    assert not no_budget.done and no_budget.decision().outliers == ["a", "b"]


def test_bad_rewards_leave_state_unchanged():
    pol = APT(["a", "b"], threshold=0.5, budget=10)
    pol.update("a", 1.0)
    before = pol.snapshot()
    for arm, x in [("a", 0.5), ("a", float("nan")), ("zz", 1.0), ("b", "x")]:
        with pytest.raises(ValueError):
            pol.update(arm, x)
    assert pol.snapshot() == before


@pytest.mark.parametrize("budget", [-1, -0.5, float("nan"), float("inf"), 2.5, 3, True, "ten"])
def test_bad_budget(budget):
    with pytest.raises(ValueError, match="budget must be an integer >= the number of arms"):
        LSA(["a", "b", "c", "d"], threshold=0.5, budget=budget)


@pytest.mark.parametrize("threshold", [0.0, 1.0, 1.5, -0.1, float("nan"), float("inf"), None])
def test_threshold_outside_the_reward_range(threshold):
    with pytest.raises(ValueError, match="threshold"):
        LSA(["a", "b"], threshold=threshold, budget=10)


def test_threshold_range_follows_the_model():
    LSA(["a", "b"], threshold=7.0, budget=10, model=BoundedModel(0, 10))
    LSA(["a", "b"], threshold=-1e6, budget=10, model=HeavyTailedModel(2.0, 1.0, "tea"))
    with pytest.raises(ValueError, match=r"\(0.0, 10.0\)"):
        LSA(["a", "b"], threshold=10.0, budget=10, model=BoundedModel(0, 10))


@pytest.mark.parametrize("make", [lambda: LSA(["a", "b"], threshold=0.5, alpha=0.0),
                                  lambda: LSA(["a", "b"], threshold=0.5, alpha=float("nan")),
                                  lambda: APT(["a", "b"], threshold=0.5, epsilon=-0.1),
                                  lambda: UCBE(["a", "b"], threshold=0.5, budget=10),
                                  lambda: UCBE(["a", "b"], threshold=0.5, H=10.0),
                                  lambda: UCBE(["a", "b"], threshold=0.5, budget=10, H=-1.0),
                                  lambda: UCBE(["a", "b"], threshold=0.5, a=-1.0)])
def test_bad_parameters(make):
    with pytest.raises(ValueError):
        make()


def test_ucbe_a_from_the_oracle_complexity():
    H = complexity_H(SETUP2, 0.5)
    pol = UCBE(ARMS20, threshold=0.5, budget=10000, b=-1.0, H=H)
    assert pol.a == pytest.approx((10000 - 20) / (4 * H))
    with pytest.raises(ValueError):
        complexity_H([0.5, 0.6], 0.5)


def test_truncated_heavy_tailed_rewards_are_counted():
    pol = LSA(["a", "b"], threshold=0.0, budget=20, model=HeavyTailedModel(2.0, 1.0, "tea"))
    for _ in range(10):
        pol.update("a", 1e6)
        pol.update("b", -0.01)
    d = pol.decision()
    assert d.extra["truncated"] == 10 and pol.s[0] == 0.0  # contributes 0 per TEA, counted
    assert d.normals == ["b"] and d.outliers == ["a"]  # 0 >= theta: labelled above


def test_wanted_and_defer():
    pol = LSA(ARMS20[:5], threshold=0.5, budget=100)
    assert [r.arm for r in pol.wanted(3)] == ["0", "1", "2"]
    pol.defer("0")
    assert pol.next_request().arm == "1"
    for a in ["1", "2", "3", "4"]:
        pol.defer(a)
    assert pol.next_request().arm in ARMS20[:5]  # everything deferred: never stuck
    pol.update("3", 1.0)
    assert pol.next_request().arm == "0"  # deferrals end with the next reward


def test_misclassified_counts_undecided_as_wrong():
    pol = Uniform(["a", "b", "c"], threshold=0.5, budget=3)
    pol.update("a", 1.0)
    assert misclassified(pol.decision(), {"a": 0.9, "b": 0.1, "c": 0.7}, 0.5) == 2


@pytest.mark.slow
def test_lsa_setup2_beats_uniform_and_is_not_worse_than_apt():
    """[TBPZ19] Setup 2, budget 10000, 300 seeded runs with common random numbers (the same reward
    table for every policy in a run); paired one-sided z-tests at level 1e-3 (z = 3.09).

    LSA's mean number of errors must be significantly below Uniform's, and not significantly above
    APT(0.05)'s (a non-inferiority check: it fails if LSA is clearly worse)."""
    runs, T, z = 300, 10000, 3.09
    means = dict(zip(ARMS20, SETUP2))
    err = {"lsa": [], "apt": [], "uniform": []}
    for seed in range(runs):
        table = bernoulli_table(SETUP2, T, 10_000 + seed)
        for name, pol in [("lsa", LSA(ARMS20, threshold=0.5, budget=T)),
                          ("apt", APT(ARMS20, threshold=0.5, budget=T, epsilon=0.05)),
                          ("uniform", Uniform(ARMS20, threshold=0.5, budget=T))]:
            run_table(pol, table)
            err[name].append(misclassified(pol.decision(), means, 0.5))
    e = {k: np.asarray(v, dtype=float) for k, v in err.items()}
    d_uni = e["uniform"] - e["lsa"]
    assert d_uni.mean() - z * d_uni.std(ddof=1) / math.sqrt(runs) > 0, (e["lsa"].mean(), e["uniform"].mean())
    d_apt = e["lsa"] - e["apt"]
    assert d_apt.mean() - z * d_apt.std(ddof=1) / math.sqrt(runs) <= 0, (e["lsa"].mean(), e["apt"].mean())

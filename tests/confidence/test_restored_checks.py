"""A tampered (re-signed) snapshot is refused at restore with a ValueError naming the field: a drill's were
accepted and met later as a crash deep inside (ZeroDivisionError, AttributeError, a math domain error) or, for a
threshold track's sum of 1e308, as a confident wrong answer (every key "normal" 27 samples on)."""
import copy
import json
import random
import warnings

import pytest

from streamarms import OutlierArmDetector
from streamarms.confidence import (
    BetaBinomialCS,
    EmpiricalBernsteinCS,
    MedianOfMeansCS,
    StitchedCS,
    TruncatedMeanCS,
    sequence_from_snapshot,
)
from streamarms.estimators import TruncatedMean
from streamarms.models import HeavyTailedModel
from streamarms.monitor import ContinuousMonitor
from streamarms.policies.anytime import AnytimeKSigma
from streamarms.registry import build_policy

SEQS = [lambda: BetaBinomialCS(0.05, arm="a"), lambda: EmpiricalBernsteinCS(0.05, arm="a"),
        lambda: StitchedCS(0.05, arm="a", low=0.0, high=1.0), lambda: TruncatedMeanCS(0.05, arm="a"),
        lambda: MedianOfMeansCS(0.05, arm="a")]


@pytest.mark.parametrize("make", SEQS, ids=["beta_binomial", "prpl_eb", "stitched", "tea", "mom"])
def test_a_sequence_restores_what_a_run_reaches_and_refuses_what_none_does(make):
    rng = random.Random(3)
    c = make()
    for _ in range(50):
        c.update(float(rng.random() < 0.3))
        again = sequence_from_snapshot(json.loads(json.dumps(c.snapshot())))
        assert again.snapshot() == c.snapshot()
    snap = c.snapshot()
    bad = [dict(snap, m=-5), dict(snap, m=2.5), dict(snap, alpha=5), dict(snap, alpha="x"), dict(snap, s=float("nan")),
           dict(snap, arm=None), {k: v for k, v in snap.items() if k != "m"}, None, [1, 2]]
    if getattr(c, "high", None) is not None:
        bad.append(dict(snap, s=snap["m"] * 2.0 + 1))  # (more than m rewards of at most 1 can sum to)
    for state in bad:
        with pytest.raises(ValueError):
            sequence_from_snapshot(state)


def _cs_run():
    arms = [f"a{i}" for i in range(12)]
    means = [0.1] * 10 + [0.9, 0.8]
    pol, rng = build_policy("cs", arms), random.Random(0)
    for _ in range(300):
        r = pol.next_request()
        pol.update(r.arm, float(rng.random() < means[arms.index(r.arm)]), r)
    return pol, json.loads(json.dumps(pol.snapshot()))


def test_a_threshold_tracks_totals_no_run_reaches_are_refused():
    pol, snap = _cs_run()
    level = max(snap["track"]["totals"], key=int)
    assert AnytimeKSigma.restore(copy.deepcopy(snap)).snapshot() == pol.snapshot()
    for i, v in ((1, 1e308), (0, -1e6), (0, 2.5), (2, float("nan")), (1, float("inf"))):
        s = copy.deepcopy(snap)
        s["track"]["totals"][level][i] = v
        with pytest.raises(ValueError, match="track"):
            AnytimeKSigma.restore(s)
    for change in ({"n": 0}, {"alpha": 0}, {"k": -1}, {"m_theta": -1}, {"low": 2.0}):
        s = copy.deepcopy(snap)
        s["track"].update(change)
        with pytest.raises(ValueError, match="threshold track"):
            AnytimeKSigma.restore(s)
    s = copy.deepcopy(snap)
    s["track"]["totals"][level] = [1, 2]
    with pytest.raises(ValueError, match="13 numbers expected"):
        AnytimeKSigma.restore(s)


def test_ade_refuses_a_running_minimum_of_zero():
    pol = build_policy("ade", [f"a{i}" for i in range(12)], seed=1)
    rng = random.Random(0)
    for _ in range(300):
        r = pol.next_request()
        pol.update(r.arm, float(rng.random() < 0.2), r)
    snap = json.loads(json.dumps(pol.snapshot()))
    assert snap["U_sigma"] is not None
    snap["U_sigma"] = 0
    with pytest.raises(ValueError, match="U_sigma"):
        type(pol).restore(snap)


def test_a_value_whose_power_passes_a_floats_range_is_truncated_not_an_overflow_error():
    est, seq, model = TruncatedMean(), TruncatedMeanCS(0.05), HeavyTailedModel(2.0, 1.0)
    for x in (1e155, 10 ** 300, -1e200):
        est.update(x)
        seq.update(x)
        assert model.contribution(1, x) == 0.0
    assert est.n_truncated == 3 and seq.n_truncated == 3 and seq.s == 0.0


def test_a_callable_that_builds_no_policy_is_refused_at_construction():
    with pytest.raises(ValueError, match="returned '5' \\(int\\), not a streamarms Policy"):
        OutlierArmDetector(policy=lambda arms, **kw: 5, discovery=20)


def test_keys_the_policy_refuses_are_a_warning_not_only_a_log_line():
    """GOLD's rho = 0.9 leaves no room for an outlier among 10 keys: the episode never starts; it was said only
    in the log, and the scores stayed 0.5 in silence."""
    d = OutlierArmDetector(policy="gold", discovery=50)
    rng = random.Random(0)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        for _ in range(300):
            d.learn_one({"key": f"h{rng.randrange(10)}", "reward": int(rng.random() < 0.1)})
    said = [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]
    assert any("cannot start an episode on 10 keys" in s and "rho=0.9" in s for s in said), said


def test_a_monitor_snapshot_with_settings_or_counts_no_run_has_is_refused():
    m = ContinuousMonitor(k=1.5)
    rng = random.Random(0)
    for t in range(2000):
        k = f"k{rng.randrange(10)}"
        m.update(k, float(rng.random() < (0.9 if k == "k9" else 0.1)), time=float(t))
    snap = json.loads(m.dumps())
    assert ContinuousMonitor.restore(copy.deepcopy(snap)).dumps() == m.dumps()
    for change in ({"k": -1}, {"k": "x"}, {"alpha": 0}, {"window": 0}, {"records": -3}, {"records": None},
                   {"forget_silent": "no"}, {"counts": {"outlier": -1}}):
        with pytest.raises(ValueError):
            ContinuousMonitor.restore(dict(copy.deepcopy(snap), **change))


def test_states_a_long_run_reaches_are_restored():
    """A review found two reachable states the checks refused: 0.3 added 6e7 times drifts past a fixed 1e-9 of its
    sum (the slack grows with the count now), and an unbounded sequence fed 1e308 twice sums to inf."""
    import numpy as np
    c = EmpiricalBernsteinCS(0.05, arm="a", low=0.0, high=0.3)
    snap = c.snapshot()
    total = float(np.cumsum(np.full(60_000_000, 0.3))[-1])  # (as 6e7 updates add it, bit for bit)
    assert total > 0.3 * 6e7 * (1 + 1e-9)
    sequence_from_snapshot(dict(snap, m=60_000_000, s=total))
    with pytest.raises(ValueError, match="cannot sum to it"):
        sequence_from_snapshot(dict(snap, m=60_000_000, s=0.3 * 6e7 * 1.001))
    s = StitchedCS(0.05, arm="a", sigma=1.0)
    s.update(1e308)
    s.update(1e308)
    assert sequence_from_snapshot(json.loads(json.dumps(s.snapshot()))).s == float("inf")


def test_a_copy_of_live_state_is_not_checked_again():
    """The monitor's key lookups (explain, every metrics scrape) copy live columns through sequence_from_snapshot:
    unchecked, as the policies' restore checks its million arms at once itself."""
    c = BetaBinomialCS(0.05, arm="a")
    state = dict(c.snapshot(), m=-5)
    assert sequence_from_snapshot(state, checked=False).m == -5
    with pytest.raises(ValueError):
        sequence_from_snapshot(state)

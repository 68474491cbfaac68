"""The group-wide threshold (issue 13): per-partition totals merged give the single-process interval,
a stale view is a superset (valid, wider), and members that disagree on the spec are refused."""

from __future__ import annotations

import math
import random

import pytest

from streamarms import group_threshold
from streamarms.confidence import BetaBinomialCS
from streamarms.confidence.factory import sequence_for
from streamarms.confidence.threshold import ThresholdTrack
from streamarms.group_threshold import GroupThreshold, PartitionTotals, merge_totals, staleness
from streamarms.models import make_model


def _run(model: str, n: int, rounds: int, partitions: int, seed: int, snap_at: int | None = None):
    rng = random.Random(seed)
    means = [0.3 + 0.02 * (i % 5) for i in range(n - 2)] + [0.85, 0.9]
    spec = dict(n=n, k=2.0, alpha=0.05, low=0.0, high=1.0, bernoulli=model == "bernoulli")
    single = ThresholdTrack(n, 2.0, 0.05, low=0.0, high=1.0, bernoulli=model == "bernoulli")
    parts = [PartitionTotals(**spec) for _ in range(partitions)]
    arms = [sequence_for(make_model(model), 0.025 / n, str(i)) for i in range(n)]
    sq = [0.0] * n
    part_of = [rng.randrange(partitions) for _ in range(n)]  # keys -> partitions, as a producer's hash would
    stale = None
    for r in range(rounds):
        for i in rng.sample(range(n), n):  # arms interleaved in a different order every round
            x = float(rng.random() < means[i]) if model == "bernoulli" else min(1.0, max(0.0, rng.gauss(means[i], 0.2)))
            arms[i].update(x)
            sq[i] += x * x
            c = arms[i]
            if c.n in single.levels:
                lo, hi = c.interval()
                s2 = None if model == "bernoulli" else sq[i]
                single.record(c.n, c.s, lo, hi, S2=s2)
                parts[part_of[i]].record(c.n, c.s, lo, hi, S2=s2)
        if r == snap_at:
            stale = [p.value() for p in parts]
    return spec, single, parts, stale


@pytest.mark.parametrize("model", ["bernoulli", "bounded"])
def test_merged_partitions_give_the_single_process_interval(model):
    spec, single, parts, _ = _run(model, n=60, rounds=300, partitions=6, seed=11)
    g = GroupThreshold(**spec)
    g.update(merge_totals(p.value() for p in parts))
    assert g.m_theta == single.m_theta > 100
    for a, b in zip(g.upper(), single.upper()):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    merged = merge_totals(p.value() for p in parts)["totals"]
    for lvl, t in single.totals.items():  # the levels the single track still holds
        assert merged[lvl][0] == t[0]
        assert all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(merged[lvl], t))


def test_members_merging_in_the_same_order_agree_bit_for_bit():
    spec, _, parts, _ = _run("bernoulli", n=40, rounds=200, partitions=6, seed=2)
    values = {f"g/rewards:{i}": p.value() for i, p in enumerate(parts)}
    views = []
    for _ in range(3):  # three readers, each receiving the values in another order, merging by key
        got = list(values.items())
        random.Random(len(views)).shuffle(got)
        g = GroupThreshold(**spec)
        g.update(merge_totals(v for _, v in sorted(got, key=lambda kv: kv[0])))
        views.append((g.m_theta, g.upper()))
    assert views[0] == views[1] == views[2]


def test_a_stale_view_is_wider_never_wrong():
    spec, _, parts, stale = _run("bernoulli", n=40, rounds=300, partitions=4, seed=4, snap_at=120)
    fresh_g, stale_g = GroupThreshold(**spec), GroupThreshold(**spec)
    fresh_g.update(merge_totals(p.value() for p in parts))
    # one partition still at round 120, the others fresh: the stale partition holds back m_theta
    stale_g.update(merge_totals([stale[0]] + [p.value() for p in parts[1:]]))
    assert stale_g.m_theta < fresh_g.m_theta
    (slo, shi), (flo, fhi) = stale_g.upper(), fresh_g.upper()
    assert slo <= flo <= fhi <= shi
    # ... and catching up gives the fresh interval exactly
    stale_g.update(merge_totals(p.value() for p in parts))
    assert stale_g.upper() == fresh_g.upper()


def test_a_restored_partition_continues_where_it_was():
    spec = dict(n=3, k=1.0, alpha=0.1, low=0.0, high=1.0, bernoulli=True)
    a, b = PartitionTotals(**spec), PartitionTotals(**spec)
    cs = BetaBinomialCS(0.01)
    for x in (1.0, 0.0, 1.0, 1.0):
        cs.update(x)
        a.record(cs.n, cs.s, *cs.interval())
        if cs.n == 2:
            b.restore(a.value())
        elif cs.n > 2:
            b.record(cs.n, cs.s, *cs.interval())
    assert a.value() == b.value()


def test_members_with_another_spec_are_refused():
    a = PartitionTotals(n=10, k=2.0, alpha=0.05, low=0.0, high=1.0)
    b = PartitionTotals(n=12, k=2.0, alpha=0.05, low=0.0, high=1.0)
    a.record(1, 1.0, 0.0, 1.0)
    b.record(1, 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="disagree on n"):
        merge_totals([a.value(), b.value()])
    assert staleness([a.value(time=5.0), b.value(time=7.0)], now=9.0) == 4.0


def test_a_new_formula_refuses_old_values_and_accepts_its_own(monkeypatch):
    """The day FORMULA is bumped: a member's own spec (keyword arguments, no "formula") is of the new
    version, so values it publishes itself pass and a value of the old version (no field) is left out."""
    spec = dict(n=4, k=1.0, alpha=0.1, two_sided=False, low=0.0, high=1.0, bernoulli=True)  # as group_spec makes it
    old = PartitionTotals(**spec).value()
    monkeypatch.setattr(group_threshold, "FORMULA", 2)
    new = PartitionTotals(**spec).value()
    assert group_threshold.spec_mismatch(spec, new) is None
    del old["formula"]  # a value of a version before the field
    assert "formula: 1 vs 2" in group_threshold.spec_mismatch(spec, old)
    with pytest.raises(ValueError, match="another streamarms version"):
        merge_totals([new, old])


def test_group_tracks_of_three_members_agree_with_one_track():
    from streamarms.group_track import GroupTrack
    n, parts = 45, 6
    rng = random.Random(8)
    means = [0.3 + 0.02 * (i % 5) for i in range(n - 2)] + [0.85, 0.9]
    part_of = [rng.randrange(parts) for _ in range(n)]
    spec = dict(n=n, k=2.0, alpha=0.05, low=0.0, high=1.0, bernoulli=True)
    single = ThresholdTrack(n, 2.0, 0.05, low=0.0, high=1.0, bernoulli=True)
    board: dict = {}
    now = [0.0]
    members = [GroupTrack(spec, publish=lambda p, v: board.__setitem__(f"g/{p}", v), fetch=lambda: dict(board),
                          clock=lambda: now[0], interval=0.5, member=f"m{j}") for j in range(3)]
    arms = [BetaBinomialCS(0.025 / n) for _ in range(n)]
    advanced = 0
    for _ in range(250):
        now[0] += 0.1
        for i in rng.sample(range(n), n):
            c = arms[i]
            c.update(float(rng.random() < means[i]))
            if c.n in single.levels:
                lo, hi = c.interval()
                single.record(c.n, c.s, lo, hi)
                p = part_of[i]
                advanced += members[p // 2].record(c.n, c.s, lo, hi, partition=f"rewards:{p}")
    assert advanced > 0  # the members saw the group's threshold move while records came in
    now[0] += 1.0
    for m in members:
        m.sync()
    for m in members:
        m.sync()  # the second round sees every member's last publication
    assert {m.m_theta for m in members} == {single.m_theta} and single.m_theta > 100
    for m in members:
        assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(m.upper(), single.upper()))
        assert math.isclose(m.estimate(), single.estimate(), rel_tol=1e-9) and m.staleness < 2.0
    # partition 0 moves from member 0 to member 2 (rebalance): the new owner resumes its totals, nothing twice
    v = board["g/rewards:0"]
    members[0].release("rewards:0")
    members[2].owned("rewards:0", v)
    members[2].sync()
    assert members[2].snapshot()["parts"]["rewards:0"]["totals"] == v["totals"]
    assert members[2].m_theta == single.m_theta

"""GroupKSigma (issue 13): members of a group, each holding the arms of its partitions, with a shared
stats board, decide as one AnytimeKSigma: the outlier set, one event per arm across the group, the
guarantee (seeded runs, Clopper-Pearson), a stale board, snapshot/restore, disagreeing members' values left out."""

from __future__ import annotations

import json
import logging
import random

import pytest
from stats_util import clopper_pearson_upper

from streamarms.policies.anytime import AnytimeKSigma
from streamarms.policies.anytime_group import GroupKSigma
from streamarms.policies.ksigma import ksigma_outliers


def _members(means, members, partitions, *, delta=0.2, k=1.5, interval=0.0, clock=lambda: 0.0, board=None,
             group_n=None):
    board = {} if board is None else board
    part = {str(i): f"t:{i % partitions}" for i in range(len(means))}
    owner = {f"t:{p}": p % members for p in range(partitions)}
    pols = [GroupKSigma([a for a in part if owner[part[a]] == m], group_n=group_n or len(means),
                        partition_of=part.__getitem__, publish=board.__setitem__, fetch=lambda: dict(board),
                        clock=clock, interval=interval, member=f"m{m}", k=k, delta=delta) for m in range(members)]
    return pols, board


def _drive(pols, means, rng, max_turns=3_000_000, on_turn=None):
    """Members take turns: sync, then one reward of the arm each asks for. Returns the events."""
    events = []
    turns = 0
    while not all(p.done for p in pols):
        turns += 1
        assert turns < max_turns, "no group decision"
        for p in pols:
            events += p.sync()
            r = p.next_request()
            if r is not None:
                events += p.update(r.arm, float(rng.random() < means[int(r.arm)]))
        if on_turn is not None:
            on_turn(turns)
    return events


MEANS = [0.2, 0.25, 0.22, 0.2, 0.18, 0.21, 0.23, 0.2, 0.19, 0.24, 0.85, 0.9]


def test_three_members_give_the_single_process_outlier_set():
    truth = sorted(str(i) for i in ksigma_outliers(MEANS, 1.5, False))
    single = AnytimeKSigma([str(i) for i in range(len(MEANS))], k=1.5, delta=0.2)
    rng = random.Random(5)
    while not single.done:
        a = single.next_request().arm
        single.update(a, float(rng.random() < MEANS[int(a)]))
    pols, _ = _members(MEANS, members=3, partitions=6)
    events = _drive(pols, MEANS, random.Random(5))
    assert sorted(single.decision().outliers) == truth
    assert sorted(a for p in pols for a in p.decision().outliers) == truth
    # one event per arm across the group, each from the arm's owner
    assert sorted(e.arm for e in events) == sorted(str(i) for i in range(len(MEANS)))
    assert len({p.track.m_theta for p in pols}) == 1 and pols[0].track.m_theta > 0
    assert all(p.alpha_arm == single.alpha_arm for p in pols)


def test_a_member_whose_arms_are_decided_keeps_serving_the_threshold():
    """Member 0 holds only normal arms far below; it stays not-done (and keeps sampling laggards) until
    the group's undecided arms are decided."""
    means = [0.05, 0.05, 0.3, 0.5, 0.28, 0.6, 0.31, 0.95]
    pols, board = _members(means, members=2, partitions=2, k=1.0)
    rng = random.Random(2)
    seen = []

    def watch(turn):
        if pols[0].n_undecided == 0 and not pols[1].done:
            seen.append(pols[0].done)
    _drive(pols, means, rng, on_turn=watch)
    assert seen and not any(seen)
    assert all(v["undecided"] == 0 for v in board.values())
    assert sum(v["keys"] for v in board.values()) == len(means)


def _errors(runs, members):
    """Wrong outlier sets in ``runs`` seeded group runs; the board is merged every 8 turns (as a daemon
    merges once a second, not per reward), which also keeps the runs cheap."""
    truth = sorted(str(i) for i in ksigma_outliers(MEANS, 1.5, False))
    wrong = 0
    for seed in range(runs):
        now = [0.0]
        pols, _ = _members(MEANS, members=members, partitions=6, interval=8.0, clock=lambda now=now: now[0])
        _drive(pols, MEANS, random.Random(7000 + seed), on_turn=lambda t, now=now: now.__setitem__(0, float(t)))
        wrong += sorted(a for p in pols for a in p.decision().outliers) != truth
    return wrong


def test_guarantee_quick():
    """30 seeded group runs (3 members): the error rate is Clopper-Pearson-consistent with delta = 0.2."""
    assert clopper_pearson_upper(_errors(30, 3), 30) <= 0.2


@pytest.mark.slow
def test_guarantee_300_runs():
    runs = 300
    wrong = _errors(runs, 3)
    assert clopper_pearson_upper(wrong, runs) <= 0.2, wrong


def test_a_stale_board_costs_samples_not_correctness():
    """Publishing and merging at most every 50 turns (a stale view): same answer, more samples."""
    truth = sorted(str(i) for i in ksigma_outliers(MEANS, 1.5, False))
    now = [0.0]
    fresh, _ = _members(MEANS, members=3, partitions=6)
    _drive(fresh, MEANS, random.Random(9))
    stale, _ = _members(MEANS, members=3, partitions=6, interval=50.0, clock=lambda: now[0])
    _drive(stale, MEANS, random.Random(9), on_turn=lambda t: now.__setitem__(0, float(t)))
    for pols in (fresh, stale):
        assert sorted(a for p in pols for a in p.decision().outliers) == truth
    assert sum(p.pulls for p in stale) > sum(p.pulls for p in fresh)


def test_snapshot_restore_attach_continues_identically():
    rng_a, rng_b = random.Random(4), random.Random(4)
    a, board_a = _members(MEANS, members=2, partitions=4)
    b, board_b = _members(MEANS, members=2, partitions=4)
    for _ in range(300):
        for pols, rng in ((a, rng_a), (b, rng_b)):
            for p in pols:
                p.sync()
                r = p.next_request()
                if r is not None:
                    p.update(r.arm, float(rng.random() < MEANS[int(r.arm)]))
    # member 1 of group b restarts from its JSON snapshot
    state = json.loads(json.dumps(b[1].snapshot()))
    b[1] = GroupKSigma.restore(state)
    b[1].attach(board_b.__setitem__, lambda: dict(board_b), clock=lambda: 0.0, interval=0.0)
    ev_a = _drive(a, MEANS, rng_a)
    ev_b = _drive(b, MEANS, rng_b)
    assert [(e.arm, e.kind, e.samples) for e in ev_a] == [(e.arm, e.kind, e.samples) for e in ev_b]
    assert [p.snapshot() for p in a] == [p.snapshot() for p in b]


def test_values_of_members_that_disagree_are_left_out_with_a_warning(caplog):
    """A value of another spec (here another group size) is never merged, and never makes an update raise
    after it has counted the reward (the merge runs inside update): it is left out, with a warning."""
    board: dict = {}
    pols, _ = _members(MEANS, members=2, partitions=2, board=board)
    other = GroupKSigma(["x", "y"], group_n=len(MEANS) + 2, partition_of=lambda a: "t:9", publish=board.__setitem__,
                        fetch=lambda: dict(board), clock=lambda: 0.0, interval=0.0, k=1.5, delta=0.2)
    other.sync()
    with caplog.at_level(logging.WARNING):
        pols[0].sync()
        for _ in range(50):
            r = pols[0].next_request()
            T = pols[0].T
            pols[0].update(r.arm, 1.0)
            assert pols[0].T == T + 1
    assert "t:9" not in pols[0].track.group.values and set(pols[0].track.group.values) <= {"t:0", "t:1"}
    assert "t:9" in caplog.text and "disagree on n" in caplog.text


def test_values_of_another_episode_are_ignored():
    board: dict = {}
    old, _ = _members(MEANS, members=1, partitions=2, board=board)
    old[0].sync()
    new = GroupKSigma([str(i) for i in range(len(MEANS))], group_n=len(MEANS), partition_of=lambda a: "t:0",
                      publish=lambda p, v: board.__setitem__("new/" + p, v), fetch=lambda: dict(board),
                      clock=lambda: 0.0, interval=0.0, episode=2, k=1.5, delta=0.2)
    new.sync()
    assert set(new.track.group.values) == {"new/t:0"}


def test_bad_reward_names_arm_and_value_state_unchanged():
    pols, _ = _members(MEANS, members=2, partitions=2)
    before = pols[0].snapshot()
    with pytest.raises(ValueError, match="'0'.*0.5"):
        pols[0].update("0", 0.5)
    with pytest.raises(ValueError, match="'1'"):
        pols[0].update("1", 1.0)  # arm 1 is member 1's
    assert pols[0].snapshot() == before


def test_a_killed_members_partitions_are_taken_over_from_the_board():
    """Member 1 disappears mid-episode (its later progress lost); member 0 takes its partitions over from
    their last published values (key state + totals): the group still decides, correctly, one event per arm."""
    truth = sorted(str(i) for i in ksigma_outliers(MEANS, 1.5, False))
    board: dict = {}
    part = {str(i): f"t:{i % 4}" for i in range(len(MEANS))}
    pols = [GroupKSigma([a for a in part if int(part[a][2:]) % 2 == m], group_n=len(MEANS),
                        partition_of=part.__getitem__, publish=board.__setitem__, fetch=lambda: dict(board),
                        clock=lambda: 0.0, interval=0.0, member=f"m{m}", k=1.5, delta=0.2,
                        position_of=lambda p: [0, None]) for m in range(2)]
    rng = random.Random(8)
    events = []
    for _ in range(400):
        for p in pols:
            events += p.sync()
            r = p.next_request()
            if r is not None:
                events += p.update(r.arm, float(rng.random() < MEANS[int(r.arm)]))
    assert not pols[0].done and pols[1].n_undecided
    dead = pols[1]
    dead.sync()  # its last published values
    for _ in range(50):  # progress after the last value: lost with the member
        r = dead.next_request()
        if r is not None:
            dead.update(r.arm, float(rng.random() < MEANS[int(r.arm)]))
    decided_before = {e.arm for e in events}
    taken = pols[0].regroup(add={p: board[p] for p in ("t:1", "t:3")})
    assert sorted(taken.arms, key=int) == sorted(part, key=int) and taken.T == pols[0].T
    rest = _drive([taken], MEANS, rng)
    assert sorted(taken.decision().outliers) == truth
    assert not decided_before & {e.arm for e in rest}  # arms decided by the dead member stay decided
    assert sorted(e.arm for e in events + rest) == sorted(part)

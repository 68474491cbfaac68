"""GroupMember (issue 13) without a broker: schedulers of two members on one stats board decide as a
group; a member restored from its checkpoint takes its partitions over from the board (the changelog),
not from its older checkpoint, and alerts nothing twice; a live hand-over of one partition. Every test
runs on a board of plain values and on one whose values went through chunks (one key a chunk, JSON, as
a reader of the Kafka stats topic assembles them: arms are LazyArms)."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.group_chunks import ChunkAssembler, ChunkWriter
from streamarms.group_member import GroupAnnounce, GroupMember
from streamarms.policies.anytime_group import GroupKSigma
from streamarms.runtime.clock import EventClock
from streamarms.runtime.config import SchedulerConfig
from streamarms.runtime.scheduler import Scheduler

MEANS = {f"k{i}": m for i, m in enumerate([0.2, 0.25, 0.22, 0.2, 0.18, 0.21, 0.23, 0.2, 0.19, 0.24, 0.85, 0.9])}
PART = {a: f"t:{i % 4}" for i, a in enumerate(MEANS)}
ALL = ["t:0", "t:1", "t:2", "t:3"]


class ChunkedBoard(dict):
    """A board whose every value is written as chunk records (one key a chunk) and read back assembled."""

    def __init__(self):
        super().__init__()
        self.writer, self.reader = ChunkWriter(chunk_keys=1), ChunkAssembler()
        self.chunked = 0

    def __setitem__(self, p, v):
        for key, body in self.writer.records(p, v, on_topic=self.reader.chunks_on):
            self.reader.feed(key, body)
        got = self.reader.latest[p]
        self.chunked += "chunks" in got
        super().__setitem__(p, got)


_BOARDS = []


@pytest.fixture(autouse=True, params=["plain", "chunked"])
def _board_kind(request):
    _BOARDS.clear()
    _BOARDS.append(request.param)
    yield
    if request.param == "chunked" and len(_BOARDS) > 1:  # a test with a board did go through chunks
        assert any(b.chunked for b in _BOARDS[1:]), "no chunked value"


def _board():
    b = ChunkedBoard() if _BOARDS[0] == "chunked" else {}
    _BOARDS.append(b)
    return b


class Member:
    def __init__(self, board, owned, alerts, state=None, config=None):
        self.owned = set(owned)
        config = config or SchedulerConfig(max_episodes=1)
        self.sched = Scheduler(lambda arms, ep: None, clock=EventClock(), config=config,
                               arms=list(MEANS), emit_alert=alerts.append)  # the member keeps its partitions' keys
        if state is not None:
            self.sched.restore(json.loads(json.dumps(state)))
        self.member = GroupMember(self.sched, publish=board.__setitem__, fetch=lambda: dict(board),
                                  owned=lambda: self.owned, expected=lambda: ALL, partition_of=PART.get,
                                  params=dict(k=1.5, delta=0.2), clock=lambda: 0.0, interval=0.0,
                                  position_of=lambda p: [0, None])

    def step(self, rng):
        self.sched.tick()
        self.member.turn()
        arm = next(iter(self.sched.plan.window), None)
        if arm is not None:
            self.sched.offer(arm.encode(), b'{"reward": %d}' % (rng.random() < MEANS[arm]))


def _run(members, rng, turns=30_000):
    for _ in range(turns):
        if all(m.sched.finished for m in members):
            return
        for m in members:
            m.step(rng)
    raise AssertionError("no group decision")


def _two_members(seed: int, steps: int):
    """Two members of one group on one board (``t:0, t:1`` and ``t:2, t:3``), stepped ``steps`` times in
    turn with ``random.Random(seed)``; returns ``(board, alerts, a, b, rng)``."""
    board = _board()
    alerts: list = []
    a, b = Member(board, {"t:0", "t:1"}, alerts), Member(board, {"t:2", "t:3"}, alerts)
    rng = random.Random(seed)
    for _ in range(steps):
        a.step(rng)
        b.step(rng)
    return board, alerts, a, b, rng


def test_a_member_restored_from_its_checkpoint_takes_over_from_the_board():
    board, alerts, a, b, rng = _two_members(seed=3, steps=300)
    assert isinstance(b.sched.policy, GroupKSigma) and not b.sched.finished
    ckpt = b.sched.snapshot()
    for _ in range(200):  # progress after the checkpoint; b's values on the board are newer than ckpt
        a.step(rng)
        b.step(rng)
    newer = {p: board[p]["arms"] for p in ("t:2", "t:3")}
    b2 = Member(board, {"t:2", "t:3"}, alerts, state=ckpt)  # kill -9 of b, restart from ckpt
    b2.member.turn()  # before the assignment: waits (does not republish the checkpoint's older state)
    assert {p: board[p]["arms"] for p in ("t:2", "t:3")} == newer
    assert b2.member.on_assign(["t:2", "t:3"]) == {"t:2": [0, None], "t:3": [0, None]}
    assert b2.sched.policy.partition_arms("t:2") == newer["t:2"]
    _run([a, b2], rng)
    outliers = sorted(x["arm"] for x in alerts if x["kind"] == "outlier")
    assert outliers == ["k10", "k11"]  # each once, across the members and the restart


def test_a_partition_moves_between_live_members():
    board, alerts, a, b, rng = _two_members(seed=4, steps=200)
    b.member.on_revoke(["t:2", "t:3"])  # eager rebalance: b gives all up, keeps t:2, t:3 goes to a
    a.member.on_revoke(["t:0", "t:1"])
    b.owned, a.owned = {"t:2"}, {"t:0", "t:1", "t:3"}
    b.member.on_assign(["t:2"])
    a.member.on_assign(["t:0", "t:1", "t:3"])
    assert sorted(PART[x] for x in a.sched.policy.arms) == ["t:0"] * 3 + ["t:1"] * 3 + ["t:3"] * 3
    assert set(b.sched.policy.arms) == {x for x in MEANS if PART[x] == "t:2"}
    _run([a, b], rng)
    assert sorted(x["arm"] for x in alerts if x["kind"] == "outlier") == ["k10", "k11"]
    assert not isinstance(a.sched.policy, GroupAnnounce)


def test_a_reward_before_the_group_episode_starts_is_ignored_not_refused():
    """The every-reward feed hands the announcing policy every record: a valid one is counted in
    ``ignored`` (not refused, so not dead-lettered); an unknown arm or a non-finite value still raises."""
    pol = GroupAnnounce(["a", "b"], part={"a": "t:0", "b": "t:1"}, owned=["t:0", "t:1"], episode=1)
    assert pol.update("a", 1.0) == [] and pol.update("b", 0.0) == [] and pol.ignored == 2
    with pytest.raises(ValueError, match="'a'.*nan"):
        pol.update("a", float("nan"))
    with pytest.raises(ValueError, match="unknown arm 'z'"):
        pol.update("z", 1.0)
    assert pol.ignored == 2
    back = GroupAnnounce.restore(json.loads(json.dumps(pol.snapshot())))
    assert back.ignored == 2 and back.snapshot() == pol.snapshot()
    old = {k: v for k, v in pol.snapshot().items() if k != "ignored"}  # a checkpoint of an earlier version
    assert GroupAnnounce.restore(old).ignored == 0


def _eager_rebalance(assignment):
    """Every member gives all its partitions up (publishing their values), then each gets its new share."""
    for m in assignment:
        if m.sched.phase == "running":
            m.member.on_revoke(sorted(m.owned))
    out = {}
    for m, parts in assignment.items():
        m.owned = set(parts)
        out[m] = m.member.on_assign(sorted(parts))
    return out


def test_a_member_that_starts_fresh_mid_episode_joins_the_groups_episode():
    """Two members run episode 1; a third starts with no checkpoint and gets two partitions: it joins
    episode 1 (not an episode of its own), continuing each arm from the value its previous owner published
    at the revoke (same samples, same state), and the group ends with each outlier alerted once."""
    board, alerts, a, b, rng = _two_members(seed=5, steps=300)
    assert isinstance(a.sched.policy, GroupKSigma) and not a.sched.finished
    c = Member(board, set(), alerts)  # fresh: discovering, no policy
    a.member.on_revoke(["t:0", "t:1"])
    b.member.on_revoke(["t:2", "t:3"])
    handed = {p: board[p]["arms"] for p in ("t:1", "t:3")}
    pulls = sum(st["cs"]["m"] for p in ("t:1", "t:3") for st in handed[p].values() if st)
    assert pulls > 0
    got = _eager_rebalance({a: {"t:0"}, b: {"t:2"}, c: {"t:1", "t:3"}})
    assert got[c] == {"t:1": [0, None], "t:3": [0, None]}
    assert c.sched.phase == "running" and c.sched.episode == 1 and isinstance(c.sched.policy, GroupKSigma)
    assert {p: c.sched.policy.partition_arms(p) for p in ("t:1", "t:3")} == handed  # not one sample lost or added
    assert set(c.sched.policy.arms) | set(a.sched.policy.arms) | set(b.sched.policy.arms) == set(MEANS)
    _run([a, b, c], rng)
    assert sorted(x["arm"] for x in alerts if x["kind"] == "outlier") == ["k10", "k11"]
    assert all(m.sched.history[0]["episode"] == 1 and m.sched.history[0]["done"] for m in (a, b, c))


def test_a_member_that_starts_fresh_while_the_group_announces_joins_the_announcement():
    """The group's episode has not started (a member announced three partitions, the fourth has no owner
    yet): a member taking two over announces the same episode -- t:2 with the keys announced for it, t:3
    with the keys it knows of t:3 (here all: its arms are fixed; a fresh Kafka member knows none yet, and
    they wait for the next episode) -- and the episode runs on the announced keys."""
    board, alerts = _board(), []
    a = Member(board, {"t:0", "t:1", "t:2"}, alerts)
    a.sched.tick()
    a.member.turn()
    assert isinstance(a.sched.policy, GroupAnnounce) and sorted(board) == ["t:0", "t:1", "t:2"]
    c = Member(board, set(), alerts)
    _eager_rebalance({a: {"t:0", "t:1"}, c: {"t:2", "t:3"}})
    assert c.sched.episode == 1 and sorted(c.sched.policy.arms) == ["k10", "k11", "k2", "k3", "k6", "k7"]
    assert (board["t:2"]["keys"], board["t:3"]["keys"], board["t:3"]["episode"]) == (3, 3, 1)
    _run([a, c], random.Random(6))
    assert sorted(x["arm"] for x in alerts if x["kind"] == "outlier") == ["k10", "k11"]
    assert [m.sched.history[0]["arms"] for m in (a, c)] == [6, 6]


def test_a_member_that_starts_fresh_after_the_groups_episode_continues_its_numbering():
    """The group's episode 1 is over (its members idle or gone): a fresh member does not begin an episode 1
    of its own over the group's values; its next episode is 2."""
    board, alerts, a, b, rng = _two_members(seed=7, steps=0)
    _run([a, b], rng)
    ended = {p: dict(v) for p, v in board.items()}
    c = Member(board, set(), alerts, config=SchedulerConfig(max_episodes=2))  # (1: test below)
    assert c.member.on_assign(["t:2", "t:3"]) == {} and c.sched.episode == 1 and c.sched.phase == "discovering"
    c.owned = {"t:2", "t:3"}
    c.member.partition_of = lambda arm: None  # fresh: it has read no record of its partitions yet
    c.sched.tick()  # discovery over (fixed arms): its own episode starts, numbered after the group's
    assert c.sched.episode == 2 and isinstance(c.sched.policy, GroupAnnounce)
    assert {p: board[p]["episode"] for p in ALL} == {"t:0": 1, "t:1": 1, "t:2": 2, "t:3": 2}
    # the partitions' keys from their values of episode 1 (the changelog), not only those read so far
    assert (board["t:2"]["keys"], board["t:3"]["keys"]) == (3, 3)
    assert board["t:0"] == ended["t:0"]


def test_a_member_done_with_its_episodes_joins_nothing():
    board, alerts = _board(), []
    a = Member(board, {"t:0", "t:1", "t:2", "t:3"}, alerts)
    _run([a], random.Random(8))
    board["t:0"] = dict(board["t:0"], episode=2, undecided=1)  # the group went on (other members)
    assert a.member.on_assign(["t:0"]) == {} and a.sched.finished and a.sched.episode == 1


def test_an_idle_member_follows_the_groups_next_episode_without_waiting_for_its_own_clock():
    """Between episodes each member waits for its own next start on its own stream clock, which moves only
    with the records of its partitions: members' clocks differ (one that joined mid-episode dated the episode
    later; a member's partitions may be quiet). The group's episode starts only once every partition is
    announced, so a member waiting for its own clock held the whole group (the Kafka run with idle members
    that once stalled). An idle member follows the board instead: once another member announced the next
    episode, it announces its partitions at its next turn, and the group runs the episode together."""
    board = _board()
    alerts: list = []
    cfg = SchedulerConfig(max_episodes=2, episode_interval=100.0)
    a, b = Member(board, {"t:0", "t:1"}, alerts, config=cfg), Member(board, {"t:2", "t:3"}, alerts, config=cfg)
    rng = random.Random(9)
    for _ in range(30_000):
        if all(m.sched.phase == "idle" for m in (a, b)):
            break
        for m in (a, b):
            m.step(rng)
    assert [m.sched.episode for m in (a, b)] == [1, 1] and all(m.sched.phase == "idle" for m in (a, b))
    # a rebalance between episodes: t:1 moves to b, which has read none of its records yet
    _eager_rebalance({a: {"t:0"}, b: {"t:1", "t:2", "t:3"}})
    b.member.partition_of = lambda arm: None if PART[arm] == "t:1" else PART[arm]
    a.member.member, b.member.member = "a", "b"
    a.sched.clock.advance(a.sched.episodes.next_start)  # a's partitions moved on; b's clock stays (quiet)
    a.sched.tick()
    a.member.turn()
    assert a.sched.episode == 2 and isinstance(a.sched.policy, GroupAnnounce)
    assert b.sched.clock() < b.sched.episodes.next_start
    b.owned.add("t:0")  # a stale assignment (a rebalance under way): a announced t:0, so b waits
    b.member.turn()
    assert b.sched.phase == "idle" and board["t:0"]["member"] == "a"
    b.owned.discard("t:0")
    b.member.turn()
    assert b.sched.episode == 2 and b.sched.phase == "running", b.sched.phase
    assert {board[p]["episode"] for p in ALL} == {2}
    assert board["t:1"]["keys"] == 3  # t:1's keys from its value of episode 1
    _run([a, b], rng)
    assert all(m.sched.history[-1]["episode"] == 2 and m.sched.history[-1]["done"] for m in (a, b))
    assert sum(m.sched.history[-1]["arms"] for m in (a, b)) == len(MEANS)
    assert sorted(o for m in (a, b) for o in m.sched.history[-1]["outliers"]) == ["k10", "k11"]


def test_a_member_that_joins_after_the_groups_last_episode_finishes_at_once():
    """``max_episodes`` counts the group's episodes: a member that starts after the group's last episode
    has nothing left to run (it does not wait alone for an episode nobody else will run), and one that
    joined the group's episode 2 of 2 stops after it like the others."""
    board, alerts, a, b, rng = _two_members(seed=7, steps=0)
    _run([a, b], rng)  # max_episodes=1: the group's only episode
    c = Member(board, set(), alerts)
    assert c.member.on_assign(["t:2", "t:3"]) == {} and c.sched.finished and c.sched.episode == 1


def test_a_publish_budget_splits_each_round_of_values_over_turns_and_the_group_still_decides():
    """``publish_budget = 0``: a turn publishes one partition's value and the next turns go on with the
    round (without waiting for the interval); the group decides the same outliers, each alerted once."""
    board, alerts = _board(), []
    a, b = Member(board, {"t:0", "t:1"}, alerts), Member(board, {"t:2", "t:3"}, alerts)
    for m in (a, b):
        m.member.publish_budget = 0.0
    split = 0
    rng = random.Random(8)
    for _ in range(30_000):
        if a.sched.finished and b.sched.finished:
            break
        for m in (a, b):
            m.step(rng)
            pol = m.sched.policy
            split += isinstance(pol, GroupKSigma) and pol.track.group.publishing
    else:
        raise AssertionError("no group decision")
    assert split > 0
    assert sorted(x["arm"] for x in alerts if x["kind"] == "outlier") == ["k10", "k11"]


_PAIR_CONFIG = SchedulerConfig(max_episodes=2, episode_interval=100.0)


def _pair(seed: int) -> tuple[dict, list, Member, Member, random.Random]:
    """Members a (t:0, t:1) and b (t:2, t:3) of a group of 2 episodes: board, alerts, a, b, rng."""
    board, alerts = _board(), []
    a, b = (Member(board, {"t:0", "t:1"}, alerts, config=_PAIR_CONFIG),
            Member(board, {"t:2", "t:3"}, alerts, config=_PAIR_CONFIG))
    a.member.member, b.member.member = "a", "b"
    return board, alerts, a, b, random.Random(seed)


def _until_idle(members: list, rng: random.Random) -> None:
    for _ in range(30_000):
        if all(m.sched.phase == "idle" for m in members):
            break
        for m in members:
            m.step(rng)


def _episode_1_flags_on_b() -> tuple[list, Member, Member, random.Random]:
    """Members a and b after group episode 1 of 2: b holds the flags of k10 and k11."""
    _, alerts, a, b, rng = _pair(9)
    _until_idle([a, b], rng)
    assert sorted(b.sched.alerts.flagged) == ["k10", "k11"] and not a.sched.alerts.flagged
    return alerts, a, b, rng


def test_a_keys_standing_flag_moves_with_its_partition_one_outlier_alert_across_the_group():
    """Episode 1 flags k10 (t:2) and k11 (t:3) on b; between episodes both partitions move to a. The flags
    travel in the partitions' values: a does not alert them again in episode 2 (no new alert_id), b drops
    them (each key flagged on one member: the flagged-arms gauges sum to 2, not 4)."""
    alerts, a, b, rng = _episode_1_flags_on_b()
    _eager_rebalance({a: {"t:0", "t:1", "t:2", "t:3"}, b: set()})
    assert not b.sched.alerts.flagged
    a.sched.clock.advance(a.sched.episodes.next_start)
    _run([a], rng)  # (b, a standby without partitions, waits for an assignment)
    assert a.sched.history[-1]["episode"] == 2 and sorted(a.sched.history[-1]["outliers"]) == ["k10", "k11"]
    assert sorted(x["alert_id"] for x in alerts if x["kind"] == "outlier") == ["1:k10:outlier", "1:k11:outlier"]
    assert sorted(a.sched.alerts.flagged) == ["k10", "k11"] and not b.sched.alerts.flagged


class Discovering(Member):
    """A member whose keys come from its records (a Kafka member: not fixed up front)."""

    def __init__(self, board, owned, alerts, name, start=1_700_000_000.0, timeout=None):
        self.owned = set(owned)
        self.sched = Scheduler(lambda arms, ep: None, clock=EventClock(), emit_alert=alerts.append,
                               config=SchedulerConfig(max_episodes=1, discovery_records=24, discovery_seconds=1e6,
                                                      episode_timeout=timeout))
        self.member = GroupMember(self.sched, publish=board.__setitem__, fetch=lambda: dict(board),
                                  owned=lambda: self.owned, expected=lambda: ALL, partition_of=PART.get,
                                  params=dict(k=1.5, delta=0.2), clock=lambda: 0.0, interval=0.0,
                                  position_of=lambda p: [0, None], member=name)
        self.sched.clock.advance(start)  # (a stream's record times)

    def feed(self, rng, n):
        """``n`` records of the member's partitions' keys, round robin (what a consumer reads)."""
        keys = [a for a in MEANS if PART[a] in self.owned]
        for i in range(n):
            arm = keys[i % len(keys)]
            self.sched.clock.advance(self.sched.clock() + 0.01)
            self.sched.offer(arm.encode(), b'{"reward": %d}' % (rng.random() < MEANS[arm]))
            self.sched.tick()
            self.member.turn()


def test_a_member_joining_the_announcing_first_episode_announces_its_partitions_once_discovered():
    """a discovers t:0, t:1 and announces episode 1; c gets t:2, t:3 while the group announces, before it read
    any of their records. c announces them only once it discovered their keys (it used to announce them with
    the keys it knew then, none: the group's episode ran on 6 of the 12 keys, without the outliers k10, k11,
    and no next episode came for them)."""
    board, alerts = _board(), []
    rng = random.Random(12)
    a = Discovering(board, {"t:0", "t:1"}, alerts, "a")
    a.feed(rng, 40)
    assert isinstance(a.sched.policy, GroupAnnounce) and sorted(board) == ["t:0", "t:1"]
    c = Discovering(board, set(), alerts, "c")
    _eager_rebalance({a: {"t:0", "t:1"}, c: {"t:2", "t:3"}})
    assert c.sched.episode == 1 and sorted(board) == ["t:0", "t:1"]  # t:2, t:3 wait for c's discovery
    c.feed(rng, 10)
    assert sorted(board) == ["t:0", "t:1"]
    c.feed(rng, 40)
    assert (board["t:2"]["keys"], board["t:3"]["keys"]) == (3, 3)
    _run([a, c], rng)
    assert sum(m.sched.history[0]["arms"] for m in (a, c)) == len(MEANS)
    assert sorted(x["arm"] for x in alerts if x["kind"] == "outlier") == ["k10", "k11"]


def test_a_member_that_joins_before_reading_a_record_dates_its_episode_at_the_first_one():
    """With nothing taken over the stream clock stood at 0 when c joined: its first record (a real time)
    jumped past ``--episode-timeout`` and ended the episode at once (0 arms, 1 record). The episode, still
    announcing, is undated until the group's start, then dated there."""
    board, alerts = _board(), []
    rng = random.Random(13)
    a = Discovering(board, {"t:0", "t:1"}, alerts, "a")
    a.feed(rng, 40)
    c = Discovering(board, set(), alerts, "c", start=0.0, timeout=20.0)
    _eager_rebalance({a: {"t:0", "t:1"}, c: {"t:2", "t:3"}})
    c.sched.clock.advance(1_700_000_000.0)
    c.feed(rng, 1)
    assert c.sched.phase == "running" and c.sched.episode == 1 and not c.sched.history
    assert not c.sched.episodes.dated
    c.feed(rng, 40)  # discovered: announced (the group's episode starts), within the timeout
    assert c.sched.phase == "running" and (board["t:2"]["keys"], board["t:3"]["keys"]) == (3, 3)
    assert isinstance(c.sched.policy, GroupKSigma) and c.sched.episodes.dated
    assert 1_700_000_000.0 < c.sched.episodes.started <= c.sched.clock()


def test_an_announcing_member_given_a_partition_the_group_never_announced_announces_it_once_discovered():
    """a announced t:0, t:1; the rebalance gives it t:2 too (no value on the board: nobody announced it)
    and c t:3. a announces t:2 once it discovered its keys (it used to leave t:2 out of its announcement for
    good: the group's episode never started)."""
    board, alerts = _board(), []
    rng = random.Random(14)
    a = Discovering(board, {"t:0", "t:1"}, alerts, "a")
    a.feed(rng, 40)
    c = Discovering(board, set(), alerts, "c")
    _eager_rebalance({a: {"t:0", "t:1", "t:2"}, c: {"t:3"}})
    assert sorted(board) == ["t:0", "t:1"] and a.member.pending.waiting == {"t:2"}
    a.feed(rng, 60)
    c.feed(rng, 60)
    assert [board[p]["keys"] for p in ALL] == [3, 3, 3, 3]
    _run([a, c], rng)
    assert sum(m.sched.history[0]["arms"] for m in (a, c)) == len(MEANS)
    assert sorted(x["arm"] for x in alerts if x["kind"] == "outlier") == ["k10", "k11"]


def test_a_members_episode_timeout_counts_from_the_groups_start():
    """a announced episode 1 at t; the group starts only once c discovered its partitions, 3 s later. a's
    ``--episode-timeout`` (5 s) counts from the group's start, as c's does: a used to end the group's
    episode by timeout 2 s into it (and the members' episodes stayed out of step from then on)."""
    board, alerts = _board(), []
    rng = random.Random(15)
    a = Discovering(board, {"t:0", "t:1"}, alerts, "a", timeout=5.0)
    a.feed(rng, 40)
    announced = a.sched.episodes.started
    c = Discovering(board, set(), alerts, "c", timeout=5.0)
    _eager_rebalance({a: {"t:0", "t:1"}, c: {"t:2", "t:3"}})
    a.sched.clock.advance(announced + 3.0)
    c.feed(rng, 50)
    a.member.turn()
    assert isinstance(a.sched.policy, GroupKSigma) and a.sched.episodes.started == announced + 3.0
    a.sched.clock.advance(announced + 6.0)
    a.sched.tick()
    assert a.sched.phase == "running" and not a.sched.history


def test_flags_move_with_a_partition_taken_into_an_announcing_episode_from_an_earlier_value():
    """b flagged k10, k11 in episode 1 and died between episodes; a, announcing episode 2, gets b's partitions
    (their latest values are b's of episode 1): it adopts their flags, so episode 2 alerts nothing again."""
    alerts, a, b, rng = _episode_1_flags_on_b()
    a.sched.clock.advance(a.sched.episodes.next_start)
    a.sched.tick()
    a.member.turn()
    assert a.sched.episode == 2 and isinstance(a.sched.policy, GroupAnnounce)
    a.owned = set(ALL)  # b was killed: its partitions come to a
    a.member.on_assign(ALL)
    assert sorted(a.sched.alerts.flagged) == ["k10", "k11"]
    _run([a], rng)
    assert sorted(a.sched.history[-1]["outliers"]) == ["k10", "k11"]
    assert sorted(x["alert_id"] for x in alerts if x["kind"] == "outlier") == ["1:k10:outlier", "1:k11:outlier"]


def test_a_member_restored_from_a_checkpoint_of_an_episode_the_group_has_left_joins_the_groups():
    """b's checkpoint is of episode 1; when it restarts the group runs episode 2. b abandons its episode 1 and
    joins the group's episode 2 (it used to stay in episode 1, holding its partitions out of episode 2: without
    --episode-timeout the group stalled; with one, the stale episode ended by timeout with 0 arms)."""
    board, alerts, a, b, rng = _pair(16)
    for _ in range(300):
        a.step(rng)
        b.step(rng)
    assert b.sched.episode == 1 and isinstance(b.sched.policy, GroupKSigma)
    ckpt = b.sched.snapshot()
    _until_idle([a, b], rng)
    a.sched.clock.advance(a.sched.episodes.next_start)
    a.sched.tick()
    a.member.turn()
    assert a.sched.episode == 2 and board["t:0"]["episode"] == 2
    b2 = Member(board, {"t:2", "t:3"}, alerts, state=ckpt, config=_PAIR_CONFIG)  # b killed, restarted from ckpt
    b2.member.member = "b"
    b2.member.on_assign(["t:2", "t:3"])
    assert b2.sched.episode == 2 and b2.sched.phase == "running"
    _run([a, b2], rng)
    assert a.sched.history[-1]["episode"] == 2 and a.sched.history[-1]["done"]
    assert sorted(x["alert_id"] for x in alerts if x["kind"] == "outlier") == ["1:k10:outlier", "1:k11:outlier"]


def test_an_episode_timeout_counts_from_the_groups_start_not_from_the_announcement():
    """A member's --episode-timeout ran while its episode announced: with the other member's announcement
    later than the timeout (its discovery takes longer), the first member's episode ended by timeout alone
    before the group's started, and the group's episode waited for it. The announcing episode is undated
    now: its timeout counts from the group's start, and it still ends an undecided group episode."""
    board, alerts = _board(), []
    cfg = SchedulerConfig(max_episodes=1, episode_timeout=5.0)
    a = Member(board, {"t:0", "t:1"}, alerts, config=cfg)
    a.sched.clock.advance(1.0)
    a.sched.tick()
    a.member.turn()
    assert isinstance(a.sched.policy, GroupAnnounce)
    a.sched.clock.advance(20.0)  # b's discovery takes 19 s more
    a.sched.tick()
    a.member.turn()
    assert a.sched.phase == "running" and isinstance(a.sched.policy, GroupAnnounce), a.sched.history
    b = Member(board, {"t:2", "t:3"}, alerts, config=cfg)
    b.sched.clock.advance(20.0)
    b.sched.tick()
    for m in (b, a):
        m.member.turn()
    assert all(isinstance(m.sched.policy, GroupKSigma) and m.sched.episodes.started == 20.0 for m in (a, b))
    a.sched.clock.advance(24.9)
    a.sched.tick()
    assert a.sched.phase == "running"
    a.sched.clock.advance(25.0)
    a.sched.tick()
    assert a.sched.phase != "running" and a.sched.history[-1]["reason"] == "timeout"


def test_a_member_restored_while_announcing_publishes_nothing_before_its_assignment():
    """a announced t:0, t:1 and was killed; b took all four partitions over and the group's episode runs on
    b. a, restarted from its checkpoint (an announcing episode), re-announced t:0, t:1 at its first turn,
    before any assignment: b's values (samples, decided keys) were replaced on the board by a's bare
    announcement. Now a waits for its assignment as a restored deciding member does, and re-announces only
    what it is given."""
    board, alerts = _board(), []
    a = Member(board, {"t:0", "t:1"}, alerts)
    a.member.member = "a"
    a.sched.tick()
    a.member.turn()
    assert isinstance(a.sched.policy, GroupAnnounce) and sorted(board) == ["t:0", "t:1"]
    ckpt = a.sched.snapshot()
    b = Member(board, set(), alerts)
    b.member.member = "b"
    _eager_rebalance({b: set(ALL)})
    rng = random.Random(17)
    for _ in range(200):
        b.step(rng)
    assert isinstance(b.sched.policy, GroupKSigma) and board["t:0"]["member"] == "b"
    before = {p: dict(board[p]) for p in ALL}
    a2 = Member(board, {"t:0", "t:1"}, alerts, state=ckpt)
    a2.member.member = "a"
    a2.sched.tick()
    a2.member.turn()
    assert {p: dict(board[p]) for p in ALL} == before
    got = _eager_rebalance({a2: {"t:0", "t:1"}, b: {"t:2", "t:3"}})
    assert set(got[a2]) == {"t:0", "t:1"} and isinstance(a2.sched.policy, GroupKSigma)
    handed = {p: board[p]["arms"] for p in ("t:0", "t:1")}  # b's values at its revoke: taken over, not reset
    assert {p: a2.sched.policy.partition_arms(p) for p in ("t:0", "t:1")} == handed
    assert sum(st["cs"]["m"] for v in handed.values() for st in v.values() if st) > 0
    _run([a2, b], rng)
    assert sorted(x["arm"] for x in alerts if x["kind"] == "outlier") == ["k10", "k11"]


def test_a_member_that_missed_its_episodes_end_follows_the_group_to_the_next():
    """b saw group episode 1 finished and, its next start due (an episode longer than --episode-interval),
    announced episode 2 at once: its partitions' values of episode 1 left the board before a read them. a
    never saw episode 1 end (the board no longer held the group's finished episode) and sampled on alone,
    and episode 2 waited for a's partitions for good. a now ends its episode when the group has gone on, and
    joins the group's next."""
    board, alerts = _board(), []
    cfg = SchedulerConfig(max_episodes=2, episode_interval=0.0)
    a, b = Member(board, {"t:0", "t:1"}, alerts, config=cfg), Member(board, {"t:2", "t:3"}, alerts, config=cfg)
    a.member.member, b.member.member = "a", "b"
    rng = random.Random(18)
    for _ in range(30_000):  # until a's keys are all classified (and published), the group's not yet seen over
        for m in (a, b):
            m.step(rng)
        pol = a.sched.policy
        if isinstance(pol, GroupKSigma) and pol.n_undecided == 0 and not pol.track.group._dirty:
            break
    assert a.sched.episode == 1 and a.sched.phase == "running"
    for _ in range(30_000):  # only b moves: it finishes episode 1 and announces episode 2
        if b.sched.episode == 2:
            break
        b.step(rng)
    assert b.sched.episode == 2 and {board[p]["episode"] for p in ("t:2", "t:3")} == {2}
    _run([a, b], rng)
    assert [m.sched.history[-1]["episode"] for m in (a, b)] == [2, 2]
    assert sum(m.sched.history[-1]["arms"] for m in (a, b)) == len(MEANS)
    assert sorted(o for m in (a, b) for o in m.sched.history[-1]["outliers"]) == ["k10", "k11"]


def test_a_member_restored_while_announcing_announces_again_what_never_reached_the_board():
    """a announced t:0, t:1, checkpointed, and died before t:1's value reached the board. Restarted with the
    same partitions, it takes t:0 over from the board and announces t:1 again with the checkpoint's keys of
    it (the group's episode would otherwise wait for t:1 for good)."""
    board, alerts = _board(), []
    a = Member(board, {"t:0", "t:1"}, alerts)
    a.sched.tick()
    a.member.turn()
    ckpt = a.sched.snapshot()
    del board["t:1"]
    a2 = Member(board, {"t:0", "t:1"}, alerts, state=ckpt)
    a2.member.turn()
    assert "t:1" not in board  # nothing before the assignment
    a2.member.on_assign(["t:0", "t:1"])
    assert board["t:1"]["keys"] == 3 and sorted(a2.sched.policy.arms) == sorted(a for a in MEANS if PART[a] in ("t:0", "t:1"))
    b = Member(board, {"t:2", "t:3"}, alerts)
    _run([a2, b], random.Random(19))
    assert sorted(x["arm"] for x in alerts if x["kind"] == "outlier") == ["k10", "k11"]


def test_a_member_still_announcing_an_episode_the_group_has_left_follows_the_group():
    """z holds a partition without keys (announced with none). The group's episode 1 runs on a's keys and
    ends before z looks again; a, its next start due, announces episode 2. z, still announcing episode 1
    (the board no longer shows it whole), waited for it for good, and episode 2 waited for z's partition.
    z now leaves episode 1 and joins the group's episode 2."""
    board, alerts = _board(), []
    cfg = SchedulerConfig(max_episodes=2, episode_interval=0.0)
    a, z = Member(board, {"t:0", "t:1", "t:2"}, alerts, config=cfg), Member(board, {"t:3"}, alerts, config=cfg)
    a.member.member, z.member.member = "a", "z"
    z.member.partition_of = lambda arm: None  # it has read no key of t:3
    for m in (a, z):
        m.sched.tick()
        m.member.turn()
    assert board["t:3"]["keys"] == 0 and isinstance(z.sched.policy, GroupAnnounce)
    rng = random.Random(20)
    for _ in range(30_000):  # only a moves: it runs episode 1 to its end and announces episode 2
        if a.sched.episode == 2:
            break
        a.step(rng)
    assert a.sched.episode == 2 and z.sched.episode == 1 and board["t:3"]["episode"] == 1
    _run([a, z], rng)
    assert [m.sched.history[-1]["episode"] for m in (a, z)] == [2, 2]
    assert a.sched.history[-1]["outliers"] == ["k10"]  # (k11 is on t:3, whose keys z never read)

"""One partition's group value spread over loop turns (issue 13: a publish round never stalls the loop
> 1 s; streamarms/group_cut.py, ChunkWriter.steps, GroupTrack's budgeted drive): the spread value is
byte-equal to the one built in one go at the same cut, whatever rewards arrive while it is read (the key
state, totals and position are one moment); a reader never sees a mixed value; a threshold advance's
classifications wait for the cut and then happen; a partition released half-way closes its cut."""

from __future__ import annotations

import random

import pytest

from streamarms.group_chunks import ChunkAssembler, ChunkWriter, split_chunk_key
from streamarms.group_cut import KeyCut
from streamarms.group_track import SteppedPublish
from streamarms.policies.anytime_group import GroupKSigma

ARMS = [f"k{i:03d}" for i in range(70)]
PART = {a: ("t:0" if i < 60 else "t:1") for i, a in enumerate(ARMS)}
MEANS = {a: (0.85 if i in (3, 41) else 0.3) for i, a in enumerate(ARMS)}


class Member:
    """A GroupKSigma whose values go through its own ChunkWriter (chunks of 7 keys) into a record list;
    its board is a ChunkAssembler fed those records (so merges see only complete values)."""

    def __init__(self, stepped: bool) -> None:
        self.writer, self.reader = ChunkWriter(chunk_keys=7), ChunkAssembler()
        self.records: list[tuple[str, bytes | None]] = []
        self.pos = {"t:0": 0, "t:1": 0}

        def publish(p, v):
            self._sent(self.writer.records(p, v))

        def steps(p, v):
            for j, recs in enumerate(self.writer.steps(p, v)):
                if j:
                    yield None
                self._sent(recs)

        pub = SteppedPublish(publish, steps) if stepped else publish
        self.pol = GroupKSigma(ARMS, group_n=len(ARMS), partition_of=PART.__getitem__, publish=pub,
                               fetch=lambda: self.reader.latest, clock=lambda: 0.0, interval=0.0, k=2.0,
                               delta=0.1, position_of=lambda p: [self.pos[p], 0])
        self.gt = self.pol.track.group

    def _sent(self, recs):
        self.records += recs
        for k, b in recs:
            self.reader.feed(k, b)

    def reward(self, arm: str, x: float) -> list:
        self.pos[PART[arm]] += 1
        return self.pol.update(arm, x)


def _feed(members, rng, n, arms=ARMS):
    for _ in range(n):
        a = rng.choice(arms)
        x = float(rng.random() < MEANS[a])
        for m in members:
            m.reward(a, x)


def _t0(records):
    return [(k, b) for k, b in records if k.startswith("t:0")]


@pytest.mark.parametrize("seed", range(4))
def test_a_spread_value_is_the_one_go_value_at_its_cut_whatever_arrives_meanwhile(seed):
    rng = random.Random(seed)
    spread, one_go = Member(stepped=True), Member(stepped=False)
    _feed([spread, one_go], rng, 1500)
    for m in (spread, one_go):  # a first complete value of both partitions on both boards
        m.gt.touch("t:0")
        m.gt.touch("t:1")
        m.gt.publish_now()
    assert _t0(spread.records) == _t0(one_go.records)
    _feed([spread, one_go], rng, 600)
    spread.records.clear()
    one_go.records.clear()
    one_go.gt.touch("t:0")
    one_go.gt.publish_now()  # the reference: the value of t:0 at the cut, in one go
    ref = _t0(one_go.records)
    head_ref = spread.reader.latest["t:0"]
    spread.gt.touch("t:0")
    turns = 0
    while True:  # one chunk a turn, 40 rewards (keys of every chunk, read or not) between turns
        spread.gt.publish_now(budget=0.0)
        turns += 1
        latest = spread.reader.latest["t:0"]
        if spread.gt._open is None:
            break
        assert latest is head_ref  # the previous complete value until the new head
        _feed([spread], rng, 40)
    assert turns >= 9  # 60 keys in chunks of 7: the value took several turns
    assert _t0(spread.records) == ref  # byte-equal: state, totals and position of the cut
    got = spread.reader.latest["t:0"]
    assert got["position"] == [one_go.pos["t:0"], 0] and got["position"] != [spread.pos["t:0"], 0]
    assert not spread.pol._cut.saved and spread.pol._cut.closed
    # the rewards that arrived meanwhile are in the next value
    spread.gt.touch("t:0")
    spread.gt.publish_now()
    nxt = spread.reader.latest["t:0"]
    assert nxt["position"] == [spread.pos["t:0"], 0]
    assert {a: s["cs"]["m"] for a, s in nxt["arms"].items()} == {
        a: spread.pol.cs[spread.pol.index[a]].m for a in ARMS if PART[a] == "t:0"}


def test_a_reader_on_the_spread_records_never_assembles_a_mixed_value():
    rng = random.Random(7)
    m = Member(stepped=True)
    _feed([m], rng, 800)
    m.gt.publish_now()  # first values
    seen_values = []
    for _ in range(3):  # three spread rounds with rewards between every chunk
        _feed([m], rng, 300)
        m.gt.touch("t:0")
        m.gt.publish_now(budget=0.0)
        while m.gt.publishing:
            _feed([m], rng, 25)
            m.gt.publish_now(budget=0.0)
        seen_values.append(m.reader.latest["t:0"])
    fresh = ChunkAssembler()
    versions = []
    for k, b in m.records:  # a reader reading the whole log, record by record
        if fresh.feed(k, b) and k.startswith("t:0"):
            versions.append(fresh.latest["t:0"])
    # every value it ever assembled is a complete one the writer published (never a mix of two)
    complete = [v for v in versions if v.get("chunks")]
    assert complete[-3:] == seen_values
    for v in complete:
        assert len(v["arms"]) == 60
        assert sum(st["cs"]["m"] for st in v["arms"].values()) == v["position"][0]


def test_a_threshold_advance_waits_for_the_cut_then_classifies():
    rng = random.Random(5)
    m = Member(stepped=False)
    _feed([m], rng, 3000)
    pol = m.pol
    cut = pol._open_cut("t:0")
    before = list(pol.state)
    # whatever the track says, an advance's classifications wait while the cut is open
    assert pol._on_advance() == [] and pol._advance_due
    assert pol.state == before
    cut.take(len(cut))  # read: the cut closes
    assert cut.closed
    events = pol.sync()
    assert not pol._advance_due
    assert [e.arm for e in events] == [pol.arms[i] for i, s in enumerate(pol.state) if s != before[i]]


def test_releasing_the_partition_under_way_abandons_and_closes_its_cut():
    rng = random.Random(2)
    m = Member(stepped=True)
    _feed([m], rng, 500)
    m.gt.publish_now()
    previous = m.reader.latest["t:0"]
    _feed([m], rng, 100)
    m.gt.touch("t:0")
    m.gt.publish_now(budget=0.0)
    m.gt.publish_now(budget=0.0)
    cut = m.pol._cut
    _feed([m], rng, 100)
    assert m.gt.publishing and not cut.closed and cut.saved
    m.gt.release("t:0")
    assert cut.closed and not cut.saved and m.gt._open is None and "t:0" not in m.gt._round
    # the chunks it sent have no head: a reader keeps the previous complete value
    assert m.reader.latest["t:0"] is previous and split_chunk_key(m.records[-1][0])[0] == "t:0"


def test_an_unbudgeted_publish_finishes_the_value_under_way_then_sends_fresh_values():
    rng = random.Random(4)
    m = Member(stepped=True)
    _feed([m], rng, 500)
    m.gt.publish_now()
    _feed([m], rng, 100)
    m.gt.touch("t:0")
    m.gt.publish_now(budget=0.0)
    _feed([m], rng, 50, arms=[a for a in ARMS if PART[a] == "t:0"])
    m.gt.touch("t:0")  # a revoke: the partition's value now
    m.gt.publish_now()
    assert not m.gt.publishing
    assert m.reader.latest["t:0"]["position"] == [m.pos["t:0"], 0]


def test_a_key_cut_saves_only_keys_not_read_yet_and_once():
    live = {i: i for i in range(5)}
    cut = KeyCut("p", [str(i) for i in range(5)], list(range(5)), live.__getitem__)
    assert cut.take(2) == [("0", 0), ("1", 1)]
    for i in (1, 3, 3):
        cut.before_update(i, i)
        live[i] += 10
    assert cut.saved == {3: 3}
    assert cut.take(10) == [("2", 2), ("3", 3), ("4", 4)] and cut.closed
    cut.before_update(4, 4)
    assert cut.saved == {}
    with pytest.raises(ValueError):
        KeyCut("p", ["a"], [], live.__getitem__)

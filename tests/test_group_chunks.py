"""A partition's stats value in chunks (issue 13, streamarms/group_chunks.py) on an in-memory compacted
log: values round-trip; a reader never mixes chunks of two versions (it keeps the previous complete
value); a partition that shrinks or is retired leaves no live stale chunk after compaction; unchanged
chunks are not sent again and a reader that starts from the compacted log still assembles; and two
group members on a chunked board decide exactly as on single-record values."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.group_chunks import ChunkAssembler, ChunkWriter, ValueTooLarge, split_chunk_key
from streamarms.group_member import GroupMember
from streamarms.group_threshold import merge_totals
from streamarms.group_track import SteppedPublish
from streamarms.runtime.clock import EventClock
from streamarms.runtime.config import SchedulerConfig
from streamarms.runtime.scheduler import Scheduler

H = "g/t:0"


class Log:
    """A one-partition compacted topic: records in order; ``compact()`` keeps each key's latest record at
    its own position and drops tombstones (as Kafka after ``delete.retention.ms``)."""

    def __init__(self):
        self.records: list[tuple[str, bytes | None]] = []

    def append(self, recs):
        self.records += recs

    def compact(self):
        last = {k: i for i, (k, _) in enumerate(self.records)}
        self.records = [(k, b) for i, (k, b) in enumerate(self.records) if last[k] == i and b is not None]

    def live_keys(self):
        c = Log()
        c.records = list(self.records)
        c.compact()
        return sorted(k for k, _ in c.records)


class Reader:
    def __init__(self, log):
        self.log, self.pos, self.board = log, 0, ChunkAssembler()

    def poll(self, upto=None):
        end = len(self.log.records) if upto is None else upto
        for k, b in self.log.records[self.pos:end]:
            self.board.feed(k, b)
        self.pos = max(self.pos, end)
        return self.board.latest


def _value(n, episode=1, tag=0, first=0):
    return {"episode": episode, "keys": n, "undecided": n, "totals": {"1": [float(n), 0.5 + tag]},
            "arms": {f"k{i:05d}": {"cs": [i, tag], "state": 0} for i in range(first, first + n)}}


def _plain(v):
    return {k: x for k, x in v.items() if k not in ("chunks", "slots")}


def test_a_value_round_trips_in_chunks_with_its_key_order():
    w, log = ChunkWriter(chunk_keys=3), Log()
    v = _value(7)
    v["arms"] = dict(reversed(list(v["arms"].items())))  # not sorted: the published order is kept
    recs = w.records(H, v)
    assert [k for k, _ in recs] == [f"{H}/c0", f"{H}/c1", f"{H}/c2", H]
    log.append(recs)
    got = Reader(log).poll()[H]
    assert _plain(got) == v and list(got["arms"]) == list(v["arms"])
    assert len(got["chunks"]) == 3


def test_a_small_value_stays_one_record_as_before():
    v = _value(3)
    assert ChunkWriter(chunk_keys=3).records(H, v) == [(H, json.dumps(v, separators=(",", ":")).encode())]
    no_arms = {"episode": 1, "totals": {}}
    assert ChunkWriter(chunk_keys=1).records(H, no_arms) == [(H, json.dumps(no_arms, separators=(",", ":")).encode())]


def test_a_head_whose_chunks_have_not_all_arrived_leaves_the_previous_value():
    w, log = ChunkWriter(chunk_keys=2), Log()
    v1, v2 = _value(5, tag=1), _value(5, tag=2)
    log.append(w.records(H, v1))
    r = Reader(log)
    r.poll()
    n1 = len(log.records)
    log.append(w.records(H, v2))  # d0 d1 d2 head of v2 (the other slot), then v1's c0 c1 c2 tombstoned
    assert [k for k, _ in log.records[n1:n1 + 4]] == [f"{H}/d0", f"{H}/d1", f"{H}/d2", H]
    for stop in range(n1, n1 + 4):  # every prefix of v2's records: v1 until v2's head and chunks are all in
        assert _plain(Reader(log).poll(stop)[H]) == v1
    # a head that overtakes a chunk (another owner's newer chunk 1 in between): still v1, then v2 once
    # the head's chunk 1 arrives again (the head names content, not arrival)
    other = ChunkWriter(chunk_keys=2).records(H, _value(5, tag=3), named=r.board.named)
    mixed = Log()
    mixed.records = log.records[:n1] + log.records[n1:n1 + 2] + [other[1]] + log.records[n1 + 2:]
    rm = Reader(mixed)
    assert _plain(rm.poll()[H]) == v1 and rm.board.pending() == [H]
    mixed.append([log.records[n1 + 1]])  # v2's chunk 1 again (a re-send)
    assert _plain(rm.poll()[H]) == v2 and rm.board.pending() == []


def test_a_torn_value_leaves_the_previous_one_readable_even_after_compaction():
    """A writer killed between its chunks and its head: its chunks went to the slots the previous value
    does not use, so a live reader keeps the previous value and so does a reader starting from the
    compacted log; the new owner (its reader's view: the previous head) writes around that value too."""
    log, w = Log(), ChunkWriter(chunk_keys=2)
    v1, v2 = _value(6, tag=1), _value(6, tag=2)
    log.append(w.records(H, v1))
    live = Reader(log)
    live.poll()
    log.append(w.records(H, _value(6, tag=9)))
    log.append(w.records(H, v2))  # v2's chunks are back in the c slots
    live.poll()
    torn = w.records(H, _value(6, tag=3))
    assert [k for k, _ in torn[:3]] == [f"{H}/d0", f"{H}/d1", f"{H}/d2"]
    log.append(torn[:2])  # d0, d1 then kill -9
    assert _plain(live.poll()[H]) == v2
    compacted = Log()
    compacted.records = list(log.records)
    compacted.compact()
    fresh = Reader(compacted)
    assert _plain(fresh.poll()[H]) == v2 and fresh.board.pending() == []
    v4 = _value(6, tag=4)
    recs = ChunkWriter(chunk_keys=2).records(H, v4, on_topic=fresh.board.chunks_on, named=fresh.board.named)
    assert all(not k.startswith(f"{H}/c") or b is None for k, b in recs[:recs.index(next(r for r in recs if r[0] == H))])
    log.append(recs)
    compacted.append(recs)
    assert _plain(fresh.poll()[H]) == v4 == _plain(live.poll()[H])
    compacted.compact()
    assert compacted.live_keys() == [H, f"{H}/d0", f"{H}/d1", f"{H}/d2"]
    # a writer without any view of the topic (no reader, no memory) may overwrite the previous value's
    # chunks: a reader starting from the compacted log then holds no value, never a mixed one
    blind = ChunkWriter(chunk_keys=2).records(H, _value(6, tag=5))[:2]  # c0, c1 then kill -9
    compacted.append(blind)
    assert _plain(Reader(compacted).poll()[H]) == v4
    assert [k for k, _ in blind] == [f"{H}/c0", f"{H}/c1"]


def test_a_partition_that_shrinks_or_is_retired_leaves_no_stale_chunk():
    w, log = ChunkWriter(chunk_keys=2), Log()
    r = Reader(log)
    log.append(w.records(H, _value(9)))  # 5 chunks
    r.poll()
    assert log.live_keys() == sorted([H] + [f"{H}/c{j}" for j in range(5)])
    v = _value(3, episode=2)
    # 2 chunks: the first unchanged (stays in c0), the second in the other slot (d1); c1..c4 tombstoned
    log.append(w.records(H, v, on_topic=r.board.chunks_on))
    assert _plain(r.poll()[H]) == v and r.board.chunks_on(H).keys() == {(0, 0), (1, 1)}
    assert log.live_keys() == [H, f"{H}/c0", f"{H}/d1"]
    v = _value(2, episode=3)
    log.append(w.records(H, v, on_topic=r.board.chunks_on))  # one record: every chunk tombstoned
    assert r.poll()[H] == v and log.live_keys() == [H]
    # another owner's chunks (this writer never sent them) are tombstoned through the reader's view
    log.append(ChunkWriter(chunk_keys=1).records(H, _value(4, episode=4)))
    r.poll()
    successor = ChunkWriter(chunk_keys=2)
    log.append(successor.records(H, _value(3, episode=5), on_topic=r.board.chunks_on, named=r.board.named))
    assert log.live_keys() == [H, f"{H}/d0", f"{H}/d1"]
    log.append(successor.retire(H, on_topic=r.poll() and r.board.chunks_on, named=r.board.named))
    assert H not in r.poll() and log.live_keys() == []
    log.compact()
    assert H not in Reader(log).poll()


def test_unchanged_chunks_are_not_sent_again_and_a_fresh_reader_still_assembles():
    w, log = ChunkWriter(chunk_keys=4), Log()
    r = Reader(log)
    v = _value(20)
    log.append(w.records(H, v, on_topic=r.board.chunks_on))  # the reader has seen nothing: all 5 chunks
    assert len(log.records) == 6
    v["arms"]["k00009"] = {"cs": [9, 99], "state": 1}  # one key in chunk 2 changed
    lag = w.records(H, v, on_topic=r.board.chunks_on)  # the reader has not read the first value yet
    assert [k for k, _ in lag] == [f"{H}/d{j}" for j in range(5)] + [H] + [f"{H}/c{j}" for j in range(5)]
    assert w.skipped == 0
    log.append(lag)
    r.poll()
    v["arms"]["k00017"] = {"cs": [17, 99], "state": 2}  # chunk 4 changed: to the other slot
    recs = w.records(H, v, on_topic=r.board.chunks_on)
    assert [(k, b is None) for k, b in recs] == [(f"{H}/c4", False), (H, False), (f"{H}/d4", True)]
    assert w.skipped == 4
    log.append(recs)
    assert _plain(r.poll()[H]) == v
    log.compact()
    assert _plain(Reader(log).poll()[H]) == v  # chunks from three publishes, one complete value


def test_readers_of_the_same_records_merge_bit_identical_totals():
    rng = random.Random(5)
    log, writers = Log(), {p: ChunkWriter(chunk_keys=3) for p in range(4)}
    for rnd in range(6):
        for p in rng.sample(range(4), 4):
            v = _value(rng.randrange(1, 10), episode=1, tag=rnd)
            v["totals"] = {str(g): [rng.random() for _ in range(13)] for g in range(1, 4)}
            log.append(writers[p].records(f"g/t:{p}", v))
    a = Reader(log)
    for stop in range(0, len(log.records), 7):
        a.poll(stop)
    a.poll()
    log.compact()
    b = Reader(log).poll()
    assert a.board.latest == b
    ma, mb = (merge_totals(x[k] for k in sorted(x)) for x in (a.board.latest, b))
    assert json.dumps(ma) == json.dumps(mb)


@pytest.mark.parametrize("seed", range(3))
def test_interleaved_owners_never_yield_a_mixed_value(seed):
    """Two writers of one partition (an owner and its successor, or a zombie) whose records interleave at
    random; a reader polled at random points holds, at every point, a value one of them published whole."""
    rng = random.Random(seed)
    log = Log()
    ws = [ChunkWriter(chunk_keys=2), ChunkWriter(chunk_keys=3)]
    published: list[dict] = []
    readers = [Reader(log) for _ in range(3)]
    queues: list[list] = [[], []]
    for step in range(400):
        who = rng.randrange(2)
        if not queues[who] and rng.random() < 0.5:
            v = _value(rng.randrange(1, 12), tag=step, first=rng.randrange(3))
            published.append(v)
            queues[who] = ws[who].records(H, v, on_topic=readers[who].board.chunks_on)
        if queues[who]:
            log.append([queues[who].pop(0)])
        r = rng.choice(readers)
        got = r.poll().get(H)
        assert got is None or _plain(got) in published
        if got is not None and "chunks" in got:
            assert sum(1 for _ in got["arms"]) == got["keys"]  # all of its version's keys, none of another's
    assert published and all(r.poll().get(H) is not None for r in readers)


def test_a_record_above_the_cap_is_halved_and_one_key_above_it_refused():
    assert len(ChunkWriter(chunk_keys=16, max_bytes=1000).records(H, _value(16))) == 1  # ~650 bytes: one record
    recs = ChunkWriter(chunk_keys=16, max_bytes=250).records(H, _value(16))  # ~530 bytes of keys: halved twice
    assert len([k for k, _ in recs if split_chunk_key(k)]) == 4 and all(len(b) <= 250 for _, b in recs)
    log = Log()
    log.append(recs)
    assert _plain(Reader(log).poll()[H]) == _value(16)
    big = _value(2)
    big["arms"]["k00001"] = {"cs": "x" * 500}
    with pytest.raises(ValueTooLarge, match=r"key 'k00001' of g/t:0 has a state of \d+ bytes"):
        ChunkWriter(chunk_keys=8, max_bytes=400).records(H, big)
    with pytest.raises(ValueTooLarge, match=r"without its per-key part"):
        ChunkWriter(chunk_keys=8, max_bytes=400).records(H, {**_value(2), "totals": "y" * 500})
    with pytest.raises(ValueTooLarge, match=r"without its per-key part"):  # no per-key part to split
        ChunkWriter(chunk_keys=8, max_bytes=400).records(H, {"keys": 1, "state": "y" * 500})
    with pytest.raises(ValueError, match="chunk_keys"):
        ChunkWriter(chunk_keys=0)


# -- two group members on a chunked board decide as on single-record values -------------------------
MEANS = {f"k{i}": m for i, m in enumerate([0.2, 0.25, 0.22, 0.2, 0.18, 0.21, 0.23, 0.2, 0.19, 0.24, 0.85, 0.9])}
PART = {a: f"t:{i % 4}" for i, a in enumerate(MEANS)}
ALL = ["t:0", "t:1", "t:2", "t:3"]


class JsonBoard:
    """Single-record values through JSON (what a reader of the topic sees)."""

    def __init__(self):
        self.values: dict = {}

    def member(self):
        return (lambda p, v: self.values.__setitem__(p, json.loads(json.dumps(v)))), (lambda: dict(self.values))


class ChunkedBoard:
    """Every member writes through its own ChunkWriter (one key a chunk) and reads the log with its own
    reader, whose view lets the writer skip unchanged chunks."""

    def __init__(self, stepped=False):
        self.log = Log()
        self.sizes: list[int] = []
        self.stepped = stepped  # values chunk by chunk over turns (SteppedPublish): a copy-on-write cut

    def member(self):
        w, r = ChunkWriter(chunk_keys=1), Reader(self.log)

        def publish(p, v):
            recs = w.records(p, v, on_topic=r.board.chunks_on, named=r.board.named)
            self.sizes.append(sum(1 for k, b in recs if split_chunk_key(k) and b is not None))
            self.log.append(recs)

        def steps(p, v):
            for j, recs in enumerate(w.steps(p, v, on_topic=r.board.chunks_on, named=r.board.named)):
                if j:
                    yield None
                self.log.append(recs)

        pub = SteppedPublish(publish, steps) if self.stepped else publish
        return pub, lambda: {k: _plain(v) for k, v in r.poll().items()}


def _group(board, seed=4, hand_over=True, budget=None):
    alerts: list = []
    members = []
    for owned in ({"t:0", "t:1"}, {"t:2", "t:3"}):
        s = Scheduler(lambda arms, ep: None, clock=EventClock(), config=SchedulerConfig(max_episodes=1),
                      arms=list(MEANS), emit_alert=alerts.append)
        publish, fetch = board.member()
        box = {"owned": set(owned)}
        m = GroupMember(s, publish=publish, fetch=fetch, owned=lambda box=box: box["owned"], expected=lambda: ALL,
                        partition_of=PART.get, params=dict(k=1.5, delta=0.2), clock=lambda: 0.0, interval=0.0,
                        position_of=lambda p: [0, None], publish_budget=budget)
        members.append((s, m, box))
    rng = random.Random(seed)
    for turn in range(30_000):
        if all(s.finished for s, _, _ in members):
            break
        if hand_over and turn == 200:  # t:3 moves from the second member to the first
            (sa, a, ba), (sb, b, bb) = members
            b.on_revoke(["t:2", "t:3"])
            a.on_revoke(["t:0", "t:1"])
            bb["owned"], ba["owned"] = {"t:2"}, {"t:0", "t:1", "t:3"}
            b.on_assign(["t:2"])
            a.on_assign(["t:0", "t:1", "t:3"])
        for s, m, _ in members:
            s.tick()
            m.turn()
            arm = next(iter(s.plan.window), None)
            if arm is not None:
                s.offer(arm.encode(), b'{"reward": %d}' % (rng.random() < MEANS[arm]))
    else:
        raise AssertionError("no group decision")
    return alerts, [s.history[0] for s, _, _ in members]


def test_two_members_on_a_chunked_board_decide_as_on_single_records():
    plain_alerts, plain_hist = _group(JsonBoard())
    board = ChunkedBoard()
    alerts, hist = _group(board)
    assert sorted(a["arm"] for a in alerts if a["kind"] == "outlier") == ["k10", "k11"]
    assert [(a["arm"], a["kind"]) for a in alerts] == [(a["arm"], a["kind"]) for a in plain_alerts]
    keep = ("arms", "outliers", "pulls", "done")
    assert [{f: h.get(f) for f in keep} for h in hist] == [{f: h.get(f) for f in keep} for h in plain_hist]
    assert max(board.sizes) == 3 and 0 in board.sizes  # chunked values; some re-sent nothing but the head


@pytest.mark.parametrize("seed", [4, 5])
def test_two_members_with_values_spread_over_turns_find_the_outliers_once(seed):
    """The same group with every value sent one chunk a loop turn (budget 0: a copy-on-write cut under
    rewards, threshold advances deferred while a value is under way, a hand-over mid-value): the group
    finds the two outliers, each alerted once, and both members end the episode having seen every arm."""
    board = ChunkedBoard(stepped=True)
    alerts, hist = _group(board, seed=seed, budget=0.0)
    assert sorted(a["arm"] for a in alerts if a["kind"] == "outlier") == ["k10", "k11"]
    assert len({a["arm"] for a in alerts}) == len(alerts)  # one alert per key group-wide
    assert sorted(o for h in hist for o in h["outliers"]) == ["k10", "k11"] and all(h["done"] for h in hist)
    assert sum(h["arms"] for h in hist) == len(MEANS)

"""The group's stats topic against the real broker (Tansu): three members publish the totals of their
partitions, three readers converge to the same merged totals (and the single-process interval); a
member that restarts resumes its partitions' totals from the topic; another group's values are ignored;
a partition's value in chunks arrives whole, re-sends only its changed chunks, shrinks and is retired."""

from __future__ import annotations

import math
import random
import uuid

import pytest

from streamarms.confidence.factory import sequence_for
from streamarms.confidence.threshold import ThresholdTrack
from streamarms.connectors.group_stats import KafkaStatsPublisher, KafkaStatsReader
from streamarms.group_threshold import GroupThreshold, PartitionTotals
from streamarms.models import make_model

pytestmark = pytest.mark.kafka

N, PARTS, ROUNDS = 60, 6, 240
SPEC = dict(n=N, k=2.0, alpha=0.05, low=0.0, high=1.0, bernoulli=True)
OWNER = {p: p // 2 for p in range(PARTS)}  # member m owns partitions 2m and 2m + 1


def _stream(seed: int = 7):
    """Per round, the (arm, reward) pairs in arrival order; arm i lives in partition part_of[i]."""
    rng = random.Random(seed)
    means = [0.3 + 0.02 * (i % 5) for i in range(N - 2)] + [0.85, 0.9]
    part_of = [rng.randrange(PARTS) for _ in range(N)]
    rounds = [[(i, float(rng.random() < means[i])) for i in rng.sample(range(N), N)] for _ in range(ROUNDS)]
    return part_of, rounds


def _config(kafka_broker):
    return {"bootstrap_servers": [kafka_broker.bootstrap]}


def test_three_readers_converge_and_a_restarted_member_resumes(kafka_broker):
    topic = f"stats-{uuid.uuid4().hex[:8]}"
    cfg = _config(kafka_broker)
    part_of, rounds = _stream()
    arms = [sequence_for(make_model("bernoulli"), 0.025 / N, str(i)) for i in range(N)]
    single = ThresholdTrack(N, 2.0, 0.05, low=0.0, high=1.0, bernoulli=True)
    totals = {p: PartitionTotals(**SPEC) for p in range(PARTS)}
    pubs = {m: KafkaStatsPublisher(cfg, topic, "detectors", f"member-{m}") for m in range(3)}
    noise = KafkaStatsPublisher(cfg, topic, "other-group", "x", create=False)  # must not be merged
    readers = [KafkaStatsReader(cfg, topic, "detectors") for _ in range(3)]
    restarted_at = 150
    try:
        for r, batch in enumerate(rounds):
            for i, x in batch:
                c = arms[i]
                c.update(x)
                if c.n in single.levels:
                    lo, hi = c.interval()
                    single.record(c.n, c.s, lo, hi)
                    totals[part_of[i]].record(c.n, c.s, lo, hi)
            if r % 40 == 39 or r == restarted_at:  # every member publishes its partitions now and then
                for p in range(PARTS):
                    pubs[OWNER[p]].publish(f"rewards:{p}", totals[p].value(offset=r))
                noise.publish("rewards:0", PartitionTotals(**SPEC).value())
                for pub in pubs.values():
                    pub.flush()
                noise.flush()
            if r == restarted_at:  # member 0 dies; its successor resumes partitions 0 and 1 from the topic
                pubs[0].close()
                pubs[0] = KafkaStatsPublisher(cfg, topic, "detectors", "member-0-restarted", create=False)
                boot = KafkaStatsReader(cfg, topic, "detectors")
                boot.catch_up()
                for p in (0, 1):
                    v = boot.value_of(f"rewards:{p}")
                    assert v is not None and v["offset"] == restarted_at  # the same moment as its key state
                    fresh = PartitionTotals(**SPEC)
                    fresh.restore(v)
                    assert fresh.value() == totals[p].value()
                    totals[p] = fresh
                boot.close()
            if r % 60 == 0:
                for rd in readers:
                    rd.poll(0.0)
        views = []
        for rd in readers:
            rd.catch_up()
            assert sorted(rd.latest) == [f"detectors/rewards:{p}" for p in range(PARTS)]
            g = GroupThreshold(**SPEC)
            g.update(rd.merged())
            views.append((rd.merged(), g.m_theta, g.upper()))
            assert rd.lag() == 0 and 0.0 <= rd.staleness() < 60.0
        assert views[0] == views[1] == views[2]  # bit for bit
        _, m_theta, upper = views[0]
        assert m_theta == single.m_theta > 100
        assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(upper, single.upper()))
        assert sum(p.sent for p in pubs.values()) > 0
    finally:
        for pub in [*pubs.values(), noise]:
            pub.close()
        for rd in readers:
            rd.close()


def test_a_value_too_large_is_a_clear_error_and_a_large_one_arrives(kafka_broker):
    """A stats value's part that is not per-key (here an artificial ``state`` field) must fit one record:
    one above the limit is refused before it is sent (a SinkError naming the partition and its size), and
    one above Kafka's default 1 MB limit but within ours is delivered (the topic is created to take it).
    (The message changed with the chunks: a partition's keys no longer bound it, so the remedy is not
    "more partitions" any more.)"""
    from streamarms.connectors.kafka_sinks import SinkError
    topic, cfg = f"stats-big-{uuid.uuid4().hex[:6]}", _config(kafka_broker)
    pub = KafkaStatsPublisher(cfg, topic, "g", "m1", max_value_bytes=3_000_000)
    reader = KafkaStatsReader(cfg, topic, "g")
    try:
        with pytest.raises(SinkError, match=r"partition r:0: the group stats value of g/r:0 is 3,\d{3},\d{3} bytes "
                                            r"\(12 keys\) without its per-key part"):
            pub.publish("r:0", {"keys": 12, "state": "x" * 3_000_000})
        pub.publish("r:1", {"keys": 7, "state": "y" * 2_000_000})
        pub.flush()
        for _ in range(40):
            reader.poll(0.25)
            if reader.value_of("r:1") is not None:
                break
        assert reader.value_of("r:1")["keys"] == 7 and reader.value_of("r:0") is None
    finally:
        pub.close()
        reader.close()


def _arms(n, tag=0):
    rng = random.Random(n + tag)
    return {f"key-{i:04d}": {"cs": [rng.random() for _ in range(4)], "state": 0, "key": rng.random(), "q": 0.0}
            for i in rng.sample(range(n), n)}  # not sorted: the published order must survive


def test_a_partition_value_in_chunks_arrives_whole_resends_its_changes_shrinks_and_retires(kafka_broker):
    """400 keys of ~110 bytes (~44 KB) with a 20 KB record cap: one record cannot carry them, 8 chunks of
    50 keys do. Readers (one live, one that starts later) assemble the value with its key order; a change
    of one key re-sends one chunk and the head; a partition that shrinks tombstones its extra chunks; a
    retired one disappears; one key whose state alone exceeds the cap is a SinkError naming it."""
    from streamarms.connectors.kafka_sinks import SinkError
    topic, cfg = f"stats-chunks-{uuid.uuid4().hex[:6]}", _config(kafka_broker)
    pub = KafkaStatsPublisher(cfg, topic, "g", "m1", max_value_bytes=20_000, chunk_keys=50)
    reader = KafkaStatsReader(cfg, topic, "g")
    pub.on_topic, pub.named = reader.chunks_on, reader.named
    late = None
    try:
        arms = _arms(400)
        pub.publish("r:0", {"episode": 1, "keys": 400, "undecided": 400, "arms": arms})
        pub.flush()
        reader.catch_up()
        v = reader.value_of("r:0")
        assert v["arms"] == arms and list(v["arms"]) == list(arms) and len(v["chunks"]) == 8
        assert pub.sent == 9 and sorted(reader.chunks_on("g/r:0")) == [(j, 0) for j in range(8)]
        changed = dict(arms)
        first = next(iter(changed))
        changed[first] = {**changed[first], "state": 1}
        pub.publish("r:0", {"episode": 1, "keys": 400, "undecided": 399, "arms": changed})
        pub.flush()
        assert pub.sent == 12 and pub.writer.skipped == 7  # chunk 0 (the other slot), the head, c0 tombstoned
        reader.catch_up()
        assert reader.value_of("r:0")["arms"] == changed and reader.value_of("r:0")["undecided"] == 399
        late = KafkaStatsReader(cfg, topic, "g")  # reads every record from the beginning
        late.catch_up()
        assert late.value_of("r:0") == reader.value_of("r:0")
        small = _arms(120, tag=1)
        pub.publish("r:0", {"episode": 2, "keys": 120, "undecided": 120, "arms": small})
        pub.flush()
        for rd in (reader, late):
            rd.catch_up()
            assert rd.value_of("r:0")["arms"] == small and sorted(j for j, _ in rd.chunks_on("g/r:0")) == [0, 1, 2]
        assert reader.latest == late.latest
        with pytest.raises(SinkError, match=r"partition r:1: key 'huge' of g/r:1 has a state of 3\d,\d{3} bytes"):
            pub.publish("r:1", {"episode": 2, "keys": 2, "arms": {"huge": "x" * 30_000, "tiny": None}})
        pub.retire("r:0")
        pub.flush()
        for rd in (reader, late):
            rd.catch_up()
            assert rd.value_of("r:0") is None and rd.chunks_on("g/r:0") == {}
    finally:
        pub.close()
        reader.close()
        if late is not None:
            late.close()

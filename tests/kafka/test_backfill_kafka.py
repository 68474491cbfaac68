"""Backfill against a real Kafka-protocol broker (Tansu): ``start_from`` seeks a partition assigned without a
checkpointed position to the first record at or after a timestamp (``offsets_for_times``), or to its
beginning / end; a checkpointed position wins over it (a restart reads nothing twice)."""

from __future__ import annotations

import time

import pytest
from test_runtime_kafka import T0, produce

from streamarms.connectors.kafka import KafkaRewardSource

pytestmark = pytest.mark.kafka

FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}
N = 3000


@pytest.fixture(scope="module")
def history(kafka_broker):
    """N records over 2 partitions, timestamps T0 + i."""
    produce(kafka_broker.bootstrap, "backfill", [(f"k{i % 7}", b'{"reward": 0}', T0 + i) for i in range(N)],
            partitions=2)
    return "backfill"


def drain(src: KafkaRewardSource, want: int, seconds: float = 30.0) -> list:
    out: list = []
    deadline = time.monotonic() + seconds
    while len(out) < want and time.monotonic() < deadline:
        out += src.poll(0.2)
    quiet = time.monotonic() + 1.5  # and nothing more arrives
    while time.monotonic() < quiet:
        out += src.poll(0.2)
    return out


def source(broker, topic, group, **kw) -> KafkaRewardSource:
    return KafkaRewardSource([topic], group, {"bootstrap_servers": [broker.bootstrap]}, consumer_options=FAST, **kw)


@pytest.mark.parametrize("start", [T0 + 2000, T0 + 1999.0])
def test_start_from_a_timestamp_reads_exactly_the_records_from_then_on(kafka_broker, history, start):
    src = source(kafka_broker, history, f"bf-ts-{int(start)}-{type(start).__name__}", start_from=int(start))
    try:
        got = drain(src, N - 2000 + (start != T0 + 2000))
    finally:
        src.close()
    ts = sorted(r.timestamp for r in got)
    assert ts == list(range(int(start), T0 + N))


def test_start_from_latest_and_earliest(kafka_broker, history):
    src = source(kafka_broker, history, "bf-latest", start_from="latest")
    try:
        assert drain(src, 1, seconds=5.0) == []
        produce(kafka_broker.bootstrap, history, [("k1", b'{"reward": 1}', T0 + N + 5)], partitions=2)
        got = drain(src, 1)
        assert [r.timestamp for r in got] == [T0 + N + 5]
    finally:
        src.close()
    src = source(kafka_broker, history, "bf-earliest", start_from="earliest")
    try:
        assert len(drain(src, N + 1)) == N + 1
    finally:
        src.close()


def test_a_checkpointed_position_wins_over_start_from(kafka_broker, history):
    src = source(kafka_broker, history, "bf-resume", start_from=T0 + 100)
    try:
        first = drain(src, N + 1 - 100)
        state = src.state()
    finally:
        src.close()
    assert min(r.timestamp for r in first) == T0 + 100
    src = source(kafka_broker, history, "bf-resume", start_from=T0, resume=state)
    try:
        assert drain(src, 1, seconds=5.0) == []
    finally:
        src.close()

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


@pytest.mark.slow  # (~10-15 s: the long tier; the quick suite keeps under its 15 minutes)
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


@pytest.mark.slow  # (~10-15 s: the long tier; the quick suite keeps under its 15 minutes)
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


@pytest.mark.slow  # (~10-15 s: the long tier; the quick suite keeps under its 15 minutes)
def test_run_forever_start_from_warms_on_history_then_resumes(kafka_broker, history, tmp_path):
    """``streamarms run --forever --start-from T``: the continuous monitor reads exactly the records from T
    on (its alerts would carry their historical times); restarted with the same flag, it resumes from
    its checkpoint and reads nothing twice."""
    import json
    import signal
    import subprocess

    from test_runtime_kafka import FAST_GROUP, ROOT, cli, read_topic

    from streamarms.checkpoint import FileCheckpointStore
    ck = tmp_path / "bf.ckpt"
    want = sum(r.timestamp >= T0 + 2500 for r in read_topic(kafka_broker.bootstrap, history))  # other tests add some
    assert want >= N - 2500
    args = cli(["--forever", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", history,
                "--group-id", "g-bf-cli", "--alerts-topic", "alerts-bf", "--start-from", str(T0 + 2500),
                "--checkpoint", str(ck), "--checkpoint-interval", "0.3", "--summary-json", str(tmp_path / "s.json"),
                "--create-topics", *FAST_GROUP])

    def records() -> int:
        try:
            return FileCheckpointStore(ck).load()["scheduler"]["counters"]["records"]
        except Exception:
            return -1

    def written_since(t: float) -> bool:  # this life checkpointed: its loop (and SIGTERM handler) runs
        return ck.exists() and ck.stat().st_mtime > t

    for _ in range(2):
        before = ck.stat().st_mtime if ck.exists() else 0.0
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while (records() < want or not written_since(before)) and time.monotonic() < deadline \
                and proc.poll() is None:
            time.sleep(0.3)
        time.sleep(2.0)  # anything more would show up now
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err[-3000:]
        s = json.loads((tmp_path / "s.json").read_text())
        assert s["mode"] == "continuous" and s["records"] == want, (s, err[-2000:])

"""`streamarms run` against a real Kafka-protocol broker (Tansu), as separate processes.

* 20 keys, 2 outliers, 10k Bernoulli rewards per key: ``--policy wrr --k 2 --max-episodes 1`` alerts
  exactly the two outliers and exits 0;
* kill -9 in the middle of the episode and restart: same decision, same samples used, same records
  counted as an uninterrupted run;
* bad records reach the dead-letter topic with their reason header; SIGTERM checkpoints, commits, exits 0;
* active mode with a responder answering the request topic;
* ``--key-field``: a topic keyed by request id over 3 partitions, each key read from its value's field.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streamarms.checkpoint import FileCheckpointStore
from streamarms.connectors.kafka import KafkaRewardSource, ensure_topics
from streamarms.sim import zww17_example

pytestmark = pytest.mark.kafka

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEANS = zww17_example()                      # 20 arms; outliers at k = 2: the last two
KEYS = [f"region-{i:02d}" for i in range(len(MEANS))]
OUTLIERS = {"region-18", "region-19"}
T0 = 1_700_000_000_000
FAST_GROUP = ["--consumer-option", "session_timeout_ms=6000", "--consumer-option", "heartbeat_interval_ms=500"]


def produce(bootstrap, topic, records, partitions=1):
    """records: (key, value bytes, timestamp ms)."""
    ensure_topics({"bootstrap_servers": [bootstrap]}, {topic: partitions})
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1024 * 1024, acks=1,
                      max_request_size=4 << 20)
    for key, value, ts in records:
        p.send(topic, key=None if key is None else key.encode() if isinstance(key, str) else key,
               value=value, timestamp_ms=ts)
    p.flush()
    p.close()


def read_topic(bootstrap, topic):
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    try:
        parts = c.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        if not tps:
            return []
        c.assign(tps)
        c.seek_to_beginning(*tps)
        end = c.end_offsets(tps)
        out = []
        deadline = time.monotonic() + 30
        while any(c.position(tp) < end[tp] for tp in tps) and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


def cli(args):
    return [sys.executable, "-m", "streamarms.cli", "run", *args]


def run(args, timeout=120):
    p = subprocess.run(cli(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    return p


@pytest.fixture(scope="module")
def twenty_keys(kafka_broker):
    """20 keys x 10k Bernoulli rewards, interleaved at random, over 3 partitions (keyed)."""
    rng = random.Random(2024)
    order = [a for a in range(len(KEYS)) for _ in range(10_000)]
    rng.shuffle(order)
    recs = [(KEYS[a], b'{"reward": %d}' % (rng.random() < MEANS[a]), T0 + n) for n, a in enumerate(order)]
    produce(kafka_broker.bootstrap, "rewards20", recs, partitions=3)
    return "rewards20"


def base_args(broker, topic, tag, tmp_path):
    return ["--bootstrap-servers", broker.bootstrap, "--rewards-topic", topic, "--alerts-topic", f"alerts-{tag}",
            "--dead-letter-topic", f"dlq-{tag}", "--group-id", f"g-{tag}", "--policy", "wrr", "--k", "2",
            "--max-episodes", "1", "--checkpoint", str(tmp_path / f"{tag}.ckpt"),
            "--summary-json", str(tmp_path / f"{tag}.json"), "--create-topics", *FAST_GROUP]


def test_wrr_alerts_exactly_the_two_outliers(kafka_broker, twenty_keys, tmp_path):
    run(base_args(kafka_broker, twenty_keys, "plain", tmp_path))
    alerts = [json.loads(r.value) for r in read_topic(kafka_broker.bootstrap, "alerts-plain")]
    assert {a["arm"] for a in alerts if a["kind"] == "outlier"} == OUTLIERS
    assert all(a["kind"] == "outlier" for a in alerts) and len(alerts) == 2
    for a in alerts:
        assert {"arm", "kind", "episode", "policy", "estimate", "interval", "threshold", "delta", "samples",
                "time"} <= set(a)
    s = json.loads((tmp_path / "plain.json").read_text())
    assert s["episodes"][0]["outliers"] == sorted(OUTLIERS)
    assert 0 < s["samples"] < s["records"] <= 200_000


def test_alerts_and_dead_letter_files_take_a_kafka_runs_alerts_and_refusals(kafka_broker, twenty_keys, tmp_path):
    """--alerts-file and --dead-letter-file were ignored with --bootstrap-servers (a Kafka drill): the alerts went to
    the default topic, the refused records to no sink, and neither file was made. Now the files take them, in place
    of the topics."""
    tag = "files"
    args = [a for a in base_args(kafka_broker, twenty_keys, tag, tmp_path)
            if a not in ("--alerts-topic", f"alerts-{tag}", "--dead-letter-topic", f"dlq-{tag}")]
    run([*args, "--alerts-file", str(tmp_path / "alerts.jsonl"), "--dead-letter-file", str(tmp_path / "dead.jsonl")])
    alerts = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert {a["arm"] for a in alerts if a["kind"] == "outlier"} == OUTLIERS and len(alerts) == 2
    assert (tmp_path / "dead.jsonl").read_text() == ""  # (made, empty: these records are all good)


def test_key_field_reads_each_key_from_the_value_of_records_keyed_otherwise(kafka_broker, tmp_path):
    """Records keyed by request id (a key's records on every partition), the region in the value."""
    rng = random.Random(77)
    order = [a for a in range(len(KEYS)) for _ in range(6_000)]
    rng.shuffle(order)
    recs = [(f"req-{n}", b'{"region": "%s", "reward": %d}' % (KEYS[a].encode(), rng.random() < MEANS[a]), T0 + n)
            for n, a in enumerate(order)]
    recs.insert(100, ("req-bad", b'{"reward": 1}', T0 + 100))
    recs.insert(200, (None, b'{"region": 3.5, "reward": 1}', T0 + 200))
    produce(kafka_broker.bootstrap, "by-request", recs, partitions=3)
    args = base_args(kafka_broker, "by-request", "keyfield", tmp_path)
    run([*args[:args.index("--policy")], "--policy", "cs", *args[args.index("--policy") + 2:], "--key-field", "region"])
    alerts = [json.loads(r.value) for r in read_topic(kafka_broker.bootstrap, "alerts-keyfield")]
    assert {a["arm"] for a in alerts} == OUTLIERS and {a["kind"] for a in alerts} == {"outlier"}
    dead = read_topic(kafka_broker.bootstrap, "dlq-keyfield")
    assert {(r.key, dict(r.headers)["reason"]) for r in dead} == {(None, b"key_missing"), (b"req-bad", b"key_missing")}
    s = json.loads((tmp_path / "keyfield.json").read_text())
    assert s["episodes"][0]["outliers"] == sorted(OUTLIERS) and s["invalid"] == {"key_missing": 2}


def read_in_timestamp_order(src: KafkaRewardSource, n: int) -> None:
    """Poll ``src`` until ``n`` records came (60 s at most): every partition's offsets in order, the
    timestamps increasing across partitions, and the source resumed a paused partition on the way."""
    got, prev, last = 0, None, {}
    deadline = time.monotonic() + 60
    while got < n and time.monotonic() < deadline:
        for r in src.poll(0.2):
            assert r.offset == last.get(r.partition, -1) + 1
            last[r.partition] = r.offset
            assert prev is None or r.timestamp > prev
            prev = r.timestamp
            got += 1
    assert got == n and src._resumed_any


def test_source_merges_partitions_in_timestamp_order_through_pauses(kafka_broker):
    """A tiny merge buffer forces pause/resume all the time while partitions run dry at different
    moments (kafka-python parks fetched data of paused partitions and, without the source's
    work-around, never hands it back once other partitions only return empty fetches); the output is
    every record, in exactly the global timestamp order."""
    rng = random.Random(3)
    n = 30_000
    recs = [(f"k{rng.choice([0, 0, 0, 1, 1, 2])}", b'{"reward": 0}', T0 + i) for i in range(n)]  # skewed
    produce(kafka_broker.bootstrap, "merge-pauses", recs, partitions=3)
    src = KafkaRewardSource(["merge-pauses"], "g-pause", {"bootstrap_servers": [kafka_broker.bootstrap]},
                            max_poll_records=500, max_buffer=1000,
                            consumer_options={"session_timeout_ms": 6000, "heartbeat_interval_ms": 500})
    try:
        read_in_timestamp_order(src, n)  # produced with increasing timestamps
    finally:
        src.close()


def test_paused_partitions_never_leave_the_consumer_idle_with_records_in_hand(kafka_broker):
    """Issue 15: a partition paused while its records are kafka-python's in-line slot used to be parked
    only inside the next poll, after the restore of resumed partitions' parked records: that poll found
    nothing to return or fetch and slept ``retry_backoff_ms`` (100 ms; 0.3-0.4 s of every 2 s of the
    4-partition benchmark). Counted, not timed: no fetch of the source reports "idle" (nothing to wait
    for) while records of a partition that is not paused are parked; and the merge is still exact."""
    rng = random.Random(5)
    n = 40_000
    recs = [(f"k{rng.randrange(20)}", b'{"reward": 0}', T0 + i) for i in range(n)]
    produce(kafka_broker.bootstrap, "merge-idle", recs, partitions=4)
    src = KafkaRewardSource(["merge-idle"], "g-idle", {"bootstrap_servers": [kafka_broker.bootstrap]},
                            max_poll_records=500, max_buffer=2000,
                            consumer_options={"session_timeout_ms": 6000, "heartbeat_interval_ms": 500})
    idle_with_parked = []
    fetcher = src.consumer._fetcher
    subs = src.consumer._subscription
    inner = fetcher.fetch_records

    def fetch_records(*args, **kw):
        got, idle = inner(*args, **kw)
        if idle and any(not subs.is_paused(tp) for tp in fetcher._paused_partition_records):
            idle_with_parked.append(sorted(tp.partition for tp in fetcher._paused_partition_records))
        return got, idle

    fetcher.fetch_records = fetch_records
    try:
        read_in_timestamp_order(src, n)
        assert idle_with_parked == []
    finally:
        src.close()


@pytest.mark.drill  # (a kill -9 drill, ~20 s: CI's long tier; test_drills_kafka.py has ten more)
def test_kill_9_mid_episode_then_restart_equals_uninterrupted(kafka_broker, twenty_keys, tmp_path):
    ref_args = base_args(kafka_broker, twenty_keys, "ref", tmp_path)
    run(ref_args)
    ref = json.loads((tmp_path / "ref.json").read_text())

    args = base_args(kafka_broker, twenty_keys, "crash", tmp_path) + ["--checkpoint-interval", "0.05"]
    store = FileCheckpointStore(tmp_path / "crash.ckpt")
    proc = subprocess.Popen(cli(args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at = None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            doc = store.load()
        except Exception:
            doc = None
        if doc and doc["scheduler"]["phase"] == "running" and doc["scheduler"]["counters"]["used"] >= 2000:
            os.kill(proc.pid, signal.SIGKILL)
            killed_at = doc["scheduler"]["counters"]["used"]
            break
        time.sleep(0.01)
    proc.wait(timeout=30)
    out, err = proc.communicate()
    assert killed_at is not None, f"the daemon finished before it could be killed:\n{err.decode()[-2000:]}"
    assert proc.returncode == -signal.SIGKILL
    mid = store.load()
    assert mid["scheduler"]["phase"] == "running" and mid["scheduler"]["history"] == []

    run(args)
    got = json.loads((tmp_path / "crash.json").read_text())
    ep, ep_ref = got["episodes"][0], ref["episodes"][0]
    assert ep["outliers"] == ep_ref["outliers"] == sorted(OUTLIERS)
    assert ep["samples"] == ep_ref["samples"]
    assert (got["records"], got["samples"], got["skipped"]) == (ref["records"], ref["samples"], ref["skipped"])
    assert ep["threshold"] == ep_ref["threshold"]
    # alerts: at least once across the crash, deduplicable by alert_id
    alerts = {json.loads(r.value)["alert_id"] for r in read_topic(kafka_broker.bootstrap, "alerts-crash")}
    assert alerts == {f"1:{a}:outlier" for a in OUTLIERS}


def test_bad_records_go_to_the_dead_letter_topic_and_sigterm_exits_clean(kafka_broker, tmp_path):
    rng = random.Random(5)
    recs = []
    for n in range(3000):
        a = rng.randrange(8)
        recs.append((f"k{a}", b'{"reward": %d}' % (rng.random() < 0.3), T0 + n))
    bad = [("k1", b"not json", "not_json"), ("k2", b'{"reward": 0.5}', "out_of_model"),
           ("k3", b'{"reward": NaN}', "not_finite"), ("k4", b'{"score": 1}', "missing_reward"),
           ("k5", b'{"reward": "1"}', "not_numeric"), ("x" * 300, b'{"reward": 1}', "key_too_long"),
           (None, b'{"reward": 1}', "key_missing"), ("flood-1", b'{"reward": 1}', None),
           ("flood-2", b'{"reward": 1}', "too_many_arms")]
    for i, (k, v, _) in enumerate(bad):
        recs.insert(500 + 200 * i, (k, v, T0 + 500 + 200 * i))
    # a producer with a clock 10 years ahead, one before 1970, and Kafka's "no timestamp" (-1, used)
    stamped = [("k6", T0 + 10 * 365 * 86_400_000, "bad_timestamp"), ("k7", -5, "bad_timestamp"), ("k6", -1, None)]
    for k, ts, r in stamped:
        recs.insert(600, (k, b'{"reward": 1}', ts))
        bad.append((k, b'{"reward": 1}', r))
    produce(kafka_broker.bootstrap, "mixed", recs)
    args = ["--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "mixed", "--group-id", "g-dlq",
            "--dead-letter-topic", "dlq-mixed", "--alerts-topic", "alerts-mixed", "--validate", "all",
            "--max-arms", "9", "--checkpoint", str(tmp_path / "dlq.ckpt"), "--create-topics",
            "--episode-interval", "3600", *FAST_GROUP]
    proc = subprocess.Popen(cli(args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    expect = sorted(r for _, _, r in bad if r)
    got = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        got = read_topic(kafka_broker.bootstrap, "dlq-mixed")
        if len(got) >= len(expect):
            break
        time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()[-3000:]
    reasons = sorted(dict(r.headers)["reason"].decode() for r in got)
    assert reasons == expect
    originals = {(k.encode() if isinstance(k, str) else k, v) for k, v, r in bad if r}
    assert {(r.key, r.value) for r in got} == originals
    # the final checkpoint covers exactly the records handled (at least up to the last bad one), and
    # the group's committed offset equals it
    doc = FileCheckpointStore(tmp_path / "dlq.ckpt").load()
    handled = doc["source"]["mixed:0"][0]
    assert doc["scheduler"]["now"] <= (T0 + len(recs)) / 1000  # the stream clock did not jump 10 years
    assert handled == doc["scheduler"]["counters"]["records"] > 500 + 200 * (len(bad) - 1)
    c = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, group_id="g-dlq", enable_auto_commit=False)
    try:
        assert c.committed(TopicPartition("mixed", 0)) == handled
    finally:
        c.close()


@pytest.mark.slow  # (~25 s of request/answer round trips: the long tier; tests/runtime covers active mode without Kafka)
def test_active_mode_with_a_responder(kafka_broker, tmp_path):
    arms = [f"w{i}" for i in range(10)]
    means = {a: (0.9 if a == "w9" else 0.2) for a in arms}
    ensure_topics({"bootstrap_servers": [kafka_broker.bootstrap]}, {"requests-a": 1, "answers-a": 1})
    stop = threading.Event()
    answered = []

    def responder():
        rng = random.Random(11)
        c = KafkaConsumer("requests-a", bootstrap_servers=kafka_broker.bootstrap, group_id="responder",
                          auto_offset_reset="earliest", fetch_max_wait_ms=20)
        p = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, linger_ms=1)
        try:
            while not stop.is_set():
                for recs in c.poll(timeout_ms=100).values():
                    for r in recs:
                        req = json.loads(r.value)
                        x = int(rng.random() < means[req["arm"]])
                        p.send("answers-a", key=req["arm"].encode(),
                               value=json.dumps({"reward": x, "request_id": req["request_id"]}).encode())
                        answered.append(req["request_id"])
                p.flush()
        finally:
            c.close()
            p.close()

    t = threading.Thread(target=responder, daemon=True)
    t.start()
    try:
        run(["--bootstrap-servers", kafka_broker.bootstrap, "--mode", "active", "--arms", ",".join(arms),
             "--requests-topic", "requests-a", "--rewards-topic", "answers-a", "--alerts-topic", "alerts-a",
             "--group-id", "g-active", "--policy", "wrr", "--k", "2", "--max-episodes", "1",
             "--checkpoint", "none", "--summary-json", str(tmp_path / "a.json"),
             "--consumer-option", "fetch_max_wait_ms=20", *FAST_GROUP], timeout=180)
    finally:
        stop.set()
        t.join(timeout=10)
    s = json.loads((tmp_path / "a.json").read_text())
    assert s["episodes"][0]["outliers"] == ["w9"] and s["episodes"][0]["done"]
    alerts = [json.loads(r.value) for r in read_topic(kafka_broker.bootstrap, "alerts-a")]
    assert [(a["arm"], a["kind"]) for a in alerts] == [("w9", "outlier")]
    requests = read_topic(kafka_broker.bootstrap, "requests-a")
    assert len(requests) >= s["samples"] and len(answered) >= s["samples"]
    assert all({"arm", "request_id", "episode", "kind"} <= set(json.loads(r.value)) for r in requests)


def test_checkpoint_in_a_compacted_topic(kafka_broker):
    from streamarms.connectors.kafka_checkpoint import KafkaCheckpointStore
    cfg = {"bootstrap_servers": [kafka_broker.bootstrap]}
    store = KafkaCheckpointStore(cfg, "streamarms-checkpoints", key="group-a")
    other = KafkaCheckpointStore(cfg, "streamarms-checkpoints", key="group-b")
    try:
        assert store.load() is None
        store.save({"n": 1})
        other.save({"n": 99})
        store.save({"n": 2, "source": {"t:0": [5, 7]}})
        assert store.load() == {"n": 2, "source": {"t:0": [5, 7]}}
        assert other.load() == {"n": 99}
    finally:
        store.close()
        other.close()


def test_an_unchanged_checkpoint_is_not_written_to_the_topic_again(kafka_broker):
    """The Kafka store's mark (:mod:`streamarms.last_save`): the last save's record while the topic holds it, the
    same after another key's saves (group members share the topic); an idle daemon's checkpoints then add no
    record, and a changed one is written."""
    from kafka import KafkaConsumer, TopicPartition

    from streamarms.connectors.kafka_checkpoint import KafkaCheckpointStore
    from streamarms.last_save import LastSave
    cfg = {"bootstrap_servers": [kafka_broker.bootstrap]}
    store = KafkaCheckpointStore(cfg, "ckpt-idle", key="member-a")
    other = KafkaCheckpointStore(cfg, "ckpt-idle", key="member-b")
    probe = KafkaConsumer(group_id=None, **cfg)
    tp = TopicPartition("ckpt-idle", 0)
    last = LastSave()

    def checkpoint(doc, counts):  # what Daemon.checkpoint does
        held, digest = last.holds(store, doc, counts)
        if not held:
            store.save(doc)
            last.saved(store, counts, digest)
        return held

    try:
        assert store.saved_mark() is None  # nothing saved yet: cannot tell
        assert [checkpoint({"saved_at": t, "n": 1}, (5, 0)) for t in range(2)] == [False, False]
        mark = store.saved_mark()
        assert mark is not None and mark == store.saved_mark()
        other.save({"n": 99})
        assert store.saved_mark() == mark
        end = probe.end_offsets([tp])[tp]
        assert [checkpoint({"saved_at": t, "n": 1}, (5, 0)) for t in range(2, 6)] == [True] * 4
        assert probe.end_offsets([tp])[tp] == end  # no record added
        assert checkpoint({"saved_at": 6, "n": 2}, (5, 0)) is False and probe.end_offsets([tp])[tp] == end + 1
        assert store.load()["n"] == 2
    finally:
        probe.close()
        store.close()
        other.close()


def test_a_checkpoint_record_the_topic_no_longer_holds_is_written_again(kafka_broker):
    """Retention (a topic with ``cleanup.policy=compact,delete``) removed the last save's record, or the topic
    was emptied, or the broker does not answer: the mark differs (or cannot tell), so the checkpoint is written."""
    from kafka.errors import KafkaTimeoutError

    from streamarms.connectors.kafka_checkpoint import KafkaCheckpointStore
    cfg = {"bootstrap_servers": [kafka_broker.bootstrap]}
    store = KafkaCheckpointStore(cfg, "ckpt-gone", key="member-a")

    class Probe:  # the topic's first and end offsets as the broker would give them
        first, end, fail = 0, 0, False

        def beginning_offsets(self, tps, timeout_ms=None):
            if self.fail:
                raise KafkaTimeoutError()
            return {tp: self.first for tp in tps}

        def end_offsets(self, tps, timeout_ms=None):
            return {tp: self.end for tp in tps}

        def close(self, autocommit=False):
            pass

    try:
        store.save({"n": 1})
        store.save({"n": 1})
        offset = store._offset
        store._probe = probe = Probe()
        probe.first, probe.end = 0, offset + 1
        held = store.saved_mark()
        assert held == (0, offset)
        probe.end = offset + 5  # other keys' records after it: still held
        assert store.saved_mark() == held
        probe.first = offset + 1  # retention removed it
        assert store.saved_mark() != held
        probe.first, probe.end = 0, 0  # the topic deleted and made again
        assert store.saved_mark() != held
        probe.fail = True
        assert store.saved_mark() is None
    finally:
        store.close()

"""Drills of issue 10 against a real broker (Tansu), each a real ``streamarms run`` process.

* 10,000 bad records (every kind, one of 1 MB) among 90,000 clean ones: no crash, every bad record
  on the dead-letter topic with its reason, the decision equal to the clean stream's;
* a broker outage mid-run (a proxy drops every connection for 12 s; Tansu keeps its data): no crash,
  no loss, no double count -- the same decision and counters as an undisturbed run;
* a broker process restart mid-run (a new Tansu on the same port, refilled with the same log): the same;
* a broker restart that lost the topic (Tansu's storage is memory only) under a stale checkpoint: a
  clear warning, the rule applied, progress;
* a checkpoint written against another cluster (another cluster id): refused, exit 2;
* no broker at all: one line, exit 1, within seconds;
* kill -9 ten times mid-episode with the checkpoint in a compacted topic: identical decision and
  samples; alerts at least once, and after the documented recipe (``streamarms dedupe-alerts``) each
  alert exactly once, none lost;
* a topic recreated and refilled past the checkpointed offset: detected by the last record's fingerprint.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from drill_util import clean_stream, fuzzed, jsonl_line
from outage import OutageProxy
from test_runtime_kafka import FAST_GROUP, ROOT, cli, produce

from streamarms.connectors.kafka import ensure_topics
from streamarms.connectors.tansu import TansuBroker, free_port
from streamarms.runtime import INVALID_REASONS

pytestmark = [pytest.mark.kafka, pytest.mark.drill]

POLICY = ["--policy", "wrr", "--k", "2", "--delta", "0.1", "--discovery-records", "500"]


def reference(tmp_path, recs, tag):
    """The decision and counters of the clean stream, replayed from a JSONL file (no broker)."""
    src = tmp_path / f"{tag}.jsonl"
    with open(src, "wb") as f:
        for k, v, ts in recs:
            f.write(jsonl_line(k, v, ts) + b"\n")
    out = tmp_path / f"{tag}-ref.json"
    p = subprocess.run(cli(["--rewards-file", str(src), *POLICY, "--max-episodes", "1", "--summary-json", str(out),
                            "--log-level", "warning"]), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(out.read_text())


def same_decision(got, ref):
    e, r = got["episodes"][0], ref["episodes"][0]
    for k in ("outliers", "samples", "threshold", "threshold_interval", "undecided"):
        assert e[k] == r[k], k


def read_n(bootstrap, topic, n, timeout=180):
    """The first ``n`` records of ``topic`` (partition 0). Reads by count: Tansu answers ListOffsets
    with the base offset of the last batch, so "read up to the end offset" misses a whole batch."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                      max_partition_fetch_bytes=4 << 20, fetch_max_bytes=8 << 20)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


def read_settled(bootstrap, topic, isolation="read_uncommitted", settle=3.0):
    """Every record of ``topic`` (partition 0) a reader sees until ``settle`` seconds pass without one."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                      isolation_level=isolation)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        out, idle = [], time.monotonic()
        while time.monotonic() - idle < settle:
            for recs in c.poll(timeout_ms=300).values():
                out.extend(recs)
                idle = time.monotonic()
        return out
    finally:
        c.close()


def dedupe_recipe(tmp_path, records, tag):
    """The documented dedupe recipe as an operator runs it: the alert topic's values, one JSON per line,
    through ``streamarms dedupe-alerts``. Returns the ``alert_id`` of every alert it keeps, in order."""
    f = tmp_path / f"{tag}-alerts.jsonl"
    f.write_bytes(b"".join(r.value + b"\n" for r in records))
    p = subprocess.run([sys.executable, "-m", "streamarms.cli", "dedupe-alerts", str(f)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [json.loads(x)["alert_id"] for x in p.stdout.splitlines()]


def checkpointed_position(ck, tp: str) -> int:
    """The next offset of partition ``tp`` (``"topic:0"``) in the file checkpoint ``ck`` (0: none yet)."""
    from streamarms.checkpoint import FileCheckpointStore
    try:
        doc = FileCheckpointStore(ck).load()
    except Exception:
        return 0
    return doc["source"].get(tp, [0])[0] if doc else 0


def wait_for(cond, timeout, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


def test_fuzz_1e4_bad_records_through_kafka(kafka_broker, tmp_path):
    clean = clean_stream(90_000, seed=31)  # the episode ends after ~67k records of this stream
    fuzz, bad_at = fuzzed(clean, 10_000, seed=32, big=1)
    produce(kafka_broker.bootstrap, "fuzz", fuzz)  # produce() sends through a 1 MB-capable producer
    ref = reference(tmp_path, clean, "fuzz")
    args = ["--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "fuzz", "--group-id", "g-fuzz",
            "--dead-letter-topic", "dlq-fuzz", "--alerts-topic", "alerts-fuzz", *POLICY, "--forever", "--mode", "episodes",
            "--episode-interval", "1e9", "--checkpoint", str(tmp_path / "fuzz.ckpt"), "--create-topics",
            "--summary-json", str(tmp_path / "fuzz.json"), "--metrics-port", str(free_port()), *FAST_GROUP]
    proc = subprocess.Popen(cli(args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ck = tmp_path / "fuzz.ckpt"
    assert wait_for(lambda: checkpointed_position(ck, "fuzz:0") >= len(fuzz), 400, proc), \
        proc.communicate(timeout=30)[1].decode()[-3000:]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()[-3000:]
    got = json.loads((tmp_path / "fuzz.json").read_text())
    same_decision(got, ref)
    assert got["records"] == len(fuzz) and got["dead_letters"] == len(bad_at) and got["known_arms"] == 20
    dl = read_n(kafka_broker.bootstrap, "dlq-fuzz", len(bad_at))
    assert sorted(int(dict(r.headers)["source"].decode().rsplit(":", 1)[1]) for r in dl) == sorted(bad_at)
    reasons = {dict(r.headers)["reason"].decode() for r in dl}
    assert reasons <= set(INVALID_REASONS) and len(reasons) >= 9
    assert any("truncated" in dict(r.headers) for r in dl)  # the 1 MB record, cut to fit


def test_broker_outage_mid_run_is_ridden_out(tmp_path):
    pport = free_port()
    clean = clean_stream(150_000, seed=41)
    ref = reference(tmp_path, clean, "outage")
    with TansuBroker(advertise_port=pport) as broker:
        proxy = OutageProxy(broker.port, pport)
        boot = f"127.0.0.1:{pport}"
        try:
            # a fifth of the records the episode needs first (a fast daemon read the whole stream before the
            # outage began), the rest once the broker is back
            produce(boot, "r-outage", clean[:ref["records"] // 5])
            args = ["--bootstrap-servers", boot, "--rewards-topic", "r-outage", "--group-id", "g-outage",
                    "--alerts-topic", "alerts-outage", *POLICY, "--max-episodes", "1", "--create-topics",
                    "--checkpoint", str(tmp_path / "o.ckpt"), "--checkpoint-interval", "0.5",
                    "--summary-json", str(tmp_path / "o.json"), "--max-poll-records", "200", *FAST_GROUP]
            proc = subprocess.Popen(cli(args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            ck = tmp_path / "o.ckpt"  # reading: the outage comes mid-run, not while the daemon joins its group
            assert wait_for(lambda: checkpointed_position(ck, "r-outage:0") >= 5_000, 120, proc)
            proxy.down()
            time.sleep(12)
            proxy.up()
            assert proc.poll() is None  # mid-episode: it cannot end on the records it had
            produce(boot, "r-outage", clean[ref["records"] // 5:])
            _, err = proc.communicate(timeout=300)
        finally:
            proxy.close()
    err = err.decode()
    assert proc.returncode == 0, err[-3000:]
    got = json.loads((tmp_path / "o.json").read_text())
    same_decision(got, ref)
    assert (got["samples"], got["skipped"] + got["samples"]) == (ref["samples"], ref["samples"] + ref["skipped"])
    assert "kafka." not in err  # kafka-python's own lines stay quiet at the default log level
    # the outage is reported while it lasts (a group offset commit used to block the loop through it, silent)
    assert "broker unreachable" in err and "broker reachable again" in err, err[-3000:]


def test_broker_process_restart_mid_run_is_ridden_out(tmp_path):
    """A real broker restart, not only lost connections: the Tansu process is stopped mid-run and a new
    one started on the same port (its group coordinator and producer ids are new: the daemon's member is
    unknown, its producer's id too). Tansu keeps topics in memory only, so the test refills the new broker
    with the same records at the same offsets -- what a broker with durable storage would hold -- while
    the daemon is frozen (SIGSTOP), then lets it go on (SIGCONT). No crash, no loss, no double count: the
    decision and counters of an undisturbed run (the last record's fingerprint matches: position kept).
    The first broker holds a fifth of the records the episode needs (with the whole stream, a fast daemon
    ended its episode before the stop); the new one all of them, the first ones at the same offsets."""
    port = free_port()
    clean = clean_stream(150_000, seed=43)
    ref = reference(tmp_path, clean, "restart")
    ck = tmp_path / "r.ckpt"
    args = ["--bootstrap-servers", f"127.0.0.1:{port}", "--rewards-topic", "r-restart", "--group-id", "g-restart",
            "--alerts-topic", "alerts-restart", *POLICY, "--max-episodes", "1", "--create-topics",
            "--checkpoint", str(ck), "--checkpoint-interval", "0.5", "--summary-json", str(tmp_path / "r.json"),
            "--max-poll-records", "200", *FAST_GROUP]
    broker = TansuBroker(port=port).start()
    proc = None
    try:
        produce(broker.bootstrap, "r-restart", clean[:ref["records"] // 5])
        proc = subprocess.Popen(cli(args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert wait_for(lambda: checkpointed_position(ck, "r-restart:0") >= 5_000, 120, proc)
        proc.send_signal(signal.SIGSTOP)
        broker.stop()
        broker = TansuBroker(port=port).start()
        produce(broker.bootstrap, "r-restart", clean)
        ensure_topics({"bootstrap_servers": [broker.bootstrap]}, {"alerts-restart": 1})
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        broker.stop()
    err = err.decode()
    assert proc.returncode == 0, err[-3000:]
    assert err.count("assigned 1 partitions") >= 2, err[-3000:]  # joined the new broker's group
    assert "outside the partition" not in err and "the last the checkpoint read, is another" not in err, err[-3000:]
    got = json.loads((tmp_path / "r.json").read_text())
    same_decision(got, ref)
    assert (got["records"], got["samples"], got["skipped"]) == (ref["records"], ref["samples"], ref["skipped"])


def test_stale_checkpoint_against_a_recreated_topic_warns_and_progresses(tmp_path):
    port = free_port()
    ck = tmp_path / "stale.ckpt"
    common = ["--rewards-topic", "r-stale", "--group-id", "g-stale", "--alerts-topic", "alerts-stale", *POLICY,
              "--forever", "--mode", "episodes", "--episode-interval", "1e9", "--checkpoint", str(ck), "--create-topics",
              *FAST_GROUP]
    from streamarms.checkpoint import FileCheckpointStore
    with TansuBroker(port=port) as broker:
        produce(broker.bootstrap, "r-stale", clean_stream(20_000, seed=51))
        proc = subprocess.Popen(cli(["--bootstrap-servers", broker.bootstrap, *common]), cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert wait_for(lambda: checkpointed_position(ck, "r-stale:0") >= 20_000, 120, proc)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    with TansuBroker(port=port) as broker:  # "restarted": in-memory storage, the topic is gone
        produce(broker.bootstrap, "r-stale", clean_stream(5_000, seed=52))
        out = tmp_path / "stale.json"
        proc = subprocess.Popen(cli(["--bootstrap-servers", broker.bootstrap, *common, "--summary-json", str(out)]),
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ok = wait_for(lambda: FileCheckpointStore(ck).load()["scheduler"]["counters"]["records"] >= 25_000, 120, proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    err = err.decode()
    assert ok and proc.returncode == 0, err[-3000:]
    assert "r-stale:0: the position 20000 is outside the partition" in err and "--on-out-of-range earliest" in err
    assert json.loads(out.read_text())["records"] == 25_000  # no loss, nothing twice


def test_a_checkpoint_from_another_cluster_is_refused(kafka_broker, tmp_path):
    ck = tmp_path / "c.ckpt"
    produce(kafka_broker.bootstrap, "r-cluster", clean_stream(2_000, seed=61))
    common = ["--rewards-topic", "r-cluster", "--group-id", "g-cluster", *POLICY, "--max-episodes", "1",
              "--discovery-records", "100", "--checkpoint", str(ck), "--create-topics", *FAST_GROUP]
    p = subprocess.run(cli(["--bootstrap-servers", kafka_broker.bootstrap, *common, "--episode-timeout", "1"]),
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and ck.exists(), p.stderr[-3000:]
    with TansuBroker(cluster_id="another-cluster") as other:
        p = subprocess.run(cli(["--bootstrap-servers", other.bootstrap, *common]), cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert p.returncode == 2, p.stderr[-3000:]
    errors = [x for x in p.stderr.splitlines() if x.startswith("streamarms run: error")]
    assert len(errors) == 1 and "another-cluster" in errors[0] and "tansu_cluster" in errors[0], p.stderr


def test_no_broker_is_one_line_and_exit_1(tmp_path):
    p = subprocess.run(cli(["--bootstrap-servers", f"127.0.0.1:{free_port()}", "--rewards-topic", "x"]), cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Kafka broker reachable at 127.0.0.1:" in lines[0], p.stderr


class CheckpointWatch:
    """The records count of the newest checkpoint of ``key`` on a compacted checkpoint topic, read by one
    consumer that stays at the topic's end (a ``store.load()`` reads the whole topic again each time: its
    latency grew with the topic and let a fast daemon finish its episode between two reads)."""

    def __init__(self, bootstrap, topic, key):
        from kafka import KafkaConsumer
        self.c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                               isolation_level="read_committed")
        self.topic, self.key, self.assigned, self.records = topic, key.encode(), False, 0

    def poll(self) -> int:
        from kafka import TopicPartition

        from streamarms.checkpoint import decode
        if not self.assigned:  # the first life creates the topic
            if not self.c.partitions_for_topic(self.topic):
                time.sleep(0.05)
                return self.records
            tp = TopicPartition(self.topic, 0)
            self.c.assign([tp])
            self.c.seek_to_beginning(tp)
            self.assigned = True
        for recs in self.c.poll(timeout_ms=20).values():
            for r in recs:
                if r.key == self.key and r.value:
                    self.records = decode(r.value)["scheduler"]["counters"]["records"]
        return self.records

    def close(self):
        self.c.close(autocommit=False)


class Trickle:
    """A stream produced in chunks, the next one only once the daemon's checkpoint shows it has read all
    the previous ones: ``lives`` lives of ``chunk = needed // (lives + 2)`` records each cannot finish an
    episode that needs ``needed`` records, so every life is killed mid-episode however fast the daemon
    (with the whole stream in the topic up front, a fast daemon ended its episode in four lives)."""

    def __init__(self, bootstrap, topic, records, needed, lives=10):
        self.bootstrap, self.topic, self.records = bootstrap, topic, records
        self.chunk, self.produced = max(1, needed // (lives + 2)), 0

    def top_up(self, seen: int) -> None:
        if seen >= self.produced and self.produced < len(self.records):
            part = self.records[self.produced:self.produced + self.chunk]
            produce(self.bootstrap, self.topic, part)
            self.produced += len(part)

    def rest(self) -> None:
        produce(self.bootstrap, self.topic, self.records[self.produced:])
        self.produced = len(self.records)


def kill_9_by_progress(args, watch, trickle, lives=10):
    """Run ``streamarms run args`` ``lives`` times, each killed -9 once its checkpoint (seen by ``watch``,
    a :class:`CheckpointWatch`) shows records beyond the previous life's, after a delay growing per life,
    topping the topic up from ``trickle`` (a :class:`Trickle`) before each life. Kills land while the
    daemon works through a chunk or waits at its end. Returns how many lives were killed."""
    killed = 0
    for i in range(lives):
        before = watch.poll()
        trickle.top_up(before)
        proc = subprocess.Popen(cli(args), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while proc.poll() is None and watch.poll() <= before and time.monotonic() - t0 < 120:
            pass
        time.sleep(0.02 * (i % 5))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
    return killed


def test_kill_9_ten_times_with_the_checkpoint_in_a_compacted_topic(kafka_broker, tmp_path):
    clean = clean_stream(150_000, seed=71)
    ref = reference(tmp_path, clean, "k9")
    trickle = Trickle(kafka_broker.bootstrap, "r-k9", clean, ref["records"])
    common = ["--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "r-k9", "--group-id", "g-k9",
              "--alerts-topic", "alerts-k9", *POLICY, "--max-episodes", "1", "--create-topics",
              "--checkpoint", "kafka:ckpt-k9", "--checkpoint-interval", "0.2", "--max-poll-records", "300", *FAST_GROUP]
    from streamarms.connectors.kafka_checkpoint import KafkaCheckpointStore
    cfg = {"bootstrap_servers": [kafka_broker.bootstrap]}
    store = KafkaCheckpointStore(cfg, "ckpt-k9", key="g-k9")
    watch = CheckpointWatch(kafka_broker.bootstrap, "ckpt-k9", "g-k9")
    try:
        killed = kill_9_by_progress(common, watch, trickle)
    finally:
        watch.close()
    try:
        mid = store.load()
    finally:
        store.close()
    assert killed == 10 and mid is not None, killed
    assert 0 < mid["scheduler"]["counters"]["records"] < ref["records"]
    trickle.rest()
    out = tmp_path / "k9.json"
    p = subprocess.run(cli([*common, "--summary-json", str(out)]), cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["episodes"][-1]["outliers"] == ref["episodes"][0]["outliers"]
    assert got["episodes"][-1]["samples"] == ref["episodes"][0]["samples"]
    assert got["episodes"][-1]["threshold"] == ref["episodes"][0]["threshold"]
    assert (got["samples"], got["skipped"]) == (ref["samples"], ref["skipped"])
    # at least once: duplicates possible across kill -9, never a lost or a foreign alert ...
    published = read_settled(kafka_broker.bootstrap, "alerts-k9")
    want = sorted(f"1:{a}:outlier" for a in ref["episodes"][0]["outliers"])
    assert sorted({json.loads(r.value)["alert_id"] for r in published}) == want
    # ... and exactly once after the documented recipe
    kept = dedupe_recipe(tmp_path, published, "k9")
    assert sorted(kept) == want, kept


def _metric(port, name):
    import urllib.request
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return float(next(x.split()[-1] for x in text.splitlines() if x.startswith(name + " ")))


def test_a_recreated_topic_grown_past_the_checkpoint_is_detected(kafka_broker, tmp_path):
    """The topic behind a checkpoint is deleted and recreated, then refilled with *more* records than
    the checkpointed offset: the position is in range but names another log. The fingerprint of the last
    consumed record (kept in the checkpoint) no longer matches: the ``--on-out-of-range`` rule, a
    warning and ``streamarms_offset_resets_total``. A restart against the same, grown topic is not
    flagged (the control), and a checkpoint without fingerprints (older versions) still loads."""
    from kafka import KafkaAdminClient

    from streamarms.checkpoint import FileCheckpointStore
    ck = tmp_path / "rec.ckpt"
    port = free_port()
    common = ["--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "r-rec", "--group-id", "g-rec",
              *POLICY, "--forever", "--mode", "episodes", "--episode-interval", "1e9", "--checkpoint", str(ck),
              "--create-topics", "--metrics-port", str(port), *FAST_GROUP]

    def run_until(records, extra=()):
        out = tmp_path / "rec.json"
        proc = subprocess.Popen(cli([*common, "--summary-json", str(out), *extra]), cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ok = wait_for(lambda: ck.exists() and FileCheckpointStore(ck).load()["scheduler"]["counters"]["records"]
                      >= records, 120, proc)
        resets = _metric(port, "streamarms_offset_resets_total") if ok else None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert ok and proc.returncode == 0, err.decode()[-3000:]
        return json.loads(out.read_text()), err.decode(), resets

    produce(kafka_broker.bootstrap, "r-rec", clean_stream(6_000, seed=81))
    got, err, resets = run_until(6_000)
    assert got["records"] == 6_000 and resets == 0
    pos = FileCheckpointStore(ck).load()["source"]["r-rec:0"]
    assert pos[0] == 6_000 and pos[2][0] == 5_999 and len(pos[2]) == 3  # [offset, timestamp, hash]

    produce(kafka_broker.bootstrap, "r-rec", clean_stream(2_000, seed=82))  # control: same log, grown
    got, err, resets = run_until(8_000)
    assert got["records"] == 8_000 and resets == 0 and "outside the partition" not in err, err[-3000:]
    assert "the last the checkpoint read, is another" not in err, err[-3000:]

    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    try:
        admin.delete_topics(["r-rec"])
        assert wait_for(lambda: "r-rec" not in admin.list_topics(), 30)
    finally:
        admin.close()
    recreated = clean_stream(12_000, seed=83)  # more than the checkpointed 8,000
    produce(kafka_broker.bootstrap, "r-rec", recreated)
    got, err, resets = run_until(8_000 + 12_000)
    # (the position 8000 lies inside the recreated partition: its record before it is another, not "outside")
    assert "r-rec:0: the record at offset 7999, the last the checkpoint read, is another (" in err, err[-3000:]
    assert "--on-out-of-range earliest: reading from offset 0" in err, err[-3000:]
    assert resets == 1 and got["records"] == 20_000  # the new log read whole, once

    # a checkpoint written before fingerprints existed: loaded, resumed unchecked
    doc = FileCheckpointStore(ck).load()
    doc["source"] = {k: v[:2] for k, v in doc["source"].items()}
    FileCheckpointStore(ck).save(doc)
    produce(kafka_broker.bootstrap, "r-rec", clean_stream(1_000, seed=84))
    got, err, resets = run_until(21_000)
    assert got["records"] == 21_000 and resets == 0
    assert len(FileCheckpointStore(ck).load()["source"]["r-rec:0"]) == 3  # fingerprinted again

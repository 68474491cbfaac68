"""Incremental checkpoints (issue 13): base + deltas restore the saved document bit for bit, a delta
holds only the changed blocks, damage is refused, and the forked background checkpoint keeps the
crash/restart rule (no record lost or counted twice)."""

from __future__ import annotations

import json
import os
import random

import pytest
from test_runtime_daemon import Crash, CrashingSource, fill, outcome

from streamarms.background_checkpoint import BackgroundCheckpointDaemon
from streamarms.checkpoint import CheckpointError, FileCheckpointStore, encode
from streamarms.chunked_checkpoint import ChunkedCheckpointStore
from streamarms.connectors.memory import MemoryBroker, MemoryDeadLetterSink, MemorySink, MemorySource
from streamarms.daemon import checkpoint_document, restore_checkpoint
from streamarms.models import BernoulliModel
from streamarms.policies.ksigma import WeightedRoundRobin
from streamarms.registry import build_policy
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig


def _cs_scheduler(n: int) -> tuple[Scheduler, list[bytes]]:
    arms = [f"key-{i:05d}" for i in range(n)]
    s = Scheduler(lambda a, ep: build_policy("cs", a, k=2.0, delta=0.1), clock=EventClock(), arms=arms,
                  config=SchedulerConfig(passive_feed="all", max_arms=n), codec=RewardCodec(model=BernoulliModel()))
    s.tick()
    return s, [a.encode() for a in arms]


def test_base_plus_deltas_restore_the_full_snapshot_bit_for_bit(tmp_path):
    s, keys = _cs_scheduler(3000)
    rng = random.Random(5)
    store = ChunkedCheckpointStore(tmp_path / "c", block=32, min_list=64, compact_ratio=1.1, fsync=False)
    bases = patches = 0
    for step in range(12):
        idx = range(len(keys)) if step == 0 else rng.sample(range(len(keys)), 40)
        s.offer_batch([keys[i] for i in idx], [b'{"reward": %d}' % (rng.random() < 0.2) for _ in idx])
        doc = checkpoint_document({"mode": "passive", "policy": "cs"}, s, {"rewards:0": [step, None]})
        store.save(doc)
        bases += store.last_written["base"]
        patches += store.last_written["patches"] if not store.last_written["base"] else 0
        loaded = store.load()
        assert encode(loaded) == encode(json.loads(json.dumps(doc)))  # the file store's bytes: bit for bit
        restored = Scheduler(lambda a, ep: build_policy("cs", a), clock=EventClock(),
                             config=SchedulerConfig(passive_feed="all", max_arms=3000),
                             codec=RewardCodec(model=BernoulliModel()))
        restored.restore(loaded["scheduler"])
        assert encode(restored.snapshot()) == encode(s.snapshot())
    assert 1 < bases < 12 and patches > 0  # the first save and a compaction were bases, the rest deltas of patches
    assert len([f for f in os.listdir(tmp_path / "c") if f.startswith("pack-")]) <= 12


def test_a_delta_writes_only_the_changed_blocks(tmp_path):
    store = ChunkedCheckpointStore(tmp_path / "c", block=100, min_list=1000, fsync=False)
    doc = {"policy": {"cs": [{"m": i, "s": i / 3} for i in range(10_000)], "key": [0.5] * 10_000}, "T": 1}
    store.save(doc)
    full = store.last_written["bytes"]
    doc["policy"]["cs"][4321]["m"] += 1
    doc["T"] = 2
    store.save(doc)
    assert store.last_written["blocks"] == 1 and store.last_written["bytes"] * 50 < full
    assert store.load() == doc
    for i in range(0, 10_000, 97):  # scattered changes: one key in every block -> patches, ~ the changed keys
        doc["policy"]["cs"][i]["s"] = -1.0
    store.save(doc)
    w = store.last_written
    assert w["patches"] == w["blocks"] >= 100 and w["bytes"] < 0.1 * full
    doc["policy"]["cs"][5]["m"] = 5.0  # an int becomes an equal float: == but not the same text
    store.save(doc)
    assert store.load() == doc and json.dumps(store.load(), sort_keys=True) == json.dumps(doc, sort_keys=True)


def test_damage_is_refused_and_a_torn_save_leaves_the_previous_checkpoint(tmp_path):
    d = tmp_path / "c"
    store = ChunkedCheckpointStore(d, block=10, min_list=20, fsync=False)
    doc = {"xs": list(range(100))}
    store.save(doc)
    (d / "pack-00000002.bin").write_bytes(b"half a pack")  # a save that died before its manifest
    assert store.load() == doc
    store.save({"xs": list(range(1, 101))})
    assert not (d / "pack-00000002.bin").exists() or store.load() == {"xs": list(range(1, 101))}
    pack = sorted(f for f in os.listdir(d) if f.startswith("pack-"))[0]
    raw = bytearray((d / pack).read_bytes())
    raw[3] = ord("9") if raw[3] != ord("9") else ord("8")
    (d / pack).write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="damaged"):
        store.load()
    with pytest.raises(ValueError, match="may not use the key"):
        store.save({"a": {"\u0000blocks": 1}})


def test_the_manifest_is_signed_with_a_secret(tmp_path):
    key = b"0123456789abcdef0123"
    store = ChunkedCheckpointStore(tmp_path / "c", block=10, min_list=20, fsync=False, secret=key)
    store.save({"xs": list(range(50))})
    assert store.load() == {"xs": list(range(50))}
    with pytest.raises(CheckpointError, match="HMAC"):
        ChunkedCheckpointStore(tmp_path / "c", block=10, min_list=20).load()


def _start(broker, store, *, polls=None, group="g", alerts_topic="alerts"):
    run_info = {"mode": "passive", "policy": "wrr", "topics": ["rewards"]}
    doc = restore_checkpoint(store, run_info)
    clock = EventClock()
    alerts = MemorySink(broker, alerts_topic)
    sched = Scheduler(lambda names, ep: WeightedRoundRobin(names, k=2.0, delta=0.1), clock=clock,
                      emit_alert=alerts.send, codec=RewardCodec(model=BernoulliModel()),
                      config=SchedulerConfig(discovery_records=300, max_episodes=1, want_timeout=5.0),
                      policy_name="wrr", delta=0.1)
    if doc is not None:
        sched.restore(doc["scheduler"])
    source = MemorySource(broker, ["rewards"], group_id=group, resume=doc["source"] if doc else None,
                          max_records=500)
    if polls is not None:
        source = CrashingSource(source, polls)
    daemon = BackgroundCheckpointDaemon(sched, source, clock=clock, alert_sink=alerts,
                                        dead_letter_sink=MemoryDeadLetterSink(broker, "dlq-" + group),
                                        checkpoint=store, checkpoint_interval=0.0, run_info=run_info,
                                        handle_signals=False)
    return daemon, sched


def _chunked(path):
    return ChunkedCheckpointStore(path, block=8, min_list=8, fsync=False)


def _file(path):
    return FileCheckpointStore(path, fsync=False)


@pytest.mark.parametrize("make_store", [_chunked, _file], ids=["dir", "file"])
def test_background_checkpoints_crash_then_restart_equals_uninterrupted(tmp_path, make_store):
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=3, per_key=6000, seed=1, bad_every=997)
    d0, s0 = _start(broker, make_store(tmp_path / "u"), group="u")
    assert d0.run() == 0
    ref = outcome(s0)
    assert d0.saved > 0 and max(d0.stalls) < 1.0
    for crash_after in (3, 41):
        store = make_store(tmp_path / f"c{crash_after}")
        topic = f"alerts{crash_after}"
        d1, _ = _start(broker, store, polls=crash_after, group=f"c{crash_after}", alerts_topic=topic)
        with pytest.raises(Crash):
            d1.run()
        d2, s2 = _start(broker, store, group=f"c{crash_after}", alerts_topic=topic)
        assert d2.run() == 0
        assert outcome(s2) == ref
        ids = [a["alert_id"] for a in broker.values(topic)]
        assert sorted(set(ids)) == ["1:region-18:outlier", "1:region-19:outlier"]


def test_run_saves_file_and_directory_checkpoints_in_a_forked_child(tmp_path):
    """``streamarms run`` picks the background daemon for both file stores (a full file checkpoint of a
    million keys takes seconds: issue 13's "never stall the loop for more than 1 s")."""
    from streamarms.cli.run_store import daemon_class
    assert daemon_class(_file(tmp_path / "c.json"), None) is BackgroundCheckpointDaemon
    assert daemon_class(_chunked(tmp_path / "d"), None) is BackgroundCheckpointDaemon
    assert daemon_class(_file(tmp_path / "c.json"), object()) is not BackgroundCheckpointDaemon  # a transaction


def test_background_checkpoints_refuse_a_store_that_cannot_fork():
    class KafkaLike:
        def describe(self):
            return "kafka topic"
    broker = MemoryBroker()
    broker.create_topic("rewards", 1)
    s = Scheduler(lambda names, ep: WeightedRoundRobin(names), clock=EventClock())
    with pytest.raises(ValueError, match="fork-safe"):
        BackgroundCheckpointDaemon(s, MemorySource(broker, ["rewards"]), checkpoint=KafkaLike(),  # type: ignore[arg-type]
                                   handle_signals=False)


def test_run_cli_with_an_incremental_checkpoint_directory(tmp_path):
    from test_runtime_daemon import KEYS, MEANS

    from streamarms.cli.run import main as run_main_argv
    rng = random.Random(7)
    p = tmp_path / "rewards.jsonl"
    with open(p, "w") as f:
        for n in range(60_000):
            a = rng.randrange(len(KEYS))
            f.write(json.dumps({"key": KEYS[a], "value": {"reward": int(rng.random() < MEANS[a])},
                                "timestamp": 1_700_000_000_000 + n}) + "\n")
    ck = tmp_path / "ck"
    args = ["--rewards-file", str(p), "--alerts-file", str(tmp_path / "alerts.jsonl"), "--checkpoint", f"dir:{ck}",
            "--checkpoint-interval", "0.05", "--max-episodes", "1", "--quiet", "--no-fsync",
            "--summary-json", str(tmp_path / "s.json")]
    assert run_main_argv(args) == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["episodes"][0]["outliers"] == ["region-18", "region-19"]
    doc = ChunkedCheckpointStore(ck).load()
    assert doc is not None and doc["scheduler"]["phase"] == "finished"
    assert run_main_argv(args) == 0  # resumes the finished run from the directory: same answer
    assert json.loads((tmp_path / "s.json").read_text())["episodes"] == s["episodes"]


@pytest.mark.drill
def test_kill_9_during_background_checkpoints_of_a_run(tmp_path):
    """A real ``streamarms run --checkpoint dir:`` killed -9 six times mid-episode (the forked saves die with
    it): the resumed run ends with the same decision, samples and records as an uninterrupted one."""
    from drill_util import assert_same_run, clean_stream, fuzzed, kill_9_drill
    from test_drills import write
    clean = clean_stream(300_000, seed=31)
    fuzz, _ = fuzzed(clean, 10_000, seed=32, big=1)
    write(tmp_path / "in.jsonl", fuzz)
    common = ["--rewards-file", str(tmp_path / "in.jsonl"), "--policy", "wrr", "--k", "2", "--delta", "0.02",
              "--discovery-records", "500", "--max-episodes", "1", "--log-level", "warning"]
    ck = tmp_path / "state"
    ref, got, killed = kill_9_drill(common, ["--checkpoint", f"dir:{ck}"], ck / "MANIFEST", tmp_path, lives=6, spread=4)
    assert killed >= 3
    assert_same_run(got, ref)

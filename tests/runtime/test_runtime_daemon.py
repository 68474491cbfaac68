"""Daemon loop over the in-memory transport and JSONL files: checkpoints, crash/restart, clean stop,
dead letters, reproducible partition merge, metrics endpoint, and the ``streamarms run`` CLI."""

from __future__ import annotations

import json
import os
import random
import signal
import urllib.request
from collections import namedtuple

import pytest
from runtime_policy import PlanCheckingRR

from streamarms.checkpoint import CheckpointError, FileCheckpointStore, decode, encode
from streamarms.cli.run import main as run_main_argv
from streamarms.connectors.files import JsonlSource
from streamarms.connectors.memory import MemoryBroker, MemoryDeadLetterSink, MemorySink, MemorySource
from streamarms.connectors.ordering import PartitionMerger
from streamarms.daemon import Daemon, restore_checkpoint
from streamarms.metrics import Metrics
from streamarms.models import BernoulliModel
from streamarms.policies.ksigma import WeightedRoundRobin
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig
from streamarms.sim import zww17_example

MEANS = zww17_example()
KEYS = [f"region-{i:02d}" for i in range(len(MEANS))]


def fill(broker: MemoryBroker, topic: str, partitions: int, per_key: int, seed: int, bad_every: int = 0) -> None:
    """``per_key`` Bernoulli rewards per key, keys interleaved at random, timestamps 1 ms apart."""
    broker.create_topic(topic, partitions)
    rng = random.Random(seed)
    order = [i for i in range(len(KEYS)) for _ in range(per_key)]
    rng.shuffle(order)
    for n, a in enumerate(order):
        value = b'{"reward": %d}' % (rng.random() < MEANS[a])
        if bad_every and n % bad_every == bad_every - 1:
            value = [b"not json", b'{"reward": 0.5}', b'{"reward": NaN}', b'{"x": 1}'][n // bad_every % 4]
        broker.produce(topic, KEYS[a], value, timestamp=1_700_000_000_000 + n)


class Crash(Exception):
    pass


class CrashingSource:
    """Wraps a source; raises after ``polls`` polls (a kill -9: nothing after it runs)."""

    def __init__(self, inner, polls: int) -> None:
        self.inner, self.left = inner, polls

    def poll(self, timeout):
        self.left -= 1
        if self.left < 0:
            raise Crash()
        return self.inner.poll(timeout)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def build_wrr(names, episode):
    return WeightedRoundRobin(names, k=2.0, delta=0.1)


def start(broker, store, *, polls=None, group="g", max_records=500, alerts_topic="alerts", dlq="dlq"):
    """A daemon as `streamarms run` wires it, resumed from ``store`` if it holds a checkpoint."""
    run_info = {"mode": "passive", "policy": "wrr", "topics": ["rewards"]}
    doc = restore_checkpoint(store, run_info) if store is not None else None
    clock = EventClock()
    alerts = MemorySink(broker, alerts_topic)
    sched = Scheduler(build_wrr, clock=clock, emit_alert=alerts.send, codec=RewardCodec(model=BernoulliModel()),
                      config=SchedulerConfig(discovery_records=300, max_episodes=1, want_timeout=5.0),
                      policy_name="wrr", delta=0.1)
    if doc is not None:
        sched.restore(doc["scheduler"])
    source = MemorySource(broker, ["rewards"], group_id=group, resume=doc["source"] if doc else None,
                          max_records=max_records)
    if polls is not None:
        source = CrashingSource(source, polls)
    daemon = Daemon(sched, source, clock=clock, alert_sink=alerts, dead_letter_sink=MemoryDeadLetterSink(broker, dlq),
                    checkpoint=store, checkpoint_interval=0.0, run_info=run_info, handle_signals=False)
    return daemon, sched


def outcome(sched):
    h = sched.history[-1]
    return h["samples"], h["outliers"], sched.records, sched.used, sched.stats()["invalid"]


# ----------------------------------------------------------------------------------------------
def test_crash_at_any_point_then_restart_equals_uninterrupted(tmp_path):
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=3, per_key=6000, seed=1, bad_every=997)
    d0, s0 = start(broker, FileCheckpointStore(tmp_path / "u.ckpt", fsync=False), group="u")
    assert d0.run() == 0
    ref = outcome(s0)
    assert ref[1] == ["region-18", "region-19"]
    ref_alerts = {a["alert_id"] for a in broker.values("alerts")}
    assert ref_alerts == {"1:region-18:outlier", "1:region-19:outlier"}

    for crash_after in (3, 97):
        store = FileCheckpointStore(tmp_path / f"c{crash_after}.ckpt", fsync=False)
        topic = f"alerts{crash_after}"
        d1, s1 = start(broker, store, polls=crash_after, group=f"c{crash_after}", alerts_topic=topic,
                       dlq=f"dlq{crash_after}")
        with pytest.raises(Crash):
            d1.run()
        mid = store.load()
        assert mid is not None and mid["scheduler"]["phase"] in ("discovering", "running")
        # the group's committed offsets are those of the last durable checkpoint
        committed = broker.committed[f"c{crash_after}"]
        assert {f"{t}:{p}": o for (t, p), o in committed.items()} == {k: v[0] for k, v in mid["source"].items()}
        d2, s2 = start(broker, store, group=f"c{crash_after}", alerts_topic=topic, dlq=f"dlq{crash_after}")
        assert d2.run() == 0
        assert outcome(s2) == ref
        assert {a["alert_id"] for a in broker.values(topic)} == ref_alerts
        assert len(broker.records(f"dlq{crash_after}")) >= len(broker.records("dlq"))


def test_a_sigterm_during_the_exit_checkpoint_waits_for_it(tmp_path):
    """The loop ended on its own (the last episode) and SIGTERM comes while the exit's checkpoint is being
    written: the daemon's handler still holds (it logs and waits), so the checkpoint completes -- the
    handler in place before the run is back only afterwards (it was restored before the checkpoint, and
    the signal killed the process half-way through it: with --exactly-once, inside its transaction)."""
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=2, per_key=6000, seed=2)
    store = FileCheckpointStore(tmp_path / "t.ckpt", fsync=False)
    daemon, sched = start(broker, store, group="t")
    daemon.handle_signals = True
    real_save, real_loop, saves, exit_saves = store.save, daemon._loop, [], []

    def loop():
        real_loop()
        exit_saves.append(0)  # the next save is the exit's checkpoint

    def save(doc):
        if exit_saves == [0]:
            exit_saves[0] += 1
            os.kill(os.getpid(), signal.SIGTERM)  # delivered before the next bytecode: inside the checkpoint
        real_save(doc)
        saves.append(doc)

    daemon._loop, store.save = loop, save
    outer = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: outer.append(signum))
    try:
        assert daemon.run() == 0
        assert outer == []  # the signal went to the daemon's handler, not to the one it restores
        os.kill(os.getpid(), signal.SIGTERM)
        assert outer == [signal.SIGTERM]  # ... which is back once the run is over
    finally:
        signal.signal(signal.SIGTERM, before)
    assert exit_saves == [1] and saves[-1]["scheduler"]["phase"] == "finished"
    assert store.load()["scheduler"]["counters"]["records"] == sched.records


def test_stop_finishes_the_batch_in_hand_then_checkpoints(tmp_path):
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=2, per_key=6000, seed=2)
    d_ref, s_ref = start(broker, None, group="ref")
    d_ref.run()
    ref = outcome(s_ref)

    store = FileCheckpointStore(tmp_path / "s.ckpt", fsync=False)
    d1, s1 = start(broker, store, group="s", max_records=5000)
    seen = {"n": 0, "end": None}
    real_offer_batch = s1.offer_batch

    def offer_batch(keys, values, *args):  # a stop request arriving while record 20,000 is being handled
        if seen["n"] < 20_000 <= seen["n"] + len(keys):
            d1.stop("SIGTERM")
            seen["end"] = seen["n"] + len(keys)
        seen["n"] += len(keys)
        return real_offer_batch(keys, values, *args)

    s1.offer_batch = offer_batch
    assert d1.run() == 0 and d1.stop_reason == "SIGTERM"
    doc = store.load()
    # the batch is the unit: it is finished, then the checkpoint covers exactly the handled records
    assert doc["scheduler"]["counters"]["records"] == seen["end"] >= 20_000
    assert sum(v[0] for v in doc["source"].values()) == seen["end"]
    d2, s2 = start(broker, store, group="s")
    assert d2.run() == 0
    assert outcome(s2) == ref


def test_dead_letters_carry_the_reason_header():
    broker = MemoryBroker()
    broker.create_topic("rewards")
    for i, v in enumerate([b'{"reward": 1}', b"{oops", b'{"reward": 2}', b'{"reward": "x"}', b'{"reward": Infinity}']):
        broker.produce("rewards", "a", v, timestamp=i)
    broker.produce("rewards", None, b'{"reward": 1}', timestamp=9)
    clock = EventClock()
    sched = Scheduler(build_wrr, clock=clock, codec=RewardCodec(model=BernoulliModel()),
                      config=SchedulerConfig(validate="all"))
    dlq = MemoryDeadLetterSink(broker, "dlq")
    Daemon(sched, MemorySource(broker, ["rewards"]), clock=clock, dead_letter_sink=dlq, handle_signals=False).run()
    got = [(dict(r.headers)["reason"].decode(), r.value) for r in broker.records("dlq")]
    assert got == [("not_json", b"{oops"), ("out_of_model", b'{"reward": 2}'), ("not_numeric", b'{"reward": "x"}'),
                   ("not_finite", b'{"reward": Infinity}'), ("key_missing", b'{"reward": 1}')]
    assert all(dict(r.headers)["source"].startswith(b"rewards:0:") for r in broker.records("dlq"))


def test_partition_merge_is_independent_of_fetch_sizes():
    R = namedtuple("R", "topic partition offset timestamp key value")
    rng = random.Random(5)
    logs = {}
    for p in range(4):
        ts, recs = 0, []
        for o in range(500):
            ts += rng.choice([0, 1, 2, 5, -3])  # producer clocks may go backwards
            recs.append(R("t", p, o, ts, b"k", b""))
        logs[("t", p)] = recs
    orders = []
    for seed in range(5):
        rr = random.Random(seed)
        m = PartitionMerger()
        m.assign(list(logs), {})
        pos = {tp: 0 for tp in logs}
        out = []
        while len(out) < 2000:
            tp = rr.choice(list(logs))
            n = rr.randint(0, 60)
            m.add(tp, logs[tp][pos[tp]:pos[tp] + n])
            pos[tp] += len(logs[tp][pos[tp]:pos[tp] + n])
            out.extend(m.release(lambda q, pos=pos: pos[q] >= 500))
        orders.append([(r.partition, r.offset) for r in out])
    assert all(o == orders[0] for o in orders)
    for p in range(4):  # each partition's records stay in offset order
        assert [o for q, o in orders[0] if q == p] == list(range(500))


def test_partition_merge_is_the_documented_total_order():
    """The merged order is ``(running max of the partition's timestamps, rank, offset)`` computed here
    record by record (the C-level passes of ``add`` and ``release`` against this reference): equal
    timestamps across partitions, clocks going backwards, records without a timestamp, random fetches."""
    R = namedtuple("R", "topic partition offset timestamp key value")
    for seed in range(20):
        rng = random.Random(seed)
        parts = rng.randint(2, 6)
        logs, ref = {}, []
        for p in range(parts):
            ts, runmax, recs = 0, -(1 << 62), []
            for o in range(rng.randint(0, 300)):
                ts += rng.choice([0, 0, 1, 2, -3])
                t = None if rng.random() < 0.05 else ts
                recs.append(R("t", p, o, t, b"k", b""))
                if t is not None and t > runmax:
                    runmax = t
                ref.append((runmax, p, o))  # rank of ("t", p) is p
            logs[("t", p)] = recs
        m = PartitionMerger()
        m.assign(list(logs), {})
        pos = {tp: 0 for tp in logs}
        out = []
        while any(pos[tp] < len(logs[tp]) for tp in logs) or m.buffered(("t", 0)):
            tp = rng.choice(list(logs))
            n = rng.randint(0, 40)
            got = logs[tp][pos[tp]:pos[tp] + n]
            m.add(tp, got)
            pos[tp] += len(got)
            out.extend(m.release(lambda q, pos=pos, logs=logs: pos[q] >= len(logs[q])))
        out.extend(m.release(lambda q: True))
        assert [(r.partition, r.offset) for r in out] == [(p, o) for _, p, o in sorted(ref)]


def test_merge_rollback_describes_exactly_the_processed_prefix():
    R = namedtuple("R", "topic partition offset timestamp key value")
    m = PartitionMerger()
    m.assign([("t", 0), ("t", 1)], {"t:0": [10, 100], "t:1": [5, 90]})
    m.add(("t", 0), [R("t", 0, 10 + i, 100 + i, b"", b"") for i in range(5)])
    m.add(("t", 1), [R("t", 1, 5 + i, 100 + i, b"", b"") for i in range(5)])
    out = m.release(lambda tp: True)
    assert len(out) == 10
    m.rollback(3)  # (0,10) (1,5) (0,11) handled
    assert m.state() == {"t:0": [12, 101], "t:1": [6, 100]}


def test_checkpoint_file_is_atomic_and_damage_is_refused(tmp_path):
    path = tmp_path / "x.ckpt"
    store = FileCheckpointStore(path)
    store.save({"a": 1})
    store.save({"a": 2})
    assert store.load() == {"a": 2} and not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"a":2', b'"a":3'))
    with pytest.raises(CheckpointError, match="SHA-256"):
        store.load()
    assert decode(encode({"x": [1.5, None]})) == {"x": [1.5, None]}


def test_checkpoint_of_another_run_is_refused(tmp_path):
    store = FileCheckpointStore(tmp_path / "c")
    store.save({"run": {"policy": "rr", "mode": "passive", "topics": ["t"]}, "scheduler": {}, "source": {}})
    with pytest.raises(CheckpointError, match="policy='rr'"):
        restore_checkpoint(store, {"policy": "wrr", "mode": "passive", "topics": ["t"]})


def test_checkpoint_with_other_settings_is_refused_naming_each_with_both_values(tmp_path):
    """The settings that define the statistics (``run["settings"]``) are compared after the mode; a setting the
    checkpoint does not record (an older version's) is not compared, nor is a run without settings."""
    store = FileCheckpointStore(tmp_path / "c")
    run = {"policy": "wrr", "mode": "passive", "topics": ["t"],
           "settings": {"--k": 2.0, "--delta": 0.1, "--arms": ["a", "b"], "--rho": None, "--seed": 0}}
    store.save({"run": run, "scheduler": {}, "source": {}})
    now = {**run, "policy": "cs", "settings": {**run["settings"], "--policy": "cs", "--k": 3.0, "--arms": None,
                                               "--rho": 2.0}}
    with pytest.raises(CheckpointError) as e:
        restore_checkpoint(store, now)
    assert ("was written with --k 2.0 (this run: 3.0), --arms ['a', 'b'] (this run: unset), --rho unset (this run: "
            "2.0): these define the statistics") in str(e.value)
    assert "start with a fresh checkpoint (another --checkpoint, or --checkpoint none)" in str(e.value)
    with pytest.raises(CheckpointError, match="mode='passive'"):  # another mode: its settings are not compared
        restore_checkpoint(store, {**now, "mode": "continuous"})
    assert restore_checkpoint(store, run) is not None
    assert restore_checkpoint(store, {k: v for k, v in run.items() if k != "settings"}) is not None
    store.save({"run": {k: v for k, v in run.items() if k != "settings"}, "scheduler": {}, "source": {}})
    assert restore_checkpoint(store, {**run, "settings": {**run["settings"], "--k": 3.0}}) is not None  # older


def test_metrics_endpoint_serves_required_series():
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=1, per_key=500, seed=3, bad_every=101)
    clock = EventClock()
    sched = Scheduler(lambda names, ep: PlanCheckingRR(names, need=10), clock=clock,
                      codec=RewardCodec(model=BernoulliModel()), config=SchedulerConfig(max_episodes=1, validate="all"))
    metrics = Metrics()
    daemon = Daemon(sched, MemorySource(broker, ["rewards"]), clock=clock, metrics=metrics, handle_signals=False)
    server = metrics.serve(0, "127.0.0.1", health=daemon.health)
    try:
        assert daemon.run() == 0
        text = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics").read().decode()
        health = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz")
        assert health.status == 200 and json.loads(health.read())["status"] == "ok"
        for path in ("/healthz", "/livez", "/metrics"):  # HEAD (load balancers' probes): the status, no body
            head = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", method="HEAD"))
            assert head.status == 200 and head.read() == b"" and int(head.headers["Content-Length"]) > 0
    finally:
        server.close()
    for name in ("streamarms_samples_total", "streamarms_rewards_skipped_total", "streamarms_records_total",
                 'streamarms_alerts_total{kind="outlier"}', 'streamarms_arms{state="active"}',
                 'streamarms_invalid_records_total{reason="not_json"}', "streamarms_processing_latency_seconds_bucket",
                 "streamarms_episodes_total 1.0", "streamarms_episode_duration_seconds_count 1.0"):
        assert name in text, name
    assert f"streamarms_samples_total {float(sched.used)}" in text
    assert "region-" not in text  # never a series per key


def test_jsonl_replay_source_resumes_by_line(tmp_path):
    p = tmp_path / "r.jsonl"
    lines = [json.dumps({"arm": "a", "reward": i % 2, "timestamp": i}) for i in range(10)] + ["garbage"]
    p.write_text("\n".join(lines) + "\n")
    src = JsonlSource([str(p)], max_records=4)
    first = src.poll()
    assert [r.offset for r in first] == [0, 1, 2, 3]
    src2 = JsonlSource([str(p)], resume=src.state())
    rest = []
    while not src2.exhausted:
        rest.extend(src2.poll())
    assert [r.offset for r in rest] == list(range(4, 11)) and rest[-1].key.reason == "not_json"


# ----------------------------------------------------------------------------------------------
# streamarms run
# ----------------------------------------------------------------------------------------------
def test_run_embedded_default_finds_the_known_outliers(tmp_path, capsys):
    out = tmp_path / "summary.json"
    assert run_main_argv(["--summary-json", str(out)]) == 0
    s = json.loads(out.read_text())
    ep = s["episodes"][0]
    assert ep["done"] and ep["outliers"] == s["true_outliers"] == ["region-18", "region-19"]
    assert 0 < s["samples"] < s["records"]
    text = capsys.readouterr().out
    assert "all found, no false alarm" in text and "rewards used of" in text


def test_run_embedded_active_mode(tmp_path):
    out = tmp_path / "summary.json"
    assert run_main_argv(["--mode", "active", "--summary-json", str(out), "--quiet"]) == 0
    s = json.loads(out.read_text())
    assert s["episodes"][0]["outliers"] == ["region-18", "region-19"]


def test_run_config_file_and_flags_win(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('policy = "rr"\nk = 2.0\nmax-episodes = 1\nquiet = true\n[kafka]\nclient_id = "x"\n')
    out = tmp_path / "s.json"
    assert run_main_argv(["--config", str(cfg), "--policy", "wrr", "--summary-json", str(out)]) == 0
    assert json.loads(out.read_text())["policy"] == "wrr"
    assert run_main_argv(["--config", str(cfg), "--summary-json", str(out)]) == 0
    assert json.loads(out.read_text())["policy"] == "rr"
    bad = tmp_path / "bad.toml"
    bad.write_text("polcy = 'wrr'\n")
    assert run_main_argv(["--config", str(bad)]) == 2


def test_run_bad_settings_exit_2(capsys):
    assert run_main_argv(["--delta", "1.5", "--quiet"]) == 2
    assert "delta" in capsys.readouterr().err
    assert run_main_argv(["--bootstrap-servers", "localhost:1"]) == 2  # no --rewards-topic


def test_run_jsonl_replay_with_checkpoint_resume(tmp_path, monkeypatch):
    rng = random.Random(7)
    p = tmp_path / "rewards.jsonl"
    with open(p, "w") as f:
        for n in range(60_000):
            a = rng.randrange(len(KEYS))
            f.write(json.dumps({"key": KEYS[a], "value": {"reward": int(rng.random() < MEANS[a])},
                                "timestamp": 1_700_000_000_000 + n}) + "\n")
            if n % 10_000 == 5:
                f.write("not a record\n")
    alerts, dlq, ck = tmp_path / "alerts.jsonl", tmp_path / "dlq.jsonl", tmp_path / "ck"
    args = ["--rewards-file", str(p), "--alerts-file", str(alerts), "--dead-letter-file", str(dlq),
            "--checkpoint", str(ck), "--max-episodes", "1", "--quiet", "--summary-json", str(tmp_path / "s.json")]
    assert run_main_argv(args) == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["episodes"][0]["outliers"] == ["region-18", "region-19"]
    assert {json.loads(x)["arm"] for x in alerts.read_text().splitlines()} == {"region-18", "region-19"}
    assert FileCheckpointStore(ck).load()["scheduler"]["phase"] == "finished"
    # running again resumes a finished run: nothing more to do, same answer
    assert run_main_argv(args) == 0
    assert json.loads((tmp_path / "s.json").read_text())["episodes"] == s["episodes"]
    # the same restart with the checkpoint's arrays read lazily (as they are at scale: issue 13)
    monkeypatch.setattr(FileCheckpointStore, "lazy_over", 3)
    assert run_main_argv(args) == 0
    assert json.loads((tmp_path / "s.json").read_text())["episodes"] == s["episodes"]


def test_run_other_policy_families_with_their_parameters(tmp_path):
    out = tmp_path / "s.json"
    assert run_main_argv(["--policy", "apt", "--threshold", "0.5", "--budget", "3000", "--quiet",
                          "--summary-json", str(out)]) == 0
    s = json.loads(out.read_text())
    assert s["samples"] == 3000 and s["episodes"][0]["outliers"] == s["true_outliers"] == ["region-18", "region-19"]


def test_passive_feed_defaults_to_the_policys_own(capsys):
    """cs is fed every reward of its keys unless the user asks for its plan (3.0x WRR's records); the
    papers' policies follow their plans; an explicit --passive-feed wins."""
    for argv, feed in ((["--policy", "cs"], "every reward of its keys fed"),
                       (["--policy", "wrr"], "following its plan"),
                       (["--policy", "cs", "--passive-feed", "planned"], "following its plan")):
        assert run_main_argv(argv) == 0
        out = capsys.readouterr().out
        assert feed in out.splitlines()[0], out.splitlines()[0]
        assert "all found, no false alarm" in out


def test_a_restart_with_another_reward_model_mid_episode_is_one_error_line(tmp_path, capsys):
    """Every refusal is dead-lettered: the run that let rewards of 5 through the codec while the restored
    episode's policy refused them (rejected_by_policy 885, 129 dead letters) no longer starts."""
    rng = random.Random(4)
    rows = [json.dumps({"arm": f"k{i % 20}", "reward": int(rng.random() < MEANS[i % 20]), "timestamp": i})
            for i in range(7_000)]
    p, ck = tmp_path / "r.jsonl", str(tmp_path / "ck")
    p.write_text("\n".join(rows) + "\n")
    assert run_main_argv(["--rewards-file", str(p), "--checkpoint", ck, "--max-episodes", "1", "--quiet"]) == 0
    assert FileCheckpointStore(ck).load()["scheduler"]["phase"] == "running"
    capsys.readouterr()
    rc = run_main_argv(["--rewards-file", str(p), "--checkpoint", ck, "--max-episodes", "1", "--quiet",
                        "--reward-model", "bounded", "--reward-range", "0,10"])
    err = capsys.readouterr().err
    assert rc == 2 and "--reward-model 'bernoulli' (this run: 'bounded')" in err and "Traceback" not in err
    # a checkpoint written before the run block recorded its settings: the scheduler's own check refuses it
    store = FileCheckpointStore(ck)
    doc = store.load()
    del doc["run"]["settings"]
    store.save(doc)
    rc = run_main_argv(["--rewards-file", str(p), "--checkpoint", ck, "--max-episodes", "1", "--quiet",
                        "--reward-model", "bounded", "--reward-range", "0,10"])
    err = capsys.readouterr().err
    assert rc == 2 and "reward model" in err and "bernoulli" in err and "bounded" in err and "Traceback" not in err

"""Issue 10: no record, broker event or checkpoint can crash, stall or subvert the daemon.

Unit-level regressions (each failed before its fix); the drills over many fuzzed records and real
process kills are in ``tests/test_drills.py`` and ``tests/kafka/test_drills_kafka.py``.
"""

from __future__ import annotations

import json

import pytest

from streamarms.connectors.file_sinks import JsonlDeadLetterSink
from streamarms.connectors.files import JsonlSource
from streamarms.runtime import EventClock, InvalidRecord, RewardCodec, Scheduler, SchedulerConfig
from streamarms.runtime.scheduler import _ExamplePolicy

POISON = {
    "huge integer": (b'{"reward": 1' + b"0" * 400 + b"}", "not_finite"),
    "huge negative integer": (b'{"reward": -1' + b"0" * 400 + b"}", "not_finite"),
    # json.loads parses it or raises RecursionError, depending on the Python build: refused either way
    "deep nesting": (b'{"reward": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", ("not_json", "not_numeric")),
    "deep nesting, truncated": (b"[" * 100_000, "not_json"),
    "NaN": (b'{"reward": NaN}', "not_finite"),
    "Infinity": (b'{"reward": -Infinity}', "not_finite"),
    "1e999": (b'{"reward": 1e999}', "not_finite"),
    "invalid UTF-8": (b'{"reward": "\xff"}', "not_json"),
    "lone surrogate escape": (b'{"reward": "\\ud800"}', "not_numeric"),
    "truncated": (b'{"reward": 0.', "not_json"),
    "boolean as text": (b'{"reward": "true"}', "not_numeric"),  # (a boolean itself is a reward 1: test_flag_rewards)
    "empty": (b"", "not_json"),
    "1 MB string": (b'{"reward": "' + b"x" * (1 << 20) + b'"}', "not_numeric"),
}


@pytest.mark.parametrize("name", sorted(POISON))
def test_poison_values_are_refused_with_a_reason_never_raised(name):
    value, reason = POISON[name]
    with pytest.raises(InvalidRecord) as e:
        RewardCodec(model=None).reward("a", value)
    assert e.value.reason in (reason if isinstance(reason, tuple) else (reason,)), e.value


def scheduler(**cfg):
    clock = EventClock()
    s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=clock,
                  config=SchedulerConfig(discovery_records=5, **cfg))
    return s, clock


def test_a_bad_record_with_a_new_key_takes_no_arm_slot():
    s, _ = scheduler(max_arms=3, min_arms=3)
    for i in range(100):  # junk under ever new keys: none becomes an arm
        bad = s.offer(b"junk-%d" % i, [b"not json", b'{"reward": NaN}', b"{}", None][i % 4])
        assert bad is not None and bad.reason != "too_many_arms", bad
    assert s.known_arms == [] and s.snapshot()["arms"] == {}
    for key in (b"a", b"b", b"c"):  # the slots are still free for real keys
        assert s.offer(key, b'{"reward": 0}') is None
    assert s.known_arms == ["a", "b", "c"]
    assert s.offer(b"d", b'{"reward": 0}').reason == "too_many_arms"


def test_a_str_key_with_a_lone_surrogate_is_refused_at_intake_not_later():
    """A key with no UTF-8 form would fail wherever it is encoded (checkpoint rows, Kafka keys, metrics labels):
    refused as key_not_utf8 at intake; it raised UnicodeEncodeError out of the scheduler."""
    s, _ = scheduler(min_arms=1)
    for key in ("\ud800", "eu-\udfff"):
        bad = s.offer(key, b'{"reward": 0}')
        assert bad is not None and bad.reason == "key_not_utf8" and "lone surrogate" in bad.detail
    assert s.known_arms == [] and s.counters.invalid["key_not_utf8"] == 2


def test_jsonl_poison_lines_become_refused_records(tmp_path):
    p = tmp_path / "in.jsonl"
    lines = [
        b'{"arm": "a", "reward": 1, "timestamp": 5}',
        b"[" * 100_000,                                       # RecursionError in json.loads
        b'{"arm": "b", "reward": 1, "timestamp": 1e999}',     # timestamp inf: int() overflows
        b'{"arm": "c", "reward": 1, "timestamp": NaN}',
        b'{"key": "\xff\xfe", "value": {"reward": 1}}',       # invalid UTF-8 key
        b'{"key": "\\ud800", "value": {"reward": 1}}',        # JSON escape of a lone surrogate
        b'{"key": "d", "value": {"reward": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
        b'{"arm": "e", "reward": 1' + b"0" * 400 + b"}",
    ]
    p.write_bytes(b"\n".join(lines) + b"\n")
    src = JsonlSource([str(p)], ordered=False)
    recs = []
    while not src.exhausted:
        recs += src.poll()
    assert len(recs) == len(lines)
    codec = RewardCodec(model=None)
    out = []
    for r in recs:
        try:
            out.append(codec.reward(codec.arm(r.key), r.value))
        except InvalidRecord as e:
            out.append(e.reason)
    # the source's own reasons (a line it cannot parse, a timestamp that is no time), not "no key"
    assert out == [1.0, "not_json", "bad_timestamp", "bad_timestamp", "key_not_utf8", "key_not_utf8", "not_json",
                   "not_finite"]
    dl = tmp_path / "dl.jsonl"
    sink = JsonlDeadLetterSink(str(dl))
    for r in recs[4:6]:
        sink.send(r, "key_not_utf8", "x")
    sink.close()
    assert [json.loads(x)["key"] for x in dl.read_text().splitlines()] == ["\\xff\\xfe", "\\xed\\xa0\\x80"]


# -- item 4: a checkpoint never decides what code is imported; HMAC authenticity ------------------
def _jsonl(path, n=400):
    with open(path, "w") as f:
        for i in range(n):
            a = "abcd"[i % 4]
            f.write(json.dumps({"arm": a, "reward": int(a == "d" and i % 8 != 7), "timestamp": 1000 * i}) + "\n")


def _run(args, cwd, env=None):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = os.pathsep.join([str(cwd), root, e.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "streamarms.cli", "run", *args], cwd=root, env=e,
                          capture_output=True, text=True, timeout=120)


def test_a_checkpoint_naming_a_module_is_refused_without_importing_it(tmp_path):
    from streamarms.checkpoint import FileCheckpointStore
    (tmp_path / "evil_policy_mod.py").write_text(
        f"open({str(tmp_path / 'IMPORTED')!r}, 'w').close()\nclass Zen: pass\n")
    _jsonl(tmp_path / "r.jsonl")
    ck = tmp_path / "c.ckpt"
    args = ["--rewards-file", str(tmp_path / "r.jsonl"), "--checkpoint", str(ck), "--policy", "wrr",
            "--discovery-records", "8", "--forever", "--mode", "episodes", "--max-episodes", "1"]
    assert _run(args, tmp_path).returncode == 0
    store = FileCheckpointStore(ck)
    doc = store.load()
    assert doc["scheduler"]["policy"] is not None
    for target in ("evil_policy_mod:Zen", "this:Zen", "os:system"):
        doc["scheduler"]["policy"]["class"] = target
        doc["scheduler"]["phase"] = "running"
        store.save(doc)  # a valid SHA-256: integrity is no defence against a forger
        p = _run(args, tmp_path)
        assert p.returncode == 2, p.stderr[-2000:]
        assert "not a loaded streamarms policy class" in p.stderr and target in p.stderr
        assert "Traceback" not in p.stderr
    assert not (tmp_path / "IMPORTED").exists()


def test_hmac_key_refuses_unsigned_forged_and_foreign_checkpoints(tmp_path):
    from streamarms.checkpoint import CheckpointError, FileCheckpointStore, checkpoint_key
    key = checkpoint_key({"STREAMARMS_CHECKPOINT_KEY": "k" * 32})
    signed = FileCheckpointStore(tmp_path / "s.ckpt", secret=key)
    signed.save({"x": 1})
    assert signed.load() == {"x": 1} and "HMAC" in signed.integrity()
    with pytest.raises(CheckpointError, match="no checkpoint key is set"):
        FileCheckpointStore(tmp_path / "s.ckpt").load()
    with pytest.raises(CheckpointError, match="HMAC verification"):
        FileCheckpointStore(tmp_path / "s.ckpt", secret=b"x" * 32).load()
    FileCheckpointStore(tmp_path / "u.ckpt").save({"x": 2})  # unsigned (SHA-256 only), e.g. forged
    with pytest.raises(CheckpointError, match="no HMAC"):
        FileCheckpointStore(tmp_path / "u.ckpt", secret=key).load()
    data = (tmp_path / "s.ckpt").read_bytes().replace(b'"x":1', b'"x":7')
    (tmp_path / "s.ckpt").write_bytes(data)
    with pytest.raises(CheckpointError, match="HMAC verification"):
        signed.load()
    with pytest.raises(ValueError, match="at least 16"):
        checkpoint_key({"STREAMARMS_CHECKPOINT_KEY": "short"})


def test_cli_uses_the_hmac_key_from_the_environment(tmp_path):
    _jsonl(tmp_path / "r.jsonl")
    ck = tmp_path / "c.ckpt"
    args = ["--rewards-file", str(tmp_path / "r.jsonl"), "--checkpoint", str(ck), "--discovery-records", "8",
            "--max-episodes", "1", "--log-level", "info"]
    (tmp_path / "key").write_text("z" * 32 + "\n")
    p = _run(args, tmp_path, {"STREAMARMS_CHECKPOINT_KEY_FILE": str(tmp_path / "key")})
    assert p.returncode == 0 and "protected by HMAC-SHA256" in p.stderr, p.stderr[-2000:]
    p = _run(args, tmp_path)  # the same checkpoint without the key: refused, one line, exit 2
    assert p.returncode == 2 and "no checkpoint key is set" in p.stderr, p.stderr[-2000:]


# -- item 3: liveness reflects a consumer that makes no progress while records wait ---------------
def test_livez_fails_when_nothing_is_read_while_records_wait():
    from streamarms.daemon import Daemon

    class StuckSource:  # positions that point nowhere: polls return nothing, yet 5 records wait
        exhausted = False
        connected = True

        def __init__(self):
            self.polls = 0

        def poll(self, timeout):
            self.polls += 1
            if self.polls >= 40:
                d.stop("test over")
            return []

        def lag(self):
            return {"t:0": 5}

        def state(self):
            return {}

        def rollback(self, n):
            pass

        def commit(self, state):
            pass

        def close(self):
            pass

    t = [0.0]

    def wall():
        t[0] += 1.0  # one second per call: the loop's once-a-second progress note runs every turn
        return t[0]

    s, _ = scheduler()
    src = StuckSource()
    d = Daemon(s, src, handle_signals=False, wall=wall, stall_seconds=30.0, stop_when_exhausted=False)
    d.run()
    ok, info = d.health()
    assert not ok and info["lag_records"] == 5 and "while 5 records wait" in info["reason"]
    src.lag = lambda: {"t:0": 0}  # caught up: idle is fine
    src.polls, d._interrupt, d._stop_requested = 0, False, False
    d.run()
    assert d.health()[0]
    src.connected = False  # an outage is ridden out, not a stall
    src.lag = lambda: {"t:0": 5}
    src.polls, d._interrupt, d._stop_requested = 0, False, False
    d.run()
    assert d.health()[0]


def test_alert_dedupe_recipe_keeps_the_first_of_each_alert_id():
    """Issue 10 item 8: the documented dedupe recipe for at-least-once alerts is a real function."""
    from streamarms.alerts import AlertDeduplicator
    stream = [{"alert_id": i, "n": n} for n, i in enumerate(
        ["1:a:outlier", "1:b:outlier", "1:a:outlier", "2:a:cleared", "1:b:outlier", "2:a:cleared", "2:c:outlier"])]
    d = AlertDeduplicator()
    assert [a["n"] for a in d.filter(stream)] == [0, 1, 3, 6] and (d.passed, d.dropped) == (4, 3)
    bounded = AlertDeduplicator(keep_episodes=1)  # episode 1 forgotten once episode 2 starts
    assert [a["n"] for a in bounded.filter(stream)] == [0, 1, 3, 4, 6]
    with pytest.raises(ValueError, match="no alert_id"):
        AlertDeduplicator().accept({"arm": "a"})
    with pytest.raises(ValueError):
        AlertDeduplicator(keep_episodes=0)


def test_dedupe_alerts_cli(tmp_path):
    import subprocess
    import sys
    lines = ['{"alert_id":"1:a:outlier","arm":"a"}', '{"alert_id":"1:a:outlier","arm":"a"}',
             '{"alert_id":"1:b:outlier","arm":"b"}']
    f = tmp_path / "alerts.jsonl"
    f.write_text("\n".join(lines) + "\n")
    p = subprocess.run([sys.executable, "-m", "streamarms.cli", "dedupe-alerts", str(f)], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.splitlines() == [lines[0], lines[2]], p.stderr
    assert "2 alerts, 1 repeats dropped" in p.stderr
    p = subprocess.run([sys.executable, "-m", "streamarms.cli", "dedupe-alerts"], input="not json\n",
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.startswith("streamarms dedupe-alerts: error: <stdin>:1:"), p.stderr


def test_a_sink_that_cannot_deliver_postpones_the_checkpoint_and_fails_only_at_exit():
    """A flush that times out (SinkUnavailable: the broker went away, the source has not noticed) must
    not stop the daemon, nor save a checkpoint past the undelivered records; at exit it fails the run."""
    from collections import namedtuple

    from streamarms.checkpoint import CheckpointStore
    from streamarms.daemon import Daemon
    from streamarms.errors import SinkUnavailable
    Rec = namedtuple("Rec", "topic partition offset timestamp key value")
    recs = [Rec("t", 0, i, 1000 * i, b"abcd"[i % 4:i % 4 + 1], b'{"reward": %d}' % (i % 4 == 3)) for i in range(40)]

    class Source:
        exhausted, connected = False, True

        def __init__(self):
            self.pos = 0

        def poll(self, timeout):
            b = recs[self.pos:self.pos + 4]
            self.pos += len(b)
            if not b:
                d.stop("test over")
            return b

        def state(self):
            return {"t:0": [self.pos, None]}

        def rollback(self, n):
            pass

        def commit(self, state):
            pass

        def close(self):
            pass

    class Sink:
        down = True

        def send(self, alert):
            pass

        def flush(self):
            if self.down:
                raise SinkUnavailable("the broker has not acknowledged the pending records within 5 s")

        def close(self):
            pass

    class Store(CheckpointStore):
        def __init__(self):
            self.saved = []

        def save(self, state):
            self.saved.append(state["source"]["t:0"][0])

        def load(self):
            return None

        def describe(self):
            return "memory"

    s, _ = scheduler()
    sink, store = Sink(), Store()
    d = Daemon(s, Source(), alert_sink=sink, checkpoint=store, checkpoint_interval=0.0, handle_signals=False,
               stop_when_exhausted=False)
    with pytest.raises(SinkUnavailable):
        d.run()  # every periodic checkpoint postponed (no crash), the one at exit fails the run
    assert store.saved == [] and s.records == 40
    sink.down = False
    d = Daemon(s, Source(), alert_sink=sink, checkpoint=store, checkpoint_interval=0.0, handle_signals=False,
                stop_when_exhausted=False)
    d.run()
    assert store.saved and store.saved[-1] == 40


def test_jsonl_keys_are_strings_or_integers(tmp_path):
    """A JSONL key that is neither a string nor an integer is no key (refused, to the dead letters), not an arm
    named after Python's spelling of it ('True', "['a']")."""
    p = tmp_path / "in.jsonl"
    keys = ['"s"', "7", "-3", "true", "1.5", '["a"]', '{"x": 1}', "null"]
    p.write_text("".join(f'{{"arm": {k}, "reward": 1}}\n{{"key": {k}, "value": {{"reward": 1}}}}\n' for k in keys))
    src = JsonlSource([str(p)], ordered=False)
    recs = []
    while not src.exhausted:
        recs += src.poll()
    codec = RewardCodec(model=None)
    out = []
    for r in recs:
        try:
            out.append(codec.arm(r.key))
        except InvalidRecord as e:
            out.append(e.reason)
    assert out == ["s", "s", "7", "7", "-3", "-3"] + ["key_missing"] * 10


@pytest.mark.parametrize("a, b", [(-1e308, 1e308), (0.0, 1e300), (-1e101, 0.0)])
def test_a_reward_range_too_wide_for_floats_is_refused_not_silently_infinite(a, b):
    """[-1e308, 1e308] made every interval infinite (numpy overflow warnings, no alert ever)."""
    from streamarms.models import BoundedModel
    with pytest.raises(ValueError, match="too wide for floats"):
        BoundedModel(a, b)
    assert BoundedModel(-1e100, 1e100).high == 1e100


def test_a_boolean_key_ttl_is_refused():
    from streamarms.monitor import ContinuousMonitor
    with pytest.raises(ValueError, match="key_ttl"):
        ContinuousMonitor(key_ttl=True)


def test_a_checkpoint_of_the_right_checksum_and_another_shape_is_refused_by_name(tmp_path, capsys):
    """Found by mutating checkpoints and writing their checksums again (a forger, an edit, another program): a
    ``scheduler`` or ``run`` block that is no object crashed ``explain`` (a traceback) and stopped ``run`` with
    ``cannot start: AttributeError`` (exit 1); a monitor's threshold interval that is no pair of numbers crashed
    ``explain --table`` after the restore; a checkpoint without its ``source`` block, or with an integer too large for
    a float, stopped ``run`` with ``cannot start`` (exit 1). Each is now refused naming what is wrong (exit 2)."""
    from streamarms.checkpoint import FileCheckpointStore
    from streamarms.cli import main

    rows = tmp_path / "r.csv"
    rows.write_text("host,err\n" + "".join(f"h{i % 7},{int(i % 11 == 0 or (i % 7 == 3 and i % 3 == 0))}\n"
                                           for i in range(6000)))
    gone = object()
    for forever, block, value, said in (
            (False, ("scheduler",), [1, 2], "its 'scheduler' is a JSON array, not an object"),
            (False, ("run",), None, "its 'run' is null, not an object"),
            (True, ("scheduler", "monitor", "groups", "default", "track", "result", "upper"), None,
             "the threshold track's 'upper' in the snapshot is None: two numbers, low to high expected"),
            # (an integer too large for a float was an OverflowError: exit 1, "cannot start")
            (True, ("scheduler", "monitor", "groups", "default", "k"), 10 ** 400,
             "'groups.default.k' must be a finite number"),
            (False, ("source",), gone, "it has no 'source'")):  # (was a KeyError: exit 1, "cannot start")
        ck = tmp_path / f"c-{block[-1]}.ckpt"
        flags = ["run", "--rewards-file", str(rows), "--key-field", "host", "--reward-field", "err", "--checkpoint",
                 str(ck), "--quiet", *(["--forever"] if forever else ["--max-episodes", "1"])]
        assert main(flags) == 0
        store = FileCheckpointStore(ck)
        doc = store.load()
        at = doc
        for name in block[:-1]:
            at = at[name]
        if value is gone:
            del at[block[-1]]
        else:
            at[block[-1]] = value
        store.save(doc)  # (its checksum made again)
        capsys.readouterr()
        for argv in (flags, *([] if block == ("source",) else [["explain", str(ck)], ["explain", str(ck), "--table"]])):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert said in err and "Traceback" not in err, err


def test_a_kafka_checkpoint_that_cannot_be_read_to_its_end_is_an_error_not_a_hang(monkeypatch):
    """The broker said the checkpoint topic ends at offset 1, and fetches found nothing after offset 0 (a broker whose
    data was lost and rebuilt; a transaction left open by a run killed during --exactly-once): the start waited
    forever, with no word and no health endpoint. After ``load_stall`` seconds without a record it is a
    CheckpointError naming both offsets."""
    import streamarms.connectors.kafka_checkpoint as kc
    from streamarms.checkpoint import CheckpointError

    class Stuck:  # (a consumer whose position never reaches the end the broker gave)
        def __init__(self, **_): pass
        def partitions_for_topic(self, _): return {0}
        def assign(self, _): pass
        def seek_to_beginning(self, *_): pass
        def end_offsets(self, tps): return {tp: 1 for tp in tps}
        def position(self, _): return 0
        def poll(self, timeout_ms): return {}
        def close(self, autocommit=False): pass

    monkeypatch.setattr(kc, "KafkaConsumer", Stuck)
    monkeypatch.setattr(kc, "KafkaProducer", lambda **_: None)
    store = kc.KafkaCheckpointStore({"bootstrap_servers": "127.0.0.1:9"}, "ck", "g", create=False)
    store.load_stall = 0.0
    with pytest.raises(CheckpointError, match=r"cannot be read to its end: the broker says it ends at offset 1, and no "
                                              r"record came after offset 0 for 0 s"):
        store.load()

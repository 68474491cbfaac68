"""The continuous mode through the daemon: a shift is alerted and the shift back cleared, in stream time;
a crash at any point then a restart from the checkpoint equals the uninterrupted run (nothing lost,
nothing counted twice); refused records (bad rewards, groups) go to the dead letters and change nothing."""

from __future__ import annotations

import random

import pytest

from streamarms.checkpoint import FileCheckpointStore
from streamarms.connectors.memory import MemoryBroker, MemoryDeadLetterSink, MemorySink, MemorySource
from streamarms.daemon import Daemon, restore_checkpoint
from streamarms.monitor import ContinuousMonitor
from streamarms.runtime import EventClock
from streamarms.runtime.continuous import ContinuousRunner

T0 = 1_700_000_000_000
#: 20 keys at 0.05..0.24; k0 jumps to 0.8 at record UP and back at BACK (the monitor's doctest stream)
N, UP, BACK = 60_000, 20_000, 40_000


def fill(broker: MemoryBroker, topic: str, partitions: int, seed: int, bad_every: int = 0) -> None:
    broker.create_topic(topic, partitions)
    rng = random.Random(seed)
    rates = {f"k{i}": 0.05 + 0.01 * i for i in range(20)}
    for t in range(N):
        key = f"k{rng.randrange(20)}"
        p = 0.8 if (key == "k0" and UP <= t < BACK) else rates[key]
        value = b'{"reward": %d}' % (rng.random() < p)
        if bad_every and t % bad_every == bad_every - 1:
            value = [b"not json", b'{"reward": 0.5}', b'{"reward": NaN}', b'{"x": 1}'][t // bad_every % 4]
        broker.produce(topic, key, value, timestamp=T0 + t)


class Crash(Exception):
    pass


class CrashingSource:
    def __init__(self, inner, polls: int) -> None:
        self.inner, self.left = inner, polls

    def poll(self, timeout):
        self.left -= 1
        if self.left < 0:
            raise Crash()
        return self.inner.poll(timeout)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def start(broker, store, *, polls=None, group="g", alerts_topic="alerts", dlq="dlq"):
    run_info = {"mode": "continuous", "policy": "continuous", "topics": ["rewards"]}
    doc = restore_checkpoint(store, run_info) if store is not None else None
    clock = EventClock()
    alerts = MemorySink(broker, alerts_topic)
    runner = ContinuousRunner(ContinuousMonitor(k=2.0), clock=clock, emit_alert=alerts.send)
    if doc is not None:
        runner.restore(doc["scheduler"])
    source = MemorySource(broker, ["rewards"], group_id=group, resume=doc["source"] if doc else None,
                          max_records=700)
    if polls is not None:
        source = CrashingSource(source, polls)
    daemon = Daemon(runner, source, clock=clock, alert_sink=alerts, dead_letter_sink=MemoryDeadLetterSink(broker, dlq),
                    checkpoint=store, checkpoint_interval=0.0, run_info=run_info, handle_signals=False)
    return daemon, runner


def test_shift_alerted_and_cleared_in_stream_time():
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=1, seed=1)
    d, r = start(broker, None)
    assert d.run() == 0
    alerts = broker.values("alerts")
    assert [(a["arm"], a["kind"]) for a in alerts] == [("k0", "outlier"), ("k0", "cleared")]
    up, back = alerts
    # stream time: the timestamp (s) of the record that raised the alert, after the change
    assert T0 / 1000 + UP / 1000 < up["time"] < T0 / 1000 + BACK / 1000 < back["time"] < T0 / 1000 + N / 1000
    for a in alerts:  # the evidence
        assert a["interval"][0] <= a["estimate"] <= a["interval"][1] and a["samples"] > 0
        assert a["threshold_interval"][0] <= a["threshold"] <= a["threshold_interval"][1]
        assert a["margin"] > 0 and a["threshold_samples"] > 0
        assert a["alert_id"].startswith(f"k0:{a['kind']}:")
    assert up["interval"][0] > up["threshold_interval"][1] and back["interval"][1] < back["threshold_interval"][0]
    assert r.records == r.used == N and r.alerts.flagged == {}


def test_crash_at_any_point_then_restart_equals_uninterrupted(tmp_path):
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=3, seed=2, bad_every=997)
    d0, r0 = start(broker, FileCheckpointStore(tmp_path / "u.ckpt", fsync=False), group="u")
    assert d0.run() == 0
    ref_alerts = [a["alert_id"] for a in broker.values("alerts")]
    assert [a.split(":")[:2] for a in ref_alerts] == [["k0", "outlier"], ["k0", "cleared"]]
    ref_state = r0.monitor.snapshot()
    for crash_after in (4, 41):
        store = FileCheckpointStore(tmp_path / f"c{crash_after}.ckpt", fsync=False)
        topic = f"alerts{crash_after}"
        d1, _ = start(broker, store, polls=crash_after, group=f"c{crash_after}", alerts_topic=topic,
                      dlq=f"dlq{crash_after}")
        with pytest.raises(Crash):
            d1.run()
        mid = store.load()
        committed = broker.committed[f"c{crash_after}"]
        assert {f"{t}:{p}": o for (t, p), o in committed.items()} == {k: v[0] for k, v in mid["source"].items()}
        d2, r2 = start(broker, store, group=f"c{crash_after}", alerts_topic=topic, dlq=f"dlq{crash_after}")
        assert d2.run() == 0
        assert r2.monitor.snapshot() == ref_state  # bit for bit: no record lost or counted twice
        assert r2.records == r0.records and r2.stats()["invalid"] == r0.stats()["invalid"]
        # at-least-once: a redelivered alert has the same alert_id (deduplicate by it)
        assert sorted(set(a["alert_id"] for a in broker.values(topic))) == sorted(ref_alerts)


def test_values_the_source_parsed_are_used_as_they_are_and_give_what_parsing_gives():
    # the JSON-lines source parses each line once; the monitor takes its objects instead of parsing again
    import json
    import random
    rng = random.Random(3)
    keys = [b"k%d" % rng.randrange(6) for _ in range(3000)]
    values = [b'{"reward": %d, "svc": "web"}' % (rng.random() < (0.9 if k == b"k5" else 0.2)) for k in keys]
    values[7] = b'{"reward": "x", "svc": "web"}'  # refused alike (the per-record path says why)
    parsed = [json.loads(v) for v in values]
    parsed[11] = None  # (a value the source did not parse: parsed here)
    runs = []
    for given in (None, parsed):
        r = ContinuousRunner(ContinuousMonitor(), clock=EventClock(), group_field="svc")
        out = r.offer_batch(keys, values, list(range(1, 3001)), parsed=given)
        runs.append((out[0], [(i, e.reason) for i, e in out[1]], r.snapshot()["monitor"]))
    assert runs[0] == runs[1] and runs[0][1] == [(7, "not_numeric")]
    probes = []  # (a parsed object the value does not say: it is the one used -- the value is not parsed again)
    for value, given in ((b'{"reward": 0}', [{"reward": 1}]), (b'{"reward": 1}', None)):
        r = ContinuousRunner(ContinuousMonitor(), clock=EventClock())
        r.offer_batch([b"a"], [b'{"reward": 1}'], [1])  # (a key's first record takes the per-record path)
        r.offer_batch([b"a"], [value], [2], parsed=given)
        probes.append(r.snapshot()["monitor"])
    assert probes[0] == probes[1]
    r = ContinuousRunner(ContinuousMonitor(), clock=EventClock())
    with pytest.raises(ValueError, match="parsed"):
        r.offer_batch([b"a"], [b'{"reward": 1}'], parsed=[])


def test_refused_records_go_to_the_dead_letters_and_change_nothing():
    out: list[dict] = []
    r = ContinuousRunner(ContinuousMonitor(), clock=EventClock(), emit_alert=out.append, group_field="svc",
                         max_groups=2, max_arms=3)
    ok = [(b"a", b'{"reward": 1, "svc": "web"}'), (b"b", b'{"reward": 0, "svc": "db"}')]
    n, bad = r.offer_batch([k for k, _ in ok], [v for _, v in ok], [1, 2])
    assert (n, bad) == (2, [])
    before = r.snapshot()
    junk = [(b"a", b'{"reward": 1, "svc": "db"}'), (b"c", b'{"reward": 1, "svc": "api"}'),
            (b"c", b'{"reward": 1}'), (b"c", b'{"reward": 1, "svc": ["x"]}'), (b"a", b'{"reward": 0.5, "svc": "web"}'),
            (b"c", b'{"reward": 2, "svc": "web"}'), (None, b'{"reward": 1, "svc": "web"}')]
    n, bad = r.offer_batch([k for k, _ in junk], [v for _, v in junk], [3] * len(junk))
    assert [e.reason for _, e in bad] == ["group_mismatch", "too_many_groups", "missing_group", "bad_group",
                                          "out_of_model", "out_of_model", "key_missing"]
    assert "belongs to group 'web'" in str(bad[0][1]) and "max_groups=2" in str(bad[1][1])
    after = r.snapshot()
    assert after["monitor"] == before["monitor"] and after["arms"] == before["arms"]
    assert r.records == 9 and r.used == 2


@pytest.mark.parametrize("batched", [False, True], ids=["offer", "offer_batch"])
def test_forgotten_keys_leave_the_runner_too(batched):
    """``forget_silent``: a key the monitor forgets (silent for ``key_ttl`` records of its group) leaves the
    runner's key registry and group map as well, so keys that come and go never reach ``max_arms``; a
    forgotten key that returns is a new key. Without the release the 11th key is refused (too_many_arms)."""
    clock = EventClock()
    runner = ContinuousRunner(ContinuousMonitor(key_ttl=20, forget_silent=True), clock=clock, max_arms=10)
    rng = random.Random(3)
    refused = []
    for gen in range(10):  # 10 generations of 5 keys, 60 records each: 50 distinct keys, at most ~10 alive
        keys = [f"g{gen}-k{j}".encode() for j in range(5)] if gen < 9 else [b"g0-k0"] + [
            f"g9-k{j}".encode() for j in range(1, 5)]
        recs = [(keys[rng.randrange(5)], b'{"reward": %d}' % (rng.random() < 0.3)) for _ in range(60)]
        if batched:
            _, bad = runner.offer_batch([k for k, _ in recs], [v for _, v in recs])
            refused += [e.reason for _, e in bad]
        else:
            for k, v in recs:
                e = runner.offer(k, v, time=float(gen))
                if e is not None:
                    refused.append(e.reason)
        live = set(runner.monitor.keys)
        assert set(runner.keys.last_seen) == live  # the registry holds exactly the monitor's keys
        assert set(runner._groups) <= live and len(runner.keys.arm_of) <= 2 * len(live)
    assert refused == []
    assert runner.used == 600 and "g0-k0" in runner.monitor.keys  # it came back as a new key
    assert runner.monitor.forgotten == []


def test_groups_without_a_utf8_form_or_beyond_64_bits_are_bad_groups_that_change_nothing():
    r = ContinuousRunner(ContinuousMonitor(), clock=EventClock(), group_field="svc")
    assert r.offer_batch([b"a"], [b'{"reward": 1, "svc": "web"}'], [1]) == (1, [])
    before = r.snapshot()
    junk = [b'{"reward": 1, "svc": "\\ud800"}', b'{"reward": 1, "svc": "a\\udfffb"}',
            b'{"reward": 1, "svc": 99999999999999999999999999999}', b'{"reward": 1, "svc": 1.5}']
    n, bad = r.offer_batch([b"b"] * len(junk), junk, [2] * len(junk))
    assert [e.reason for _, e in bad] == ["bad_group"] * 4
    assert "lone surrogate" in bad[0][1].detail and "lone surrogate" in bad[1][1].detail
    # orjson reads the 29-digit integer as a float: the refusal says it may be an integer, not "a JSON float"
    assert "an integer beyond 64 bits" in bad[2][1].detail and "float" not in bad[2][1].detail
    assert "(not an integer)" in bad[3][1].detail
    after = r.snapshot()
    assert after["monitor"] == before["monitor"] and after["arms"] == before["arms"]
    assert r.offer_batch([b"b"], [b'{"reward": 1, "svc": 18446744073709551615}'], [3]) == (1, [])  # 64 bits: a group


def test_a_key_with_a_lone_surrogate_is_refused_at_intake():
    r = ContinuousRunner(ContinuousMonitor(), clock=EventClock())
    bad = r.offer("k\ud800", b'{"reward": 1}')
    assert bad is not None and bad.reason == "key_not_utf8" and r.keys.known == []


def test_epoch_churn_is_said_once_per_run_of_churning_windows():
    """Three churning windows in a row: one warning (at the second); a calm window, then two churning ones:
    said again; a single churning window (a start-up burst of joins): never."""
    from types import SimpleNamespace

    from streamarms.runtime.continuous import EpochChurn

    g = SimpleNamespace(epoch=0)
    mon, churn, said = SimpleNamespace(groups={"default": g}), EpochChurn(window=100, epochs=5), []
    for w, new_epochs in enumerate([5, 0, 6, 7, 9, 0, 5, 5, 0]):
        said += [(w, *s) for s in churn.look(mon, 100 * w)]
        g.epoch += new_epochs
    said += [(9, *s) for s in churn.look(mon, 900)]
    assert [w for w, *_ in said] == [4, 8] and said[0][1:] == ("default", 7, 100)

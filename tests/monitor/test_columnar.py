"""The monitor's per-key evidence in columns (issue 13): the same alerts and snapshots as the per-key
objects it replaced (pinned in ``data/columnar_golden.json``, written by that version: see
:mod:`tests.monitor.scenario`), old checkpoints restore and continue bit for bit, forgotten keys free
their slots for new keys, bad snapshots are refused whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamarms.json_stream import lazy_default
from streamarms.monitor import ContinuousMonitor
from tests.monitor import scenario

GOLDEN = json.loads((Path(__file__).parent / "data" / "columnar_golden.json").read_text())


def _plain(snap):
    """The snapshot as the JSON data a checkpoint stores (its key rows encoded)."""
    return json.loads(json.dumps(snap, default=lazy_default))


@pytest.mark.slow  # (~17 s: the long tier runs it; the quick suite stays under 15 minutes)
def test_columns_give_the_alerts_and_snapshots_of_the_per_key_objects() -> None:
    got = json.loads(json.dumps(scenario.outcome()))
    assert set(got) == set(GOLDEN)
    for name in GOLDEN:
        assert got[name]["alerts"] == GOLDEN[name]["alerts"], name
        assert got[name]["counts"] == GOLDEN[name]["counts"], name
        assert got[name]["final"] == GOLDEN[name]["final"], name
        assert got[name]["mid"] == GOLDEN[name]["mid"], name
    assert any(a[1] == "cleared" for g in GOLDEN.values() for a in g["alerts"])  # the scenario clears too


def test_a_checkpoint_of_the_per_key_objects_restores_and_continues_bit_for_bit() -> None:
    gold = GOLDEN["edetector-bernoulli-300"]
    mon = ContinuousMonitor.restore(json.loads(json.dumps(gold["mid"])))
    assert json.loads(json.dumps(mon.snapshot(rows=False))) == gold["mid"]
    recs = scenario.records("bernoulli")
    rest = json.loads(json.dumps(scenario.feed(mon, recs, scenario.RECORDS // 2)))
    assert rest == [a for a in gold["alerts"] if a[2] > scenario.RECORDS // 2]
    assert scenario.digest(mon) == gold["final"]


def test_forget_frees_the_slot_and_a_new_key_reuses_it() -> None:
    mon = ContinuousMonitor(k=2.0)
    for t in range(30):
        mon.update(f"k{t % 3}", float(t % 2), time=float(t))
    t = mon.table
    slot, cols, epoch = t.slot["k1"], len(t.samples), mon.groups["default"].epoch
    mon.forget("k1", time=30.0)
    assert "k1" not in mon.keys and mon.groups["default"].members == ["k0", "k2"]
    assert mon.groups["default"].epoch == epoch + 1  # theta lost a member: a new epoch
    mon.update("new", 1.0, time=31.0)
    assert t.slot["new"] == slot and len(t.samples) == cols  # the freed slot, no new column entry
    ks = mon.keys["new"]
    assert (ks.samples, ks.restarts, ks.segment.m, ks.epoch_cs.m, ks.flagged, ks.rule.restarts) == (1, 0, 1, 1, False, 0)
    assert ks.rule.snapshot()["up"] != [0.0] * 6  # its detector restarted from zero and saw one reward
    mon.update("k1", 0.0, time=32.0)  # the forgotten key comes back as a new key
    assert mon.keys["k1"].samples == 1 and len(t.samples) == cols + 1
    back = ContinuousMonitor.restore(_plain(mon.snapshot()))
    assert back.snapshot() == mon.snapshot()
    with pytest.raises(KeyError):
        mon.forget("nobody")


def test_classes_read_the_columns() -> None:
    mon = ContinuousMonitor(k=1.0)
    for t in range(4000):
        mon.update(f"k{t % 8}", float((t % 8 == 0) or (t % 7 == 0)), time=float(t), group="g" if t % 2 else "h")
    got = sorted(mon.classes())
    want = sorted((k, ks.group, ks.state, ks.flagged) for k, ks in mon.keys.items())
    assert got == want and any(flag for *_, flag in got)


def test_a_snapshot_that_does_not_fit_the_monitor_is_refused_whole() -> None:
    mon = ContinuousMonitor(alpha=0.01)
    for t in range(50):
        mon.update(f"k{t % 5}", float(t % 2), time=float(t))
    snap = _plain(mon.snapshot(rows=False))  # the per-key format of earlier versions
    other = dict(snap, keys=[*snap["keys"][:2], dict(snap["keys"][2], segment=dict(snap["keys"][2]["segment"], alpha=0.5))])
    with pytest.raises(ValueError, match="level 0.5"):
        ContinuousMonitor.restore(other)
    with pytest.raises(ValueError, match="twice"):
        ContinuousMonitor.restore(dict(snap, keys=[*snap["keys"], snap["keys"][0]]))
    rule = dict(snap["keys"][1]["rule"], alpha_cd=0.5)
    with pytest.raises(ValueError, match="not the monitor's"):
        ContinuousMonitor.restore(dict(snap, keys=[snap["keys"][0], dict(snap["keys"][1], rule=rule)]))
    with pytest.raises(ValueError, match="state"):
        ContinuousMonitor.restore(dict(snap, keys=[dict(snap["keys"][0], state="weird")]))


def test_forget_silent_frees_the_slots_of_keys_dropped_for_silence() -> None:
    """key_ttl = 20 records: a key silent for longer leaves the threshold; with forget_silent its slot is
    freed and the next new key takes it; without, its evidence stays (the default, as before)."""
    for forget in (True, False):
        mon = ContinuousMonitor(key_ttl=20, forget_silent=forget)
        for t in range(60):
            mon.update(f"k{t % 4}", float(t % 3 == 0), time=float(t))
        slot, cols = mon.table.slot["k3"], len(mon.table.samples)
        for t in range(60, 100):  # k3 silent
            mon.update(f"k{t % 3}", float(t % 3 == 0), time=float(t))
        assert "k3" not in mon.groups["default"]
        assert ("k3" in mon.keys) is not forget
        mon.update("new", 1.0, time=100.0)
        assert (mon.table.slot["new"] == slot) is forget and len(mon.table.samples) == cols + (not forget)
        back = ContinuousMonitor.restore(_plain(mon.snapshot()))
        assert back.forget_silent is forget and back.snapshot() == mon.snapshot()
        assert ("forget_silent" in mon.snapshot()) is forget

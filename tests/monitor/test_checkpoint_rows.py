"""The monitor's checkpoint as key rows (issue 13, :mod:`streamarms.monitor.rows`): restores bit for bit
and continues with the same alerts; checkpoints of the per-key format written by the previous version
(``data/per_key_checkpoint.json``, ``data/per_key_chunked/``: main at 1796633) still restore; the chunked
store writes only the rows of the keys that changed; a damaged or foreign rows section is a clear
``ValueError`` (a ``CheckpointError`` from ``streamarms run``), never a crash or half a state."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from streamarms.checkpoint import FileCheckpointStore, encode
from streamarms.chunked_checkpoint import ChunkedCheckpointStore
from streamarms.json_lazy import LazyArray
from streamarms.json_stream import lazy_default
from streamarms.monitor import ContinuousMonitor
from tests.monitor import scenario

DATA = Path(__file__).parent / "data"
GOLDEN = json.loads((DATA / "columnar_golden.json").read_text())["edetector-bernoulli-300"]
HALF = scenario.RECORDS // 2


def _plain(snap):
    return json.loads(json.dumps(snap, default=lazy_default))


def _continue_like_the_golden(mon: ContinuousMonitor) -> None:
    rest = json.loads(json.dumps(scenario.feed(mon, scenario.records("bernoulli"), HALF)))
    assert rest == [a for a in GOLDEN["alerts"] if a[2] > HALF]
    assert scenario.digest(mon) == GOLDEN["final"]


def _half() -> ContinuousMonitor:
    mon = scenario.make("edetector", "bernoulli", 300)
    scenario.feed(mon, scenario.records("bernoulli")[:HALF])
    return mon


@pytest.mark.parametrize("how", ["json", "file", "file-lazy", "chunked", "chunked-lazy"])
def test_the_rows_restore_bit_for_bit_and_continue_with_the_same_alerts(tmp_path, how):
    mon = _half()
    snap = mon.snapshot()
    assert isinstance(snap["keys"]["rows"], LazyArray) and snap["keys"]["format"] == "key-rows"
    if how == "json":
        doc = {"monitor": _plain(snap)}
    elif how.startswith("file"):
        store = FileCheckpointStore(tmp_path / "c.json", fsync=False)
        store.lazy_over = 3
        store.save({"monitor": snap})
        doc = store.load_streamed() if how.endswith("lazy") else store.load()
    else:
        store = ChunkedCheckpointStore(tmp_path / "d", block=4, min_list=13, fsync=False)  # 17 keys: split
        store.save({"monitor": snap})
        doc = store.load_streamed() if how.endswith("lazy") else store.load()
    assert doc is not None
    if how.endswith("lazy"):
        assert isinstance(doc["monitor"]["keys"]["rows"], LazyArray)
    back = ContinuousMonitor.restore(doc["monitor"])
    assert back.snapshot(rows=False) == mon.snapshot(rows=False) == GOLDEN["mid"]
    assert _plain(back.snapshot()) == _plain(mon.snapshot())  # restore -> snapshot: the same rows, bit for bit
    assert encode(back.snapshot()) == encode(mon.snapshot())
    _continue_like_the_golden(back)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_file_checkpoint_of_the_per_key_format_written_by_main_restores(tmp_path, lazy):
    shutil.copy(DATA / "per_key_checkpoint.json", tmp_path / "c.json")
    store = FileCheckpointStore(tmp_path / "c.json", fsync=False)
    store.lazy_over = 3
    doc = store.load_streamed() if lazy else store.load()
    assert doc is not None and isinstance(doc["monitor"]["keys"], LazyArray if lazy else list)
    mon = ContinuousMonitor.restore(doc["monitor"])
    assert mon.snapshot(rows=False) == GOLDEN["mid"]
    _continue_like_the_golden(mon)


def test_a_chunked_checkpoint_of_the_per_key_format_written_by_main_restores_and_takes_a_delta(tmp_path):
    shutil.copytree(DATA / "per_key_chunked", tmp_path / "d")
    store = ChunkedCheckpointStore(tmp_path / "d", block=4, min_list=8, fsync=False)
    for doc in (store.load(), store.load_streamed()):
        assert doc is not None
        assert ContinuousMonitor.restore(doc["monitor"]).snapshot(rows=False) == GOLDEN["mid"]
    mon = ContinuousMonitor.restore(store.load()["monitor"])  # type: ignore[index]
    store.save({"monitor": mon.snapshot()})  # the rows format over the old packs
    back = ContinuousMonitor.restore(store.load_streamed()["monitor"])  # type: ignore[index]
    _continue_like_the_golden(back)


def test_a_chunked_delta_writes_only_the_rows_of_the_keys_that_changed(tmp_path):
    mon = ContinuousMonitor(key_ttl=None)
    n = 4000
    for i in range(n):
        mon.update(f"key-{i:05d}", float(i % 10 == 0), time=float(i))
    store = ChunkedCheckpointStore(tmp_path / "d", block=64, min_list=256, fsync=False)
    store.save({"monitor": mon.snapshot()})
    base = store.last_written
    changed = range(0, n, 400)  # 10 keys, spread over the table
    for i in changed:
        mon.update(f"key-{i:05d}", 1.0, time=float(n + i))
    store.save({"monitor": mon.snapshot()})
    delta = store.last_written
    row_chars = mon.snapshot()["keys"]["row_bytes"] // 3 * 4
    # one patch per changed key (each in its own block of 64 rows): its row and its place in the block;
    # the group's order of members (every record changes it) is in the rows (seen), not rewritten
    assert not delta["base"] and delta["patches"] == delta["blocks"] == len(changed)
    assert delta["bytes"] < len(changed) * (row_chars + 40), (delta, base)
    assert _plain(store.load()) == _plain({"monitor": mon.snapshot()})
    assert ContinuousMonitor.restore(store.load_streamed()["monitor"]).snapshot(rows=False) == \
        mon.snapshot(rows=False)  # type: ignore[index]


def _section(mon: ContinuousMonitor) -> dict:
    return _plain(mon.snapshot())


def _tampered(snap: dict, **keys) -> dict:
    return dict(snap, keys=dict(snap["keys"], **keys))


def _row_with(snap: dict, j: int, field: str, value) -> list[str]:
    import numpy as np

    from streamarms.monitor.rows import _dtype
    sec = snap["keys"]
    rec = np.frombuffer(base64.b64decode(sec["rows"][j]), dtype=_dtype(sec["fields"])).copy()
    rec[field] = value
    rows = list(sec["rows"])
    rows[j] = base64.b64encode(rec.tobytes()).decode()
    return rows


def _seen(snap: dict, j: int) -> int:
    import numpy as np

    from streamarms.monitor.rows import _dtype
    return int(np.frombuffer(base64.b64decode(snap["keys"]["rows"][j]), dtype=_dtype(snap["keys"]["fields"]))["seen"][0])


def test_a_damaged_or_foreign_rows_section_is_refused_whole():
    mon = ContinuousMonitor(alpha=0.01)
    for t in range(60):
        mon.update(f"k{t % 6}", float(t % 2), time=float(t), group="g" if t % 2 else "h")
    snap = _section(mon)
    rows, names = snap["keys"]["rows"], snap["keys"]["names"]
    cases = [
        (_tampered(snap, rows=[rows[0][:-4], *rows[1:]]), "not a string of"),
        (_tampered(snap, rows=["!" * len(rows[0]), *rows[1:]]), "not base64"),
        (_tampered(snap, rows=[1, *rows[1:]]), "not a string of"),
        (_tampered(snap, rows=rows[:-1]), "6 key names and 5 rows"),
        (_tampered(snap, names=[names[1], *names[1:]]), "twice"),
        (_tampered(snap, names=[7, *names[1:]]), "not a string"),
        (_tampered(snap, rows=_row_with(snap, 2, "state", 3)), "out of range"),
        (_tampered(snap, rows=_row_with(snap, 2, "group", 2)), "out of range"),
        (_tampered(snap, rows=_row_with(snap, 2, "flagged", -1)), "out of range"),
        (_tampered(snap, rows=_row_with(snap, 2, "ealpha", 1.5)), "out of range"),
        (_tampered(snap, rows=_row_with(snap, 2, "segment.m", -1)), "out of range"),
        (_tampered(snap, version=2), "unknown keys format"),
        (_tampered(snap, byteorder="big"), "unknown keys format"),
        (_tampered(snap, row_bytes=snap["keys"]["row_bytes"] + 3), "bytes"),
        (_tampered(snap, fields=snap["keys"]["fields"][:-1]), "not this monitor's"),
        (_tampered(snap, group_names=["g", "g"]), "twice"),
        (dict(snap, restart="window"), "not this monitor's"),  # rows of an e-detector in a window monitor
        (dict(snap, groups=dict(snap["groups"], g=dict(snap["groups"]["g"], name="x"))), "snapshot of group"),
        (dict(snap, groups=dict(snap["groups"], g=dict(snap["groups"]["g"], members_in_rows=2))), "key rows give"),
        (dict(snap, groups={"g": snap["groups"]["g"]}), "lacks"),
        (dict(snap, groups=dict(snap["groups"], g=dict(snap["groups"]["g"], epoch="2"))), "'groups.g.epoch'"),
        (dict(snap, groups=dict(snap["groups"], g=dict(snap["groups"]["g"], k=None))), "'groups.g.k'"),
        (dict(snap, groups=dict(snap["groups"], g={kk: v for kk, v in snap["groups"]["g"].items() if kk != "low"})),
         "'groups.g.low' is missing"),
        (dict(snap, groups=dict(snap["groups"], g=dict(snap["groups"]["g"], ttl=0))), "'groups.g.ttl'"),
        (dict(snap, groups=dict(snap["groups"], g=dict(snap["groups"]["g"], track=[1]))), "'groups.g.track'"),
        (dict(snap, groups=dict(snap["groups"], g=dict(snap["groups"]["g"], track={"m": 1}))),
         "'groups.g.track' is malformed"),
        (_tampered(snap, rows=_row_with(snap, 3, "seen", json.loads(json.dumps(_seen(snap, 1))))), "two members"),
        (_tampered(snap, rows=_row_with(snap, 3, "seen", -5)), "negative"),
    ]
    for bad, match in cases:
        with pytest.raises(ValueError, match=match):
            ContinuousMonitor.restore(bad)
    assert ContinuousMonitor.restore(snap).snapshot(rows=False) == mon.snapshot(rows=False)


def test_a_snapshot_encoded_after_the_monitor_changed_is_an_error_not_another_state():
    mon = ContinuousMonitor()
    for t in range(20):
        mon.update(f"k{t % 4}", 1.0, time=float(t))
    snap = mon.snapshot()
    mon.evidence("k1")  # reading: no new record, the rows stay the snapshot's
    assert len(_plain(snap)["keys"]["rows"]) == 4
    mon.update("k1", 0.0, time=20.0)
    with pytest.raises(RuntimeError, match="changed"):
        encode(snap)
    snap = mon.snapshot()
    mon.forget("k2")
    with pytest.raises(RuntimeError, match="changed"):
        json.dumps(snap, default=lazy_default)


def test_a_group_whose_order_is_not_its_last_records_keeps_it_in_two_lists():
    """The monitor's groups always have increasing last records (so the rows give their order back); one
    changed by hand does not, and its snapshot then carries the order itself."""
    mon = ContinuousMonitor()
    for t in range(40):
        mon.update(f"k{t % 5}", float(t % 2), time=float(t), group="g" if t % 5 else "h")
    g = mon.groups["g"]
    g.last_seen.move_to_end(next(iter(g.last_seen)))  # the least recent member moved last, its record kept
    snap = _plain(mon.snapshot())
    assert snap["groups"]["g"]["members"] == list(g.last_seen) and "members_in_rows" in snap["groups"]["h"]
    back = ContinuousMonitor.restore(snap)
    assert list(back.groups["g"].last_seen.items()) == list(g.last_seen.items())
    assert back.snapshot(rows=False) == mon.snapshot(rows=False)


@pytest.mark.drill
def test_kill_9_during_background_checkpoints_of_the_continuous_mode(tmp_path):
    """``streamarms run --forever --checkpoint dir:`` (key rows saved by forked children) killed -9 six times
    mid-stream, then resumed to the end: the same monitor state, bit for bit, as one uninterrupted run (no
    record lost or counted twice), and the same alerts (redelivered ones have the same alert_id)."""
    from drill_util import ROOT, clean_stream, fuzzed, kill_9_when_checkpoint_moves, run_cli
    from test_drills import write
    clean = clean_stream(200_000, seed=41)
    fuzz, _ = fuzzed(clean, 5_000, seed=42, big=1)
    write(tmp_path / "in.jsonl", fuzz)

    def common(tag: str) -> list[str]:
        return ["--rewards-file", str(tmp_path / "in.jsonl"), "--forever", "--log-level", "warning",
                "--alerts-file", str(tmp_path / f"alerts-{tag}.jsonl"), "--checkpoint", f"dir:{tmp_path / tag}"]

    p = run_cli([*common("ref"), "--summary-json", str(tmp_path / "ref.json")])
    assert p.returncode == 0, p.stderr[-3000:]
    killed = kill_9_when_checkpoint_moves([*common("ck"), "--checkpoint-interval", "0.05", "--fsync"],
                                          tmp_path / "ck" / "MANIFEST", lives=6, spread=4, cwd=ROOT)
    assert killed >= 3
    p = run_cli([*common("ck"), "--summary-json", str(tmp_path / "got.json")])
    assert p.returncode == 0, p.stderr[-3000:]
    ref, got = (json.loads((tmp_path / f"{t}.json").read_text()) for t in ("ref", "got"))
    assert (got["records"], got["invalid"], got["flagged"]) == (ref["records"], ref["invalid"], ref["flagged"])
    a, b = (ChunkedCheckpointStore(tmp_path / t).load() for t in ("ref", "ck"))
    assert a is not None and b is not None and a["scheduler"]["monitor"]["keys"]["format"] == "key-rows"
    assert b["scheduler"]["monitor"] == a["scheduler"]["monitor"]
    ids = [{json.loads(x)["alert_id"] for x in (tmp_path / f"alerts-{t}.jsonl").read_text().splitlines()}
           for t in ("ref", "ck")]
    assert ids[0] == ids[1] and ids[0]

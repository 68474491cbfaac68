"""An idle daemon does not write the same checkpoint again (:mod:`streamarms.last_save`): what is left
unwritten is exactly what the store already holds, and a restart from it resumes as if it had been
written."""

from __future__ import annotations

import os

import pytest
from test_runtime_daemon import fill, outcome, start

import streamarms.last_save as last_save
from streamarms.background_checkpoint import BackgroundCheckpointDaemon
from streamarms.checkpoint import FileCheckpointStore, file_mark
from streamarms.chunked_checkpoint import ChunkedCheckpointStore
from streamarms.connectors.memory import MemoryBroker
from streamarms.metrics import Metrics
from streamarms.runtime import FINISHED


def _handle(daemon, batches: int) -> None:
    """``batches`` batches of records handled as ``Daemon._loop`` handles them."""
    for _ in range(batches):
        if daemon.scheduler.phase == FINISHED:
            return
        batch = []
        for _ in range(100):  # the merge releases records once every partition has some
            batch = batch or daemon.source.poll(0.0)
        n, refused = daemon.scheduler.offer_batch([r.key for r in batch], [r.value for r in batch],
                                                  [r.timestamp for r in batch], daemon.clock)
        for i, bad in refused:
            daemon._dead_letter(batch[i], bad)
        if n < len(batch):
            daemon.source.rollback(n)


def _daemon(store, batches: int, max_records: int = 200, quiet: int = 0):
    """A daemon checkpointing to ``store`` that has handled ``batches`` batches, then checkpointed ``quiet``
    times with no record between."""
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=2, per_key=300, seed=3)
    daemon, sched = start(broker, store, max_records=max_records)
    _handle(daemon, batches)
    for _ in range(quiet):
        daemon.checkpoint()
    return daemon, sched


@pytest.mark.parametrize("make", [lambda p: FileCheckpointStore(p / "c.ckpt", fsync=False),
                                  lambda p: ChunkedCheckpointStore(p / "dir", block=8, min_list=8, fsync=False)],
                         ids=["file", "dir"])
def test_an_idle_daemon_writes_its_unchanged_checkpoint_once(tmp_path, make):
    store = make(tmp_path)
    daemon, sched = _daemon(store, batches=5)
    daemon.metrics = metrics = Metrics()
    daemon.checkpoint()  # records were handled since the start: written
    daemon.checkpoint()  # none since: the first quiet one is written (its digest is what later ones compare with)
    mark, saves = store.saved_mark(), store.saves
    for _ in range(5):
        daemon.checkpoint()
    assert store.saved_mark() == mark and store.saves == saves  # nothing written
    assert metrics.checkpoints == 7 and metrics.checkpoints_unchanged == 5
    assert "streamarms_checkpoints_unchanged_total 5.0" in metrics.render().decode()
    assert store.load()["source"] == daemon.source.state()  # what is held is this moment's checkpoint
    _handle(daemon, 1)  # a record: written again
    daemon.checkpoint()
    assert store.saves == saves + 1 and store.load()["scheduler"]["counters"]["records"] == sched.records


def test_a_change_without_records_is_written(tmp_path):
    """The quiet counts only decide whether the digest is worth computing: a change that no record made
    (here the stream clock moved, as ``tick``'s transitions change the state without records) is written."""
    store = FileCheckpointStore(tmp_path / "c.ckpt", fsync=False)
    daemon, sched = _daemon(store, batches=3, quiet=2)
    saves, records = store.saves, sched.records
    daemon.clock.advance(daemon.clock() + 60.0)
    daemon.checkpoint()
    assert sched.records == records and store.saves == saves + 1
    assert store.load()["scheduler"]["now"] == daemon.clock()


@pytest.mark.parametrize("how", ["removed", "replaced", "touched"])
def test_a_checkpoint_file_changed_behind_the_daemon_is_written_again(tmp_path, how):
    store = FileCheckpointStore(tmp_path / "c.ckpt", fsync=False)
    daemon, _ = _daemon(store, batches=3, quiet=2)
    saves, held = store.saves, store.load()
    if how == "removed":
        os.remove(store.path)
    elif how == "replaced":
        with open(store.path + ".other", "wb") as f:
            f.write(open(store.path, "rb").read())
        os.replace(store.path + ".other", store.path)
    else:
        st = os.stat(store.path)
        os.utime(store.path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    daemon.checkpoint()
    assert store.saves == saves + 1
    assert {k: v for k, v in store.load().items() if k != "saved_at"} == \
        {k: v for k, v in held.items() if k != "saved_at"}


def test_a_busy_daemon_computes_no_digest(tmp_path, monkeypatch):
    """The digest is one more encoding of the document: never paid while records come."""
    calls = []
    real = last_save.document_digest
    monkeypatch.setattr(last_save, "document_digest", lambda doc: calls.append(1) or real(doc))
    store = FileCheckpointStore(tmp_path / "c.ckpt", fsync=False)
    daemon, _ = _daemon(store, batches=0, max_records=50)
    for _ in range(8):
        _handle(daemon, 1)
        daemon.checkpoint()
    assert calls == [] and store.saves == 8


def test_a_store_that_cannot_tell_is_always_written(tmp_path):
    class Remembering(FileCheckpointStore):
        def saved_mark(self):
            return None

    store = Remembering(tmp_path / "c.ckpt", fsync=False)
    _daemon(store, batches=2, quiet=4)
    assert store.saves == 4


def test_crash_after_unwritten_checkpoints_then_restart_equals_uninterrupted(tmp_path):
    """Idle checkpoints left unwritten between the records, a crash, a restart: the outcome of a run with
    no crash (the checkpoint the store held was this moment's)."""
    broker = MemoryBroker()
    fill(broker, "rewards", partitions=3, per_key=6000, seed=1, bad_every=997)
    d0, s0 = start(broker, FileCheckpointStore(tmp_path / "u.ckpt", fsync=False), group="u")
    assert d0.run() == 0
    ref = outcome(s0)

    store = FileCheckpointStore(tmp_path / "c.ckpt", fsync=False)
    d1, s1 = start(broker, store, group="c", alerts_topic="alerts-c", dlq="dlq-c")
    d1.metrics = Metrics()
    for _ in range(40):
        _handle(d1, 1)
        d1.checkpoint()
        for _ in range(3):  # quiet turns
            d1.checkpoint()
    assert d1.metrics.checkpoints_unchanged >= 2 * 40  # the first quiet one is written, the others not
    d2, s2 = start(broker, store, group="c", alerts_topic="alerts-c", dlq="dlq-c")  # d1 is dropped: a crash
    assert d2.run() == 0
    assert outcome(s2) == ref
    assert {a["alert_id"] for a in broker.values("alerts-c")} == {a["alert_id"] for a in broker.values("alerts")}


def test_background_checkpoints_of_an_idle_daemon_are_not_written(tmp_path):
    store = FileCheckpointStore(tmp_path / "c.ckpt", fsync=False)
    d, sched = _daemon(store, batches=0)
    daemon = BackgroundCheckpointDaemon(sched, d.source, clock=d.clock, alert_sink=d.alert_sink,
                                        dead_letter_sink=d.dead_letter_sink, checkpoint=store,
                                        checkpoint_interval=0.0, run_info=d.run_info, handle_signals=False,
                                        metrics=Metrics())
    _handle(daemon, 3)
    for _ in range(2):
        daemon.checkpoint()
        assert daemon._reap(block=True)
    mark, saved = file_mark(store.path), daemon.saved
    assert saved == 2
    for _ in range(4):
        daemon.checkpoint()
        assert daemon._reap(block=True)
    assert file_mark(store.path) == mark and daemon.saved == saved
    assert daemon.metrics.checkpoints == 6 and daemon.metrics.checkpoints_unchanged == 4
    _handle(daemon, 1)
    daemon.checkpoint()
    assert daemon._reap(block=True)
    assert daemon.saved == saved + 1 and store.load()["scheduler"]["counters"]["records"] == sched.records

"""The daemon: source -> scheduler -> policy -> sinks, with checkpoints, metrics and clean shutdown.

It owns the main loop and nothing else: where records come from (Kafka, a JSONL file, memory) and
where alerts, requests and dead letters go are objects handed to it (``streamarms.connectors``); the
core never imports the connectors.

The scheduler is an episode :class:`~streamarms.runtime.scheduler.Scheduler` or, in the continuous mode,
a :class:`~streamarms.runtime.continuous.ContinuousRunner` (no episodes: every record feeds one monitor);
both present the same facade (``offer_batch``, ``tick``, ``snapshot``, ``stats``...), so the loop and the
checkpoint rule below are the same for both.

The loop, per batch of records from ``source.poll``:

1. the batch, in one pass (:meth:`Scheduler.offer_batch`, which decides exactly as
   ``scheduler.offer(key, value)`` record by record, the stream clock advancing to each record's
   timestamp); a refused record goes to the dead-letter sink with its reason; the last episode's end
   stops the batch after the record that ended it (the rest is rolled back: read again by the next
   run), a stop request (SIGTERM/SIGINT) is honoured *after the batch in hand* -- the batch is the
   unit a checkpoint and a rollback reason about; one during the exit's checkpoint waits for it;
2. ``scheduler.tick()`` (time-based transitions without records);
3. every ``checkpoint_interval`` seconds, after an episode ends, and at exit: **checkpoint** =
   flush the sinks (so every alert the saved state has emitted is delivered), save scheduler state +
   source positions in one document (durable when ``save`` returns; not written again when the store
   already holds that very document, :mod:`streamarms.last_save`), then commit the positions to the
   consumer group. A crash at any point therefore resumes from a state and positions that belong
   together: no record is lost, none counted twice. With a ``transaction`` (exactly-once, e.g.
   ``streamarms.connectors.kafka_checkpoint.KafkaTransaction``) the sinks' records, the checkpoint and the
   positions are one transaction instead: a crash also publishes no alert twice. A sink that cannot
   deliver in time (:class:`~streamarms.errors.SinkUnavailable`: its broker went away, and the source
   has not noticed yet) postpones the checkpoint, with a warning; at exit it fails the run (exit 1:
   the restart resumes from the last checkpoint, nothing lost).

The source and the sinks satisfy the contracts of :mod:`streamarms.runtime.contracts`
(:class:`~streamarms.runtime.contracts.RewardSource`, ``AlertSink``, ``RequestSink``, ``DeadLetterSink``);
a source may also offer ``exhausted``, ``failure`` (why an exhausted source could not go on: the loop
stops with it as its reason), ``connected`` (``False`` while the broker is unreachable: the loop
keeps turning, checkpoints wait for the broker) and ``lag()``.

**Progress.** Once a second the loop notes whether it made progress: records handled, or nothing to
read (lag 0, or no ``lag()``), or the broker unreachable (an outage is ridden out, not a stall).
:meth:`Daemon.health` (``/livez``) fails when the loop has not turned for ``stall_seconds`` *or* has
read nothing for ``stall_seconds`` while records wait (lag > 0) -- the silent stall of a consumer whose
positions point nowhere.

>>> from streamarms.runtime.scheduler import Scheduler, SchedulerConfig, EventClock, _ExamplePolicy
>>> from collections import namedtuple
>>> Rec = namedtuple("Rec", "topic partition offset timestamp key value")
>>> class ListSource:
...     def __init__(self, recs): self.recs, self.pos, self.exhausted = recs, 0, False
...     def poll(self, timeout): b = self.recs[self.pos:self.pos + 50]; self.pos += len(b); self.exhausted = not b; return b
...     def state(self): return {"t:0": [self.pos, None]}
...     def rollback(self, n): pass
...     def commit(self, state): pass
...     def close(self): pass
>>> recs = [Rec("t", 0, i, 1000 * i, b"abcd"[i % 4:i % 4 + 1], b'{"reward": %d}' % (i % 4 == 3)) for i in range(400)]
>>> clock = EventClock()
>>> alerts = []
>>> s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=clock, emit_alert=alerts.append,
...               config=SchedulerConfig(discovery_records=8, max_episodes=1))
>>> Daemon(s, ListSource(recs), clock=clock, handle_signals=False).run()
0
>>> [a["arm"] for a in alerts], s.finished
(['d'], True)
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
import time
from collections.abc import Callable
from time import perf_counter
from typing import Any

from .checkpoint import CheckpointError, CheckpointStore, check_blocks
from .errors import SinkUnavailable
from .last_save import LastSave
from .loop_calls import LoopCalls
from .metrics import Metrics
from .runtime import FINISHED, EventClock, InvalidRecord, Scheduler
from .runtime.continuous import ContinuousRunner
from .runtime.contracts import AlertSink, DeadLetterSink, RequestSink, RewardSource

__all__ = ["Daemon", "restore_checkpoint", "checkpoint_document", "sink_marks", "rewind_sinks"]

log = logging.getLogger("streamarms.daemon")

#: the cyclic collector's first threshold while the daemon runs (restored after ``run``). A poll batch
#: keeps a few thousand container objects alive (records, parsed values) until it is handled, so with
#: Python's default of 700 the young generation is collected several times per batch, each time
#: traversing the batch in hand and promoting it, and the full collections that follow traverse the
#: heap: ~5% of the process time of a 20-key JSONL replay while detecting (gc.callbacks, 300k records).
#: The records die by reference counting; the daemon makes almost no reference cycles.
GC_GEN0 = 20_000

#: every how many records the processing latency is observed


def checkpoint_document(run: dict[str, Any], scheduler: Scheduler | ContinuousRunner, source_state: dict[str, Any],
                        sinks: dict[str, Any] | None = None) -> dict[str, Any]:
    """The document saved at a checkpoint: what run it is, the source positions, the scheduler state, and
    the file sinks' sizes (:func:`sink_marks`)."""
    doc = {"run": run, "saved_at": time.time(), "source": source_state, "scheduler": scheduler.snapshot()}
    if sinks:
        doc["sinks"] = sinks
    return doc


def sink_marks(sinks: list[Any]) -> dict[str, Any]:
    """The sinks' ``mark()`` by path, after their flush: where each file ends at this checkpoint."""
    out = {}
    for sink in sinks:
        mark = sink.mark() if callable(getattr(sink, "mark", None)) else None
        if mark is not None:
            out[sink.path] = mark
    return out


def rewind_sinks(doc: dict[str, Any] | None, sinks: list[Any]) -> None:
    """A restart from ``doc``: cut each file sink back to where the checkpoint saw it end (what was written
    after is written again by the records read again: exactly once, not at least once)."""
    marks = (doc or {}).get("sinks") or {}
    for sink in sinks:
        if sink is None or getattr(sink, "path", None) not in marks or not callable(getattr(sink, "rewind", None)):
            continue
        cut = sink.rewind(marks[sink.path])
        if cut is None:
            log.warning("%s is not the file the checkpoint saw (shorter, or other bytes before its size: rotated or "
                        "replaced?): left as it is, so lines written after the checkpoint may appear twice",
                        sink.path)
        elif cut:
            log.info("%s: %d bytes written after the checkpoint removed (the records read again write them again)",
                     sink.path, cut)


def restore_checkpoint(store: CheckpointStore, run: dict[str, Any],
                       compare: tuple[str, ...] = ("mode", "policy", "topics")) -> dict[str, Any] | None:
    """Load the checkpoint of ``store`` if any; refuse one written by an incompatible run: against another
    Kafka cluster, with another of ``compare`` (the mode first), or with other ``run["settings"]`` -- the
    settings that define the statistics, by name (``streamarms run``: by flag, :mod:`streamarms.cli.restart`),
    every one that differs named with both values. A setting the checkpoint does not record (written by an
    older version) is not compared.

    Returns the document (``doc["scheduler"]`` for :meth:`Scheduler.restore`, ``doc["source"]`` for the
    source's ``resume``) or ``None``.
    """
    doc = store.load_streamed()  # a file store: big arrays parsed as the restore iterates them (issue 13)
    if doc is None:
        return None
    check_blocks(doc, store.describe(), required=("scheduler", "source"))
    prev = doc.get("run", {})
    if prev.get("cluster_id") and run.get("cluster_id") and prev["cluster_id"] != run["cluster_id"]:
        raise CheckpointError(
            f"the checkpoint in {store.describe()} was written against Kafka cluster {prev['cluster_id']!r}, this "
            f"broker is cluster {run['cluster_id']!r}: its positions mean nothing here; use another --checkpoint "
            "(or --group-id) to start afresh")
    for k in sorted(compare, key=lambda k: k != "mode"):  # another mode's settings are not comparable
        if k in run and prev.get(k) != run.get(k):
            was, now = ((f"reading {prev.get(k)!r} (--rewards-topic or --rewards-file, as given)", f"reads {run.get(k)!r}")
                        if k == "topics" else (f"with {k}={prev.get(k)!r}", f"has {k}={run.get(k)!r}"))
            raise CheckpointError(
                f"the checkpoint in {store.describe()} was written by a run {was}, this run {now}; use the "
                "matching settings, or another --checkpoint to start afresh")
        if k == "mode":
            _refuse_other_settings(store, prev.get("settings"), run.get("settings"))
    return doc


#: a setting whose value follows another's unless given (each policy has its own passive feed): not named
#: when that one differs too -- the run that changed ``--policy`` did not set ``--passive-feed``
_FOLLOWS = {"--passive-feed": "--policy"}


def _refuse_other_settings(store: CheckpointStore, prev: Any, now: Any) -> None:
    """:class:`CheckpointError` naming each setting of ``now`` whose value in ``prev`` differs (module
    docstring of :func:`restore_checkpoint`); nothing to compare when either records none."""
    if not isinstance(prev, dict) or not isinstance(now, dict):
        return
    changed = {name for name, v in now.items() if name in prev and prev[name] != v}
    differ = [f"{name} {_shown(prev[name])} (this run: {_shown(now[name])})" for name in now
              if name in changed and _FOLLOWS.get(name) not in changed]
    if differ:
        raise CheckpointError(
            f"the checkpoint in {store.describe()} was written with {', '.join(differ)}: these define the statistics "
            "(the state in the checkpoint was built under them, and the alerts state them); run with the checkpoint's "
            "settings" + (f" (--policy {prev['--policy']} resumes it; without --policy a run takes the default)"
                          if "--policy" in changed else "") +
            ", or start with a fresh checkpoint (another --checkpoint, or --checkpoint none)")


def _shown(value: Any, most: int = 8) -> str:
    """A setting's value in a message: ``unset`` for ``None``, a long list cut after ``most`` items.

    >>> _shown(None), _shown(0.1), _shown(list("abcdefghij"), 3)
    ('unset', '0.1', "['a', 'b', 'c', ... (10 in all)]")
    """
    if value is None:
        return "unset"
    if isinstance(value, (str, dict)) or not hasattr(value, "__len__"):
        return repr(value)
    items = list(value)  # a list, or the LazyArray of a long one
    return repr(items) if len(items) <= most else repr(items[:most])[:-1] + f", ... ({len(items)} in all)]"


class Daemon:
    """Runs the main loop (module docstring). ``run()`` returns the process exit code (0 = clean)."""

    def __init__(self, scheduler: Scheduler | ContinuousRunner, source: RewardSource, *, clock: EventClock | None = None,
                 alert_sink: AlertSink | None = None, request_sink: RequestSink | None = None,
                 dead_letter_sink: DeadLetterSink | None = None,
                 checkpoint: CheckpointStore | None = None, checkpoint_interval: float = 5.0,
                 metrics: Metrics | None = None, run_info: dict[str, Any] | None = None,
                 poll_timeout: float = 0.2, stop_when_exhausted: bool = True,
                 handle_signals: bool = True, wall: Callable[[], float] = time.monotonic,
                 stall_seconds: float = 30.0, transaction: Any | None = None,
                 on_turn: Callable[[], None] | None = None) -> None:
        self.scheduler = scheduler
        self.source = source
        self.clock = clock
        self.alert_sink = alert_sink
        self.request_sink = request_sink
        self.dead_letter_sink = dead_letter_sink
        self.checkpoint_store = checkpoint
        self.checkpoint_interval = checkpoint_interval
        #: exactly-once (:meth:`_checkpoint_in_transaction`): an object whose ``commit(source_state)``
        #: commits the sinks' records, the checkpoint record and the consumed positions as one transaction
        self.transaction = transaction
        #: called every loop turn after ``tick`` (a group member reads its group's board:
        #: :class:`streamarms.group_member.GroupMember`)
        self.on_turn = on_turn
        self.metrics = metrics
        self.run_info = run_info or {}
        self.poll_timeout = poll_timeout
        self.stop_when_exhausted = stop_when_exhausted
        self.handle_signals = handle_signals
        self.wall = wall
        self.stop_reason: str | None = None
        self.heartbeat = wall()
        self.stall_seconds = stall_seconds
        #: last time the loop made progress (module docstring), and the lag then
        self.progress_at = self.heartbeat
        self.lag_records = 0
        self.dead_letters = 0
        self._interrupt = False
        self._stop_requested = False
        self._finishing = False  # the loop is over: the exit's checkpoint and close run
        self._checkpoint_now = False
        self._dl_warned = 0
        #: what the last checkpoint save wrote: an unchanged checkpoint is not written again
        self.last_save = LastSave()
        #: questions other threads ask the loop (the episode modes' ``/explain``): answered once a turn
        self.calls = LoopCalls()
        self._user_episode_end = scheduler.on_episode_end
        scheduler.on_episode_end = self._episode_ended
        if metrics is not None:
            metrics.bind(scheduler.stats_view)

    # -- control -----------------------------------------------------------------------------
    def stop(self, reason: str = "stop requested") -> None:
        """Ask the loop to stop after the record in hand (safe from signal handlers and other threads)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self._stop_requested = True
        self._interrupt = True

    def _on_signal(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self._stop_requested or self._finishing:
            log.warning("%s %s: still finishing the checkpoint, please wait", name,
                        "again" if self._stop_requested else "during the exit")
            return
        log.info("%s received: finishing the record in hand, then checkpoint and exit", name)
        self.stop(name)

    def _episode_ended(self, summary: dict[str, Any]) -> None:
        self._checkpoint_now = True
        if self.metrics is not None:
            self.metrics.episode_duration.observe(max(0.0, summary["duration"]))
        if self.scheduler.phase == FINISHED:
            self._interrupt = True
            if self.stop_reason is None:
                self.stop_reason = "max episodes reached"
        if self._user_episode_end is not None:
            self._user_episode_end(summary)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """For ``/livez``: the loop has turned, and made progress, within ``stall_seconds``."""
        now = self.wall()
        age = now - self.heartbeat
        idle = now - self.progress_at
        s = self.scheduler
        ok = age < self.stall_seconds and idle < self.stall_seconds
        info = {"status": "ok" if ok else "stalled", "loop_age_seconds": round(age, 3), "phase": s.phase,
                "episode": s.episode, "records": s.records, "samples": s.used,
                "no_progress_seconds": round(idle, 3), "lag_records": self.lag_records}
        if idle >= self.stall_seconds:
            info["reason"] = f"no record handled for {idle:.0f} s while {self.lag_records} records wait"
        return ok, info

    def _note_progress(self, now: float, records_before: int) -> None:
        source = self.source
        lag_fn = getattr(source, "lag", None)
        lag = 0
        if callable(lag_fn):
            try:
                lag = sum(lag_fn().values())
            except Exception:  # lag is advisory
                lag = 0
        self.lag_records = lag
        if self.scheduler.records != records_before or lag == 0 or getattr(source, "connected", True) is False:
            self.progress_at = now

    # -- main loop ---------------------------------------------------------------------------
    def run(self) -> int:
        old_handlers: dict[signal.Signals, Any] = {}
        if self.handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old_handlers[sig] = signal.signal(sig, self._on_signal)
        clean = False
        gc_before = gc.get_threshold()
        gc.set_threshold(max(gc_before[0], GC_GEN0), *gc_before[1:])
        try:
            self._loop()
            clean = True
        finally:
            gc.set_threshold(*gc_before)
            # our handlers stay until the exit's checkpoint and close are done: a SIGTERM that came
            # during them (the loop ended on its own, e.g. the last episode) would otherwise kill the
            # process half-way through the checkpoint -- with --exactly-once, inside its transaction
            self._finishing = True
            try:
                if clean:
                    self.checkpoint()
                self._close()
            finally:
                for sig, h in old_handlers.items():
                    signal.signal(sig, h)
        return 0

    def _loop(self) -> None:
        sched = self.scheduler
        source = self.source
        offer_batch = sched.offer_batch
        # records with the value already parsed (``parsed``: the JSONL source), for the episode scheduler and the
        # continuous monitor
        offer_parsed = (sched.offer_batch if getattr(source, "decoded_values", False) is True
                        and isinstance(sched, Scheduler | ContinuousRunner) else None)
        clock = self.clock
        wall = self.wall
        metrics = self.metrics
        observe = metrics.processing_latency.observe if metrics is not None else None
        dead_letter = self._dead_letter
        calls = self.calls
        last_ckpt = wall()
        last_states = 0.0
        last_progress = 0.0
        records_then = sched.records
        if sched.phase == FINISHED:
            self.stop_reason = self.stop_reason or "max episodes reached (restored from checkpoint)"
            return
        while not self._interrupt:
            batch = source.poll(self.poll_timeout)
            t0 = perf_counter()
            n = 0
            if batch:  # one batch, one pass (Scheduler.offer_batch: the same as offer record by record)
                if offer_parsed is not None:  # the source parsed each value already: parse it once
                    n, refused = offer_parsed([r.key for r in batch], [r.value for r in batch],
                                              [r.timestamp for r in batch] if clock is not None else None, clock,
                                              [r.parsed for r in batch])  # type: ignore[attr-defined]
                else:
                    n, refused = offer_batch([r.key for r in batch], [r.value for r in batch],
                                             [r.timestamp for r in batch] if clock is not None else None, clock)
                for i, bad in refused:
                    dead_letter(batch[i], bad)
                if observe is not None:
                    observe(perf_counter() - t0)
            if n < len(batch):
                source.rollback(n)
                break
            if not self._interrupt:
                sched.tick()
                if self.on_turn is not None:
                    self.on_turn()
            if calls.waiting:  # another thread's question (/explain): answered between two batches
                calls.answer()
            now = wall()
            self.heartbeat = now
            if now - last_progress >= 1.0:
                self._note_progress(now, records_then)
                last_progress = now
                records_then = sched.records
            if metrics is not None and now - last_states >= 1.0:
                metrics.set_arm_states(sched.arm_states())
                metrics.refresh()
                last_states = now
            if (self._checkpoint_now or now - last_ckpt >= self.checkpoint_interval) \
                    and getattr(source, "connected", True) is not False:  # an outage: checkpoint once back
                if not self._interrupt:
                    try:
                        self.checkpoint()
                    except SinkUnavailable as e:  # an outage the source has not noticed yet: try again later
                        log.warning("checkpoint postponed: %s", e)
                last_ckpt = now
            if not batch and self.stop_when_exhausted and getattr(source, "exhausted", False):
                # a source that cannot go on says why (a followed file replaced: ``failure``)
                self.stop_reason = self.stop_reason or getattr(source, "failure", None) or "input exhausted"
                break
        if metrics is not None:
            metrics.set_arm_states(sched.arm_states())
            metrics.refresh()

    def _dead_letter(self, rec: Any, bad: InvalidRecord) -> None:
        self.dead_letters += 1
        if self.metrics is not None:
            self.metrics.dead_letters = self.dead_letters
        if self.dead_letter_sink is not None:
            self.dead_letter_sink.send(rec, bad.reason, bad.detail)
        elif self._dl_warned < 10:
            self._dl_warned += 1
            log.warning("refused record %s:%s:%s (%s); no dead-letter sink configured%s", rec.topic, rec.partition,
                        rec.offset, bad, "" if self._dl_warned < 10 else " (further refusals not logged)")

    # -- checkpoint --------------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Flush sinks, save state + positions durably, then commit the positions."""
        self._checkpoint_now = False
        if self.transaction is not None:
            self._checkpoint_in_transaction()
            return
        for sink in self._sinks():
            sink.flush()
        state = self.source.state()
        store = self.checkpoint_store
        if store is not None:
            doc = checkpoint_document(self.run_info, self.scheduler, state, sink_marks(self._sinks()))
            counts = self.quiet_counts()
            held, digest = self.last_save.holds(store, doc, counts)
            if not held:
                store.save(doc)
                self.last_save.saved(store, counts, digest)
            if self.metrics is not None:
                self.metrics.checkpointed(unchanged=held)
        self.source.commit(state)

    def quiet_counts(self) -> tuple[int, int]:
        """Records handled and dead letters so far: unchanged since the last save, the checkpoint may be the
        same one (:mod:`streamarms.last_save`)."""
        return self.scheduler.records, self.dead_letters

    def _checkpoint_in_transaction(self) -> None:
        """Exactly-once checkpoint: the alerts, requests and dead letters sent since the last one (already
        in the open transaction), the checkpoint document (``save`` joins the transaction) and the
        consumed positions commit together, or -- a crash before ``commit`` -- none of them does, and
        the restart resumes from the previous checkpoint, whose records are all committed."""
        transaction = self.transaction
        assert transaction is not None  # only called when the daemon was given one
        state = self.source.state()
        if self.checkpoint_store is not None:
            self.checkpoint_store.save(checkpoint_document(self.run_info, self.scheduler, state))
        transaction.commit(state)
        if self.metrics is not None and self.checkpoint_store is not None:
            self.metrics.checkpointed()

    def _sinks(self) -> list[Any]:
        out: list[Any] = []
        for sink in (self.alert_sink, self.request_sink, self.dead_letter_sink):
            if sink is not None and all(sink is not o for o in out):
                out.append(sink)
        return out

    def _close(self) -> None:
        for obj in [self.source, *self._sinks()]:
            try:
                obj.close()
            except Exception as e:  # closing must not hide the real outcome
                log.warning("closing %s failed: %s", type(obj).__name__, e)

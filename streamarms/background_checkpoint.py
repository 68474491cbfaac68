"""Checkpoints that do not stall the loop: :class:`BackgroundCheckpointDaemon` saves in a forked child.

With a million keys, building the checkpoint document (the scheduler's snapshot) and encoding it take
seconds of Python work; done in the loop, they stop record handling for that long. This daemon forks
instead (the Redis ``BGSAVE`` pattern): the child holds a copy-on-write image of the process as it was
at the fork, builds the document from it, saves it and exits; the parent goes on handling records at
once. The loop's stall is the ``fork`` itself (copying the page tables: tens of milliseconds for a
gigabyte).

**Why no record is lost or counted twice.** The checkpoint rule of :mod:`streamarms.daemon` is kept,
only spread over time: (1) the sinks are flushed and the source positions read *before* the fork, so
the child's document and those positions belong together (the same moment) and every alert that state
emitted is delivered; (2) the child makes the document durable; (3) only when the parent sees the child
exit with status 0 does it commit those positions to the consumer group. A crash anywhere resumes from
the last durable document and its own positions. One child at a time: a checkpoint falls due while one
is still saving is skipped (the interval stretches, the rule holds). The final checkpoint (clean stop)
waits for the child and then saves in the foreground, so a clean exit leaves the latest state.

The store must be ``fork_safe`` (plain files, e.g. :class:`~streamarms.chunked_checkpoint.
ChunkedCheckpointStore`, :class:`~streamarms.checkpoint.FileCheckpointStore`): a Kafka producer's
sockets and threads do not survive a fork. With a transaction (exactly-once) the daemon checkpoints in
the foreground, as :class:`~streamarms.daemon.Daemon` does. POSIX only (``os.fork``).

>>> import tempfile, os
>>> from streamarms.checkpoint import FileCheckpointStore
>>> from streamarms.runtime.scheduler import Scheduler, SchedulerConfig, EventClock, _ExamplePolicy
>>> from collections import namedtuple
>>> Rec = namedtuple("Rec", "topic partition offset timestamp key value")
>>> class ListSource:
...     def __init__(self, recs): self.recs, self.pos, self.exhausted, self.committed = recs, 0, False, []
...     def poll(self, timeout): b = self.recs[self.pos:self.pos + 50]; self.pos += len(b); self.exhausted = not b; return b
...     def state(self): return {"t:0": [self.pos, None]}
...     def rollback(self, n): self.pos -= n
...     def commit(self, state): self.committed.append(state["t:0"][0])
...     def close(self): pass
>>> recs = [Rec("t", 0, i, 1000 * i, b"abcd"[i % 4:i % 4 + 1], b'{"reward": %d}' % (i % 4 == 3)) for i in range(400)]
>>> clock = EventClock()
>>> s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=clock, config=SchedulerConfig(discovery_records=8))
>>> store = FileCheckpointStore(os.path.join(tempfile.mkdtemp(), "c.json"), fsync=False)
>>> src = ListSource(recs)
>>> BackgroundCheckpointDaemon(s, src, clock=clock, checkpoint=store, checkpoint_interval=0.0,
...                            handle_signals=False).run()
0
>>> store.load()["source"], src.committed[-1]
({'t:0': [400, None]}, 400)
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from .checkpoint import CheckpointError
from .daemon import Daemon, checkpoint_document, sink_marks

__all__ = ["BackgroundCheckpointDaemon"]

log = logging.getLogger("streamarms.daemon")


class BackgroundCheckpointDaemon(Daemon):
    """A :class:`~streamarms.daemon.Daemon` whose periodic checkpoints are saved by a forked child
    (module docstring). :attr:`stalls` lists the loop's pause (seconds) of each background checkpoint,
    :attr:`saved` the number of background saves completed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        store = self.checkpoint_store
        if store is not None and not getattr(store, "fork_safe", isinstance(store, _file_store_types())):
            raise ValueError(f"background checkpoints need a fork-safe store (files), not {store.describe()}")
        self._child: _Child | None = None
        self._final = False
        self.stalls: list[float] = []
        self.saved = 0

    def _loop(self) -> None:
        try:
            super()._loop()
        finally:
            self._final = True  # run() checkpoints once more, in the foreground

    def checkpoint(self) -> None:
        if self.transaction is not None or self.checkpoint_store is None:
            return super().checkpoint()
        if self._final:
            self._reap(block=True)
            return super().checkpoint()
        self._checkpoint_now = False
        if self._child is not None and not self._reap(block=False):
            return  # the previous save is still running: skip this one
        t0 = time.perf_counter()
        for sink in self._sinks():
            sink.flush()
        state = self.source.state()
        marks = sink_marks(self._sinks())
        counts = self.quiet_counts()
        said, tell = os.pipe()  # the child says whether it wrote, and the document's digest
        try:
            pid = os.fork()
        except OSError:
            os.close(said)
            os.close(tell)
            raise
        if pid == 0:  # the child: save the image of this moment, then leave without running any cleanup
            code = 1
            try:
                _die_with_parent()
                os.close(said)
                store = self.checkpoint_store
                assert store is not None
                doc = checkpoint_document(self.run_info, self.scheduler, state, marks)
                held, digest = self.last_save.holds(store, doc, counts)
                if not held:
                    store.save(doc)
                os.write(tell, f"{'held' if held else 'saved'} {digest or '-'}".encode())
                code = 0
            except BaseException as e:  # noqa: BLE001 -- reported by the exit status; say why on stderr
                os.write(2, f"background checkpoint failed: {type(e).__name__}: {e}\n".encode())
            finally:
                os._exit(code)
        os.close(tell)
        self._child = _Child(pid, state, counts, said)
        self.stalls.append(time.perf_counter() - t0)

    def _reap(self, block: bool) -> bool:
        """Whether no child is saving any more; commits its positions once it has saved."""
        child = self._child
        if child is None:
            return True
        done, status = os.waitpid(child.pid, 0 if block else os.WNOHANG)
        if done == 0:
            return False
        self._child = None
        said = child.said()
        store = self.checkpoint_store
        assert store is not None  # a child is only forked to save to it
        if os.waitstatus_to_exitcode(status) != 0 or said is None:
            raise CheckpointError(f"the background checkpoint to {store.describe()} failed "
                                  f"(child exit {os.waitstatus_to_exitcode(status)})")
        held, digest = said
        if not held:
            self.saved += 1
            self.last_save.saved(store, child.counts, digest)
        if self.metrics is not None:
            self.metrics.checkpointed(unchanged=held)
        self.source.commit(child.state)
        return True

    def _close(self) -> None:
        if self._child is not None:  # an abnormal exit: let the running save finish, commit nothing
            try:
                os.waitpid(self._child.pid, 0)
            except ChildProcessError:
                pass
            self._child.said()  # closes the pipe
            self._child = None
        super()._close()


class _Child:
    """A forked save: its pid, the positions and quiet counts of its document, and the pipe it answers on."""

    def __init__(self, pid: int, state: dict[str, Any], counts: tuple[int, int], fd: int) -> None:
        self.pid, self.state, self.counts, self.fd = pid, state, counts, fd

    def said(self) -> tuple[bool, str | None] | None:
        """What the child wrote (once it has exited): whether the store held the document already, and its
        digest if computed; ``None`` if it wrote nothing (it failed). Closes the pipe."""
        try:
            words = os.read(self.fd, 256).decode().split()
        finally:
            os.close(self.fd)
        if len(words) != 2 or words[0] not in ("held", "saved"):
            return None
        return words[0] == "held", None if words[1] == "-" else words[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """Linux: the child gets SIGKILL when the daemon dies (kill -9 included), so a restarted daemon never
    races an orphaned save (the store's lock serialises them anyway; a killed save leaves the previous
    checkpoint in force)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _file_store_types() -> tuple[type, ...]:
    from .checkpoint import FileCheckpointStore
    return (FileCheckpointStore,)

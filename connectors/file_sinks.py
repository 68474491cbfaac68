"""JSON Lines files written: alerts, requests and dead letters appended one JSON value a line (``"-"``: standard
output), each line handed to the operating system as it is sent, made durable before a checkpoint, cut back to the
checkpoint's size at a restart (exactly once across a crash), and followed through a rotation of the file.

>>> import tempfile, os
>>> out = os.path.join(tempfile.mkdtemp(), "alerts.jsonl")
>>> sink = JsonlSink(out); sink.send({"arm": "a", "kind": "outlier"}); sink.close()
>>> open(out).read()
'{"arm":"a","kind":"outlier"}\\n'
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from typing import IO, Any

from streamarms.runtime.records import record_key

from .jsonl_lines import rotations_of, tail_digest

__all__ = ["JsonlSink", "JsonlDeadLetterSink"]

log = logging.getLogger("streamarms.files")


class JsonlSink:
    """Appends JSON values (alerts, requests), one per line; ``"-"`` writes to stdout.

    Each line is handed to the operating system as it is sent (a reader of the file, ``tail -f``, sees an
    alert at once, not at the next checkpoint); ``flush`` makes the lines durable (``fsync``) before the
    daemon checkpoints. **Exactly once across a crash:** the checkpoint saves the file's size (:meth:`mark`,
    after the flush); a restart from it first cuts the file back to that size (:meth:`rewind`) -- the lines
    after it were written after the checkpoint, and the records that made them are read again, so they
    are written again -- unless the file is no longer the one marked (shorter, or other bytes before the
    size: replaced, or rotated beyond what the next paragraph finds), which is left as it is (a warning:
    those lines may then repeat).
    A path that is not a regular file (``/dev/null``, ``/dev/stderr``, a named pipe, ``>(gzip > a.gz)``) is
    written as stdout is: no ``fsync`` (a device or pipe refuses it), no size to mark or cut back.

    **Rotation** (``logrotate``): a file renamed away (or removed) under the sink keeps the lines written to
    it, made durable, and the sink goes on with a new file at its path (:meth:`_follow`, before each alert,
    each flush and each mark: a checkpoint marks the file at the path, which is the one a restart opens).
    ``copytruncate`` needs nothing: the file is opened to append, so lines go on at its new end. A restart
    whose file was rotated since the checkpoint finds it as the newest rotation and cuts it back there, and
    the file at the path (begun after it) to nothing (:meth:`_rewind_rotated`).
    """

    def __init__(self, path: str, fsync: bool = True) -> None:
        self.path = path
        self.fsync = fsync
        self._f: IO[str] = sys.stdout if path == "-" else _append(path)
        #: a regular file: durable on flush, marked and rewound across restarts (else like stdout)
        self.regular = self._f is not sys.stdout and stat.S_ISREG(os.fstat(self._f.fileno()).st_mode)
        #: how many times the file was rotated away and a new one begun at the path
        self.rotations = 0
        #: lines sent and not yet written (a subclass that writes in blocks): written at the next flush or mark,
        #: to the file at the path then
        self._pending: list[str] = []
        self._held = 0  # (their characters)

    def send(self, value: dict[str, Any], payload: dict[str, Any] | None = None) -> None:
        # alerts: send(alert); requests: send(arm, payload)
        obj = payload if payload is not None else value
        self._follow()
        self._f.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._f.flush()

    def flush(self) -> None:
        self._follow()
        self._drain()
        if self.fsync and self.regular:
            os.fsync(self._f.fileno())

    def _drain(self) -> None:
        """Write the lines pending, and hand everything written to the operating system."""
        if self._pending:
            self._f.write("".join(self._pending))
            self._pending.clear()
            self._held = 0
        self._f.flush()

    def _follow(self) -> None:
        """A regular file no longer at the path (renamed away by a rotation, or removed): finish it (flushed,
        durable) and begin a new file at the path."""
        if not self.regular:
            return
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            now = None
        except OSError:  # (a permission, a mount: the next write says what is wrong)
            return
        mine = os.fstat(self._f.fileno())
        if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
            return
        self._f.flush()
        if self.fsync:
            os.fsync(self._f.fileno())
        self._f.close()
        self._f = _append(self.path)
        self.regular = stat.S_ISREG(os.fstat(self._f.fileno()).st_mode)
        self.rotations += 1
        log.info("%s was %s: its lines so far stay there; writing a new %s", self.path,
                 "removed" if now is None else "rotated (another file at its path now)", self.path)

    def mark(self) -> list[Any] | None:
        """``[size, digest of the bytes before it]`` of the file, flushed (``None`` for stdout and what is not
        a regular file)."""
        if not self.regular:
            return None
        self._follow()
        self._drain()
        size = os.fstat(self._f.fileno()).st_size
        return [size, self._digest(size)]

    def rewind(self, mark: Any) -> int | None:
        """Cut the file back to ``mark``'s size (a restart: the lines after it are made again); the bytes cut,
        or ``None`` when the file is not the one marked (left as it is)."""
        if not self.regular or not (isinstance(mark, list) and len(mark) == 2 and type(mark[0]) is int
                                         and mark[0] >= 0):
            return None
        self._f.flush()
        size = os.fstat(self._f.fileno()).st_size
        if size < mark[0] or self._digest(mark[0]) != mark[1]:
            return self._rewind_rotated(mark)
        if size > mark[0]:
            os.ftruncate(self._f.fileno(), mark[0])
        return size - mark[0]

    def _rewind_rotated(self, mark: list[Any]) -> int | None:
        """The file marked was rotated since the checkpoint (the run stopped, or crashed after a rotation):
        when it is the newest rotation (``F.1``, by the bytes before the mark), cut it back to the mark, and
        the file at the path -- begun after it, so all of it after the checkpoint -- to nothing. ``None`` when
        no such rotation (two rotations since, compressed, replaced): left as it is."""
        rotations = rotations_of(self.path)
        if not rotations or not mark[0]:
            return None
        q = rotations[-1][3]
        try:
            f = open(q, "r+b")
        except OSError:
            return None
        with f:
            size = os.fstat(f.fileno()).st_size
            if size < mark[0] or tail_digest(f.fileno(), mark[0]) != mark[1]:
                return None
            if size > mark[0]:
                os.ftruncate(f.fileno(), mark[0])
        here = os.fstat(self._f.fileno()).st_size
        if here:
            os.ftruncate(self._f.fileno(), 0)
        log.info("%s was rotated to %s since the checkpoint: %s cut back to the checkpoint, %s begun again (%d "
                 "bytes written after it removed)", self.path, q, q, self.path, size - mark[0] + here)
        return size - mark[0] + here

    def close(self) -> None:
        self.flush()
        if self._f is not sys.stdout:
            self._f.close()

    def _digest(self, size: int) -> str:
        """A digest of the (up to) 256 bytes of the file written before byte ``size`` (read from the file open,
        or from the path where it is open write-only: the file at the path, :meth:`_follow` made sure)."""
        if self._f.readable():
            return tail_digest(self._f.fileno(), size)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return tail_digest(fd, size)
        finally:
            os.close(fd)


def _append(path: str) -> IO[str]:
    """``path`` opened to append, and to read where allowed (the digest of a mark reads the file open)."""
    try:
        return open(path, "a+", encoding="utf-8")
    except PermissionError:  # a file one may write but not read
        return open(path, "a", encoding="utf-8")


class JsonlDeadLetterSink(JsonlSink):
    """Refused records as lines ``{"reason", "detail", "source", "key", "value"}`` (key/value as text; ``source``
    is ``topic:partition:offset``, a file's ``path:0:index`` with the 0-based index of its line -- counted on over a
    followed file's rotations -- and with :attr:`lines` (a replay) also ``"line"``: the number from 1 of its (first)
    line, a table's header counted),
    buffered until :meth:`flush` (a flood of bad records is written in blocks, not a system call each) -- or
    until :data:`BLOCK` characters wait, as a file buffer would -- into the file at the path then (a rotation
    in between: the new file)."""

    #: characters of lines held at most before they are written
    BLOCK = 8192
    #: the records are files' lines (``streamarms run --rewards-file``): each letter also names its line's number
    lines = False

    def send(self, record: Any, reason: str, detail: str = "") -> None:  # type: ignore[override]
        def text(b: Any) -> Any:
            return b.decode("utf-8", "backslashreplace") if isinstance(b, (bytes, bytearray)) else b

        doc = {"reason": reason, "detail": detail, "source": f"{record.topic}:{record.partition}:{record.offset}",
               "key": text(record_key(record)), "value": text(record.value)}
        if self.lines:  # a file's line: its number as an editor shows it (sed -n 103p)
            doc["line"] = record.offset + 1
        line = json.dumps(doc) + "\n"
        self._pending.append(line)
        self._held += len(line)
        if self._held >= self.BLOCK:
            self._follow()
            self._drain()

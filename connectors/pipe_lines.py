"""The lines of a pipe -- standard input, ``streamarms run --rewards-file -`` -- for
:class:`~streamarms.connectors.files.JsonlSource`.

A pipe is read without waiting: :class:`PipeLineReader` takes the bytes that are there (``select``, then
one ``os.read``), so a poll returns at once when the writer is quiet and the daemon's loop keeps turning
(signals, checkpoints of the detector's state, health). Its lines are :class:`~streamarms.connectors.
jsonl_lines.LineReader`'s (universal newlines, a byte order mark skipped, invalid UTF-8 kept); its end
is the writer closing it, when the bytes after the last line end are its last line -- a whole JSON object,
or a line cut mid-write, which the source refuses as ``not_json`` (a dead letter: a pipe cannot be read
again, so it is not left for a later run as a file's is).
A pipe has no position to go back to: a run reading one cannot resume from a checkpoint (``streamarms
run`` refuses ``--checkpoint`` with ``-``), and :meth:`PipeLineReader.mark` gives no digest.

Why a pipe: whatever can write JSON lines feeds the detector -- ``tail -F`` (which follows a log through
its rotations), ``journalctl -f -o json | jq``, a Kafka console consumer, a script.

>>> import os
>>> r_fd, w_fd = os.pipe()
>>> reader = PipeLineReader(os.fdopen(r_fd, "rb"))
>>> _ = os.write(w_fd, b'{"arm": "a", "reward": 1}\\n{"arm": "b", "rew')
>>> reader.read(10), reader.eof           # the half-written line waits; the pipe is still open
(['{"arm": "a", "reward": 1}'], False)
>>> _ = os.write(w_fd, b'ard": 0}'); os.close(w_fd)
>>> reader.read(10), reader.eof           # closed: the last line, whole but without its line end, is read
(['{"arm": "b", "reward": 0}'], True)
>>> r_fd, w_fd = os.pipe(); reader = PipeLineReader(os.fdopen(r_fd, "rb"))
>>> _ = os.write(w_fd, b'{"arm": "a", "rew'); os.close(w_fd)
>>> reader.read(10), reader.incomplete    # cut mid-write: still a line (the source refuses it), not dropped
(['{"arm": "a", "rew'], b'')
"""

from __future__ import annotations

import os
import select
import sys
from typing import IO

from .jsonl_lines import BLOCK, LineReader

__all__ = ["PipeLineReader", "STDIN"]

#: the ``--rewards-file`` name of standard input
STDIN = "-"


class PipeLineReader(LineReader):
    """The lines of a pipe (module docstring); ``file`` defaults to standard input."""

    pipe = True

    def __init__(self, file: IO[bytes] | None = None, *, block: int = BLOCK) -> None:
        super().__init__(STDIN, file=file if file is not None else sys.stdin.buffer, block=block)
        self._fd = self._f.fileno()

    def _read_block(self) -> bytes | None:
        if not select.select([self._fd], [], [], 0)[0]:
            return None
        return os.read(self._fd, self._block)

    def _at_end(self) -> None:
        super()._at_end()
        tail = self.incomplete
        if tail.strip():  # the writer closed the pipe mid-line: a last line, refused downstream, never dropped
            self._blocks.append((self._end_line, 1, self._end_pos, tail, self._tail))
            self._lines.append(tail.decode("utf-8", "surrogateescape"))
            self._end_line += 1
            self._end_pos += len(tail)
        self.incomplete = b""

    def wait(self, timeout: float) -> None:
        """Return when there are bytes to read (or the writer closed the pipe), or after ``timeout`` s."""
        if not self.eof:
            select.select([self._fd], [], [], timeout)

    def more(self) -> None:
        """A pipe is read again at every :meth:`read` until its writer closes it; nothing to reopen."""

    def moved(self) -> bool:
        return False  # a pipe is never rotated

    def changed(self) -> str | None:
        return None

    def mark(self, line: int) -> tuple[int, str]:
        """The byte position of line ``line`` read so far; no digest (the bytes are gone)."""
        return self.position(line), ""

    def close(self) -> None:
        if self._f is not sys.stdin.buffer:
            self._f.close()

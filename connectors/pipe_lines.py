"""The lines of a pipe -- standard input, ``streamarms run --rewards-file -`` -- for
:class:`~streamarms.connectors.files.JsonlSource`.

A pipe is read without waiting: :class:`PipeLineReader` takes the bytes that are there (``select``, then
one ``os.read``), so a poll returns at once when the writer is quiet and the daemon's loop keeps turning
(signals, checkpoints of the detector's state, health). Its lines are :class:`~streamarms.connectors.
jsonl_lines.LineReader`'s (universal newlines, a byte order mark skipped, invalid UTF-8 kept); its end
is the writer closing it, when the bytes after the last line end are its last line -- a whole JSON object,
or a line cut mid-write, which the source refuses as ``not_json`` (a dead letter: a pipe cannot be read
again, so it is not left for a later run as a file's is).
A gzip, bzip2 or xz stream on the pipe (``cat app.log.2.gz | ...``, ``aws s3 cp s3://b/x.gz - | ...``; its first
bytes say) is decompressed as it comes, a gzip of several members too (UTF-16 text with its byte-order mark, what
PowerShell 5 pipes, is read as its text); one that ends before its compressed stream
does (cut short, damaged) has its lines read and ends the source naming it (:attr:`PipeLineReader.damage`).
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

import bz2
import codecs
import lzma
import os
import select
import sys
import zlib
from collections.abc import Callable
from typing import IO, Any

from streamarms.errors import ConfigError

from .file_kinds import BINARY_HEADS, compressed, piped_binary, what_binary
from .jsonl_lines import BLOCK, LineReader
from .magics import MAGICS
from .text_encoding import MARKS, UTF8, marked

__all__ = ["PipeLineReader", "STDIN"]

#: the ``--rewards-file`` name of standard input
STDIN = "-"

#: a compressed stream on the pipe (``cat app.log.2.gz | ...``, ``aws s3 cp s3://b/x.gz - | ...``) is decompressed as
#: it comes: a new decompressor of each format (:func:`~streamarms.connectors.file_kinds.compressed`'s names)
_STREAMS: dict[str, Callable[[], Any]] = {"gzip": lambda: zlib.decompressobj(31), "bzip2": bz2.BZ2Decompressor,
                                          "xz": lzma.LZMADecompressor}
#: the byte-order marks of UTF-16 and UTF-32 text, read as its text
_MARKS = tuple(mark for mark, _ in MARKS)
#: the first bytes that say what a stream is: compressed, marked text, or records that are no text (refused)
_HEADS = MAGICS + _MARKS + BINARY_HEADS
#: the bytes looked at before the first line (the longest of those)
_SNIFF = max(map(len, _HEADS))


def _undecided(head: bytes) -> bool:
    """Whether the first bytes ``head`` are too few yet to tell what the stream is (they may still be a magic's)."""
    return len(head) < _SNIFF and any(m.startswith(head) for m in _HEADS if len(head) < len(m))


class PipeLineReader(LineReader):
    """The lines of a pipe (module docstring); ``file`` defaults to standard input."""

    pipe = True

    def __init__(self, file: IO[bytes] | None = None, *, block: int = BLOCK) -> None:
        super().__init__(STDIN, file=file if file is not None else sys.stdin.buffer, block=block)
        self._fd = self._f.fileno()
        self._first: bytes | None = b""  # the first bytes, until they say whether the stream is compressed
        self._dec: Any = None
        self._text: Any = None  # (UTF-16 text: its decoder)
        self._inflated: bytes | None = b""  # the first decompressed bytes, until they say they are text
        #: the compressed format of the stream (``None``: plain text)
        self.kind: str | None = None
        #: why the compressed stream could not be decompressed to its end (a stream cut short or damaged)
        self.damage: str | None = None

    def _read_block(self) -> bytes | None:
        if self.damage is not None:
            return b""  # (a damaged compressed stream: nothing after it is read)
        if not select.select([self._fd], [], [], 0)[0]:
            return None
        raw = os.read(self._fd, self._block)
        data = raw
        if self._first is not None:  # (the stream's first bytes: compressed?)
            data = self._first + raw
            if raw and _undecided(data):
                self._first = data
                return None  # (too few bytes yet to tell)
            self._first = None
            packed = compressed(data)
            if packed is not None and packed[0] not in _STREAMS:
                raise ConfigError(f"standard input is {packed[0]}-compressed, which streamarms cannot decompress (it "
                                  f"reads gzip, bzip2 and xz): decompress it into the run ({packed[1]} ... | "
                                  "streamarms run --rewards-file - ...)")
            if packed is not None:
                self.kind, self._dec = packed[0], _STREAMS[packed[0]]()
            elif codec := marked(data):  # (PowerShell 5 pipes and Out-File: UTF-16 text, read as its UTF-8 bytes)
                self.kind, self._text = codec, codecs.getincrementaldecoder(codec)("replace")
                self.encoding = UTF8  # (whatever --encoding said: the mark says what the text is)
            elif (binary := piped_binary(data)) is not None:  # (a workbook, a Parquet file: every line a dead letter)
                raise ConfigError(binary)
        if self._text is not None:
            return self._text.decode(data, final=not raw).encode("utf-8") or (None if raw else b"")
        return data if self._dec is None else self._inflated_text(self._inflate(data), more=bool(raw))

    def _inflated_text(self, out: bytes | None, more: bool) -> bytes | None:
        """``out``, the decompressed bytes, once the first of them say they are text (held while they may still be a
        magic's, :func:`_undecided`); a ``ConfigError`` when they are a Parquet file, a workbook, another compressed stream (a
        ``.parquet.gz`` piped in): read as lines, every one would be a dead letter."""
        if self._inflated is None or out is None:
            return out
        head = self._inflated + out
        if more and _undecided(head):
            self._inflated = head
            return None  # (too few bytes yet to tell)
        self._inflated = None
        if (what := what_binary(head)) is not None:
            raise ConfigError(f"standard input is {what} compressed with {self.kind}, no text: decompress it into a "
                              "file and give that file as --rewards-file")
        return head

    def _inflate(self, data: bytes) -> bytes | None:
        """The decompressed bytes of ``data`` (the members of a stream of several, one after another); ``None``
        when they complete no output yet, ``b""`` at the end (a stream cut short: :attr:`damage`)."""
        if not data:
            if not self._dec.eof:
                self.damage = (f"standard input ({self.kind}) ended before its compressed stream did: cut short or "
                               f"damaged after its line {self._end_line:,}; the lines before were read")
            return b""
        out = []
        try:
            while data:
                if self._dec.eof:  # (a member ended: the next one, cat a.gz b.gz)
                    self._dec = _STREAMS[str(self.kind)]()
                out.append(self._dec.decompress(data))
                data = self._dec.unused_data if self._dec.eof else b""
        except (zlib.error, OSError, EOFError, lzma.LZMAError) as e:
            self.damage = (f"standard input ({self.kind}) cannot be decompressed after its line {self._end_line:,} "
                           f"({e}): damaged; the lines before were read, nothing after")
            return b""
        return b"".join(out) or None

    def _at_end(self) -> None:
        super()._at_end()
        tail = self.incomplete
        if tail.strip():  # the writer closed the pipe mid-line: a last line, refused downstream, never dropped
            self._blocks.append((self._end_line, 1, self._end_pos, tail, self._tail))
            self._lines.append(tail.decode(self.encoding, "surrogateescape"))
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

"""The lines of a JSONL file with their byte positions, for :class:`~streamarms.connectors.files.JsonlSource`.

:class:`LineReader` gives the lines ``open(path, encoding="utf-8", errors="surrogateescape")`` gives (another
:attr:`~LineReader.encoding`: ``--encoding``, :mod:`~streamarms.connectors.text_encoding`)
(universal newlines: ``\\n``, ``\\r\\n`` and a lone ``\\r`` end a line; invalid UTF-8 kept as surrogate
escapes), without their line ends, read a block of bytes at a time (decoded and split in C), and it
knows where each line starts in the file (a UTF-8 byte order mark at the start of the file is no part of
line 1, as with ``encoding="utf-8-sig"``; positions count its bytes). That position is what a checkpoint needs:

* **Resume at a byte.** A checkpoint saves, beside the line number, the byte position of that line and
  a digest of the file's first bytes and of the bytes just before the position (:meth:`LineReader.mark`).
  A restart checks the digest and seeks there, instead of reading every line before it; a file that is
  now shorter than the position, or whose bytes differ (truncated, replaced, rewritten), is a
  :class:`~streamarms.checkpoint.CheckpointError` naming both sizes -- never a run that silently reads
  nothing, or the wrong records. A checkpoint of an older version (the line number only) still resumes,
  by skipping that many lines; fewer lines than that is the same error.
* **The end of a file still being written.** The bytes after the last line end are a line only when
  they are complete: a JSON object (a writer's last line without its newline -- common) is read as a
  line; anything else (a line cut mid-write) is left unread -- not counted, not delivered, its bytes in
  :attr:`LineReader.incomplete` -- so the checkpoint's position stays before it and a later run reads it
  once it is whole. A final ``\\r`` is not yet a line end (it may be the first half of ``\\r\\n``). When
  a run consumed such an unterminated object and the writer then ends the line, the restart skips that
  line end (it is not an empty line of its own).
* **Following a file that grows** (``follow=True``, ``tail -f``): at the end, :meth:`LineReader.more` looks
  again for bytes appended since; a line is read only once its line end is written (a whole object
  without one may be the first half of a write). :meth:`LineReader.changed` says when the file at the
  path is no longer the one being read -- removed, replaced (a rotation), truncated, or its bytes before
  the position rewritten (the bytes read are compared: the first ones and the last ones, up to
  :data:`WINDOW` each) -- so a follower stops with that reason instead of
  reading a different file from the middle or waiting for lines that will never come.
* **A line too long to hold** (more than :attr:`LineReader.max_line`, 4 MiB: a file of NUL bytes left by a
  crash, a binary file given by mistake -- one "line" of gigabytes): its bytes are counted to its line end, never
  held (:class:`LongLine`); it is read as a line of its first :data:`LONG_KEPT` bytes, and
  :attr:`LineReader.too_long` gives its length, so the source refuses it (a ``line_too_long`` dead letter). The
  positions after it are exact. Lines ended by a lone ``\\r`` are split as they come, not held to the end.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "r.jsonl")
>>> _ = open(p, "wb").write(b'{"a": 1}\\r\\n{"a": 2}\\n{"a": 3')
>>> r = LineReader(p)
>>> r.read(10), r.eof, r.incomplete, r.position(1), r.position(2)
(['{"a": 1}', '{"a": 2}'], True, b'{"a": 3', 10, 19)
>>> _ = open(p, "ab").write(b'}')  # the last line is complete now, still without its newline
>>> r2 = LineReader(p, line=2, pos=19, digest=r.mark(2)[1])
>>> r2.read(10), r2.incomplete, r2.position(3)
(['{"a": 3}'], b'', 27)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import islice
from typing import IO, Any, NoReturn

from streamarms.checkpoint import FILE_KINDS, CheckpointError
from streamarms.errors import ConfigError

from .file_ids import FileIds, Listed, Renamed, open_listed, relisting
from .file_kinds import PACKED_SUFFIXES, binary_format, compressed
from .text_encoding import UTF8

log = logging.getLogger(__name__)
#: a restart's warning when the last line its checkpoint read had no line end and the file now goes on with it
_CUT = ("%s: its line %s had no line end when the checkpoint's run read it, and the file now goes on with that line: it "
        "was cut mid-write and read short (a CSV row's last cell, a pattern's last group; its record counted as it was), "
        "and the rest of it is read as a line of its own. A file still being written is read with --follow, which "
        "waits for each line's end")

_fast_loads: Callable[[str], Any]
try:
    import orjson

    _fast_loads = orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency of streamarms
    _fast_loads = json.loads

__all__ = ["LineReader", "is_json_object", "WINDOW", "MAX_LINE"]

#: bytes read at a time (64 KiB: as fast per line as 256 KiB, ~40 ns/line with the split, and the blocks kept
#: for :meth:`LineReader.position` stay small; 1 MiB is slower: out of cache)
BLOCK = 1 << 16
#: how many of the file's first bytes, and of the bytes before a position, :meth:`LineReader.mark` hashes
WINDOW = 256
#: a line longer than this is not held whole in memory (:attr:`LineReader.max_line`): a file of NUL bytes left by a
#: crash, or a binary file given by mistake, is one line of gigabytes; its first :data:`LONG_KEPT` bytes are kept
MAX_LINE = 4 << 20
LONG_KEPT = 1024

_EOL = re.compile(rb"\r\n|\r|\n")


def _pread(fd: int, n: int, at: int) -> bytes:
    """``n`` bytes of the file open at ``fd`` from byte ``at``, its offset left as it was."""
    if hasattr(os, "pread"):
        return os.pread(fd, n, at)
    here = os.lseek(fd, 0, os.SEEK_CUR)  # pragma: no cover - a platform without pread
    try:
        os.lseek(fd, at, os.SEEK_SET)
        return os.read(fd, n)
    finally:
        os.lseek(fd, here, os.SEEK_SET)


def digest(data: bytes) -> str:
    """The digest a checkpoint keeps of a file's bytes (blake2b, 8 bytes, hex): of its first and last read bytes
    (:meth:`LineReader.mark`), of the bytes a sink wrote before its mark (:func:`tail_digest`)."""
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def tail_digest(fd: int, size: int) -> str:
    """:func:`digest` of the (up to) :data:`WINDOW` bytes before byte ``size`` of the file open at ``fd``."""
    w = min(WINDOW, size)
    return digest(_pread(fd, w, size - w))


def is_json_object(text: str) -> bool:
    """Whether ``text`` is one whole JSON object (orjson, or the standard library for what orjson refuses:
    NaN, huge integers...).

    >>> is_json_object('{"arm": "a", "reward": 1} '), is_json_object('{"arm": "a", "rew'), is_json_object("12")
    (True, False, False)
    """
    try:
        return type(_fast_loads(text)) is dict
    except Exception:
        try:
            return type(json.loads(text)) is dict
        except (ValueError, RecursionError):
            return False


def _first_line(pread: Callable[[int, int], bytes], encoding: str = UTF8) -> str:
    """The first line of a file read by ``pread(n, at)`` (without its line end and a byte order mark); of a line
    longer than :data:`MAX_LINE`, its first :data:`MAX_LINE` bytes (a file of NUL bytes is not held whole)."""
    blocks: list[bytes] = []
    size, m = 0, None
    while size < MAX_LINE:
        more = pread(BLOCK, size)
        if not more:
            break
        blocks.append(more)
        if (m := _EOL.search(more)) is not None:  # (a \r\n cut between two blocks: its \r ends the line alike)
            break
        size += len(more)
    data = b"".join(blocks)
    end = size + m.start() if m is not None else min(len(data), MAX_LINE)
    return data[:end].decode(encoding, "surrogateescape").removeprefix("\ufeff")


def _refuse_compressed(path: str, packed: tuple[str, str], follow: bool) -> NoReturn:
    """The :class:`ConfigError` of a compressed file opened as plain lines (``packed``: :func:`compressed`'s)."""
    from .csv_lines import table_format  # (a table's name: the pipe needs its format named)

    table = table_format(path)
    flag = f" --rewards-format {table}" if table else ""
    pipe = f"{packed[1]} {path} | streamarms run --rewards-file -{flag} ..."
    if follow:  # (gzip, bzip2 and xz are read as they are, but not followed: open_lines)
        raise ConfigError(f"{path} is {packed[0]}-compressed, and --follow reads files that grow: a compressed "
                          "file does not. Replay it without --follow (read decompressed, resumable with "
                          f"--checkpoint), or decompress it into the run on standard input ({pipe})")
    raise ConfigError(f"{path} is {packed[0]}-compressed, which streamarms cannot decompress (it reads gzip, "
                      f"bzip2 and xz files as they are): decompress it into the run on standard input ({pipe}), "
                      "or decompress it to a file first (to resume it with --checkpoint)")


class LongLine:
    """A line longer than :attr:`LineReader.max_line` being read: its bytes counted, its first :data:`LONG_KEPT`
    and last :data:`WINDOW` bytes kept (positions and digests after it stay exact), never the whole of it.

    >>> raw = b"ab" * 600; line = LongLine(raw); line.add(raw); line.add(b"cd\\n")
    >>> line.size, len(line.first), line.last[-5:]
    (1203, 1024, b'abcd\\n')
    """

    def __init__(self, first: bytes) -> None:
        self.size = 0
        self.first = first[:LONG_KEPT]
        self.last = b""

    def add(self, data: bytes) -> None:
        self.size += len(data)
        self.last = (self.last + data[-WINDOW:])[-WINDOW:]


class LineReader:
    """The lines of ``path`` from line ``line`` (module docstring): ``pos`` and ``digest`` as
    :meth:`mark` gave them (``None``: a checkpoint without them, the lines before ``line`` are skipped)."""

    #: a pipe (:class:`~streamarms.connectors.pipe_lines.PipeLineReader`): read what is there, never wait
    pipe = False

    #: a line longer than this many bytes (up to a block more) is not kept whole: its first :data:`LONG_KEPT`
    #: bytes are read as its line, and :attr:`too_long` gives its length (module docstring)
    max_line = MAX_LINE

    #: whether a last line without its line end (the file not followed) is whole, so read: a JSON object here;
    #: a table's reader is given :meth:`~streamarms.connectors.csv_lines.CsvTable.whole`
    whole: Callable[[str], bool] = staticmethod(is_json_object)
    #: what the lines' bytes are decoded by (``--encoding``, :mod:`~streamarms.connectors.text_encoding`)
    encoding = UTF8

    def __init__(self, path: str, *, line: int = 0, pos: int | None = None, digest: str | None = None,
                 block: int = BLOCK, follow: bool = False, file: IO[bytes] | None = None) -> None:
        self.path = path
        #: the file read: ``path``'s, or the file given (a rotated one read on, :func:`rotated_reader`)
        self.file_name = getattr(file, "name", path) if file is not None else path
        if file is None and not stat.S_ISREG(mode := os.stat(path).st_mode):
            raise ConfigError(f"{path} is not a regular file ({FILE_KINDS.get(stat.S_IFMT(mode), 'a special file')}): give "
                              f"its data on standard input instead (--rewards-file - < {path})")
        self._f: IO[bytes] = open(path, "rb") if file is None else file
        head = self._pread(16, 0) if file is None else b""  # (a compressed file's magic, or another format's)
        if (packed := compressed(head)) is not None:
            self._f.close()
            _refuse_compressed(path, packed, follow)
        if (binary := binary_format(path, head)) is not None:
            self._f.close()
            raise ConfigError(binary)
        self._block = block
        #: the file may still grow: a last line without its line end is never read (module docstring)
        self.follow = follow
        #: the file's first bytes and the last bytes read (up to :data:`WINDOW` each): :meth:`changed` compares
        self._head = self._last = b""
        #: the number of the next line :meth:`read` returns
        self.line = 0
        self._lines: list[str] = []
        self._i = 0                     # self._lines[:self._i] are returned
        self._carry: list[bytes] = []   # the bytes read after the last line end
        self._end_line = self._end_pos = 0  # line number and byte position after the last line decoded
        #: the decoded blocks still needed by :meth:`position` and :meth:`mark`: (first line, lines, start byte,
        #: bytes, the :data:`WINDOW` bytes before them)
        self._blocks: list[tuple[int, int, int, bytes, bytes]] = []
        #: the (up to) :data:`WINDOW` bytes before ``_end_pos``: the bytes of the lines decoded last
        self._tail = b""
        #: the end of the file is reached (:meth:`read` returns fewer lines than asked)
        self.eof = False
        #: at the end: the bytes after the last line read, an incomplete line left unread (or ``b""``)
        self.incomplete = b""
        #: the lines read longer than :attr:`max_line`: line number -> length in bytes (line end included)
        self.too_long: dict[int, int] = {}
        self._long: LongLine | None = None  # a line past max_line being read
        try:
            if type(line) is not int or line < 0 or pos is not None and (type(pos) is not int or pos < 0) \
                    or digest is not None and not isinstance(digest, str):
                raise CheckpointError(f"the checkpoint's position in {path} is malformed: line {line!r}, byte {pos!r}, "
                                      f"digest {digest!r}")
            if line and pos is None:
                self._skip(line)
            elif line or pos:
                self._seek(line, pos or 0, digest)
        except BaseException:
            self._f.close()
            raise

    # -- reading -----------------------------------------------------------------------------
    def read(self, n: int) -> list[str]:
        """The next ``n`` lines (fewer only at the end of the file)."""
        if len(self._lines) - self._i < n and not self.eof:
            self._fill(n)
        i = self._i
        out = self._lines[i:i + n]
        self._i = i + len(out)
        self.line += len(out)
        return out

    def _fill(self, n: int) -> None:
        lines = self._lines = self._lines[self._i:]
        self._i = 0
        carry = self._carry
        while len(lines) < n:
            data = self._read_block()
            if data is None:  # a pipe with nothing to read now
                return
            if not data:
                if self.incomplete and not carry:  # nothing new after an incomplete line: it stays as it is
                    self.eof = True
                else:
                    self._at_end()
                return
            if len(self._head) < WINDOW:
                self._head += data[:WINDOW - len(self._head)]
            self._last = (self._last + data[-WINDOW:])[-WINDOW:]
            if self.incomplete:  # (following) the incomplete line goes on
                carry.insert(0, self.incomplete)
                self.incomplete = b""
            if self._long is not None:  # a line too long to keep: its bytes counted up to its line end
                j = data.find(b"\n")
                self._long_bytes(data if j < 0 else data[:j + 1], ended=j >= 0)
                data = b"" if j < 0 else data[j + 1:]
                if not data:
                    continue
            k = data.rfind(b"\n")
            if k < 0:
                carry.append(data)
                if sum(map(len, carry)) > self.max_line:
                    self._too_long()
                continue
            head = data[:k + 1]
            if carry:
                head = b"".join(carry) + head
                carry.clear()
            if k + 1 < len(data):
                carry.append(data[k + 1:])
            self._add(head)

    def _read_block(self) -> bytes | None:
        """The next bytes (``b""``: the end). Following, also ``b""`` when the bytes before them are no longer
        those read (the file was truncated -- ``copytruncate`` -- and maybe written again past this position
        before or while the block was read): the block is not the continuation of what was read, so it is
        given back, and :meth:`changed` says why at the end (one ``pread`` of :data:`WINDOW` bytes a block)."""
        if not self.follow or not self._last:
            return self._f.read(self._block)
        at, last = self._f.tell(), self._last
        data = self._f.read(self._block)
        if data and self._pread(len(last), at - len(last)) != last:
            self._f.seek(at)
            return b""
        return data

    def _add(self, raw: bytes) -> None:
        """Decode ``raw`` (whole lines, the last ending with a line end) into lines."""
        text = raw.decode(self.encoding, "surrogateescape")
        if self._end_pos == 0 and text.startswith("\ufeff"):  # a byte order mark is no part of line 1
            text = text[1:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        new = text.split("\n")
        new.pop()  # the empty string after the last line end
        self._blocks.append((self._end_line, len(new), self._end_pos, raw, self._tail))
        self._lines += new
        self._end_line += len(new)
        self._end_pos += len(raw)
        self._tail = raw[-WINDOW:] if len(raw) >= WINDOW else (self._tail + raw)[-WINDOW:]

    def _too_long(self) -> None:
        """The bytes after the last line end are more than :attr:`max_line`: lines ended by a lone ``\\r`` (an old
        Mac's) are read; else they begin a line too long to keep (:meth:`_long_bytes`)."""
        raw = b"".join(self._carry)
        self._carry.clear()
        j = raw.rfind(b"\r", 0, len(raw) - 1)  # (not the last byte: a \r\n cut between two blocks)
        if j >= 0:
            self._add(raw[:j + 1])
            raw = raw[j + 1:]
            if len(raw) <= self.max_line:
                self._carry.append(raw)
                return
        self._long = LongLine(raw)
        self._long_bytes(raw, ended=False)

    def _long_bytes(self, data: bytes, ended: bool) -> None:
        """More bytes of the :class:`LongLine` (``ended``: up to its line end); at its end it is a line of its first
        bytes, and :attr:`too_long` says how long it was."""
        long = self._long
        assert long is not None
        long.add(data)
        if not ended:
            return
        self._long = None
        text = long.first.decode(self.encoding, "surrogateescape")
        self._blocks.append((self._end_line, 1, self._end_pos, b"", self._tail))  # (its first byte's position only)
        self._lines.append((text.removeprefix("\ufeff") if self._end_pos == 0 else text).rstrip("\r\n"))
        self.too_long[self._end_line] = long.size
        self._end_line += 1
        self._end_pos += long.size
        self._tail = long.last

    def _at_end(self) -> None:
        """The end of the file: the bytes after the last ``\\n`` (module docstring)."""
        if self._long is not None:
            if self.follow:  # (the line too long goes on as the file grows)
                self.eof = True
                return
            self._long_bytes(b"", ended=True)  # (the file ends in it: a last line, refused downstream)
        self.eof = True
        tail = b"".join(self._carry)
        self._carry.clear()
        j = tail.rfind(b"\r", 0, len(tail) - 1)  # lines ended by a lone \r (not the last byte)
        if j >= 0:
            self._add(tail[:j + 1])
            tail = tail[j + 1:]
        body = tail[:-1] if tail.endswith(b"\r") else tail
        if not self.follow:  # (following: a line is read once its line end is there, and never decoded here)
            text = body.decode(self.encoding, "surrogateescape")
            if self._end_pos == 0 and text.startswith("\ufeff"):
                text = text[1:]
            if text.strip() and self.whole(text):  # complete: a line without its newline
                self._blocks.append((self._end_line, 1, self._end_pos, body, self._tail))
                self._lines.append(text)
                self._end_line += 1
                self._end_pos += len(body)
                self._tail = (self._tail + body)[-WINDOW:]
                tail = tail[len(body):]
        self.incomplete = tail

    def more(self) -> None:
        """At the end of the file: look again for bytes appended since (the incomplete line left unread continued)."""
        self.eof = False

    def fileno(self) -> int:
        """The file descriptor of the file read."""
        return self._f.fileno()

    def head(self, n: int) -> bytes:
        """The file's first ``n`` bytes (or fewer), whatever has been read."""
        return self._pread(n, 0)

    def tell(self) -> int:
        """The bytes of the file read so far (the lines not yet returned included: at most a block ahead)."""
        return self._f.tell()

    @property
    def offset(self) -> int:
        """How many bytes of the file were read (0: none yet)."""
        return self._f.tell()

    def moved(self) -> bool:
        """Whether the file read was moved away intact (rotated by renaming): the path now holds another
        file, or none yet, and the file read is neither shorter nor other bytes where those read were. A
        follower reads it to its end and goes on with the file that comes to the path
        (:class:`~streamarms.connectors.files.JsonlSource`); any other change is :meth:`changed`'s."""
        try:
            now: os.stat_result | None = os.stat(self.path)
        except FileNotFoundError:
            now = None
        except OSError:
            return False
        mine = os.fstat(self._f.fileno())
        if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
            return False
        return self._holds_read(self._f.fileno())

    def copied(self) -> LineReader | None:
        """For a file :meth:`changed` (truncated or rewritten): a reader, after the last line read, of the copy
        ``copytruncate`` left beside it (:func:`rotated_reader`: the sibling holding the first and last bytes read),
        then the file at the path, as after a rename; ``None``: no sibling holds them (or :func:`rotated_reader`'s error)."""
        return rotated_reader(self.path, self._end_line, self._end_pos, None, self._holds_read)

    def end_mark(self) -> tuple[int, int, str]:
        """``(line, byte position, digest)`` after the last line decoded, as a checkpoint there would save them (a copy
        compressed by ``copytruncate`` is found by them: :func:`~.compressed_lines.compressed_rotation`)."""
        return (self._end_line, *self.mark(self._end_line))

    def changed(self) -> str | None:
        """Why the file at :attr:`path` is no longer the one read (``None``: it is): removed, another file
        there now (rotated or replaced), shorter than what was read (truncated), or other bytes where those
        read were (its first bytes and the last ones read, up to :data:`WINDOW` each: truncated and written
        again, or edited). For a follower at the end of the file."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return f"{self.path} was removed"
        except OSError as e:  # a permission changed, a mount went away: not this file's content
            return f"{self.path} cannot be checked any more ({e.strerror or e})"
        mine = os.fstat(self._f.fileno())
        if (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
            return f"{self.path} is another file now (rotated or replaced: {now.st_size:,} bytes)"
        read = self._f.tell()
        if mine.st_size < read:
            return (f"{self.path} is shorter than what was read of it: {mine.st_size:,} bytes now, {read:,} bytes "
                    "read (truncated)")
        if not self._holds_read(self._f.fileno()):
            return (f"{self.path} was rewritten: its first bytes, or those before byte {read:,}, are not those read "
                    "(truncated and written again, or edited)")
        return None

    def close(self) -> None:
        self._f.close()

    # -- positions ---------------------------------------------------------------------------
    def position(self, line: int) -> int:
        """The byte position where line ``line`` starts: a line read, the next one, or one of a block
        not yet :meth:`forget`-ten."""
        if line >= self._end_line:
            return self._end_pos
        for first, _, start, raw, _ in reversed(self._blocks):
            if first <= line:
                k = line - first
                ends = [m.end() for m in islice(_EOL.finditer(raw), k)] if k else [0]
                return start + (ends[-1] if len(ends) == max(k, 1) else len(raw))
        raise ValueError(f"line {line} of {self.path} is before the lines kept (forget() was given a later line)")

    def forget(self, line: int) -> None:
        """No :meth:`position` before line ``line`` will be asked for: drop the blocks before it (and what
        :attr:`too_long` says of the lines before it)."""
        blocks = self._blocks
        while blocks and blocks[0][0] + blocks[0][1] <= line:
            del blocks[0]
        if self.too_long:
            for k in [k for k in self.too_long if k < line]:
                del self.too_long[k]

    def mark(self, line: int) -> tuple[int, str]:
        """``(byte position, digest)`` of line ``line``: what a checkpoint saves to resume there. The digest is
        of the bytes *read* (the first ones and those before the position, as :meth:`_digest` reads them from
        the file): a followed file truncated since they were read -- not yet seen by the reader -- has other
        bytes there, and a restart must find the copy that holds these (:func:`rotated_reader`)."""
        pos = self.position(line)
        w = min(WINDOW, pos)
        if line >= self._end_line:
            before = self._tail
        else:
            first, _, start, raw, prev = next(b for b in reversed(self._blocks) if b[0] <= line)
            before = prev + raw[:pos - start]
        return pos, digest(self._head[:w] + before[len(before) - w:])

    def _pread(self, n: int, at: int) -> bytes:
        return _pread(self._f.fileno(), n, at)

    def first_line(self) -> str:
        """The first line of the file read (without its line end and a byte order mark): a table's header, for a
        reader that resumes past it."""
        return _first_line(self._pread, self.encoding)

    def _holds_read(self, fd: int) -> bool:
        """Whether the file open at ``fd`` (this reader's, or a sibling's) holds the bytes read: at least as
        long as what was read, and its first bytes and those before the reader's offset are the ones read (up to
        :data:`WINDOW` each). A truncation leaves the reader's offset as it was."""
        read, head, last = self._f.tell(), self._head, self._last
        return os.fstat(fd).st_size >= read and _pread(fd, len(head), 0) == head \
            and _pread(fd, len(last), read - len(last)) == last

    def _digest(self, pos: int) -> str:
        w = min(WINDOW, pos)
        return digest(self._pread(w, 0) + self._pread(w, pos - w))

    def size_now(self) -> int:
        """The file's bytes as positions count them (a checkpoint's: a restart that finds it removed says what was
        unread): its size now; -1, a compressed file before its end (:class:`~.compressed_lines.CompressedLineReader`)."""
        return self._size()

    # -- resuming ----------------------------------------------------------------------------
    def _size(self) -> int:
        return os.fstat(self._f.fileno()).st_size

    def _count(self) -> int:
        """The lines of the whole file (read from where this reader is)."""
        while len(self.read(1 << 16)) == 1 << 16:
            self.forget(self.line)
        return self.line

    def _seek(self, line: int, pos: int, digest: str | None) -> None:
        size = self._size()
        if size < pos:
            raise CheckpointError(
                f"{self.path} is shorter than the checkpoint's position in it: {size:,} bytes ({self._count():,} "
                f"lines) now, but the checkpoint had read {pos:,} bytes ({line:,} lines); the file was truncated or "
                f"replaced since. {_HOW}")
        if digest is not None and digest != self._digest(pos):
            raise CheckpointError(
                f"{self.path} is not the file the checkpoint read: its bytes before the checkpoint's position "
                f"(line {line:,}, byte {pos:,}) differ from those the checkpoint saw ({size:,} bytes now); the file "
                f"was replaced or rewritten since. {_HOW}")
        unended, after = pos and self._pread(1, pos - 1) not in (b"\n", b"\r"), self._pread(2, pos)
        if unended and after[:1] in (b"\n", b"\r") and after != b"\r":
            pos += 2 if after == b"\r\n" else 1  # the last line read had no line end then (a whole object): it has now
        elif unended and after[:1] not in (b"", b"\n", b"\r"):  # ... and the file now goes on with it: cut mid-write
            log.warning(_CUT, self.path, f"{line:,}")
        self._f.seek(pos)
        self.line, self._end_line, self._end_pos = line, line, pos
        w = min(WINDOW, pos)
        self._head, self._last = self._pread(w, 0), self._pread(w, pos - w)
        self._tail = self._last

    def _skip(self, line: int) -> None:
        """Skip ``line`` lines (a checkpoint that saved the line number only)."""
        left = line
        while left:
            want = min(left, 1 << 16)
            got = len(self.read(want))
            self.forget(self.line)
            left -= got
            if got < want:
                break
        if left == 1 and self.incomplete:  # that version read an unterminated last line, whatever it was
            self.line += 1
            self._end_line += 1
            self._end_pos += len(self.incomplete)
            self._tail = (self._tail + self.incomplete)[-WINDOW:]
            self.incomplete, left = b"", 0
        if left:
            raise CheckpointError(
                f"{self.path} has fewer lines than the checkpoint has read: {line - left:,} lines "
                f"({self._size():,} bytes) now, but the checkpoint had read {line:,} lines; the file was truncated "
                f"or replaced since. {_HOW}")


def rotation_name(base: str, name: str) -> bool:
    """Whether the file name ``name`` is named as a rotation of the file name ``base`` (``app.log.1``,
    ``app.log-20261125``, ``app.log.2.gz`` of ``app.log``: its name, then ``.``, ``-`` or ``_`` and a digit).

    >>> [rotation_name("app.log", n) for n in ("app.log.1", "app.log-20261125", "app.log.x", "app-2.log")]
    [True, True, False, False]
    """
    return len(name) > len(base) + 1 and name.startswith(base) and name[len(base)] in ".-_" \
        and name[len(base) + 1].isdigit()


def rotations_of(path: str, listing: Sequence[str] | None = None) -> list[tuple[int, int, int, str]]:
    """The regular files beside ``path`` named as its rotations (:func:`rotation_name`): ``(mtime_ns, dev, inode,
    path)``, oldest first. ``listing``: the names in its folder, sorted, listed once for many paths (a pattern of
    thousands of files in one folder: a listing each would be quadratic)."""
    folder, base = os.path.split(path)
    for _ in range(50):  # a rotation renaming the files one by one while they are listed: list them again
        try:
            names = stable_listdir(folder or ".") if listing is None else _starting_with(listing, base)
        except OSError:
            return []
        out, gone = [], False
        for name in names:
            if rotation_name(base, name):
                q = os.path.join(folder, name)
                try:
                    st = os.stat(q)
                except FileNotFoundError:
                    gone = listing is None  # (a listing given is not taken again: the file is left out)
                    if gone:
                        break
                    continue
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    out.append((st.st_mtime_ns, st.st_dev, st.st_ino, q))
        if not gone:
            break
        time.sleep(0.002)
    # a rotation being compressed (``F.1`` and ``F.1.gz`` both there: gzip removes the first once the second is whole)
    # is the plain file, not yet the compressed one
    plain = {q for *_, q in out}
    return sorted(e for e in out if not (e[3].endswith(PACKED_SUFFIXES) and e[3].rsplit(".", 1)[0] in plain))


def stable_listdir(folder: str) -> list[str]:
    """The sorted names in ``folder``, listed until two listings in a row agree. A name renamed while the folder is
    listed may be in neither place (POSIX leaves it unspecified): a rotation shifting ``F.2.gz`` to ``F.3.gz`` as a
    follower listed the folder hid that file, and the follower went on with the next one, the file's lines never
    read (CI's rotation drill, compress mode: 3,000 lines). ``OSError`` when it cannot be listed."""
    names = sorted(os.listdir(folder))
    for _ in range(50):
        again = sorted(os.listdir(folder))
        if again == names:
            break
        names = again
        time.sleep(0.001)
    return names


def _starting_with(names: Sequence[str], base: str) -> list[str]:
    """The names of the sorted ``names`` that start with ``base`` (a bisection, not a scan)."""
    i = bisect_left(names, base)
    j = i
    while j < len(names) and names[j].startswith(base):
        j += 1
    return list(names[i:j])


class FolderListings:
    """Folders' sorted names, each folder listed once until :meth:`clear` (a poll's). A follower of thousands of empty
    files in one folder looks for a new rotation of each at every poll (``JsonlSource._unread_copied``): a listing
    each made a poll quadratic (3,000 empty files: 5.7 s a poll).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); _ = open(os.path.join(d, "a.log"), "w").close()
    >>> listings = FolderListings(); listings.of(os.path.join(d, "a.log"))
    ['a.log']
    """

    def __init__(self) -> None:
        self._names: dict[str, list[str]] = {}

    def clear(self) -> None:
        """List every folder again when next asked."""
        self._names.clear()

    def of(self, path: str) -> list[str] | None:
        """The sorted names in ``path``'s folder (``None``: it cannot be listed)."""
        folder = os.path.dirname(path) or "."
        if folder not in self._names:
            try:
                self._names[folder] = stable_listdir(folder)
            except OSError:
                return None
        return self._names[folder]


def rotation_ids(path: str, listing: Sequence[str] | None = None) -> FileIds:
    """``path``'s rotations there now (:func:`rotations_of`; ``listing``: its folder's), known by number and first
    bytes (:class:`~streamarms.connectors.file_ids.FileIds`: a number freed by a file removed is given to new ones).
    Each file as listed (:func:`~.file_ids.open_listed`): a rotation that renames them on meanwhile has them listed
    again, so a newer file that took a listed name is not known in its place (nor read as a copy that was there)."""
    def attempt(first: bool) -> FileIds:
        ids = FileIds()
        for _, dev, ino, q in rotations_of(path, listing if first else None):
            try:
                with open_listed(Listed(q, dev, ino)) as f:
                    ids.add_fd(f.fileno())
            except Renamed:
                raise
            except OSError:  # (removed since listed: compressed, or past retention; not there to be known)
                pass
        return ids
    try:
        return relisting(attempt)
    except Renamed:  # (renamed on at every listing: none known, as a file that starts with none)
        return FileIds()


def rotations_known(paths: Sequence[str]) -> dict[str, FileIds]:
    """:func:`rotation_ids` of each of ``paths``, each folder listed once (a pattern of thousands of files in one
    folder: a listing each took minutes)."""
    listings, out = FolderListings(), {}
    for p in paths:
        listing = listings.of(p)
        out[p] = rotation_ids(p, listing if listing is not None else stable_listdir(os.path.dirname(p) or "."))
    return out  # (a folder that cannot be listed: its OSError, from stable_listdir)


def rotated_reader(path: str, line: int, pos: int | None, digest: str | None,
                   holds: Callable[[int], bool] | None = None) -> LineReader | None:
    """A followed file's rotation that holds the bytes read (a checkpoint's, by size and digest; or
    ``holds(fd)``, given): a reader of it at ``line`` / ``pos`` whose :attr:`LineReader.path` stays ``path`` --
    so it is :meth:`moved <LineReader.moved>`, read to its end, and then followed to the next rotation
    (:func:`next_rotation`) or the file at ``path``. ``None`` when no rotation holds them."""
    for _, _, _, q in reversed(rotations_of(path)):  # (the newest first: a checkpoint's file was rotated last)
        try:
            f = open(q, "rb")
        except FileNotFoundError:  # (removed since listed: compressed -- compressed_rotation's -- or past retention)
            continue
        try:
            if holds is not None and not holds(f.fileno()):
                raise CheckpointError("not this one")
            return LineReader(path, line=line, pos=pos, digest=digest, follow=True, file=f)
        except CheckpointError:
            f.close()
    return None


def next_rotation(path: str, after: int, seen: FileIds) -> Listed | None:
    """The rotation of ``path`` written after the file read (``after``: its mtime in ns) and not read yet
    (``seen``: the files read): a file rotated away before the follower came to it
    (rotated twice while it was behind, or stopped). ``None``: go on with the file at ``path``.

    A rotation renames a file and leaves its mtime (its last write), and ``copytruncate``'s copy is made when
    it is taken, so the rotations' mtimes are in the order their lines were written. The file is named as listed:
    opened, it is that file only while no rotation has renamed it on (:func:`~.file_ids.open_listed`).
    """
    for mtime, dev, ino, q in rotations_of(path):
        if mtime > after and not seen.holds(q, dev, ino):
            return Listed(q, dev, ino)
    return None


_HOW = ("To go on, put back the file the checkpoint read; to replay the file there now from its first line, use "
        "another --checkpoint (or remove this checkpoint).")

"""The lines of a gzip-, bzip2- or xz-compressed file (a rotated log, an export), resumable at a checkpoint.

:class:`CompressedLineReader` is a :class:`~streamarms.connectors.jsonl_lines.LineReader` whose bytes are the
file's *decompressed* bytes (Python's :mod:`gzip`, :mod:`bz2` and :mod:`lzma`, which also read files of several
concatenated members, as ``zcat`` does). Everything a checkpoint keeps is in those bytes: the line number, the
byte position of the line in the decompressed stream and the digest of the decompressed bytes before it. A
restart decompresses the file again up to that position (a compressed stream has no index to seek by: the time of
reading what was read once more, ~0.1-1 s a GB) and checks the digest there, so a file replaced since is refused
as an uncompressed one is. :meth:`CompressedLineReader.tell` is the *compressed* bytes read: a replay's progress
is measured against the file's size on disk.

A compressed file is final (no writer appends to a ``.gz``): it is read to its end once and never followed. A
follower (``--follow``) that finds the file it was reading rotated *and compressed* (logrotate's ``compress``
without ``delaycompress``: while it was behind, or stopped) reads the compressed rotation on and then the file at the
path (:func:`compressed_rotation`; :meth:`~streamarms.connectors.files.JsonlSource._rotation`).
:func:`open_lines` picks the reader for a path. zstd has no decoder in Python's standard library: such a file is
refused with the command that decompresses it (:class:`LineReader`'s error).

>>> import gzip, os, tempfile
>>> p = os.path.join(tempfile.mkdtemp(), "r.jsonl.gz")
>>> with gzip.open(p, "wb") as f:
...     _ = f.write(b'{"a": 1}\\n{"a": 2}\\n{"a": 3}\\n')
>>> r = open_lines(p); r.read(2), r.position(2)
(['{"a": 1}', '{"a": 2}'], 18)
>>> pos, dig = r.mark(2); r.close()
>>> r2 = open_lines(p, line=2, pos=pos, digest=dig); r2.read(5), r2.eof
(['{"a": 3}'], True)
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import zlib
from collections.abc import Callable
from typing import IO, Any

from streamarms.checkpoint import CheckpointError
from streamarms.errors import ConfigError

from .file_ids import Listed, Renamed, open_listed
from .file_kinds import PACKED_SUFFIXES, compressed, what_binary
from .jsonl_lines import _HOW, BLOCK, WINDOW, LineReader, rotations_of
from .jsonl_lines import digest as _digest_bytes
from .magics import COMPRESSED, PARQUET, ZIP
from .parquet_lines import ParquetStream
from .text_encoding import Utf16Stream, Utf32Stream, marked
from .workbook_lines import WORKBOOK_SUFFIXES, WorkbookStream, is_workbook

__all__ = ["CompressedLineReader", "open_lines", "compressed_rotation", "compressed_head", "file_head", "packed_kind",
           "DECOMPRESSORS"]

#: the compressed formats read as they are (:func:`compressed`'s names), and what opens them for reading; and
#: UTF-16 text with its byte-order mark, read as its UTF-8 bytes (:mod:`~streamarms.connectors.text_encoding`), and an
#: Excel workbook, read as its sheet's CSV lines (:mod:`~streamarms.connectors.workbook_lines`)
DECOMPRESSORS: dict[str, Callable[[IO[bytes]], Any]] = {
    "gzip": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"), "bzip2": bz2.BZ2File, "xz": lzma.LZMAFile,
    "utf-16": Utf16Stream, "utf-32": Utf32Stream, "xlsx": WorkbookStream, "parquet": ParquetStream}


#: the kinds whose bytes are UTF-8 text made from the file (``--encoding`` is not theirs)
MADE_UTF8 = frozenset({"utf-16", "utf-32", "xlsx", "parquet"})
#: the kinds that are tables made from a file of another format (read, not decompressed)
TABLES = frozenset({"xlsx", "parquet"})

#: how a file of a kind whose first bytes cannot be read is said, and what may be done (others: "decompressed as")
_UNREADABLE = {"xlsx": ("read as an Excel workbook", "; save its sheet as CSV"), "parquet": ("read as a Parquet file", "")}

#: the compressed kinds, and the program that decompresses each to standard output
_PACKERS = {kind: tool for _, kind, tool in COMPRESSED}
#: what a decompressor raises on a damaged or cut file
_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)  # (gzip's damaged data is a zlib.error: no OSError)


def _kind(path: str) -> str | None:
    """The compressed format of the regular file at ``path``, ``utf-16`` for UTF-16 text with its byte-order mark, or
    ``xlsx`` for an Excel workbook (``None``: none of them, or not a regular file: the plain reader says what is wrong
    with it). Its first bytes are read once."""
    try:
        if not os.path.isfile(path):
            return None  # (a named pipe is not opened: that would wait for a writer)
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError:
        return None
    packed = compressed(head)
    return packed[0] if packed is not None else marked(head) or (
        "xlsx" if head.startswith(ZIP) and is_workbook(path) else "parquet" if head.startswith(PARQUET) else None)


def compressed_head(path: str | Listed, n: int = WINDOW) -> bytes | None:
    """The first ``n`` decompressed bytes of the gzip, bzip2 or xz file at ``path`` (``None``: not such a file, or
    unreadable). A follower compares them with the first bytes of the files it read: logrotate's ``compress``
    makes ``F.1.gz`` of the ``F.1`` the follower read, a new file that holds no line it has not read. A file
    :class:`~.file_ids.Listed` is read only while it is the file listed (:class:`~.file_ids.Renamed` if not)."""
    try:
        raw = open_listed(path) if isinstance(path, Listed) else None
    except Renamed:
        raise
    except OSError:
        return None
    name = path.name if isinstance(path, Listed) else path
    kind = _kind(name) if raw is None else packed_kind(raw)
    if kind not in DECOMPRESSORS:
        if raw is not None:
            raw.close()
        return None
    try:
        r = CompressedLineReader(name, kind, raw=raw)
    except (ConfigError, OSError):
        return None
    try:
        return r.head(n)
    finally:
        r.close()


def packed_kind(raw: IO[bytes]) -> str | None:
    """The compressed format of the file open as ``raw`` (its first bytes; ``raw`` left at its start)."""
    try:
        head = raw.read(6)
        raw.seek(0)
    except OSError:
        return None
    packed = compressed(head)
    return packed[0] if packed is not None else None


def file_head(path: str | Listed, n: int) -> bytes:
    """The first ``n`` bytes of the file at ``path``, decompressed when it is a gzip, bzip2 or xz file (a format
    sniffed from them); ``OSError`` when it cannot be read (a file :class:`~.file_ids.Listed`: also when another
    file has its name now, :class:`~.file_ids.Renamed`)."""
    head = compressed_head(path, n)
    if head is None:
        with open_listed(path) if isinstance(path, Listed) else open(path, "rb") as f:
            head = f.read(n)
    return head


def compressed_rotation(path: str, line: int, pos: int | None, digest: str | None) -> CompressedLineReader | None:
    """A followed file's rotation that was compressed while the run was stopped (logrotate's ``compress`` without
    ``delaycompress``) and holds the bytes a checkpoint read (by its position and digest in the decompressed bytes):
    a reader of it at ``line`` / ``pos`` whose :attr:`~LineReader.path` stays ``path``, read to its end and then
    followed by the later rotations and the file at ``path``, as an uncompressed rotation is
    (:func:`~streamarms.connectors.jsonl_lines.rotated_reader`). ``None`` when none holds them."""
    for _, _, _, q in reversed(rotations_of(path)):  # (the newest first: a checkpoint's file was rotated last)
        kind = _kind(q)
        if kind in DECOMPRESSORS:
            try:
                return CompressedLineReader(path, kind, line=line, pos=pos, digest=digest, name=q)
            except (CheckpointError, ConfigError, OSError):
                continue
    return None


def open_lines(path: str, *, line: int = 0, pos: int | None = None, digest: str | None = None,
               follow: bool = False, sheet: str | None = None) -> LineReader:
    """A reader of the lines of ``path`` from ``line`` (a checkpoint's ``pos`` and ``digest``, as
    :meth:`LineReader.mark` gave them): a :class:`CompressedLineReader` for a gzip, bzip2 or xz file, UTF-16 text or
    a workbook (its sheet ``sheet``, ``None``: the active one) that is not followed, else a :class:`LineReader` (which
    refuses any other compressed file with the command that reads it)."""
    kind = _kind(path) if not follow else None
    if kind in DECOMPRESSORS:
        return CompressedLineReader(path, kind, line=line, pos=pos, digest=digest, sheet=sheet)
    if kind is None and not follow and path.lower().endswith(WORKBOOK_SUFFIXES) and os.path.isfile(path):
        raise ConfigError(f"{path} is named as an Excel workbook but is none Excel can open (not a zip holding "
                          "xl/workbook.xml): damaged, cut short, or another format under that name (an .xls: save it "
                          "as .xlsx or CSV)")  # (read as text, its bytes were a header of one odd column)
    return LineReader(path, line=line, pos=pos, digest=digest, follow=follow)


class CompressedLineReader(LineReader):
    """The decompressed lines of the ``kind``-compressed file ``path`` (module docstring); ``line``, ``pos`` and
    ``digest``: a checkpoint's position in the decompressed bytes, as for :class:`LineReader`; ``sheet``: a workbook's
    sheet to read (``None``: its active one).

    >>> import bz2, os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "r.csv.bz2")
    >>> _ = open(p, "wb").write(bz2.compress(b"arm,reward\\na,1\\n"))
    >>> r = CompressedLineReader(p, "bzip2"); r.read(5), r.first_line(), r.tell() == os.path.getsize(p)
    (['arm,reward', 'a,1'], 'arm,reward', True)
    """

    def __init__(self, path: str, kind: str, *, line: int = 0, pos: int | None = None,
                 digest: str | None = None, name: str | None = None, raw: IO[bytes] | None = None,
                 sheet: str | None = None) -> None:
        self.kind = kind
        self._raw: IO[bytes] = raw if raw is not None else open(name or path, "rb")  # (raw: opened, its own now)
        try:
            opener: Callable[[IO[bytes]], Any] = DECOMPRESSORS[kind] if kind != "xlsx" else \
                lambda raw: WorkbookStream(raw, sheet)
            self._dec: IO[bytes] = opener(self._raw)
        except BaseException:
            self._raw.close()
            raise
        #: the first decompressed bytes (a table's header, :meth:`head`): served without reading the file again
        self._first = b""
        try:
            while len(self._first) < BLOCK and (more := self._dec.read(min(4096, BLOCK - len(self._first)))):
                self._first += more
        except _ERRORS as e:
            if not self._first:
                self._raw.close()
                what, after = _UNREADABLE.get(kind, (f"decompressed as {kind}", ", or another format that starts "
                                                                                  "with the same bytes"))
                raise ConfigError(f"{path} cannot be {what} ({e}): a damaged file{after}") from e
        if kind in _PACKERS:
            self._refuse_no_text(path, kind)
        self._dec.seek(0)
        #: why the file could not be decompressed to its end (a file cut short or damaged), once met: the lines
        #: before it are read, the bytes after the last whole line are not (the source fails with this reason)
        self.damage: str | None = None
        self._error: BaseException | None = None  # (the decompressor's, once met)
        try:
            super().__init__(path, line=line, pos=pos, digest=digest, file=self._dec)
        except BaseException:
            self._raw.close()
            raise
        self.file_name = name or path

    def _refuse_no_text(self, path: str, kind: str) -> None:
        """A ``ConfigError`` (the file closed) when the decompressed bytes are no text but a Parquet file, a zip
        archive or another compressed file (a ``.parquet.gz``): read as lines they would be rows of garbage. It
        names the command that decompresses the file, whose output ``run`` reads as it reads such a file."""
        what = what_binary(self._first)
        if what is None:
            return
        self._raw.close()
        stem, ext = os.path.splitext(path)
        out = stem if ext.lower() in PACKED_SUFFIXES and stem else "FILE"
        raise ConfigError(f"{path} is {what} compressed with {kind}, no text: decompress it first "
                          f"({_PACKERS[kind]} {path} > {out}) and read {out}")

    def tell(self) -> int:
        """The *compressed* bytes read so far (a replay's progress against the file's size on disk)."""
        return self._raw.tell()

    def close(self) -> None:
        self._dec.close()
        self._raw.close()

    def moved(self) -> bool:
        """A compressed rotation read in place of its path (``name``, :func:`compressed_rotation`) is a file moved
        away: once read to its end the follower goes on with the next one. A compressed file is never followed."""
        return self.file_name != self.path

    def changed(self) -> str | None:
        return None

    def size_now(self) -> int:
        """The decompressed size once read to its end, else -1 (:meth:`LineReader.size_now`)."""
        return self._end_pos if self.eof and self.damage is None else -1

    def _read_block(self) -> bytes | None:
        if self._error is not None:
            return b""
        start = self._dec.tell()
        try:
            return self._dec.read(self._block)
        except _ERRORS as e:  # a file cut short (still being compressed) or corrupt
            self._error = e
            return self._salvage(start, e)

    def _salvage(self, start: int, e: BaseException) -> bytes:
        """The decompressed bytes from ``start`` up to the damage, decompressed again a piece at a time (a block read
        that fails gives none of the bytes it decompressed: a file cut short lost up to a block of whole lines), for
        a file cut short or with bytes after its last gzip member -- bytes a checksum has vouched for, not those of a
        corrupt stream; at most a block (the damage lies within it: a block read without one is a file that grew
        meanwhile, read on as usual); ``b""`` otherwise."""
        if self.kind not in ("gzip", "bzip2", "xz") or not (
                isinstance(e, EOFError) or "Not a gzipped file" in str(e)):
            return b""
        got = bytearray()
        try:
            self._raw.seek(0)
            self._dec = DECOMPRESSORS[self.kind](self._raw)
            self._dec.seek(start)  # (from the start again: once, for a damaged file)
            while len(got) < self._block and (more := self._dec.read1(  # type: ignore[attr-defined]
                    min(1 << 14, self._block - len(got)))):
                got += more
            self._error = None  # (no damage met again: the file grew, or was completed, meanwhile: read on)
        except _ERRORS:
            pass
        return bytes(got)

    def _at_end(self) -> None:
        if self._error is None:
            super()._at_end()
            return
        self.eof = True  # (damaged: the bytes after the last line end may be half a line, never read as one)
        cut = b"".join(self._carry)
        self._carry.clear()
        self.incomplete = b""  # (no later run reads more of a damaged file: not an incomplete line to wait for)
        left = f", nor the {len(cut):,} bytes of a line cut short there" if cut.strip() else ""
        self.damage = (f"{self.path} cannot be {'read' if self.kind in TABLES else 'decompressed'} after its line "
                       f"{self._end_line:,} ({self._error}): a {self.kind} file cut short or damaged; the lines before "
                       f"were read, nothing after{left}")

    def _pread(self, n: int, at: int) -> bytes:
        """``n`` decompressed bytes from ``at``: the first ones from memory; elsewhere by seeking the decompressed
        stream (backwards: decompressing it again from its start) and back."""
        if at + n <= len(self._first):
            return self._first[at:at + n]
        here = self._dec.tell()
        try:
            self._dec.seek(at)
            return self._dec.read(n)
        except _ERRORS:  # (damaged after the first bytes: the reading itself says so, at its end)
            return self._first[at:at + n]
        finally:
            try:
                self._dec.seek(here)
            except _ERRORS:
                pass

    def _size(self) -> int:
        """The decompressed size (decompressing the rest of the file: for an error's message only)."""
        here = self._dec.tell()
        try:
            while self._dec.read(1 << 20):
                pass
            return self._dec.tell()
        finally:
            self._dec.seek(here)

    def _seek(self, line: int, pos: int, digest: str | None) -> None:
        """To the checkpoint's ``pos`` in the decompressed bytes, in one pass: its first bytes, the bytes before it
        (compared with ``digest``) and the two after it (a last line that had no line end then)."""
        w = min(WINDOW, pos)
        head = self._pread(w, 0)
        try:
            self._dec.seek(pos - w)
            around = self._dec.read(w + 2)
        except _ERRORS as e:
            raise CheckpointError(f"{self.path} cannot be decompressed up to the checkpoint's position in it (line "
                                  f"{line:,}, byte {pos:,} decompressed): {e}. {_HOW}") from e
        if len(around) < w:
            size = self._dec.tell()
            raise CheckpointError(
                f"{self.path} is shorter than the checkpoint's position in it: {size:,} bytes decompressed now, but "
                f"the checkpoint had read {pos:,} bytes ({line:,} lines); the file was replaced since. {_HOW}")
        before, after = around[:w], around[w:]
        if digest is not None and digest != _digest_bytes(head + before):
            raise CheckpointError(
                f"{self.path} is not the file the checkpoint read: its bytes before the checkpoint's position "
                f"(line {line:,}, byte {pos:,} decompressed) differ from those the checkpoint saw; the file was "
                f"replaced since. {_HOW}")
        shift = 0
        if (before[-1:] if pos else b"\n") not in (b"\n", b"\r") and after[:1] in (b"\n", b"\r") and after != b"\r":
            shift = 2 if after == b"\r\n" else 1  # (LineReader._seek: the last line read has its line end now)
        pos += shift
        self._dec.seek(pos)  # (back by at most two bytes: within the decompressed buffer)
        self.line = self._end_line = line
        self._end_pos = pos
        w = min(WINDOW, pos)
        self._head = self._pread(w, 0)
        self._last = self._tail = (before + after[:shift])[len(before) + shift - w:]

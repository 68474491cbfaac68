"""JSON Lines files (and tables, logs): replay a recorded stream of rewards, or follow files as they grow.
(Alerts, requests and dead letters are written by :mod:`~streamarms.connectors.file_sinks`.)

Input lines (one record each)::

    {"key": "eu-west", "value": {"reward": 1}, "timestamp": 1700000000123}
    {"key": "eu-west", "value": "{\\"reward\\": 1}"}          # value as the raw string of a record
    {"arm": "eu-west", "reward": 1, "timestamp": 1700000000123}  # shorthand: the line is the value
    {"key": "eu-west", "reward": 1}                               # the same: "key" without "value"

A line with ``key`` is the envelope only when it also has ``value`` (``null`` there: a record without a
value); without ``value`` it is the shorthand, its key in ``key`` (such lines were all refused as having no
value). The key (``key`` or ``arm``) is a string or an integer; any other JSON value there (a bool, a float, a
list, an object) makes a record without a key, like a missing one. ``timestamp`` is in milliseconds since
the epoch (as in Kafka), or an ISO 8601 date-time (``"2026-11-25T14:00:00.123Z"``; UTC unless it says
otherwise: the logs of structlog and many JSON loggers), and optional; without it the stream clock does not
move, so use ``--clock wall`` if wants should time out. A timestamp that is there must be a number from 0 to
:data:`MAX_TIMESTAMP_MS` (the last millisecond of the year 9999; a fraction is cut off) or such a date-time:
any other value (another string, a boolean, ``null``, NaN, a negative number, ``1e300``) refuses the line as
``bad_timestamp`` -- it would otherwise move the stream clock to a time no stream has, or silently be no
timestamp. Another field, or seconds, where a :class:`~streamarms.connectors.line_time.LineTime` says
(``--timestamp-field``, ``--timestamp-unit``). A line that is not JSON is refused as ``not_json``, one that is JSON but not an object as ``not_object``: each
such line becomes a record whose key is a :class:`~streamarms.runtime.records.RefusedKey`, so the
codec refuses it with that reason and it reaches the dead letters. A UTF-8 byte order mark at the start
of a file is not part of its first line. Several files are merged like partitions
(:class:`~streamarms.connectors.ordering.PartitionMerger`); a file's "offset" is its line number, so a
checkpoint resumes a replay exactly: it also saves the line's byte position and a digest of the bytes
before it, and a restart seeks there, refusing a file that is now shorter or different
(:mod:`~streamarms.connectors.jsonl_lines`). A last line without its newline is read when it is a whole
JSON object; otherwise (a line still being written) it is left unread -- not a dead letter, not past the
checkpoint's position -- and :attr:`JsonlSource.incomplete` names it: a later run reads it once it is
complete. With ``follow=True`` (``streamarms run --follow``) the source reads the files as they grow, like
``tail -F``: a line is read once its line end is written, and the source is never exhausted. A file renamed
away (rotated) is read to its end, and then the file at its path from its first line, its lines numbered on
(:meth:`JsonlSource._rotated`; the switch waits until every line of the old file is handled, so a
checkpoint's position is always in the file at the path or, after a rotation while the run was stopped, in
the sibling :func:`~streamarms.connectors.jsonl_lines.rotated_reader` finds). A file truncated or rewritten
under it is followed through the copy beside it (``copytruncate``, :meth:`JsonlSource._copied`); with no
copy it ends the source with that reason (:attr:`JsonlSource.failure`).

>>> import tempfile, os, json
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "r.jsonl")
>>> with open(p, "w") as f:
...     _ = f.write('{"arm": "a", "reward": 1, "timestamp": 5}\\nnot json\\n')
>>> src = JsonlSource([p])
>>> [(r.key, r.offset) for r in src.poll()], src.exhausted  # doctest: +ELLIPSIS
([(b'a', 0), (('not_json', 'the line is not JSON (JSONDecodeError: Expecting value: ...)', None), 1)], True)
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from streamarms.checkpoint import CheckpointError
from streamarms.errors import ConfigError

from .compressed_lines import (
    MADE_UTF8,
    CompressedLineReader,
    compressed_rotation,
    open_lines,
)
from .csv_lines import CsvTable
from .file_ids import FileIds
from .file_watch import PatternWatch, ReadFiles, open_ids
from .follow_rotations import (
    ReadHeads,
    copy_of,
    next_file,
    resumed_at_start,
    rotated_and_removed,
    unread_copy,
)
from .jsonl_lines import (
    LONG_KEPT,
    WINDOW,
    FolderListings,
    LineReader,
    rotated_reader,
    rotation_ids,
    rotations_known,
)
from .line_parse import DEFAULT_TIME, line_by_line, refused_line, shorthand_chunk
from .line_record import JsonlRecord
from .line_time import MAX_TIMESTAMP_MS, LineTime
from .open_files import room_for
from .ordering import PartitionMerger, tp_name
from .owed_rotations import HEAD as OWED_HEAD
from .owed_rotations import OwedRotations
from .pattern_lines import PatternLines
from .pipe_lines import STDIN, PipeLineReader
from .quiet_files import QuietFiles
from .record_time import TimestampScreen
from .start_mark import start_mark
from .text_encoding import UTF8

log = logging.getLogger("streamarms.files")


__all__ = ["JsonlRecord", "JsonlSource", "MAX_TIMESTAMP_MS"]


def unread_ends(readers: dict[str, Any], tables: dict[str, Any]) -> dict[str, int]:
    """The bytes each file's end holds unread: an incomplete last line (:attr:`LineReader.incomplete`), and the parts
    of a line a table holds until its last comes (``held``: a container's line written in parts)."""
    out = {}
    for p, r in readers.items():
        n = (len(r.incomplete) if r.incomplete.strip() else 0) + getattr(tables.get(p), "held", lambda q: 0)(p)
        if n:
            out[p] = n
    return out


def bytes_read(readers: dict[str, LineReader], path: str | None = None) -> int:
    """The bytes of the files the ``readers`` read so far (standard input not counted): a replay's progress;
    ``path``: of that file alone."""
    done = 0
    for p, r in readers.items():
        if not r.pipe and (path is None or p == path):
            try:
                done += r.tell()
            except (OSError, ValueError):  # (a file closed under it: progress is advisory)
                pass
    return done


def unread_bytes(readers: dict[str, LineReader]) -> int:
    """The bytes of the followed files the ``readers`` have not read yet: what lies past each reader in its file (not
    counted: a compressed rotation's rest, standard input), and, for a reader still on a file rotated away, the
    whole file now at its path -- a follower's lag (rotations between the two, not listed here, not counted).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "app.log"); _ = open(p, "w").write("{}\\n" * 10)
    >>> r = open_lines(p, follow=True); _ = r.read(4); unread_bytes({p: r}), r.tell()
    (0, 30)
    >>> _ = open(p, "a").write("{}\\n" * 5); os.rename(p, p + ".1"); _ = open(p, "w").write("{}\\n" * 2)
    >>> unread_bytes({p: r})  # (5 lines appended to the file read, then 2 in the new file at its path)
    21
    >>> r.close()
    """
    lag = 0
    for p, r in readers.items():
        if r.pipe:
            continue
        try:
            mine = os.fstat(r.fileno())
            if not isinstance(r, CompressedLineReader):
                lag += max(0, mine.st_size - r.tell())
            at_path = os.stat(p)
            if (at_path.st_dev, at_path.st_ino) != (mine.st_dev, mine.st_ino):
                lag += at_path.st_size
        except (OSError, ValueError):  # (nothing at the path now, a file closed under it: lag is advisory)
            pass
    return lag


def _refuse_json_document(path: str, head: bytes) -> None:
    """A :class:`ConfigError` for a JSON-lines path whose file is one JSON array (an API's or a database's export),
    from its first bytes (``head``, up to :data:`ARRAY_HEAD`): indented (its first line is ``[``) or compact (one
    line ``[{...}, ...]``, the file's only one); or objects written over several lines (``json.dumps(.., indent=2)``,
    ``jq .``: its first line is ``{`` alone, which no JSON-lines file has). Read as lines, every line of it was
    refused as ``not_json`` (an indented one) or it was one incomplete line (a compact one), with no word of what the
    file is. A JSON-lines file whose first line is a bad record (``[1]``, then more lines) is read as one: that line
    is a dead letter.

    >>> _refuse_json_document("r.jsonl", b'[1]\\n{"arm": "a"}\\n'); _refuse_json_document("x.json", b"\\xef\\xbb\\xbf [\\n  {")
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: x.json is one JSON array, not JSON lines (one object a line): write its elements \
a line each first (jq -c '.[]' x.json > x.jsonl), or pipe them into the run (jq -c '.[]' x.json | streamarms run \
--rewards-file - ...)
    >>> _refuse_json_document("p.json", b'{\\n  "arm": "a"\\n}\\n{\\n')
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: p.json holds JSON objects written over several lines (pretty-printed: its first \
line is { alone), not JSON lines (one object a line): write them a line each first (jq -c . p.json > p.lines.jsonl), \
or pipe them into the run (jq -c . p.json | streamarms run --rewards-file - ...)
    >>> _refuse_json_document("y.json", b'[{"arm": "a"}, {"arm": "b"}]\\n')
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: y.json is one JSON array, not JSON lines (one object a line): write its elements \
a line each first (jq -c '.[]' y.json > y.jsonl), or pipe them into the run (jq -c '.[]' y.json | streamarms run \
--rewards-file - ...)
    """
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if text[:1] == b"{" and text[1:text.find(b"\n") if b"\n" in text else len(text)].strip() == b"":
        stem = path.removesuffix(".json").removesuffix(".jsonl")
        raise ConfigError(f"{path} holds JSON objects written over several lines (pretty-printed: its first line is "
                          "{ alone), not JSON lines (one object a line): write them a line each first (jq -c . "
                          f"{path} > {stem}.lines.jsonl), or pipe them into the run (jq -c . {path} | streamarms run "
                          "--rewards-file - ...)")
    if text[:1] != b"[":
        return
    end = text.find(b"\n")
    first, rest = (text, b"") if end < 0 else (text[:end].strip(), text[end + 1:])
    indented = first == b"["
    compact = first[1:].lstrip()[:1] == b"{" and not rest.strip() and (end < 0 or len(head) < ARRAY_HEAD)
    if indented or compact:
        raise ConfigError(f"{path} is one JSON array, not JSON lines (one object a line): write its elements a line "
                          f"each first (jq -c '.[]' {path} > {path.removesuffix('.json')}.jsonl), or pipe them into "
                          f"the run (jq -c '.[]' {path} | streamarms run --rewards-file - ...)")


def _refuse_long(p: str, chunk: list[JsonlRecord], reader: LineReader, n: int, lines: list[str]) -> list[JsonlRecord]:
    """``chunk`` (the records of ``lines``, from line ``n``) with each line too long to keep
    (:attr:`~streamarms.connectors.jsonl_lines.LineReader.too_long`) a ``line_too_long`` dead letter of its first
    bytes, whatever its first bytes were read as."""
    at = {r.offset: i for i, r in enumerate(chunk)}
    added = []
    for line in range(n, n + len(lines)):
        size = reader.too_long.pop(line, None)
        if size is None:
            continue
        refused = refused_line(p, line, lines[line - n], f"a line of {size:,} bytes, longer than {reader.max_line:,}: "
                               f"not read (its first {LONG_KEPT:,} bytes are this dead letter's); a file of NUL bytes "
                               "left by a crash, or no text file, is one such line", "line_too_long")
        if line in at:
            chunk[at[line]] = refused
        else:
            added.append(refused)
    return sorted(chunk + added, key=lambda r: r.offset) if added else chunk


def _table(given: str | Any, line_time: LineTime) -> CsvTable | PatternLines:
    """The reader of a table as ``tables`` gives it: a delimiter's :class:`CsvTable`, or the reader itself."""
    return CsvTable(given, line_time) if isinstance(given, str) else given


def _table_rows(p: str, table: CsvTable | PatternLines, reader: LineReader, lines: list[str], n: int,
                headed: dict[str, LineReader]) -> list[JsonlRecord]:
    """The records of a table's ``lines`` (from line ``n``) read from ``p`` by ``reader``: the line at the file's
    first byte is its header (each file read has its own: a rotation's, a copy's); a reader that starts past it
    reads it first (``headed``: the reader whose header each path's table holds)."""
    if not lines:
        return []
    at_header = reader.position(n) == 0
    if not at_header and headed.get(p) is not reader:
        table.resume_header(reader, reader.position(n))
    headed[p] = reader
    return table.records(p, lines, n, header_line=at_header)


#: the first bytes of a JSON-lines file read to tell a JSON array document from it (:func:`_refuse_json_document`)
ARRAY_HEAD = 1 << 20


class Readers(dict[str, LineReader]):
    """The reader of each path, each given the files' ``encoding`` (``--encoding``) as it joins: a reader replaced
    (a rotation, a copy) reads in the same encoding as the first. A UTF-16 file's or a workbook's reader gives UTF-8.
    ``sheet``: the sheet of a workbook to read (``--sheet``; ``None``: its active one)."""

    def __init__(self, encoding: str, sheet: str | None = None) -> None:
        super().__init__()
        self.encoding = encoding
        self.sheet = sheet

    def __setitem__(self, path: str, reader: LineReader) -> None:
        reader.encoding = UTF8 if getattr(reader, "kind", None) in MADE_UTF8 else self.encoding
        super().__setitem__(path, reader)


class JsonlSource:
    """Replays JSONL files (module docstring); ``exhausted`` once every line was delivered. Its
    records carry their parsed values (``decoded_values``: :data:`JsonlRecord`'s ``parsed``).

    ``follow``: the files still grow (``tail -F``); a :meth:`poll` that finds nothing new waits up to its
    ``timeout`` for more, a file renamed away (or copied and truncated) is followed to the file at its path
    (:attr:`rotations`), and the source is exhausted only when a file was truncated or rewritten under it with
    no copy beside it (:attr:`failure`). ``patterns``: the ``--rewards-file`` patterns the paths were
    expanded from; a checkpoint's file of one that is gone, its lines not all read, is said lost
    (:meth:`~.owed_rotations.OwedRotations.resumed`); following, a file that comes to match one joins the files
    read (``table_of(path)``: what ``tables`` would say of it; :mod:`~streamarms.connectors.file_watch`).
    The path ``-`` is standard input (:mod:`~streamarms.connectors.pipe_lines`): read until its writer
    closes it, with or without ``follow``; it cannot be resumed. ``tables``: the paths that are CSV or TSV
    tables, with their delimiters (:mod:`~streamarms.connectors.csv_lines`: a row is the record of its JSON
    line), or plain-text logs, with the :class:`~streamarms.connectors.pattern_lines.PatternLines` that reads
    their lines. ``max_timestamp_ahead``: seconds a line may be stamped after this machine's clock (``None``: no
    limit; later: ``bad_timestamp``, :mod:`.record_time`). ``encoding``, ``sheet``: the files' (:class:`Readers`).
    """

    decoded_values = True

    def __init__(self, paths: Sequence[str], *, resume: dict[str, Any] | None = None, max_records: int = 1000,
                 ordered: bool = True, follow: bool = False, line_time: LineTime = DEFAULT_TIME,
                 tables: dict[str, str | Any] | None = None, patterns: Sequence[str] = (),
                 table_of: Callable[[str], str | Any | None] | None = None,
                 max_timestamp_ahead: float | None = None, encoding: str = UTF8, sheet: str | None = None) -> None:
        self.paths = [os.fspath(p) for p in paths]
        self.timestamps = TimestampScreen(max_timestamp_ahead, "streamarms.files")
        #: where a line's time is (``--timestamp-field``, ``--timestamp-unit``)
        self.line_time = line_time
        #: the paths that are tables (CSV, TSV: ``tables`` gives their delimiters), read by their header, or
        #: read by a pattern (``tables`` gives the :class:`~streamarms.connectors.pattern_lines.PatternLines`)
        self.tables = {os.fspath(p): _table(d, line_time) for p, d in (tables or {}).items()}
        #: the reader of each table whose header its :class:`CsvTable` holds
        self._headed: dict[str, LineReader] = {}
        self.max_records = max_records
        self.follow = follow
        #: following: why the source cannot go on (a file truncated or rewritten), else None
        self.failure: str | None = None
        #: following: the files renamed away and followed to the new file at their path
        self.rotations = 0
        #: following: the rotations a follower behind has yet to read, and those removed before it did (``lost``)
        self.owed = OwedRotations()
        #: following: the rotated files of each path read since the path's own file
        self._read_files: dict[str, FileIds] = {}
        #: following: the rotations of each path there when its reader started at its first byte (:meth:`_unread_copied`)
        self._known: dict[str, FileIds] = {}
        #: following: the first bytes of the last files of each path read to their end (:func:`packed_read`)
        self._heads = ReadHeads()
        #: following: the files with nothing new when last looked at (looked at by one stat)
        self._quiet = QuietFiles()
        self._listings = FolderListings()  # (a poll's: cleared at each)
        #: following: the files read to their end and closed (:meth:`_join` does not take them again)
        self._done = ReadFiles()
        self.merger = PartitionMerger(ordered=ordered)
        self.merger.assign([(p, 0) for p in self.paths], resume or {})
        self._readers = Readers(encoding, sheet)
        self._eof: dict[str, bool] = {}
        #: following patterns: the new matches that join the files read (:meth:`_join`)
        self.watch = PatternWatch(patterns) if follow and patterns else None
        self._table_of = table_of
        room_for(len(self.paths))  # (every file stays open while the replay runs)
        try:
            unread = []
            for p in self.paths:
                start = self.merger.next_offset((p, 0)) or 0
                self.merger.set_position((p, 0), start)
                if self._open(p, start, (resume or {}).get(tp_name((p, 0))) or []):
                    unread.append(p)
            self._known.update(rotations_known(unread))  # (after every file was opened)
            self.owed.resumed(resume, self.paths, patterns or [])  # (a pattern's file removed while stopped: said)
        except BaseException:
            self.close()
            raise

    def _open(self, p: str, start: int, st: Sequence[Any]) -> bool:
        """The reader of ``p`` from line ``start`` (``st``: its checkpoint entry), its table's header read; whether
        the rotations of ``p`` there now are to be known (:meth:`_unread_copied`: following, from its first line)."""
        # a checkpoint of this version: the line's byte position and digest (an older one: the line only)
        pos, digest = (st[2], st[3]) if len(st) >= 4 else (None, None)
        if p == STDIN:
            if start:
                raise CheckpointError(f"the checkpoint has read {start:,} lines of standard input, which "
                                      "cannot be read again: a pipe cannot be resumed")
            self._readers[p] = PipeLineReader()
        else:
            self._heads.restore(p, st[6] if len(st) >= 7 else None)  # (before the reader: it may read on a rotation)
            self._readers[p] = self._reader(p, start, pos, digest, st[4] if len(st) >= 5 else None)
            if p in self.tables and self._readers[p].head(1):
                # (a bad header is an error now, not a dead letter a row later)
                self.tables[p].set_header(self._readers[p].first_line(), p)
            elif p not in self.tables:
                _refuse_json_document(p, self._readers[p].head(ARRAY_HEAD))
        self._eof[p] = False
        return self.follow and p != STDIN and not pos and self._readers[p].file_name == p

    def _join(self) -> None:
        """Following patterns: each new match (:class:`~streamarms.connectors.file_watch.PatternWatch`) is read
        from its first line and followed, as a file given; one that cannot be read is said once, and one that
        cannot be *opened* is tried again at the next look (``PatternWatch.refuse``)."""
        assert self.watch is not None
        open_now = functools.cache(lambda: open_ids(self._readers.values()))  # (once a look, if asked)
        for q in self.watch.new_files(self.paths, lambda q, st: self._done.holds(q, st, open_now)):
            try:
                room_for(len(self.paths) + 1)
                table = self._table_of(q) if self._table_of is not None else None
                if table is not None:
                    self.tables[q] = _table(table, self.line_time)
                if self._open(q, 0, []):
                    self._known[q] = rotation_ids(q)
            except (OSError, ConfigError, CheckpointError) as e:
                self._forget(q)
                self.watch.refuse(q, e)  # (said once; a passing OSError: taken again at the next look)
                continue
            self.watch.taken(q)
            self.paths.append(q)
            self.merger.extend([(q, 0)])
            self.merger.set_position((q, 0), 0)
            log.info("%s appeared while following (--rewards-file names it, or a pattern of it): following it too, from its "
                     "first line", q)

    def _forget(self, p: str) -> None:
        """``p`` is read no more (:meth:`_join`, :meth:`_rotated`): out of the source's tables, its reader closed."""
        for table in (self.tables, self._headed, self._eof, self._known, self._read_files, self._heads):
            table.pop(p, None)
        if (reader := self._readers.pop(p, None)) is not None:
            reader.close()

    def _reader(self, p: str, line: int, pos: int | None, digest: str | None, mark: Any = None) -> LineReader:
        """The reader of ``p`` from the checkpoint's position; following, the checkpoint's file where a rotation renamed
        it (:func:`rotated_reader`; at its first byte: ``mark``, :mod:`.start_mark`), then ``p`` (:meth:`_rotated`)."""
        if self.follow and not pos and mark is not None and \
                (first := resumed_at_start(p, mark, line, self._listings.of(p))) is not None:
            return first
        try:
            return open_lines(p, line=line, pos=pos, digest=digest, follow=self.follow, sheet=self._readers.sheet)
        except (CheckpointError, FileNotFoundError):
            found = (rotated_reader(p, line, pos, digest) or compressed_rotation(p, line, pos, digest)) \
                if self.follow and digest else None
            if found is None:
                rotated_and_removed(p, self.follow and digest is not None)
                raise
            log.info("%s: the checkpoint's file was rotated while the run was stopped; reading it on as %s, then "
                     "the file at %s", p, found.file_name, p)
            return found

    def poll(self, timeout: float = 0.0) -> list[JsonlRecord]:
        if self.watch is not None and self.failure is None and self.watch.due():
            self._join()
        left = self.max_records
        self._listings.clear()
        todo = self._quiet.awake(self.paths)  # (a quiet file between two looks rests)
        while todo and left > 0:  # a share of the poll per file; the shares of files at their end go to the others
            per = max(1, left // len(todo))
            more = []
            for p in todo:
                got = self._read(p, per)
                left -= got
                if got == per:
                    more.append(p)
            todo = more
        out = self.timestamps(self.merger.release(lambda tp: self._eof[tp[0]]))
        if not out and all(self._eof.values()) and (any(map(self._live, self.paths)) or self.watch is not None):
            self._idle(timeout)
        return out

    def _read(self, p: str, per: int) -> int:
        """Read up to ``per`` lines of ``p`` into the merger; how many were read."""
        checked = False
        if self.follow and not self._eof[p] and self.owed.due(p) and self._readers[p].moved():  # (behind a rotation)
            self.owed.note(p, os.fstat(self._readers[p].fileno()).st_mtime_ns)
        if self._eof[p] and self._live(p):
            if self._quiet.skip(p):
                return 0  # (unchanged since it was looked at: one stat, not the checks below)
            if self._unread_copied(p):
                pass
            elif self._readers[p].moved():
                if not self._rotated(p):
                    return 0
            elif (why := self._readers[p].changed()) is not None:
                if self.merger.buffered((p, 0)):
                    return 0  # its lines are handled first: a checkpoint's position stays in what was read
                if not self._copied(p, why):
                    return 0
            self._readers[p].more()
            self._eof[p] = False
            checked = True
        elif self.follow and not self._eof[p] and not self._readers[p].pipe and not self._uncut(p):
            return 0
        if self._eof[p] or self.merger.buffered((p, 0)) > self.merger.max_buffer:
            return 0
        reader = self._readers[p]
        if p in self.tables:
            reader.whole = self.tables[p].whole
        reader.forget(self.merger.next_offset((p, 0)) or 0)  # no checkpoint goes back before it
        n = reader.line
        lines = reader.read(per)
        if len(lines) < per:
            self._eof[p] = True
            if checked and not lines:
                self._quiet.mark(p, reader)  # (looked at, nothing new)
            if self.failure is None and (damage := getattr(reader, "damage", None)) is not None:
                self.failure = damage  # (a compressed file cut short: its lines before are read, the run says so)
        table = self.tables.get(p)
        chunk: list[JsonlRecord] | None
        if table is not None:
            chunk = _table_rows(p, table, reader, lines, n, self._headed)
        else:
            chunk = shorthand_chunk(p, lines, n) if self.line_time.default else None
            if chunk is None:
                chunk = line_by_line(p, lines, n, self.line_time)
        if reader.too_long:
            chunk = _refuse_long(p, chunk, reader, n, lines)
        self.merger.add((p, 0), chunk)
        return len(lines)

    def _uncut(self, p: str) -> bool:
        """A followed file not at its end: whether reading goes on (a ``copytruncate`` while the follower was behind, the
        file regrown past its offset, had it read on in the new bytes; :meth:`_unread_copied`, :meth:`_copied`)."""
        r = self._readers[p]
        if self.failure is not None or self._unread_copied(p) or r.moved() or (why := r.changed()) is None:
            return True  # (renamed: read on; another file's failure: read to its end, then the source is exhausted)
        if self.merger.buffered((p, 0)):
            return False  # (its lines are handled first: a checkpoint's position stays in what was read)
        if self._copied(p, why, ahead=True):
            return True
        self._eof[p] = True  # (no copy: the source fails, and the bytes after the offset are not this file's)
        return False

    def _rotated(self, p: str) -> bool:
        """The followed file ``p`` was renamed away (rotated): whether reading goes on. First its last lines
        (a writer's lines before the rotation; a last one without its line end counts when it is a whole
        object, the file is final now); then, once every line of it is handled (a checkpoint's position is in
        the file at the path) and a file is at the path again, that file from its first line, its lines
        numbered on from the old file's (a checkpoint resumes it by its own position and digest)."""
        old = self._readers[p]
        if old.follow:  # the rotation just seen: the old file's last lines first
            old.follow = False
            return True
        st = os.fstat(old.fileno())
        if self.owed.due(p):  # (also while its lines wait in the merger: rotations go on)
            self.owed.note(p, st.st_mtime_ns)
        if self.merger.buffered((p, 0)):
            return False
        seen = self._read_files.setdefault(p, FileIds())
        seen.add_fd(old.fileno())
        self._heads.add(p, old.head(WINDOW))
        try:  # (the path renamed, the new file not created yet, or the rotation gone: wait)
            nxt, got = next_file(p, st.st_mtime_ns, seen, self._heads.of(p), old.line)
            new = self._taken(got)
        except FileNotFoundError as e:
            if e.filename == p and self.watch is not None and self.watch.matches(p):  # (no rotation, no file at p)
                self._retire(p)
            else:
                self._quiet.gone(p)  # (until a file comes to its path: one stat, not a folder listing, a look)
            return False
        if new is None:
            return False
        self.owed.settle(p, old.head(OWED_HEAD))
        if old.incomplete.strip():
            log.warning("%s was rotated with an incomplete last line of %d bytes (no line end, not a whole JSON "
                        "object or row): not read", p, len(old.incomplete))
        log.info("%s was rotated after line %d: following %s", p, old.line, "the new file at its path"
                 if nxt is None else f"{nxt.name}, rotated before it was read, then the path")
        self._done.add(old)  # (read: a pattern that matches it under another name does not read it again)
        old.close()
        if nxt is None:
            seen.clear()  # (the path's file: a rotation of it later is a new file to the follower)
            self._known[p] = rotation_ids(p)
        self._readers[p] = new
        self.rotations += 1
        return True

    def _retire(self, p: str) -> None:
        """A pattern's match read to its end and removed (a log past its retention) or renamed away, no file at its
        path: read no more, its reader closed (a removed file's space is freed); a file that comes to its path is
        a new match (:meth:`_join`)."""
        self._done.add(self._readers[p])
        self._forget(p)
        self.paths.remove(p)
        self.merger.drop((p, 0))
        log.info("%s was removed or renamed away after its last line was read: following it no more (a file that "
                 "comes to its path is read as a new one)", p)

    def _taken(self, got: LineReader | str) -> LineReader | None:
        """A reader :func:`rotation_reader` gave; ``None`` and the source fails (its reason) when it gave why not."""
        if isinstance(got, str):
            self.failure = got
            return None
        return got

    def _unread_copied(self, p: str) -> bool:
        """A follower of ``p``'s own file that has read none of it yet cannot see it truncated: a ``copytruncate`` then
        leaves the copy as the only trace. A rotation of ``p`` new since the reader started (not its own file) holds
        lines it has not read: read it first (then the chain, then ``p``: :meth:`_rotated`); whether it did."""
        r = self._readers[p]
        known = self._known.get(p)
        if known is None or r.offset or r.file_name != p or self.merger.buffered((p, 0)) or r.moved():
            return False  # (moved: renamed away, its lines not read yet -- the rotations after it are no copies)
        listing = self._listings.of(p) if not os.fstat(r.fileno()).st_size else None  # (lines to lose: listed afresh)
        found = unread_copy(p, r, known, self._heads.of(p), listing)
        if found is None or (copy := self._taken(found[1])) is None:
            return False
        known.add_fd(copy.fileno())
        log.info("%s was copied to %s and truncated before any of it was read (copytruncate): reading the copy, "
                 "then the file at its path from its start", p, found[0].name)
        r.close()
        self._readers[p] = copy
        self.rotations += 1
        return True

    def _copied(self, p: str, why: str, ahead: bool = False) -> bool:
        """The followed file ``p`` was truncated or rewritten (:meth:`LineReader.changed` says ``why``): when a
        sibling holds a copy of what was read (``copytruncate``), read the copy on and then ``p`` from its start
        (as after a rename: :meth:`_rotated`), and say so; else the source fails (:attr:`failure`). ``ahead``:
        the reader is not at its end (:func:`copy_of`)."""
        old = self._readers[p]
        try:
            copy = copy_of(p, old, ahead)
        except CheckpointError as e:
            copy, why = None, f"{why}; {e}"
        if copy is None:
            self.failure = (f"{why}: following stops, the checkpoint stays at the last line read of the file it "
                            "was (a file renamed away, or truncated after a copy beside it -- logrotate's default "
                            "and its copytruncate -- is followed; this one has no copy of what was read: put the "
                            "file back, or start a new run on the new file with another --checkpoint)")
            return False
        log.info("%s was truncated after line %d with a copy in %s (copytruncate): reading the copy on, then the "
                 "file at its path from its start (lines written between the copy and the truncation are lost to "
                 "any reader)", p, old.line, copy.file_name)
        old.close()
        self._readers[p] = copy
        return True

    def _live(self, p: str) -> bool:
        """Whether ``p`` may have more lines than those read: a pipe until its writer closes it, a followed
        file until it changed under the source."""
        reader = self._readers[p]
        return self.failure is None and (not reader.eof if reader.pipe else self.follow)

    def _idle(self, timeout: float) -> None:
        """Every file read to its end, and one may grow: wait (for a pipe's next bytes, or ``timeout``)."""
        if self.failure is not None:
            return
        pipe = self._readers.get(STDIN)
        if pipe is not None and self._live(STDIN):
            pipe.wait(timeout)  # type: ignore[attr-defined]
        elif timeout > 0:
            time.sleep(timeout)

    @property
    def exhausted(self) -> bool:
        return (self.watch is None or self.failure is not None) \
            and all(self._eof[p] and not self._live(p) for p in self.paths) \
            and all(self.merger.buffered((p, 0)) == 0 for p in self.paths)

    def rollback(self, processed: int) -> None:
        self.merger.rollback(processed)

    def bytes_read(self, path: str | None = None) -> int:
        """The bytes of the files read so far (:func:`bytes_read`); ``path``: of that file alone."""
        return bytes_read(self._readers, path)

    def lag_bytes(self) -> int:
        """The bytes of the files not read yet (:func:`unread_bytes`): ``streamarms_follow_lag_bytes``."""
        return unread_bytes(self._readers)

    @property
    def incomplete(self) -> dict[str, int]:
        """The files ending in an incomplete line left unread (read once complete), and its length in bytes."""
        return unread_ends(self._readers, self.tables)

    def state(self) -> dict[str, Any]:
        """The merger's ``[next line, running max]`` per file, with the line's byte position and digest
        (:meth:`~streamarms.connectors.jsonl_lines.LineReader.mark`): a restart seeks there and checks the file."""
        st: dict[str, Any] = self.merger.state()
        for p, r in self._readers.items():
            pos = st.get(tp_name((p, 0)))
            if pos is not None:
                pos.extend(r.mark(pos[0]))
                if self.follow and not pos[2] and not r.pipe:  # (at a file's first byte: which file, by more)
                    known = self._known.get(p) if r.file_name == p else None
                    pos.append(start_mark(r.fileno(), None if known is None else known.newest))
                if r.file_name == p and not r.pipe:  # (its size: a restart that finds it removed says what was unread)
                    pos.extend([None] * (5 - len(pos)) + [r.size_now()])
                if heads := self._heads.of(p):  # (the files read to their end: their compressed copies passed over)
                    pos.extend([None] * (6 - len(pos)) + [heads])
        return st

    def commit(self, state: dict[str, Any] | None = None) -> None:
        pass

    def close(self) -> None:
        for r in self._readers.values():
            r.close()

"""CSV and TSV files as rewards: :class:`CsvTable` (``streamarms run --rewards-file labels.csv``).

Exports of a labelling tool, a database or a spreadsheet are tables: a header line naming the columns,
then one row a line. Each row becomes the record a JSONL shorthand line would be -- its value the JSON
object of the row's cells by column name (``{"worker": "w07", "correct": "1"}``), so ``--key-field``,
``--reward-field``, ``--group-by`` and the dead letters read it as they read a JSONL line -- and:

- its key is the ``arm`` column's cell (or ``key``'s), else none: name the key's column with ``--key-field``;
- its time the ``timestamp`` column's (or the column and unit a
  :class:`~streamarms.connectors.line_time.LineTime` names: ``--timestamp-field``, ``--timestamp-unit``):
  a number in the unit, or an ISO 8601 date-time; an empty cell is no time, anything else ``bad_timestamp``;
- its cells stay text (a CSV cell has no type: ``007`` is a key, not the number 7), and the reward's cell is
  read as a number by the codec (``streamarms run`` sets ``--numeric-strings`` for a table);
- a row whose number of cells is not the header's (a stray delimiter, a quoted field with a line break
  in it: a table is read one line a row, so a checkpoint's line is a row) is refused as ``bad_row``, a dead
  letter naming the counts; a blank line is no row, but counts as a line.

A column without a name (the index column ``pandas.DataFrame.to_csv`` writes) is read under the name ``""``.
The header is the first line of each file read (of the file at the path after a rotation, of the rotated
copy when a restart reads on there), read again from the file's first bytes when a checkpoint resumes it
past its header. The delimiter is ``,`` (CSV) or a tab (TSV) -- ``;`` in a CSV file whose header has semicolons
and no comma (a spreadsheet's export where the decimal mark is a comma: there the reward's cells ``0,25`` are
read as ``0.25``, ``number_column``), ``|`` in one whose header has vertical bars and neither (a database's
export) --; fields may be quoted as the :mod:`csv` module reads them.

>>> t = CsvTable(",")
>>> recs = t.records("f.csv", ["arm,reward,timestamp\\n", "eu,1,5\\n", "us,0\\n"], 0, header_line=True)
>>> [(r.key, r.timestamp, r.parsed) for r in recs[:1]], recs[1].key.reason
([(b'eu', 5, {'arm': 'eu', 'reward': '1', 'timestamp': '5'})], 'bad_row')
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

from streamarms.errors import ConfigError
from streamarms.runtime.codec import DECIMAL_COMMA
from streamarms.runtime.decoder import _SHORT

from .line_parse import refused_line, text_bytes
from .line_record import JsonlRecord
from .line_time import MAX_TIMESTAMP_MS, LineTime, stamp
from .parquet_lines import PARQUET_SUFFIXES
from .workbook_lines import WORKBOOK_SUFFIXES

__all__ = ["CsvTable", "table_format", "text_record"]

_fast_dumps: Callable[[Any], bytes] | None
try:
    import orjson

    _fast_dumps = orjson.dumps
except ImportError:  # pragma: no cover - orjson is a dependency of streamarms
    _fast_dumps = None


def _dumps(v: dict[str, str]) -> bytes:
    """The row's JSON bytes. A cell of bytes that are not UTF-8 (read with ``surrogateescape``) is written back
    as those bytes, as a JSONL line's are: the key's is refused as ``key_not_utf8``, another cell's is text."""
    if _fast_dumps is not None:
        try:
            return _fast_dumps(v)
        except TypeError:  # (orjson refuses the surrogates of invalid UTF-8)
            pass
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogateescape")

#: the delimiter of each table format (``--rewards-format``)
DELIMITERS = {"csv": ",", "tsv": "\t"}
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lz4")


def table_format(path: str, given: str = "auto") -> str | None:
    """The table format (``"csv"``/``"tsv"``) a ``--rewards-file`` is read in, or ``None`` for JSON lines:
    ``given`` (``--rewards-format``), or, ``"auto"``, by the file's name (``.csv``, ``.tsv``, ``.tab``; also
    before a compression suffix; an Excel workbook, ``.xlsx``, and a Parquet file, ``.parquet``, are read as CSV:
    their sheet's or rows' lines, :mod:`.workbook_lines`, :mod:`.parquet_lines`); standard input is JSON lines unless
    given.

    >>> table_format("labels.csv"), table_format("x.TSV"), table_format("r.jsonl"), table_format("-", "csv")
    ('csv', 'tsv', None, 'csv')
    """
    if given != "auto":
        return None if given == "jsonl" else given
    name = path.lower()
    for suffix in _COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    if name.endswith((".csv", *WORKBOOK_SUFFIXES, *PARQUET_SUFFIXES)):
        return "csv"
    if name.endswith((".tsv", ".tab")):
        return "tsv"
    return None


#: the most lines after a quoted cell left open that are read as lines of that cell when one of them closes it (a
#: cell of more lines is rare in data read as rewards)
MAX_CELL_LINES = 64


class CsvTable:
    """The rows of the tables of one ``--rewards-file`` path as records (module docstring): ``delimiter``
    ``","`` or ``"\\t"``, the time where ``line_time`` says. :meth:`records` turns a chunk of lines into
    records; :meth:`whole` says whether a last line without its line end is a whole row.

    >>> t = CsvTable("\\t"); t.set_header("arm\\tms\\n", "x.tsv"); t.header
    ['arm', 'ms']
    >>> r = t.records("x.tsv", ["a\\t3\\n"], 7)[0]; (r.offset, r.key, r.value)
    (7, b'a', b'{"arm":"a","ms":"3"}')
    """

    def __init__(self, delimiter: str = ",", line_time: LineTime | None = None, number_column: str | None = None,
                 decimal_comma: bool = False) -> None:
        #: the delimiter of the file being read: ``given``, or ``;`` for a CSV file whose header has semicolons
        #: and no comma (:meth:`set_header`)
        self.delimiter = self.given = delimiter
        self.line_time = line_time if line_time is not None else LineTime()
        #: the column whose decimal commas (``0,25``) are read as points in a file separated by ``;`` (the
        #: reward's: ``--reward-field``); its other cells are left as they are
        self.number_column = number_column
        #: read that column's decimal commas whatever the delimiter (``--decimal-comma``: a tab-separated export of a
        #: spreadsheet in a locale that writes them, Excel's "Unicode Text"; a quoted ``"0,25"`` in a CSV file)
        self.decimal_comma = decimal_comma
        #: the column names of the file being read (``None`` until its header line is read)
        self.header: list[str] | None = None
        self._decimal_at: int | None = None  # (the index of number_column in a ";" file's header)
        #: why there is no header (the detail of the rows refused then)
        self.no_header = "the file has no header line"
        self._time_column = self.line_time.field

    def set_header(self, line: str, where: str) -> None:
        """Take ``line`` as the header (``where``: the file, for the error): a :class:`ConfigError` when it
        names no column or a column twice. A column without a name (the index ``pandas.DataFrame.to_csv``
        writes first) is kept under the name ``""``, which no flag names. A CSV header with semicolons and no
        comma makes ``;`` the file's delimiter (a spreadsheet's export where the decimal mark is a comma); one with
        vertical bars and neither, ``|`` (a database's export); one with tabs and none of them, a tab (a TSV export
        named ``.csv``: it was one column named with its tabs).

        >>> t = CsvTable(","); t.set_header(",worker,wrong", "x.csv"); t.records("x.csv", ["0,w1,True"], 2)[0].value
        b'{"":"0","worker":"w1","wrong":"True"}'
        >>> t.set_header("worker;wrong", "y.csv"); t.records("y.csv", ["w1;1"], 2)[0].value, t.delimiter
        (b'{"worker":"w1","wrong":"1"}', ';')
        >>> t.set_header("worker|wrong", "z.csv"); t.records("z.csv", ["w1|1"], 2)[0].value, t.delimiter
        (b'{"worker":"w1","wrong":"1"}', '|')
        >>> t.set_header("worker\\twrong", "t.csv"); t.records("t.csv", ["w1\\t1"], 2)[0].value, t.delimiter
        (b'{"worker":"w1","wrong":"1"}', '\\t')
        """
        line = line.removeprefix("\ufeff")
        # a spreadsheet's CSV export where the decimal mark is a comma (much of Europe) separates by semicolons; a
        # database's export (psql -A, Hive, SAP) by a vertical bar
        self.delimiter = next((d for d in ";|\t" if d in line), ",") if self.given == "," and "," not in line else \
            self.given
        try:
            names = next(csv.reader([line], delimiter=self.delimiter, strict=True, skipinitialspace=True), [])
        except csv.Error as e:
            raise ConfigError(f"the header line of {where} is not a {self._kind} line ({e})") from None
        names = [n.strip() for n in names]
        if not any(names):
            raise ConfigError(f"{where} has no header line naming its columns (its first line is blank): a "
                              f"{self._kind} file's first line names the columns (arm{self.delimiter}reward)")
        seen: set[str] = set()
        for n in names:
            if not n:  # (pandas' to_csv writes its index so: a column no flag can name, read as the name "")
                continue
            if n in seen:
                raise ConfigError(f"the header of {where} names the column {n!r} twice")
            seen.add(n)
        self.header = names
        self._decimal_at = (names.index(self.number_column) if (self.delimiter == ";" or self.decimal_comma)
                            and self.number_column in names else None)

    def resume_header(self, reader: Any, position: int) -> None:
        """The header of the file ``reader`` reads from byte ``position`` (past its first line): its first line."""
        self.read_header(reader.first_line(), reader.file_name)

    def read_header(self, line: str, where: str) -> None:
        """:meth:`set_header` for a file met while reading (a rotation, a copy): a bad header refuses the
        file's rows (``bad_row``, saying why) instead of stopping the run."""
        self.header = None
        try:
            self.set_header(line, where)
        except ConfigError as e:
            self.no_header = str(e)

    @property
    def _kind(self) -> str:
        return "TSV" if self.delimiter == "\t" else "CSV"

    def whole(self, text: str) -> bool:
        """Whether a last line without its line end is a whole row (as many cells as the header, no quote
        left open): it is read; else it is a line still being written, left for a later read."""
        if self.header is None:
            return bool(text.strip())
        try:
            return len(next(csv.reader([text], delimiter=self.delimiter, strict=True, skipinitialspace=True), [])) == len(self.header)
        except csv.Error:
            return False

    def records(self, path: str, lines: Sequence[str], first: int, header_line: bool = False) -> list[JsonlRecord]:
        """The records of ``lines`` (line numbers from ``first``); ``header_line``: the first of them is the
        file's header (no record; it counts as a line)."""
        if header_line and lines:
            self.read_header(lines[0], path)
            lines, first = lines[1:], first + 1
        rows = self._rows(lines)
        if self._decimal_at is not None:
            _point_decimals(rows, self._decimal_at, grouped=self.decimal_comma)
        fast = self._plain_chunk(path, rows, first) if all(map(str.strip, lines)) else None
        if fast is not None:
            return fast
        header, width, out, opened, cell_to = self.header, len(self.header or ()), [], -1, -1
        for n, (line, cells) in enumerate(zip(lines, rows), first):
            if n <= cell_to:  # (a line of a quoted cell: not a row, whatever it parses as)
                out.append(refused_line(path, n, line, f"the line goes on with the quoted cell opened on line "
                                        f"{opened + 1:,} (a quoted cell with a line break: a table is read one line a row)"))
                continue
            if isinstance(cells, str):  # the csv module's error for this line
                said = f"the line is not a {self._kind} row ({cells})"
                if line.count('"') % 2 == 1 and (cell_to := _cell_end(lines, n - first)) >= 0:
                    opened, cell_to = n, cell_to + first  # a quote left open, closed on a line below: one cell
                    said = (f"the line is not a {self._kind} row: a quoted cell is left open at its end, and line "
                            f"{cell_to + 1:,} closes it (a cell with a line break: a table is read one line a row; the "
                            "lines of the cell are refused too)")
                out.append(refused_line(path, n, line, said))
                continue
            if not cells or not line.strip():
                continue  # a blank line (or one of spaces only: skipped, as in a JSON lines file)
            if header is None:  # (a table's first chunk always has its header: module docstring)
                out.append(refused_line(path, n, line, self.no_header))
                continue
            if len(cells) != width:
                out.append(refused_line(
                    path, n, line, f"the row has {len(cells)} cells, the header {width} columns (a "
                    f"{_DELIMITER_NAMES[self.delimiter]} in an unquoted cell, a cell missing, or a "
                    "quoted cell with a line break: a table is read one line a row)"))
                continue
            out.append(text_record(path, n, line, dict(zip(header, cells)), self._time_column, self._stamp))
        return out

    def _stamp(self, cell: str) -> int:
        return cell_ms(self.line_time, cell)

    def _plain_chunk(self, path: str, rows: list[list[str] | str], first: int) -> list[JsonlRecord] | None:
        """The records of ``rows`` (line numbers from ``first``) when every one is the common row -- the header's
        width, plain UTF-8, its time (if the header has the column) an integer in the unit or empty, its JSON
        at most ``_SHORT`` bytes -- built in C-level passes (``map``): the records the row loop of
        :meth:`records` makes of them; else ``None`` (the loop says which row and what). Why: the loop's
        per-row calls made a table's replay ~1.5x a JSONL file's."""
        header = self.header
        if not rows or header is None or _fast_dumps is None:
            return None
        try:
            if set(map(type, rows)) != _LIST or set(map(len, rows)) != {len(header)}:
                return None
            objs = list(map(dict, map(zip, repeat(header), rows)))
            values = list(map(_fast_dumps, objs))  # (TypeError for the surrogates of invalid UTF-8)
            if max(map(len, values)) > _SHORT:
                return None
            i = next((header.index(c) for c in ("arm", "key") if c in header), None)
            keys: Any = repeat(None) if i is None else list(map(str.encode, map(itemgetter(i), rows)))
            stamps: Any = repeat(None)
            if self._time_column in header:
                if self.line_time.fmt is not None:
                    return None  # (the format reads every cell: the loop)
                cells = list(map(itemgetter(header.index(self._time_column)), rows))
                if not (all(map(str.isascii, cells)) and all(map(str.isdigit, cells))):
                    return None  # (an empty cell, a fraction, a date-time: the loop)
                stamps = list(map(int, cells))
                scale = 1 if self.line_time.unit == "ms" else 1000
                if max(stamps) * scale > MAX_TIMESTAMP_MS:
                    return None
                if scale != 1:
                    stamps = [t * scale for t in stamps]
        except Exception:  # whatever it is, the loop says which row and what
            return None
        return list(map(tuple.__new__, repeat(JsonlRecord), zip(repeat(path), repeat(0), range(first, first + len(rows)),
                                                              stamps, keys, values, repeat(None), objs)))

    def _rows(self, lines: Sequence[str]) -> list[list[str] | str]:
        """Each line's cells (or the :mod:`csv` error, a string): one pass of the C reader over the chunk when
        every line is one row; else line by line (a quote left open would join lines into one row)."""
        reader = csv.reader(lines, delimiter=self.delimiter, strict=True, skipinitialspace=True)
        try:
            rows: list[list[str] | str] = list(reader)
            if len(rows) == len(lines) and reader.line_num == len(lines):
                return rows
        except csv.Error:
            pass
        out: list[list[str] | str] = []
        for line in lines:
            try:
                out.append(next(csv.reader([line], delimiter=self.delimiter, strict=True, skipinitialspace=True), []))
            except csv.Error as e:
                out.append(str(e))
        return out


def _cell_end(lines: Sequence[str], i: int) -> int:
    """The index of the line that closes the quoted cell ``lines[i]`` leaves open (an odd number of quotes), among
    the next :data:`MAX_CELL_LINES` lines of the chunk; ``-1`` for none: a stray quote, whose line alone is refused.

    >>> _cell_end(['w1,1,"ok', 'still the comment', 'w9,0,fine"', 'w2,0,x'], 0), _cell_end(['a,1,"oops', 'b,0,x'], 0)
    (2, -1)
    """
    return next((j for j in range(i + 1, min(len(lines), i + 1 + MAX_CELL_LINES)) if lines[j].count('"') % 2 == 1), -1)


#: a number whose thousands are grouped by points or (no-break) spaces, with a decimal comma or none: the separator
#: (one for the whole number) and the decimals
_GROUPED = re.compile("-?[0-9]{1,3}([. \u00a0\u202f])[0-9]{3}(?:\\1[0-9]{3})*(,[0-9]+)?")


def _point_decimals(rows: list[list[str] | str], at: int, grouped: bool = False) -> None:
    """Write the decimal comma of each row's cell ``at`` as a point (``"0,25"`` -> ``"0.25"``): a cell that is digits,
    one comma, digits, or such a number with its thousands grouped by points or spaces (``1.234,5``, ``1 234,5``,
    ``1.234.567``: a locale's amounts, Excel's "CSV" in Germany); ``grouped`` (``--decimal-comma`` given: a point is
    no decimal point) also ``1.234`` alone, else that stays 1.234 -- a file separated by ``;`` may write points.
    Anything else (``1,5e3``, ``,5``, ``1.23,5``) stays as it is, and is refused as a number.

    >>> rows = [["a", "0,25"], ["b", "-3,5"], ["c", "1.234,5"], ["d", "1.234"], "an error", ["e"], ["f", "1.23,5"]]
    >>> _point_decimals(rows, 1); rows
    [['a', '0.25'], ['b', '-3.5'], ['c', '1234.5'], ['d', '1.234'], 'an error', ['e'], ['f', '1.23,5']]
    >>> rows = [["d", "1.234"], ["g", "2 500 000"]]; _point_decimals(rows, 1, grouped=True); rows
    [['d', '1234'], ['g', '2500000']]
    """
    for row in rows:
        if type(row) is list and len(row) > at and (point := comma_number(row[at], grouped)) is not None:
            row[at] = point


def comma_number(cell: str, grouped: bool = False, sure: bool = False) -> str | None:
    """``cell``, a number written with a decimal comma (:func:`_point_decimals`' rule), written with a point; else
    ``None``. ``sure``: only a decimal comma beyond doubt, where nothing says the table writes them (``inspect`` of a
    comma-separated file) -- not three digits after a whole part other than 0, which a locale with a decimal point
    writes for thousands (``1,234``).

    >>> comma_number("1.234,5"), comma_number("0,25"), comma_number("1.234"), comma_number("1.234", True)
    ('1234.5', '0.25', None, '1234')
    >>> [comma_number(v, sure=True) for v in ("4,62", "0,125", "-3,5", "1,234", "1.234,5", "1.234", "1.234.567", "abc")]
    ['4.62', '0.125', '-3.5', None, '1234.5', None, None, None]
    """
    if "," in cell and DECIMAL_COMMA.fullmatch(cell):
        whole, frac = cell.lstrip("-").split(",")
        return cell.replace(",", ".") if not sure or len(frac) != 3 or whole == "0" else None
    if (m := _GROUPED.fullmatch(cell)) is not None and (grouped or m[2] is not None or
                                                         (m[0].count(m[1]) > 1 and not sure)):
        return cell.replace(m[1], "").replace(",", ".")
    return None


def text_record(path: str, n: int, line: str, obj: dict[str, str], time_field: str,
                time_of: Callable[[str], int]) -> JsonlRecord:
    """The record of line ``n`` whose fields, as text, are ``obj`` (a table's row, a pattern's groups): its key
    the ``arm`` (``key``) field's, its time ``time_of`` the ``time_field``'s (none when empty; ``bad_timestamp``
    where ``time_of`` raises ``ValueError``), its value the fields' JSON."""
    ts = None
    cell = obj.get(time_field)
    if cell:
        try:
            ts = time_of(cell)
        except ValueError as e:
            return refused_line(path, n, line, str(e), "bad_timestamp", _key(obj))
    vb = _dumps(obj)
    return JsonlRecord(path, 0, n, ts, _key(obj), vb, None, obj if len(vb) <= _SHORT else None)


def _key(obj: dict[str, str]) -> bytes | None:
    """The row's key: its ``arm`` cell, else its ``key`` cell, else none (``--key-field`` names another)."""
    key = obj.get("arm", obj.get("key"))
    return None if key is None else text_bytes(key)


def cell_ms(line_time: LineTime, cell: str) -> int:
    """The time of a text cell (a table's, a W3C entry's field) in ms: read by ``line_time``'s format, else the
    number it writes in its unit or an ISO 8601 date-time (:func:`~streamarms.connectors.line_time.stamp`)."""
    if line_time.fmt is not None:
        return line_time.formatted(cell)
    return stamp(cell, line_time.unit)


_LIST = frozenset((list,))
_DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "vertical bar"}

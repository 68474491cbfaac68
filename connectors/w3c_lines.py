"""W3C extended log files as rewards: :class:`W3cLines` (``streamarms run --rewards-format w3c``).

The W3C extended log file format (W3C Working Draft WD-logfile-960323) is what IIS writes by default, and what
Amazon CloudFront's standard logs and Azure's web server logs follow: directive lines that start with ``#``
(``#Version: 1.0``, ``#Fields: date time cs-method cs-uri-stem sc-status time-taken``, ``#Software``, ``#Date``,
``#Remark``), then one entry a line, its fields in the order ``#Fields`` names them, separated by spaces (IIS) or
tabs (CloudFront). A new ``#Fields`` directive (IIS writes a new block of directives each time the service
starts) names the fields of the entries after it. Each entry is read as the record its JSON line would be:

- its fields by the names ``#Fields`` gives them (``sc-status``, ``cs-uri-stem``, ``time-taken``), as text; ``-``
  is "no value" (no field, as a missing JSON field); the reward's text is read as the number it writes
  (``streamarms run`` implies ``--numeric-strings``), so ``--reward-field sc-status --reward-at-least 500`` is the
  5xx rate and ``--reward-field time-taken`` the latency (ms in IIS, s in CloudFront);
- its time, when it has the ``date`` and ``time`` fields (UTC, as the draft says) and no ``timestamp`` field, is
  the field ``timestamp`` (``2026-11-30T01:02:03Z``), which the run reads without a flag;
- an entry before any ``#Fields``, or with another number of fields than ``#Fields`` names, is refused as
  ``bad_row`` (a dead letter naming both counts); a directive is no record, but counts as a line.

A run that resumes a file past its start finds the ``#Fields`` in force there (the last one before its position).

>>> t = W3cLines()
>>> lines = ["#Version: 1.0", "#Fields: date time cs-uri-stem sc-status time-taken",
...          "2026-11-30 01:02:03 /api/cart 503 1250", "2026-11-30 01:02:04 /api/cart 200 -", "a b"]
>>> [r.parsed for r in t.records("u_ex261130.log", lines, 0)][:2]
[{'date': '2026-11-30', 'time': '01:02:03', 'cs-uri-stem': '/api/cart', 'sc-status': '503', 'time-taken': '1250', 'timestamp': '2026-11-30T01:02:03Z'}, {'date': '2026-11-30', 'time': '01:02:04', 'cs-uri-stem': '/api/cart', 'sc-status': '200', 'timestamp': '2026-11-30T01:02:04Z'}]
>>> t.records("u_ex261130.log", lines, 0)[2].key.detail
'the entry has 2 fields, and #Fields names 5 (date, time, cs-uri-stem, sc-status, time-taken)'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

from .csv_lines import cell_ms, text_record
from .line_parse import refused_line
from .line_record import JsonlRecord
from .line_time import LineTime

__all__ = ["W3cLines", "is_w3c"]

#: how far into a file its first ``#Fields`` directive is looked for (a block of directives is a few lines)
HEAD = 64 * 1024
#: how much of a file is read at a time, backwards from a resumed position, for the ``#Fields`` in force there
BACK = 1 << 20


def is_w3c(head: str) -> bool:
    """Whether a file's first line is a W3C extended log's directive (``#Version:``, ``#Software:``, ``#Fields:``).

    >>> is_w3c("#Software: Microsoft Internet Information Services 10.0"), is_w3c('{"a": 1}')
    (True, False)
    """
    return head.removeprefix("\ufeff").startswith(("#Version:", "#Software:", "#Fields:", "#Date:", "#Start-Date:"))


class W3cLines:
    """The entries of the W3C extended log files of a ``--rewards-file`` path, as records (module docstring): the
    interface of :class:`~streamarms.connectors.csv_lines.CsvTable` (its directives are the header).

    >>> W3cLines().records("x.log", ["#Fields: c-ip sc-status", "10.0.0.1 404"], 0)[0].parsed
    {'c-ip': '10.0.0.1', 'sc-status': '404'}
    """

    source = "w3c"

    def __init__(self, line_time: LineTime | None = None) -> None:
        self.line_time = line_time if line_time is not None else LineTime()
        #: the names of an entry's fields, of the ``#Fields`` in force (``None``: none read yet)
        self.names: list[str] | None = None
        #: the fields a record has (:attr:`names`, and ``timestamp`` made of ``date`` and ``time``): what the run's
        #: field flags may name
        self.header: list[str] | None = None
        self._time = self.line_time.field
        self._cell_ms = partial(cell_ms, self.line_time)  # (a time field's text in ms, as a table's)

    def set_header(self, line: str, where: str) -> None:
        """The first ``#Fields`` in the first :data:`HEAD` bytes of the file ``where`` (``line``: its first line)."""
        self.names = self.header = None
        head = line if line.startswith("#Fields:") else _head(where)
        for text in head.splitlines():
            if text.startswith("#Fields:"):
                self._fields(text)
                return

    def resume_header(self, reader: Any, position: int) -> None:
        """The ``#Fields`` in force at byte ``position`` of the file ``reader`` reads: the last one before it (a
        plain file read back from there, a block at a time; a compressed one decompressed once from its start)."""
        self.names = self.header = None
        if getattr(reader, "kind", None) is not None:
            if (line := _last_fields(reader.file_name, reader.kind, position)) is not None:
                self._fields(line)
            return
        end = position
        while end > 0:
            start = max(0, end - BACK)
            block = reader._pread(end - start, start)  # (a compressed file's decompressed bytes)
            at = block.rfind(b"\n#Fields:")
            if at >= 0 or start == 0:
                text = block[at + 1:] if at >= 0 else block if block.startswith(b"#Fields:") else b""
                if text:
                    self._fields(text.split(b"\n", 1)[0].decode("utf-8", "replace"))
                return
            end = start + len(b"#Fields:")  # (a directive across the blocks' border is found in the next)

    def _fields(self, text: str) -> None:
        self.names = text[len("#Fields:"):].split()
        made = "date" in self.names and "time" in self.names and "timestamp" not in self.names
        self.header = self.names + ["timestamp"] * made

    def whole(self, text: str) -> bool:
        """Whether a last line without its line end is whole: a directive, or an entry of as many fields as named."""
        return text.startswith("#") or (self.names is not None and len(_cells(text)) == len(self.names))

    def records(self, path: str, lines: Sequence[str], first: int, header_line: bool = False) -> list[JsonlRecord]:
        """The records of ``lines`` (line numbers from ``first``); a directive among them is read, not a record."""
        out: list[JsonlRecord] = []
        for n, line in enumerate(lines, first):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            if text.startswith("#"):
                if text.startswith("#Fields:"):
                    self._fields(text)
                continue
            names, cells = self.names, _cells(text)
            if names is None or len(cells) != len(names):
                detail = ("the entry comes before any #Fields directive" if names is None else
                          f"the entry has {len(cells)} fields, and #Fields names {len(names)} ({', '.join(names[:12])})")
                out.append(refused_line(path, n, text, detail))
                continue
            obj = {k: v for k, v in zip(names, cells) if v != "-"}
            if "timestamp" not in obj and "date" in obj and "time" in obj:
                obj["timestamp"] = f"{obj['date']}T{obj['time']}Z"
            out.append(text_record(path, n, text, obj, self._time, self._cell_ms))
        return out

    def __repr__(self) -> str:
        return f"W3cLines({json.dumps(self.source)})"


def _last_fields(path: str, kind: str, position: int) -> str | None:
    """The last ``#Fields`` line in the first ``position`` decompressed bytes of the ``kind``-compressed ``path``
    (reading back from ``position`` would decompress the file again from its start for every block)."""
    from .compressed_lines import _ERRORS, DECOMPRESSORS

    last, carry, done = None, b"", 0
    try:
        with open(path, "rb") as raw:
            stream = DECOMPRESSORS[kind](raw)
            while done < position and (block := stream.read(min(BACK, position - done))):
                done += len(block)
                text = carry + block
                cut = text.rfind(b"\n") + 1  # (whole lines; the rest waits for the next block)
                whole, carry = b"\n" + text[:cut], text[cut:]
                if (at := whole.rfind(b"\n#Fields:")) >= 0:
                    last = whole[at + 1:].split(b"\n", 1)[0]
    except _ERRORS:
        return None
    return None if last is None else last.decode("utf-8", "replace").rstrip("\r")


def _cells(text: str) -> list[str]:
    """An entry's fields: separated by tabs when it has any (CloudFront), else by spaces (IIS)."""
    return text.split("\t") if "\t" in text else text.split()


def _head(path: str) -> str:
    """The first :data:`HEAD` bytes of ``path`` (decompressed), as text; empty when it cannot be read."""
    from .compressed_lines import file_head

    try:
        return file_head(path, HEAD).decode("utf-8", "replace")
    except OSError:
        return ""

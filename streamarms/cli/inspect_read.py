"""How ``streamarms inspect`` reads the records of files and topics (:func:`profile`, :func:`kafka_profile`: through
the same readers as ``run``) and tells what format a file's lines are in (a table, a log of a known format, a
container's log, a log line wrapped in a JSON field).

>>> lines_format(['10.0.0.1 - - [30/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 12 "-" "curl/8.0"'] * 3)
'combined'
"""

from __future__ import annotations

import re
from collections import Counter, namedtuple
from collections.abc import Sequence
from itertools import islice
from typing import Any

from .inspect_fields import RECORD_KEY, FieldProfile

__all__ = ["profile", "kafka_profile", "file_encoding", "line_format", "table_format_of", "container_format",
           "wrapped_line", "lines_format", "FORMAT_NAMES", "SPREAD"]


def _fields(obj: dict[str, Any], out: dict[str, Any], prefix: str = "", depth: int = 0) -> None:
    """The record's fields, a nested object's as dotted names (four levels: a cloud log's
    ``resource.labels.backend_service_name``)."""
    for k, v in obj.items():
        name = prefix + str(k)
        if isinstance(v, dict) and depth < 3:
            _fields(v, out, name + ".", depth + 1)
        else:
            out[name] = v


#: a Kafka record as :class:`~streamarms.connectors.kafka_lines.ValueLines` reads one
_Record = namedtuple("_Record", "topic partition offset key value")
#: places across a file read after its first records (:func:`profile`), each ``records // (2 * SPREAD)`` records
SPREAD = 4


def profile(path: str | Sequence[str], records: int = 10_000, rewards_format: str = "auto",
            line_pattern: str | None = None, spread: int = SPREAD, line_field: str | None = None,
            encoding: str = "utf-8", sheet: str | None = None) -> tuple[dict[str, FieldProfile], int, Counter[str]]:
    """Each field's :class:`FieldProfile` over the first ``records`` records of the files -- and, of a file larger
    than what they took, ``records / 2`` more from ``spread`` places across it (a field or a key that appears
    later, keys that come in blocks) --, the lines read (the refused ones too), and the lines refused by reason (a
    line that is no JSON object, a row of the wrong width). ``sheet``: a workbook's (``None``: its active one)."""
    from streamarms.connectors.files import JsonlSource
    from streamarms.connectors.line_time import LineTime

    from .file_input import tables_of

    paths = [path] if isinstance(path, str) else list(path)
    tables = tables_of(paths, rewards_format, line_pattern, LineTime(), line_field=line_field)
    fields: dict[str, FieldProfile] = {}
    refused: Counter[str] = Counter()
    source = JsonlSource(paths, tables=tables, max_records=1000, encoding=encoding, sheet=sheet)
    try:
        n = _read(source, records, fields, refused)
        read = {p: source.bytes_read(p) for p in paths}
        if source.failure is not None:  # (a compressed file cut short: its lines before were read; run stops there)
            print(source.failure)
    finally:
        source.close()
    for p in paths:
        for at in _places(p, read.get(p, 0), spread):
            more = JsonlSource([p], tables={p: tables[p]} if p in tables else None, max_records=1000,
                               resume={f"{p}:0": [0, 0, at, None]}, encoding=encoding, sheet=sheet)
            try:
                n += _read(more, records // (2 * spread * len(paths)) or 1, fields, refused)
            finally:
                more.close()
    return fields, n, refused


def kafka_profile(sample: Sequence[tuple[bytes | None, bytes | None]], records: int, line_pattern: str | None = None,
                  line_field: str | None = None) -> tuple[dict[str, FieldProfile], int, Counter[str]]:
    """:func:`profile` of Kafka records (``sample``: ``(key, value)`` pairs, the latest of a topic's:
    :func:`~streamarms.connectors.kafka_sample.latest_records`): each value's fields -- a JSON object's, or a log
    line's read by ``line_pattern`` as ``run`` reads it --, and its key as the field :data:`RECORD_KEY`."""
    from types import SimpleNamespace

    from streamarms.connectors.kafka_lines import ValueLines

    class _Sample:  # (a source of one batch, as _read polls it)
        def __init__(self, batch: list[Any]) -> None:
            self.batch: list[Any] | None = batch
            self.tables: dict[str, Any] = {}

        def poll(self) -> list[Any]:
            batch, self.batch = self.batch or [], None
            return batch

    records_of = [_Record("sample", 0, i, key, value) for i, (key, value) in enumerate(sample)]
    if line_pattern is not None:  # (each value read as run reads it: the fields' JSON, or refused as bad_row)
        records_of = ValueLines(line_pattern, line_field)(records_of)
    batch = []
    for (key, value), r in zip(sample, records_of):
        if hasattr(r.key, "reason"):
            batch.append(SimpleNamespace(key=r.key, value=value, parsed=None))
            continue
        head = {RECORD_KEY: key.decode("utf-8", "replace")} if key is not None else {}
        batch.append(SimpleNamespace(key=None, value=r.value, parsed=_value_with(head, r.value)))
    fields: dict[str, FieldProfile] = {}
    refused: Counter[str] = Counter()
    return fields, _read(_Sample(batch), records, fields, refused), refused


def _value_with(head: dict[str, Any], value: bytes | None) -> dict[str, Any] | None:
    """A Kafka value's JSON object after ``head`` (its key), or ``None`` (no JSON object: _read says why)."""
    import orjson

    try:
        obj = orjson.loads(value) if value is not None else None
    except orjson.JSONDecodeError:
        return None
    return {**head, **obj} if isinstance(obj, dict) else None


def _places(path: str, read: int, spread: int) -> list[int]:
    """Byte offsets of line starts at ``spread`` places evenly across ``path`` after its first ``read`` bytes (none for
    standard input, a compressed or small file: one that its first records covered or nearly)."""
    import os

    from streamarms.connectors.file_kinds import compressed
    from streamarms.connectors.magics import PARQUET, ZIP
    from streamarms.connectors.text_encoding import marked

    try:
        size = os.path.getsize(path) if path != "-" and os.path.isfile(path) else 0
    except OSError:
        return []
    if spread <= 0 or size < 4 * max(read, 1):
        return []
    out: list[int] = []
    with open(path, "rb") as f:
        if compressed(head := f.read(6)) is not None or marked(head) or head.startswith((ZIP, PARQUET)):
            return []  # (no place to seek to in a compressed stream, a UTF-16 file's text or a workbook's rows)
        for j in range(1, spread + 1):
            f.seek(read + (size - read) * j // (spread + 1))
            f.readline()  # (to the next line's start)
            at = f.tell()
            if at < size and (not out or at > out[-1]):
                out.append(at)
    return out


def _read(source: Any, records: int, fields: dict[str, FieldProfile], refused: Counter[str]) -> int:
    """Up to ``records`` records of ``source`` into ``fields`` (and ``refused``); the records read."""
    import orjson

    from streamarms.connectors.csv_lines import comma_number

    n = 0
    while n < records:
        batch = source.poll()
        if not batch:
            break
        # a table separated by ";" (a spreadsheet's export where the decimal mark is a comma): run reads a reward
        # column's 0,25 as 0.25, and so its numbers are profiled as numbers; in another table with --decimal-comma
        comma = any(getattr(t, "delimiter", None) == ";" for t in source.tables.values())
        tabled = not comma and any(isinstance(getattr(t, "delimiter", None), str) for t in source.tables.values())
        for r in batch[:records - n]:
            n += 1
            reason = getattr(r.key, "reason", None)
            obj = r.parsed
            if obj is None and reason is None and r.value is not None:
                try:
                    obj = orjson.loads(r.value)
                except orjson.JSONDecodeError:
                    reason = "not_json"
            if reason is not None or not isinstance(obj, dict):
                refused[reason or "not_object"] += 1
                continue
            flat: dict[str, Any] = {}
            if r.key is not None and reason is None and "arm" not in obj and "key" not in obj:
                flat["key"] = r.key.decode("utf-8", "replace")  # (a Kafka-form line's key)
            _fields(obj, flat)
            for k, v in flat.items():
                f = fields.setdefault(k, FieldProfile(k))
                if comma and type(v) is str and (point := comma_number(v)) is not None:
                    v = point
                elif tabled and type(v) is str and (point := comma_number(v, sure=True)) is not None:
                    v, f.decimal_commas = point, f.decimal_commas + 1
                f.add(v)
    return n


#: what each named ``--line-pattern`` reads, for inspect's line saying it found one
FORMAT_NAMES = {"w3c": "a W3C extended log (IIS, CloudFront: its #Fields directive names the fields)",
                 "combined": "an access log in the combined format (nginx's and Apache's default)",
                 "common": "an access log in the common log format", "logfmt": "key=value pairs (logfmt)",
                 "ingress-nginx": "a Kubernetes ingress-nginx controller's access log (its default format)",
                 "haproxy": "HAProxy's HTTP log (option httplog)",
                 "envoy": "Envoy's access log (its default format, or Istio's sidecar text format)",
                 "syslog": "a syslog file (rsyslog's, syslog-ng's: time, host, program[pid]: message)",
                 "alb": "an AWS Application Load Balancer's access log",
                 "app": "an application's text log (a time, then a level: log4j's, logback's, Spring Boot's, Python "
                        "logging's)",
                 "csv": "a table (its first line names the columns; cells separated by commas, semicolons or "
                        "vertical bars)", "tsv": "a table separated by tabs (its first line names the columns)",
                 "json": "an application's JSON lines", "container": "a container runtime's log (Kubernetes' CRI format, or Docker's json-file), not the "
                              "applications' lines"}


def file_encoding(paths: Sequence[str], given: str | None) -> str | None:
    """``--encoding`` checked; without it, the code page the first file looks like when it is not UTF-8 (said, and
    suggested), else ``None`` (UTF-8; a file not UTF-8 whose code page is no guess: said)."""
    from streamarms.connectors.compressed_lines import file_head
    from streamarms.connectors.text_encoding import advice, check_encoding, guess

    if given is not None:
        return check_encoding(given)
    path = next((p for p in paths if p != "-"), None)
    if path is None:
        return None
    head = file_head(path, 1 << 16)
    if (named := guess(head)) is not None:
        print(f"{path} is not UTF-8: read as {named} (Windows' Western European text; --encoding NAME reads it in "
              "another code page)")
        return named
    if (said := advice(path, head)) is not None:
        print(said)
    return None


def line_format(path: str, lines: int = 20) -> str | None:
    """The format of a plain-text log from the first ``lines`` non-blank lines of ``path``: ``w3c`` (a W3C extended
    log's directive first: ``--rewards-format w3c``), else :func:`lines_format`'s."""
    from streamarms.connectors.w3c_lines import is_w3c

    texts = _head_texts(path, lines)
    if texts and is_w3c(texts[0]):
        return "w3c"
    return lines_format(texts) or table_format_of(texts)


def table_format_of(texts: Sequence[str]) -> str | None:
    """``tsv`` or ``csv`` when the first lines ``texts`` (at least 3) are a table's: a header of two or more names
    (none with four digits or more -- a date, a time, a number --, none longer than 64 characters, and no line below
    the same) and as many cells in every other line, split by tabs, else by commas, semicolons or vertical bars
    (``--rewards-format csv`` tells those from the header); else ``None``.

    >>> table_format_of(["Datum\\tArbeiter", "30.11.2026\\tM\\u00fcller", "1.12.2026\\tJ\\u00e4ger"])
    'tsv'
    >>> table_format_of(["id|worker|wrong", "1|w1|0", "2|w2|1"]), table_format_of(["a b", "c d", "e f"])
    ('csv', None)
    >>> table_format_of(["2023-11-14 22:13:20,123 INFO started", "2023-11-14 22:13:21,007 INFO done", "x,y"])
    """
    import csv

    if len(texts) < 3:
        return None
    for delimiter, name in (("\t", "tsv"), (",", "csv"), (";", "csv"), ("|", "csv")):
        try:
            rows = list(csv.reader(texts, delimiter=delimiter, strict=True))
        except csv.Error:
            continue
        head = [c.strip() for c in rows[0]]
        if len(head) >= 2 and len({len(r) for r in rows}) == 1 and rows[0] not in rows[1:] and all(
                0 < len(c) <= 64 and sum(map(str.isdigit, c)) < 4 for c in head):
            return name
    return None


def _head_texts(path: str, lines: int) -> list[str]:
    """The first ``lines`` non-blank whole lines of ``path`` (of its first 64 KiB; none of standard input, read once,
    by the profile), stripped; a stack trace's lines left out (:func:`~streamarms.connectors.pattern_lines.
    is_continuation`: no line of the log's format)."""
    from streamarms.connectors.compressed_lines import file_head
    from streamarms.connectors.pattern_lines import is_continuation

    if path == "-":
        return []
    head = file_head(path, 65536)
    whole = head.decode("utf-8", "replace").splitlines()[:-1 if len(head) == 65536 else None]  # (whole lines)
    return [t for t in (line.strip() for line in whole if not is_continuation(line)) if t][:lines]


def container_format(path: str, lines: int = 20) -> tuple[str, str | None] | None:
    """``("container", pattern)`` when most of the first ``lines`` non-blank lines of ``path`` are a container
    runtime's entries (:mod:`~streamarms.connectors.container_lines`), with the named ``--line-pattern`` that reads
    the applications' lines (``None``: JSON lines, or no format known); else ``None``."""
    from streamarms.connectors.container_lines import entry_line, plainly_an_entry
    from streamarms.connectors.jsonl_lines import is_json_object

    texts = _head_texts(path, lines)
    found = [line for t in texts if plainly_an_entry(t) and (line := entry_line(t)) and line.strip()]
    if not texts or len(found) < 0.8 * len(texts):
        return None
    json_lines = sum(is_json_object(line) for line in found) >= 0.8 * len(found)
    return "container", None if json_lines else lines_format(found)


def wrapped_line(fields: dict[str, FieldProfile], n: int, only: str | None = None) -> tuple[str, str] | None:
    """``(field, pattern)`` when JSON records carry a log line of a named format in a field of text (a shipper's
    ``message`` or ``log``: Filebeat, Vector, Fluent Bit; ``only``: that field), in most records (90%): the flags that
    read it (``--line-field``, ``--line-pattern``: ``json`` for an application's JSON line inside); else ``None``."""
    from streamarms.connectors.jsonl_lines import is_json_object

    for f in fields.values():
        if only is not None and f.name != only:
            continue
        if f.present >= 0.9 * n and f.share("str") > 0.99 and not f.numeric and (f.distinct > 20 or f.more):
            texts = [str(v) for v in islice(f.values, 200)]
            known = "json" if sum(is_json_object(t) for t in texts) >= 0.8 * len(texts) else lines_format(texts)
            if known is not None:
                return f.name, known
    return None


def lines_format(texts: Sequence[str]) -> str | None:
    """The named ``--line-pattern`` that reads most of the log lines ``texts`` (at least 80%): an access log's format
    (``ingress-nginx``, ``combined``, ``common``, ``alb``, ``haproxy``, ``envoy``), a syslog file's (``syslog``: after
    HAProxy's, which it sends through syslog), an application's (``app``: a time, then a level), else ``logfmt``
    (two ``key=value`` pairs a line or more); else ``None``. A stack trace's lines are left out.

    >>> lines_format(['10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 503 12 "-" "curl/8.0"'])
    'combined'
    >>> lines_format(["level=error host=web-1 ms=12"]), lines_format(["just text"]), lines_format([])
    ('logfmt', None, None)
    """

    from streamarms.connectors.pattern_lines import LOGFMT, PATTERNS, is_continuation

    texts = [t for t in texts if not is_continuation(t)]  # (a stack trace's lines are no lines of the format)
    if not texts:
        return None
    # (the most specific first: ingress-nginx's lines are combined ones and more; HAProxy's come in syslog's)
    for name in ("ingress-nginx", "combined", "common", "alb", "haproxy", "envoy", "syslog", "app"):
        pattern = re.compile(PATTERNS[name])
        if sum(pattern.match(t) is not None for t in texts) >= 0.8 * len(texts):  # (a prefix too: HAProxy's syslog's)
            return name
    return "logfmt" if sum(len(LOGFMT.findall(t)) >= 2 for t in texts) >= 0.8 * len(texts) else None

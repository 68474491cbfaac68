"""``streamarms inspect FILE``: what a log or a table holds, and the ``streamarms run`` flags that read it.

A newcomer's first question about a new log is which field is the key and which the reward. ``inspect`` reads
the first records of the files (``--records``, 10,000), and half as many more from 4 places across a file larger
than those took (a field or key that comes later, keys that come in blocks), through the same reader as ``run`` (JSON lines, CSV/TSV
tables by their names or ``--rewards-format``, plain-text logs with ``--line-pattern``), prints one line per
field -- how often it is there, its types, how many distinct values, examples or the range of its numbers --
and suggests the flags: a key (a text or integer field whose values repeat, a few to thousands of them), a
reward read as it is (a 0/1 number, a boolean) or through a rule (a status code: ``--reward-at-least 500``; a
level: ``--reward-in ERROR``; a latency: the bounded model with its range; a field most records lack: the share
of records with it, ``--reward-missing 0``), and the records' time. The suggestions are a start, not an answer:
it cannot know which rate you care about.

>>> import json, tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "app.jsonl")
>>> with open(p, "w") as f:
...     for i in range(400):
...         _ = f.write(json.dumps({"host": f"h{i % 8}", "status": 500 if i % 13 == 0 else 200, "ms": i % 97 + 0.5}) + "\\n")
>>> print("\\n".join(suggestions(profile(p, records=1000)[0], 400)))
streamarms run --rewards-file FILE --key-field host --reward-field status --reward-at-least 500
streamarms run --rewards-file FILE --key-field host --reward-field ms --reward-model bounded --reward-range 0,97 --clip
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import sys
from collections import Counter, namedtuple
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ..errors import ConfigError
from ..runtime.codec import DECIMAL_COMMA, JSON_NUMBER
from ..runtime.durations import UNITS, duration_in, unit_of
from ..runtime.key_rule import KeyRule

__all__ = ["add_inspect_parser", "inspect_main", "profile", "suggestions", "FieldProfile"]

#: distinct values kept per field (a field with more is counted as "more than" this)
DISTINCT = 10_000
#: the field name ``inspect`` gives a Kafka record's key (``run``'s key without ``--key-field``)
RECORD_KEY = "(record key)"
#: names a key field often has, tried first (as :func:`plain` writes them: journald's ``_HOSTNAME`` is ``hostname``)
KEY_NAMES = (RECORD_KEY, "arm", "key", "host", "hostname", "host.name", "proxy_upstream_name", "upstream_cluster",
             "upstream_addr", "upstream", "upstream_host", "target", "server", "server_name", "backend_name",
             "instance", "pod", "pod_name", "container", "dyno", "service", "service_name", "region", "worker",
             "worker_id", "user", "user_id", "endpoint", "path", "route", "country", "shard", "node")
#: names a time field often has (as :func:`plain` writes them: journald's ``__REALTIME_TIMESTAMP``, OpenTelemetry's
#: ``timeUnixNano``)
TIME_NAMES = ("timestamp", "@timestamp", "time", "ts", "time_local", "datetime", "date", "created_at", "submitted_at",
              "realtime_timestamp", "time_unix_nano", "accept_date", "start_time")
#: the numeric severities of logs, by their field's plain name: the values a scale has, and the flag that reads its
#: errors and worse -- syslog's (journald's ``PRIORITY``, RFC 5424: 0 emerg .. 3 err .. 7 debug), pino's and
#: bunyan's ``level`` (10 trace .. 50 error, 60 fatal), Python's ``levelno`` (40 ERROR), OpenTelemetry's
#: ``severityNumber`` (17-20 ERROR, 21-24 FATAL)
LEVEL_SCALES = ((("priority", "severity", "syslog_severity", "level"), frozenset(range(8)), "--reward-in 0,1,2,3"),
                (("level",), frozenset(range(10, 61, 10)), "--reward-at-least 50"),
                (("levelno",), frozenset(range(0, 51, 10)), "--reward-at-least 40"),
                (("severity_number",), frozenset(range(1, 25)), "--reward-at-least 17"))
#: where a camel-case name's words part (:func:`plain`)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: the plain names of fields of ids (a process, a user, a port), which are no reward however many their values
_ID_NAME = re.compile(r"(?:^|[._])(?:pid|ppid|tid|uid|gid|id|port)$")
#: the plain names of durations (``request_time``, CloudFront's ``time-taken``, nginx's documented ``rt`` and ``urt``,
#: ``uct``, ``uht``): whole numbers that never repeat are
#: durations in a fine unit (Traefik's ``Duration`` in ns), not ids
_DURATION_NAME = re.compile(r"duration|latency|elapsed|took|taken|ttfb|(?:^|[._-])(?:time|ms|us|ns)(?:[._-]|$)|"
                            r"^u?[rchu]t$")
#: the plain names of a record's free text (a log line's message): its failures' words a reward, however few its texts
_TEXT_NAMES = ("message", "msg", "text_payload", "body")
#: ... and those of its outcome (a log line's level, a response's status): a reward, like a text never a key
_OUTCOME_NAMES = ("level", "levelname", "log_level", "loglevel", "lvl", "severity", "severity_text", "priority",
                  "status", "status_code", "outcome", "result") + _TEXT_NAMES
_ERRORISH = re.compile(r"(?i)err|fail|fatal|crit|timeout|timed.?out|refused|denied|reject|5\d\d")
#: the rule a free text's failures are suggested with (a syslog's messages: ``Failed password``, ``Connection refused``)
FAILURE_WORDS = "(?i)error|fail|fatal|denied|refused|timed? ?out"
_FAILURE = re.compile(FAILURE_WORDS)


@dataclass
class FieldProfile:
    """What one field held over the records read: ``present`` (records with it), ``types`` (JSON type names),
    ``values`` (a count of each distinct value, up to :data:`DISTINCT` of them), the numbers' ``low`` / ``high``
    and a few of them (``numbers``, for quantiles); ``changes`` (records whose value differs from the last record's
    with the field) and ``returns`` (those of them back to a value seen before): a key whose values change and never
    come back has its records grouped, one block a value.

    >>> f = FieldProfile("ms"); f.add(3); f.add(5.5); f.add("x"); f.add(10 ** 400); (f.present, f.low, f.high, f.numeric)
    (4, 3.0, 5.5, 2)
    """

    name: str
    present: int = 0
    types: Counter[str] = field(default_factory=Counter)
    values: Counter[Any] = field(default_factory=Counter)
    more: bool = False  # more distinct values than DISTINCT
    numeric: int = 0  # values that are numbers, or texts writing one
    low: float = math.inf
    high: float = -math.inf
    numbers: list[float] = field(default_factory=list)
    changes: int = 0
    returns: int = 0
    last: Any = None
    #: distinct values with ``--key-ids`` (paths whose ids read as ``:id``), when that makes the field a key
    ids_distinct: int = 0
    #: the unit its durations written with units (``"17.19ms"``) are read in, as ``--reward-unit`` names it:
    #: ``ms``, or ``s`` when the first is in seconds or longer (``None``: no such text)
    unit: str | None = None
    #: a few of its lists (Caddy's headers, ``["curl/8.0"]``), as JSON: shown where a list has no distinct values
    lists: list[str] = field(default_factory=list)
    #: its cells read as numbers with a decimal comma (``4,62``) in a table not separated by ``;``: ``run`` reads
    #: them with ``--decimal-comma`` (:func:`_decimal_comma`)
    decimal_commas: int = 0

    def add(self, v: Any) -> None:
        t = type(v)
        if self.present and v != self.last:
            self.changes += 1
            self.returns += t in (str, int, float, bool) and v in self.values  # (a list is no key)
        self.last = v
        self.present += 1
        self.types["bool" if t is bool else "null" if v is None else t.__name__] += 1
        x = math.nan
        if t is str and v != "0" and (ns := duration_in(v, "ns")) is not None:  # (a latency with its unit)
            self.unit = self.unit or ("s" if unit_of(v) in ("s", "m", "h") else "ms")
            v, t = ns / UNITS[self.unit], float  # (as --reward-unit reads it)
        try:  # (a table's cells and a log that quotes its numbers write them as text)
            x = float(v) if (t is str and JSON_NUMBER.fullmatch(v)) or t in (int, float) else math.nan
        except OverflowError:  # (an integer of hundreds of digits: no number to compare)
            pass
        if math.isfinite(x):
            self.numeric += 1
            self.low, self.high = min(self.low, x), max(self.high, x)
            if len(self.numbers) < 100_000:
                self.numbers.append(x)
        if t in (str, int, float, bool):
            if v in self.values or len(self.values) < DISTINCT:
                self.values[v] += 1
            else:
                self.more = True
        elif t is list and len(self.lists) < 4 and (shown := json.dumps(v, default=str)[:40]) not in self.lists:
            self.lists.append(shown)

    @property
    def distinct(self) -> int:
        return len(self.values)

    def share(self, t: str) -> float:
        return self.types[t] / self.present if self.present else 0.0

    def digits(self) -> bool:
        """Whether every value is an integer or a text of digits (a status code written either way)."""
        return all(type(v) is int or (type(v) is str and v.isdigit()) for v in self.values) and bool(self.values)

    def quantile(self, q: float) -> float:
        xs = sorted(self.numbers)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else math.nan

    def line(self, records: int) -> str:
        kinds = ", ".join(f"{t} {100 * n / self.present:.0f}%" for t, n in self.types.most_common(3))
        distinct = f"{'>' if self.more else ''}{self.distinct:,} distinct"
        if not self.values and self.lists:
            return f"  {self.name:<28} {100 * self.present / max(records, 1):5.1f}%  {kinds:<22} {'lists':<16} " + \
                ", ".join(self.lists)
        if self.low <= self.high and self.numeric >= 0.5 * self.present:
            shown = f"{_num(self.low)} .. {_num(self.high)}" + (f" {self.unit} (durations)" if self.unit else "")
        else:
            shown = ", ".join(f"{str(v)[:24]!r} ({n:,})" for v, n in self.values.most_common(4))
        return f"  {self.name:<28} {100 * self.present / max(records, 1):5.1f}%  {kinds:<22} {distinct:<16} {shown}"


def _num(x: float) -> str:
    """A number as a person reads it: an integer with its digits (a time in ms), else four significant ones."""
    return f"{int(x):,}" if x.is_integer() and abs(x) < 1e16 else f"{x:.4g}"


def add_inspect_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("inspect", help="what a log or table holds, and the run flags that read it",
                              description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", metavar="FILE", help="JSON lines, a CSV/TSV table, or a plain-text log")
    p.add_argument("--records", type=int, default=10_000, metavar="N",
                   help="read the first N records (10,000), and N/2 more from 4 places across a larger file")
    p.add_argument("--rewards-format", choices=("auto", "jsonl", "csv", "tsv", "w3c", "container"), default="auto",
                   help="as for run: the files' format (auto: by their names)")
    p.add_argument("--line-pattern", metavar="REGEX", help="as for run: read each line with this pattern")
    p.add_argument("--line-field", metavar="FIELD", help="as for run: read --line-pattern in this field of each "
                                                        "JSON record")
    p.add_argument("--encoding", metavar="NAME", help="as for run: the files' encoding when it is not UTF-8 (without "
                                                      "it, a file that is not is read as the code page it looks like)")
    p.add_argument("--sheet", metavar="NAME", help="as for run: the sheet of an Excel workbook to read (else its "
                                                   "active one)")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT[,..]",
                   help="read the latest N records of the --rewards-topic topics instead of files (no consumer group: "
                        "nothing is committed); the record's key is the field '(record key)'")
    p.add_argument("--rewards-topic", action="append", metavar="TOPIC", help="with --bootstrap-servers (repeatable)")
    p.set_defaults(handler=inspect_main)
    return p


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

    from streamarms.connectors.jsonl_lines import compressed
    from streamarms.connectors.magics import ZIP
    from streamarms.connectors.text_encoding import marked

    try:
        size = os.path.getsize(path) if path != "-" and os.path.isfile(path) else 0
    except OSError:
        return []
    if spread <= 0 or size < 4 * max(read, 1):
        return []
    out: list[int] = []
    with open(path, "rb") as f:
        if compressed(head := f.read(6)) is not None or marked(head) or head.startswith(ZIP):
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
                if comma and type(v) is str and DECIMAL_COMMA.fullmatch(v):
                    v = v.replace(",", ".")
                elif tabled and type(v) is str and _decimal_comma(v):
                    v, f.decimal_commas = v.replace(",", "."), f.decimal_commas + 1
                f.add(v)
    return n


def _decimal_comma(v: str) -> bool:
    """Whether ``v`` is a number with a decimal comma beyond doubt: digits, one comma, digits -- not three of them
    after a whole part other than 0, which a locale with a decimal point writes for thousands (``1,234``).

    >>> [_decimal_comma(v) for v in ("4,62", "0,125", "-3,5", "1,234", "1.234,5", "abc")]
    [True, True, True, False, False, False]
    """
    if not DECIMAL_COMMA.fullmatch(v):
        return False
    whole, frac = v.lstrip("-").split(",")
    return len(frac) != 3 or whole == "0"


#: what each named ``--line-pattern`` reads, for inspect's line saying it found one
_FORMAT_NAMES = {"w3c": "a W3C extended log (IIS, CloudFront: its #Fields directive names the fields)",
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


def _file_encoding(paths: Sequence[str], given: str | None) -> str | None:
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


def _line_format(path: str, lines: int = 20) -> str | None:
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


def _unwrapped(opts: argparse.Namespace, fields: dict[str, FieldProfile], read: int) -> bool:
    """Whether the records carry a log line in a field (``--line-field``'s, when given: :func:`wrapped_line`): then
    ``opts`` take the flags that read it, said in one line, and the records are to be read again. ``ConfigError``
    when ``--line-field`` was given and its text is of no format inspect knows."""
    wrapped = wrapped_line(fields, read, opts.line_field)
    if wrapped is None:
        if opts.line_field is not None:
            raise ConfigError(f"--line-field {opts.line_field}: its text is no log line of a format inspect knows; "
                              "give the pattern that reads it (--line-pattern)")
        return False
    opts.line_field, opts.line_pattern = wrapped
    print(f"the field {wrapped[0]} holds {_FORMAT_NAMES[wrapped[1]]}: read with --line-field "
          f"{shlex.quote(wrapped[0])} --line-pattern {wrapped[1]}")
    return True


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
    import re

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


def plain(name: str) -> str:
    """A field's name as :data:`KEY_NAMES`, :data:`TIME_NAMES` and :data:`LEVEL_SCALES` list it: lower case, words
    written in camel case parted by ``_`` (Traefik's ``ServiceName``, OpenTelemetry's ``timeUnixNano``), without
    journald's leading underscores.

    >>> plain("_HOSTNAME"), plain("__REALTIME_TIMESTAMP"), plain("timeUnixNano"), plain("host.name")
    ('hostname', 'realtime_timestamp', 'time_unix_nano', 'host.name')
    >>> plain("ServiceName"), plain("StartUTC"), plain("request.remoteIP")
    ('service_name', 'start_utc', 'request.remote_ip')
    """
    return _CAMEL.sub("_", name).lower().lstrip("_")


def _key_candidates(fields: dict[str, FieldProfile], n: int) -> list[FieldProfile]:
    """Fields whose values repeat (a text or an integer, in most records, 2 to min(10,000, n / 5) values), or
    whose texts are paths with ids that repeat once ``--key-ids`` reads the ids as ``:id`` (``ids_distinct``)."""
    cap = min(DISTINCT - 1, max(2, n // 5))
    common = [f for f in fields.values() if f.present >= 0.9 * n and f.share("str") + f.share("int") >= 0.99
              and plain(f.name).split(".")[-1] not in TIME_NAMES + _OUTCOME_NAMES and not _measured(f)]
    for f in common:
        if (f.distinct > cap or f.more) and f.share("str") >= 0.99 and any("/" in str(v) for v in islice(f.values, 50)):
            fold = KeyRule.ids_fold([str(v) for v in f.values])  # (the run's own test of "paths with ids")
            if fold is not None and 2 <= fold[2] <= cap:
                f.ids_distinct = fold[2]
    out = [f for f in common if ((2 <= f.distinct <= cap and not f.more) or f.ids_distinct)
           and not (f.share("str") > 0.99 and time_format(f.values))]  # (a time in a format: no key)
    if any(f.distinct >= 3 for f in out):  # (two values: more likely a flag, a reward, than a key)
        out = [f for f in out if f.distinct >= 3]
    rank = {name: i for i, name in enumerate(KEY_NAMES)}

    def order(f: FieldProfile) -> tuple[int, float, int]:  # (a known name, its last part; names before numbers)
        name = plain(f.name)
        return rank.get(name, rank.get(name.rsplit(".", 1)[-1], len(rank))), f.numeric / f.present, f.distinct

    return sorted(out, key=order)


def _measured(f: FieldProfile) -> bool:
    """Whether ``f`` holds measurements rather than names: numbers (a table's written as text), more than 20 of
    them, some with a fraction (a duration, ``4.62``; a version ``2.1`` of a few values stays a key) or named as a
    duration (``ms``, ``request_time``), or durations written with their unit (Heroku's ``service=18ms``, however few
    their values: ``connect=0ms``).

    >>> f, g = FieldProfile("duration"), FieldProfile("connect")
    >>> for i in range(30): f.add(f"{i / 4}"); g.add(f"{i % 3}ms")
    >>> _measured(f), _measured(g), _measured(FieldProfile("host"))
    (True, True, False)
    """
    return f.numeric > 0.99 * f.present and (f.unit is not None or (f.distinct > 20 and (
        bool(_DURATION_NAME.search(plain(f.name))) or any(not x.is_integer() for x in islice(f.numbers, 1000)))))


def _reward_flags(f: FieldProfile, table: bool = False) -> str | None:
    """The flags that read ``f`` as a reward (``table``: its numbers are text, read as numbers without a flag), or
    ``None`` when it is no likely reward."""
    values = set(f.values)
    # (a boolean's text in any case, as run reads it with --numeric-strings: a spreadsheet writes TRUE and FALSE)
    texts = {v.lower() if type(v) is str else v for v in values}
    quoted = f.share("str") > 0 and not table and (f.numeric or bool(texts & {"true", "false"}))
    name = f"--reward-field {shlex.quote(f.name)}" + (f" --reward-unit {f.unit}" if f.unit else
                                                      " --numeric-strings" if quoted else "") + \
        (" --decimal-comma" if f.decimal_commas else "")
    if f.share("bool") > 0.99 or (texts <= {0, 1, "0", "1", "true", "false"} and len(values) == 2):
        return name if len(values) == 2 else None  # (the same value in every record: nothing to compare)
    if f.digits() and f.distinct >= 2:  # (a severity: journald's PRIORITY "3", pino's level 50)
        levels, last = {int(v) for v in values}, plain(f.name).rsplit(".", 1)[-1]
        for names, levels_of, flag in LEVEL_SCALES:
            if last in names and levels <= levels_of:
                return (f"--reward-field {shlex.quote(f.name)} {flag}" if flag.startswith("--reward-in")
                        else f"{name} {flag}")
        if _ID_NAME.search(plain(f.name)):
            return None  # (a process's, a user's id: no reward however many its values)
    if f.digits() and all(100 <= int(v) <= 599 for v in values) and 2 <= f.distinct <= 64 and not f.more:
        return name + " --reward-at-least 500"  # (a status code: HTTP registers about 60; more are lengths, sizes)
    free = plain(f.name).rsplit(".", 1)[-1] in _TEXT_NAMES  # (a log line's message, however few its texts)
    if f.share("str") > 0.99 and not f.numeric and 2 <= f.distinct <= 20 and not f.more and not free:
        rare = [str(v) for v, _ in sorted(f.values.items(), key=lambda kv: kv[1]) if _ERRORISH.search(str(v))]
        return f"{name} --reward-in {shlex.quote(','.join(rare[:3]))}" if rare else None
    if f.share("str") > 0.99 and not f.numeric and (f.distinct > 20 or f.more or free):  # (a free text: messages)
        said = sum(n for v, n in f.values.items() if _FAILURE.search(v)) / f.present
        return f"{name} --reward-match {shlex.quote(FAILURE_WORDS)}" if 0.001 <= said <= 0.5 else None
    if f.digits() and f.distinct >= 100 and max(f.values.values()) == 1 and not _DURATION_NAME.search(plain(f.name)):
        return None  # (whole numbers none of which repeats: an id or a counter -- an order number, a row -- no reward)
    if f.numeric > 0.99 * f.present and f.low >= 0 and f.high > 0 and f.distinct > 20:
        top = f.quantile(0.999) or f.high  # (up to two digits: 2,300 ms rather than 2,287.5)
        scale = 10.0 ** (math.floor(math.log10(top)) - 1)
        return f"{name} --reward-model bounded --reward-range 0,{math.ceil(top / scale) * scale:g} --clip"
    return None


#: time formats that logs and spreadsheets write and ISO 8601 does not read, tried in order (a month first: a
#: spreadsheet's default; a day first when a value rules the month out)
TIME_FORMATS = ("%m/%d/%Y %I:%M %p", "%m/%d/%Y %I:%M:%S %p", "%m/%d/%Y %H:%M", "%m/%d/%Y %H:%M:%S", "%d/%m/%Y %H:%M",
                "%d/%m/%Y %H:%M:%S", "%d.%m.%Y %H:%M", "%d.%m.%Y %H:%M:%S", "%m/%d/%y %H:%M", "%d-%b-%Y %H:%M:%S",
                "%b %d, %Y %I:%M:%S %p", "%a %b %d %H:%M:%S %Y", "%Y%m%d%H%M%S", "%Y%m%d %H%M%S")


def time_format(values: Iterable[Any]) -> str | None:
    """The first of :data:`TIME_FORMATS` that reads every one of ``values`` (texts; up to 200 tried), or ``None``:
    none does, or an ISO 8601 reader already reads them (no flag needed).

    >>> time_format(["11/14/2023 10:13 PM", "11/14/2023 9:05 AM"]), time_format(["14/11/2023 22:13"])
    ('%m/%d/%Y %I:%M %p', '%d/%m/%Y %H:%M')
    >>> time_format(["2023-11-14T22:13:20Z"]), time_format(["eu-west"])
    (None, None)
    """
    import datetime as dt

    texts = [str(v) for v in islice(values, 200)]
    if not texts or _iso_times(texts):
        return None
    for fmt in TIME_FORMATS:
        try:
            for t in texts:
                dt.datetime.strptime(t, fmt)
        except ValueError:
            continue
        return fmt
    return None


def _time_flags(fields: dict[str, FieldProfile]) -> str:
    from streamarms.connectors.line_time import epoch_unit

    rank = {name: i for i, name in enumerate(TIME_NAMES)}
    for f in sorted((f for f in fields.values() if plain(f.name) in rank), key=lambda f: rank[plain(f.name)]):
        name = f.name
        # a number (or its text): in the unit in which it is a time of this century ("timestamp" in ms: no flag)
        unit = epoch_unit(f.low) if f.low <= f.high and epoch_unit(f.low) == epoch_unit(f.high) else None
        if unit is not None:
            return "" if (name, unit) == ("timestamp", "ms") else (
                f" --timestamp-field {shlex.quote(name)}" + ("" if unit == "ms" else f" --timestamp-unit {unit}"))
        if name == "timestamp":
            if f.share("str") > 0.99 and _iso_times(f.values):
                return ""  # (read without a flag as it is: an ISO 8601 text)
            continue
        fmt = time_format(f.values) if f.share("str") > 0.99 else None
        return f" --timestamp-field {shlex.quote(name)}" + (f" --timestamp-format {shlex.quote(fmt)}" if fmt else "")
    for f in fields.values():  # a time under another name: ISO 8601 (read as it is), or one of the formats
        if f.share("str") > 0.99 and f.distinct > 1:
            if _iso_times(f.values):
                return f" --timestamp-field {shlex.quote(f.name)}"
            if (fmt := time_format(f.values)) is not None:
                return f" --timestamp-field {shlex.quote(f.name)} --timestamp-format {shlex.quote(fmt)}"
    return ""


def _iso_times(values: Iterable[Any]) -> bool:
    """Whether every one of ``values`` (up to 200 tried, at least one) is an ISO 8601 date and time, which
    ``--timestamp-field`` reads without a format.

    >>> _iso_times(["2026-11-30 01:00:00", "2026-11-30T01:00:05Z"]), _iso_times(["2026-11-30", "x"]), _iso_times([])
    (True, False, False)
    """
    from ..runtime.clock import iso_ms

    texts = [str(v) for v in islice(values, 200)]
    return bool(texts) and all(iso_ms(t) is not None for t in texts)


def suggestions(fields: dict[str, FieldProfile], n: int, files: str = "FILE", table: bool = False,
                source: str | None = None, by_file: str | None = None) -> list[str]:
    """``streamarms run`` commands for the likeliest key and each likely reward field (none: an empty list);
    ``table``: the records are a table's rows or a pattern's fields (text that ``run`` reads as numbers);
    ``source``: the flags that name the records (default ``--rewards-file`` ``files``; a Kafka topic's records
    carry their own time, and their key is :data:`RECORD_KEY`, read without ``--key-field``); ``by_file``: the
    flags that key the records by their files (:func:`file_key_flags`) when no field is a key."""
    keys = _key_candidates(fields, n)
    if not keys and by_file is None:
        return []
    key = keys[0] if keys else None
    if key is None:
        flag = str(by_file)
    elif key.name == RECORD_KEY:
        flag = ""  # (run's key without --key-field; --key-ids reads a field's text, not the record's key)
    elif key.ids_distinct and key.name == "arm":
        flag = " --key-field arm --key-ids"
    else:
        flag = ("" if key.name == "arm" else f" --key-field {shlex.quote(key.name)}") + (
            " --key-ids" if key.ids_distinct else "")
    time = _time_flags(fields) if source is None else ""
    source = source or f"--rewards-file {files}"
    out = []
    for f in fields.values():
        if f is key or plain(f.name) in TIME_NAMES:
            continue
        # a field most records lack, written only when set ({"error": ...} on failures): its share of records
        reward = (f"--reward-field {shlex.quote(f.name)} --reward-match . --reward-missing 0" if f.present < 0.5 * n else
                  _reward_flags(f, table))
        if reward is not None:
            out.append((_kind(f, reward), f"streamarms run {source}{flag} {reward}{time}"))
    return [command for _, command in sorted(out, key=lambda kc: kc[0])]


def file_key_flags(paths: Sequence[str]) -> str | None:
    """The flags that key the records of several files by their files (``--key-from-file``): by a name that differs
    from file to file without its extension (``logs/web-1.log``: ``web-1``), else by the folder (rsyslog's
    ``remote/web-1/app.log``), else by the whole path; ``None`` for one file, or standard input.

    >>> file_key_flags(["logs/web-1.log", "logs/web-2.log"]), file_key_flags(["r/a/app.log", "r/b/app.log"])
    (" --key-from-file --key-match '([^/]+)\\\\.log$'", " --key-from-file --key-match '([^/]+)/[^/]+$'")
    >>> file_key_flags(["a/x", "a/x.1"]), file_key_flags(["one.log"])
    (" --key-from-file --key-match '([^/]+)$'", None)
    """
    import os
    import re

    if len(paths) < 2 or "-" in paths:
        return None
    names = [os.path.basename(p) for p in paths]
    folders = [os.path.basename(os.path.dirname(p)) for p in paths]
    exts = {os.path.splitext(n)[1] for n in names}
    if len(set(names)) == len(names):
        ext = next(iter(exts)) if len(exts) == 1 and len({os.path.splitext(n)[0] for n in names}) == len(names) else ""
        match = f"([^/]+){re.escape(ext)}$" if ext else "([^/]+)$"
    elif all(folders) and len(set(zip(folders, names))) == len(names) and len(set(folders)) == len(folders):
        match = "([^/]+)/[^/]+$"
    else:
        return " --key-from-file"
    return f" --key-from-file --key-match {shlex.quote(match)}"


def _kind(f: FieldProfile, reward: str) -> int:
    """Where a suggestion stands among a record's: failures first (a status code, a level, a flag: the rates a person
    looks for first), then failures told by text, then durations, then other amounts (sizes, counts).

    >>> bounded = "--reward-model bounded --reward-range 0,1 --clip"
    >>> [_kind(FieldProfile(n), bounded) for n in ("time-taken", "Duration", "upstream_response_time", "urt")]
    [2, 2, 2, 2]
    >>> _kind(FieldProfile("sc-bytes"), bounded), _kind(FieldProfile("rtt_count"), bounded)
    (3, 3)
    >>> _kind(FieldProfile("status"), "--reward-at-least 500"), _kind(FieldProfile("msg"), "--reward-match x")
    (0, 1)
    """
    if "--reward-model bounded" not in reward:
        return 1 if "--reward-match" in reward else 0
    return 2 if f.unit is not None or _DURATION_NAME.search(plain(f.name)) else 3


def grouped_text(key: FieldProfile, n: int) -> str:
    """A warning when the key's values come one block each (at least 3 blocks, no value back after another), as in
    a file sorted or concatenated by key: ``run`` compares keys whose records come interleaved. Empty otherwise.

    >>> f = FieldProfile("worker")
    >>> for w in "aaabbbccc": f.add(w)
    >>> print(grouped_text(f, 9))
    the records are grouped by worker: its 3 values come one block each in the 9 records read (none comes back after another), as in a file sorted or concatenated by it; run compares keys whose records come interleaved: shuffle the records first, or sort them by their time (run says so too)
    >>> f.add("a"); grouped_text(f, 10)
    ''
    """
    if key.changes < 2 or key.returns:
        return ""
    return (f"the records are grouped by {key.name}: its {key.distinct:,} values come one block each in the {n:,} "
            "records read (none comes back after another), as in a file sorted or concatenated by it; run compares "
            "keys whose records come interleaved: shuffle the records first, or sort them by their time (run says so too)")


def _say_sheets(paths: Sequence[str], sheet: str | None) -> None:
    """Which sheet was read of each of the first 5 workbooks of several sheets (:func:`sheet_note`)."""
    from streamarms.connectors.workbook_lines import WORKBOOK_SUFFIXES, sheet_note

    for p in [p for p in paths if p.lower().endswith(WORKBOOK_SUFFIXES)][:5]:
        if note := sheet_note(p, sheet):
            print(f"{p}: {note}")


def _sheet_with_keys(opts: argparse.Namespace, fields: dict[str, FieldProfile], read: int) -> bool:
    """Whether one workbook was given whose active sheet holds no keys (a cover note, a chart's data) and another
    of its sheets does (the first, of up to 10): then ``opts.sheet`` names it, said in one line, and the records
    are to be read again."""
    from streamarms.connectors.workbook_lines import WORKBOOK_SUFFIXES, sheet_names

    if len(opts.files) != 1 or opts.sheet is not None or not opts.files[0].lower().endswith(WORKBOOK_SUFFIXES) or \
            _key_candidates(fields, read):
        return False
    names, active = sheet_names(opts.files[0])
    for name in [name for name in names if name != active][:10]:
        try:
            got, n, refused = profile(opts.files, opts.records, opts.rewards_format, sheet=name)
        except (ConfigError, OSError):  # (a chart, a damaged sheet)
            continue
        if _key_candidates(got, n - sum(refused.values())):
            print(f"its active sheet, {active}, has no column of keys; its sheet {name} has: read with --sheet "
                  f"{shlex.quote(name)}")
            opts.sheet = name
            return True
    return False


def inspect_main(opts: argparse.Namespace) -> int:
    from .file_patterns import expand_files

    given = list(opts.files)  # (as given: a pattern is suggested as the pattern, quoted)
    source = None  # (the flags that name the records: --rewards-file's unless a topic's)
    try:
        if bool(opts.bootstrap_servers) == bool(opts.files) or bool(opts.bootstrap_servers) != bool(opts.rewards_topic):
            raise ConfigError("give FILE .. (files), or --bootstrap-servers HOST:PORT --rewards-topic TOPIC (a topic's "
                              "latest records)")
        if opts.bootstrap_servers:
            from streamarms.connectors.kafka import BrokerUnreachable
            from streamarms.connectors.kafka_sample import latest_records

            if opts.rewards_format != "auto" or opts.encoding or opts.sheet:
                raise ConfigError("--rewards-format, --encoding and --sheet say what files hold; a Kafka record's value is "
                                  "UTF-8 JSON, or a log line (--line-pattern)")
            try:
                sample = latest_records(opts.bootstrap_servers, opts.rewards_topic, opts.records)
            except BrokerUnreachable as e:
                raise ConfigError(str(e)) from None
            fields, n, refused = kafka_profile(sample, opts.records, opts.line_pattern, opts.line_field)
            if opts.line_pattern is None and _unwrapped(opts, fields, n - sum(refused.values())):
                fields, n, refused = kafka_profile(sample, opts.records, opts.line_pattern, opts.line_field)
            opts.files = [f"topic {t}" for t in opts.rewards_topic]
            if not fields and opts.line_pattern is None and refused.get("not_json", 0) * 2 > n:
                texts = [t for _, v in sample[:200] if v and (t := v.decode("utf-8", "replace").strip())][:20]
                if (known := lines_format(texts)) is not None:  # (log lines sent as they are: rsyslog, Vector)
                    print(f"the values are {_FORMAT_NAMES[known]}, not JSON: read with --line-pattern {known}")
                    opts.line_pattern = known
                    fields, n, refused = kafka_profile(sample, opts.records, known)
            source = f"--bootstrap-servers {shlex.quote(opts.bootstrap_servers)}" + "".join(
                f" --rewards-topic {shlex.quote(t)}" for t in opts.rewards_topic) + (
                f" --line-pattern {shlex.quote(opts.line_pattern)}" if opts.line_pattern else "") + (
                f" --line-field {shlex.quote(opts.line_field)}" if opts.line_field else "")
        else:
            opts.files = expand_files(opts.files)
            opts.encoding = _file_encoding(opts.files, opts.encoding)
            if opts.rewards_format == "auto" and opts.line_pattern is None and (
                    runtime := container_format(opts.files[0])) is not None:  # (Kubernetes' /var/log/containers)
                opts.rewards_format, opts.line_pattern = runtime
                print(f"the lines are {_FORMAT_NAMES['container']}: read with --rewards-format container" +
                      (f" --line-pattern {opts.line_pattern}" if opts.line_pattern else ""))
            fields, n, refused = profile(opts.files, opts.records, opts.rewards_format, opts.line_pattern,
                                         line_field=opts.line_field, encoding=opts.encoding or "utf-8", sheet=opts.sheet)
            if opts.line_pattern is None and (opts.rewards_format in ("auto", "jsonl") or opts.line_field) and \
                    _unwrapped(opts, fields, n - sum(refused.values())):
                fields, n, refused = profile(opts.files, opts.records, opts.rewards_format, opts.line_pattern,
                                             line_field=opts.line_field, encoding=opts.encoding or "utf-8",
                                             sheet=opts.sheet)
            if _sheet_with_keys(opts, fields, n - sum(refused.values())):
                fields, n, refused = profile(opts.files, opts.records, opts.rewards_format, sheet=opts.sheet)
        if (not fields and not source and opts.line_pattern is None and refused.get("not_json", 0) * 2 > n
                and (known := _line_format(opts.files[0])) is not None):
            flag = "--rewards-format" if known in ("w3c", "csv", "tsv") else "--line-pattern"
            print(f"the lines are {_FORMAT_NAMES[known]}, not JSON: read with {flag} {known}")
            if flag == "--rewards-format":
                opts.rewards_format = known
            else:
                opts.line_pattern = known
            fields, n, refused = profile(opts.files, opts.records, opts.rewards_format, opts.line_pattern,
                                         encoding=opts.encoding or "utf-8", sheet=opts.sheet)
    except (ConfigError, OSError) as e:
        print(f"streamarms inspect: error: {e}", file=sys.stderr)
        return 2
    read = n - sum(refused.values())  # (the shares below are of the records read, not of the lines refused)
    across = (f" (the first {opts.records:,}, then {n - opts.records:,} from {SPREAD} places across the file"
              f"{'s' if len(opts.files) > 1 else ''})" if n > opts.records else "")
    print(f"{n:,} records read from {', '.join(opts.files)}{across}" + (
        f"; {sum(refused.values()):,} refused ({', '.join(f'{k} {v:,}' for k, v in refused.most_common())})"
        if refused else ""))
    if not source:
        _say_sheets(opts.files, opts.sheet)
    if not fields:
        print("no field found: run reads a Kafka record's value as one JSON object, or as a log line with "
              "--line-pattern (Avro or Protobuf are refused record by record)" if source else
              "no field found: a JSON-lines file holds one JSON object a line; a table has a header line "
              "(by its name, .csv/.tsv, or --rewards-format); a plain-text log needs --line-pattern")
        return 1
    print(f"  {'field':<28} {'in':>6}  {'types':<22} {'values':<16} examples / range")
    for f in sorted(fields.values(), key=lambda f: -f.present):
        print(f.line(read))
    keys = _key_candidates(fields, read)
    by_file = file_key_flags(opts.files) if not keys and not source else None
    print("keys (values that repeat): " + (", ".join(f"{f.name} ({f.ids_distinct:,} with --key-ids)" if f.ids_distinct
                                                     else f"{f.name} ({f.distinct:,})" for f in keys[:5]) or
                                          (f"none in the records; each of the {len(opts.files):,} files is one"
                                           f" with{by_file}" if by_file else
                                           "none found: name the key's field with --key-field")))
    if keys and (grouped := grouped_text(keys[0], read)):
        print(grouped)
    # (--rewards-file takes one path: two are named twice; more, a pattern of them)
    files = " --rewards-file ".join(map(shlex.quote, given)) if len(given) <= 2 else "FILES"
    extra = (f" --line-pattern {shlex.quote(opts.line_pattern)}" if opts.line_pattern else "") + (
        f" --line-field {shlex.quote(opts.line_field)}" if opts.line_field and not source else "") + (
        f" --rewards-format {opts.rewards_format}" if opts.rewards_format != "auto" else "") + (
        f" --encoding {opts.encoding}" if opts.encoding and not source else "") + (
        f" --sheet {shlex.quote(opts.sheet)}" if opts.sheet and not source else "")
    from streamarms.connectors.csv_lines import table_format

    table = bool(opts.line_pattern) or (not source and opts.rewards_format != "container" and
                                        any(table_format(p, opts.rewards_format) for p in opts.files))
    shown = {k: f for k, f in fields.items() if k != opts.line_field}  # (its line's fields are suggested, not it)
    found = suggestions(shown, read, files + extra, table, source, by_file)
    print("suggested (a start: which rate matters is yours to say):" if found else
          "no likely reward field: a 0/1 number, a boolean, a status code, a level or a latency")
    for line in found:
        print("  " + line)
    return 0

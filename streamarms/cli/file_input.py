"""The ``--rewards-file`` source of ``streamarms run``: JSON lines, or tables (CSV, TSV:
:mod:`~streamarms.connectors.csv_lines`) by ``--rewards-format`` or the files' names; a table's header is
checked against the fields the run reads before a record is, so a misspelt column is one clear error, not a
dead letter a row.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from .settings import RunSettings

log = logging.getLogger("streamarms.cli")

__all__ = ["file_source", "tables_of", "check_columns"]


def tables_of(files: Sequence[str], given: str, pattern: str | None = None, line_time: Any = None,
              reward_field: str | None = None, line_field: str | None = None,
              decimal_comma: bool = False) -> dict[str, Any]:
    """The files read as tables, with their delimiters (``given``: ``--rewards-format``), or, with ``pattern``
    (``--line-pattern``), every file with the :class:`~streamarms.connectors.pattern_lines.PatternLines` that
    reads its lines (a :class:`ConfigError` for a pattern that names no field). With ``reward_field``, each
    table's :class:`~streamarms.connectors.csv_lines.CsvTable`, which reads that column's decimal commas in a
    file separated by semicolons (in every table: ``decimal_comma``, ``--decimal-comma``). With ``line_field``
    (``--line-field``), every file is JSON lines whose field the pattern reads
    (:class:`~streamarms.connectors.field_lines.FieldLines`).

    >>> tables_of(["a.csv", "b.jsonl", "c.tsv"], "auto")
    {'a.csv': ',', 'c.tsv': '\\t'}
    >>> tables_of(["access.log"], "auto", "combined")
    {'access.log': PatternLines("combined")}
    >>> tables_of(["a.csv"], "auto", reward_field="ms")["a.csv"].number_column
    'ms'
    """
    from streamarms.connectors.csv_lines import DELIMITERS, CsvTable, table_format

    if line_field is not None and pattern is not None:  # (JSON lines with a log line in a field)
        from streamarms.connectors.field_lines import FieldLines

        wrapped = FieldLines(pattern, line_field, line_time)
        return {p: wrapped for p in files}
    if given == "container":  # (a container runtime's log: its entries' lines, connectors/container_lines.py)
        from streamarms.connectors.container_lines import ContainerLines
        from streamarms.connectors.pattern_lines import PatternLines

        entries = ContainerLines(line_time, PatternLines(pattern, line_time) if pattern is not None else None)
        return {p: entries for p in files}
    if pattern is not None:
        from streamarms.connectors.pattern_lines import PatternLines

        lines = PatternLines(pattern, line_time)
        return {p: lines for p in files}
    if given == "w3c":  # (W3C extended logs: their #Fields directive names the fields, connectors/w3c_lines.py)
        from streamarms.connectors.w3c_lines import W3cLines

        return {p: W3cLines(line_time) for p in files}
    delimiters = {p: DELIMITERS[f] for p in files if (f := table_format(p, given))}
    if reward_field is None:
        return delimiters
    return {p: CsvTable(d, line_time, number_column=reward_field, decimal_comma=decimal_comma)
            for p, d in delimiters.items()}


def file_source(s: RunSettings, resume: dict[str, Any] | None) -> Any:
    """The :class:`~streamarms.connectors.files.JsonlSource` of ``s.rewards_file`` from ``resume`` (a
    checkpoint's positions), its tables' columns checked (:func:`check_columns`)."""
    from streamarms.connectors.files import JsonlSource
    from streamarms.connectors.line_time import LineTime
    from streamarms.connectors.record_time import FILE_AHEAD

    from .file_patterns import patterns_of

    try:
        line_time = LineTime(s.timestamp_field, s.timestamp_unit, s.timestamp_format)
    except ValueError as e:
        raise ConfigError(f"--timestamp-format: {e}") from None

    def table_of(path: str) -> Any:  # (a file that comes to match a followed pattern: what tables_of says of it)
        return tables_of([path], s.rewards_format, s.line_pattern, line_time, reward_field=s.reward_field,
                         line_field=s.line_field, decimal_comma=s.decimal_comma).get(path)

    waiting = _not_there_yet(s, resume)
    files = [p for p in s.rewards_file or [] if p not in waiting]
    source = JsonlSource(files, resume=resume, ordered=s.order == "timestamp", follow=bool(s.follow),
                         line_time=line_time,
                         tables=tables_of(files, s.rewards_format, s.line_pattern, line_time,
                                          reward_field=s.reward_field, line_field=s.line_field,
                                          decimal_comma=s.decimal_comma),
                         patterns=patterns_of(s.rewards_file_given or []) + waiting, table_of=table_of,
                         max_timestamp_ahead=s.max_timestamp_ahead if "max_timestamp_ahead" in s.explicit else FILE_AHEAD,
                         encoding=s.encoding or "utf-8",
                         sheet=s.sheet)
    try:
        check_columns(source.tables, s, own_keys=s.key_from_file)
        _check_line_field(source.tables)
    except ConfigError:
        source.close()
        raise
    if s.encoding is None:
        _say_not_utf8(s.rewards_file or [])
    from streamarms.connectors.workbook_lines import sheet_notes

    for note in sheet_notes(s.rewards_file or [], s.sheet):  # (which sheet of a workbook of several is read)
        log.info("%s", note)
    return source


def _not_there_yet(s: RunSettings, resume: dict[str, Any] | None) -> list[str]:
    """Following, the files named (not patterns) that are not there and that the checkpoint has not read: each is
    watched for as a pattern naming one file is, and read from its first line when it appears (a service started
    before the log it follows stopped with ``FileNotFoundError``). A file the checkpoint has read is left to the
    source, which finds it where a rotation moved it."""
    import os

    from streamarms.connectors.ordering import tp_name

    if not s.follow:
        return []
    waiting = [p for p in s.rewards_file or [] if p != "-" and not os.path.lexists(p) and
               tp_name((p, 0)) not in (resume or {})]
    for p in waiting:
        log.warning("%s is not there yet: following, it is read from its first line when it appears", p)
    return waiting


def _say_not_utf8(paths: Sequence[str]) -> None:
    """Warn of each of the first 5 files whose first 64 KiB are not UTF-8, naming the ``--encoding`` that reads it
    (:func:`~streamarms.connectors.text_encoding.advice`): its keys with letters outside ASCII would be refused."""
    from streamarms.connectors.compressed_lines import file_head
    from streamarms.connectors.text_encoding import advice

    for path in [p for p in paths if p != "-"][:5]:
        try:
            said = advice(path, file_head(path, 1 << 16))
        except OSError:
            continue
        if said is not None:
            log.warning("%s", said)


def _first_lines(tables: dict[str, Any], lines: int = 200) -> Any:
    """``(path, table, texts)``: the first ``lines`` lines (with their line ends) of each of the first 5 files that
    can be read (decompressed: the first 256 KiB), for the checks a run makes of its fields before it starts."""
    from streamarms.connectors.compressed_lines import file_head

    for path, table in list(tables.items())[:5]:
        if path == "-":
            continue  # (standard input: read once, by the run)
        try:
            head = file_head(path, 1 << 18)
        except OSError:
            continue
        yield path, table, head.decode("utf-8", "replace").splitlines(keepends=True)[:lines]


def _fields_after(tables: dict[str, Any]) -> set[str] | None:
    """The fields that the first lines of the first file giving records give beyond its table's header (a combined
    log's rest, :func:`~streamarms.connectors.pattern_lines.extra_fields`: ``extra_1``, ``rt``), or ``None`` when there
    is nothing to read them from (standard input, a Kafka topic, empty or unreadable files): any name may come, and a
    line without the run's field is a dead letter, as a logfmt line's."""
    import json

    for path, table, texts in _first_lines(tables):
        seen: set[str] = set()
        for r in table.records(path, texts, 0):
            if getattr(r.key, "reason", None) is None:  # (not a refused line)
                seen.update(r.parsed if r.parsed is not None else json.loads(r.value))
        if seen:
            return seen - set(table.header)
    return None


def _check_line_field(tables: dict[str, Any]) -> None:
    """``ConfigError`` when the first JSON records of the first file that has some all lack ``--line-field``'s field
    (a name misspelled: every record would be a dead letter), naming the fields they have."""
    import json

    wrapped = {p: t for p, t in tables.items() if isinstance(getattr(t, "field", None), str)}  # (FieldLines)
    for path, table, texts in _first_lines(wrapped):
        field = table.field
        objs = []
        for text in texts:
            try:
                obj = json.loads(text)
            except ValueError:
                continue
            if isinstance(obj, dict):
                objs.append(obj)
        if not objs:
            continue
        if all(table.fields_of(obj)[1] == f"the record has no field {field!r} (--line-field)" for obj in objs):
            names = sorted({k for obj in objs for k in obj})
            raise ConfigError(f"none of the first {len(objs)} records of {path} has the field {field!r} "
                              f"(--line-field): their fields are {', '.join(names[:30])}" + _inspect(path))
        return


def _inspect(path: str, sheet: str | None = None) -> str:
    """The hint that ends a column error: which sheet of a workbook of several was read (``sheet``: ``--sheet``), and
    the command that shows what the file holds and suggests the flags."""
    import shlex

    from streamarms.connectors.workbook_lines import sheet_note

    if path == "-":
        return ""
    note = sheet_note(path, sheet)
    given = f" --sheet {shlex.quote(sheet)}" if sheet is not None else ""
    return f"{'; ' + note if note else ''}; streamarms inspect {shlex.quote(path)}{given} suggests the flags that read it"


def check_columns(tables: dict[str, Any], s: RunSettings, own_keys: bool = False) -> None:
    """``ConfigError`` naming a field the run reads that a table's header (a pattern's groups) has no column
    (group) for: the reward's, the key's (``--key-field``, else ``arm`` or ``key`` unless ``own_keys``: Kafka
    records have keys of their own), ``--group-by``'s, and ``--timestamp-field`` when given (without it, a table
    with no ``timestamp`` column has no times). A pattern whose lines give fields of their own after its groups
    (``combined``'s rest) accepts those the file's first lines give (:func:`_fields_after`)."""
    wanted = [("--reward-field", s.reward_field)]
    if s.key_field is not None:
        wanted.append(("--key-field", s.key_field))
    if s.group_by is not None:
        wanted.append(("--group-by", s.group_by))
    if "timestamp_field" in s.explicit:
        wanted.append(("--timestamp-field", s.timestamp_field))
    seen: set[str] | None = set()  # (the fields a pattern's lines give after its groups, read when a name needs them)
    checked = False
    for path, table in tables.items():
        columns = table.header
        if columns is None:  # (an empty file, standard input: nothing to check yet)
            continue
        shown = ", ".join(columns[:30]) + (f", ... ({len(columns)} in all)" if len(columns) > 30 else "")
        # (a pattern's fields are its named groups, the same for every file)
        what, of = ("group", f"--line-pattern {table.source}") if s.line_pattern else ("column", path)
        for flag, name in wanted:
            if name in columns:
                continue
            if getattr(table, "open", False) and not checked:  # (once: a pattern's tables are alike)
                seen, checked = _fields_after(tables), True
            if seen is None:
                log.warning("--line-pattern %s has no group %r (%s): the lines' rest may give it (extra_N, name=value);"
                            " a line without it is a dead letter", table.source, name, flag)
            elif name not in seen:
                after = f"; its first lines give {', '.join(sorted(seen)[:30])} after them" if seen else ""
                raise ConfigError(f"{of} has no {what} {name!r} ({flag}): its {what}s are {shown}{after}" +
                                  _inspect(path, s.sheet))
        if s.key_field is None and "arm" not in columns and "key" not in columns and not own_keys:
            unit = "line" if s.line_pattern else "row"
            raise ConfigError(f"{of} has no 'arm' or 'key' {what} naming each {unit}'s key: name the {what} with "
                              f"--key-field (its {what}s are {shown})" + _inspect(path, s.sheet))

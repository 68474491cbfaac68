"""The ``--rewards-file`` source of ``streamarms run``: JSON lines, or tables (CSV, TSV:
:mod:`~streamarms.connectors.csv_lines`) by ``--rewards-format`` or the files' names; a table's header is
checked against the fields the run reads before a record is, so a misspelt column is one clear error, not a
dead letter a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from .settings import RunSettings

__all__ = ["file_source", "tables_of", "check_columns", "expand_files"]

_GLOB = frozenset("*?[")


def expand_files(paths: Sequence[str]) -> list[str]:
    """``--rewards-file`` as given, its patterns expanded: a path that is no file but holds ``*``, ``?`` or ``[``
    is a glob pattern (quoted on the command line, or in the TOML file, which no shell expands), every match read
    (sorted by name; a match already named is not added again). A pattern that matches nothing, or a directory, is a
    :class:`ConfigError` that says what to give.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); _ = [open(os.path.join(d, n), "w").close() for n in ("b.jsonl", "a.jsonl", "x.csv")]
    >>> [os.path.basename(p) for p in expand_files([os.path.join(d, "a.jsonl"), os.path.join(d, "*.jsonl")])]
    ['a.jsonl', 'b.jsonl']
    >>> expand_files([os.path.join(d, "*.log")])
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: no file matches .../*.log
    >>> expand_files([d])
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: ... is a directory: name its files, e.g. '.../*.jsonl' (quoted, the pattern is expanded by streamarms: every match is read)
    """
    import glob
    import os

    out: list[str] = []
    for p in paths:
        if p != "-" and os.path.isdir(p):
            raise ConfigError(f"{p} is a directory: name its files, e.g. '{os.path.join(p, '*.jsonl')}' (quoted, "
                              "the pattern is expanded by streamarms: every match is read)")
        if p == "-" or os.path.lexists(p) or not _GLOB & set(p):
            out.append(p)  # (as given: a path given twice is for the run's own checks to refuse)
            continue
        matches = sorted(m for m in glob.glob(p) if not os.path.isdir(m))
        if not matches:
            raise ConfigError(f"no file matches {p}")
        out.extend(m for m in matches if m not in out)
    return out


def tables_of(files: Sequence[str], given: str, pattern: str | None = None, line_time: Any = None,
              reward_field: str | None = None) -> dict[str, Any]:
    """The files read as tables, with their delimiters (``given``: ``--rewards-format``), or, with ``pattern``
    (``--line-pattern``), every file with the :class:`~streamarms.connectors.pattern_lines.PatternLines` that
    reads its lines (a :class:`ConfigError` for a pattern that names no field). With ``reward_field``, each
    table's :class:`~streamarms.connectors.csv_lines.CsvTable`, which reads that column's decimal commas in a
    file separated by semicolons.

    >>> tables_of(["a.csv", "b.jsonl", "c.tsv"], "auto")
    {'a.csv': ',', 'c.tsv': '\\t'}
    >>> tables_of(["access.log"], "auto", "combined")
    {'access.log': PatternLines("combined")}
    >>> tables_of(["a.csv"], "auto", reward_field="ms")["a.csv"].number_column
    'ms'
    """
    from streamarms.connectors.csv_lines import DELIMITERS, CsvTable, table_format

    if pattern is not None:
        from streamarms.connectors.pattern_lines import PatternLines

        lines = PatternLines(pattern, line_time)
        return {p: lines for p in files}
    delimiters = {p: DELIMITERS[f] for p in files if (f := table_format(p, given))}
    if reward_field is None:
        return delimiters
    return {p: CsvTable(d, line_time, number_column=reward_field) for p, d in delimiters.items()}


def file_source(s: RunSettings, resume: dict[str, Any] | None) -> Any:
    """The :class:`~streamarms.connectors.files.JsonlSource` of ``s.rewards_file`` from ``resume`` (a
    checkpoint's positions), its tables' columns checked (:func:`check_columns`)."""
    from streamarms.connectors.files import JsonlSource
    from streamarms.connectors.line_time import LineTime

    line_time = LineTime(s.timestamp_field, s.timestamp_unit)
    source = JsonlSource(s.rewards_file or [], resume=resume, ordered=s.order == "timestamp", follow=bool(s.follow),
                         line_time=line_time,
                         tables=tables_of(s.rewards_file or [], s.rewards_format, s.line_pattern, line_time,
                                          reward_field=s.reward_field))
    try:
        check_columns(source.tables, s)
    except ConfigError:
        source.close()
        raise
    return source


def check_columns(tables: dict[str, Any], s: RunSettings) -> None:
    """``ConfigError`` naming a field the run reads that a table's header (a pattern's groups) has no column
    (group) for: the reward's, the key's (``--key-field``, else ``arm`` or ``key``), ``--group-by``'s, and
    ``--timestamp-field`` when given (without it, a table with no ``timestamp`` column has no times)."""
    wanted = [("--reward-field", s.reward_field)]
    if s.key_field is not None:
        wanted.append(("--key-field", s.key_field))
    if s.group_by is not None:
        wanted.append(("--group-by", s.group_by))
    if "timestamp_field" in s.explicit:
        wanted.append(("--timestamp-field", s.timestamp_field))
    for path, table in tables.items():
        columns = table.header
        if columns is None:  # (an empty file, standard input: nothing to check yet)
            continue
        shown = ", ".join(columns[:30]) + (f", ... ({len(columns)} in all)" if len(columns) > 30 else "")
        # (a pattern's fields are its named groups, the same for every file)
        what, of = ("group", f"--line-pattern {table.source}") if s.line_pattern else ("column", path)
        for flag, name in wanted:
            if name not in columns:
                raise ConfigError(f"{of} has no {what} {name!r} ({flag}): its {what}s are {shown}")
        if s.key_field is None and "arm" not in columns and "key" not in columns:
            unit = "line" if s.line_pattern else "row"
            raise ConfigError(f"{of} has no 'arm' or 'key' {what} naming each {unit}'s key: name the {what} with "
                              f"--key-field (its {what}s are {shown})")

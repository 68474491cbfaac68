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
it cannot know which rate you care about. The parts: :mod:`.inspect_read` reads the records and tells a file's
format, :mod:`.inspect_fields` keeps what each field held, :mod:`.inspect_suggest` turns that into flags; this
module is the command.

>>> import json, tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "app.jsonl")
>>> with open(p, "w") as f:
...     for i in range(400):
...         _ = f.write(json.dumps({"host": f"h{i % 8}", "status": 500 if i % 13 == 0 else 200, "ms": i % 97 + 0.5}) + "\\n")
>>> print("\\n".join(suggestions(profile(p, records=1000)[0], 400)))
streamarms run --rewards-file FILE --key-field host --reward-field status --reward-at-least 500 --policy cs
streamarms run --rewards-file FILE --key-field host --reward-field ms --reward-model bounded --reward-range 0,97 --clip --policy cs
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from ..errors import ConfigError
from .inspect_fields import FieldProfile
from .inspect_read import (
    FORMAT_NAMES,
    SPREAD,
    container_format,
    file_encoding,
    kafka_profile,
    line_format,
    lines_format,
    profile,
    wrapped_line,
)
from .inspect_suggest import file_key_flags, grouped_text, key_candidates, suggestions

__all__ = ["add_inspect_parser", "inspect_main", "profile", "suggestions", "FieldProfile"]


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
    print(f"the field {wrapped[0]} holds {FORMAT_NAMES[wrapped[1]]}: read with --line-field "
          f"{shlex.quote(wrapped[0])} --line-pattern {wrapped[1]}")
    return True


def _sheet_with_keys(opts: argparse.Namespace, fields: dict[str, FieldProfile], read: int) -> bool:
    """Whether one workbook was given whose active sheet holds no keys (a cover note, a chart's data) and another
    of its sheets does (the first, of up to 10): then ``opts.sheet`` names it, said in one line, and the records
    are to be read again."""
    from streamarms.connectors.workbook_lines import WORKBOOK_SUFFIXES, sheet_names

    if len(opts.files) != 1 or opts.sheet is not None or not opts.files[0].lower().endswith(WORKBOOK_SUFFIXES) or \
            key_candidates(fields, read):
        return False
    names, active = sheet_names(opts.files[0])
    for name in [name for name in names if name != active][:10]:
        try:
            got, n, refused = profile(opts.files, opts.records, opts.rewards_format, sheet=name)
        except (ConfigError, OSError):  # (a chart, a damaged sheet)
            continue
        if key_candidates(got, n - sum(refused.values())):
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
                    print(f"the values are {FORMAT_NAMES[known]}, not JSON: read with --line-pattern {known}")
                    opts.line_pattern = known
                    fields, n, refused = kafka_profile(sample, opts.records, known)
            source = f"--bootstrap-servers {shlex.quote(opts.bootstrap_servers)}" + "".join(
                f" --rewards-topic {shlex.quote(t)}" for t in opts.rewards_topic) + (
                f" --line-pattern {shlex.quote(opts.line_pattern)}" if opts.line_pattern else "") + (
                f" --line-field {shlex.quote(opts.line_field)}" if opts.line_field else "")
        else:
            opts.files = expand_files(opts.files)
            opts.encoding = file_encoding(opts.files, opts.encoding)
            if opts.rewards_format == "auto" and opts.line_pattern is None and (
                    runtime := container_format(opts.files[0])) is not None:  # (Kubernetes' /var/log/containers)
                opts.rewards_format, opts.line_pattern = runtime
                print(f"the lines are {FORMAT_NAMES['container']}: read with --rewards-format container" +
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
                and (known := line_format(opts.files[0])) is not None):
            flag = "--rewards-format" if known in ("w3c", "csv", "tsv") else "--line-pattern"
            print(f"the lines are {FORMAT_NAMES[known]}, not JSON: read with {flag} {known}")
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
        from streamarms.connectors.workbook_lines import sheet_notes

        for note in sheet_notes(opts.files, opts.sheet):  # (which sheet of a workbook of several was read)
            print(note)
    if not fields:
        print("no field found: run reads a Kafka record's value as one JSON object, or as a log line with "
              "--line-pattern (Avro or Protobuf are refused record by record)" if source else
              "no field found: a JSON-lines file holds one JSON object a line; a table has a header line "
              "(by its name, .csv/.tsv, or --rewards-format); a plain-text log needs --line-pattern")
        return 1
    print(f"  {'field':<28} {'in':>6}  {'types':<22} {'values':<16} examples / range")
    for f in sorted(fields.values(), key=lambda f: -f.present):
        print(f.line(read))
    keys = key_candidates(fields, read)
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

"""``streamarms dedupe-alerts``: the documented recipe for at-least-once alerts, as a filter.

Reads alerts as JSON lines (files, or standard input) and writes each ``alert_id`` once, in order, to
standard output (:class:`~streamarms.alerts.AlertDeduplicator`): the repeats a crash of the daemon
may publish are dropped. For example ``kcat -C -t alerts -e -u | streamarms dedupe-alerts``, or
over a JSONL alert file written by ``--alerts-file``. A line that is not a streamarms alert is an
error naming the line (exit 2). ``--keep-episodes N`` bounds the memory to the ids of the newest N
episodes (2 suffices for streamarms' own re-publications). The count of dropped repeats goes to
standard error.

>>> import io, contextlib
>>> src = io.StringIO('{"alert_id": "1:a:outlier"}\\n{"alert_id": "1:a:outlier"}\\n')
>>> out = io.StringIO()
>>> with contextlib.redirect_stderr(io.StringIO()):
...     dedupe_alerts([src], out)
0
>>> out.getvalue()
'{"alert_id": "1:a:outlier"}\\n'
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import IO, Any

from ..alerts import AlertDeduplicator

__all__ = ["add_dedupe_parser", "dedupe_alerts"]


def add_dedupe_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``dedupe-alerts`` to the ``streamarms`` sub-commands."""
    p = subparsers.add_parser("dedupe-alerts", help="drop repeated alert_id from a JSONL stream of alerts",
                              description=__doc__.split("\n\n")[1])
    p.add_argument("files", nargs="*", metavar="FILE", help="JSONL alert files (default: standard input)")
    p.add_argument("--keep-episodes", type=int, default=None, metavar="N",
                   help="remember the ids of the newest N episodes only (default: all)")
    p.set_defaults(handler=_main)
    return p


def dedupe_alerts(sources: Iterable[IO[str]], out: IO[str], keep_episodes: int | None = None) -> int:
    """Copy the first line of every ``alert_id`` of ``sources`` to ``out``; 0, or 2 on a bad line."""
    d = AlertDeduplicator(keep_episodes)
    for src in sources:
        name = getattr(src, "name", "<stdin>")
        n = 0
        try:
            for n, line in enumerate(src, 1):  # noqa: B007 (n: the line an error names, after the loop)
                if not line.strip():
                    continue
                try:
                    keep = d.accept(json.loads(line))
                except RecursionError:  # (json's own limit: arrays nested 100,000 deep)
                    raise ValueError("JSON nested too deeply to read") from None
                if keep:
                    out.write(line if line.endswith("\n") else line + "\n")
        except UnicodeDecodeError:  # (decoded a chunk at a time: the bad byte is on a line after the n read)
            print(f"streamarms dedupe-alerts: error: {name}: not UTF-8 text after line {n:,} (streamarms writes its "
                  "alerts in UTF-8)", file=sys.stderr)
            return 2
        except ValueError as e:  # bad JSON, or JSON without an alert_id
            print(f"streamarms dedupe-alerts: error: {name}:{n}: {e}", file=sys.stderr)
            return 2
    print(f"streamarms dedupe-alerts: {d.passed} alerts, {d.dropped} repeats dropped", file=sys.stderr)
    return 0


def _main(opts: argparse.Namespace) -> int:
    if opts.keep_episodes is not None and opts.keep_episodes < 1:
        print("streamarms dedupe-alerts: error: --keep-episodes must be >= 1", file=sys.stderr)
        return 2
    if not opts.files or opts.files == ["-"]:
        return dedupe_alerts([sys.stdin], sys.stdout, opts.keep_episodes)
    try:
        handles = [sys.stdin if f == "-" else open(f, encoding="utf-8") for f in opts.files]
    except OSError as e:
        print(f"streamarms dedupe-alerts: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        return dedupe_alerts(handles, sys.stdout, opts.keep_episodes)
    finally:
        for h in handles:
            if h is not sys.stdin:
                h.close()

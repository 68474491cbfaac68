"""The ``streamarms`` command: a parser with one sub-command per job (``simulate``, ``run``, ``explain``,
``inspect``, ``dedupe-alerts``).

>>> build_parser().parse_args(["simulate", "--policy", "wrr"]).policy
'wrr'
"""

from __future__ import annotations

import argparse
import errno
import io
import os
import shlex
import sys
from collections.abc import Sequence

from .. import __version__
from .dedupe import add_dedupe_parser
from .explain import add_explain_parser
from .inspect import add_inspect_parser
from .run import add_run_parser
from .simulate import add_simulate_parser
from .types import allow_negative_lists

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error and exit code 2, and values such as ``-20,20`` taken as values."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        allow_negative_lists(self)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="streamarms", description="Find the outlier keys of a stream with a bandit.")
    parser.add_argument("--version", action="version", version=f"streamarms {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add_simulate_parser(sub)
    add_run_parser(sub)
    add_explain_parser(sub)
    add_inspect_parser(sub)
    add_dedupe_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    opts, extra = parser.parse_known_args(argv)
    if extra:  # (what parse_args does, and for `run FILE` the flag that names a file)
        files = [e for e in extra if not e.startswith("-") and os.path.isfile(e)]
        hint = (f"; a file to read is named by --rewards-file: streamarms run "
                f"{' '.join('--rewards-file ' + shlex.quote(f) for f in files)} ..." if opts.command == "run" and files
                else "")
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    if opts.command is None:  # bare `streamarms`: how to use it
        parser.print_help(sys.stderr)
        return 2
    for stream in (sys.stdout, sys.stderr):  # a key no terminal's encoding writes (PYTHONIOENCODING=ascii, LANG=C):
        if isinstance(stream, io.TextIOWrapper):  # an escape, not a UnicodeEncodeError that loses the last lines
            stream.reconfigure(errors="backslashreplace")
    try:
        return int(opts.handler(opts) or 0)
    except BrokenPipeError:  # `streamarms explain ... | head`: the reader has what it wanted
        # (Python's own advice: point stdout at devnull so that the exit's flush does not fail again)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command a closed pipe stopped
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
            raise
        # stdout on a full disk (> /dev/full), a terminal gone: one line, not a traceback (nor a second one as the
        # exit flushes what is left)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"streamarms {opts.command}: error: cannot write its output: {e.strerror or e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

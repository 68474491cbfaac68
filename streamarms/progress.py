"""Progress of long command-line work on stderr, with tqdm.

Shown only where a person is watching: stderr is a terminal and ``--quiet`` was not given. Output
meant for programs (``--json`` on stdout, redirected stderr, CI logs) never contains it.

>>> import io
>>> with RunProgress(runs=3, label="rr", stream=io.StringIO()) as p:   # not a terminal: silent
...     p.pulls(65536)
...     p.run_done(70000)
>>> p.enabled
False
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm import tqdm

__all__ = ["RunProgress", "wanted"]


def wanted(stream: TextIO | None = None, quiet: bool = False) -> bool:
    """Whether to show progress on ``stream`` (default stderr): a terminal, and not ``quiet``."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return not quiet and callable(isatty) and bool(isatty())


class RunProgress:
    """A bar over seeded runs that also counts the pulls of the run in progress.

    ``pulls(n)``: the current run has used ``n`` rewards; ``run_done(n)``: it finished after ``n``.
    """

    def __init__(self, runs: int, label: str, stream: TextIO | None = None, quiet: bool = False,
                 force: bool | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = wanted(self.stream, quiet) if force is None else force
        self.total_pulls = 0
        self._bar: Any = None
        if self.enabled:
            self._bar = tqdm(total=runs, desc=label, unit="run", file=self.stream, leave=False,
                             dynamic_ncols=True, mininterval=0.5)

    def pulls(self, n: int) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"pulls {self.total_pulls + n:,}", refresh=False)
            self._bar.update(0)  # tqdm redraws at most every mininterval

    def run_done(self, n: int) -> None:
        self.total_pulls += n
        if self._bar is not None:
            self._bar.set_postfix_str(f"pulls {self.total_pulls:,}", refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

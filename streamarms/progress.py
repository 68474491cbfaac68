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
import time
from typing import Any, TextIO

from tqdm import tqdm

__all__ = ["RunProgress", "ReplayProgress", "wanted"]


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


class ReplayProgress:
    """A bar over the bytes of the files a replay reads (``streamarms run --rewards-file`` without ``--follow``),
    with the records read and the keys flagged so far: a multi-gigabyte log otherwise ran minutes without a word.

    ``update(done, records, flagged)`` (cheap: it draws at most twice a second); ``close()`` before the run's last
    lines. ``start``: the bytes read before (a restart from a checkpoint).

    >>> import io
    >>> out = io.StringIO()
    >>> p = ReplayProgress(2_000_000, start=500_000, stream=out, force=True)
    >>> p.update(1_500_000, 12_000, 1, now=10.0); p.close()
    >>> "75%" in out.getvalue() and "12,000 records" in out.getvalue()
    True
    """

    #: seconds between two draws
    INTERVAL = 0.5

    def __init__(self, total: int, start: int = 0, stream: TextIO | None = None, quiet: bool = False,
                 force: bool | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = (wanted(self.stream, quiet) if force is None else force) and total > 0
        self._bar: Any = None
        self._at = start
        self._drawn = -1.0
        if self.enabled:
            self._bar = tqdm(total=total, initial=start, desc="replay", unit="B", unit_scale=True, unit_divisor=1024,
                             file=self.stream, leave=False, dynamic_ncols=True, mininterval=self.INTERVAL)

    def due(self, now: float | None = None) -> bool:
        """Whether :meth:`update` would draw now (the caller may skip working out its numbers)."""
        return self._bar is not None and (time.monotonic() if now is None else now) - self._drawn >= self.INTERVAL

    def update(self, done: int, records: int, flagged: int, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        bar = self._bar
        if bar is None or not self.due(now):
            return
        self._drawn = now
        bar.n = max(self._at, done)  # (set, not added: a position, not an increment)
        self._at = bar.n
        bar.set_postfix_str(f"{records:,} records, {flagged:,} flagged")  # (draws)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

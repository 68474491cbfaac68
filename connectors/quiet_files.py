"""Followed files with nothing new are looked at by one ``stat`` (:class:`QuietFiles`).

A follower (``streamarms run --follow``) looks at each file at every poll: renamed away? truncated? rewritten?
grown? Those checks read bytes and list the folder; a pattern of a year of hourly logs, nearly all done growing,
made them take a core (``benchmarks/follow_many_files.py``). A file found with nothing new is *quiet*: until the
:func:`signature` of its path changes (device, inode, size, modification and change times: a rename, a write, a
truncation each change it) a poll spends one ``stat`` on it instead, and once it has been quiet for
:data:`QUIET_AFTER` seconds, one ``stat`` every :data:`QUIET_LOOK` seconds (as ``tail -F`` does), or every tenth
of the time it has been quiet, up to :data:`QUIET_MAX` seconds (a file done growing, last week's log, is looked at
every 10 s; Filebeat's ``max_backoff`` is the same 10 s): a line written to a file quiet for ``t`` seconds is read
within ``t / 10`` seconds (at least 1, at most 10). Between two
looks such a file *rests*: :meth:`QuietFiles.awake` leaves it out of the poll (a heap of look times), so a
poll's Python work is for the files written to, not for every file followed.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "a.log"); _ = open(p, "w").write("x\\n")
>>> from streamarms.connectors.jsonl_lines import LineReader
>>> quiet, reader = QuietFiles(clock=lambda: 0.0), LineReader(p, follow=True)
>>> reader.read(10)
['x']
>>> quiet.mark(p, reader); quiet.skip(p)
True
>>> _ = open(p, "a").write("y\\n"); quiet.skip(p)   # grown: looked at again
False
>>> quiet.awake([p])
['...a.log']
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["QuietFiles", "signature", "QUIET_AFTER", "QUIET_LOOK", "QUIET_MAX"]

#: a file with nothing new for this many seconds is looked at once every :data:`QUIET_LOOK` seconds
QUIET_AFTER = 5.0
QUIET_LOOK = 1.0
#: the longest time between two looks at a quiet file (reached once it has been quiet for 10 times as long)
QUIET_MAX = 10.0


def signature(path: str) -> tuple[int, ...] | None:
    """What changes when a file at ``path`` is replaced, renamed away, written, truncated or touched: its device,
    inode, size, and modification and change times (``None``: no file there)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _with_folder(path: str) -> tuple[int, ...] | None:
    """The :func:`signature` of ``path`` and its folder's: what changes when a name comes to the folder, leaves it
    or is renamed in it (its inode, size, modification and change times; ``None``: no file there)."""
    sig = signature(path)
    if sig is None:
        return None
    try:
        st = os.stat(os.path.dirname(path) or ".")
    except OSError:
        return None
    return (*sig, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class QuietFiles:
    """The quiet files of a follower (module docstring): :meth:`mark` one found with nothing new, :meth:`skip` at
    each poll. ``clock``: monotonic seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: path -> (its signature when found quiet, since when it is quiet, whether its folder's is in it)
        self._files: dict[str, tuple[tuple[int, ...] | None, float, bool]] = {}
        #: the quiet files not due for a look (:meth:`awake`), and a heap of ``(when to look, path)`` of them
        self._resting: set[str] = set()
        self._looks: list[tuple[float, str]] = []

    def __contains__(self, path: str) -> bool:
        return path in self._files

    def mark(self, path: str, reader: Any) -> None:
        """``path`` was looked at and has nothing new for its ``reader``
        (:class:`~streamarms.connectors.jsonl_lines.LineReader`): quiet if the file read is the one at the path (a
        follower still reading a file renamed away goes on to the next); not a pipe. A file of which nothing was read
        yet (an empty one: a new log, the file logrotate ``create``-s) is quiet with its folder's signature too: the
        copy beside it that ``JsonlSource._unread_copied`` looks for at every look (a ``copytruncate`` of lines not
        read) is a new name in the folder, which changes the folder's (2,000 empty files took 22% of a core idle)."""
        if reader.pipe or reader.file_name != path:
            return
        folder = not reader.offset
        sig = _with_folder(path) if folder else signature(path)
        try:
            st = os.fstat(reader.fileno())
        except (OSError, ValueError):
            return
        if sig is not None and sig[:2] == (st.st_dev, st.st_ino):
            self._files[path] = (sig, self._clock(), folder)

    def gone(self, path: str) -> None:
        """No file is at ``path`` (a follower waits for one): quiet until one comes."""
        if path not in self._files and signature(path) is None:
            self._files[path] = (None, self._clock(), False)

    def awake(self, paths: Iterable[str]) -> list[str]:
        """``paths`` but the resting ones (quiet, their next look not due): the files a poll is to read or look at,
        in their order."""
        now = self._clock()
        while self._looks and self._looks[0][0] <= now:
            self._resting.discard(heapq.heappop(self._looks)[1])
        if not self._resting:
            return list(paths)
        return [p for p in paths if p not in self._resting]

    def skip(self, path: str) -> bool:
        """Whether the checks of ``path`` can be skipped at this poll (asked of the :meth:`awake` files): it is quiet
        and its signature unchanged; a change ends its quiet. Quiet for :data:`QUIET_AFTER` seconds, it rests until
        its next look."""
        quiet = self._files.get(path)
        if quiet is None:
            return False
        now = self._clock()
        if quiet[0] != (_with_folder(path) if quiet[2] else signature(path)):
            del self._files[path]
            return False
        age = now - quiet[1]
        if age >= QUIET_AFTER and path not in self._resting:
            self._resting.add(path)
            heapq.heappush(self._looks, (now + min(QUIET_MAX, max(QUIET_LOOK, age / 10)), path))
        return True

"""Following a pattern: the files that appear while ``--follow`` runs join it (:class:`PatternWatch`).

A log written under a new name each day or hour (``app-2026-11-29.log``: winston-daily-rotate-file, logback's
``%d`` file names, a collector's hourly files) is not rotated: a new file appears beside the old ones.
``streamarms run --follow --rewards-file 'logs/app-*.log'`` reads the matches there when it starts, and looks
again at most once every ``interval`` seconds while it runs: a new match is followed from its first line as a
file of its own, checkpointed by its path like the others (a restart's pattern matches it again and resumes it).

Not taken as new (the follower of a file reads these itself, or they hold lines already read):

- a file named as a rotation of a file followed (``app.log.1``, ``app.log-20261129`` beside ``app.log``:
  :func:`~streamarms.connectors.jsonl_lines.rotation_name`);
- a file already open or read under another name (its device and inode: a file renamed);
- a compressed file (a log compressed once written: its lines were read from the file it was made of); it is
  named once in a warning, with how to read it;
- a directory, a pipe, anything that is no regular file.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); now = [0.0]
>>> watch = PatternWatch([os.path.join(d, "app-*.log")], interval=1.0, clock=lambda: now[0])
>>> _ = open(os.path.join(d, "app-29.log"), "w").close(), open(os.path.join(d, "app-29.log.1"), "w").close()
>>> watch.due()
False
>>> now[0] = 1.0; watch.due()
True
>>> [os.path.basename(p) for p in watch.new_files([], set)]
['app-29.log']
>>> watch.new_files([os.path.join(d, "app-29.log")], set)
[]
"""

from __future__ import annotations

import glob
import logging
import os
import stat
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from .jsonl_lines import compressed_file, rotation_name

__all__ = ["PatternWatch", "INTERVAL", "file_ids"]

log = logging.getLogger("streamarms.files")

#: seconds between two looks for new matches (a glob of each pattern: a directory listing)
INTERVAL = 1.0


def file_ids(readers: Iterable[Any], *read: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """``(dev, inode)`` of the files the ``readers`` have open (pipes left out) and of those in ``read``: files a
    pattern's match is not taken as new for (a file renamed to a name the pattern matches)."""
    ids = set().union(*read)
    for r in readers:
        if not r.pipe:
            try:
                st = os.fstat(r.fileno())
            except (OSError, ValueError):  # (closed under it)
                continue
            ids.add((st.st_dev, st.st_ino))
    return ids


def _rotation_of(q: str, paths: set[str]) -> bool:
    """Whether ``q`` is named as a rotation of one of ``paths`` (:func:`rotation_name`; one look per place in its
    name where a rotation's suffix could start, not one per path)."""
    folder, name = os.path.split(q)
    return any(name[i] in ".-_" and name[i + 1].isdigit() and os.path.join(folder, name[:i]) in paths
               and rotation_name(name[:i], name) for i in range(1, len(name) - 1))


class PatternWatch:
    """The ``patterns`` of a followed run (module docstring): :meth:`new_files` are the matches to read now.

    ``interval``: seconds between looks (:meth:`due`); ``clock``: a monotonic clock in seconds.
    """

    def __init__(self, patterns: Sequence[str], interval: float = INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.patterns = list(patterns)
        self.interval = interval
        self._clock = clock
        self._next = clock() + interval  # (the patterns were expanded when the run started)
        #: matches not read, each said once (compressed, or refused by the source: :meth:`refuse`)
        self._refused: set[str] = set()

    def due(self) -> bool:
        """Whether it is time to look again (at most once per ``interval``); a ``True`` starts the next interval."""
        now = self._clock()
        if now < self._next:
            return False
        self._next = now + self.interval
        return True

    def refuse(self, path: str) -> None:
        """``path`` is not to be taken again (the source could not read it, and said why)."""
        self._refused.add(path)

    def new_files(self, paths: Collection[str], ids: Callable[[], set[tuple[int, int]]]) -> list[str]:
        """The matches of the patterns that are new regular files: not in ``paths`` (the files read), no rotation of
        one by its name, and whose ``(device, inode)`` is not in ``ids()`` (the files open or read: asked only when
        a match is new by its name); by name."""
        read = set(paths)
        known: set[tuple[int, int]] | None = None
        out: list[str] = []
        for pattern in self.patterns:
            for q in sorted(glob.glob(pattern)):
                if q in read or q in self._refused or q in out or _rotation_of(q, read):
                    continue
                try:
                    st = os.stat(q)
                except OSError:
                    continue
                if known is None:
                    known = ids()
                if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in known:
                    continue
                packed = compressed_file(q)
                if packed is not None:
                    self._refused.add(q)
                    log.warning("%s matches %s and appeared while following: not read, it is %s-compressed (a log "
                                "compressed once written; its lines were read from the file it was made of). A "
                                "compressed file of new lines is read by a run of its own (--rewards-file %s)",
                                q, pattern, packed[0], q)
                    continue
                out.append(q)
        return out

"""Following a pattern: the files that appear while ``--follow`` runs join it (:class:`PatternWatch`).

A log written under a new name each day or hour (``app-2026-11-29.log``: winston-daily-rotate-file, logback's
``%d`` file names, a collector's hourly files) is not rotated: a new file appears beside the old ones.
``streamarms run --follow --rewards-file 'logs/app-*.log'`` reads the matches there when it starts, and looks
again at most once every ``interval`` seconds while it runs: a new match is followed from its first line as a
file of its own, checkpointed by its path like the others (a restart's pattern matches it again and resumes it).

Not taken as new (the follower of a file reads these itself, or they hold lines already read):

- a file named as a rotation of a file followed (``app.log.1``, ``app.log-20261129`` beside ``app.log``:
  :func:`~streamarms.connectors.jsonl_lines.rotation_name`);
- a file already open or read under another name (a file renamed; known by its device, inode and first bytes:
  :class:`ReadFiles`), and of two names of one file (a symlink to the day's log beside it, a hard link) all but
  the real file's (:func:`one_name_per_file`);
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
>>> [os.path.basename(p) for p in watch.new_files([], lambda path, st: False)]
['app-29.log']
>>> watch.new_files([os.path.join(d, "app-29.log")], lambda path, st: False)
[]
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
import stat
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from .file_ids import FileIds
from .file_kinds import compressed_file
from .jsonl_lines import rotation_name

__all__ = ["PatternWatch", "ReadFiles", "INTERVAL", "one_name_per_file", "open_ids", "matches"]

log = logging.getLogger("streamarms.files")

#: seconds between two looks for new matches (a glob of each pattern: a directory listing, skipped while the
#: folder's modification time says nothing came: :meth:`PatternWatch._folder_unchanged`)
INTERVAL = 1.0
#: a folder modified less than this many seconds before a look is listed again at the next one
RACY = 2.0
#: every this many looks a pattern's folder is listed whatever its modification time says
RELIST = 30


def matches(path: str, patterns: Iterable[str]) -> bool:
    """Whether ``path`` matches one of the ``patterns`` (as :func:`fnmatch.fnmatch` reads them).

    >>> matches("/var/log/app-2.log", ["/var/log/app-*.log"]), matches("/var/log/app.1", ["/var/log/app-*.log"])
    (True, False)
    """
    return any(fnmatch.fnmatch(path, pattern) for pattern in patterns)


def open_ids(readers: Iterable[Any]) -> set[tuple[int, int]]:
    """``(dev, inode)`` of the files the ``readers`` have open (pipes left out)."""
    ids = set()
    for r in readers:
        if not r.pipe:
            try:
                st = os.fstat(r.fileno())
            except (OSError, ValueError):  # (closed under it)
                continue
            ids.add((st.st_dev, st.st_ino))
    return ids


class ReadFiles:
    """The files a follower read and closed (a rotation read to its end, a match removed or renamed away), to tell
    a pattern's new match from one of them under another name: logrotate's ``dateext`` with ``extension .log``
    renames ``app.log`` to ``app-20261129.log``, which ``'app*.log'`` matches.

    A file is known by its ``(device, inode)`` *and* its first bytes (:class:`~streamarms.connectors.file_ids.
    FileIds`): once a file is removed its inode number is free, and a new file (tomorrow's log) may get it. The last
    ``limit`` files closed are kept.

    >>> import os, tempfile
    >>> from streamarms.connectors.jsonl_lines import LineReader
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "app.log"); _ = open(p, "w").write("x\\n")
    >>> done, r = ReadFiles(), LineReader(p); done.add(r); r.close()
    >>> os.rename(p, os.path.join(d, "app-29.log")); q = os.path.join(d, "app-29.log")
    >>> done.holds(q, os.stat(q), set)
    True
    """

    def __init__(self, limit: int = 4096) -> None:
        self._closed = FileIds(limit)

    def add(self, reader: Any) -> None:
        """``reader``'s file (:class:`~streamarms.connectors.jsonl_lines.LineReader`, before it is closed) was
        read; a file removed (no link left) cannot come back and is not kept."""
        try:
            if os.fstat(reader.fileno()).st_nlink:
                self._closed.add_fd(reader.fileno())
        except (OSError, ValueError):
            return

    def holds(self, path: str, st: os.stat_result, opened: Callable[[], set[tuple[int, int]]]) -> bool:
        """Whether the file at ``path`` (``st``: its stat) is one open now (``opened()``: their ``(dev, inode)``,
        :func:`open_ids`), or one closed here (:meth:`add`) with the same first bytes."""
        return (st.st_dev, st.st_ino) in opened() or self._closed.holds(path, st.st_dev, st.st_ino)


def _rotation_of(q: str, paths: set[str]) -> bool:
    """Whether ``q`` is named as a rotation of one of ``paths`` (:func:`rotation_name`; one look per place in its
    name where a rotation's suffix could start, not one per path)."""
    folder, name = os.path.split(q)
    return any(name[i] in ".-_" and name[i + 1].isdigit() and os.path.join(folder, name[:i]) in paths
               and rotation_name(name[:i], name) for i in range(1, len(name) - 1))


def one_name_per_file(paths: list[str]) -> list[str]:
    """``paths`` with one name per file: a name of the same file as another (a symlink to the day's log,
    ``current.log -> app-2026-11-29.log``, which ``'*.log'`` matches with it; a hard link) is left out with a warning
    -- read under both, each line would count twice. Of the two the real file's name stays (a symlink is moved on to
    the next file; a new file is followed by its own name). A name given twice is left for the run to refuse.

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); a = os.path.join(d, "app-29.log"); cur = os.path.join(d, "current.log")
    >>> _ = open(a, "w").close(); os.symlink(a, cur)
    >>> [os.path.basename(p) for p in one_name_per_file([a, cur])], [os.path.basename(p) for p in one_name_per_file([cur, a])]
    (['app-29.log'], ['app-29.log'])
    """
    first: dict[tuple[int, int], int] = {}
    dropped: set[int] = set()
    for i, p in enumerate(paths):
        try:
            st = os.stat(p) if p != "-" else None
        except OSError:
            st = None
        if st is None:
            continue
        j = first.setdefault((st.st_dev, st.st_ino), i)
        if j == i or paths[j] == p:
            continue
        drop, keep = (j, i) if os.path.islink(paths[j]) and not os.path.islink(p) else (i, j)
        dropped.add(drop)
        first[(st.st_dev, st.st_ino)] = keep
        log.warning("%s is the same file as %s (a link): read once, as %s", paths[drop], paths[keep], paths[keep])
    return [p for i, p in enumerate(paths) if i not in dropped]


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
        #: matches found to be files read before (a symlink to the day's log), with their ``(dev, inode, size)``:
        #: not asked again while they stay that file
        self._read_before: dict[str, tuple[int, int, int]] = {}
        #: matches the source could not open (:meth:`refuse`): taken again at every look, said once
        self._unopened: set[str] = set()
        #: per pattern, its folder's ``(inode, mtime_ns)`` at the last look and the wall time of that look
        #: (:meth:`_folder_unchanged`); the looks so far (every :data:`RELIST` th lists every folder)
        self._folders: dict[str, tuple[tuple[int, int], int]] = {}
        self._looks = 0

    def due(self) -> bool:
        """Whether it is time to look again (at most once per ``interval``); a ``True`` starts the next interval."""
        now = self._clock()
        if now < self._next:
            return False
        self._next = now + self.interval
        return True

    def matches(self, path: str) -> bool:
        """Whether ``path`` matches one of the patterns (:func:`matches`)."""
        return matches(path, self.patterns)

    def refuse(self, path: str, error: Exception) -> None:
        """The source could not take ``path``, for ``error``: said once. An ``OSError`` (no permission yet: a
        file created before its mode is set, no room for another open file, gone since the look) is passing,
        and ``path`` is a new match again at the next look (:meth:`taken` says when it is read at last); any
        other error is in the file (a JSON array, a table's bad header): ``path`` is not taken again."""
        passing = isinstance(error, OSError)
        if path not in self._unopened:
            log.warning("%s appeared while following (it matches a --rewards-file pattern) and cannot be read: %s%s",
                        path, error, "; tried again at every look" if passing else "")
        if passing:
            self._unopened.add(path)
        else:
            self._unopened.discard(path)
            self._refused.add(path)

    def _folder_unchanged(self, pattern: str) -> bool:
        """Whether no file can have come to ``pattern``'s folder since the last look: the folder's modification time
        (which a file created, renamed or linked in it sets) is unchanged, and was more than :data:`RACY` seconds
        before that look (a file created in the same clock tick after the listing leaves it unchanged: as git's
        "racy" entries). Listed anyway: a pattern with a wildcard in its folders, while a match waits to be opened
        (a ``chmod`` does not touch the folder), and every :data:`RELIST` looks (a network file system whose clock
        differs from this machine's)."""
        folder = os.path.dirname(pattern)
        if glob.has_magic(folder):
            return False
        try:
            st = os.stat(folder or ".")
        except OSError:
            return False
        now, sig, last = time.time_ns(), (st.st_ino, st.st_mtime_ns), self._folders.get(pattern)
        self._folders[pattern] = (sig, now)
        return (last is not None and last[0] == sig and st.st_mtime_ns < last[1] - int(RACY * 1e9)
                and not self._unopened and self._looks % RELIST != 0)

    def taken(self, path: str) -> None:
        """The source reads ``path`` now: one that could not be opened before (:meth:`refuse`) is said to be read."""
        if path in self._unopened:
            self._unopened.discard(path)
            log.warning("%s can be read now: following it from its first line", path)

    def new_files(self, paths: Collection[str], read_before: Callable[[str, os.stat_result], bool]) -> list[str]:
        """The matches of the patterns that are new regular files: not in ``paths`` (the files read), no rotation of
        one by its name, and not ``read_before(path, stat)`` (a file read under another name: asked only of a
        match new by its name, :class:`ReadFiles`); by name."""
        read = set(paths)
        out: list[str] = []
        self._looks += 1
        if self._unopened:  # a match gone before it could be opened waits no more (and keeps the folders listed)
            self._unopened = {q for q in self._unopened if os.path.lexists(q)}
        for pattern in self.patterns:
            if self._folder_unchanged(pattern):
                continue
            for q in sorted(glob.glob(pattern)):
                if q in read or q in self._refused or q in out or _rotation_of(q, read):
                    continue
                try:
                    st = os.stat(q)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                seen = self._read_before.get(q)
                if seen is not None and seen[:2] == (st.st_dev, st.st_ino) and st.st_size >= seen[2]:
                    continue  # (the same file as at the last look, a file read before: no look at every file)
                if read_before(q, st):
                    self._read_before[q] = (st.st_dev, st.st_ino, st.st_size)
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
        return one_name_per_file(out)  # (a symlink moved on to a new file, matched with it: one of the two)

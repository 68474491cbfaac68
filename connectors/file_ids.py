"""Files known by their device, inode *and* first bytes (:class:`FileIds`).

A follower remembers files by identity: the rotations of a path it has read (:func:`~streamarms.connectors.
jsonl_lines.next_rotation` skips them), the rotations there when it started (not its to read), the files it read
and closed (a pattern's new match that is one of them under another name is not read again). ``(device, inode)``
alone names a file only while it exists: once a file is removed -- compressed to ``F.1.gz``, or past logrotate's
``rotate N`` -- and closed, its inode number is free, and ext4 gives it to the very next file created, the writer's
next log. Known by its number alone, that log passed for the file read and was skipped: the rotation drill lost the
5,800 lines of one file that way (``tests/runtime/test_jsonl_follow.py::
test_a_rotation_given_the_inode_of_a_file_read_and_removed_is_read``).

So a file is known by its ``(device, inode)`` and its first :data:`HEAD` bytes as stored (a compressed file's
compressed bytes), read when it is added: the file at a path is the one added if its number is the same and its
first bytes start with those read then (a file grows; its start does not change). A file empty when added is that
file only while it is still empty (any new file starts with nothing).

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); a = os.path.join(d, "app.log.1"); _ = open(a, "w").write("line 1\\n")
>>> ids, st = FileIds(), os.stat(a)
>>> ids.add(a), ids.holds(a, st.st_dev, st.st_ino)
(True, True)
>>> _ = open(a, "w").write("another file's first line\\n")   # (the same inode, as a new file there would have)
>>> ids.holds(a, st.st_dev, st.st_ino)
False
"""

from __future__ import annotations

import errno
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import IO, NamedTuple, TypeVar

__all__ = ["FileIds", "HEAD", "Listed", "Renamed", "open_listed", "relisting", "TRIES"]

T = TypeVar("T")
#: listings of a folder tried while a rotation renames its files on between each listing and an opening
TRIES = 50

#: a file is known by this many of its first bytes (a log's first line or two: its time, its first record)
HEAD = 256


class FileIds:
    """A set of files known by ``(device, inode)`` and first bytes (module docstring). ``limit``: the most kept (the
    oldest added go first); ``None``: no limit."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._heads: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        #: the latest modification time (ns) of the files added, when added (0: none)
        self.newest = 0

    def __len__(self) -> int:
        return len(self._heads)

    def add(self, path: str) -> bool:
        """Add the file at ``path`` now; whether it was there to add."""
        try:
            with open(path, "rb") as f:
                return self.add_fd(f.fileno())
        except OSError:
            return False

    def add_fd(self, fd: int) -> bool:
        """Add the file open as ``fd``; whether it could be read."""
        try:
            st = os.fstat(fd)
            head = os.pread(fd, HEAD, 0)
        except OSError:
            return False
        self._heads[(st.st_dev, st.st_ino)] = head
        self._heads.move_to_end((st.st_dev, st.st_ino))
        self.newest = max(self.newest, st.st_mtime_ns)
        while self.limit is not None and len(self._heads) > self.limit:
            self._heads.popitem(last=False)
        return True

    def clear(self) -> None:
        """Forget every file added."""
        self._heads.clear()
        self.newest = 0

    def holds(self, path: str, dev: int, ino: int) -> bool:
        """Whether the file at ``path`` (its ``dev``, ``ino`` as listed) is one added: that number, and its first
        bytes those read when it was added."""
        head = self._heads.get((dev, ino))
        if head is None:
            return False
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                now = f.read(max(len(head), 1))
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == (dev, ino) and now[:len(head)] == head and (len(head) > 0 or not now)


class Listed(NamedTuple):
    """A file as a folder listing found it: its name then, and its device and inode (which file it was). A rotation
    renames files on (``F.1`` to ``F.2``, the path's file to ``F.1``): opened later by its name, it may be another file
    (:func:`open_listed`).

    >>> Listed("app.log.1", 2049, 131).name
    'app.log.1'
    """

    name: str
    dev: int
    ino: int


class Renamed(FileNotFoundError):
    """The file listed at a name is not there now (a rotation renamed it on since the listing): list again."""


def open_listed(listed: Listed) -> IO[bytes]:
    """``listed`` opened for reading by its name, when that is still the file listed (its device and inode);
    :class:`Renamed` when another file has the name now, ``FileNotFoundError`` when none has. The rotation drill lost a
    whole file so in one run of ten: the follower listed ``app.log.2.gz`` as the next file to read, a rotation renamed
    it ``.3.gz`` before it was opened, and the newer file then at ``.2.gz`` was read in its place
    (``tests/runtime/test_rotation_renames.py``).

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); a, b = os.path.join(d, "a.1"), os.path.join(d, "a")
    >>> _ = open(a, "w").write("old\\n"); _ = open(b, "w").write("new\\n")
    >>> st = os.stat(a); listed = Listed(a, st.st_dev, st.st_ino)
    >>> with open_listed(listed) as f:
    ...     f.read()
    b'old\\n'
    >>> os.replace(a, a + ".2"); os.replace(b, a)      # (rotated on: the name is the newer file's now)
    >>> try:
    ...     open_listed(listed)
    ... except Renamed as e:
    ...     print(e.strerror)
    renamed since it was listed
    """
    f = open(listed.name, "rb")
    st = os.fstat(f.fileno())
    if (st.st_dev, st.st_ino) != (listed.dev, listed.ino):
        f.close()
        raise Renamed(errno.ENOENT, "renamed since it was listed", listed.name)
    return f


def relisting(attempt: Callable[[bool], T], catch: type[OSError] = Renamed) -> T:
    """``attempt(first)`` -- a listing of a folder and the openings of files it listed -- tried again while it raises
    ``catch`` (:class:`Renamed` by default: a file renamed on between the listing and the opening), at most
    :data:`TRIES` times, then that error. ``first``: the first try (a listing the caller already holds is good for it
    only).

    >>> tries = []
    >>> def attempt(first):
    ...     tries.append(first)
    ...     if len(tries) < 3:
    ...         raise Renamed(errno.ENOENT, "renamed since it was listed", "app.log.2")
    ...     return "read"
    >>> relisting(attempt), tries
    ('read', [True, False, False])
    """
    for i in range(TRIES):
        try:
            return attempt(i == 0)
        except catch:
            if i == TRIES - 1:
                raise
            time.sleep(0.002)
    raise AssertionError("unreachable")

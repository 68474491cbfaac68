"""The rotations a follower behind has yet to read, and those removed before it read them (:class:`OwedRotations`).

A follower behind -- still reading a file a rotation renamed away -- reads the rotations written after it in turn
(:func:`~streamarms.connectors.follow_rotations.next_file`). A log kept by logrotate's ``rotate N`` loses its oldest rotation at
each rotation: a follower N rotations behind found the next file it had to read removed before it came to it, went on
with the one after, and said nothing -- the lines of that file lost. No reader can prevent that (the writer's
retention removes the file); it can say it. So while it is behind, the follower lists the path's rotations at most
every :data:`LOOK` seconds and keeps the first bytes of each written after the file it reads: the files it owes (a
compressed one by its decompressed bytes, so the ``F.1.gz`` logrotate makes of an owed ``F.1`` is the same file). When
it goes on to the next file, an owed file that it has not read and that is no rotation there now was removed unread: a
warning names it, and :attr:`OwedRotations.lost` counts it (``streamarms_follow_files_lost_total``). A file rotated
and removed between two looks is not seen. (A run stopped for that long finds its checkpoint's file removed -- the
oldest go first -- and stops saying so: :func:`~.follow_rotations.rotated_and_removed`, :func:`~.start_mark.first_to_read`.)

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "app.log")
>>> for i, text in ((2, "G's lines\\n"), (1, "H's lines\\n")):
...     _ = open(f"{p}.{i}", "w").write(text); os.utime(f"{p}.{i}", ns=(10**9 * (3 - i), 10**9 * (3 - i)))
>>> owed = OwedRotations(look=0)
>>> owed.note(p, after=0)            # (behind a file written before both: G and H owed)
>>> os.remove(f"{p}.2")              # (retention removes G before the follower came to it)
>>> owed.settle(p, read=b"")
['app.log.2']
>>> owed.lost
1
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from .compressed_lines import file_head
from .file_ids import Listed, Renamed, relisting
from .file_watch import matches
from .jsonl_lines import rotations_of
from .ordering import tp_name

__all__ = ["OwedRotations", "LOOK", "HEAD"]

log = logging.getLogger("streamarms.files")

#: seconds between two listings of a path's rotations while its follower is behind
LOOK = 0.5
#: a rotation is known by this many of its first bytes (a wide table's header line alone may be 256 bytes long)
HEAD = 4096


def _first_bytes(listed: Listed) -> bytes | None:
    """The first :data:`HEAD` bytes of a rotation as listed (decompressed, if compressed: :func:`~.compressed_lines.
    file_head`); ``None``: renamed on or removed since it was listed (a rotation while the folder was looked at)."""
    try:
        return file_head(listed, HEAD)
    except OSError:
        return None


def _rotation_heads(p: str) -> set[bytes]:
    """The first bytes of each rotation of ``p`` there now (listed again while a rotation renames them on:
    :func:`~.file_ids.relisting`; after its last listing, those it read)."""
    heads: list[bytes | None] = []

    def attempt(_: bool) -> None:
        heads[:] = [_first_bytes(Listed(q, dev, ino)) for _, dev, ino, q in rotations_of(p)]
        if None in heads:
            raise Renamed(errno.ENOENT, "renamed since it was listed", p)

    with contextlib.suppress(Renamed):
        relisting(attempt)
    return {h for h in heads if h is not None}


class OwedRotations:
    """The rotations each followed path's follower owes (module docstring). ``look``: seconds between listings.

    >>> OwedRotations().lost
    0
    """

    def __init__(self, look: float = LOOK, clock: Callable[[], float] = time.monotonic) -> None:
        self.look = look
        self._clock = clock
        self._due: dict[str, float] = {}
        #: per path: the first bytes of each owed rotation, and its name when last listed
        self._owed: dict[str, dict[bytes, str]] = {}
        #: owed rotations found removed before they were read (each said in a warning)
        self.lost = 0

    def due(self, p: str) -> bool:
        """Whether ``p``'s follower is to be looked at now: true at most once every :attr:`look` seconds (a follower
        not behind is looked at no more often than one behind)."""
        now = self._clock()
        if now < self._due.get(p, 0.0):
            return False
        self._due[p] = now + self.look
        return True

    def note(self, p: str, after: int) -> None:
        """The follower of ``p`` reads a file renamed away, written last at ``after`` (ns): the rotations written since
        are owed."""
        owed = self._owed.setdefault(p, {})
        for mtime, dev, ino, q in rotations_of(p):
            if mtime > after and (head := _first_bytes(Listed(q, dev, ino))):
                owed[head] = q

    def resumed(self, resume: dict[str, Any] | None, paths: Sequence[str], patterns: Sequence[str]) -> int:
        """A restart of a run of ``patterns`` (following or replaying them): each file of a pattern in the checkpoint
        (``resume``) that is no longer there, removed while the run was stopped (a log past its retention), with
        bytes after the checkpoint's position in it when that was taken (its size: the entry's 6th element; -1, a
        compressed file not decompressed to its end: some), is said and counted (its lines are lost); how many. A
        file read to its end and removed is no loss, and says nothing.

        >>> import os, tempfile
        >>> gone = os.path.join(tempfile.mkdtemp(), "app-1.log")
        >>> owed, patterns = OwedRotations(), [os.path.join(os.path.dirname(gone), "app-*.log")]
        >>> owed.resumed({gone + ":0": [17, None, 1190, "d", None, 70000]}, [], patterns), owed.lost
        (1, 1)
        >>> owed.resumed({gone + ":0": [1000, None, 70000, "d", None, 70000]}, [], patterns)
        0
        """
        if not resume or not patterns:
            return 0
        now, lost = {tp_name((p, 0)) for p in paths}, 0
        for name, st in resume.items():
            path = name.rsplit(":", 1)[0]
            if name in now or isinstance(st, (str, bytes, dict)) or not isinstance(st, Sequence) or len(st) < 6 \
                    or not isinstance(st[5], int) or not isinstance(st[2], int) or 0 <= st[5] <= st[2] \
                    or os.path.exists(path) \
                    or not matches(path, patterns):
                continue
            unread = "the bytes of it" if st[5] < 0 else f"the {st[5] - st[2]:,} bytes written to it"
            log.warning("%s is no longer there: it was removed (a log past its retention) or renamed away to a name "
                        "the pattern does not match while the run was stopped, and %s after the checkpoint's "
                        "position (its line %s) are not read: lost", path, unread, f"{st[0]:,}")
            lost += 1
        self.lost += lost
        return lost

    def settle(self, p: str, read: bytes) -> list[str]:
        """The follower of ``p`` read a file to its end (its first :data:`HEAD` bytes ``read``) and goes on: the names
        of the owed rotations removed unread since they were listed (each said in a warning with its first line,
        counted in :attr:`lost`)."""
        owed = self._owed.get(p)
        if not owed:
            return []
        owed.pop(read, None)
        there = _rotation_heads(p)
        lost = [(os.path.basename(owed.pop(head)), head) for head in [h for h in owed if h not in there]]
        for name, head in lost:
            first = head.split(b"\n", 1)[0][:200].decode("utf-8", "replace")
            log.warning("%s: a rotation of it (%s when last listed, its first line: %s) was removed before the run "
                        "read it -- the run was behind by as many rotations as are kept (logrotate's rotate N): its "
                        "lines are lost. Keep more rotations, rotate less often, or follow fewer files per run",
                        p, name, first)
        self.lost += len(lost)
        return [name for name, _ in lost]

"""A checkpoint at the first byte of a followed file names that file (:func:`start_mark`, :func:`first_to_read`).

A checkpoint keeps a file's position by its line, byte position and a digest of the bytes before it
(:meth:`~streamarms.connectors.jsonl_lines.LineReader.mark`): a restart finds the file that holds those bytes, at
its path or among its rotations. At byte 0 there are no bytes before, every file holds them, and a restart took
the file at the path. A follower is at byte 0 of a file whenever it has just come to it -- the new file after a
rotation, an empty rotation in the chain --, and if that file was rotated while the run was stopped, the file at
the path is a later one: the lines of the checkpoint's file, and of every rotation between, were lost
(``tests/runtime/test_rotation_model.py``, a restart at the start of an empty rotation).

So such a position also keeps the file's inode number and a digest of its first bytes as they were at the
checkpoint, and *since*: the modification time of the newest rotation of the path there when the follower came to
the file's first byte (for a rotation it came to, that rotation's own) (:func:`start_mark`). A rotation written later than
that holds lines the follower had not read: a copy of the file (``copytruncate`` of its lines, made before the
follower read them and just before the checkpoint), or the file itself and those after it. A restart reads the
oldest such rotation first -- or the checkpoint's file, where it is among the rotations (plain: by its number;
compressed since: by its decompressed first bytes) --, then on through the later ones to the file at the path
(:func:`first_to_read`); with none, the file at the path from its first byte.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "app.log"); _ = open(p, "w").close()
>>> with open(p, "rb") as f:
...     mark = start_mark(f.fileno(), since=0)
>>> first_to_read(p, mark) is None   # the file at the path is the checkpoint's, no rotation since
True
>>> os.rename(p, p + ".1"); _ = open(p, "w").write("new\\n")
>>> os.path.basename(first_to_read(p, mark).name)
'app.log.1'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from streamarms.checkpoint import CheckpointError

from .compressed_lines import compressed_head
from .file_ids import Listed, Renamed, open_listed
from .jsonl_lines import WINDOW, _pread, digest, rotations_of

__all__ = ["start_mark", "first_to_read"]


def start_mark(fd: int, since: int | None) -> list[Any]:
    """``[inode, since, n, digest]`` of the file open at ``fd``: its number, ``since`` (module docstring; ns;
    ``None``: the file's own modification time), and the digest of its first ``n`` bytes (up to
    :data:`~streamarms.connectors.jsonl_lines.WINDOW`, as stored)."""
    st = os.fstat(fd)
    head = _pread(fd, WINDOW, 0)
    return [st.st_ino, st.st_mtime_ns if since is None else int(since), len(head), digest(head)]


def _starts(head: bytes | None, n: int, hexdigest: str) -> bool:
    return head is not None and len(head) >= n and digest(head[:n]) == hexdigest


def first_to_read(path: str, mark: Sequence[Any], listing: Sequence[str] | None = None) -> Listed | None:
    """The rotation of ``path`` a restart at byte 0 of the file ``mark`` names (:func:`start_mark`) reads first
    (module docstring), as listed (:func:`~.file_ids.open_listed` opens it, or says it was renamed on since);
    ``None``: the file at ``path`` from its first byte. ``listing``: its folder's sorted names
    (:func:`~streamarms.connectors.jsonl_lines.rotations_of`). ``CheckpointError`` when that file had lines at the
    checkpoint and is neither at the path nor among the rotations now: removed unread while the run was stopped
    (logrotate's ``rotate N``), where the restart went on with the next file and said nothing."""
    ino, since, n, hexdigest = int(mark[0]), int(mark[1]), int(mark[2]), str(mark[3])
    there = copy = False  # the checkpoint's file is still at the path; or a file that starts with its bytes is
    try:
        with open(path, "rb") as f:
            copy = _starts(f.read(n), n, hexdigest)
            there = os.fstat(f.fileno()).st_ino == ino and copy
    except FileNotFoundError:
        pass
    rotations = rotations_of(path, listing)

    def named(d: int, i: int, q: str) -> bool:  # (the checkpoint's file, plain by its number, compressed by its bytes)
        return i == ino or bool(n and _starts(compressed_head(Listed(q, d, i), n), n, hexdigest))

    def held(d: int, i: int, q: str) -> bool:  # (its first bytes in a rotation as stored -- itself, a copy, a
        listed = Listed(q, d, i)  # compressed rotation read at its first byte -- or decompressed: compressed since)
        try:
            with open_listed(listed) as f:
                stored = f.read(n)
            return _starts(stored, n, hexdigest) or _starts(compressed_head(listed, n), n, hexdigest)
        except Renamed:
            raise  # (the rotations renamed on: listed again)
        except OSError:
            return False

    first = next((Listed(q, d, i) for mt, d, i, q in rotations if mt > since or not there and named(d, i, q)), None)
    # held by its bytes, not its number: a file removed gives its number to the next file made (the path's, a .gz);
    # with no rotation to read first, the file at the path must hold them (logrotate's rotate 0 keeps none)
    if n and not there and (first is not None or not copy) and not any(held(d, i, q) for _, d, i, q in rotations):
        raise CheckpointError(
            f"{path}: the file the checkpoint was at the start of (none of its lines read yet) is no longer there, "
            "neither at its path nor among its rotations: it was rotated and then removed while the run was stopped "
            "(logrotate keeps `rotate N` files; none with rotate 0), or truncated or replaced, and its lines cannot "
            "be read. To go on with the file at the path "
            "from its first line, use another --checkpoint (or remove this checkpoint).")
    return first

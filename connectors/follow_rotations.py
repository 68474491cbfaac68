"""What a follower of a path reads next when the file it read was rotated away (``tail -F`` through logrotate): the
oldest rotation written after it and not read yet (:func:`next_file`; a compressed copy of a file read is passed over,
:func:`packed_read`), else the file at the path, held across the folder's listing (:class:`HeldPath`); at a restart
from a file's first byte, the rotation the checkpoint's file became (:func:`resumed_at_start`), from a position in it,
the ``copytruncate`` copy beside the path (:func:`copy_of`); and the error when the checkpoint's file was rotated and
removed while the run was stopped (:func:`rotated_and_removed`). Used by :class:`~streamarms.connectors.files.
JsonlSource`.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "app.log"); _ = open(p, "w").write("{}\\n")
>>> from streamarms.connectors.file_ids import FileIds
>>> listed, reader = next_file(p, 0, FileIds(), [], line=0)  # (no rotation: the file at the path)
>>> listed, reader.read(1), reader.close()
(None, ['{}'], None)
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Sequence
from typing import IO, Any

from streamarms.checkpoint import CheckpointError

from .compressed_lines import DECOMPRESSORS, CompressedLineReader, compressed_head, compressed_rotation, packed_kind
from .file_ids import TRIES, FileIds, Listed, Renamed, open_listed, relisting
from .jsonl_lines import LineReader, digest, next_rotation, rotated_reader, rotations_of
from .start_mark import first_to_read

__all__ = ["HeldPath", "next_file", "packed_read", "resumed_at_start", "copy_of", "rotation_reader",
           "rotated_and_removed", "ReadHeads", "unread_copy"]

log = logging.getLogger("streamarms.files")


def rotated_and_removed(path: str, looked: bool) -> None:
    """``CheckpointError`` saying so when the file a checkpoint read is neither at ``path`` nor among its rotations
    there (``looked``: they were looked at, following) though rotations are there: it was rotated and then removed
    while the run was stopped (logrotate keeps ``rotate N`` files), not truncated or replaced at its path."""
    names = [os.path.basename(q) for *_, q in rotations_of(path)] if looked else []
    if names:
        shown = ", ".join(names[-3:]) + (f" and {len(names) - 3} older" if len(names) > 3 else "")
        raise CheckpointError(
            f"{path}: the file the checkpoint read is no longer there, neither at its path nor among its rotations "
            f"({shown}): it was rotated and then removed while the run was stopped (logrotate keeps `rotate N` files; "
            "a run stopped for longer than N rotations finds its file gone), and the lines written to it after the "
            "checkpoint's position cannot be read. To go on with the file at the path from its first line, use "
            "another --checkpoint (or remove this checkpoint).")


def rotation_reader(p: str, listed: Listed, line: int) -> LineReader | str:
    """A reader of ``listed``, a rotation of ``p`` not read yet, from its first line (numbered from ``line``): its
    decompressed lines when it is gzip, bzip2 or xz; why it cannot be read when it is compressed otherwise (zstd).
    :class:`~.file_ids.Renamed` when a rotation gave its name to another file since it was listed."""
    f, q = open_listed(listed), listed.name
    try:
        kind = packed_kind(f)
        if kind is None:
            return LineReader(p, line=line, pos=0, follow=True, file=f)
        if kind in DECOMPRESSORS:  # (logrotate's compress without delaycompress: read decompressed)
            return CompressedLineReader(p, kind, line=line, pos=0, name=q, raw=f)
    except BaseException:
        f.close()
        raise
    f.close()
    return (f"{p} was rotated to {q} before the run read it, and {q} is {kind}-compressed, which streamarms "
            "cannot decompress: its lines cannot be read (compress rotations with gzip, or one rotation later: "
            "logrotate's delaycompress)")


class HeldPath:
    """The file at a followed path, opened *before* its folder is listed for rotations and held open: if the listing
    has no rotation to read, this file is the one to read next, renamed on since or not. Opened by its name after
    the listing instead, it could be the newer file a rotation had just made, and the file renamed away would never
    be read; held, its inode number cannot be given to a newer file meanwhile (logrotate's ``compress``). A context
    manager: the file is closed on leaving unless :meth:`reader` took it.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "app.log"); _ = open(p, "w").write("{}\\n")
    >>> with HeldPath(p) as here:
    ...     os.rename(p, p + ".1"); _ = open(p, "w").write("[]\\n")  # (a rotation after the opening)
    ...     r = here.reader(line=0)
    >>> r.read(1), r.close()
    (['{}'], None)
    >>> with HeldPath(os.path.join(d, "none.log")) as gone:
    ...     gone.reader(line=0) is None
    True
    """

    def __init__(self, p: str) -> None:
        self.p = p
        try:
            self.file: IO[bytes] | None = open(p, "rb")
        except FileNotFoundError:  # (renamed, the new file not made yet: the listing has it, or it was read)
            self.file = None

    def reader(self, line: int) -> LineReader | None:
        """A reader of the held file from its first line (numbered from ``line``), which then owns it; ``None``: no
        file was at the path."""
        if self.file is None:
            return None
        reader = LineReader(self.p, line=line, pos=0, follow=True, file=self.file)
        self.file = None  # (the reader's now; had it failed, closed on leaving)
        return reader

    def __enter__(self) -> HeldPath:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def next_file(p: str, after: int, seen: FileIds, heads: Sequence[str], line: int) -> tuple[Listed | None,
                                                                                            LineReader | str]:
    """What a follower of ``p`` reads after the file it read to its end (its mtime ``after``; ``seen``: the files
    read, ``heads``: their first bytes' digests, :class:`ReadHeads`): the oldest rotation written after it and not
    read (:func:`next_rotation`; a compressed copy of a file read joins ``seen``, :func:`packed_read`), else the file
    at ``p``; with its reader
    (:func:`rotation_reader`), numbered from ``line``. A rotation that renames the files on between the listing and
    the opening has the folder listed again; the path's file is held across the listing (:class:`HeldPath`).
    ``FileNotFoundError``: no file at ``p``, or the rotation removed."""
    def attempt(_: bool) -> tuple[Listed | None, LineReader | str]:
        with HeldPath(p) as here:
            while (nxt := next_rotation(p, after, seen)) is not None and packed_read(nxt, heads, seen):
                pass
            if nxt is not None:
                return nxt, rotation_reader(p, nxt, line)
            return None, here.reader(line) or LineReader(p, line=line, pos=0, follow=True)
    return relisting(attempt)


def packed_read(listed: Listed, heads: Sequence[str], ids: FileIds) -> bool:
    """Whether ``listed`` is a compressed rotation that starts with the first bytes of a file read to its end
    (``heads``: their digests, :class:`ReadHeads`; logrotate's ``compress`` of the ``F.1`` just read: ``F.1.gz``, a
    new file of lines read); if so it joins ``ids`` (it is not looked at again). :class:`~.file_ids.Renamed`: renamed
    on since it was listed."""
    if not heads or (head := compressed_head(listed)) is None or digest(head) not in heads:
        return False
    try:
        with open_listed(listed) as f:
            return ids.add_fd(f.fileno())
    except Renamed:
        raise
    except OSError:
        return False


def unread_copy(p: str, reader: LineReader, known: FileIds, heads: Sequence[str],
                listing: Sequence[str] | None) -> tuple[Listed, LineReader | str] | None:
    """The oldest rotation of ``p`` new since ``reader`` (of ``p``'s own file, none of it read yet) started -- not in
    ``known``, not its own file, no compressed copy of a file read (``heads``, :func:`packed_read`) -- with its reader
    (:func:`rotation_reader`, or why not): a ``copytruncate`` that left the copy as the only trace of lines not read.
    ``None``: none, or renamed on or removed since listed (looked at again next time). ``listing``: ``p``'s folder's
    names (``None``: listed afresh)."""
    st = os.fstat(reader.fileno())
    try:
        listed = [Listed(q, d, i) for _, d, i, q in rotations_of(p, listing)
                  if not known.holds(q, d, i) and (d, i) != (st.st_dev, st.st_ino)]
        new = [e for e in listed if not packed_read(e, heads, known)]
        return (new[0], rotation_reader(p, new[0], reader.line)) if new else None
    except FileNotFoundError:
        return None


class ReadHeads:
    """The first bytes (their digests) of the last :attr:`KEEP` files of each followed path read to their end, which
    :func:`packed_read` knows a compressed copy of a file read by: kept in the checkpoint (:meth:`of`,
    :meth:`restore`), so a restart passes over the copy too. Without them, logrotate's ``compress`` with
    ``delaycompress`` while the run was stopped (``F.1``, read before the stop, compressed to a new ``F.2.gz``) had
    ``F.2.gz`` taken for a rotation written after the checkpoint's file, and its lines counted twice.

    >>> h = ReadHeads(); h.add("app.log", b'{"a": 1}\\n'); h.of("app.log") == [digest(b'{"a": 1}\\n')]
    True
    >>> h2 = ReadHeads(); h2.restore("app.log", h.of("app.log")); h2.of("app.log") == h.of("app.log")
    True
    """

    #: the files of a path remembered (the rotations a follower may meet compressed)
    KEEP = 8

    def __init__(self) -> None:
        self._of: dict[str, deque[str]] = {}

    def add(self, p: str, head: bytes) -> None:
        """``p``'s file that starts with ``head`` was read to its end (once: a follower waiting comes here often)."""
        if (d := digest(head)) not in (heads := self._of.setdefault(p, deque(maxlen=self.KEEP))):
            heads.append(d)

    def of(self, p: str) -> list[str]:
        """``p``'s heads: what :func:`packed_read` compares, and what a checkpoint keeps (its entry's 7th element)."""
        return list(self._of.get(p, ()))

    def restore(self, p: str, saved: Any) -> None:
        """``p``'s heads from a checkpoint's entry (``None``: an older checkpoint, none); ``CheckpointError`` for what
        no run wrote."""
        if saved is None:
            return
        if not isinstance(saved, list) or len(saved) > self.KEEP or not all(
                isinstance(d, str) and len(d) == 16 for d in saved):
            raise CheckpointError(f"the checkpoint's entry of {p} is malformed: its 7th element is no list of at most "
                                  f"{self.KEEP} digests of 16 hex digits")
        self._of[p] = deque(saved, maxlen=self.KEEP)

    def pop(self, p: str, default: Any = None) -> Any:
        return self._of.pop(p, default)


def resumed_at_start(p: str, mark: Any, line: int, listing: Sequence[str] | None) -> LineReader | None:
    """Following, a restart at the first byte of the file ``mark`` names (:mod:`~streamarms.connectors.start_mark`):
    a reader of the rotation to read first, from its first line (numbered from ``line``), else of the file at ``p``
    as it was before the listing (:class:`HeldPath`), or ``None`` (no file at ``p``). ``CheckpointError``
    when that rotation cannot be read (zstd). ``listing``: ``p``'s folder's names."""
    def attempt(first: bool) -> tuple[Listed | None, LineReader | str | None]:
        q = first_to_read(p, mark, listing if first else None)
        return q, rotation_reader(p, q, line) if q is not None else None
    try:  # (a file renamed on or removed -- compressed -- between the listing and its opening: listed again)
        with HeldPath(p) as here:
            q, found = relisting(attempt, catch=FileNotFoundError)
            if found is None:
                found = here.reader(line)
    except FileNotFoundError:
        raise CheckpointError(f"{p}: its rotations were renamed or removed at each of {TRIES} looks for the file the "
                              "checkpoint was at the start of; start the run again") from None
    if isinstance(found, str):
        raise CheckpointError(found)
    if found is not None and q is not None:
        log.info("%s: the file the checkpoint was at the start of was rotated while the run was stopped; reading "
                 "from %s on, then the file at %s", p, q.name, p)
    return found


def copy_of(p: str, old: LineReader, ahead: bool) -> LineReader | None:
    """The ``copytruncate`` copy beside ``p`` of what ``old`` read, from the line after those it gave (``ahead``:
    lines decoded and not given yet, found as a checkpoint there would find them) or after its last line
    (:meth:`LineReader.copied`); compressed too (no ``delaycompress``). ``None``: no copy."""
    if ahead:
        line = old.line
        pos, dg = old.mark(line)
        return rotated_reader(p, line, pos, dg) or compressed_rotation(p, line, pos, dg)
    return old.copied() or compressed_rotation(p, *old.end_mark())

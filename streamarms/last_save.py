"""An idle daemon does not write the same checkpoint again: :class:`LastSave` remembers what the last save
made durable, and a checkpoint that would save the same document to a store that still holds it is not
written.

Why: a daemon checkpoints every ``checkpoint_interval`` (5 s) whether or not anything happened. Following
5,000 quiet files, each checkpoint was a 360 KB document, written and fsynced: 7.2 GB a day of writes that
changed nothing but ``saved_at`` (``benchmarks/follow_many_files.py``; 1.2 MB a day now).

**Why skipping loses nothing.** The checkpoint rule (:mod:`streamarms.daemon`) asks that, when positions
are committed, the store hold a document whose state and positions belong together. A checkpoint is not
written only when (1) the document built now, ``saved_at`` aside, is the one the last save made durable
-- compared by a SHA-256 of its canonical JSON (:func:`~streamarms.json_stream.iter_json`, the same
encoding the file store writes), so every change counts, whatever made it (records, or ``tick``'s
transitions without records: an episode's start, timeouts, silence) -- and (2) the store says that what
it saved is still there as it left it (:meth:`CheckpointStore.saved_mark
<streamarms.checkpoint.CheckpointStore.saved_mark>`: a file's device, inode, size and modification time; a
Kafka topic's record still between the topic's first and end offsets; a store that cannot tell returns
``None`` and is always written). Then the store already holds this checkpoint: a restart from it resumes
from exactly this state and these positions. ``saved_at`` keeps the time of the last write, which is the
last change.

**Cost.** The digest is one more encoding of the document, so it is computed only when no record was
handled since the last save (the ``quiet`` counts: records and dead letters unchanged): a busy daemon
pays nothing, an idle one encodes and hashes instead of writing and fsyncing. That gate only decides
whether to compute the digest; the decision to skip rests on the digest and the store's mark alone. The
first quiet checkpoint after records is written (its digest is what the next ones compare with).

>>> import os, tempfile
>>> from streamarms.checkpoint import FileCheckpointStore
>>> store = FileCheckpointStore(os.path.join(tempfile.mkdtemp(), "c.json"), fsync=False)
>>> last = LastSave()
>>> def checkpoint(doc, counts):  # what the daemon does
...     held, digest = last.holds(store, doc, counts)
...     if not held:
...         store.save(doc)
...         last.saved(store, counts, digest)
...     return held
>>> [checkpoint({"saved_at": t, "state": 1}, (10, 0)) for t in (1.0, 2.0, 3.0)]
[False, False, True]
>>> checkpoint({"saved_at": 4.0, "state": 2}, (10, 0))  # the same counts, another state: written
False
>>> os.remove(store.path); checkpoint({"saved_at": 5.0, "state": 2}, (10, 0))  # the file went: written again
False
"""

from __future__ import annotations

import hashlib
from typing import Any

from .checkpoint import CheckpointStore
from .json_stream import iter_json

__all__ = ["LastSave", "document_digest"]

#: the document's fields left out of the comparison (the time of the save)
VOLATILE = ("saved_at",)


def document_digest(doc: dict[str, Any]) -> str:
    """SHA-256 of ``doc``'s canonical JSON without :data:`VOLATILE` fields.

    >>> document_digest({"a": 1, "saved_at": 1.0}) == document_digest({"saved_at": 2.0, "a": 1})
    True
    """
    h = hashlib.sha256()
    for piece in iter_json({k: v for k, v in doc.items() if k not in VOLATILE}):
        h.update(piece.encode("utf-8"))
    return h.hexdigest()


class LastSave:
    """What the last checkpoint save made durable (module docstring): the ``quiet`` counts then (records
    and dead letters), the document's digest (when it was computed) and the store's mark after the save."""

    def __init__(self) -> None:
        self._counts: tuple[int, ...] | None = None
        self._digest: str | None = None
        self._mark: Any = None

    def holds(self, store: CheckpointStore, doc: dict[str, Any], counts: tuple[int, ...]) -> tuple[bool, str | None]:
        """Whether ``store`` already holds ``doc`` (then it need not be saved), and ``doc``'s digest when it
        was computed (only when ``counts`` are those of the last save: nothing was handled since)."""
        if self._mark is None or counts != self._counts:  # a store that cannot tell is not digested at all
            return False, None
        digest = document_digest(doc)
        return digest == self._digest and store.saved_mark() == self._mark, digest

    def saved(self, store: CheckpointStore, counts: tuple[int, ...], digest: str | None) -> None:
        """``store`` has just saved the document of ``counts`` (whose digest is ``digest``, if computed)."""
        self._counts, self._digest, self._mark = counts, digest, store.saved_mark()

r"""A partition's key state at one moment, read over several loop turns: :class:`KeyCut` (issue 13: a
publish round never stalls the member's loop for more than ~1 s, even at 1e6 keys in one partition).

A group value (:mod:`streamarms.group_track`, :mod:`streamarms.group_chunks`) carries every key's state of
its partition together with the partition's totals and source position, all of **one moment** (the
*cut*): a new owner resumes every key from the value and reads the partition from its position, so a
state newer than the position would count a sample twice and an older one would lose it. Building and
encoding the key state costs ~8 us of CPU a key (``python benchmarks/group_chunks.py``), ~8 s at 1e6
keys: too long for one loop turn.

**Copy-on-write.** The cut fixes the head (totals, counts, position) at once and the key state lazily:
:meth:`take` reads the next keys in the partition's key order from the live policy, and a key about to
change before it was taken (a reward for it) saves its state first (:meth:`before_update`, O(1): a rank
comparison and a dict lookup). So every key is read at the cut, whether it is taken before or after it
changes, and the value equals the one built in one go at the cut. The policy defers every change to key
state not made by a reward for that key (the classification a threshold advance brings) while a cut is
open: the saves cover exactly the rewards.

Memory: one saved state a key rewarded while its chunk waits (at most the partition's keys, ~1 KB each
while held).

>>> live = {"a": 1, "b": 2, "c": 3}
>>> names = ["a", "b", "c"]
>>> cut = KeyCut("t:0", names, [0, 1, 2], lambda i: live[names[i]])
>>> cut.take(1)
[('a', 1)]
>>> cut.before_update(0, 0); cut.before_update(2, 2)  # a reward for "a" (taken) and for "c" (not yet)
>>> live["a"] = live["c"] = 99
>>> cut.take(5), cut.closed, cut.saved
([('b', 2), ('c', 3)], True, {})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["KeyCut"]


class KeyCut:
    """The key state of ``partition`` at the moment of construction, taken in order (module docstring).

    ``names``: the partition's keys in value order; ``indices``: their arm indices in the policy (the
    same order); ``state_of(index)``: an arm's current state (a fresh object: it is kept as is).
    """

    __slots__ = ("partition", "names", "indices", "state_of", "n", "done", "saved", "closed")

    def __init__(self, partition: str, names: Sequence[str], indices: Sequence[int],
                 state_of: Callable[[int], Any]) -> None:
        if len(names) != len(indices):
            raise ValueError(f"{len(names)} names and {len(indices)} indices for the cut of {partition}")
        self.partition, self.names, self.indices, self.state_of = partition, names, indices, state_of
        self.n = len(names)
        #: keys taken so far (ranks ``< done`` are encoded: their later changes are not the cut's)
        self.done = 0
        #: arm index -> its state at the cut, for arms changed before they were taken
        self.saved: dict[int, Any] = {}
        #: every key taken, or the cut abandoned: nothing more to save
        self.closed = len(names) == 0

    def __len__(self) -> int:
        return self.n

    def before_update(self, index: int, rank: int) -> None:
        """Arm ``index`` (rank ``rank`` in the partition's key order) is about to change: keep its state
        at the cut if it has not been taken yet. The caller checks the arm is of this partition."""
        if rank >= self.done and not self.closed and index not in self.saved:
            self.saved[index] = self.state_of(index)

    def take(self, k: int) -> list[tuple[str, Any]]:
        """The next ``k`` keys (fewer at the end) and their states at the cut (none once closed)."""
        if self.closed:
            return []
        lo = self.done
        hi = min(len(self.names), lo + max(0, int(k)))
        saved, state_of, idx = self.saved, self.state_of, self.indices
        out = [(self.names[r], saved.pop(idx[r]) if idx[r] in saved else state_of(idx[r])) for r in range(lo, hi)]
        self.done = hi
        if hi == len(self.names):
            self.close()
        return out

    def materialize(self) -> dict[str, Any]:
        """Every key not taken yet, as a dict (a value published in one go)."""
        return dict(self.take(len(self.names)))

    def close(self) -> None:
        """Done (or abandoned): later changes are not saved (and the key lists are let go)."""
        self.closed = True
        self.saved.clear()
        self.names, self.indices = (), ()

"""A deterministic order for records read from several partitions.

Kafka guarantees the order of records within a partition, not across partitions: which partition a
consumer's ``poll`` returns first depends on network timing. The scheduler's decisions depend on the
order of records (a reward is used when its key is wanted at the moment it arrives), so a run whose
partitions interleave differently takes different samples. :class:`PartitionMerger` removes that
freedom: it releases records in the order of the key

    ``(running maximum of the record timestamps in its partition, rank of the partition, offset)``

which is a fixed total order of all records, whatever the fetch timing. The running maximum (rather
than the raw timestamp, which a producer may set backwards) keeps each partition's records in offset
order. A record is released only when every partition that can still deliver a smaller key has
delivered past it; a partition whose whole log has been read (``ended``) does not hold the others
back. That last rule is the only timing-dependent one: for a log read as backlog (the usual case
after a restart) the order is exactly reproducible; for records appended to an idle partition while
the daemon is live, they take their place when they arrive.

The merger's state per partition (next offset, running maximum) is part of the daemon's checkpoint,
so a restarted daemon continues the same order.

>>> from collections import namedtuple
>>> R = namedtuple("R", "topic partition offset timestamp key value")
>>> m = PartitionMerger()
>>> m.assign([("t", 0), ("t", 1)], {})
>>> m.add(("t", 0), [R("t", 0, 0, 10, b"a", b""), R("t", 0, 1, 30, b"b", b"")])
>>> m.release(lambda tp: False)   # partition 1 has not delivered anything yet: wait
[]
>>> m.add(("t", 1), [R("t", 1, 0, 20, b"c", b"")])
>>> [r.key for r in m.release(lambda tp: False)]   # 10 < 20; 30 waits for partition 1 to pass it
[b'a', b'c']
>>> [r.key for r in m.release(lambda tp: tp == ("t", 1))]   # partition 1 read to its end
[b'b']
>>> m.state()
{'t:0': [2, 30], 't:1': [1, 20]}
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from streamarms.checkpoint import CheckpointError

__all__ = ["PartitionMerger", "tp_name", "parse_tp", "checked_positions"]

TP = tuple[str, int]


def tp_name(tp: TP) -> str:
    """``("rewards", 3)`` -> ``"rewards:3"`` (the checkpoint's key for a partition)."""
    return f"{tp[0]}:{tp[1]}"


def parse_tp(name: str) -> TP:
    """Inverse of :func:`tp_name`.

    >>> parse_tp("a:b:3")
    ('a:b', 3)
    """
    topic, _, part = name.rpartition(":")
    return topic, int(part)


class _Buffer:
    __slots__ = ("recs", "keys", "runmax", "next_offset", "fetched_max", "last_fetched", "last")

    def __init__(self, next_offset: int | None, runmax: int | None) -> None:
        self.recs: list[Any] = []
        self.keys: list[int] = []
        #: running max timestamp of the records *released* (checkpointed with next_offset)
        self.runmax = runmax
        #: offset after the last released record (None: not known yet)
        self.next_offset = next_offset
        #: running max timestamp / offset of the last record *added* (released or buffered)
        self.fetched_max = runmax
        self.last_fetched = None if next_offset is None else next_offset - 1
        #: the last record *released* (the one at ``next_offset - 1`` when read in this process)
        self.last: Any = None


def _resumed(name: str, st: Any) -> tuple[int, int | None]:
    """A checkpoint's ``[next offset, running max]`` of ``name`` (more may follow: a file's byte position...);
    a :class:`~streamarms.checkpoint.CheckpointError` naming it when it is not that (an edited checkpoint, its
    checksum made again: an ``int()`` of a text stopped the run with ``cannot start``).

    >>> _resumed("a.jsonl:0", [70, None, 1190, "d"]), _resumed("t:1", [5, 1700000000000])
    ((70, None), (5, 1700000000000))
    """
    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if isinstance(st, (str, bytes, dict)) or not hasattr(st, "__getitem__") or len(st) < 2 or not whole(st[0]) \
            or st[0] < 0 or not (st[1] is None or whole(st[1])):
        raise CheckpointError(f"the checkpoint's position in {name} is malformed: {str(st)[:80]} ([next line or "
                              "offset, the latest time read or null] expected)")
    return st[0], st[1]


def checked_positions(resume: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of ``resume`` (a checkpoint's positions by ``"topic:partition"``), each checked as :func:`_resumed`
    does: a Kafka source checks them when it starts, not in a rebalance callback, whose errors kafka-python logs
    and passes over.

    >>> checked_positions({"t:0": [5, None, "fp"]})
    {'t:0': [5, None, 'fp']}
    """
    out = dict(resume or {})
    for name, st in out.items():
        if st:
            _resumed(name, st)
    return out


class PartitionMerger:
    """Merges the records of several partitions into one reproducible order (module docstring).

    ``ordered=False`` releases records as they come (fastest, order then depends on fetch timing).
    ``max_buffer``: a partition holding more unreleased records than this should be paused by the
    source (:meth:`over_limit`).
    """

    def __init__(self, ordered: bool = True, max_buffer: int = 20_000) -> None:
        self.ordered = ordered
        self.max_buffer = max_buffer
        self._bufs: dict[TP, _Buffer] = {}
        self._rank: dict[TP, int] = {}
        self._last: list[Any] = []          # last released batch
        self._last_prev: dict[TP, tuple[int | None, int | None, Any]] = {}  # state before it

    # -- assignment --------------------------------------------------------------------------
    def assign(self, tps: Iterable[TP], resume: dict[str, Sequence[int]]) -> None:
        """Set the assigned partitions; ``resume`` maps ``"topic:partition"`` to ``[next_offset, runmax]``."""
        new: dict[TP, _Buffer] = {}
        for tp in tps:
            tp = (tp[0], int(tp[1]))
            if tp in self._bufs:
                b = self._bufs[tp]
                b.recs.clear()
                b.keys.clear()
                b.fetched_max = b.runmax
                b.last_fetched = None if b.next_offset is None else b.next_offset - 1
                new[tp] = b
            else:
                st = resume.get(tp_name(tp))
                new[tp] = _Buffer(*_resumed(tp_name(tp), st)) if st else _Buffer(None, None)
        self._bufs = new
        self._rerank()
        self._last = []
        self._last_prev = {}

    def extend(self, tps: Iterable[TP]) -> None:
        """Add partitions with no position yet, keeping what the others hold (a followed pattern's new file):
        unlike :meth:`assign`, nothing buffered is dropped."""
        for tp in tps:
            self._bufs.setdefault((tp[0], int(tp[1])), _Buffer(None, None))
        self._rerank()

    def drop(self, tp: TP) -> None:
        """Remove a partition with nothing buffered (a followed file removed: its position is not kept)."""
        b = self._bufs.pop(tp, None)
        assert b is None or not b.recs, f"{tp} still holds records"
        self._rerank()

    def _rerank(self) -> None:
        """Each partition's rank (its place by name): ties of the merged order go by it."""
        self._rank = {tp: i for i, tp in enumerate(sorted(self._bufs))}

    @property
    def partitions(self) -> list[TP]:
        return sorted(self._bufs)

    def next_offset(self, tp: TP) -> int | None:
        """Offset after the last record released for ``tp`` (where to seek after a restart)."""
        b = self._bufs.get(tp)
        return None if b is None else b.next_offset

    def last_released(self, tp: TP) -> Any:
        """The last record released for ``tp`` in this process (``None``: none yet, or reset since)."""
        b = self._bufs.get(tp)
        return None if b is None else b.last

    def set_position(self, tp: TP, offset: int) -> None:
        """The first offset the source will deliver for ``tp`` (when not resumed from a checkpoint)."""
        b = self._bufs[tp]
        if b.next_offset is None:
            b.next_offset = offset
            b.last_fetched = offset - 1

    def reset_position(self, tp: TP, offset: int) -> None:
        """Move ``tp`` to ``offset`` (an out-of-range position replaced by the source's rule): what was
        buffered is dropped and the running maximum restarts (the log it belonged to is gone)."""
        b = self._bufs[tp]
        b.recs.clear()
        b.keys.clear()
        b.next_offset = offset
        b.runmax = b.fetched_max = None
        b.last_fetched = offset - 1
        b.last = None

    def buffered(self, tp: TP) -> int:
        return len(self._bufs[tp].recs)

    def delivered(self, tp: TP) -> bool:
        """A record of ``tp`` has been added (in this process, or before the checkpoint resumed here)."""
        b = self._bufs.get(tp)
        return b is not None and b.fetched_max is not None

    def over_limit(self) -> list[TP]:
        return [tp for tp, b in self._bufs.items() if len(b.recs) > self.max_buffer]

    def under_limit(self) -> list[TP]:
        return [tp for tp, b in self._bufs.items() if len(b.recs) <= self.max_buffer // 2]

    # -- data --------------------------------------------------------------------------------
    def add(self, tp: TP, records: list[Any]) -> None:
        """Append fetched records of ``tp`` (offsets increasing, continuing the previous ones)."""
        b = self._bufs.get(tp)
        if b is None or not records:
            return
        if b.last_fetched is not None and records[0].offset <= b.last_fetched:
            records = [r for r in records if r.offset > b.last_fetched]  # re-delivery after a seek
            if not records:
                return
        m = b.fetched_max if b.fetched_max is not None else -(1 << 62)
        keys = b.keys
        for r in records:
            ts = r.timestamp
            if ts is not None and ts > m:
                m = ts
            keys.append(m)
        b.recs.extend(records)
        b.fetched_max = m
        b.last_fetched = records[-1].offset

    def release(self, ended: Callable[[TP], bool]) -> list[Any]:
        """The records that can be released now, in merged order.

        ``ended(tp)`` says that partition ``tp`` has no record beyond those already added (its log
        is read to the end); every other partition bounds what can be released.
        """
        bufs = self._bufs
        prev = {tp: (b.next_offset, b.runmax, b.last) for tp, b in bufs.items() if b.recs}
        if not prev:
            self._last, self._last_prev = [], {}
            return []
        if not self.ordered or len(bufs) == 1:
            out: list[Any] = []
            for tp in sorted(prev):
                b = bufs[tp]
                out.extend(b.recs)
                self._advance(b, len(b.recs))
            self._last, self._last_prev = out, prev
            return out
        R = len(bufs)
        rank = self._rank
        # the frontier: smallest (key, rank) any non-ended partition may still deliver past
        front: int | None = None
        front_tp: TP | None = None
        for tp, b in bufs.items():
            if not ended(tp):
                if b.fetched_max is None:
                    self._last, self._last_prev = [], {}
                    return []  # a partition that may deliver anything: wait for it
                c = b.fetched_max * R + rank[tp]
                if front is None or c < front:
                    front, front_tp = c, tp
        parts: list[tuple[TP, int]] = []
        for tp in sorted(prev):
            b = bufs[tp]
            if front is None or tp == front_tp:
                n = len(b.recs)
            else:
                r = rank[tp]
                # keys k with k * R + r < front  <=>  k <= (front - r - 1) // R
                n = bisect_right(b.keys, (front - r - 1) // R)
            if n:
                parts.append((tp, n))
        if not parts:
            self._last, self._last_prev = [], {}
            return []
        if len(parts) == 1:
            tp, n = parts[0]
            b = bufs[tp]
            out = b.recs[:n]
            self._advance(b, n)
        else:
            # ``parts`` is in rank order (sorted partitions): a stable sort of the keys alone puts equal
            # keys in rank order, then offset order -- the order of ``(key, rank, offset)``, in C
            items: list[Any] = []
            ck: list[int] = []
            for tp, n in parts:
                b = bufs[tp]
                items.extend(b.recs[:n])
                ck.extend(b.keys[:n])
                self._advance(b, n)
            out = list(map(items.__getitem__, sorted(range(len(items)), key=ck.__getitem__)))
        self._last = out
        self._last_prev = {tp: prev[tp] for tp, _ in parts}
        return out

    @staticmethod
    def _advance(b: _Buffer, n: int) -> None:
        b.runmax = b.keys[n - 1]
        b.last = b.recs[n - 1]
        b.next_offset = b.last.offset + 1
        del b.recs[:n]
        del b.keys[:n]

    def rollback(self, processed: int) -> None:
        """Only the first ``processed`` records of the last released batch were handled: make
        :meth:`state` describe exactly those (the daemon is stopping; the rest are read again on restart).
        """
        last = self._last
        if processed >= len(last):
            return
        for tp, (off, runmax, rec) in self._last_prev.items():
            b = self._bufs.get(tp)
            if b is not None:
                b.next_offset, b.runmax, b.last = off, runmax, rec
        for r in last[:processed]:
            b = self._bufs.get((r.topic, r.partition))
            if b is None:
                continue
            b.next_offset = r.offset + 1
            b.last = r
            ts = r.timestamp
            if ts is not None and (b.runmax is None or ts > b.runmax):
                b.runmax = ts
        # drop what was fetched beyond: the source seeks back before reading again
        for b in self._bufs.values():
            b.recs.clear()
            b.keys.clear()
            b.fetched_max = b.runmax
            b.last_fetched = None if b.next_offset is None else b.next_offset - 1
        self._last = last[:processed]

    def state(self) -> dict[str, list[int | None]]:
        """``{"topic:partition": [next_offset, runmax]}`` for partitions with a known position."""
        return {tp_name(tp): [b.next_offset, b.runmax] for tp, b in sorted(self._bufs.items())
                if b.next_offset is not None}

r"""A partition's stats value over several records of the compacted stats topic (issue 13: one member
holding a million keys).

A member publishes one value per partition (:mod:`streamarms.connectors.group_stats`) and the value
carries every key of the partition in its ``arms`` field (names at the announcement, key state while an
episode runs: ~200 bytes a key). One record per partition would cap a partition at the topic's
largest record (16 MB: ~50-80 thousand keys). Here the value is split:

* the **head**, key ``group/partition``: every field but ``arms`` (the additive totals, episode, key and
  undecided counts, position, member, time) and ``chunks``, the list of its chunks' content hashes
  (BLAKE2b, 96 bits);
* the **chunks**, keys ``group/partition/c<j>`` or ``.../d<j>`` (chunk ``j``'s two *slots*; the head's
  ``slots`` field says which, ``"0110..."``, absent when all are ``c``): ``{"arms": ...}`` with at most
  ``chunk_keys`` of the partition's keys each, in the value's key order (a chunk above the byte cap is
  halved until it fits; a single key above it is :class:`ValueTooLarge`).

A value of at most ``chunk_keys`` keys that fits the cap stays one record, exactly as before (no
``chunks`` field).

**Versions are never mixed.** A chunk's identity is its content hash: a reader
(:class:`ChunkAssembler`) takes a head only once the record at every chunk key it names has the hash the
head names; until then it keeps the partition's previous complete value. The writer sends the changed
chunks before their head (one stats-topic partition, one producer: in order), so a reader that has read
the head has read its chunks -- unless a newer version of one of them followed (another owner's
in-flight value), and then it waits for that newer version's head. Compaction keeps the latest record of
every key at its own offset, so a reader that starts from the compacted topic meets the same order.
The assembled value is the published one plus the head's ``chunks`` field, its ``arms`` a
:class:`LazyArms` (a mapping in the published key order, parsed on first use), so every reader that has
read the same records holds equal values and merges bit-identical totals.

**The previous value stays readable until the next head (slots).** A new value writes a changed chunk
``j`` to the slot the latest head on the topic does *not* name for ``j`` (the latest head: this writer's
last, or the one its reader read last -- ``named`` -- if that is later, e.g. another owner's), so the
previous complete value's chunks are never overwritten before the new head; after the head, the slots
it does not name are tombstoned. A writer killed between a value's chunks and its head (or a spread
value abandoned) therefore leaves the previous value whole on the topic, and a reader starting from the
compacted topic assembles it. (A writer with no view of the topic -- no memory, no reader -- may write
over a slot in use: then, as before slots, such a reader holds no value for that partition until the
next complete one, never a mixed one. Members before slots cannot read a value that uses ``d<j>``
keys: they keep waiting for its chunks, ``streamarms_group_stats_incomplete_values`` > 0.)

**Only what changed is re-sent.** A chunk whose content hash equals the one the latest head names for
it *and* the one its reader saw last in that slot (``on_topic``: the reader's view) is not sent again --
the head names the record already there. Without a reader view every chunk is
sent. The arms of a partition keep their order between values, so chunks of decided keys (whose state no
longer changes) stop costing traffic.

**Spread over loop turns.** :meth:`ChunkWriter.steps` yields a value's records one chunk at a time (the
head last), and reads the key state from a :class:`~streamarms.group_cut.KeyCut` chunk by chunk, so a
member's loop publishes a partition of 1e6 keys over many turns (``GroupTrack.publish_budget`` a turn)
instead of stalling ~8 s; the records are the ones :meth:`ChunkWriter.records` gives at the cut.

**Bounded topic.** After a head, every chunk key this writer sent or its reader saw that the head does
not name is tombstoned (the other slot of a changed chunk, chunks of a partition that shrank);
:meth:`ChunkWriter.retire` tombstones a partition's head and chunks. The topic's live keys are thus one
head plus ``ceil(keys / chunk_keys)`` chunks a partition, twice that while a value is under way.

>>> w, r = ChunkWriter(chunk_keys=2), ChunkAssembler()
>>> value = {"episode": 1, "keys": 3, "arms": {"a": None, "b": None, "c": None}}
>>> recs = w.records("g/t:0", value)
>>> [k for k, _ in recs]
['g/t:0/c0', 'g/t:0/c1', 'g/t:0']
>>> for k, body in recs[:2]:
...     _ = r.feed(k, body)
>>> r.latest  # chunks without their head: nothing yet
{}
>>> _ = r.feed(*recs[2]); r.latest["g/t:0"]["arms"] == value["arms"]
True
>>> [k for k, body in w.records("g/t:0", {"episode": 1, "keys": 1, "arms": {"a": None}}) if body is None]
['g/t:0/c0', 'g/t:0/c1']
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["CHUNK_KEYS", "ChunkAssembler", "ChunkWriter", "LazyArms", "ValueTooLarge", "chunk_key",
           "split_chunk_key"]

#: Keys per chunk: ~2000 x 200 bytes = ~0.4 MB of JSON (~60 kB gzipped), within Kafka's default 1 MB
#: record limit even on a stats topic created elsewhere; small enough that chunks of decided keys go quiet.
CHUNK_KEYS = 2000

#: The value's per-key field, the one that is split.
FIELD = "arms"

_CHUNK = re.compile(r"^(.*)/([cd])(\d+)$")

#: a chunk view: (index, slot) -> content hash; a head's naming: (its time, [(slot, hash)] a chunk)
View = dict[tuple[int, int], str]
Named = tuple[float, list[tuple[int, str]]]


def chunk_key(head: str, j: int, slot: int = 0) -> str:
    """The key of chunk ``j`` (in slot ``slot``: 0 ``c<j>``, 1 ``d<j>``) of the value whose head is ``head``.

    >>> chunk_key("g/rewards:3", 2), chunk_key("g/rewards:3", 2, 1), split_chunk_key("g/rewards:3/d2")
    ('g/rewards:3/c2', 'g/rewards:3/d2', ('g/rewards:3', 2, 1))
    >>> split_chunk_key("g/clicks:3") is None
    True
    """
    return f"{head}/{'cd'[slot]}{j}"


def split_chunk_key(key: str) -> tuple[str, int, int] | None:
    """``(head key, j, slot)`` for a chunk key, ``None`` for a head key (a partition ``topic:N`` never
    ends in ``/c<digits>`` or ``/d<digits>``: Kafka topic names have no ``/``)."""
    m = _CHUNK.match(key)
    return (m.group(1), int(m.group(3)), "cd".index(m.group(2))) if m else None


def _slots(v: dict[str, Any]) -> list[int] | None:
    """A chunked head's slot of each chunk (no ``slots`` field: all in slot 0, the layout before slots);
    ``None`` for a malformed one (never assembled)."""
    n, slots = len(v["chunks"]), v.get("slots")
    if slots is None:
        return [0] * n
    if not isinstance(slots, str) or len(slots) != n or slots.strip("01"):
        return None
    return [int(c) for c in slots]


def _time(v: dict[str, Any]) -> float:
    t = v.get("time")
    return float(t) if isinstance(t, (int, float)) else -math.inf


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


def _slicer(items: list[tuple[str, Any]]) -> Callable[[int], list[tuple[str, Any]]]:
    """``take(k)`` over a list: the next ``k`` items each call."""
    pos = [0]

    def take(k: int) -> list[tuple[str, Any]]:
        lo = pos[0]
        pos[0] = lo + k
        return items[lo:lo + k]
    return take


def _hash(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=12).hexdigest()


class ValueTooLarge(ValueError):
    """A record of a stats value would exceed the cap even after chunking (the head, or one key's state)."""


class ChunkWriter:
    """The records (key, body or ``None`` for a tombstone) that publish a partition's value (module
    docstring): changed chunks, then the head, then tombstones of chunk keys beyond the new count.

    ``chunk_keys``: keys a chunk holds at most; ``max_bytes``: the largest record body (``None``: no cap).
    """

    def __init__(self, chunk_keys: int = CHUNK_KEYS, max_bytes: int | None = None) -> None:
        if chunk_keys < 1:
            raise ValueError(f"chunk_keys must be >= 1, got {chunk_keys!r}")
        self.chunk_keys, self.max_bytes = int(chunk_keys), max_bytes
        #: head key -> the head this writer last sent: its time and (slot, hash) a chunk (``[]``: one record)
        self.sent: dict[str, Named] = {}
        #: chunks not sent again because the topic holds them already
        self.skipped = 0

    def records(self, head: str, value: dict[str, Any], on_topic: Callable[[str], View] | None = None,
                named: Callable[[str], Named | None] | None = None) -> list[tuple[str, bytes | None]]:
        """The records for ``value`` under ``head``; ``on_topic(head)``: the chunk hashes the reader saw
        last on the topic per (index, slot) (enables skipping unchanged chunks and tombstoning others'
        chunks); ``named(head)``: the latest head the reader read (its chunks are kept until the new head)."""
        return [r for part in self.steps(head, value, on_topic, named) for r in part]

    def steps(self, head: str, value: dict[str, Any], on_topic: Callable[[str], View] | None = None,
              named: Callable[[str], Named | None] | None = None) -> Iterator[list[tuple[str, bytes | None]]]:
        """:meth:`records` one chunk at a time (each item: the records of one chunk of ``chunk_keys`` keys,
        the head and tombstones last), so a caller can spread a large value over several loop turns. The
        value's ``arms`` may be a :class:`~streamarms.group_cut.KeyCut` (a copy-on-write cut, read chunk by
        chunk); the writer's memory changes only once the head is produced (a value abandoned half-way
        leaves chunks the reader's view shows, sent again next time)."""
        arms = value.get(FIELD)
        if isinstance(arms, LazyArms):  # a value read from the board, published again
            value = {**value, FIELD: dict(arms)}
            arms = value[FIELD]
        prot = self._protected(head, named)
        take: Callable[[int], list[tuple[str, Any]]] | None = getattr(arms, "take", None)
        if take is None and not isinstance(arms, dict):
            arms = None
        if arms is None or len(arms) <= self.chunk_keys:
            if take is not None:
                value = {**value, FIELD: dict(take(len(arms)))}  # type: ignore[arg-type]
                arms = value[FIELD]
            body = _dumps(value)
            if self.max_bytes is None or len(body) <= self.max_bytes or arms is None or len(arms) < 2:
                self._check(head, body, value)
                yield [(head, body), *self._stale(head, [], prot, self._seen(head, on_topic))]
                self.sent[head] = (_time(value), [])
                return
            take = None
        if take is None:
            take = _slicer(list(arms.items()))
        n = len(arms)
        names: list[tuple[int, str]] = []
        for _ in range(0, n, self.chunk_keys):
            seen = self._seen(head, on_topic)
            out: list[tuple[str, bytes | None]] = []
            for b in self._pack(head, take(self.chunk_keys)):
                j, h = len(names), _hash(b)
                keep = prot[j][0] if j < len(prot) else 1  # the slot the latest head names: left as it is
                if j < len(prot) and prot[j][1] == h and seen.get((j, keep)) == h:  # unchanged and on the topic
                    names.append((keep, h))
                    self.skipped += 1
                    continue
                names.append((1 - keep, h))
                out.append((chunk_key(head, j, 1 - keep), b))
            yield out
        rest = {k: v for k, v in value.items() if k != FIELD}
        slots = "".join(str(sl) for sl, _ in names)
        body = _dumps({**rest, "chunks": [h for _, h in names], **({"slots": slots} if "1" in slots else {})})
        self._check(head, body, rest)
        yield [(head, body), *self._stale(head, names, prot, self._seen(head, on_topic))]
        self.sent[head] = (_time(value), names)

    def _protected(self, head: str, named: Callable[[str], Named | None] | None) -> list[tuple[int, str]]:
        """The chunks (slot, hash) of the latest head on the topic -- this writer's last, or the reader's
        latest if later (another owner's): a new value never overwrites them before its own head."""
        mine, last = self.sent.get(head), named(head) if named is not None else None
        if last is not None and (mine is None or last[0] > mine[0]):
            return last[1]
        return mine[1] if mine is not None else []

    @staticmethod
    def _seen(head: str, on_topic: Callable[[str], View] | None) -> View:
        return on_topic(head) if on_topic is not None else {}

    def retire(self, head: str, on_topic: Callable[[str], View] | None = None,
               named: Callable[[str], Named | None] | None = None) -> list[tuple[str, None]]:
        """Tombstones for a partition's head and every chunk key this writer sent or its reader saw."""
        prot = self._protected(head, named)
        self.sent.pop(head, None)
        return [(head, None), *self._stale(head, [], prot, self._seen(head, on_topic))]

    def _stale(self, head: str, names: list[tuple[int, str]], prot: list[tuple[int, str]],
               seen: View) -> list[tuple[str, None]]:
        """Tombstones of every chunk key this writer sent or its reader saw that the new head does not name."""
        mine = self.sent.get(head, (0.0, []))[1]
        known = set(seen) | {(j, sl) for j, (sl, _) in enumerate(mine)} | {(j, sl) for j, (sl, _) in enumerate(prot)}
        known -= {(j, sl) for j, (sl, _) in enumerate(names)}
        return [(chunk_key(head, j, sl), None) for j, sl in sorted(known)]

    def _pack(self, head: str, items: list[tuple[str, Any]]) -> list[bytes]:
        body = _dumps({FIELD: dict(items)})
        if self.max_bytes is None or len(body) <= self.max_bytes:
            return [body]
        if len(items) == 1:
            raise ValueTooLarge(f"key {items[0][0]!r} of {head} has a state of {len(body):,} bytes and a stats "
                                f"record may take {self.max_bytes:,}")
        half = len(items) // 2
        return self._pack(head, items[:half]) + self._pack(head, items[half:])

    def _check(self, head: str, body: bytes, value: dict[str, Any]) -> None:
        if self.max_bytes is not None and len(body) > self.max_bytes:
            raise ValueTooLarge(f"the group stats value of {head} is {len(body):,} bytes ({value.get('keys', '?')} "
                                f"keys) without its per-key part, and a stats record may take {self.max_bytes:,}")


class LazyArms(Mapping[str, Any]):
    """A chunked value's per-key part, parsed from its chunks' bodies on first use: a member reads every
    partition's value but needs the key state of a partition only when it takes the partition over, so
    a reader holds the chunks' JSON bytes (~200 bytes a key) instead of parsed objects (several times
    that) and spends no CPU parsing what it never uses.

    >>> arms = LazyArms([b'{"arms":{"b":1}}', b'{"arms":{"a":2}}'])
    >>> list(arms), arms["a"], arms == {"b": 1, "a": 2}, len(arms)
    (['b', 'a'], 2, True, 2)
    """

    def __init__(self, bodies: list[bytes]) -> None:
        self._bodies = bodies
        self._parsed: dict[str, Any] | None = None

    def _dict(self) -> dict[str, Any]:
        if self._parsed is None:
            d: dict[str, Any] = {}
            for b in self._bodies:
                part = json.loads(b).get(FIELD)
                d.update(part if isinstance(part, dict) else {})
            self._parsed, self._bodies = d, []
        return self._parsed

    def __getitem__(self, key: str) -> Any:
        return self._dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def __eq__(self, other: object) -> bool:
        return self._dict() == (other._dict() if isinstance(other, LazyArms) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyArms({self._dict()!r})"


class ChunkAssembler:
    """Reads the stats records in topic order and keeps every partition's latest *complete* value in
    :attr:`latest` (head key -> value; module docstring). ``feed(key, body)`` -- ``body`` ``None`` for a
    tombstone -- returns whether :attr:`latest` changed.

    >>> w, r = ChunkWriter(chunk_keys=1), ChunkAssembler()
    >>> v1 = {"episode": 1, "arms": {"a": 1, "b": 1}}
    >>> v2 = {"episode": 2, "arms": {"a": 2, "b": 2}}
    >>> for k, b in w.records("g/t:0", v1):
    ...     _ = r.feed(k, b)
    >>> new = w.records("g/t:0", v2)
    >>> [(k, b is None) for k, b in new]  # v2's chunks in the other slot, its head, then v1's chunks tombstoned
    [('g/t:0/d0', False), ('g/t:0/d1', False), ('g/t:0', False), ('g/t:0/c0', True), ('g/t:0/c1', True)]
    >>> _ = r.feed(*new[0]); _ = r.feed(*new[2])  # v2's first chunk and head, its second chunk not yet
    >>> r.latest["g/t:0"]["episode"]  # the head names a chunk that has not arrived: the previous value stays
    1
    >>> r.feed(*new[1]), r.latest["g/t:0"] == {**v2, "chunks": r.latest["g/t:0"]["chunks"], "slots": "11"}
    (True, True)
    """

    def __init__(self) -> None:
        self.latest: dict[str, dict[str, Any]] = {}
        self._heads: dict[str, dict[str, Any]] = {}  # a head whose chunks have not all arrived
        self._chunks: dict[str, dict[tuple[int, int], tuple[str, bytes]]] = {}  # head -> (j, slot) -> (hash, body)
        self._named: dict[str, Named] = {}  # head -> the latest head read: its time, (slot, hash) a chunk

    def feed(self, key: str, body: bytes | None) -> bool:
        ck = split_chunk_key(key)
        if ck is None:
            if body is None:  # the partition was retired
                self._heads.pop(key, None)
                self._chunks.pop(key, None)
                self._named.pop(key, None)
                return self.latest.pop(key, None) is not None
            v = json.loads(body)
            if not isinstance(v, dict) or not isinstance(v.get("chunks"), list):
                self._heads.pop(key, None)
                self._named[key] = (_time(v) if isinstance(v, dict) else -math.inf, [])
                self.latest[key] = v
                return True
            slots = _slots(v)
            self._named[key] = (_time(v), list(zip(slots or [], v["chunks"])))
            self._heads[key] = v
            return self._assemble(key)
        head, j, slot = ck
        have = self._chunks.setdefault(head, {})
        if body is None:
            have.pop((j, slot), None)
            return False
        have[j, slot] = (_hash(body), body)  # parsed only when the value's arms are used (LazyArms)
        return self._assemble(head)

    def _assemble(self, head: str) -> bool:
        v = self._heads.get(head)
        if v is None:
            return False
        have = self._chunks.get(head, {})
        hashes, slots = v["chunks"], _slots(v)
        if slots is None or any((c := have.get((j, sl))) is None or c[0] != h
                                for j, (sl, h) in enumerate(zip(slots, hashes))):
            return False
        self.latest[head] = {**v, FIELD: LazyArms([have[j, sl][1] for j, sl in enumerate(slots)])}
        del self._heads[head]
        return True

    def chunks_on(self, head: str) -> View:
        """The content hash of every chunk key of ``head`` on the topic as read so far ((index, slot) -> hash)."""
        return {js: c[0] for js, c in self._chunks.get(head, {}).items()}

    def named(self, head: str) -> Named | None:
        """The latest head of ``head`` read (complete or not): its time and the (slot, hash) of each chunk."""
        return self._named.get(head)

    def pending(self) -> list[str]:
        """The head keys whose latest head waits for chunks (their previous complete value is in use)."""
        return sorted(self._heads)

"""The group's stats topic (issue 13): members publish per-partition threshold totals, every member
reads them all -- the GlobalKTable pattern on a compacted topic.

* :class:`KafkaStatsPublisher` -- ``publish(partition, value)``: the latest additive totals of the arms
  of one partition (:class:`streamarms.group_threshold.PartitionTotals`), keyed ``group/partition``
  (:func:`~streamarms.group_threshold.stats_key`), with the member id and a wall-clock ``time``. The
  key is the partition, not the member: when a partition moves, its new owner's value replaces the old
  owner's, so nothing is counted twice. A value's per-key part (``arms``) goes in chunks of at most
  ``chunk_keys`` keys (keys ``group/partition/c<j>`` or ``.../d<j>``) named by the head's content hashes; unchanged
  chunks are not sent again, stale ones are tombstoned (:mod:`streamarms.group_chunks`).
* :class:`KafkaStatsReader` -- reads the whole topic from the beginning (no consumer group: every
  member sees every partition) and keeps the latest *complete* value per key of its group (a head
  whose chunks have not all arrived leaves the previous value in use); ``poll()`` catches up,
  ``merged()`` is the group's totals (values merged in key order: every reader that has read the same
  values gets bit-identical totals), ``staleness()`` the age of the oldest value (a metric), and
  ``value_of(partition)`` lets a member that restarts or takes a partition over resume its totals.

The topic is created compacted (``cleanup.policy=compact``): its size is bounded by the number of
partitions of all groups and their keys (one head and ``ceil(keys / chunk_keys)`` chunks a partition),
not by time. The consistency rule for resuming is the caller's: take a
partition's totals from the topic only together with key state of the same moment (the value carries
the partition's source ``offset`` for that check); a member restoring its checkpoint republishes the
checkpoint's totals instead.

Tested against the real broker in ``tests/kafka/test_group_stats_kafka.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streamarms.group_chunks import CHUNK_KEYS, ChunkAssembler, ChunkWriter, Named, ValueTooLarge, View
from streamarms.group_threshold import merge_totals, staleness, stats_key

from .kafka import ensure_topics
from .kafka_sinks import SinkError

__all__ = ["KafkaStatsPublisher", "KafkaStatsReader", "MAX_VALUE_BYTES", "CHUNK_KEYS"]

#: The largest stats record (JSON, before gzip) a member sends; the topic is created to accept it. A
#: value's key state (~200 bytes a key before gzip, ~30 after) is split over chunks of ``chunk_keys``
#: keys (~0.4 MB at the default), so this caps one record -- the head (totals and counts)
#: or a single key's state -- not the keys of a partition.
MAX_VALUE_BYTES = 16 * 1024 * 1024


class KafkaStatsPublisher:
    """Publishes a member's per-partition totals to the compacted stats ``topic`` (module docstring)."""

    def __init__(self, config: dict[str, Any], topic: str, group: str, member: str, *, create: bool = True,
                 wall: Any = time.time, max_value_bytes: int = MAX_VALUE_BYTES, chunk_keys: int = CHUNK_KEYS,
                 on_topic: Callable[[str], View] | None = None, named: Callable[[str], Named | None] | None = None,
                 ) -> None:
        """``chunk_keys``: keys a chunk holds at most; ``on_topic``: the chunk hashes this member's reader
        saw on the topic (:meth:`KafkaStatsReader.chunks_on`): unchanged chunks are then not sent again,
        and another owner's stale chunks are tombstoned too; ``named``: the latest head the reader read
        (:meth:`KafkaStatsReader.named`): a new value leaves that head's chunks alone, even another
        owner's (``streamarms.group_chunks``: slots)."""
        if create:
            ensure_topics(config, {topic: 1}, {topic: {"cleanup.policy": "compact",
                                                       "max.message.bytes": str(max_value_bytes)}})
        self.topic, self.group, self.member, self.wall = topic, group, member, wall
        self.max_value_bytes = max_value_bytes
        self.producer = KafkaProducer(acks="all", linger_ms=5, compression_type="gzip",
                                      max_request_size=max_value_bytes + 4096, **config)
        self.writer = ChunkWriter(chunk_keys, max_value_bytes)
        self.on_topic, self.named = on_topic, named
        self.sent_bytes = 0
        self.sent = 0  # records, tombstones included
        self.failed: list[str] = []  # sends the broker refused (their callbacks): raised at the next call

    def publish(self, partition: str, value: dict[str, Any]) -> None:
        """Queue ``value`` (``PartitionTotals.value()`` plus anything the caller adds) for ``partition``:
        its changed chunks, its head, tombstones for chunks it no longer has.

        :class:`SinkError` for a record above ``max_value_bytes`` (the head, or one key's state) or once
        an earlier send was refused: a member whose values do not arrive would stall the whole group."""
        for _ in self.publish_steps(partition, value):
            pass

    def publish_steps(self, partition: str, value: dict[str, Any]) -> Iterator[None]:
        """:meth:`publish` one chunk a step (``ChunkWriter.steps``): a caller with a time budget a loop turn
        spreads a large value over several turns (``streamarms.group_track.SteppedPublish``)."""
        self._raise_failed()
        full = {**value, "member": self.member, "partition": partition, "time": self.wall()}
        head = stats_key(self.group, partition)
        try:
            for j, recs in enumerate(self.writer.steps(head, full, self.on_topic, self.named)):
                if j:
                    yield None  # between chunks: the step that sends the head is the last one
                self._send(partition, recs)
        except ValueTooLarge as e:
            raise SinkError(f"partition {partition}: {e}; the keys' state is sent in chunks of "
                            f"{self.writer.chunk_keys:,} keys (halved when too large), the rest of a value "
                            f"must fit one record") from e

    def retire(self, partition: str) -> None:
        """Tombstone ``partition``'s value (head and chunks): it is no longer part of the group."""
        self._raise_failed()
        self._send(partition, self.writer.retire(stats_key(self.group, partition), self.on_topic, self.named))

    def _send(self, partition: str, recs: Sequence[tuple[str, bytes | None]]) -> None:
        for key, body in recs:
            fut = self.producer.send(self.topic, key=key.encode("utf-8"), value=body)
            fut.add_errback(lambda e: self.failed.append(f"partition {partition}: {e}"))
            self.sent_bytes += len(body or b"")
            self.sent += 1

    def flush(self, timeout: float = 30.0) -> None:
        self.producer.flush(timeout=timeout)
        self._raise_failed()

    def _raise_failed(self) -> None:
        if self.failed:
            raise SinkError(f"the group stats topic {self.topic} refused {len(self.failed)} value(s), first: "
                            f"{self.failed[0]}")

    def close(self) -> None:
        self.producer.close(timeout=10)


class KafkaStatsReader:
    """The latest value of every partition of ``group`` on the stats ``topic`` (module docstring)."""

    def __init__(self, config: dict[str, Any], topic: str, group: str, *, wall: Any = time.time) -> None:
        self.topic, self.group, self.wall = topic, group, wall
        self.prefix = stats_key(group, "")
        self.consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, auto_offset_reset="earliest",
                                      **config)
        parts = self.consumer.partitions_for_topic(topic) or {0}
        self.tps = [TopicPartition(topic, p) for p in sorted(parts)]
        self.consumer.assign(self.tps)
        self.consumer.seek_to_beginning(*self.tps)
        self.board = ChunkAssembler()
        #: the latest complete value of every partition of the group (stats key -> value)
        self.latest: dict[str, dict[str, Any]] = self.board.latest

    def poll(self, timeout: float = 0.0) -> int:
        """Read what has arrived (waiting up to ``timeout`` s for the first batch); returns how many values."""
        got = 0
        for recs in self.consumer.poll(timeout_ms=int(timeout * 1000)).values():
            for r in recs:
                key = r.key.decode("utf-8") if r.key else ""
                if not key.startswith(self.prefix):
                    continue  # another group's
                self.board.feed(key, r.value)  # a tombstone (None): a retired partition or a stale chunk
                got += 1
        return got

    def catch_up(self, timeout: float = 10.0) -> None:
        """Poll until the reader's positions reach the topic's end offsets as of now."""
        end = self.consumer.end_offsets(self.tps)
        deadline = time.monotonic() + timeout
        while any(self.consumer.position(tp) < end[tp] for tp in self.tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"stats topic {self.topic}: not caught up within {timeout} s")
            self.poll(0.2)

    def lag(self) -> int:
        """Records on the stats topic this reader has not read yet."""
        end = self.consumer.end_offsets(self.tps)
        return sum(max(0, end[tp] - self.consumer.position(tp)) for tp in self.tps)

    def merged(self) -> dict[str, Any]:
        return merge_totals(self.latest[k] for k in sorted(self.latest))

    def staleness(self) -> float:
        return staleness(self.latest.values(), self.wall())

    def chunks_on(self, key: str) -> View:
        """The chunks of the value keyed ``key`` on the topic as read so far ((index, slot) -> content hash)."""
        return self.board.chunks_on(key)

    def named(self, key: str) -> Named | None:
        """The latest head keyed ``key`` read so far: its time and the (slot, hash) of each of its chunks."""
        return self.board.named(key)

    def value_of(self, partition: str) -> dict[str, Any] | None:
        return self.latest.get(stats_key(self.group, partition))

    def close(self) -> None:
        self.consumer.close(autocommit=False)

"""Kafka checkpoints (kafka-python): :class:`KafkaCheckpointStore` keeps the checkpoint as the latest value of a key in a
compacted topic; :class:`KafkaTransaction` makes a checkpoint interval's records, its checkpoint and the consumed
offsets one Kafka transaction (exactly-once). Integration tests against a real broker: ``tests/kafka/``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import kafka.errors as kafka_errors
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from streamarms.checkpoint import CheckpointError, CheckpointStore, decode, encode
from streamarms.errors import SinkUnavailable

from .kafka import ensure_topics
from .kafka_sinks import NON_IDEMPOTENT, KafkaProducerPool, SinkError

if TYPE_CHECKING:
    from .kafka import KafkaRewardSource

__all__ = ["KafkaCheckpointStore", "KafkaTransaction"]


class KafkaCheckpointStore(CheckpointStore):
    """The checkpoint as the latest value of ``key`` in a compacted single-partition ``topic``.

    ``save`` returns once the broker acknowledged the record with ``acks=all`` (durable on the
    in-sync replicas). ``load`` reads the topic from the beginning to its end and keeps the last value
    of ``key``. :meth:`saved_mark` says where the last save's record is while the topic still holds it,
    so an idle daemon does not write the same checkpoint again (:mod:`streamarms.last_save`).
    """

    #: seconds the probe of :meth:`saved_mark` waits for the broker (then the checkpoint is written)
    probe_timeout = 5.0
    #: seconds :meth:`load` waits for the next record before the broker's end offset before it gives up: a broker
    #: whose end offset is past its records (its data lost and rebuilt), or a transaction left open by a run killed
    #: during --exactly-once (its records unreadable until the broker aborts it), kept the start waiting forever
    load_stall = 60.0

    def __init__(self, config: dict[str, Any], topic: str, key: str, *, create: bool = True,
                 max_bytes: int = 16 * 1024 * 1024, secret: bytes | None = None,
                 pool: KafkaProducerPool | None = None) -> None:
        self.config = config
        self.secret = secret or None
        self.topic = topic
        self.key = key.encode("utf-8")
        self.max_bytes = max_bytes
        if create:
            ensure_topics(config, {topic: 1}, {topic: {"cleanup.policy": "compact"}})
        #: a transactional pool (exactly-once): ``save`` joins its open transaction, durable at its commit
        self.pool = pool if pool is not None and pool.transactional else None
        self.producer = None if self.pool is not None else KafkaProducer(
            acks="all", compression_type="gzip", max_request_size=max_bytes, linger_ms=0, **NON_IDEMPOTENT, **config)
        self._written: TopicPartition | None = None  # where the last save's record went, and its offset
        self._offset = -1
        self._probe: KafkaConsumer | None = None

    def describe(self) -> str:
        return f"kafka topic {self.topic} (key {self.key.decode()})"

    def save(self, state: dict[str, Any]) -> None:
        data = encode(state, self.secret)
        if len(data) > self.max_bytes:
            raise SinkError(f"checkpoint of {len(data)} bytes exceeds {self.max_bytes}; use a file checkpoint")
        if self.pool is not None:
            self.pool.send(self.topic, self.key, data)
            return
        assert self.producer is not None  # built in __init__ whenever no transactional pool is given
        self._written = None
        try:
            md = self.producer.send(self.topic, key=self.key, value=data).get(timeout=15)
        except kafka_errors.KafkaTimeoutError:
            raise SinkUnavailable(f"the checkpoint was not acknowledged by {self.topic} within 15 s (broker "
                                  "unreachable?)") from None
        self._written, self._offset = TopicPartition(md.topic, md.partition), md.offset

    def saved_mark(self) -> tuple[Any, ...] | None:
        """``(partition, offset)`` of the last save's record while the topic still holds it (its first offset
        at or before the record, its end after it: retention has not removed it, the topic was not emptied);
        anything else otherwise; ``None`` when it cannot tell (no save yet, a transaction's save, the broker
        not answering within :attr:`probe_timeout`). Compaction keeps the last record of a key, so only
        another writer of this key could replace it unseen: one key belongs to one daemon (``group_id``)."""
        tp = self._written
        if tp is None:
            return None
        try:
            if self._probe is None:
                self._probe = KafkaConsumer(enable_auto_commit=False, group_id=None, **self.config)
            wait = int(self.probe_timeout * 1000)
            first = self._probe.beginning_offsets([tp], timeout_ms=wait)[tp]
            end = self._probe.end_offsets([tp], timeout_ms=wait)[tp]
        except KafkaError:
            return None
        if first is None or end is None:
            return None
        return (tp.partition, self._offset) if first <= self._offset < end else ("gone", first, end)

    def load(self) -> dict[str, Any] | None:
        # read_committed: a checkpoint of an unfinished (or aborted) exactly-once transaction is not one
        consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, fetch_max_bytes=self.max_bytes,
                                 isolation_level="read_committed",
                                 max_partition_fetch_bytes=self.max_bytes, **self.config)
        try:
            parts = consumer.partitions_for_topic(self.topic) or {0}
            tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            end = consumer.end_offsets(tps)
            last: bytes | None = None
            found = False
            at, moved = [consumer.position(tp) for tp in tps], time.monotonic()
            while any(p < end[tp] for p, tp in zip(at, tps)):
                for recs in consumer.poll(timeout_ms=1000).values():
                    for r in recs:
                        if r.key == self.key:
                            last, found = r.value, True
                if (now := [consumer.position(tp) for tp in tps]) != at:
                    at, moved = now, time.monotonic()
                elif time.monotonic() - moved > self.load_stall:
                    raise CheckpointError(
                        f"the checkpoint in {self.describe()} cannot be read to its end: the broker says it ends at "
                        f"offset {', '.join(str(end[tp]) for tp in tps)}, and no record came after offset "
                        f"{', '.join(map(str, at))} for {self.load_stall:g} s -- a transaction left open by a run "
                        "killed during --exactly-once (readable once the broker aborts it: transaction.timeout.ms), "
                        "or a broker whose data was lost. Start again later, or use another --checkpoint to start "
                        "afresh")
            if not found or last is None:
                return None
            return decode(last, self.describe(), self.secret)
        finally:
            consumer.close(autocommit=False)

    def close(self) -> None:
        if self.producer is not None:
            self.producer.close(timeout=10)
        if self._probe is not None:
            self._probe.close(autocommit=False)
            self._probe = None


class KafkaTransaction:
    """Exactly-once checkpoints: the alerts, requests and dead letters of a checkpoint interval, the
    checkpoint record and the consumed offsets are one Kafka transaction (the consume-transform-produce
    pattern of Kafka Streams' ``exactly_once_v2``).

    ``pool`` is a transactional :class:`KafkaProducerPool` (``transactional_id`` derived from the group,
    stable across restarts: the restarted member's ``init_transactions`` fences its zombie and ends the
    unfinished transaction); the checkpoint store writes through the same pool. :meth:`commit` is the
    daemon's checkpoint: the consumed offsets of ``source`` join the transaction, which commits. A
    read_committed reader of the alert topic then sees each alert of a committed checkpoint once, and
    none of a run killed before its commit -- the restart re-emits those from the checkpoint.

    >>> KafkaTransaction.transactional_id("fraud-detector")
    'streamarms-fraud-detector'
    """

    def __init__(self, pool: KafkaProducerPool, source: KafkaRewardSource) -> None:
        if not pool.transactional:
            raise ValueError("KafkaTransaction needs a KafkaProducerPool with a transactional_id")
        self.pool = pool
        self.source = source
        self.commits = 0

    @staticmethod
    def transactional_id(group_id: str) -> str:
        """The transactional id of a daemon of ``group_id`` (the same after a restart)."""
        return f"streamarms-{group_id}"

    def commit(self, source_state: dict[str, Any]) -> None:
        consumer = self.source.consumer
        self.pool.commit_transaction(self.source.offsets(source_state), consumer.group_metadata())
        self.commits += 1

    def abort(self) -> None:
        self.pool.abort_transaction()

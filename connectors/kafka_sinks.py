"""Kafka sinks (kafka-python): one :class:`KafkaProducerPool` per daemon, and the alert, request and dead-letter
sinks that send through it.

* :class:`KafkaAlertSink`, :class:`KafkaRequestSink` -- JSON values keyed by arm.
* :class:`KafkaDeadLetterSink` -- the refused record's key and value unchanged, with headers
  ``reason`` (one of ``streamarms.runtime.INVALID_REASONS``), ``detail``, ``source`` (topic:partition:offset).

A failed send raises :class:`SinkError` at the next ``flush`` -- that is, before the checkpoint that would otherwise
skip it -- so an alert is never silently lost. Integration tests against a real broker: ``tests/kafka/``.

>>> issubclass(SinkError, RuntimeError), KafkaDeadLetterSink.BROKER_DEFAULT
(True, 1048588)
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

import kafka.errors as kafka_errors
from kafka import KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from streamarms.errors import SinkUnavailable
from streamarms.runtime.records import record_key

__all__ = ["KafkaProducerPool", "KafkaAlertSink", "KafkaRequestSink", "KafkaDeadLetterSink", "SinkError",
           "NON_IDEMPOTENT"]

log = logging.getLogger("streamarms.kafka")


class SinkError(RuntimeError):
    """A record could not be delivered to a sink topic."""


# ----------------------------------------------------------------------------------------------
# sinks
# ----------------------------------------------------------------------------------------------
#: producer settings of the non-transactional sinks and the checkpoint store: no idempotence. Their
#: delivery is at-least-once anyway (a crash re-sends; alerts carry a stable ``alert_id``), and an
#: idempotent kafka-python (3.0.x) producer never recovers from a broker that lost its producer id (a
#: restarted broker without that state): it takes UNKNOWN_PRODUCER_ID for retention (KAFKA-5793), resets
#: the sequence and retries forever (``test_broker_process_restart_mid_run_is_ridden_out``). Order is
#: not at stake: alerts of different episodes are never in flight together (a checkpoint, which
#: flushes, follows every episode end), and a checkpoint is saved only once the previous one is acked.
NON_IDEMPOTENT = {"enable_idempotence": False}


class KafkaProducerPool:
    """One :class:`KafkaProducer` shared by the sinks of a daemon; tracks failed sends."""

    def __init__(self, config: dict[str, Any], producer_options: dict[str, Any] | None = None,
                 topics: Sequence[str] = (), *, transactional_id: str | None = None) -> None:
        opts: dict[str, Any] = {"acks": "all", "linger_ms": 5, "reconnect_backoff_max_ms": 5_000,
                                # a send survives a broker outage of up to 10 minutes (then SinkError at the
                                # next checkpoint: exit 1, and the restart re-sends from the checkpoint)
                                "delivery_timeout_ms": 600_000}
        if transactional_id:
            # a transaction stays open one checkpoint interval; the broker's coordinator aborts it after
            # this long without a commit (Kafka's default, 60 s); delivery_timeout_ms must not exceed it
            opts.update(transactional_id=transactional_id, transaction_timeout_ms=60_000, delivery_timeout_ms=60_000)
        else:
            opts.update(NON_IDEMPOTENT)
        opts.update(config)
        opts.update(producer_options or {})
        self.producer = KafkaProducer(**opts)
        #: every send belongs to a transaction that :meth:`commit_transaction` ends (``transactional_id``)
        self.transactional = bool(transactional_id)
        self._in_txn = False
        if self.transactional:
            # fences a previous producer with this id (a zombie of a killed run) and ends its open transaction
            self.producer.init_transactions()
        # Track every sink topic in the producer's metadata from the start. kafka-python only adds a
        # topic to its tracked set when its partitions are unknown at the first send; a broker that
        # answers the bootstrap metadata request with all topics (Tansu does) makes them "known", and
        # the next metadata refresh for a new topic then drops them: sends to them would wait forever.
        md = getattr(self.producer, "_metadata", None)
        if md is not None and hasattr(md, "add_topic"):
            for t in topics:
                if t:
                    md.add_topic(t)
        self._lock = threading.Lock()
        self._errors: list[str] = []
        self._closed = False
        self.sent = 0

    def send(self, topic: str, key: bytes | None, value: bytes | None,
             headers: list[tuple[str, bytes]] | None = None) -> None:
        if self.transactional and not self._in_txn:
            self.producer.begin_transaction()
            self._in_txn = True
        fut = self.producer.send(topic, key=key, value=value, headers=headers)
        fut.add_errback(self._failed, topic)
        self.sent += 1

    def _failed(self, exc: BaseException, topic: str) -> None:
        with self._lock:
            self._errors.append(f"{topic}: {exc!r}")

    def flush(self, timeout: float | None = 5.0) -> None:
        """Wait for every pending send; :class:`SinkUnavailable` if the broker has not acknowledged them
        within ``timeout`` s (an outage: they stay pending, up to ``delivery_timeout_ms``), :class:`SinkError`
        for sends that failed. The timeout is short on purpose: the daemon's loop, which also keeps the
        consumer in its group, waits here (a wait longer than the session timeout loses the group)."""
        try:
            self.producer.flush(timeout=timeout)
        except kafka_errors.KafkaTimeoutError:
            raise SinkUnavailable(f"the broker has not acknowledged the pending records within {timeout:g} s "
                                  "(unreachable?); they stay pending") from None
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise SinkError(f"{len(errors)} record(s) could not be delivered, first: {errors[0]}")

    def commit_transaction(self, offsets: dict[TopicPartition, OffsetAndMetadata], group_metadata: Any) -> None:
        """End the open transaction: everything sent since the last one, plus the consumed ``offsets``
        of the group, become visible to read_committed readers at once, or none of it (exactly-once).

        A failed send aborts the transaction and raises :class:`SinkError` (the daemon exits; the
        restart resumes from the last committed checkpoint, whose alerts are all published)."""
        try:
            self.flush()
        except SinkError:
            self.abort_transaction()
            raise
        if offsets:
            if not self._in_txn:
                self.producer.begin_transaction()
                self._in_txn = True
            self.producer.send_offsets_to_transaction(offsets, group_metadata)
        if self._in_txn:
            self.producer.commit_transaction()
            self._in_txn = False

    def abort_transaction(self) -> None:
        """Abort the open transaction, if any (its records stay invisible to read_committed readers)."""
        if self._in_txn:
            self._in_txn = False
            try:
                self.producer.abort_transaction()
            except KafkaError as e:  # the broker's coordinator aborts it at its timeout anyway
                log.warning("aborting the transaction failed: %s", e)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.producer.close(timeout=10)


class _Sink:
    def __init__(self, pool: KafkaProducerPool, topic: str) -> None:
        self.pool = pool
        self.topic = topic

    def flush(self) -> None:
        self.pool.flush()

    def close(self) -> None:
        self.pool.close()


class KafkaAlertSink(_Sink):
    """Alert records: key = arm, value = the alert JSON."""

    def send(self, alert: dict[str, Any]) -> None:
        self.pool.send(self.topic, str(alert["arm"]).encode("utf-8"),
                       json.dumps(alert, separators=(",", ":")).encode("utf-8"))


class KafkaRequestSink(_Sink):
    """Sample requests (active mode): key = arm, value = ``{"arm", "request_id", "episode", "kind", "time"}``."""

    def send(self, arm: str, payload: dict[str, Any]) -> None:
        self.pool.send(self.topic, arm.encode("utf-8"), json.dumps(payload, separators=(",", ":")).encode("utf-8"))


class KafkaDeadLetterSink(_Sink):
    """Refused records, unchanged, with ``reason`` / ``detail`` / ``source`` headers (original headers kept).

    A dead letter is always deliverable: a record larger than ``max_bytes`` (default: the producer's
    ``max_request_size`` and the broker's default ``message.max.bytes``, 1 MB, whichever is smaller,
    less 8 KiB for the record's framing) is cut to fit -- its key to 1 KiB, its original headers dropped
    if they alone take a quarter of the budget, the value to what is left -- and carries a header
    ``truncated`` = ``key=<bytes>,value=<bytes>,headers=<n>`` giving the original sizes (else a sink
    failure at the next flush would stop the daemon, and a restart would fail on the same record).
    """

    #: the broker's default ``message.max.bytes`` (1 MB + 12): the smallest limit a topic is likely to have
    BROKER_DEFAULT = 1_048_588
    FRAMING = 8192
    MAX_KEY = 1024

    def __init__(self, pool: KafkaProducerPool, topic: str, max_bytes: int | None = None) -> None:
        super().__init__(pool, topic)
        if max_bytes is None:
            cfg = getattr(pool.producer, "config", {}) or {}
            max_bytes = min(int(cfg.get("max_request_size", 1_048_576)), self.BROKER_DEFAULT) - self.FRAMING
        if max_bytes < 4 * self.MAX_KEY:
            raise ValueError(f"dead-letter max_bytes must be >= {4 * self.MAX_KEY}, got {max_bytes}")
        self.max_bytes = max_bytes
        self.truncated = 0

    def send(self, record: Any, reason: str, detail: str) -> None:
        key, value = record_key(record), record.value  # (a key a source refused: the key it read)
        headers = list(getattr(record, "headers", None) or [])
        ours = [("reason", reason.encode()), ("detail", detail[:1000].encode("utf-8", "replace")),
                ("source", f"{record.topic}:{record.partition}:{record.offset}".encode())]

        def size(hs: list[tuple[str, bytes]]) -> int:
            return sum(len(h) + len(v or b"") + 8 for h, v in hs)

        total = len(key or b"") + len(value or b"") + size(headers) + size(ours)
        if total > self.max_bytes:
            cut = f"key={len(key or b'')},value={len(value or b'')},headers={len(headers)}"
            if size(headers) > self.max_bytes // 4:
                headers = []
            if key is not None and len(key) > self.MAX_KEY:
                key = bytes(key[:self.MAX_KEY])
            ours.append(("truncated", cut.encode()))
            room = self.max_bytes - len(key or b"") - size(headers) - size(ours)
            if value is not None and len(value) > room:
                value = bytes(value[:max(0, room)])
            self.truncated += 1
        self.pool.send(self.topic, key, value, headers + ours)

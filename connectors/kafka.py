"""Kafka connector (kafka-python): reward source, alert / request / dead-letter sinks, checkpoint store.

* :class:`KafkaRewardSource` -- a consumer-group member reading the reward topics with manual commits
  only (``enable_auto_commit=False``): positions are committed by the daemon after the checkpoint that
  contains them is durable. On (re)assignment each partition is sought to the position in the
  checkpoint, if any, else the group's committed offset, else ``auto_offset_reset``. Records are
  released in the reproducible order of :class:`~streamarms.connectors.ordering.PartitionMerger`
  (``ordered=False``: poll order). The daemon assumes it is the only member of its group: the k-sigma
  threshold is a function of *all* arms, so splitting partitions between two daemons would give each a
  different threshold (a second instance is a hot standby that takes over on rebalance).
* :class:`KafkaAlertSink`, :class:`KafkaRequestSink` -- JSON values keyed by arm.
* :class:`KafkaDeadLetterSink` -- the refused record's key and value unchanged, with headers
  ``reason`` (one of ``streamarms.runtime.INVALID_REASONS``), ``detail``, ``source`` (topic:partition:offset).
* :class:`KafkaCheckpointStore` -- checkpoints as the latest value of a key in a compacted topic.

All clients share one configuration dict (``bootstrap_servers`` plus security settings: SASL/SSL are
passed through unchanged, see :func:`client_config`). A failed send raises :class:`SinkError` at the
next ``flush`` -- that is, before the checkpoint that would otherwise skip it -- so an alert is never
silently lost.

Integration tests against a real broker: ``tests/kafka/``.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Sequence

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError, TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from streamarms.checkpoint import CheckpointStore, decode, encode

from .ordering import PartitionMerger, parse_tp, tp_name

__all__ = ["client_config", "ensure_topics", "KafkaRewardSource", "KafkaProducerPool", "KafkaAlertSink",
           "KafkaRequestSink", "KafkaDeadLetterSink", "KafkaCheckpointStore", "SinkError"]

log = logging.getLogger("streamarms.kafka")

#: security / connection settings passed through to every kafka-python client
SECURITY_KEYS = ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password",
                 "sasl_kerberos_service_name", "sasl_kerberos_domain_name", "sasl_oauth_token_provider",
                 "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password", "ssl_crlfile", "ssl_ciphers",
                 "ssl_check_hostname", "client_id", "request_timeout_ms", "api_version")


class SinkError(RuntimeError):
    """A record could not be delivered to a sink topic."""


def client_config(bootstrap_servers: str | Sequence[str], **settings: Any) -> dict[str, Any]:
    """Common client configuration: bootstrap servers plus the given settings with ``None`` dropped.

    >>> client_config("b1:9092,b2:9092", security_protocol="SASL_SSL", sasl_mechanism=None)
    {'bootstrap_servers': ['b1:9092', 'b2:9092'], 'security_protocol': 'SASL_SSL'}
    """
    servers = [s.strip() for s in bootstrap_servers.split(",")] if isinstance(bootstrap_servers, str) \
        else list(bootstrap_servers)
    cfg: dict[str, Any] = {"bootstrap_servers": [s for s in servers if s]}
    cfg.update({k: v for k, v in settings.items() if v is not None})
    return cfg


def _admin_config(config: dict[str, Any]) -> dict[str, Any]:
    keys = set(SECURITY_KEYS) | {"bootstrap_servers"}
    return {k: v for k, v in config.items() if k in keys}


def ensure_topics(config: dict[str, Any], topics: dict[str, int], topic_configs: dict[str, dict[str, str]] | None = None,
                  timeout_ms: int = 30_000) -> None:
    """Create the topics that do not exist yet (``{name: partitions}``); existing ones are left alone."""
    admin = KafkaAdminClient(**_admin_config(config))
    try:
        existing = set(admin.list_topics())
        new = [NewTopic(name, num_partitions=n, replication_factor=1,
                        topic_configs=(topic_configs or {}).get(name, {}))
               for name, n in topics.items() if name not in existing]
        if new:
            try:
                admin.create_topics(new, timeout_ms=timeout_ms)
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()


# ----------------------------------------------------------------------------------------------
# source
# ----------------------------------------------------------------------------------------------
class _Listener(ConsumerRebalanceListener):
    def __init__(self, source: "KafkaRewardSource") -> None:
        self.source = source

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.source._revoked(list(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.source._assigned(list(assigned))


class KafkaRewardSource:
    """Reads the reward topics as a member of ``group_id`` (module docstring).

    ``resume``: positions from a checkpoint (``{"topic:partition": [next_offset, runmax]}``).
    ``before_revoke``: called when partitions are about to be taken away (the daemon checkpoints).
    """

    def __init__(self, topics: Sequence[str], group_id: str, config: dict[str, Any], *,
                 resume: dict[str, Any] | None = None, ordered: bool = True, max_poll_records: int = 1000,
                 from_beginning: bool = True, consumer_options: dict[str, Any] | None = None,
                 max_buffer: int = 20_000) -> None:
        self.topics = list(topics)
        self.group_id = group_id
        self.merger = PartitionMerger(ordered=ordered, max_buffer=max_buffer)
        self._resume: dict[str, Any] = dict(resume or {})
        self.max_poll_records = max_poll_records
        self.before_revoke: Callable[[], None] | None = None
        self.exhausted = False  # a Kafka topic never is
        opts = {
            "group_id": group_id,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest" if from_beginning else "latest",
            "max_poll_records": max_poll_records,
            "session_timeout_ms": 10_000,
            "heartbeat_interval_ms": 1_000,
            "max_poll_interval_ms": 300_000,
        }
        opts.update(config)
        opts.update(consumer_options or {})
        self.consumer = KafkaConsumer(**opts)
        self._paused: set[Any] = set()
        self._resumed_any = False
        self.partial_assignment = False
        self.consumer.subscribe(self.topics, listener=_Listener(self))

    # -- rebalance ---------------------------------------------------------------------------
    def _assigned(self, assigned: list[TopicPartition]) -> None:
        resume = dict(self._resume)
        resume.update(self.merger.state())  # positions of partitions we keep win over older ones
        self.merger.assign([(tp.topic, tp.partition) for tp in assigned], resume)
        self._paused.clear()
        for tp in assigned:
            off = self.merger.next_offset((tp.topic, tp.partition))
            if off is not None:
                self.consumer.seek(tp, off)
        self.partial_assignment = False
        for topic in self.topics:
            total = self.consumer.partitions_for_topic(topic) or set()
            mine = {tp.partition for tp in assigned if tp.topic == topic}
            if total and len(mine) < len(total):
                self.partial_assignment = True
                log.warning("this daemon holds %d of the %d partitions of %s: another member is in group %s. "
                            "A detection needs every key (the k-sigma threshold is a function of all arms): "
                            "run one daemon per group (a second one is a standby)", len(mine), len(total),
                            topic, self.group_id)
        log.info("assigned %d partitions: %s", len(assigned),
                 ", ".join(f"{tp.topic}:{tp.partition}@{self.merger.next_offset((tp.topic, tp.partition))}"
                           for tp in sorted(assigned)))

    def _revoked(self, revoked: list[TopicPartition]) -> None:
        if revoked and self.before_revoke is not None:
            try:
                self.before_revoke()
            except Exception as e:  # never break the rebalance: the last checkpoint stays valid
                log.warning("checkpoint before revoking partitions failed: %s", e)
        self._resume.update(self.merger.state())

    # -- reading -----------------------------------------------------------------------------
    def _ended(self, tp: tuple[str, int]) -> bool:
        ktp = TopicPartition(tp[0], tp[1])
        hw = self.consumer.highwater(ktp)
        if hw is None:
            return False
        b = self.merger._bufs.get(tp)
        nxt = None if b is None or b.last_fetched is None else b.last_fetched + 1
        if nxt is None:
            try:
                nxt = self.consumer.position(ktp, timeout_ms=1000)
            except KafkaError:
                return False
            if nxt is None:
                return False
            self.merger.set_position(tp, nxt)
        return nxt >= hw

    def _unpark(self) -> None:
        """Work around kafka-python (3.0.x) never handing back records it parked while a partition was
        paused: it restores them only when its in-line record slot is ``None``, but a drained (empty)
        slot stays in place as long as other partitions deliver empty fetches (partitions at their end
        do), so a resumed partition would stall forever. A drained slot holds nothing: free it."""
        f = getattr(self.consumer, "_fetcher", None)
        if f is None or not getattr(f, "_paused_partition_records", None):
            return
        slot = getattr(f, "_next_partition_records", None)
        if slot is not None and not slot:
            f._next_partition_records = None

    def poll(self, timeout: float = 0.2) -> list[Any]:
        if self._resumed_any:
            self._unpark()
        got = self.consumer.poll(timeout_ms=int(timeout * 1000), max_records=self.max_poll_records)
        merger = self.merger
        for ktp, recs in got.items():
            merger.add((ktp.topic, ktp.partition), recs)
        if merger.ordered:
            over = merger.over_limit()
            if over:
                tps = [TopicPartition(*tp) for tp in over if tp not in self._paused]
                if tps:
                    self.consumer.pause(*tps)
                    self._paused.update(over)
            if self._paused:
                back = [tp for tp in merger.under_limit() if tp in self._paused]
                if back:
                    self.consumer.resume(*[TopicPartition(*tp) for tp in back])
                    self._paused.difference_update(back)
                    self._resumed_any = True
        return merger.release(self._ended)

    def rollback(self, processed: int) -> None:
        self.merger.rollback(processed)

    def state(self) -> dict[str, Any]:
        st = dict(self._resume)
        st.update(self.merger.state())
        return st

    def commit(self, state: dict[str, Any] | None = None) -> None:
        st = self.state() if state is None else state
        assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        offsets = {}
        for name, (off, _) in st.items():
            tp = parse_tp(name)
            if tp in assigned and off is not None:
                offsets[TopicPartition(*tp)] = OffsetAndMetadata(int(off), "", -1)
        if not offsets:
            return
        try:
            self.consumer.commit(offsets)
        except KafkaError as e:  # the checkpoint, not the group offset, is the source of truth
            log.warning("committing offsets to group %s failed (the checkpoint stays authoritative): %s",
                        self.group_id, e)

    def lag(self) -> dict[str, int]:
        """Records behind the high watermark, per ``topic:partition`` (after the last fetch)."""
        out = {}
        for tp in self.merger.partitions:
            hw = self.consumer.highwater(TopicPartition(*tp))
            nxt = self.merger.next_offset(tp)
            if hw is not None and nxt is not None:
                out[tp_name(tp)] = max(0, hw - nxt)
        return out

    def close(self) -> None:
        self.consumer.close(autocommit=False)


# ----------------------------------------------------------------------------------------------
# sinks
# ----------------------------------------------------------------------------------------------
class KafkaProducerPool:
    """One :class:`KafkaProducer` shared by the sinks of a daemon; tracks failed sends."""

    def __init__(self, config: dict[str, Any], producer_options: dict[str, Any] | None = None,
                 topics: Sequence[str] = ()) -> None:
        opts: dict[str, Any] = {"acks": "all", "linger_ms": 5, "retries": 5}
        opts.update(config)
        opts.update(producer_options or {})
        self.producer = KafkaProducer(**opts)
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
        fut = self.producer.send(topic, key=key, value=value, headers=headers)
        fut.add_errback(self._failed, topic)
        self.sent += 1

    def _failed(self, exc: BaseException, topic: str) -> None:
        with self._lock:
            self._errors.append(f"{topic}: {exc!r}")

    def flush(self, timeout: float | None = 60.0) -> None:
        self.producer.flush(timeout=timeout)
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise SinkError(f"{len(errors)} record(s) could not be delivered, first: {errors[0]}")

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
    """Refused records, unchanged, with ``reason`` / ``detail`` / ``source`` headers (original headers kept)."""

    def send(self, record: Any, reason: str, detail: str) -> None:
        headers = list(getattr(record, "headers", None) or [])
        headers += [("reason", reason.encode()), ("detail", detail[:1000].encode("utf-8", "replace")),
                    ("source", f"{record.topic}:{record.partition}:{record.offset}".encode())]
        self.pool.send(self.topic, record.key, record.value, headers)


# ----------------------------------------------------------------------------------------------
# checkpoint store
# ----------------------------------------------------------------------------------------------
class KafkaCheckpointStore(CheckpointStore):
    """The checkpoint as the latest value of ``key`` in a compacted single-partition ``topic``.

    ``save`` returns once the broker acknowledged the record with ``acks=all`` (durable on the
    in-sync replicas). ``load`` reads the topic from the beginning to its end and keeps the last value
    of ``key``.
    """

    def __init__(self, config: dict[str, Any], topic: str, key: str, *, create: bool = True,
                 max_bytes: int = 16 * 1024 * 1024) -> None:
        self.config = config
        self.topic = topic
        self.key = key.encode("utf-8")
        self.max_bytes = max_bytes
        if create:
            ensure_topics(config, {topic: 1}, {topic: {"cleanup.policy": "compact"}})
        self.producer = KafkaProducer(acks="all", compression_type="gzip", max_request_size=max_bytes,
                                      linger_ms=0, **config)

    def describe(self) -> str:
        return f"kafka topic {self.topic} (key {self.key.decode()})"

    def save(self, state: dict[str, Any]) -> None:
        data = encode(state)
        if len(data) > self.max_bytes:
            raise SinkError(f"checkpoint of {len(data)} bytes exceeds {self.max_bytes}; use a file checkpoint")
        self.producer.send(self.topic, key=self.key, value=data).get(timeout=60)

    def load(self) -> dict[str, Any] | None:
        consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, fetch_max_bytes=self.max_bytes,
                                 max_partition_fetch_bytes=self.max_bytes, **self.config)
        try:
            parts = consumer.partitions_for_topic(self.topic) or {0}
            tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            end = consumer.end_offsets(tps)
            last: bytes | None = None
            found = False
            while any(consumer.position(tp) < end[tp] for tp in tps):
                for recs in consumer.poll(timeout_ms=1000).values():
                    for r in recs:
                        if r.key == self.key:
                            last, found = r.value, True
            if not found or last is None:
                return None
            return decode(last, self.describe())
        finally:
            consumer.close(autocommit=False)

    def close(self) -> None:
        self.producer.close(timeout=10)

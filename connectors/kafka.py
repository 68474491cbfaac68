"""Kafka connector (kafka-python): the reward source and the clients' shared configuration. (The sinks:
:mod:`~streamarms.connectors.kafka_sinks`; the checkpoint store and exactly-once transactions:
:mod:`~streamarms.connectors.kafka_checkpoint`.)

* :class:`KafkaRewardSource` -- a consumer-group member reading the reward topics with manual commits
  only (``enable_auto_commit=False``): positions are committed by the daemon after the checkpoint that
  contains them is durable. On (re)assignment each partition is sought to the position in the
  checkpoint, if any, else the group's committed offset, else ``auto_offset_reset``. Records are
  released in the reproducible order of :class:`~streamarms.connectors.ordering.PartitionMerger`
  (``ordered=False``: poll order). The daemon assumes it is the only member of its group: the k-sigma
  threshold is a function of *all* arms, so splitting partitions between two daemons would give each a
  different threshold (a second instance is a hot standby that takes over on rebalance).
  Its consumer reads fetched record batches with the one-pass reader of
  :mod:`streamarms.connectors.kafka_records` (the same records as kafka-python's, ~3x cheaper to read).
  **Outages.** A broker that goes away never stops the daemon: a transient client error in ``poll``
  (connection lost, no broker, timeout, the "partition is not assigned" state kafka-python is left in
  by a broker restart) makes the source report ``connected = False`` and return no records; every
  ``check_interval`` seconds without records it asks the broker for the partitions' end offsets
  (``timeout_ms=1000``) -- the answer is the reconnection test and refreshes the lag. One warning when
  the broker becomes unreachable (and every 60 s while it stays so), one line when it is back; the
  daemon keeps its state, skips checkpoints while disconnected, and readiness reports it. A group
  offset commit waits at most ``commit_timeout`` seconds (5; kafka-python's own limit, 30 s, held the
  daemon's loop through a whole outage) and a commit without an answer counts as the outage's start.
  **Timestamps.** A record stamped more than ``max_timestamp_ahead`` seconds after this machine's clock,
  or before 1970, comes out of ``poll`` refused as ``bad_timestamp`` (:mod:`.record_time`).
  **Backfill.** ``start_from`` (``"earliest"``, ``"latest"`` or a timestamp in ms) says where a partition
  assigned *without a checkpointed position* starts, whatever the group's committed offset says
  (:mod:`streamarms.connectors.backfill`): to warm a new deployment on history. A partition with a
  checkpointed position resumes there (a restart never reads a record twice).
  **Out-of-range positions.** A checkpointed position beyond a partition's end (the topic was
  recreated, or the checkpoint comes from another cluster) or before its start (retention deleted
  the records) is replaced by the rule ``on_out_of_range``: ``"earliest"`` (default: read what the
  partition holds now), ``"latest"`` (only new records) or ``"fail"`` (stop with an error, exit 1).
  Below the start: checked after each assignment against the partition's first offset. Beyond the
  end: the broker answers OFFSET_OUT_OF_RANGE and kafka-python silently rewinds the fetch position,
  so records arrive wholly below our position (they would all be dropped as read: a silent stall);
  that is one signal; the other (brokers that answer such a fetch with no records, as Tansu does) is
  the high watermark of the fetch responses being below our position, checked every
  ``check_interval`` seconds without records. (``end_offsets`` is not used for this: Tansu answers
  it with the last batch's base offset, so a caught-up consumer would look out of range.)
  **Replaced partitions.** A topic recreated (or a broker that lost its data and was refilled) may
  already hold *more* records than the checkpointed position: the position is in range, but its
  records are other records. So the checkpoint also keeps a fingerprint of the last record consumed
  per partition, ``[offset, timestamp, hash of key and value]`` (:func:`record_fingerprint`, a third
  element after ``[next_offset, runmax]``); after each assignment the source reads that record again
  (it seeks one record back, and drops it once compared) and a different record applies the same rule
  ``on_out_of_range``. A checkpoint without fingerprints (older versions) is resumed unchecked; a
  record that is gone (expired, compacted away, a transaction marker) cannot be compared, and the
  position is kept. A checkpoint from another cluster (another cluster id) is refused at start-up
  (``streamarms.daemon.restore_checkpoint``). Each reset is logged as a warning and counted
  (``out_of_range_resets``; fingerprint mismatches also in ``fingerprint_mismatches``).
  **Group joins.** The source never leaves its group while a join is pending: :meth:`close` first
  lets the join finish (at most ``leave_grace`` seconds). Tansu (0.6.0, the test broker) keeps a member
  that sends LeaveGroup while its JoinGroup is pending as the group's leader, and the group never
  assigns a partition again (``tests/kafka/test_hardening_kafka.py::test_tansu_wedges_a_group_left_mid_join``):
  a daemon stopped by SIGTERM during its first seconds would leave the next run waiting forever (the
  ``--exactly-once`` stop/restart hang). And a join that does not complete within ``join_timeout``
  seconds (default 120; a join normally takes seconds, the broker's initial rebalance delay) while the
  broker answers stops the daemon with :class:`GroupJoinTimeout` naming the group (exit 1) instead of
  a silent wait; until then a line every 10 s says how long the join has waited and what a long join
  usually is (:mod:`.kafka_join`).
All clients share one configuration dict (``bootstrap_servers`` plus security settings: SASL/SSL are
passed through unchanged, see :func:`client_config`).

Integration tests against a real broker: ``tests/kafka/``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import NewTopic
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError, TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from . import kafka_positions as positions
from . import kafka_records
from .backfill import StartFrom
from .kafka_join import GroupJoin
from .kafka_positions import OUT_OF_RANGE_RULES, OffsetsOutOfRange, record_fingerprint
from .kafka_positions import transient as _transient
from .ordering import PartitionMerger, checked_positions, parse_tp, tp_name
from .record_time import TimestampScreen

__all__ = ["client_config", "crc_implementation", "ensure_topics", "record_fingerprint", "probe_cluster",
           "BrokerUnreachable", "KafkaRewardSource", "OffsetsOutOfRange", "GroupJoinTimeout", "OUT_OF_RANGE_RULES",
           "warn_missing_topics", "absent_topics"]

log = logging.getLogger("streamarms.kafka")

#: security / connection settings passed through to every kafka-python client
SECURITY_KEYS = ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password",
                 "sasl_kerberos_service_name", "sasl_kerberos_domain_name", "sasl_oauth_token_provider",
                 "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password", "ssl_crlfile", "ssl_ciphers",
                 "ssl_check_hostname", "client_id", "request_timeout_ms", "api_version")


class GroupJoinTimeout(RuntimeError):
    """The consumer group did not assign partitions within ``join_timeout`` seconds (module docstring)."""


def crc_implementation() -> str:
    """``"c"`` when kafka-python checks record batches with the ``crc32c`` C extension (a dependency of
    streamarms), ``"python"`` when with its pure-Python fallback, which takes about half the time of
    reading a topic (``benchmarks/kafka_throughput.py --crc python``)."""
    from kafka.record import util
    return "python" if util.crc32c_c is None else "c"


_crc_warned = False


def _warn_pure_python_crc() -> None:
    global _crc_warned
    if not _crc_warned and crc_implementation() == "python":
        _crc_warned = True
        log.warning("kafka-python checks CRCs in pure Python (the crc32c package is missing): reading Kafka "
                    "runs at about half speed; pip install crc32c")


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


class BrokerUnreachable(RuntimeError):
    """No bootstrap server answers (start-up): one clear line instead of a minute of client retries."""


def absent_topics(known: set[str], topics: Sequence[str]) -> tuple[list[str], str]:
    """The ``topics`` not among the broker's ``known`` ones, and those it has as a person reads them (the first 20,
    its internal ``__`` topics left out) -- for the error or the warning that names a mistyped topic.

    >>> absent_topics({"rewards", "__consumer_offsets"}, ["rewards", "rewrads"])
    (['rewrads'], 'rewards')
    """
    return [t for t in topics if t not in known], ", ".join(sorted(t for t in known if not t.startswith("__"))[:20]) or "none"


def warn_missing_topics(config: dict[str, Any], topics: Sequence[str], timeout: float = 5.0) -> list[str]:
    """Warn of the ``topics`` the broker does not have (a typo of ``--rewards-topic``: the run waited for its records
    without a word, and a broker that creates a topic on its first read made it); those topics. Nothing when the
    broker does not say within ``timeout`` (the run's own waits say that)."""
    consumer = None
    try:
        consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, request_timeout_ms=int(timeout * 1000) + 5000,
                                 **config)
        known = consumer.topics()
    except KafkaError:
        return []
    finally:
        if consumer is not None:
            consumer.close(autocommit=False)
    missing, shown = absent_topics(known, topics)
    if missing:
        log.warning("no topic %s on the broker yet (its topics: %s): the run waits for its records -- a typo of "
                    "--rewards-topic? (a broker that creates topics on their first read makes it now, empty)",
                    ", ".join(missing), shown)
    return missing


def probe_cluster(config: dict[str, Any], timeout: float = 5.0) -> str | None:
    """Fail fast if no bootstrap server accepts a TCP connection within ``timeout`` seconds
    (:class:`BrokerUnreachable`, naming them); else the cluster id (``None`` if the broker does not
    say) -- a checkpoint records it, and one from another cluster is refused."""
    import socket
    servers = list(config.get("bootstrap_servers") or [])
    errors = []
    for server in servers:
        host, _, port = str(server).rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "localhost", int(port or 9092)), timeout=timeout):
                break
        except (OSError, ValueError) as e:
            errors.append(f"{server} ({getattr(e, 'strerror', None) or e})")
    else:
        raise BrokerUnreachable(f"no Kafka broker reachable at {', '.join(errors) or 'no bootstrap servers'}")
    try:
        admin = KafkaAdminClient(**_admin_config(config), request_timeout_ms=int(timeout * 1000),
                                 bootstrap_timeout_ms=int(timeout * 1000))
    except KafkaError as e:
        raise BrokerUnreachable(f"the Kafka broker at {', '.join(servers)} does not answer: {_describe(e)}") from None
    try:
        info = admin.describe_cluster()
        cid = info.get("cluster_id") if isinstance(info, dict) else getattr(info, "cluster_id", None)
        return str(cid) if cid else None
    except (KafkaError, AttributeError, TypeError) as e:
        log.debug("describe_cluster failed: %s", e)
        return None
    finally:
        admin.close()


def _describe(e: BaseException) -> str:
    """``Type: message`` without kafka-python's habit of repeating the type in the message (or of a message
    ``None``: ``KafkaTimeoutError: KafkaTimeoutError: None`` was logged).

    >>> _describe(KafkaError("None")), _describe(KafkaError("KafkaError: x")), _describe(OSError("refused"))
    ('KafkaError', 'KafkaError: x', 'OSError: refused')
    """
    name, text = type(e).__name__, str(e)
    while text.startswith(name):
        text = text[len(name):].lstrip(": ")
    return name if text.strip() in ("", "None") else f"{name}: {text}"


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
def _unpark(consumer: KafkaConsumer) -> None:
    """Work around kafka-python (3.0.x) handing back records it parked while a partition was paused
    late or never: it restores them only when its in-line record slot is ``None`` *at the start* of
    a poll. (1) A drained (empty) slot stays in place as long as other partitions deliver empty
    fetches (partitions at their end do), so a resumed partition would stall forever: a drained
    slot holds nothing, free it. (2) A slot holding the records of a partition paused since the
    last poll is parked only *during* the poll, after the restore: with every other partition's
    records parked too, that poll finds nothing to return or fetch and sleeps ``retry_backoff_ms``
    (100 ms), or waits for an unrelated fetch -- at 4 partitions and a merge buffer smaller than one
    fetch response this cost the ordered daemon 0.3-0.4 s of every 2 s (issue 15). Park it here,
    as the poll would, so that the poll starts with a resumed partition's parked records."""
    f = getattr(consumer, "_fetcher", None)
    parked = getattr(f, "_paused_partition_records", None) if f is not None else None
    if f is None or not parked:
        return
    slot = getattr(f, "_next_partition_records", None)
    if slot is None:
        return
    if not slot:
        f._next_partition_records = None
        return
    subs = getattr(consumer, "_subscription", None)
    tp = getattr(slot, "topic_partition", None)
    if subs is None or tp is None or tp in parked or not subs.is_paused(tp):
        return
    if any(not subs.is_paused(p) for p in parked):  # a resumed partition's records can take its place
        parked[tp] = slot
        f._next_partition_records = None


class _Listener(ConsumerRebalanceListener):
    def __init__(self, source: KafkaRewardSource) -> None:
        self.source = source

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.source._revoked(list(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.source._assigned(list(assigned))


def _as_they_came(records: list[Any]) -> list[Any]:
    """A batch's values as they came (no ``--line-pattern``: :class:`~.kafka_lines.ValueLines` reads log lines)."""
    return records


class KafkaRewardSource:
    """Reads the reward topics as a member of ``group_id`` (module docstring).

    ``resume``: positions from a checkpoint (``{"topic:partition": [next_offset, runmax]}``).
    ``max_timestamp_ahead``: seconds a record may be stamped in the future (:mod:`.record_time`; 0: no limit).
    ``before_revoke``: called when partitions are about to be taken away (the daemon checkpoints).
    """

    def __init__(self, topics: Sequence[str], group_id: str, config: dict[str, Any], *,
                 resume: dict[str, Any] | None = None, ordered: bool = True, max_poll_records: int = 1000,
                 from_beginning: bool = True, consumer_options: dict[str, Any] | None = None,
                 max_buffer: int = 20_000, on_out_of_range: str = "earliest", check_interval: float = 5.0,
                 rebuild_after: float = 10.0, join_timeout: float = 120.0, leave_grace: float = 15.0,
                 start_from: str | int | None = None, commit_timeout: float = 5.0,
                 max_timestamp_ahead: float = 3600.0, values: Callable[[list[Any]], list[Any]] | None = None) -> None:
        if on_out_of_range not in OUT_OF_RANGE_RULES:
            raise ValueError(f"on_out_of_range must be one of {', '.join(OUT_OF_RANGE_RULES)}, got {on_out_of_range!r}")
        #: where a partition without a checkpointed position starts (``None``: the group's committed
        #: offset, else ``from_beginning``)
        self.start_from = start_from
        self._backfill = StartFrom(start_from, transient=_transient) if start_from is not None else None
        self.on_out_of_range = on_out_of_range
        self.timestamps = TimestampScreen(max_timestamp_ahead)  # records stamped in the future refused
        self.values = values or _as_they_came  # (``values``: each batch's values read first: --line-pattern)
        self.check_interval = check_interval
        #: seconds a group offset commit may wait for the broker (kafka-python's default, its request
        #: timeout of 30 s, kept the daemon's loop blocked through a whole outage: no poll, no warning,
        #: readiness unchanged); a commit that times out marks the broker unreachable
        self.commit_timeout = commit_timeout
        #: the broker answered the last poll / end-offset check
        self.connected = True
        self.disconnected_since: float | None = None
        self.disconnects = 0
        #: positions replaced by the ``on_out_of_range`` rule
        self.out_of_range_resets = 0
        #: of those, positions whose last record is not the one the checkpoint saw (a replaced partition)
        self.fingerprint_mismatches = 0
        self._fatal: Exception | None = None
        self._last_records = self._last_check = time.monotonic()
        self._last_warn = self._last_rebuild = 0.0
        self._ends: dict[tuple[str, int], int] = {}
        self._verify: dict[Any, int] = {}
        #: fingerprints to check once the first offset is known (``_verify_positions``), then once the
        #: record they name is fetched again (``_check_fingerprints``)
        self._verify_fp: dict[Any, list[Any]] = {}
        self._fp_pending: dict[Any, list[Any]] = {}
        self.topics = list(topics)
        self.group_id = group_id
        self.merger = PartitionMerger(ordered=ordered, max_buffer=max_buffer)
        self._resume: dict[str, Any] = checked_positions(resume)  # (an edited one refused now, not mid-rebalance)
        self.max_poll_records = max_poll_records
        self.before_revoke: Callable[[], None] | None = None
        #: a detecting group's member (issue 13): start positions of partitions it takes over / those going
        self.on_assign: Callable[[list[str]], dict[str, Any]] | None = None
        self.on_revoke: Callable[[list[str]], None] | None = None
        self.exhausted = False  # a Kafka topic never is
        opts = {
            "group_id": group_id,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest" if from_beginning else "latest",
            "max_poll_records": max_poll_records,
            "session_timeout_ms": 10_000,
            "heartbeat_interval_ms": 1_000,
            "max_poll_interval_ms": 300_000,
            # after an outage, try the broker again at least every 5 s (kafka-python's default backs off
            # to 30 s, so a daemon would stay idle up to half a minute after the broker is back)
            "reconnect_backoff_max_ms": 5_000,
        }
        opts.update(config)
        opts.update(consumer_options or {})
        self._opts = opts
        self.rebuild_after, self.join_timeout, self.leave_grace = rebuild_after, join_timeout, leave_grace
        self.join = GroupJoin(group_id, self.topics, session_timeout=cast(int, opts["session_timeout_ms"]) / 1000)
        self.rebuilds = 0
        self._paused: set[Any] = set()
        self._resumed_any = False
        self.partial_assignment = False
        self.consumer = self._new_consumer()

    def _new_consumer(self) -> KafkaConsumer:
        _warn_pure_python_crc()
        consumer = KafkaConsumer(**self._opts)
        kafka_records.install(consumer)  # its fetched records read in one pass a batch (issue 15)
        consumer.subscribe(self.topics, listener=_Listener(self))
        self.join.begin()
        return consumer

    def _rebuild(self) -> None:
        """Replace a consumer that has not reached the broker for ``rebuild_after`` seconds.

        kafka-python (3.0.x) does not always find a restarted broker again (its client stops trying);
        a new consumer does. Nothing is lost: positions live in the merger and go to the new
        consumer's assignment like a checkpoint's (records released are handled before the next poll).
        """
        self._resume.update(self._positions())
        try:
            self.consumer.close(autocommit=False, timeout_ms=1000)
        except Exception as e:  # a consumer without a broker may fail to close cleanly
            log.debug("closing the old consumer failed: %s", e)
        self.consumer = self._new_consumer()
        self._paused.clear()
        self._resumed_any = False
        self.rebuilds += 1
        log.warning("new Kafka consumer after %.0f s without the broker", time.monotonic() - (self.disconnected_since or 0))

    # -- rebalance ---------------------------------------------------------------------------
    @property
    def joined(self) -> bool:
        """The group has assigned partitions (possibly none: a standby) since the last (re)join began."""
        return self.join.joined

    def _assigned(self, assigned: list[TopicPartition]) -> None:
        self.join.done()
        resume = dict(self._resume)
        resume.update(self._positions())  # positions of partitions we keep win over older ones
        if self.on_assign is not None:
            resume.update(self._handed_over(assigned))
        self._resume = resume
        self.merger.assign([(tp.topic, tp.partition) for tp in assigned], resume)
        self._paused.clear()
        self._verify = {}
        self._verify_fp = {}
        self._fp_pending = {}
        fresh = []
        for tp in assigned:
            off = self.merger.next_offset((tp.topic, tp.partition))
            if off is not None:
                self.consumer.seek(tp, off)
                # checked against the partition's bounds by the next poll (kafka-python 3 forbids
                # blocking calls in a rebalance callback)
                self._verify[tp] = off
                fp = self._fingerprint((tp.topic, tp.partition), off)
                if fp is not None:
                    self._verify_fp[tp] = fp
            else:
                fresh.append(tp)
        if self._backfill is not None:
            self._backfill.assign(fresh)  # sought by the next poll (no blocking call here)
        self.partial_assignment = False
        for topic in self.topics:
            total = self.consumer.partitions_for_topic(topic) or set()
            mine = {tp.partition for tp in assigned if tp.topic == topic}
            if total and len(mine) < len(total):
                self.partial_assignment = True
                if self.on_assign is None:  # (a detecting group's member holds part of them by design)
                    log.warning("this daemon holds %d of the %d partitions of %s: another member is in group "
                                "%s. A detection needs every key (the k-sigma threshold is a function of all "
                                "arms): run one daemon per group (a second one is a standby)", len(mine),
                                len(total), topic, self.group_id)
        log.info("assigned %d partitions: %s", len(assigned),
                 ", ".join(f"{tp.topic}:{tp.partition}@{self.merger.next_offset((tp.topic, tp.partition))}"
                           for tp in sorted(assigned)))

    def _handed_over(self, assigned: list[TopicPartition]) -> dict[str, Any]:
        """Start positions of the partitions whose key state a group member takes over (``on_assign``)."""
        assert self.on_assign is not None
        try:
            return self.on_assign([f"{tp.topic}:{tp.partition}" for tp in assigned])
        except Exception as e:  # never break the rebalance
            log.error("taking partitions over failed: %s", e, exc_info=True)
            return {}

    def _revoked(self, revoked: list[TopicPartition]) -> None:
        self.join.begin()  # a (re)join follows
        if revoked and self.on_revoke is not None:
            try:
                self.on_revoke([f"{tp.topic}:{tp.partition}" for tp in revoked])
            except Exception as e:  # never break the rebalance
                log.error("handing partitions over failed: %s", e, exc_info=True)
        if revoked and self.before_revoke is not None:
            try:
                self.before_revoke()
            except Exception as e:  # never break the rebalance: the last checkpoint stays valid
                log.warning("checkpoint before revoking partitions failed: %s", e)
        self._resume.update(self._positions())

    # -- reading -----------------------------------------------------------------------------
    def _ended(self, tp: tuple[str, int]) -> bool:
        ktp = TopicPartition(tp[0], tp[1])
        try:
            hw = self.consumer.highwater(ktp)
        except (KafkaError, AssertionError):  # not assigned (a rebalance under way, a broker restart)
            return False
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

    # -- outages and out-of-range positions -------------------------------------------------------
    _out_of_range = positions.out_of_range

    _verify_positions = positions.verify_positions

    _check_fingerprints = positions.check_fingerprints

    _rewound = positions.rewound

    def _disconnected(self, e: BaseException) -> None:
        now = time.monotonic()
        if self.connected:
            self.connected = False
            self.disconnected_since = now
            self.disconnects += 1
            self._last_warn = now
            log.warning("broker unreachable (%s): keeping the state, retrying", _describe(e))
        elif now - self._last_warn >= 60.0:
            self._last_warn = now
            log.warning("broker still unreachable %.0f s after the outage was noticed (%s): retrying",
                        now - (self.disconnected_since or now), _describe(e))

    def _reconnected(self) -> None:
        if not self.connected:  # (noticed when a request failed: up to a request timeout after it began)
            log.warning("broker reachable again, %.1f s after the outage was noticed: resuming",
                        time.monotonic() - (self.disconnected_since or 0))
            self.connected = True
            self.disconnected_since = None
            self.join.outage_ended()

    def _join_timed_out(self) -> None:
        """No assignment for ``join_timeout`` s: an outage explains it (count again from the reconnection),
        else the group is stuck -- :class:`GroupJoinTimeout` (module docstring)."""
        try:
            self.consumer.end_offsets([TopicPartition(self.topics[0], 0)], timeout_ms=2000)
        except KafkaError as e:
            if _transient(e):
                self._disconnected(e)
                self.join.restart_count()
                return
        raise GroupJoinTimeout(
            f"consumer group {self.group_id!r} has assigned no partitions for {self.join.waited():.0f} s "
            "although the broker answers: its coordinator seems stuck (Tansu keeps a member that left during a "
            "join as the group's leader); use another --group-id, or restart the broker")

    def _check(self) -> None:
        """No records for a while: does the broker answer (its end offsets also refresh the lag), and
        does a fetch response say a partition ends before our position?"""
        tps = [TopicPartition(*tp) for tp in self.merger.partitions]
        if not tps:
            return
        try:
            ends = self.consumer.end_offsets(tps, timeout_ms=1000)
        except KafkaError as e:
            if not _transient(e):
                raise
            self._disconnected(e)
            return
        self._reconnected()
        for ktp, hi in ends.items():
            tp = (ktp.topic, ktp.partition)
            self._ends[tp] = hi
            try:
                hw = self.consumer.highwater(ktp)
            except (KafkaError, AssertionError):
                continue
            b = self.merger._bufs.get(tp)
            nxt = None if b is None or b.last_fetched is None else b.last_fetched + 1
            if hw is not None and nxt is not None and nxt > hw:  # a fetch says the log ends before us
                self._out_of_range(tp, nxt, None, f"it ends at {hw}", hw)

    def poll(self, timeout: float = 0.2) -> list[Any]:
        if self._fatal is not None:
            raise self._fatal
        if self._resumed_any or self._paused:
            _unpark(self.consumer)
        try:
            got = self.consumer.poll(timeout_ms=int(timeout * 1000), max_records=self.max_poll_records)
        except KafkaError as e:
            if not _transient(e):
                raise
            self._disconnected(e)
            time.sleep(timeout)
            got = {}
        bf = self._backfill
        if got or self._verify or (bf is not None and bf.pending):
            got = dict(got)
            if bf is not None and bf.pending:
                bf.seek(self.consumer, self.merger, got)
            if self._verify:
                self._verify_positions(got)
            if self._fp_pending:
                self._check_fingerprints(got)
            self._rewound(got)
            if bf is not None and bf.skip_before:
                bf.skip_early(self.merger, got)
        now = time.monotonic()
        if got:
            self._last_records = now
            self._last_check = now
            if not self.connected:
                self._reconnected()
        if not self.join.joined:
            self.join.remind()
            if self.join.waited() >= self.join_timeout:
                self._join_timed_out()
        if not got and now - self._last_check >= (self.check_interval if self.connected else 1.0):
            self._last_check = now
            self._check()
            if not self.connected and now - self._last_rebuild >= self.rebuild_after \
                    and now - (self.disconnected_since or now) >= self.rebuild_after:
                self._last_rebuild = now
                try:
                    self._rebuild()
                except KafkaError as e:
                    if not _transient(e):
                        raise
                    log.debug("new consumer failed: %s", e)
            if self._fatal is not None:
                raise self._fatal
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
        return self.values(self.timestamps(merger.release(self._ended)))

    def rollback(self, processed: int) -> None:
        self.merger.rollback(processed)

    _fingerprint = positions.fingerprint

    _positions = positions.positions

    def state(self) -> dict[str, Any]:
        st = dict(self._resume)
        st.update(self._positions())
        return st

    def commit(self, state: dict[str, Any] | None = None) -> None:
        st = self.state() if state is None else state
        if not self.connected:
            return  # the checkpoint holds the positions; the next commit after the outage catches up
        offsets = self.offsets(st)
        if not offsets:
            return
        try:
            self.consumer.commit(offsets, timeout_ms=int(self.commit_timeout * 1000))
        except (KafkaError, AssertionError) as e:  # the checkpoint, not the group offset, is the source of truth
            if not _transient(e):
                log.warning("committing offsets to group %s failed (the checkpoint stays authoritative): %s",
                            self.group_id, e)
                return
            log.warning("committing offsets to group %s: no answer within %.0f s (the checkpoint stays "
                        "authoritative; the positions are committed once the broker is back)",
                        self.group_id, self.commit_timeout)
            self._disconnected(e)  # an outage: readiness says so now; the next polls check the broker

    def offsets(self, state: dict[str, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
        """The positions of ``state`` for the partitions assigned now, as a commit (or a transaction) takes them."""
        assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        out = {}
        for name, pos in state.items():
            tp, off = parse_tp(name), pos[0]
            if tp in assigned and off is not None:
                out[TopicPartition(*tp)] = OffsetAndMetadata(int(off), "", -1)
        return out

    def lag(self) -> dict[str, int]:
        """Records behind the high watermark, per ``topic:partition`` (after the last fetch)."""
        out = {}
        for tp in self.merger.partitions:
            try:
                hw = self.consumer.highwater(TopicPartition(*tp))
            except (KafkaError, AssertionError):
                hw = None
            if hw is None:
                hw = self._ends.get(tp)
            nxt = self.merger.next_offset(tp)
            if hw is not None and nxt is not None:
                out[tp_name(tp)] = max(0, hw - nxt)
        return out

    def close(self) -> None:
        """Leave the group -- after a pending join has finished (module docstring), at most ``leave_grace`` s."""
        if self.connected:
            self.join.finish(self.consumer, self.leave_grace)
        self.consumer.close(autocommit=False)

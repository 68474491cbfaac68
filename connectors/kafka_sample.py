"""The latest records of Kafka topics, read once without a consumer group: what ``streamarms inspect
--bootstrap-servers HOST:PORT --rewards-topic T`` profiles.

A new user of a topic asks what its records hold before the daemon reads it. :func:`latest_records` assigns
every partition of the topics to a consumer of no group (nothing is committed, no group is joined or
rebalanced), starts each partition ``ceil(n / partitions)`` records before its end (or at its beginning), and
reads until ``n`` records, or until every partition is past that end and a poll brings nothing: the most recent
records, spread over the partitions as the daemon would meet them. A topic that does not exist is a
:class:`~streamarms.errors.ConfigError` naming the topics there are; a broker that does not answer,
:class:`~streamarms.connectors.kafka.BrokerUnreachable`. What arrives later is not waited for; ``timeout`` bounds
the whole read.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from streamarms.errors import ConfigError

from .kafka import absent_topics, client_config, probe_cluster

__all__ = ["latest_records"]


def latest_records(servers: str, topics: Sequence[str], n: int, timeout: float = 15.0
                   ) -> list[tuple[bytes | None, bytes | None]]:
    """Up to ``n`` of the latest records of ``topics`` as ``(key, value)`` (module docstring)."""
    from kafka import KafkaConsumer, TopicPartition

    config = client_config(servers)
    probe_cluster(config)
    consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, request_timeout_ms=int(timeout * 1000) + 5000,
                             **config)
    try:
        missing, shown = absent_topics(consumer.topics(), topics)
        if missing:
            raise ConfigError(f"no topic {', '.join(missing)} on {servers} (its topics: {shown})")
        parts = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        consumer.assign(parts)
        begin, end = consumer.beginning_offsets(parts), consumer.end_offsets(parts)
        per = math.ceil(n / max(len(parts), 1))
        for tp in parts:
            consumer.seek(tp, max(begin[tp], end[tp] - per))
        out: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            got = consumer.poll(timeout_ms=500)
            out += [(r.key, r.value) for records in got.values() for r in records][:n - len(out)]
            # (done once every partition is past the end it had and a poll brings nothing: what arrives later is
            # not waited for, and an end a broker reports too low -- Tansu's, a batch's first offset -- is read past)
            if not got and all(consumer.position(tp) >= end[tp] for tp in parts):
                break
        return out
    finally:
        consumer.close()

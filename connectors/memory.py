"""In-memory transport: a tiny partitioned log with consumer-group offsets, for the embedded default
and for tests. It has the shape of the Kafka connector (same record fields, same source/sink
methods) without a broker.

>>> broker = MemoryBroker()
>>> broker.create_topic("rewards", partitions=2)
>>> for i in range(6):
...     _ = broker.produce("rewards", key=b"k%d" % (i % 3), value=b'{"reward": 1}', timestamp=i, partition=i % 2)
>>> src = MemorySource(broker, ["rewards"], group_id="g")
>>> [(r.partition, r.offset) for r in src.poll(0)]   # merged by timestamp
[(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
>>> sink = MemorySink(broker, "alerts")
>>> sink.send({"arm": "k1", "kind": "outlier"}); sink.flush()
>>> broker.values("alerts")
[{'arm': 'k1', 'kind': 'outlier'}]
"""

from __future__ import annotations

import json
import threading
import zlib
from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from streamarms.runtime.records import record_key

from .ordering import PartitionMerger, tp_name

__all__ = ["MemoryRecord", "MemoryBroker", "MemorySource", "MemorySink", "MemoryDeadLetterSink",
           "GeneratedSource"]

#: the fields of kafka-python's ConsumerRecord that streamarms reads
MemoryRecord = namedtuple("MemoryRecord", "topic partition offset timestamp key value headers")


def _partition_for(key: bytes | None, n: int) -> int:
    return 0 if key is None else zlib.crc32(key) % n


class MemoryBroker:
    """Topics of partitions of records; committed offsets per consumer group. Thread-safe."""

    def __init__(self) -> None:
        self.topics: dict[str, list[list[MemoryRecord]]] = {}
        self.committed: dict[str, dict[tuple[str, int], int]] = {}
        self._lock = threading.Lock()

    def create_topic(self, name: str, partitions: int = 1) -> None:
        with self._lock:
            if name not in self.topics:
                self.topics[name] = [[] for _ in range(partitions)]

    def produce(self, topic: str, key: bytes | str | None, value: bytes | str | None, *,
                headers: Sequence[tuple[str, bytes]] = (), timestamp: int | None = None,
                partition: int | None = None) -> MemoryRecord:
        if topic not in self.topics:
            self.create_topic(topic)
        if isinstance(key, str):
            key = key.encode("utf-8")
        if isinstance(value, str):
            value = value.encode("utf-8")
        with self._lock:
            parts = self.topics[topic]
            p = _partition_for(key, len(parts)) if partition is None else partition
            log = parts[p]
            rec = MemoryRecord(topic, p, len(log), timestamp, key, value, list(headers))
            log.append(rec)
            return rec

    def records(self, topic: str) -> list[MemoryRecord]:
        """All records of a topic, partition by partition."""
        return [r for part in self.topics.get(topic, []) for r in part]

    def values(self, topic: str) -> list[Any]:
        """The JSON-decoded values of a topic."""
        return [json.loads(r.value) for r in self.records(topic)]


class MemorySource:
    """Reads topics of a :class:`MemoryBroker` as the single member of consumer group ``group_id``.

    Same contract as :class:`streamarms.connectors.kafka.KafkaRewardSource`: :meth:`poll` returns
    records in the deterministic merged order of :class:`~streamarms.connectors.ordering.PartitionMerger`;
    :meth:`state` / ``resume`` carry positions across restarts; :meth:`commit` stores group offsets.
    """

    def __init__(self, broker: MemoryBroker, topics: Sequence[str], group_id: str = "streamarms", *,
                 resume: dict[str, Any] | None = None, max_records: int = 500, ordered: bool = True,
                 from_beginning: bool = True) -> None:
        self.broker = broker
        self.topics = list(topics)
        self.group_id = group_id
        self.max_records = max_records
        self.merger = PartitionMerger(ordered=ordered)
        for t in self.topics:
            broker.create_topic(t)
        tps = [(t, p) for t in self.topics for p in range(len(broker.topics[t]))]
        self.merger.assign(tps, resume or {})
        committed = broker.committed.get(group_id, {})
        self._pos: dict[tuple[str, int], int] = {}
        for tp in tps:
            nxt = self.merger.next_offset(tp)
            if nxt is None:
                nxt = committed.get(tp, 0 if from_beginning else len(broker.topics[tp[0]][tp[1]]))
                self.merger.set_position(tp, nxt)
            self._pos[tp] = nxt

    def _ended(self, tp: tuple[str, int]) -> bool:
        return self._pos[tp] >= len(self.broker.topics[tp[0]][tp[1]])

    def poll(self, timeout: float = 0.0) -> list[MemoryRecord]:
        budget = self.max_records
        for tp in self.merger.partitions:
            if budget <= 0:
                break
            if self.merger.buffered(tp) > self.merger.max_buffer:
                continue
            log = self.broker.topics[tp[0]][tp[1]]
            pos = self._pos[tp]
            chunk = log[pos:pos + budget]
            if chunk:
                self.merger.add(tp, chunk)
                self._pos[tp] = pos + len(chunk)
                budget -= len(chunk)
        return self.merger.release(self._ended)

    @property
    def exhausted(self) -> bool:
        """Every record of every partition has been delivered."""
        return all(self._ended(tp) and self.merger.buffered(tp) == 0 for tp in self.merger.partitions)

    def rollback(self, processed: int) -> None:
        self.merger.rollback(processed)
        for tp in self.merger.partitions:
            nxt = self.merger.next_offset(tp)
            if nxt is not None:
                self._pos[tp] = nxt

    def state(self) -> dict[str, Any]:
        return self.merger.state()

    def commit(self, state: dict[str, Any] | None = None) -> None:
        st = self.state() if state is None else state
        with self.broker._lock:
            g = self.broker.committed.setdefault(self.group_id, {})
            for name, (off, _) in st.items():
                topic, _, part = name.rpartition(":")
                g[(topic, int(part))] = int(off)

    def lag(self) -> dict[str, int]:
        return {tp_name(tp): len(self.broker.topics[tp[0]][tp[1]]) - (self.merger.next_offset(tp) or 0)
                for tp in self.merger.partitions}

    def close(self) -> None:
        pass


class GeneratedSource:
    """An endless (or bounded) source backed by a generator of ``(key, value, timestamp_ms)``.

    Used by the embedded default: nothing is stored, so it runs in constant memory however long it
    runs. Offsets count records; ``resume`` skips that many records of the (deterministic) generator.
    """

    def __init__(self, make: Callable[[], Iterator[tuple[bytes, bytes, int]]], *, topic: str = "embedded",
                 resume: dict[str, Any] | None = None, max_records: int = 2000) -> None:
        self.topic = topic
        self.max_records = max_records
        self._it = make()
        self._offset = 0
        self._last_ts: int | None = None
        self._batch: list[MemoryRecord] = []
        self.exhausted = False
        st = (resume or {}).get(f"{topic}:0")
        if st:
            for _ in range(int(st[0])):
                next(self._it)
            self._offset = int(st[0])
            self._last_ts = st[1]

    def poll(self, timeout: float = 0.0) -> list[MemoryRecord]:
        out = []
        topic, off = self.topic, self._offset
        for key, value, ts in self._it:
            out.append(MemoryRecord(topic, 0, off, ts, key, value, None))
            off += 1
            if len(out) >= self.max_records:
                break
        else:
            self.exhausted = True
        self._offset = off
        if out:
            self._last_ts = max(self._last_ts or out[-1].timestamp, out[-1].timestamp)
        self._batch = out
        return out

    def rollback(self, processed: int) -> None:
        if processed < len(self._batch):
            done = self._batch[:processed]
            self._offset = done[-1].offset + 1 if done else self._batch[0].offset
            if done:
                self._last_ts = done[-1].timestamp

    def state(self) -> dict[str, Any]:
        return {f"{self.topic}:0": [self._offset, self._last_ts]}

    def lag(self) -> dict[str, int]:
        """Always 0: records are generated on demand, none is ever waiting."""
        return {f"{self.topic}:0": 0}

    def commit(self, state: dict[str, Any] | None = None) -> None:
        pass

    def close(self) -> None:
        pass


class MemorySink:
    """Writes JSON values (alerts, requests) to a topic of a :class:`MemoryBroker` (or a list)."""

    def __init__(self, broker: MemoryBroker, topic: str) -> None:
        self.broker = broker
        self.topic = topic
        broker.create_topic(topic)

    def send(self, value: dict[str, Any], key: str | None = None) -> None:
        k = key if key is not None else value.get("arm")
        self.broker.produce(self.topic, k, json.dumps(value, separators=(",", ":")))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class MemoryDeadLetterSink:
    """Copies refused records to a topic with ``reason``/``detail``/``source`` headers."""

    def __init__(self, broker: MemoryBroker, topic: str) -> None:
        self.broker = broker
        self.topic = topic
        broker.create_topic(topic)

    def send(self, record: Any, reason: str, detail: str) -> None:
        headers = [("reason", reason.encode()), ("detail", detail[:1000].encode("utf-8", "replace")),
                   ("source", f"{record.topic}:{record.partition}:{record.offset}".encode())]
        self.broker.produce(self.topic, record_key(record), record.value, headers=headers, timestamp=record.timestamp)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

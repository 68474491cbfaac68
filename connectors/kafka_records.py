"""Kafka record batches parsed in one pass: kafka-python's record reading, two to three times cheaper.

Why (issue 15): profiled (cProfile, 300k records, 20 keys, one partition), a bare kafka-python loop
spends ~2.6 us of its ~3.7 us a record in kafka-python's pure-Python record reading: a generator per
partition that, for each record, decodes seven varints through a function call each, builds a
``DefaultRecord``, reads a dozen properties of it and of its batch, and builds the ``ConsumerRecord``
(``kafka/consumer/fetcher.py`` ``_unpack_records``, ``kafka/record/default_records.py`` ``_read_msg``).
The daemon reads through the same consumer, so this was the larger part of what it spent on a record.

What: :class:`OnePassPartitionRecords` replaces ``Fetcher.PartitionRecords`` on one consumer (never
globally: :func:`install`). It keeps kafka-python's batch-level logic line for line (CRC check of every
batch, leader epoch, aborted transactions under ``read_committed``, control batches skipped, the
position after the last batch) and changes only how the records of a v2 batch become
``ConsumerRecord``\\ s: :func:`parse_batch` reads them all in one loop with the one-byte varints
inline, and ``take`` hands out slices of the parsed list instead of pulling a generator record by
record. The records are equal, field for field, to kafka-python's (``ConsumerRecord`` tuples, a fresh
``headers`` list each, headers parsed as kafka-python parses them). Anything :func:`parse_batch` does
not expect -- record attributes, a size that does not add up, a header key that is not UTF-8, a legacy
(v0/v1) batch -- goes through kafka-python's own per-record loop for that batch, so its errors
(``CorruptRecordError``) and its records are kafka-python's.

Measured (``python benchmarks/kafka_throughput.py``, which prints both bare loops): the record reading
drops from ~2.6 to ~0.85 us a record. The fast path relies on kafka-python's internals
(``Fetcher.PartitionRecords``, ``DefaultRecordBatch._buffer``/``_pos``/``_header_data``); :func:`install`
checks them on a batch it builds, once, and if anything differs it logs a warning and leaves the consumer
on kafka-python's reader.

>>> from kafka.record.default_records import DefaultRecordBatchBuilder, DefaultRecordBatch
>>> b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
...                               producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
>>> for i in range(3):
...     _ = b.append(i, timestamp=1000 + i, key=b"k%d" % i, value=b'{"reward": 1}', headers=[])
>>> recs, size = parse_batch(DefaultRecordBatch(bytes(b.build())), "t", 0, -1)
>>> [(r.offset, r.timestamp, r.key) for r in recs]
[(0, 1000, b'k0'), (1, 1001, b'k1'), (2, 1002, b'k2')]
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import kafka.errors as Errors
from kafka.consumer.fetcher import ConsumerRecord, Fetcher
from kafka.protocol.consumer import IsolationLevel
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.structs import TopicPartition

log = logging.getLogger("streamarms.kafka")

_new = tuple.__new__  # ConsumerRecord is a namedtuple: build it without its Python-level __new__


def _varint(b: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos`` of any length: (value, next position); the rare case of :func:`parse_batch`."""
    result, shift = 0, 0
    while True:
        c = b[pos]
        pos += 1
        result |= (c & 0x7F) << shift
        if not c & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift >= 64:
            raise ValueError("varint out of int64 range")


def parse_batch(batch: DefaultRecordBatch, topic: str, partition: int,
                leader_epoch: int) -> tuple[list[Any], int] | None:
    """Every record of a (decompressed) v2 ``batch`` as kafka-python's ``ConsumerRecord``, and the sum of
    their sizes (kafka-python's ``bytes_read``); ``None`` when the batch holds anything unexpected (record
    attributes, sizes that do not add up, a header key that is not UTF-8): the caller then reads it with
    kafka-python's own loop, which raises its own errors."""
    h = batch._header_data
    base, first_ts, max_ts, n = h[0], h[7], h[8], h[12]
    log_append = bool(h[5] & DefaultRecordBatch.TIMESTAMP_TYPE_MASK)
    ts_type = 1 if log_append else 0
    b = bytes(batch._buffer)
    pos = batch._pos
    out: list[Any] = []
    app = out.append
    size = 0
    varint, new, record = _varint, _new, ConsumerRecord
    try:
        for _ in range(n):
            # (the varints are decoded inline, one or two bytes -- most records -- on purpose: a function
            # call per varint was most of the cost of kafka-python's reader; longer ones call varint)
            v = b[pos]  # Length
            if v < 0x80:
                length, pos = (v >> 1) ^ -(v & 1), pos + 1
            elif b[pos + 1] < 0x80:
                v = (v & 0x7F) | (b[pos + 1] << 7)
                length, pos = (v >> 1) ^ -(v & 1), pos + 2
            else:
                length, pos = varint(b, pos)
            start = pos
            size += length
            if b[pos]:  # Attributes: unused (0) in every format so far
                return None
            v = b[pos + 1]  # TimestampDelta
            if v < 0x80:
                ts, pos = (v >> 1) ^ -(v & 1), pos + 2
            elif b[pos + 2] < 0x80:
                v = (v & 0x7F) | (b[pos + 2] << 7)
                ts, pos = (v >> 1) ^ -(v & 1), pos + 3
            else:
                ts, pos = varint(b, pos + 1)
            v = b[pos]  # OffsetDelta
            if v < 0x80:
                od, pos = (v >> 1) ^ -(v & 1), pos + 1
            elif b[pos + 1] < 0x80:
                v = (v & 0x7F) | (b[pos + 1] << 7)
                od, pos = (v >> 1) ^ -(v & 1), pos + 2
            else:
                od, pos = varint(b, pos)
            v = b[pos]  # Key
            if v < 0x80:
                kl, pos = (v >> 1) ^ -(v & 1), pos + 1
            else:
                kl, pos = varint(b, pos)
            if kl >= 0:
                key: bytes | None = b[pos:pos + kl]
                pos += kl
            else:
                key = None
            v = b[pos]  # Value
            if v < 0x80:
                vl, pos = (v >> 1) ^ -(v & 1), pos + 1
            else:
                vl, pos = varint(b, pos)
            if vl >= 0:
                value: bytes | None = b[pos:pos + vl]
                pos += vl
            else:
                value = None
            headers: list[tuple[str, bytes | None]] = []
            hsize = -1
            if b[pos]:  # Headers: [HeaderKey (string) HeaderValue (nullable bytes)]
                hc, pos = varint(b, pos)
                if hc < 0:
                    return None
                hsize = 0
                for _ in range(hc):
                    hl, pos = varint(b, pos)
                    if hl < 0:
                        return None
                    hk = b[pos:pos + hl].decode("utf-8")  # (not UTF-8: ValueError, kafka-python's loop)
                    pos += hl
                    hl2, pos = varint(b, pos)
                    if hl2 >= 0:
                        hv: bytes | None = b[pos:pos + hl2]
                        pos += hl2
                        hsize += hl + hl2
                    else:
                        hv = None
                        hsize += hl
                    headers.append((hk, hv))
            else:
                pos += 1
            if pos - start != length:  # the record's size adds up
                return None
            app(new(record, (topic, partition, leader_epoch, base + od, max_ts if log_append else first_ts + ts,
                             ts_type, key, value, headers, None, kl if kl >= 0 else -1, vl if vl >= 0 else -1,
                             hsize)))
    except (IndexError, ValueError):  # truncated or malformed: kafka-python's loop says what is wrong
        return None
    if pos != len(b):  # (bytes after the last record; a slice cut short by the end raised IndexError above)
        return None
    return out, size


class OnePassPartitionRecords(Fetcher.PartitionRecords):
    """``Fetcher.PartitionRecords`` that parses a batch at a time (:func:`parse_batch`) and takes slices.

    Installed on one consumer by :func:`install`; the module docstring says what is kept and what changes.

    >>> OnePassPartitionRecords.__mro__[1] is Fetcher.PartitionRecords
    True
    """

    def __init__(self, fetch_offset: int, tp: Any, records: Any, *args: Any, **kw: Any) -> None:
        super().__init__(fetch_offset, tp, records, *args, **kw)
        self._pending: list[Any] = []
        self._at = 0
        self._skipping = True  # kafka-python's dropwhile: the records before fetch_offset in the first batch
        self.record_iterator = self._batches(tp, records)

    def _batches(self, tp: Any, records: Any) -> Any:
        """The records of each batch as one list: kafka-python's ``_unpack_records``, a batch at a time."""
        try:
            batch = records.next_batch()
            last_batch = None
            while batch is not None:
                last_batch = batch
                if self.check_crcs and not batch.validate_crc():
                    raise Errors.CorruptRecordError(
                        f"Record batch for partition {self.topic_partition} at offset {batch.base_offset} "
                        "failed crc check")
                parsed = None
                if batch.magic == 2:
                    self.leader_epoch = batch.leader_epoch
                    if self.isolation_level == IsolationLevel.READ_COMMITTED and batch.has_producer_id():
                        self._consume_aborted_transactions_up_to(batch.last_offset)
                        producer_id = batch.producer_id
                        if self._contains_abort_marker(batch):
                            self.aborted_producer_ids.discard(producer_id)
                        elif self._is_batch_aborted(batch):
                            self.next_fetch_offset = batch.next_offset
                            batch = records.next_batch()
                            continue
                    if batch.is_control_batch:
                        self.next_fetch_offset = batch.next_offset
                        batch = records.next_batch()
                        continue
                    batch._maybe_uncompress()
                    parsed = parse_batch(batch, tp.topic, tp.partition, self.leader_epoch)
                failure = None
                if parsed is not None:
                    recs, size = parsed
                    self.records_read += len(recs)
                    self.bytes_read += size
                else:
                    recs = []
                    try:
                        for record in batch:
                            recs.append(self._record(tp, record))
                    except Exception as e:  # kafka-python's error; the records before it are handed out first
                        failure = e
                if self._skipping:
                    recs = self._skip(recs)
                if recs:
                    yield recs
                if failure is not None:
                    raise failure
                batch = records.next_batch()
            if last_batch and last_batch.magic == 2:
                self.next_fetch_offset = last_batch.next_offset
            self.drain()
        except StopIteration as e:  # as kafka-python: a StopIteration must not end the generator silently
            log.exception("StopIteration raised unpacking messageset")
            raise RuntimeError("StopIteration raised unpacking messageset") from e

    def _record(self, tp: Any, record: Any) -> Any:
        """kafka-python's record -> ``ConsumerRecord``, as its ``_unpack_records`` does it."""
        if self.check_crcs and not record.validate_crc():
            raise Errors.CorruptRecordError(
                f"Record for partition {self.topic_partition} at offset {record.offset} failed crc check")
        headers = record.headers
        header_size = sum(len(k.encode("utf-8")) + (len(v) if v is not None else 0) for k, v in headers) \
            if headers else -1
        self.records_read += 1
        self.bytes_read += record.size_in_bytes
        return ConsumerRecord(tp.topic, tp.partition, self.leader_epoch, record.offset, record.timestamp,
                              record.timestamp_type, record.key, record.value, headers, record.checksum,
                              len(record.key) if record.key is not None else -1,
                              len(record.value) if record.value is not None else -1, header_size)

    def _skip(self, recs: list[Any]) -> list[Any]:
        """Drops the records before ``fetch_offset`` up to the first one at or after it (a fetch from the
        middle of a compressed batch returns the whole batch), as kafka-python's ``dropwhile`` does."""
        for i, r in enumerate(recs):
            if r.offset >= self.fetch_offset:
                self._skipping = False
                return recs[i:] if i else recs
        return []

    def take(self, n: int | None = None) -> list[Any]:
        """Up to ``n`` records (all with ``None``); ``next_fetch_offset`` follows the last one taken."""
        self._maybe_raise_next_inline_exception()
        want = sys.maxsize if n is None else n
        out: list[Any] = []
        pending, at = self._pending, self._at
        try:
            while len(out) < want:
                if at >= len(pending):
                    it = self.record_iterator
                    nxt = None if it is None else next(it, None)
                    if nxt is None:
                        break
                    pending, at = nxt, 0
                    continue
                end = min(len(pending), at + want - len(out))
                out.extend(pending[at:end] if at or end < len(pending) else pending)
                at = end
                self.next_fetch_offset = out[-1].offset + 1
        except Exception as e:
            if not out:
                raise
            self._next_inline_exception = e  # raised by the next take, as kafka-python does
        finally:
            self._pending, self._at = pending, at
        return out

    def drain(self) -> None:
        self._pending, self._at = [], 0
        super().drain()


_checked: bool | None = None


def _self_check() -> bool:
    """Whether the one-pass reader reads a fetch it builds exactly as kafka-python's own reader does
    (records, position, counters): the fast path relies on kafka-python's internals. Once per process."""
    global _checked
    if _checked is None:
        try:
            b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                          producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
            for i in range(300):
                b.append(i, timestamp=1_700_000_000_000 + 37 * i, key=None if i % 7 == 0 else b"k%d" % i,
                         value=None if i % 11 == 0 else b"v" * (i % 150), headers=[])
            buf = bytes(b.build())
            tp = TopicPartition("t", 3)
            readers = [cls(5, tp, MemoryRecords(buf)) for cls in (Fetcher.PartitionRecords, OnePassPartitionRecords)]
            seen = [[r.take(n) for n in (1, 100, 1000)] + [bool(r), r.next_fetch_offset, r.records_read, r.bytes_read]
                    for r in readers]
            _checked = seen[0] == seen[1] and len(seen[1][2]) == 194 and parse_batch(DefaultRecordBatch(buf), "t", 3, 0) is not None
        except Exception:  # noqa: BLE001 -- any difference in kafka-python's internals: keep its reader
            _checked = False
        if not _checked:
            log.warning("kafka-python's record batches are not what streamarms' one-pass reader expects "
                        "(kafka-python %s): reading records with kafka-python's own (slower) loop",
                        getattr(sys.modules.get("kafka"), "__version__", "?"))
    return _checked


def install(consumer: Any) -> bool:
    """Make ``consumer`` (a ``KafkaConsumer``) read its fetched records with :class:`OnePassPartitionRecords`;
    ``False`` (and the consumer unchanged) when its config asks for deserializers or kafka-python's
    internals differ from what the one-pass reader expects."""
    fetcher = getattr(consumer, "_fetcher", None)
    if fetcher is None or not isinstance(getattr(fetcher, "config", None), dict):
        return False
    if fetcher.config.get("key_deserializer") is not None or fetcher.config.get("value_deserializer") is not None:
        return False
    if not _self_check():
        return False
    fetcher.PartitionRecords = OnePassPartitionRecords  # this consumer only (an instance attribute)
    return True

"""The one-pass record reader (connectors/kafka_records.py) against kafka-python's own, on batches built here.

Both readers are ``Fetcher.PartitionRecords``; the same fetched bytes go through each and every ``take``
must return the same records and leave the same ``next_fetch_offset``; the counters (records and bytes
read) must agree once a fetch is drained, and a corrupt fetch must fail the same way. No broker: the
broker-backed tests in this directory run every daemon through the one-pass reader.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kafka.consumer.fetcher import Fetcher
from kafka.errors import CorruptRecordError
from kafka.record import MemoryRecords, MemoryRecordsBuilder
from kafka.structs import TopicPartition

from streamarms.connectors.kafka_records import OnePassPartitionRecords, _self_check, install, parse_batch

TP = TopicPartition("t", 2)


def batch(base: int, n: int, *, compression: int = 0, magic: int = 2, headers: bool = False,
          long_values: bool = False, nulls: bool = False, ts_step: int = 1, skip: int = 0) -> bytes:
    """One record batch of ``n`` records from offset ``base`` (``skip``: offsets left out after the first,
    as compaction leaves them)."""
    b = MemoryRecordsBuilder(magic, compression, batch_size=1 << 22, offset=0)
    for i in range(n):
        if i == 1 and skip:
            b.skip(skip)
        key = None if nulls and i % 3 == 0 else b"key-%d" % (i % 17)
        value = None if nulls and i % 5 == 1 else (b"x" * (i * 37 % 9000) if long_values else b'{"reward": %d}' % (i % 2))
        b.append(timestamp=1_700_000_000_000 + ts_step * i - (5 if i % 4 == 3 else 0), key=key, value=value,
                 headers=[("h", b"1"), ("trace", None)] if headers and i % 2 else [])
    b.close()
    buf = bytearray(b.buffer())
    if magic == 2:
        struct.pack_into(">q", buf, 0, base)  # the base offset (the broker's; outside the CRC)
    return bytes(buf)


def fetch(*batches: bytes) -> bytes:
    return b"".join(batches)


def readers(data: bytes, fetch_offset: int) -> tuple[Any, Any]:
    ref = Fetcher.PartitionRecords(fetch_offset, TP, MemoryRecords(data))
    new = OnePassPartitionRecords(fetch_offset, TP, MemoryRecords(data))
    return ref, new


def same(data: bytes, fetch_offset: int, takes: list[int | None]) -> list[Any]:
    ref, new = readers(data, fetch_offset)
    got: list[Any] = []
    for n in takes:
        if not ref:  # drained: the fetcher takes no more (kafka-python's take would fail)
            assert not new
            break
        a, b = ref.take(n), new.take(n)
        assert a == b
        assert [type(r) for r in a] == [type(r) for r in b]
        assert ref.next_fetch_offset == new.next_fetch_offset
        assert bool(ref) == bool(new)
        got += b
    while ref:  # drained the way the fetcher drains: one more take after the last record
        assert ref.take(1000) == new.take(1000)
    assert not new
    assert (ref.records_read, ref.bytes_read, ref.next_fetch_offset, ref.leader_epoch) == \
        (new.records_read, new.bytes_read, new.next_fetch_offset, new.leader_epoch)
    return got


SHAPES = {
    "plain": fetch(batch(0, 500), batch(500, 700), batch(1200, 3)),
    "gzip": fetch(batch(0, 400, compression=1), batch(400, 400, compression=1)),
    "null keys and values": fetch(batch(10, 300, nulls=True)),
    "long values (multi-byte varints)": fetch(batch(0, 120, long_values=True)),
    "large timestamp deltas": fetch(batch(0, 200, ts_step=10_000_019)),
    "headers": fetch(batch(0, 50), batch(50, 50, headers=True), batch(100, 50)),
    "compacted gaps": fetch(batch(0, 40, skip=100_000), batch(100_040, 10)),
    "legacy v1 batch": fetch(batch(0, 30, magic=1)),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("takes", [[None], [1000, 1000], [1, 7, 499, 1, 1000], [3] * 20 + [None]])
def test_takes_equal_kafka_pythons(shape: str, takes: list[int | None]) -> None:
    got = same(SHAPES[shape], 0, takes)
    assert got  # (something was read)


def test_a_fetch_from_the_middle_of_a_batch_skips_the_records_before_it() -> None:
    data = fetch(batch(0, 500, compression=1), batch(500, 100))
    got = same(data, 321, [100, None])
    assert got[0].offset == 321 and len(got) == 279


def test_a_fetch_past_every_record_returns_none_and_moves_to_the_batch_end() -> None:
    assert same(fetch(batch(0, 50)), 60, [None]) == []


def test_the_self_check_passes_and_install_is_per_consumer() -> None:
    assert _self_check()

    class Consumer:  # just what install reads: a fetcher with a config
        def __init__(self, **config: Any) -> None:
            self._fetcher = type("F", (), {"config": {"key_deserializer": None, "value_deserializer": None, **config}})()

    c, other = Consumer(), Consumer(value_deserializer=lambda b: b)
    assert install(c) and c._fetcher.PartitionRecords is OnePassPartitionRecords
    assert not install(other) and "PartitionRecords" not in vars(other._fetcher)
    assert Fetcher.PartitionRecords is not OnePassPartitionRecords  # never the class itself


def test_a_corrupt_batch_fails_as_kafka_pythons_after_the_records_before_it() -> None:
    good, bad = batch(0, 100), bytearray(batch(100, 100))
    bad[-3] ^= 0xFF  # a byte of the last record: the batch CRC no longer matches
    ref, new = readers(fetch(good, bytes(bad)), 0)
    assert ref.take(1000) == new.take(1000)  # the good batch's records first
    with pytest.raises(CorruptRecordError, match="crc"):
        ref.take(1000)
    with pytest.raises(CorruptRecordError, match="crc"):
        new.take(1000)


def test_a_truncated_record_is_kafka_pythons_error() -> None:
    """CRC checks off (a consumer may turn them off): a record whose length does not add up goes to
    kafka-python's loop, which names the problem."""
    data = bytearray(batch(0, 20))
    data[61] ^= 0x02  # the first record's length varint (after the 61-byte batch header)
    errors = []
    for cls in (Fetcher.PartitionRecords, OnePassPartitionRecords):
        r = cls(0, TP, MemoryRecords(bytes(data)), check_crcs=False)
        with pytest.raises(CorruptRecordError) as e:
            r.take(100)
        errors.append(str(e.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("shape", ["plain", "gzip", "null keys and values", "long values (multi-byte varints)",
                                   "large timestamp deltas", "compacted gaps", "headers"])
def test_plain_batches_take_the_one_pass_path(shape: str) -> None:
    """(Else the comparisons above would compare kafka-python's loop with itself.)"""
    records = MemoryRecords(SHAPES[shape])
    while (b := records.next_batch()) is not None:
        b._maybe_uncompress()
        assert parse_batch(b, "t", 2, 0) is not None


def test_a_header_key_that_is_not_utf8_takes_kafka_pythons_loop_and_error() -> None:
    b = MemoryRecordsBuilder(2, 0, batch_size=1 << 20, offset=0)
    b.append(timestamp=1_700_000_000_000, key=b"k", value=b"v", headers=[("h\u00e9", b"1")])
    b.close()
    data = bytearray(b.buffer())
    at = bytes(data).index("h\u00e9".encode())
    data[at + 1] = 0xFF  # the key's second byte: no longer UTF-8 (the CRC checks are turned off below)
    assert parse_batch(MemoryRecords(bytes(data)).next_batch(), "t", 2, 0) is None
    errors = []
    for cls in (Fetcher.PartitionRecords, OnePassPartitionRecords):
        with pytest.raises(CorruptRecordError) as e:
            cls(0, TP, MemoryRecords(bytes(data)), check_crcs=False).take(10)
        errors.append(str(e.value))
    assert errors[0] == errors[1]


def test_internals_that_differ_keep_kafka_pythons_reader(monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    """A kafka-python whose batches the one-pass reader misreads (here: a parser that loses records) fails
    the self-check: a warning, and the consumer keeps kafka-python's own reader."""
    from streamarms.connectors import kafka_records

    monkeypatch.setattr(kafka_records, "_checked", None)
    monkeypatch.setattr(kafka_records, "parse_batch", lambda *a: ([], 0))

    class Consumer:
        _fetcher = type("F", (), {"config": {"key_deserializer": None, "value_deserializer": None}})()

    with caplog.at_level("WARNING", logger="streamarms.kafka"):
        assert not install(Consumer())
    assert "PartitionRecords" not in vars(Consumer._fetcher)
    assert "own (slower) loop" in caplog.text

"""Checks of a Kafka source's resumed positions: is each still a place in the same log?

Functions on a :class:`~streamarms.connectors.kafka.KafkaRewardSource` (its methods of the same names
with a leading underscore; the rules are in that module's docstring, "Out-of-range positions" and
"Replaced partitions"): a position before a partition's start or beyond its end, and a partition whose
record before the position is not the one the checkpoint saw (:func:`record_fingerprint`), are replaced
by the source's ``on_out_of_range`` rule, with a warning and a count.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import kafka.errors as kafka_errors
from kafka import TopicPartition
from kafka.errors import KafkaError

from .ordering import parse_tp, tp_name

__all__ = ["OffsetsOutOfRange", "OUT_OF_RANGE_RULES", "record_fingerprint", "transient"]

log = logging.getLogger("streamarms.kafka")


class OffsetsOutOfRange(RuntimeError):
    """A checkpointed position is outside its partition and the rule is ``"fail"``."""


#: what to do with a position outside its partition (module docstring)
OUT_OF_RANGE_RULES = ("earliest", "latest", "fail")


_TRANSIENT = tuple(getattr(kafka_errors, n) for n in (
    "KafkaConnectionError", "NoBrokersAvailable", "KafkaTimeoutError", "IllegalStateError", "NodeNotReadyError",
    "RequestTimedOutError", "BrokerNotAvailableError", "MetadataEmptyBrokerList") if hasattr(kafka_errors, n))


def transient(e: BaseException) -> bool:
    """A client error an outage explains (ride it out) rather than a configuration error (stop)."""
    return isinstance(e, _TRANSIENT) or bool(getattr(e, "retriable", False))


def record_fingerprint(rec: Any) -> list[Any]:
    """``[offset, timestamp, hash]`` of a consumed record: the checkpoint keeps it for the last record of
    each partition, and a restart reads that record again to check that the partition is the same log
    (module docstring). The hash is a BLAKE2b-64 of the length-prefixed key and value (``None`` and
    empty differ).

    >>> from collections import namedtuple
    >>> R = namedtuple("R", "offset timestamp key value")
    >>> record_fingerprint(R(41, 1700000000000, b"region-03", b'{"reward": 1}'))
    [41, 1700000000000, 'b172c9d5f02d4ba0']
    >>> record_fingerprint(R(41, 1700000000000, None, b"")) == record_fingerprint(R(41, 1700000000000, b"", None))
    False
    """
    h = hashlib.blake2b(digest_size=8)
    for part in (rec.key, rec.value):
        if part is None:
            h.update(b"\x00")
        else:
            h.update(b"\x01" + len(part).to_bytes(8, "big"))
            h.update(part)
    return [int(rec.offset), rec.timestamp, h.hexdigest()]


def out_of_range(src: Any, tp: tuple[str, int], off: int, lo: int | None, why: str, hi: int | None = None,
                 what: str | None = None) -> None:
    """``tp``'s position ``off`` cannot be resumed: read from the rule's offset, with a warning saying ``what`` (by
    default: the position is outside the partition) and ``why``."""
    rule = src.on_out_of_range
    what = what or f"the position {off} is outside the partition"
    msg = (f"{tp_name(tp)}: {what} ({why}) -- the topic was recreated, its records expired, or the checkpoint comes "
           "from another cluster")
    if rule == "fail":
        src._fatal = OffsetsOutOfRange(f"{msg}; --on-out-of-range fail: stopping")
        return
    ktp = TopicPartition(*tp)
    try:
        if rule == "latest":
            new = hi if hi is not None else src.consumer.end_offsets([ktp], timeout_ms=5000)[ktp]
        elif lo is None:
            new = src.consumer.beginning_offsets([ktp], timeout_ms=5000)[ktp]
        else:
            new = lo
    except KafkaError:
        new = lo if lo is not None else 0
    log.warning("%s; rule --on-out-of-range %s: reading from offset %d", msg, rule, new)
    src.merger.reset_position(tp, new)
    src._resume.pop(tp_name(tp), None)  # its fingerprint names a record of the old log
    src._fp_pending.pop(ktp, None)
    src.out_of_range_resets += 1
    try:
        src.consumer.seek(ktp, new)
    except (KafkaError, AssertionError, ValueError):  # not assigned (yet): the next assignment seeks
        pass


def verify_positions(src: Any, got: dict[Any, list[Any]]) -> None:
    """Positions resumed at the last assignment vs the partitions' first and end offsets; the
    records of a partition found out of range are dropped (read again from the rule's offset)."""
    tps = list(src._verify)
    try:
        lo = src.consumer.beginning_offsets(tps, timeout_ms=5000)
    except KafkaError as e:
        if not transient(e):
            raise
        log.warning("cannot check the resumed positions against the partitions' bounds yet: %s", e)
        got.clear()  # nothing is handled before the check (the records are fetched again)
        for tp, off in src._verify.items():
            try:
                src.consumer.seek(tp, off)
            except (KafkaError, AssertionError, ValueError):
                pass
        return
    verify, src._verify = src._verify, {}
    verify_fp, src._verify_fp = src._verify_fp, {}
    for tp, off in verify.items():
        if tp in lo and off < lo[tp]:
            src._out_of_range((tp.topic, tp.partition), off, lo[tp], f"it starts at {lo[tp]}")
            got.pop(tp, None)
        elif tp in verify_fp and tp in lo and off - 1 >= lo[tp]:
            # read the last consumed record again: _check_fingerprints compares it, then drops it
            try:
                src.consumer.seek(tp, off - 1)
            except (KafkaError, AssertionError, ValueError):  # revoked meanwhile: the next assignment checks
                continue
            got.pop(tp, None)
            src._fp_pending[tp] = verify_fp[tp]


def check_fingerprints(src: Any, got: dict[Any, list[Any]]) -> None:
    """The record before a resumed position, fetched again: the one the checkpoint saw, or a
    replaced partition (``on_out_of_range``)? Either way it is dropped (it was counted already)."""
    for ktp, fp in list(src._fp_pending.items()):
        recs = got.get(ktp)
        if not recs:
            continue
        del src._fp_pending[ktp]
        first = recs[0]
        if first.offset != fp[0]:
            # above: the record is gone (compacted away, a transaction marker): nothing to compare;
            # below: the broker rewound the consumer (a position beyond the end): _rewound's case
            if first.offset > fp[0]:
                log.debug("%s:%d: the record at offset %d cannot be read again; position kept",
                          ktp.topic, ktp.partition, fp[0])
            continue
        if len(recs) > 1:
            got[ktp] = recs[1:]
        else:
            del got[ktp]
        now = record_fingerprint(first)
        if now != list(fp):
            src.fingerprint_mismatches += 1
            got.pop(ktp, None)
            differ = [f"{name} {a} here, {b} in the checkpoint" for name, a, b in
                      (("timestamp", now[1], fp[1]), ("hash", now[2], fp[2])) if a != b]
            src._out_of_range((ktp.topic, ktp.partition), fp[0] + 1, None, "; ".join(differ),
                              what=f"the record at offset {fp[0]}, the last the checkpoint read, is another")


def rewound(src: Any, got: dict[Any, list[Any]]) -> None:
    """A position beyond a partition's end makes the broker answer OFFSET_OUT_OF_RANGE, and
    kafka-python silently moves the fetch position (``auto_offset_reset``) *below* ours: its
    records would all be dropped as already read -- a silent stall. Delivered records that lie
    wholly below our position are that signal (our own seeks never go backwards of it)."""
    for ktp in list(got):
        recs = got[ktp]
        b = src.merger._bufs.get((ktp.topic, ktp.partition))
        if not recs or b is None or b.last_fetched is None or recs[-1].offset > b.last_fetched:
            continue
        src._out_of_range((ktp.topic, ktp.partition), b.last_fetched + 1, None,
                           f"the broker rewound the consumer to offset {recs[0].offset}")
        del got[ktp]


def fingerprint(src: Any, tp: tuple[str, int], off: int) -> list[Any] | None:
    """The fingerprint of the record at ``off - 1`` of ``tp``: read in this process, or carried from
    the checkpoint (a resumed partition that has delivered nothing since); ``None`` if unknown."""
    rec = src.merger.last_released(tp)
    if rec is not None and rec.offset == off - 1:
        return record_fingerprint(rec)
    old = src._resume.get(tp_name(tp))
    if old is not None and len(old) > 2 and isinstance(old[2], list) and len(old[2]) == 3 and old[2][0] == off - 1:
        return list(old[2])
    return None


def positions(src: Any) -> dict[str, list[Any]]:
    """The merger's ``{"topic:partition": [next_offset, runmax]}`` plus the last record's fingerprint."""
    out: dict[str, list[Any]] = {}
    for name, (off, runmax) in src.merger.state().items():
        entry: list[Any] = [off, runmax]
        fp = None if off is None else src._fingerprint(parse_tp(name), off)
        if fp is not None:
            entry.append(fp)
        out[name] = entry
    return out

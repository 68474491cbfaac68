"""Record timestamps the stream clock can trust (Kafka's, a file's lines'): :func:`screen_timestamps`, and
:class:`TimestampScreen`, a source's screen with its count and warning.

Why: a Kafka record's timestamp is its producer's (``CreateTime``) unless the topic is configured
``LogAppendTime``, and a producer with a wrong clock or a bug can send any 64-bit number. The daemon's
stream clock (:class:`~streamarms.runtime.clock.EventClock`) only moves forward, so a single record
stamped in the year 2500 would end the discovery window at once, fire every time deadline of every
later episode, and be written into the checkpoint: a silent change of state no restart undoes. Kafka
itself refuses such records only from 4.0 on, and only by default (``log.message.timestamp.after.max.ms``
= 1 hour, KIP-1030); older brokers, and topics configured otherwise, pass them through.

The rule (the same as Kafka 4.0's default, applied on the consumer's side):

* ``-1`` is Kafka's ``NO_TIMESTAMP``: the record is used, without a timestamp (stream time is the
  clock's, as for a JSONL line without one);
* any other negative timestamp, or one more than ``ahead`` ms after this machine's clock, refuses the
  record as ``bad_timestamp``: it goes to the dead-letter sink with the reason, its offset is consumed
  like any refused record's, and the stream clock does not move.

A file's lines (:class:`~streamarms.connectors.files.JsonlSource`: ``streamarms run --rewards-file``) are screened
by the same rule: a line stamped by a host with a wrong clock, or typed with the wrong year, would otherwise move the
stream clock to its time for good (a replay's later episodes never start: ``episode_interval`` after the last one
is never reached). A file's line has no ``-1`` and no negative time (its time was read as one, or refused:
:mod:`~streamarms.connectors.line_time`).

The records the source keeps (for its checkpoint's fingerprints and for a rollback) are not changed:
a refused record is a copy whose key is a :class:`~streamarms.runtime.records.RefusedKey` (the codec
refuses it with this reason; the dead letter carries the key as read) and whose timestamp is ``None``.
A batch with nothing to refuse is returned as it is, after one C-speed ``min``/``max`` over its
timestamps (the daemon's hot path pays no per-record Python work for it).

>>> from collections import namedtuple
>>> R = namedtuple("R", "topic partition offset timestamp key value headers")
>>> now = 1_800_000_000_000
>>> recs = [R("t", 0, 0, now - 5, b"eu", b"{}", []), R("t", 0, 1, -1, b"us", b"{}", []),
...         R("t", 0, 2, now + 86_400_000, b"eu", b"{}", [])]
>>> out = screen_timestamps(recs, now, ahead_ms=3_600_000)
>>> [(r.offset, r.timestamp) for r in out]
[(0, 1799999999995), (1, None), (2, None)]
>>> out[2].key.reason, out[2].key.raw
('bad_timestamp', b'eu')
>>> print(out[2].key.detail)
timestamp 1800086400000 ms is 24.0 h after this machine's clock (records may be at most 1.0 h ahead: --max-timestamp-ahead)
>>> fine = recs[:1]
>>> screen_timestamps(fine, now, ahead_ms=3_600_000) is fine  # nothing to refuse: the batch itself
True
"""

from __future__ import annotations

import logging
import operator
import time
from typing import Any

from streamarms.runtime.records import RefusedKey

__all__ = ["NO_TIMESTAMP", "TimestampScreen", "screen_timestamps", "FILE_AHEAD"]

#: Kafka's "this record has no timestamp" (``RecordBatch.NO_TIMESTAMP``)
NO_TIMESTAMP = -1
#: the furthest a zone is ahead of UTC (UTC+14, Kiribati), in ms: a time written without a zone is read as UTC, so
#: a log of local times east of UTC reads as stamped up to this much ahead
ZONE_AHEAD_MS = 14 * 3_600_000
#: how far ahead of this machine's clock a file's line may be stamped unless ``--max-timestamp-ahead`` says (s): a
#: zone's offset and an hour. A Kafka record's time is milliseconds since the epoch (its producer's clock, no zone):
#: its limit stays Kafka's hour; a log's times are often local, written without their zone (syslog, a spreadsheet's
#: dates, an application's ``2026-12-01 08:00:00``), and with an hour's limit every line of today's log written in
#: Berlin or Tokyo was refused. A year typed wrong, a host's clock years off, is refused still.
FILE_AHEAD = (ZONE_AHEAD_MS + 3_600_000) / 1000

_stamp = operator.attrgetter("timestamp")


def _hours(ms: float) -> str:
    return f"{ms / 3_600_000:.1f} h"


def screen_timestamps(records: list[Any], now_ms: float, ahead_ms: float | None) -> list[Any]:
    """``records`` with those whose timestamp the stream clock cannot take replaced (module docstring);
    ``records`` itself when there are none. ``ahead_ms`` ``None``: no limit on timestamps in the future."""
    if not records:
        return records
    limit = float("inf") if ahead_ms is None else now_ms + ahead_ms
    stamps = list(filter(None, map(_stamp, records)))  # (no timestamp, None: a legacy message format, a line without)
    if not stamps or min(stamps) >= 0 and max(stamps) <= limit:
        return records
    out = list(records)
    for i, r in enumerate(out):
        ts = r.timestamp
        if ts is None or 0 <= ts <= limit:
            continue
        if ts == NO_TIMESTAMP:
            out[i] = r._replace(timestamp=None)
            continue
        if ts < 0:
            detail = f"timestamp {ts} ms is negative (before 1970; -1 is Kafka's 'no timestamp')"
        else:
            detail = (f"timestamp {ts} ms is {_hours(ts - now_ms)} after this machine's clock (records may be "
                      f"at most {_hours(ahead_ms or 0)} ahead: --max-timestamp-ahead)")
            if ts - now_ms <= FILE_AHEAD * 1000:  # (as a zone's offset: local times read as UTC?)
                detail += ("; a time written without its zone is read as UTC, so local times east of UTC read as "
                           f"ahead: --max-timestamp-ahead {FILE_AHEAD:g} lets any zone's through")
        key = r.key
        out[i] = r._replace(timestamp=None, key=RefusedKey.of("bad_timestamp", detail,
                                                               key.raw if type(key) is RefusedKey else key))
    return out


class TimestampScreen:
    """:func:`screen_timestamps` against this machine's clock, for a source: ``ahead`` seconds (``None`` or
    0: no limit), ``refused`` counts the records refused, and a warning (at most once a minute) says that
    records were -- every record refused would mean that this machine's clock, or the broker's
    (``LogAppendTime``), is wrong.

    >>> from collections import namedtuple
    >>> R = namedtuple("R", "topic partition offset timestamp key value headers")
    >>> screen = TimestampScreen(3600)
    >>> out = screen([R("t", 0, 0, time.time() * 1000 + 7.2e6, b"eu", b"{}", [])])  # 2 h ahead
    >>> out[0].key.reason, screen.refused
    ('bad_timestamp', 1)
    """

    def __init__(self, ahead: float | None = 3600.0, logger: str = "streamarms.kafka") -> None:
        if ahead is not None and not ahead >= 0:
            raise ValueError(f"max_timestamp_ahead must be >= 0 seconds (0: no limit), got {ahead!r}")
        self.ahead_ms = ahead * 1000.0 if ahead else None
        self.refused = 0
        self._warned = -60.0
        self._log = logging.getLogger(logger)

    def __call__(self, records: list[Any]) -> list[Any]:
        out = screen_timestamps(records, time.time() * 1000.0, self.ahead_ms)
        if out is not records:
            self._count(out)
        return out

    def _count(self, recs: list[Any]) -> None:
        bad = [r for r in recs if type(r.key) is RefusedKey]
        self.refused += len(bad)
        now = time.monotonic()
        if bad and now - self._warned >= 60.0:
            self._warned = now
            self._log.warning("%d of %d records refused as bad_timestamp (%d so far), e.g. %s:%d@%d: %s. If every "
                              "record is refused, check this machine's clock (or raise --max-timestamp-ahead)",
                              len(bad), len(recs), self.refused, bad[0].topic, bad[0].partition, bad[0].offset,
                              bad[0].key.detail)

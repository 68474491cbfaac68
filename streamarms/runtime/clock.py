"""Stream time: :class:`EventClock`; :func:`iso_ms`, a date-time as milliseconds since the epoch."""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["EventClock", "iso_ms"]

#: the start of an ISO 8601 date-time: a date, then ``T`` or a space and the hour and minute
_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}")


def iso_ms(text: str, strict: bool = True) -> int | None:
    """An ISO 8601 date-time (UTC unless it says otherwise; a trailing ``Z`` is UTC) as milliseconds since
    the epoch, rounded; ``None`` for any other text. ``strict`` (a record's time): only a date, ``T`` or a
    space, and at least the hour and minute; else any form :meth:`datetime.fromisoformat` reads (a date alone
    is its midnight: ``--start-from``).

    >>> iso_ms("2023-11-14T22:13:20Z"), iso_ms("2023-11-14 23:13:20.5+01:00"), iso_ms("2023-11-14")
    (1700000000000, 1700000000500, None)
    >>> iso_ms("2023-11-14", strict=False), iso_ms("20231114T221320Z", strict=False)
    (1699920000000, 1700000000000)
    """
    if strict and not _ISO.match(text):
        return None
    try:
        when = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return round(when.timestamp() * 1000)


class EventClock:
    """Stream time: the largest record timestamp seen so far, in seconds.

    Timestamps only move it forward (records of different partitions interleave), so it is monotone.

    >>> c = EventClock()
    >>> c.advance(5.0); c.advance(3.0); c()
    5.0
    >>> c.advance_ms(7500); c()
    7.5
    """

    __slots__ = ("now",)

    def __init__(self, start: float = 0.0) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, t: float) -> None:
        if t > self.now:
            self.now = t

    def advance_ms(self, ts_ms: int | float) -> None:
        t = ts_ms / 1000.0
        if t > self.now:
            self.now = t

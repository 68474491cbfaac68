"""A JSONL line's time: :class:`LineTime` (``streamarms run --timestamp-field NAME --timestamp-unit ms|s|us|ns``).

By default a line's time is its ``timestamp`` field in milliseconds since the epoch, as a Kafka record's.
Logs name and count it otherwise: ``@timestamp`` (Elastic Common Schema), ``time`` (pino: milliseconds;
bunyan: a date-time), ``ts`` in seconds with a fraction (``1700000000.123``: nginx's ``$msec``, many
tracers), in microseconds or nanoseconds (OpenTelemetry's ``timeUnixNano``, Loki, Go's ``UnixNano``). The
field may be a dotted name (a nested field, :class:`~streamarms.runtime.field_path.FieldPath`);
its value a number in the unit -- also written as text, as journald's ``__REALTIME_TIMESTAMP`` (microseconds),
OpenTelemetry's JSON ``timeUnixNano`` and a table's cells write theirs -- or an ISO 8601 date-time (UTC unless it
says otherwise) whatever the unit.
A time written otherwise (a spreadsheet's ``11/14/2023 10:13 PM``, ``14.11.2023 22:13``) is read by a
:func:`~datetime.datetime.strptime` format (``fmt``: ``--timestamp-format '%m/%d/%Y %I:%M %p'``), UTC unless the
format reads a zone (``%z``); the field's text is then read by the format alone (digits too: ``%Y%m%d%H%M%S``).
Anything else there -- another string, a boolean, ``null``, NaN, a time before 1970 or after the year
9999 -- is no time, and the line is refused (``bad_timestamp``): it would move the stream clock to a time
no stream has, or silently be no timestamp. A line without the field has no time (the clock stays).

>>> LineTime().of({"timestamp": 1700000000123}), LineTime("ts", "s").of({"ts": 1700000000.123})
(1700000000123, 1700000000123)
>>> LineTime("@timestamp").of({"@timestamp": "2023-11-14T22:13:20Z"}), LineTime().of({"arm": "a"})
(1700000000000, None)
>>> LineTime("__REALTIME_TIMESTAMP", "us").of({"__REALTIME_TIMESTAMP": "1700000000123456"})
1700000000123
>>> LineTime("when", fmt="%m/%d/%Y %I:%M %p").of({"when": "11/14/2023 10:13 PM"})
1699999980000
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from streamarms.runtime.clock import iso_ms
from streamarms.runtime.field_path import FieldPath
from streamarms.validation import JSON_NAMES

__all__ = ["LineTime", "MAX_TIMESTAMP_MS", "UNIT_MS", "stamp", "epoch_unit", "as_time", "number_text"]

#: the latest timestamp a line may carry, in ms: 9999-12-31T23:59:59.999Z (what an ISO date can say)
MAX_TIMESTAMP_MS = 253_402_300_799_999


#: each unit's length in ms
UNIT_MS = {"ms": 1, "s": 1000, "us": 0.001, "ns": 0.000001}
_UNIT_NAMES = {"ms": "milliseconds", "s": "seconds", "us": "microseconds", "ns": "nanoseconds"}
#: 2001-01-01 and 2100-01-01 in ms: a number that is a time between them in one unit is in no other (the units
#: are 1000 times apart, the span 4.2 times)
_PLAUSIBLE = (978_307_200_000, 4_102_444_800_000)
_ABSENT: Any = object()
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def number_text(text: str) -> Any:
    """A time written as text (a table's cell, a log's quoted field) as the number it writes (``1700000000123``,
    ``1700000000.5``, ``1.7e9``), else the text (an ISO date-time, or what :func:`stamp` refuses: ``1_000``,
    ``nan``, ...).

    >>> number_text("1700000000123"), number_text(" 1.5e3 "), number_text("1_000"), number_text("inf")
    (1700000000123, 1500.0, '1_000', 'inf')
    """
    t = text.strip()
    if _INTEGER.fullmatch(t):
        return int(t)
    return float(t) if _DECIMAL.fullmatch(t) else text


def epoch_unit(x: float) -> str | None:
    """The unit (``s``, ``ms``, ``us``, ``ns``) in which the number ``x`` is a time since the epoch between 2001 and
    2100, or ``None``.

    >>> [epoch_unit(x) for x in (1700000000.5, 1700000000123, 1700000000123456, 1700000000123456789, 42, 10 ** 400)]
    ['s', 'ms', 'us', 'ns', None, None]
    """
    if not -1e30 < x < 1e30:  # (an integer of hundreds of digits has no float; NaN is no time)
        return None
    for unit, scale in UNIT_MS.items():
        if _PLAUSIBLE[0] <= x * scale <= _PLAUSIBLE[1]:
            return unit
    return None


def as_time(x: float, unit: str) -> str:
    """``x``, a number of ``unit`` since the epoch, as an ISO 8601 UTC time to the second.

    >>> as_time(1700000000123456789, "ns"), as_time(1700000, "s")
    ('2023-11-14T22:13:20Z', '1970-01-20T16:13:20Z')
    """
    return dt.datetime.fromtimestamp(x * UNIT_MS[unit] / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(ts: Any, unit: str = "ms") -> int:
    """A line's time (ms) as an int, or ``ValueError`` saying why it is none (module docstring; never an
    ``OverflowError`` that stops the replay).

    >>> stamp(1700000000123), stamp(1700000000123.9), stamp("2023-11-14T22:13:20.123Z"), stamp(1.5, "s")
    (1700000000123, 1700000000123, 1700000000123, 1500)
    >>> stamp("1700000000123"), stamp(" 1700000000.5 ", "s")  # (a number written as text)
    (1700000000123, 1700000000500)
    >>> stamp(1700000000123456789, "ns"), stamp(1700000000123999, "us")
    (1700000000123, 1700000000123)
    >>> stamp(1700000000123456789)
    Traceback (most recent call last):
    ...
    ValueError: timestamp 1700000000123456789 is not a time in milliseconds from 0 (1970) to 253402300799999 (the year 9999), nor an ISO 8601 date-time (2026-11-25T14:00:00Z); as nanoseconds it is 2023-11-14T22:13:20Z: --timestamp-unit ns
    >>> stamp(1e300)
    Traceback (most recent call last):
    ...
    ValueError: timestamp 1e+300 is not a time in milliseconds from 0 (1970) to 253402300799999 (the year 9999), nor an ISO 8601 date-time (2026-11-25T14:00:00Z)
    """
    t, scale = type(ts), UNIT_MS[unit]
    if t is str and (x := number_text(ts)) is not ts:
        ts, t = x, type(x)
    if (t is int or t is float) and 0 <= ts <= MAX_TIMESTAMP_MS / scale:  # (NaN fails the comparisons)
        if scale < 1:  # (us, ns: the fraction of a ms cut off, as ms cuts its own; integers exactly)
            return int(ts // round(1 / scale))
        return int(ts) if scale == 1 else round(ts * scale)  # (ms: the fraction cut off; s: to the nearest ms)
    if t is str and (ms := iso_ms(ts)) is not None and 0 <= ms <= MAX_TIMESTAMP_MS:
        return ms
    if t is float or (t is int and abs(ts) < 10 ** 30):
        shown = repr(ts)
    elif t is int:
        shown = f"an integer of {len(str(abs(ts)))} digits"
    elif t is str:
        shown = f"{ts[:40]!r} (a string)"
    else:
        shown = json.dumps(ts) if t is bool or ts is None else JSON_NAMES.get(t, t.__name__)
    top = round(MAX_TIMESTAMP_MS / scale) if scale < 1 else MAX_TIMESTAMP_MS // scale
    other = epoch_unit(ts) if t is int or t is float else None
    hint = ""
    if other is not None and other != unit:
        hint = f"; as {_UNIT_NAMES[other]} it is {as_time(ts, other)}: --timestamp-unit {other}"
    raise ValueError(f"timestamp {shown} is not a time in {_UNIT_NAMES[unit]} from 0 (1970) to {top} (the year "
                     f"9999), nor an ISO 8601 date-time (2026-11-25T14:00:00Z){hint}")


class LineTime:
    """Where a line's time is and in what unit (module docstring). :attr:`default` (``timestamp`` in ms):
    the sources' C-level fast paths read it; any other takes the line-by-line path, through :meth:`of`.

    >>> LineTime("time.ms").of({"time": {"ms": 5}}), LineTime("ts", "s").default
    (5, False)
    """

    __slots__ = ("field", "unit", "fmt", "_path", "default", "_last")

    def __init__(self, field: str = "timestamp", unit: str = "ms", fmt: str | None = None) -> None:
        if unit not in UNIT_MS:
            raise ValueError(f"the timestamp unit is ms, s, us or ns, got {unit!r}")
        if fmt is not None and (not fmt or "%" not in fmt):
            raise ValueError(f"a timestamp format is a strptime format with % directives (%m/%d/%Y %H:%M), got {fmt!r}")
        self.field = field
        self.unit = unit
        self.fmt = fmt
        self._path = FieldPath(field)
        self.default = field == "timestamp" and unit == "ms" and fmt is None
        self._last: tuple[str, int] = ("", 0)  # the last text the format read (a log's lines share their second)

    def of(self, obj: dict[str, Any]) -> int | None:
        """The line's time in ms (``None``: the line has no such field); ``ValueError`` for what is no time."""
        ts = self._path.get(obj, _ABSENT)
        if ts is _ABSENT:
            return None
        if self.fmt is not None:
            return self.formatted(ts)
        return ts if type(ts) is int and 0 <= ts <= MAX_TIMESTAMP_MS and self.unit == "ms" else stamp(ts, self.unit)

    def formatted(self, ts: Any) -> int:
        """``ts`` (a text; a number is read as its digits) read by :attr:`fmt`, in ms; ``ValueError`` saying why not.

        >>> t = LineTime(fmt="%d.%m.%Y %H:%M:%S%z"); t.formatted("14.11.2023 23:13:20+0100")
        1700000000000
        >>> t.formatted("2023-11-14")
        Traceback (most recent call last):
        ...
        ValueError: timestamp '2023-11-14' does not match --timestamp-format '%d.%m.%Y %H:%M:%S%z'
        """
        text = ts if type(ts) is str else (str(ts) if type(ts) is int else None)
        if text is None:
            raise ValueError(f"timestamp {JSON_NAMES.get(type(ts), type(ts).__name__)} is no text for "
                             f"--timestamp-format {self.fmt!r}")
        if text == self._last[0]:
            return self._last[1]
        try:
            d = dt.datetime.strptime(text, self.fmt)  # type: ignore[arg-type]
        except ValueError:
            raise ValueError(f"timestamp {text[:40]!r} does not match --timestamp-format {self.fmt!r}") from None
        if d.tzinfo is None:
            d = d.replace(tzinfo=dt.UTC)
        ms = int(d.timestamp() * 1000)
        if not 0 <= ms <= MAX_TIMESTAMP_MS:
            raise ValueError(f"timestamp {text[:40]!r} is before 1970")
        self._last = (text, ms)
        return ms

"""A JSONL line's time: :class:`LineTime` (``streamarms run --timestamp-field NAME --timestamp-unit ms|s``).

By default a line's time is its ``timestamp`` field in milliseconds since the epoch, as a Kafka record's.
Logs name and count it otherwise: ``@timestamp`` (Elastic Common Schema), ``time`` (pino: milliseconds;
bunyan: a date-time), ``ts`` in seconds with a fraction (``1700000000.123``: nginx's ``$msec``, many
tracers). The field may be a dotted name (a nested field, :class:`~streamarms.runtime.field_path.FieldPath`);
its value a number in the unit, or an ISO 8601 date-time (UTC unless it says otherwise) whatever the unit.
Anything else there -- another string, a boolean, ``null``, NaN, a time before 1970 or after the year
9999 -- is no time, and the line is refused (``bad_timestamp``): it would move the stream clock to a time
no stream has, or silently be no timestamp. A line without the field has no time (the clock stays).

>>> LineTime().of({"timestamp": 1700000000123}), LineTime("ts", "s").of({"ts": 1700000000.123})
(1700000000123, 1700000000123)
>>> LineTime("@timestamp").of({"@timestamp": "2023-11-14T22:13:20Z"}), LineTime().of({"arm": "a"})
(1700000000000, None)
"""

from __future__ import annotations

import json
from typing import Any

from streamarms.runtime.clock import iso_ms
from streamarms.runtime.field_path import FieldPath

__all__ = ["LineTime", "MAX_TIMESTAMP_MS", "stamp"]

#: the latest timestamp a line may carry, in ms: 9999-12-31T23:59:59.999Z (what an ISO date can say)
MAX_TIMESTAMP_MS = 253_402_300_799_999

#: what a JSON value is, for the dead letters' details
JSON_NAMES = {str: "a string", bool: "a boolean", list: "an array", dict: "an object", type(None): "null",
              int: "an integer", float: "a number"}

_UNITS = {"ms": 1, "s": 1000}
_ABSENT: Any = object()


def stamp(ts: Any, unit: str = "ms") -> int:
    """A line's time (ms) as an int, or ``ValueError`` saying why it is none (module docstring; never an
    ``OverflowError`` that stops the replay).

    >>> stamp(1700000000123), stamp(1700000000123.9), stamp("2023-11-14T22:13:20.123Z"), stamp(1.5, "s")
    (1700000000123, 1700000000123, 1700000000123, 1500)
    >>> stamp(1e300)
    Traceback (most recent call last):
    ...
    ValueError: timestamp 1e+300 is not a time in milliseconds from 0 (1970) to 253402300799999 (the year 9999), nor an ISO 8601 date-time (2026-11-25T14:00:00Z)
    """
    t, scale = type(ts), _UNITS[unit]
    if (t is int or t is float) and 0 <= ts <= MAX_TIMESTAMP_MS / scale:  # (NaN fails the comparisons)
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
    units = "milliseconds" if unit == "ms" else "seconds"
    top = MAX_TIMESTAMP_MS if unit == "ms" else MAX_TIMESTAMP_MS // 1000
    raise ValueError(f"timestamp {shown} is not a time in {units} from 0 (1970) to {top} (the year 9999), nor an "
                     "ISO 8601 date-time (2026-11-25T14:00:00Z)")


class LineTime:
    """Where a line's time is and in what unit (module docstring). :attr:`default` (``timestamp`` in ms):
    the sources' C-level fast paths read it; any other takes the line-by-line path, through :meth:`of`.

    >>> LineTime("time.ms").of({"time": {"ms": 5}}), LineTime("ts", "s").default
    (5, False)
    """

    __slots__ = ("field", "unit", "_path", "default")

    def __init__(self, field: str = "timestamp", unit: str = "ms") -> None:
        if unit not in _UNITS:
            raise ValueError(f"the timestamp unit is ms or s, got {unit!r}")
        self.field = field
        self.unit = unit
        self._path = FieldPath(field)
        self.default = field == "timestamp" and unit == "ms"

    def of(self, obj: dict[str, Any]) -> int | None:
        """The line's time in ms (``None``: the line has no such field); ``ValueError`` for what is no time."""
        ts = self._path.get(obj, _ABSENT)
        if ts is _ABSENT:
            return None
        return ts if type(ts) is int and 0 <= ts <= MAX_TIMESTAMP_MS and self.unit == "ms" else stamp(ts, self.unit)

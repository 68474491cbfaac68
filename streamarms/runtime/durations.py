"""Durations written as text with their units (``"1.234ms"``, ``"850µs"``, ``"2.5s"``, ``"1m30s"``): the
``--reward-unit`` rule of :class:`~streamarms.runtime.codec.RewardCodec`.

Go's ``time.Duration`` prints itself so (``String()``: what logrus, zap's string encoder, klog's ``latency=``
and many Go services write for a latency), and so do many other loggers for one unit (``"120ms"``). A number
with a unit cannot be compared with a number without one, nor with one in another unit: each text is read as
the number of ``unit`` it lasts. The grammar is Go's ``time.ParseDuration``: an optional sign, then one or more
decimal numbers each followed by a unit, ``ns``, ``us`` (``µs``, ``μs``), ``ms``, ``s``, ``m``, ``h``; a space
between a number and its unit is allowed (``"12 ms"``), and ``"0"`` alone is zero. An ISO 8601 duration of days,
hours, minutes and seconds is read too (``"PT0.123S"``, ``"PT1M30S"``, ``"P1DT2H"``: Java's ``Duration`` prints
itself so, each part with its own sign, ``"PT-0.5S"``; a day is 24 hours; years and months, of no fixed length,
are not). Anything else is no duration (``None``): a misspelt unit is never guessed at.

>>> [duration_in(t, "ms") for t in ("1.234ms", "850µs", "2.5s", "1m30s", "-1.5h", "0", "12 ms")]
[1.234, 0.85, 2500.0, 90000.0, -5400000.0, 0.0, 12.0]
>>> duration_in("3 days", "s"), duration_in("ms", "s"), duration_in("1.2.3s", "s")
(None, None, None)
>>> [duration_in(t, "s") for t in ("PT0.123S", "PT1M30S", "P1DT2H", "PT-0.5S", "-PT1H-30M", "P1M", "PT", "P")]
[0.123, 90.0, 93600.0, -0.5, -1800.0, None, None, None]
"""

from __future__ import annotations

import re

__all__ = ["UNITS", "duration_in", "is_duration", "unit_of"]

#: each unit's length in nanoseconds (Go's ``time.ParseDuration`` units; ``µs`` as U+00B5 or U+03BC)
UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
_PART = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+) ?(?:ns|us|µs|μs|ms|s|m|h)"
_DURATION = re.compile(rf"[-+]?(?:{_PART})+")
_PARTS = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+) ?(ns|us|µs|μs|ms|s|m|h)")
_N = r"(-?[0-9]+(?:[.,][0-9]+)?)"
#: an ISO 8601 duration of days and time (Java's ``Duration.toString``: a sign on each part)
_ISO = re.compile(rf"(-)?P(?:{_N}D)?(?:T(?:{_N}H)?(?:{_N}M)?(?:{_N}S)?)?")
_ISO_NS = (86_400e9, 3600e9, 60e9, 1e9)


def duration_in(text: str, unit: str) -> float | None:
    """How many ``unit`` (a key of :data:`UNITS`) the duration ``text`` lasts, or ``None`` when the text is
    no duration (module docstring)."""
    if text == "0":
        return 0.0
    if len(text) > 64:
        return None
    if text.startswith(("P", "-P")):
        return _iso_in(text, unit)
    if not _DURATION.fullmatch(text):
        return None
    ns = sum(float(number) * UNITS[u] for number, u in _PARTS.findall(text))
    return (-ns if text[0] == "-" else ns) / UNITS[unit]


def _iso_in(text: str, unit: str) -> float | None:
    """An ISO 8601 duration (module docstring) in ``unit``, or ``None``."""
    m = _ISO.fullmatch(text)
    if m is None or not any(m.groups()[1:]) or text.endswith("T"):
        return None
    ns = sum(float(x.replace(",", ".")) * scale for x, scale in zip(m.groups()[1:], _ISO_NS) if x)
    return (-ns if m[1] else ns) / UNITS[unit]


def unit_of(text: str) -> str:
    """The unit of a duration's last part, as ``--reward-unit`` names it (``µs`` is ``us``).

    >>> unit_of("17.19ms"), unit_of("1m30s"), unit_of("850µs")
    ('ms', 's', 'us')
    """
    if _ISO.fullmatch(text):
        return "s"  # (ISO 8601: in seconds and longer)
    u = _PARTS.findall(text)[-1][1]
    return "us" if u in ("µs", "μs") else u


def is_duration(text: str) -> bool:
    """Whether ``text`` is a duration with a unit (``"0"`` alone is not: it is also a number).

    >>> is_duration("17.19ms"), is_duration("0"), is_duration("17.19")
    (True, False, False)
    """
    return text != "0" and duration_in(text, "s") is not None

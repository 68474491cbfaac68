"""Record values to Python objects and rewards: the daemon's one JSON decoder, safe on any input.

Every failure to decode one record -- bad syntax, invalid UTF-8, a value nested 100,000 levels deep
(``RecursionError`` in the standard library), an integer of 400 digits (``OverflowError`` when made a
float) -- is a :class:`ValueError` here, so the caller refuses (dead-letters) the record instead of
crashing on it, and a restart does not crash on it again.

The parser is `orjson <https://github.com/ijl/orjson>`_ when installed (about 3x faster than
:mod:`json` on the small objects of a reward stream, which is what lets the daemon validate *every*
record by default, ``benchmarks/kafka_throughput.py``), else :mod:`json`. Both accept the same
documents except the non-standard literals ``NaN``/``Infinity`` and integers beyond the double range
(not JSON to orjson); :func:`loads` hands what orjson refuses to :mod:`json`, so the reasons do not depend
on the parser: such values are refused as not finite either way.

This module is deliberately small and stateless: a batched path can call :func:`loads` and
:func:`number` on whole poll batches.

>>> loads(b'{"reward": 0.5}')
{'reward': 0.5}
>>> loads(b'[' * 100_000)
Traceback (most recent call last):
...
ValueError: not JSON...
>>> number(3), number(True)
(3.0, None)
>>> number(10 ** 400)
inf
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from ..validation import json_error_text

__all__ = ["BACKEND", "loads", "number"]

_loads: Callable[[Any], Any]
try:
    import orjson

    _loads = orjson.loads
    BACKEND = "orjson"
except ImportError:  # pragma: no cover - orjson is a dependency; json is the fallback
    _loads = json.loads
    BACKEND = "json"


_ERRORS = (ValueError, RecursionError, OverflowError, TypeError, UnicodeError)

#: a value with more opening brackets than this is refused without parsing: parsing a value nested
#: 100,000 deep takes orjson ~0.1 s (a cheap way to slow the daemon down), and no reward record is
#: nested like that. Values of at most ``_SHORT`` bytes cannot exceed it and are not counted.
MAX_BRACKETS = 1000
_SHORT = 2 * MAX_BRACKETS


def _brackets(value: bytes | bytearray | memoryview | str) -> int:
    if isinstance(value, str):
        return value.count("[") + value.count("{")
    b = bytes(value) if isinstance(value, memoryview) else value
    return b.count(b"[") + b.count(b"{")


def loads(value: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON document; every way it can fail is a :class:`ValueError` starting ``not JSON``.

    A document the fast parser refuses is given to :mod:`json` as well (bad records only, so it costs
    nothing on a clean stream): the reasons then do not depend on the parser installed --
    ``NaN``/``Infinity`` and integers beyond the double range parse, and :func:`number` finds them
    not finite.
    """
    if len(value) > _SHORT and _brackets(value) > MAX_BRACKETS:
        raise ValueError(f"not JSON (refused unparsed: over {MAX_BRACKETS} brackets, nested too deep to be a reward)")
    try:
        return _loads(value)
    except _ERRORS as e:
        if _loads is json.loads:
            raise _not_json(e, value) from None
    try:
        return json.loads(value if not isinstance(value, memoryview) else bytes(value))
    except _ERRORS as e:
        raise _not_json(e, value) from None


def _not_json(e: BaseException, value: bytes | bytearray | memoryview | str) -> ValueError:
    """The refusal of ``value`` for ``e``; bytes that json took for UTF-16 (it guesses from the first bytes: FF FE)
    are said to be what they are not, UTF-8."""
    if isinstance(e, UnicodeDecodeError) and e.encoding != "utf-8" and not isinstance(value, str):
        try:
            bytes(value).decode("utf-8")
        except UnicodeDecodeError as u:
            e = u
    return ValueError(f"not JSON ({json_error_text(e)})")


def number(x: Any) -> float | None:
    """``x`` as a float if it is a JSON number (not a boolean), else ``None``; a number too large for a
    double is ``inf`` (so it is refused as not finite, never an ``OverflowError``)."""
    t = type(x)
    if t is float:
        return x
    if t is int:
        try:
            return float(x)
        except OverflowError:
            return math.inf if x > 0 else -math.inf
    return None

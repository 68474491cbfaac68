"""What ``streamarms inspect`` keeps of each field of the records it reads (:class:`FieldProfile`), and the names
that say what a field is likely to be (a key, a time, an outcome, an id, a duration), as :func:`plain` writes them.

>>> f = FieldProfile("status"); f.add(200); f.add(500); f.add(200)
>>> f.present, f.distinct, (f.low, f.high)
(3, 2, (200.0, 500.0))
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..runtime.codec import JSON_NUMBER
from ..runtime.durations import UNITS, duration_in, unit_of

__all__ = ["FieldProfile", "DISTINCT", "RECORD_KEY"]

#: distinct values kept per field (a field with more is counted as "more than" this)
DISTINCT = 10_000
#: the field name ``inspect`` gives a Kafka record's key (``run``'s key without ``--key-field``)
RECORD_KEY = "(record key)"

@dataclass
class FieldProfile:
    """What one field held over the records read: ``present`` (records with it), ``types`` (JSON type names),
    ``values`` (a count of each distinct value, up to :data:`DISTINCT` of them), the numbers' ``low`` / ``high``
    and a few of them (``numbers``, for quantiles); ``changes`` (records whose value differs from the last record's
    with the field) and ``returns`` (those of them back to a value seen before): a key whose values change and never
    come back has its records grouped, one block a value.

    >>> f = FieldProfile("ms"); f.add(3); f.add(5.5); f.add("x"); f.add(10 ** 400); (f.present, f.low, f.high, f.numeric)
    (4, 3.0, 5.5, 2)
    """

    name: str
    present: int = 0
    types: Counter[str] = field(default_factory=Counter)
    values: Counter[Any] = field(default_factory=Counter)
    more: bool = False  # more distinct values than DISTINCT
    numeric: int = 0  # values that are numbers, or texts writing one
    low: float = math.inf
    high: float = -math.inf
    numbers: list[float] = field(default_factory=list)
    changes: int = 0
    returns: int = 0
    last: Any = None
    #: distinct values with ``--key-ids`` (paths whose ids read as ``:id``), when that makes the field a key
    ids_distinct: int = 0
    #: the unit its durations written with units (``"17.19ms"``) are read in, as ``--reward-unit`` names it:
    #: ``ms``, or ``s`` when the first is in seconds or longer (``None``: no such text)
    unit: str | None = None
    #: a few of its lists (Caddy's headers, ``["curl/8.0"]``), as JSON: shown where a list has no distinct values
    lists: list[str] = field(default_factory=list)
    #: its cells read as numbers with a decimal comma (``4,62``) in a table not separated by ``;``: ``run`` reads
    #: them with ``--decimal-comma`` (``csv_lines.comma_number``, ``sure``)
    decimal_commas: int = 0

    def add(self, v: Any) -> None:
        t = type(v)
        if self.present and v != self.last:
            self.changes += 1
            self.returns += t in (str, int, float, bool) and v in self.values  # (a list is no key)
        self.last = v
        self.present += 1
        self.types["bool" if t is bool else "null" if v is None else t.__name__] += 1
        x = math.nan
        if t is str and v != "0" and (ns := duration_in(v, "ns")) is not None:  # (a latency with its unit)
            self.unit = self.unit or ("s" if unit_of(v) in ("s", "m", "h") else "ms")
            v, t = ns / UNITS[self.unit], float  # (as --reward-unit reads it)
        try:  # (a table's cells and a log that quotes its numbers write them as text)
            x = float(v) if (t is str and JSON_NUMBER.fullmatch(v)) or t in (int, float) else math.nan
        except OverflowError:  # (an integer of hundreds of digits: no number to compare)
            pass
        if math.isfinite(x):
            self.numeric += 1
            self.low, self.high = min(self.low, x), max(self.high, x)
            if len(self.numbers) < 100_000:
                self.numbers.append(x)
        if t in (str, int, float, bool):
            if v in self.values or len(self.values) < DISTINCT:
                self.values[v] += 1
            else:
                self.more = True
        elif t is list and len(self.lists) < 4 and (shown := json.dumps(v, default=str)[:40]) not in self.lists:
            self.lists.append(shown)

    @property
    def distinct(self) -> int:
        return len(self.values)

    def share(self, t: str) -> float:
        return self.types[t] / self.present if self.present else 0.0

    def digits(self) -> bool:
        """Whether every value is an integer or a text of digits (a status code written either way)."""
        return all(type(v) is int or (type(v) is str and v.isdigit()) for v in self.values) and bool(self.values)

    def quantile(self, q: float) -> float:
        xs = sorted(self.numbers)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else math.nan

    def line(self, records: int) -> str:
        kinds = ", ".join(f"{t} {100 * n / self.present:.0f}%" for t, n in self.types.most_common(3))
        distinct = f"{'>' if self.more else ''}{self.distinct:,} distinct"
        if not self.values and self.lists:
            return f"  {self.name:<28} {100 * self.present / max(records, 1):5.1f}%  {kinds:<22} {'lists':<16} " + \
                ", ".join(self.lists)
        if self.low <= self.high and self.numeric >= 0.5 * self.present:
            shown = f"{_num(self.low)} .. {_num(self.high)}" + (f" {self.unit} (durations)" if self.unit else "")
            if self.numeric < self.present:  # (a latency column's "timeout" cells: refused by a run, so said here)
                odd = [(v, n) for v, n in self.values.most_common() if not _number(v)][:2]
                shown += f"; {self.present - self.numeric:,} not numbers" + (
                    f": {', '.join(f'{_short(v)} ({n:,})' for v, n in odd)}" if odd else "")
        else:
            shown = ", ".join(f"{_short(v)} ({n:,})" for v, n in self.values.most_common(4))
        return f"  {self.name:<28} {100 * self.present / max(records, 1):5.1f}%  {kinds:<22} {distinct:<16} {shown}"


def _number(v: Any) -> bool:
    return type(v) in (int, float) or (type(v) is str and JSON_NUMBER.fullmatch(v) is not None)


def _short(v: Any, most: int = 32) -> str:
    """A value as an example: its text quoted, cut with an ellipsis past ``most`` characters (an ISO time's fraction,
    an HTTP date: whole).

    >>> _short("Fri, 01 Mar 2024 00:00:00 GMT"), _short("x" * 40)
    ("'Fri, 01 Mar 2024 00:00:00 GMT'", "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'")
    """
    text = str(v)
    return repr(text if len(text) <= most else text[:most - 1] + "...")


def _num(x: float) -> str:
    """A number as a person reads it: an integer with its digits (a time in ms), else four significant ones."""
    return f"{int(x):,}" if x.is_integer() and abs(x) < 1e16 else f"{x:.4g}"

"""Reading a policy snapshot back: every field checked as it is read, one ``ValueError`` naming it.

A snapshot comes back from a checkpoint file that may be truncated, hand-edited or forged. A
policy's ``restore`` reads it through :class:`Fields`, which checks each field against what a
snapshot of that policy can hold -- present (or given a default, for fields older versions did not
write), of the right type, integral where it is a count, finite where it is a sum, as long as the
arms where it is per arm, an arm index in range -- and refuses anything else with one
``ValueError`` naming the field (``snapshot field 'm' has 19 entries, expected 20``). The checks
run once per restore, O(n) and vectorised where per arm: restore is no hot path, but a checkpoint
of a million arms should not take seconds.

:func:`guarded` is the net under the field checks: the decorated ``restore`` turns any other error of
a malformed snapshot (a ``KeyError`` inside a nested part restored by another module, say) into a
``ValueError`` too, so ``restore`` raises nothing else.

>>> f = Fields({"policy": "rr", "arms": ["a", "b"], "m": [3, 0], "T": 3}, policy="rr")
>>> f.arms(), f.counts("m"), f.integer("T")
(['a', 'b'], [3, 0], 3)
>>> f.counts("s")
Traceback (most recent call last):
...
ValueError: snapshot field 's' is missing
>>> Fields({"policy": "rr", "arms": ["a", "b"], "m": [3]}, policy="rr").counts("m")
Traceback (most recent call last):
...
ValueError: snapshot field 'm' has 1 entries, expected 2
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from ..confidence.base import ConfidenceSequence, sequence_from_snapshot
from ..confidence.restored import sum_slack
from ..validation import short_repr as _shown

__all__ = ["Fields", "guarded", "REQUIRED", "MALFORMED"]

#: the default of a field that must be present
REQUIRED: Any = object()

#: what a malformed snapshot may raise deep inside a restore besides ``ValueError`` (turned into one by :func:`guarded`;
#: what ``run`` and ``explain`` call a malformed checkpoint)
MALFORMED = (KeyError, TypeError, IndexError, AttributeError, OverflowError, ZeroDivisionError)

R = TypeVar("R")


class Fields:
    """The fields of one snapshot (or of a part of one: :meth:`sub`), read with checks.

    ``n``: the number of arms (per-arm fields must have that many entries), taken from the ``arms``
    field when not given; ``policy``: the name(s) the snapshot's ``policy`` field must have (checked
    at once); ``where``: the prefix of the field names in messages (``"params."``).
    """

    def __init__(self, state: Any, n: int | None = None, *, policy: str | Collection[str] | None = None,
                 where: str = "", parent: Fields | None = None) -> None:
        if not isinstance(state, dict):
            what = f"snapshot field {where[:-1]!r}" if where else "a snapshot"
            raise ValueError(f"{what} must be a JSON object, got {_shown(state)}")
        self.state = state
        self.where = where
        self._n = n
        self._parent = parent
        if policy is not None:
            names = {policy} if isinstance(policy, str) else set(policy)
            got = state.get("policy")
            if got not in names:
                raise ValueError(f"snapshot is of policy {got!r}, not {' or '.join(repr(p) for p in sorted(names))}")

    # -- plumbing ----------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """The number of arms."""
        if self._n is None:
            self._n = self._parent.n if self._parent is not None else len(self.arms())
        return self._n

    def name(self, field: str) -> str:
        return f"{self.where}{field}"

    def fail(self, field: str, why: str) -> ValueError:
        """The ``ValueError`` for ``field`` (to raise)."""
        return ValueError(f"snapshot field {self.name(field)!r} {why}")

    def has(self, field: str) -> bool:
        return field in self.state

    def raw(self, field: str, default: Any = REQUIRED) -> Any:
        """The field as stored (``default`` if absent; absent and required: ``ValueError``)."""
        try:
            return self.state[field]
        except KeyError:
            if default is REQUIRED:
                raise self.fail(field, "is missing") from None
            return default

    def sub(self, field: str, default: Any = REQUIRED) -> Fields:
        """A nested object as :class:`Fields` (its names prefixed ``field.``; the same arms)."""
        v = self.raw(field, default)
        return Fields(v, self._n, where=f"{self.name(field)}.", parent=self)

    @contextmanager
    def part(self, field: str) -> Iterator[None]:
        """A part restored by other code (a reward model, a confidence sequence): its failures, whatever
        they are, become a ``ValueError`` naming ``field``."""
        try:
            yield
        except (ValueError, *MALFORMED) as e:
            raise self.fail(field, f"is malformed: {_reason(e)}") from None

    # -- scalars -------------------------------------------------------------------------------
    def integer(self, field: str, low: int | None = 0, high: int | None = None, default: Any = REQUIRED) -> int:
        """An integer (an integral float too: ``3.0``) in ``[low, high]`` (either end ``None``: open)."""
        v = self.raw(field, default)
        if v is default and default is not REQUIRED:
            return v
        x = _integral(v)
        if x is None:
            raise self.fail(field, f"must be an integer, got {_shown(v)}")
        if (low is not None and x < low) or (high is not None and x > high):
            raise self.fail(field, f"must be in [{_end(low)}, {_end(high)}], got {x}")
        return x

    def index(self, field: str, default: Any = REQUIRED) -> int:
        """An arm index: an integer in ``[0, n)``."""
        return self.integer(field, 0, self.n - 1, default)

    def number(self, field: str, low: float | None = None, high: float | None = None, *, finite: bool = True,
               default: Any = REQUIRED) -> float:
        """A number (not a boolean), finite unless ``finite=False`` (NaN never), in ``[low, high]``."""
        v = self.raw(field, default)
        if v is default and default is not REQUIRED:
            return v
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise self.fail(field, f"must be a number, got {_shown(v)}")
        try:
            x = float(v)
        except OverflowError:  # (an integer of 309 digits or more)
            x = math.inf if v > 0 else -math.inf  # type: ignore[operator]  # (numbers.Real compares)
        if math.isnan(x) or (finite and not math.isfinite(x)):
            raise self.fail(field, f"must be a finite number, got {x!r}")
        if (low is not None and x < low) or (high is not None and x > high):
            raise self.fail(field, f"must be in [{_end(low)}, {_end(high)}], got {x!r}")
        return x

    def flag(self, field: str, default: Any = REQUIRED) -> bool:
        """A boolean (``true``/``false``; 0 and 1 too, as older snapshots may hold)."""
        v = self.raw(field, default)
        if isinstance(v, bool):
            return v
        if type(v) is int and v in (0, 1):
            return bool(v)
        raise self.fail(field, f"must be true or false, got {_shown(v)}")

    def choice(self, field: str, options: Collection[Any], default: Any = REQUIRED) -> Any:
        """One of ``options``."""
        v = self.raw(field, default)
        if not any(v is o or (type(v) is type(o) and v == o) for o in options):
            raise self.fail(field, f"must be one of {sorted(map(repr, options))}, got {_shown(v)}")
        return v

    # -- lists -----------------------------------------------------------------------------------
    def sequence(self, field: str, size: int | None = -1, default: Any = REQUIRED) -> list[Any]:
        """A list of ``size`` entries (``-1``: one per arm; ``None``: any length)."""
        v = self._array_like(field, size, default)
        return v if v is default and default is not REQUIRED else list(v)

    def _array_like(self, field: str, size: int | None, default: Any) -> Any:
        """:meth:`sequence` without the copy: the field itself, which may be a lazily parsed JSON array
        (:class:`streamarms.json_lazy.LazyArray`: a large checkpoint's) to iterate once."""
        v = self.raw(field, default)
        if v is default and default is not REQUIRED:
            return v
        if isinstance(v, (str, bytes, dict)) or not (hasattr(v, "__len__") and hasattr(v, "__iter__")):
            raise self.fail(field, f"must be a list, got {_shown(v)}")
        want = self.n if size == -1 else size
        if want is not None and len(v) != want:
            raise self.fail(field, f"has {len(v)} entries, expected {want}")
        return v

    def numbers(self, field: str, size: int | None = -1, *, finite: bool = True, low: float | None = None,
                default: Any = REQUIRED) -> list[float]:
        """A list of numbers (``size`` as in :meth:`sequence`), finite unless ``finite=False`` (NaN
        never), each ``>= low``; returned as floats."""
        v = self.sequence(field, size, default)
        if v is default and default is not REQUIRED:
            return v
        a = self._array(field, v, "numbers", "iuf")
        if a.size:
            a = a.astype(np.float64)
            bad = np.isnan(a) if not finite else ~np.isfinite(a)
            if bad.any():
                j = int(np.argmax(bad))
                raise self.fail(field, f"entry {j} must be a finite number, got {v[j]!r}")
            if low is not None and (a < low).any():
                j = int(np.argmax(a < low))
                raise self.fail(field, f"entry {j} must be >= {low}, got {v[j]!r}")
        return a.tolist()

    def flags(self, field: str, size: int | None = -1) -> list[bool]:
        """A list of booleans (``size`` as in :meth:`sequence`; 0 and 1 too, as older snapshots may hold)."""
        v = self.sequence(field, size)
        bad = next((j for j, x in enumerate(v) if not (isinstance(x, bool) or (type(x) is int and x in (0, 1)))), None)
        if bad is not None:
            raise self.fail(field, f"entry {bad} must be true or false, got {_shown(v[bad])}")
        return [bool(x) for x in v]

    def counts(self, field: str, size: int | None = -1, *, high: int | None = None,
               default: Any = REQUIRED) -> list[int]:
        """A list of integers in ``[0, high]`` (``size`` as in :meth:`sequence`): sample counts."""
        return self._integers(field, size, 0, high, "non-negative integers", default)

    def indices(self, field: str, size: int | None = None, *, distinct: bool = False,
                default: Any = REQUIRED) -> list[int]:
        """A list of arm indices (integers in ``[0, n)``), of any length unless ``size`` is given."""
        out = self._integers(field, size, 0, self.n - 1, "arm indices", default)
        if distinct and len(set(out)) != len(out):
            raise self.fail(field, "repeats an arm")
        return out

    def _integers(self, field: str, size: int | None, low: int | None, high: int | None, what: str,
                  default: Any) -> list[int]:
        v = self.sequence(field, size, default)
        if v is default and default is not REQUIRED:
            return v
        a = self._array(field, v, what, "iuf")
        if a.size:
            if a.dtype.kind == "f":
                ok = np.isfinite(a) & (a == np.floor(np.where(np.isfinite(a), a, 0.0)))
                if not ok.all():
                    j = int(np.argmax(~ok))
                    raise self.fail(field, f"entry {j} must be an integer, got {v[j]!r}")
            out_of = np.zeros(a.shape, dtype=bool)
            if low is not None:
                out_of |= a < low
            if high is not None:
                out_of |= a > high
            if out_of.any():
                j = int(np.argmax(out_of))
                raise self.fail(field, f"entry {j} must be in [{_end(low)}, {_end(high)}], got {v[j]!r}")
        return [int(x) for x in a.tolist()]

    def _array(self, field: str, v: list[Any], what: str, kinds: str) -> np.ndarray:
        """``v`` as a 1-d numpy array of one of the dtype ``kinds`` (no booleans, no strings, no None)."""
        try:
            a = np.asarray(v)
        except (ValueError, TypeError, OverflowError):  # ragged nesting, say
            a = np.asarray([None])
        if a.size and (a.ndim != 1 or a.dtype.kind not in kinds):
            j = next((j for j, x in enumerate(v) if isinstance(x, bool) or not isinstance(x, numbers.Real)
                      or (isinstance(x, int) and x.bit_length() > 63)), 0)
            raise self.fail(field, f"must be a list of {what}, entry {j} is {_shown(v[j])}")
        return a

    # -- arms and cross-field checks ----------------------------------------------------------------
    def arms(self, field: str = "arms") -> list[str]:
        """The arm names: a non-empty list of distinct strings."""
        v = self.sequence(field, None)
        if not v:
            raise self.fail(field, "is empty")
        bad = next((j for j, a in enumerate(v) if not isinstance(a, str)), None)
        if bad is not None:
            raise self.fail(field, f"entry {bad} must be a string (an arm name), got {_shown(v[bad])}")
        if len(set(v)) != len(v):
            raise self.fail(field, "repeats an arm name")
        if self._n is not None and len(v) != self._n:
            raise self.fail(field, f"has {len(v)} entries, expected {self._n}")
        return v

    def sums_within(self, field: str, counts: Sequence[int], sums: Sequence[float], low: float | None,
                    high: float | None) -> None:
        """Each sum of ``counts[i]`` rewards in ``[low, high]`` lies in ``[low m_i, high m_i]`` (to
        rounding); an unbounded end (``None`` or infinite) is not checked."""
        m = np.asarray(counts, dtype=np.float64)
        s = np.asarray(sums, dtype=np.float64)
        if m.shape != s.shape:
            raise self.fail(field, f"has {len(s)} entries, expected {len(m)}")
        tol = sum_slack(s, m)
        bad = np.zeros(m.shape, dtype=bool)
        if low is not None and math.isfinite(low):
            bad |= s < low * m - tol
        if high is not None and math.isfinite(high):
            bad |= s > high * m + tol
        if bad.any():
            j = int(np.argmax(bad))
            raise self.fail(field, f"entry {j} ({sums[j]!r}) is not a sum of {counts[j]} rewards in "
                                   f"[{_end(low)}, {_end(high)}]")

    def sequences(self, field: str, template: ConfidenceSequence, low: float | None, high: float | None,
                  size: int | None = -1) -> list[ConfidenceSequence]:
        """Per-arm confidence sequences (``size`` as in :meth:`sequence`), each restored by its own class
        and checked: a known kind, ``m`` a count, ``s`` a sum of ``m`` rewards in ``[low, high]``, no
        NaN, the interval's ends numbers, and -- for a sequence of ``template``'s kind (older snapshots
        may hold another) -- the construction settings (``SETTINGS``: ``alpha``, a prior, a range) equal
        to the fresh ``template``'s."""
        states = self._array_like(field, size, REQUIRED)  # (a million arms' dicts: iterated, not copied)
        ts = template.snapshot()
        keys = type(template).SETTINGS
        want = tuple(ts[key] for key in keys)
        # other fields a sequence's updates change (a sum of squares, ...): no NaN there either
        more = tuple(key for key in ts if key not in keys and key not in ("arm", "kind", "m", "s", "lo", "hi"))
        out: list[ConfidenceSequence] = []
        vals: list[tuple[Any, Any, Any, Any]] = []
        try:  # (one try for all: a million arms restore in about a second)
            for d in states:
                c = sequence_from_snapshot(d, checked=False)  # (checked here, the million arms at once)
                if c.kind == template.kind:
                    if tuple(map(d.get, keys)) != want:
                        _same_settings(d, ts, keys)
                    if more and any(isinstance(v, float) and math.isnan(v) for v in map(d.get, more)):
                        raise ValueError("it holds a NaN")
                elif not math.isclose(float(d["alpha"]), template.alpha):
                    raise ValueError(f"its 'alpha' is {_shown(d['alpha'])}, the policy's sequences have {template.alpha!r}")
                if type(d.get("arm")) is not str:
                    raise ValueError(f"its 'arm' must be a string, got {_shown(d.get('arm'))}")
                vals.append((c.m, c.s, c.lo, c.hi))
                out.append(c)
        except (ValueError, *MALFORMED) as e:  # (the one at len(out))
            raise self.fail(f"{field}[{len(out)}]", f"is malformed: {_reason(e)}") from None
        m_, s_, lo_, hi_ = zip(*vals) if vals else ((), (), (), ())
        per = Fields({"m": list(m_), "s": list(s_), "lo": list(lo_), "hi": list(hi_)}, len(out),
                     where=f"{self.name(field)}[].")
        m = per.counts("m")
        per.sums_within("s", m, per.numbers("s"), low, high)
        for end in ("lo", "hi"):  # the running intersection: inside the reward range
            v = np.asarray(per.numbers(end, finite=False))
            bad = np.zeros(v.shape, dtype=bool)
            if low is not None and math.isfinite(low):
                bad |= v < low - 1e-9 * max(1.0, abs(low))
            if high is not None and math.isfinite(high):
                bad |= v > high + 1e-9 * max(1.0, abs(high))
            if bad.any():
                j = int(np.argmax(bad))
                raise per.fail(end, f"entry {j} ({v[j]!r}) is outside the reward range [{low}, {high}]")
        return out

    def total(self, field: str, value: int, counts: Sequence[int]) -> None:
        """``value`` (the field ``field``) equals the sum of ``counts`` (the pulls are the samples)."""
        t = sum(counts)
        if value != t:
            raise self.fail(field, f"is {value}, but the per-arm counts add up to {t}")


def _same_settings(d: dict[str, Any], ts: dict[str, Any], keys: Sequence[str]) -> None:
    """``ValueError`` unless a sequence's settings (``d``) are the fresh template's (``ts``), to rounding."""
    for key in keys:
        a, b = d.get(key), ts[key]
        if not (a == b or (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b))):
            raise ValueError(f"its {key!r} is {_shown(a)}, the policy's sequences have {b!r}")


def guarded(restore: Callable[..., R]) -> Callable[..., R]:
    """Decorate a ``restore(cls, state)`` (under ``@classmethod``) so that a malformed snapshot raises
    ``ValueError`` only: a missing field, a wrong type or a bad index that no field check caught
    becomes ``ValueError("snapshot of policy 'rr' is malformed: ...")``."""

    @functools.wraps(restore)
    def wrapper(cls: Any, state: Any, *args: Any, **kwargs: Any) -> R:
        if not isinstance(state, dict):
            raise ValueError(f"a snapshot must be a JSON object, got {_shown(state)}")
        try:
            return restore(cls, state, *args, **kwargs)
        except MALFORMED as e:
            raise ValueError(f"snapshot of policy {getattr(cls, 'name', cls.__name__)!r} is malformed: "
                             f"{_reason(e)}") from None

    return wrapper


def _integral(v: Any) -> int | None:
    """``v`` as an int if it is an integer (or an integral finite float), else ``None`` (booleans too)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, float) and math.isfinite(v) and v == math.floor(v):
        return int(v)
    return None


def _reason(e: BaseException) -> str:
    if isinstance(e, KeyError):
        return f"no field {e.args[0]!r}" if e.args else "a field is missing"
    if isinstance(e, ValueError):
        return str(e)
    return f"{type(e).__name__}: {e}"


def _end(v: float | None) -> str:
    return "..." if v is None else repr(v)

"""The interface of a confidence sequence for ONE arm's mean.

A confidence sequence (CS) at level ``1 - alpha`` is a sequence of intervals ``C_1, C_2, ...`` with
``P(mu in C_m for every m >= 1) >= 1 - alpha``: valid at every sample count simultaneously, so it may be
read at any (data-dependent) stopping time with no union bound over time. Every CS here is built from a
nonnegative (super)martingale and Ville's inequality (Howard, Ramdas, McAuliffe, Sekhon, *Time-uniform,
nonparametric, nonasymptotic confidence sequences*, Ann. Statist. 49(2), 2021).

Since the guarantee is simultaneous, the running intersection ``C_1 ∩ ... ∩ C_m`` is also a CS; every
subclass keeps it (``interval()`` never widens).

Contract of a subclass:

* ``update(x)`` is O(1); it validates first (``ValueError`` naming the arm and the value, state unchanged);
* ``interval()`` -> ``(lo, hi)`` (may be computed lazily, e.g. root-finding only when asked);
* ``above(v)`` / ``below(v)``: whether the whole interval lies strictly above / below ``v``; these are the
  cheap tests a policy calls on its hot path (a ``False`` may be conservative, a ``True`` never is);
* ``snapshot()`` -> JSON-able dict; :func:`sequence_from_snapshot` continues bit for bit.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ..validation import finite_reward
from .restored import check_sequence

__all__ = ["ConfidenceSequence", "sequence_from_snapshot", "register_sequence", "interval_margin"]

_KINDS: dict[str, type[ConfidenceSequence]] = {}


def register_sequence(cls: type[ConfidenceSequence]) -> type[ConfidenceSequence]:
    """Make a CS class restorable from its snapshot (``snapshot()["kind"] == cls.kind``)."""
    _KINDS[cls.kind] = cls
    return cls


def sequence_from_snapshot(state: dict[str, Any], checked: bool = True) -> ConfidenceSequence:
    """Rebuild any registered confidence sequence from its :meth:`ConfidenceSequence.snapshot` (``checked``:
    refuse a state no run reaches, :func:`~streamarms.confidence.restored.check_sequence`; ``False`` for a copy of
    live state, or a snapshot its reader has checked already)."""
    if not isinstance(state, dict):
        raise ValueError(f"a confidence sequence's snapshot is {str(state)[:40]}: an object expected")
    kind = state.get("kind")
    if kind not in _KINDS:
        raise ValueError(f"unknown confidence sequence kind {kind!r}: one of {sorted(_KINDS)}")
    return _KINDS[kind].restore(state, checked)


@functools.cache  # a class's slots never change: one walk of its MRO per class, not one per snapshot
def _public_slots(cls: type) -> tuple[str, ...]:
    """The public slot names of ``cls`` and its bases, base classes first."""
    out: list[str] = []
    for c in reversed(cls.__mro__):
        slots = c.__dict__.get("__slots__", ())
        out.extend(k for k in ((slots,) if isinstance(slots, str) else slots) if not k.startswith("_"))
    return tuple(out)


class ConfidenceSequence(ABC):
    """One arm's anytime-valid confidence sequence at level ``1 - alpha`` (see the module docstring).

    Subclasses hold ``m`` (count), ``s`` (sum of rewards) and the running intersection ``lo``/``hi``.
    A subclass held once per arm of a large run declares ``__slots__`` (no per-instance ``__dict__``:
    about half the memory per arm); :meth:`snapshot` and :meth:`restore` read and write slots and
    ``__dict__`` alike, so the snapshot format does not depend on it.
    """

    __slots__ = ("alpha", "arm", "m", "s")
    kind: ClassVar[str] = "cs"
    #: the snapshot fields fixed at construction (the same for every arm of a policy): a restore compares
    #: them with a fresh sequence's (:meth:`streamarms.policies.snapshot_fields.Fields.sequences`)
    SETTINGS: ClassVar[tuple[str, ...]] = ("alpha",)
    #: the range of a reward (``None``: unbounded)
    low: float | None = None
    high: float | None = None
    #: the running intersection of the intervals (set by every subclass)
    lo: float
    hi: float

    def __init__(self, alpha: float, arm: str = "arm") -> None:
        alpha = float(alpha)
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        self.alpha = alpha
        self.arm = str(arm)
        self.m = 0
        self.s = 0.0

    # -- validation ------------------------------------------------------------------------------
    def check(self, x: Any) -> float:
        """The reward as a float, or ``ValueError`` naming the arm and the value."""
        v = finite_reward(self.arm, x)
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            raise ValueError(f"reward for arm {self.arm!r} is {x!r}, outside [{self.low}, {self.high}]")
        return v

    def update(self, x: Any) -> None:
        """Ingest one reward (validated first: a refused reward changes nothing)."""
        self._update(self.check(x))

    @abstractmethod
    def _update(self, x: float) -> None:
        """Ingest one validated reward."""

    # -- reading ---------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.m

    @property
    def mean(self) -> float:
        return self.s / self.m if self.m else math.nan

    @abstractmethod
    def interval(self) -> tuple[float, float]:
        """``(lo, hi)``, valid at every count simultaneously with probability >= 1 - alpha."""

    def radius(self) -> float:
        """Half the width of :meth:`interval` (infinite before any sample of an unbounded arm)."""
        lo, hi = self.interval()
        return (hi - lo) / 2.0

    def above(self, v: float) -> bool:
        """Whether the interval lies strictly above ``v``."""
        return self.interval()[0] > v

    def below(self, v: float) -> bool:
        """Whether the interval lies strictly below ``v``."""
        return self.interval()[1] < v

    def excludes(self, v: float) -> bool:
        """Whether ``v`` lies outside the interval."""
        return self.above(v) or self.below(v)

    # -- persistence -----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The public fields (slots first, base class first, then ``__dict__``) and ``kind``."""
        d = {k: getattr(self, k) for k in _public_slots(type(self)) if hasattr(self, k)}
        if hasattr(self, "__dict__"):
            d.update((k, v) for k, v in vars(self).items() if not k.startswith("_"))
        d["kind"] = self.kind
        return d

    @classmethod
    def restore(cls, state: dict[str, Any], checked: bool = True) -> ConfidenceSequence:
        obj = cls.__new__(cls)
        for k, v in state.items():
            if k != "kind":
                try:
                    setattr(obj, k, v)
                except AttributeError:
                    raise ValueError(f"{cls.__name__} snapshot has an unknown field {k!r}") from None
        if checked:  # (a state no run reaches: refused here, not met as a crash or a wrong answer later)
            check_sequence(obj, state)
        obj._after_restore()
        return obj

    def _after_restore(self) -> None:
        """Rebuild derived (private) fields after :meth:`restore`."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(arm={self.arm!r}, alpha={self.alpha}, n={self.m})"


class EagerConfidenceSequence(ConfidenceSequence):
    """A sequence whose running intersection ``lo``/``hi`` is brought up to date by every update, so
    reading it is two attribute loads (the stitched, empirical-Bernstein and heavy-tail sequences; the
    Beta-Binomial mixture computes its interval lazily and answers ``above``/``below`` in O(1) instead).
    """

    def interval(self) -> tuple[float, float]:
        return self.lo, self.hi

    def above(self, v: float) -> bool:
        return self.lo > v

    def below(self, v: float) -> bool:
        return self.hi < v


def interval_margin(a: Any, b: Any) -> float | None:
    """How far apart two intervals are in units of their radii: the gap between them over the sum of their
    half-widths (positive when they are disjoint, e.g. a key's interval and the threshold's once the key is
    classified); ``None`` when either is missing or not finite, or both are points.

    >>> round(interval_margin((0.6, 0.8), (0.4, 0.5)), 4), round(interval_margin((0.0, 1.0), (0.4, 0.5)), 4)
    (0.6667, -0.9091)
    >>> interval_margin(None, (0.0, 1.0)), interval_margin((0.0, float("inf")), (0.4, 0.5))
    (None, None)
    """
    if a is None or b is None:
        return None
    radii = (a[1] - a[0]) / 2.0 + (b[1] - b[0]) / 2.0
    gap = max(a[0] - b[1], b[0] - a[1])
    return gap / radii if math.isfinite(gap) and math.isfinite(radii) and radii > 0 else None

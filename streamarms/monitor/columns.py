"""Per-key numbers in columns (issue 13: a million keys in one member): one ``array`` per field, a key's
values at its *slot*.

An object per key costs its header, its slots and a float object per number (~1.4 KB a key in all with
two confidence sequences and an e-detector); a column costs 8 bytes a number. The math stays the classes'
own, run once per key at a time:

* :class:`SequenceColumns`: the *state* fields of one kind of confidence sequence (``m``, ``s``, the
  running intersection, ...); a *scratch* instance of the class (one per level ``alpha``) is loaded with a
  key's numbers, updated or read by its own methods, and stored back. Parameters (``alpha``, the prior, the
  range) are the scratch's, the same for every key of a column set;
* :class:`EDetectorColumns`: every key's Shiryaev-Roberts statistics in one ``array('d')``, updated in
  place by :meth:`EDetector.step <streamarms.monitor.restart.EDetector.step>`;
* :class:`WindowColumns`: the window rule's counts, through a scratch :class:`~.restart.WindowRestart`.

Each hands out and takes back the equivalent *object* (``materialise`` / ``put``), whose ``snapshot()`` is
the one the per-key objects wrote: checkpoints keep their format.

>>> from streamarms.confidence import BetaBinomialCS
>>> cols = SequenceColumns(BetaBinomialCS(0.05))
>>> for i in range(2): cols.add()
>>> sc = cols.load(1, cols.scratch()); sc._update(1.0); sc._update(0.0); cols.store(1, sc)
>>> cols.materialise(1, "b").snapshot() == dict(BetaBinomialCS(0.05, "b").snapshot(), m=2, s=1.0)
True
>>> cols.materialise(0, "a").m
0
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from typing import Any

from ..confidence import ConfidenceSequence, sequence_from_snapshot
from .restart import EDetector, WindowRestart

__all__ = ["SequenceColumns", "EDetectorColumns", "WindowColumns"]

#: the fields that change with a sequence's rewards, by kind (any other kind: every public field but the
#: arm and the level). The rest are parameters, the same for every key of one column set.
STATE_FIELDS: dict[str, tuple[str, ...]] = {
    "beta_binomial": ("m", "s", "lo", "hi"),
    "prpl_eb": ("m", "s", "sum_u", "mu_t", "sq", "sum_lam", "sum_lam_x", "sum_dev", "lo", "hi"),
}


class SequenceColumns:
    """The state of one kind of confidence sequence for every slot (module docstring).

    ``proto``: a fresh sequence of the kind and parameters wanted (its level is the default ``alpha``);
    ``make``: ``alpha -> a fresh sequence at that level`` for the other levels (the group epochs' sequences
    change level with the group's size). Slots hold the fresh values until :meth:`store` writes others.
    """

    def __init__(self, proto: ConfidenceSequence, make: Callable[[float], ConfidenceSequence] | None = None) -> None:
        snap = proto.snapshot()
        self.kind = proto.kind
        self.fields = STATE_FIELDS.get(self.kind) or tuple(f for f in snap if f not in ("arm", "alpha", "kind"))
        self.fresh = tuple(snap[f] for f in self.fields)
        self.cols = [array("q" if type(v) is int else "d") for v in self.fresh]
        self.alpha = proto.alpha
        self._make = make if make is not None else (lambda a: type(proto)(a))
        #: the scratch sequence of each level in use
        self.levels: dict[float, ConfidenceSequence] = {proto.alpha: proto}
        self.proto = proto
        #: ``load(i, sc)``: slot ``i``'s numbers into scratch ``sc`` (returned); ``store(i, sc)``: back.
        #: Made for the field list (as ``dataclasses`` makes ``__init__``): one statement a field, no loop
        #: over the fields on the per-reward path.
        self.load, self.store = _accessors(self.fields, self.cols)

    def scratch(self, alpha: float | None = None) -> ConfidenceSequence:
        """The scratch sequence at level ``alpha`` (default: the columns' own; a few levels are kept)."""
        if alpha is None:
            return self.proto
        sc = self.levels.get(alpha)
        if sc is None:
            if len(self.levels) >= 64:
                self.levels = {self.alpha: self.proto}
            sc = self.levels[alpha] = self._make(alpha)
        return sc

    def add(self) -> None:
        """One more slot, fresh."""
        for c, v in zip(self.cols, self.fresh):
            c.append(v)

    def reset(self, i: int) -> None:
        for c, v in zip(self.cols, self.fresh):
            c[i] = v

    def materialise(self, i: int, arm: str, alpha: float | None = None) -> ConfidenceSequence:
        """Slot ``i`` as a sequence object of its own (a copy: changing it changes no column)."""
        d = self.scratch(alpha).snapshot()
        d["arm"] = arm
        for f, c in zip(self.fields, self.cols):
            d[f] = c[i]
        return sequence_from_snapshot(d, checked=False)  # (live state: checked when it was restored or updated)

    def put(self, i: int, cs: ConfidenceSequence) -> None:
        """Copy sequence ``cs`` into slot ``i``; ``ValueError`` if its kind or parameters are not the
        columns' (at its own level)."""
        if cs.kind != self.kind:
            raise ValueError(f"a {cs.kind!r} sequence cannot join {self.kind!r} columns")
        mine, theirs = self.scratch(cs.alpha).snapshot(), cs.snapshot()
        for d in (mine, theirs):
            for f in (*self.fields, "arm"):
                d.pop(f, None)
        if mine != theirs:
            raise ValueError(f"sequence of arm {cs.arm!r} has parameters {theirs}, the monitor's are {mine}")
        try:
            for f, c in zip(self.fields, self.cols):
                c[i] = getattr(cs, f)
        except TypeError:
            raise ValueError(f"sequence of arm {cs.arm!r} has a field of the wrong type: "
                             f"{ {f: getattr(cs, f) for f in self.fields} }") from None


class EDetectorColumns:
    """Every slot's e-detector statistics in one ``array('d')`` (``2 len(lambdas)`` values a slot) and its
    restart count; the detector's settings are one :class:`EDetector`'s, shared.

    >>> cols = EDetectorColumns(EDetector(alpha_cd=1e-4, low=0.0, high=1.0)); cols.add()
    >>> det = EDetector(alpha_cd=1e-4, low=0.0, high=1.0)
    >>> [cols.observe(0, x, 0.1, 0.3) for x in (1.0, 0.0)] == [det.observe(x, 0.1, 0.3) for x in (1.0, 0.0)]
    True
    >>> cols.materialise(0).snapshot() == det.snapshot()
    True
    """

    kind = EDetector.kind

    def __init__(self, proto: EDetector) -> None:
        self.proto = proto
        self.width = 2 * len(proto.lambdas)
        self.stat: array[float] = array("d")
        self.restarts: array[int] = array("q")
        self._zeros = array("d", bytes(8 * self.width))

    def add(self) -> None:
        self.stat.extend(self._zeros)
        self.restarts.append(0)

    def reset(self, i: int) -> None:
        w = self.width
        self.stat[i * w:(i + 1) * w] = self._zeros

    def clear(self, i: int) -> None:
        """Slot ``i`` as new (statistics and restart count)."""
        self.reset(i)
        self.restarts[i] = 0

    def observe(self, i: int, x: float, lo: float, hi: float) -> bool:
        """:meth:`EDetector.observe` on slot ``i``."""
        if self.proto.step(self.stat, i * self.width, x, lo, hi):
            self.reset(i)
            self.restarts[i] += 1
            return True
        return False

    def materialise(self, i: int) -> EDetector:
        p = self.proto
        det = EDetector(p.alpha_cd, low=p.low, high=p.high, lambdas=p.lambdas)
        w = self.width
        det.stat = self.stat[i * w:(i + 1) * w]
        det.restarts = self.restarts[i]
        return det

    def put(self, i: int, det: EDetector | WindowRestart) -> None:
        p = self.proto
        if not (isinstance(det, EDetector) and (det.alpha_cd, det.low, det.high, det.lambdas)
                == (p.alpha_cd, p.low, p.high, p.lambdas)):
            raise ValueError(f"restart rule {det.snapshot()} is not the monitor's ({p.snapshot()})")
        w = self.width
        self.stat[i * w:(i + 1) * w] = array("d", det.stat)
        self.restarts[i] = int(det.restarts)


class WindowColumns:
    """Every slot's window count and restart count; the rule is a scratch :class:`WindowRestart`.

    >>> cols = WindowColumns(WindowRestart(2)); cols.add()
    >>> [cols.observe(0, 1.0, 0.0, 1.0) for _ in range(3)], cols.materialise(0).snapshot()["restarts"]
    ([False, True, False], 1)
    """

    kind = WindowRestart.kind

    def __init__(self, proto: WindowRestart) -> None:
        self.proto = proto
        self.count: array[int] = array("q")
        self.restarts: array[int] = array("q")

    def add(self) -> None:
        self.count.append(0)
        self.restarts.append(0)

    def clear(self, i: int) -> None:
        self.count[i] = self.restarts[i] = 0

    def observe(self, i: int, x: float, lo: float, hi: float) -> bool:
        w = self.proto
        w.count, w.restarts = self.count[i], self.restarts[i]
        out = w.observe(x, lo, hi)
        self.count[i], self.restarts[i] = w.count, w.restarts
        return out

    def materialise(self, i: int) -> WindowRestart:
        w = WindowRestart(self.proto.window)
        w.count, w.restarts = self.count[i], self.restarts[i]
        return w

    def put(self, i: int, rule: EDetector | WindowRestart) -> None:
        if not (isinstance(rule, WindowRestart) and rule.window == self.proto.window):
            raise ValueError(f"restart rule {rule.snapshot()} is not the monitor's ({self.proto.snapshot()})")
        self.count[i], self.restarts[i] = int(rule.count), int(rule.restarts)


def _accessors(fields: tuple[str, ...], cols: list[Any]) -> tuple[Callable[[int, Any], Any], Callable[[int, Any], None]]:
    """``load(i, sc)`` and ``store(i, sc)`` for these fields and columns, one statement a field."""
    if not all(f.isidentifier() for f in fields):
        raise ValueError(f"sequence fields must be identifiers, got {fields!r}")
    ns: dict[str, Any] = {f"c{j}": c for j, c in enumerate(cols)}
    load = ["def load(i, sc):", *(f"    sc.{f} = c{j}[i]" for j, f in enumerate(fields)), "    return sc"]
    store = ["def store(i, sc):", *(f"    c{j}[i] = sc.{f}" for j, f in enumerate(fields))]
    exec("\n".join(load) + "\n" + "\n".join(store), ns)  # made from the identifiers checked above
    return ns["load"], ns["store"]


def nan_none(v: float) -> float | None:
    """A column's NaN as ``None`` (the columns' encoding of "none")."""
    return None if math.isnan(v) else v

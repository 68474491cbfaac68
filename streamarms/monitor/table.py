"""The monitor's keys in columns: :class:`KeyTable` (one slot per key) and :class:`KeyView` (the keys as
:class:`~.key.KeyState` objects, made on demand).

A key's evidence (:mod:`.key`: its segment sequence, restart rule, predictable interval ``base``, epoch
sequence, state, standing flag, counts) lives at its slot in :mod:`.columns`: numbers in arrays, the
group as an index into the table's list of group names. ``slot``: key -> slot, the only dict entry a key
costs here. :meth:`KeyTable.remove` frees a slot and :meth:`KeyTable.add` reuses freed slots first.

Encodings: ``state`` 0/1/2 = undecided/outlier/normal; ``since`` NaN = ``None``; ``ealpha`` (the level
of the key's epoch sequence) NaN = no epoch sequence yet.

>>> from streamarms.models import make_model
>>> t = KeyTable(make_model("bernoulli"), alpha=0.01, rule=None)
>>> i = t.add("a", "g"); t.samples[i] += 1
>>> ks = t.materialise(i); ks.key, ks.group, ks.samples, ks.state, ks.epoch_cs
('a', 'g', 1, 'undecided', None)
>>> t.remove("a"); t.add("b", "g") == i
True
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Mapping
from typing import Any

from ..confidence import sequence_for
from .columns import EDetectorColumns, SequenceColumns, WindowColumns, nan_none
from .key import NORMAL, OUTLIER, UNDECIDED, KeyState
from .restart import EDetector, WindowRestart

__all__ = ["KeyTable", "KeyView", "STATES"]

#: the state codes of the ``state`` column
STATES = (UNDECIDED, OUTLIER, NORMAL)
_CODE = {s: i for i, s in enumerate(STATES)}
_NAN = math.nan


class KeyTable:
    """Every key's evidence in columns (module docstring). ``rule``: a prototype restart rule (its
    settings are every key's) or ``None``."""

    def __init__(self, model: Any, *, alpha: float, rule: EDetector | WindowRestart | None) -> None:
        self.model = model
        self.alpha = alpha
        self.low, self.high = float(model.low), float(model.high)
        self.slot: dict[str, int] = {}
        self.free: list[int] = []
        self.group_names: list[str] = []
        self._group_ix: dict[str, int] = {}
        self.group = array("l")
        self.samples, self.restarts, self.epoch = array("q"), array("q"), array("q")
        self.state, self.flagged = array("b"), array("b")
        self.since, self.base_lo, self.base_hi, self.ealpha = array("d"), array("d"), array("d"), array("d")
        self.seg = SequenceColumns(sequence_for(model, alpha, ""), self._make)
        self.ecs = SequenceColumns(sequence_for(model, alpha, ""), self._make)
        self.rule: EDetectorColumns | WindowColumns | None = (
            EDetectorColumns(rule) if isinstance(rule, EDetector) else
            WindowColumns(rule) if isinstance(rule, WindowRestart) else None)

    def _make(self, alpha: float) -> Any:
        return sequence_for(self.model, alpha, "")

    def __len__(self) -> int:
        return len(self.slot)

    def group_index(self, group: str) -> int:
        ix = self._group_ix.get(group)
        if ix is None:
            ix = self._group_ix[group] = len(self.group_names)
            self.group_names.append(group)
        return ix

    # -- slots -----------------------------------------------------------------------------------
    def add(self, key: str, group: str) -> int:
        """A new key's slot (a freed one first), every column fresh."""
        g = self.group_index(group)
        if self.free:
            i = self.free.pop()
            self.group[i] = g
            self.samples[i] = self.restarts[i] = self.epoch[i] = self.state[i] = self.flagged[i] = 0
            self.since[i], self.ealpha[i] = _NAN, _NAN
            self.base_lo[i], self.base_hi[i] = self.low, self.high
            self.seg.reset(i)
            self.ecs.reset(i)
            if self.rule is not None:
                self.rule.clear(i)
        else:
            i = len(self.group)
            self.group.append(g)
            for c in (self.samples, self.restarts, self.epoch, self.state, self.flagged):
                c.append(0)
            self.since.append(_NAN)
            self.ealpha.append(_NAN)
            self.base_lo.append(self.low)
            self.base_hi.append(self.high)
            self.seg.add()
            self.ecs.add()
            if self.rule is not None:
                self.rule.add()
        self.slot[key] = i
        return i

    def remove(self, key: str) -> None:
        """Forget ``key``: its slot is reused by the next :meth:`add`."""
        self.free.append(self.slot.pop(key))

    # -- objects ---------------------------------------------------------------------------------
    def materialise(self, i: int, key: str | None = None) -> KeyState:
        """Slot ``i`` as a :class:`KeyState` (a copy: changing it changes no column)."""
        if key is None:
            key = next(k for k, v in self.slot.items() if v == i)
        ks = KeyState.__new__(KeyState)
        ks.key, ks.group = key, self.group_names[self.group[i]]
        ks.segment = self.seg.materialise(i, key)
        ks.rule = self.rule.materialise(i) if self.rule is not None else None
        ks.base = (self.base_lo[i], self.base_hi[i])
        ks.epoch = self.epoch[i]
        ea = self.ealpha[i]
        ks.epoch_cs = None if math.isnan(ea) else self.ecs.materialise(i, key, ea)
        ks.state = STATES[self.state[i]]
        ks.flagged = bool(self.flagged[i])
        ks.samples, ks.restarts = self.samples[i], self.restarts[i]
        ks.segment_since = nan_none(self.since[i])
        return ks

    def put(self, ks: KeyState) -> int:
        """A key restored from its :class:`KeyState` (``ValueError`` if its settings are not the table's)."""
        if ks.key in self.slot:
            raise ValueError(f"key {ks.key!r} appears twice in the snapshot")
        if ks.segment.alpha != self.alpha:
            raise ValueError(f"key {ks.key!r}: its sequence has level {ks.segment.alpha}, the monitor's alpha is "
                             f"{self.alpha}")
        if (ks.rule is None) != (self.rule is None):
            raise ValueError(f"key {ks.key!r}: restart rule {ks.rule and ks.rule.snapshot()} does not match the "
                             "monitor's")
        if ks.state not in _CODE:
            raise ValueError(f"key {ks.key!r}: unknown state {ks.state!r}")
        i = self.add(ks.key, ks.group)
        try:
            self.seg.put(i, ks.segment)
            if ks.rule is not None and self.rule is not None:
                self.rule.put(i, ks.rule)
            if ks.epoch_cs is not None:
                self.ecs.put(i, ks.epoch_cs)
                self.ealpha[i] = ks.epoch_cs.alpha
            self.base_lo[i], self.base_hi[i] = ks.base
            self.epoch[i], self.state[i], self.flagged[i] = ks.epoch, _CODE[ks.state], bool(ks.flagged)
            self.samples[i], self.restarts[i] = ks.samples, ks.restarts
            self.since[i] = _NAN if ks.segment_since is None else ks.segment_since
        except (TypeError, ValueError, OverflowError) as e:
            self.remove(ks.key)
            raise ValueError(f"key {ks.key!r}: bad snapshot ({e})") from None
        return i


class KeyView(Mapping[str, KeyState]):
    """The table's keys as a read-only mapping ``key -> KeyState`` (each made on access: a copy).

    >>> from streamarms.models import make_model
    >>> t = KeyTable(make_model("bernoulli"), alpha=0.01, rule=None); v = KeyView(t)
    >>> v
    {}
    >>> _ = t.add("a", "g"); list(v), "a" in v, v["a"].group
    (['a'], True, 'g')
    """

    def __init__(self, table: KeyTable) -> None:
        self.table = table

    def __getitem__(self, key: str) -> KeyState:
        return self.table.materialise(self.table.slot[key], key)

    def __contains__(self, key: object) -> bool:
        return key in self.table.slot

    def __iter__(self) -> Iterator[str]:
        return iter(self.table.slot)

    def __len__(self) -> int:
        return len(self.table.slot)

    def __repr__(self) -> str:
        return repr(dict(self))

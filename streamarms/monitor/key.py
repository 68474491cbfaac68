"""One key's evidence in the continuous monitor: its segment, its restart rule, its epoch sequence.

The monitor keeps every key's evidence in columns (:mod:`.table`, issue 13); a :class:`KeyState` is that
evidence as an object, made on demand (``monitor.keys[key]``: a copy) and the unit of the snapshot format
(``KeyState.snapshot()`` / ``restore``).

* ``segment``: the key's anytime-valid confidence sequence (level ``1 - alpha``) over its rewards since its
  last restart -- what it is classified by;
* ``rule``: the restart rule (:mod:`.restart`) fed with the segment's *predictable* interval ``base``
  (refreshed at the threshold track's count levels, so an interval evaluation is O(1) amortised);
* ``epoch_cs``: the sequence over its rewards since its group's epoch began, which feeds the threshold;
* ``flagged``: whether an ``outlier`` alert is standing (cleared only by evidence of ``normal``).

>>> from streamarms.confidence import BetaBinomialCS
>>> ks = KeyState("a", "g", BetaBinomialCS(0.01, "a"))
>>> ks.state, ks.flagged, ks.samples
('undecided', False, 0)
"""

from __future__ import annotations

from typing import Any

from ..confidence import ConfidenceSequence, sequence_from_snapshot
from .restart import EDetector, WindowRestart, restart_from_snapshot

__all__ = ["KeyState", "OUTLIER", "NORMAL", "UNDECIDED"]

OUTLIER, NORMAL, UNDECIDED = "outlier", "normal", "undecided"


class KeyState:
    """One key's evidence as an object (module docstring); the monitor's columns make and take it."""

    __slots__ = ("key", "group", "segment", "rule", "base", "epoch", "epoch_cs", "state", "flagged", "samples",
                 "restarts", "segment_since")

    def __init__(self, key: str, group: str, segment: ConfidenceSequence,
                 rule: EDetector | WindowRestart | None = None) -> None:
        self.key, self.group = str(key), str(group)
        self.segment = segment
        self.rule = rule
        self.base = (segment.low if segment.low is not None else -float("inf"),
                     segment.high if segment.high is not None else float("inf"))
        self.epoch = 0
        self.epoch_cs: ConfidenceSequence | None = None
        self.state = UNDECIDED
        self.flagged = False
        #: all rewards ever seen, restarts of the segment, stream time of the last restart
        self.samples = 0
        self.restarts = 0
        self.segment_since: float | None = None

    def snapshot(self) -> dict[str, Any]:
        return {"key": self.key, "group": self.group, "segment": self.segment.snapshot(),
                "rule": self.rule.snapshot() if self.rule is not None else None, "base": list(self.base),
                "epoch": self.epoch, "epoch_cs": self.epoch_cs.snapshot() if self.epoch_cs is not None else None,
                "state": self.state, "flagged": self.flagged, "samples": self.samples,
                "restarts": self.restarts, "segment_since": self.segment_since}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> KeyState:
        obj = cls.__new__(cls)
        d = dict(state)
        for name in ("key", "group"):  # (a key of 5 was kept, and sorting the keys failed later)
            if not isinstance(d.get(name), str):
                raise ValueError(f"key state snapshot's {name!r} is {str(d.get(name))[:40]}: a string expected")
        d["segment"] = sequence_from_snapshot(d["segment"])
        d["rule"] = restart_from_snapshot(d["rule"]) if d["rule"] is not None else None
        d["base"] = tuple(d["base"])
        d["epoch_cs"] = sequence_from_snapshot(d["epoch_cs"]) if d["epoch_cs"] is not None else None
        for k, v in d.items():
            try:
                setattr(obj, k, v)
            except AttributeError:
                raise ValueError(f"key state snapshot has an unknown field {k!r}") from None
        return obj

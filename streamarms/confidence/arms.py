"""The engine's confidence sequences as a paper policy's arm intervals (issue 9 item 3).

roai and GOLD build their arm intervals with a union bound over sample counts (level ``6 delta /
(pi^2 n m^2)`` or ``... T^2``). An anytime-valid sequence per arm at level ``delta / n`` holds at every
count at once, so it can stand in for those intervals wherever a policy's proof only needs "every arm's
mean is in its interval at every moment" (a union over the n arms alone); the policy's rule is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import ConfidenceSequence, sequence_from_snapshot
from .factory import sequence_for

__all__ = ["ArmSequences"]


class ArmSequences:
    """One :func:`sequence_for` sequence per arm at level ``alpha`` each (Bernoulli or bounded models).

    >>> from streamarms.models import make_model
    >>> seqs = ArmSequences(make_model("bernoulli"), 0.05, ["a", "b"])
    >>> for x in (1.0, 0.0, 1.0, 1.0):
    ...     seqs.update(0, x)
    >>> lo, hi = seqs.interval(0); 0.0 < lo < 0.75 < hi <= 1.0
    True
    >>> seqs.radius_about(0, 0.75) == max(0.75 - lo, hi - 0.75)
    True
    >>> ArmSequences.restore(seqs.snapshot()).interval(0) == (lo, hi)
    True
    """

    def __init__(self, model: Any, alpha: float, arms: Sequence[str]) -> None:
        if getattr(model, "name", None) not in ("bernoulli", "bounded"):
            raise ValueError(f"intervals 'cs' needs a bernoulli or bounded reward model, got {model.name!r}")
        self.seqs: list[ConfidenceSequence] = [sequence_for(model, alpha, a) for a in arms]

    def update(self, i: int, x: float) -> None:
        """Add arm i's reward ``x`` (already checked by the policy's reward model)."""
        self.seqs[i]._update(x)

    def interval(self, i: int) -> tuple[float, float]:
        return self.seqs[i].interval()

    def radius_about(self, i: int, centre: float) -> float:
        """The smallest radius r with arm i's interval inside ``[centre - r, centre + r]``."""
        lo, hi = self.seqs[i].interval()
        return max(centre - lo, hi - centre)

    def snapshot(self) -> list[dict[str, Any]]:
        return [c.snapshot() for c in self.seqs]

    @classmethod
    def restore(cls, states: list[dict[str, Any]]) -> ArmSequences:
        obj = cls.__new__(cls)
        obj.seqs = [sequence_from_snapshot(s) for s in states]
        return obj

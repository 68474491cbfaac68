"""The scheduler's counters: :class:`SchedulerStats`.

Plain integers, bumped on the record path and read by :mod:`streamarms.metrics` at scrape time (never
per record). ``records = used + refused + held + skipped`` at every moment.

>>> c = SchedulerStats()
>>> c.records, c.invalid["not_json"], c.refused
(0, 0, 0)
>>> c.invalid["not_json"] += 1; d = SchedulerStats(); d.restore(c.snapshot()); d == c
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .records import INVALID_REASONS

__all__ = ["SchedulerStats"]


def _no_invalid() -> dict[str, int]:
    return {r: 0 for r in INVALID_REASONS}


@dataclass(slots=True)
class SchedulerStats:
    """Counters of one scheduler over its whole life (all episodes)."""

    #: records offered
    records: int = 0
    #: rewards given to a policy
    used: int = 0
    #: records refused, by reason (:data:`~streamarms.runtime.records.INVALID_REASONS`)
    invalid: dict[str, int] = field(default_factory=_no_invalid)
    #: active mode: answers with no matching request (part of skipped)
    unmatched: int = 0
    #: heads given up (``policy.defer``)
    timeouts: int = 0
    #: held rewards never given to a policy (part of skipped)
    wasted: int = 0
    #: active mode: sample requests published
    requests_sent: int = 0
    #: detection episodes completed
    episodes_done: int = 0

    @property
    def refused(self) -> int:
        return sum(self.invalid.values())

    def snapshot(self) -> dict[str, Any]:
        return asdict(self)

    def restore(self, state: dict[str, Any]) -> None:
        """Load :meth:`snapshot` output (in place: the parts that count hold this object)."""
        for k in ("records", "used", "unmatched", "timeouts", "wasted", "requests_sent", "episodes_done"):
            setattr(self, k, int(state[k]))
        self.invalid = _no_invalid() | {k: int(v) for k, v in state["invalid"].items()}

"""The scheduler's counters (:class:`SchedulerStats`) and a typed reading of them (:class:`StatsView`).

Plain integers, bumped on the record path; :mod:`streamarms.metrics` reads a :class:`StatsView` of them
at scrape time (never per record). ``records = used + refused + held + skipped`` at every moment.

>>> c = SchedulerStats()
>>> c.records, c.invalid["not_json"], c.refused
(0, 0, 0)
>>> c.records += 1; c.invalid["not_json"] += 1; d = SchedulerStats(); d.restore(c.snapshot()); d == c
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .records import INVALID_REASONS

__all__ = ["SchedulerStats", "StatsView"]


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
        """Load :meth:`snapshot` output (in place: the parts that count hold this object); ``ValueError`` naming the
        counter for one that no run can have counted (negative, not a whole number, more used and refused records
        than records): a hand-edited checkpoint, re-signed, said "189.7% of the records used".

        >>> c = SchedulerStats(); c.restore({**SchedulerStats(records=5).snapshot(), "used": 9})
        Traceback (most recent call last):
        ...
        ValueError: checkpoint counters: 9 records used and 0 refused of 5 records: no run counts that
        """
        got = {k: _count(state[k], k) for k in ("records", "used", "unmatched", "timeouts", "wasted", "requests_sent",
                                                  "episodes_done")}
        invalid = {str(k): _count(v, f"invalid.{k}") for k, v in state["invalid"].items()}
        refused = sum(invalid.values())
        if got["used"] + refused > got["records"] or max(got["wasted"], got["unmatched"]) > got["records"]:
            raise ValueError(f"checkpoint counters: {got['used']:,} records used and {refused:,} refused of "
                             f"{got['records']:,} records: no run counts that")
        if "ep_start_records" in state and _count(state["ep_start_records"], "ep_start_records") > got["records"]:
            raise ValueError(f"checkpoint counter 'ep_start_records' is {state['ep_start_records']!r}: the record the "
                             f"episode started at is one of the {got['records']:,} records counted")
        for k, v in got.items():
            setattr(self, k, v)
        self.invalid = _no_invalid() | invalid


def _count(value: Any, name: str) -> int:
    """``value`` as a count (a whole number >= 0), or ``ValueError`` naming the counter."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
            or (isinstance(value, float) and not (math.isfinite(value) and value == int(value))):
        raise ValueError(f"checkpoint counter {name!r} is {value!r}: a count is a whole number >= 0")
    return int(value)


@dataclass(frozen=True)
class StatsView:
    """The counters and gauges of a scheduler at one moment: what metrics, health and summaries read
    (:meth:`Scheduler.stats_view <streamarms.runtime.Scheduler.stats_view>`).

    Its counters repeat :class:`SchedulerStats`' names on purpose: a frozen copy at one moment that
    readers see flat, beside the gauges the scheduler's parts compute (held, known arms, in flight, ...).

    >>> v = StatsView(records=10, used=3, skipped=7, invalid={"not_json": 1})
    >>> v.records - v.used, v.as_dict()["invalid"]
    (7, {'not_json': 1})
    """

    #: records offered, rewards given to the policy, read but not used, held for planned arms right now
    records: int = 0
    used: int = 0
    skipped: int = 0
    held: int = 0
    #: held rewards never used (part of skipped); active answers with no request (part of skipped)
    wasted: int = 0
    unmatched: int = 0
    #: records refused, by reason
    invalid: Mapping[str, int] = field(default_factory=dict)
    #: wants / requests given up; sample requests published (active mode)
    timeouts: int = 0
    requests_sent: int = 0
    #: episodes completed; the current episode's number and phase; records since it started
    episodes: int = 0
    episode: int = 0
    phase: str = ""
    episode_records: int = 0
    #: keys known (the arms of the next episode); alerts emitted by kind
    known_arms: int = 0
    alerts: Mapping[str, int] = field(default_factory=dict)
    #: active mode: requests awaiting an answer; passive: planned arms wanted now
    in_flight: int = 0
    window: int = 0

    @classmethod
    def of_scheduler(cls, s: Any) -> StatsView:
        """The view of a :class:`~streamarms.runtime.Scheduler` ``s`` now (its counters and its parts)."""
        c, held = s.counters, s.plan.held_count()
        return cls(records=c.records, used=c.used, skipped=c.records - c.used - c.refused - held, held=held,
                   wasted=c.wasted, unmatched=c.unmatched, invalid=dict(c.invalid), timeouts=c.timeouts,
                   requests_sent=c.requests_sent, episodes=c.episodes_done, episode=s.episodes.episode,
                   phase=s.episodes.phase, episode_records=c.records - s.episodes.start_records,
                   known_arms=len(s.keys), alerts=dict(s.alerts.counts),
                   in_flight=len(s.requests.in_flight) if s.requests else 0, window=len(s.plan.window))

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON summaries)."""
        return {f.name: (dict(v) if isinstance(v := getattr(self, f.name), Mapping) else v) for f in fields(self)}

"""Silent keys leave the running episode: :class:`SilenceWatch`.

A k-sigma policy needs samples of every arm of its episode (WRR/RR sample each arm once before
anything else, and ``defer`` does not move them on; CS's threshold needs every arm's mean), so a key
that goes silent -- one record before the episode and none since, or one that stops -- would hold the
whole episode, and every later one, hostage. The rule, in records of the stream (passive mode; a
function of the record sequence alone, so a run resumed from a checkpoint ends as an uninterrupted
one): when an arm of the running episode has had no record for ``S`` records (since its last record, or
since the episode started if it had none since) and the policy is not done, the episode ends with the
reason ``silent keys: K (no record in S records)``, those keys are forgotten by the key registry (their
next record makes them new keys, which join a later episode as new keys do) and the next episode starts
at once on the others (if at least ``min_arms``).

``S`` is :attr:`SchedulerConfig.episode_silence_records <streamarms.runtime.config.SchedulerConfig>`:
``0`` turns the rule off, ``None`` (the default) is ``max(10 * discovery_records, 100 * n)`` for an
episode of ``n`` arms: a key whose records come at about 1/100 of the average key's rate is left out
rather than waited for. The rule is off in active mode (records come only for the arms requested) and
with a fixed arm set (``arms=``: a forgotten arm could never come back).

Cost: the record path stores the record's count under its arm (one dict store, :attr:`last`); the
check runs when the record count reaches :attr:`next_check` -- the scheduler's record deadline --
and is O(arms); the next check is at the earliest moment an arm can reach ``S`` records of silence,
but at least ``S // 16`` records later, so an arm's silence is noticed after between ``S`` and
``S + S // 16`` records, and the checks cost at most ``16 n / S`` (< 0.2 with the default) dict reads
per record.

>>> from streamarms.runtime.config import SchedulerConfig
>>> w = SilenceWatch(SchedulerConfig(episode_silence_records=100))
>>> w.begin(["a", "b", "c"], records=0)
>>> for r in range(1, 101):
...     w.last["ab"[r % 2]] = r
>>> w.next_check, w.silent(100)
(100, ['c'])
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..policies.base import Decision, Policy
from .config import ACTIVE, SchedulerConfig
from .episodes import IDLE

__all__ = ["SilenceWatch", "auto_silence_records"]


def auto_silence_records(discovery_records: int, n_arms: int) -> int:
    """The default ``S`` for an episode of ``n_arms`` arms.

    >>> auto_silence_records(1000, 30), auto_silence_records(1000, 500)
    (10000, 50000)
    """
    return max(10 * discovery_records, 100 * n_arms)


class SilenceWatch:
    """The last record of each arm of the running episode, and the silence rule (module docstring)."""

    def __init__(self, config: SchedulerConfig, fixed: bool = False) -> None:
        self.config = config
        self.enabled = config.mode != ACTIVE and not fixed and config.episode_silence_records != 0
        #: arm -> the record count of its last record (the record path writes it; it may hold keys
        #: outside the episode, which are never read)
        self.last: dict[str, int] = {}
        self.arms: list[str] = []  # the running episode's
        self.limit = 0  # S of the running episode (0: no rule)
        self.start = 0  # the record count when it started
        self.next_check: float = math.inf
        self.ended: list[str] = []  # the silent keys of the episode being ended

    def limit_for(self, n_arms: int) -> int:
        if not self.enabled:
            return 0
        s = self.config.episode_silence_records
        return auto_silence_records(self.config.discovery_records, n_arms) if s is None else s

    def begin(self, arms: list[str], records: int) -> None:
        """An episode on ``arms`` starts at record count ``records``."""
        self.arms, self.limit, self.start = list(arms), self.limit_for(len(arms)), records
        self.last.clear()  # in place: the record path holds it
        self.last.update(dict.fromkeys(self.arms, records))
        self.next_check = records + self.limit if self.limit else math.inf

    def unheard(self) -> list[str]:
        """The running episode's arms with no record since it started (so no sample either), the rule on or off."""
        return [a for a in self.arms if self.last.get(a, self.start) <= self.start]

    def end(self) -> None:
        self.arms, self.limit, self.next_check = [], 0, math.inf

    def silent(self, records: int) -> list[str]:
        """The arms silent at record count ``records`` (then :attr:`next_check` is left as it is); if
        none, :attr:`next_check` moves to the next moment one may be."""
        last, s = self.last, self.limit
        oldest = min(last[a] for a in self.arms)
        if records - oldest >= s:
            return [a for a in self.arms if records - last[a] >= s]
        self.next_check = max(oldest + s, records + max(1, s // 16))
        return []

    def enforce(self, s: Any, now: float) -> bool:
        """At a record deadline of ``s`` (the scheduler; ``Any``: importing it would be a cycle) in a
        running episode: end the episode if an arm is silent. Returns whether it did."""
        records = s.counters.records
        if records < self.next_check:
            return False
        silent = self.silent(records)
        if not silent:
            s.refresh_deadline()
            return False
        self.ended = silent
        s.end_episode(now, f"silent keys: {', '.join(silent)} (no record in {self.limit:,} records)")
        return True

    def decision(self, d: Decision) -> Decision:
        """The decision an episode ends with, for the alerts: a key left out for silence was not found
        normal (a flagged one is not ``cleared`` by it)."""
        if not self.ended:
            return d
        gone = set(self.ended)
        return replace(d, normals=[a for a in d.normals if a not in gone])

    def after_end(self, s: Any, now: float) -> None:
        """The episode has ended (``s.episodes.end``): forget its silent keys, and let the next episode
        start at once (not after ``episode_interval``)."""
        silent, self.ended = self.ended, []
        self.end()
        if silent:
            s.keys.forget(silent)
            if s.episodes.phase == IDLE:
                s.episodes.next_start = now

    def snapshot(self) -> dict[str, Any]:
        return {"limit": self.limit, "start": self.start, "next_check": None if self.next_check == math.inf else self.next_check,
                "last": {a: self.last[a] for a in self.arms}}

    def restore(self, state: dict[str, Any] | None, policy: Policy | None, records: int) -> None:
        """Load :meth:`snapshot` output (``policy``: the running episode's, ``None`` if none runs); ``state``
        ``None`` (a snapshot from before the rule) with an episode running: its silence counts start at
        ``records``, the restore's."""
        if policy is None:
            return self.end()
        arms = list(policy.arms)
        if state is None:
            return self.begin(arms, records)
        self.arms, self.limit, self.start = arms, int(state["limit"]), int(state["start"])
        self.last.clear()
        self.last.update({a: int(state["last"].get(a, records)) for a in self.arms})
        self.next_check = math.inf if state["next_check"] is None else int(state["next_check"])

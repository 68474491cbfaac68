"""Discovery of the partitions a member brings into a group episode that is still announcing.

A group episode's key set is fixed once every partition has an announcement (:mod:`streamarms.group_member`,
step 2), and a key first seen later waits for the next episode. A member that joins while the group
announces (it started, or got partitions in a rebalance, after another member announced) takes each
partition over from its value of the episode if there is one; a partition the group has never announced
(no value at all: the group's first episode) has no key list on the board, and the member has read none of
its records yet. Announcing it at once with the keys known then (none) fixed the episode's key set without
that partition's keys, and with no ``--episode-timeout`` no next episode ever came for them.

So such a partition is announced only once this member has *discovered* it, by the rule a single daemon's
first episode follows (:mod:`streamarms.runtime.episodes`, the Kafka gate of
:mod:`streamarms.connectors.discovery`): every such partition has delivered a record, and since the last of
them did, either ``discovery_records`` records passed without a new key of those partitions or
``discovery_seconds`` of stream time; or ``cap`` seconds of wall time after the join (a partition that stays
silent: its keys join the next episode). Until then the group's episode waits (it starts once every
partition is announced), so the first group episode covers every partition's keys.

>>> d = PartitionDiscovery({"t:1", "t:2"}, records=3, seconds=10.0, cap=60.0, wall=0.0)
>>> d.over({"t:1": 2}, records=5, now=100.0, wall=1.0)  # t:2 has delivered nothing yet
False
>>> d.over({"t:1": 2, "t:2": 1}, records=6, now=101.0, wall=2.0), d.over({"t:1": 2, "t:2": 1}, 9, 102.0, 3.0)
(False, True)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["PartitionDiscovery"]

log = logging.getLogger("streamarms.group")


class PartitionDiscovery:
    """The discovery of ``partitions`` (module docstring): :meth:`over` is asked with the keys known of each
    (a count), the member's record count, its stream time and the wall time."""

    def __init__(self, partitions: Iterable[str], *, records: int, seconds: float, cap: float, wall: float) -> None:
        self.waiting = set(partitions)
        self.records, self.seconds, self.cap = int(records), float(seconds), float(cap)
        self.joined = float(wall)
        self.keys = -1  # keys of the partitions at the last look
        self.last_new = 0  # the record count when the last of them appeared
        self.since: float | None = None  # stream time when every partition had delivered

    @classmethod
    def begin(cls, partitions: set[str], pending: PartitionDiscovery | None, config: Any, wall: float,
              part: dict[str, str], episode: int) -> PartitionDiscovery:
        """The discovery of ``partitions`` (and of ``pending``'s, whose rule starts again) by the rule of
        ``config`` (a :class:`~streamarms.runtime.config.SchedulerConfig`); their keys leave ``part`` (arm ->
        partition: announced now), to be announced with the others of their partition once discovered."""
        waiting = set(partitions) | (pending.waiting if pending is not None else set())
        for a in [a for a, q in part.items() if q in waiting]:
            del part[a]
        log.info("group episode %d is announcing: %s new to the group, announced once discovered here",
                 episode, ", ".join(sorted(waiting)))
        return cls(waiting, records=config.discovery_records, seconds=config.discovery_seconds,
                   cap=config.discovery_seconds, wall=wall)

    def drop(self, partitions: Iterable[str]) -> None:
        """``partitions`` left this member (a rebalance): their discovery is their new owner's."""
        self.waiting -= set(partitions)

    def over(self, keys: Mapping[str, int], records: int, now: float, wall: float) -> bool:
        """Whether the waiting partitions are discovered (module docstring)."""
        if not self.waiting:
            return True
        n = sum(keys.get(p, 0) for p in self.waiting)
        if n != self.keys:
            self.keys, self.last_new = n, records
        if self.since is None and all(keys.get(p, 0) for p in self.waiting):
            self.since, self.last_new = now, records  # the last partition delivered: the rule starts here
        if self.since is not None and (records - self.last_new >= self.records or now >= self.since + self.seconds):
            return True
        if wall - self.joined >= self.cap:
            silent = sorted(p for p in self.waiting if not keys.get(p))
            log.warning("group: discovery of %s ends after %g s%s", ", ".join(sorted(self.waiting)), self.cap,
                        f" without a record from {', '.join(silent)}: their keys join the next episode" if silent else "")
            return True
        return False

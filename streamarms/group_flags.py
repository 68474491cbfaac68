"""The standing outlier flags of a detecting consumer group's keys move with their partitions.

An :class:`~streamarms.alerts.AlertManager` keeps, across episodes, the keys currently *flagged* as
outliers: a flagged key is not alerted again (without ``--alert-repeat``) and gets a ``cleared`` alert
when it turns normal. In a group a key lives in one partition and a partition has one owner, so the
flag of a key is part of its partition's state, like its confidence sequence
(:mod:`streamarms.group_member`, *Rebalance*): every value a member publishes for a partition carries
``flagged`` -- ``{key: episode}`` for the partition's keys flagged on this member -- and a member that
takes a partition over (mid-episode or between episodes) adopts the value's flags for the partition's
keys, updated by the value's key states (a key the value shows decided an outlier is flagged, one it
shows normal is not: the previous owner alerted, or cleared, it); the member the partition left drops
the flags of its keys. So one member holds a key's flag: one ``outlier`` alert per key across the group,
a ``cleared`` one from whichever member owns the key when it turns normal, and summing
``streamarms_flagged_arms`` over the members counts each flagged key once.

>>> from streamarms.alerts import AlertManager
>>> am = AlertManager("cs-group", 0.1)
>>> am.flagged = {"k3": 1, "k4": 2}
>>> flags = StandingFlags(am, {"k3": "t:0", "k4": "t:1", "k5": "t:1"}.get)
>>> board = {}
>>> FlaggingPublish(board.__setitem__, flags)("t:0", {"episode": 2})
>>> board["t:0"]
{'episode': 2, 'flagged': {'k3': 1}}
>>> flags.adopt("t:1", {"episode": 3, "flagged": {"k5": 2}, "arms": {"k4": {"state": -1}, "k5": None}})
>>> flags.keep({"t:1"}, {}); am.flagged
{'k5': 2}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

__all__ = ["FlaggingPublish", "StandingFlags"]


class StandingFlags:
    """The flags of ``alerts`` (an :class:`~streamarms.alerts.AlertManager`) by partition: ``partition_of(key)``
    (``None``: not seen yet) tells a key's partition (module docstring)."""

    def __init__(self, alerts: Any, partition_of: Callable[[str], str | None]) -> None:
        self.alerts, self.partition_of = alerts, partition_of

    def of(self, partition: str) -> dict[str, int]:
        """The flagged keys of ``partition`` and the episodes they were flagged in."""
        return {a: e for a, e in self.alerts.flagged.items() if self.partition_of(a) == partition}

    def adopt(self, partition: str, value: Mapping[str, Any], replace: bool = True) -> None:
        """``partition`` is taken over from ``value`` (its latest on the board): its keys' flags are the
        value's (``replace=False``: added to this member's), then its key states of the value's episode
        (outlier: flagged, normal: not)."""
        flagged = self.alerts.flagged
        arms = value.get("arms")
        arms = arms if isinstance(arms, Mapping) else {}
        for a in [a for a in flagged if replace and (a in arms or self.partition_of(a) == partition)]:
            del flagged[a]
        got = value.get("flagged")
        if isinstance(got, Mapping):
            flagged.update({str(a): int(e) for a, e in got.items() if isinstance(e, int)})
        episode = value.get("episode")
        for a, st in arms.items():
            state = st.get("state") if isinstance(st, Mapping) else None
            if state == 1 and isinstance(episode, int):
                flagged[a] = episode
            elif state:  # decided normal
                flagged.pop(a, None)

    def adopt_board(self, values: Mapping[str, Mapping[str, Any]], partitions: Iterable[str],
                    stats_key: Callable[[str], str], member: str) -> None:
        """Partitions a member begins an episode on adopt the flags of their latest value: another member's
        replace this member's (the partition moved here: its previous owner held them); this member's own
        are added (a restart from an older checkpoint; flags set at an episode's end by timeout are in no
        value, so none is removed)."""
        for p in sorted(partitions):
            v = values.get(stats_key(p))
            if isinstance(v, Mapping) and isinstance(v.get("episode"), int):
                self.adopt(p, v, replace=v.get("member") != member)

    def keep(self, partitions: Iterable[str], values: Mapping[str, Mapping[str, Any]],
             stats_key: Callable[[str], str] = str) -> None:
        """Only ``partitions`` stay with this member: the flags of other partitions' keys go (their new owner
        holds them). A key whose partition this member has not read since it started (flags restored from
        a checkpoint) is placed by the board's ``values`` naming it (``stats_key(partition)`` -> value)."""
        keep = set(partitions)
        kept = {stats_key(p) for p in keep}
        flagged = self.alerts.flagged
        for a in list(flagged):
            p = self.partition_of(a)
            if p is not None:
                gone = p not in keep
            else:
                where = {k for k, v in values.items() if isinstance(v.get("arms"), Mapping) and a in v["arms"]}
                gone = bool(where) and not where & kept
            if gone:
                del flagged[a]

    def stamp(self, partition: str, value: dict[str, Any]) -> dict[str, Any]:
        """``value`` with its partition's flags (a shallow copy: the policy's own dict is not changed)."""
        return {**value, "flagged": self.of(partition)}


class FlaggingPublish:
    """A member's ``publish(partition, value)``: the wrapped one, every value stamped with its partition's
    flags (:meth:`StandingFlags.stamp`); a stepping publish (``steps``, :class:`~streamarms.group_track.
    SteppedPublish`) keeps stepping."""

    def __init__(self, publish: Callable[[str, dict[str, Any]], None], flags: StandingFlags) -> None:
        self.publish, self.flags = publish, flags
        inner_steps = getattr(publish, "steps", None)
        if inner_steps is not None:
            def steps(partition: str, value: dict[str, Any]) -> Iterator[Any]:
                return inner_steps(partition, flags.stamp(partition, value))
            self.steps = steps

    def __call__(self, partition: str, value: dict[str, Any]) -> None:
        self.publish(partition, self.flags.stamp(partition, value))

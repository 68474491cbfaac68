"""A group's k-sigma threshold in epochs: restarted whenever the keys it aggregates change.

``theta_G = mu_G + k sigma_G`` is the k-sigma threshold of the current means of the keys of group ``G``.
Its interval is the engine's :class:`~streamarms.confidence.threshold.ThresholdTrack`, which is valid
while those means are constant. A group therefore lives in **epochs**: a new epoch (a fresh track over
the current members) starts when a key joins the group and when a member's restart rule restarts it (its
mean moved, so theta moved). Each key feeds the track from an *epoch sequence* of its rewards since the
epoch began (created lazily on its first reward of the epoch: a restart is O(1)).

A member with no record for ``ttl`` of the group's records is dropped (a new epoch starts without it; it
joins again with its next record): otherwise a key that went silent would hold the track's common count
level, and so the threshold, still forever. Members are kept in least-recently-seen order
(``OrderedDict``), so finding the stale ones is O(1) amortised per record.

Probability budget per epoch: ``alpha_theta`` in all, half to the track, half split over the ``n``
members' epoch sequences (as in the ``cs`` policy); by a union bound the threshold's interval holds at
every moment of the epoch with probability ``>= 1 - alpha_theta`` while the group's means are constant.

>>> g = ThresholdGroup("eu", k=2.0, alpha_theta=0.01, low=0.0, high=1.0, ttl=3)
>>> g.join("a"); g.join("b"); g.epoch, g.n
(2, 2)
>>> g.interval()
(-inf, inf)
>>> [g.touch("a") for _ in range(4)], g.members, g.epoch
([[], [], [], ['b']], ['a'], 3)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

from ..confidence.threshold import ThresholdTrack
from ..policies.snapshot_fields import Fields
from ..validation import short_repr

__all__ = ["ThresholdGroup"]


class ThresholdGroup:
    """The members of one group and the threshold track of their current epoch (module docstring)."""

    def __init__(self, name: str, *, k: float, alpha_theta: float, low: float, high: float,
                 ttl: int | None = None) -> None:
        if ttl is not None and (isinstance(ttl, bool) or not (isinstance(ttl, int) and ttl >= 1)):
            raise ValueError(f"ttl must be a positive number of records or None, got {ttl!r}")
        self.name = str(name)
        self.k, self.alpha_theta, self.low, self.high = float(k), float(alpha_theta), float(low), float(high)
        self.ttl = ttl
        #: member -> the group's record count at its last record, least recently seen first
        self.last_seen: OrderedDict[str, int] = OrderedDict()
        self.records = 0
        self.epoch = 0
        self.track: ThresholdTrack | None = None
        #: stream time at which the current epoch began (``None``: before any record)
        self.since: float | None = None

    @property
    def n(self) -> int:
        return len(self.last_seen)

    @property
    def members(self) -> list[str]:
        return list(self.last_seen)

    def __contains__(self, key: str) -> bool:
        return key in self.last_seen

    @property
    def alpha_member(self) -> float:
        """The level of each member's epoch sequence in the current epoch."""
        return self.alpha_theta / 2.0 / max(self.n, 1)

    def join(self, key: str, time: float | None = None) -> None:
        """A new key: theta's definition changed, start a new epoch including it."""
        self.last_seen[str(key)] = self.records
        self.restart(time)

    def leave(self, key: str, time: float | None = None) -> bool:
        """Member ``key`` leaves for good (the monitor forgot it): a new epoch without it. Whether it was
        a member."""
        if key not in self.last_seen:
            return False
        del self.last_seen[key]
        self.restart(time)
        return True

    def touch(self, key: str, time: float | None = None) -> list[str]:
        """A record of member ``key``; returns the members dropped for silence (then a new epoch began)."""
        self.records += 1
        ls = self.last_seen
        ls[key] = self.records
        ls.move_to_end(key)
        dropped: list[str] = []
        if self.ttl is not None:
            while True:
                first = next(iter(ls))
                if self.records - ls[first] <= self.ttl:
                    break
                del ls[first]
                dropped.append(first)
            if dropped:
                self.restart(time)
        return dropped

    def quietest(self, count: int = 3) -> list[dict[str, Any]]:
        """The ``count`` members least recently seen, with the group's records since their last one: while
        the threshold has no interval, the ones it most likely waits for (a key that sent a record or two
        and went quiet holds it until ``ttl`` drops it). O(count).

        >>> g = ThresholdGroup("eu", k=2.0, alpha_theta=0.01, low=0.0, high=1.0)
        >>> g.join("typo"); g.join("a"); _ = [g.touch("a") for _ in range(5)]
        >>> g.quietest(1)
        [{'key': 'typo', 'records_since': 5}]
        """
        out: list[dict[str, Any]] = []
        for key, seen in self.last_seen.items():
            if len(out) >= count:
                break
            out.append({"key": key, "records_since": self.records - seen})
        return out

    def restart(self, time: float | None = None) -> None:
        """Start a new epoch (O(1): members' epoch sequences are rebuilt on their next reward)."""
        self.epoch += 1
        self.since = time
        n = self.n
        self.track = (ThresholdTrack(n, self.k, self.alpha_theta / 2.0, low=self.low, high=self.high)
                      if n >= 2 else None)

    def record(self, g: int, S: float, lo: float, hi: float) -> None:
        """A member's epoch sequence reached count ``g`` (a track level) with sum ``S`` and interval."""
        if self.track is not None and g in self.track.levels:
            self.track.record(g, S, lo, hi)

    def interval(self) -> tuple[float, float]:
        """The current interval of ``theta_G`` (``(-inf, inf)`` until every member reported once)."""
        if self.track is None:
            return -math.inf, math.inf
        return self.track.upper()

    def estimate(self) -> float:
        return self.track.estimate() if self.track is not None else math.nan

    def snapshot(self, compact: bool = False, members: bool = True) -> dict[str, Any]:
        """``compact``: the members and their last records as two lists (``members``, ``seen``: references
        to the members' names and counts, no pair per member); else ``last_seen`` as ``[key, count]`` pairs
        (earlier versions). ``members=False``: neither, only their number (``members_in_rows``: the
        monitor writes each member's count in its key row); :meth:`restore` then takes them."""
        out: dict[str, Any] = {"name": self.name, "k": self.k, "alpha_theta": self.alpha_theta, "low": self.low,
                               "high": self.high, "ttl": self.ttl, "records": self.records, "epoch": self.epoch,
                               "since": self.since, "track": self.track.snapshot() if self.track is not None else None}
        if not members:
            out["members_in_rows"] = len(self.last_seen)
        elif compact:
            out["members"], out["seen"] = list(self.last_seen), list(self.last_seen.values())
        else:
            out["last_seen"] = [[kk, v] for kk, v in self.last_seen.items()]
        return out

    def seen_in_order(self) -> bool:
        """Whether the members' last records increase strictly in their order (least recently seen first),
        so that sorting by them gives the order back (always, when fed by the monitor)."""
        it = iter(self.last_seen.values())
        last = next(it, None)
        for v in it:
            if not v > last:  # type: ignore[operator]
                return False
            last = v
        return True

    @classmethod
    def restore(cls, state: dict[str, Any], last_seen: OrderedDict[str, int] | None = None) -> ThresholdGroup:
        """From :meth:`snapshot`; ``last_seen``: the members, when the snapshot has only their number."""
        obj = cls.__new__(cls)
        d = _checked(state)
        if "members_in_rows" in d:
            n = d.pop("members_in_rows")
            if last_seen is None or len(last_seen) != n:
                raise ValueError(f"group {d.get('name')!r} has {n!r} members, the key rows give "
                                 f"{None if last_seen is None else len(last_seen)}")
            d["last_seen"] = last_seen
        elif "members" in d:
            members, seen = d.pop("members"), d.pop("seen")
            if len(members) != len(seen):
                raise ValueError(f"group {d.get('name')!r}: {len(members)} members but {len(seen)} last records")
            d["last_seen"] = OrderedDict(zip(members, seen))
            if len(d["last_seen"]) != len(members):
                raise ValueError(f"group {d.get('name')!r}: a member appears twice")
        else:
            d["last_seen"] = OrderedDict((kk, v) for kk, v in d["last_seen"])
        if d["track"] is not None:
            with Fields(state, 0, where=_where(state)).part("track"):
                d["track"] = ThresholdTrack.restore(d["track"])
        obj.__dict__.update(d)
        return obj


def _where(state: Any) -> str:
    return f"groups.{state.get('name')}." if isinstance(state, dict) else "groups."


def _checked(state: Any) -> dict[str, Any]:
    """The fields of a group's snapshot, each checked to be what :meth:`ThresholdGroup.snapshot` writes (a
    checkpoint edited, its checksum made again: met later, a wrong one was an ``AttributeError`` in the middle
    of a run); ``ValueError`` naming the first that is not.

    >>> _checked({"name": "g", "k": 2.0, "alpha_theta": 0.01, "low": 0.0, "high": 1.0, "ttl": None,
    ...           "records": 3, "since": None, "track": None})
    Traceback (most recent call last):
    ...
    ValueError: snapshot field 'groups.g.epoch' is missing
    """
    f = Fields(state, 0, where=_where(state))
    d = dict(state)
    if not isinstance(f.raw("name"), str):
        raise f.fail("name", f"must be a text, got {short_repr(f.raw('name'))}")
    for name in ("k", "alpha_theta", "low", "high"):
        d[name] = f.number(name)
    d["records"], d["epoch"] = f.integer("records"), f.integer("epoch")
    d["ttl"] = None if f.raw("ttl", None) is None else f.integer("ttl", 1)  # (None: a snapshot from before it)
    d["since"] = None if f.raw("since") is None else f.number("since", finite=False)
    if f.raw("track") is not None and not isinstance(f.raw("track"), dict):
        raise f.fail("track", f"must be an object or null, got {short_repr(f.raw('track'))}")
    return d

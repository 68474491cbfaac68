"""A group's k-sigma threshold in epochs: restarted whenever the keys it aggregates change.

``theta_G = mu_G + k sigma_G`` is the k-sigma threshold of the current means of the keys of group ``G``.
Its interval is the engine's :class:`~streamarms.confidence.threshold.ThresholdTrack`, which is valid
while those means are constant. A group therefore lives in **epochs**: a new epoch (a fresh track over
the current members) starts when a key joins the group and when a member's restart rule restarts it (its
mean moved, so theta moved). Each key feeds the track from an *epoch sequence* of its rewards since the
epoch began (created lazily on its first reward of the epoch: a restart is O(1)).

Probability budget per epoch: ``alpha_theta`` in all, half to the track, half split over the ``n``
members' epoch sequences (as in the ``cs`` policy); by a union bound the threshold's interval holds at
every moment of the epoch with probability ``>= 1 - alpha_theta`` while the group's means are constant.

>>> g = ThresholdGroup("eu", k=2.0, alpha_theta=0.01, low=0.0, high=1.0)
>>> g.join("a"); g.join("b"); g.epoch, g.n
(2, 2)
>>> g.interval()
(-inf, inf)
"""

from __future__ import annotations

import math
from typing import Any

from ..confidence.threshold import ThresholdTrack

__all__ = ["ThresholdGroup"]


class ThresholdGroup:
    """The members of one group and the threshold track of their current epoch (module docstring)."""

    def __init__(self, name: str, *, k: float, alpha_theta: float, low: float, high: float) -> None:
        self.name = str(name)
        self.k, self.alpha_theta, self.low, self.high = float(k), float(alpha_theta), float(low), float(high)
        self.members: list[str] = []
        self.epoch = 0
        self.track: ThresholdTrack | None = None
        #: stream time at which the current epoch began (``None``: before any record)
        self.since: float | None = None

    @property
    def n(self) -> int:
        return len(self.members)

    @property
    def alpha_member(self) -> float:
        """The level of each member's epoch sequence in the current epoch."""
        return self.alpha_theta / 2.0 / max(self.n, 1)

    def join(self, key: str, time: float | None = None) -> None:
        """A new key: theta's definition changed, start a new epoch including it."""
        self.members.append(str(key))
        self.restart(time)

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

    def snapshot(self) -> dict[str, Any]:
        return {"name": self.name, "k": self.k, "alpha_theta": self.alpha_theta, "low": self.low,
                "high": self.high, "members": list(self.members), "epoch": self.epoch, "since": self.since,
                "track": self.track.snapshot() if self.track is not None else None}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> "ThresholdGroup":
        obj = cls.__new__(cls)
        d = dict(state)
        d["members"] = list(d["members"])
        d["track"] = ThresholdTrack.restore(d["track"]) if d["track"] is not None else None
        obj.__dict__.update(d)
        return obj

"""Active mode's sample requests in flight: :class:`RequestTracker`.

>>> sent = []
>>> t = RequestTracker(lambda arm, payload: sent.append(payload["request_id"]), prefix="p-")
>>> from streamarms.policies.base import Request
>>> t.send(Request("a"), episode=1, now=0.0); t.send(Request("a"), episode=1, now=1.0)
>>> sent, t.per_arm, t.earliest()
(['p-1-1', 'p-1-2'], {'a': 2}, 0.0)
>>> t.settle("p-1-1"), t.overdue(now=40.0, wait=30.0), t.per_arm
('a', ['a'], {})
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..policies.base import Request
from .records import InvalidRecord

__all__ = ["RequestTracker"]


class RequestTracker:
    """Request id -> (arm, issued at), and how many requests of each arm are in flight.

    Request ids are ``{prefix}{episode}-{seq}``; ``prefix`` makes them unique across restarts.
    """

    def __init__(self, emit: Callable[[str, dict[str, Any]], None], prefix: str = "") -> None:
        self.emit = emit
        self.prefix = prefix
        self.in_flight: dict[str, tuple[str, float]] = {}
        self.per_arm: dict[str, int] = {}
        self.seq = 0

    def send(self, r: Request, episode: int, now: float) -> None:
        self.seq += 1
        rid = f"{self.prefix}{episode}-{self.seq}"
        self.in_flight[rid] = (r.arm, now)
        self.per_arm[r.arm] = self.per_arm.get(r.arm, 0) + 1
        self.emit(r.arm, {"arm": r.arm, "request_id": rid, "episode": episode, "kind": r.kind, "time": now})

    def match(self, arm: str, rid: Any) -> str | None:
        """The id of the request in flight that an answer of ``arm`` carrying ``rid`` answers (``None``:
        no such request); :class:`InvalidRecord` if that request was for another arm."""
        entry = self.in_flight.get(str(rid)) if rid is not None else None
        if entry is None:
            return None
        if entry[0] != arm:
            raise InvalidRecord("request_mismatch", f"answer to request {rid!r} (arm {entry[0]!r}) "
                                                    f"came with key {arm!r}")
        return str(rid)

    def settle(self, rid: str) -> str:
        """An answer to ``rid`` arrived: it is no longer in flight. Returns its arm."""
        arm = self.in_flight.pop(rid)[0]
        self._unflight(arm)
        return arm

    def overdue(self, now: float, wait: float) -> list[str]:
        """Drop the requests issued ``wait`` or more ago; their arms, in issue order."""
        arms = []
        for rid in [rid for rid, (_, issued) in self.in_flight.items() if issued + wait <= now]:
            arms.append(self.settle(rid))
        return arms

    def earliest(self) -> float:
        """When the oldest request was issued (``inf`` if none)."""
        return min((t for _, t in self.in_flight.values()), default=math.inf)

    def _unflight(self, arm: str) -> None:
        n = self.per_arm[arm] - 1
        if n:
            self.per_arm[arm] = n
        else:
            del self.per_arm[arm]

    def reset(self) -> None:
        self.in_flight = {}
        self.per_arm = {}

    def snapshot(self) -> list[list[Any]]:
        return [[rid, a, t] for rid, (a, t) in self.in_flight.items()]

    def restore(self, in_flight: list[list[Any]], seq: int) -> None:
        self.reset()
        for rid, a, t in in_flight:
            self.in_flight[rid] = (a, float(t))
            self.per_arm[a] = self.per_arm.get(a, 0) + 1
        self.seq = int(seq)

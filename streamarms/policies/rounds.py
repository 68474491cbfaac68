"""The round plan of round-robin policies, under the streaming contract.

A round lists arms to sample once each, in order. Rewards may arrive for any arm (unrequested ones
still tick that arm off the round), a wanted arm can be deferred to the end of the round, and the round
is over when every arm of it has been sampled. Removal and deferral are O(1): the queue holds
``(ticket, arm)`` entries and an entry is live only while the arm's current ticket matches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from .base import Request

__all__ = ["RoundPlan", "RoundPlanned"]


class RoundPlan:
    """Arms (integer indices) still to be sampled in the current round, in order.

    >>> plan = RoundPlan()
    >>> plan.start([0, 1, 2, 3])
    >>> plan.head(), list(plan.upcoming(2))
    (0, [0, 1])
    >>> plan.defer(0); _ = plan.tick(2)
    >>> list(plan.upcoming(10)), len(plan)
    ([1, 3, 0], 3)
    >>> for i in (1, 3, 0): _ = plan.tick(i)
    >>> plan.empty, plan.head()
    (True, None)
    """

    def __init__(self) -> None:
        self._queue: deque[tuple[int, int]] = deque()
        self._ticket_of: dict[int, int] = {}
        self._ticket = 0

    def start(self, arms: Iterable[int]) -> None:
        """Begin a new round over ``arms`` (any previous round is dropped)."""
        self._queue.clear()
        self._ticket_of.clear()
        for i in arms:
            self._push(int(i))

    def _push(self, i: int) -> None:
        self._ticket += 1
        self._ticket_of[i] = self._ticket
        self._queue.append((self._ticket, i))

    def tick(self, i: int) -> bool:
        """Arm ``i`` was sampled: drop it from the round. Returns whether it was in the round."""
        return self._ticket_of.pop(i, None) is not None

    def defer(self, i: int) -> None:
        """Move ``i`` (if still in the round) to the end of the round."""
        if i in self._ticket_of:
            self._push(i)

    def head(self) -> int | None:
        """The next arm of the round, or ``None`` when the round is over."""
        q = self._queue
        while q:
            ticket, i = q[0]
            if self._ticket_of.get(i) == ticket:
                return i
            q.popleft()
        return None

    def upcoming(self, k: int) -> Iterator[int]:
        """Up to ``k`` arms of the round, in order."""
        if k <= 0:
            return
        n = 0
        for ticket, i in self._queue:
            if self._ticket_of.get(i) == ticket:
                yield i
                n += 1
                if n >= k:
                    return

    def __contains__(self, i: object) -> bool:
        return i in self._ticket_of

    def __len__(self) -> int:
        return len(self._ticket_of)

    @property
    def empty(self) -> bool:
        return not self._ticket_of

    def to_list(self) -> list[int]:
        """The remaining arms in order (for snapshots)."""
        return list(self.upcoming(len(self._ticket_of)))

    def clear(self) -> None:
        self.start(())


class RoundPlanned:
    """Mixin for a :class:`~streamarms.policies.base.Policy` whose plan is a :class:`RoundPlan`.

    Supplies ``next_request``, ``wanted`` and ``defer`` from ``self._plan`` (with ``self._done``,
    ``self.arms`` and ``self._arm_index`` of the policy).
    """

    _plan: RoundPlan
    _done: bool
    arms: list[str]

    def next_request(self) -> Request | None:
        i = None if self._done else self._plan.head()
        return None if i is None else Request(self.arms[i])

    def wanted(self, k: int) -> list[Request]:
        return [] if self._done else [Request(self.arms[i]) for i in self._plan.upcoming(k)]

    def defer(self, arm: str) -> None:
        self._plan.defer(self._arm_index(arm))  # type: ignore[attr-defined]

"""Stream time: :class:`EventClock`."""

from __future__ import annotations

__all__ = ["EventClock"]


class EventClock:
    """Stream time: the largest record timestamp seen so far, in seconds.

    Timestamps only move it forward (records of different partitions interleave), so it is monotone.

    >>> c = EventClock()
    >>> c.advance(5.0); c.advance(3.0); c()
    5.0
    >>> c.advance_ms(7500); c()
    7.5
    """

    __slots__ = ("now",)

    def __init__(self, start: float = 0.0) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, t: float) -> None:
        if t > self.now:
            self.now = t

    def advance_ms(self, ts_ms: int | float) -> None:
        t = ts_ms / 1000.0
        if t > self.now:
            self.now = t

"""Discovery on a partitioned source: the first episode's keys come from *every* assigned partition.

A detection episode runs on the keys known when it starts (:mod:`streamarms.runtime.episodes`); discovery
ends when no new key appeared for ``--discovery-records`` records or after ``--discovery-seconds``. On a
Kafka topic that rule alone can end discovery before some partitions delivered anything: a producer
flushes partitions at different moments, a consumer fetches them in turns, and a partition that is at
its end (empty *for now*) does not hold the others back (:mod:`.ordering`). Those partitions' keys would
then wait a whole episode. :class:`EveryPartitionRead` is the scheduler's discovery gate
(``Scheduler.episodes.gate``): discovery may end only once every assigned partition has delivered a
record -- or ``cap`` seconds of wall time after the gate was first asked (a partition that stays
silent, e.g. one no key hashes to, is then named in a warning and its keys join the next episode).

>>> got, now = {("t", 0)}, [0.0]
>>> gate = EveryPartitionRead(lambda: [("t", 0), ("t", 1)], got.__contains__, cap=10.0, clock=lambda: now[0])
>>> gate()
False
>>> got.add(("t", 1)); gate()
True
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from .ordering import TP, tp_name

__all__ = ["EveryPartitionRead"]

log = logging.getLogger("streamarms.kafka")


class EveryPartitionRead:
    """``gate()`` -> may discovery end? True once every partition ``assigned()`` names has delivered a
    record (``delivered(tp)``: :meth:`~.ordering.PartitionMerger.delivered`) or ``cap`` seconds after the
    first call (module docstring); True from then on."""

    def __init__(self, assigned: Callable[[], Iterable[TP]], delivered: Callable[[TP], bool], cap: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.assigned, self.delivered, self.cap, self.clock = assigned, delivered, float(cap), clock
        self.open = False
        self.since: float | None = None

    def __call__(self) -> bool:
        if self.open:
            return True
        now = self.clock()
        if self.since is None:
            self.since = now
        assigned = list(self.assigned())
        silent = [tp for tp in assigned if not self.delivered(tp)]
        if assigned and not silent:
            self.open = True
        elif now - self.since >= self.cap:
            self.open = True
            if silent:
                log.warning("discovery ends without a record from %s after %g s: their keys join the next "
                            "episode", ", ".join(tp_name(tp) for tp in sorted(silent)), self.cap)
        return self.open

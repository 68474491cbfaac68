"""Backfill for the Kafka source: where a partition assigned without a checkpointed position starts.

``start_from`` is ``"earliest"``, ``"latest"`` or a timestamp in milliseconds. At each assignment the
source hands :meth:`StartFrom.assign` the partitions that have no position in the checkpoint; the next
poll (kafka-python forbids blocking calls in a rebalance callback) calls :meth:`StartFrom.seek`, which
finds each one's offset, moves the merger's position there and seeks the consumer -- whatever the
group's committed offset says, so a new deployment can warm on history (its alerts then carry the
historical record times). A partition with a checkpointed position is never sought: a restart reads
nothing twice.

* a timestamp: ``offsets_for_times`` (the first record at or after it; the partition's end if none).
  A broker may answer with an earlier offset -- Tansu answers 0 -- so :meth:`StartFrom.skip_early`
  drops the records before the first one at or after the timestamp (moving the position past them);
* ``earliest``: ``beginning_offsets``;
* ``latest``: the high watermark of a fetch response (``end_offsets`` is not used: Tansu answers it with
  the last batch's base offset); a partition not fetched yet waits for the next poll.

What the poll fetched for a pending partition from elsewhere is dropped (fetched again from the new
position). A broker that cannot answer yet (a transient error): tried again at the next poll.

>>> StartFrom("yesterday", transient=lambda e: False)
Traceback (most recent call last):
...
ValueError: start_from must be 'earliest', 'latest' or a timestamp in ms >= 0, got 'yesterday'
>>> b = StartFrom(1700000000000, transient=lambda e: False); b.assign(["t0"]); b.pending
{'t0'}
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafka.errors import KafkaError

__all__ = ["StartFrom"]

log = logging.getLogger("streamarms.kafka")


class StartFrom:
    """The backfill rule of one source (module docstring); ``transient(e)``: an error to retry."""

    def __init__(self, start_from: str | int, *, transient: Callable[[BaseException], bool]) -> None:
        if not (start_from in ("earliest", "latest")
                or (isinstance(start_from, int) and not isinstance(start_from, bool) and start_from >= 0)):
            raise ValueError(f"start_from must be 'earliest', 'latest' or a timestamp in ms >= 0, got {start_from!r}")
        self.start_from = start_from
        self.transient = transient
        #: partitions assigned without a checkpointed position, not sought yet
        self.pending: set[Any] = set()
        #: partitions sought to the timestamp whose first record at or after it has not come yet
        self.skip_before: dict[Any, int] = {}

    def assign(self, partitions: list[Any]) -> None:
        """A new assignment: these partitions (kafka ``TopicPartition``) have no checkpointed position."""
        self.pending = set(partitions)
        self.skip_before = {}

    def seek(self, consumer: Any, merger: Any, got: dict[Any, list[Any]]) -> None:
        """Seek the pending partitions (module docstring); drops what ``got`` holds of them."""
        tps = list(self.pending)
        for tp in tps:
            got.pop(tp, None)
        try:
            where = self._offsets(consumer, tps)
        except KafkaError as e:
            if not self.transient(e):
                raise
            log.warning("cannot find the --start-from offsets yet: %s", e)
            return
        self.pending.difference_update(where)
        for tp, off in where.items():
            merger.reset_position((tp.topic, tp.partition), off)
            if isinstance(self.start_from, int):
                self.skip_before[tp] = self.start_from
            try:
                consumer.seek(tp, off)
            except (KafkaError, AssertionError, ValueError):  # revoked meanwhile: the next assignment decides
                continue
        if where:
            log.info("--start-from %s: %s", self.start_from,
                     ", ".join(f"{tp.topic}:{tp.partition}@{off}" for tp, off in sorted(where.items())))

    def _offsets(self, consumer: Any, tps: list[Any]) -> dict[Any, int]:
        if self.start_from == "earliest":
            return dict(consumer.beginning_offsets(tps, timeout_ms=5000))
        if self.start_from == "latest":
            out = {}
            for tp in tps:
                try:
                    hw = consumer.highwater(tp)
                except (KafkaError, AssertionError):  # not assigned (a rebalance under way)
                    hw = None
                if hw is not None:
                    out[tp] = hw
            return out
        found = consumer.offsets_for_times({tp: self.start_from for tp in tps}, timeout_ms=5000)
        missing = [tp for tp in tps if found.get(tp) is None]
        ends = consumer.end_offsets(missing, timeout_ms=5000) if missing else {}
        return {tp: (found[tp].offset if found.get(tp) is not None else ends[tp]) for tp in tps}

    def skip_early(self, merger: Any, got: dict[Any, list[Any]]) -> None:
        """Drop the records before the first one at or after the timestamp (a coarse broker answer)."""
        for ktp in list(got):
            ts = self.skip_before.get(ktp)
            if ts is None:
                continue
            recs = got[ktp]
            i = next((j for j, r in enumerate(recs) if r.timestamp is not None and r.timestamp >= ts), None)
            if i is None:
                del got[ktp]
                if recs:
                    merger.reset_position((ktp.topic, ktp.partition), recs[-1].offset + 1)
                continue
            del self.skip_before[ktp]
            if i:
                merger.reset_position((ktp.topic, ktp.partition), recs[i].offset)
                got[ktp] = recs[i:]

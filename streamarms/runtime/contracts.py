"""What the daemon needs from the outside world: typed contracts for sources and sinks.

The core never imports the connectors; it names what it calls on them here, as
:class:`typing.Protocol` classes (structural: a connector satisfies one by having the methods, no
inheritance needed). ``streamarms.connectors`` has the Kafka, JSONL and in-memory implementations;
``tests/runtime/test_runtime_contracts.py`` checks that each of them satisfies its contract.

>>> class ListSource:
...     def __init__(self, recs): self.recs, self.done = recs, False
...     def poll(self, timeout): out, self.recs = self.recs, []; return out
...     def state(self): return {}
...     def rollback(self, processed): pass
...     def commit(self, state=None): pass
...     def close(self): pass
>>> isinstance(ListSource([]), RewardSource), isinstance(ListSource([]), AlertSink)
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["SourceRecord", "RewardSource", "Sink", "AlertSink", "RequestSink", "DeadLetterSink"]


class SourceRecord(Protocol):
    """One record of a source: where it is (topic, partition, offset), when, its key and value."""

    topic: str
    partition: int
    offset: int
    timestamp: int | float | None  # milliseconds since the epoch
    key: bytes | str | None
    value: bytes | str | None


@runtime_checkable
class RewardSource(Protocol):
    """Records in. ``poll`` returns the next batch (maybe empty); ``rollback(n)``: only the first ``n``
    records of the last batch were handled, deliver the rest again; ``state()`` is the JSON-able
    position after the handled records, saved in the checkpoint and given back as ``resume`` on
    restart; ``commit(state)`` tells the broker (a consumer group) the position is durable. A source
    may also have ``exhausted`` (a file or test stream that has ended) and ``failure`` (``None``, or why
    it ended early: a followed file replaced under it)."""

    def poll(self, timeout: float, /) -> Sequence[SourceRecord]: ...

    def state(self) -> dict[str, Any]: ...

    def rollback(self, processed: int, /) -> None: ...

    def commit(self, state: dict[str, Any] | None = None, /) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class Sink(Protocol):
    """Results out. ``flush()`` returns once everything sent so far is delivered (the daemon flushes
    before it saves a checkpoint, so a saved state never claims an alert that was lost)."""

    def flush(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class AlertSink(Sink, Protocol):
    """Alerts (dicts, :mod:`streamarms.alerts`)."""

    def send(self, alert: dict[str, Any], /) -> None: ...


@runtime_checkable
class RequestSink(Sink, Protocol):
    """Active mode's sample requests: ``send(arm, payload)``."""

    def send(self, arm: str, payload: dict[str, Any], /) -> None: ...


@runtime_checkable
class DeadLetterSink(Sink, Protocol):
    """Refused records with their reason (:data:`~streamarms.runtime.records.INVALID_REASONS`)."""

    def send(self, record: SourceRecord, reason: str, detail: str, /) -> None: ...

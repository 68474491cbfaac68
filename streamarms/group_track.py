"""A member's view of the group threshold with the interface of a threshold track: :class:`GroupTrack`.

The piece a group-mode policy plugs in where :class:`~streamarms.confidence.threshold.ThresholdTrack`
sits today (issue 13). It keeps the additive totals of the arms of each partition the member owns
(:class:`~streamarms.group_threshold.PartitionTotals`), publishes the changed partitions at most every
``interval`` seconds, reads every partition's latest value and merges them into the group's interval
(:class:`~streamarms.group_threshold.GroupThreshold`; why that interval is valid: that module's
docstring). Transport-free: ``publish(partition, value)`` and ``fetch() -> {key: value}`` are given
(``streamarms.connectors.group_stats`` on Kafka; a dict in tests), so the core imports no connector.

``record(g, S, lo, hi, box=None, S2=None, partition=...)`` -- as ``ThresholdTrack.record`` plus the
arm's partition; returns whether the group's ``m_theta`` advanced (on this call's sync). ``sync(now)``
publishes and merges without a record (the daemon calls it every loop turn: another member's
progress can advance the group's threshold while this member receives nothing). ``upper()``,
``lower()``, ``estimate(side)``, ``m_theta``, ``levels``, ``result`` as the track's.

What a policy must change to use it (not done here: the policies are the lead's): take the group's
``n`` for its per-arm alpha and its sampling rule, keep sampling its slowest arms while the *group*
is undecided (a member whose arms are all classified still holds the group's ``m_theta`` back), and
handle events raised by an advance that ``sync`` (not a record) brought.

>>> import random
>>> from streamarms.confidence import BetaBinomialCS
>>> board = {}
>>> spec = dict(n=6, k=1.0, alpha=0.1, low=0.0, high=1.0, bernoulli=True)
>>> members = [GroupTrack(spec, publish=lambda p, v: board.__setitem__(p, v), fetch=lambda: board,
...                       clock=lambda: 0.0, interval=0.0) for _ in range(2)]
>>> rng = random.Random(0); arms = [BetaBinomialCS(0.01) for _ in range(6)]
>>> for _ in range(100):
...     for i, c in enumerate(arms):
...         c.update(float(rng.random() < 0.3 + 0.1 * i))
...         _ = members[i % 2].record(c.n, c.s, *c.interval(), partition=f"rewards:{i % 2}")
>>> _ = [m.sync() for m in members]
>>> members[0].m_theta, members[1].m_theta, members[0].upper() == members[1].upper()
(84, 84, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from .confidence.threshold import ThresholdTrack
from .group_threshold import GroupThreshold, PartitionTotals, merge_totals, staleness

__all__ = ["GroupTrack", "PartitionedTrack", "SteppedPublish"]


class SteppedPublish:
    """A ``publish(partition, value)`` callable that can also publish a value in steps (``steps(partition,
    value)``: an iterator doing one chunk's work a step, ending right after the step that sends the head):
    a :class:`GroupTrack` given one spreads a large value over several syncs within its budget.

    >>> sent = []
    >>> pub = SteppedPublish(lambda p, v: sent.append(p), lambda p, v: iter([sent.append(p + "/c0")]))
    >>> pub("t:0", {}); list(pub.steps("t:1", {})); sent
    [None]
    ['t:0', 't:1/c0']
    """

    def __init__(self, publish: Callable[[str, dict[str, Any]], None],
                 steps: Callable[[str, dict[str, Any]], Iterator[Any]]) -> None:
        self.publish, self.steps = publish, steps

    def __call__(self, partition: str, value: dict[str, Any]) -> None:
        self.publish(partition, value)


class GroupTrack:
    """The group threshold behind a track's interface (module docstring).

    :attr:`publish_budget`: seconds one :meth:`sync` may spend publishing (``None``: every changed
    partition at once). With a plain ``publish`` a partition's value is built and sent whole, so the loop
    stalls at most about the budget plus one partition's value; with a stepping one (``publish_steps``, or
    a :class:`SteppedPublish` as ``publish``) a value goes out chunk by chunk over syncs, its key state a
    copy-on-write cut (the ``extra`` fields' ``arms``, e.g. :class:`~streamarms.group_cut.KeyCut`), and
    the loop stalls about the budget plus one chunk. The round's partitions left wait for the next sync
    (which goes on with them without waiting for the interval; a partition changed again after its value
    went waits for the next round). Each value is still one partition at one moment (its key state,
    totals and position), which is all a reader or a new owner relies on.

    >>> board = {}
    >>> t = GroupTrack(dict(n=3, k=1.0, alpha=0.1, low=0.0, high=1.0), publish=board.__setitem__,
    ...                fetch=lambda: board, clock=lambda: 0.0, interval=10.0)
    >>> t.publish_budget = 0.0  # one partition a sync
    >>> for p in ("t:0", "t:1", "t:2"):
    ...     t.touch(p)
    >>> _ = t.sync(); sorted(board)
    ['t:0']
    >>> t.touch("t:0"); _ = t.sync(); _ = t.sync(); sorted(board), sorted(t._dirty)  # t:0: the next round
    (['t:0', 't:1', 't:2'], ['t:0'])
    >>> _ = t.sync(); sorted(t._dirty)  # the round is over: the next begins after the interval
    ['t:0']
    """

    levels = ThresholdTrack.levels
    #: ``None``: no budget (a GroupMember sets its own on its policy's track every turn)
    publish_budget: float | None = None

    def __init__(self, spec: dict[str, Any], *, publish: Callable[[str, dict[str, Any]], None],
                 fetch: Callable[[], dict[str, dict[str, Any]]], clock: Callable[[], float] = time.time,
                 interval: float = 1.0, member: str = "",
                 extra: Callable[[str], dict[str, Any]] | None = None,
                 publish_steps: Callable[[str, dict[str, Any]], Iterator[Any]] | None = None) -> None:
        self.spec = dict(spec)
        #: ``extra(partition)``: fields published with the partition's totals (a policy's key and
        #: undecided counts, its episode)
        self.extra = extra
        #: the values of the last fetch (every partition's latest)
        self.values: dict[str, dict[str, Any]] = {}
        self.publish, self.fetch, self.clock = publish, fetch, clock
        self.interval, self.member = float(interval), member
        self.parts: dict[str, PartitionTotals] = {}
        self.group = GroupThreshold(**self.spec)
        self._dirty: set[str] = set()
        #: ``False``: :meth:`record` merges but publishes nothing (values leave only from :meth:`sync`, between
        #: batches, where the caller's ``extra`` -- e.g. a source position -- describes the same moment)
        self.publish_on_record = True
        self._published_at = self._merged_at = -math.inf
        self._round: set[str] = set()  # partitions of a budgeted round not published yet
        #: ``publish_steps(partition, value)``: ``publish`` as an iterator of steps (a chunk each), so a
        #: budgeted round can spread one partition's value over several syncs
        self.publish_steps = publish_steps if publish_steps is not None else getattr(publish, "steps", None)
        #: the value under way: (partition, its remaining steps, its arms -- a KeyCut closed when done)
        self._open: tuple[str, Iterator[Any], Any] | None = None
        self.staleness = math.inf

    @property
    def publishing(self) -> bool:
        """Whether a budgeted round of values is under way (its next part is due at the next sync)."""
        return bool(self._round) or self._open is not None

    @property
    def m_theta(self) -> int:
        return self.group.m_theta

    @property
    def result(self) -> dict[str, Any]:
        return self.group.result

    def owned(self, partition: str, value: dict[str, Any] | None = None) -> PartitionTotals:
        """The totals of ``partition`` (created, or restored from ``value``: a checkpoint's, or the stats
        topic's when the key state is of the same moment)."""
        t = self.parts.get(partition)
        if t is None:
            t = self.parts[partition] = PartitionTotals(**self.spec)
        if value is not None:
            t.restore(value)
            self._dirty.add(partition)
        return t

    def release(self, partition: str) -> None:
        """A partition moved away: stop publishing it (its new owner's value replaces ours)."""
        self.parts.pop(partition, None)
        self._dirty.discard(partition)
        self._round.discard(partition)
        if self._open is not None and self._open[0] == partition:  # its value half-way: abandoned
            self._close_open()

    def touch(self, partition: str) -> None:
        """Publish ``partition`` again at the next sync (its ``extra`` fields changed)."""
        self.owned(partition)
        self._dirty.add(partition)

    def record(self, g: int, S: float, lo: float, hi: float, box: Any = None, S2: float | None = None, *,
               partition: str) -> bool:
        if g not in self.levels:
            return False
        self.owned(partition).record(g, S, lo, hi, S2=S2)
        self._dirty.add(partition)
        return self.sync(force=False, publish=self.publish_on_record)

    def sync(self, now: float | None = None, force: bool = True, publish: bool = True) -> bool:
        """Publish the changed partitions and merge every partition's latest value, each at most every
        ``interval`` s unless ``force`` (the merge); whether the group's ``m_theta`` advanced."""
        now = self.clock() if now is None else now
        if publish and (self._open is not None
                        or self._dirty and (now - self._published_at >= self.interval or self._round)):
            self.publish_now(now, budget=self.publish_budget)
        if not force and now - self._merged_at < self.interval:
            return False
        self._merged_at = now
        values = self.values = self.fetch()
        before = self.group.m_theta
        self.group.update(merge_totals((values[k] for k in sorted(values)), above=before))
        self.staleness = staleness(values.values(), now)
        return self.group.m_theta > before

    def publish_now(self, now: float | None = None, budget: float | None = None) -> None:
        """Publish the changed partitions now, whatever the interval (no merge): all of them, or, with a
        ``budget`` (s), the current round's that fit it (class docstring)."""
        now = self.clock() if now is None else now
        start = time.perf_counter()
        went_on = self._open is not None
        if not self._drive(start, budget):
            return
        if budget is not None and went_on and (time.perf_counter() - start >= budget or not self._round):
            return  # the turn's budget is spent, or the round's last value went out (the next: after the interval)
        if budget is None or not self._round:  # a new round: the partitions changed by now
            self._round = self._round | self._dirty
            self._published_at = now
        for p in sorted(self._round):
            extra = self.extra(p) if self.extra is not None else {}
            value = self.parts[p].value(member=self.member, time=now, **extra)
            arms: Any = value.get("arms")
            if self.publish_steps is not None and budget is not None:
                self._dirty.discard(p)
                self._round.discard(p)
                self._open = (p, self.publish_steps(p, value), arms)
                if not self._drive(start, budget):
                    return
            else:
                if hasattr(arms, "materialize"):  # a copy-on-write cut (group_cut.KeyCut): read it all now
                    value["arms"] = arms.materialize()
                self.publish(p, value)
                self._dirty.discard(p)
                self._round.discard(p)
            if budget is not None and time.perf_counter() - start >= budget:
                break

    def _drive(self, start: float, budget: float | None) -> bool:
        """Go on with the value under way until it is sent or the budget is spent; whether it is sent."""
        if self._open is None:
            return True
        _, steps, _ = self._open
        for _ in steps:
            if budget is not None and time.perf_counter() - start >= budget:
                return False
        self._close_open()
        return True

    def _close_open(self) -> None:
        if self._open is not None:
            _, steps, arms = self._open
            self._open = None
            if hasattr(steps, "close"):
                steps.close()
            if hasattr(arms, "close"):
                arms.close()

    def upper(self) -> tuple[float, float]:
        return self.group.upper()

    def lower(self) -> tuple[float, float]:
        return self.group.lower()

    def estimate(self, side: str = "upper") -> float:
        return float(self.group.estimates.get(side, math.nan))

    def snapshot(self) -> dict[str, Any]:
        """The member's partitions' totals (the group's view is rebuilt from the stats topic)."""
        return {"spec": self.spec, "parts": {p: t.value() for p, t in self.parts.items()}}


class PartitionedTrack:
    """A :class:`GroupTrack` with the threshold track's ``record`` signature: the arm's partition is the
    one the policy names in :attr:`current` before each reward.

    >>> board = {}
    >>> t = PartitionedTrack(GroupTrack(dict(n=2, k=1.0, alpha=0.1, low=0.0, high=1.0), publish=board.__setitem__,
    ...                                 fetch=lambda: board, clock=lambda: 0.0, interval=0.0))
    >>> t.current = "t:0"; _ = t.record(1, 1.0, 0.0, 1.0); sorted(board)
    ['t:0']
    """

    levels = GroupTrack.levels

    def __init__(self, group: GroupTrack) -> None:
        self.group = group
        self.current = ""

    m_theta = property(lambda self: self.group.m_theta)
    result = property(lambda self: self.group.result)

    def record(self, g: int, S: float, lo: float, hi: float, box: Any = None, S2: float | None = None) -> bool:
        return self.group.record(g, S, lo, hi, S2=S2, partition=self.current)

    def upper(self) -> tuple[float, float]:
        return self.group.upper()

    def lower(self) -> tuple[float, float]:
        return self.group.lower()

    def estimate(self, side: str = "upper") -> float:
        return self.group.estimate(side)

    def snapshot(self) -> dict[str, Any]:
        return self.group.snapshot()

r"""One member of a detecting consumer group (issue 13): the episode protocol around
:class:`~streamarms.policies.anytime_group.GroupKSigma`.

Members of one consumer group read disjoint partitions of the reward topic(s), so each holds the keys
(arms) of its partitions; every member reads the group's stats board (a compacted topic keyed
``group/partition``: :mod:`streamarms.connectors.group_stats`). An episode, group-wide:

1. **Announce.** When a member's discovery ends, its episode's policy is a :class:`GroupAnnounce`: it
   publishes, for every partition it owns, the episode number and the partition's key count (its arms
   are the keys of its owned partitions known then; keys seen later belong to the next episode, as in a
   single process).
2. **Start.** Once every partition of the topic(s) has an announcement of the episode, the group's key
   count ``N`` is their sum -- every member computes the same ``N`` from the same values -- and each
   member's policy becomes a ``GroupKSigma(arms, group_n=N)`` (a member without keys follows the board).
3. **Run.** The members publish their partitions' threshold totals and undecided counts; each merges
   all partitions (:class:`~streamarms.group_track.GroupTrack`) and alerts on its own keys: one alert
   per key group-wide (a key lives in one partition, a partition has one owner).
4. **End.** The episode ends on every member when every partition's latest value of the episode
   reports no undecided arm and the key counts sum to ``N`` -- the same condition, read from the same
   compacted topic, on every member (undecided counts only decrease, so a stale value never ends an
   episode early).

:class:`GroupMember` drives this from the daemon's loop (``Daemon(on_turn=member.turn)``), at most
every ``interval`` seconds; :class:`PartitionNotingSource` wraps the reward source to learn each key's
partition from the records themselves (any partitioner). The module is transport-free: ``publish``,
``fetch``, ``poll_board``, ``owned()`` and ``expected()`` are given (Kafka in ``streamarms run``).

**Rebalance (a member joins, leaves or is killed).** Every published value of a partition carries its
arms' key state (confidence sequence, state, sampling key) and the partition's source position at the
same moment (values leave only between batches): the stats topic is the partition's changelog. On a
revoke the member publishes its partitions' values at once (alerts flushed first); on an assignment
it catches the board up, drops the partitions that went and takes over those that came from their
latest value (:meth:`GroupMember.on_assign`), and the source reads them from that value's position.
So a record of a moved partition is counted by exactly one owner: the old one up to the position,
the new one after it (progress the old owner made after its last value -- a kill -9 -- is discarded
and read again: never counted twice). Alerts: the new owner does not alert arms the value shows
decided (their alerts were flushed before the value); an arm decided by a killed member after its last
value is decided again and alerted again with the same ``alert_id`` (at-least-once: deduplicate by
``alert_id``, as for a single daemon's restart). The values carry every key of the partition; on the
stats topic a value's keys go in chunks (:mod:`streamarms.group_chunks`), so a partition is not capped
by the largest record, and a reader uses a value only once all its chunks have arrived.

**A member that joins late or restarts** without a running episode (no checkpoint, or one taken between
episodes) resumes the group's state at its assignment (:meth:`GroupMember._join`): if the board's latest
episode ``E`` is running, it begins ``E`` on its partitions, taken over from their values as above (a
partition's state and position), so the group's episode goes on as one; if ``E`` is over, its own next
episode is ``E + 1``, the group's next (it never announces an episode the board has already seen), and
``max_episodes`` counts the group's episodes (a member joining after the group's last one finishes at once).
A partition that has no value on the board at all (the group's first episode is announcing) is announced
once the member has discovered its keys (:mod:`streamarms.group_discovery`), so the first group episode
covers every partition's keys. The standing outlier flags move with the partitions too
(:mod:`streamarms.group_flags`): one ``outlier`` alert per key across the group and its episodes.

**Between episodes** each member waits for its next start on its own stream clock, which moves only with
its partitions' records, so the members' next starts differ; an idle member therefore follows the board:
once another member has announced the next episode it joins it at its next turn
(:meth:`GroupMember._follow_board`), so the group starts when its first member is due, never waiting for
the one whose clock is furthest behind.

>>> from streamarms.runtime.scheduler import Scheduler, EventClock
>>> from streamarms.runtime.config import SchedulerConfig
>>> import random
>>> board, rng = {}, random.Random(1)
>>> means = {f"k{i}": 0.9 if i == 7 else 0.3 for i in range(8)}
>>> part = {f"k{i}": f"t:{i % 4}" for i in range(8)}
>>> def member(owned):
...     s = Scheduler(lambda arms, ep: None, clock=EventClock(), config=SchedulerConfig(max_episodes=1),
...                   arms=[a for a in means if part[a] in owned])
...     m = GroupMember(s, publish=board.__setitem__, fetch=lambda: board, owned=lambda: owned,
...                     expected=lambda: ["t:0", "t:1", "t:2", "t:3"], partition_of=part.get,
...                     params=dict(k=1.5, delta=0.1), clock=lambda: 0.0, interval=0.0)
...     return s, m
>>> a, b = member({"t:0", "t:1"}), member({"t:2", "t:3"})
>>> for s, m in (a, b):
...     s.tick(); m.turn()
>>> while not (a[0].finished and b[0].finished):
...     for s, m in (a, b):
...         arm = next(iter(s.plan.window), None)
...         if arm is not None:
...             _ = s.offer(arm.encode(), b'{"reward": %d}' % (rng.random() < means[arm]))
...         m.turn()
>>> sorted(a[0].alerts.flagged | b[0].alerts.flagged), a[0].history[0]["arms"], b[0].history[0]["outliers"]
(['k7'], 4, ['k7'])
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from .group_discovery import PartitionDiscovery
from .group_flags import FlaggingPublish, StandingFlags
from .group_threshold import group_finished, staleness
from .policies.anytime_group import GroupKSigma
from .policies.base import Decision, Event, Policy, Request
from .policies.snapshot_fields import Fields, guarded
from .runtime.clock import EventClock
from .runtime.episodes import IDLE
from .validation import finite_reward

__all__ = ["GroupAnnounce", "GroupMember", "PartitionNotingSource", "external_progress", "group_episode"]

log = logging.getLogger("streamarms.group")


def _this_episode(values: dict[str, dict[str, Any]], episode: int) -> list[dict[str, Any]]:
    return [values[k] for k in sorted(values) if values[k].get("episode") == episode]


def group_episode(values: dict[str, dict[str, Any]], expected: Iterable[str],
                  stats_key: Callable[[str], str] = str) -> tuple[int, int | None, bool] | None:
    """The group's latest episode on the board: ``(episode, N, finished)`` -- ``N`` the group's key count
    once every expected partition has announced the episode (else ``None``: the episode is announcing),
    ``finished`` by :func:`~streamarms.group_threshold.group_finished`; ``None`` for an empty board.

    >>> board = {"t:0": {"episode": 2, "keys": 3, "undecided": 0}, "t:1": {"episode": 2, "keys": 1, "undecided": 1}}
    >>> group_episode(board, ["t:0", "t:1"]), group_episode(board, ["t:0", "t:1", "t:2"]), group_episode({}, ["t:0"])
    ((2, 4, False), (2, None, False), None)
    """
    expected = list(expected)
    vals = [v for p in expected if isinstance(v := values.get(stats_key(p)), dict)
            and isinstance(v.get("episode"), int) and isinstance(v.get("keys", 0), int)]  # a malformed value: skipped
    if not vals:
        return None
    ep = max(int(v["episode"]) for v in vals)
    this = [v for v in vals if int(v["episode"]) == ep]
    n = sum(int(v.get("keys", 0)) for v in this) if len(this) == len(expected) else None
    return ep, n, group_finished(this, n)


def went_on(values: dict[str, dict[str, Any]], expected: Iterable[str], stats_key: Callable[[str], str],
            episode: int) -> int | None:
    """The group's episode after ``episode`` if the board shows one: another member left ``episode`` (the
    group's end, or its timeout) and announced the next, so its values of ``episode`` are off the board and
    a member still in ``episode`` would wait for the group's end for good (it ends it and follows the group).

    >>> went_on({"t:0": {"episode": 3, "keys": 2}, "t:1": {"episode": 2, "keys": 1}}, ["t:0", "t:1"], str, 2)
    3
    """
    g = group_episode(values, expected, stats_key)
    return g[0] if g is not None and g[0] > episode else None


def external_progress(s: Any, events: Sequence[Event] = (), policy: Policy | None = None) -> None:
    """Progress of a :class:`~streamarms.runtime.scheduler.Scheduler`'s running episode without a record
    (the group's board moved): emit ``events``, go on with ``policy`` if given (the same episode), and take
    the scheduler's plan step -- the episode ends there if the policy is done."""
    if s.episodes.phase != "running":
        return
    now = s.clock()
    if policy is not None:
        s.episodes.policy = policy
        s.plan.reset(policy, s.episodes.episode)
    s.alerts.on_events(events, now)
    s._follow(now)  # the scheduler's own step (kept out of its 250-line facade)


def earlier_keys(values: dict[str, dict[str, Any]], partitions: Iterable[str], part: dict[str, str], episode: int,
                 stats_key: Callable[[str], str] = str) -> None:
    """Add to ``part`` (arm -> partition) the keys the latest value of an earlier episode names for each of
    ``partitions``: the board is the partitions' changelog, so a member announcing a partition it has not
    read (yet) -- a fresh member, or one the partition moved to between episodes -- still announces the
    partition's keys instead of leaving them for the next episode. A key that appeared since that value
    and that this member has not seen waits for the next episode, as in one process."""
    for q in sorted(partitions):
        v = values.get(stats_key(q))
        # a chunked value's arms are a LazyArms (a Mapping)
        if v is not None and isinstance(v.get("arms"), Mapping) and isinstance(v.get("episode"), int) \
                and v["episode"] < episode:
            for a in v["arms"]:
                part.setdefault(a, q)


class GroupAnnounce(Policy):
    """An episode's policy before the group's key count is known (module docstring, step 1), and the
    policy of a member without keys: it samples nothing, it announces its partitions' key counts, and
    :meth:`group_n` tells when every expected partition has announced. ``done`` when the board says the
    group's episode is over (a member without keys)."""

    name: ClassVar[str] = "cs-group-announce"

    def __init__(self, arms: Sequence[str], *, part: dict[str, str], owned: Iterable[str], episode: int) -> None:
        self.arms = [str(a) for a in arms]  # (no Policy.__init__: a member may own no key)
        self.index = {a: i for i, a in enumerate(self.arms)}
        self.part = {a: part[a] for a in self.arms}
        self.owned = sorted(set(owned) | set(self.part.values()))
        self.episode = int(episode)
        self.n: int | None = None  # the group's key count, once known
        self.finished = False
        self.ignored = 0  # rewards that arrived before the episode started

    @property
    def dated_at_start(self) -> bool:
        """An announcing episode is dated at the group's start: its ``--episode-timeout`` does not run while
        the group waits for the other members' announcements (a timeout shorter than their discovery ended
        this member's episode alone, and the group's then waited for it)."""
        return self.n is not None

    def keys(self) -> dict[str, int]:
        out = {p: 0 for p in self.owned}
        for p in self.part.values():
            out[p] += 1
        return out

    def group_n(self, values: dict[str, dict[str, Any]], expected: Iterable[str],
                stats_key: Callable[[str], str]) -> int | None:
        """The group's key count if every expected partition has announced this episode."""
        total = 0
        for p in expected:
            v = values.get(stats_key(p))
            if v is None or v.get("episode") != self.episode:
                return None
            total += int(v.get("keys", 0))
        return total

    def follow(self, values: dict[str, dict[str, Any]]) -> None:
        """A member without keys: done once the group's episode is (module docstring, step 4)."""
        if group_finished(_this_episode(values, self.episode), self.n):
            self.finished = True

    @property
    def done(self) -> bool:
        return self.finished

    @property
    def pulls(self) -> int:
        return 0

    def next_request(self) -> Request | None:
        return None

    def wanted(self, k: int) -> list[Request]:
        return []

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        """A reward before the group's episode starts (the every-reward feed gives them all): not needed,
        so counted in ``ignored`` -- a valid record is not refused (nor dead-lettered) for arriving early;
        an unknown arm or a value that is not a finite number still raises ``ValueError``."""
        if arm not in self.index:
            raise ValueError(f"unknown arm {arm!r} (reward {reward!r}): not a key of this member's episode")
        finite_reward(arm, reward)
        self.ignored += 1
        return []

    def decision(self) -> Decision:
        return Decision(outliers=[], normals=[], undecided=list(self.arms), estimated_outliers=[], threshold=None,
                        threshold_interval=None, pulls=0, done=self.finished,
                        extra={"group_n": self.n, "episode": self.episode, "ignored": self.ignored})

    def snapshot(self) -> dict[str, Any]:
        return {"policy": self.name, "arms": self.arms, "part": self.part, "owned": self.owned,
                "episode": self.episode, "n": self.n, "finished": self.finished, "ignored": self.ignored}

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> GroupAnnounce:
        """Rebuild from :meth:`snapshot` output (a malformed snapshot: ``ValueError`` naming the field)."""
        f = Fields(state, policy=cls.name)
        arms = f.sequence("arms", None)  # (a member may own no key)
        if not all(isinstance(a, str) for a in arms):
            raise f.fail("arms", "must be a list of strings (arm names)")
        part = f.raw("part")
        if not (isinstance(part, dict) and set(arms) <= set(part)):
            raise f.fail("part", "must map every arm to its partition")
        obj = cls(arms, part=part, owned=f.sequence("owned", None), episode=f.integer("episode"))
        obj.n = None if f.raw("n") is None else f.integer("n", low=len(arms))
        obj.finished = f.flag("finished")
        obj.ignored = f.integer("ignored", default=0)  # absent in checkpoints of earlier versions
        return obj


class PartitionNotingSource:
    """A reward source wrapper that notes each key's ``topic:partition`` as records pass (one dict
    lookup per record); everything else is the wrapped source's.

    >>> from collections import namedtuple
    >>> R = namedtuple("R", "topic partition key")
    >>> class S:
    ...     def poll(self, timeout): return [R("t", 2, b"a"), R("t", 0, b"b")]
    >>> s = PartitionNotingSource(S()); _ = s.poll(0.1); s.part_of_key
    {b'a': 't:2', b'b': 't:0'}
    """

    def __init__(self, source: Any) -> None:
        self.source = source
        self.part_of_key: dict[Any, str] = {}

    def poll(self, timeout: float = 0.2) -> list[Any]:
        batch = self.source.poll(timeout)
        seen = self.part_of_key
        for r in batch:
            if r.key not in seen:
                seen[r.key] = f"{r.topic}:{r.partition}"
        return batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)


class GroupMember:
    """Drives the group episode protocol for one member's scheduler (module docstring).

    ``publish(partition, value)`` / ``fetch() -> {stats key: value}`` / ``poll_board()``: the stats board;
    ``owned()`` / ``expected()``: this member's partitions and all partitions of the topic(s);
    ``partition_of(arm)``: an arm's partition (``None``: not seen yet); ``params``: GroupKSigma's
    keyword parameters (k, delta, model, two_sided, arm_share); ``stats_key(partition)``: the board's
    key of a partition (default: the partition itself); ``publish_budget``: seconds a turn may spend
    publishing values (``None``: all changed partitions at once; else
    :attr:`~streamarms.group_track.GroupTrack.publish_budget`: a round of values split over turns, each
    turn going on with it without waiting for ``interval``). Install with ``scheduler.build =
    member.build`` (done here) and call :meth:`turn` every loop turn.
    """

    def __init__(self, scheduler: Any, *, publish: Callable[[str, dict[str, Any]], None],
                 fetch: Callable[[], dict[str, dict[str, Any]]], owned: Callable[[], Iterable[str]],
                 expected: Callable[[], Iterable[str]], partition_of: Callable[[str], str | None],
                 params: dict[str, Any], poll_board: Callable[[], Any] | None = None,
                 stats_key: Callable[[str], str] = str, clock: Callable[[], float] = time.time,
                 interval: float = 1.0, member: str = "", position_of: Callable[[str], Any] | None = None,
                 flush: Callable[[], None] | None = None, flush_board: Callable[[], None] | None = None,
                 catch_up: Callable[[], None] | None = None, publish_budget: float | None = None) -> None:
        self.scheduler = scheduler
        #: the standing flags of the owned partitions' keys, carried in every value (streamarms.group_flags)
        self.flags = StandingFlags(scheduler.alerts, partition_of)
        self.publish: Callable[[str, dict[str, Any]], None] = FlaggingPublish(publish, self.flags)
        self.fetch, self.poll_board = fetch, poll_board
        self.owned, self.expected, self.partition_of = owned, expected, partition_of
        self.params, self.stats_key, self.clock = dict(params), stats_key, clock
        self.interval, self.member = float(interval), member
        self.position_of, self.flush, self.flush_board, self.catch_up = position_of, flush, flush_board, catch_up
        self.publish_budget = publish_budget
        self._last = -math.inf
        self._attached: Any = None
        self._alerts = 0
        #: partitions handed over to or taken over from another member during an episode
        self.moved = 0
        self.staleness = math.inf
        #: partitions this member joined an announcing episode with and still discovers (group_discovery)
        self.pending: PartitionDiscovery | None = None
        scheduler.build = self.build

    def build(self, arms: list[str], episode: int) -> Policy:
        """The scheduler's episode factory: the keys of the owned partitions, announced (step 1)."""
        owned = set(self.owned())
        part = {a: p for a in arms if (p := self.partition_of(a)) is not None and p in owned}
        known = len(part)
        self.pending = None
        values = self.fetch()
        self.flags.adopt_board(values, owned, self.stats_key, self.member)
        earlier_keys(values, owned, part, episode, self.stats_key)
        unseen = sum(1 for a in arms if self.partition_of(a) is None and a not in part)
        if unseen:  # e.g. keys restored from a checkpoint whose records have not come since the restart
            log.info("group episode %d: %d known key(s) not seen since this member started (partition unknown) "
                     ": they wait for the next episode", episode, unseen)
        if len(part) > known:
            log.info("group episode %d: %d key(s) of the partitions' earlier values not read here yet, announced too",
                     episode, len(part) - known)
        order = {a: i for i, a in enumerate(arms)}
        pol = GroupAnnounce(sorted(part, key=lambda a: (order.get(a, len(order)), a)), part=part, owned=owned,
                            episode=episode)
        self._announce(pol)
        self._attached = pol
        return pol

    def _announce(self, pol: GroupAnnounce, positions: dict[str, Any] | None = None) -> None:
        """Publish ``pol``'s partitions' key counts and names; ``positions``: where a partition taken over
        during the announcement resumes (the source seeks there after the assignment, so its own position
        is not that one yet)."""
        now = self.clock()
        positions = positions or {}
        names: dict[str, dict[str, None]] = {p: {} for p in pol.owned}
        for a, p in pol.part.items():
            names[p][a] = None
        waiting = self.pending.waiting if self.pending is not None else set()
        for p, n in pol.keys().items():
            if p in waiting:
                continue  # announced once discovered (streamarms.group_discovery)
            v = {"episode": pol.episode, "keys": n, "undecided": n, "member": self.member, "time": now,
                 "arms": names[p]}
            if p in positions:
                v["position"] = positions[p]
            elif self.position_of is not None:
                v["position"] = self.position_of(p)
            self.publish(p, v)

    def _start(self, pol: GroupAnnounce, n: int) -> Policy:
        pol.n = n
        if not pol.arms:
            return pol  # no key here: follow the board
        ep = pol.episode
        part = pol.part
        return GroupKSigma(pol.arms, group_n=n, partition_of=part.__getitem__, publish=self.publish,
                           fetch=self.fetch, clock=self.clock, interval=self.interval, member=self.member,
                           episode=ep, position_of=self.position_of, **self.params)

    def turn(self) -> None:
        """Publish, read the board, start / advance / end the episode (at most every ``interval`` s)."""
        now = self.clock()
        pol = self.scheduler.policy
        publishing = isinstance(pol, GroupKSigma) and pol is self._attached and pol.track.group.publishing
        if now - self._last < self.interval and not publishing:
            return
        self._last = now
        if self.poll_board is not None:
            self.poll_board()
        s = self.scheduler
        pol = s.policy
        if s.phase == IDLE:
            self._follow_board()
            return
        if s.phase != "running" or pol is None:
            return
        self._date_episode()
        values = self.fetch()
        self.staleness = staleness(values.values(), now)
        if not isinstance(pol, (GroupAnnounce, GroupKSigma)) or pol is not self._attached:
            return  # (restored from a checkpoint: it waits for the assignment, on_assign)
        if (later := went_on(values, self.expected(), self.stats_key, pol.episode)) is not None:
            s.end_episode(s.clock(), f"the group went on to episode {later}")
            return
        if isinstance(pol, GroupAnnounce):
            if pol.n is None and self.pending is not None:
                pol = self._discover(pol)
            if pol.n is None:
                n = pol.group_n(values, self.expected(), self.stats_key)
                if n is not None:
                    if s.clock() > 0:  # every member's --episode-timeout counts from the group's start
                        s.episodes.date(s.clock())
                        s.refresh_deadline()
                    new = self._start(pol, n)
                    log.info("group episode %d: %d keys over %d partitions; %d of them here", pol.episode, n,
                             len(list(self.expected())), len(pol.arms))
                    if new is not pol:
                        self._attached = new
                        cast_new: Any = new
                        external_progress(s, cast_new.sync(now), policy=new)
                        return
            else:
                pol.follow(values)
            external_progress(s, [])
            return
        self._flush_alerts()  # (a deciding episode: GroupKSigma)
        pol.track.group.publish_budget = self.publish_budget  # type: ignore[attr-defined]
        external_progress(s, pol.sync(now))

    def _discover(self, pol: GroupAnnounce) -> GroupAnnounce:
        """The partitions this member joined the announcing episode with: announced with their keys once
        discovered (streamarms.group_discovery); ``pol`` until then, else the announcing policy with them."""
        s, pending = self.scheduler, self.pending
        assert pending is not None
        keys: dict[str, list[str]] = {p: [] for p in pending.waiting}
        for a in s.keys.known:
            if (q := self.partition_of(a)) in keys:
                keys[q].append(a)
        if not pending.over({p: len(v) for p, v in keys.items()}, s.counters.records, s.clock(), self.clock()):
            return pol
        self.pending = None
        part = dict(pol.part) | {a: p for p, arms in keys.items() for a in arms}
        fresh = GroupAnnounce(sorted(part), part=part, owned=pol.owned, episode=pol.episode)
        log.info("group episode %d: %d key(s) of %s discovered, announced", pol.episode,
                 sum(map(len, keys.values())), ", ".join(sorted(keys)) or "none")
        self._announce(fresh)
        self._attached = fresh
        external_progress(s, policy=fresh)
        return fresh

    def _date_episode(self) -> None:
        """An episode joined before this member read a record is dated at its first record (the stream clock
        stood at 0: the first record would have jumped past ``--episode-timeout`` at once); one still
        announcing waits for the group's start (:attr:`GroupAnnounce.dated_at_start`)."""
        s = self.scheduler
        if not s.episodes.dated and s.clock() > 0 and s.policy is not None and s.policy.dated_at_start:
            s.episodes.date(s.clock())
            s.refresh_deadline()

    def _follow_board(self) -> None:
        """Between episodes: join the group's next episode as soon as another member began it.

        An idle member waits for its own next start on its own stream clock, and that clock moves only with
        the records of its partitions: the members' clocks differ (a member that joined mid-episode dated
        the episode later than the others; a member's partitions may be quiet for a while). The group's
        episode starts only once every partition is announced, so a member waiting for its own clock would
        hold the whole group (and, on a finite stream, the others would read past the records the episode
        needed). So once the board shows an episode after this member's that is not over, the member joins
        it now (:meth:`_join`: its partitions announced with the keys it knows of them, or taken over from
        their values) and its schedule follows the group's from then on."""
        values = self.fetch()
        g = group_episode(values, self.expected(), self.stats_key)
        if g is None or g[0] <= self.scheduler.episode or g[2]:
            return
        owned = sorted(self.owned())
        if any((v := values.get(self.stats_key(p))) is not None and v.get("episode") == g[0]
               and v.get("member") != self.member for p in owned):
            return  # another member announced a partition this member holds: a rebalance is moving it (on_assign)
        if owned:  # a standby member (no partition) has nothing to announce: it waits for an assignment
            log.info("group episode %d began on another member: joining it before this member's own next start",
                     g[0])
            self._join(owned)

    def _flush_alerts(self) -> None:
        """Deliver the alerts emitted so far before a value that says their arms are decided is published
        (a member that takes the partition over from that value does not alert them again)."""
        n = sum(self.scheduler.alerts.counts.values())
        if n != self._alerts and self.flush is not None:
            self.flush()
        self._alerts = n

    # -- rebalance: the key state moves with its partition ---------------------------------------
    def on_revoke(self, partitions: list[str]) -> None:
        """Partitions are about to go (a rebalance): publish their key state and position now."""
        pol = self.scheduler.policy
        if self.scheduler.phase != "running" or not isinstance(pol, GroupKSigma):
            return
        self._flush_alerts()
        gt = pol.track.group  # type: ignore[attr-defined]
        for p in set(partitions) & set(pol.part):
            gt.touch(p)
        gt.publish_now()  # no merge here: a merge could classify arms whose events nobody would emit
        if self.flush_board is not None:
            self.flush_board()

    def on_assign(self, partitions: list[str]) -> dict[str, Any]:
        """The new assignment: drop the partitions that went, take over those that came from their latest
        value on the board (key state, totals, position); returns the positions to read them from."""
        s = self.scheduler
        pol = s.policy
        if s.phase != "running":
            out = self._join(partitions)
            self.flags.keep(partitions, self.fetch(), self.stats_key)
            return out
        if not isinstance(pol, (GroupKSigma, GroupAnnounce)):
            return {}
        if self.catch_up is not None:
            self.catch_up()  # the previous owner's last value (published at its revoke) is on the board
        values = self.fetch()
        g = group_episode(values, self.expected(), self.stats_key)
        if pol is not self._attached and g is not None and g[0] > pol.episode:
            # restored from a checkpoint of an episode the group has left: abandon it, resume the group's
            log.info("restored episode %d is behind the group's %d: abandoned", pol.episode, g[0])
            s.episodes.retry_later(s.clock(), 0.0, idle=True)
            return self.on_assign(partitions)
        new = set(partitions)
        mine = set(pol.part) if isinstance(pol, GroupKSigma) else set(pol.owned)
        drop = mine - new
        if pol is not self._attached:
            # restored from this member's checkpoint: the board (the partitions' changelog) is at least as new
            # (values published at every interval, and by any later owner): every partition is taken over from
            # it, the checkpoint's key state dropped; the group's episode may have started since its announcement
            drop, mine = set(mine), set()
            if isinstance(pol, GroupKSigma):
                pol._transport = (self.publish, self.fetch, self.clock, self.interval, self.position_of)
            elif g is not None and g[0] == pol.episode:
                pol.n = g[1]
        add = {}
        for p in sorted(new - mine):
            v = values.get(self.stats_key(p))
            if v is not None and v.get("episode") == pol.episode and "arms" in v:
                add[p] = v
        extra = new - mine - set(add)  # no value of the episode: announced by this member (if announcing)
        drop -= extra  # (restored: one it announced whose value never reached the board keeps its keys)
        if isinstance(pol, GroupAnnounce) and pol.n is None and extra:
            part = pol.part | self._announced_keys(values, extra, pol.episode)
            self.flags.adopt_board(values, extra, self.stats_key, self.member)
            pol = GroupAnnounce(sorted(part), part=part, owned=set(pol.owned) | extra, episode=pol.episode)
        if not drop and not add and pol is self._attached:
            return {}
        self.moved += len(drop) + len(add)
        if self.pending is not None:
            self.pending.drop(drop)
        log.info("group episode %d: handing over %s, taking over %s", pol.episode, ", ".join(sorted(drop)) or "none",
                 ", ".join(sorted(add)) or "none")
        self._take_flags(add, partitions, values)
        replaced = self._regroup(pol, drop, add)
        self._attached = replaced
        external_progress(s, policy=replaced)
        return {p: v["position"] for p, v in add.items() if v.get("position") is not None}

    def _take_flags(self, add: dict[str, dict[str, Any]], partitions: list[str],
                    values: dict[str, dict[str, Any]]) -> None:
        """The standing flags follow the assignment: those of ``add``'s partitions from their values, those of
        partitions no longer here dropped (streamarms.group_flags); ``add``'s decided arms marked."""
        for p, v in add.items():
            self.flags.adopt(p, v)
        self._mark_decided(add)
        self.flags.keep(partitions, values, self.stats_key)

    def _mark_decided(self, add: dict[str, dict[str, Any]]) -> None:
        """Arms the taken-over values show decided were alerted by their previous owner: not again here."""
        for v in add.values():
            for a, st in (v.get("arms") or {}).items():
                if st is not None and st.get("state"):
                    self.scheduler.alerts.mark(a, "outlier" if st["state"] == 1 else "normal")

    def _join(self, partitions: list[str]) -> dict[str, Any]:
        """An assignment while this member runs no episode (it starts fresh, restarts from a checkpoint taken
        between episodes, or was idle): resume the group's state from the board instead of starting an
        episode of its own over the group's values. The group runs episode ``E`` (announcing or deciding):
        this member begins ``E`` on the assigned partitions, each taken over from its latest value of ``E``
        (key state, totals, position) exactly as in a live rebalance; while ``E`` is announcing, a
        partition without a value of ``E`` is announced with the keys this member knows of it and those its
        value of an earlier episode names; a partition new to the group (no value at all) is announced once
        this member discovered its keys (:mod:`streamarms.group_discovery`: the group's episode waits, so its
        key set has every partition's keys). The stream clock moves to the taken-over values' latest record
        time, so the next episode is timed from the group's, not from zero (nothing taken over: the episode is
        dated at this member's first record). The group is between episodes
        (``E`` finished): this member's next episode is ``E + 1``, the group's next. An empty board, or
        a board not past this member's own episode: nothing changes. Returns the start positions."""
        s = self.scheduler
        if s.finished:  # max_episodes done: this member only leaves
            return {}
        if self.catch_up is not None:
            self.catch_up()
        values = self.fetch()
        g = group_episode(values, self.expected(), self.stats_key)
        if g is None or g[0] <= s.episode:
            return {}
        ep, n, finished = g
        if finished:
            was = s.episode + 1
            s.episodes.episode = ep
            last = s.config.max_episodes
            if last is not None and ep >= last:  # --max-episodes counts the group's episodes
                log.info("group episode %d is over and was the last (--max-episodes %d): nothing left to run", ep, last)
                s.episodes.finish()
                return {}
            log.info("group episode %d is over: this member's next episode is %d (was %d)", ep, ep + 1, was)
            return {}
        add = {}
        for p in sorted(set(partitions)):
            v = values.get(self.stats_key(p))
            if v is not None and v.get("episode") == ep and "arms" in v:
                add[p] = v
        # announcing: a partition without a value of E gets the keys this member knows of it and those its
        # value of an earlier episode names (a partition moved here between episodes: this member may not have
        # read it yet); deciding: every partition has a value of E
        rest = set(partitions) - set(add)
        self.pending = None
        part = self._announced_keys(values, rest, ep) if n is None else {}
        base = GroupAnnounce(sorted(part), part=part, owned=partitions, episode=ep)
        base.n = n
        # stream time: the values' positions carry their partitions' latest record time (ms). A member
        # that has read nothing yet would otherwise date the episode at 0 and start its next one at once
        stamps = [v["position"][1] for v in add.values() if isinstance(v.get("position"), list)
                  and len(v["position"]) > 1 and isinstance(v["position"][1], (int, float))]
        if stamps and isinstance(s.clock, EventClock):
            s.clock.advance_ms(max(stamps))
        s.episodes.episode = ep - 1
        s.alerts.begin_episode(ep)
        self.flags.adopt_board(values, rest, self.stats_key, self.member)
        self._take_flags(add, partitions, values)
        policy = self._regroup(base, set(), add)
        # nothing taken over and nothing read yet: dated at this member's first record (_date_episode)
        s.episodes.begin(policy, s.clock(), s.counters.records, dated=bool(stamps) or s.clock() > 0)
        self._attached = policy
        self.moved += len(add)
        log.info("joining group episode %d (%s keys, %s): taking over %s", ep, "?" if n is None else n,
                 "announcing" if n is None else "deciding",
                 ", ".join(f"{p}@{v.get('position')}" for p, v in add.items()) or "none")
        external_progress(s, policy=policy)
        return {p: v["position"] for p, v in add.items() if v.get("position") is not None}

    def _announced_keys(self, values: dict[str, dict[str, Any]], rest: set[str], episode: int) -> dict[str, str]:
        """The keys (arm -> partition) this member announces for ``rest``, partitions without a value of the
        announcing ``episode``: those it knows and those their value of an earlier episode names; a partition
        the group never announced waits for this member's discovery (its keys come then)."""
        part = {a: q for a in self.scheduler.keys.known if (q := self.partition_of(a)) in rest}
        earlier_keys(values, rest, part, episode, self.stats_key)
        new = {q for q in rest if self.stats_key(q) not in values}  # never announced: wait for discovery
        if new and not self.scheduler.keys.fixed:
            self.pending = PartitionDiscovery.begin(new, self.pending, self.scheduler.config, self.clock(), part,
                                                    episode)
        return part

    def _regroup(self, pol: Policy, drop: set[str], add: dict[str, dict[str, Any]]) -> Policy:
        if isinstance(pol, GroupKSigma):
            out = pol.regroup(drop, add)
            if out is not None:
                return out
            follow = GroupAnnounce([], part={}, owned=[], episode=pol.episode)
            follow.n = pol.group_n
            return follow
        assert isinstance(pol, GroupAnnounce)
        part = {a: p for a, p in pol.part.items() if p not in drop}
        for p, v in add.items():
            part.update({a: p for a in v["arms"]})
        owned = (set(pol.owned) - drop) | set(add)
        fresh = GroupAnnounce(sorted(part), part=part, owned=owned, episode=pol.episode)
        fresh.n = pol.n
        if pol.n is None:
            self._announce(fresh, {p: v["position"] for p, v in add.items() if v.get("position") is not None})
            return fresh
        if not part:
            return fresh
        started = self._start(fresh, pol.n)
        assert isinstance(started, GroupKSigma)
        return started.regroup((), {p: v for p, v in add.items() if "totals" in v}) or started

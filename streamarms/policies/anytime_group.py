r"""GroupKSigma (CLI ``cs`` with ``--group-threshold``): one member's share of a group-wide AnytimeKSigma.

The k-sigma outlier rule of Zhuang, Wang, Wang, *Identifying outlier arms in multi-armed bandit*,
NeurIPS 2017, decided by :class:`~streamarms.policies.anytime.AnytimeKSigma` (anytime-valid confidence
sequences: Howard, Ramdas, McAuliffe, Sekhon, *Time-uniform, nonparametric, nonasymptotic confidence
sequences*, Ann. Statist. 2021) across the members of a consumer group (issue 13). A member holds the
arms (keys) of the partitions it owns; the threshold's interval is the group's
(:class:`~streamarms.group_track.GroupTrack`: per-partition additive totals published to a stats board
-- a compacted Kafka topic in a run -- and merged).

**What changes against the single process** (the rest is AnytimeKSigma's rule, unchanged):

* ``n`` is the *group's* key count ``N`` (every member learns it from the stats board: the members
  publish their partitions' key counts; the caller passes the sum): per-arm ``alpha = arm_share delta / N``
  and the threshold track's spec (``n = N``, ``alpha_theta = (1 - arm_share) delta``) are the ones a single
  process holding all N arms would use.
* the threshold is :class:`~streamarms.group_track.GroupTrack` (every published level of every
  partition, merged), not a local :class:`~streamarms.confidence.threshold.ThresholdTrack`;
* a member keeps sampling its arms below the threshold's next grid level while the *group* is undecided
  (the group's ``m_theta`` needs every arm of the group), even when its own arms are all classified;
* :meth:`sync` (the daemon calls it every loop turn) publishes, merges, and classifies arms when another
  member's progress advanced the threshold: it returns those events;
* :attr:`done` is the *group's*: every partition's latest value (of this episode) reports no undecided
  arm, and their key counts sum to ``N``.

**Why the guarantee holds in the group.** Let E be the event that all N arms' sequences (each at
``alpha_arm``) hold at every count and the threshold's terms hold at every level (``alpha_theta``): the
single-process event, probability ``>= 1 - delta`` by the same union bound (N arms, whichever member holds
them; the sampling order is irrelevant, the reward table argument of :mod:`streamarms.confidence.threshold`).
On E every complete level's interval contains theta whenever its totals were published, so the merged
group interval (an intersection of complete levels, :mod:`streamarms.group_threshold`) contains theta at
every moment on every member, however stale its view. An arm is classified only when its interval is
disjoint from that interval: on E every event of every member is correct when it is made. Hence the
group's answer is correct with probability ``>= 1 - delta`` at any stopping time. Each key lives in
one partition, so one member owns it and emits its one alert. Staleness only delays levels.

**A rebalance** (:mod:`streamarms.group_member`): a partition's value carries its arms' state and the
partition's position, published between batches; a new owner catches the board up, continues every arm
from the partition's latest value and reads the partition from its position. The totals any member has
merged are at most that latest value, so each arm's samples stay *one* sequence -- the prefix in the
adopted state, then what the new owner draws -- and the argument above holds unchanged (the old owner's
rewards after the value are discarded: they never entered a published total). If the catch-up times out
(logged) and an older value is adopted while a newer one was merged, an arm's levels could come from two
continuations of its prefix: the argument does not cover that case.

**Episodes.** The published values carry the ``episode`` number; :meth:`sync` merges only those of its
own episode (a previous episode's totals are another ``n``'s or another moment's arms).

>>> import random
>>> board = {}
>>> rng = random.Random(3)
>>> means = {str(i): 0.9 if i == 9 else 0.3 for i in range(10)}
>>> members = [GroupKSigma([str(i) for i in range(10) if i % 2 == m], group_n=10,
...                        partition_of=lambda a: f"t:{int(a) % 2}", publish=board.__setitem__,
...                        fetch=lambda: board, clock=lambda: 0.0, interval=0.0, k=2.0, delta=0.1)
...            for m in range(2)]
>>> outliers = []
>>> while not all(p.done for p in members):
...     for p in members:
...         outliers += [e.arm for e in p.sync() if e.kind == "outlier"]
...         r = p.next_request()
...         if r is not None:
...             outliers += [e.arm for e in p.update(r.arm, float(rng.random() < means[r.arm]))
...                          if e.kind == "outlier"]
>>> outliers, members[0].track.m_theta == members[1].track.m_theta
(['9'], True)
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, cast

from ..confidence.factory import sequence_for
from ..group_cut import KeyCut
from ..group_threshold import group_finished, spec_mismatch
from ..group_track import GroupTrack, PartitionedTrack
from ..models import RewardModel, SubGaussianModel, make_model
from ..validation import check_ksigma_params
from . import anytime_snapshot
from .anytime import ARM_SHARE, AnytimeKSigma, _request
from .base import Event, Policy, Request
from .snapshot_fields import Fields, guarded

log = logging.getLogger(__name__)

__all__ = ["GroupKSigma", "PartitionedTrack", "group_spec"]


def group_spec(model: RewardModel, n: int, k: float, alpha_theta: float, two_sided: bool) -> dict[str, Any]:
    """The threshold spec every member must share (:class:`~streamarms.group_threshold.PartitionTotals`).

    >>> group_spec(make_model("bernoulli"), 6, 2.0, 0.05, False)["n"]
    6
    """
    spec: dict[str, Any] = {"n": int(n), "k": float(k), "alpha": float(alpha_theta), "two_sided": bool(two_sided),
                            "bernoulli": model.name == "bernoulli"}
    if model.name in ("bernoulli", "bounded"):
        spec.update(low=model.low, high=model.high)
    elif model.name == "subgaussian":
        spec["sigma_x"] = cast(SubGaussianModel, model).sigma
    return spec


def _no_publish(partition: str, value: dict[str, Any]) -> None:
    return None


def _no_fetch() -> dict[str, dict[str, Any]]:
    return {}


class GroupKSigma(AnytimeKSigma):
    """A member's share of a group-wide :class:`AnytimeKSigma` (module docstring).

    ``arms``: this member's keys; ``group_n``: the group's key count; ``partition_of(arm)``: the arm's
    partition (``topic:partition``); ``publish``/``fetch``/``clock``/``interval``/``member``: the stats
    board, as :class:`~streamarms.group_track.GroupTrack`; ``episode``: tags the published values.
    """

    name: ClassVar[str] = "cs-group"

    def __init__(self, arms: Sequence[str], *, group_n: int, partition_of: Callable[[str], str],
                 publish: Callable[[str, dict[str, Any]], None] = _no_publish,
                 fetch: Callable[[], dict[str, dict[str, Any]]] = _no_fetch, clock: Callable[[], float] = time.time,
                 interval: float = 1.0, member: str = "", episode: int = 1, k: float = 2.0, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", two_sided: bool = False, arm_share: float = ARM_SHARE,
                 position_of: Callable[[str], Any] | None = None) -> None:
        Policy.__init__(self, arms)
        n = int(group_n)
        check_ksigma_params(k, delta, n)
        if not 0 < arm_share < 1:
            raise ValueError(f"arm_share must be in (0, 1), got {arm_share!r}")
        if n < len(self.arms):
            raise ValueError(f"group_n ({n}) is smaller than this member's {len(self.arms)} arms")
        self.k, self.delta, self.two_sided, self.arm_share = float(k), float(delta), bool(two_sided), float(arm_share)
        self.model = make_model(model)
        self.group_n, self.episode, self.member = n, int(episode), member
        self.alpha_arm = self.arm_share * self.delta / n
        self.alpha_theta = (1.0 - self.arm_share) * self.delta
        self.cs = [sequence_for(self.model, self.alpha_arm, a) for a in self.arms]
        self.part = [partition_of(a) for a in self.arms]
        self.spec = group_spec(self.model, n, self.k, self.alpha_theta, self.two_sided)
        self.state = [0] * len(self.arms)
        self.n_undecided = len(self.arms)
        self.T = 0
        self.ignored = 0
        self.key = [-math.inf] * len(self.arms)
        self.deferred: list[int] = []
        self.q: list[float] | None = [0.0] * len(self.arms)
        self.group_done = False
        self._attach(publish, fetch, clock, interval, None, position_of)
        self._init_derived()

    # -- the stats board -------------------------------------------------------------------------
    def _attach(self, publish: Callable[[str, dict[str, Any]], None], fetch: Callable[[], dict[str, dict[str, Any]]],
                clock: Callable[[], float], interval: float, parts: dict[str, Any] | None,
                position_of: Callable[[str], Any] | None = None) -> None:
        self._transport = (publish, fetch, clock, interval, position_of)
        self._keys: dict[str, int] = {}
        self._undecided: dict[str, int] = {}
        for p, s in zip(self.part, self.state):
            self._keys[p] = self._keys.get(p, 0) + 1
            self._undecided[p] = self._undecided.get(p, 0) + (s == 0)
        ep = self.episode

        warned: set[str] = set()

        def mine() -> dict[str, dict[str, Any]]:
            # a value of another spec (a member with other settings, or a partition count that changed) is
            # left out with a warning: merging it would raise mid-update, after the reward was counted
            out = {}
            for key, v in fetch().items():
                if v.get("episode") != ep or "totals" not in v:
                    continue
                bad = spec_mismatch(self.spec, v)
                if bad is not None:
                    if key not in warned:
                        warned.add(key)
                        log.warning("stats of %s (member %s) left out: %s", key, v.get("member"), bad)
                    continue
                out[key] = v
            return out

        def extra(p: str) -> dict[str, Any]:
            out: dict[str, Any] = {"episode": ep, "keys": self._keys[p], "undecided": self._undecided[p]}
            if position_of is not None:  # the key state and where its records end: a new owner resumes here
                out.update(position=position_of(p), arms=self._open_cut(p))
            return out

        gt = GroupTrack(self.spec, publish=publish, fetch=mine, clock=clock, interval=interval, member=self.member,
                        extra=extra)
        gt.publish_on_record = False
        for p in sorted(self._keys):
            gt.owned(p, None if parts is None else parts.get(p))
            gt.touch(p)
        self.track = PartitionedTrack(gt)  # type: ignore[assignment]
        self._values_seen: Any = None
        self._members: dict[str, list[int]] = {}  # partition -> its arms' indices, in value order
        self._rank = [0] * len(self.arms)  # an arm's place in its partition's value order
        for i, p in enumerate(self.part):
            m = self._members.setdefault(p, [])
            self._rank[i] = len(m)
            m.append(i)
        self._cut: KeyCut | None = None  # the partition value being published over several turns
        self._advance_due = False  # a threshold advance whose classification waits for the cut

    def attach(self, publish: Callable[[str, dict[str, Any]], None], fetch: Callable[[], dict[str, dict[str, Any]]],
               clock: Callable[[], float] = time.time, interval: float = 1.0,
               position_of: Callable[[str], Any] | None = None) -> None:
        """Connect a restored policy to the stats board: its partitions' totals are published and the
        group's merged at the next :meth:`sync` (whose events the caller emits)."""
        parts = {p: t.value() for p, t in self.track.group.parts.items()}  # type: ignore[attr-defined]
        self._attach(publish, fetch, clock, interval, parts, position_of)

    # -- key state moving with its partition (a rebalance) ---------------------------------------
    def partition_arms(self, p: str) -> dict[str, Any]:
        """The key state of partition ``p``'s arms: what a new owner needs to continue them."""
        idx = self._members.get(p, [])
        return {self.arms[i]: self._arm_state(i) for i in idx}

    def _arm_state(self, i: int) -> dict[str, Any]:
        q = self.q
        return {"cs": self.cs[i].snapshot(), "state": self.state[i], "key": self.key[i],
                "q": None if q is None else q[i]}

    def _open_cut(self, p: str) -> KeyCut:
        """Partition ``p``'s key state at this moment, read as its value is encoded
        (:class:`~streamarms.group_cut.KeyCut`: copy-on-write over :meth:`update`; a threshold advance's
        classifications wait until the cut is read, :meth:`_on_advance`)."""
        idx = self._members.get(p, [])
        self._cut = KeyCut(p, [self.arms[i] for i in idx], idx, self._arm_state)
        return self._cut

    def _on_advance(self) -> list[Event]:
        # while a value's key state is read over several turns, every change to it must come from a reward
        # (which saves the key's state first): the classification an advance brings waits until the cut is
        # read (safe: an arm may be classified at any later moment against any valid threshold interval)
        cut = self._cut
        if cut is not None and not cut.closed:
            self._advance_due = True
            return []
        self._advance_due = False
        return super()._on_advance()

    def regroup(self, drop: Iterable[str] = (), add: dict[str, dict[str, Any]] | None = None) -> GroupKSigma | None:
        """This member's policy without the partitions ``drop`` and with the partitions ``add`` (their
        published values: ``arms`` -- a state, or ``None`` for an arm without samples -- and ``totals``),
        on the same stats board; ``None`` when no arm is left. Its own pull count stays."""
        drop, add = set(drop), dict(add or {})
        st = self.snapshot()
        keep = [i for i, p in enumerate(self.part) if p not in drop and p not in add]
        cols = {f: [st[f][i] for i in keep] for f in ("arms", "cs", "state", "key", "part")}
        q = None if st["q"] is None else [st["q"][i] for i in keep]
        parts = {p: v for p, v in st["track"]["parts"].items() if p not in drop and p not in add}
        for p, v in sorted(add.items()):
            for a, arm in sorted((v.get("arms") or {}).items()):
                cols["arms"].append(a)
                cols["part"].append(p)
                if arm is None:
                    cols["cs"].append(sequence_for(self.model, self.alpha_arm, a).snapshot())
                    cols["state"].append(0)
                    cols["key"].append(-math.inf)
                else:
                    cols["cs"].append(arm["cs"])
                    cols["state"].append(int(arm["state"]))
                    cols["key"].append(float(arm["key"]))
                if q is not None:
                    q.append(0.0 if arm is None or arm.get("q") is None else float(arm["q"]))
            if "totals" in v:
                parts[p] = {f: v[f] for f in (*self.spec, "totals")}
        if not cols["arms"]:
            return None
        for f, col in cols.items():
            st[f] = col
        st["q"], st["deferred"] = q, []
        st["n_undecided"] = sum(1 for x in cols["state"] if x == 0)
        st["track"] = {"spec": self.spec, "parts": parts}
        new = GroupKSigma.restore(st)
        new.attach(*self._transport)
        return new

    def _on_events(self, events: list[Event]) -> None:
        gt: GroupTrack = self.track.group  # type: ignore[attr-defined]
        for e in events:
            p = self.part[self.index[e.arm]]
            self._undecided[p] -= 1
            gt.touch(p)

    def _group_finished(self) -> bool:
        return group_finished(self.track.group.values.values(), self.group_n)  # type: ignore[attr-defined]

    def sync(self, now: float | None = None) -> list[Event]:
        """Publish this member's changed partitions, merge the group's, classify what an advance allows;
        the events (module docstring)."""
        gt: GroupTrack = self.track.group  # type: ignore[attr-defined]
        events = self._on_advance() if gt.sync(now, force=False) or self._advance_due else []
        self._on_events(events)
        if events:
            gt.sync(now, force=False)  # publish the new undecided counts at once (within the interval)
        self._values_seen = gt.values
        self.group_done = self._group_finished()
        return events

    # -- Policy interface ------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.group_done

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        i = self.index.get(arm)
        if i is None:
            i = self._arm_index(arm)  # raises, naming the arm
        p = self.track.current = self.part[i]  # type: ignore[attr-defined]
        cut = self._cut
        if cut is not None and not cut.closed and p == cut.partition:  # copy-on-write: O(1)
            cut.before_update(i, self._rank[i])
        if self.n_undecided or self.group_done:
            events = super().update(arm, reward, request)
        else:  # every arm of ours is classified, the group's are not: the sample serves the threshold
            x = self.model.check(arm, reward)
            c = self.cs[i]
            c._update(x)
            if self.q is not None:
                self.q[i] += x * x
            self.T += 1
            events = []
            if c.m in self.track.levels and c.m > self.track.m_theta:
                lo, hi = c.interval()
                if self.track.record(c.m, c.s, lo, hi, None, None if self._bern or self.q is None else self.q[i]):
                    events = self._on_advance()
        if events:
            self._on_events(events)
        values = self.track.group.values  # type: ignore[attr-defined]
        if values is not self._values_seen:  # the board was read (a record's merge): O(partitions), rarely
            self._values_seen = values
            self.group_done = self._group_finished()
        return events

    update_batch = Policy.update_batch  # reward by reward: each may publish

    def next_request(self) -> Request | None:
        if self.group_done:
            return None
        if self.n_undecided:
            return super().next_request()
        j = self._laggard()
        return None if j is None else _request(self, j)

    def wanted(self, k: int) -> list[Request]:
        if self.group_done or k <= 0:
            return []
        if self.n_undecided:
            return super().wanted(k)
        j = self._laggard()
        return [] if j is None else [_request(self, j)]

    def decision(self) -> Any:
        d = super().decision()
        d.done = self.group_done
        d.extra.update(group_n=self.group_n, episode=self.episode, staleness=self.track.group.staleness)  # type: ignore[attr-defined]
        return d

    # -- persistence -----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "group_n": self.group_n, "part": list(self.part), "episode": self.episode,
                "member": self.member, "group_done": self.group_done}

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> GroupKSigma:
        """The policy, detached from the stats board: call :meth:`attach` before use."""
        f = Fields(state)
        group_n = f.integer("group_n", low=len(f.arms()))
        obj, f = anytime_snapshot.restore_arms(cls, state, group_n)  # the per-arm alpha of the group's n
        obj.group_n, obj.episode, obj.member = group_n, f.integer("episode"), f.raw("member")
        obj.part = f.sequence("part")
        obj.spec = group_spec(obj.model, obj.group_n, obj.k, obj.alpha_theta, obj.two_sided)
        obj.group_done = f.flag("group_done")
        obj._attach(_no_publish, _no_fetch, time.time, 1.0, state["track"]["parts"])
        obj._init_derived()
        return obj

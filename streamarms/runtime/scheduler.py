"""The scheduler: drives a pure-exploration policy over a real stream of keyed rewards.

A policy (``streamarms.policies``) is a state machine that says which arm it wants sampled next. A
stream does not take orders: records of every key arrive when they arrive. The scheduler bridges the
two, in one of two modes:

* **passive** -- rewards of every key flow in. The policy's plan is ``policy.wanted(window)``: the
  next arms it will ask for, the first (the *head*) being the one it wants now. A record of the head
  is given to the policy at once; a record of another planned arm is *held* (up to ``prefetch`` per
  arm) and given to the policy when its plan reaches that arm; every other record is *skipped* and
  counted: that is the saving. So the policy receives its samples in exactly the order it asks for
  them -- it runs as it would in a simulation -- while the window keeps the number of records read per
  sample low. Which record is taken depends only on its key and on what came before, never on its
  own value, so the rewards a policy sees of an arm are an i.i.d. sample of that arm (the streaming
  contract of :mod:`streamarms.policies.base`). If no record of the head arrives within
  ``want_timeout`` seconds, ``policy.defer(head)`` lets the policy re-plan, and the arm is in
  cool-down for as long again (the plan coming back to it meanwhile defers it at once), so an arm
  whose records are rare or have stopped never stalls the others.
* **active** -- the scheduler publishes sample requests (``{"arm", "request_id", "episode", "kind",
  "time"}``) for the planned arms, at most ``max_in_flight`` at a time and at most ``prefetch`` per
  arm held or in flight, and matches the answers arriving on the reward stream by ``request_id``
  (answers are held and given in plan order as above). A request not answered within
  ``request_timeout`` is dropped (a late answer is skipped), its arm cools down, and if it was the
  head it is deferred.

**Episodes.** A detection episode runs one policy on the arms known when it starts (sorted by name);
keys first seen during it join the next one. Before the first episode the scheduler *discovers* keys:
the episode starts once ``min_arms`` keys are known and either no new key has appeared for
``discovery_records`` records or ``discovery_seconds`` have passed since the first record and the keys have
settled (:mod:`.episodes`: as many records since the last new key as before it). An episode
ends when the policy's stopping rule fires (``done``), after ``episode_timeout`` (then undecided arms
are reported as such), or (passive mode) when one of its arms has had no record for
``episode_silence_records`` records: those keys are forgotten and the next episode starts at once
without them (:mod:`.silence`). The next one starts ``episode_interval`` seconds after the previous one started
(or at once if that moment has passed), until ``max_episodes``. Between episodes records are skipped.

**Time** is injected: ``clock`` is a zero-argument callable returning seconds. The daemon passes an
:class:`EventClock` (stream time: the largest record timestamp seen) in passive mode, which makes every
decision of the scheduler a function of the record sequence alone -- the property that lets a run
killed with ``kill -9`` and resumed from a checkpoint end exactly where an uninterrupted run ends --
and the wall clock in active mode (requests need real timeouts).

**State.** :meth:`Scheduler.snapshot` returns the whole state (policy included) as JSON-able data;
:meth:`Scheduler.restore` rebuilds it exactly.

>>> from streamarms.policies.base import Policy
>>> import itertools
>>> out = []
>>> clock = EventClock()
>>> s = Scheduler(lambda arms, episode: _ExamplePolicy(arms), clock=clock, emit_alert=out.append,
...               config=SchedulerConfig(discovery_records=5, max_episodes=1))
>>> for i in range(200):
...     key = "abc"[i % 3].encode()
...     clock.advance(i / 100)
...     _ = s.offer(key, b'{"reward": %d}' % (1 if key == b"c" else 0))
>>> s.finished, [a["arm"] for a in out], s.stats()["used"] <= s.stats()["records"]
(True, ['c'], True)
"""


from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from ..alerts import AlertManager
from ..models import RewardModel
from ..policies.base import Decision, Event, Policy, Request
from . import batch
from .clock import EventClock
from .codec import RewardCodec
from .config import ACTIVE, SchedulerConfig
from .episodes import _INF, DISCOVERING, FINISHED, IDLE, PHASES, RUNNING, EpisodeLifecycle
from .intake import ActiveIntake, FeedAllIntake
from .keys import KeyRegistry
from .plan import PlanFollower
from .records import InvalidRecord
from .requests import RequestTracker
from .silence import SilenceWatch
from .stats import SchedulerStats, StatsView

__all__ = ["DISCOVERING", "RUNNING", "IDLE", "FINISHED", "PHASES", "Scheduler", "restore_policy"]

def _class_path(obj: object) -> str:
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


def _policy_classes() -> dict[str, type[Policy]]:
    """Every loaded subclass of :class:`Policy`, by ``module:qualname``."""
    out: dict[str, type[Policy]] = {}
    level = Policy.__subclasses__()  # (not a stack seeded with the abstract Policy: mypy refuses that)
    stack: list[type[Policy]] = []
    while True:
        for sub in level:
            out[f"{sub.__module__}:{sub.__qualname__}"] = sub
            stack.append(sub)
        if not stack:
            return out
        level = stack.pop().__subclasses__()


def restore_policy(state: dict[str, Any] | None, model: RewardModel | None = None) -> Policy | None:
    """The policy of a scheduler snapshot's ``"policy"`` entry (``None`` for none), its class looked up
    among the loaded ones (:func:`_resolve_policy_class`). ``model``: the reward model this run's codec
    checks rewards with, for the policy of a *running* episode -- ``ValueError`` if the policy has
    another: the codec would accept rewards the policy then refuses (each one a ``rejected_by_policy``
    that a reward held for the policy can no longer send to the dead letters), or check rewards by a
    model the episode's statistics do not assume."""
    policy = None if state is None else _resolve_policy_class(state["class"]).restore(state["state"])
    theirs = getattr(policy, "model", None)
    if model is not None and theirs is not None and theirs.to_dict() != model.to_dict():
        raise ValueError(f"the checkpoint's running episode has reward model {theirs.to_dict()}, this run "
                         f"{model.to_dict()}: run with the checkpoint's --reward-model (and range) until the "
                         "episode ends, or start with a fresh checkpoint")
    return policy


def _resolve_policy_class(path: str) -> type[Policy]:
    """The policy class a checkpoint names, looked up among the loaded policy classes (the registry's
    and the run's own): a checkpoint never makes the daemon import a module (``this:Zen``,
    ``os:system``) -- a forged or foreign one is refused before any of its code runs.

    >>> _resolve_policy_class("this:Zen")
    Traceback (most recent call last):
    ...
    ValueError: checkpoint names policy class 'this:Zen', which is not a loaded streamarms policy class: refused (nothing imported)
    """
    cls = _policy_classes().get(str(path))
    if cls is None:
        raise ValueError(f"checkpoint names policy class {str(path)[:200]!r}, which is not a loaded streamarms "
                         "policy class: refused (nothing imported)")
    return cls


def _check_snapshot(state: dict[str, Any], mode: str) -> None:
    if state.get("format") != 1:
        raise ValueError(f"unsupported scheduler snapshot format {state.get('format')!r}")
    if state.get("mode") != mode:
        raise ValueError(f"checkpoint was taken in {state.get('mode')!r} mode, this run is "
                         f"{mode!r}: start with a fresh checkpoint to change mode")


class Scheduler:
    """Runs detection episodes of a policy over a stream of ``(key, value)`` records (module docstring).

    ``build(arms, episode)`` returns a fresh policy for an episode. ``emit_alert(alert)`` receives
    alert dicts (see :mod:`streamarms.alerts`), ``emit_request(arm, payload)`` the sample requests of
    active mode, ``on_episode_end(summary)`` a dict describing each finished episode.
    ``arms`` fixes the arm set up front (records of other keys are then skipped); without it, arms are
    the keys seen on the stream (in active mode, unsolicited records without a request id announce keys).
    ``request_prefix`` makes request ids unique across process restarts (active mode). A facade over
    parts that own their state and snapshot: :attr:`keys`, :attr:`episodes`, :attr:`plan` (how a plan
    meets a stream), :attr:`requests` (active mode) and :attr:`counters`.
    """

    def __init__(self, build: Callable[[list[str], int], Policy], *, clock: Callable[[], float],
                 config: SchedulerConfig | None = None, codec: RewardCodec | None = None,
                 emit_alert: Callable[[dict[str, Any]], None] | None = None,
                 emit_request: Callable[[str, dict[str, Any]], None] | None = None,
                 on_episode_end: Callable[[dict[str, Any]], None] | None = None,
                 arms: Sequence[str] | None = None, policy_name: str = "policy", delta: float | None = None,
                 emit_normal: bool = False, alert_repeat: bool = False,
                 request_prefix: str = "", history: int = 100) -> None:
        self.config = cfg = config if config is not None else SchedulerConfig()
        self._active = cfg.mode == ACTIVE
        if self._active and emit_request is None:
            raise ValueError("active mode needs emit_request (where to publish sample requests)")
        self.build, self.clock, self.on_episode_end, self.policy_name = build, clock, on_episode_end, policy_name
        self._ev = clock if isinstance(clock, EventClock) else None  # read its .now without a call
        self.codec = codec if codec is not None else RewardCodec()
        self.alerts = AlertManager(policy_name, delta, emit_alert, emit_normal=emit_normal, repeat=alert_repeat)
        self.counters = SchedulerStats()
        self.keys = KeyRegistry(self.codec, cfg.max_arms, arms, self.clock() if arms else 0.0)
        self.episodes = EpisodeLifecycle(cfg, history)
        self.requests = RequestTracker(emit_request, request_prefix) if self._active else None  # type: ignore[arg-type]
        self.plan = PlanFollower(self.counters, self.alerts, plan_len=cfg.max_in_flight if self._active else cfg.window,
                                 prefetch=cfg.prefetch, wait=cfg.request_timeout if self._active else cfg.want_timeout,
                                 requests=self.requests, max_in_flight=cfg.max_in_flight)
        self.silence = SilenceWatch(cfg, self.keys.fixed)  # silent keys leave the running episode
        # the dicts every record looks into (or writes), without attribute hops (their owners update them in place)
        self._arm_of, self._window, self._held, self._last = (self.keys.arm_of, self.plan.window, self.plan.held,
                                                              self.silence.last)
        self._track_seen = cfg.key_ttl is not None
        self._validate_all = v = cfg.validate == "all"
        # how a record reaches the policy when it is not the inline plan-following passive path
        self._intake = (ActiveIntake(self.codec, self.counters, self.plan, self.requests, self._follow, v)  # type: ignore[arg-type]
                        if self._active else FeedAllIntake(self.codec, self.counters, self.plan, self.episodes,
                                                           self._follow, v) if cfg.passive_feed == "all" else None)
        # when something time-based must happen, and the record count at which discovery ends
        self._deadline = self._record_deadline = float("inf")
        self.refresh_deadline()

    # the parts' state, read by the daemon, the metrics and the CLI
    records = property(lambda self: self.counters.records)
    used = property(lambda self: self.counters.used)
    episodes_done = property(lambda self: self.counters.episodes_done)
    phase = property(lambda self: self.episodes.phase)
    episode = property(lambda self: self.episodes.episode)
    policy = property(lambda self: self.episodes.policy)
    history = property(lambda self: self.episodes.history)
    known_arms = property(lambda self: self.keys.known)
    finished = property(lambda self: self.episodes.phase == FINISHED, doc="``max_episodes`` episodes are done.")
    skipped = property(lambda self: self.stats_view().skipped, doc="Records read but not used, refused or held.")

    def stats_view(self) -> StatsView:
        """Counters and gauges now, for metrics, health and summaries."""
        return StatsView.of_scheduler(self)

    def stats(self) -> dict[str, Any]:
        return self.stats_view().as_dict()  # plain data

    def arm_states(self) -> dict[str, int]:
        """Arms of the current (or last) episode by state: ``active`` (undecided), ``outlier``, ``normal``."""
        return self.episodes.arm_states()

    def decision(self) -> Decision | None:
        """The current (or last) episode's decision."""
        return self.policy.decision() if self.policy is not None else None

    # -- records ---------------------------------------------------------------------------------
    def offer(self, key: bytes | str | None, value: bytes | str | None) -> InvalidRecord | None:
        """Handle one record; return an :class:`InvalidRecord` if it was refused, else ``None``."""
        c = self.counters
        c.records += 1
        arm = self._arm_of.get(key)  # type: ignore[arg-type]
        if arm is None:
            try:
                arm = self._new_key(key, value)
            except InvalidRecord as e:
                c.invalid[e.reason] += 1
                return e
            if arm is None:  # a key outside a fixed arm set
                return None
        ev = self._ev
        now = ev.now if ev is not None else self.clock()
        if self._track_seen:
            self.keys.last_seen[arm] = now
        self._last[arm] = c.records
        if now >= self._deadline or c.records >= self._record_deadline:
            self._deadline_in_record(now)
        if self._intake is not None:
            return self._intake.take(arm, value, now)
        want = self._window.get(arm)
        held = self._held.get(arm) if want is not None else None
        plan = self.plan
        try:
            if want is None or (held is not None and len(held) >= plan.depth):
                if self._validate_all:
                    self.codec.reward(arm, value)
                return None  # skipped
            x = self.codec.reward(arm, value)
        except InvalidRecord as e:
            c.invalid[e.reason] += 1
            return e
        if arm == plan.head:
            bad = plan.give(arm, x, now)
            if bad is None:
                self._follow(now, full=False)
            return bad
        plan.hold(arm, x, now)
        return None

    def offer_batch(self, keys: Sequence[bytes | str | None], values: Sequence[bytes | str | None],
                    stamps: Sequence[float | None] | None = None, clock: EventClock | None = None,
                    parsed: Sequence[Any] | None = None) -> tuple[int, list[tuple[int, InvalidRecord]]]:
        """Handle a poll batch exactly as :meth:`offer` record by record would (:mod:`.batch` says how). Returns
        how many records were handled -- all, unless the last episode (``max_episodes``) ended first: then up to
        its record -- and ``(index, refusal)`` for the refused ones. ``stamps`` (ms, ``None`` for none) advance
        ``clock`` (default: the scheduler's own :class:`EventClock`) to the largest so far, record by record, as
        the daemon does around :meth:`offer`; ``parsed``: the values as the source parsed them, if it did
        (an example: :func:`.batch.offer_batch`)."""
        return batch.offer_batch(self, keys, values, stamps, clock, parsed)

    def _new_key(self, key: bytes | str | None, value: bytes | str | None) -> str | None:
        now, known = self.clock(), len(self.keys)
        arm = self.keys.new_key(key, now, value)
        if len(self.keys) > known and self.episodes.phase == DISCOVERING:
            self.episodes.on_new_key(self._valid_records(), now)
            self.refresh_deadline()
        return arm

    def _valid_records(self) -> int:
        """Records not refused: what discovery counts, so a stream with bad records interleaved decides
        exactly as the same stream without them (a refused record changes nothing but its counter)."""
        c = self.counters
        return c.records - c.refused

    # -- time and episodes -------------------------------------------------------------------------
    def tick(self) -> None:
        """Let time-based transitions happen without a record (episode start, timeouts)."""
        now = self.clock()
        if now >= self._deadline:
            self._on_deadline(now)

    def _deadline_in_record(self, now: float) -> None:
        ep = self.episodes.episode
        self._on_deadline(now)
        if self.episodes.episode != ep:
            self.episodes.start_records -= 1  # the record in hand is the new episode's first

    def _on_deadline(self, now: float) -> None:
        e = self.episodes
        if e.phase == DISCOVERING:
            if e.discovery_over(now, len(self.keys), self._valid_records(), self.keys.fixed):
                self._start_episode(now)
            else:
                self.refresh_deadline()
        elif e.phase == IDLE:
            if now >= e.next_start:
                self._start_episode(now)
        elif e.phase == RUNNING:
            if e.timed_out(now):
                self.end_episode(now, "timeout")
            elif not self.silence.enforce(self, now) and now >= self._deadline:
                self._follow(now, self.plan.expire(now))

    def refresh_deadline(self) -> None:
        """When to look again, after the episode's times changed (here, or from a part: silence, a group member)."""
        d, rd = self.episodes.deadline(len(self.keys), self.keys.fixed)
        # rd counts valid records, the check all records: early after refusals, discovery_over (exact) says no
        self._record_deadline = min(rd + self.counters.refused if rd != _INF else rd, self.silence.next_check)
        wants = self.episodes.phase == RUNNING and not isinstance(self._intake, FeedAllIntake)  # (intake: why)
        self._deadline = min(d, self.plan.deadline()) if wants else d

    def _follow(self, now: float, deferred: set[str] | None = None, full: bool = True) -> None:
        """Follow the plan; end the episode when the policy is done."""
        if self.episodes.policy.done or self.plan.replan(now, deferred, full):  # type: ignore[union-attr]
            self.end_episode(now, "done")
        else:
            self.refresh_deadline()

    def _start_episode(self, now: float) -> None:
        cfg, e = self.config, self.episodes
        if cfg.key_ttl is not None:
            self.keys.forget_silent(now, cfg.key_ttl)
        arms = self.keys.known
        if len(arms) < cfg.min_arms:  # not enough arms (yet): wait for more keys / the next interval
            e.retry_later(now, self.plan.wait, idle=bool(e.episode))
            return self.refresh_deadline()
        try:
            policy = self.build(arms, e.episode + 1)
        except ValueError as err:  # e.g. a family's constraint on the number of arms: try again later
            e.build_failed(now, self.plan.wait, len(arms), err)
            return self.refresh_deadline()
        e.begin(policy, now, self.counters.records)
        self.silence.begin(arms, self.counters.records)
        self.plan.reset(policy, e.episode)
        self.alerts.begin_episode(e.episode)
        self._follow(now)

    def end_episode(self, now: float, reason: str) -> None:
        """End the running episode now (done, timeout, or a part's ``reason``): alerts, summary, next start."""
        decision = self.policy.decision()
        self.alerts.on_decision(self.silence.decision(decision), now)
        self.counters.episodes_done += 1
        self.plan.reset()
        summary = self.episodes.summary(decision, now, reason, self.counters.records, self.policy_name)
        self.episodes.end(summary, self.counters.episodes_done)
        self.silence.after_end(self, now)
        self.refresh_deadline()
        if self.on_episode_end is not None:
            self.on_episode_end(summary)
        if self.episodes.phase == IDLE and now >= self.episodes.next_start:
            self._start_episode(now)

    # -- persistence -------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Whole state as JSON-able data (the policy's own snapshot included)."""
        p = self.policy
        counters = self.counters.snapshot() | {"ep_start_records": self.episodes.start_records}
        return {"format": 1, "mode": self.config.mode, "now": self.clock(), "config": asdict(self.config),
                **self.episodes.snapshot(), "arms": self.keys.snapshot(), "counters": counters,
                "policy": None if p is None else {"class": _class_path(p), "state": p.snapshot()},
                **self.plan.snapshot(), "in_flight": self.requests.snapshot() if self.requests else [],
                "request_seq": self.requests.seq if self.requests else 0, "alerts": self.alerts.snapshot(),
                "silence": self.silence.snapshot()}

    def restore(self, state: dict[str, Any]) -> None:
        """Load :meth:`snapshot` output into this scheduler (built with the same ``build``/config)."""
        _check_snapshot(state, self.config.mode)
        if isinstance(self.clock, EventClock):  # stream time resumes where it was
            self.clock.advance(float(state["now"]))
        policy = restore_policy(state["policy"], self.codec.model if state["phase"] == RUNNING else None)
        self.keys.restore(state["arms"])
        self.counters.restore(state["counters"])
        self.episodes.restore(state, policy, int(state["counters"]["ep_start_records"]))  # (checked by the counters)
        self.plan.restore(state, policy, self.episodes.episode)
        if self.requests is not None:
            self.requests.restore(state["in_flight"], state["request_seq"])
        self.alerts.restore(state["alerts"])
        self.silence.restore(state.get("silence"), policy if self.phase == RUNNING else None, self.counters.records)
        self.refresh_deadline()


class _ExamplePolicy(Policy):
    """A tiny policy for the module's doctest: 20 samples per arm, round robin; outliers have mean > 0.5.

    >>> p = _ExamplePolicy(["a", "b"])
    >>> [r.arm for r in p.wanted(2)]
    ['a', 'b']
    """

    name = "example"

    def __init__(self, arms: Sequence[str], need: int = 20) -> None:
        super().__init__(arms)
        self.need = need
        self.m = {a: 0 for a in self.arms}
        self.s = {a: 0.0 for a in self.arms}

    def next_request(self) -> Request | None:
        w = self.wanted(1)
        return w[0] if w else None

    def wanted(self, k: int) -> list[Request]:
        todo = sorted((m, self.index[a], a) for a, m in self.m.items() if m < self.need)
        return [Request(a) for _, _, a in todo[:k]]

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        self._arm_index(arm)
        x = self._finite(arm, reward)
        self.m[arm] += 1
        self.s[arm] += x
        if self.m[arm] == self.need:
            mean = self.s[arm] / self.need
            return [Event(arm, "outlier" if mean > 0.5 else "normal", mean, (mean, mean), 0.5, (0.5, 0.5),
                          self.need, self.pulls)]
        return []

    @property
    def done(self) -> bool:
        return all(m >= self.need for m in self.m.values())

    @property
    def pulls(self) -> int:
        return sum(self.m.values())

    def decision(self) -> Decision:
        fin = [a for a in self.arms if self.m[a] >= self.need]
        out = [a for a in fin if self.s[a] / self.need > 0.5]
        return Decision(outliers=out, normals=[a for a in fin if a not in out],
                        undecided=[a for a in self.arms if a not in fin], estimated_outliers=out,
                        threshold=0.5, threshold_interval=(0.5, 0.5), pulls=self.pulls, done=self.done)

    def snapshot(self) -> dict[str, Any]:
        return {"arms": self.arms, "need": self.need, "m": self.m, "s": self.s}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> _ExamplePolicy:
        p = cls(state["arms"], state["need"])
        p.m = {a: int(v) for a, v in state["m"].items()}
        p.s = {a: float(v) for a, v in state["s"].items()}
        return p

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
``discovery_records`` records or ``discovery_seconds`` have passed since the first record. An episode
ends when the policy's stopping rule fires (``done``) or after ``episode_timeout`` (then undecided arms
are reported as such). The next one starts ``episode_interval`` seconds after the previous one started
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

import importlib
import logging
import math
from dataclasses import asdict
from typing import Any, Callable, Sequence

from ..alerts import AlertManager
from ..policies.base import Decision, Event, Policy, Request
from .clock import EventClock
from .codec import RewardCodec
from .config import ACTIVE, SchedulerConfig
from .records import INVALID_REASONS, InvalidRecord

__all__ = ["DISCOVERING", "RUNNING", "IDLE", "FINISHED", "PHASES", "Scheduler"]

log = logging.getLogger("streamarms.scheduler")

DISCOVERING, RUNNING, IDLE, FINISHED = "discovering", "running", "idle", "finished"
PHASES = (DISCOVERING, RUNNING, IDLE, FINISHED)

_INF = math.inf


def _class_path(obj: object) -> str:
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


def _resolve_policy_class(path: str) -> type[Policy]:
    module, _, qualname = path.partition(":")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not (isinstance(target, type) and issubclass(target, Policy)):
        raise ValueError(f"checkpoint names {path!r}, which is not a streamarms Policy class")
    return target


def _req_to_json(r: Request) -> list[Any]:
    return [r.arm, r.kind, r.request_id]


def _req_from_json(d: list[Any]) -> Request:
    return Request(str(d[0]), str(d[1]), None if d[2] is None else int(d[2]))


class Scheduler:
    """Runs detection episodes of a policy over a stream of ``(key, value)`` records (module docstring).

    ``build(arms, episode)`` returns a fresh policy for an episode. ``emit_alert(alert)`` receives
    alert dicts (see :mod:`streamarms.alerts`), ``emit_request(arm, payload)`` the sample requests of
    active mode, ``on_episode_end(summary)`` a dict describing each finished episode.
    ``arms`` fixes the arm set up front (records of other keys are then skipped); without it, arms are
    the keys seen on the stream (in active mode, unsolicited records without a request id announce keys).
    ``request_prefix`` makes request ids unique across process restarts (active mode).

    How a plan meets a stream. ``policy.wanted(window)`` is the policy's plan: the next arms it will
    ask for, the first (the *head*) being the one it wants now. A reward of the head is given to the
    policy at once. A reward of another planned arm is *held* (at most one per arm) and given to the
    policy when its plan reaches that arm. The policy thus receives its samples in exactly the order it
    asks for them -- it runs as it would in a simulation -- while the stream is read efficiently; held
    rewards are chosen by arrival, never by value. Only the head can make the policy wait: if no reward
    of it arrives within ``want_timeout`` (active: its request is not answered in ``request_timeout``)
    the scheduler calls ``policy.defer(head)``, and the arm is in cool-down for as long again: should
    the plan come back to it meanwhile with nothing held, it is deferred at once instead of waited for.
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
        if cfg.mode == ACTIVE and emit_request is None:
            raise ValueError("active mode needs emit_request (where to publish sample requests)")
        self.build = build
        self.clock = clock
        self._ev = clock if isinstance(clock, EventClock) else None  # read its .now without a call
        self.codec = codec if codec is not None else RewardCodec()
        self.emit_request = emit_request
        self.on_episode_end = on_episode_end
        self.policy_name = policy_name
        self.request_prefix = request_prefix
        self.alerts = AlertManager(policy_name, delta, emit_alert, emit_normal=emit_normal, repeat=alert_repeat)
        self._history_len = history
        self._active = cfg.mode == ACTIVE
        self._plan_len = cfg.max_in_flight if self._active else cfg.window
        self._wait = cfg.request_timeout if self._active else cfg.want_timeout
        self._depth = cfg.prefetch
        self._refresh_every = max(1, self._plan_len // 2)
        self._stale = 0  # deliveries since the window was last refreshed
        self._track_seen = cfg.key_ttl is not None
        self._validate_all = cfg.validate == "all"

        # known keys: raw key bytes -> arm name, arm -> last time a record of it was seen
        self._arm_of: dict[bytes, str] = {}
        self._last_seen: dict[str, float] = {}
        # counters (plain ints: read by the metrics collector at scrape time, never per record)
        self.records = 0
        self.used = 0
        self.invalid: dict[str, int] = {r: 0 for r in INVALID_REASONS}
        self.unmatched = 0          # active: answers with no matching request (part of skipped)
        self.timeouts = 0           # heads given up (policy.defer)
        self.wasted = 0             # held rewards never given to the policy (part of skipped)
        self.requests_sent = 0
        self.episodes_done = 0
        self.build_error: str | None = None  # why the last episode could not start, if it could not
        # phase
        self.phase = DISCOVERING
        self.episode = 0
        self.policy: Policy | None = None
        self.episode_started = 0.0
        self.next_start = _INF
        self.history: list[dict[str, Any]] = []
        self._ep_start_records = 0    # value of self.records when the current episode started
        # discovery
        self._first_record_at: float | None = None
        self._new_key_record = 0      # value of self.records when the last new key appeared
        # the plan: arm -> (request, since); its head; held rewards; cool-downs
        self._window: dict[str, tuple[Request, float]] = {}
        self._head: str | None = None
        self._held: dict[str, list[float]] = {}
        self._cooldown: dict[str, float] = {}
        # active: request id -> (arm, issued_at); arms in flight
        self._in_flight: dict[str, tuple[str, float]] = {}
        self._in_flight_arms: dict[str, int] = {}  # arm -> requests in flight
        self._request_seq = 0
        # the earliest moment something time-based must happen, and the record count at which
        # discovery ends (both checked on every record, so kept as plain numbers)
        self._deadline = _INF
        self._record_deadline = _INF

        #: arms given up front are the whole arm set: records of other keys are skipped
        self._fixed_arms = bool(arms)
        for a in arms or ():
            self._register(self.codec.arm(a), self.clock())
        self.offer = self._offer_active if self._active else self._offer_passive  # type: ignore[method-assign]
        self._recompute_deadline()

    # ------------------------------------------------------------------------------------------
    # properties
    # ------------------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """``max_episodes`` episodes have completed."""
        return self.phase == FINISHED

    @property
    def known_arms(self) -> list[str]:
        return sorted(self._last_seen)

    def stats(self) -> dict[str, Any]:
        """Counters and gauges for metrics and summaries."""
        return {
            "records": self.records, "used": self.used, "skipped": self.skipped,
            "held": sum(len(h) for h in self._held.values()),
            "wasted": self.wasted, "invalid": dict(self.invalid), "unmatched": self.unmatched,
            "timeouts": self.timeouts, "requests_sent": self.requests_sent, "episodes": self.episodes_done,
            "episode": self.episode, "phase": self.phase, "known_arms": len(self._last_seen),
            "alerts": dict(self.alerts.counts), "in_flight": len(self._in_flight), "window": len(self._window),
            "episode_records": self.records - self._ep_start_records,
        }

    def arm_states(self) -> dict[str, int]:
        """Arms of the current (or last) episode by state: ``active`` (undecided), ``outlier``, ``normal``."""
        p = self.policy
        if p is None:
            return {"active": 0, "outlier": 0, "normal": 0}
        d = p.decision()
        return {"active": len(d.undecided) if not d.done else 0, "outlier": len(d.outliers),
                "normal": len(d.normals)}

    # ------------------------------------------------------------------------------------------
    # records
    # ------------------------------------------------------------------------------------------
    def offer(self, key: bytes | str | None, value: bytes | str | None) -> InvalidRecord | None:  # noqa: D401
        """Handle one record; return an :class:`InvalidRecord` if it was refused, else ``None``.

        (Bound at construction to the passive or active implementation.)
        """
        raise NotImplementedError  # replaced in __init__

    def _offer_passive(self, key: bytes | str | None, value: bytes | str | None) -> InvalidRecord | None:
        self.records += 1
        arm = self._arm_of.get(key)  # type: ignore[arg-type]
        if arm is None:
            try:
                arm = self._new_key(key)
            except InvalidRecord as e:
                self.invalid[e.reason] += 1
                return e
            if arm is None:  # a key outside a fixed arm set
                return None
        ev = self._ev
        now = ev.now if ev is not None else self.clock()
        if self._track_seen:
            self._last_seen[arm] = now
        if now >= self._deadline or self.records >= self._record_deadline:
            self._deadline_in_record(now)
        want = self._window.get(arm)
        held = self._held.get(arm) if want is not None else None
        if want is None or (held is not None and len(held) >= self._depth):
            if self._validate_all:
                try:
                    self.codec.reward(arm, value)
                except InvalidRecord as e:
                    self.invalid[e.reason] += 1
                    return e
            return None  # skipped
        try:
            x = self.codec.reward(arm, value)
        except InvalidRecord as e:
            self.invalid[e.reason] += 1
            return e
        if arm == self._head:
            return self._deliver(arm, x, now)
        if held is None:
            self._held[arm] = [x]
        else:
            held.append(x)
        self._window[arm] = (want[0], now)  # its wait restarts from this reward
        return None

    def _offer_active(self, key: bytes | str | None, value: bytes | str | None) -> InvalidRecord | None:
        self.records += 1
        arm = self._arm_of.get(key)  # type: ignore[arg-type]
        if arm is None:
            try:
                arm = self._new_key(key)
            except InvalidRecord as e:
                self.invalid[e.reason] += 1
                return e
            if arm is None:
                return None
        ev = self._ev
        now = ev.now if ev is not None else self.clock()
        if self._track_seen:
            self._last_seen[arm] = now
        if now >= self._deadline or self.records >= self._record_deadline:
            self._deadline_in_record(now)
        try:
            obj = self.codec.parse(arm, value)
            rid = obj.get(self.codec.request_id_field)
            entry = self._in_flight.get(str(rid)) if rid is not None else None
            if entry is None:
                if self._validate_all:
                    self.codec.reward_of(arm, obj)
                self.unmatched += 1
                return None
            if entry[0] != arm:
                raise InvalidRecord("request_mismatch", f"answer to request {rid!r} (arm {entry[0]!r}) "
                                                        f"came with key {arm!r}")
            x = self.codec.reward_of(arm, obj)
        except InvalidRecord as e:
            self.invalid[e.reason] += 1
            return e
        del self._in_flight[str(rid)]
        self._unflight(arm)
        if arm == self._head:
            return self._deliver(arm, x, now)
        self._held.setdefault(arm, []).append(x)
        self._replan(now)  # a slot is free: request the next planned arm
        return None

    def _deliver(self, arm: str, x: float, now: float) -> InvalidRecord | None:
        """Give the head's reward to the policy, then follow the plan (held rewards included)."""
        policy = self.policy
        assert policy is not None
        req = self._window[arm][0]
        try:
            events = policy.update(arm, x, req)
        except ValueError as e:
            self.invalid["rejected_by_policy"] += 1
            return InvalidRecord("rejected_by_policy", str(e))
        self._window[arm] = (req, now)  # served: a new wait for it starts now
        self._stale += 1
        self.used += 1
        if events:
            self.alerts.on_events(events, now)
        if policy.done:
            self._end_episode(now, "done")
        else:
            self._replan(now, full=False)
        return None

    def _new_key(self, key: bytes | str | None) -> str | None:
        arm = self.codec.arm(key)
        raw = arm.encode("utf-8")
        if raw in self._arm_of:  # a str key of an arm known by bytes
            if isinstance(key, str):
                self._arm_of[key] = arm  # type: ignore[index]
            return arm
        if self._fixed_arms:
            return None
        if len(self._last_seen) >= self.config.max_arms:
            raise InvalidRecord("too_many_arms", f"new key {arm[:64]!r} refused: already "
                                                 f"{len(self._last_seen)} arms (max_arms={self.config.max_arms})")
        now = self.clock()
        self._register(arm, now)
        if isinstance(key, str):
            self._arm_of[key] = arm  # type: ignore[index]
        if self.phase == DISCOVERING:
            self._new_key_record = self.records
            if self._first_record_at is None:
                self._first_record_at = now
            self._recompute_deadline()
        return arm

    def _register(self, arm: str, now: float) -> None:
        self._arm_of[arm.encode("utf-8")] = arm
        self._last_seen[arm] = now

    # ------------------------------------------------------------------------------------------
    # time
    # ------------------------------------------------------------------------------------------
    def tick(self) -> None:
        """Let time-based transitions happen without a record (episode start, timeouts)."""
        now = self.clock()
        if now >= self._deadline:
            self._on_deadline(now)

    @property
    def skipped(self) -> int:
        """Records read but not given to the policy (nor refused, nor held for it right now)."""
        return self.records - self.used - sum(self.invalid.values()) - sum(len(h) for h in self._held.values())

    def _deadline_in_record(self, now: float) -> None:
        ep = self.episode
        self._on_deadline(now)
        if self.episode != ep:
            self._ep_start_records -= 1  # the record in hand is the new episode's first

    def _on_deadline(self, now: float) -> None:
        phase = self.phase
        if phase == DISCOVERING:
            if self._discovery_over(now):
                self._start_episode(now)
            else:
                self._recompute_deadline()
        elif phase == IDLE:
            if now >= self.next_start:
                self._start_episode(now)
        elif phase == RUNNING:
            t = self.config.episode_timeout
            if t is not None and now >= self.episode_started + t:
                self._end_episode(now, "timeout")
                return
            self._expire(now)

    def _discovery_over(self, now: float) -> bool:
        cfg = self.config
        if len(self._last_seen) < cfg.min_arms:
            return False
        if self._fixed_arms or self._first_record_at is None:  # arms given up front, no record needed
            return True
        return (self.records - self._new_key_record >= cfg.discovery_records
                or now >= self._first_record_at + cfg.discovery_seconds)

    def _recompute_deadline(self) -> None:
        phase = self.phase
        d = _INF
        rd = _INF
        cfg = self.config
        if phase == DISCOVERING:
            if len(self._last_seen) < cfg.min_arms:
                pass  # nothing can start before a new key arrives (which recomputes)
            elif self._fixed_arms or self._first_record_at is None:
                d = -_INF  # arms given up front: start at the first opportunity
            else:
                d = self._first_record_at + cfg.discovery_seconds
                rd = self._new_key_record + cfg.discovery_records
        elif phase == IDLE:
            d = self.next_start
        elif phase == RUNNING:
            if cfg.episode_timeout is not None:
                d = self.episode_started + cfg.episode_timeout
            wait = self._wait
            if self._active:
                for _, issued in self._in_flight.values():
                    if issued + wait < d:
                        d = issued + wait
                for a, until in self._cooldown.items():  # a planned arm may be requested again
                    if until < d and a in self._window:
                        d = until
            else:
                head = self._head
                if head is not None and head in self._window:
                    t = self._window[head][1] + wait
                    if t < d:
                        d = t
        self._deadline = d
        self._record_deadline = rd

    def _expire(self, now: float) -> None:
        """Give up an overdue head (and, in active mode, overdue requests), end cool-downs, re-plan."""
        policy = self.policy
        assert policy is not None
        wait = self._wait
        for arm in [a for a, until in self._cooldown.items() if until <= now]:
            del self._cooldown[arm]
        if self._active:
            deferred: set[str] = set()
            for rid in [rid for rid, (_, issued) in self._in_flight.items() if issued + wait <= now]:
                arm = self._in_flight.pop(rid)[0]
                self._unflight(arm)
                self._cooldown[arm] = now + wait
                if arm == self._head:
                    self.timeouts += 1
                    policy.defer(arm)
                    deferred.add(arm)
            self._replan(now, deferred)
            return
        else:
            head = self._head
            if head is not None and head in self._window and self._window[head][1] + wait <= now:
                self.timeouts += 1
                self._cooldown[head] = now + wait
                policy.defer(head)
                # if the policy still wants it (it may not re-plan), wait for it afresh
                self._window[head] = (self._window[head][0], now)
                self._replan(now, {head})
                return
        self._replan(now)

    # ------------------------------------------------------------------------------------------
    # planning
    # ------------------------------------------------------------------------------------------
    def _replan(self, now: float, deferred: set[str] | None = None, full: bool = True) -> None:
        """Follow the plan: find the head, give it held rewards while it has some, defer a head in
        cool-down; in active mode, request the planned arms that have nothing held or in flight.

        The head is always the policy's current ``next_request()``. The rest of the window (arms to
        prefetch for) is refreshed from ``wanted(window)`` when the head leaves it, after ``window // 2``
        deliveries, or when ``full``: a slightly stale prefetch set costs nothing but efficiency, and
        it keeps the per-sample work O(1) amortised.
        """
        policy = self.policy
        assert policy is not None
        k = self._plan_len
        held = self._held
        cool = self._cooldown
        deferred = set() if deferred is None else deferred
        while True:
            if full or self._stale >= self._refresh_every:
                reqs = policy.wanted(k)
                old = self._window
                new: dict[str, tuple[Request, float]] = {}
                for r in reqs:
                    a = r.arm
                    if a not in new:
                        prev = old.get(a)
                        new[a] = (r, prev[1] if prev is not None else now)
                self._window = new
                head_req = reqs[0] if reqs else None
                self._stale = 0
            else:
                head_req = policy.next_request()
                if head_req is not None:
                    w = self._window.get(head_req.arm)
                    if w is None:
                        full = True
                        continue
                    self._window[head_req.arm] = (head_req, w[1])
            full = False
            if head_req is None:
                self._head = None
                break
            head = self._head = head_req.arm
            h = held.get(head)
            if h:
                x = h.pop(0)
                if not h:
                    del held[head]
                try:
                    events = policy.update(head, x, head_req)
                except ValueError:  # cannot happen for a reward the codec accepted; drop it
                    self.invalid["rejected_by_policy"] += 1
                    continue
                self._window[head] = (head_req, now)
                self._stale += 1
                self.used += 1
                if events:
                    self.alerts.on_events(events, now)
                if policy.done:
                    self._end_episode(now, "done")
                    return
                continue
            if head in cool and cool[head] > now and head not in deferred \
                    and head not in self._in_flight_arms:
                deferred.add(head)  # each arm at most once per re-plan: a policy may not move on
                self.timeouts += 1
                policy.defer(head)
                full = True
                continue
            break
        if self._active:
            free = self.config.max_in_flight - len(self._in_flight)
            if free > 0:
                busy = self._in_flight_arms
                depth = self._depth
                for a, (r, _) in self._window.items():
                    if a in cool and cool[a] > now:
                        continue
                    # up to `prefetch` samples of each planned arm held or on their way
                    want = min(free, depth - len(held.get(a, ())) - busy.get(a, 0))
                    for _ in range(want):
                        self._send_request(r, now)
                    free -= max(0, want)
                    if free <= 0:
                        break
        self._recompute_deadline()

    def _unflight(self, arm: str) -> None:
        n = self._in_flight_arms[arm] - 1
        if n:
            self._in_flight_arms[arm] = n
        else:
            del self._in_flight_arms[arm]

    def _send_request(self, r: Request, now: float) -> None:
        self._request_seq += 1
        rid = f"{self.request_prefix}{self.episode}-{self._request_seq}"
        self._in_flight[rid] = (r.arm, now)
        self._in_flight_arms[r.arm] = self._in_flight_arms.get(r.arm, 0) + 1
        self.requests_sent += 1
        payload = {"arm": r.arm, "request_id": rid, "episode": self.episode, "kind": r.kind, "time": now}
        self.emit_request(r.arm, payload)  # type: ignore[misc]

    # ------------------------------------------------------------------------------------------
    # episodes
    # ------------------------------------------------------------------------------------------
    def _reset_plan(self) -> None:
        self.wasted += sum(len(h) for h in self._held.values())
        self._window = {}
        self._head = None
        self._held = {}
        self._cooldown = {}
        self._in_flight = {}
        self._in_flight_arms = {}

    def _start_episode(self, now: float) -> None:
        cfg = self.config
        if cfg.key_ttl is not None:
            stale = {a for a, t in self._last_seen.items() if t + cfg.key_ttl < now}
            if stale:
                for a in stale:
                    del self._last_seen[a]
                self._arm_of = {k: v for k, v in self._arm_of.items() if v not in stale}
        arms = sorted(self._last_seen)
        if len(arms) < cfg.min_arms:
            # not enough arms (yet): wait for more keys / the next interval
            if self.episode:
                self.phase = IDLE
                self.next_start = now + max(cfg.episode_interval, self._wait)
            else:
                self.phase = DISCOVERING
            self._recompute_deadline()
            return
        try:
            policy = self.build(arms, self.episode + 1)
        except ValueError as e:  # e.g. a family's constraint on the number of arms: try again later
            self.build_error = str(e)
            log.warning("cannot start episode %d on %d arms: %s; next attempt in %g s", self.episode + 1,
                        len(arms), e, max(cfg.episode_interval, self._wait))
            self.phase = IDLE
            self.next_start = now + max(cfg.episode_interval, self._wait)
            self._recompute_deadline()
            return
        self.build_error = None
        self.episode += 1
        self.policy = policy
        self.phase = RUNNING
        self.episode_started = now
        self.next_start = now + cfg.episode_interval
        self._ep_start_records = self.records
        self._reset_plan()
        self.alerts.begin_episode(self.episode)
        if self.policy.done:
            self._end_episode(now, "done")
        else:
            self._replan(now)

    def _end_episode(self, now: float, reason: str) -> None:
        policy = self.policy
        assert policy is not None
        decision = policy.decision()
        estimates = decision.extra.get("estimates") if isinstance(decision.extra, dict) else None

        def details(arm: str) -> dict[str, Any]:
            if isinstance(estimates, dict) and arm in estimates:
                return {"estimate": estimates[arm]}
            return {}

        self.alerts.on_decision(decision, now, details)
        self.episodes_done += 1
        self._reset_plan()
        summary = self._episode_summary(decision, now, reason)
        self.history.append(summary)
        del self.history[:-self._history_len]
        cfg = self.config
        if cfg.max_episodes is not None and self.episodes_done >= cfg.max_episodes:
            self.phase = FINISHED
            self.next_start = _INF
        else:
            self.phase = IDLE
        self._recompute_deadline()
        if self.on_episode_end is not None:
            self.on_episode_end(summary)
        if self.phase == IDLE and now >= self.next_start:
            self._start_episode(now)

    def _episode_summary(self, d: Decision, now: float, reason: str) -> dict[str, Any]:
        return {
            "episode": self.episode, "policy": self.policy_name, "reason": reason,
            "arms": len(self.policy.arms) if self.policy is not None else 0,
            "started": self.episode_started, "ended": now, "duration": now - self.episode_started,
            "records": self.records - self._ep_start_records, "samples": d.pulls, "done": d.done,
            "outliers": sorted(d.outliers), "normals": len(d.normals), "undecided": sorted(d.undecided),
            "estimated_outliers": sorted(d.estimated_outliers), "threshold": d.threshold,
            "threshold_interval": list(d.threshold_interval) if d.threshold_interval is not None else None,
        }

    def decision(self) -> Decision | None:
        """The current (or last) episode's decision."""
        return self.policy.decision() if self.policy is not None else None

    # ------------------------------------------------------------------------------------------
    # persistence
    # ------------------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Whole state as JSON-able data (the policy's own snapshot included)."""
        p = self.policy
        return {
            "format": 1,
            "mode": self.config.mode,
            "now": self.clock(),
            "config": asdict(self.config),
            "phase": self.phase, "episode": self.episode,
            "episode_started": self.episode_started, "next_start": _num(self.next_start),
            "arms": dict(self._last_seen),
            "counters": {"records": self.records, "used": self.used,
                         "invalid": dict(self.invalid), "unmatched": self.unmatched, "timeouts": self.timeouts,
                         "wasted": self.wasted, "requests_sent": self.requests_sent,
                         "episodes_done": self.episodes_done, "ep_start_records": self._ep_start_records},
            "discovery": {"first_record_at": self._first_record_at, "new_key_record": self._new_key_record},
            "policy": None if p is None else {"class": _class_path(p), "state": p.snapshot()},
            "window": [[a, _req_to_json(r), t] for a, (r, t) in self._window.items()],
            "head": self._head, "stale": self._stale,
            "held": {a: list(xs) for a, xs in self._held.items()},
            "cooldown": dict(self._cooldown),
            "in_flight": [[rid, a, t] for rid, (a, t) in self._in_flight.items()],
            "request_seq": self._request_seq,
            "alerts": self.alerts.snapshot(),
            "history": list(self.history),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Load :meth:`snapshot` output into this scheduler (built with the same ``build``/config)."""
        if state.get("format") != 1:
            raise ValueError(f"unsupported scheduler snapshot format {state.get('format')!r}")
        if state.get("mode") != self.config.mode:
            raise ValueError(f"checkpoint was taken in {state.get('mode')!r} mode, this run is "
                             f"{self.config.mode!r}: start with a fresh checkpoint to change mode")
        if isinstance(self.clock, EventClock):  # stream time resumes where it was
            self.clock.advance(float(state["now"]))
        self.phase = state["phase"]
        self.episode = int(state["episode"])
        self.episode_started = float(state["episode_started"])
        self.next_start = _unnum(state["next_start"])
        self._arm_of = {}
        self._last_seen = {}
        for a, t in state["arms"].items():
            self._register(a, float(t))
        c = state["counters"]
        self.records, self.used = int(c["records"]), int(c["used"])
        self.invalid = {r: 0 for r in INVALID_REASONS} | {k: int(v) for k, v in c["invalid"].items()}
        self.unmatched, self.timeouts, self.wasted = int(c["unmatched"]), int(c["timeouts"]), int(c["wasted"])
        self.requests_sent, self.episodes_done = int(c["requests_sent"]), int(c["episodes_done"])
        self._ep_start_records = int(c["ep_start_records"])
        disc = state["discovery"]
        self._first_record_at = disc["first_record_at"]
        self._new_key_record = int(disc["new_key_record"])
        ps = state["policy"]
        self.policy = None if ps is None else _resolve_policy_class(ps["class"]).restore(ps["state"])
        self._window = {a: (_req_from_json(r), float(t)) for a, r, t in state["window"]}
        self._head = state["head"]
        self._stale = int(state["stale"])
        self._held = {a: [float(x) for x in xs] for a, xs in state["held"].items()}
        self._cooldown = {a: float(t) for a, t in state["cooldown"].items()}
        self._in_flight = {rid: (a, float(t)) for rid, a, t in state["in_flight"]}
        self._in_flight_arms = {}
        for a, _ in self._in_flight.values():
            self._in_flight_arms[a] = self._in_flight_arms.get(a, 0) + 1
        self._request_seq = int(state["request_seq"])
        self.alerts.restore(state["alerts"])
        self.history = list(state["history"])
        self._recompute_deadline()


def _num(x: float) -> float | None:
    return None if x == _INF else x


def _unnum(x: float | None) -> float:
    return _INF if x is None else float(x)


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
    def restore(cls, state: dict[str, Any]) -> "_ExamplePolicy":
        p = cls(state["arms"], state["need"])
        p.m = {a: int(v) for a, v in state["m"].items()}
        p.s = {a: float(v) for a, v in state["s"].items()}
        return p

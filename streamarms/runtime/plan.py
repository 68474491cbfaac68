"""Following a policy's plan over a stream: :class:`PlanFollower`.

``policy.wanted(window)`` is the policy's plan: the next arms it will ask for, the first (the *head*)
being the one it wants now. A reward of the head is given to the policy at once (:meth:`give`). A
reward of another planned arm is *held* (up to ``prefetch`` per arm) and given when the plan reaches
that arm (:meth:`replan`). The policy thus receives its samples in exactly the order it asks for them --
it runs as it would in a simulation -- while the stream is read efficiently; held rewards are chosen
by arrival, never by value. Only the head can make the policy wait: if no reward of it arrives within
``wait`` seconds (active mode: its request is not answered in time) ``policy.defer(head)`` lets the
policy re-plan, and the arm cools down for as long again: should the plan come back to it meanwhile
with nothing held, it is deferred at once instead of waited for.

In active mode the follower also requests (through a :class:`~.requests.RequestTracker`) the planned
arms that have fewer than ``prefetch`` rewards held or on their way.
"""

from __future__ import annotations

from typing import Any

from ..alerts import AlertManager
from ..policies.base import Policy, Request
from .records import InvalidRecord
from .requests import RequestTracker
from .stats import SchedulerStats

__all__ = ["PlanFollower"]


class PlanFollower:
    """The window of planned arms, its head, the held rewards and the cool-downs of one episode."""

    def __init__(self, stats: SchedulerStats, alerts: AlertManager, *, plan_len: int, prefetch: int,
                 wait: float, requests: RequestTracker | None = None, max_in_flight: int = 0) -> None:
        self.stats = stats
        self.alerts = alerts
        self.plan_len = plan_len
        self.depth = prefetch
        self.wait = wait
        self.requests = requests
        self.max_in_flight = max_in_flight
        self.refresh_every = max(1, plan_len // 2)
        self.policy: Policy | None = None
        self.episode = 0
        self.window: dict[str, tuple[Request, float]] = {}  # arm -> (its request, waiting since)
        self.head: str | None = None
        self.held: dict[str, list[float]] = {}
        self.cooldown: dict[str, float] = {}
        self.stale = 0  # rewards given since the window was last refreshed

    def reset(self, policy: Policy | None = None, episode: int = 0) -> None:
        """Forget the plan (the held rewards are counted as wasted); follow ``policy`` from now on."""
        self.stats.wasted += self.held_count()
        self.policy, self.episode = policy, episode
        self.window.clear()  # window and held in place: the scheduler's record path holds them
        self.held.clear()
        self.head, self.cooldown = None, {}
        if self.requests is not None:
            self.requests.reset()

    def held_count(self) -> int:
        return sum(len(h) for h in self.held.values())

    def hold(self, arm: str, x: float, now: float) -> None:
        """Keep a reward of a planned arm that is not the head (passive: its wait restarts)."""
        held = self.held.get(arm)
        if held is None:
            self.held[arm] = [x]
        else:
            held.append(x)
        if self.requests is None:
            self.window[arm] = (self.window[arm][0], now)

    def give(self, arm: str, x: float, now: float) -> InvalidRecord | None:
        """Give the head's reward to the policy (``policy.done`` may be true afterwards)."""
        req = self.window[arm][0]
        bad = self.take(arm, x, now, req)
        if bad is None:
            self.window[arm] = (req, now)  # served: a new wait for it starts now
            self.stale += 1
        return bad

    def take(self, arm: str, x: float, now: float, req: Request | None = None) -> InvalidRecord | None:
        """``policy.update`` with the counting and the alerts (``passive_feed="all"`` calls it for
        every reward)."""
        try:
            events = self.policy.update(arm, x, req)  # type: ignore[union-attr]
        except ValueError as e:
            self.stats.invalid["rejected_by_policy"] += 1
            return InvalidRecord("rejected_by_policy", str(e))
        self.stats.used += 1
        if events:
            self.alerts.on_events(events, now)
        return None

    def replan(self, now: float, deferred: set[str] | None = None, full: bool = True) -> bool:
        """Find the head, give it held rewards while it has some, defer a head in cool-down; in active
        mode, request the planned arms. Returns whether the policy is done.

        The head is always the policy's current ``next_request()``. The rest of the window (arms to
        prefetch for) is refreshed from ``wanted(window)`` when the head leaves it, after ``window // 2``
        deliveries, or when ``full``: a slightly stale prefetch set costs nothing but efficiency, and
        it keeps the per-sample work O(1) amortised.
        """
        policy = self.policy
        assert policy is not None
        held, cool = self.held, self.cooldown
        # the loop gives most samples of a planned feed (they come held): its state in locals, written
        # back before it returns (nothing it calls reads them)
        window, stats, every, stale = self.window, self.stats, self.refresh_every, self.stale
        next_request, update = policy.next_request, policy.update
        while True:
            since: float | None = None  # the head's wait, when its window entry is rewritten below
            if full or stale >= every:
                reqs = policy.wanted(self.plan_len)
                new: dict[str, tuple[Request, float]] = {}
                for r in reqs:
                    if r.arm not in new:
                        prev = window.get(r.arm)
                        new[r.arm] = (r, prev[1] if prev is not None else now)
                window.clear()  # in place: the scheduler's record path holds this dict
                window.update(new)
                head_req = reqs[0] if reqs else None
                stale = 0
            else:
                head_req = next_request()
                if head_req is not None:
                    w = window.get(head_req.arm)
                    if w is None:
                        full = True
                        continue
                    since = w[1]
            full = False
            if head_req is None:
                self.head = None
                break
            head = self.head = head_req.arm
            h = held.get(head)
            if h:
                x = h.pop(0)
                if not h:
                    del held[head]
                # give(head, x, now), inline (the sample path of a planned feed: most rewards come held)
                try:
                    events = update(head, x, head_req)
                except ValueError:  # (take's refusal; cannot happen for a reward the codec accepted)
                    stats.invalid["rejected_by_policy"] += 1
                    if since is not None:
                        window[head] = (head_req, since)
                    continue
                stats.used += 1
                if events:
                    self.alerts.on_events(events, now)
                window[head] = (head_req, now)  # served: a new wait for it starts now
                stale += 1
                if policy.done:
                    self.stale = stale
                    return True
                continue
            if since is not None and w is not None and w[0] is not head_req:  # (the same request: the entry stays as it is)
                window[head] = (head_req, since)
            if head in cool and cool[head] > now and (deferred is None or head not in deferred) \
                    and (self.requests is None or head not in self.requests.per_arm):
                if deferred is None:  # (made when first needed: most re-plans defer nothing)
                    deferred = set()
                deferred.add(head)  # each arm at most once per re-plan: a policy may not move on
                self.stats.timeouts += 1
                policy.defer(head)
                full = True
                continue
            break
        self.stale = stale
        if self.requests is not None:
            self._request(now)
        return False

    def _request(self, now: float) -> None:
        tracker = self.requests
        assert tracker is not None
        free = self.max_in_flight - len(tracker.in_flight)
        cool = self.cooldown
        for a, (r, _) in self.window.items():
            if free <= 0:
                break
            if a in cool and cool[a] > now:
                continue
            # up to `prefetch` samples of each planned arm held or on their way
            want = min(free, self.depth - len(self.held.get(a, ())) - tracker.per_arm.get(a, 0))
            for _ in range(want):
                tracker.send(r, self.episode, now)
                self.stats.requests_sent += 1
            free -= max(0, want)

    def expire(self, now: float) -> set[str]:
        """End past cool-downs; give up an overdue head (active: overdue requests). Returns the arms
        deferred (for :meth:`replan`, which the caller runs next)."""
        policy = self.policy
        assert policy is not None
        wait = self.wait
        for arm in [a for a, until in self.cooldown.items() if until <= now]:
            del self.cooldown[arm]
        deferred: set[str] = set()
        if self.requests is not None:
            for arm in self.requests.overdue(now, wait):
                self.cooldown[arm] = now + wait
                if arm == self.head:
                    self.stats.timeouts += 1
                    policy.defer(arm)
                    deferred.add(arm)
            return deferred
        head = self.head
        if head is not None and head in self.window and self.window[head][1] + wait <= now:
            self.stats.timeouts += 1
            self.cooldown[head] = now + wait
            policy.defer(head)
            # if the policy still wants it (it may not re-plan), wait for it afresh
            self.window[head] = (self.window[head][0], now)
            deferred.add(head)
        return deferred

    def deadline(self) -> float:
        """The earliest moment :meth:`expire` has something to do."""
        if self.requests is not None:
            d = self.requests.earliest() + self.wait
            for a, until in self.cooldown.items():  # a planned arm may be requested again
                if until < d and a in self.window:
                    d = until
            return d
        head = self.head
        if head is not None and head in self.window:
            return self.window[head][1] + self.wait
        return float("inf")

    def snapshot(self) -> dict[str, Any]:
        return {"window": [[a, [r.arm, r.kind, r.request_id], t] for a, (r, t) in self.window.items()],
                "head": self.head, "stale": self.stale, "held": {a: list(xs) for a, xs in self.held.items()},
                "cooldown": dict(self.cooldown)}

    def restore(self, state: dict[str, Any], policy: Policy | None, episode: int) -> None:
        self.policy, self.episode = policy, episode
        self.window.clear()
        self.window.update({a: (Request(str(r[0]), str(r[1]), None if r[2] is None else int(r[2])), float(t))
                            for a, r, t in state["window"]})
        self.head = state["head"]
        self.stale = int(state["stale"])
        self.held.clear()
        self.held.update({a: [float(x) for x in xs] for a, xs in state["held"].items()})
        self.cooldown = {a: float(t) for a, t in state["cooldown"].items()}

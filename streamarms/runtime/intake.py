"""How a record of a known arm reaches the policy, besides the plan-following passive mode (which the
scheduler keeps inline: it is the hot path).

* :class:`ActiveIntake` -- active mode: a record is an answer, matched to its request by id.
* :class:`FeedAllIntake` -- passive mode with ``passive_feed="all"``: every reward of an arm of the
  episode goes to the policy as it arrives, nothing is held or skipped while the episode runs.

Why ``"all"`` is sound. Which records are given to the policy depends only on their keys and arrival
order, never on their values: each arm's rewards are still an i.i.d. sample of the arm, taken at
stopping times of the stream. A policy whose confidence statements hold simultaneously at every
sample count (anytime-valid: a time-uniform boundary, or a union bound over all sample counts such as
the k-sigma policies' ``6 delta / (pi^2 (n+1) T^2)`` schedule) is therefore right with probability at
least ``1 - delta`` whatever the order of its samples (the streaming contract of
:mod:`streamarms.policies.base`). Its sampling *rule* is bypassed -- it reads every reward instead of
the ones it asks for -- so fixed-budget and round-based rules (``kind`` ``threshold`` and ``best`` in
the registry) are refused by the command line: they would spend their budget on whatever arrives.
"""

from __future__ import annotations

from collections.abc import Callable

from .codec import RewardCodec
from .episodes import RUNNING, EpisodeLifecycle
from .plan import PlanFollower
from .records import InvalidRecord
from .requests import RequestTracker
from .stats import SchedulerStats

__all__ = ["ActiveIntake", "FeedAllIntake"]

#: ``follow(now, full=...)``: the scheduler's "follow the plan, end the episode when done"
Follow = Callable[..., None]


class ActiveIntake:
    """Active mode: an answer is matched to its request by id; other records announce keys only."""

    def __init__(self, codec: RewardCodec, counters: SchedulerStats, plan: PlanFollower,
                 requests: RequestTracker, follow: Follow, validate_all: bool) -> None:
        self.codec, self.counters, self.plan, self.requests = codec, counters, plan, requests
        self.follow, self.validate_all = follow, validate_all

    def take(self, arm: str, value: bytes | str | None, now: float) -> InvalidRecord | None:
        try:
            obj = self.codec.parse(arm, value)
            rid = self.requests.match(arm, obj.get(self.codec.request_id_field))
            if rid is None:
                if self.validate_all:
                    self.codec.reward_of(arm, obj)
                self.counters.unmatched += 1
                return None
            x = self.codec.reward_of(arm, obj)
        except InvalidRecord as e:
            self.counters.invalid[e.reason] += 1
            return e
        self.requests.settle(rid)
        if arm == self.plan.head:
            bad = self.plan.give(arm, x, now)
            if bad is None:
                self.follow(now, full=False)
            return bad
        self.plan.hold(arm, x, now)
        self.follow(now)  # a slot is free: request the next planned arm
        return None


class FeedAllIntake:
    """Passive mode, ``passive_feed="all"``: every valid reward of an arm of the running episode goes
    to the policy at once (module docstring). The plan's wants do not time out here (the scheduler sets no
    deadline for them): the policy takes every reward whatever it wants, and at a few records per second of
    stream time a want given up was a re-plan every few records, for nothing."""

    def __init__(self, codec: RewardCodec, counters: SchedulerStats, plan: PlanFollower,
                 episodes: EpisodeLifecycle, follow: Follow, validate_all: bool) -> None:
        self.codec, self.counters, self.plan, self.episodes = codec, counters, plan, episodes
        self.follow, self.validate_all = follow, validate_all

    def take(self, arm: str, value: bytes | str | None, now: float) -> InvalidRecord | None:
        policy = self.episodes.policy
        running = self.episodes.phase == RUNNING and policy is not None and arm in policy.index
        try:
            if not running:
                if self.validate_all:
                    self.codec.reward(arm, value)
                return None  # skipped: between episodes, or a key that joins the next episode
            x = self.codec.reward(arm, value)
        except InvalidRecord as e:
            self.counters.invalid[e.reason] += 1
            return e
        return self.take_valid(arm, x, now)

    def take_valid(self, arm: str, x: float, now: float) -> InvalidRecord | None:
        """:meth:`take` for a reward already decoded and valid (the batched path)."""
        policy = self.episodes.policy
        if not (self.episodes.phase == RUNNING and policy is not None and arm in policy.index):
            return None  # skipped
        bad = self.plan.take(arm, x, now)
        if bad is None and policy.done:
            self.follow(now, full=False)  # ends the episode
        return bad

"""Detection episodes: :class:`EpisodeLifecycle`, the phase machine of the scheduler.

``discovering`` (before the first episode: the episode starts once ``min_arms`` keys are known and either
no new key has appeared for ``discovery_records`` records, or ``discovery_seconds`` have passed since the
first record *and* the keys have settled -- as many records since the last new key as from the first record
to it --, or at the latest ``DISCOVERY_CAP`` times ``discovery_seconds`` after the first record (keys that
keep coming); and the source's ``gate``, if any, agrees: with Kafka, every assigned partition has delivered
a record; a gate that made discovery wait starts the rule again when it opens, so the keys of a partition
that delivered late are not cut at its first records) -> ``running`` (a policy on the arms known when it started) -> ``idle`` (until
``episode_interval`` after the previous start) -> ``running`` ... -> ``finished`` (``max_episodes``).

>>> from streamarms.runtime.config import SchedulerConfig
>>> e = EpisodeLifecycle(SchedulerConfig(min_arms=2, discovery_records=10, discovery_seconds=5.0))
>>> e.on_new_key(records=1, now=100.0); e.on_new_key(records=2, now=100.5)
>>> e.discovery_over(now=101.0, n_arms=2, records=5, fixed=False), e.deadline(n_arms=2, fixed=False)
(False, (105.0, 12))

A slow stream (a record a second): 10 s after its first record, its keys are still coming; the episode waits
until no new key came for as many records as it took to see the last one (here from record 1 to 8):

>>> e = EpisodeLifecycle(SchedulerConfig(min_arms=2, discovery_records=1000, discovery_seconds=10.0))
>>> for r in range(1, 9): e.on_new_key(records=r, now=99.0 + r)
>>> e.discovery_over(now=110.0, n_arms=8, records=11, fixed=False), e.deadline(n_arms=8, fixed=False)
(False, (400.0, 15))
>>> e.discovery_over(now=114.0, n_arms=8, records=15, fixed=False)
True

Why: the keys' rates do not know the stream's clock. At a record a second, "10 s after the first record" saw
10 of 25 keys and the episode decided without the other 15 (``tests/runtime/test_discovery_settles.py``); when no
new key came in the last half of the records, a key not seen yet has a share of the stream of about ``3 / r``
(``r`` those records: the "rule of three"), and it joins the next episode.

A jump of the stream's time (a log that starts with a few records of the day before, a stream paused for hours) is
no discovery time: it would end discovery at once, on the keys of the records before it. A record more than twice
the longest discovery by time (``DISCOVERY_CAP`` times ``discovery_seconds``) after the first comes after such a
jump (with enough keys, discovery would have ended at the first record past the cap, had one come before), and
discovery's time counts from it, the keys seen kept (its record counts are unchanged). The rule reads only the
checkpointed state and the record's time, so a run resumed from a checkpoint takes it where an uninterrupted run
does:

>>> e = EpisodeLifecycle(SchedulerConfig(min_arms=2, discovery_records=1000, discovery_seconds=10.0))
>>> e.on_new_key(records=1, now=100.0); e.on_new_key(records=2, now=100.0)
>>> e.discovery_over(now=86_500.0, n_arms=3, records=3, fixed=False), e.first_record_at
(False, 86500.0)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from ..policies.base import Decision, Policy
from .config import SchedulerConfig

__all__ = ["DISCOVERING", "RUNNING", "IDLE", "FINISHED", "PHASES", "EpisodeLifecycle", "DISCOVERY_CAP"]

DISCOVERING, RUNNING, IDLE, FINISHED = "discovering", "running", "idle", "finished"
PHASES = (DISCOVERING, RUNNING, IDLE, FINISHED)
_INF = math.inf
log = logging.getLogger("streamarms.scheduler")
#: discovery ends at the latest this many ``discovery_seconds`` after the first record, when new keys keep coming
DISCOVERY_CAP = 30


class EpisodeLifecycle:
    """The phase, the current episode and its policy, the discovery state and the episodes' history."""

    def __init__(self, config: SchedulerConfig, history: int = 100) -> None:
        self.config = config
        self.history_len = history
        self.phase = DISCOVERING
        self.episode = 0
        self.policy: Policy | None = None
        self.started = 0.0
        #: has the running episode a start time? ``False`` for a group member's episode still announcing (dated
        #: at the group's start) or joined before its first record (the stream clock stood at 0): no timeout
        #: until :meth:`date`, and the next start counts from there
        self.dated = True
        self.next_start = _INF
        self.start_records = 0  # the record count when the current episode started
        self.history: list[dict[str, Any]] = []
        self.build_error: str | None = None  # why the last episode could not start, if it could not
        self.first_record_at: float | None = None
        self.first_key_record = 0  # the record count of the first key's first record
        self.new_key_record = 0  # the record count when the last new key appeared
        self.settling = False  # discovery_seconds have passed, the keys have not settled yet
        #: may discovery end (asked once the rule above says so)? A partitioned source's answer: every
        #: partition has delivered a record (``streamarms.connectors.discovery``); ``None``: always
        self.gate: Callable[[], bool] | None = None
        self.gated = False  # the gate said no: ask it at every turn (it opens by itself)

    def on_new_key(self, records: int, now: float) -> None:
        if self.phase == DISCOVERING:
            if self.first_record_at is None:
                self.first_key_record = records
            self.new_key_record = records
            if self.first_record_at is None or self.first_record_at == 0.0:  # (0: no timestamp yet, below)
                self.first_record_at = now

    def _settled_at(self) -> int:
        """The record count from which the keys count as settled (module docstring)."""
        return 2 * self.new_key_record - self.first_key_record

    def discovery_over(self, now: float, n_arms: int, records: int, fixed: bool) -> bool:
        cfg = self.config
        if n_arms < cfg.min_arms:
            return False
        if fixed or self.first_record_at is None:  # arms given up front, no record needed
            return True
        if self.first_record_at == 0.0 < now:
            # the first records had no timestamp (the clock stood at 0): discovery's time is counted from
            # the first timestamp, not from 1970 (which would end it at once, on the keys seen so far)
            self.first_record_at = now
        cap = DISCOVERY_CAP * cfg.discovery_seconds
        if now - self.first_record_at > 2 * cap > 0:  # a jump of the stream's time (module docstring)
            log.info("the stream's time jumped by at least %s s during discovery (records older than the ones after "
                     "them, or a pause): discovery's time counts from here, the %d keys seen kept",
                     f"{now - self.first_record_at - cap:,.0f}", n_arms)
            self.first_record_at, self.settling = now, False
        timed = now >= self.first_record_at + cfg.discovery_seconds
        over = (records - self.new_key_record >= cfg.discovery_records
                or (timed and records >= self._settled_at())
                or now >= self.first_record_at + DISCOVERY_CAP * cfg.discovery_seconds)
        self.settling = timed and not over
        if not over or self.gate is None:
            return over
        if self.gate():
            if self.gated:
                # the gate waited for a partition: its first records have just come, its other keys
                # may be in the records still to come -- the rule starts again from here
                self.gated = False
                self.new_key_record, self.first_key_record, self.first_record_at = records, records, now
                return False
            return True
        self.gated = True
        return False

    def deadline(self, n_arms: int, fixed: bool) -> tuple[float, float]:
        """(the moment, the record count) at which the phase may change by itself."""
        cfg = self.config
        if self.phase == DISCOVERING:
            if n_arms < cfg.min_arms:
                return _INF, _INF  # nothing can start before a new key arrives
            if fixed or self.first_record_at is None or self.gated:
                return -_INF, _INF  # arms given up front, or the gate to ask: at the first opportunity
            by_records = self.new_key_record + cfg.discovery_records
            if self.settling:  # the time has passed: the keys settling, or the cap
                return (self.first_record_at + DISCOVERY_CAP * cfg.discovery_seconds,
                        min(by_records, max(self._settled_at(), self.new_key_record + 1)))
            return self.first_record_at + cfg.discovery_seconds, by_records
        if self.phase == IDLE:
            return self.next_start, _INF
        if self.phase == RUNNING:
            return self._timeout_at(), _INF
        return _INF, _INF

    def retry_later(self, now: float, wait: float, idle: bool) -> None:
        """An episode could not start (too few arms, the policy refused them): ``idle`` until the next
        interval, or keep discovering keys."""
        if idle:
            self.phase = IDLE
            self.next_start = now + max(self.config.episode_interval, wait)
        else:
            self.phase = DISCOVERING

    def build_failed(self, now: float, wait: float, n_arms: int, error: Exception) -> None:
        """The policy refused the arms (e.g. a family's constraint on their number): try again later."""
        self.build_error = str(error)
        log.warning("cannot start episode %d on %d arms: %s; next attempt in %g s", self.episode + 1,
                    n_arms, error, max(self.config.episode_interval, wait))
        self.retry_later(now, wait, idle=True)

    def begin(self, policy: Policy, now: float, records: int, dated: bool = True) -> None:
        self.build_error = None
        self.episode += 1
        self.policy = policy
        self.phase = RUNNING
        self.date(now)
        self.dated = dated and policy.dated_at_start
        self.start_records = records
        if self.episode == 1 and self.first_record_at is not None:  # the end of discovery, a wait that says nothing
            log.info("episode 1 started on %d keys, discovered in %s records%s", len(policy.arms),
                     f"{records - self.first_key_record + 1:,}",
                     f" and {now - self.first_record_at:,.0f} s of stream time" if self.first_record_at > 0.0 else "")

    def date(self, now: float) -> None:
        """Date the running episode at ``now``: its timeout and the next start count from here (a group's
        episode is dated at the group's start, so members that announced at different moments end by
        ``--episode-timeout`` together; one joined before its first record, at that record)."""
        self.started, self.next_start, self.dated = now, now + self.config.episode_interval, True

    def timed_out(self, now: float) -> bool:
        return now >= self._timeout_at()

    def _timeout_at(self) -> float:
        """When the running episode times out (never without ``episode_timeout``, or while undated)."""
        t = self.config.episode_timeout
        return self.started + t if t is not None and self.dated else _INF

    def end(self, summary: dict[str, Any], episodes_done: int) -> None:
        self.history.append(summary)
        del self.history[:-self.history_len]
        m = self.config.max_episodes
        # the episode's number too: a group member that joined the group's episode E counts the E - 1 the
        # group ran before it (in one process the number and the count are equal)
        if m is not None and max(episodes_done, self.episode) >= m:
            self.phase = FINISHED
            self.next_start = _INF
        else:
            self.phase = IDLE

    def finish(self) -> None:
        """No episode is left to run (``max_episodes`` reached without running one here)."""
        self.phase = FINISHED
        self.next_start = _INF

    def arm_states(self) -> dict[str, int]:
        """Arms of the current (or last) episode by state: ``active`` (undecided), ``outlier``, ``normal``."""
        if self.policy is None:
            return {"active": 0, "outlier": 0, "normal": 0}
        d = self.policy.decision()
        return {"active": len(d.undecided) if not d.done else 0, "outlier": len(d.outliers), "normal": len(d.normals)}

    def summary(self, d: Decision, now: float, reason: str, records: int, policy_name: str) -> dict[str, Any]:
        started = self.started if self.dated else now
        return {
            "episode": self.episode, "policy": policy_name, "reason": reason,
            "arms": len(self.policy.arms) if self.policy is not None else 0,
            "started": started, "ended": now, "duration": now - started,
            "records": records - self.start_records, "samples": d.pulls, "done": d.done,
            "outliers": sorted(d.outliers), "normals": len(d.normals), "undecided": sorted(d.undecided),
            "estimated_outliers": sorted(d.estimated_outliers), "threshold": d.threshold,
            "threshold_interval": list(d.threshold_interval) if d.threshold_interval is not None else None,
        }

    def snapshot(self) -> dict[str, Any]:
        return {"phase": self.phase, "episode": self.episode, "episode_started": self.started, "dated": self.dated,
                "next_start": None if self.next_start == _INF else self.next_start,
                "discovery": {"first_record_at": self.first_record_at, "new_key_record": self.new_key_record,
                              "first_key_record": self.first_key_record},
                "history": list(self.history)}

    def restore(self, state: dict[str, Any], policy: Policy | None, start_records: int) -> None:
        self.phase = state["phase"]
        self.episode = int(state["episode"])
        self.started = float(state["episode_started"])
        self.dated = bool(state.get("dated", True))  # (absent before the field: every episode was dated)
        self.next_start = _INF if state["next_start"] is None else float(state["next_start"])
        self.first_record_at = state["discovery"]["first_record_at"]
        self.new_key_record = int(state["discovery"]["new_key_record"])
        # (absent before the field: the rule's settling part counts from the last new key, as if it were the first)
        self.first_key_record = int(state["discovery"].get("first_key_record", self.new_key_record))
        self.history = list(state["history"])
        self.policy = policy
        self.start_records = start_records
        # --max-episodes may change on a restart: a run that stopped at its last episode goes on when more
        # are allowed now (the next one due as it would have been), and one with fewer allowed stops
        m = self.config.max_episodes
        if self.phase == FINISHED and (m is None or self.episode < m):
            self.phase = IDLE
            self.next_start = self.started + self.config.episode_interval
        elif self.phase == IDLE and m is not None and self.episode >= m:
            self.finish()

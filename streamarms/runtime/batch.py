"""The batch path of :class:`~streamarms.runtime.scheduler.Scheduler` (``offer_batch``): a poll batch in
record order, exactly as ``Scheduler.offer`` record by record (same decisions, events, counters, state).

The values are decoded in one pass (:meth:`RewardCodec.rewards`); a record of a known key with a valid
reward then costs a few dict lookups (skipped, held or given to the policy); every other record -- a new
key, a bad value (its reason), a due deadline, active mode, expiring keys -- goes through ``offer``
itself, so the two paths cannot disagree. The batch is the unit the daemon checkpoints and rolls back.
The function reads and writes the scheduler's own parts (one concept: the scheduler's intake of a
batch), kept apart so that the facade stays small (issue 11).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .clock import EventClock
from .episodes import FINISHED
from .intake import FeedAllIntake
from .records import InvalidRecord

__all__ = ["offer_batch"]


def offer_batch(s: Any, keys: Sequence[bytes | str | None], values: Sequence[bytes | str | None],
                stamps: Sequence[float | None] | None = None,
                clock: EventClock | None = None) -> tuple[int, list[tuple[int, InvalidRecord]]]:
    """``Scheduler.offer_batch`` (``s`` is the scheduler; typed ``Any``: importing it would be a cycle)."""
    xs = s.codec.rewards(values)
    out: list[tuple[int, InvalidRecord]] = []
    c, arm_of, plan, ev, intake = s.counters, s.keys.arm_of, s.plan, s._ev, s._intake
    inline = intake is None and not s._track_seen and not s._active
    feed_all = isinstance(intake, FeedAllIntake) and not s._track_seen
    tick = clock if clock is not None else ev
    if stamps is not None and tick is None:
        raise ValueError("stamps need an EventClock to advance")
    clock_ms = tick.now * 1000.0 if stamps is not None else 0.0
    offer, episodes = s.offer, s.episodes
    for i in range(len(xs)):
        if stamps is not None:
            ts = stamps[i]
            if ts is not None and ts > clock_ms:
                clock_ms = ts
                tick.now = ts * 0.001
        x = xs[i]
        arm = arm_of.get(keys[i])
        if x is None or arm is None or not (inline or feed_all):
            bad = offer(keys[i], values[i])
            if bad is not None:
                out.append((i, bad))
            if episodes.phase == FINISHED:
                return i + 1, out
            continue
        c.records += 1
        now = ev.now if ev is not None else s.clock()
        if now >= s._deadline or c.records >= s._record_deadline:
            s._deadline_in_record(now)
            if episodes.phase == FINISHED:
                return i + 1, out
        if feed_all:
            bad = intake.take_valid(arm, x, now)
            if bad is not None:
                out.append((i, bad))
            elif episodes.phase == FINISHED:
                return i + 1, out
            continue
        want = plan.window.get(arm)
        if want is None:
            continue  # skipped (valid: validated by the batch pass)
        held = plan.held.get(arm)
        if held is not None and len(held) >= plan.depth:
            continue
        if arm == plan.head:
            bad = plan.give(arm, x, now)
            if bad is None:
                s._follow(now, full=False)
                if episodes.phase == FINISHED:
                    return i + 1, out
            else:
                out.append((i, bad))
        else:
            plan.hold(arm, x, now)
    return len(xs), out

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
from itertools import repeat
from typing import Any

from .clock import EventClock
from .episodes import FINISHED, RUNNING
from .intake import FeedAllIntake
from .records import InvalidRecord

__all__ = ["offer_batch"]


def offer_batch(s: Any, keys: Sequence[bytes | str | None], values: Sequence[bytes | str | None],
                stamps: Sequence[float | None] | None = None, clock: EventClock | None = None,
                parsed: Sequence[Any] | None = None) -> tuple[int, list[tuple[int, InvalidRecord]]]:
    """``Scheduler.offer_batch`` (``s`` is the scheduler; typed ``Any``: importing it would be a cycle).

    >>> from streamarms.runtime.scheduler import Scheduler, _ExamplePolicy
    >>> s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=EventClock(), arms=["a", "b", "c"])
    >>> s.tick()  # arms given up front: the episode starts at once
    >>> n, bad = s.offer_batch([b"a", b"b", b"a"], [b'{"reward": 1}', b'{"reward": "x"}', b'{"reward": 0}'])
    >>> n, [(i, e.reason) for i, e in bad]
    (3, [(1, 'not_numeric')])
    >>> s.records, s.used, s.plan.held_count()  # the second reward of "a" waits for its turn
    (3, 1, 1)
    """
    check_lengths(keys, values, stamps, parsed)
    out: list[tuple[int, InvalidRecord]] = []
    c, arm_of, plan, ev, intake = s.counters, s.keys.arm_of, s.plan, s._ev, s._intake
    inline = intake is None and not s._track_seen and not s._active
    feed_all = isinstance(intake, FeedAllIntake) and not s._track_seen
    tick = clock if clock is not None else ev
    if stamps is not None and tick is None:
        raise ValueError("stamps need an EventClock to advance")
    clock_ms = tick.now * 1000.0 if stamps is not None else 0.0
    offer, episodes, last = s.offer, s.episodes, s._last
    window, held_of, depth = plan.window, plan.held, plan.depth  # (updated in place by their owner)
    # feed-all runs of records go to policy.update_batch at once: needs the stream clock (the
    # scheduler's own EventClock, which the stamps advance), so that every record's time is known
    runs = feed_all and ev is not None and (stamps is None or tick is ev)
    idle = (inline or feed_all) and episodes.phase != RUNNING and ev is not None and (stamps is None or tick is ev)
    # --validate used: a skipped record is not parsed (offer skips it unread), so neither is an idle batch
    if idle and not s._validate_all and _idle_batch(s, keys, None, stamps, clock_ms):
        return len(keys), out
    xs = s.codec.rewards(values, parsed)
    if idle and s._validate_all and _idle_batch(s, keys, xs, stamps, clock_ms):
        return len(xs), out
    if inline and ev is not None and (stamps is None or tick is ev):
        return _planned(s, keys, values, xs, stamps, clock_ms, out)
    resume = 0  # records before this index were handled by a feed-all run
    for i in range(len(xs)):
        if i < resume:
            continue
        if stamps is not None:
            ts = stamps[i]
            if ts is not None and ts > clock_ms:
                clock_ms = ts
                tick.now = ts / 1000.0
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
        last[arm] = c.records  # (the silence rule: the arm's last record)
        now = ev.now if ev is not None else s.clock()
        if now >= s._deadline or c.records >= s._record_deadline:
            s._deadline_in_record(now)
            if episodes.phase == FINISHED:
                return i + 1, out
        if feed_all:
            pol = episodes.policy
            if runs and episodes.phase == RUNNING and pol is not None and arm in pol.index:
                i, clock_ms, bad = _feed_run(s, pol, i, arm, x, now, keys, xs, stamps, clock_ms)
                resume = i + 1
                if bad is not None:
                    out.append((i, bad))
                if episodes.phase == FINISHED:
                    return i + 1, out
                continue
            bad = intake.take_valid(arm, x, now)
            if bad is not None:
                out.append((i, bad))
            elif episodes.phase == FINISHED:
                return i + 1, out
            continue
        want = window.get(arm)
        if want is None:
            continue  # skipped (valid: validated by the batch pass)
        held = held_of.get(arm)
        if held is not None and len(held) >= depth:
            continue
        if arm == plan.head:
            bad = plan.give(arm, x, now)
            if bad is None:
                s._follow(now, full=False)
                if episodes.phase == FINISHED:
                    return i + 1, out
            else:
                out.append((i, bad))
        elif held is None:  # plan.hold(arm, x, now), inline (passive: its wait restarts)
            held_of[arm] = [x]
            window[arm] = (want[0], now)
        else:
            held.append(x)
            window[arm] = (want[0], now)
    return len(xs), out


def _planned(s: Any, keys: Sequence[bytes | str | None], values: Sequence[bytes | str | None],
             xs: Sequence[float | None], stamps: Sequence[float | None] | None, clock_ms: float,
             out: list[tuple[int, InvalidRecord]]) -> tuple[int, list[tuple[int, InvalidRecord]]]:
    """The record loop of the plan-following passive feed on the stream clock (the default of ``run``):
    the loop below ``offer_batch``'s, with the record count, the clock and the deadlines in locals. They
    are written back before anything else may read them (``offer``, a deadline, a reward given to the
    policy) and read again after it, so every record sees what the general loop would show it. Why:
    two records in three are skipped or held at 20 keys; their attribute reads and writes were ~0.3 us
    of the ~6 us a record cost while detecting.

    The keys are mapped to arms in one C-level pass before the loop: a key that becomes known inside
    the batch (``offer`` registers it) keeps ``None`` there, so its later records go through ``offer``
    too -- the reference path, the same decision. The head's reward is given inline
    (``PlanFollower.give`` and ``take``: the same calls and counters; a refusal by the policy, which
    leaves its state unchanged, is counted and explained as ``take`` does): two calls fewer per sample."""
    c, arm_of, plan, ev, episodes = s.counters, s.keys.arm_of, s.plan, s._ev, s.episodes
    window, held_of, depth = plan.window, plan.held, plan.depth  # (updated in place by their owner)
    stats, alerts = plan.stats, plan.alerts
    offer, follow, last = s.offer, s._follow, s._last
    records, now, deadline, rec_deadline = c.records, ev.now, s._deadline, s._record_deadline
    arms = list(map(arm_of.get, keys))
    for i, (arm, x, ts) in enumerate(zip(arms, xs, stamps if stamps is not None else repeat(None, len(xs)))):
        if ts is not None and ts > clock_ms:
            clock_ms = ts
            now = ts / 1000.0
        if x is None or arm is None:
            c.records, ev.now = records, now
            bad = offer(keys[i], values[i])
            if bad is not None:
                out.append((i, bad))
            if episodes.phase == FINISHED:
                return i + 1, out
            if s._intake is not None or s._track_seen or s._active:  # (cannot change; checked anyway)
                raise AssertionError("the plan-following loop left its mode")
            records, now, deadline, rec_deadline = c.records, ev.now, s._deadline, s._record_deadline
            continue
        records += 1
        last[arm] = records  # (the silence rule: the arm's last record)
        if now >= deadline or records >= rec_deadline:
            c.records, ev.now = records, now
            s._deadline_in_record(now)
            if episodes.phase == FINISHED:
                return i + 1, out
            records, now, deadline, rec_deadline = c.records, ev.now, s._deadline, s._record_deadline
        want = window.get(arm)
        if want is None:
            continue  # skipped (valid: validated by the batch pass)
        held = held_of.get(arm)
        if held is not None and len(held) >= depth:
            continue
        if arm == plan.head:
            c.records, ev.now = records, now
            req = want[0]
            try:  # plan.give(arm, x, now), inline
                events = plan.policy.update(arm, x, req)
            except ValueError as e:  # (take's refusal; the policy's state is unchanged)
                stats.invalid["rejected_by_policy"] += 1
                out.append((i, InvalidRecord("rejected_by_policy", str(e))))
                continue
            stats.used += 1
            if events:
                alerts.on_events(events, now)
            window[arm] = (req, now)  # served: a new wait for it starts now
            plan.stale += 1
            follow(now, None, False)
            if episodes.phase == FINISHED:
                return i + 1, out
            records, now, deadline, rec_deadline = c.records, ev.now, s._deadline, s._record_deadline
        elif held is None:  # plan.hold(arm, x, now), inline (passive: its wait restarts)
            held_of[arm] = [x]
            window[arm] = (want[0], now)
        else:
            held.append(x)
            window[arm] = (want[0], now)
    c.records, ev.now = records, now
    return len(xs), out


def _feed_run(s: Any, pol: Any, i: int, arm: str, x: float, now: float, keys: Sequence[bytes | str | None],
              xs: Sequence[float | None], stamps: Sequence[float | None] | None,
              clock_ms: float) -> tuple[int, float, InvalidRecord | None]:
    """Feed-all mode: record ``i`` (counted, its deadline checked) and the records after it that are
    valid rewards of the episode's arms, up to one whose deadline is due, go to ``policy.update_batch``
    in one call -- exactly ``FeedAllIntake.take_valid`` record by record: ``update_batch`` stops after
    a reward with events or that ends the policy, and the records after it are handed back. Returns the
    index of the last record handled, the stream clock (ms) after it and the record's refusal, if any."""
    index, arm_of, c, ev = pol.index, s.keys.arm_of, s.counters, s._ev
    arms, rewards, nows, clocks, names = [index[arm]], [x], [now], [clock_ms], [arm]
    deadline, rec_deadline, records = s._deadline, s._record_deadline, c.records
    cm, t = clock_ms, now
    for j in range(i + 1, len(xs)):
        xj = xs[j]
        a = arm_of.get(keys[j])
        if xj is None or a is None or a not in index:
            break
        if stamps is not None:
            ts = stamps[j]
            if ts is not None and ts > cm:
                cm, t = ts, ts / 1000.0
        if t >= deadline or records + len(arms) >= rec_deadline:
            break  # record j's deadline: the record loop handles it
        arms.append(index[a])
        names.append(a)
        rewards.append(xj)
        nows.append(t)
        clocks.append(cm)
    k, events = pol.update_batch(arms, rewards)
    if k == 0:  # refused by the policy: take_valid says why (state unchanged)
        return i, clock_ms, s._intake.take_valid(arm, x, now)
    # the silence rule's last records of the records taken (record i's is stored already), in one C-level pass
    s._last.update(zip(names[1:k], range(records + 1, records + k)))
    last = i + k - 1
    c.records = records + k - 1
    ev.now = nows[k - 1]
    s.plan.stats.used += k
    if events:
        s.plan.alerts.on_events(events, nows[k - 1])
    if pol.done:
        s._follow(nows[k - 1], full=False)  # ends the episode
    return last, clocks[k - 1], None


def check_lengths(keys: Sequence[Any], values: Sequence[Any], stamps: Sequence[Any] | None = None,
                  parsed: Sequence[Any] | None = None) -> None:
    """``ValueError`` unless a batch's columns have one entry per key (before any record is taken: a batch
    is never half applied)."""
    n = len(keys)
    for name, col in (("values", values), ("stamps", stamps), ("parsed", parsed)):
        if col is not None and len(col) != n:
            raise ValueError(f"a batch of {n} keys has {len(col)} {name}")


def _idle_batch(s: Any, keys: Sequence[bytes | str | None], xs: Sequence[float | None] | None,
                stamps: Sequence[float | None] | None, clock_ms: float) -> bool:
    """No episode running (passive mode, either feed, stream clock): a batch of valid rewards of
    known keys (``xs`` ``None``: of any values, ``--validate used``) changes nothing but the record
    count and the clock -- each record is counted and skipped -- unless a deadline falls due inside
    it. The clock never goes back, so if it is still before the deadline after the last record (and
    the count before the record deadline) it was so after every one: count them all and move the
    clock at once (C-level scans; no per-record Python). Returns whether it did (else nothing
    changed: the record loop handles the batch)."""
    n = len(keys)
    c = s.counters
    if not n or (xs is not None and None in xs) or c.records + n >= s._record_deadline:
        return False
    arm_of = s.keys.arm_of
    if not all(map(arm_of.__contains__, keys)):
        return False
    ev = s._ev
    now, last = ev.now, clock_ms
    if stamps is not None:
        top: float | None
        if None not in stamps:
            top = max(stamps)  # type: ignore[type-var]  # (no None in it)
        else:
            top = max((t for t in stamps if t is not None), default=None)
        if top is not None and top > clock_ms:
            now, last = top / 1000.0, top
    if now >= s._deadline:
        return False
    c.records += n
    if last != clock_ms:
        ev.now = now
    return True

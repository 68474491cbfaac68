"""Poll order (``--order arrival``) and the plan-following feed: why ``prefetch`` is a poll's worth there.

A consumer in poll order hands out a partition's records in runs of up to ``max_poll_records``; keys
are partitioned by hash, so a run holds the records of a few keys only. The plan-following feed gives
the policy the rewards its plan asks for, in that order, holding up to ``prefetch`` rewards of each
planned key until the plan reaches it. With the old default of 4 held rewards a key, a plan that moves
across keys of every partition (WRR's round robin) got a handful of samples per run: on the 20-key
stream in 4 partitions it had not decided after 200k records (in order of timestamps: 64k). Holding a
poll's worth (the CLI's default with ``--order arrival``) it decides after 41k (held rewards use more of
each run than the timestamp order, which skips what the plan does not want yet); the test allows 3x.
"""

from __future__ import annotations

import random

from streamarms.models import BernoulliModel
from streamarms.policies.ksigma import WeightedRoundRobin
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig
from streamarms.sim import zww17_example

POLL = 1000


def partitions(n: int, parts: int = 4, seed: int = 1) -> list[list[tuple[bytes, bytes, int]]]:
    """The zww17 20-key stream, each key in one partition (keys 0-9 in partition 0, the rest spread)."""
    means = zww17_example()
    keys = [f"region-{i:02d}".encode() for i in range(len(means))]
    part_of = [0] * 10 + [1 + i % (parts - 1) for i in range(10)]  # uneven, as hash partitioning often is
    rng = random.Random(seed)
    out: list[list[tuple[bytes, bytes, int]]] = [[] for _ in range(parts)]
    for i in range(n):
        a = rng.randrange(len(keys))
        out[part_of[a]].append((keys[a], b'{"reward": %d}' % (rng.random() < means[a]), 1_700_000_000_000 + i))
    return out


def poll_order(parts: list[list[tuple[bytes, bytes, int]]]) -> list[list[tuple[bytes, bytes, int]]]:
    """Runs of up to a poll from each partition in turn (what a consumer in poll order returns)."""
    runs, at = [], [0] * len(parts)
    while any(a < len(p) for a, p in zip(at, parts)):
        for j, p in enumerate(parts):
            if at[j] < len(p):
                runs.append(p[at[j]:at[j] + POLL])
                at[j] += POLL
    return runs


def records_to_decide(batches: list[list[tuple[bytes, bytes, int]]], prefetch: int) -> int | None:
    clock = EventClock()
    sched = Scheduler(lambda arms, ep: WeightedRoundRobin(arms, k=2.0, delta=0.1), clock=clock,
                      codec=RewardCodec(model=BernoulliModel()), policy_name="wrr", delta=0.1,
                      config=SchedulerConfig(discovery_records=1000, episode_interval=1e9, prefetch=prefetch))
    for b in batches:
        sched.offer_batch([r[0] for r in b], [r[1] for r in b], [r[2] for r in b], clock)
        if sched.episodes_done >= 1:  # (a starved episode may end sooner, when its keys of the partitions
            # exhausted first have been silent for --episode-silence-records: that is not deciding)
            return sched.records if sched.history[0]["reason"] == "done" else None
    return None


def test_poll_order_needs_a_polls_worth_of_held_rewards():
    parts = partitions(200_000)
    merged = sorted((r for p in parts for r in p), key=lambda r: r[2])
    in_order = records_to_decide([merged[i:i + POLL] for i in range(0, len(merged), POLL)], prefetch=4)
    assert in_order is not None
    runs = poll_order(parts)
    assert records_to_decide(runs, prefetch=4) is None  # starved: not decided in 200k records
    held = records_to_decide(runs, prefetch=POLL)
    assert held is not None and held <= 3 * in_order, (held, in_order)

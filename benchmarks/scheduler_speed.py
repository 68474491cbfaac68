"""Records per second (process time, one core) through ``Scheduler.offer`` in passive mode, no broker.

The scheduler's own cost per record, without Kafka, JSON decoding of skipped records or the daemon:
a pre-generated stream of 20 keys with Bernoulli rewards (the [ZWW17]-style instance, two outliers),
WRR (k = 2, delta = 0.1).

* ``idle``: after the only episode has ended every record is read and skipped (a deployment's usual
  state);
* ``detecting``: episodes back to back (``episode_interval=0``), planned passive feed;
* ``feed-all``: the same with ``passive_feed="all"`` (every record of an episode arm is a sample).

Best of ``--repeat`` runs (process time, so other processes on the machine matter less). Usage::

    python benchmarks/scheduler_speed.py [--records 300000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamarms.models import BernoulliModel  # noqa: E402
from streamarms.policies.ksigma import WeightedRoundRobin  # noqa: E402
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig  # noqa: E402
from streamarms.sim import zww17_example  # noqa: E402


def stream(n: int, seed: int = 0) -> list[tuple[bytes, bytes, float]]:
    means = zww17_example()
    keys = [f"region-{i:02d}".encode() for i in range(len(means))]
    rng = random.Random(seed)
    values = (b'{"reward": 0}', b'{"reward": 1}')
    out = []
    for i in range(n):
        a = rng.randrange(len(keys))
        out.append((keys[a], values[rng.random() < means[a]], i * 0.001))
    return out


def run(recs: list[tuple[bytes, bytes, float]], case: str) -> tuple[float, int]:
    clock = EventClock()
    cfg = dict(discovery_records=200)
    if case == "idle":
        cfg["max_episodes"] = 1
    else:
        cfg["episode_interval"] = 0.0
    if case == "feed-all":
        cfg["passive_feed"] = "all"
    s = Scheduler(lambda arms, ep: WeightedRoundRobin(arms, k=2.0, delta=0.1), clock=clock,
                  config=SchedulerConfig(**cfg), codec=RewardCodec(model=BernoulliModel()))
    offer, advance = s.offer, clock.advance
    t0 = time.process_time()
    for k, v, t in recs:
        advance(t)
        offer(k, v)
    return time.process_time() - t0, s.used


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cases", nargs="+", default=["idle", "detecting", "feed-all"])
    opts = ap.parse_args()
    recs = stream(opts.records)
    print(f"{opts.records:,} records, 20 keys, WRR, best of {opts.repeat} (process time)")
    for case in opts.cases:
        best, used = min(run(recs, case) for _ in range(opts.repeat))
        print(f"  {case:<10} {opts.records / best:>12,.0f} records/s   ({used:,} samples used)")


if __name__ == "__main__":
    main()

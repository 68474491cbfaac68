"""The daemon's own cost per record on real Kafka poll batches, without the consumer (issue 15).

``kafka_throughput.py`` compares the daemon with a bare kafka-python loop on a live broker; on a
shared 2-core machine its ratios move by a few percent from run to run (the broker and the consumer's
network thread share the cores). This script isolates the part the daemon adds: it starts a local
Tansu broker, writes the same topic as ``kafka_throughput.py`` (300k records, 20 keys, Bernoulli
rewards), reads it once with a plain ``KafkaConsumer`` (``max_poll_records=1000``) keeping every poll
batch, stops the broker, and then hands those batches to the full :class:`~streamarms.daemon.Daemon`
(scheduler, WRR, file checkpoints, metrics; the source merges them with the Kafka source's
:class:`~streamarms.connectors.ordering.PartitionMerger`). It prints microseconds of process time
per record, best of ``--repeat``: detecting back to back and idle. Set it against the bare consumer's
microseconds per record (``kafka_throughput.py`` on the 2-core machine: ~3.7 us with the C CRC-32C,
a dependency; ~6.5 us with kafka-python's pure-Python fallback, ``--crc python``). With kafka-python's
own record reader inside the daemon's consumer, detecting >= 80% of the bare consumer allowed the
daemon at most a quarter of it (~0.9 us), idle >= 95% a nineteenth (~0.2 us). The daemon's consumer
reads with the one-pass reader (``connectors/kafka_records.py``): the consumer's whole cost is ~2.0 us a
record instead of ~3.7 (``kafka_throughput.py``'s "bare loop, one-pass reader"), which leaves the
daemon ~2.6 us a record for detecting at 80% of the bare kafka-python loop and ~1.9 us for idle at 95%. (This script's batches are
read once, before the clock, so its figures do not depend on the reader.)

Usage::

    python benchmarks/daemon_overhead.py --partitions 1 4 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka import KafkaConsumer  # noqa: E402

from streamarms.checkpoint import FileCheckpointStore  # noqa: E402
from streamarms.connectors.ordering import PartitionMerger  # noqa: E402
from streamarms.connectors.tansu import TansuBroker  # noqa: E402
from streamarms.daemon import Daemon  # noqa: E402
from streamarms.metrics import Metrics  # noqa: E402
from streamarms.models import BernoulliModel  # noqa: E402
from streamarms.policies.ksigma import WeightedRoundRobin  # noqa: E402
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kafka_throughput import MAX_POLL, produce  # noqa: E402


def capture(bootstrap: str, topic: str, n: int) -> list[dict[tuple[str, int], list[Any]]]:
    """Every poll batch of a plain consumer reading ``n`` records of ``topic``."""
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"capture-{time.time_ns()}",
                      enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=MAX_POLL)
    polls, seen = [], 0
    while seen < n:
        got = c.poll(timeout_ms=200, max_records=MAX_POLL)
        if got:
            polls.append({(tp.topic, tp.partition): recs for tp, recs in got.items()})
            seen += sum(len(r) for r in got.values())
    c.close()
    return polls


class ReplayedPolls:
    """A reward source that hands back captured poll batches through the Kafka source's merger."""

    exhausted = False
    connected = True

    def __init__(self, polls: list[dict[tuple[str, int], list[Any]]]) -> None:
        self.polls = polls
        self.merger = PartitionMerger(ordered=True)
        self.merger.assign(sorted({tp for p in polls for tp in p}), {})
        self.i = 0

    def poll(self, timeout: float) -> list[Any]:
        if self.i >= len(self.polls):
            return []
        got = self.polls[self.i]
        self.i += 1
        for tp, recs in got.items():
            self.merger.add(tp, recs)
        return self.merger.release(lambda tp: False)

    def rollback(self, processed: int) -> None:
        self.merger.rollback(processed)

    def state(self) -> dict[str, Any]:
        return self.merger.state()

    def commit(self, state: dict[str, Any] | None = None) -> None:
        pass

    def lag(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass


def run(polls: list[dict[tuple[str, int], list[Any]]], detecting: bool) -> tuple[float, dict[str, Any]]:
    """Process-time microseconds per record of the daemon over ``polls`` (idle: once the first episode ended)."""
    clock = EventClock()
    sched = Scheduler(lambda arms, ep: WeightedRoundRobin(arms, k=2.0, delta=0.1), clock=clock,
                      codec=RewardCodec(model=BernoulliModel()), policy_name="wrr", delta=0.1,
                      config=SchedulerConfig(discovery_records=1000, episode_interval=0.0 if detecting else 1e9))
    src = ReplayedPolls(polls)
    d = Daemon(sched, src, clock=clock, checkpoint=FileCheckpointStore(os.path.join(tempfile.mkdtemp(), "ck")),
               checkpoint_interval=5.0, metrics=Metrics(), handle_signals=False, stop_when_exhausted=False)
    marks: dict[str, float] = {}
    inner = src.poll

    def poll(timeout: float) -> list[Any]:
        if src.i >= len(polls):
            marks["end"] = time.process_time()
            d.stop("benchmark done")
            return []
        if "start" not in marks and (detecting or sched.episodes_done >= 1):
            marks["start"], marks["records0"] = time.process_time(), sched.records
        return inner(timeout)

    src.poll = poll  # type: ignore[method-assign]
    d.run()
    st = sched.stats()
    return (marks["end"] - marks["start"]) / (st["records"] - marks["records0"]) * 1e6, st


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs each")
    args = ap.parse_args()
    captured = {}
    with TansuBroker() as broker:
        for parts in args.partitions:
            topic = f"overhead-{parts}p-{time.time_ns()}"
            produce(broker.bootstrap, topic, args.records, parts)
            captured[parts] = capture(broker.bootstrap, topic, args.records)
    print(f"{args.records:,} records, 20 keys, WRR; process time per record, best of {args.repeat} (cases interleaved)")
    for parts, polls in captured.items():
        best = {True: float("inf"), False: float("inf")}
        notes = {}
        for _ in range(args.repeat):
            for detecting in (True, False):
                us, st = run(polls, detecting)
                best[detecting] = min(best[detecting], us)
                notes[detecting] = f"episodes {st['episodes']}, samples {st['used']:,}"
        print(f"{parts} partition(s), {len(polls)} poll batches: detecting {best[True]:.3f} us/record "
              f"({notes[True]}), idle {best[False]:.3f} us/record ({notes[False]})")


if __name__ == "__main__":
    main()

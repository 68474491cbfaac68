"""Records per second through the streamarms daemon vs a bare kafka-python consumer loop.

Same broker, same topic, same consumer settings (``max_poll_records``, fetch sizes); the clock starts
at the first record (the consumer-group join is not counted) and stops when all N records are handled.

* ``bare``: ``for rec in consumer.poll(...)``: count the record, nothing else;
* ``daemon, idle``: the full daemon (merge, scheduler, checkpoint file with fsync every 5 s, metrics)
  after its detection episode ended: every record is read and skipped -- the state a deployment is in
  most of the time, since a decision needs far fewer rewards than the stream delivers;
* ``daemon, detecting``: detection episodes back to back (``--episode-interval 0``): the policy (WRR,
  k=2, Bernoulli) takes a reward of about one record in three; its own cost per reward is included.

Usage::

    python benchmarks/kafka_throughput.py                  # starts a local Tansu broker
    python benchmarks/kafka_throughput.py --bootstrap-servers HOST:PORT --records 500000
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka import KafkaConsumer, KafkaProducer  # noqa: E402

from streamarms.checkpoint import FileCheckpointStore  # noqa: E402
from streamarms.connectors.kafka import KafkaRewardSource, client_config, ensure_topics  # noqa: E402
from streamarms.connectors.tansu import TansuBroker  # noqa: E402
from streamarms.daemon import Daemon  # noqa: E402
from streamarms.metrics import Metrics  # noqa: E402
from streamarms.models import BernoulliModel  # noqa: E402
from streamarms.policies.ksigma import WeightedRoundRobin  # noqa: E402
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig  # noqa: E402
from streamarms.sim import zww17_example  # noqa: E402

MAX_POLL = 1000
CONSUMER = dict(max_poll_records=MAX_POLL, session_timeout_ms=6000, heartbeat_interval_ms=500)


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    ensure_topics({"bootstrap_servers": [bootstrap]}, {topic: partitions})
    means = zww17_example()
    keys = [f"region-{i:02d}".encode() for i in range(len(means))]
    rng = random.Random(1)
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1024 * 1024, acks=1)
    t0 = 1_700_000_000_000
    for i in range(n):
        a = rng.randrange(len(keys))
        p.send(topic, key=keys[a], value=b'{"reward": %d}' % (rng.random() < means[a]), timestamp_ms=t0 + i)
    p.flush()
    p.close()


def bare(bootstrap: str, topic: str, n: int, group: str) -> float:
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest", **CONSUMER)
    seen, t0 = 0, None
    while seen < n:
        for recs in c.poll(timeout_ms=200, max_records=MAX_POLL).values():
            if t0 is None:
                t0 = time.perf_counter()
            for _ in recs:
                seen += 1
    dt = time.perf_counter() - t0
    c.close()
    return n / dt


def daemon(bootstrap: str, topic: str, n: int, group: str, detecting: bool, ordered: bool) -> tuple[float, dict]:
    cfg = client_config(bootstrap)
    src = KafkaRewardSource([topic], group, cfg, ordered=ordered, max_poll_records=MAX_POLL,
                            consumer_options={k: v for k, v in CONSUMER.items() if k != "max_poll_records"})
    clock = EventClock()
    sched = Scheduler(lambda arms, ep: WeightedRoundRobin(arms, k=2.0, delta=0.1), clock=clock,
                      codec=RewardCodec(model=BernoulliModel()), policy_name="wrr", delta=0.1,
                      config=SchedulerConfig(discovery_records=1000, episode_interval=0.0 if detecting else 1e9))
    tmp = tempfile.mkdtemp()
    d = Daemon(sched, src, clock=clock, checkpoint=FileCheckpointStore(os.path.join(tmp, "ck")),
               checkpoint_interval=5.0, metrics=Metrics(), handle_signals=False, stop_when_exhausted=False)
    marks: dict[str, float] = {}
    inner_poll = src.poll

    def poll(timeout: float):  # timing and stopping around the real poll
        if sched.records >= n:
            marks["end"] = time.perf_counter()
            d.stop("benchmark done")
            return []
        if "start" not in marks and (detecting or sched.episodes_done >= 1):
            # idle: the clock starts once the first episode is over (every later record is skipped)
            marks["start"], marks["records0"] = time.perf_counter(), sched.records
        return inner_poll(timeout)

    src.poll = poll  # type: ignore[method-assign]
    d.run()
    st = sched.stats()
    if "start" not in marks:  # idle was never reached: the first episode did not end within N records
        return 0.0, st
    return (st["records"] - marks["records0"]) / (marks["end"] - marks["start"]), st


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers")
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--repeat", type=int, default=2, help="best of this many runs each")
    args = ap.parse_args()
    broker = None
    if args.bootstrap_servers is None:
        broker = TansuBroker().start()
        args.bootstrap_servers = broker.bootstrap
    try:
        tag = str(int(time.time()))
        print(f"broker {args.bootstrap_servers}, {args.records:,} records per topic, 20 keys, best of {args.repeat}")
        for parts in args.partitions:
            topic = f"bench-{parts}p-{tag}"
            produce(args.bootstrap_servers, topic, args.records, parts)
            cases = [("daemon, idle (records skipped)", False, True),
                     ("daemon, detecting back to back", True, True)]
            if parts > 1:
                cases.append(("daemon, idle, --order arrival", False, False))
            best: dict[str, tuple[float, dict]] = {"bare": (0.0, {})}
            for r in range(args.repeat):  # interleaved, best of each: the machine may be shared
                rate = bare(args.bootstrap_servers, topic, args.records, f"bare-{topic}-{r}")
                best["bare"] = max(best["bare"], (rate, {}), key=lambda x: x[0])
                for label, detecting, ordered in cases:
                    rate, st = daemon(args.bootstrap_servers, topic, args.records,
                                      f"d-{topic}-{label[8:16]}-{r}".replace(" ", "").replace(",", ""), detecting,
                                      ordered)
                    if rate > best.get(label, (0.0, {}))[0]:
                        best[label] = (rate, st)
            b = best["bare"][0]
            print(f"\n{parts} partition(s):")
            print(f"  {'bare kafka-python loop':<34} {b:>10,.0f} records/s")
            for label, _, _ in cases:
                rate, st = best.get(label, (0.0, None))
                if st is None:
                    print(f"  {label:<34} n/a (the first episode did not end within {args.records:,} records)")
                    continue
                note = f"episodes {st['episodes']}, samples {st['used']:,} of {st['records']:,} records"
                print(f"  {label:<34} {rate:>10,.0f} records/s  {rate / b:6.1%} of bare  ({note})")
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()

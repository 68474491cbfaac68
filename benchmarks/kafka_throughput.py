"""Records per second through the streamarms daemon vs a bare kafka-python consumer loop.

Same broker, same topic, same consumer settings (``max_poll_records``, fetch sizes); the clock starts
at the first record (the consumer-group join is not counted) and stops when all N records are handled.

* ``bare``: ``for rec in consumer.poll(...)``: count the record, nothing else;
  (every case's clock starts when the consumer's poll first returns records in the window, and counts the
  records the consumer returns from then on, not those the daemon's merge releases: issue 15)
* ``daemon, idle``: the full daemon (merge, scheduler, checkpoint file with fsync every 5 s, metrics)
  after its detection episode ended: every record is read and skipped -- the state a deployment is in
  most of the time, since a decision needs far fewer rewards than the stream delivers;
* ``daemon, detecting``: detection episodes back to back (``--episode-interval 0``): the policy (WRR,
  k=2, Bernoulli) takes a reward of about one record in three; its own cost per reward is included.

Idle is measured three ways (issue 10, item 7): ``--validate all`` (the default: every record is
decoded and checked, so every bad one reaches the dead letters) with the default decoder (orjson),
the same on a second topic whose values are all distinct (a request id in each: the codec's memo of
seen values, which answers a batch of 0/1 rewards with one dict lookup a value, never answers there,
so every value is parsed), and ``--validate used`` (the fast path: only the records the policy takes
are decoded). The offline table adds the standard library's :mod:`json` on distinct values.

``--poll-stats`` also says where each case's wall clock went (issue 15): the time spent inside
``KafkaConsumer.poll`` (wall and process), empty polls, and polls longer than 50 ms, within the measured
window of each run. A wait shows as wall time in poll without process time.

Which CRC-32C kafka-python checks record batches with is printed in the header: the ``crc32c`` C
extension (a dependency of streamarms) or, without it, kafka-python's pure-Python fallback, which is
half the bare loop's time (py-spy: 53%). ``--crc python`` forces the fallback: the
configuration every number up to session 15 was measured in (the bare loop then reads ~158k records/s
here, ~273k with the C extension; the daemon's own cost per record is the same in both, so its ratio to
the bare loop is lower with the faster consumer).

Both wall-clock and process-time rates are printed (each the best of ``--repeat``, cases
interleaved): on a shared machine the process-time ratio (CPU seconds of this process, consumer
threads included, per record) is the one a busy neighbour disturbs least.

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

import json  # noqa: E402

from kafka import KafkaConsumer, KafkaProducer  # noqa: E402

from streamarms.checkpoint import FileCheckpointStore  # noqa: E402
from streamarms.connectors import kafka_records  # noqa: E402
from streamarms.connectors.kafka import KafkaRewardSource, client_config, crc_implementation, ensure_topics  # noqa: E402
from streamarms.connectors.tansu import TansuBroker  # noqa: E402
from streamarms.daemon import Daemon  # noqa: E402
from streamarms.metrics import Metrics  # noqa: E402
from streamarms.models import BernoulliModel  # noqa: E402
from streamarms.policies.ksigma import WeightedRoundRobin  # noqa: E402
from streamarms.runtime import (  # noqa: E402
    EventClock,
    RewardCodec,
    Scheduler,
    SchedulerConfig,
    decoder,  # noqa: E402
)
from streamarms.sim import zww17_example  # noqa: E402

MAX_POLL = 1000
CONSUMER = dict(max_poll_records=MAX_POLL, session_timeout_ms=6000, heartbeat_interval_ms=500)


class PollStats:
    """Times every ``KafkaConsumer.poll`` of one run (``--poll-stats``); :meth:`summary` covers the calls
    that began inside the measured window."""

    SLOW = 0.05

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, float, int]] = []  # (start, wall s, process s, records)

    def wrap(self, consumer: KafkaConsumer) -> None:
        inner = consumer.poll

        def poll(*args, **kw):
            t0, c0 = time.perf_counter(), time.process_time()
            got = inner(*args, **kw)
            self.calls.append((t0, time.perf_counter() - t0, time.process_time() - c0,
                               sum(len(r) for r in got.values())))
            return got

        consumer.poll = poll  # type: ignore[method-assign]

    def summary(self, start: float | None, end: float) -> str:
        """``start``: ``None`` for the first poll that returned records."""
        if start is None:
            start = next((c[0] for c in self.calls if c[3]), end)
        calls = [c for c in self.calls if start <= c[0] < end]
        wall, cpu = sum(c[1] for c in calls), sum(c[2] for c in calls)
        empty = [c for c in calls if not c[3]]
        slow = [c for c in calls if c[1] > self.SLOW]
        return (f"{end - start:.2f} s: in poll {wall:.2f} s wall / {cpu:.2f} s process, {len(calls)} polls, "
                f"{len(empty)} empty ({sum(c[1] for c in empty):.2f} s), {len(slow)} over "
                f"{self.SLOW * 1e3:.0f} ms ({sum(c[1] for c in slow):.2f} s)")


def produce(bootstrap: str, topic: str, n: int, partitions: int, distinct: bool = False) -> None:
    """``distinct``: every value carries a request id (as many real values do), so no two are equal."""
    ensure_topics({"bootstrap_servers": [bootstrap]}, {topic: partitions})
    means = zww17_example()
    keys = [f"region-{i:02d}".encode() for i in range(len(means))]
    rng = random.Random(1)
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1024 * 1024, acks=1)
    t0 = 1_700_000_000_000
    for i in range(n):
        a = rng.randrange(len(keys))
        x = rng.random() < means[a]
        value = b'{"reward": %d, "request_id": %d}' % (x, i) if distinct else b'{"reward": %d}' % x
        p.send(topic, key=keys[a], value=value, timestamp_ms=t0 + i)
    p.flush()
    p.close()


def bare(bootstrap: str, topic: str, n: int, group: str, stats: PollStats | None = None,
         one_pass: bool = False) -> tuple[float, float, str]:
    """(records/s of wall time, records/s of process time, poll summary) from the first record on.
    ``one_pass``: the consumer reads its records with streamarms' one-pass reader (the daemon's)."""
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest", **CONSUMER)
    if one_pass and not kafka_records.install(c):
        raise RuntimeError("the one-pass reader could not be installed")
    if stats is not None:
        stats.wrap(c)
    seen, t0, c0 = 0, None, 0.0
    while seen < n:
        for recs in c.poll(timeout_ms=200, max_records=MAX_POLL).values():
            if t0 is None:
                t0, c0 = time.perf_counter(), time.process_time()
            for _ in recs:
                seen += 1
    t1 = time.perf_counter()
    dt, dc = t1 - t0, time.process_time() - c0
    c.close()
    # (the window starts at the poll that returned the first records: it began before t0)
    return n / dt, n / dc, stats.summary(None, t1) if stats is not None else ""


def daemon(bootstrap: str, topic: str, n: int, group: str, detecting: bool, ordered: bool,
           validate: str = "all", parser: str = "default", stats: PollStats | None = None,
           reader: str = "one-pass") -> tuple[float, dict]:
    """``reader="kafka-python"``: the daemon's consumer keeps kafka-python's record reader (as before
    issue 15's one-pass reader)."""
    default_loads, default_install = decoder._loads, kafka_records.install
    if parser == "json":
        decoder._loads = json.loads
    if reader == "kafka-python":
        kafka_records.install = lambda consumer: False  # type: ignore[assignment]
    try:
        return _daemon(bootstrap, topic, n, group, detecting, ordered, validate, stats)
    finally:
        decoder._loads, kafka_records.install = default_loads, default_install


def _daemon(bootstrap: str, topic: str, n: int, group: str, detecting: bool, ordered: bool,
            validate: str, stats: PollStats | None = None) -> tuple[float, dict]:
    cfg = client_config(bootstrap)
    src = KafkaRewardSource([topic], group, cfg, ordered=ordered, max_poll_records=MAX_POLL,
                            consumer_options={k: v for k, v in CONSUMER.items() if k != "max_poll_records"})
    marks: dict[str, float] = {}
    # The clock runs from the *consumer's* first records in the window, and the records counted are those
    # the consumer returned from then on (all handled by the end: the topic holds exactly n). Counting at the
    # daemon's released batches instead let the ordered merge's buffer -- records fetched before the clock
    # started, up to a whole fetch response per partition -- be handled for free: at 4 partitions that
    # made the daemon look faster than the bare loop (detecting 85-154% of it, process time above 100%).
    window = {"open": detecting, "records": 0}
    consumer_poll = src.consumer.poll

    def counted_poll(*args, **kw):
        t_poll = time.perf_counter()
        got = consumer_poll(*args, **kw)
        if got and window["open"]:
            if "start" not in marks:  # as the bare loop: from the return of the first poll with records
                marks["poll0"], marks["start"], marks["cpu_start"] = t_poll, time.perf_counter(), time.process_time()
            window["records"] += sum(len(r) for r in got.values())
        return got

    src.consumer.poll = counted_poll  # type: ignore[method-assign]
    if stats is not None:
        stats.wrap(src.consumer)
    clock = EventClock()
    sched = Scheduler(lambda arms, ep: WeightedRoundRobin(arms, k=2.0, delta=0.1), clock=clock,
                      codec=RewardCodec(model=BernoulliModel()), policy_name="wrr", delta=0.1,
                      config=SchedulerConfig(discovery_records=1000, episode_interval=0.0 if detecting else 1e9,
                                             validate=validate,
                                             prefetch=4 if ordered else MAX_POLL))  # (the CLI's defaults)
    tmp = tempfile.mkdtemp()
    d = Daemon(sched, src, clock=clock, checkpoint=FileCheckpointStore(os.path.join(tmp, "ck")),
               checkpoint_interval=5.0, metrics=Metrics(), handle_signals=False, stop_when_exhausted=False)
    inner_poll = src.poll

    def poll(timeout: float):  # timing and stopping around the real poll
        if sched.records >= n:
            marks["end"], marks["cpu_end"] = time.perf_counter(), time.process_time()
            d.stop("benchmark done")
            return []
        if not window["open"] and sched.episodes_done >= 1:
            window["open"] = True  # idle: once the first episode is over (records buffered then are not counted)
        return inner_poll(timeout)

    src.poll = poll  # type: ignore[method-assign]
    d.run()
    st = sched.stats()
    if "start" not in marks or "end" not in marks:  # idle was never reached within N records
        return 0.0, st
    k = window["records"]
    st["cpu_rate"] = k / (marks["cpu_end"] - marks["cpu_start"])
    if stats is not None:
        st["poll_stats"] = stats.summary(marks["poll0"], marks["end"])
    return k / (marks["end"] - marks["start"]), st


def offer_cost(validate: str, parser: str, n: int = 200_000, repeat: int = 5, batch: int = 0,
               distinct: bool = False) -> float:
    """Process-time nanoseconds per record of ``Scheduler.offer`` in the idle state (every record
    skipped), without a broker: the part of the daemon's per-record cost that validation changes,
    measured with process time, best of ``repeat`` (robust on a shared machine, unlike records/s).
    ``batch``: through ``Scheduler.offer_batch``, this many records a call (the daemon's path: one poll
    batch a call) instead of record by record. ``distinct``: every value carries a request id, so the
    codec's memo of seen values (``RewardCodec.rewards``) never answers and every value is parsed."""
    default_loads = decoder._loads
    if parser == "json":
        decoder._loads = json.loads
    try:
        means = zww17_example()
        keys = [f"region-{i:02d}".encode() for i in range(len(means))]
        rng = random.Random(3)
        recs = [(keys[a], b'{"reward": %d, "request_id": %d}' % (rng.random() < means[a], i) if distinct
                 else b'{"reward": %d}' % (rng.random() < means[a]))
                for i, a in enumerate(rng.randrange(len(keys)) for _ in range(n))]
        clock = EventClock()
        sched = Scheduler(lambda arms, ep: WeightedRoundRobin(arms, k=2.0, delta=0.1), clock=clock,
                          codec=RewardCodec(model=BernoulliModel()), policy_name="wrr", delta=0.1,
                          config=SchedulerConfig(discovery_records=1000, episode_interval=1e9, max_episodes=None,
                                                 validate=validate))
        while sched.episodes_done < 1:  # run the first episode to its end: then every record is skipped
            for k, v in recs[:10_000]:
                sched.offer(k, v)
        best = float("inf")
        offer = sched.offer
        chunks = [([k for k, _ in recs[i:i + batch]], [v for _, v in recs[i:i + batch]])
                  for i in range(0, n, batch)] if batch else []
        for _ in range(repeat):
            t0 = time.process_time()
            if batch:
                for ks, vs in chunks:
                    sched.offer_batch(ks, vs)
            else:
                for k, v in recs:
                    offer(k, v)
            best = min(best, time.process_time() - t0)
        return best / n * 1e9
    finally:
        decoder._loads = default_loads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers")
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--repeat", type=int, default=2, help="best of this many runs each")
    ap.add_argument("--offline-only", action="store_true", help="only the per-record validation cost (no broker)")
    ap.add_argument("--poll-stats", action="store_true",
                    help="also print, per run and case, the time spent inside KafkaConsumer.poll (where the wall clock went)")
    ap.add_argument("--crc", choices=("installed", "python"), default="installed",
                    help="python: make kafka-python check CRCs with its pure-Python fallback, as it does without "
                         "the crc32c package (how issue 15's and sessions 12-15's numbers were measured)")
    args = ap.parse_args()
    if args.crc == "python":
        from kafka.record import default_records, util
        default_records.calc_crc32c = util.crc32c_py  # type: ignore[assignment]
    crc = "python (forced)" if args.crc == "python" else crc_implementation()
    offline = (("used", "default", False), ("all", "default", False), ("used", "default", True),
               ("all", "default", True), ("all", "json", True))
    costs = {c: offer_cost(c[0], c[1], distinct=c[2]) for c in offline}
    batched = {c: offer_cost(c[0], c[1], batch=MAX_POLL, distinct=c[2]) for c in offline}
    print(f"per-record cost of the scheduler when idle (process time, best of 5, 200,000 records; "
          f"decoder {decoder.BACKEND}): record by record (Scheduler.offer) | in batches of {MAX_POLL} "
          "(Scheduler.offer_batch, the daemon's path); values: 0/1 rewards (two distinct values: the codec's "
          "memo answers a batch), or every value distinct (a request id in each: every value parsed)")
    for (v, p, d), ns in costs.items():
        label = ("distinct values" if d else "0/1 values") + (", stdlib json" if p == "json" else "")
        print(f"  --validate {v:<4} {label:<29} {ns:7.0f} ns/record | {batched[(v, p, d)]:7.0f} ns/record")
    if args.offline_only:
        return
    broker = None
    if args.bootstrap_servers is None:
        broker = TansuBroker().start()
        args.bootstrap_servers = broker.bootstrap
    try:
        tag = str(int(time.time()))
        print(f"broker {args.bootstrap_servers}, {args.records:,} records per topic, 20 keys, best of {args.repeat}; "
              f"decoder {decoder.BACKEND}; kafka-python CRC-32C: {crc}; idle/detecting validate every record unless marked")
        for parts in args.partitions:
            topic = f"bench-{parts}p-{tag}"
            produce(args.bootstrap_servers, topic, args.records, parts)
            produce(args.bootstrap_servers, topic + "-distinct", args.records, parts, distinct=True)
            cases = [("daemon, idle (records skipped)", False, True, "all", "default", "one-pass"),
                     ("daemon, idle, values all distinct", False, True, "all", "default", "one-pass"),
                     ("daemon, idle, --validate used", False, True, "used", "default", "one-pass"),
                     ("daemon, detecting back to back", True, True, "all", "default", "one-pass"),
                     ("  the same, kafka-python's reader", True, True, "all", "default", "kafka-python")]
            if parts > 1:
                cases.append(("daemon, idle, --order arrival", False, False, "all", "default", "one-pass"))
            best: dict[str, tuple[float, dict]] = {"bare": (0.0, {}), "bare1": (0.0, {})}
            cpu: dict[str, float] = {}  # best records per second of process time
            polls: list[str] = []
            for r in range(args.repeat):  # interleaved, best of each: the machine may be shared
                for key, label, one_pass in (("bare", "bare kafka-python loop", False),
                                             ("bare1", "bare loop, one-pass reader", True)):
                    rate, crate, summary = bare(args.bootstrap_servers, topic, args.records, f"{key}-{topic}-{r}",
                                                PollStats() if args.poll_stats else None, one_pass)
                    polls.append(f"  run {r + 1} {label:<34} {rate:>10,.0f} records/s  {summary}")
                    best[key] = max(best[key], (rate, {}), key=lambda x: x[0])
                    cpu[key] = max(cpu.get(key, 0.0), crate)
                for i, (label, detecting, ordered, validate, parser, reader) in enumerate(cases):
                    rate, st = daemon(args.bootstrap_servers, topic + ("-distinct" if "distinct" in label else ""),
                                      args.records, f"d-{topic}-{i}-{r}",
                                      detecting, ordered, validate, parser, PollStats() if args.poll_stats else None,
                                      reader)
                    polls.append(f"  run {r + 1} {label:<34} {rate:>10,.0f} records/s  {st.get('poll_stats', 'n/a')}")
                    if rate > best.get(label, (0.0, {}))[0]:
                        best[label] = (rate, st)
                    cpu[label] = max(cpu.get(label, 0.0), st.get("cpu_rate", 0.0))
            b, cb = best["bare"][0], cpu["bare"]
            b1, cb1 = best["bare1"][0], cpu["bare1"]
            print(f"\n{parts} partition(s):  wall-clock records/s | records per second of process time "
                  "(ratios: to the bare kafka-python loop, the issue's reference)")
            print(f"  {'bare kafka-python loop':<34} {b:>10,.0f} records/s{'':<23}| {cb:>10,.0f}")
            print(f"  {'bare loop, one-pass reader':<34} {b1:>10,.0f} records/s  {b1 / b:6.1%} of bare  | "
                  f"{cb1:>10,.0f}  {cb1 / cb:6.1%} of bare  (streamarms' record reader, no daemon)")
            for label, *_ in cases:
                rate, st = best.get(label, (0.0, None))
                if st is None:
                    print(f"  {label:<34} n/a (the first episode did not end within {args.records:,} records)")
                    continue
                note = f"episodes {st['episodes']}, samples {st['used']:,} of {st['records']:,} records"
                print(f"  {label:<34} {rate:>10,.0f} records/s  {rate / b:6.1%} of bare  | {cpu[label]:>10,.0f}  "
                      f"{cpu[label] / cb:6.1%} of bare  ({note})")
            fast = best.get("daemon, idle, --validate used", (0.0, None))[0]
            if fast:
                for d, what in ((False, "0/1 values"), (True, "distinct values")):
                    extra = (batched[("all", "default", d)] - batched[("used", "default", d)]) * 1e-9
                    print(f"  validating every record adds {extra * 1e9:.0f} ns/record ({what}, batched, as the "
                          f"daemon) = {extra * fast:.1%} of the idle daemon's time per record at {fast:,.0f} "
                          "records/s (issue 10's budget: <= 10%)")
            if args.poll_stats:
                print(f"  time inside KafkaConsumer.poll, measured window of each run (polls over {PollStats.SLOW * 1e3:.0f} "
                      "ms: waits):")
                print("\n".join(polls))
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()

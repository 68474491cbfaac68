"""Scale-out (issue 13): records/s with 1, 2, 3 members of one consumer group, and the stats topic's
traffic and decision latency projected to 10 and 100 members.

**Throughput.** ``--records`` Bernoulli records of 20 keys on a 6-partition topic (Tansu, started here
unless ``--bootstrap-servers``). N member processes with one group id each run the daemon (WRR, k = 2,
as ``benchmarks/kafka_throughput.py``; ``idle``: after its first episode every record is read and
skipped; ``detecting``: episodes back to back) until the members together have handled ``--records``
(records read again after a rebalance count: they are work done). Rate = records handled /
(last record handled by any member - first record handled by any member): the group's join and
rebalances while members come up are inside that span, as they are for a user. Each member detects on
its own partitions' keys here: this measures how consumption scales.

**Group decision.** N ``streamarms run --group-threshold`` processes (policy cs) decide together on 20
keys; the wall time from the first record produced to the last member's exit, and the records handled
(:func:`group_decision`).

**Projection (arithmetic, stated).** One partition's stats value is its head (``PartitionTotals.value()``,
JSON, and gzip as the publisher sends it, measured for arms whose counts span levels 1..m,
``--levels-to``) and its keys' state in chunks (``group_chunks.real_states``: a GroupKSigma's per-key
state, gzip bytes a key; ``--keys-per-partition`` keys, all chunks re-sent every interval, as mid-episode
where samples land on keys at random -- ``benchmarks/group_chunks.py``); the merge (``merge_totals`` +
``GroupThreshold.update``) is timed for P = members x partitions-per-member values. With publish interval
``I`` seconds:

* traffic into the topic = P x (head_bytes + keys x key_bytes) / I; every member reads all of it, so
  the topic's read traffic = members x P x value_bytes / I;
* decision latency added by the group (a level completes when its last arm's member publishes) <=
  I (publish interval) + topic delay (measured here: produce -> a reader has it) + merge time.

Usage::

    python benchmarks/group_scale.py [--records 300000] [--members 1 2 3] [--interval 1.0]
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamarms.confidence.factory import sequence_for  # noqa: E402
from streamarms.group_threshold import GroupThreshold, PartitionTotals, merge_totals  # noqa: E402
from streamarms.models import make_model  # noqa: E402

PARTITIONS = 6


def _member(bootstrap: str, topic: str, group: str, detecting: bool, out: mp.Queue, done: Any, target: int) -> None:  # type: ignore[type-arg]
    from streamarms.checkpoint import FileCheckpointStore
    from streamarms.connectors.kafka import KafkaRewardSource, client_config
    from streamarms.daemon import Daemon
    from streamarms.models import BernoulliModel
    from streamarms.policies.ksigma import WeightedRoundRobin
    from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig
    src = KafkaRewardSource([topic], group, client_config(bootstrap), max_poll_records=1000,
                            consumer_options={"session_timeout_ms": 6000, "heartbeat_interval_ms": 500})
    clock = EventClock()
    sched = Scheduler(lambda arms, ep: WeightedRoundRobin(arms, k=2.0, delta=0.1), clock=clock,
                      codec=RewardCodec(model=BernoulliModel()), policy_name="wrr", delta=0.1,
                      config=SchedulerConfig(discovery_records=1000, episode_interval=0.0 if detecting else 1e9))
    d = Daemon(sched, src, clock=clock, checkpoint=FileCheckpointStore(os.path.join(tempfile.mkdtemp(), "ck")),
               checkpoint_interval=5.0, handle_signals=False, stop_when_exhausted=False)
    marks = {"first": 0.0, "last": 0.0, "quiet": time.monotonic()}
    inner = src.poll

    def poll(timeout: float):  # type: ignore[no-untyped-def]
        batch = inner(timeout)
        now = time.monotonic()
        if batch:
            marks["first"] = marks["first"] or time.time()
            marks["last"] = time.time()
            marks["quiet"] = now
            with done.get_lock():
                done.value += len(batch)
        if done.value >= target or now - marks["quiet"] > 60.0:  # the group has read them all (or is stuck)
            d.stop("group done")
        return batch

    src.poll = poll  # type: ignore[method-assign]
    d.run()
    out.put((sched.records, marks["first"], marks["last"]))


def throughput(bootstrap: str, records: int, members: list[int], detecting: bool) -> dict[int, float]:
    from kafka import KafkaProducer

    from streamarms.connectors.kafka import ensure_topics
    from streamarms.sim import zww17_example
    topic = f"group-bench-{int(time.time())}-{int(detecting)}"
    ensure_topics({"bootstrap_servers": [bootstrap]}, {topic: PARTITIONS})
    means = zww17_example()
    keys = [f"region-{i:02d}".encode() for i in range(len(means))]
    rng = random.Random(1)
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1 << 20, acks=1)
    for i in range(records):
        a = rng.randrange(len(keys))
        p.send(topic, key=keys[a], value=b'{"reward": %d}' % (rng.random() < means[a]),
               timestamp_ms=1_700_000_000_000 + i)
    p.flush()
    p.close()
    ctx = mp.get_context("fork")
    rates = {}
    for n in members:
        q: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        done = ctx.Value("q", 0)
        procs = [ctx.Process(target=_member, args=(bootstrap, topic, f"g{n}-{topic}", detecting, q, done, records))
                 for _ in range(n)]
        for pr in procs:
            pr.start()
        res = [q.get(timeout=600) for _ in procs]
        for pr in procs:
            pr.join()
        total = sum(r[0] for r in res)
        span = max(r[2] for r in res) - min(r[1] for r in res if r[1])
        rates[n] = total / span if span > 0 else float("nan")
        print(f"  {n} member(s), {'detecting' if detecting else 'idle'}: {total:,} records in {span:.2f} s = "
              f"{rates[n]:,.0f} records/s; per member {[r[0] for r in res]}", flush=True)
    return rates


def group_decision(bootstrap: str, per_key: int, members: list[int], interval: float = 1.0) -> dict[int, float]:
    """``streamarms run --group-threshold`` members (real processes, policy cs, k = 2, delta = 0.1) on a
    6-partition topic of 20 keys: wall time from the first record produced to the last member's exit
    with the group's decision, and the records the members handled in it. Records are produced after
    the group settled (a rebalance mid-episode is not handed over), so the producer runs alongside."""
    import re
    import subprocess

    from streamarms.connectors.kafka import ensure_topics
    from streamarms.sim import zww17_example
    means = zww17_example()
    keys = [f"region-{i:02d}".encode() for i in range(len(means))]
    rng = random.Random(5)
    order = [a for a in range(len(keys)) for _ in range(per_key)]
    rng.shuffle(order)
    recs = [(keys[a], b'{"reward": %d}' % (rng.random() < means[a])) for a in order]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tempfile.mkdtemp()
    rates = {}
    for n in members:
        tag = f"gd{n}-{int(time.time())}"
        topic = f"rewards-{tag}"
        ensure_topics({"bootstrap_servers": [bootstrap]}, {topic: PARTITIONS})
        logs = [os.path.join(tmp, f"{tag}-{i}.log") for i in range(n)]
        outs = [os.path.join(tmp, f"{tag}-{i}.json") for i in range(n)]
        procs = [subprocess.Popen(
            [sys.executable, "-m", "streamarms.cli", "run", "--bootstrap-servers", bootstrap, "--rewards-topic", topic,
             "--alerts-topic", f"alerts-{tag}", "--group-id", tag, "--group-threshold", "--group-member", f"m{i}",
             "--group-interval", str(interval), "--policy", "cs", "--k", "2", "--delta", "0.1", "--max-episodes", "1", "--checkpoint", "none",
             "--discovery-records", "2000", "--summary-json", outs[i], "--create-topics", "--quiet",
             "--consumer-option", "session_timeout_ms=6000", "--consumer-option", "heartbeat_interval_ms=500"],
            cwd=root, stdout=subprocess.DEVNULL, stderr=open(logs[i], "wb")) for i in range(n)]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the group settled: every member holds its share
            last = [re.findall(r"assigned (\d+) partitions", open(f).read()) for f in logs]
            if all(x and int(x[-1]) == PARTITIONS // n for x in last):
                break
            time.sleep(0.3)
        from kafka import KafkaProducer
        prod = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1 << 20, acks=1)
        t0 = time.monotonic()
        for i, (k, v) in enumerate(recs):
            prod.send(topic, key=k, value=v, timestamp_ms=1_700_000_000_000 + i)
        prod.flush()
        prod.close()
        for pr in procs:
            pr.wait(timeout=600)
        span = time.monotonic() - t0
        res = [json.load(open(o)) for o in outs]
        handled = sum(r["records"] for r in res)
        samples = sum(r["samples"] for r in res)
        found = sorted(a for r in res for a in r["episodes"][0]["outliers"])
        rates[n] = handled / span
        print(f"  {n} member(s): decision {found} in {span:.2f} s; {handled:,} records handled "
              f"({rates[n]:,.0f}/s), {samples:,} samples", flush=True)
    return rates


def value_size(levels_to: int, arms: int = 100) -> tuple[int, int, int]:
    """(levels, JSON bytes, gzip bytes) of one partition's value, its arms spread over counts 1..levels_to."""
    spec = dict(n=arms * PARTITIONS, k=2.0, alpha=0.05, low=0.0, high=1.0, bernoulli=True)
    t = PartitionTotals(**spec)
    rng = random.Random(0)
    for i in range(arms):
        cs = sequence_for(make_model("bernoulli"), 1e-4, str(i))
        for _ in range(rng.randrange(levels_to // 2, levels_to)):
            cs.update(float(rng.random() < 0.3))
            t.record(cs.n, cs.s, *cs.interval())
    body = json.dumps(t.value(member="member-00", partition="rewards:0", time=time.time()),
                      separators=(",", ":")).encode()
    return len(t.value()["totals"]), len(body), len(gzip.compress(body))


def merge_time(p: int, levels_to: int, repeat: int = 5) -> float:
    spec = dict(n=100 * p, k=2.0, alpha=0.05, low=0.0, high=1.0, bernoulli=True)
    t = PartitionTotals(**spec)
    rng = random.Random(0)
    for i in range(100):
        cs = sequence_for(make_model("bernoulli"), 1e-4, str(i))
        for _ in range(levels_to):
            cs.update(float(rng.random() < 0.3))
            t.record(cs.n, cs.s, *cs.interval())
    values = [t.value() for _ in range(p)]  # p partitions, each 100 arms at every level: all levels complete
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        g = GroupThreshold(**spec)
        g.update(merge_totals(values))
        best = min(best, time.process_time() - t0)
    return best


def topic_delay(bootstrap: str, repeat: int = 20) -> float:
    from streamarms.connectors.group_stats import KafkaStatsPublisher, KafkaStatsReader
    cfg = {"bootstrap_servers": [bootstrap]}
    topic = f"stats-delay-{int(time.time())}"
    pub = KafkaStatsPublisher(cfg, topic, "g", "m")
    rd = KafkaStatsReader(cfg, topic, "g")
    out = []
    for i in range(repeat):
        t0 = time.perf_counter()
        pub.publish("rewards:0", {"n": 1, "totals": {}, "seq": i})
        pub.flush()
        while (rd.value_of("rewards:0") or {}).get("seq") != i:
            rd.poll(0.05)
        out.append(time.perf_counter() - t0)
    pub.close()
    rd.close()
    out.sort()
    return out[len(out) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers")
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--members", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--interval", type=float, default=1.0, help="stats publish interval (s) for the projection")
    ap.add_argument("--levels-to", type=int, default=2000, help="arm counts in a value span 1..this")
    ap.add_argument("--partitions-per-member", type=int, default=2)
    ap.add_argument("--keys-per-partition", type=int, default=1000, help="keys whose state a value carries")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--skip-group", action="store_true", help="skip the --group-threshold decision runs")
    ap.add_argument("--per-key", type=int, default=6000, help="records per key of the group decision runs")
    a = ap.parse_args()
    broker = None
    if a.bootstrap_servers is None:
        from streamarms.connectors.tansu import TansuBroker
        broker = TansuBroker().start()
        a.bootstrap_servers = broker.bootstrap
    try:
        if not a.skip_throughput:
            print(f"throughput: {a.records:,} records, 20 keys, {PARTITIONS} partitions, one group "
                  f"(wall clock, shared 2-core machine incl. the broker: noisy)")
            for detecting in (False, True):
                rates = throughput(a.bootstrap_servers, a.records, a.members, detecting)
                base = rates[a.members[0]]
                print("  ratios vs 1 member: " + ", ".join(f"{n}: {r / base:.2f}" for n, r in rates.items()))
        if not a.skip_group:
            print(f"group decision (--group-threshold, policy cs): {a.per_key * 20:,} records, 20 keys, "
                  f"{PARTITIONS} partitions, --group-interval {a.interval:g} (wall clock, shared machine: noisy)")
            rates = group_decision(a.bootstrap_servers, a.per_key, a.members, a.interval)
            base = rates[a.members[0]]
            print("  ratios vs 1 member: " + ", ".join(f"{n}: {r / base:.2f}" for n, r in rates.items()))
        levels, raw, gz = value_size(a.levels_to)
        delay = topic_delay(a.bootstrap_servers)
        from group_chunks import real_states
        states = real_states(2000, 500)[0]
        key_gz = len(gzip.compress(json.dumps({f"key-{i:07d}": x for i, x in enumerate(states)}).encode())) / len(states)
        print(f"\nstats value of one partition (arms at counts up to {a.levels_to}): {levels} levels, {raw:,} B JSON, "
              f"{gz:,} B gzip for the head, + {key_gz:.0f} B gzip a key of its state (x {a.keys_per_partition:,} keys); "
              f"produce -> read delay on this broker (median of 20): {delay * 1000:.1f} ms")
        gz = int(gz + key_gz * a.keys_per_partition)
        print(f"projection, {a.partitions_per_member} partitions per member of {a.keys_per_partition:,} keys, "
              f"publish every {a.interval:g} s:")
        for members in (3, 10, 100):
            p = members * a.partitions_per_member
            mt = merge_time(p, a.levels_to)
            write = p * gz / a.interval
            read = members * write
            print(f"  {members:>3} members: {p:>3} values; topic in {write / 1e6:8.2f} MB/s, read by all "
                  f"{read / 1e6:8.2f} MB/s; merge {mt * 1000:7.1f} ms CPU per member per update; added decision "
                  f"latency <= {a.interval:g} s + {delay * 1000:.0f} ms + {mt * 1000:.0f} ms")
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()

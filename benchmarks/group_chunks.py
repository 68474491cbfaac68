"""Scale-out at many keys (issue 13): the stats topic's traffic per key, and what publishing and reading a
partition's chunked value costs at 1e4, 1e5, 1e6 keys in one partition (streamarms/group_chunks.py).

**Per-key state.** A real :class:`~streamarms.policies.anytime_group.GroupKSigma` of ``--real-keys`` arms
(``cs``, Bernoulli) takes 1..2 x ``--samples`` rewards per arm (uniform; means 0.2-0.4); one partition's value is what its
published value carries (``extra``: totals, counts, and ``partition_arms`` -- every key's confidence
sequence, state, sampling key). Reported: JSON and gzip bytes per key, and gzip bytes of the totals head.

**Chunk cost.** For ``n`` keys the arms dict holds the measured per-key states repeated (real shape,
synthetic names ``key-0000001``...): ``ChunkWriter.records`` (JSON + hash of every chunk), gzip of the
records (what the producer does, in C), and ``ChunkAssembler.feed`` of them (what every member's reader
does: hash every chunk, hold its bytes) and the parse a takeover adds (``LazyArms``); process time, best of
``--repeat``; ``partition_arms`` extrapolated from its time a key at ``--real-keys``. Then a second publish in which a fraction ``f`` of the keys
changed (spread at random over the partition, as samples land): the chunks re-sent and their bytes.

**Projection (arithmetic, stated).** A member of K keys publishing every I seconds sends at most
K x gzip-bytes-per-key / I into the stats topic (every chunk changed), less as chunks whose keys are all
decided stop changing; every member reads all members' records, so the topic's read traffic is members x
the sum of what they send.

**Loop stall.** A GroupKSigma of ``--stall-keys`` keys over ``--stall-partitions`` partitions (1-9 rewards
a key), every partition changed: the longest single ``sync`` (building the values and their chunk
records, as the member's loop does) with no publish budget and with ``streamarms run``'s
(``cli.group.PUBLISH_BUDGET``), and how many syncs a round takes. And ``--one-partition`` keys in ONE
partition (first, ``--only-stall`` for just these): one go, budget with a whole-value publish, and budget
with the run's stepping publisher (``SteppedPublish``: the value chunk by chunk over turns, a copy-on-write
cut, ``--per-turn`` rewards at random keys between turns).

Usage::

    python benchmarks/group_chunks.py [--keys 10000 100000 1000000] [--chunk-keys 2000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's streamarms

from streamarms.group_chunks import ChunkAssembler, ChunkWriter
from streamarms.policies.anytime_group import GroupKSigma

HEAD = "group/rewards:0"


def real_states(keys: int, samples: int, seed: int = 1) -> tuple[list[Any], dict[str, Any], float]:
    """The per-key states of one partition of a GroupKSigma after ``samples`` rewards an arm, the
    value's other fields (totals, counts), and the process time ``partition_arms`` takes a key."""
    rng = random.Random(seed)
    board: dict[str, Any] = {}
    arms = [f"key-{i:07d}" for i in range(keys)]
    pol = GroupKSigma(arms, group_n=keys, partition_of=lambda a: "rewards:0", publish=board.__setitem__,
                      fetch=lambda: board, clock=lambda: 0.0, interval=1e9, k=2.0, delta=0.1,
                      position_of=lambda p: [0, 0])
    means = {a: 0.2 + 0.2 * rng.random() for a in arms}
    for a in arms:  # counts vary between keys, as they do mid-episode
        for _ in range(rng.randrange(1, 2 * samples)):
            pol.update(a, float(rng.random() < means[a]))
    pol.track.group.touch("rewards:0")  # type: ignore[attr-defined]
    pol.track.group.publish_now()  # type: ignore[attr-defined]
    value = dict(board["rewards:0"])
    states = list(value.pop("arms").values())
    t0 = time.process_time()
    for _ in range(5):
        pol.partition_arms("rewards:0")
    return states, value, (time.process_time() - t0) / 5 / keys


def _fed_member(keys: int, partition_of: Any, publish: Any, rng: random.Random) -> GroupKSigma:
    """A group member's policy over ``keys`` keys (``key-0000000``, ...), 1-9 rewards a key (p = 0.3)."""
    arms = [f"key-{i:07d}" for i in range(keys)]
    pol = GroupKSigma(arms, group_n=keys, partition_of=partition_of, publish=publish, fetch=lambda: {},
                      clock=lambda: 0.0, interval=0.0, k=2.0, delta=0.1, position_of=lambda p: [0, 0])
    for a in arms:
        for _ in range(rng.randrange(1, 10)):
            pol.update(a, float(rng.random() < 0.3))
    return pol


def stall(keys: int, partitions: int, budget: float | None) -> tuple[float, int]:
    """(longest sync in process time, syncs to publish every partition once) for one round of values."""
    rng = random.Random(3)
    writer = ChunkWriter()
    sink: list[Any] = []
    pol = _fed_member(keys, lambda a: f"rewards:{int(a[4:]) % partitions}",
                      lambda p, v: sink.extend(writer.records(p, v)), rng)
    gt = pol.track.group  # type: ignore[attr-defined]
    gt.publish_budget = budget
    for p in {f"rewards:{i % partitions}" for i in range(min(keys, partitions))}:
        gt.touch(p)
    worst, syncs = 0.0, 0
    while gt._dirty:
        t0 = time.process_time()
        gt.sync()
        worst = max(worst, time.process_time() - t0)
        syncs += 1
    return worst, syncs


def stall_one(keys: int, budget: float | None, stepped: bool, per_turn: int) -> dict[str, float]:
    """One partition of ``keys`` keys (1-9 rewards a key), one publish round as the member's loop runs it:
    ``sync`` every turn, ``per_turn`` rewards at random keys between turns. ``stepped``: through a
    :class:`~streamarms.group_track.SteppedPublish` (the value chunk by chunk over turns, a copy-on-write
    cut), else one ``publish`` a partition. Process time: the longest sync, the round's sum (CPU a key),
    the turns it took, the key states the cut saved (rewards at keys not read yet); and the longest sync in
    wall time (the budget's clock: a loaded machine stretches it)."""
    import gc
    rng = random.Random(5)
    writer = ChunkWriter()
    sent = [0]

    def publish(p: str, v: dict[str, Any]) -> None:
        sent[0] += sum(len(b or b"") for _, b in writer.records(p, v))

    def steps(p: str, v: dict[str, Any]) -> Any:
        for j, recs in enumerate(writer.steps(p, v)):
            if j:
                yield None
            sent[0] += sum(len(b or b"") for _, b in recs)

    pub: Any = publish
    if stepped:
        from streamarms.group_track import SteppedPublish
        pub = SteppedPublish(publish, steps)
    pol = _fed_member(keys, lambda a: "rewards:0", pub, rng)
    arms = pol.arms
    gt = pol.track.group  # type: ignore[attr-defined]
    gt.publish_budget = budget
    gt.touch("rewards:0")
    worst = total = wall = 0.0
    turns = saved = 0
    pauses: list[float] = []  # the garbage collector's full (generation 2) passes during the round, wall time
    began = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if info.get("generation") == 2:
            if phase == "start":
                began[0] = time.perf_counter()
            else:
                pauses.append(time.perf_counter() - began[0])
    gc.callbacks.append(on_gc)
    while True:
        t0, w0 = time.process_time(), time.perf_counter()
        gt.sync()
        dt = time.process_time() - t0
        wall = max(wall, time.perf_counter() - w0)
        worst, total, turns = max(worst, dt), total + dt, turns + 1
        if not gt.publishing:
            break
        cut = getattr(pol, "_cut", None)
        for _ in range(per_turn):
            pol.update(arms[rng.randrange(keys)], float(rng.random() < 0.3))
        saved = max(saved, len(cut.saved) if cut is not None else 0)
    gc.callbacks.remove(on_gc)
    del pol, gt
    gc.collect()
    return {"worst": worst, "wall": wall, "total": total, "turns": turns, "saved": saved, "mb": sent[0] / 1e6,
            "gc": max(pauses, default=0.0), "gcs": len(pauses)}


def timed(fn: Any, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--chunk-keys", type=int, default=2000)
    ap.add_argument("--real-keys", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--changed", type=float, nargs="+", default=[0.001, 0.1])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stall-keys", type=int, default=200_000)
    ap.add_argument("--stall-partitions", type=int, default=20)
    ap.add_argument("--one-partition", type=int, nargs="*", default=[100_000, 1_000_000],
                    help="keys of one partition for the loop stall of its publish round (one go vs spread)")
    ap.add_argument("--per-turn", type=int, default=2000, help="rewards between loop turns during a spread round")
    ap.add_argument("--only-stall", action="store_true", help="only the loop-stall measurements")
    ap.add_argument("--spread-only", action="store_true", help="of the one-partition stalls, only the spread one")
    a = ap.parse_args()
    from streamarms.cli.group import PUBLISH_BUDGET
    for n in a.one_partition:
        modes = ((PUBLISH_BUDGET, True),) if a.spread_only else ((None, False), (PUBLISH_BUDGET, False),
                                                                  (PUBLISH_BUDGET, True))
        for budget, stepped in modes:
            r = stall_one(n, budget, stepped, a.per_turn)
            how = "spread chunk by chunk (copy-on-write cut)" if stepped else "one go"
            print(f"loop stall, {n:,} keys in ONE partition, publish budget {budget}, {how}: longest sync "
                  f"{r['worst']:.2f} s process time ({r['wall']:.2f} s wall), {r['turns']} sync(s), round CPU {r['total']:.2f} s = "
                  f"{r['total'] / n * 1e6:.1f} us a key ({r['mb']:.0f} MB JSON), {a.per_turn} rewards between "
                  f"turns: at most {r['saved']:,} key states saved by the cut; {r['gcs']} full GC pass(es), the longest "
                  f"{r['gc']:.2f} s wall")
    if a.only_stall:
        return
    states, rest, t_arms = real_states(a.real_keys, a.samples)
    arms = {f"key-{i:07d}": s for i, s in enumerate(states)}
    raw = json.dumps(arms, separators=(",", ":")).encode()
    head = json.dumps(rest, separators=(",", ":")).encode()
    per_json, per_gz = len(raw) / len(arms), len(gzip.compress(raw)) / len(arms)
    print(f"per-key state ({a.real_keys} GroupKSigma arms after 1-{2 * a.samples} rewards each): {per_json:.0f} B JSON, "
          f"{per_gz:.0f} B gzip a key; the rest of the value (totals, counts, position): {len(head):,} B JSON, "
          f"{len(gzip.compress(head)):,} B gzip; GroupKSigma.partition_arms (the value's key state, built in the "
          f"loop) {t_arms * 1e6:.1f} us a key")
    print(f"chunks of {a.chunk_keys} keys, process time (best of {a.repeat}; shared 2-core machine: noisy):")
    rng = random.Random(2)
    for n in a.keys:
        value = {**rest, "keys": n, "arms": {f"key-{i:07d}": states[i % len(states)] for i in range(n)}}
        w = ChunkWriter(a.chunk_keys, 16 * 1024 * 1024)
        t_rec, recs = timed(lambda w=w, value=value: w.records(HEAD, value), a.repeat)
        t_gz, gz = timed(lambda recs=recs: [gzip.compress(b) for _, b in recs if b is not None], a.repeat)
        sent, sent_gz = sum(len(b or b"") for _, b in recs), sum(len(b) for b in gz)

        def read(recs: Any = recs) -> ChunkAssembler:
            r = ChunkAssembler()
            for k, b in recs:
                r.feed(k, b)
            return r

        t_read, reader = timed(read, a.repeat)
        t_take, _ = timed(lambda: len(read().latest[HEAD]["arms"]), 1)  # a takeover parses the key state
        assert len(reader.latest[HEAD]["arms"]) == n
        n_chunks = sum(1 for k, b in recs if k != HEAD and b is not None)
        print(f"  {n:>9,} keys: {n_chunks:>4} chunks, {sent / 1e6:7.1f} MB JSON, {sent_gz / 1e6:6.1f} MB gzip; "
              f"partition_arms ~{t_arms * n:5.2f} s + write {t_rec:6.2f} s + gzip {t_gz:6.2f} s (publisher); "
              f"read {t_read:5.2f} s (every member), parse at a takeover {t_take - t_read:5.2f} s")
        names = list(value["arms"])
        for f in a.changed:
            changed = dict(value["arms"])
            for k in rng.sample(names, max(1, int(f * n))):
                changed[k] = {**changed[k], "state": 1}
            w1 = ChunkWriter(a.chunk_keys, 16 * 1024 * 1024)
            r1 = read(w1.records(HEAD, value))  # the writer's memory and its reader's view: the first value
            again = w1.records(HEAD, {**value, "arms": changed}, on_topic=r1.chunks_on, named=r1.named)
            chunks = [b for k, b in again if k != HEAD and b is not None]
            print(f"      {f:6.1%} of the keys changed (at random): {len(chunks):>4} of {n_chunks} chunks "
                  f"re-sent, {sum(map(len, chunks)) / 1e6:7.1f} MB JSON")
    for budget in (None, PUBLISH_BUDGET):
        worst, syncs = stall(a.stall_keys, a.stall_partitions, budget)
        print(f"loop stall, {a.stall_keys:,} keys over {a.stall_partitions} partitions, publish budget {budget}: "
              f"longest sync {worst:.2f} s, {syncs} sync(s) for the round")
    print(f"projection: a member of K keys publishing every I s sends <= K x {per_gz:.0f} B gzip / I into the stats "
          f"topic (1e6 keys, I = 1 s: {1e6 * per_gz / 1e6:.0f} MB/s; I = 30 s: {1e6 * per_gz / 30e6:.1f} MB/s), "
          f"every member reads all members' records")


if __name__ == "__main__":
    main()

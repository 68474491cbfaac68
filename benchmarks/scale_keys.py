"""One member at scale (issue 13): RSS and checkpoint cost at 1e4, 1e5, 1e6 keys.

Per key count n (each in its own process, so RSS is that run's alone): a passive scheduler with the
``cs`` policy (AnytimeKSigma, Bernoulli, k = 2, delta = 0.1) on n keys given up front, one reward fed
per key (``passive_feed="all"``, 10% ones), then:

* ``rss_mb``: resident set size (``/proc/self/status`` VmRSS) after the feed, and ``per_key_b``
  (RSS minus the interpreter-and-imports baseline measured before building, over n). It counts the arm
  names (the scheduler holds them) but not the records' key bytes, made per batch as a consumer receives
  them (held for the whole run before, they added ~57 B a key that a daemon does not hold);
* ``peak_mb``: the process's peak RSS (VmHWM) after the full checkpoints below, what a member with the
  file checkpoint reaches: the full checkpoint builds the document (a dict) in memory and streams its
  JSON to the file, so at scale the state plus that dict set the peak (the continuous monitor's keys are
  rows made a batch at a time as they are written: no dict per key) (``--repeat 0``: after the feed);
* ``restored_mb`` / ``restore_peak_mb`` / ``restore_s``: a restart from that full file, in a fresh process,
  read as the daemon reads it (``FileCheckpointStore.load_streamed``: the large arrays parsed an element at
  a time as the restore iterates them): RSS once the state is restored (the document dropped), the peak on
  the way, and the process CPU seconds of load + restore; ``dir_restored_mb`` / ``dir_restore_peak_mb`` /
  ``dir_restore_s``: the same from the chunked directory below (base + delta,
  ``ChunkedCheckpointStore.load_streamed``);
* ``full``: today's checkpoint, in the loop: ``scheduler.snapshot()`` + encode + atomic file write with
  fsync (:class:`~streamarms.checkpoint.FileCheckpointStore`) -- the whole of it stalls the loop;
* ``chunked base`` / ``chunked delta``: :class:`~streamarms.chunked_checkpoint.ChunkedCheckpointStore`:
  the first save, then a save after rewards reached 1% of the keys (MB written: the pack of changed
  keys' patches plus the manifest; seconds: CPU of the save, which runs in the forked child, off the loop);
* ``fork stall``: what :class:`~streamarms.background_checkpoint.BackgroundCheckpointDaemon` pauses the
  loop for (``os.fork`` in the parent), and how long the child then takes to save (off the loop).

Times are wall seconds (perf_counter): a stall is wall time. The machine is shared (2 cores, other
jobs): numbers are noisy, best of ``--repeat`` (``--repeat 0``: memory only). ``--mode continuous`` measures
the monitor of ``run --forever`` instead (keys learnt from the stream, an e-detector per key). Usage::

    python benchmarks/scale_keys.py [--keys 10000 100000 1000000] [--repeat 3] [--mode episodes|continuous]
                                    [--out benchmarks/results/scale_keys.txt]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamarms.checkpoint import FileCheckpointStore  # noqa: E402
from streamarms.chunked_checkpoint import ChunkedCheckpointStore  # noqa: E402
from streamarms.cli.continuous import build_runner  # noqa: E402
from streamarms.daemon import checkpoint_document  # noqa: E402
from streamarms.json_stream import lazy_default  # noqa: E402
from streamarms.models import BernoulliModel  # noqa: E402
from streamarms.registry import build_policy  # noqa: E402
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig  # noqa: E402
from streamarms.runtime.continuous import ContinuousRunner  # noqa: E402


def rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def arm_name(i: int) -> str:
    return f"key-{i:07d}"


def feed(s: Scheduler | ContinuousRunner, idx: range) -> None:
    """One record per key of ``idx``, in batches of 10k whose keys are made afresh (as a consumer's are)."""
    vals = (b'{"reward": 0}', b'{"reward": 1}')
    for j in range(0, len(idx), 10000):
        part = idx[j:j + 10000]
        keys, values = [arm_name(i).encode() for i in part], [vals[(i * 7919) % 10 == 0] for i in part]
        if isinstance(s, ContinuousRunner):
            s.offer_batch(keys, values, [1000 * i for i in part])
        else:
            s.offer_batch(keys, values)


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def one(n: int, repeat: int, mode: str = "episodes", rps: bool = False) -> dict[str, float]:
    base = rss_mb()
    s: Scheduler | ContinuousRunner
    if mode == "continuous":  # `run --forever`: the monitor learns the keys from the stream
        s = build_runner(k=2.0, alpha=0.1, alpha_cd=1e-6, model="bernoulli", clock=EventClock(), max_arms=max(n, 10))
        run = {"mode": "continuous", "policy": "continuous"}
    else:
        arms = [arm_name(i) for i in range(n)]
        s = Scheduler(lambda a, ep: build_policy("cs", a, k=2.0, delta=0.1), clock=EventClock(), arms=arms,
                      config=SchedulerConfig(passive_feed="all", max_arms=max(n, 10)),
                      codec=RewardCodec(model=BernoulliModel()))
        s.tick()
        run = {"mode": "passive", "policy": "cs"}
    c0 = time.process_time()
    feed(s, range(n))
    c1 = time.process_time()
    out: dict[str, float] = {"keys": n, "rss_mb": rss_mb()}
    out["per_key_b"] = (out["rss_mb"] - base) * 1024 * 1024 / n
    out["new_rps"] = n / (c1 - c0)
    if rps:  # a second record of every key: the path of known keys
        feed(s, range(n))
        out["rps"] = n / (time.process_time() - c1)
    if repeat == 0:  # --repeat 0: memory only, no checkpoint
        out["peak_mb"] = rss_mb("VmHWM")
        return out
    d = tempfile.mkdtemp(prefix="scale-keys-")
    full = FileCheckpointStore(os.path.join(d, "full.json"))
    out["full_s"] = best(lambda: full.save(checkpoint_document(run, s, {})), repeat)
    out["full_mb"] = os.path.getsize(full.path) / 1e6
    out["peak_mb"] = rss_mb("VmHWM")  # feed + full checkpoints (before the benchmark's own checks below)
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--restore", full.path, "--mode", mode],
                       capture_output=True, text=True, check=True)
    out.update(json.loads(r.stdout.strip().splitlines()[-1]))
    chunked = ChunkedCheckpointStore(os.path.join(d, "chunked"))
    t0 = time.perf_counter()
    chunked.save(checkpoint_document(run, s, {}))
    out["chunked_base_s"] = time.perf_counter() - t0
    out["chunked_base_mb"] = (chunked.last_written["bytes"] + chunked.last_written["manifest_bytes"]) / 1e6
    feed(s, range(0, n, 100))  # 1% of the keys get a reward
    doc = checkpoint_document(run, s, {})
    t0 = time.perf_counter()
    chunked.save(doc)
    out["chunked_delta_s"] = time.perf_counter() - t0
    out["chunked_delta_mb"] = (chunked.last_written["bytes"] + chunked.last_written["manifest_bytes"]) / 1e6
    assert chunked.load() == json.loads(json.dumps(doc, default=lazy_default)), "base + delta does not restore the document"
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--restore", chunked.dir, "--mode", mode],
                       capture_output=True, text=True, check=True)
    out.update({f"dir_{k}": v for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()})
    stalls, child = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                chunked.save(checkpoint_document(run, s, {}))
            finally:
                os._exit(0)
        stalls.append(time.perf_counter() - t0)
        os.waitpid(pid, 0)
        child.append(time.perf_counter() - t0)
    out["fork_stall_s"], out["child_save_s"] = min(stalls), min(child)
    shutil.rmtree(d, ignore_errors=True)
    return out


def restore(path: str, mode: str) -> dict[str, float]:
    """A restart from the full file checkpoint, in a fresh process: RSS once restored (the document
    dropped) and the peak on the way (the file's bytes, the parsed document, the state built from it)."""
    s: Scheduler | ContinuousRunner
    if mode == "continuous":
        s = build_runner(k=2.0, alpha=0.1, alpha_cd=1e-6, model="bernoulli", clock=EventClock(), max_arms=10 ** 7)
    else:
        s = Scheduler(lambda a, ep: build_policy("cs", a, k=2.0, delta=0.1), clock=EventClock(),
                      config=SchedulerConfig(passive_feed="all", max_arms=10 ** 7),
                      codec=RewardCodec(model=BernoulliModel()))
    t0 = time.process_time()
    store = ChunkedCheckpointStore(path) if os.path.isdir(path) else FileCheckpointStore(path)
    doc = store.load_streamed()  # as a daemon's restart (restore_checkpoint) reads it
    assert doc is not None
    s.restore(doc["scheduler"])
    del doc
    return {"restored_mb": rss_mb(), "restore_peak_mb": rss_mb("VmHWM"), "restore_s": time.process_time() - t0}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", choices=["episodes", "continuous"], default="episodes",
                    help="episodes: the cs policy (default); continuous: the monitor of `run --forever`")
    ap.add_argument("--rps", action="store_true",
                    help="feed every key a second record and report its records per CPU second (rps; new_rps: "
                         "the first records, new keys, always reported); rss_mb is then after both")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode: one key count, JSON out
    ap.add_argument("--restore", help=argparse.SUPPRESS)  # child mode: restore this checkpoint, JSON out
    ap.add_argument("--out", help="also write the table to this file")
    a = ap.parse_args(argv)
    if a.restore:
        print(json.dumps(restore(a.restore, a.mode)))
        return
    if a.one:
        print(json.dumps(one(a.one, a.repeat, a.mode, a.rps)))
        return
    rows = []
    for n in a.keys:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", str(n), "--repeat", str(a.repeat),
                            "--mode", a.mode, *(["--rps"] if a.rps else [])],
                           capture_output=True, text=True, check=True)
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    cols = ["keys", "rss_mb", "per_key_b", "new_rps", "rps", "peak_mb", "full_s", "full_mb", "restored_mb", "restore_peak_mb", "restore_s",
            "dir_restored_mb", "dir_restore_peak_mb", "dir_restore_s",
            "chunked_base_s", "chunked_base_mb",
            "chunked_delta_s", "chunked_delta_mb", "fork_stall_s", "child_save_s"]
    lines = ["  ".join(f"{c:>15}" for c in cols)]
    for r in rows:
        lines.append("  ".join(f"{r[c]:>15.0f}" if c == "keys" else f"{r.get(c, math.nan):>15.3f}" for c in cols))
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"# python benchmarks/scale_keys.py --keys {' '.join(map(str, a.keys))} --repeat {a.repeat}"
                    f"{' --mode continuous' if a.mode == 'continuous' else ''}{' --rps' if a.rps else ''}\n"
                    f"# wall seconds, best of {a.repeat}, shared 2-core machine (noisy); rps, new_rps: records per "
                    f"CPU second; load average {os.getloadavg()[0]:.1f}\n{text}\n")


if __name__ == "__main__":
    main()

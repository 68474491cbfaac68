"""Records per second of ``streamarms run --rewards-file`` vs a bare read-and-parse loop (issue 15).

One JSONL file (shorthand lines ``{"arm": ..., "reward": 0|1, "timestamp": ...}``, Bernoulli rewards,
two outlier keys among ``--keys``), three ways:

* ``bare``: ``for line in f: json.loads(line)`` -- reading and parsing each line, nothing else
  (also with orjson, the parser the daemon uses);
* ``idle``: the whole ``run`` command (JSONL source, daemon, scheduler, full validation) with no
  episode running (``--min-arms`` above the number of keys): every record is read, validated and skipped;
* ``detecting``: ``run --forever --episode-interval 0``: detection episodes back to back.

Every run is in this process (imports done once) and timed with **process time** (CPU seconds of this
process), best of ``--repeat``, the cases interleaved: the machine may be shared, and process time is
what a busy neighbour disturbs least. The ratios (daemon / bare, same repeat) are what to read.

Usage::

    python benchmarks/replay_throughput.py                       # 300k records, 20 keys
    python benchmarks/replay_throughput.py --records 1000000 --keys 20 1000 --policy wrr cs
    python benchmarks/replay_throughput.py --policy cs --feed all --ms-per-record 1000   # a record a second
    python benchmarks/replay_throughput.py --compress gzip    # the daemon reads a .gz (also plain: "... plain")

``--compress``: the daemon's cases read the file compressed (``connectors/compressed_lines.py``), beside an idle
run on the plain file; the last line is the time a restart takes to reach the file's last line (decompressing it
again up to the checkpoint's position).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import orjson  # noqa: E402

from streamarms.cli.main import main as cli  # noqa: E402
from streamarms.sim import zww17_example  # noqa: E402


def make_file(path: str, n: int, n_keys: int, seed: int = 1, ms_per_record: int = 1) -> None:
    means = zww17_example() if n_keys == 20 else [0.2] * (n_keys - 2) + [0.9, 0.95]
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            a = rng.randrange(n_keys)
            f.write(f'{{"arm": "k{a:06d}", "reward": {int(rng.random() < means[a])}, '
                    f'"timestamp": {1_700_000_000_000 + i * ms_per_record}}}\n')


def bare(path: str, loads) -> float:
    t0 = time.process_time()
    n = 0
    with open(path) as f:
        for line in f:
            loads(line)
            n += 1
    return n / (time.process_time() - t0)


def daemon(path: str, n: int, detecting: bool, policy: str, extra: list[str]) -> tuple[float, dict]:
    summary = path + ".summary.json"
    args = ["run", "--rewards-file", path, "--policy", policy, "--checkpoint", "none", "--quiet",
            "--summary-json", summary, "--discovery-records", "1000", "--max-arms", "200000"]
    # idle: no episode runs (more arms needed than there are keys): every record is read, validated
    # and skipped -- the state of a deployment between episodes
    args += ["--forever", "--mode", "episodes"]
    args += ["--episode-interval", "0"] if detecting else ["--min-arms", "200000"]
    t0 = time.process_time()
    cli(args + extra)
    dt = time.process_time() - t0
    with open(summary) as f:
        s = json.load(f)
    return s["records"] / dt, s


def _compress(path: str, kind: str) -> str:
    import bz2
    import gzip
    import lzma

    out = path + {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz"}[kind]
    with open(path, "rb") as f:
        data = f.read()
    with open(out, "wb") as f:
        f.write({"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind](data))
    return out


def _resume_seconds(path: str) -> float:
    """Wall seconds to open a compressed file at a checkpoint of its last line (what a restart pays)."""
    from connectors.compressed_lines import open_lines

    r = open_lines(path)
    n = 0
    while len(got := r.read(1 << 16)) == 1 << 16:
        n += len(got)
        r.forget(r.line)
    n += len(got)
    pos, digest = r.mark(n - 1)
    r.close()
    t0 = time.perf_counter()
    open_lines(path, line=n - 1, pos=pos, digest=digest).close()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--keys", type=int, nargs="+", default=[20])
    ap.add_argument("--policy", nargs="+", default=["wrr"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--feed", default="planned", choices=["planned", "all"])
    ap.add_argument("--ms-per-record", type=int, default=1,
                    help="stream time between records (1000: a record a second, where a plan's wants time out often)")
    ap.add_argument("--run-args", default="", help="more flags for every run (quoted: '--discovery-seconds 1e6')")
    ap.add_argument("--plot", help="write a PNG of records/s vs keys (bare, idle, detecting) here")
    ap.add_argument("--compress", choices=["gzip", "bzip2", "xz"], help="the daemon reads the file compressed so")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    tmp = tempfile.mkdtemp()
    extra = ["--passive-feed", args.feed, *args.run_args.split()]
    print(f"{args.records:,} records per file, {args.ms_per_record} ms apart; process time, best of {args.repeat}, "
          f"cases interleaved; passive feed {args.feed}")
    rates: dict[str, list[float]] = {}
    for n_keys in args.keys:
        path = os.path.join(tmp, f"r{n_keys}.jsonl")
        make_file(path, args.records, n_keys, ms_per_record=args.ms_per_record)
        packed = _compress(path, args.compress) if args.compress else path
        best: dict[str, tuple[float, dict]] = {}
        cases = [("bare json.loads", None), ("bare orjson.loads", None)]
        for pol in args.policy:
            cases += [(f"{pol} idle", (False, pol)), (f"{pol} detecting", (True, pol))]
            if args.compress:
                cases += [(f"{pol} idle plain", (False, pol))]
        for _ in range(args.repeat):
            for label, spec in cases:
                if spec is None:
                    r, st = bare(path, json.loads if "json.loads" in label and "or" not in label else orjson.loads), {}
                else:
                    r, st = daemon(path if label.endswith("plain") else packed, args.records, spec[0], spec[1], extra)
                if r > best.get(label, (0.0, {}))[0]:
                    best[label] = (r, st)
        b = best["bare json.loads"][0]
        print(f"\n{n_keys} keys:")
        for label, _ in cases:
            r, st = best[label]
            note = f"  ({st['samples']:,} samples, {len(st.get('episodes', []))} episodes)" if st else ""
            print(f"  {label:<26} {r:>10,.0f} records/s  {r / b:6.1%} of bare json.loads{note}")
            rates.setdefault(label, []).append(r)
        if args.compress:
            print(f"  {args.compress}: {os.path.getsize(packed):,} bytes of {os.path.getsize(path):,}; a restart at "
                  f"its last line reaches it in {_resume_seconds(packed):.2f} s")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, ys in rates.items():
            ax.plot(args.keys, ys, marker="o", label=label, linestyle="--" if "bare" in label else "-")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("keys (arms)")
        ax.set_ylabel("records/s (process time)")
        ax.set_title(f"streamarms run --rewards-file, {args.records:,} records, feed {args.feed}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()

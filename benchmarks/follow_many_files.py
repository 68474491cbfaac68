"""CPU of ``streamarms run --follow`` on many files that no longer grow (a pattern of hourly or daily logs).

A run that follows ``'logs/app-*.jsonl'`` holds every match open and looks at each one at every poll: was it
renamed away, truncated, rewritten, has it grown? Most of a year of hourly files are done growing. This
script writes ``--files`` files of ``--lines`` lines each in one folder, starts the run on the pattern (a
subprocess, ``--forever``, a checkpoint), and measures, from ``/proc``:

* ``start``: seconds from the start until the checkpoint covers every line (imports, opening the files, the
  rotations of each looked up once, the lines read);
* ``idle``: the run's CPU over ``--idle`` seconds after that (and after the files went quiet), when nothing
  changes, in percent of one core (checkpoints at the default interval, 5 s);
* ``rested``: the same once the files have been quiet for ``--rested`` seconds (looked at less often the longer
  they stay quiet, up to every ``QUIET_MAX`` seconds: ``connectors/quiet_files.py``); 0 skips it;
* ``new file``: seconds from writing one more matching file until the checkpoint covers its lines;
* ``grown``: seconds from appending lines to the first file (quiet all along) until the checkpoint covers them;
* ``idle MB/day``, ``rested MB/day``: what the run wrote (``wchar``: checkpoints, whatever the file system)
  over the ``idle`` seconds of each measure, per day.

Usage::

    python benchmarks/follow_many_files.py                        # 1500 files (two months of hourly logs)
    python benchmarks/follow_many_files.py --files 100 1500 5000 --rested 120

Linux only (``/proc/PID/stat``). Prints a table; with ``--plot PATH`` draws idle CPU vs files.
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamarms.checkpoint import FileCheckpointStore  # noqa: E402
from streamarms.connectors.quiet_files import QUIET_AFTER  # noqa: E402

QUIET = QUIET_AFTER + 1.0


def _write(path: str, first: int, n: int, rng: random.Random) -> None:
    with open(path, "w") as f:
        for i in range(first, first + n):
            a = rng.randrange(20)
            reward = int(rng.random() < (0.9 if a >= 18 else 0.3))
            f.write(f'{{"arm": "k{a}", "reward": {reward}, "timestamp": {1_700_000_000_000 + i}}}\n')


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _records(ckpt: str) -> int:
    try:
        doc = FileCheckpointStore(ckpt).load()
    except (FileNotFoundError, OSError, ValueError):
        return -1
    return -1 if doc is None else doc["scheduler"]["counters"]["records"]


def _wait(ckpt: str, records: int, proc: subprocess.Popen, limit: float = 600.0) -> float:
    t0 = time.monotonic()
    while _records(ckpt) < records:
        if proc.poll() is not None:
            raise SystemExit(f"the run ended (exit {proc.returncode})")
        if time.monotonic() - t0 > limit:
            proc.kill()
            raise SystemExit(f"no checkpoint of {records} records within {limit} s")
        time.sleep(0.05)
    return time.monotonic() - t0


def _written(pid: int) -> int:
    """Bytes the process has passed to ``write`` so far (``wchar``: the checkpoints, whatever the file system)."""
    with open(f"/proc/{pid}/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("wchar:"))


def _idle_cpu(pid: int, idle: float) -> tuple[float, float]:
    """CPU (% of a core) and bytes written per second over ``idle`` seconds."""
    c0, b0, w0 = _cpu_seconds(pid), _written(pid), time.monotonic()
    time.sleep(idle)
    dt = time.monotonic() - w0
    return 100 * (_cpu_seconds(pid) - c0) / dt, (_written(pid) - b0) / dt


def measure(files: int, lines: int, idle: float, rested: float) -> tuple[float, ...]:
    """``(start seconds, idle CPU %, rested idle CPU %, new-file seconds, grown seconds, idle bytes written per
    second, rested bytes written per second)`` for ``files`` files of ``lines`` lines (rested: NaN when
    ``rested`` is 0)."""
    rng = random.Random(files)
    with tempfile.TemporaryDirectory() as d:
        for i in range(files):
            _write(os.path.join(d, f"app-{i:06d}.jsonl"), i * lines, lines, rng)
        ckpt = os.path.join(d, "run.ckpt")
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "streamarms.cli", "run", "--rewards-file",
                                 os.path.join(d, "app-*.jsonl"), "--follow", "--forever", "--checkpoint", ckpt,
                                 "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait(ckpt, files * lines, proc)
            start = time.monotonic() - t0
            time.sleep(QUIET)  # (the files go quiet: looked at once a second)
            cpu, written = _idle_cpu(proc.pid, idle)
            rest = rest_written = float("nan")
            if rested:
                time.sleep(max(0.0, rested - QUIET - idle))
                rest, rest_written = _idle_cpu(proc.pid, idle)
            _write(os.path.join(d, f"app-{files:06d}.jsonl"), files * lines, lines, rng)
            new = _wait(ckpt, (files + 1) * lines, proc)
            with open(os.path.join(d, f"app-{0:06d}.jsonl"), "a") as f:  # (quiet since the start)
                f.write(f'{{"arm": "k1", "reward": 0, "timestamp": {1_700_000_000_000 + lines - 1}}}\n' * lines)
            grown = _wait(ckpt, (files + 2) * lines, proc)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        assert len(glob.glob(os.path.join(d, "app-*.jsonl"))) == files + 1
    return start, cpu, rest, new, grown, written, rest_written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, nargs="+", default=[1500])
    ap.add_argument("--lines", type=int, default=20)
    ap.add_argument("--idle", type=float, default=10.0, help="seconds of idle CPU measured")
    ap.add_argument("--rested", type=float, default=0.0,
                    help="also measure idle CPU once the files have been quiet this many seconds (0: not)")
    ap.add_argument("--plot", help="write a PNG of idle CPU vs files here")
    a = ap.parse_args(argv)
    rows = []
    print(f"{'files':>7} {'start s':>8} {'idle CPU %':>11} {'rested %':>9} {'new file s':>11} {'grown s':>8} "
          f"{'idle MB/day':>12} {'rested MB/day':>14}")
    for n in a.files:
        start, cpu, rest, new, grown, written, rest_written = measure(n, a.lines, a.idle, a.rested)
        rows.append((n, cpu, rest))
        print(f"{n:>7} {start:>8.2f} {cpu:>11.1f} {rest:>9.1f} {new:>11.2f} {grown:>8.2f} "
              f"{written * 86400 / 1e6:>12.1f} {rest_written * 86400 / 1e6:>14.1f}", flush=True)
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-", label=f"quiet {QUIET:.0f} s")
        if a.rested:
            ax.plot([r[0] for r in rows], [r[2] for r in rows], "s-", label=f"quiet {a.rested:.0f} s")
            ax.legend()
        ax.set_xlabel("files followed (none growing)")
        ax.set_ylabel("idle CPU, % of a core")
        ax.set_title("streamarms run --follow 'app-*.jsonl'")
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)


if __name__ == "__main__":
    main()

"""Records per CPU second of :meth:`ContinuousMonitor.update` (the continuous monitor's per-reward path).

``--keys`` keys, ``--records`` records drawn uniformly among them (fixed seed), Bernoulli rewards at
0.1 (one key at 0.6, so alerts happen), the e-detector (default) or ``--restart``. Best of ``--repeat``
runs of ``time.process_time`` (the machine is shared: an A/B runs both versions alternately, e.g. from
two trees, and compares the ratio). Usage::

    python benchmarks/monitor_speed.py [--keys 1000] [--records 300000] [--repeat 3] [--restart edetector]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamarms.monitor import ContinuousMonitor  # noqa: E402


def run(keys: int, records: int, restart: str, seed: int = 1) -> float:
    rng = random.Random(seed)
    names = [f"key-{i}" for i in range(keys)]
    stream = []
    for _ in range(records):
        i = rng.randrange(keys)
        stream.append((names[i], float(rng.random() < (0.6 if i == 0 else 0.1))))
    mon = ContinuousMonitor(k=2.0, restart=restart)
    upd = mon.update
    t0 = time.process_time()
    for t, (key, x) in enumerate(stream):
        upd(key, x, time=float(t))
    return records / (time.process_time() - t0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--restart", default="edetector", choices=["edetector", "window", "none"])
    a = ap.parse_args(argv)
    best = max(run(a.keys, a.records, a.restart) for _ in range(a.repeat))
    print(f"{best:.0f} records/s (keys {a.keys}, records {a.records}, restart {a.restart}, best of {a.repeat}, "
          f"load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()

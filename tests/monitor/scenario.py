"""A seeded keyed stream that exercises every path of the continuous monitor (joins, two groups, a
shift up and back, restarts of either rule, keys silent for longer than the TTL, records without a
time, evidence read mid-stream), and its outcome: the alerts and a hash of the snapshots.

``tests/monitor/data/columnar_golden.json`` holds the outcome of the per-key-object monitor (before the
columns, issue 13), written by ``python -m tests.monitor.scenario OUT`` from that version's tree; the
test of the columns compares against it."""

from __future__ import annotations

import hashlib
import json
import random
import sys
from typing import Any

from streamarms.models import make_model
from streamarms.monitor import ContinuousMonitor

CONFIGS = [(r, m, ttl) for r in ("edetector", "window", "none") for m in ("bernoulli", "bounded") for ttl in (300, None)]
RECORDS = 60_000


def make(restart: str, model: str, ttl: int | None) -> ContinuousMonitor:
    return ContinuousMonitor(k=2.0, alpha=0.01, alpha_theta=0.01, alpha_cd=1e-4, restart=restart, window=500,
                             key_ttl=ttl, model=make_model("bounded", a=0.0, b=2.0) if model == "bounded" else model)


def records(model: str, n_keys: int = 12, seed: int = 11) -> list[tuple[str, float, float | None, str]]:
    rng = random.Random(seed)
    out = []
    for t in range(RECORDS):
        kk = rng.randrange(n_keys) if rng.random() < 0.9 else rng.randrange(n_keys, n_keys + 5)
        if kk == 5 and 30_000 <= t < 34_000:
            kk = 6  # key 5 silent for 4000 records: dropped at ttl=300, then back
        p = 0.1 + 0.005 * (kk % 20)
        if kk == 3 and 4_000 <= t < 20_000:
            p = 0.9
        if kk == 7 and t >= 45_000:
            p = 0.9
        x = float(rng.random() < p)
        if model == "bounded":
            x = 2.0 * x if rng.random() < 0.5 else x * rng.random() * 2.0
        out.append((f"k{kk}", x, None if t % 97 == 0 else float(t), "a" if kk % 3 else "b"))
    return out


def digest(mon: ContinuousMonitor) -> str:
    """The hash of the snapshot in the per-key format (``rows=False``, the format the golden file was
    written in): the key rows of ``snapshot()`` are checked against it by restoring them."""
    return hashlib.sha256(json.dumps(mon.snapshot(rows=False), sort_keys=True).encode()).hexdigest()


def feed(mon: ContinuousMonitor, recs: list[tuple[str, float, float | None, str]], start: int = 0) -> list[list[Any]]:
    alerts = []
    for t, (key, x, tm, grp) in enumerate(recs[start:], start=start):
        for a in mon.update(key, x, time=tm, group=grp):
            alerts.append([a["key"], a["kind"], a["record"], a["interval"], a["threshold_interval"], a["margin"]])
        if t % 5000 == 0:
            mon.evidence(key)  # reading narrows the running intersection: part of the state
    return alerts


def outcome() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for restart, model, ttl in CONFIGS:
        recs = records(model)
        mon = make(restart, model, ttl)
        first = feed(mon, recs[:RECORDS // 2])
        mid = json.loads(json.dumps(mon.snapshot(rows=False)))
        rest = feed(mon, recs, RECORDS // 2)
        out[f"{restart}-{model}-{ttl}"] = {"alerts": first + rest, "mid": mid if (restart, ttl) == ("edetector", 300)
                                           else None, "final": digest(mon), "counts": mon.counts}
    return out


if __name__ == "__main__":
    with open(sys.argv[1], "w") as f:
        json.dump(outcome(), f, sort_keys=True)

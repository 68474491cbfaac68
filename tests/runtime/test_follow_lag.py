"""``streamarms_follow_lag_bytes``: following files, the bytes written to them and not read yet -- all of a file
before it is read, none once read to its end, the lines appended since, and, after a rotation, the rest of the file
rotated away plus the new file at its path; no series when the files are not followed (a replay)."""

from __future__ import annotations

import json
import os

from streamarms.connectors.files import JsonlSource
from streamarms.metrics import Metrics
from streamarms.observability import OperatorMetrics
from streamarms.runtime.scheduler import EventClock, Scheduler, SchedulerConfig, _ExamplePolicy


def _lines(n: int, start: int = 0) -> str:
    return "".join(json.dumps({"arm": f"k{i % 5}", "reward": i % 2}) + "\n" for i in range(start, start + n))


def _drain(source: JsonlSource) -> int:
    n = 0
    while batch := source.poll(0.0):
        n += len(batch)
    return n


def _gauge(m: Metrics) -> float | None:
    for line in m.render().decode().splitlines():
        if line.startswith("streamarms_follow_lag_bytes "):
            return float(line.split()[1])
    return None


def _ops(source: JsonlSource) -> tuple[Metrics, OperatorMetrics]:
    m = Metrics()
    s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=EventClock(), config=SchedulerConfig(discovery_records=5))
    return m, OperatorMetrics(m, s, source)


def test_the_lag_of_a_followed_file_through_appends_and_a_rotation(tmp_path):
    p = tmp_path / "app.log"
    p.write_text(_lines(1_000))
    source = JsonlSource([str(p)], follow=True)
    m, ops = _ops(source)
    try:
        ops.refresh()
        assert _gauge(m) == os.path.getsize(p)  # (nothing read yet)
        assert _drain(source) == 1_000
        ops.refresh()
        assert _gauge(m) == 0
        more = _lines(300, 1_000)
        with open(p, "a") as f:
            f.write(more)
        ops.refresh()
        assert _gauge(m) == len(more)
        os.rename(p, str(p) + ".1")  # (logrotate's rename, then the writer's new file)
        newer = _lines(50, 1_300)
        p.write_text(newer)
        ops.refresh()
        assert _gauge(m) == len(more) + len(newer)
        assert _drain(source) == 350
        ops.refresh()
        assert _gauge(m) == 0
    finally:
        source.close()


def test_a_replay_has_no_follow_lag_series(tmp_path):
    p = tmp_path / "app.log"
    p.write_text(_lines(100))
    source = JsonlSource([str(p)])
    m, ops = _ops(source)
    try:
        ops.refresh()
        assert _gauge(m) is None
    finally:
        source.close()


def test_a_follow_run_with_no_file_yet_is_not_ready_for_that_reason_not_a_kafka_one(tmp_path):
    """/healthz said "no partitions assigned" (an operator drill, a pattern matching no file yet): it names the files."""
    source = JsonlSource([], follow=True, patterns=[str(tmp_path / "app-*.log")])
    m, ops = _ops(source)
    try:
        ops.refresh()
        ready, info = ops.health()
        assert not ready and info["reasons"] == ["no file to read yet: none that --rewards-file names is there"]
        (tmp_path / "app-1.log").write_text(_lines(10))
        source.watch.due = lambda: True  # (look now, not in a second)
        _drain(source)
        ops.refresh()
        assert "reasons" not in ops.health()[1]
    finally:
        source.close()


def test_healthz_says_the_checkpoint_at_start_apart_from_those_made_since():
    """It said "checkpoint": "none found" for the whole life of a fresh run that checkpointed every second."""
    source = JsonlSource([], follow=True, patterns=["/nonexistent/app-*.log"])
    m = Metrics()
    s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=EventClock(), config=SchedulerConfig(discovery_records=5))
    ops = OperatorMetrics(m, s, source, checkpoint="none found")
    try:
        m.checkpoints = 3
        ops.refresh()
        info = ops.health()[1]
        assert info["checkpoint_at_start"] == "none found" and info["checkpoints_made"] == 3 and "checkpoint" not in info
    finally:
        source.close()

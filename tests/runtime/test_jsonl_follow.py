"""``streamarms run --follow``: a JSONL file read as it grows (``tail -f``). Appended lines are read, a line
only once its line end is written, a restart neither loses nor double-counts a line, and a file removed,
rotated, truncated or rewritten under the run stops it with that reason (exit 1) -- never a run that
silently reads a different file from the middle, or waits for lines that will never come."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from streamarms.checkpoint import CheckpointError, FileCheckpointStore
from streamarms.connectors.files import JsonlSource
from streamarms.connectors.jsonl_lines import LineReader


def _lines(n: int, first: int = 0) -> list[bytes]:
    means = [0.3] * 18 + [0.9, 0.95]  # two clear outlier keys
    rng = random.Random(first)
    return [b'{"arm": "k%d", "reward": %d, "timestamp": %d}\n' % (a, rng.random() < means[a], 1_700_000_000_000 + i)
            for i in range(first, first + n) for a in [rng.randrange(len(means))]]


def _append(path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def _poll_all(src: JsonlSource, rounds: int = 3) -> list:
    out: list = []
    for _ in range(rounds):
        out += src.poll(0.0)
    return out


# -- the reader and the source ------------------------------------------------------------------------
@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_a_follower_reads_appended_lines_each_once_its_line_end_is_written(tmp_path, eol):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"a": 1}' + eol + b'{"a": 2}')  # a whole object without its line end: maybe half a write
    r = LineReader(str(p), follow=True)
    assert r.read(10) == ['{"a": 1}'] and r.eof and r.incomplete == b'{"a": 2}'
    r.more()
    assert r.read(10) == [] and r.incomplete == b'{"a": 2}'  # nothing new: still waiting
    _append(p, eol + b'{"a": 3}' + eol + b'{"a"')
    r.more()
    assert r.read(10) == ['{"a": 2}', '{"a": 3}'] and r.incomplete == b'{"a"'
    assert r.position(3) == os.path.getsize(p) - 4 and r.changed() is None


def test_the_source_follows_every_file_and_is_never_exhausted(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    lines = _lines(400)
    a.write_bytes(b"".join(lines[:100]))
    b.write_bytes(b"")
    src = JsonlSource([str(a), str(b)], follow=True, max_records=64)
    got = _poll_all(src, 5)
    assert len(got) == 100 and not src.exhausted and src.failure is None
    _append(a, b"".join(lines[100:250]))
    _append(b, b"".join(lines[250:400]))
    got += _poll_all(src, 10)
    assert sorted(r.value + b"\n" for r in got) == sorted(lines) and not src.exhausted
    assert [r.offset for r in got if r.topic == str(b)] == list(range(150))
    state = src.state()
    src.close()
    _append(a, b"".join(_lines(10, first=400)))  # a restart resumes after the last line read
    src2 = JsonlSource([str(a), str(b)], follow=True, resume=state)
    rest = _poll_all(src2)
    src2.close()
    assert [(r.topic, r.offset) for r in rest] == [(str(a), 250 + i) for i in range(10)]


def _truncate(p):
    p.write_bytes(b"".join(_lines(5)))


def _rotate(p):
    os.replace(p, str(p) + ".1")
    p.write_bytes(b"".join(_lines(500)))


def _rewrite(p):  # the same length, other bytes before the position
    data = bytearray(p.read_bytes())
    data[40:60] = b" " * 20
    p.write_bytes(bytes(data))


@pytest.mark.parametrize("change, why", [(_truncate, "shorter than what was read"), (_rotate, "is another file now"),
                                         (os.remove, "was removed"), (_rewrite, "was rewritten")])
def test_a_file_changed_under_the_follower_ends_the_source_with_the_reason(tmp_path, change, why):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(50)))
    src = JsonlSource([str(p)], follow=True)
    assert len(_poll_all(src)) == 50 and not src.exhausted
    change(p)
    assert _poll_all(src) == [] and src.exhausted
    assert src.failure is not None and why in src.failure and "rotation is not followed" in src.failure
    src.close()


# -- the command ----------------------------------------------------------------------------------------
def _start(tmp_path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", str(tmp_path / "r.jsonl"), "--follow",
         "--forever", "--alerts-file", str(tmp_path / "alerts.jsonl"), "--checkpoint", str(tmp_path / "c.ckpt"),
         "--checkpoint-interval", "0.2", "--summary-json", str(tmp_path / "summary.json"), "--quiet", *extra],
        stderr=subprocess.PIPE, text=True)


def _wait_for(cond, proc: subprocess.Popen, what: str, limit: float = 120.0) -> None:
    """Wait until ``cond()`` (a generous limit: a correctness wait, not a speed assertion)."""
    end = time.monotonic() + limit
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what}: {proc.stderr.read()[-2000:]}")
        if time.monotonic() > end:
            proc.kill()
            raise AssertionError(f"no {what} within {limit} s")
        time.sleep(0.05)


def _checkpointed(tmp_path) -> int:
    """The records the run's last checkpoint covers (-1: none yet)."""
    try:
        return FileCheckpointStore(tmp_path / "c.ckpt").load()["scheduler"]["counters"]["records"]
    except (FileNotFoundError, TypeError):
        return -1


def _summary(tmp_path) -> dict:
    return json.loads((tmp_path / "summary.json").read_text())


def _alerted(tmp_path) -> set[str]:
    f = tmp_path / "alerts.jsonl"
    return {json.loads(x)["arm"] for x in f.read_text().splitlines()} if f.exists() else set()


def test_run_follow_alerts_on_appended_lines_and_resumes_without_loss_or_double_count(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(2000)))
    proc = _start(tmp_path)
    written = 2000
    try:
        for first in range(2000, 40_000, 2000):  # the writer goes on while the run reads
            if _alerted(tmp_path) >= {"k18", "k19"}:
                break
            _append(p, b"".join(_lines(2000, first)))
            written += 2000
            time.sleep(0.05)
        _wait_for(lambda: _alerted(tmp_path) >= {"k18", "k19"}, proc, "alerts for k18 and k19")
    finally:
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 0, err
    first_run = _summary(tmp_path)
    assert first_run["stop_reason"] == "SIGTERM" and first_run["records"] <= written
    # the restart goes on from the checkpoint: every line counted once over both runs
    _append(p, b"".join(_lines(3000, written)))
    written += 3000
    proc = _start(tmp_path)
    try:
        _wait_for(lambda: _checkpointed(tmp_path) == written, proc, "a checkpoint of every line")
    finally:
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 0, err
    second = _summary(tmp_path)
    assert second["records"] == written, (second["records"], written)  # the summary counts from the run's start
    alerts = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert sorted((a["arm"], a["kind"]) for a in alerts) == [("k18", "outlier"), ("k19", "outlier")]  # once each


def test_run_follow_stops_with_an_error_when_the_file_is_rotated(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(1000)))
    proc = _start(tmp_path)
    try:
        _wait_for(lambda: (tmp_path / "c.ckpt").exists(), proc, "a checkpoint")
        os.replace(p, tmp_path / "r.jsonl.1")
        p.write_bytes(b"".join(_lines(10, first=5000)))
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "is another file now" in err and "rotation is not followed" in err
    summary = _summary(tmp_path)
    assert summary["exit_code"] == 1 and "rotation is not followed" in summary["stop_reason"]
    assert summary["records"] == 1000  # every line of the file it was, checkpointed at its end


def test_follow_needs_a_rewards_file(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "streamarms.cli", "run", "--follow", "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--follow follows --rewards-file" in proc.stderr


# -- standard input -------------------------------------------------------------------------------------
def test_run_reads_standard_input_as_it_comes_and_stops_when_the_writer_closes_it(tmp_path):
    """``--rewards-file -``: a quiet pipe does not block the run (the alerts are out while the writer is still
    there), a line cut by the writer's close is a dead letter (never dropped), and the run stops when the
    pipe is closed, every line counted."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", "-", "--forever", "--alerts-file",
         str(tmp_path / "alerts.jsonl"), "--dead-letter-file", str(tmp_path / "dead.jsonl"), "--checkpoint-interval",
         "0.2", "--summary-json", str(tmp_path / "summary.json"), "--quiet"],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    written = 0
    try:
        while written < 60_000 and not _alerted(tmp_path) >= {"k18", "k19"}:
            proc.stdin.write(b"".join(_lines(2000, written)))
            proc.stdin.flush()
            written += 2000
            time.sleep(0.05)
        _wait_for(lambda: _alerted(tmp_path) >= {"k18", "k19"}, proc, "alerts while the pipe is open")
        proc.stdin.write(b'{"arm": "k1", "rew')  # the writer goes away mid-line
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    assert proc.returncode == 0, err
    summary = _summary(tmp_path)
    assert summary["stop_reason"] == "input exhausted" and summary["records"] == written + 1
    dead = [json.loads(x) for x in (tmp_path / "dead.jsonl").read_text().splitlines()]
    assert [(d["reason"], d["value"], d["source"]) for d in dead] == [("not_json", '{"arm": "k1", "rew', f"-:0:{written}")]


@pytest.mark.parametrize("args, said", [
    (["--rewards-file", "-", "--checkpoint", "c.ckpt"], "standard input) cannot be resumed from a checkpoint"),
    (["--rewards-file", "-", "--rewards-file", "-"], "can be given once")])
def test_standard_input_refuses_what_a_pipe_cannot_do(tmp_path, args, said):
    proc = subprocess.run([sys.executable, "-m", "streamarms.cli", "run", *args, "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and said in proc.stderr


def test_a_checkpoint_that_read_standard_input_cannot_resume_it():
    with pytest.raises(CheckpointError, match="a pipe cannot be resumed"):
        JsonlSource(["-"], resume={"-:0": [12, None]})

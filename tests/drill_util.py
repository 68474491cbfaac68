"""Shared pieces of the hardening drills (issue 10): a clean reward stream and its fuzzed twin, and the
kill -9 drill of the file-checkpoint runs (a reference run, lives killed -9 mid-run, the resumed run)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from streamarms.sim import zww17_example

MEANS = zww17_example()                      # 20 arms; outliers at k = 2: the last two
KEYS = [f"region-{i:02d}" for i in range(len(MEANS))]
OUTLIERS = ["region-18", "region-19"]
T0 = 1_700_000_000_000
ROOT = Path(__file__).resolve().parent.parent


def run_cli(args: list[str], **kw) -> subprocess.CompletedProcess:
    """``streamarms run *args`` in a fresh interpreter (stdout and stderr captured as text)."""
    return subprocess.run([sys.executable, "-m", "streamarms.cli", "run", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, **kw)


def clean_stream(n: int, seed: int) -> list[tuple[bytes, bytes, int]]:
    """``n`` Bernoulli rewards ``(key, value, timestamp_ms)`` of the 20 keys, keys at random."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a = rng.randrange(len(KEYS))
        out.append((KEYS[a].encode(), b'{"reward": %d}' % (rng.random() < MEANS[a]), T0 + i))
    return out


def bad_record(rng: random.Random, big: bool = True) -> tuple[bytes | None, bytes | None]:
    """One bad record ``(key, value)``: every kind the issue lists (``big``: 1 MB values allowed)."""
    key = KEYS[rng.randrange(len(KEYS))].encode() if rng.random() < 0.7 else b"junk-%d" % rng.randrange(10**9)
    kind = rng.randrange(15 if big else 14)
    if kind == 0:
        return key, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))      # random bytes
    if kind == 1:
        return key, b'{"reward": 1'[:rng.randrange(1, 12)]                             # truncated JSON
    if kind == 2:
        return key, rng.choice([b'{"reward": "1"}', b'{"reward": "true"}', b'{"reward": null}', b'[1]', b'"x"',
                                b'{"reward": [1]}', b'{"reward": {"a": 1}}', b'{"score": 1}'])  # wrong types
    if kind == 3:
        return key, b'{"reward": ' + rng.choice([b"", b"-"]) + b"1" + b"0" * rng.randrange(309, 5000) + b"}"
    if kind == 4:
        return key, rng.choice([b'{"reward": NaN}', b'{"reward": Infinity}', b'{"reward": -Infinity}',
                                b'{"reward": 1e999}'])
    if kind == 5:
        d = rng.choice([rng.randrange(200, 1500), rng.randrange(1500, 100_000)])
        return key, rng.choice([b"[" * d, b'{"reward": ' + b"[" * d + b"]" * d + b"}"])  # deep nesting
    if kind == 6:
        return rng.choice([None, b""]), b'{"reward": 1}'                               # null / empty key
    if kind == 7:
        return b"\xff\xfe" + key, b'{"reward": 1}'                                    # invalid UTF-8 key
    if kind == 8:
        return key, b'{"reward": 0.5}'                                                  # out of the model
    if kind == 9:
        return key, None                                                                # tombstone
    if kind == 10:
        return b"k" * rng.randrange(257, 2000), b'{"reward": 1}'                        # key too long
    if kind == 11:
        return key, b'{"reward": 1}\xff'                                                # invalid UTF-8 value
    if kind == 12:
        return key, b""                                                                 # empty value
    if kind == 13:
        return key, b'{"reward": 1, "reward"'                                           # truncated object
    return key, b'{"reward": "' + b"x" * (1 << 20) + b'"}'                              # 1 MB value


def fuzzed(clean: list[tuple[bytes, bytes, int]], n_bad: int, seed: int, big: int = 3
           ) -> tuple[list[tuple[bytes | None, bytes | None, int | None]], set[int]]:
    """``clean`` with ``n_bad`` bad records interleaved (``big`` of them 1 MB values); each bad record
    carries the timestamp of the clean record before it (so it moves no clock). Returns the stream and
    the positions of the bad records."""
    rng = random.Random(seed)
    where = sorted(rng.sample(range(len(clean) + n_bad), n_bad))
    bigs = set(rng.sample(where, big))
    out: list[tuple[bytes | None, bytes | None, int | None]] = []
    it = iter(clean)
    bad_at = set(where)
    ts = T0
    for i in range(len(clean) + n_bad):
        if i in bad_at:
            k, v = bad_record(rng, big=False) if i not in bigs else (KEYS[0].encode(), b'{"reward": "' + b"x" * (1 << 20) + b'"}')
            out.append((k, v, ts))
        else:
            k, v, ts = next(it)
            out.append((k, v, ts))
    return out, bad_at


def jsonl_line(key: bytes | None, value: bytes | None, ts: int | None) -> bytes:
    """A JSONL line carrying raw key/value bytes (invalid UTF-8 kept as is, read back by surrogateescape)."""
    def text(b: bytes | None) -> str | None:
        return None if b is None else b.decode("utf-8", "surrogateescape")
    obj = {"key": text(key), "value": text(value), "timestamp": ts}
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogateescape")


def kill_9_when_checkpoint_moves(args: list[str], marker: Path, lives: int, spread: int, cwd: Path) -> int:
    """Run ``streamarms run *args`` ``lives`` times, each killed -9 once ``marker`` (the checkpoint file, or
    a ``dir:`` checkpoint's MANIFEST) was written by this life, after ``0.05 * (i % spread)`` s: the kills
    land mid-run at a point that moves on each time. Returns how many lives were killed (the others ended
    on their own)."""
    killed, last = 0, 0.0
    for i in range(lives):
        proc = subprocess.Popen([sys.executable, "-m", "streamarms.cli", "run", *args], cwd=cwd, env=dict(os.environ),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if marker.exists() and marker.stat().st_size and (i == 0 or marker.stat().st_mtime > last):
                break
            time.sleep(0.01)
        time.sleep(0.05 * (i % spread))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        last = marker.stat().st_mtime if marker.exists() else 0.0
    return killed


def kill_9_drill(common: list[str], checkpoint: list[str], marker: Path, tmp_path: Path, *, lives: int,
                 spread: int) -> tuple[dict, dict, int]:
    """The kill -9 drill of a ``streamarms run`` with arguments ``common``: an uninterrupted reference run,
    then ``lives`` runs with the extra arguments ``checkpoint`` killed -9 once ``marker`` moved
    (:func:`kill_9_when_checkpoint_moves`), then one run resumed from the checkpoint to its end. Returns the
    summaries ``(reference, resumed)`` and how many lives were killed."""
    p = run_cli([*common, "--summary-json", str(tmp_path / "ref.json")])
    assert p.returncode == 0, p.stderr[-3000:]
    ref = json.loads((tmp_path / "ref.json").read_text())
    killed = kill_9_when_checkpoint_moves([*common, *checkpoint, "--checkpoint-interval", "0.05", "--fsync"],
                                          marker, lives=lives, spread=spread, cwd=ROOT)
    p = run_cli([*common, *checkpoint, "--summary-json", str(tmp_path / "got.json")])
    assert p.returncode == 0, p.stderr[-3000:]
    return ref, json.loads((tmp_path / "got.json").read_text()), killed


def assert_same_run(got: dict, ref: dict) -> None:
    """The resumed run's summary ends as the uninterrupted one's: the last episode's decision, samples,
    threshold, records and end, and the whole stream's record, sample, skip and invalid counts (a
    record lost or counted twice shows here)."""
    for k in ("outliers", "samples", "threshold", "records", "done"):
        assert got["episodes"][-1].get(k) == ref["episodes"][-1].get(k), k
    assert (got["records"], got["samples"], got["skipped"]) == (ref["records"], ref["samples"], ref["skipped"])
    assert got["invalid"] == ref["invalid"]

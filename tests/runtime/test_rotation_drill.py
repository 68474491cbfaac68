"""Drill: ``streamarms run --follow`` under log rotation, at a rate no logrotate reaches.

A writer appends batches of lines (each with its number) as fast as the run reads them; every ~0.3-1 s the log is
rotated: ``F.N`` shifted to ``F.N+1``, then ``F`` renamed to ``F.1`` and created anew -- and ``F.1`` gzipped to
``F.1.gz`` at once (logrotate's ``compress`` without ``delaycompress``), the same with the oldest removed
(``rotate 20``: removed files free inode numbers) --, or copied to ``F.1`` and truncated (``copytruncate``); or,
followed by a pattern, a new file under the next day's name. Midway the run is killed (-9) and restarted from its
checkpoint while rotations go on. Every line written must be counted exactly once. The trial this drill comes from
lost lines three ways before the rotation chain, the copy found by the bytes read, and the checkpoint digest of the
bytes read (commit f885c40); later, in about one run of ten (retention), a rotation that renamed the next file to
read between its listing and its opening (``test_rotation_renames.py``)."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from streamarms.checkpoint import FileCheckpointStore

pytestmark = pytest.mark.drill

#: the rotations "retention" keeps (removed files free inode numbers the writer's next files get: 1e289f8)
KEEP = 20


def _checkpointed(path: str) -> int:
    try:
        doc = FileCheckpointStore(path).load()
    except Exception:  # (not written yet, or being replaced)
        return -1
    return -1 if doc is None else int(doc["scheduler"]["counters"]["records"])


def _rotate(p: str, mode: str) -> None:
    if mode == "retention" and os.path.exists(f"{p}.{KEEP}.gz"):  # logrotate's rotate KEEP: the oldest removed
        os.remove(f"{p}.{KEEP}.gz")
    for i in range(200, 0, -1):
        for ext in ("", ".gz"):
            if os.path.exists(f"{p}.{i}{ext}"):
                os.replace(f"{p}.{i}{ext}", f"{p}.{i + 1}{ext}")
    if mode in ("rename", "compress", "retention"):
        os.replace(p, p + ".1")
        open(p, "w").close()
        if mode != "rename":  # logrotate's compress without delaycompress: gzip F.1 -> F.1.gz as gzip(1) does
            st = os.stat(p + ".1")
            with open(p + ".1", "rb") as src, gzip.open(p + ".1.gz", "wb") as dst:  # (written in place, in pieces)
                shutil.copyfileobj(src, dst, 1 << 14)
            os.utime(p + ".1.gz", ns=(st.st_atime_ns, st.st_mtime_ns))  # (gzip keeps the file's times)
            os.remove(p + ".1")
    else:
        shutil.copyfile(p, p + ".1")
        with open(p, "r+") as f:
            f.truncate(0)


@pytest.mark.parametrize("mode", ["rename", "copytruncate", "compress", "retention", "daily"])
def test_every_line_is_counted_once_through_rotations_and_a_kill_9(tmp_path, mode):
    # daily: a log under a new name at each "day" (app-0000.log, app-0001.log, ...), followed by its pattern
    p, ck = str(tmp_path / ("app-0000.log" if mode == "daily" else "app.log")), str(tmp_path / "c.ckpt")
    open(p, "w").close()
    given = str(tmp_path / "app-*.log") if mode == "daily" else p
    cmd = [sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", given, "--follow", "--forever",
           "--checkpoint", ck, "--checkpoint-interval", "0.3", "--quiet", "--clock", "wall"]
    err = open(tmp_path / "err.log", "a")
    proc = subprocess.Popen(cmd, stderr=err)
    try:
        end = time.monotonic() + 120
        while _checkpointed(ck) < 0:  # the replay's first checkpoint, before any line: the file is open
            assert proc.poll() is None and time.monotonic() < end, (tmp_path / "err.log").read_text()[-2000:]
            time.sleep(0.05)
        rng = random.Random(7)
        n, rotations, killed = 0, 0, False
        stop_at = time.monotonic() + 12
        while time.monotonic() < stop_at:
            with open(p, "a") as f:
                for _ in range(200):
                    f.write(json.dumps({"arm": f"k{n % 20}", "reward": int(rng.random() < 0.3), "n": n}) + "\n")
                    n += 1
            time.sleep(0.01)
            if rng.random() < 0.03:
                if mode == "daily":  # the next day's file: the writer goes on in it, the old one stays
                    p = str(tmp_path / f"app-{rotations + 1:04d}.log")
                    open(p, "w").close()
                else:
                    _rotate(p, mode)
                rotations += 1
            if not killed and time.monotonic() > stop_at - 6:
                proc.kill()
                proc.wait()
                killed = True
                proc = subprocess.Popen(cmd, stderr=err)  # rotations go on while it starts
        end = time.monotonic() + 120  # a correctness wait, not a speed assertion
        while _checkpointed(ck) != n and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.1)
        got = _checkpointed(ck)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        err.close()
    log = (tmp_path / "err.log").read_text()
    assert rotations >= 5 and killed
    assert got == n, f"{got} of {n} lines counted, {rotations} rotations\n{log[-3000:]}"
    assert "removed before the run read it" not in log, log[-3000:]  # (rotate 20: never that far behind)
    assert proc.returncode == 0, log[-3000:]

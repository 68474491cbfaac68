"""A replay of many files (``--rewards-file 'logs/*.jsonl'``: a year of hourly files) holds them all open: past the
usual soft limit of 1,024 open files it could not start (``OSError: [Errno 24] Too many open files``). The soft
limit is raised up to the hard one; a hard limit too low is an error naming both numbers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")


def _files(folder, n: int) -> None:
    folder.mkdir()
    for d in range(n):
        with open(folder / f"h{d:05d}.jsonl", "w") as f:
            for i in range(20):
                a = (d * 7 + i) % 20
                f.write(json.dumps({"arm": f"k{a}", "reward": int(a == 3 or (d + i) % 10 == 0),
                                    "timestamp": 1_700_000_000_000 + d * 3_600_000 + i * 1000}) + "\n")


def _run(tmp_path, soft: int, hard: int | None) -> subprocess.CompletedProcess:
    def limits() -> None:
        h = resource.getrlimit(resource.RLIMIT_NOFILE)[1] if hard is None else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, h))

    return subprocess.run([sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", str(tmp_path / "logs" / "*.jsonl"),
                           "--summary-json", str(tmp_path / "s.json"), "--episode-interval", "0"],
                          preexec_fn=limits, capture_output=True, text=True, timeout=300)


def test_more_files_than_the_soft_limit_are_read(tmp_path):
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] not in (resource.RLIM_INFINITY,) and \
            resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 2000:
        pytest.skip("this machine's hard limit of open files is below what the test needs")
    _files(tmp_path / "logs", 600)
    proc = _run(tmp_path, 400, None)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "600 files to read at once: the limit of open files raised from 400 to" in proc.stderr
    assert json.loads((tmp_path / "s.json").read_text())["records"] == 600 * 20


def test_a_hard_limit_too_low_is_an_error_naming_both_numbers(tmp_path):
    _files(tmp_path / "logs", 600)
    proc = _run(tmp_path, 400, 500)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "600 files are read at once" in proc.stderr and "may open 500 files at most (ulimit -Hn)" in proc.stderr

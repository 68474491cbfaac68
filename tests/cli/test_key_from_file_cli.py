"""``--key-from-file``: each host writes its own log and its lines do not name it (a plain-text application log, a
folder of logs fetched from each machine, rsyslog's per-host folders). The host was nowhere in the records: no key,
no run. Now the file is the key (a part of its path with ``--key-match``), ``inspect`` suggests it when no field is a
key (and reads the lines of log4j's layout itself, ``--line-pattern app``), and a followed host keeps its key across
its log's rotations."""

from __future__ import annotations

import json
import os
import random
import shlex

import pytest
from test_inspect_cli import _run_suggested

from streamarms.cli import main

PATTERN = r"^(?P<time>\S+ \S+) (?P<level>[A-Z]+)"


def _hosts(folder, n: int = 3_000, hosts: int = 8, slow: int = 5, nested: bool = False, seed: int = 4) -> list[str]:
    """Each host's log (``folder/web-H.log``, or ``folder/web-H/app.log``): ``ERROR`` lines, 30% of host ``slow``'s
    and 3% of the others', each with a stack trace."""
    rng = random.Random(seed)
    paths = []
    for h in range(hosts):
        path = os.path.join(folder, f"web-{h}", "app.log") if nested else os.path.join(folder, f"web-{h}.log")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            for i in range(n):
                bad = rng.random() < (0.3 if h == slow else 0.03)
                f.write(f"2026-11-30 10:{i // 60 % 60:02d}:{i % 60:02d}.{h:03d} {'ERROR' if bad else 'INFO '} "
                        f"[exec-{i % 8}] c.e.Cart - {'request failed' if bad else 'ok'}\n")
                if bad:
                    f.write("java.lang.IllegalStateException: closed\n\tat com.example.Cart.add(Cart.java:42)\n")
        paths.append(path)
    return paths


def _suggested(out: str) -> list[list[str]]:
    commands = [shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run ")]
    assert all(c[-2:] == ["--policy", "cs"] for c in commands), commands  # (the engine: a first file's records decide)
    return [c[:-2] for c in commands]


@pytest.mark.parametrize("nested", [False, True], ids=["logs/web-1.log", "remote/web-1/app.log"])
def test_inspect_suggests_the_file_as_the_key_and_the_run_finds_the_host(tmp_path, capsys, nested):
    _hosts(tmp_path / "logs", nested=nested)
    files = str(tmp_path / "logs" / ("*/app.log" if nested else "*.log"))
    assert main(["inspect", "--line-pattern", PATTERN, files]) == 0
    out = capsys.readouterr().out
    match = r"([^/]+)/[^/]+$" if nested else r"([^/]+)\.log$"
    assert f"keys (values that repeat): none in the records; each of the 8 files is one with --key-from-file " \
           f"--key-match {shlex.quote(match)}\n" in out, out
    first = _suggested(out)[0]
    assert first == ["run", "--rewards-file", files, "--line-pattern", PATTERN, "--key-from-file", "--key-match", match,
                     "--reward-field", "level", "--reward-in", "ERROR", "--timestamp-field", "time"], first
    got = _run_suggested(tmp_path, first, "--policy", "cs", "--k", "1.5", "--max-episodes", "1")
    assert got["flagged"] == ["web-5"] and got["invalid"] == {}, got
    # without a pattern: the lines are an application's (--line-pattern app), the traces' lines part of them
    assert main(["inspect", files]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the lines are an application's text log (a time, then a level: log4j's, logback's, Spring "
                          "Boot's, Python logging's), not JSON: read with --line-pattern app\n"), out
    first = _suggested(out)[0]
    assert first == ["run", "--rewards-file", files, "--line-pattern", "app", "--key-from-file", "--key-match", match,
                     "--reward-field", "level", "--reward-in", "ERROR", "--timestamp-field", "time"], first
    got = _run_suggested(tmp_path, first, "--policy", "cs", "--k", "1.5", "--max-episodes", "1")
    assert got["flagged"] == ["web-5"] and got["invalid"] == {}, got


def test_a_path_the_rule_finds_no_key_in_is_refused_naming_both(tmp_path, capsys):
    _hosts(tmp_path / "logs", n=300, hosts=3)
    (tmp_path / "logs" / "web-9.txt").write_text("2026-11-30 10:00:00.000 INFO x\n")
    dead, summary = tmp_path / "dead.jsonl", tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(tmp_path / "logs" / "web-*"), "--line-pattern", PATTERN,
                 "--key-from-file", "--key-match", r"([^/]+)\.log$", "--reward-field", "level", "--reward-in", "ERROR",
                 "--dead-letter-file", str(dead), "--summary-json", str(summary), "--quiet"]) == 0
    assert json.loads(summary.read_text())["invalid"] == {"key_missing": 1}
    detail = json.loads(dead.read_text())["detail"]
    assert detail == f"the path {str(tmp_path / 'logs' / 'web-9.txt')!r} holds no key for --key-match " \
                     "'([^/]+)\\\\.log$' (--key-from-file)", detail


def test_a_followed_host_keeps_its_key_across_its_log_s_rotation(tmp_path):
    from streamarms.connectors.files import JsonlSource
    from streamarms.connectors.pattern_lines import PatternLines
    from streamarms.runtime.file_key import FileKeySource
    from streamarms.runtime.key_rule import KeyRule

    paths = _hosts(tmp_path, n=50, hosts=2)
    lines = PatternLines(PATTERN)
    src = FileKeySource(JsonlSource(paths, follow=True, tables={p: lines for p in paths}),
                        KeyRule(match=r"([^/]+)\.log$"))
    got = [r.key for _ in range(3) for r in src.poll(0.0)]
    os.replace(paths[0], paths[0] + ".1")
    with open(paths[0], "w") as f:
        f.write("2026-11-30 11:00:00.000 ERROR [exec-1] c.e.Cart - after the rotation\n")
    got += [r.key for _ in range(5) for r in src.poll(0.0)]
    src.close()
    assert src.rotations == 1 and got.count(b"web-0") == 51 and set(got) == {b"web-0", b"web-1"}


@pytest.mark.parametrize("flags, said", [
    (["--key-field", "level"], "--key-from-file and --key-field both name the key: give one"),
    (["--rewards-file", "-"], "give --rewards-file files (not standard input)"),
])
def test_what_cannot_key_by_file_is_one_error_before_the_run(tmp_path, capsys, flags, said):
    paths = _hosts(tmp_path, n=20, hosts=2)
    files = [] if "--rewards-file" in flags else ["--rewards-file", paths[0]]
    assert main(["run", *files, "--line-pattern", PATTERN, "--key-from-file", "--reward-field", "level", *flags]) == 2
    assert said in capsys.readouterr().err


def test_a_restart_may_not_change_what_the_key_is(tmp_path, capsys):
    paths = _hosts(tmp_path, n=400, hosts=3)
    flags = ["run", "--rewards-file", str(tmp_path / "web-*.log"), "--line-pattern", PATTERN, "--reward-field", "level",
             "--reward-in", "ERROR", "--checkpoint", str(tmp_path / "ck"), "--quiet", "--max-episodes", "1"]
    assert main([*flags, "--key-from-file"]) == 0 and paths
    capsys.readouterr()
    assert main([*flags, "--key-from-file", "--key-match", r"([^/]+)\.log$"]) == 2
    assert "--key-match unset (this run: '([^/]+)\\\\.log$')" in capsys.readouterr().err

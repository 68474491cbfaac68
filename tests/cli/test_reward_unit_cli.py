"""``streamarms run --reward-unit ms``: the slow host of a Go service's log, whose latencies are written as
``time.Duration`` texts (``"17.19ms"``, ``"1.2s"``). ``inspect`` suggests the flag and the command runs as printed
and finds the host, in both modes; without the flag every line is refused naming it; a restart may not change it."""

from __future__ import annotations

import json
import random

import pytest
from test_inspect_cli import _run_suggested, _suggested

from streamarms.cli import main


def _go_log(path, n=20_000, seed=5):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            h = f"api-{rng.randrange(12)}"
            ms = rng.lognormvariate(3, 0.5) * (3 if h == "api-4" else 1)
            text = f"{ms * 1000:.0f}µs" if ms < 1 else f"{ms:.3f}ms" if ms < 1000 else f"{ms / 1000:.3f}s"
            f.write(json.dumps({"ts": 1_700_000_000_000 + 100 * i, "host": h, "latency": text},
                               ensure_ascii=False) + "\n")


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever"]],
                         ids=["episodes", "continuous"])
def test_inspect_suggests_the_unit_and_the_command_finds_the_slow_host(tmp_path, capsys, mode):
    p = tmp_path / "api.jsonl"
    _go_log(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert " ms (durations)" in next(line for line in out.splitlines() if line.startswith("  latency")), out
    [command] = [c for c in _suggested(out) if "latency" in c]
    assert command[command.index("--reward-field"):command.index("--reward-range")] == [
        "--reward-field", "latency", "--reward-unit", "ms", "--reward-model", "bounded"], command
    got = _run_suggested(tmp_path, command, *mode)
    assert got["flagged"] == ["api-4"] and not got["invalid"], got


def test_without_the_flag_a_duration_is_refused_naming_it_and_a_restart_may_not_change_it(tmp_path, capsys):
    p, dead, ck = tmp_path / "api.jsonl", tmp_path / "dead.jsonl", str(tmp_path / "c.ckpt")
    _go_log(p, n=300)
    base = ["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "latency", "--max-episodes", "1",
            "--reward-model", "bounded", "--reward-range", "0,200", "--clip"]
    assert main([*base, "--checkpoint", "none", "--dead-letter-file", str(dead)]) == 2  # (every record refused)
    first = json.loads(dead.read_text().splitlines()[0])
    assert first["reason"] == "not_numeric" and "--reward-unit ms" in first["detail"], first
    assert main([*base, "--checkpoint", ck, "--reward-unit", "ms"]) == 0
    capsys.readouterr()
    assert main([*base, "--checkpoint", ck, "--reward-unit", "s"]) == 2
    assert "--reward-unit 'ms' (this run: 's')" in capsys.readouterr().err
    assert main([*base[:-5], "--checkpoint", "none", "--reward-unit", "ms", "--reward-in", "x"]) == 2
    assert "--reward-unit reads durations as numbers" in capsys.readouterr().err

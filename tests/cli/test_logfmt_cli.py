"""``--line-pattern logfmt``: an application's ``key=value`` lines (Go's logfmt, logrus' text lines) read with no
pattern to write. ``inspect`` sees them itself and suggests the flag; the suggested command finds the slow host,
in both modes, with the latencies' units read by ``--reward-unit``; a line without a pair is a dead letter, and a
misspelt key field is named in the run's last lines."""

from __future__ import annotations

import json
import random

import pytest
from test_inspect_cli import _run_suggested, _suggested

from streamarms.cli import main


def _logfmt(path, n=60_000, seed=7):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            h = f"web-{rng.randrange(10)}"
            ms = rng.lognormvariate(3, 0.5) * (2.5 if h == "web-2" else 1)
            err = rng.random() < 0.03
            msg = r'"upstream \"db\" timed out"' if err else '"request done"'
            f.write(f"time=2026-11-30T01:{i // 1200 % 60:02d}:{i // 20 % 60:02d}Z level={'error' if err else 'info'} "
                    f"host={h} msg={msg} latency={ms:.3f}ms\n")


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever"]],
                         ids=["episodes", "continuous"])
def test_inspect_sees_logfmt_and_its_command_finds_the_slow_host(tmp_path, capsys, mode):
    p = tmp_path / "app.log"
    _logfmt(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the lines are key=value pairs (logfmt), not JSON: read with --line-pattern logfmt\n"), out
    assert "'upstream \"db\" timed out'" in out  # (a quoted value unquoted, its escapes read)
    [command] = [c for c in _suggested(out) if "latency" in c]
    assert command[:8] == ["run", "--rewards-file", str(p), "--line-pattern", "logfmt", "--key-field", "host",
                           "--reward-field"] and "--reward-unit" in command and "--timestamp-field" in command, command
    got = _run_suggested(tmp_path, command, *mode)
    assert got["flagged"] == ["web-2"] and not got["invalid"], got


def test_a_line_without_a_pair_is_a_dead_letter_and_a_misspelt_key_field_is_named(tmp_path, capsys):
    p, dead = tmp_path / "app.log", tmp_path / "dead.jsonl"
    _logfmt(p, n=400)
    with open(p, "a") as f:
        f.write("panic: runtime error: index out of range\n")
    base = ["run", "--rewards-file", str(p), "--line-pattern", "logfmt", "--reward-field", "latency", "--reward-unit",
            "ms", "--reward-model", "bounded", "--reward-range", "0,200", "--clip", "--checkpoint", "none"]
    assert main([*base, "--key-field", "host", "--dead-letter-file", str(dead)]) == 0
    [letter] = [json.loads(line) for line in dead.read_text().splitlines()]
    assert letter["reason"] == "bad_row" and "has no key=value pair (--line-pattern logfmt)" in letter["detail"], letter
    capsys.readouterr()
    assert main([*base, "--key-field", "hots"]) == 2  # (every record refused)
    out = capsys.readouterr().out
    assert (f"most records have no field 'hots' (--key-field); streamarms inspect {p} shows what the records hold "
            "and suggests the flags that read them") in out, out
    assert main(["run", "--rewards-file", str(p), "--rewards-format", "csv", "--checkpoint", "none"]) == 2
    assert f"; streamarms inspect {p} suggests the flags that read it" in capsys.readouterr().err

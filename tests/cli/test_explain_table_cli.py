"""``streamarms explain CHECKPOINT --table``: every key's evidence as a text table a person reads (both
modes), ``--top N``; and ``explain ... | head`` ends quietly (exit 141), not as a checkpoint error."""

from __future__ import annotations

import json
import subprocess
import sys

from test_cli_usability import six_key_replay

from streamarms.cli import main
from streamarms.cli.explain_table import MARGIN_LEGEND


def _rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("key "))
    assert lines[-1] == MARGIN_LEGEND  # (the last line says what the margin is)
    return [line.split() for line in lines[at + 1:-1]]


def test_an_episode_checkpoint_as_a_table(tmp_path, capsys):
    p = six_key_replay(tmp_path, 3000)
    ck = tmp_path / "ck.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--checkpoint", str(ck),
                 "--discovery-records", "50"]) == 0
    capsys.readouterr()
    assert main(["explain", str(ck), "--table"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("episode 1 (") and "policy cs" in out and "threshold " in out
    rows = _rows(out)
    assert [r[0] for r in rows][0] == "k5" and len(rows) == 6  # the outlier first, every key once
    ev = json.loads(_explain_json(capsys, ck, "k5"))
    assert rows[0][1] == ev["state"] and float(rows[0][2]) == float(f"{ev['estimate']:.4g}")
    assert main(["explain", str(ck), "--table", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert len(_rows(out)) == 3 and out.rstrip().endswith(f"... 4 more keys (--top)\n{MARGIN_LEGEND}")
    assert main(["explain", str(ck), "k5", "--table"]) == 2
    assert "--table shows every key" in capsys.readouterr().err
    assert main(["explain", str(ck), "--top", "2"]) == 2


def _explain_json(capsys, ck, key: str) -> str:
    assert main(["explain", str(ck), key]) == 0
    return capsys.readouterr().out


def test_a_continuous_checkpoint_as_a_table_with_groups_and_flags(tmp_path, capsys):
    p = six_key_replay(tmp_path, 20_000)
    ck = tmp_path / "ck.json"
    assert main(["run", "--rewards-file", str(p), "--forever", "--k", "1.5", "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    assert main(["explain", str(ck), "--table"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("group default: 6 keys, threshold ")
    rows = _rows(out)
    assert rows[0][:3] == ["k5", "default", "outlier"] and rows[0][-1] == "yes" and len(rows) == 6


def test_explain_into_a_closed_pipe_ends_quietly(tmp_path, capsys):
    p = six_key_replay(tmp_path, 3000)
    ck = tmp_path / "ck.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--checkpoint", str(ck),
                 "--discovery-records", "50"]) == 0
    run = subprocess.run(f"{sys.executable} -m streamarms.cli explain {ck} | head -c 1", shell=True,
                         capture_output=True, text=True, executable="/bin/bash")
    assert run.stdout == "{" and "error" not in run.stderr, run.stderr


def test_run_table_prints_the_same_table_at_the_stop(tmp_path, capsys):
    """``run --table``: the table ``explain --table`` would print of the run's checkpoint, without one (a one-off
    replay of an export), after the summary; in both modes."""
    p = six_key_replay(tmp_path, 3000)
    ck = tmp_path / "ck.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--checkpoint", str(ck), "--discovery-records",
                 "50", "--table"]) == 0
    said = capsys.readouterr().out
    assert main(["explain", str(ck), "--table"]) == 0
    table = capsys.readouterr().out
    assert said.rstrip().endswith(table.rstrip()) and _rows(table)
    assert main(["run", "--rewards-file", str(p), "--forever", "--checkpoint", "none", "--table"]) == 0
    out = capsys.readouterr().out
    assert "group default: 6 keys, threshold " in out and len(_rows(out)) == 6

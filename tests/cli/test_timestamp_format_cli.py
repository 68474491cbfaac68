"""``--timestamp-format FMT``: a time written as a spreadsheet or a log writes it, read by a strptime format.

A labelling tool's export with ``11/14/2023 10:13 PM`` in its time column had every row refused as
``bad_timestamp``: a time is milliseconds, seconds or ISO 8601, and nothing read another form.
"""

from __future__ import annotations

import datetime as dt
import json

from streamarms.cli import main


def _summary(tmp_path, *argv: str, code: int = 0) -> dict:
    summary = tmp_path / "s.json"
    assert main(["run", *argv, "--quiet", "--summary-json", str(summary)]) == code
    return json.loads(summary.read_text())


def _rows(n: int, fmt: str) -> list[tuple[str, str, int]]:
    t0 = dt.datetime(2023, 11, 14, 22, 0, tzinfo=dt.UTC)
    return [((t0 + dt.timedelta(seconds=j)).strftime(fmt), f"w{j % 6}", int(j % 6 == 2 or j % 13 == 0))
            for j in range(n)]


def test_a_spreadsheets_times_are_read_by_the_format(tmp_path):
    p = tmp_path / "labels.csv"
    p.write_text("when,worker,wrong\n" + "".join(f"{t},{w},{r}\n" for t, w, r in _rows(3_000, "%m/%d/%Y %I:%M:%S %p")))
    got = _summary(tmp_path, "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "wrong",
                   "--timestamp-field", "when", code=2)
    assert got["invalid"] == {"bad_timestamp": 3_000}  # (before: the only way it was read)
    got = _summary(tmp_path, "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "wrong",
                   "--timestamp-field", "when", "--timestamp-format", "%m/%d/%Y %I:%M:%S %p", "--episode-interval", "600",
                   "--policy", "cs")
    assert got["invalid"] == {} and got["records"] == 3_000
    assert got["episodes"][0]["outliers"] == ["w2"]


def test_digits_are_read_by_the_format_not_as_milliseconds(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": w, "reward": r, "ts": int(t)}) + "\n" for t, w, r in _rows(50, "%Y%m%d%H%M%S")))
    dead = tmp_path / "dead.jsonl"
    got = _summary(tmp_path, "--rewards-file", str(p), "--timestamp-field", "ts", "--timestamp-format", "%Y%m%d%H%M%S",
                   "--dead-letter-file", str(dead))
    assert got["invalid"] == {}
    assert not dead.exists() or dead.read_text() == ""


def test_a_log_lines_time_group_and_a_time_the_format_does_not_read(tmp_path):
    p = tmp_path / "app.log"
    lines = [f"[{t}] {w} {'ERR' if r else 'ok'}" for t, w, r in _rows(40, "%d/%m/%Y %H:%M:%S")]
    lines.insert(7, "[2023-11-14 22:00:07] w1 ok")
    p.write_text("\n".join(lines) + "\n")
    dead = tmp_path / "dead.jsonl"
    got = _summary(tmp_path, "--rewards-file", str(p), "--line-pattern", r"\[(?P<t>[^\]]+)\] (?P<arm>\w+) (?P<level>\w+)",
                   "--reward-field", "level", "--reward-in", "ERR", "--timestamp-field", "t",
                   "--timestamp-format", "%d/%m/%Y %H:%M:%S", "--dead-letter-file", str(dead))
    assert got["invalid"] == {"bad_timestamp": 1}
    letter = json.loads(dead.read_text())
    assert "'2023-11-14 22:00:07' does not match --timestamp-format '%d/%m/%Y %H:%M:%S'" in letter["detail"]


def test_a_format_without_directives_or_without_files_is_an_error(tmp_path, capsys):
    p = tmp_path / "r.jsonl"
    p.write_text('{"arm": "a", "reward": 1}\n')
    assert main(["run", "--rewards-file", str(p), "--timestamp-format", "yyyy-mm-dd"]) == 2
    assert "strptime format with % directives" in capsys.readouterr().err
    assert main(["run", "--bootstrap-servers", "localhost:1", "--rewards-topic", "t", "--timestamp-format", "%Y"]) == 2
    assert "--timestamp-format say where and how a --rewards-file line's time is" in capsys.readouterr().err


def test_inspect_suggests_the_format_and_takes_no_time_for_a_key(tmp_path, capsys):
    p = tmp_path / "labels.csv"
    p.write_text("when,worker,wrong\n" + "".join(f"{t},{w},{r}\n" for t, w, r in _rows(3_000, "%m/%d/%Y %I:%M %p")))
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "keys (values that repeat): worker (6)\n" in out
    assert "--timestamp-field when --timestamp-format '%m/%d/%Y %I:%M %p'" in out


def test_inspect_suggests_an_iso_time_under_another_name(tmp_path, capsys):
    """A table's time column named neither ``time`` nor ``ts`` (``when``, ``event_time``), in ISO 8601 as databases
    export it: read as it is, so suggested without a format (it was not suggested at all)."""
    p = tmp_path / "clicks.csv"
    p.write_text("user;clicked;when\n" + "".join(f"{w};{r};{t}\n" for t, w, r in _rows(3_000, "%Y-%m-%d %H:%M:%S")))
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "--timestamp-field when" in out and "--timestamp-format" not in out

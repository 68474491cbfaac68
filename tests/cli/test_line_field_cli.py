"""``--line-field``: JSON records that carry a log line in a field (Filebeat's and Vector's ``message``, Fluent Bit's
``log``): the line was one text field, no status or path a key or a reward. ``inspect`` sees the format in the field,
the suggested command finds the outlier endpoint with the line's own fields beside the shipper's, a misspelled field
is one error before the run, and a record the pattern cannot read is a dead letter naming why."""

from __future__ import annotations

import datetime as dt
import json
import random
import shlex

import pytest
from test_inspect_cli import _run_suggested

from streamarms.cli import main

T0 = dt.datetime(2026, 11, 30, 10, tzinfo=dt.UTC)
PATHS = ["/", *(f"/api/{c}" for c in "abcdefghijk")]


def _beats(p, n=20_000, seed=9):
    rng = random.Random(seed)
    with open(p, "w") as f:
        for i in range(n):
            path, t = rng.choice(PATHS), T0 + dt.timedelta(milliseconds=30 * i)
            status = 503 if rng.random() < (0.5 if path == "/api/c" else 0.02) else 200
            line = (f'10.0.0.{rng.randrange(9)} - - [{t.strftime("%d/%b/%Y:%H:%M:%S +0000")}] "GET {path} HTTP/1.1" '
                    f'{status} 12 "-" "curl/8" {rng.expovariate(20):.3f}')
            record = {"@timestamp": t.isoformat(), "message": line, "host": {"name": "lb-1"}}
            if i in (50, 60):  # (a shipper's record of another line, and one without a message)
                record = {"message": "--- MARK ---"} if i == 50 else {"event": "rotated"}
            f.write(json.dumps(record) + "\n")


def test_a_shipper_s_json_records_of_an_access_log(tmp_path, capsys):
    p, dead = tmp_path / "beats.jsonl", tmp_path / "dead.jsonl"
    _beats(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the field message holds an access log in the combined format (nginx's and Apache's "
                          "default): read with --line-field message --line-pattern combined\n"), out
    assert "keys (values that repeat): path (12), remote_addr (9)\n" in out, out
    assert main(["inspect", str(p), "--line-field", "host.name"]) == 2  # (a field of no known format: the pattern)
    assert "--line-field host.name: its text is no log line of a format inspect knows" in capsys.readouterr().err
    first = next(shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run "))
    assert first == ["run", "--rewards-file", str(p), "--line-pattern", "combined", "--line-field", "message",
                     "--key-field", "path", "--reward-field", "status", "--reward-at-least", "500",
                     "--timestamp-field", "@timestamp", "--policy", "cs"], first
    got = _run_suggested(tmp_path, first, "--policy", "cs", "--max-episodes", "1", "--dead-letter-file", str(dead))
    assert got["flagged"] == ["/api/c"] and got["invalid"] == {"bad_row": 2}, got
    details = sorted(json.loads(line)["detail"] for line in dead.read_text().splitlines())
    assert details == ["the field 'message' does not match --line-pattern combined",
                       "the record has no field 'message' (--line-field)"], details
    # the line's own time (a group) instead of the shipper's
    got = _run_suggested(tmp_path, [*first[:-2], "--timestamp-field", "time_local"], "--policy", "cs",
                         "--max-episodes", "1")
    assert got["flagged"] == ["/api/c"] and T0.timestamp() <= got["episodes"][0]["started"] < T0.timestamp() + 60


@pytest.mark.parametrize("flags, said", [
    (["--line-field", "mesage", "--line-pattern", "combined"],
     "none of the first 200 records of {p} has the field 'mesage' (--line-field): their fields are @timestamp, event, "
     "host, message"),
    (["--line-field", "message"], "--line-field names the field of each JSON record that --line-pattern reads: give "
                                  "the pattern"),
    (["--line-field", "message", "--line-pattern", "combined", "--rewards-format", "csv"], "on JSON lines (not "
                                                                                         "--rewards-format csv)"),
    (["--line-pattern", "json"], "--line-pattern json reads a field's text as a JSON line (--line-field log)"),
])
def test_what_cannot_go_with_a_field_s_line_is_one_error_before_the_run(tmp_path, capsys, flags, said):
    p = tmp_path / "beats.jsonl"
    _beats(p, n=300)
    assert main(["run", "--rewards-file", str(p), "--key-field", "path", "--reward-field", "status", *flags]) == 2
    assert said.format(p=p) in capsys.readouterr().err


def test_an_application_s_json_line_that_a_shipper_wrapped_as_text(tmp_path, capsys):
    """Fluent Bit (with no parser) and Vector send an application's JSON line as the text of ``log``/``message``,
    beside the pod it came from: it was one text field -- and ``inspect`` took the records for Docker's json-file,
    dropping the pod. ``--line-pattern json`` reads the text as the JSON line it is."""
    rng = random.Random(3)
    p = tmp_path / "fluent.jsonl"
    with open(p, "w") as f:
        for i in range(12_000):
            pod = f"worker-{rng.randrange(12)}"
            level = "error" if rng.random() < (0.5 if pod == "worker-3" else 0.02) else "info"
            line = json.dumps({"level": level, "msg": f"job {i} done", "ms": rng.randrange(500)})
            f.write(json.dumps({"log": line + "\n", "stream": "stdout", "time": (T0 + dt.timedelta(
                milliseconds=10 * i)).isoformat(), "kubernetes": {"pod_name": pod, "namespace_name": "shop"}}) + "\n")
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the field log holds an application's JSON lines: read with --line-field log --line-pattern "
                          "json\n"), out
    commands = [shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run ")]
    assert commands[0] == ["run", "--rewards-file", str(p), "--line-pattern", "json", "--line-field", "log",
                           "--key-field", "kubernetes.pod_name", "--reward-field", "level", "--reward-in", "error",
                           "--timestamp-field", "time", "--policy", "cs"], commands
    assert not any("--reward-field log" in " ".join(c) for c in commands), commands  # (the line's fields, not it)
    got = _run_suggested(tmp_path, commands[0], "--policy", "cs", "--max-episodes", "1")
    assert got["flagged"] == ["worker-3"] and not got["invalid"], got

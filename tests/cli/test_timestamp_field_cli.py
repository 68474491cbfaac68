"""``--timestamp-field NAME --timestamp-unit ms|s|us|ns``: a log's own time field (``@timestamp`` as an ISO
8601 date-time, ``ts`` in seconds, in microseconds, in nanoseconds) is the stream clock, as ``timestamp`` in ms
is -- the same run to the record; a time that is none is a ``bad_timestamp`` dead letter (naming the unit in
which a number would be a time), ``inspect`` suggests the unit, and the flags need a file."""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest

from streamarms.cli import main

T0 = 1_700_000_000_000


def _log(path, form: str, n: int = 40_000) -> None:
    rng = random.Random(4)
    with open(path, "w") as f:
        for i in range(n):
            k = rng.randrange(10)
            ms = T0 + 50 * i  # 20 records a second: 2,000 s of stream time
            rec = {"host": f"h{k}", "err": int(rng.random() < (0.6 if k == 3 else 0.1))}
            if form == "ms":
                rec["timestamp"] = ms
            elif form == "iso":
                rec["@timestamp"] = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")
            elif form == "s":
                rec["ts"] = ms / 1000
            else:  # (us, ns: integers, as OpenTelemetry's timeUnixNano; the ms below the ms are not in it)
                rec["ts"] = ms * {"us": 1000, "ns": 1_000_000}[form] + i * 7 % 1000
            f.write(json.dumps(rec) + "\n")


def _run(tmp_path, form: str, *flags: str) -> dict:
    p, summary = tmp_path / f"{form}.jsonl", tmp_path / f"{form}.json"
    _log(p, form)
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--key-field", "host", "--reward-field",
                 "err", "--policy", "cs", "--forever", "--mode", "episodes", "--episode-interval", "300",
                 "--summary-json", str(summary), "--quiet", *flags]) == 0
    return json.loads(summary.read_text())


@pytest.fixture
def reference(tmp_path):
    return _run(tmp_path, "ms")


def test_the_time_fields_of_other_logs_give_the_same_episodes(tmp_path, reference):
    assert len(reference["episodes"]) >= 4  # (stream time moves: an episode every 300 s)
    iso = _run(tmp_path, "iso", "--timestamp-field", "@timestamp")
    secs = _run(tmp_path, "s", "--timestamp-field", "ts", "--timestamp-unit", "s")
    micros = _run(tmp_path, "us", "--timestamp-field", "ts", "--timestamp-unit", "us")
    nanos = _run(tmp_path, "ns", "--timestamp-field", "ts", "--timestamp-unit", "ns")
    for got in (iso, secs, micros, nanos):
        assert got["episodes"] == reference["episodes"] and not got["invalid"]


def test_a_time_that_is_none_is_a_dead_letter_and_the_flags_need_a_file(tmp_path, capsys):
    p, dead = tmp_path / "log.jsonl", tmp_path / "dead.jsonl"
    p.write_text('{"host": "h1", "err": 0, "ts": "yesterday"}\n{"host": "h1", "err": 0, "ts": -3}\n')
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "err", "--timestamp-field",
                 "ts", "--timestamp-unit", "s", "--dead-letter-file", str(dead), "--checkpoint", "none"]) == 2
    details = [json.loads(x)["detail"] for x in dead.read_text().splitlines()]
    assert len(details) == 2 and all("is not a time in seconds" in d for d in details)
    assert main(["run", "--bootstrap-servers", "localhost:1", "--rewards-topic", "t", "--timestamp-field", "ts"]) == 2
    assert "a Kafka record's time is its own" in capsys.readouterr().err


@pytest.mark.parametrize("form", ["s", "us", "ns"])
def test_inspect_suggests_the_unit_and_a_time_in_another_unit_names_it(tmp_path, capsys, caplog, form):
    p, dead = tmp_path / "log.jsonl", tmp_path / "dead.jsonl"
    _log(p, form, n=500)
    assert main(["inspect", str(p)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(f"--timestamp-field ts --timestamp-unit {form} --policy cs")
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "err", "--timestamp-field",
                 "ts", "--dead-letter-file", str(dead), "--checkpoint", "none"]) == (0 if form == "s" else 2)
    # (us and ns: every record refused, as too far ahead; s read as ms: 1970, read, a warning)
    err = caplog.text
    if form == "s":  # (read as ms, a time in s is one of January 1970: no record is refused, the clock is slow)
        assert not dead.exists() or not dead.read_text()
        assert "the records' times read in ms are in 1970 (" in err and "give --timestamp-unit s" in err, err
        return
    first = json.loads(dead.read_text().splitlines()[0])["detail"]
    assert first.endswith(f": --timestamp-unit {form}") and "2023-11-14T22:13:20Z" in first, first
    assert "times read in" not in err


def test_a_timestamp_field_in_seconds_is_suggested_with_its_unit(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    p.write_text("".join(json.dumps({"host": f"h{i % 5}", "err": i % 7 == 0, "timestamp": 1_700_000_000 + i}) + "\n"
                         for i in range(300)))
    assert main(["inspect", str(p)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("--timestamp-field timestamp --timestamp-unit s --policy cs")

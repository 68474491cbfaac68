"""A JSONL line the source cannot read is refused with its own reason (``not_json``, ``not_object``,
``bad_timestamp``), reaches the dead letters, and changes nothing else: the run equals the run without it.
A byte order mark at the start of a file loses no record."""

from __future__ import annotations

import codecs
import json
import random

import pytest

from streamarms.cli.run import main as run_main
from streamarms.connectors.files import MAX_TIMESTAMP_MS, JsonlSource
from streamarms.connectors.line_parse import line_by_line, shorthand_chunk, to_record
from streamarms.connectors.memory import MemoryBroker, MemoryDeadLetterSink
from streamarms.sim import zww17_example

T0 = 1_700_000_000_000


def good_lines(n: int = 3_000, seed: int = 7) -> list[str]:
    means = zww17_example()
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a = rng.randrange(len(means))
        out.append(json.dumps({"arm": f"k{a}", "reward": int(rng.random() < means[a]), "timestamp": T0 + i}))
    return out


def run(tmp_path, name: str, data: bytes) -> tuple[dict, list[dict]]:
    p, dl, s = tmp_path / f"{name}.jsonl", tmp_path / f"{name}-dl.jsonl", tmp_path / f"{name}-s.json"
    p.write_bytes(data)
    assert run_main(["--rewards-file", str(p), "--dead-letter-file", str(dl), "--max-episodes", "1", "--quiet",
                     "--summary-json", str(s)]) == 0
    dead = [json.loads(x) for x in dl.read_text().splitlines()] if dl.exists() else []
    return json.loads(s.read_text()), dead


def decisions(summary: dict) -> tuple:
    eps = summary["episodes"] or [summary["unfinished_episode"]]
    return summary["samples"], [(e["samples"], e["outliers"], e["started"], e["ended"]) for e in eps]


BAD_STAMPS = ['"abc"', "true", "null", "NaN", "-5", "-0.5", "1e300", "1" + "0" * 39, "[1]", '{"ms": 1}',
              str(MAX_TIMESTAMP_MS + 1), '"2026-11-25"', '"14:00:00"', '"-5"', '"1969-12-31T23:59:59Z"',
              '"2026-13-01T00:00:00Z"']


def test_bad_timestamps_are_dead_lettered_and_move_neither_the_clock_nor_the_samples(tmp_path):
    """Each bad timestamp was dropped silently (the record used without one) or, 1e300 and a 40-digit integer,
    moved the stream clock to ~1e297 s (the episode's end, want-timeouts and samples changed)."""
    good = good_lines()
    ref, none = run(tmp_path, "good", ("\n".join(good) + "\n").encode())
    assert none == []
    lines = list(good)
    for j, ts in enumerate(BAD_STAMPS):  # both line forms, keys the stream knows, spread over the episode
        form = ('{"arm": "k3", "reward": 1, "timestamp": %s}' if j % 2 else
                '{"key": "k3", "value": {"reward": 1}, "timestamp": %s}') % ts
        lines.insert(1_200 + 100 * j, form)
    got, dead = run(tmp_path, "bad", ("\n".join(lines) + "\n").encode())
    assert [d["reason"] for d in dead] == ["bad_timestamp"] * len(BAD_STAMPS)
    assert all(d["key"] == "k3" and "not a time in milliseconds" in d["detail"] for d in dead)
    assert got["invalid"] == {"bad_timestamp": len(BAD_STAMPS)} and got["records"] == ref["records"] + len(BAD_STAMPS)
    assert decisions(got) == decisions(ref)


def test_a_line_stamped_years_ahead_is_refused_and_later_episodes_still_start(tmp_path):
    """One line stamped ten years after this machine's clock (a host's wrong clock, a typo in the year) moved the
    stream clock there for good: a replay asked for two episodes stopped after the first, every record after it
    skipped (``--episode-interval`` after it never came). It is refused as ``bad_timestamp`` now, as a Kafka
    record is (``--max-timestamp-ahead``, default 15 h for a file, an hour for Kafka; 0: no limit)."""
    import time
    t0 = int(time.time() * 1000) - 86_400_000  # yesterday, a record every 100 ms
    lines = [json.loads(x) | {"timestamp": t0 + 100 * i} for x, i in zip(good_lines(45_000), range(45_000))]
    lines[50]["timestamp"] = t0 + 10 * 365 * 86_400_000  # (before the first episode starts)
    p, dl, s = tmp_path / "ahead.jsonl", tmp_path / "dl.jsonl", tmp_path / "s.json"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    flags = ["--rewards-file", str(p), "--policy", "cs", "--max-episodes", "2", "--episode-interval", "60", "--quiet",
             "--summary-json", str(s), "--dead-letter-file", str(dl)]
    assert run_main(flags) == 0
    got = json.loads(s.read_text())
    [dead] = [json.loads(x) for x in dl.read_text().splitlines()]
    assert dead["reason"] == "bad_timestamp" and "after this machine's clock" in dead["detail"], dead
    assert len(got["episodes"]) == 2 and got["invalid"] == {"bad_timestamp": 1}, got["episodes"]
    dl.unlink()
    assert run_main([*flags, "--max-timestamp-ahead", "0"]) == 0  # (no limit: the line moves the clock, as before)
    got = json.loads(s.read_text())
    assert len(got["episodes"]) == 1 and not (dl.exists() and dl.read_text())


def test_a_log_of_local_times_east_of_utc_is_read_and_an_hour_limit_says_why_it_refuses(tmp_path):
    """A table whose times are local, written without their zone (``2026-12-01 08:00:00`` in Tokyo), is read as UTC:
    today's lines read as stamped up to 14 h ahead, and with Kafka's hour every one was refused (``bad_timestamp``:
    the run said no episode started). A file's lines may be 15 h ahead unless ``--max-timestamp-ahead`` says; a limit
    given that refuses them says that a time without its zone is read as UTC."""
    import datetime as dt

    start = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(hours=9)  # (Tokyo's clock, written naive)
    r = random.Random(5)
    rows = ["time,host,err"] + [f"{(start + dt.timedelta(milliseconds=100 * i)).isoformat(' ', 'milliseconds')},"
                                f"h{i % 7},{int(r.random() < (0.5 if i % 7 == 3 else 0.05))}" for i in range(20_000)]
    p, dl, s = tmp_path / "tokyo.csv", tmp_path / "dl.jsonl", tmp_path / "s.json"
    p.write_text("\n".join(rows) + "\n")
    flags = ["--rewards-file", str(p), "--key-field", "host", "--reward-field", "err", "--timestamp-field", "time",
             "--policy", "cs", "--quiet", "--checkpoint", "none", "--summary-json", str(s), "--dead-letter-file", str(dl)]
    assert run_main(flags) == 0
    got = json.loads(s.read_text())
    assert got["invalid"] == {} and got["records"] == 20_000 and got["samples"] > 0, got["invalid"]
    assert run_main([*flags, "--max-timestamp-ahead", "3600"]) == 2  # (every record refused)
    got = json.loads(s.read_text())
    assert got["invalid"] == {"bad_timestamp": 20_000}
    detail = json.loads(dl.read_text().splitlines()[0])["detail"]
    assert "9.0 h after this machine's clock" in detail and "a time written without its zone is read as UTC" in detail


def test_timestamps_from_0_to_the_year_9999_are_times_and_the_fast_paths_agree():
    for ts, want in [(0, 0), (MAX_TIMESTAMP_MS, MAX_TIMESTAMP_MS), (1.5, 1), (T0 + 0.9, T0)]:
        r = to_record("f", 0, json.dumps({"arm": "a", "reward": 1, "timestamp": ts}))
        assert (r.key, r.timestamp) == (b"a", want)
    clean = [json.dumps({"arm": "a", "reward": 1, "timestamp": T0 + i}) + "\n" for i in range(20)]
    for ts in (-1, MAX_TIMESTAMP_MS + 1):  # an integer out of range spoils the C-level chunk; the line loop refuses it
        lines = clean[:7] + [json.dumps({"arm": "b", "reward": 1, "timestamp": ts}) + "\n"] + clean[7:]
        assert shorthand_chunk("f", lines, 0) is None
        recs = line_by_line("f", lines, 0)
        assert [r.offset for r in recs if isinstance(r.key, bytes)] == [i for i in range(21) if i != 7]
        assert recs[7].key.reason == "bad_timestamp" and recs[7].key.raw == b"b" and recs[7].timestamp is None


def test_iso_8601_timestamps_are_times_and_the_run_equals_the_run_with_milliseconds(tmp_path):
    """A JSON logger's ISO 8601 date-times (structlog's ``timestamp``) were refused line by line as
    ``bad_timestamp``; they are the same times as milliseconds, in UTC unless they say otherwise."""
    import datetime as dt

    def iso(ms: int, i: int) -> str:
        t = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
        forms = [t.isoformat().replace("+00:00", "Z"), t.isoformat(), t.replace(tzinfo=None).isoformat(sep=" "),
                 t.astimezone(dt.timezone(dt.timedelta(hours=-5))).isoformat()]
        return forms[i % 4]
    good = good_lines()
    as_iso = []
    for i, line in enumerate(good):
        obj = json.loads(line)
        obj["timestamp"] = iso(obj["timestamp"] * 1000 - T0 * 999, i)  # (whole seconds apart: isoformat's ms)
        as_iso.append(json.dumps(obj))
    as_ms = [json.dumps(dict(json.loads(x), timestamp=json.loads(y)["timestamp"] * 1000 - T0 * 999))
             for x, y in zip(as_iso, good)]
    ref, none = run(tmp_path, "ms", ("\n".join(as_ms) + "\n").encode())
    got, dead = run(tmp_path, "iso", ("\n".join(as_iso) + "\n").encode())
    assert none == [] and dead == [] and decisions(got) == decisions(ref)
    assert to_record("f", 0, '{"arm": "a", "timestamp": "2023-11-14T22:13:20.123Z"}').timestamp == T0 + 123


def test_lines_that_are_not_json_objects_get_their_own_reasons(tmp_path):
    """They were all refused as 'key_missing: record has no key'."""
    good = good_lines(1_000)
    junk = {"not json": "not_json", '{"arm": "k1", "reward": 1, "timestamp": 5} trailing': "not_json",
            '{"arm": "k1", "reward": 1': "not_json", "[1, 2]": "not_object", '"k1"': "not_object", "42": "not_object",
            "null": "not_object", '{"arm": true, "reward": 1}': "key_missing"}
    lines = list(good)
    for j, line in enumerate(junk):
        lines.insert(100 + 50 * j, line)
    got, dead = run(tmp_path, "junk", ("\n".join(lines) + "\n").encode())
    assert [(d["reason"], d["value"]) for d in dead] == [(r, line) for line, r in junk.items()]
    assert all(d["key"] is None for d in dead)
    assert "not JSON" in dead[0]["detail"] and dead[3]["detail"] == "the line is JSON but not an object: an array"
    assert dead[-1]["detail"] == "the key is a boolean, not a string or an integer"


def test_a_byte_order_mark_at_the_start_of_a_file_loses_no_record(tmp_path):
    good = ("\n".join(good_lines()) + "\n").encode()
    ref, _ = run(tmp_path, "plain", good)
    got, dead = run(tmp_path, "bom", codecs.BOM_UTF8 + good)
    assert dead == [] and got["records"] == ref["records"] and decisions(got) == decisions(ref)
    p = tmp_path / "bom.jsonl"  # and a resumed replay counts lines as before: the mark is no line
    src = JsonlSource([str(p)], resume={f"{p}:0": [5, None]})
    assert [r.offset for r in src.poll()][:2] == [5, 6]


@pytest.mark.parametrize("line", ["not json", '{"key": "k1", "value": {"reward": 1}, "timestamp": -1}'])
def test_a_refused_line_reaches_a_topic_dead_letter_sink_with_the_key_it_had(tmp_path, line):
    p = tmp_path / "r.jsonl"
    p.write_text(line + "\n")
    rec = JsonlSource([str(p)]).poll()[0]
    broker = MemoryBroker()
    MemoryDeadLetterSink(broker, "dlq").send(rec, rec.key.reason, rec.key.detail)
    (out,) = broker.records("dlq")
    assert out.key == (None if line == "not json" else b"k1") and out.value == line.encode()


def test_a_zstd_file_is_refused_with_the_command_that_reads_it(tmp_path, capsys):
    """A compressed log read as text was one long run of ``not_json`` dead letters; gzip, bzip2 and xz are now read as
    they are (``tests/runtime/test_compressed_files.py``), zstd (no decoder in Python's standard library) is a clear
    error (exit 2) naming its pipe."""
    p = tmp_path / "r.jsonl.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 40)
    assert run_main(["--rewards-file", str(p), "--checkpoint", "none"]) == 2
    err = capsys.readouterr().err
    assert "is zstd-compressed" in err and f"zstdcat {p} | streamarms run --rewards-file -" in err, err

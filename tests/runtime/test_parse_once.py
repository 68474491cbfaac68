"""The JSONL source parses each line once (``JsonlRecord.parsed``; the codec does not parse the value
again): the same run -- summary, alerts, dead letters (which record, which reason) -- as parsing the value
twice, on a file of good shorthand lines, ``key``/``value`` lines, and every kind of bad line."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.cli.run import main as run_main_argv
from streamarms.connectors.files import JsonlSource
from streamarms.connectors.line_parse import to_record
from streamarms.models import BernoulliModel
from streamarms.runtime import RewardCodec


def _lines(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    means = [0.2] * 10 + [0.9]
    bad = ['{"arm": "k001", "reward": "1", "timestamp": %d}', '{"arm": "k002", "reward": 2, "timestamp": %d}',
           '{"arm": "k003", "reward": NaN, "timestamp": %d}', '{"arm": "k004", "reward": 1' + "0" * 400 + ', "timestamp": %d}',
           '{"arm": "k005", "reward": true, "timestamp": %d}', 'not json %d', '[%d]',
           '{"arm": "k006", "reward": 1, "x": [' + ",".join(["[]"] * 1100) + '], "timestamp": %d}',
           '{"arm": "k007", "reward": 1, "pad": "' + "y" * 2100 + '", "timestamp": %d}',
           '{"key": "k008", "value": {"reward": 1.5}, "timestamp": %d}', '{"key": "k009", "value": "{\\"reward\\": 1}", "timestamp": %d}',
           '{"key": "k000", "value": [1], "timestamp": %d}', '{"arm": "k001", "reward": 1, "timestamp": 1' + "0" * 400 + '} %d',
           '{"arm": "k001", "reward": 1, "timestamp": 1' + "0" * 400 + ', "n": %d}', '{"arm": "\\udc80", "reward": 1, "t": %d}']
    out = []
    for i in range(n):
        t = 1_700_000_000_000 + i
        if rng.random() < 0.03:
            out.append(rng.choice(bad) % t)
            continue
        a = rng.randrange(len(means))
        x = int(rng.random() < means[a])
        if rng.random() < 0.3:
            out.append(json.dumps({"key": f"k{a:03d}", "value": {"reward": x}, "timestamp": t}))
        else:
            out.append(json.dumps({"arm": f"k{a:03d}", "reward": x, "timestamp": t}))
    return out


def test_parsed_values_are_what_the_codec_would_parse(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(_lines(3000, 1)) + "\n")
    recs = JsonlSource([str(p)], max_records=10_000).poll()
    assert sum(r.parsed is not None for r in recs) > 2500 and any(r.parsed is None for r in recs)
    codec = RewardCodec(model=BernoulliModel())
    values = [r.value for r in recs]
    assert codec.rewards(values, [r.parsed for r in recs]) == codec.rewards(values)
    for r in recs:
        if r.parsed is not None:
            assert json.loads(r.value) == r.parsed


def test_a_huge_timestamp_is_a_refused_record_not_a_crash():
    r = to_record("f", 0, '{"arm": "a", "reward": 1, "timestamp": 1' + "0" * 400 + "}\n")
    assert r.timestamp is None and r.key.reason == "bad_timestamp" and r.key.raw == b"a"
    assert "an integer of 401 digits" in r.key.detail


@pytest.mark.parametrize("feed", ["planned", "all"])
def test_run_parsing_once_equals_parsing_twice(tmp_path, monkeypatch, feed):
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(_lines(40_000, 2)) + "\n")

    def run(tag: str) -> tuple[dict, str, str]:
        alerts, dlq, summary = (tmp_path / f"{tag}-{x}" for x in ("alerts.jsonl", "dlq.jsonl", "s.json"))
        args = ["--rewards-file", str(p), "--alerts-file", str(alerts), "--dead-letter-file", str(dlq),
                "--checkpoint", "none", "--forever", "--mode", "episodes", "--episode-interval", "0", "--discovery-records", "500",
                "--passive-feed", feed, "--quiet", "--summary-json", str(summary)]
        assert run_main_argv(args) == 0
        return json.loads(summary.read_text()), alerts.read_text(), dlq.read_text()

    once = run("once")
    monkeypatch.setattr(JsonlSource, "decoded_values", False)
    twice = run("twice")
    s1, s2 = once[0], twice[0]
    for s in (s1, s2):
        s.pop("elapsed_seconds", None), s.pop("records_per_second", None)
    assert once[1] == twice[1] and once[2] == twice[2]
    assert s1 == s2
    assert len(s1["episodes"]) >= 2 and once[1] and len(once[2].splitlines()) > 500  # not vacuous


def test_a_clean_chunk_in_c_level_passes_equals_the_line_loop():
    """``shorthand_chunk`` (a poll's lines in C-level passes) gives the records ``line_by_line`` gives, or
    ``None`` -- whichever line spoils the chunk and wherever it sits; the source then reads line by line."""
    from streamarms.connectors.line_parse import line_by_line, shorthand_chunk

    clean = [json.dumps({"arm": f"k{i % 7:03d}", "reward": i % 2, "timestamp": 1_700_000_000_000 + i}) + "\n"
             for i in range(50)]
    clean[-1] = clean[-1].rstrip("\n")  # a last line without its newline
    assert shorthand_chunk("f", clean, 10) == line_by_line("f", clean, 10)
    assert shorthand_chunk("f", [], 3) == []
    rng = random.Random(4)
    spoilers = [line + "\n" for line in _lines(400, seed=9) if '"key"' in line or "arm" not in line] + [
        "\n", "   \n", '{"arm": 5, "reward": 1, "timestamp": 1}\n', '{"arm": "a", "reward": 1, "timestamp": 1.5}\n',
        '{"arm": "a", "reward": 1, "timestamp": true}\n', '{"arm": "a", "reward": 1}\n', '{"arm": "\\udc80", "timestamp": 1}\n',
        '{"arm": "a", "reward": 1, "timestamp": 1, "pad": "' + "z" * 2100 + '"}\n']
    for bad in spoilers:
        lines = list(clean)
        lines.insert(rng.randrange(len(lines) + 1), bad)
        fast = shorthand_chunk("f", lines, 10)
        assert fast is None or fast == line_by_line("f", lines, 10), bad
    assert all(shorthand_chunk("f", [bad], 0) is None for bad in spoilers[-8:])

"""Issue 10: no record, broker event or checkpoint can crash, stall or subvert the daemon.

Unit-level regressions (each failed before its fix); the drills over many fuzzed records and real
process kills are in ``tests/test_drills.py`` and ``tests/kafka/test_drills_kafka.py``.
"""

from __future__ import annotations

import json

import pytest

from streamarms.connectors.files import JsonlDeadLetterSink, JsonlSource
from streamarms.scheduler import EventClock, InvalidRecord, RewardCodec, Scheduler, SchedulerConfig, _ExamplePolicy

POISON = {
    "huge integer": (b'{"reward": 1' + b"0" * 400 + b"}", "not_finite"),
    "huge negative integer": (b'{"reward": -1' + b"0" * 400 + b"}", "not_finite"),
    # json.loads parses it or raises RecursionError, depending on the Python build: refused either way
    "deep nesting": (b'{"reward": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", ("not_json", "not_numeric")),
    "deep nesting, truncated": (b"[" * 100_000, "not_json"),
    "NaN": (b'{"reward": NaN}', "not_finite"),
    "Infinity": (b'{"reward": -Infinity}', "not_finite"),
    "1e999": (b'{"reward": 1e999}', "not_finite"),
    "invalid UTF-8": (b'{"reward": "\xff"}', "not_json"),
    "lone surrogate escape": (b'{"reward": "\\ud800"}', "not_numeric"),
    "truncated": (b'{"reward": 0.', "not_json"),
    "boolean": (b'{"reward": true}', "not_numeric"),
    "empty": (b"", "not_json"),
    "1 MB string": (b'{"reward": "' + b"x" * (1 << 20) + b'"}', "not_numeric"),
}


@pytest.mark.parametrize("name", sorted(POISON))
def test_poison_values_are_refused_with_a_reason_never_raised(name):
    value, reason = POISON[name]
    with pytest.raises(InvalidRecord) as e:
        RewardCodec(model=None).reward("a", value)
    assert e.value.reason in (reason if isinstance(reason, tuple) else (reason,)), e.value


def scheduler(**cfg):
    clock = EventClock()
    s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=clock,
                  config=SchedulerConfig(discovery_records=5, **cfg))
    return s, clock


def test_a_bad_record_with_a_new_key_takes_no_arm_slot():
    s, _ = scheduler(max_arms=3, min_arms=3)
    for i in range(100):  # junk under ever new keys: none becomes an arm
        bad = s.offer(b"junk-%d" % i, [b"not json", b'{"reward": NaN}', b"{}", None][i % 4])
        assert bad is not None and bad.reason != "too_many_arms", bad
    assert s.known_arms == [] and s.snapshot()["arms"] == {}
    for key in (b"a", b"b", b"c"):  # the slots are still free for real keys
        assert s.offer(key, b'{"reward": 0}') is None
    assert s.known_arms == ["a", "b", "c"]
    assert s.offer(b"d", b'{"reward": 0}').reason == "too_many_arms"


def test_jsonl_poison_lines_become_refused_records(tmp_path):
    p = tmp_path / "in.jsonl"
    lines = [
        b'{"arm": "a", "reward": 1, "timestamp": 5}',
        b"[" * 100_000,                                       # RecursionError in json.loads
        b'{"arm": "b", "reward": 1, "timestamp": 1e999}',     # timestamp inf: int() overflows
        b'{"arm": "c", "reward": 1, "timestamp": NaN}',
        b'{"key": "\xff\xfe", "value": {"reward": 1}}',       # invalid UTF-8 key
        b'{"key": "\\ud800", "value": {"reward": 1}}',        # JSON escape of a lone surrogate
        b'{"key": "d", "value": {"reward": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
        b'{"arm": "e", "reward": 1' + b"0" * 400 + b"}",
    ]
    p.write_bytes(b"\n".join(lines) + b"\n")
    src = JsonlSource([str(p)], ordered=False)
    recs = []
    while not src.exhausted:
        recs += src.poll()
    assert len(recs) == len(lines)
    codec = RewardCodec(model=None)
    out = []
    for r in recs:
        try:
            out.append(codec.reward(codec.arm(r.key), r.value))
        except InvalidRecord as e:
            out.append(e.reason)
    assert out == [1.0, "key_missing", 1.0, 1.0, "key_not_utf8", "key_not_utf8", "key_missing", "not_finite"]
    dl = tmp_path / "dl.jsonl"
    sink = JsonlDeadLetterSink(str(dl))
    for r in recs[4:6]:
        sink.send(r, "key_not_utf8", "x")
    sink.close()
    assert [json.loads(x)["key"] for x in dl.read_text().splitlines()] == ["\\xff\\xfe", "\\xed\\xa0\\x80"]

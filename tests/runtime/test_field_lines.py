""":class:`FieldLines`: a JSON record's log line read by a pattern -- the groups join the record's fields (the
wrapper keeps a name both have), its text written as it was, the key and time the wrapper's else the line's, and a
record whose field is missing, no text, blank, not read, or of a bad time a dead letter naming why."""

from __future__ import annotations

import json

import pytest

from streamarms.connectors.field_lines import FieldLines
from streamarms.connectors.line_time import LineTime

ACCESS = '10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] "GET /api/cart HTTP/1.1" 503 12 "-" "curl/8.0"'


def _line(**fields) -> str:
    return json.dumps(fields) + "\n"


def test_the_groups_join_the_wrapper_s_fields_which_keep_their_names_and_text():
    t = FieldLines("combined", "message", LineTime("time_local"))
    recs = t.records("b.jsonl", [_line(message=ACCESS, status="the wrapper's", ms=1.50).replace("1.5", "1.50"),
                                 _line(message=ACCESS, note="x" * 5000), _line(message=ACCESS, arm="eu")], 0)
    first = recs[0]
    assert first.parsed["status"] == "the wrapper's" and first.parsed["path"] == "/api/cart"
    assert first.value.startswith(json.dumps({"message": ACCESS})[:-1].encode() + b', "status": "the wrapper\'s", '
                                  b'"ms": 1.50,"remote_addr":"10.0.0.7"'), first.value
    assert first.timestamp == 1700000000000 and first.key is None
    assert recs[1].parsed is None and json.loads(recs[1].value)["path"] == "/api/cart"  # (too long to keep parsed)
    assert recs[2].key == b"eu"
    keyed = FieldLines(r"^(?P<arm>\S+) (?P<ms>\d+)", "log").records("b.jsonl", [_line(log="web-1 12")], 0)[0]
    assert keyed.key == b"web-1" and keyed.parsed == {"log": "web-1 12", "arm": "web-1", "ms": "12"}


def test_what_cannot_be_read_is_a_dead_letter_naming_why():
    t = FieldLines("combined", "message", LineTime("time_local"))
    bad_time = ACCESS.replace("14/Nov/2023:22:13:20 +0000", "99/Zzz/2023:99:99:99 +0000")
    recs = t.records("b.jsonl", [_line(message=7), _line(message="  "), _line(msg="x"), _line(message="--- MARK ---"),
                                 _line(message=bad_time), "not json\n", "\n", "[1]\n"], 0)
    got = [(r.offset, r.key.reason, r.key.detail) for r in recs]
    assert got[:4] == [
        (0, "bad_row", "the field 'message' is an integer, not a log line's text (--line-field)"),
        (1, "bad_row", "the field 'message' is blank"),
        (2, "bad_row", "the record has no field 'message' (--line-field)"),
        (3, "bad_row", "the field 'message' does not match --line-pattern combined")], got
    assert got[4][1] == "bad_timestamp" and [g[:2] for g in got[5:]] == [(5, "not_json"), (7, "not_object")]
    assert recs[3].value == _line(message="--- MARK ---").rstrip("\n").encode()  # (the record as it came)


def test_a_key_and_value_line_whose_value_is_no_object_is_passed_on_for_the_codec_to_refuse():
    """A JSON line may be ``{"key": .., "value": ..}``: a value that is a text, null or a list is no record of fields;
    reading its field raised (the run would have stopped), and the container's pod field was spliced into a text."""
    from streamarms.connectors.container_lines import ContainerLines
    from streamarms.runtime.codec import RewardCodec
    from streamarms.runtime.records import InvalidRecord

    lines = ['{"key": "a", "value": "GET /"}\n', '{"key": "a", "value": null}\n', '{"key": "a", "value": [1]}\n']
    recs = FieldLines("combined", "message").records("b.jsonl", lines, 0)
    assert [(r.key, r.value) for r in recs] == [(b"a", b"GET /"), (b"a", None), (b"a", b"[1]")]
    pods = ContainerLines().records("/var/log/pods/ns_web-1_u1/app/0.log", [
        f"2023-11-14T22:13:20Z stdout F {line}" for line in lines], 0)
    assert [r.value for r in pods] == [b"GET /", None, b"[1]"]
    reasons = []
    for r in recs:
        try:
            RewardCodec().parse("a", r.value)
        except InvalidRecord as e:
            reasons.append(e.reason)
    assert reasons == ["not_json", "value_missing", "not_object"]


def test_a_json_line_inside_a_field_is_read_as_a_json_line():
    from streamarms.connectors.pattern_lines import PatternLines
    from streamarms.errors import ConfigError

    inner = json.dumps({"level": "error", "ts": 1700000000123, "kubernetes": "the line's"})
    t = FieldLines("json", "log", LineTime("ts"))
    recs = t.records("f.jsonl", [_line(log=inner + "\n", kubernetes={"pod_name": "web-1"}), _line(log="GET / 200"),
                                 _line(log="[1]")], 0)
    assert recs[0].parsed["level"] == "error" and recs[0].parsed["kubernetes"] == {"pod_name": "web-1"}
    assert recs[0].timestamp == 1700000000123
    assert [(r.key.reason, r.key.detail[:33]) for r in recs[1:]] == [
        ("not_json", "the field 'log' is not JSON (JSON"), ("not_object", "the field 'log' is JSON but not a")]
    assert t.header is None and t.whole('{"log": "{}"}') and not t.whole('{"log": ')
    with pytest.raises(ConfigError, match="json with --line-field"):  # (a whole line of JSON needs no pattern)
        PatternLines("json")

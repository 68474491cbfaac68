"""A Kafka topic of plain-text log lines (rsyslog's ``omkafka``, Vector's ``text`` encoding): ``inspect`` knows the
lines' format from the topic's latest records and suggests ``--line-pattern``, and ``run`` reads each value as a
file's line -- the outlier endpoint found, the values the pattern does not read (and one that is no UTF-8 text)
dead letters with ``bad_row``, the counts in the summary -- against a real Kafka-protocol broker (Tansu)."""

from __future__ import annotations

import json
import random
import shlex

import pytest
from test_runtime_kafka import T0, produce, read_topic

from streamarms.cli import main

pytestmark = pytest.mark.kafka

BAD = [b"--- MARK ---", b"", b"\xff\xfe not text"]


def _access_lines(n=16_000, seed=5):
    rng = random.Random(seed)
    for i in range(n):
        path = f"/api/{rng.choice(['cart', 'items', 'users', 'search', 'login', 'orders', 'pay', 'ship', 'auth', 'tags'])}"
        status = rng.choice([502, 503]) if rng.random() < (0.45 if path == "/api/pay" else 0.02) else 200
        line = (f'10.0.0.{rng.randrange(200)} - - [14/Nov/2023:22:13:{i % 60:02d} +0000] "GET {path} HTTP/1.1" '
                f'{status} {rng.randrange(100, 900)} "-" "curl/8.0"')
        yield None, line.encode(), T0 + 5 * i
        if i in (100, 200, 300):  # (early: the run stops at its first decision)
            yield None, BAD[i // 100 - 1], T0 + 5 * i


def _inspected_and_run(kafka_broker, topic: str, tmp_path, capsys, says: str) -> tuple[list[str], dict]:
    """``inspect`` of ``topic`` (its output says ``says``), then its suggested 5xx command run to the first decision,
    dead letters to ``{topic}-dead``: the command and the run's summary."""
    assert main(["inspect", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", topic]) == 0
    out = capsys.readouterr().out
    assert says in out, out
    [command] = [shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run ")
                 and "--reward-at-least 500" in line]
    summary = tmp_path / "s.json"
    assert main([*command, "--policy", "cs", "--from-beginning", "--checkpoint", "none", "--group-id", f"{topic}-run",
                 "--quiet", "--summary-json", str(summary), "--dead-letter-topic", f"{topic}-dead",
                 "--consumer-option", "session_timeout_ms=6000", "--consumer-option", "heartbeat_interval_ms=500",
                 "--max-episodes", "1"]) == 0
    return command, json.loads(summary.read_text())


def test_a_topic_of_access_log_lines_is_inspected_and_run_with_its_pattern(kafka_broker, tmp_path, capsys):
    produce(kafka_broker.bootstrap, "lines-access", _access_lines(), partitions=2)
    command, got = _inspected_and_run(kafka_broker, "lines-access", tmp_path, capsys, "the values are an access log in "
                                      "the combined format (nginx's and Apache's default), not JSON: read with "
                                      "--line-pattern combined")
    assert command == ["run", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "lines-access",
                       "--line-pattern", "combined", "--key-field", "path", "--reward-field", "status",
                       "--reward-at-least", "500", "--policy", "cs"], command
    assert got["flagged"] == ["/api/pay"], got
    dead = read_topic(kafka_broker.bootstrap, "lines-access-dead")
    refused = [r for r in dead if dict(r.headers)["reason"] == b"bad_row"]
    assert sorted(r.value for r in refused) == sorted(BAD), [(r.value, dict(r.headers)) for r in dead]
    details = {r.value: dict(r.headers)["detail"].decode() for r in refused}
    assert details[b"--- MARK ---"] == "the value does not match --line-pattern combined"
    assert details[b""] == "the value is blank" and details[BAD[2]] == "the value is not UTF-8 text"
    assert got["invalid"].get("bad_row") == 3, got["invalid"]


def test_a_field_the_pattern_has_no_group_for_is_an_error_before_anything_is_read(kafka_broker, capsys):
    """(``combined``'s values may give fields after its groups, ``extra_N`` and ``name=value``: with no lines to
    read them from before connecting, a name it has no group for is a warning there; ``envoy``'s are its groups.)"""
    assert main(["run", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "lines-access",
                 "--line-pattern", "envoy", "--key-field", "upstream", "--reward-field", "response_code",
                 "--checkpoint", "none"]) == 2
    err = capsys.readouterr().err
    assert "--line-pattern envoy has no group 'upstream' (--key-field)" in err, err


def _shipped(n=16_000, seed=6):
    """Filebeat's records of an nginx access log: each line in ``message``, beside what the shipper knows of it;
    two records whose message is no access line, one without a message."""
    for _, line, ts in _access_lines(n, seed):
        if line == BAD[0]:  # (early: the run stops at its first decision)
            yield None, json.dumps({"message": "--- MARK ---"}).encode(), ts
        elif line == BAD[1]:
            yield None, json.dumps({"event": "rotated"}).encode(), ts
        elif line not in BAD:
            value = {"@timestamp": "2023-11-14T22:13:20Z", "message": line.decode(), "host": {"name": "lb-1"},
                     "agent": {"type": "filebeat"}}
            yield None, json.dumps(value).encode(), ts


def test_a_topic_of_a_shipper_s_json_records_of_access_lines_is_read_in_its_message(kafka_broker, tmp_path, capsys):
    """Filebeat, Vector and Fluent Bit send each line in a JSON record (``message``, ``log``): read as JSON, the
    line was one text field and no status or path could be a key or a reward. ``inspect`` sees the format in the
    field and suggests ``--line-field``; ``run`` reads the line's fields beside the shipper's."""
    produce(kafka_broker.bootstrap, "lines-shipped", _shipped(), partitions=2)
    command, got = _inspected_and_run(kafka_broker, "lines-shipped", tmp_path, capsys, "the field message holds an "
                                      "access log in the combined format (nginx's and Apache's default): read with "
                                      "--line-field message --line-pattern combined")
    assert command[5:9] == ["--line-pattern", "combined", "--line-field", "message"], command
    assert got["flagged"] == ["/api/pay"] and got["invalid"] == {"bad_row": 2}, got
    details = sorted(dict(r.headers)["detail"].decode() for r in read_topic(kafka_broker.bootstrap, "lines-shipped-dead"))
    assert details == ["the field 'message' does not match --line-pattern combined",
                       "the value has no field 'message' (--line-field)"], details

"""``streamarms inspect --bootstrap-servers HOST:PORT --rewards-topic T``: the latest records of a topic on a real
Kafka-protocol broker (Tansu), read without a consumer group, profiled as a file's are -- the record's key as the
field ``(record key)``, which ``run`` reads without ``--key-field`` -- and the suggested command runs as printed
against the topic and finds the slow host; a topic that is not there, or no broker, is one clear line."""

from __future__ import annotations

import json
import random
import shlex

import pytest
from test_runtime_kafka import T0, produce

from streamarms.cli import main

pytestmark = pytest.mark.kafka


def _latencies(n=30_000, seed=3):
    rng = random.Random(seed)
    for i in range(n):
        h = f"api-{rng.randrange(12)}"
        ms = rng.lognormvariate(3, 0.5) * (3 if h == "api-4" else 1)
        yield h, json.dumps({"latency": f"{ms:.3f}ms", "path": "/v1/items"}).encode(), T0 + 10 * i


def test_a_topic_s_latest_records_and_the_command_that_finds_its_slow_host(kafka_broker, tmp_path, capsys):
    produce(kafka_broker.bootstrap, "inspect-latency", _latencies(), partitions=3)
    assert main(["inspect", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "inspect-latency"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("10,000 records read from topic inspect-latency\n"), out
    assert "keys (values that repeat): (record key) (12)" in out
    [command] = [shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run ")
                 and "latency" in line]
    assert command[:5] == ["run", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "inspect-latency"]
    assert "--key-field" not in command and "--timestamp-field" not in command, command
    assert command[5:9] == ["--reward-field", "latency", "--reward-unit", "ms"], command
    summary = tmp_path / "s.json"
    assert main([*command, "--policy", "cs", "--max-episodes", "1", "--from-beginning", "--checkpoint", "none",
                 "--group-id", "inspect-latency-run", "--quiet", "--summary-json", str(summary),
                 "--consumer-option", "session_timeout_ms=6000", "--consumer-option", "heartbeat_interval_ms=500"]) == 0
    assert json.loads(summary.read_text())["flagged"] == ["api-4"]
    assert main(["inspect", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "inspect-latency",
                 "--records", "300"]) == 0
    assert capsys.readouterr().out.startswith("300 records read from topic inspect-latency\n")


def test_a_missing_topic_or_broker_is_one_clear_line(kafka_broker, capsys):
    produce(kafka_broker.bootstrap, "inspect-there", [("a", b'{"x": 1}', T0)])
    assert main(["inspect", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "inspect-nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("streamarms inspect: error: no topic inspect-nope on ") and "inspect-there" in err, err
    # run warns of the same typo at its start (it waited for the topic's records without a word)
    from streamarms.connectors.kafka import client_config, warn_missing_topics

    assert warn_missing_topics(client_config(kafka_broker.bootstrap), ["inspect-there", "inspect-nope2"]) == \
        ["inspect-nope2"]
    produce(kafka_broker.bootstrap, "inspect-binary", [("a", b"\x00\x01avro", T0), ("b", b"plain text", T0)])
    assert main(["inspect", "--bootstrap-servers", kafka_broker.bootstrap, "--rewards-topic", "inspect-binary"]) == 1
    out = capsys.readouterr().out
    assert "2 refused (not_json 2)" in out and "a Kafka record's value as one JSON object" in out, out
    assert main(["inspect", "--bootstrap-servers", "127.0.0.1:1", "--rewards-topic", "t"]) == 2
    assert capsys.readouterr().err.startswith("streamarms inspect: error: ")
    assert main(["inspect", "--rewards-topic", "t"]) == 2
    assert "give FILE .. (files), or --bootstrap-servers" in capsys.readouterr().err

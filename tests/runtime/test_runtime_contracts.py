"""Every connector satisfies the contract the daemon types it with (streamarms.runtime.contracts)."""

from __future__ import annotations

import pytest

from streamarms.connectors import file_sinks, files, kafka, kafka_sinks, memory
from streamarms.runtime.contracts import AlertSink, DeadLetterSink, RequestSink, RewardSource


@pytest.mark.parametrize("cls", [kafka.KafkaRewardSource, files.JsonlSource, memory.MemorySource,
                                 memory.GeneratedSource])
def test_sources(cls):
    assert issubclass(cls, RewardSource)


@pytest.mark.parametrize("cls, contract", [
    (kafka_sinks.KafkaAlertSink, AlertSink), (file_sinks.JsonlSink, AlertSink), (memory.MemorySink, AlertSink),
    (kafka_sinks.KafkaRequestSink, RequestSink),
    (kafka_sinks.KafkaDeadLetterSink, DeadLetterSink), (file_sinks.JsonlDeadLetterSink, DeadLetterSink),
    (memory.MemoryDeadLetterSink, DeadLetterSink),
])
def test_sinks(cls, contract):
    assert issubclass(cls, contract)


def test_a_sink_is_not_a_source():
    assert not issubclass(file_sinks.JsonlSink, RewardSource) and not issubclass(files.JsonlSource, AlertSink)


def test_sources_yield_records_with_the_fields_the_daemon_reads(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"key": "a", "value": {"reward": 1}, "timestamp": 5}\n')
    src = files.JsonlSource([str(p)])
    recs = src.poll(0.0)
    src.close()
    assert len(recs) == 1
    r = recs[0]
    assert all(hasattr(r, f) for f in ("topic", "partition", "offset", "timestamp", "key", "value"))

"""``KeyFieldSource``: each record's key read from a field of its value (``--key-field``)."""

from __future__ import annotations

from collections import namedtuple

import pytest

from streamarms.runtime import RewardCodec
from streamarms.runtime.key_field import FieldRecord, KeyFieldSource, field_key
from streamarms.runtime.records import InvalidRecord, RefusedKey, record_key

KafkaLike = namedtuple("KafkaLike", "topic partition offset timestamp key value headers")


class ListSource:
    def __init__(self, values, keys=None):
        keys = keys or [b"req"] * len(values)
        self.batch = [KafkaLike("t", 1, i, 1000 + i, k, v, [("h", b"1")]) for i, (k, v) in enumerate(zip(keys, values))]
        self.rolled = None
        self.exhausted = True

    def poll(self, timeout):
        out, self.batch = self.batch, []
        return out

    def state(self):
        return {"t:1": 7}

    def rollback(self, processed):
        self.rolled = processed


def _one(value, key=b"req", field="host"):
    return KeyFieldSource(ListSource([value], [key]), field).poll(0.0)[0]


@pytest.mark.parametrize("value,key", [
    (b'{"host": "eu-1", "ms": 3}', b"eu-1"),
    ('{"host": "eu-1", "ms": 3}', b"eu-1"),            # a str value (memory sources)
    (b'{"host": 42, "ms": 3}', b"42"),                 # an integer: its digits, as a JSONL line's arm
    (b'{"host": -9223372036854775808}', b"-9223372036854775808"),
    (b'{"host": "\xc3\xa9t\xc3\xa9"}', "\u00e9t\u00e9".encode()),
])
def test_the_key_is_the_fields_string_or_integer_and_the_record_is_otherwise_unchanged(value, key):
    r = _one(value)
    assert type(r.key) is bytes and r.key == key and r.source_key == record_key(r) == b"req"
    assert (r.topic, r.partition, r.offset, r.timestamp, r.value, r.headers) == ("t", 1, 0, 1000, value, [("h", b"1")])
    assert r.parsed["host"] is not None
    assert RewardCodec().arm(r.key) == key.decode()


@pytest.mark.parametrize("value,reason,detail", [
    (b'{"ms": 3}', "key_missing", "the value has no 'host' field"),
    (b'{"host": null}', "key_missing", "the 'host' field is null"),
    (b'{"host": true}', "key_missing", "the 'host' field is a boolean"),
    (b'{"host": 1.5}', "key_missing", "the 'host' field is a number"),
    (b'{"host": ["a"]}', "key_missing", "the 'host' field is an array"),
    (b'{"host": {"a": 1}}', "key_missing", "the 'host' field is an object"),
    (b'{"host": 18446744073709551616}', "key_missing", "the 'host' field is"),  # 2^64: more than 64 bits
    (None, "value_missing", "no value"),
    (b'{"host": "a"', "not_json", "not JSON"),
    (b'\xff{}', "not_json", "not JSON"),
    (b'[1, 2]', "not_object", "an array"),
    (b'[' * 100_000, "not_json", "not JSON"),
])
def test_a_record_without_a_readable_key_is_refused_with_the_reason_and_its_own_key_kept(value, reason, detail):
    r = _one(value, key=b"request-17")
    assert type(r.key) is RefusedKey and r.key.reason == reason and detail in r.key.detail, r.key
    assert "--key-field" in r.key.detail
    assert record_key(r) == b"request-17" and r.value == value
    assert (r.parsed is None) == (reason != "key_missing")  # (a value that parsed keeps its parse)
    with pytest.raises(InvalidRecord) as e:  # the codec refuses it by the path of every refused key
        RewardCodec().arm(r.key)
    assert e.value.reason == reason


def test_dead_letters_keep_the_key_the_record_arrived_with():
    assert record_key(_one(b'{"host": "h1"}', key=None)) is None
    assert record_key(_one(b'{"host": "h1"}', key=b"k")) == b"k"
    assert record_key(_one(b'{"host": "h1"}', key="text-key")) == "text-key"  # (a memory source's str key)
    assert record_key(_one(b'{"x": 1}', key="text-key")) == b"text-key"  # refused: the RefusedKey's bytes


def test_a_key_the_source_refused_already_keeps_its_reason():
    refused = RefusedKey.of("bad_timestamp", "the timestamp is a string", b"eu")
    src = KeyFieldSource(ListSource([b'{"host": "h1"}'], [refused]), "host")
    r = src.poll(0.0)[0]
    assert r.key is refused and r.parsed is None


def test_a_parsed_value_from_the_source_is_not_parsed_again():
    class Parsed:
        def poll(self, timeout):
            return [FieldRecord("f", 0, 0, None, None, "not parsed again", None, {"host": "h9"}, None)]
    r = KeyFieldSource(Parsed(), "host").poll(0.0)[0]
    assert r.key == b"h9" and r.parsed == {"host": "h9"}


def test_positions_and_everything_else_are_the_wrapped_sources():
    inner = ListSource([b'{"host": "a"}', b'{"host": "b"}'])
    src = KeyFieldSource(inner, "host")
    assert src.decoded_values is True and src.exhausted is True and src.state() == {"t:1": 7}
    assert [r.key for r in src.poll(0.0)] == [b"a", b"b"] and src.poll(0.0) == []
    src.rollback(1)
    assert inner.rolled == 1


def test_each_key_is_made_once_and_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(KeyFieldSource, "CACHE", 3)
    src = KeyFieldSource(ListSource([b'{"host": "h%d"}' % (i % 5) for i in range(20)]), "host")
    got = src.poll(0.0)
    assert [r.key for r in got] == [b"h%d" % (i % 5) for i in range(20)] and len(src._keys) <= 3
    src = KeyFieldSource(ListSource([b'{"host": "a"}'] * 3), "host")
    a, b, c = src.poll(0.0)
    assert a.key is b.key is c.key


def test_a_lone_surrogate_in_the_field_is_refused_as_not_utf8():
    r = _one(b'{"host": "\\ud800"}')
    with pytest.raises(InvalidRecord, match="key_not_utf8"):
        RewardCodec().arm(r.key)
    assert field_key({"h": "\udcff"}, "h", None) == b"\xff"  # (a JSONL line's invalid UTF-8 byte, kept)


def test_an_empty_field_name_is_refused():
    with pytest.raises(ValueError, match="needs a name"):
        KeyFieldSource(ListSource([]), " ")

"""Dotted field names read nested fields (``--reward-field http.latency_ms``, ``--key-field host.name``,
``--group-by svc.id``): :class:`~streamarms.runtime.field_path.FieldPath` and every path that reads a field --
the codec's three (record by record, the batch loop, the clean batch), the continuous runner's batch and
record paths, the key-field source's inline and slow paths -- agree on every value."""

from __future__ import annotations

from collections import namedtuple

import pytest

from streamarms.models import BoundedModel
from streamarms.monitor import ContinuousMonitor
from streamarms.runtime import EventClock, InvalidRecord, RewardCodec
from streamarms.runtime.continuous import ContinuousRunner
from streamarms.runtime.field_path import FieldPath
from streamarms.runtime.key_field import KeyFieldSource


def test_a_dotted_name_is_the_field_of_that_name_or_else_the_nested_field():
    p = FieldPath("http.ms")
    assert p({"http": {"ms": 5}}) == 5
    assert p({"http.ms": 7, "http": {"ms": 5}}) == 7  # the flat field first (ECS writes both forms)
    for missing in ({}, {"http": {}}, {"http": 5}, {"http": [{"ms": 1}]}, {"http": None}):
        with pytest.raises(KeyError, match="http.ms"):
            p(missing)
        assert p.get(missing, "none") == "none"
    assert not FieldPath("ms").nested and FieldPath("a.b").nested
    for bad in ("a.", ".a", "a..b", "", " "):
        with pytest.raises(ValueError):
            FieldPath(bad)


VALUES = [b'{"http": {"ms": 12}}', b'{"http.ms": 3}', b'{"http": {"ms": 2000}}', b'{"http": 1}', b'{"http": {}}',
          b'{"http": {"ms": true}}', b'{"http": {"ms": "1"}}', b'{"http": {"ms": 1e999}}', b'[1]', b'{"ms": 4}']


def test_the_codec_reads_a_nested_reward_the_same_on_every_path():
    c = RewardCodec("http.ms", BoundedModel(0, 1000), clip=True)
    one = []
    for v in VALUES:
        try:
            one.append(c.reward("h", v, count=False))
        except InvalidRecord as e:
            one.append(e.reason)
    assert one == [12.0, 3.0, 1000.0, "missing_reward", "missing_reward", "not_numeric", "not_numeric",
                   "not_finite", "not_object", "missing_reward"]
    batch = RewardCodec("http.ms", BoundedModel(0, 1000)).rewards(VALUES)
    assert batch == [12.0, 3.0] + [None] * 8  # (a clip is the record path's: the batch gives it back)
    clean = [b'{"http": {"ms": 12}}', b'{"http.ms": 3}'] * 3
    assert RewardCodec("http.ms", None)._rewards_clean(clean, None) == [12.0, 3.0] * 3
    assert RewardCodec("http.ms", None).rewards(clean, [{"http": {"ms": 1}}] * 6) == [1.0] * 6


def test_the_continuous_runner_reads_a_nested_reward_and_group_on_both_paths():
    def runner():
        return ContinuousRunner(ContinuousMonitor(), clock=EventClock(), group_field="svc.id",
                                codec=RewardCodec("http.err", ContinuousMonitor().model))
    values = [b'{"http": {"err": 1}, "svc": {"id": "web"}}', b'{"http": {"err": 0}, "svc": {"id": "web"}}',
              b'{"http": {"err": 1}}', b'{"svc": {"id": "web"}}', b'{"http": {"err": 0}, "svc": {"id": "db"}}']
    keys = [b"a", b"b", b"c", b"d", b"a"]
    r = runner()
    n, bad = r.offer_batch(keys, values, [1000] * 5)
    assert [(i, e.reason) for i, e in bad] == [(2, "missing_group"), (3, "missing_reward"), (4, "group_mismatch")]
    assert r.monitor.evidence("a")["group"] == "web" and r.used == 2
    one = runner()
    assert [getattr(one.offer(k, v, 1.0), "reason", None) for k, v in zip(keys, values)] == \
        [None, None, "missing_group", "missing_reward", "group_mismatch"]


R = namedtuple("R", "topic partition offset timestamp key value")


def test_the_key_field_source_reads_a_nested_key():
    class S:
        def poll(self, timeout):
            return [R("t", 0, 0, None, b"r1", b'{"host": {"name": "h1"}, "ms": 1}'),
                    R("t", 0, 1, None, b"r2", b'{"host": {"name": 7}, "ms": 1}'),
                    R("t", 0, 2, None, b"r3", b'{"host.name": "h2"}'),
                    R("t", 0, 3, None, b"r4", b'{"host": "h3"}'),
                    R("t", 0, 4, None, b"r5", b'{"host": {"name": 1.5}}')]
    a, b, c, d, e = KeyFieldSource(S(), "host.name").poll(0.1)
    assert (a.key, b.key, c.key) == (b"h1", b"7", b"h2")
    assert d.key.reason == e.key.reason == "key_missing"
    assert "no 'host.name' field" in d.key.detail and "is a number" in e.key.detail

"""Reward rules for fields that are not the reward as such: ``numeric_strings`` (``"0.005"`` read as a
number: logs that quote every value) and ``at_least`` (the reward is 1 when the number is at least it: an
error rate from status codes). The batch paths and the record path agree on every value, a clipped reward
is counted once, and the default is unchanged: a string is a dead letter, never a guess."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.models import BernoulliModel, BoundedModel
from streamarms.monitor import ContinuousMonitor
from streamarms.runtime import EventClock, InvalidRecord, RewardCodec, Scheduler, SchedulerConfig
from streamarms.runtime.continuous import ContinuousRunner
from streamarms.runtime.scheduler import _ExamplePolicy


def _one(c: RewardCodec, v: bytes):
    try:
        return c.reward("a", v, count=False)
    except InvalidRecord as e:
        return e.reason


@pytest.mark.parametrize("text,number", [("0.005", 0.005), ("503", 503.0), ("-1e3", -1000.0), ("0", 0.0),
                                         ("2.5E-1", 0.25)])
def test_a_string_holding_a_json_number_is_that_number(text, number):
    c = RewardCodec(model=None, numeric_strings=True)
    assert _one(c, json.dumps({"reward": text}).encode()) == number
    assert _one(RewardCodec(model=None), json.dumps({"reward": text}).encode()) == "not_numeric"  # the default


@pytest.mark.parametrize("text", ["nan", "NaN", "Infinity", "1_000", " 1", "1 ", "0x1", "", "1.", ".5", "+1", "01",
                                  "-", "1e", "١"])
def test_a_string_that_is_no_json_number_is_refused(text):
    assert _one(RewardCodec(model=None, numeric_strings=True), json.dumps({"reward": text}).encode()) == "not_numeric"


def test_at_least_makes_the_reward_0_or_1_and_needs_a_model_holding_both():
    c = RewardCodec("status", BernoulliModel(), at_least=500, numeric_strings=True)
    vals = [b'{"status": 503}', b'{"status": "500"}', b'{"status": 499.9}', b'{"status": "200"}', b'{"status": null}',
            b'{"status": 1e999}', b'{"x": 1}']
    assert [_one(c, v) for v in vals] == [1.0, 1.0, 0.0, 0.0, "not_numeric", "not_finite", "missing_reward"]
    assert c.rewards(vals) == [1.0, 1.0, 0.0, 0.0, None, None, None]
    assert RewardCodec("status", BoundedModel(0, 1000), at_least=500).reward("a", b'{"status": 700}') == 1.0
    with pytest.raises(ValueError, match="does not hold"):
        RewardCodec(model=BoundedModel(2, 5), at_least=3)
    with pytest.raises(ValueError, match="nothing to clip"):
        RewardCodec(model=BoundedModel(0, 1), at_least=0.5, clip=True)
    with pytest.raises(ValueError, match="finite number"):
        RewardCodec(model=None, at_least=float("nan"))


def test_the_batch_path_agrees_with_the_record_path_and_counts_a_clip_once():
    rng = random.Random(9)
    pool = [b'{"reward": "%d"}' % rng.randrange(-50, 1100) for _ in range(50)] + \
        [b'{"reward": %d}' % rng.randrange(-50, 1100) for _ in range(50)] + [b'{"reward": "x"}', b'[]', b'{}']
    values = [rng.choice(pool) for _ in range(3000)]
    keys = [b"k%d" % rng.randrange(5) for _ in values]
    one = RewardCodec(model=BoundedModel(0, 1000), numeric_strings=True, clip=True)
    expect = [_one(one, v) for v in values]
    s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=EventClock(), arms=[f"k{i}" for i in range(5)],
                  codec=RewardCodec(model=BoundedModel(0, 1000), numeric_strings=True, clip=True),
                  config=SchedulerConfig(validate="all"))
    s.tick()
    n, bad = s.offer_batch(keys, values)
    assert {i for i, _ in bad} == {i for i, x in enumerate(expect) if isinstance(x, str)}
    clipped = sum(1 for v, x in zip(values, expect) if isinstance(x, float) and
                  float(json.loads(v)["reward"]) != x)
    assert clipped > 100 and s.codec.clipped == clipped  # once each, whichever path took the record


def test_the_continuous_runner_reads_the_rule_on_its_batch_path_as_record_by_record():
    values = [b'{"reward": "503"}', b'{"reward": 200}', b'{"reward": "-"}', b'{"reward": "500"}']
    keys = [b"a", b"b", b"a", b"c"]

    def runner():
        return ContinuousRunner(ContinuousMonitor(), clock=EventClock(),
                                codec=RewardCodec(model=ContinuousMonitor().model, numeric_strings=True, at_least=500))
    r = runner()
    r.offer_batch(keys, values, [1000] * 4)
    r.offer_batch(keys, values, [2000] * 4)  # (the keys known: the batch path)
    one = runner()
    for _ in range(2):
        for k, v in zip(keys, values):
            one.offer(k, v, 1.0)
    for key in ("a", "b", "c"):
        assert r.monitor.evidence(key)["estimate"] == one.monitor.evidence(key)["estimate"]
    assert r.monitor.evidence("a")["estimate"] == 1.0 and r.monitor.evidence("b")["estimate"] == 0.0
    assert r.counters.invalid["not_numeric"] == 2

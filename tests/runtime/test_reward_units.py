"""``unit`` (``--reward-unit``): a latency written with its unit (``"17.19ms"``, Go's ``"1m30s"``) read as the
number of the unit it lasts, on the record path and the batch path alike; a text that is no duration is refused
saying what is read, and a duration met without the flag is refused naming the flag with the text's own unit."""

from __future__ import annotations

import random

import pytest
from test_reward_rules import _one

from streamarms.models import BernoulliModel, BoundedModel
from streamarms.runtime import EventClock, InvalidRecord, RewardCodec, Scheduler, SchedulerConfig
from streamarms.runtime.durations import duration_in
from streamarms.runtime.scheduler import _ExamplePolicy


@pytest.mark.parametrize("text,unit,number", [
    ("17.19ms", "ms", 17.19), ("850µs", "ms", 0.85), ("850μs", "us", 850.0), ("850us", "ms", 0.85),
    ("1.2s", "ms", 1200.0), ("1m30s", "s", 90.0), ("2h45m", "h", 2.75), ("120ns", "us", 0.12), ("+3s", "s", 3.0),
    ("-1.5s", "ms", -1500.0), ("0", "s", 0.0), ("0s", "ms", 0.0), ("12 ms", "ms", 12.0), (".5s", "ms", 500.0),
    ("1.s", "ms", 1000.0), ("PT0.123S", "ms", 123.0), ("PT1M30.5S", "s", 90.5), ("P0DT1H", "m", 60.0),
    ("PT-0.5S", "ms", -500.0), ("PT0,5S", "ms", 500.0)])
def test_go_durations_and_single_unit_latencies_are_read_in_the_unit(text, unit, number):
    assert duration_in(text, unit) == pytest.approx(number, rel=1e-12)


@pytest.mark.parametrize("text", ["17.19", "ms", "3 days", "1.2.3s", "5 MS", "1,5s", "s5", "1e3ms", "", " 1s",
                                  "1s ", "nan", "1" * 70 + "s", "P1Y", "P1M", "PT", "P", "PT1.5", "P95", "pt1s"])
def test_a_text_that_is_no_duration_is_none(text):
    assert duration_in(text, "ms") is None


def test_the_codec_reads_a_duration_and_refuses_what_is_none_saying_so():
    c = RewardCodec("latency", BoundedModel(0, 1000), unit="ms", clip=True)
    assert c.reward("h", b'{"latency": "17.19ms"}') == pytest.approx(17.19)
    assert c.reward("h", b'{"latency": 42}') == 42.0  # (a number: already in the unit)
    assert c.reward("h", b'{"latency": "3s"}') == 1000.0 and c.clipped == 1
    with pytest.raises(InvalidRecord, match=r"not_numeric: .*'3 days' \(--reward-unit ms reads a number with a unit"):
        c.reward("h", b'{"latency": "3 days"}')
    plain = RewardCodec("latency", BoundedModel(0, 1000))
    with pytest.raises(InvalidRecord, match=r"'850µs' \(--reward-unit us reads a duration with its unit"):
        plain.reward("h", '{"latency": "850µs"}'.encode())
    slow = RewardCodec("latency", BernoulliModel(), unit="ms", at_least=500)
    assert [slow.reward("h", b'{"latency": "%s"}' % t) for t in (b"499ms", b"0.5s", b"1m")] == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("kwargs, needle", [({"unit": "days"}, "unit must be one of"),
                                            ({"unit": "ms", "reward_in": ["x"]}, "reward_in and reward_match"),
                                            ({"unit": "ms", "reward_match": "x"}, "reward_in and reward_match")])
def test_a_unit_that_cannot_apply_is_refused(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        RewardCodec("latency", BernoulliModel(), **kwargs)


def test_the_batch_path_agrees_with_the_record_path():
    rng = random.Random(3)
    pool = [f"{rng.lognormvariate(3, 1):.3f}ms".encode() for _ in range(40)] + [b"1.5s", b"850us", b"x", b"12"]
    values = [b'{"latency": "%s"}' % rng.choice(pool) for _ in range(2000)] + [b'{"latency": 7}', b'{}']
    keys = [b"k%d" % rng.randrange(4) for _ in values]

    def codec():
        return RewardCodec("latency", BoundedModel(0, 500), unit="ms", clip=True)
    one = codec()
    expect = [_one(one, v) for v in values]
    s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=EventClock(), arms=[f"k{i}" for i in range(4)],
                  codec=codec(), config=SchedulerConfig(validate="all"))
    s.tick()
    _, bad = s.offer_batch(keys, values)
    assert {i for i, _ in bad} == {i for i, x in enumerate(expect) if isinstance(x, str)}
    assert sum(isinstance(x, str) for x in expect) > 50  # ("x", "12" without numeric strings, {})

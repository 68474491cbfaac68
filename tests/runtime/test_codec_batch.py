"""``RewardCodec.rewards``: the C-level pass over a clean batch (``_rewards_clean``) and the record loop
give each value exactly what ``RewardCodec.reward`` gives it (the same float, or ``None`` where it
refuses), whichever value spoils the batch and wherever it sits."""

from __future__ import annotations

import math

import pytest

from streamarms.models import BernoulliModel, BoundedModel, SubGaussianModel
from streamarms.runtime import RewardCodec, decoder

SUSPECT = [b'{"reward": "1"}', b"not json", b'{"reward": 2}', b"[1]", None, b'{"r": 1}', b'{"reward": NaN}',
           b'{"reward": Infinity}', b'{"reward": 1' + b"0" * 400 + b"}", b'{"reward": true}', b'{"reward": null}',
           b'{"reward": 1e400}', b'{"reward": -1e308, "x": 1}', b'{"reward": 0.5}', b'{"reward": -0.0}', b"\xff{",
           b'{"reward": 1}, {"reward": 1', b'{"reward": [1]}', b'"reward"', b'{"reward": 1} trailing', b"",
           b'{"reward": 1, "pad": "' + b"x" * 3000 + b'"}', b'{"reward": 3}', "{\"reward\": 1}", b'{"reward": 7.25}']
CLEAN = [b'{"reward": 0}', b'{"reward": 1}', b'{"reward": 1.0}', b'{"x": [1, 2], "reward": 0.0}']


def per_record(codec: RewardCodec, values: list) -> list:
    """What ``reward`` says of each value; ``None`` for a value longer than ``decoder._SHORT`` too (the
    batch leaves those to ``reward`` itself: its bracket count first)."""
    out = []
    for v in values:
        if v is not None and len(v) > decoder._SHORT:
            out.append(None)
            continue
        try:
            out.append(codec.reward("a", v))
        except Exception:
            out.append(None)
    return out


def same(got: list, want: list) -> bool:
    """Equal floats, the sign of zero included (-0.0 stays -0.0)."""
    return len(got) == len(want) and all(
        (g is None and w is None) or (g is not None and w is not None and g == w and type(g) is float
                                     and math.copysign(1.0, g) == math.copysign(1.0, w)) for g, w in zip(got, want))


@pytest.mark.parametrize("model", [None, BernoulliModel(), BoundedModel(0.0, 5.0), SubGaussianModel(1.0)],
                         ids=["none", "bernoulli", "bounded", "subgaussian"])
def test_one_suspect_value_in_a_clean_batch(model):
    codec = RewardCodec(model=model)
    assert same(codec.rewards(CLEAN * 5), per_record(codec, CLEAN * 5))
    if model is None or hasattr(model, "accepts"):  # (else every batch takes the record loop)
        assert codec._rewards_clean(CLEAN * 5, None) is not None  # the clean batch takes the C-level pass
    for bad in SUSPECT:
        for at in (0, 7, 19):
            values = CLEAN * 5
            values.insert(at, bad)
            assert same(codec.rewards(values), per_record(codec, values)), (bad, at)


def test_parsed_values_take_the_same_pass():
    codec = RewardCodec(model=BernoulliModel())
    values = [b'{"reward": 1}', b'{"reward": 0}']
    assert codec.rewards(values, [{"reward": 0}, {"reward": 1}]) == [0.0, 1.0]  # the parsed objects count
    assert codec.rewards(values, [{"reward": 0}, {"reward": "1"}]) == [0.0, None]
    assert codec.rewards(values, [{"reward": 0}, {"reward": True}]) == [0.0, 1.0]  # a flag: the reward 1
    assert codec.rewards(values, [{"reward": 0}, None]) == [0.0, 0.0]  # None: parsed here


def test_values_that_only_combine_into_json_are_refused_each():
    """Two values, neither of them JSON, that would read as two valid rewards if the batch were parsed
    as one joined array (why each value is parsed alone)."""
    codec = RewardCodec(model=BernoulliModel())
    a, b = b'{"reward": 1}, {"reward": 1, "a": [[', b']]}'
    assert codec.rewards([a, b] + CLEAN) == [None, None] + per_record(codec, CLEAN)


@pytest.mark.parametrize("model", [None, BernoulliModel(), BoundedModel(0.0, 5.0)], ids=["none", "bernoulli", "bounded"])
def test_the_memo_of_seen_values_gives_what_a_fresh_codec_gives(model):
    """Batches drawn from a small pool (clean, suspect, and values a model refuses): a codec that has seen
    them (its memo of accepted values warm) answers each batch as a codec that never saw one."""
    import random

    rng = random.Random(7)
    codec = RewardCodec(model=model)
    pool = CLEAN + [b'{"reward": 0.25}', b'{"reward": 4}', b'{"reward": -0.0}'] + SUSPECT
    for i in range(400):
        values = [rng.choice(CLEAN) for _ in range(rng.randrange(1, 40))]
        if i % 3 == 0:
            values[rng.randrange(len(values))] = rng.choice(pool)
        assert same(codec.rewards(values), RewardCodec(model=model).rewards(values)), values
    assert codec._memo  # (warm: the comparisons above went through it)


def test_the_memo_starts_afresh_when_the_parser_changes_and_switches_off_on_distinct_values(monkeypatch):
    codec = RewardCodec(model=None)
    assert codec.rewards([b'{"reward": 1}']) == [1.0] and codec._memo == {b'{"reward": 1}': 1.0}
    monkeypatch.setattr(decoder, "_loads", lambda v: {"reward": 2})  # another parser: the memo must not answer
    assert codec.rewards([b'{"reward": 1}']) == [2.0] and codec._memo == {b'{"reward": 1}': 2.0}
    monkeypatch.undo()
    for i in range(0, RewardCodec.MEMO_SIZE + 1000, 1000):  # continuous rewards: every value new
        codec.rewards([b'{"reward": %d.5}' % j for j in range(i, i + 1000)])
    assert codec._memo is None
    assert codec.rewards([b'{"reward": 1}', b'{"reward": 2.5}']) == [1.0, 2.5]


def test_a_batch_whose_columns_differ_in_length_is_refused_before_any_record():
    from streamarms.cli.continuous import build_runner
    from streamarms.runtime.clock import EventClock
    from streamarms.runtime.scheduler import Scheduler, _ExamplePolicy
    s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=EventClock(), arms=["a", "b"])
    s.tick()
    r = build_runner(k=2.0, alpha=1e-3, alpha_cd=1e-6, model="bernoulli", clock=EventClock())
    for offer in (s.offer_batch, r.offer_batch):
        with pytest.raises(ValueError, match="a batch of 1 keys has 2 values"):
            offer([b"a"], [b'{"reward": 1}', b'{"reward": 0}'])
        with pytest.raises(ValueError, match="has 2 stamps"):
            offer([b"a"], [b'{"reward": 1}'], [1, 2])
    assert s.records == 0 and r.records == 0


def test_a_value_that_is_not_utf8_says_so_not_that_it_is_bad_utf16():
    """A Kafka drill: b'\\xff\\xfe{"reward": 1}' was refused with "'utf-16-le' codec can't decode ...": json guessed
    UTF-16 from its first bytes. A value's JSON is UTF-8 (a UTF-8 byte-order mark is read past)."""
    with pytest.raises(ValueError, match=r"not JSON \(UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in "
                                         r"position 0"):
        decoder.loads(b'\xff\xfe{"reward": 1}')
    assert decoder.loads(b'\xef\xbb\xbf{"reward": 1}') == {"reward": 1}

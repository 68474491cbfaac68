"""``RewardCodec(reward_in=...)`` (``--reward-in``): the reward is 1 where the field's text -- a string, an
integer's digits, a boolean's true/false -- is one of the values, else 0; every path reads it alike, a value
with no such text is refused, and the rule refuses what cannot go with it."""

from __future__ import annotations

import json

import pytest

from streamarms.models import BernoulliModel, BoundedModel
from streamarms.runtime import InvalidRecord, RewardCodec

VALUES = [b'{"level": "ERROR"}', b'{"level": "INFO"}', b'{"level": "error"}', b'{"level": 503}', b'{"level": 200}',
          b'{"level": true}', b'{"level": "FATAL"}']
WANT = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]  # (case counts: "error" is not "ERROR")


def test_every_path_reads_the_same_rate():
    c = RewardCodec("level", BernoulliModel(), reward_in=["ERROR", "FATAL", "503"])
    assert [c.reward("h", v) for v in VALUES] == WANT
    assert c.rewards(VALUES) == WANT
    assert c.rewards(VALUES, [None] * len(VALUES)) == WANT
    assert [c.by_rule({"level": x}) for x in ("ERROR", "INFO", 503, False)] == [1.0, 0.0, 1.0, 0.0]
    assert RewardCodec("ok", None, reward_in=["false"]).rewards([b'{"ok": false}', b'{"ok": true}']) == [1.0, 0.0]


@pytest.mark.parametrize("value, shown", [(b'{"level": 0.5}', "a JSON number with a fraction"),
                                          (b'{"level": null}', "null"), (b'{"level": ["ERROR"]}', "a JSON array"),
                                          (b'{"level": {"name": "ERROR"}}', "a JSON object")])
def test_a_value_without_a_text_is_refused(value, shown):
    c = RewardCodec("level", BernoulliModel(), reward_in=["ERROR"])
    with pytest.raises(InvalidRecord, match=f"is {shown}: --reward-in matches a text, an integer or a boolean"):
        c.reward("h", value)
    assert c.rewards([value]) == [None]
    with pytest.raises(InvalidRecord, match="missing_reward"):
        c.reward("h", b'{"lvl": "ERROR"}')


@pytest.mark.parametrize("kw, why", [
    ({"at_least": 500}, "rules for one reward"),
    ({"reward_match": "ERR"}, "rules for one reward"),
    ({"model": BoundedModel(0, 5000), "clip": True}, "nothing to clip"),
    ({"model": BoundedModel(2, 5)}, "does not hold"),
    ({"reward_in": "ERROR"}, "texts to match"),
    ({"reward_in": []}, "texts to match"),
])
def test_what_cannot_go_with_the_rule_is_refused(kw, why):
    args = {"model": BernoulliModel(), "reward_in": ["ERROR"], **kw}
    with pytest.raises(ValueError, match=why):
        RewardCodec("level", **args)


def test_a_refused_category_names_the_rule():
    with pytest.raises(InvalidRecord, match=r"'ERROR' \(--reward-in ERROR,.. makes the reward 1"):
        RewardCodec("level", BernoulliModel()).reward("h", b'{"level": "ERROR"}')
    with pytest.raises(InvalidRecord) as e:  # (a word among a bounded model's latencies: --reward-in needs bernoulli)
        RewardCodec("ms", BoundedModel(0, 1200)).reward("h", b'{"ms": "timeout"}')
    assert str(e.value).endswith("is not a JSON number: 'timeout'")


def test_reward_match_finds_a_pattern_in_the_text_on_every_path():
    """``reward_match`` (``--reward-match``): 1 where the regular expression is found in the field's text."""
    values = [b'{"msg": "upstream timed out (110)"}', b'{"msg": "ok"}', b'{"msg": "connect() refused"}',
              b'{"msg": "Timed Out"}', b'{"msg": 110}', b'{"msg": null}']
    c = RewardCodec("msg", BernoulliModel(), reward_match="timed? out|refused|^110$")
    assert [c.by_rule(json.loads(v)) for v in values] == [1.0, 0.0, 1.0, 0.0, 1.0, None]
    assert c.rewards(values) == [1.0, 0.0, 1.0, 0.0, 1.0, None]
    with pytest.raises(InvalidRecord, match="is null: --reward-match matches a text"):
        c.reward("h", values[-1])
    assert RewardCodec("msg", None, reward_match="(?i)timed out").reward("h", values[3]) == 1.0
    with pytest.raises(ValueError, match="not a regular expression"):
        RewardCodec("msg", None, reward_match="(unclosed")


def test_a_pattern_that_matches_nothing_names_what_the_field_held():
    c = RewardCodec("msg", BernoulliModel(), reward_match="timed out")
    for v in [b'{"msg": "ok"}'] * 9 + [b'{"msg": "Timed Out"}']:
        c.reward("h", v)
    said = c.rule.unmatched()
    assert said.startswith("--reward-match 'timed out' has matched none of the rewards read") and "'ok' (90%)" in said
    assert "'Timed Out' would match but for its case: --reward-match is case-sensitive, (?i)" in said


def test_missing_gives_the_reward_of_a_value_without_the_field_on_every_path():
    c = RewardCodec("error", BernoulliModel(), reward_match=".", missing=0)
    values = [b'{"error": "timed out"}', b'{"path": "/x"}', b'{"error": null}']
    assert c.rewards(values) == [1.0, 0.0, None] and c.reward("h", values[1]) == 0.0
    plain = RewardCodec("ms", BoundedModel(0, 100), missing=50)
    assert plain.rewards([b'{"ms": 3}', b'{"x": 1}']) == [3.0, 50.0] and not plain.plain
    for bad in (2, float("nan"), True):
        with pytest.raises(ValueError, match="missing must be a reward the model holds"):
            RewardCodec("error", BernoulliModel(), missing=bad)

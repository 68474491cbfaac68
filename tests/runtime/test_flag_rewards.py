"""A boolean reward is a flag: ``true`` is the reward 1 and ``false`` 0 under a model of rates (the default
Bernoulli, bounded on [0, 1]), read alike by every path of the codec (record, batch loop, clean batch,
rules); a table's ``True``/``FALSE`` cell is that boolean; any other model (a latency's range: not 1 ms),
and ``--reward-at-least``, refuse it with the reason."""

from __future__ import annotations

import pytest

from streamarms.models import BernoulliModel, BoundedModel, SubGaussianModel
from streamarms.runtime import InvalidRecord, RewardCodec

VALUES = [b'{"reward": true}', b'{"reward": false}', b'{"reward": 1}', b'{"reward": 0}']


@pytest.mark.parametrize("model", [None, BernoulliModel(), BoundedModel(0, 1)], ids=["none", "bernoulli", "bounded"])
def test_every_path_reads_true_as_1_and_false_as_0(model):
    c = RewardCodec(model=model)
    assert [c.reward("a", v) for v in VALUES] == [1.0, 0.0, 1.0, 0.0]
    assert c.rewards(VALUES) == [1.0, 0.0, 1.0, 0.0]                      # the clean batch pass
    assert c.rewards([*VALUES, b'{"reward": "x"}']) == [1.0, 0.0, 1.0, 0.0, None]  # the batch loop
    assert c.rewards(VALUES, [{"reward": True}, {"reward": False}, None, None]) == [1.0, 0.0, 1.0, 0.0]
    assert c.rewards(VALUES) == [1.0, 0.0, 1.0, 0.0]                      # again: from the memo


def test_a_tables_true_and_false_cells_are_the_booleans():
    c = RewardCodec(model=BernoulliModel(), numeric_strings=True)  # (streamarms run sets it for a table)
    cells = [b'{"reward": "True"}', b'{"reward": "FALSE"}', b'{"reward": "true"}', b'{"reward": "1"}']
    assert c.rewards(cells) == [1.0, 0.0, 1.0, 1.0] == [c.reward("a", v) for v in cells]
    with pytest.raises(InvalidRecord, match="not a JSON number: 'yes'"):
        c.reward("a", b'{"reward": "yes"}')
    with pytest.raises(InvalidRecord, match="not a JSON number: 'True'"):  # without the rule: text stays text
        RewardCodec(model=BernoulliModel()).reward("a", b'{"reward": "True"}')
    with pytest.raises(InvalidRecord, match=r"'true' \(--numeric-strings reads true and false written as strings"):
        RewardCodec(model=BernoulliModel()).reward("a", b'{"reward": "true"}')  # (a JSON log's quoted flag: named)


@pytest.mark.parametrize("model", [BoundedModel(2, 5), BoundedModel(0, 2000), SubGaussianModel(1.0)],
                         ids=["bounded-2-5", "latency", "subgaussian"])
def test_a_model_not_of_rates_and_a_number_rule_refuse_booleans_saying_why(model):
    c = RewardCodec(model=model)
    with pytest.raises(InvalidRecord, match=r"is a boolean \(true\): true and false are the rewards 1 and 0 under a "
                                            rf"model of rates \(the default, bernoulli, or bounded on \[0, 1\]\), "
                                            rf"not the {model.name} model"):
        c.reward("a", b'{"reward": true}')
    assert c.rewards([b'{"reward": true}', b'{"reward": 3}']) == [None, 3.0]
    rule = RewardCodec("status", BernoulliModel(), numeric_strings=True, at_least=500)
    with pytest.raises(InvalidRecord, match=r"is a boolean \(false\), not a number to compare with --reward-at-least"):
        rule.reward("a", b'{"status": false}')
    assert rule.rewards([b'{"status": true}', b'{"status": "503"}']) == [None, 1.0]

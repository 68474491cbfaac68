"""The heavy_tailed reward model works with every fixed-confidence outlier policy that can use it."""

from __future__ import annotations

import pytest

from streamarms.models import make_model
from streamarms.policies.ade import AdaptiveDoubleExploration
from streamarms.policies.gold import GenericOutlierDetection
from streamarms.policies.ksigma import RoundRobin, WeightedRoundRobin
from streamarms.policies.robust import RobustOutlierArmIdentification


@pytest.mark.parametrize("cls", [RoundRobin, WeightedRoundRobin, GenericOutlierDetection,
                                 RobustOutlierArmIdentification])
def test_tea_contributions_are_truncated_and_counted(cls):
    model = make_model("heavy_tailed", p=2.0, B=7.0, estimator="tea")
    pol = cls([str(i) for i in range(30)], model=model)
    big = 1e6  # far above the first truncation level: contributes 0 under TEA, never dropped
    pol.update("0", big)
    assert pol.m[0] == 1 and pol.s[0] == 0.0


@pytest.mark.parametrize("cls", [RoundRobin, GenericOutlierDetection, RobustOutlierArmIdentification])
def test_median_of_means_refused_with_a_clear_message(cls):
    with pytest.raises(ValueError, match="counts and sums"):
        cls([str(i) for i in range(30)], model=make_model("heavy_tailed", p=2.0, B=7.0, estimator="mom"))


def test_ade_needs_a_bounded_model():
    with pytest.raises(ValueError, match="bounded reward model"):
        AdaptiveDoubleExploration([str(i) for i in range(6)], model=make_model("heavy_tailed", p=2.0, B=7.0))

"""The default confidence sequence of each reward model.

Chosen by measured width (``benchmarks/confidence_widths.py``): Bernoulli arms get the exact
Beta-Binomial mixture (narrowest at every rate measured), bounded arms the predictable plug-in empirical
Bernstein sequence (adapts to low variance; the stitched Hoeffding one wins only near maximal variance),
sub-Gaussian arms the stitched boundary, heavy-tailed arms the anytime truncated mean (or, with the
model's estimator ``mom``, the anytime median of means).

>>> from streamarms.models import make_model
>>> type(sequence_for(make_model("bernoulli"), 0.01, "a")).__name__
'BetaBinomialCS'
>>> type(sequence_for(make_model("bounded", a=0, b=5), 0.01)).__name__
'EmpiricalBernsteinCS'
"""

from __future__ import annotations

from typing import Any

from .base import ConfidenceSequence
from .bernstein import EmpiricalBernsteinCS
from .beta_binomial import BetaBinomialCS
from .heavy import TruncatedMeanCS
from .mom import MedianOfMeansCS
from .stitched import StitchedCS

__all__ = ["sequence_for"]


def sequence_for(model: Any, alpha: float, arm: str = "arm") -> ConfidenceSequence:
    """A fresh confidence sequence at level ``1 - alpha`` for one arm under reward ``model``
    (a :class:`streamarms.models.RewardModel`)."""
    name = getattr(model, "name", model)
    if name == "bernoulli":
        return BetaBinomialCS(alpha, arm)
    if name == "bounded":
        return EmpiricalBernsteinCS(alpha, arm, low=model.low, high=model.high)
    if name == "subgaussian":
        return StitchedCS(alpha, arm, sigma=model.sigma)
    if name == "heavy_tailed":
        estimator = getattr(model, "estimator", "tea")
        if estimator == "ea":  # was silently TEA: a run with ea read the same as one with tea
            raise ValueError("the engine's heavy-tailed confidence sequences are the truncated mean (estimator tea, "
                             "the default) and the median of means (mom); the plain mean (ea) has none valid at "
                             "every count here: choose tea or mom")
        if estimator == "mom":
            return MedianOfMeansCS(alpha, arm, p=model.p, C=model.C_eff)
        return TruncatedMeanCS(alpha, arm, p=model.p, B=model.B)
    raise ValueError(f"no confidence sequence for reward model {name!r}")

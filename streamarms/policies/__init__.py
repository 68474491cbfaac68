"""Pure-exploration policies, one module per algorithm family.

>>> len(__all__) >= 13
True
"""

from .ade import AdaptiveDoubleExploration
from .anytime import AnytimeKSigma
from .base import Decision, Event, Policy, Request
from .best_arm import SuccessiveElimination, SuccessiveRejects
from .gold import GenericOutlierDetection
from .ksigma import NaiveRoundRobin, RoundRobin, WeightedRoundRobin
from .robust import RobustOutlierArmIdentification
from .thresholding import APT, LSA, UCBE, Uniform

__all__ = ["Policy", "Request", "Event", "Decision",
           "RoundRobin", "WeightedRoundRobin", "NaiveRoundRobin", "AdaptiveDoubleExploration", "AnytimeKSigma",
           "GenericOutlierDetection", "RobustOutlierArmIdentification", "SuccessiveElimination",
           "SuccessiveRejects", "LSA", "APT", "UCBE", "Uniform"]

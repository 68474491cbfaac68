"""Anytime-valid confidence sequences: one arm's mean, and the k-sigma threshold built from many arms.

* :mod:`.base`: the :class:`ConfidenceSequence` interface (one arm, alpha fixed at construction);
* :mod:`.stitched`: the stitched sub-gamma boundary of Howard et al. (2021), any bounded / sub-Gaussian arm;
* :mod:`.mixture`: a discrete-mixture sub-gamma boundary (~10% tighter), the threshold's linear term;
* :mod:`.bernstein`: predictable plug-in empirical Bernstein (Waudby-Smith & Ramdas 2024), bounded arms;
* :mod:`.beta_binomial`: the exact Beta-Binomial mixture for Bernoulli arms (Robbins 1970);
* :mod:`.heavy`: truncated mean (Yu et al. 2018) made anytime by a union over counts, heavy tails;
* :mod:`.mom`: median of means (Bubeck et al. 2013) made anytime by doubling epochs, heavy tails;
* :mod:`.arms`: the engine's sequences as a paper policy's arm intervals (GOLD, roai);
* :mod:`.factory`: :func:`sequence_for`, the default sequence per reward model;
* :mod:`.threshold`: the anytime interval of theta = mu + k sigma over the arms' means.
"""

from .base import ConfidenceSequence, sequence_from_snapshot
from .bernstein import EmpiricalBernsteinCS
from .beta_binomial import BetaBinomialCS
from .factory import sequence_for
from .heavy import TruncatedMeanCS
from .mom import MedianOfMeansCS
from .stitched import StitchedCS, stitched_boundary

__all__ = ["ConfidenceSequence", "sequence_from_snapshot", "EmpiricalBernsteinCS", "BetaBinomialCS",
           "TruncatedMeanCS", "MedianOfMeansCS", "StitchedCS", "stitched_boundary", "sequence_for"]

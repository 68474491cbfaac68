"""Feeding a threshold track from simulated Bernoulli arms, the way the engine's policy does it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def feed_track(track: Any, arms: Sequence[Any], means: Sequence[float], rounds: int, rng: Any) -> None:
    """``rounds`` rounds of one Bernoulli reward per arm (``rng.random() < p``, arm by arm): each arm's
    confidence sequence takes the reward and, at a grid level, reports to ``track``.

    >>> import numpy as np
    >>> from streamarms.confidence import BetaBinomialCS
    >>> from streamarms.confidence.threshold import ThresholdTrack
    >>> track, arms = ThresholdTrack(3, 1.0, 0.05, low=0.0, high=1.0), [BetaBinomialCS(0.01) for _ in range(3)]
    >>> feed_track(track, arms, [0.2, 0.3, 0.9], 10, np.random.default_rng(0)); track.m_theta
    10
    """
    for _ in range(rounds):
        for i, p in enumerate(means):
            arms[i].update(float(rng.random() < p))
            if arms[i].n in track.levels:
                track.record(arms[i].n, arms[i].s, *arms[i].interval())

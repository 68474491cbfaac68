"""Binomial bounds for statistical tests: fixed seeds, no flakes, no vacuous passes."""

from __future__ import annotations

import math


def max_failures(runs: int, rate: float, alpha: float = 1e-3) -> int:
    """Smallest c with P(Binomial(runs, rate) > c) <= alpha.

    A correct policy (true error rate <= ``rate``) then exceeds ``c`` wrong answers with probability at
    most ``alpha`` for a random seed set, while a policy with a clearly higher error rate fails.

    >>> max_failures(100, 0.1)
    20
    """
    cdf = 0.0
    for c in range(runs + 1):
        cdf += math.comb(runs, c) * rate ** c * (1 - rate) ** (runs - c)
        if 1.0 - cdf <= alpha:
            return c
    return runs

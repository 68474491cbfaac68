"""Shared validation: one home for the checks that the policies, the reward models and the command
line all need.

>>> finite_reward("a", "0.5"), finite_reward("a", 1)
(0.5, 1.0)
>>> finite_reward("a", float("nan"))
Traceback (most recent call last):
...
ValueError: reward for arm 'a' is not finite: nan
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["finite_reward"]


def finite_reward(arm: str, reward: Any) -> float:
    """The reward as a float, or ``ValueError`` naming the arm and the value (not a number, not finite)."""
    try:
        x = float(reward)
    except (TypeError, ValueError):
        raise ValueError(f"reward for arm {arm!r} is not a number: {reward!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"reward for arm {arm!r} is not finite: {reward!r}")
    return x

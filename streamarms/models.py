"""Reward models: what a reward may be, and the confidence radius of an arm's mean.

A reward model is chosen on every fixed-confidence policy. It validates each reward *before* the
policy touches its state (a refused reward raises ``ValueError`` naming the arm and the value, and
changes nothing), and gives the per-arm confidence radius at a significance level.

* :class:`BernoulliModel`: rewards 0/1; Agresti-Coull radius ([ZWW17] Sec. 4.3). The default for 0/1 data.
* :class:`BoundedModel`: rewards in ``[a, b]``; Hoeffding radius ``R sqrt(log(1/delta) / (2 m))``.

Radii are computed from ``m`` (number of samples) and ``s`` (sum of the samples' contributions).
Every model's radius must be non-decreasing as ``delta`` decreases, for fixed ``m`` and ``s``: the
incremental activity checks of the policies rely on it.

>>> BoundedModel(0, 10).check("a", 3)
3.0
>>> BernoulliModel().check("a", 0.5)
Traceback (most recent call last):
...
ValueError: reward for arm 'a' must be 0 or 1 under the bernoulli reward model, got 0.5
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from functools import partial
from typing import Any, Callable

import numpy as np

from . import bounds

__all__ = ["RewardModel", "BernoulliModel", "BoundedModel", "make_model", "model_from_dict"]


class RewardModel(ABC):
    """Base class: validation and per-arm confidence radius."""

    name: str = "model"
    #: reward range (low, high); ``None`` where unbounded
    low: float | None = None
    high: float | None = None

    @property
    def span(self) -> float:
        """``R = b - a`` (infinite for unbounded models)."""
        if self.low is None or self.high is None:
            return math.inf
        return self.high - self.low

    def check(self, arm: str, reward: Any) -> float:
        """Return the reward as a float, or raise ``ValueError`` naming the arm and value."""
        try:
            x = float(reward)
        except (TypeError, ValueError):
            raise ValueError(f"reward for arm {arm!r} is not a number: {reward!r}") from None
        if not math.isfinite(x):
            raise ValueError(f"reward for arm {arm!r} is not finite: {reward!r}")
        self._check_value(arm, x)
        return x

    def _check_value(self, arm: str, x: float) -> None:  # pragma: no cover - trivial default
        pass

    @abstractmethod
    def radius(self, m: float, s: float, delta: float) -> float:
        """Confidence radius of an arm with ``m`` samples summing to ``s`` at significance ``delta``."""

    @abstractmethod
    def radii(self, m: np.ndarray, s: np.ndarray, delta: float) -> np.ndarray:
        """Vectorised :meth:`radius`."""

    def radius_fn(self, delta: float) -> Callable[[float, float], float]:
        """``radius`` with ``delta`` fixed, as a fast ``f(m, s)`` (for many calls at one delta)."""
        return lambda m, s: self.radius(m, s, delta)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if k != "name")
        return f"{type(self).__name__}({args})"


class BernoulliModel(RewardModel):
    """0/1 rewards with the Agresti-Coull interval of [ZWW17] Sec. 4.3.

    ``z_rule`` picks the z of the interval (see :func:`streamarms.bounds.agresti_coull_z`).

    >>> m = BernoulliModel()
    >>> round(m.radius(100, 50, 0.05), 4)
    0.098
    """

    name = "bernoulli"
    low, high = 0.0, 1.0

    def __init__(self, z_rule: str = "normal") -> None:
        bounds.agresti_coull_z(0.5, z_rule)  # validates the rule
        self.z_rule = z_rule
        self._z_cache: dict[float, float] = {}

    def _check_value(self, arm: str, x: float) -> None:
        if x != 0.0 and x != 1.0:
            raise ValueError(f"reward for arm {arm!r} must be 0 or 1 under the bernoulli reward model, got {x!r}")

    def z(self, delta: float) -> float:
        z = self._z_cache.get(delta)
        if z is None:
            if len(self._z_cache) > 16:
                self._z_cache.clear()
            z = self._z_cache[delta] = bounds.agresti_coull_z(delta, self.z_rule)
        return z

    def radius(self, m: float, s: float, delta: float) -> float:
        return bounds.agresti_coull_radius(float(m), float(s), self.z(delta))

    def radii(self, m: np.ndarray, s: np.ndarray, delta: float) -> np.ndarray:
        return bounds.agresti_coull_radius(m, s, self.z(delta))

    def radius_fn(self, delta: float) -> Callable[[float, float], float]:
        return partial(bounds.agresti_coull_radius, z=self.z(delta))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "z_rule": self.z_rule}


class BoundedModel(RewardModel):
    """Rewards in ``[a, b]`` with the Hoeffding radius ``R sqrt(log(1/delta) / (2 m))``, R = b - a.

    >>> round(BoundedModel(0, 1).radius(100, 30, 0.01), 4)
    0.1517
    """

    name = "bounded"

    def __init__(self, a: float = 0.0, b: float = 1.0) -> None:
        a, b = float(a), float(b)
        if not (math.isfinite(a) and math.isfinite(b)) or not a < b:
            raise ValueError(f"bounded reward model needs finite a < b, got a={a}, b={b}")
        self.low, self.high = a, b

    def _check_value(self, arm: str, x: float) -> None:
        if x < self.low or x > self.high:
            raise ValueError(f"reward for arm {arm!r} is {x!r}, outside the bounded reward model's "
                             f"range [{self.low}, {self.high}]")

    def radius(self, m: float, s: float, delta: float) -> float:
        return bounds.hoeffding_radius(float(m), self.span, delta)

    def radii(self, m: np.ndarray, s: np.ndarray, delta: float) -> np.ndarray:
        return bounds.hoeffding_radius(m, self.span, delta)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "a": self.low, "b": self.high}


_MODELS: dict[str, type[RewardModel]] = {"bernoulli": BernoulliModel, "bounded": BoundedModel}


def register_model(cls: type[RewardModel]) -> type[RewardModel]:
    """Make a reward model class known to :func:`make_model` under ``cls.name``."""
    _MODELS[cls.name] = cls
    return cls


def make_model(name: str | RewardModel = "bernoulli", **params: Any) -> RewardModel:
    """Build a reward model by name (``hoeffding`` is an alias of ``bounded``).

    >>> make_model("hoeffding", a=0, b=2)
    BoundedModel(a=0.0, b=2.0)
    """
    if isinstance(name, RewardModel):
        return name
    key = {"hoeffding": "bounded"}.get(name, name)
    if key not in _MODELS:
        raise ValueError(f"unknown reward model {name!r}: choose one of {sorted(_MODELS) + ['hoeffding']}")
    return _MODELS[key](**params)


def model_from_dict(d: dict[str, Any]) -> RewardModel:
    """Inverse of :meth:`RewardModel.to_dict`."""
    d = dict(d)
    return make_model(d.pop("name"), **d)

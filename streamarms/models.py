"""Reward models: what a reward may be, and the confidence radius of an arm's mean.

A reward model is chosen on every fixed-confidence policy. It validates each reward *before* the
policy touches its state (a refused reward raises ``ValueError`` naming the arm and the value, and
changes nothing), and gives the per-arm confidence radius at a significance level.

* :class:`BernoulliModel`: rewards 0/1; Agresti-Coull radius ([ZWW17] Sec. 4.3). The default for 0/1 data.
* :class:`BoundedModel`: rewards in ``[a, b]``; Hoeffding radius ``R sqrt(log(1/delta) / (2 m))``.
* :class:`SubGaussianModel`: any real reward, sub-Gaussian with a known sigma (Gaussian noise).
* :class:`HeavyTailedModel`: any real reward with a finite p-th moment (p in (1, 2]) bounded by B;
  empirical (EA), truncated (TEA) or median-of-means (MoM) estimate ([YSLK18], UAI 2018).

Hooks for estimates other than the plain mean (used by every policy that keeps per-arm counts ``m`` and
sums ``s``): when ``model.transforms`` is true, ``s`` sums ``model.contribution(j, x)`` (j = 1-based index
of the sample within its arm) instead of ``x``; TEA uses it to give a sample above its truncation level
a contribution of 0. When ``model.sum_based`` is false (MoM) the estimate is not ``s / m`` at all: the
policy needs one ``model.make_estimator()`` per arm, and a policy that keeps only counts and sums must
call ``model.require_sum_based(name)``, which refuses with a clear message.

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

import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from . import bounds
from .validation import finite_reward

__all__ = ["RewardModel", "BernoulliModel", "BoundedModel", "SubGaussianModel", "HeavyTailedModel",
           "make_model", "model_from_dict", "register_model"]


class RewardModel(ABC):
    """Base class: validation and per-arm confidence radius."""

    name: str = "model"
    #: reward range (low, high); ``None`` where unbounded
    low: float | None = None
    high: float | None = None
    #: the finite set of rewards :meth:`check` accepts (floats), where it is one: a batch is then checked
    #: by one set inclusion (``RewardCodec.rewards``); ``None``: no such set
    support: frozenset[float] | None = None

    @property
    def span(self) -> float:
        """``R = b - a`` (infinite for unbounded models)."""
        if self.low is None or self.high is None:
            return math.inf
        return self.high - self.low

    def check(self, arm: str, reward: Any) -> float:
        """Return the reward as a float, or raise ``ValueError`` naming the arm and value."""
        x = finite_reward(arm, reward)
        self._check_value(arm, x)
        return x

    def _check_value(self, arm: str, x: float) -> None:  # pragma: no cover - trivial default
        pass

    def holds_flags(self) -> bool:
        """Whether :meth:`check` accepts both 0 and 1: the rewards a flag (a status code against a threshold)
        stands for.

        >>> BernoulliModel().holds_flags(), BoundedModel(0, 2000).holds_flags(), BoundedModel(2, 5).holds_flags()
        (True, True, False)
        """
        for x in (0.0, 1.0):
            try:
                self.check("", x)
            except ValueError:
                return False
        return True

    def of_rates(self) -> bool:
        """Whether this is a model of rates: rewards 0 and 1 and nothing outside ``[0, 1]`` (Bernoulli, bounded
        on ``[0, 1]``): where a record's boolean is the reward 1 or 0 (a flag's rate), and not, say, 1 ms of
        a latency's range.

        >>> BernoulliModel().of_rates(), BoundedModel(0, 1).of_rates(), BoundedModel(0, 2000).of_rates()
        (True, True, False)
        """
        return self.low == 0.0 and self.high == 1.0 and self.holds_flags()

    @abstractmethod
    def radius(self, m: float, s: float, delta: float) -> float:
        """Confidence radius of an arm with ``m`` samples summing to ``s`` at significance ``delta``."""

    @abstractmethod
    def radii(self, m: np.ndarray, s: np.ndarray, delta: float) -> np.ndarray:
        """Vectorised :meth:`radius`."""

    #: whether the per-arm sum ``s`` adds up :meth:`contribution` rather than the raw rewards
    transforms: bool = False
    #: whether the arm estimate is ``s / m``; if not, use one :meth:`make_estimator` per arm
    sum_based: bool = True

    def contribution(self, j: int, x: float) -> float:
        """What the ``j``-th sample (1-based, within its arm) adds to the arm's sum: ``x`` by default."""
        return x

    def require_sum_based(self, policy: str) -> None:
        """Raise ``ValueError`` if this model's estimate is not count-and-sum based (``policy`` names the caller)."""
        if not self.sum_based:
            raise ValueError(
                f"policy {policy!r} keeps only per-arm counts and sums, but the {self!r} reward model's "
                f"estimate needs per-arm state of its own; use a count-and-sum estimate (e.g. "
                f"heavy_tailed with estimator 'tea' or 'ea'), or a policy that supports it (se, sr)")

    def make_estimator(self) -> Any:
        """A fresh per-arm estimator (a ``river.stats.base.Univariate``); needed when not ``sum_based``."""
        raise NotImplementedError(f"{type(self).__name__} is count-and-sum based: use s / m")

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

    support = frozenset((0.0, 1.0))
    #: whether :meth:`check` passes the finite float ``x`` (a predicate, for decoding batches; a C-level
    #: set lookup: -0.0 == 0.0 hashes alike, so it is ``x == 0.0 or x == 1.0``)
    accepts = support.__contains__

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
        return bounds.AgrestiCoullRadius(self.z(delta))  # type: ignore[return-value]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "z_rule": self.z_rule}


#: the largest |bound| of a bounded reward range: its square summed over 1e12 rewards stays far below the
#: largest float (a range of +-1e308 made every interval infinite, with numpy overflow warnings, silently)
MAX_REWARD_BOUND = 1e100


class BoundedModel(RewardModel):
    """Rewards in ``[a, b]`` with the Hoeffding radius ``R sqrt(log(1/delta) / (2 m))``, R = b - a.

    >>> round(BoundedModel(0, 1).radius(100, 30, 0.01), 4)
    0.1517
    """

    name = "bounded"
    low: float   # always bounded here (the base class allows None)
    high: float

    def __init__(self, a: float = 0.0, b: float = 1.0) -> None:
        a, b = float(a), float(b)
        if not (math.isfinite(a) and math.isfinite(b)) or not a < b:
            raise ValueError(f"bounded reward model needs finite a < b, got a={a}, b={b}")
        if max(abs(a), abs(b)) > MAX_REWARD_BOUND:
            raise ValueError(f"bounded reward model's range [{a:g}, {b:g}] is too wide for floats: sums of squared "
                             f"rewards would overflow (|a|, |b| <= {MAX_REWARD_BOUND:g}); rescale the rewards")
        self.low, self.high = a, b

    def accepts(self, x: float) -> bool:
        """Whether :meth:`check` passes the finite float ``x`` (a predicate, for decoding batches)."""
        return not (x < self.low or x > self.high)

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


class SubGaussianModel(RewardModel):
    """Any real reward, sub-Gaussian with parameter ``sigma``: radius ``sigma sqrt(2 log(2/delta) / m)``.

    Right for Gaussian noise of standard deviation sigma (and for rewards in a range of width 2 sigma,
    where it is Hoeffding's radius). Wrong for heavy tails: see :class:`HeavyTailedModel`.

    >>> round(SubGaussianModel(1.0).radius(100, 0.0, 0.05), 4)
    0.2716
    """

    name = "subgaussian"

    def __init__(self, sigma: float = 1.0) -> None:
        sigma = float(sigma)
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"subgaussian reward model needs a finite sigma > 0, got {sigma}")
        self.sigma = sigma

    def radius(self, m: float, s: float, delta: float) -> float:
        return math.inf if m <= 0 else bounds.subgaussian_radius(float(m), self.sigma, delta)

    def radii(self, m: np.ndarray, s: np.ndarray, delta: float) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return bounds.subgaussian_radius(np.asarray(m, dtype=float), self.sigma, delta)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "sigma": self.sigma}


class HeavyTailedModel(RewardModel):
    """Any real reward whose p-th raw moment ``E|X|^p`` is at most ``B``, p in (1, 2] ([YSLK18], UAI 2018).

    ``estimator`` picks the arm estimate and its radius (all in :mod:`streamarms.bounds`):

    * ``"tea"`` (default): truncated empirical average. Sample j of an arm contributes ``x`` if
      ``|x| <= b_j = (B j / log(2/delta0))^(1/p)`` and 0 otherwise (:meth:`contribution`; policies count
      such samples, they are never dropped). Radius :func:`~streamarms.bounds.tea_radius_fixed_truncation`:
      the paper's ``5 B^(1/p) (log(2/delta) / m)^((p-1)/p)`` at ``delta = delta0``, re-derived for the
      shrinking significance of the other families' policies.
    * ``"ea"``: the plain mean with the heavy-tail radius ``(2 C / (m^(p-1) delta))^(1/p)``.
    * ``"mom"``: median of means with :func:`~streamarms.bounds.mom_radius`; not count-and-sum based
      (``sum_based`` is false): only the best-arm policies (SE, SR) support it.

    ``C`` bounds the central moment ``E|X - mu|^p``; by default ``2^p B`` (implied by B). ``delta0`` is the
    significance the TEA truncation schedule and the number of MoM blocks are tuned for (keep it near the
    significance the radius will be used at); SE-delta re-tunes it to its ``delta / K`` (:meth:`tuned`).

    >>> m = HeavyTailedModel(p=2.0, B=7.0)
    >>> m.check("a", -123.0)
    -123.0
    >>> round(m.truncation_level(1), 3), round(m.truncation_level(100), 3)
    (0.695, 6.946)
    >>> m.contribution(1, 0.5), m.contribution(1, 2.0), m.contribution(100, 2.0)
    (0.5, 0.0, 2.0)
    >>> round(m.tuned(0.01).radius(100, 0.0, 0.01), 4)
    3.045
    >>> HeavyTailedModel(p=2.5, B=1.0)
    Traceback (most recent call last):
    ...
    ValueError: moment order p must be in (1, 2], got 2.5
    """

    name = "heavy_tailed"
    ESTIMATORS = ("ea", "tea", "mom")

    def __init__(self, p: float = 2.0, B: float | None = None, estimator: str = "tea",
                 C: float | None = None, delta0: float = 1e-6) -> None:
        if B is None:
            raise ValueError("heavy_tailed reward model needs the moment bound B > 0 (E|X|^p <= B)")
        p, B = float(p), float(B)
        bounds.check_moment_params(p, B)
        if estimator not in self.ESTIMATORS:
            raise ValueError(f"unknown heavy-tailed estimator {estimator!r}: choose one of {list(self.ESTIMATORS)}")
        if C is not None:
            C = float(C)
            if not (math.isfinite(C) and C > 0):
                raise ValueError(f"central moment bound C must be a finite number > 0, got {C}")
        delta0 = float(delta0)
        if not 0.0 < delta0 < 1.0:
            raise ValueError(f"delta0 must be in (0, 1), got {delta0}")
        self.p, self.B, self.estimator, self.C, self.delta0 = p, B, estimator, C, delta0
        self.C_eff = C if C is not None else bounds.central_moment_bound(p, B)
        self.transforms = estimator == "tea"
        self.sum_based = estimator != "mom"
        self._L0 = math.log(2.0 / delta0)
        self.k = bounds.mom_blocks(delta0, p) if estimator == "mom" else 0
        self._e = (p - 1.0) / p
        self._scales: dict[float, float] = {}

    def tuned(self, delta0: float) -> HeavyTailedModel:
        """The same model with the estimator tuned for significance ``delta0``."""
        return HeavyTailedModel(self.p, self.B, self.estimator, self.C, delta0)

    def truncation_level(self, j: int) -> float:
        """TEA level ``b_j`` of the j-th sample of an arm (1-based)."""
        return bounds.tea_truncation_level(j, self.p, self.B, self.delta0)

    def contribution(self, j: int, x: float) -> float:
        if self.estimator != "tea" or not bounds.moment_exceeds(x, self.p, self.B * j / self._L0):  # |x| <= b_j
            return x
        return 0.0

    def make_estimator(self) -> Any:
        from river import stats

        from .estimators import MedianOfMeans, TruncatedMean
        if self.estimator == "tea":
            return TruncatedMean(self.p, self.B, self.delta0)
        if self.estimator == "mom":
            return MedianOfMeans(self.delta0, self.p)
        return stats.Mean()

    def _scale(self, delta: float) -> float:
        """EA/TEA radius after one sample at ``delta`` (they are ``scale * m^(-(p-1)/p)``), cached per delta."""
        sc = self._scales.get(delta)
        if sc is None:
            if len(self._scales) > 16:
                self._scales.clear()
            if self.estimator == "tea":
                sc = bounds.tea_radius_fixed_truncation(1.0, self.p, self.B, delta, self.delta0)
            else:
                sc = bounds.ea_radius(1.0, self.p, self.C_eff, delta)
            self._scales[delta] = sc
        return sc

    def radius(self, m: float, s: float, delta: float) -> float:
        if m <= 0:
            return math.inf
        if self.estimator == "mom":
            return bounds.mom_radius(float(m), self.p, self.C_eff, delta, self.k)
        return self._scale(delta) * m ** -self._e

    def radius_fn(self, delta: float) -> Callable[[float, float], float]:
        if self.estimator == "mom":
            return lambda m, s: self.radius(m, s, delta)
        sc, e = self._scale(delta), -self._e
        return lambda m, s: sc * m ** e if m > 0 else math.inf

    def radii(self, m: np.ndarray, s: np.ndarray, delta: float) -> np.ndarray:
        m = np.asarray(m, dtype=float)
        if self.estimator == "tea":
            return bounds.tea_radius_fixed_truncation(m, self.p, self.B, delta, self.delta0)
        if self.estimator == "mom":
            return bounds.mom_radius(m, self.p, self.C_eff, delta, self.k)
        with np.errstate(divide="ignore"):
            return bounds.ea_radius(m, self.p, self.C_eff, delta)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "p": self.p, "B": self.B, "estimator": self.estimator,
                "C": self.C, "delta0": self.delta0}


_MODELS: dict[str, type[RewardModel]] = {"bernoulli": BernoulliModel, "bounded": BoundedModel}


def register_model(cls: type[RewardModel]) -> type[RewardModel]:
    """Make a reward model class known to :func:`make_model` under ``cls.name``."""
    _MODELS[cls.name] = cls
    return cls


def make_model(name: str | RewardModel = "bernoulli", **params: Any) -> RewardModel:
    """Build a reward model by name (``hoeffding`` is an alias of ``bounded``); a parameter the model does
    not take is a ``ValueError`` naming those it takes.

    >>> make_model("hoeffding", a=0, b=2)
    BoundedModel(a=0.0, b=2.0)
    >>> make_model("bernoulli", foo="bar")
    Traceback (most recent call last):
    ...
    ValueError: the bernoulli reward model has no parameter 'foo' (its parameters: z_rule)
    """
    if isinstance(name, RewardModel):
        return name
    key = {"hoeffding": "bounded"}.get(name, name)
    if key not in _MODELS:
        raise ValueError(f"unknown reward model {name!r}: choose one of {sorted(_MODELS) + ['hoeffding']}")
    cls = _MODELS[key]
    takes = inspect.signature(cls).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in takes.values()):
        unknown = [k for k in params if k not in takes]
        if unknown:
            raise ValueError(f"the {cls.name} reward model has no parameter {', '.join(map(repr, unknown))} "
                             f"(its parameters: {', '.join(takes) or 'none'})")
    return cls(**params)


def model_from_dict(d: dict[str, Any]) -> RewardModel:
    """Inverse of :meth:`RewardModel.to_dict`."""
    d = dict(d)
    return make_model(d.pop("name"), **d)


register_model(SubGaussianModel)
register_model(HeavyTailedModel)

"""Policies by name: how the CLI (and the daemon) build a policy and compute the true answer.

Each :class:`PolicySpec` builds its policy from a list of arm names and explicit keyword parameters
(the fields of :class:`PolicyParams`, each with its one default), and computes the true outlier set
from the true means under that policy's own definition.

>>> {"rr", "wrr", "nrr", "ade", "gold", "roai", "lsa", "se"} <= set(POLICIES)
True
>>> POLICIES["wrr"].kind
'outlier'
>>> POLICIES["rr"].build(["a", "b", "c"], k=1.5).k
1.5
>>> POLICIES["rr"].truth([0.1, 0.1, 0.1, 0.9], k=1.0)
['3']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from . import bounds
from .errors import ConfigError
from .models import HeavyTailedModel, RewardModel, make_model
from .policies.ade import AdaptiveDoubleExploration, ade_outliers
from .policies.anytime import AnytimeKSigma
from .policies.base import Policy, arm_list
from .policies.best_arm import SuccessiveElimination, SuccessiveRejects, best_arm_truth
from .policies.gold import GenericOutlierDetection, true_outliers
from .policies.ksigma import NaiveRoundRobin, RoundRobin, WeightedRoundRobin
from .policies.ksigma_estimates import at_threshold, ksigma_outliers, ksigma_thresholds
from .policies.robust import RobustOutlierArmIdentification, robust_threshold, robust_true_outliers
from .policies.thresholding import APT, LSA, UCBE, Uniform, complexity_H, threshold_truth

__all__ = ["PolicyParams", "PolicySpec", "POLICIES", "OPTIONS", "option_flag", "register", "build_policy",
           "reward_model_of", "heavy_model_of"]


@dataclass(frozen=True)
class PolicyParams:
    """Every parameter a registered policy reads, with its default (``None``: the family's own default,
    e.g. GOLD's ``rho`` 0.9 but WRR's ``rho*``). A policy reads only the ones it needs (its
    :attr:`PolicySpec.params`).

    >>> PolicyParams.of({"k": 3}).k
    3
    >>> PolicyParams.of({"kk": 3})
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: unknown setting 'kk' (did you mean 'k'?)
    """

    # the k-sigma families (rr, wrr, nrr, ade, roai, cs)
    k: float = 2.0
    delta: float = 0.1
    two_sided: bool = False
    #: WRR: pulls per round of an active arm (None: rho* of Eq. 6); GOLD: share of normal arms (None: 0.9)
    rho: float | None = None
    # the reward model: its name (or a model), the range of "bounded", the parameters of the others;
    # ``bound`` is ``streamarms simulate --bound`` (bernoulli/hoeffding) and wins over ``reward_model``
    reward_model: str | RewardModel = "bernoulli"
    bound: str | None = None
    reward_range: tuple[float, float] = (0.0, 1.0)
    model_params: Mapping[str, Any] = field(default_factory=dict)
    #: seed of randomised policies (ADE, SE, SR)
    seed: int | None = None
    # GOLD distance factor; APT precision; SR-T(TEA) design gap (None: each family's default)
    epsilon: float | None = None
    # known threshold on a budget (lsa, apt, ucbe, uniform) and best arm (se, sr)
    threshold: float | None = None
    budget: int | None = None
    ucbe_b: float | None = None
    alpha: float | None = None
    estimator: str | None = None
    moment_p: float | None = None
    moment_bound: float | None = None
    # what the simulator knows (oracle parameters of UCBE, SR-T and the heavy-tailed moment bound)
    env: str = "bernoulli"
    df: float = 3.0
    true_means: tuple[float, ...] | None = None

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> PolicyParams:
        """The parameters named in ``params``; an unknown name is a :class:`ConfigError`."""
        known = _PARAM_NAMES
        for key in params:
            if key not in known:
                raise ConfigError.unknown(key, known)
        kw = dict(params)
        if kw.get("true_means") is not None:
            kw["true_means"] = tuple(kw["true_means"])
        if kw.get("reward_range") is not None:
            a, b = kw["reward_range"]
            kw["reward_range"] = (float(a), float(b))
        return cls(**{k: v for k, v in kw.items() if v is not None})  # None: the default


_PARAM_NAMES = tuple(f.name for f in fields(PolicyParams))


@dataclass(frozen=True)
class PolicySpec:
    """A named policy: :meth:`build` ``(arms, **params) -> Policy``; :meth:`truth` ``(means, **params)``
    -> the true outlier names; ``kind``: ``"outlier"`` (fixed confidence), ``"threshold"`` (fixed
    budget) or ``"best"``; ``params``: the :class:`PolicyParams` it reads (as ``simulate`` prints them); an
    :data:`OPTIONS` value for a policy that does not read it is refused by :meth:`build`, not ignored.

    >>> POLICIES["wrr"].build(["a", "b", "c"], threshold=0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: --threshold does not apply to policy 'wrr' (it is read by lsa, apt, ucbe, uniform): drop ...
    """

    name: str
    factory: Callable[[list[str], PolicyParams], Policy]
    truth_rule: Callable[[list[float], PolicyParams], list[str]] | None
    kind: str = "outlier"
    description: str = ""
    #: ``judge(decision, truth) -> bool``: whether a run's answer is correct (default: the reported
    #: outlier set equals the truth)
    judge: Callable[[Any, list[str]], bool] | None = None
    params: tuple[str, ...] = ()
    #: ``streamarms run``'s passive feed when the user names none: ``"planned"`` (the rewards its plan
    #: asks for) or ``"all"`` (every reward of its arms; for a policy valid under any sampling order whose
    #: plan is narrow, e.g. ``cs``: 0.37x the records of WRR's plan vs 3.0x following its own plan)
    passive_feed: str = "planned"
    #: ``thresholds(means, k)``: the ``(lower, upper)`` thresholds of the rule over the true means (the
    #: k-sigma family, roai), for :meth:`ties` and :meth:`gaps`: ``simulate`` refuses an instance that
    #: would never end and warns of one that runs very long
    thresholds: Callable[[list[float], float], tuple[float, float]] | None = None

    @property
    def ksigma(self) -> bool:
        """Whether the rule's threshold is ``mean + k sd`` of the keys' means (the k-sigma family), so
        that few keys cap the standard score any key can reach (:func:`too_few_for_k`).

        >>> POLICIES["wrr"].ksigma, POLICIES["roai"].ksigma
        (True, False)
        """
        return self.thresholds is ksigma_thresholds

    def ties(self, means: list[float], **params: Any) -> list[str]:
        """The arms no fixed-confidence run can classify: a mean exactly at the threshold (``[]`` for a
        rule without thresholds)."""
        if self.thresholds is None:
            return []
        p = PolicyParams.of(params)
        return [str(i) for i in at_threshold(means, *self.thresholds(list(means), p.k), p.two_sided)]

    def gaps(self, means: list[float], **params: Any) -> tuple[list[float], tuple[float, float]] | None:
        """Each arm's distance to the rule's nearest threshold, and the ``(lower, upper)`` thresholds
        (``None`` for a rule without thresholds); the lower one counts only when two-sided.

        >>> gaps, (lo, hi) = POLICIES["cs"].gaps([0.1, 0.1, 0.1, 0.9], k=1.0)
        >>> [round(g, 3) for g in gaps], round(hi, 3)
        ([0.546, 0.546, 0.546, 0.254], 0.646)
        """
        if self.thresholds is None:
            return None
        p = PolicyParams.of(params)
        lo, hi = self.thresholds(list(means), p.k)
        return [min(abs(v - hi), abs(v - lo)) if p.two_sided else abs(v - hi) for v in means], (lo, hi)

    def build(self, arms: list[str], **params: Any) -> Policy:
        """The policy on ``arms`` with ``params`` (fields of :class:`PolicyParams`, others refused, and an
        :data:`OPTIONS` value this policy does not read)."""
        unread = [o for o in OPTIONS if params.get(o) is not None and o not in self.params]
        if unread:
            readers = [name for name, spec in POLICIES.items() if unread[0] in spec.params]
            choose = f"give --policy {readers[0]}" if len(readers) == 1 else "choose one of them with --policy"
            raise ConfigError(f"{option_flag(unread[0])} does not apply to policy {self.name!r} (it is read by "
                              f"{', '.join(readers)}): drop it, or {choose}")
        return self.factory(arm_list(arms), PolicyParams.of(params))

    def truth(self, means: list[float], **params: Any) -> list[str] | None:
        """The true outliers (arm ``i`` named ``str(i)``) under this policy's definition, ``None`` if it
        has none."""
        return None if self.truth_rule is None else self.truth_rule(list(means), PolicyParams.of(params))


POLICIES: dict[str, PolicySpec] = {}
#: the options only some policies read (each names its own in :attr:`PolicySpec.params`)
OPTIONS = ("rho", "threshold", "budget", "epsilon", "ucbe_b", "alpha")


def option_flag(name: str) -> str:
    """The command-line flag of a :class:`PolicyParams` field: ``--moment-bound``, ``--b`` for ``ucbe_b``."""
    return "--b" if name == "ucbe_b" else f"--{name.replace('_', '-')}"


def register(spec: PolicySpec) -> PolicySpec:
    POLICIES[spec.name] = spec
    return spec


def build_policy(name: str, arms: list[str], **params: Any) -> Policy:
    """Build a registered policy by name with keyword parameters (as the CLI would).

    >>> build_policy("rr", ["a", "b", "c"], k=1.5).k
    1.5
    """
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}: choose one of {', '.join(sorted(POLICIES))}")
    return POLICIES[name].build(arms, **params)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


#: ``simulate --env`` -> the reward model its rewards need, when neither ``--bound`` nor a model is named
_ENV_MODEL = {"beta": "bounded", "gaussian": "subgaussian", "student-t": "heavy_tailed"}


def reward_model_of(p: PolicyParams) -> RewardModel:
    """The reward model named by ``p.bound`` (``simulate --bound``) or ``p.reward_model``; ``heavy_tailed`` from
    ``moment_p``, ``moment_bound``, ``estimator`` and ``model_params`` (which win), ``bounded`` from
    ``reward_range`` and ``model_params`` (which win); a name in ``model_params`` that the model does not take is
    a ``ValueError`` (:func:`~streamarms.models.make_model`).

    >>> m = reward_model_of(PolicyParams(reward_model="heavy_tailed", moment_bound=4.0, moment_p=1.5))
    >>> m.name, m.B, m.p
    ('heavy_tailed', 4.0, 1.5)
    """
    name = p.bound or p.reward_model or "bernoulli"
    if isinstance(name, RewardModel):
        return name
    if p.bound is None and name == "bernoulli" and p.env in _ENV_MODEL:  # simulate --env: what its rewards need
        name = _ENV_MODEL[p.env]
        if name == "subgaussian":
            return make_model("subgaussian", sigma=1.0)  # the simulator's Gaussian arms have sd 1
    if name in ("hoeffding", "bounded"):  # --model-param a=, b= win over --reward-range
        return make_model("bounded", **{"a": p.reward_range[0], "b": p.reward_range[1], **p.model_params})
    if name == "bernoulli":
        return make_model("bernoulli", **p.model_params)  # an unknown name is an error, never ignored
    if name == "heavy_tailed":  # --moment-p, --moment-bound, --estimator; --model-param KEY=VALUE wins
        kw = {k: v for k, v in (("p", p.moment_p), ("B", p.moment_bound), ("estimator", p.estimator)) if v is not None}
        kw.update(p.model_params)
        if kw.get("B") is None and p.true_means is not None and not p.model_params:
            return heavy_model_of(p, len(p.true_means))  # the simulator knows its arms' moments
        if kw.get("B") is None:
            raise ValueError("the heavy_tailed reward model needs a bound B on E|X|^p: --moment-bound B "
                             "(with --moment-p p, default 2; or --model-param B=...)")
        return make_model(name, **kw)
    if name == "subgaussian" and "sigma" not in p.model_params:  # a default scale would be a guess
        raise ValueError("the subgaussian reward model needs the rewards' scale around their key's mean: "
                         "--model-param sigma=S (e.g. the standard deviation of Gaussian noise)")
    return make_model(name, **dict(p.model_params))


# ------------------------------------------------------------------------------------------------
# k-sigma outliers (NeurIPS'17, AAAI'20), GOLD (KDD'20), robust k-sigma, anytime k-sigma (issue 9)
# ------------------------------------------------------------------------------------------------
_KSIGMA = ("k", "delta", "bound")


def _ksigma_truth(means: list[float], p: PolicyParams) -> list[str]:
    return [str(i) for i in ksigma_outliers(means, p.k, p.two_sided)]


def _ksigma_kw(p: PolicyParams) -> dict[str, Any]:
    return {"k": p.k, "delta": p.delta, "model": reward_model_of(p), "two_sided": p.two_sided}


register(PolicySpec("rr", lambda arms, p: RoundRobin(arms, **_ksigma_kw(p)), _ksigma_truth,
                    description="Round-Robin, Zhuang et al. NeurIPS'17 Alg. 1", params=_KSIGMA, thresholds=ksigma_thresholds))
register(PolicySpec("wrr", lambda arms, p: WeightedRoundRobin(arms, rho=p.rho, **_ksigma_kw(p)),
                    _ksigma_truth, description="Weighted Round-Robin, Zhuang et al. NeurIPS'17 Alg. 2",
                    params=(*_KSIGMA, "rho"), thresholds=ksigma_thresholds))
register(PolicySpec("nrr", lambda arms, p: NaiveRoundRobin(arms, **_ksigma_kw(p)), _ksigma_truth,
                    description="Naive Round-Robin baseline (no guarantee), NeurIPS'17 Sec. 5.2", params=_KSIGMA,
                    thresholds=ksigma_thresholds))


def _ade_truth(means: list[float], p: PolicyParams) -> list[str]:
    return [str(i) for i in ade_outliers(means, p.k, p.two_sided)]


def _ade_seed(p: PolicyParams) -> int | None:
    """ADE's own seed (threshold arm draws), derived from the run seed: a simulator seeded with the
    same number would otherwise replay the same Mersenne Twister stream, and the drawn arm would be
    correlated with the reward it gets."""
    return None if p.seed is None else (int(p.seed) * 0x9E3779B97F4A7C15 + 0xADE) % (1 << 63)


register(PolicySpec("ade", lambda arms, p: AdaptiveDoubleExploration(arms, seed=_ade_seed(p), **_ksigma_kw(p)),
                    _ade_truth, description="Adaptive Double Exploration, Zhang et al. AAAI'20 Alg. 1",
                    params=_KSIGMA, thresholds=ksigma_thresholds))


# GOLD (Ban & He, KDD'20): rho is the assumed share of normal arms (CLI --rho, default 0.9)
def _gold_kw(p: PolicyParams) -> dict[str, Any]:
    return {"epsilon": _or(p.epsilon, 2.5), "rho": _or(p.rho, 0.9), "delta": p.delta, "model": reward_model_of(p)}


def _gold_truth(means: list[float], p: PolicyParams) -> list[str]:
    kw = _gold_kw(p)
    return [str(i) for i in true_outliers(means, kw["epsilon"], kw["rho"])]


def _ranking_judge(decision: Any, truth: list[str]) -> bool:
    """[BH20] Sec. 6: a ranking is correct when its first |truth| arms are the true outliers."""
    ranking = decision.ranking or []
    return set(ranking[:len(truth)]) == set(truth)


register(PolicySpec("gold", lambda arms, p: GenericOutlierDetection(arms, **_gold_kw(p)), _gold_truth,
                    description="GOLD, Ban & He KDD'20 Alg. 1: (epsilon, rho) outliers, ranked",
                    judge=_ranking_judge, params=("epsilon", "rho", "delta", "bound")))
register(PolicySpec("gold-cs", lambda arms, p: GenericOutlierDetection(arms, intervals="cs", **_gold_kw(p)),
                    _gold_truth, description="GOLD with the engine's confidence sequences as arm intervals "
                                             "(its rule unchanged)",
                    judge=_ranking_judge, params=("epsilon", "rho", "delta", "bound")))


def _roai_truth(means: list[float], p: PolicyParams) -> list[str]:
    return [str(i) for i in robust_true_outliers(means, p.k, p.two_sided)]


register(PolicySpec("roai", lambda arms, p: RobustOutlierArmIdentification(arms, **_ksigma_kw(p)), _roai_truth,
                    description="robust k-sigma: median + 1.4826 k MAD (after Zhu et al. ICML'20)", params=_KSIGMA,
                    thresholds=robust_threshold))
register(PolicySpec("roai-cs", lambda arms, p: RobustOutlierArmIdentification(arms, intervals="cs", **_ksigma_kw(p)),
                    _roai_truth, description="roai with the engine's confidence sequences as arm intervals "
                                             "(its rule unchanged)", params=_KSIGMA, thresholds=robust_threshold))


# ------------------------------------------------------------------------------------------------
# known threshold on a budget (NeurIPS'19) and best arm with heavy tails (UAI'18)
# ------------------------------------------------------------------------------------------------
def _threshold(p: PolicyParams, policy: str) -> float:
    if p.threshold is None:
        raise ValueError(f"policy {policy!r} needs --threshold")
    return float(p.threshold)


_UNIT_RANGE_ENVS = ("bernoulli", "bounded", "hoeffding", "two-point", "beta")


def _second_moments(p: PolicyParams) -> tuple[float, float] | None:
    """(max_i E X_i^2, max_i Var X_i) of the simulated arms, when the CLI passed them (``true_means``)."""
    means = p.true_means
    if means is None:
        return None
    if p.env in _UNIT_RANGE_ENVS:  # rewards in [0, 1]
        return 1.0, 0.25
    if p.env == "gaussian":
        return max(m * m for m in means) + 1.0, 1.0
    if p.env == "student-t":
        df = float(p.df)
        if df <= 2.0:
            return None
        var = df / (df - 2.0)
        return max(m * m for m in means) + var, var
    return None


def heavy_model_of(p: PolicyParams, n_arms: int, estimator_default: str = "tea") -> HeavyTailedModel:
    """The ``heavy_tailed`` reward model from ``--estimator``, ``--moment-p``, ``--moment-bound``.

    Without ``--moment-bound``, B (and the central bound C) are computed from the simulated arms:
    ``B = (max_i E X_i^2)^(p/2) >= E|X|^p`` (Jensen), ``C = (max_i Var X_i)^(p/2)``.
    """
    order = float(_or(p.moment_p, 2.0))
    B, C = p.moment_bound, None
    if B is None:
        mom = _second_moments(p)
        if mom is None and p.env == "student-t" and p.true_means is not None:  # (simulate: an infinite variance)
            raise ValueError(f"student-t arms with --df {p.df:g} have no finite variance, so no bound on E|X|^p can be "
                             "computed from them: give --moment-bound B, a bound on E|X|^p with --moment-p p below "
                             "--df (or --df above 2)")
        if mom is None:
            raise ValueError("the heavy-tailed estimators need --moment-bound (a bound B on E|X|^p; se and sr always "
                             "use the heavy-tailed model, whatever --reward-model says: for rewards in [a, b] "
                             "and p = 2, B = max(a^2, b^2), e.g. 1 for 0/1 rewards)")
        bounds.check_moment_params(order, 1.0)  # (p first: a --moment-p of 1e308 overflowed the powers below)
        B, C = mom[0] ** (order / 2.0), mom[1] ** (order / 2.0)
    return HeavyTailedModel(p=order, B=float(B), estimator=_or(p.estimator, estimator_default), C=C,
                            delta0=p.delta / max(n_arms, 1))


def _threshold_model(p: PolicyParams, n_arms: int) -> Any:
    if p.env == "bernoulli":
        return make_model("bernoulli")
    if p.env in _UNIT_RANGE_ENVS and p.estimator is None:
        return make_model("bounded", a=0.0, b=1.0)
    if p.env == "gaussian" and p.estimator is None:
        return make_model("subgaussian", sigma=1.0)
    return heavy_model_of(p, n_arms, estimator_default="ea")


def _threshold_kw(arms: list[str], p: PolicyParams, policy: str) -> dict[str, Any]:
    return {"threshold": _threshold(p, policy), "budget": p.budget, "model": _threshold_model(p, len(arms))}


def _threshold_truth(policy: str) -> Callable[[list[float], PolicyParams], list[str]]:
    return lambda means, p: [str(i) for i in threshold_truth(means, _threshold(p, policy))]


def _ucbe(arms: list[str], p: PolicyParams) -> UCBE:
    kw = _threshold_kw(arms, p, "ucbe")
    H = complexity_H(list(p.true_means), kw["threshold"]) if p.true_means is not None else None
    return UCBE(arms, b=_or(p.ucbe_b, 0.0), H=H, **kw)


_THRESHOLD = ("threshold", "budget")
register(PolicySpec("lsa", lambda arms, p: LSA(arms, alpha=_or(p.alpha, 1.35), **_threshold_kw(arms, p, "lsa")),
                    _threshold_truth("lsa"), kind="threshold", params=(*_THRESHOLD, "alpha"),
                    description="Logarithmic-Sample Algorithm, Tao et al. NeurIPS'19 Alg. 1"))
register(PolicySpec("apt", lambda arms, p: APT(arms, epsilon=_or(p.epsilon, 0.05), **_threshold_kw(arms, p, "apt")),
                    _threshold_truth("apt"), kind="threshold", params=(*_THRESHOLD, "epsilon"),
                    description="APT(epsilon), Locatelli et al. ICML'16"))
register(PolicySpec("ucbe", _ucbe, _threshold_truth("ucbe"), kind="threshold", params=(*_THRESHOLD, "ucbe_b"),
                    description="UCBE(b), Audibert & Bubeck COLT'10, a = 4^b (T-K)/H with the oracle H"))
register(PolicySpec("uniform", lambda arms, p: Uniform(arms, **_threshold_kw(arms, p, "uniform")),
                    _threshold_truth("uniform"), kind="threshold", params=_THRESHOLD,
                    description="uniform sampling baseline"))


def _best_truth(means: list[float], p: PolicyParams) -> list[str]:
    return [str(i) for i in best_arm_truth(means)]


def _sr(arms: list[str], p: PolicyParams) -> SuccessiveRejects:
    if p.budget is None:
        raise ValueError("policy 'sr' needs --budget")
    model = heavy_model_of(p, len(arms))
    eps = p.epsilon
    if eps is None and model.estimator == "tea" and p.true_means is not None:
        top = max(p.true_means)
        gaps = [top - m for m in p.true_means if m < top]
        eps = min(gaps) if gaps else None  # oracle: the smallest gap, as the paper suggests
    return SuccessiveRejects(arms, budget=p.budget, model=model, epsilon=eps, seed=p.seed)


register(PolicySpec("se", lambda arms, p: SuccessiveElimination(arms, delta=p.delta, model=heavy_model_of(p, len(arms)),
                                                                 seed=p.seed),
                    _best_truth, kind="best", params=("delta", "estimator"),
                    description="SE-delta, Yu et al. UAI'18 Alg. 1 (EA/TEA/MoM)"))
register(PolicySpec("sr", _sr, _best_truth, kind="best", params=("budget", "estimator", "epsilon"),
                    description="SR-T, Yu et al. UAI'18 Alg. 2 (EA/TEA/MoM)"))

# streamarms' own engine (issue 9): anytime-valid confidence sequences and the threshold track
register(PolicySpec("cs", lambda arms, p: AnytimeKSigma(arms, **_ksigma_kw(p)), _ksigma_truth, params=_KSIGMA,
                    description="anytime k-sigma: confidence sequences + threshold track (streamarms, issue 9)",
                    passive_feed="all", thresholds=ksigma_thresholds))

"""Policies by name: how the CLI (and the daemon) build a policy and compute the true answer.

Each :class:`PolicySpec` says how to build the policy from a list of arm names and parsed options,
and how to compute the true outlier set from the true means under that policy's own definition.

>>> {"rr", "wrr", "nrr", "ade", "gold", "roai", "lsa", "se"} <= set(POLICIES)
True
>>> POLICIES["wrr"].kind
'outlier'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from .models import make_model
from .policies.ade import AdaptiveDoubleExploration, ade_outliers
from .policies.base import Policy
from .policies.gold import GenericOutlierDetection, true_outliers
from .policies.ksigma import NaiveRoundRobin, RoundRobin, WeightedRoundRobin, ksigma_outliers
from .policies.robust import RobustOutlierArmIdentification, robust_true_outliers

__all__ = ["PolicySpec", "POLICIES", "register", "build_policy", "model_from_opts"]


@dataclass(frozen=True)
class PolicySpec:
    """A named policy: ``build(arms, opts) -> Policy``; ``truth(means, opts) -> true outlier names``;
    ``kind``: ``"outlier"`` (fixed confidence), ``"threshold"`` (fixed budget) or ``"best"``."""

    name: str
    build: Callable[[list[str], Any], Policy]
    truth: Callable[[list[float], Any], list[str]] | None
    kind: str = "outlier"
    description: str = ""
    #: ``judge(decision, truth) -> bool``: whether a run's answer is correct (default: the reported
    #: outlier set equals the truth)
    judge: Callable[[Any, list[str]], bool] | None = None


POLICIES: dict[str, PolicySpec] = {}


def register(spec: PolicySpec) -> PolicySpec:
    POLICIES[spec.name] = spec
    return spec


def _opt(opts: Any, name: str, default: Any = None) -> Any:
    v = getattr(opts, name, None)
    return default if v is None else v


def model_from_opts(opts: Any) -> Any:
    """The reward model named by ``opts.bound`` (CLI ``--bound``) or ``opts.reward_model``."""
    name = _opt(opts, "bound") or _opt(opts, "reward_model") or "bernoulli"
    if name in ("hoeffding", "bounded"):
        return make_model("bounded", a=_opt(opts, "a", 0.0), b=_opt(opts, "b_max", 1.0))
    if name == "bernoulli":
        return make_model("bernoulli")
    return make_model(name, **dict(_opt(opts, "model_params", {})))


def _ksigma_truth(means: list[float], opts: Any) -> list[str]:
    return [str(i) for i in ksigma_outliers(means, _opt(opts, "k", 2.0), bool(_opt(opts, "two_sided", False)))]


def _ksigma_kw(opts: Any) -> dict[str, Any]:
    return {"k": _opt(opts, "k", 2.0), "delta": _opt(opts, "delta", 0.1), "model": model_from_opts(opts),
            "two_sided": bool(_opt(opts, "two_sided", False))}


register(PolicySpec("rr", lambda arms, o: RoundRobin(arms, **_ksigma_kw(o)), _ksigma_truth,
                    description="Round-Robin, Zhuang et al. NeurIPS'17 Alg. 1"))
register(PolicySpec("wrr", lambda arms, o: WeightedRoundRobin(arms, rho=_opt(o, "rho"), **_ksigma_kw(o)),
                    _ksigma_truth, description="Weighted Round-Robin, Zhuang et al. NeurIPS'17 Alg. 2"))
register(PolicySpec("nrr", lambda arms, o: NaiveRoundRobin(arms, **_ksigma_kw(o)), _ksigma_truth,
                    description="Naive Round-Robin baseline (no guarantee), NeurIPS'17 Sec. 5.2"))



def _ade_truth(means: list[float], opts: Any) -> list[str]:
    return [str(i) for i in ade_outliers(means, _opt(opts, "k", 2.0), bool(_opt(opts, "two_sided", False)))]


def _ade_seed(opts: Any) -> int | None:
    """ADE's own seed (threshold arm draws), derived from the run seed: a simulator seeded with the
    same number would otherwise replay the same Mersenne Twister stream, and the drawn arm would be
    correlated with the reward it gets."""
    s = _opt(opts, "seed")
    return None if s is None else (int(s) * 0x9E3779B97F4A7C15 + 0xADE) % (1 << 63)


register(PolicySpec("ade", lambda arms, o: AdaptiveDoubleExploration(arms, seed=_ade_seed(o), **_ksigma_kw(o)),
                    _ade_truth, description="Adaptive Double Exploration, Zhang et al. AAAI'20 Alg. 1"))
# GOLD (Ban & He, KDD'20): rho is the assumed share of normal arms (CLI --rho, default 0.9)
def _gold_kw(opts: Any) -> dict[str, Any]:
    return {"epsilon": _opt(opts, "epsilon", 2.5), "rho": _opt(opts, "rho", 0.9),
            "delta": _opt(opts, "delta", 0.1), "model": model_from_opts(opts)}


def _gold_truth(means: list[float], opts: Any) -> list[str]:
    kw = _gold_kw(opts)
    return [str(i) for i in true_outliers(means, kw["epsilon"], kw["rho"])]


def _ranking_judge(decision: Any, truth: list[str]) -> bool:
    """[BH20] Sec. 6: a ranking is correct when its first |truth| arms are the true outliers."""
    ranking = decision.ranking or []
    return set(ranking[:len(truth)]) == set(truth)


register(PolicySpec("gold", lambda arms, o: GenericOutlierDetection(arms, **_gold_kw(o)), _gold_truth,
                    description="GOLD, Ban & He KDD'20 Alg. 1: (epsilon, rho) outliers, ranked",
                    judge=_ranking_judge))


def _roai_truth(means: list[float], opts: Any) -> list[str]:
    return [str(i) for i in robust_true_outliers(means, _opt(opts, "k", 2.0), bool(_opt(opts, "two_sided", False)))]


register(PolicySpec("roai", lambda arms, o: RobustOutlierArmIdentification(arms, **_ksigma_kw(o)), _roai_truth,
                    description="robust k-sigma: median + 1.4826 k MAD (after Zhu et al. ICML'20)"))


def build_policy(name: str, arms: list[str], **opts: Any) -> Policy:
    """Build a registered policy by name with keyword options (as the CLI would).

    >>> build_policy("rr", ["a", "b", "c"], k=1.5).k
    1.5
    """
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}: choose one of {', '.join(sorted(POLICIES))}")
    return POLICIES[name].build(arms, SimpleNamespace(**opts))


# ------------------------------------------------------------------------------------------------
# known threshold on a budget (NeurIPS'19) and best arm with heavy tails (UAI'18)
# ------------------------------------------------------------------------------------------------
from .models import HeavyTailedModel  # noqa: E402
from .policies.best_arm import SuccessiveElimination, SuccessiveRejects, best_arm_truth  # noqa: E402
from .policies.thresholding import APT, LSA, UCBE, Uniform, complexity_H, threshold_truth  # noqa: E402


def _threshold(opts: Any, policy: str) -> float:
    theta = getattr(opts, "threshold", None)
    if theta is None:
        raise ValueError(f"policy {policy!r} needs --threshold")
    return float(theta)


_UNIT_RANGE_ENVS = ("bernoulli", "bounded", "hoeffding", "two-point", "beta")


def _second_moments(opts: Any) -> tuple[float, float] | None:
    """(max_i E X_i^2, max_i Var X_i) of the simulated arms, when the CLI passed them (``true_means``)."""
    means = getattr(opts, "true_means", None)
    if means is None:
        return None
    env = _opt(opts, "env", "bernoulli")
    if env in _UNIT_RANGE_ENVS:  # rewards in [0, 1]
        return 1.0, 0.25
    if env == "gaussian":
        return max(m * m for m in means) + 1.0, 1.0
    if env == "student-t":
        df = float(_opt(opts, "df", 3.0))
        if df <= 2.0:
            return None
        var = df / (df - 2.0)
        return max(m * m for m in means) + var, var
    return None


def heavy_model_from_opts(opts: Any, n_arms: int, estimator_default: str = "tea") -> HeavyTailedModel:
    """The ``heavy_tailed`` reward model from ``--estimator``, ``--moment-p``, ``--moment-bound``.

    Without ``--moment-bound``, B (and the central bound C) are computed from the simulated arms:
    ``B = (max_i E X_i^2)^(p/2) >= E|X|^p`` (Jensen), ``C = (max_i Var X_i)^(p/2)``.
    """
    p = float(_opt(opts, "moment_p", 2.0))
    B = getattr(opts, "moment_bound", None)
    C = None
    if B is None:
        mom = _second_moments(opts)
        if mom is None:
            raise ValueError("the heavy-tailed estimators need --moment-bound (a bound B on E|X|^p)")
        B, C = mom[0] ** (p / 2.0), mom[1] ** (p / 2.0)
    return HeavyTailedModel(p=p, B=float(B), estimator=_opt(opts, "estimator", estimator_default), C=C,
                            delta0=_opt(opts, "delta", 0.1) / max(n_arms, 1))


def _threshold_model(opts: Any, n_arms: int) -> Any:
    env = _opt(opts, "env", "bernoulli")
    if env == "bernoulli":
        return make_model("bernoulli")
    if env in _UNIT_RANGE_ENVS and getattr(opts, "estimator", None) is None:
        return make_model("bounded", a=0.0, b=1.0)
    if env == "gaussian" and getattr(opts, "estimator", None) is None:
        return make_model("subgaussian", sigma=1.0)
    return heavy_model_from_opts(opts, n_arms, estimator_default="ea")


def _threshold_kw(arms: list[str], opts: Any, policy: str) -> dict[str, Any]:
    return {"threshold": _threshold(opts, policy), "budget": getattr(opts, "budget", None),
            "model": _threshold_model(opts, len(arms))}


def _threshold_truth(means: list[float], opts: Any) -> list[str]:
    return [str(i) for i in threshold_truth(means, _threshold(opts, _opt(opts, "policy", "lsa")))]


def _ucbe(arms: list[str], o: Any) -> UCBE:
    kw = _threshold_kw(arms, o, "ucbe")
    means = getattr(o, "true_means", None)
    H = complexity_H(means, kw["threshold"]) if means is not None else None
    return UCBE(arms, b=_opt(o, "ucbe_b", 0.0), H=H, **kw)


register(PolicySpec("lsa", lambda arms, o: LSA(arms, alpha=_opt(o, "alpha", 1.35), **_threshold_kw(arms, o, "lsa")),
                    _threshold_truth, kind="threshold",
                    description="Logarithmic-Sample Algorithm, Tao et al. NeurIPS'19 Alg. 1"))
register(PolicySpec("apt", lambda arms, o: APT(arms, epsilon=_opt(o, "epsilon", 0.05), **_threshold_kw(arms, o, "apt")),
                    _threshold_truth, kind="threshold", description="APT(epsilon), Locatelli et al. ICML'16"))
register(PolicySpec("ucbe", _ucbe, _threshold_truth, kind="threshold",
                    description="UCBE(b), Audibert & Bubeck COLT'10, a = 4^b (T-K)/H with the oracle H"))
register(PolicySpec("uniform", lambda arms, o: Uniform(arms, **_threshold_kw(arms, o, "uniform")),
                    _threshold_truth, kind="threshold", description="uniform sampling baseline"))


def _best_truth(means: list[float], opts: Any) -> list[str]:
    return [str(i) for i in best_arm_truth(means)]


def _sr(arms: list[str], o: Any) -> SuccessiveRejects:
    budget = getattr(o, "budget", None)
    if budget is None:
        raise ValueError("policy 'sr' needs --budget")
    model = heavy_model_from_opts(o, len(arms))
    eps = getattr(o, "epsilon", None)
    means = getattr(o, "true_means", None)
    if eps is None and model.estimator == "tea" and means is not None:
        top = max(means)
        gaps = [top - m for m in means if m < top]
        eps = min(gaps) if gaps else None  # oracle: the smallest gap, as the paper suggests
    return SuccessiveRejects(arms, budget=budget, model=model, epsilon=eps, seed=_opt(o, "seed"))


register(PolicySpec("se", lambda arms, o: SuccessiveElimination(arms, delta=_opt(o, "delta", 0.1),
                                                                 model=heavy_model_from_opts(o, len(arms)),
                                                                 seed=_opt(o, "seed")),
                    _best_truth, kind="best", description="SE-delta, Yu et al. UAI'18 Alg. 1 (EA/TEA/MoM)"))
register(PolicySpec("sr", _sr, _best_truth, kind="best",
                    description="SR-T, Yu et al. UAI'18 Alg. 2 (EA/TEA/MoM)"))


# streamarms' own engine (issue 9): anytime-valid confidence sequences and the threshold track
from .policies.anytime import AnytimeKSigma  # noqa: E402

register(PolicySpec("cs", lambda arms, o: AnytimeKSigma(arms, **_ksigma_kw(o)), _ksigma_truth,
                    description="anytime k-sigma: confidence sequences + threshold track (streamarms, issue 9)"))

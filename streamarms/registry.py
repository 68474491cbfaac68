"""Policies by name: how the CLI (and the daemon) build a policy and compute the true answer.

Each :class:`PolicySpec` says how to build the policy from a list of arm names and parsed options,
and how to compute the true outlier set from the true means under that policy's own definition.

>>> sorted(POLICIES)
['gold', 'nrr', 'roai', 'rr', 'wrr']
>>> POLICIES["wrr"].kind
'outlier'
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

from .models import make_model
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

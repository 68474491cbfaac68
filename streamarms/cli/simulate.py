"""``streamarms simulate``: run a policy on simulated arms, many seeded runs, and report accuracy and
pulls (a table, or one JSON object with ``--json``). Bad arguments: a one-line error, exit 2. Every
policy runs on its defaults (its paper's instance and reward distribution) or says in one line which
flag it needs. Long work shows a progress bar on stderr when that is a terminal (``--quiet``: none).
An instance no run can finish (an arm exactly on the threshold) is refused; one whose runs need more
than a million pulls each (an arm very near it) gets a note on stderr first, with the lower bound.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any

from ..models import HeavyTailedModel
from ..policies.ksigma_estimates import too_few_for_k
from ..policies.thresholding import misclassified
from ..progress import RunProgress
from ..registry import POLICIES
from ..sim import (
    Environment,
    StudentTArm,
    run_policy,
    samples_lower_bound,
    tbpz19_setup,
    yslk18_instance,
    zww17_example,
)
from ..validation import check_k
from .settings import RunSettings
from .types import arm_means, budget, finite, positive_int

__all__ = ["add_simulate_parser", "add_simulate_arguments", "simulate", "simulate_main"]

#: ``--env`` values: how the simulator turns a mean into an arm
ENVS = ["bernoulli", "bounded", "beta", "gaussian", "student-t"]
#: the reward distribution of each policy family's paper instance (the default ``--env``)
DEFAULT_ENV = {"best": "student-t"}


def add_simulate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``simulate`` to the ``streamarms`` sub-commands (sets ``handler=simulate_main``)."""
    p = subparsers.add_parser("simulate", help="run a policy on simulated arms")
    add_simulate_arguments(p)
    p.set_defaults(handler=simulate_main)
    return p


def _add_threshold_and_best_arm_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("known threshold on a budget (lsa, apt, ucbe, uniform) and best arm (se, sr)")
    g.add_argument("--threshold", type=finite, default=None,
                   help="the known threshold theta of lsa/apt/ucbe/uniform (inside the reward range)")
    g.add_argument("--budget", type=budget, default=None,
                   help="sample budget T, >= number of arms (lsa/apt/ucbe/uniform: stop there, needed unless "
                        "--max-pulls caps the run; sr: required)")
    g.add_argument("--epsilon", type=finite, default=None,
                   help="GOLD: the (epsilon, rho) distance factor, > e^(1/16) - 1 ~ 0.0645 (default 2.5); "
                        "APT precision (default 0.05); SR-T(TEA) design parameter, at most the smallest gap "
                        "(default: the true smallest gap)")
    g.add_argument("--b", dest="ucbe_b", type=finite, default=None,
                   help="UCBE b: a = 4^b (T - K) / H with the true complexity H (default 0)")
    g.add_argument("--alpha", type=finite, default=None, help="LSA alpha (default 1.35)")
    g.add_argument("--estimator", choices=["ea", "tea", "mom"], default=None,
                   help="heavy-tailed mean estimate: empirical (ea), truncated (tea, default for se/sr) or "
                        "median of means (mom, se/sr only)")
    g.add_argument("--df", type=finite, default=None, help="degrees of freedom of --env student-t (default 3)")
    g.add_argument("--moment-p", type=finite, default=None,
                   help="moment order p in (1, 2] of the heavy-tailed model (default 2)")
    g.add_argument("--moment-bound", type=finite, default=None,
                   help="bound B on E|X|^p (default: computed from the simulated arms)")


def add_simulate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", default=RunSettings.policy, choices=sorted(POLICIES),
                   help=f"the policy to run (default {RunSettings.policy}, as `streamarms run`; cs is streamarms' own "
                        "engine)")
    p.add_argument("--means", type=arm_means, default=None,
                   help="comma-separated arm means, or @FILE: a text file of them (commas, blanks or line breaks "
                        "between); arm i is named \"i\" (default: a built-in 20-arm instance with outliers 18 and 19 "
                        "at k = 2)")
    p.add_argument("--k", type=float, default=2.0, help="k of the k-sigma rule (default 2)")
    p.add_argument("--delta", type=float, default=0.1, help="error probability (default 0.1)")
    p.add_argument("--bound", choices=["bernoulli", "hoeffding"], default=None,
                   help="confidence intervals: Agresti-Coull for 0/1 rewards or Hoeffding on [0,1] (default: "
                        "what --env's rewards need: bernoulli for 0/1 arms (bernoulli, bounded), hoeffding for beta arms, "
                        "a sub-Gaussian model for gaussian arms, a heavy-tailed one for student-t arms)")
    p.add_argument("--env", default=None, choices=ENVS, metavar="ENV",
                   help="reward distribution of the simulated arms: bernoulli (default; se/sr: student-t), "
                        "bounded (two-point on {0, 1}: bernoulli's draws), beta, gaussian (sd 1) or student-t (--df "
                        "degrees of freedom, scale 1)")
    p.add_argument("--two-sided", action="store_true", help="also flag arms far below the mean")
    p.add_argument("--rho", type=float, default=None,
                   help="WRR: pulls per round of an active arm (default: rho* of Eq. 6); "
                        "GOLD: assumed share of normal arms, in (0.5, 1) (default 0.9)")
    p.add_argument("--runs", type=positive_int, default=1, help="number of seeded runs (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of run 0; run r uses seed + r")
    p.add_argument("--max-pulls", type=positive_int, default=None,
                   help="stop a run after this many pulls (it reports the current estimate)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    _add_threshold_and_best_arm_arguments(p)


def policy_params(opts: argparse.Namespace, means: list[float], seed: int) -> dict[str, Any]:
    """The :class:`~streamarms.registry.PolicyParams` of a run: the flags, and what the simulator knows
    (the true means, the reward distribution) for the oracle parameters of UCBE, SR-T and the
    heavy-tailed moment bound."""
    return {"k": opts.k, "delta": opts.delta, "bound": opts.bound, "two_sided": opts.two_sided, "rho": opts.rho,
            "seed": seed, "threshold": opts.threshold, "budget": opts.budget, "epsilon": opts.epsilon,
            "ucbe_b": opts.ucbe_b, "alpha": opts.alpha, "estimator": opts.estimator, "moment_p": opts.moment_p,
            "moment_bound": opts.moment_bound, "env": opts.env, "df": opts.df, "true_means": means}


def _environment(opts: argparse.Namespace, means: list[float], seed: int) -> Environment:
    if opts.env == "student-t":
        return Environment([StudentTArm(mu, opts.df) for mu in means], seed=seed)
    return Environment(means, seed=seed, model=opts.env)


#: the ``--env`` arms whose rewards each ``--bound`` holds (bernoulli: 0/1; hoeffding: [0, 1])
BOUND_ENVS = {"bernoulli": ("bernoulli", "bounded"), "hoeffding": ("bernoulli", "bounded", "beta")}


def _check_env_flags(opts: argparse.Namespace, params: tuple[str, ...]) -> None:
    """``ValueError`` for ``--bound`` or ``--df`` that the run would not read or whose rewards ``--env`` would not
    draw (found before the first run, not as a bad reward in it)."""
    env = opts.env
    if opts.df is not None and env != "student-t":
        raise ValueError(f"--df is the degrees of freedom of --env student-t, but the arms are {env}: add "
                         "--env student-t, or drop it")
    if opts.bound is None:
        return
    if "bound" not in params:
        model = ("always uses the heavy-tailed model (--estimator, --moment-p, --moment-bound)" if "estimator" in params
                 else "takes its reward model from --env")
        raise ValueError(f"--bound does not apply to policy {opts.policy!r}: it {model}; drop it")
    if env not in BOUND_ENVS[opts.bound]:
        drawn = "rewards anywhere in [0, 1]" if env == "beta" else "unbounded rewards"
        fix = ("--bound hoeffding (the default for beta arms)" if env == "beta" else
               f"no --bound (--env {env} gets {'a sub-Gaussian' if env == 'gaussian' else 'a heavy-tailed'} model)")
        raise ValueError(f"--bound {opts.bound} is for {'0/1 rewards' if opts.bound == 'bernoulli' else 'rewards in [0, 1]'}, "
                         f"but --env {env} draws {drawn}: give {fix}")


def _check_heavy_flags(opts: argparse.Namespace, model: Any) -> None:
    """``ValueError`` for a heavy-tailed setting (``--estimator``, ``--moment-p``, ``--moment-bound``) that the
    run's reward model does not read: the model comes from ``--env`` and ``--bound``, and a Bernoulli or
    Hoeffding policy would ignore it."""
    given = [f"--{o.replace('_', '-')}" for o in ("estimator", "moment_p", "moment_bound")
             if getattr(opts, o, None) is not None]
    if given and not isinstance(model, HeavyTailedModel):
        name = getattr(model, "name", type(model).__name__)
        what = "a setting" if len(given) == 1 else "settings"
        raise ValueError(f"{', '.join(given)}: {what} of the heavy-tailed reward model, but policy {opts.policy!r} "
                         f"on --env {opts.env} uses the {name} model: add --env student-t (heavy tails), or drop "
                         f"{'it' if len(given) == 1 else 'them'}")


#: a run expected to need more pulls than this (by the lower bound below) gets a note before it starts
LONG_RUN_PULLS = 1_000_000


def _warn_if_long(gaps: tuple[list[float], tuple[float, float]] | None, env: Environment, delta: float) -> None:
    """A note on stderr when an arm lies so near the threshold that every run needs more than
    ``LONG_RUN_PULLS`` pulls, even for a policy told the threshold (:func:`samples_lower_bound`): such a
    run otherwise looks like a hang (the progress bar is for terminals only)."""
    if gaps is None:
        return
    d, (lo, hi) = gaps
    var = [getattr(arm, "variance", lambda: math.nan)() for arm in env.arms.values()]
    if any(not math.isfinite(v) for v in var):
        return  # heavy tails (or an arm without a variance): the Gaussian bound does not apply
    bound = samples_lower_bound(d, var, delta)
    if bound < LONG_RUN_PULLS:
        return
    i = max(range(len(d)), key=lambda j: var[j] / d[j] ** 2 if d[j] > 0 else 0.0)
    mean = env.means[str(i)]
    t = hi if math.isclose(abs(mean - hi), d[i]) else lo  # the threshold its gap is to (lo: two-sided only)
    print(f"streamarms simulate: note: arm {i} (mean {mean:g}) lies {d[i]:.3g} from the threshold {t:.6g}: "
          f"every run needs about {float(f'{bound:.2g}'):,.0f} pulls or more (the fewest any policy told the threshold needs; "
          "Garivier & Kaufmann 2016); --max-pulls N caps the runs", file=sys.stderr, flush=True)


def simulate(opts: argparse.Namespace, progress: RunProgress | None = None) -> dict[str, Any]:
    spec = POLICIES[opts.policy]
    if opts.means is not None:
        means = opts.means
    else:  # each family's paper instance
        means = {"threshold": tbpz19_setup(2), "best": yslk18_instance("S1")}.get(spec.kind) or zww17_example()
    names = [str(i) for i in range(len(means))]
    env_model = opts.env = opts.env or DEFAULT_ENV.get(spec.kind, "bernoulli")
    _check_env_flags(opts, spec.params)
    if opts.bound is None and env_model in ("bernoulli", "bounded", "beta"):  # (bounded: two-point on {0, 1})
        opts.bound = "hoeffding" if env_model == "beta" else "bernoulli"  # else: reward_model_of picks by env
    opts.df = 3.0 if opts.df is None else opts.df
    if "k" in spec.params and getattr(opts, "k", None) is not None:
        check_k(opts.k)  # (before the ties below: --k inf put every mean "at the threshold")
    if spec.kind == "threshold" and opts.threshold is None:  # (one line naming all it needs, not one flag a try)
        raise ValueError(f"policy {opts.policy!r} needs --threshold (the known threshold theta)" + (
            " and --budget T (or --max-pulls N to cap an anytime run)" if opts.budget is None and opts.max_pulls is None
            else ""))
    params = policy_params(opts, means, opts.seed)
    truth = spec.truth(means, **params)
    tied = spec.ties(list(means), **params)
    if tied and opts.max_pulls is None:
        who = ("every arm's mean equals the threshold (the means have no spread)" if len(tied) == len(means) else
               f"the mean of arm {', '.join(tied[:5])} equals the threshold" if len(tied) == 1 else
               f"the means of arms {', '.join(tied[:5])} equal the threshold")
        raise ValueError(f"{who}: no fixed-confidence policy can classify {'it' if len(tied) == 1 else 'them'}, "
                         "so a run would never end; "
                         "give --max-pulls N to run it capped")
    if spec.kind == "threshold" and opts.budget is None and opts.max_pulls is None:
        raise ValueError(f"policy {opts.policy!r} runs until its sample budget is spent and never stops "
                         "without one: give --budget T (or --max-pulls N to cap an anytime run)")
    probe = spec.build(names, **params)  # a missing or bad option fails here, before any run
    _check_heavy_flags(opts, getattr(probe, "model", None))
    first = _environment(opts, means, opts.seed)  # (means the arms cannot have fail here, before any note)
    if spec.ksigma and (few := too_few_for_k(len(means), float(getattr(probe, "k", 0.0)))) is not None:
        print(f"streamarms simulate: note: {few}; every run returns no outlier", file=sys.stderr, flush=True)
    if opts.max_pulls is None:
        _warn_if_long(spec.gaps(list(means), **params), first, opts.delta)
    results: list[dict[str, Any]] = []
    try:
        _runs(opts, spec, names, means, truth, progress, results)
    except KeyboardInterrupt:  # (Ctrl-C: the runs done are reported, not thrown away)
        if not results:
            raise
    out: dict[str, Any] = {
        "policy": opts.policy,
        "runs": len(results),
        **({"interrupted": True, "runs_asked": opts.runs} if len(results) < opts.runs else {}),
        "n_arms": len(means),
        "k": opts.k,
        "delta": opts.delta,
        "bound": opts.bound,
        "true_outliers": truth,
        "accuracy": (sum(r["correct"] for r in results) / len(results)) if truth is not None else None,
        "mean_pulls": sum(r["pulls"] for r in results) / len(results),
        "capped_runs": sum(bool(r["capped"]) for r in results),
        "results": results,
    }
    if spec.kind == "threshold":
        out["threshold"] = opts.threshold
        out["budget"] = opts.budget
        out["mean_errors"] = sum(r["errors"] for r in results) / len(results)
    return out


def _runs(opts: argparse.Namespace, spec: Any, names: list[str], means: list[float], truth: list[str] | None,
          progress: Any, results: list[dict[str, Any]]) -> None:
    """The ``--runs`` runs, each row appended to ``results`` as it ends (an interrupt keeps those done)."""
    for r in range(opts.runs):
        seed = opts.seed + r
        env = _environment(opts, means, seed)
        policy = spec.build(names, **policy_params(opts, means, seed))
        res = run_policy(policy, env, max_pulls=opts.max_pulls, keep_events=False,
                         on_progress=None if progress is None else progress.pulls)
        if progress is not None:
            progress.run_done(res.pulls)
        d = res.decision
        outliers = d.outliers if d.done else d.estimated_outliers
        row: dict[str, Any] = {"seed": seed, "outliers": outliers, "pulls": res.pulls, "done": d.done,
                               "capped": res.capped}
        if d.ranking is not None:
            row["ranking"] = d.ranking
        if spec.kind == "threshold":
            row["errors"] = misclassified(d, dict(zip(names, means)), float(opts.threshold))
        if spec.kind == "best":
            row["best"] = outliers[0] if outliers else None
        if truth is not None:
            row["correct"] = (spec.judge(d, truth) if spec.judge is not None
                              else sorted(outliers, key=int) == sorted(truth, key=int))
        results.append(row)


def print_table(out: dict[str, Any], opts: argparse.Namespace) -> None:
    params = "".join(f"  {name} {getattr(opts, name)}" for name in POLICIES[out["policy"]].params
                     if getattr(opts, name, None) is not None)
    print(f"policy {out['policy']}  arms {out['n_arms']}{params}  env {opts.env}  "
          f"true outliers {out['true_outliers']}")
    print(f"{'run':>4} {'seed':>6} {'pulls':>12} {'done':>5} {'correct':>7}  outliers")
    for i, r in enumerate(out["results"]):
        print(f"{i:>4} {r['seed']:>6} {r['pulls']:>12} {str(r['done']):>5} {str(r.get('correct', '-')):>7}  "
              f"{','.join(r['outliers']) or '-'}")
    if "mean_errors" in out:
        print(f"mean errors {out['mean_errors']:.3f}")
    acc = out["accuracy"]
    capped = out["capped_runs"]
    note = (f"  ({capped} of {out['runs']} runs hit --max-pulls: their answers are estimates, not decisions)"
            if capped else "")
    print(f"accuracy {acc if acc is None else f'{acc:.3f}'}  mean pulls {out['mean_pulls']:.1f}{note}")
    spec = POLICIES[out["policy"]]
    if "no guarantee" in spec.description:
        print(f"note: {out['policy']} ({spec.description}): delta does not bound its error rate")


def flagged(message: str, opts: argparse.Namespace) -> str:
    """A policy's or an environment's error ("delta must be in (0, 1), got 0.0") led by the flag that set the value.

    >>> import argparse
    >>> flagged("delta must be in (0, 1), got 0.0", argparse.Namespace(delta=0.0))
    '--delta: delta must be in (0, 1), got 0.0'
    >>> flagged("Bernoulli mean must be in [0, 1], got 1.5", argparse.Namespace(means="0.2,1.5"))
    '--means: Bernoulli mean must be in [0, 1], got 1.5'
    """
    m = re.match(r"(\w+) must ", message)
    if m and m.group(1) in vars(opts):
        return f"--{m.group(1).replace('_', '-')}: {message}"
    if re.match(r"\w+ means? must ", message):
        return f"--means: {message}"
    return message


def simulate_main(opts: argparse.Namespace) -> int:
    try:
        with RunProgress(opts.runs, f"simulate {opts.policy}", quiet=opts.quiet) as progress:
            out = simulate(opts, progress)
    except ValueError as e:
        print(f"streamarms simulate: error: {flagged(str(e), opts)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("streamarms simulate: interrupted", file=sys.stderr)
        return 130
    if opts.json:
        print(json.dumps(out))
    else:
        print_table(out, opts)
    if out.get("interrupted"):
        print(f"streamarms simulate: interrupted after {out['runs']:,} of {out['runs_asked']:,} runs: the results are "
              "of those", file=sys.stderr)
        return 130
    return 0

"""The engine's k-sigma policy vs the papers' policies and a known-threshold oracle (issue 9, item 6).

For each instance: mean samples until the stopping rule fires (+- standard error over the runs) and
the error rate (answer != true outlier set, a capped run counted separately) of

* ``engine``: streamarms' anytime-valid policy (registry name from ``--engine``);
* ``oracle``: :class:`known_threshold_oracle.KnownThresholdOracle`, told the true theta, same arm
  confidence sequences as the engine (``streamarms.confidence.sequence_for``), alpha = delta / n per arm;
* ``rr-bern``/``wrr-bern``: Round-Robin / Weighted Round-Robin (Zhuang, Wang, Wang, "Identifying
  Outlier Arms in Multi-Armed Bandit", NeurIPS 2017) with Agresti-Coull arm intervals
  (``--bound bernoulli``), ``rr-hoef``/``wrr-hoef``: the same with Hoeffding/McDiarmid (``--bound hoeffding``);
* ``ade``: Adaptive Double Exploration (Zhang et al., "Identifying Outlier Arms ...", AAAI 2020);
* ``roai``: robust k-sigma (median + 1.4826 k MAD, after Zhu et al. ICML 2020), judged by its own truth;
  ``roai-cs``: the same rule with the engine's confidence sequences as arm intervals (not a baseline).

Instances (Bernoulli rewards, delta = 0.1; families draw one instance per run, seeded by run index,
so every policy sees the same instances):

* ``zww17-20``: the fixed 20-arm instance of ``streamarms simulate`` (sim.zww17_example), k = 2;
* ``neurips17-n{10,50,200,1000}``: means N(0.5, 0.1^2) clipped to [0, 1], k = 2.5; an arm closer than
  ``GAP`` = 0.05 to theta is redrawn (theta recomputed) until none is, so runs end;
* ``aaai20-n{400,1600}``: means U[0, 1], k = 2.5 (no outliers); redrawn until Delta_min >= 0.1
  (the range of the paper's Fig. 2(a) starts at 0.1);
* ``lowrate-n50``: error/click-like rates: 48 normal arms U[0.005, 0.025], 2 outliers U[0.045, 0.05],
  k = 2.5, arms closer than 0.004 to theta redrawn;
* ``star98``: real data shipped in statsmodels (``statsmodels.datasets.star98``): 303 California
  school districts, share of students above the national median in maths (NABOVE / (NABOVE + NBELOW)),
  k = 2.5. A grouped proportion per unit is the funnel-plot outlier problem the product targets, and
  its rates (0.08-0.93) keep the sample counts runnable; ``statsmodels.datasets.cancer`` (county
  cancer deaths / population) was rejected: rates ~0.004 with gaps to theta of ~1e-5 need ~1e11 samples.

Baselines that run to millions of samples are capped (``--cap``, default 1e6 pulls; the engine and the
oracle, ~5x faster per pull, ``--engine-cap``, default 2e7; the slow baselines RR/WRR-Hoeffding, ADE and
roai, which need millions of samples on almost every instance, ``--slow-cap``, default 3e5) and given fewer
runs (``--slow-runs``); where the first two runs both hit the cap, no more runs are made; a capped run's samples are a lower bound, so a ratio engine / baseline
computed with it is an upper bound (the table marks it with ``>``). ``--bar-caps`` settles the papers' bar
instead: on each instance with a bar (n >= 20) every baseline's cap is raised to ``engine mean / bar`` (the
engine's cached runs; bar 0.5, 0.25 at n >= 200), so a baseline either finishes (its mean is measured) or
is capped at a count that proves ``engine / baseline <= bar``.

Results are cached per (instance, policy) in ``benchmarks/results/engine_vs_papers/*.json`` (one
entry per run index) so an interrupted run resumes; ``--refresh engine`` drops a policy's cache (do it
after the engine changes). Two worker processes at most. Progress on stderr.

Usage::

    python benchmarks/engine_vs_papers.py                 # everything (cached runs are reused)
    python benchmarks/engine_vs_papers.py --quick         # smoke test: tiny instances, no cache
    python benchmarks/engine_vs_papers.py --runs 20 --slow-runs 3 --only zww17-20,star98
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

# the checkout's streamarms (not an installed copy elsewhere), and this folder's helpers
sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

import known_threshold_oracle  # noqa: E402
from known_threshold_oracle import KnownThresholdOracle  # noqa: E402

from streamarms.registry import POLICIES, build_policy  # noqa: E402
from streamarms.sim import Environment, run_policy, zww17_example  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CACHE = RESULTS / "engine_vs_papers"
DELTA = 0.1
GAP = 0.05
#: runs done first everywhere; further runs only where these did not all hit the pull cap
FIRST_RUNS = 2
#: the engine's registry name (the engine helper's policy); override with --engine
ENGINE_DEFAULT = "cs"

#: label -> (registry name or "oracle", options, slow?)
POLICY_SETS: dict[str, tuple[str, dict, bool]] = {
    "engine": ("", {}, False),
    "oracle": ("oracle", {}, False),
    "rr-bern": ("rr", {"bound": "bernoulli"}, False),
    "wrr-bern": ("wrr", {"bound": "bernoulli"}, False),
    "rr-hoef": ("rr", {"bound": "hoeffding"}, True),
    "wrr-hoef": ("wrr", {"bound": "hoeffding"}, True),
    "ade": ("ade", {"bound": "bernoulli"}, True),
    "roai": ("roai", {"bound": "bernoulli"}, True),
    # roai with the engine's arm sequences (rule unchanged): what the engine's intervals save a paper's rule
    "roai-cs": ("roai-cs", {"bound": "bernoulli"}, False),
}
BASELINES = ("rr-bern", "wrr-bern", "rr-hoef", "wrr-hoef", "ade")


# ------------------------------------------------------------------------------------------------
# instances
# ------------------------------------------------------------------------------------------------
def ksigma_theta(means: list[float], k: float) -> float:
    n = len(means)
    mu = sum(means) / n
    return mu + k * math.sqrt(sum((y - mu) ** 2 for y in means) / n)


def redraw_near(means: list[float], k: float, gap: float, draw: Callable[[], float], rng: random.Random,
                keep: int = 0) -> list[float]:
    """Redraw every arm (index >= ``keep``) closer than ``gap`` to theta until none is."""
    means = list(means)
    for _ in range(10_000):
        th = ksigma_theta(means, k)
        near = [i for i in range(keep, len(means)) if abs(means[i] - th) < gap]
        if not near and min(abs(y - th) for y in means) >= gap:
            return means
        for i in near or range(len(means)):
            means[i] = draw()
    raise RuntimeError("could not draw an instance with the requested gap")


def neurips17(n: int) -> Callable[[int], list[float]]:
    def draw(r: int) -> list[float]:
        rng = random.Random(17_000_000 + 1000 * n + r)
        d = lambda: min(1.0, max(0.0, rng.gauss(0.5, 0.1)))  # noqa: E731
        return redraw_near([d() for _ in range(n)], 2.5, GAP, d, rng)
    return draw


def aaai20(n: int) -> Callable[[int], list[float]]:
    def draw(r: int) -> list[float]:
        rng = random.Random(20_000_000 + 1000 * n + r)
        while True:
            means = [rng.random() for _ in range(n)]
            if min(abs(y - ksigma_theta(means, 2.5)) for y in means) >= 0.1:
                return means
    return draw


def lowrate(n: int, outliers: int = 2) -> Callable[[int], list[float]]:
    def draw(r: int) -> list[float]:
        rng = random.Random(30_000_000 + 1000 * n + r)
        normal = lambda: rng.uniform(0.005, 0.025)  # noqa: E731
        means = [normal() for _ in range(n - outliers)] + [rng.uniform(0.045, 0.05) for _ in range(outliers)]
        for _ in range(1000):
            means = redraw_near(means, 2.5, 0.004, normal, rng)
            if sum(y > ksigma_theta(means, 2.5) for y in means) == outliers:
                return means
            means[-outliers:] = [rng.uniform(0.045, 0.05) for _ in range(outliers)]
        raise RuntimeError("could not draw a low-rate instance")
    return draw


@functools.lru_cache(maxsize=1)
def _star98() -> tuple[float, ...]:
    import statsmodels.api as sm  # the `bench` extra
    d = sm.datasets.star98.load_pandas().data
    return tuple(float(a / (a + b)) for a, b in zip(d.NABOVE, d.NBELOW))


def star98_means() -> list[float]:
    return list(_star98())


@dataclass(frozen=True)
class Instance:
    name: str
    k: float
    draw: Callable[[int], list[float]]
    note: str


def instances(quick: bool) -> list[Instance]:
    if quick:
        return [Instance("quick-6", 2.0, lambda r: [0.1, 0.15, 0.1, 0.12, 0.1, 0.9], "6 arms, one far outlier")]
    return [
        Instance("zww17-20", 2.0, lambda r: zww17_example(), "fixed 20-arm instance, k = 2"),
        *[Instance(f"neurips17-n{n}", 2.5, neurips17(n), "N(0.5, 0.1^2) clipped, gap >= 0.05")
          for n in (10, 50, 200, 1000)],
        *[Instance(f"aaai20-n{n}", 2.5, aaai20(n), "U[0, 1], Delta_min >= 0.1") for n in (400, 1600)],
        Instance("lowrate-n50", 2.5, lowrate(50), "48 x U[0.005, 0.025] + 2 x U[0.045, 0.05], gap >= 0.004"),
        Instance("star98", 2.5, lambda r: star98_means(), "statsmodels star98: 303 districts' maths pass rates"),
    ]


# ------------------------------------------------------------------------------------------------
# one run
# ------------------------------------------------------------------------------------------------
def papers_bar(n: int) -> float:
    """The issue's bar on engine / best paper: 0.25 at n >= 200, 0.5 at n >= 20, none below."""
    return 0.25 if n >= 200 else 0.5 if n >= 20 else math.inf


def bar_caps(insts: list[Instance], ecap: int, runs: int) -> dict[str, int]:
    """Per instance with a bar, the baselines' pull cap ``ceil(engine mean / bar) + 1`` from the engine's
    cached runs: a baseline capped there has a mean above ``engine mean / bar``. Instances whose engine runs
    are not all cached are left out (run the engine first)."""
    out = {}
    for inst in insts:
        need = papers_bar(len(inst.draw(0)))
        done = load(inst.name, "engine", ecap)
        pulls = [v["pulls"] for r, v in done.items() if int(r) < runs and not v["capped"]]
        if math.isfinite(need) and len(pulls) == runs:
            out[inst.name] = math.ceil(statistics.fmean(pulls) / need) + 1
    return out


def one_run(job: tuple) -> tuple:
    """``(instance name, label, run index, means, k, registry name, options, cap)`` -> result tuple."""
    inst, label, r, means, k, name, opts, cap = job
    t0 = time.process_time()
    env = Environment(means, seed=r)
    if name == "oracle":
        theta = ksigma_theta(means, k)
        policy = KnownThresholdOracle(env.arm_names, threshold=theta, delta=DELTA)
        truth = [str(i) for i, y in enumerate(means) if y > theta]
        judge = None
    else:
        policy = build_policy(name, env.arm_names, k=k, delta=DELTA, seed=r, **opts)
        truth = POLICIES[name].truth(means, k=k, delta=DELTA, seed=r, **opts)
        judge = POLICIES[name].judge
    res = run_policy(policy, env, max_pulls=cap, keep_events=False)
    d = res.decision
    if judge is not None:
        ok = bool(d.done and judge(d, truth))
    else:
        ok = bool(d.done and set(d.outliers) == set(truth))
    return inst, label, r, {"pulls": res.pulls, "correct": ok, "capped": bool(res.capped),
                            "seconds": round(time.process_time() - t0, 3)}


# ------------------------------------------------------------------------------------------------
# cache
# ------------------------------------------------------------------------------------------------
def cache_path(inst: str, label: str) -> Path:
    return CACHE / f"{inst}__{label}.json"


def load(inst: str, label: str, cap: int) -> dict[str, dict]:
    p = cache_path(inst, label)
    if not p.exists():
        return {}
    data = json.loads(p.read_text())
    if label == "oracle" and data.get("meta", {}).get("oracle_sequence") != known_threshold_oracle.ORACLE_SEQUENCE:
        return {}  # measured with other arm sequences
    # a run capped below the current cap is not a result at this cap: redo it
    return {r: v for r, v in data.get("runs", {}).items() if not (v["capped"] and v["pulls"] < cap)}


def save(inst: str, label: str, runs: dict[str, dict], meta: dict) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    p = cache_path(inst, label)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps({"meta": meta, "runs": runs}, indent=0, sort_keys=True))
    os.replace(tmp, p)


# ------------------------------------------------------------------------------------------------
# summary
# ------------------------------------------------------------------------------------------------
@dataclass
class Cell:
    mean: float
    se: float
    runs: int
    errors: int
    capped: int


def summarise(runs: dict[str, dict]) -> Cell | None:
    if not runs:
        return None
    pulls = [v["pulls"] for v in runs.values()]
    se = statistics.stdev(pulls) / math.sqrt(len(pulls)) if len(pulls) > 1 else 0.0
    errors = sum(1 for v in runs.values() if not v["correct"] and not v["capped"])
    capped = sum(1 for v in runs.values() if v["capped"])
    return Cell(statistics.fmean(pulls), se, len(pulls), errors, capped)


def fmt_count(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e4:
        return f"{x / 1e3:.0f}k"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def report(insts: list[Instance], labels: list[str], cells: dict[tuple[str, str], Cell], cap: int,
           ecap: int, scap: int, engine_name: str) -> tuple[str, dict]:
    lines = []
    w = 16
    lines.append(f"mean samples (+- s.e.) [errors/runs, +capped] per policy; delta = {DELTA}, Bernoulli rewards, "
                 f"pull cap {cap:,} (engine, oracle: {ecap:,}; RR/WRR-Hoeffding, ADE, roai: {scap:,}); engine = {engine_name!r}; oracle arm sequences: "
                 f"{known_threshold_oracle.ORACLE_SEQUENCE}")
    lines.append(f"{'instance':<16}" + "".join(f"{lb:>{w}}" for lb in labels))
    for inst in insts:
        row, row2 = f"{inst.name:<16}", f"{'':<16}"
        for lb in labels:
            c = cells.get((inst.name, lb))
            if c is None:
                row += f"{'-':>{w}}"
                row2 += f"{'':>{w}}"
                continue
            mark = ">" if c.capped else ""
            row += f"{mark + fmt_count(c.mean) + '+-' + fmt_count(c.se):>{w}}"
            row2 += f"{f'[{c.errors}/{c.runs}' + (f' +{c.capped}c' if c.capped else '') + ']':>{w}}"
        lines += [row, row2]
    lines.append("")
    lines.append("ratios: engine / oracle, engine / best baseline (min of RR/WRR x bernoulli/hoeffding and ADE; "
                 "* = a capped baseline's lower bound is below it; < = every baseline capped, an upper bound); "
                 "bar: <= 3 vs oracle, <= 0.5 vs best at n >= 20, <= 0.25 at n >= 200")
    lines.append(f"{'instance':<16}{'n':>6}{'eng/oracle':>12}{'eng/best':>12}{'best':>10}{'bar':>8}{'papers':>8}"
                 f"{'oracle':>8}")
    verdict = {}
    for inst in insts:
        n = len(inst.draw(0))
        e, o = cells.get((inst.name, "engine")), cells.get((inst.name, "oracle"))
        base = [(cells[(inst.name, b)], b) for b in BASELINES if (inst.name, b) in cells]
        if e is None or o is None or not base:
            lines.append(f"{inst.name:<16}{n:>6}{'-':>12}{'-':>12}")
            continue
        # a capped cell is a lower bound: the best is the smallest uncapped mean ("*": some capped
        # baseline's lower bound is below it, i.e. it was not run long enough to rule it out); with no
        # uncapped baseline, the smallest lower bound (the ratio is then an upper bound, "<")
        done_ = [cb for cb in base if not cb[0].capped]
        best, bname = min(done_ or base, key=lambda cb: cb[0].mean)
        if done_ and any(cb[0].mean < best.mean for cb in base if cb[0].capped):
            bname += "*"
        r_or = e.mean / o.mean
        r_best = e.mean / best.mean
        need = papers_bar(n)
        correct = e.errors / e.runs <= DELTA
        papers_ok, oracle_ok = r_best <= need, r_or <= 3.0
        ok = papers_ok and oracle_ok and correct
        verdict[inst.name] = {"n": n, "engine_over_oracle": r_or, "engine_over_best": r_best, "best": bname,
                              "best_capped": bool(best.capped), "meets_bar": bool(ok),
                              "meets_papers_bar": bool(papers_ok and correct), "meets_oracle_bar": bool(oracle_ok and correct),
                              "papers_bar": need if math.isfinite(need) else None}
        lines.append(f"{inst.name:<16}{n:>6}{r_or:>12.2f}{('<' if best.capped else '') + f'{r_best:.3f}':>12}"
                     f"{bname:>10}{'yes' if ok else 'NO':>8}"
                     f"{('yes' if papers_ok else 'NO') if math.isfinite(need) else '-':>8}{'yes' if oracle_ok else 'NO':>8}")
    return "\n".join(lines), verdict


def markdown(insts: list[Instance], labels: list[str], cells: dict[tuple[str, str], Cell],
             verdict: dict) -> str:
    """The README's table: mean samples per policy (">" = capped lower bound) and the engine's ratios."""
    head = ["instance", "n"] + labels + ["engine / oracle", "engine / best paper", "papers bar", "oracle bar (<= 3)"]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for inst in insts:
        row = [f"`{inst.name}`", str(len(inst.draw(0)))]
        for lb in labels:
            c = cells.get((inst.name, lb))
            row.append("-" if c is None else (">" if c.capped else "") + fmt_count(c.mean))
        v = verdict.get(inst.name)
        if v:
            def mark(ok: bool) -> str:
                return "met" if ok else "**not met**"
            row += [f"{v['engine_over_oracle']:.1f}", ("<" if v["best_capped"] else "") +
                    f"{v['engine_over_best']:.2f} ({v['best']})",
                    mark(v["meets_papers_bar"]) if v["papers_bar"] else "- (n < 20)", mark(v["meets_oracle_bar"])]
        else:
            row += ["-", "-", "-", "-"]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def plot(insts: list[Instance], labels: list[str], cells: dict[tuple[str, str], Cell], path: Path) -> None:
    if not labels or not insts:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 8.5), sharex=True)
    width = 0.8 / len(labels)
    xs = range(len(insts))
    for j, lb in enumerate(labels):
        pos, val, err, rat, capped = [], [], [], [], []
        for i, inst in enumerate(insts):
            c = cells.get((inst.name, lb))
            o = cells.get((inst.name, "oracle"))
            if c is None:
                continue
            pos.append(i - 0.4 + (j + 0.5) * width)
            val.append(c.mean)
            err.append(c.se)
            rat.append(c.mean / o.mean if o else float("nan"))
            capped.append(bool(c.capped))
        bars = ax1.bar(pos, val, width, yerr=err, label=lb, capsize=1.5)
        ax2.bar(pos, rat, width, color=bars.patches[0].get_facecolor() if bars.patches else None)
        for p_, v_, cp in zip(pos, val, capped):
            if cp:
                ax1.annotate("cap", (p_, v_), ha="center", va="bottom", fontsize=6, rotation=90)
    ax1.set_yscale("log")
    ax1.set_ylabel("mean samples to decision")
    ax1.legend(ncol=4, fontsize=8)
    ax1.set_title(f"k-sigma outlier arms, delta = {DELTA}: samples per policy (log scale; 'cap' = lower bound)")
    ax2.set_yscale("log")
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.axhline(3.0, color="k", lw=0.6, ls="--")
    ax2.set_ylabel("ratio to the known-threshold oracle")
    ax2.set_xticks(list(xs))
    ax2.set_xticklabels([i.name for i in insts], rotation=30, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="runs per (instance, policy) (default 10)")
    ap.add_argument("--slow-runs", type=int, default=2,
                    help="runs of the slow baselines (RR/WRR-Hoeffding, ADE, roai) (default 2)")
    ap.add_argument("--cap", type=float, default=1e6, help="pull cap per run of the papers' policies (default 1e6)")
    ap.add_argument("--slow-cap", type=float, default=3e5,
                    help="pull cap per run of the slow baselines (RR/WRR-Hoeffding, ADE, roai; default 3e5)")
    ap.add_argument("--bar-caps", action="store_true",
                    help="raise every baseline's cap, per instance, to the engine's mean / the papers' bar (docstring)")
    ap.add_argument("--engine-cap", type=float, default=2e7,
                    help="pull cap per run of the engine and the oracle (fast policies; default 2e7)")
    ap.add_argument("--engine", default=ENGINE_DEFAULT, help=f"registry name of the engine (default {ENGINE_DEFAULT})")
    ap.add_argument("--only", default=None, help="comma-separated instance names")
    ap.add_argument("--policies", default=None, help="comma-separated policy labels (default all)")
    ap.add_argument("--refresh", default="", help="comma-separated policy labels whose cache is dropped")
    ap.add_argument("--workers", type=int, default=2, help="processes (at most 2)")
    ap.add_argument("--quick", action="store_true", help="smoke test: tiny instances, 2 runs, no cache, no plot")
    ap.add_argument("--name", default="engine_vs_papers", help="results file stem")
    ap.add_argument("--report-only", action="store_true", help="no new runs: the table from the cache")
    args = ap.parse_args(argv)

    cap, ecap, scap = int(args.cap), int(args.engine_cap), int(args.slow_cap)
    known_threshold_oracle.arm_sequence_factory("bernoulli", DELTA)  # sets ORACLE_SEQUENCE
    insts = instances(args.quick)
    if args.only:
        want = set(args.only.split(","))
        insts = [i for i in insts if i.name in want]
    labels = list(POLICY_SETS) if not args.policies else args.policies.split(",")
    if args.engine not in POLICIES:
        print(f"engine policy {args.engine!r} is not registered (yet): skipping it", file=sys.stderr)
        labels = [lb for lb in labels if lb != "engine"]
    runs, slow_runs = (2, 1) if args.quick else (args.runs, args.slow_runs)
    if args.quick:
        cap = ecap = scap = min(cap, 100_000)
        labels = [lb for lb in labels if lb in ("engine", "oracle", "rr-bern", "wrr-bern")]
    refresh = set(filter(None, args.refresh.split(",")))
    raised = bar_caps(insts, ecap, runs) if args.bar_caps else {}
    if args.bar_caps:
        missing = [i.name for i in insts if i.name not in raised and math.isfinite(papers_bar(len(i.draw(0))))]
        print(f"--bar-caps: baselines' caps {raised}" + (f"; no cached engine runs for {missing} (run the engine "
              "first): default caps there" if missing else ""), file=sys.stderr)

    results: dict[tuple[str, str], dict[str, dict]] = {}
    jobs = []
    for inst in insts:
        for lb in labels:
            name, opts, slow = POLICY_SETS[lb]
            if lb == "engine":
                name = args.engine
            lcap = ecap if lb in ("engine", "oracle") else scap if slow else cap
            if lb in BASELINES and inst.name in raised:
                lcap = max(lcap, raised[inst.name])
            cached = {} if (args.quick or lb in refresh) else load(inst.name, lb, lcap)
            results[(inst.name, lb)] = cached
            for r in range(slow_runs if slow else runs):
                if str(r) not in cached:
                    jobs.append((inst.name, lb, r, inst.draw(r), inst.k, name, opts, lcap))
    if args.report_only:
        jobs = []
    # cheap jobs first, so the table fills quickly; slow baselines last. Two phases: runs 0 and 1 of
    # everything, then the rest only where those did not both hit the cap (a capped cell is a lower
    # bound either way; more capped runs add cost, not information)
    jobs.sort(key=lambda j: (POLICY_SETS[j[1]][2], len(j[3])))
    phases = []
    for slow in (False, True):  # all runs of the fast policies before the slow baselines
        phases.append([j for j in jobs if POLICY_SETS[j[1]][2] == slow and j[2] < FIRST_RUNS])
        phases.append([j for j in jobs if POLICY_SETS[j[1]][2] == slow and j[2] >= FIRST_RUNS])
    print(f"{len(jobs)} runs to do ({sum(len(v) for v in results.values())} cached)", file=sys.stderr)
    t0 = time.time()
    workers = max(1, min(2, args.workers))
    meta = {"delta": DELTA, "cap": cap, "engine": args.engine, "oracle_sequence": known_threshold_oracle.ORACLE_SEQUENCE}
    done = 0

    def all_capped(key: tuple[str, str]) -> bool:
        got = [results[key].get(str(r)) for r in range(FIRST_RUNS)]
        return all(g is not None and g["capped"] for g in got)

    with Pool(workers) as pool:
        for p_i, phase in enumerate(phases):
            if p_i % 2:
                phase = [j for j in phase if not all_capped((j[0], j[1]))]
            for inst, lb, r, res in pool.imap_unordered(one_run, phase):
                results[(inst, lb)][str(r)] = res
                if not args.quick:
                    save(inst, lb, results[(inst, lb)], meta)
                done += 1
                print(f"[{done}/{len(jobs)} {time.time() - t0:.0f}s] {inst} {lb} run {r}: {res['pulls']:,} pulls"
                      f"{' CAPPED' if res['capped'] else ''}{'' if res['correct'] or res['capped'] else ' WRONG'} "
                      f"({res['seconds']:.1f}s cpu)", file=sys.stderr, flush=True)

    cells = {key: c for key, v in results.items() if (c := summarise(
        {r: x for r, x in v.items() if int(r) < (slow_runs if POLICY_SETS[key[1]][2] else runs)})) is not None}
    text, verdict = report(insts, labels, cells, cap, ecap, scap, args.engine)
    if raised:
        text = text.replace("\n", f"; baselines' caps raised to engine / bar (--bar-caps): {raised}\n", 1)
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        header = (f"# python benchmarks/{Path(__file__).name} {' '.join(argv)}\n"
                  f"# (2 shared cores; sample counts do not depend on machine load)\n")
        (RESULTS / f"{args.name}.txt").write_text(header + text + "\n")
        (RESULTS / f"{args.name}.json").write_text(json.dumps(verdict, indent=1, sort_keys=True) + "\n")
        (RESULTS / f"{args.name}.md").write_text(markdown(insts, labels, cells, verdict) + "\n")
        plot(insts, labels, cells, RESULTS / f"{args.name}.png")
        print(f"wrote {RESULTS / (args.name + '.txt')} and .png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

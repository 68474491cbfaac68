"""Passive stream: records seen until the decision on the embedded default of ``streamarms run``.

The embedded demo (``streamarms run`` with nothing configured) streams 20 keys with Bernoulli rewards
(the [ZWW17]-style instance of ``streamarms simulate``, two outliers at k = 2), each record's key drawn
uniformly. A passive policy cannot ask for a key; it can only use records as they pass. Two ways:

* ``planned``: today's scheduler follows the policy's plan (``wanted``/``defer``): a record is used
  only when its key is among the wanted ones. Measured end to end by running ``streamarms run
  --seed S --summary-json -`` and reading the first episode's ``records``.
* ``greedy``: every arriving record of a key the policy can use is given to it. Sound for a policy whose
  guarantee holds under any sampling order that does not depend on the rewards (an anytime-valid
  policy; the k-sigma papers' RR/WRR also tolerate it, see policies/base.py). Measured with the
  scheduler's own mode when ``streamarms run`` has ``--passive-feed`` (the ``house`` branch adds it),
  and always simulated here: the embedded stream's records in arrival order (``cli.embedded.embedded_stream``,
  same seed) fed to ``policy.update`` until ``policy.done``, counting records from the stream's start.

Prints mean records (+- s.e.) over ``--runs`` seeds per (policy, mode) and the ratio to today's
default (WRR, planned). Bar (issue 9): the engine's records <= 0.5x today's.

Usage::

    python benchmarks/passive_stream.py --runs 10 --engine cs
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

# the checkout's streamarms (not an installed copy elsewhere), and this folder's helpers
sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

from streamarms.registry import POLICIES, build_policy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
N_KEYS = 20
K, DELTA = 2.0, 0.1


def embedded_stream(seed: int):
    from streamarms.cli.embedded import embedded_means
    from streamarms.cli.embedded import embedded_stream as _embedded_stream
    means = embedded_means(N_KEYS)
    names = [f"region-{i:02d}" for i in range(N_KEYS)]
    return names, means, _embedded_stream([nm.encode() for nm in names], means, seed, 1000.0)


def greedy(policy_name: str, seed: int, cap: int = 5_000_000) -> tuple[int, bool]:
    """Records until ``done`` when every record is fed to the policy; and whether the answer is right."""
    names, means, stream = embedded_stream(seed)
    if policy_name == "oracle":
        from engine_vs_papers import ksigma_theta
        from known_threshold_oracle import KnownThresholdOracle
        theta = ksigma_theta(means, K)
        pol = KnownThresholdOracle(names, threshold=theta, delta=DELTA)
        truth = {names[i] for i, y in enumerate(means) if y > theta}
    else:
        pol = build_policy(policy_name, names, k=K, delta=DELTA, seed=seed)
        truth = {names[int(i)] for i in POLICIES[policy_name].truth(means, k=K, delta=DELTA) or []}
    update = pol.update
    seen = 0
    for key, value, _ts in stream:
        seen += 1
        update(key.decode(), 1.0 if value == b'{"reward": 1}' else 0.0)
        if pol.done or seen >= cap:
            break
    d = pol.decision()
    return seen, bool(d.done and set(d.outliers) == truth)


def planned(policy_name: str, seed: int, feed: str | None = None) -> tuple[int, bool]:
    """Records of the first episode of the embedded demo (``streamarms run``), end to end."""
    cmd = [sys.executable, "-m", "streamarms.cli", "run", "--seed", str(seed), "--summary-json", "-",
           "--policy", policy_name]
    if feed:
        cmd += ["--passive-feed", feed]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-500:]}")
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    ep = summary["episodes"][0]
    return ep["records"], bool(ep["done"] and sorted(ep["outliers"]) == sorted(summary["true_outliers"]))


def has_passive_feed() -> bool:
    out = subprocess.run([sys.executable, "-m", "streamarms.cli", "run", "--help"], capture_output=True,
                         text=True, cwd=ROOT)
    return "--passive-feed" in out.stdout


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--engine", default="cs", help="registry name of the engine's policy")
    ap.add_argument("--name", default="passive_stream")
    args = ap.parse_args(argv)
    rows: list[tuple[str, str, list[int], int]] = []
    feed_mode = has_passive_feed()
    plan = [("wrr", "planned"), ("rr", "greedy (simulated)"), ("wrr", "greedy (simulated)"),
            ("oracle", "greedy (simulated)")]
    if args.engine in POLICIES:
        plan += [(args.engine, "planned"), (args.engine, "greedy (simulated)")]
        if feed_mode:
            plan += [(args.engine, "greedy (run --passive-feed all)"), ("wrr", "greedy (run --passive-feed all)")]
    else:
        print(f"engine policy {args.engine!r} not registered: skipped", file=sys.stderr)
    for pol, mode in plan:
        recs, wrong = [], 0
        t0 = time.time()
        for s in range(args.runs):
            if mode == "planned":
                r, ok = planned(pol, s)
            elif mode.startswith("greedy (run"):
                r, ok = planned(pol, s, feed="all")
            else:
                r, ok = greedy(pol, s)
            recs.append(r)
            wrong += not ok
        rows.append((pol, mode, recs, wrong))
        print(f"{pol} {mode}: mean {statistics.fmean(recs):,.0f} ({time.time() - t0:.0f}s)", file=sys.stderr)
    base = statistics.fmean(rows[0][2])
    lines = [f"records seen until the decision, embedded default of `streamarms run` ({N_KEYS} keys, k = {K}, "
             f"delta = {DELTA}), {args.runs} seeds; ratio to today's default (wrr, planned)",
             f"{'policy':<10}{'mode':<34}{'mean records':>14}{'s.e.':>8}{'wrong':>7}{'ratio':>7}"]
    for pol, mode, recs, wrong in rows:
        m = statistics.fmean(recs)
        se = statistics.stdev(recs) / math.sqrt(len(recs)) if len(recs) > 1 else 0.0
        lines.append(f"{pol:<10}{mode:<34}{m:>14,.0f}{se:>8,.0f}{wrong:>7}{m / base:>7.2f}")
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.txt").write_text(f"# python benchmarks/passive_stream.py {' '.join(argv)}\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

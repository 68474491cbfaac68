"""Smoke test of the engine-vs-papers benchmark's ``--quick`` path: it runs, prints its table, and the
known-threshold oracle it compares against answers correctly and far below the papers' policies."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def test_engine_vs_papers_quick_runs_and_prints_its_table() -> None:
    out = subprocess.run([sys.executable, str(BENCH / "engine_vs_papers.py"), "--quick", "--workers", "1"],
                         capture_output=True, text=True, timeout=600, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    assert "quick-6" in out.stdout and "oracle" in out.stdout and "wrr-bern" in out.stdout
    assert "WRONG" not in out.stderr


def test_known_threshold_oracle_is_right_and_cheaper_than_wrr() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from known_threshold_oracle import KnownThresholdOracle
    finally:
        sys.path.remove(str(BENCH))
    from streamarms.registry import build_policy
    from streamarms.sim import Environment, run_policy, zww17_example

    means = zww17_example()
    n = len(means)
    mu = sum(means) / n
    theta = mu + 2.0 * math.sqrt(sum((y - mu) ** 2 for y in means) / n)
    env = Environment(means, seed=0)
    oracle = run_policy(KnownThresholdOracle(env.arm_names, threshold=theta, delta=0.1), env)
    assert oracle.decision.done and sorted(oracle.decision.outliers) == ["18", "19"]
    env = Environment(means, seed=0)
    wrr = run_policy(build_policy("wrr", env.arm_names, k=2.0, delta=0.1), env)
    assert oracle.pulls < wrr.pulls / 3


def test_oracle_refuses_bad_input_without_changing_state() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from known_threshold_oracle import KnownThresholdOracle
    finally:
        sys.path.remove(str(BENCH))
    pol = KnownThresholdOracle(["a", "b"], threshold=0.5)
    with pytest.raises(ValueError, match="'c'"):
        pol.update("c", 1.0)
    with pytest.raises(ValueError, match="'a'.*nan"):
        pol.update("a", float("nan"))
    assert pol.pulls == 0


def test_continuous_benchmark_methods_run_on_a_short_stream() -> None:
    """benchmarks/continuous.py's methods (the monitor with each restart rule, today's episodes through the
    real Scheduler) run on a short shifted stream and find the shifted key."""
    import numpy as np
    sys.path.insert(0, str(BENCH))
    try:
        import continuous
    finally:
        sys.path.remove(str(BENCH))
    rates = np.linspace(0.05, 0.2, 10)
    keys, x = continuous.make_stream(rates, 30_000, 0, [(5_000, 0, 0.9)])
    for method in ("cont-edet", "cont-win4k", "episodes-wrr"):
        r = continuous.run_method(method, keys, x, "k0")
        assert continuous.first(r["alerts"], "k0", "outlier", 5_000) is not None, method
        assert continuous.other_alerts(r["alerts"], "k0") == 0, method


def test_engine_ablation_runs_every_variant_and_the_certificate() -> None:
    """benchmarks/engine_ablation.py patches the engine's internals (the level grid, the sampling balance, the
    variance bound): if one of them is renamed the script must fail here, not print the shipped engine's
    numbers under a variant's name."""
    run = [sys.executable, str(BENCH / "engine_ablation.py"), "--only", "zww17-20", "--runs", "1"]
    out = subprocess.run(run + ["--variants", "base,grid:1.05,balance:2,signed,told,limit:lin:0.5"], capture_output=True,
                         text=True, timeout=600, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("| `zww17-20`"))
    cells = [c.strip() for c in row.strip("|").split("|")[1:]]
    assert len(cells) == 6 and cells[0].endswith("(1.000)") and "err" not in row
    assert len({c.split()[0] for c in cells}) > 1  # the variants change the run
    out = subprocess.run(run + ["--certify"], capture_output=True, text=True, timeout=600, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("| `zww17-20` |") == 4


def test_the_container_lines_benchmark_prints_every_form() -> None:
    out = subprocess.run([sys.executable, str(BENCH / "container_lines.py"), "--entries", "500", "--repeat", "1"],
                         capture_output=True, text=True, timeout=300, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    assert [line.split("  ")[0] for line in out.stdout.splitlines()[1:]] == [
        "JSON lines (the applications' own)", *["CRI", "Docker json-file", "kubectl --prefix --timestamps"] * 2]


def test_the_text_encodings_benchmark_reads_every_encoding() -> None:
    out = subprocess.run([sys.executable, str(BENCH / "text_encodings.py"), "--rows", "500", "--repeat", "1"],
                         capture_output=True, text=True, timeout=300, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    assert [line.split("  ")[0] for line in out.stdout.splitlines()[1:]] == [
        "UTF-8", "Windows-1252, --encoding cp1252", "UTF-16 with its mark (no flag)", "Excel workbook (.xlsx)"]

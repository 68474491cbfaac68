"""`streamarms simulate --policy gold | roai`: JSON contract, truth from each policy's own definition."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from streamarms.cli import main

GOLD_MEANS = ",".join(f"{x:.4f}" for x in list(np.linspace(0.05, 0.15, 8)) + list(np.linspace(0.85, 0.95, 8))
                      + [0.4, 0.42, 0.6, 0.62])
ROAI_MEANS = ",".join(f"{x:.4f}" for x in list(np.linspace(0.2, 0.6, 18)) + [0.98, 0.99])


def run_json(capsys, *args):
    assert main(["simulate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_gold_json_has_ranking_and_its_own_truth(capsys):
    out = run_json(capsys, "--policy", "gold", "--epsilon", "2.5", "--rho", "0.8", "--delta", "0.1",
                   "--means", GOLD_MEANS, "--runs", "2")
    assert out["true_outliers"] == ["16", "17", "18", "19"] and out["accuracy"] == 1.0
    for r in out["results"]:
        assert set(r["ranking"][:4]) == {"16", "17", "18", "19"} and len(r["ranking"]) == 20
        assert r["correct"] is True and r["done"] is True


def test_gold_capped_run_reports_a_ranking(capsys):
    out = run_json(capsys, "--policy", "gold", "--rho", "0.8", "--means", GOLD_MEANS, "--max-pulls", "500")
    r = out["results"][0]
    assert r["pulls"] == 500 and r["done"] is False and len(r["ranking"]) == 20


def test_roai_json_truth_is_median_mad(capsys):
    out = run_json(capsys, "--policy", "roai", "--k", "2", "--means", ROAI_MEANS, "--bound", "hoeffding")
    assert out["true_outliers"] == ["18", "19"]
    assert out["results"][0]["outliers"] == ["18", "19"] and out["accuracy"] == 1.0


@pytest.mark.parametrize("args, text", [
    (["--policy", "gold", "--epsilon", "0.06"], "epsilon must be > e^(1/16) - 1"),
    (["--policy", "gold", "--rho", "1"], "rho must lie strictly between 0.5 and 1"),
    (["--policy", "gold", "--rho", "0.5"], "rho must lie strictly between 0.5 and 1"),
    (["--policy", "gold", "--rho", "0.96"], "n (1 - rho) > 1"),
    (["--policy", "roai", "--k", "0"], "k must be a finite number > 0"),
])
def test_bad_parameters_one_line_exit_2(args, text):
    p = subprocess.run([sys.executable, "-m", "streamarms.cli", "simulate", *args], capture_output=True, text=True)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and text in p.stderr

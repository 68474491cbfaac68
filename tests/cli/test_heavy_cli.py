"""`streamarms simulate` for the thresholding (lsa, apt, ucbe, uniform) and best-arm (se, sr) policies."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from streamarms.cli import main


def run_json(capsys, *args):
    assert main(["simulate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("policy,extra", [("lsa", []), ("apt", ["--epsilon", "0.025"]), ("ucbe", ["--b", "4"]),
                                          ("uniform", [])])
def test_thresholding_json_has_mean_errors(capsys, policy, extra):
    out = run_json(capsys, "--policy", policy, "--threshold", "0.5", "--budget", "2000", "--runs", "3", *extra)
    assert out["true_outliers"] == [str(i) for i in range(10, 20)]  # default: LSA paper's Setup 2
    errors = [r["errors"] for r in out["results"]]
    assert out["mean_errors"] == pytest.approx(sum(errors) / 3)
    assert all(r["pulls"] == 2000 and r["done"] for r in out["results"])


def test_thresholding_on_given_means(capsys):
    out = run_json(capsys, "--policy", "lsa", "--threshold", "0.3", "--budget", "400", "--means", "0.05,0.9,0.2,0.7")
    assert out["true_outliers"] == ["1", "3"] and out["results"][0]["errors"] == 0 and out["mean_errors"] == 0


def test_se_student_t_json_has_best(capsys):
    out = run_json(capsys, "--policy", "se", "--estimator", "tea", "--env", "student-t", "--df", "3",
                   "--moment-p", "2", "--moment-bound", "30", "--means", "0,5,1", "--runs", "2")
    assert out["true_outliers"] == ["1"] and out["accuracy"] == 1.0
    assert [r["best"] for r in out["results"]] == ["1", "1"]


@pytest.mark.parametrize("estimator", ["ea", "tea", "mom"])
def test_sr_estimators(capsys, estimator):
    out = run_json(capsys, "--policy", "sr", "--estimator", estimator, "--env", "gaussian", "--budget", "3000",
                   "--means", "0,2,1")
    r = out["results"][0]
    assert r["best"] == "1" and r["pulls"] <= 3000


@pytest.mark.parametrize("args", [
    ["--policy", "lsa", "--budget", "100"],                                       # no threshold
    ["--policy", "lsa", "--threshold", "1.5", "--budget", "100"],                 # outside [0, 1]
    ["--policy", "lsa", "--threshold", "0.5", "--budget", "-5"],
    ["--policy", "lsa", "--threshold", "0.5", "--budget", "nan"],
    ["--policy", "lsa", "--threshold", "0.5", "--budget", "3"],                   # fewer than the arms
    ["--policy", "apt", "--threshold", "0.5", "--budget", "100", "--epsilon", "-1"],
    ["--policy", "sr", "--env", "student-t"],                                     # no budget
    ["--policy", "se", "--env", "student-t", "--moment-p", "2.5"],
    ["--policy", "se", "--env", "student-t", "--moment-p", "1"],
    ["--policy", "se", "--env", "student-t", "--moment-bound", "0"],
    ["--policy", "se", "--env", "student-t", "--moment-bound", "-2"],
    ["--policy", "se", "--estimator", "median"],
    ["--policy", "lsa", "--threshold", "0.5", "--budget", "100", "--estimator", "mom", "--env", "gaussian"],
])
def test_bad_arguments_one_line_exit_2(args):
    p = subprocess.run([sys.executable, "-m", "streamarms.cli", "simulate", *args], capture_output=True, text=True)
    assert p.returncode == 2, p.stdout
    assert len(p.stderr.strip().splitlines()) == 1 and "error" in p.stderr

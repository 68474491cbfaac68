"""`streamarms simulate`: the contract tests outside the project use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from streamarms.cli import main

EXAMPLE = ("0.3173,0.3411,0.3165,0.2348,0.3453,0.3223,0.2732,0.3291,0.3182,0.3147,0.3014,0.3273,"
           "0.2632,0.2919,0.2759,0.3299,0.3020,0.2854,0.75,0.85")


def run_json(capsys, *args):
    assert main(["simulate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_json_contract(capsys):
    out = run_json(capsys, "--policy", "wrr", "--means", EXAMPLE, "--k", "2", "--delta", "0.1",
                   "--runs", "2", "--seed", "3")
    for key in ("policy", "runs", "accuracy", "mean_pulls", "true_outliers", "results"):
        assert key in out
    assert out["true_outliers"] == ["18", "19"] and out["runs"] == 2 and out["accuracy"] == 1.0
    for r in out["results"]:
        assert set(r) >= {"outliers", "pulls", "correct"}
        assert r["outliers"] == ["18", "19"] and r["correct"] is True


def test_simulate_without_a_policy_runs_the_default_of_run(capsys):
    from streamarms.cli.settings import RunSettings
    out = run_json(capsys, "--quiet")
    assert out["policy"] == RunSettings.policy == "wrr" and out["accuracy"] == 1.0, out


def test_simulate_rr_hoeffding_done_criterion(capsys):
    rr = run_json(capsys, "--policy", "rr", "--bound", "hoeffding", "--k", "2", "--delta", "0.1", "--means", EXAMPLE)
    wrr = run_json(capsys, "--policy", "wrr", "--bound", "hoeffding", "--k", "2", "--delta", "0.1", "--means", EXAMPLE)
    assert rr["results"][0]["outliers"] == ["18", "19"] == wrr["results"][0]["outliers"]
    assert 1e5 < rr["mean_pulls"] < 2e6
    assert wrr["mean_pulls"] <= rr["mean_pulls"]


def test_simulate_table_output(capsys):
    assert main(["simulate", "--policy", "nrr", "--runs", "2"]) == 0
    text = capsys.readouterr().out
    assert "accuracy" in text and "mean pulls" in text


def test_simulate_max_pulls_caps(capsys):
    out = run_json(capsys, "--policy", "rr", "--max-pulls", "100")
    assert out["results"][0]["pulls"] == 100 and out["results"][0]["done"] is False


@pytest.mark.parametrize("args", [["--policy", "nope"], ["--policy", "rr", "--k", "-1"],
                                  ["--policy", "rr", "--means", "0.1,x"], ["--policy", "rr", "--means", "0.5"],
                                  ["--policy", "rr", "--delta", "2"], ["--policy", "rr", "--means", "0.1,1.7"],
                                  ["--policy", "rr", "--runs", "0"]])
def test_bad_arguments_one_line_exit_2(args):
    p = subprocess.run([sys.executable, "-m", "streamarms.cli", "simulate", *args], capture_output=True, text=True)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "error" in p.stderr

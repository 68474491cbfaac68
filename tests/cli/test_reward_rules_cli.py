"""``streamarms run --numeric-strings --reward-at-least X``: an nginx-style JSON access log (every value a
string, the status code where the reward would be) gives the upstream with the high error rate, in both
modes; without the flags the same log is refused record by record with the flag named."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.cli import main

UPSTREAMS = [f"10.0.0.{i}:8080" for i in range(15)]
FAILING = "10.0.0.4:8080"


def _access_log(path, n=60_000, seed=2):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            u = rng.choice(UPSTREAMS)
            failed = rng.random() < (0.2 if u == FAILING else 0.02)
            status = rng.choice(["502", "503"]) if failed else rng.choice(["200", "200", "304", "404"])
            f.write(json.dumps({"upstream_addr": u, "status": status, "request_time": f"{rng.uniform(0, 0.2):.3f}"})
                    + "\n")


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever"]],
                         ids=["episodes", "continuous"])
def test_the_error_rate_of_an_access_log_from_its_quoted_status_codes(tmp_path, mode):
    p, summary = tmp_path / "access.jsonl", tmp_path / "s.json"
    _access_log(p)
    argv = ["run", "--rewards-file", str(p), "--checkpoint", "none", "--key-field", "upstream_addr",
            "--reward-field", "status", "--summary-json", str(summary), *mode]
    assert main([*argv, "--numeric-strings", "--reward-at-least", "500"]) == 0
    s = json.loads(summary.read_text())
    assert s["flagged"] == [FAILING] and not s["invalid"], s


def test_without_the_flags_each_quoted_status_is_refused_naming_the_flag(tmp_path, capsys):
    p, dead = tmp_path / "access.jsonl", tmp_path / "dead.jsonl"
    _access_log(p, n=50)
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--key-field", "upstream_addr",
                 "--reward-field", "status", "--dead-letter-file", str(dead)]) == 2  # (every record refused)
    first = json.loads(dead.read_text().splitlines()[0])
    assert first["reason"] == "not_numeric" and "--numeric-strings" in first["detail"]


@pytest.mark.parametrize("extra,needle", [
    (["--reward-model", "heavy_tailed", "--moment-bound", "2"], "needs the bernoulli reward model"),
    (["--reward-model", "bounded", "--reward-range", "0,1000", "--clip"], "nothing is left to --clip"),
    (["--reward-model", "bounded", "--reward-range", "2,5"], "does not hold"),
])
def test_reward_at_least_with_a_model_that_cannot_hold_0_and_1_is_refused(tmp_path, capsys, extra, needle):
    p = tmp_path / "access.jsonl"
    _access_log(p, n=10)
    assert main(["run", "--rewards-file", str(p), "--key-field", "upstream_addr", "--reward-field", "status",
                 "--reward-at-least", "500", *extra]) == 2
    assert needle in capsys.readouterr().err


def test_a_restart_may_not_change_the_reward_rules(tmp_path, capsys):
    p = tmp_path / "access.jsonl"
    _access_log(p, n=300)
    ck = str(tmp_path / "c.ckpt")
    base = ["run", "--rewards-file", str(p), "--checkpoint", ck, "--key-field", "upstream_addr", "--reward-field",
            "status", "--numeric-strings", "--max-episodes", "1"]
    assert main([*base, "--reward-at-least", "500"]) == 0
    capsys.readouterr()
    assert main([*base, "--reward-at-least", "400"]) == 2
    assert "--reward-at-least 500.0 (this run: 400.0)" in capsys.readouterr().err

"""``streamarms run --reward-in V,W``: the host whose share of ERROR lines stands out, from a log's level
field, in both modes (and from TOML); without the rule each line is refused naming it; a restart may not
change it, and it goes with neither --reward-at-least nor a model without 0 and 1."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.cli import main

HOSTS = [f"web-{i}" for i in range(15)]


def _lines(path, n, seed, outlier, high, low, record):
    """A JSON log of ``n`` lines over HOSTS: ``record(rng, t, host, u, p)``, ``u`` uniform, ``p`` the host's rate."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for t in range(n):
            h = rng.choice(HOSTS)
            f.write(json.dumps(record(rng, t, h, rng.random(), high if h == outlier else low)) + "\n")


def _log(path, n=40_000, seed=6):
    _lines(path, n, seed, "web-9", 0.25, 0.03, lambda rng, t, h, u, p: {
        "ts": 1_700_000_000_000 + 50 * t, "host": h, "level": "ERROR" if u < p else "WARN" if u < p + 0.1 else "INFO"})


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever"]],
                         ids=["episodes", "continuous"])
def test_the_share_of_error_lines_of_each_host(tmp_path, mode):
    p, summary, cfg = tmp_path / "app.jsonl", tmp_path / "s.json", tmp_path / "c.toml"
    _log(p)
    base = ["run", "--rewards-file", str(p), "--checkpoint", "none", "--key-field", "host", "--reward-field", "level",
            "--timestamp-field", "ts", "--summary-json", str(summary), "--quiet", *mode]
    assert main([*base, "--reward-in", "ERROR,FATAL"]) == 0
    got = json.loads(summary.read_text())
    assert got["flagged"] == ["web-9"] and not got["invalid"], got
    assert "reward_rule_unmatched" not in got  # (the rule matched)
    cfg.write_text('reward_in = ["ERROR", "FATAL"]\n')
    assert main([*base, "--config", str(cfg)]) == 0
    assert json.loads(summary.read_text())["flagged"] == ["web-9"]


def test_without_the_rule_a_level_is_refused_naming_it_and_a_restart_may_not_change_it(tmp_path, capsys):
    p, dead, ck = tmp_path / "app.jsonl", tmp_path / "dead.jsonl", str(tmp_path / "c.ckpt")
    _log(p, n=300)
    base = ["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "level", "--max-episodes", "1"]
    assert main([*base, "--checkpoint", "none", "--dead-letter-file", str(dead)]) == 2  # (every record refused)
    first = json.loads(dead.read_text().splitlines()[0])
    assert first["reason"] == "not_numeric" and "--reward-in" in first["detail"], first
    assert main([*base, "--checkpoint", ck, "--reward-in", "ERROR"]) == 0
    capsys.readouterr()
    assert main([*base, "--checkpoint", ck, "--reward-in", "ERROR,WARN"]) == 2
    assert "--reward-in ['ERROR'] (this run: ['ERROR', 'WARN'])" in capsys.readouterr().err


@pytest.mark.parametrize("extra, needle", [
    (["--reward-at-least", "1"], "--reward-at-least and --reward-in are rules for one reward: give one"),
    (["--reward-match", "ERR"], "--reward-in and --reward-match are rules for one reward"),
    (["--reward-model", "bounded", "--reward-range", "0,10", "--clip"], "nothing is left to --clip"),
    (["--reward-model", "heavy_tailed", "--moment-bound", "2"], "needs the bernoulli reward model"),
])
def test_the_rule_refuses_what_cannot_go_with_it(tmp_path, capsys, extra, needle):
    p = tmp_path / "app.jsonl"
    _log(p, n=10)
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "level", "--reward-in",
                 "ERROR", *extra]) == 2
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize("mode", [["--policy", "cs"], ["--forever"]], ids=["episodes", "continuous"])
def test_a_rule_that_matches_nothing_is_said_with_what_the_field_held(tmp_path, capsys, caplog, mode):
    """--reward-in ERROR on a log whose levels are lower case made every reward 0: no key could stand out,
    the keys sat at the threshold 0, undecided, and nothing said why. Now the run warns once during the run
    (after 10,000 such rewards) and again at its end, naming the texts the field held and the one that differs
    only in case; --reward-at-least on numbers that never reach it names the largest."""
    p, summary = tmp_path / "app.jsonl", tmp_path / "s.json"
    _log(p, n=12_000)
    p.write_text(p.read_text().replace('"ERROR"', '"error"'))
    base = ["run", "--rewards-file", str(p), "--checkpoint", "none", "--key-field", "host", "--summary-json",
            str(summary), *mode]
    capsys.readouterr()
    assert main([*base, "--reward-field", "level", "--reward-in", "ERROR,FATAL"]) == 0
    said = json.loads(summary.read_text())["reward_rule_unmatched"]
    assert said.startswith("--reward-in ERROR,FATAL has matched none of the rewards read")
    assert "'INFO' (8" in said and "'error' differs from 'ERROR' only in case" in said, said
    assert said in capsys.readouterr().out
    warned = [r.getMessage() for r in caplog.records if "has matched none" in r.getMessage()]
    assert len(warned) == 1 and "'error' differs from 'ERROR' only in case" in warned[0]  # (once, during the run)
    assert main([*base, "--reward-field", "ts", "--reward-at-least", "2e12", "--quiet"]) == 0
    said = json.loads(summary.read_text())["reward_rule_unmatched"]
    assert said.endswith(f"The largest number the field held was {1_700_000_000_000 + 50 * 11_999:g}"), said


def _messages(path, n=30_000, seed=9):
    _lines(path, n, seed, "web-4", 0.2, 0.02, lambda rng, t, h, u, p: {"host": h, "msg": (
        f"upstream timed out (110: Connection timed out) while reading from {rng.randrange(99)}" if u < p
        else "connect() failed (111: Connection refused)" if u < p + 0.01 else f"GET /api/{rng.randrange(9)} 200")})


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever"]],
                         ids=["episodes", "continuous"])
def test_the_share_of_timeouts_in_each_hosts_messages(tmp_path, capsys, mode):
    """--reward-match REGEX: the share of each host's messages saying 'timed out', from free text (the log's msg
    field) -- a rate --reward-in cannot read (every message differs); from TOML too; a restart may not change it."""
    p, summary, cfg, ck = tmp_path / "app.jsonl", tmp_path / "s.json", tmp_path / "c.toml", str(tmp_path / "c.ckpt")
    _messages(p)
    base = ["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "msg", "--summary-json",
            str(summary), "--quiet", *mode]
    assert main([*base, "--checkpoint", ck, "--reward-match", "timed out"]) == 0
    got = json.loads(summary.read_text())
    assert got["flagged"] == ["web-4"] and not got["invalid"] and "reward_rule_unmatched" not in got, got
    assert main([*base, "--checkpoint", ck, "--reward-match", "timed out|refused"]) == 2
    assert "--reward-match 'timed out' (this run: 'timed out|refused')" in capsys.readouterr().err
    cfg.write_text('reward_match = "timed? out"\n')
    assert main([*base, "--checkpoint", "none", "--config", str(cfg)]) == 0
    assert json.loads(summary.read_text())["flagged"] == ["web-4"]
    with pytest.raises(SystemExit) as e:  # (a usage error: argparse's)
        main([*base, "--checkpoint", "none", "--reward-match", "(unclosed"])
    assert e.value.code == 2 and "expected a regular expression, got '(unclosed'" in capsys.readouterr().err


def test_a_flag_written_only_when_set_is_read_with_reward_missing(tmp_path, capsys):
    """Logs often write a field only when it is set ({"error": "..."} on failed requests alone): every other
    record was refused as missing_reward, so each key's rate was taken over its failures only (1 everywhere).
    --reward-missing 0 reads such a record as the reward 0; without it the refusals' hint names the flag; a
    restart may not change it."""
    rng = random.Random(5)
    p, summary, ck = tmp_path / "app.jsonl", tmp_path / "s.json", str(tmp_path / "c.ckpt")
    with open(p, "w") as f:
        for _ in range(40_000):
            h = rng.choice(HOSTS)
            d = {"host": h, "path": "/x"} | ({"error": "upstream timed out"} if rng.random() < (0.15 if h == "web-2"
                                                                                                    else 0.02) else {})
            f.write(json.dumps(d) + "\n")
    base = ["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "error", "--reward-match", ".",
            "--summary-json", str(summary), "--policy", "cs", "--max-episodes", "1"]
    assert main([*base, "--checkpoint", "none"]) == 0
    assert "--reward-missing X reads a record without it as the reward X" in capsys.readouterr().out
    assert json.loads(summary.read_text())["invalid"]["missing_reward"] > 30_000
    assert main([*base, "--checkpoint", ck, "--reward-missing", "0", "--quiet"]) == 0
    got = json.loads(summary.read_text())
    assert got["flagged"] == ["web-2"] and not got["invalid"], got
    assert main([*base, "--checkpoint", ck, "--reward-missing", "1"]) == 2
    assert "--reward-missing 0.0 (this run: 1.0)" in capsys.readouterr().err
    assert main([*base, "--checkpoint", "none", "--reward-missing", "0.5"]) == 2
    assert "missing must be a reward the model holds, got 0.5" in capsys.readouterr().err

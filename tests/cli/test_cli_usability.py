"""A newcomer's first commands (issue 12): --version, bare `streamarms`, every policy on its
defaults, the --env error, the table's parameters, progress on stderr only."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

import streamarms
from streamarms.cli import main
from streamarms.registry import POLICIES


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamarms.cli", *args], capture_output=True, text=True,
                          timeout=120)


def test_version():
    p = cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"streamarms {streamarms.__version__}"


def test_python_dash_m_streamarms_is_the_command():
    """``python -m streamarms`` (a venv whose scripts are not on PATH) was "No module named streamarms.__main__"."""
    p = subprocess.run([sys.executable, "-m", "streamarms", "--version"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == f"streamarms {streamarms.__version__}"


def test_bare_command_prints_usage_and_the_commands():
    p = cli()
    assert p.returncode == 2
    assert p.stderr.startswith("usage: streamarms")
    assert "simulate" in p.stderr and "run" in p.stderr


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_runs_on_its_defaults_or_names_the_flag_it_needs(policy, capsys):
    rc = main(["simulate", "--policy", policy, "--max-pulls", "3000", "--json"])
    out, err = capsys.readouterr()
    if rc == 0:
        assert json.loads(out)["policy"] == policy and err == ""
    else:
        assert rc == 2 and out == ""
        assert len(err.strip().splitlines()) == 1
        assert f"'{policy}'" in err and " needs --" in err, err


@pytest.mark.parametrize("policy,flags", [("se", []), ("sr", ["--budget", "2000"]),
                                          ("lsa", ["--threshold", "0.5", "--budget", "2000"]),
                                          ("apt", ["--threshold", "0.5", "--budget", "2000"])])
def test_the_flag_named_is_the_one_missing(policy, flags, capsys):
    assert main(["simulate", "--policy", policy, "--max-pulls", "3000", "--json", *flags]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["pulls"] > 0


def test_env_error_lists_every_environment():
    p = cli("simulate", "--policy", "rr", "--env", "cauchy")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    for env in ("bernoulli", "bounded", "beta", "gaussian", "student-t"):
        assert env in p.stderr


def test_table_prints_only_the_parameters_that_apply(capsys):
    assert main(["simulate", "--policy", "lsa", "--threshold", "0.5", "--budget", "500"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "threshold 0.5" in head and "budget 500" in head
    assert " k " not in head and "delta" not in head and "bound" not in head
    assert main(["simulate", "--policy", "wrr", "--max-pulls", "500"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert " k 2.0" in head and "delta 0.1" in head and "bound bernoulli" in head
    assert main(["simulate", "--policy", "se", "--max-pulls", "500"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "delta 0.1" in head and " k " not in head and "bound" not in head and "env student-t" in head


def test_progress_goes_to_a_terminal_stderr_only(monkeypatch, capsys):
    from streamarms import progress

    # not a terminal (capsys, pipes, CI): nothing but the JSON
    assert main(["simulate", "--policy", "rr", "--runs", "2", "--max-pulls", "70000", "--json"]) == 0
    out, err = capsys.readouterr()
    json.loads(out)
    assert err == ""
    # a terminal: the bar and the running pull count on stderr, stdout still exactly the JSON
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(progress.sys, "stderr", tty)
    assert main(["simulate", "--policy", "rr", "--runs", "2", "--max-pulls", "140000", "--json"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["runs"] == 2
    assert "rr" in tty.getvalue() and "run" in tty.getvalue()
    # --quiet: nothing even on a terminal
    tty.seek(0)
    tty.truncate()
    assert main(["simulate", "--policy", "rr", "--max-pulls", "70000", "--json", "--quiet"]) == 0
    assert tty.getvalue() == ""


def test_a_replay_shows_its_progress_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    """A replay of a large log ran minutes without a word: on a terminal it now has a bar over the files'
    bytes with the records read and the keys flagged; never when stderr is not a terminal, with --quiet, or
    while following a file (no end to measure)."""
    from streamarms import progress

    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 9}", "reward": int(i % 9 == 4 or i % 13 == 0)}) + "\n"
                         for i in range(30_000)))
    argv = ["run", "--rewards-file", str(p), "--forever", "--checkpoint", "none"]
    assert main(argv) == 0
    assert "replay" not in capsys.readouterr().err
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(progress.sys, "stderr", tty)
    assert main(argv) == 0
    assert "replay:" in tty.getvalue() and " records, " in tty.getvalue() and "flagged" in tty.getvalue()
    tty.seek(0)
    tty.truncate()
    assert main([*argv, "--quiet"]) == 0
    assert tty.getvalue() == ""
    from streamarms.cli.run import replay_progress
    from streamarms.cli.settings import RunSettings
    from streamarms.connectors.files import JsonlSource

    src = JsonlSource([str(p)])
    bar = replay_progress(src, RunSettings(rewards_file=[str(p)]))
    assert bar is not None
    bar.close()
    assert replay_progress(src, RunSettings(rewards_file=[str(p)], follow=True)) is None
    assert replay_progress(src, RunSettings(rewards_file=["-"])) is None
    src.close()


def test_every_registered_policy_has_its_table_parameters():
    from streamarms.registry import PolicyParams

    known = set(PolicyParams.__dataclass_fields__)
    assert all(spec.params and set(spec.params) <= known for spec in POLICIES.values())


def test_a_replay_whose_records_are_all_refused_says_why_and_what_to_write(tmp_path, capsys):
    """Envelope lines whose "value" is null are refused as value_missing: the run's last line breaks the refusals
    down by reason and the next one says what a line must hold. Nothing read is an error a script sees (exit 2; it
    was exit 0), in the summary too."""
    p = tmp_path / "keyed.jsonl"
    p.write_text("".join(json.dumps({"key": f"k{i % 5}", "value": None, "reward": 1}) + "\n" for i in range(40)))
    summary = tmp_path / "s.json"
    rc = main(["run", "--rewards-file", str(p), "--policy", "cs", "--dead-letter-file", str(tmp_path / "dl.jsonl"),
               "--summary-json", str(summary)])
    out, err = capsys.readouterr()
    assert rc == 2 and json.loads(summary.read_text())["exit_code"] == 2
    assert "error: every record read (40) was refused: nothing to detect outliers in (its last lines say why)" in err
    assert "40 refused (value_missing 40)" in out
    assert 'their "value" is null: a JSONL line with "key" and "value" carries its record in "value"' in out
    assert len((tmp_path / "dl.jsonl").read_text().splitlines()) == 40
    # a restart: reading nothing new is no error; a bad line more is (nothing read yet), a good one ends it
    ckpt = tmp_path / "c.json"
    run = ["run", "--rewards-file", str(p), "--policy", "cs", "--quiet", "--checkpoint", str(ckpt)]
    assert main(run) == 2 and main(run) == 0
    with p.open("a") as f:
        f.write(json.dumps({"key": "k1", "value": None}) + "\n")
    assert main(run) == 2
    assert "every record read (41) was refused: nothing to detect outliers in (without --quiet the run says why)" \
        in capsys.readouterr().err
    with p.open("a") as f:
        f.write(json.dumps({"key": "k1", "reward": 1}) + "\n")
    assert main(run) == 0
    with p.open("a") as f:  # (a bad line after a good one: a dead letter, not a bad setting)
        f.write(json.dumps({"key": "k1", "value": None}) + "\n")
    assert main(run) == 0


def test_a_line_with_key_and_no_value_is_the_record_itself(tmp_path, capsys):
    """{"key": "host-2", "reward": 0, ...} (a newcomer's first file) was read as a Kafka envelope without a value:
    60,000 of 60,000 records refused, exit 0. Without "value" the line is the record, its key in "key"."""
    import random
    rng = random.Random(5)
    p = tmp_path / "keyed.jsonl"
    p.write_text("".join(json.dumps({"key": f"host-{i % 10}", "reward": int(rng.random() < (0.9 if i % 10 == 3 else 0.1)),
                                     "timestamp": 1_700_000_000_000 + i * 1000}) + "\n" for i in range(20_000)))
    for extra in ([], ["--key-field", "key"]):  # (inspect suggests --key-field key: the same records)
        out = tmp_path / "s.json"
        assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--quiet", "--summary-json", str(out), *extra]) == 0
        s = json.loads(out.read_text())
        assert s["invalid"] == {} and s["records"] == 20_000 and s["flagged"] == ["host-3"], (extra, s["invalid"])


def test_status_codes_as_rewards_name_the_rule_that_reads_them(tmp_path, capsys):
    """--reward-field status without a rule: every record refused as out_of_model (200 is no 0 or 1) and the last
    lines said only that most records were refused. Now they name --reward-at-least and the bounded model."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"host": f"h{i % 7}", "status": 500 if i % 17 == 0 else 200}) + "\n"
                         for i in range(2000)))
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "status", "--checkpoint",
                 "none"]) == 2  # (every record refused)
    assert ("the rewards are numbers the bernoulli model (0 or 1) does not hold: --reward-at-least N makes each a flag"
            in capsys.readouterr().out)


@pytest.mark.parametrize("mode", [["--policy", "cs"], ["--forever"]], ids=["episodes", "continuous"])
def test_a_key_field_that_is_an_identifier_is_named(tmp_path, capsys, mode):
    """--key-field on a request id (a key a record): thousands of keys undecided and, past --max-arms, refused as
    too_many_arms, and nothing said that the key was the mistake. Now the last lines say so."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"id": f"req-{i}", "host": f"h{i % 7}", "err": int(i % 11 == 0)}) + "\n"
                         for i in range(4000)))
    argv = ["run", "--rewards-file", str(p), "--reward-field", "err", "--checkpoint", "none", "--max-arms", "3000",
            *mode]
    assert main([*argv, "--key-field", "id"]) == 0
    assert ("3,000 keys in 3,000 records: nearly every record has a key of its own (--key-field id), so no key has "
            "the records a rate needs") in capsys.readouterr().out
    assert main([*argv, "--key-field", "host"]) == 0
    assert "a key of its own" not in capsys.readouterr().out


@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "indented"])
def test_a_json_array_file_is_one_error_naming_the_conversion(tmp_path, capsys, indent):
    """An export that is one JSON array (an API's, a database's) was read as lines: indented, every line refused
    as not_json; compact, one 'incomplete line' left unread -- neither said what the file is. Now: exit 2, before
    any record, with the command that makes it JSON lines; the same rows as lines are read."""
    rows = [{"host": f"h{i % 6}", "err": int(i % 6 == 2 or i % 25 == 0)} for i in range(3000)]
    p = tmp_path / "export.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(rows, indent=indent).encode())
    argv = ["run", "--key-field", "host", "--reward-field", "err", "--policy", "cs", "--checkpoint", "none"]
    assert main([*argv, "--rewards-file", str(p)]) == 2
    assert (f"{p} is one JSON array, not JSON lines (one object a line): write its elements a line each first (jq -c "
            f"'.[]' {p} > {tmp_path / 'export'}.jsonl)") in capsys.readouterr().err
    q = tmp_path / "export.jsonl"
    q.write_text("[1]\n" + "".join(json.dumps(r) + "\n" for r in rows))  # (a bad first line is a dead letter)
    summary = tmp_path / "s.json"
    assert main([*argv, "--rewards-file", str(q), "--quiet", "--summary-json", str(summary)]) == 0
    assert json.loads(summary.read_text())["invalid"] == {"not_object": 1}


def test_pretty_printed_json_objects_are_one_error_naming_the_conversion(tmp_path, capsys):
    """Objects written over several lines (``json.dumps(.., indent=2)``, ``jq .``): every line was refused as
    not_json, and inspect found no field. Now exit 2 before any record, from run and inspect, with the jq command."""
    p = tmp_path / "events.json"
    p.write_text("".join(json.dumps({"host": f"h{i % 6}", "err": i % 7 == 0}, indent=2) + "\n" for i in range(300)))
    said = (f"{p} holds JSON objects written over several lines (pretty-printed: its first line is {{ alone), not JSON "
            f"lines (one object a line): write them a line each first (jq -c . {p} > {tmp_path / 'events'}.lines.jsonl)")
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "err"]) == 2
    assert said in capsys.readouterr().err
    assert main(["inspect", str(p)]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("line", [{"host": "h1", "reward": 1}, {"arm": ["h1"], "reward": 1}, {"arm": 1.5, "reward": 1}])
def test_a_replay_whose_lines_have_no_usable_key_says_where_the_key_goes(tmp_path, capsys, line):
    """The key under another name, or a key that is not a string or an integer: refused as key_missing, and
    the last lines say where a JSONL line's key goes and what it may be."""
    p = tmp_path / "r.jsonl"
    p.write_text((json.dumps(line) + "\n") * 30)
    assert main(["run", "--rewards-file", str(p), "--policy", "cs"]) == 2  # (every record refused)
    out = capsys.readouterr().out
    assert "30 refused (key_missing 30)" in out
    assert 'naming its key in "arm"' in out and "a string or an integer" in out


def test_a_replay_with_a_few_bad_lines_gives_no_advice(tmp_path, capsys):
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 5}", "reward": i % 2}) + "\n" for i in range(40)) + "nope\n")
    assert main(["run", "--rewards-file", str(p), "--policy", "cs"]) == 0
    out = capsys.readouterr().out
    assert "1 refused (not_json 1)" in out and "most records were refused" not in out


def six_key_replay(tmp_path, lines: int):
    """A JSONL replay of six keys in turn, ``k5`` with rate 0.8 and the others 0.2 (deterministic rewards)."""
    p = tmp_path / "r.jsonl"
    rows = [json.dumps({"arm": f"k{i % 6}", "reward": int((i * 7919) % 10 < (8 if i % 6 == 5 else 2))})
            for i in range(lines)]
    p.write_text("\n".join(rows) + "\n")
    return p


def test_a_replay_that_ends_mid_episode_says_what_the_episode_had_classified(tmp_path, capsys):
    """The input ran out before the episode's stopping rule fired: the last lines say which keys were
    classified and which were not, and --summary-json has the same as ``unfinished_episode``."""
    p = six_key_replay(tmp_path, 600)
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--summary-json", str(summary),
                 "--discovery-records", "100"]) == 0
    out = capsys.readouterr().out
    u = json.loads(summary.read_text())["unfinished_episode"]
    assert u["episode"] == 1 and len(u["outliers"]) + u["normals"] + len(u["undecided"]) == 6 and u["undecided"]
    assert f"episode 1 unfinished at the stop ({u['samples']:,} samples)" in out
    assert f"{len(u['undecided'])} undecided (" in out


def test_the_unfinished_episode_names_the_keys_it_had_no_record_of(tmp_path, capsys):
    """A key with one record before the episode and none since holds WRR's initial round (with the silence
    rule off, --episode-silence-records 0): the last line names it."""
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps({"arm": "rare-key", "reward": 0}) + "\n" + six_key_replay(tmp_path, 3000).read_text())
    argv = ["run", "--rewards-file", str(p), "--policy", "wrr", "--discovery-records", "100"]
    assert main([*argv, "--episode-silence-records", "0"]) == 0
    out = capsys.readouterr().out
    assert "episode 1 unfinished at the stop (6 samples)" in out
    assert out.rstrip().endswith("no record since it started (the episode waits for it; --episode-silence-records): rare-key")
    assert main([*argv, "--episode-silence-records", "700"]) == 0  # the rule: rare-key left out after 700 records
    assert "rare-key" not in capsys.readouterr().out.splitlines()[-1]


def test_a_run_whose_episodes_all_finished_has_no_unfinished_episode(capsys):
    assert main(["run", "--quiet", "--summary-json", "-"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["unfinished_episode"] is None


def test_a_replay_too_short_to_start_an_episode_says_why(tmp_path, capsys):
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 6}", "reward": i % 2}) + "\n" for i in range(600)))
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--summary-json", str(summary)]) == 0
    assert ("no episode started: the run stopped while discovering keys (6 so far); the first starts after 1,000 "
            "records without a new key (--discovery-records)") in capsys.readouterr().out
    got = json.loads(summary.read_text())
    assert got["phase_at_stop"] == "discovering" and got["unfinished_episode"] is None
    p.write_text("")  # an empty input: said so, not "it needs at least 3 keys"
    assert main(["run", "--rewards-file", str(p)]) == 0
    assert "no episode started: no record was read (the input is empty)" in capsys.readouterr().out


def test_a_reward_range_that_starts_below_zero_is_a_value_not_a_flag(tmp_path, capsys):
    """``--reward-range -20,20`` (returns, temperatures): argparse took ``-20,20`` for a flag and said
    "expected one argument"."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 4}", "reward": (i % 7) - 3.5}) + "\n" for i in range(80)))
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--reward-model", "bounded",
                 "--reward-range", "-20,20", "--discovery-records", "20"]) == 0
    out = capsys.readouterr().out
    assert "0 refused" in out


def test_the_heavy_tailed_model_takes_its_bound_from_moment_bound(tmp_path, capsys):
    """``--moment-bound`` (the flag the help names for B) configures ``--reward-model heavy_tailed``; without
    it the error says which flag to give."""
    from streamarms.registry import PolicyParams, reward_model_of

    m = reward_model_of(PolicyParams(reward_model="heavy_tailed", moment_bound=9.0, estimator="mom"))
    assert (m.B, m.p, m.estimator) == (9.0, 2.0, "mom")
    m = reward_model_of(PolicyParams(reward_model="heavy_tailed", moment_bound=9.0, model_params={"B": 4.0}))
    assert m.B == 4.0  # --model-param wins
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 4}", "reward": (i % 7) - 3.5}) + "\n" for i in range(80)))
    base = ["run", "--rewards-file", str(p), "--policy", "cs", "--reward-model", "heavy_tailed", "--discovery-records", "20"]
    assert main(base + ["--moment-bound", "50"]) == 0
    capsys.readouterr()
    assert main(base) == 2
    assert "--moment-bound B" in capsys.readouterr().err


def test_a_run_whose_policy_refuses_the_keys_says_why_at_the_stop(tmp_path, capsys):
    """GOLD's default rho leaves no room for an outlier among 10 keys: the warning scrolls by at the start,
    so the last lines say why no episode ran."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 10}", "reward": i % 2}) + "\n" for i in range(300)))
    assert main(["run", "--rewards-file", str(p), "--policy", "gold", "--discovery-records", "20"]) == 0
    out = capsys.readouterr().out
    assert "no episode started: the policy refused the 10 keys: " in out and "rho" in out


@pytest.mark.parametrize("policy", ["rr", "wrr", "nrr", "ade", "cs"])
def test_simulate_refuses_an_instance_no_run_can_finish(capsys, policy):
    """Means with no spread (every arm at the threshold) or an arm exactly at mu + k sigma: no fixed-
    confidence run ever stops. simulate used to run silently forever; it now says why and how to run it."""
    assert main(["simulate", "--policy", policy, "--means", "0.2,0.2,0.2"]) == 2
    err = capsys.readouterr().err
    assert "every arm's mean equals the threshold" in err and "--max-pulls" in err
    means = "0.2,0.6,0.2,0.6"  # mu 0.4, sigma 0.2, k 1: the arms at 0.6 are on the threshold
    assert main(["simulate", "--policy", policy, "--means", means, "--k", "1"]) == 2
    assert "the means of arms 1, 3 equal the threshold" in capsys.readouterr().err
    assert main(["simulate", "--policy", policy, "--means", "0.2,0.2,0.2", "--max-pulls", "300", "--runs", "1"]) == 0


def test_simulate_says_before_the_runs_when_an_arm_near_the_threshold_makes_them_long(capsys, monkeypatch):
    """An arm 0.0006 from the threshold (means a user typed): the runs took minutes without a word on a
    non-terminal. The lower bound of any policy told the threshold is > 2M pulls: a note says so first."""
    from streamarms.cli import simulate as sim_cli
    from streamarms.sim import Environment, samples_lower_bound
    near = [0.1, 0.12, 0.11, 0.09, 0.5]
    gaps, (_, hi) = POLICIES["cs"].gaps(near, k=2.0)
    assert gaps[4] < 1e-3 and samples_lower_bound(gaps, [m * (1 - m) for m in near], 0.1) > 2e6
    sim_cli._warn_if_long((gaps, (0.0, hi)), Environment(near), 0.1)
    err = capsys.readouterr().err
    assert "note: arm 4 (mean 0.5) lies 0.000632 from the threshold 0.500632" in err
    assert "about 2,200,000 pulls or more" in err and "--max-pulls" in err
    capped = ["simulate", "--policy", "cs", "--means", ",".join(map(str, near)), "--runs", "1"]
    assert main([*capped, "--max-pulls", "2000"]) == 0
    err = capsys.readouterr().err
    assert "note: arm" not in err  # capped: no long run to warn of (5 arms at k = 2: no outlier, said)
    assert "with 5 keys no key can be an outlier at k = 2" in err
    assert main(["simulate", "--policy", "cs", "--runs", "1"]) == 0  # the built-in instance: ~200 pulls bound
    assert "note:" not in capsys.readouterr().err
    monkeypatch.setattr(sim_cli, "LONG_RUN_PULLS", 100)
    assert main(["simulate", "--policy", "wrr", "--runs", "1"]) == 0
    assert "note: arm " in capsys.readouterr().err


def test_simulate_refuses_a_robust_instance_whose_normal_arms_sit_on_the_median(capsys):
    """roai's threshold is median + 1.4826 k MAD: nine equal means make the MAD 0, so those arms are on it."""
    assert main(["simulate", "--policy", "roai", "--means", "0,0,0,0,0,0,0,0,0,3", "--env", "gaussian"]) == 2
    assert "equal the threshold" in capsys.readouterr().err


@pytest.mark.parametrize("env,policy", [("gaussian", "cs"), ("gaussian", "wrr"), ("beta", "cs"), ("student-t", "cs")])
def test_simulate_picks_the_reward_model_its_env_needs(capsys, env, policy):
    """--env gaussian / student-t with a k-sigma policy used to stop at the first reward ("must be 0 or 1
    under the bernoulli reward model"): without --bound the model follows the env."""
    means = "0,0,0,0,0,0,0,0.1,0,5" if env != "beta" else "0.1,0.1,0.1,0.12,0.1,0.8"
    assert main(["simulate", "--policy", policy, "--env", env, "--means", means, "--k", "1.5", "--runs", "1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accuracy"] == 1.0 and out["results"][0]["done"]


def test_explain_reads_an_episode_checkpoint(tmp_path, capsys):
    """``streamarms explain`` on a checkpoint of the episode mode (it used to read the continuous mode's
    only): a key's state, interval and threshold in the running episode; the episode at a glance without a
    key; exit 1 for an unknown key."""
    p = six_key_replay(tmp_path, 3000)
    ck = tmp_path / "ck.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--checkpoint", str(ck),
                 "--discovery-records", "50"]) == 0
    capsys.readouterr()
    assert main(["explain", "k5", "--checkpoint", str(ck)]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["key"] == "k5" and ev["episode"] == 1 and ev["policy"] == "cs"
    assert ev["state"] in ("outlier", "undecided") and ev["samples"] > 100
    lo, hi = ev["interval"]
    assert lo <= ev["estimate"] <= hi and (ev["margin"] > 0) == (ev["state"] == "outlier")
    assert main(["explain", "--checkpoint", str(ck)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["keys"] == 6 and summary["policy"] == "cs" and summary["waiting"] == []
    assert summary["normal"] + summary["undecided"] + len(summary["outliers"]) == 6
    assert main(["explain", "nope", "--checkpoint", str(ck)]) == 1
    capsys.readouterr()
    # the checkpoint given first, as a newcomer types it: the same answers
    assert main(["explain", str(ck), "k5"]) == 0
    assert json.loads(capsys.readouterr().out)["key"] == "k5"
    assert main(["explain", str(ck)]) == 0
    assert json.loads(capsys.readouterr().out)["keys"] == 6
    assert main(["explain", "k5"]) == 2  # no checkpoint at all: say how to give one, and when run wrote one
    err = capsys.readouterr().err
    assert "streamarms explain CHECKPOINT [KEY]" in err and "writes one only when given --checkpoint PATH" in err
    assert main(["explain", "k5", "k4", "--checkpoint", str(ck)]) == 2
    assert "one key at a time" in capsys.readouterr().err


@pytest.mark.parametrize("policy", ["lsa", "apt", "ucbe", "uniform"])
def test_a_budget_policy_without_budget_or_cap_is_refused_not_run_forever(policy, capsys):
    # anytime without --budget: a run would never stop (it used to spin silently)
    assert main(["simulate", "--policy", policy, "--threshold", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "--budget" in err and "--max-pulls" in err and len(err.strip().splitlines()) == 1
    assert main(["simulate", "--policy", policy]) == 2  # (one line naming both, not --threshold, then --budget)
    err = capsys.readouterr().err
    assert f"policy {policy!r} needs --threshold (the known threshold theta) and --budget T" in err
    assert len(err.strip().splitlines()) == 1


def test_capped_runs_are_counted_and_said(capsys):
    assert main(["simulate", "--policy", "wrr", "--runs", "2", "--max-pulls", "300", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["capped_runs"] == 2
    assert main(["simulate", "--policy", "wrr", "--runs", "2", "--max-pulls", "300"]) == 0
    assert "2 of 2 runs hit --max-pulls" in capsys.readouterr().out.splitlines()[-1]


def test_ctrl_c_in_simulate_is_a_message_not_a_traceback(monkeypatch, capsys):
    import streamarms.cli.simulate as sim

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(sim, "run_policy", interrupted)
    assert main(["simulate", "--policy", "wrr"]) == 130
    assert capsys.readouterr().err.strip().endswith("interrupted")


def test_explain_says_a_key_is_flagged_when_a_later_episode_has_not_classified_it_yet(tmp_path, capsys):
    """A key flagged in episode 1 is ``undecided`` in episode 2 until that episode classifies it again;
    ``explain`` used to show only that (a newcomer read it as "not an outlier"): ``flagged`` says that its
    outlier alert stands, and the summary lists the flagged keys."""
    p = six_key_replay(tmp_path, 20000)
    ck = tmp_path / "ck.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "wrr", "--k", "1.5", "--checkpoint", str(ck),
                 "--discovery-records", "50", "--episode-interval", "0"]) == 0
    capsys.readouterr()
    assert main(["explain", "k5", "--checkpoint", str(ck)]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["episode"] >= 2 and ev["flagged"] is True and ev["flagged_in_episode"] < ev["episode"]
    assert main(["explain", "k0", "--checkpoint", str(ck)]) == 0
    assert json.loads(capsys.readouterr().out)["flagged"] is False
    assert main(["explain", "--checkpoint", str(ck)]) == 0
    assert json.loads(capsys.readouterr().out)["flagged"] == ["k5"]


def test_se_says_it_ignores_the_reward_model_and_how_to_bound_the_moment(capsys):
    assert main(["run", "--policy", "se", "--reward-model", "bernoulli"]) == 2
    err = capsys.readouterr().err
    assert "--moment-bound" in err and "whatever --reward-model says" in err and "0/1 rewards" in err


def test_arms_fewer_than_min_arms_is_refused_not_waited_for_forever(capsys):
    assert main(["run", "--arms", "a,b"]) == 2
    err = capsys.readouterr().err
    assert "--arms names 2 key(s), fewer than --min-arms 3" in err


@pytest.mark.parametrize("stream", ["--alerts-file", "--dead-letter-file", "--summary-json"])
def test_a_json_stream_on_stdout_leaves_stdout_to_json(tmp_path, capsys, stream):
    """``--alerts-file -`` (or dead letters, or the summary): every stdout line is JSON for ``jq``; the text
    for a person (the stop line, an unfinished episode) goes to stderr."""
    p = six_key_replay(tmp_path, 3000)
    with p.open("a") as f:
        f.write("not json\n")
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--discovery-records", "100",
                 "--emit-normal", stream, "-"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines and all(isinstance(json.loads(line), dict) for line in lines)
    assert "stopped (" in err


def test_a_summary_path_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys):
    p = six_key_replay(tmp_path, 600)
    assert main(["run", "--rewards-file", str(p), "--summary-json", str(tmp_path / "no" / "s.json")]) == 2
    err = capsys.readouterr().err
    assert "--summary-json" in err and "does not exist" in err
    assert main(["run", "--rewards-file", str(p), "--summary-json", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_a_replay_without_timestamps_says_why_no_further_episode_starts(tmp_path, capsys):
    """Records without timestamps leave stream time at 0: the second episode of three, due
    --episode-interval after the first started, never starts. The run says so (warning and last line),
    with what to do; --episode-interval 0 runs all three."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 6}", "reward": int(i % 6 == 5 or i % 5 == 0)}) + "\n"
                         for i in range(60_000)))
    argv = ["run", "--rewards-file", str(p), "--policy", "cs", "--discovery-records", "100", "--max-episodes", "3"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "1 episode(s)" in out and "the records carry no timestamps, so stream time" in out
    assert "--episode-interval 0" in out
    assert main([*argv, "--episode-interval", "0"]) == 0
    out = capsys.readouterr().out
    assert "3 episode(s)" in out and "no timestamps" not in out


def test_an_unfinished_episode_names_the_keys_that_wait_for_the_next_one(tmp_path, capsys):
    """A key first seen after the episode started is not in it: a run whose episode cannot decide never
    looks at it, and the stop said nothing of it (a late outlier among 50 near-equal keys)."""
    p = tmp_path / "r.jsonl"
    rows = [{"arm": f"k{i % 6}", "reward": int((i * 7919) % 100 < 20 + i % 6)} for i in range(3000)]
    rows[2500:2500] = [{"arm": "late-key", "reward": 1}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--discovery-records", "100",
                 "--summary-json", str(summary)]) == 0
    assert ("1 key was first seen after it started and waits for the next episode (--episode-timeout ends an "
            "episode that cannot decide): late-key") in capsys.readouterr().out
    u = json.loads(summary.read_text())["unfinished_episode"]
    assert u["waiting_count"] == 1 and u["waiting"] == ["late-key"]


def test_a_finished_run_names_the_keys_its_last_episode_did_not_examine(tmp_path, capsys):
    """A one-episode replay whose first episode started (10 s of stream time after the first record) before
    every key had sent a record decided without the late keys, and its last lines said nothing of them: an
    outlier among them was never looked at. Now they are named, with the flags that start the first episode."""
    p = tmp_path / "r.jsonl"
    rows = [{"arm": f"k{i % 8}", "reward": int(i % 8 == 3 or (i * 7919) % 100 < 10), "timestamp": 1_000 * i}
            for i in range(4000)]
    rows[30:30] = [{"arm": "late-key", "reward": 1, "timestamp": 30_000}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = tmp_path / "s.json"
    argv = ["run", "--rewards-file", str(p), "--policy", "cs", "--max-episodes", "1", "--summary-json", str(summary)]
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert ("1 key was not in episode 1, the last (first seen after it started), and no episode classified it: "
            "late-key; the next episode would (--max-episodes), and the first starts once 1,000 records bring no new "
            "key (--discovery-records) or 10 s of stream time after the first record once the keys settle "
            "(--discovery-seconds)") in said
    got = json.loads(summary.read_text())
    assert got["flagged"] == ["k3"]
    assert got["not_examined"] == {"episode": 1, "count": 1, "keys": ["late-key"], "max_episodes_reached": True}
    assert main([*argv, "--discovery-seconds", "3600", "--quiet"]) == 0
    assert "not_examined" not in json.loads(summary.read_text())  # (every key was in it)


def test_simulate_says_when_a_policy_has_no_guarantee():
    """NRR stops after a round with a wrong answer (accuracy 0 on the default instance): the table says that
    delta bounds nothing for it, and says nothing of the kind for a policy with a guarantee."""
    nrr, wrr = cli("simulate", "--policy", "nrr", "--quiet"), cli("simulate", "--policy", "wrr", "--quiet")
    assert nrr.returncode == wrr.returncode == 0
    assert "delta does not bound its error rate" in nrr.stdout and "delta does not bound" not in wrr.stdout


def test_run_with_a_file_as_an_argument_names_the_flag(tmp_path, capsys):
    p = tmp_path / "labels.csv"
    p.write_text("worker,wrong\nw1,0\n")
    with pytest.raises(SystemExit) as e:
        main(["run", str(p), "--policy", "cs"])
    assert e.value.code == 2
    assert f"unrecognized arguments: {p}; a file to read is named by --rewards-file: streamarms run --rewards-file {p}" \
        in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--no-such-flag"])
    assert capsys.readouterr().err.strip() == "streamarms: error: unrecognized arguments: --no-such-flag"


def test_a_run_whose_threshold_reaches_past_every_rate_says_the_keys_stand_out_below(tmp_path, capsys):
    """Crowd workers' right answers (~0.9, two at 0.65): the one-sided threshold ``mu + 2 sigma`` reached past 1, so
    no worker could be flagged, and the run said only ``flagged now: none``. It says why now, and what finds them."""
    import random

    r = random.Random(9)
    lines = [json.dumps({"worker": f"w{w}", "correct": r.random() > (0.35 if w in (13, 29) else 0.1),
                         "timestamp": 1_700_000_000_000 + 500 * i}) for i, w in enumerate(r.randrange(40)
                                                                                       for _ in range(60_000))]
    p = tmp_path / "crowd.jsonl"
    p.write_text("\n".join(lines) + "\n")
    flags = ["run", "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "correct", "--policy", "cs",
             "--checkpoint", "none", "--max-episodes", "1"]
    assert main(flags) == 0
    out = capsys.readouterr().out
    assert "flagged now: none" in out and "no key could be flagged: the threshold's interval reached" in out, out
    assert "--two-sided flags those too" in out
    assert main([*flags, "--two-sided"]) == 0
    out = capsys.readouterr().out
    assert "flagged now: w13, w29" in out and "no key could be flagged" not in out, out


@pytest.mark.parametrize("keys, k, warned", [(5, "2", True), (6, "2", False), (7, "2.5", True), (8, "2.5", False),
                                             (3, "8", True)])
def test_too_few_keys_for_k_are_warned_of_at_the_first_episode(tmp_path, caplog, keys, k, warned):
    """5 keys at k = 2 (a files drill): no key can be an outlier (Samuelson: |y - mu| <= sigma sqrt(n - 1)), and
    the clear one sat at the threshold undecided for the whole file, in silence. At k = 8 the warning named the 64
    stand-in keys the run's settings are checked on, not the episode's 3."""
    import random

    from streamarms.policies.ksigma_estimates import keys_for_k
    rng = random.Random(3)
    p = tmp_path / "few.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % keys}", "reward": int(rng.random() < (0.9 if i % keys == 0 else 0.1)),
                                     "timestamp": 1_700_000_000_000 + i * 1000}) + "\n" for i in range(3000)))
    with caplog.at_level("WARNING", logger="streamarms.run"):
        main(["run", "--rewards-file", str(p), "--policy", "cs", "--k", k, "--quiet"])
    err = caplog.text
    said = f"with {keys} keys no key can be an outlier at k = {k}"
    assert (said in err and "Samuelson's inequality" in err and f"--min-arms {keys_for_k(float(k))} waits" in err
            ) == warned, err
    assert "no key can be an outlier" in err if warned else "no key can be an outlier" not in err


def test_explain_of_a_missing_checkpoint_file_says_so(tmp_path, capsys):
    """It read the path as a KEY and asked for a checkpoint (a drill's `streamarms explain nofile.ckpt`)."""
    assert main(["explain", str(tmp_path / "nofile.ckpt")]) == 2
    assert f"no checkpoint file {tmp_path / 'nofile.ckpt'} (no such file)" in capsys.readouterr().err
    for extra in (["--table"], ["--plot", str(tmp_path / "p.png")]):  # (they said "drop the key 'nofile.ckpt'")
        assert main(["explain", str(tmp_path / "nofile.ckpt"), *extra]) == 2
        assert f"no checkpoint file {tmp_path / 'nofile.ckpt'} (no such file)" in capsys.readouterr().err
    (tmp_path / "clicks.ckpt").write_text("{}")
    assert main(["explain", str(tmp_path / "clicks.ckp"), "--table"]) == 2  # a typo of a checkpoint next to it
    assert f"(no such file; did you mean {tmp_path / 'clicks.ckpt'}?)" in capsys.readouterr().err


@pytest.mark.parametrize("flags, said", [(["--delta", "0"], "--delta: delta must be in (0, 1)"),
                                         (["--k", "-1"], "--k: k must be a finite number"),
                                         (["--k", "inf"], "--k: k must be a finite number > 0 and at most 1000, got inf"),
                                         (["--means", "0.2,1.5,0.3"], "--means: Bernoulli mean must be in [0, 1]")])
def test_simulates_errors_name_the_flag(capsys, flags, said):
    assert main(["simulate", *flags]) == 2
    assert f"streamarms simulate: error: {said}" in capsys.readouterr().err


def test_means_from_a_file(tmp_path, capsys):
    """A long instance does not fit one command-line argument (128 KiB on Linux): ``--means @FILE`` reads them."""
    f = tmp_path / "means.txt"
    f.write_text("0.1 0.12\n0.11,0.1\n\n0.13 0.9\n")
    assert main(["simulate", "--k", "1.5", "--means", f"@{f}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_arms"] == 6 and out["true_outliers"] == ["5"]
    f.write_text("0.1 0.2 x\n")
    with pytest.raises(SystemExit):
        main(["simulate", "--means", f"@{f}"])
    assert f"argument --means: @{f}: expected numbers separated by commas, got 'x'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["simulate", "--means", f"@{tmp_path / 'none.txt'}"])
    assert "cannot read" in capsys.readouterr().err


def test_a_run_on_too_few_keys_for_k_closes_with_that_cause(tmp_path, capsys):
    """The last lines blamed a threshold near 1 (k = 100 on 50 keys: "its keys sit near the top") or an episode that
    cannot decide (3 keys at k = 2), where the cause is k (a data-scientist drill)."""
    import random
    rng = random.Random(2)
    p = tmp_path / "rates.jsonl"
    p.write_text("".join(json.dumps({"key": f"k{i % 50}", "reward": int(rng.random() < 0.05), "ts": i}) + "\n"
                         for i in range(20_000)))
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--k", "100"]) == 0
    out = capsys.readouterr().out
    assert "no key could be flagged: with 50 keys no key can be an outlier at k = 100" in out
    assert "sit near the top" not in out
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--k", "3", "--checkpoint", "none"]) == 0
    assert "no key can be an outlier" not in capsys.readouterr().out

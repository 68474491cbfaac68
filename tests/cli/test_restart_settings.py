"""A restart from a checkpoint with other settings that define the statistics is refused in both modes
(one error line naming every differing setting with the checkpoint's value and this run's, exit 2, nothing
read, the checkpoint untouched); the settings that only pace, report or keep the run may change
(:mod:`streamarms.cli.restart`).

The episode mode used to resume with the checkpoint's policy (its k, delta, ...) while the alerts, the
summary and the next checkpoint's ``run`` block stated the new flags."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.checkpoint import FileCheckpointStore
from streamarms.cli.run import main as run_main

T0 = 1_700_000_000_000
#: 20 keys of 0/1 rewards, k3 the outlier (WRR, k = 2: one episode takes ~10k records)
MEANS = [0.3] * 20
MEANS[3] = 0.85


def lines(n: int, start: int = 0, seed: int = 7) -> str:
    rng = random.Random(seed * 1_000_003 + start)
    return "".join(json.dumps({"arm": f"k{i % 20}", "reward": int(rng.random() < MEANS[i % 20]),
                               "timestamp": T0 + i}) + "\n" for i in range(start, start + n))


def run(tmp_path, *extra: str) -> int:
    return run_main(["--rewards-file", str(tmp_path / "r.jsonl"), "--checkpoint", str(tmp_path / "ck"), "--quiet",
                     "--log-level", "error", "--summary-json", str(tmp_path / "s.json"), *extra])


@pytest.fixture
def mid_episode(tmp_path):
    """A checkpoint taken mid-episode (k=2, delta=0.1, WRR), and more records after it."""
    (tmp_path / "r.jsonl").write_text(lines(4_000))
    assert run(tmp_path, "--max-episodes", "1") == 0
    doc = FileCheckpointStore(tmp_path / "ck").load()
    assert doc["scheduler"]["phase"] == "running" and doc["scheduler"]["policy"]["state"]["params"]["k"] == 2.0
    with open(tmp_path / "r.jsonl", "a") as f:
        f.write(lines(11_000, start=4_000))
    return tmp_path


def test_episode_mode_refuses_other_statistics_naming_each_with_both_values(mid_episode, capsys):
    before = (mid_episode / "ck").read_bytes()
    capsys.readouterr()
    assert run(mid_episode, "--max-episodes", "1", "--delta", "0.01", "--k", "3",
               "--alerts-file", str(mid_episode / "al.jsonl")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "--k 2.0 (this run: 3.0), --delta 0.1 (this run: 0.01): these define the statistics" in err
    assert "start with a fresh checkpoint (another --checkpoint, or --checkpoint none)" in err
    assert (mid_episode / "ck").read_bytes() == before and not (mid_episode / "al.jsonl").exists()


@pytest.mark.parametrize("flags, says", [
    (["--reward-model", "bounded"], "--reward-model 'bernoulli' (this run: 'bounded')"),
    (["--reward-model", "bounded", "--reward-range", "0,2"], "--reward-range [0.0, 1.0] (this run: [0.0, 2.0])"),
    (["--model-param", "z_rule=paper"], "--model-param {} (this run: {'z_rule': 'paper'})"),
    (["--two-sided"], "--two-sided False (this run: True)"),
    (["--rho", "2"], "--rho unset (this run: 2.0)"),
    (["--seed", "5"], "--seed 0 (this run: 5)"),
    (["--policy", "rr"], "--policy 'wrr' (this run: 'rr')"),
    (["--arms", "k1,k2,k3"], "--arms unset (this run: ['k1', 'k2', 'k3'])"),
    (["--passive-feed", "all"], "--passive-feed 'planned' (this run: 'all')"),
    (["--clock", "wall"], "--clock 'event' (this run: 'wall')"),
    (["--reward-field", "r"], "--reward-field 'reward' (this run: 'r')"),
])
def test_episode_mode_refuses_each_setting_that_defines_the_statistics(mid_episode, capsys, flags, says):
    capsys.readouterr()
    assert run(mid_episode, *flags) == 2
    err = capsys.readouterr().err
    assert says in err and "these define the statistics" in err, err


def test_episode_mode_may_change_how_the_run_is_paced_and_reported(mid_episode):
    """Nothing lost, nothing counted twice, and the alerts state the checkpoint's (the run's) delta."""
    al = mid_episode / "al.jsonl"
    assert run(mid_episode, "--max-episodes", "2", "--window", "8", "--prefetch", "2", "--episode-interval", "1",
               "--want-timeout", "60", "--checkpoint-interval", "0", "--alerts-file", str(al), "--emit-normal",
               "--dead-letter-file", str(mid_episode / "dl.jsonl"), "--min-arms", "4") == 0
    s = json.loads((mid_episode / "s.json").read_text())
    assert s["records"] == 15_000 and (s["k"], s["delta"]) == (2.0, 0.1)
    outliers = [a for a in map(json.loads, al.read_text().splitlines()) if a["kind"] == "outlier"]
    assert outliers and {(a["arm"], a["delta"]) for a in outliers} == {("k3", 0.1)}
    run_block = FileCheckpointStore(mid_episode / "ck").load()["run"]
    assert run_block["settings"]["--k"] == 2.0 and run_block["settings"]["--delta"] == 0.1


def test_a_checkpoint_before_the_settings_were_recorded_still_resumes(mid_episode):
    store = FileCheckpointStore(mid_episode / "ck")
    doc = store.load()
    del doc["run"]["settings"]
    store.save(doc)
    assert run(mid_episode, "--max-episodes", "1") == 0
    s = json.loads((mid_episode / "s.json").read_text())
    assert 4_000 < s["records"] < 15_000 and [e["episode"] for e in s["episodes"]] == [1]  # resumed, then done


def test_a_checkpoint_with_an_option_its_policy_never_read_resumes_without_it(mid_episode, capsys):
    """Before options a policy does not read were refused, ``--threshold 0.5`` with wrr ran (ignored) and was
    recorded: a restart without it (the flag is refused now) was refused for "--threshold 0.5 (this run: unset)",
    a dead end. Only the options the policy reads are recorded and compared."""
    store = FileCheckpointStore(mid_episode / "ck")
    doc = store.load()
    assert "--threshold" not in doc["run"]["settings"] and doc["run"]["settings"]["--rho"] is None  # (wrr reads rho)
    doc["run"]["settings"]["--threshold"] = 0.5
    store.save(doc)
    assert run(mid_episode, "--max-episodes", "1", "--threshold", "0.5") == 2
    assert "--threshold does not apply to policy 'wrr'" in capsys.readouterr().err
    assert run(mid_episode, "--max-episodes", "1") == 0


def continuous(tmp_path, *extra: str) -> int:
    return run(tmp_path, "--forever", "--alerts-file", str(tmp_path / "al.jsonl"), *extra)


@pytest.mark.parametrize("flags, says", [
    (["--k", "3"], "--k 2.0 (this run: 3.0)"),
    (["--monitor-alpha", "0.01"], "--monitor-alpha 0.001 (this run: 0.01)"),
    (["--change-alpha", "1e-4"], "--change-alpha 1e-06 (this run: 0.0001)"),
    (["--reward-model", "bounded", "--reward-range", "0,2"], "--reward-range [0.0, 1.0] (this run: [0.0, 2.0])"),
    (["--arms", "k1,k2,k3"], "--arms unset (this run: ['k1', 'k2', 'k3'])"),
    (["--reward-field", "r"], "--reward-field 'reward' (this run: 'r')"),
])
def test_continuous_mode_refuses_the_same_way(tmp_path, capsys, flags, says):
    (tmp_path / "r.jsonl").write_text(lines(3_000))
    assert continuous(tmp_path) == 0
    with open(tmp_path / "r.jsonl", "a") as f:
        f.write(lines(3_000, start=3_000))
    before = (tmp_path / "ck").read_bytes()
    capsys.readouterr()
    assert continuous(tmp_path, *flags) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and "start with a fresh checkpoint" in err, err
    assert (tmp_path / "ck").read_bytes() == before
    assert continuous(tmp_path, "--silence-records", "500", "--forget-silent", "--max-groups", "3") == 0
    assert json.loads((tmp_path / "s.json").read_text())["records"] == 6_000


def test_a_run_stopped_by_max_episodes_goes_on_when_a_restart_allows_more(tmp_path):
    """--max-episodes may change on a restart: the run that stopped after its last episode ran no further
    episode when restarted with --max-episodes 3 (it stopped at once: "max episodes reached (restored from
    checkpoint)"); now it runs episodes 2 and 3, and a restart allowing no more stops at once."""
    (tmp_path / "r.jsonl").write_text(lines(120_000))
    assert run(tmp_path, "--max-episodes", "1", "--episode-interval", "0") == 0
    first = json.loads((tmp_path / "s.json").read_text())
    assert first["stop_reason"] == "max episodes reached" and len(first["episodes"]) == 1
    assert run(tmp_path, "--max-episodes", "3", "--episode-interval", "0") == 0
    again = json.loads((tmp_path / "s.json").read_text())
    assert again["stop_reason"] == "max episodes reached"
    assert [e["episode"] for e in again["episodes"]] == [1, 2, 3] and again["records"] > first["records"]
    assert run(tmp_path, "--max-episodes", "2", "--episode-interval", "0") == 0
    last = json.loads((tmp_path / "s.json").read_text())
    assert last["stop_reason"] == "max episodes reached (restored from checkpoint)"
    assert last["records"] == again["records"]


def test_another_policy_is_named_without_the_passive_feed_that_follows_from_it(mid_episode, capsys):
    """``--policy cs`` (whose own passive feed is ``all``) after WRR (``planned``): the run set no
    ``--passive-feed``, so the refusal names the policy only."""
    capsys.readouterr()
    assert run(mid_episode, "--policy", "cs") == 2
    err = capsys.readouterr().err
    assert "--policy 'wrr' (this run: 'cs'): these define the statistics" in err and "--passive-feed" not in err, err

"""`streamarms run --forever` (the continuous mode) end to end through the JSONL path: two groups with
different baselines get their own thresholds (``--group-by``), a restart from the checkpoint continues
exactly (nothing lost, nothing counted twice), records beyond ``--max-groups`` are dead-lettered,
``streamarms explain`` reads the checkpoint, ``--mode episodes`` keeps today's behaviour."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.checkpoint import FileCheckpointStore
from streamarms.cli.main import main as cli_main
from streamarms.cli.run import main as run_main

T0 = 1_700_000_000_000
EU = [0.05 + 0.1 * i / 6 for i in range(7)] + [0.6]     # theta ~ 0.51: eu-7 (0.6) is an outlier
US = [0.6 + 0.1 * i / 7 for i in range(8)]             # theta ~ 0.72: no outlier, although all >= 0.6
KEYS = [("eu", f"eu-{i}", p) for i, p in enumerate(EU)] + [("us", f"us-{i}", p) for i, p in enumerate(US)]


def theta(means: list[float], k: float = 2.0) -> float:
    m = sum(means) / len(means)
    return m + k * (sum((x - m) ** 2 for x in means) / len(means)) ** 0.5


def lines(n: int, seed: int = 11, start: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for t in range(n):
        g, k, p = KEYS[rng.randrange(len(KEYS))]
        out.append(json.dumps({"key": k, "value": {"reward": int(rng.random() < p), "region": g},
                               "timestamp": T0 + start + t}))
    return out


def write(path, rows) -> None:
    with open(path, "a") as f:
        f.write("\n".join(rows) + "\n")


def args(tmp_path, *extra: str) -> list[str]:
    return ["--rewards-file", str(tmp_path / "r.jsonl"), "--alerts-file", str(tmp_path / "alerts.jsonl"),
            "--dead-letter-file", str(tmp_path / "dlq.jsonl"), "--checkpoint", str(tmp_path / "ck"),
            "--forever", "--quiet", "--summary-json", str(tmp_path / "s.json"), "--group-by", "region", *extra]


def monitor_state(tmp_path) -> dict:
    return FileCheckpointStore(tmp_path / "ck").load()["scheduler"]["monitor"]


def test_two_groups_get_their_own_thresholds_end_to_end(tmp_path, capsys):
    write(tmp_path / "r.jsonl", lines(40_000))
    assert run_main(args(tmp_path)) == 0
    alerts = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert [(a["arm"], a["kind"], a["group"]) for a in alerts] == [("eu-7", "outlier", "eu")]
    a = alerts[0]
    assert a["mode"] == "continuous" and T0 / 1000 < a["time"] < (T0 + 40_000) / 1000
    assert a["interval"][0] > a["threshold_interval"][1] and a["margin"] > 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["mode"] == "continuous" and s["records"] == 40_000 and s["flagged"] == ["eu-7"]
    capsys.readouterr()
    # explain: each group its own band; us-0 (0.6) is below its group's band, eu-7 (0.6) above its own
    assert cli_main(["explain", "--checkpoint", str(tmp_path / "ck")]) == 0
    groups = {g["name"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    eu_lo, eu_hi = groups["eu"]["threshold_interval"]
    us_lo, us_hi = groups["us"]["threshold_interval"]
    assert eu_lo <= theta(EU) <= eu_hi < 0.6 and us_lo <= theta(US) <= us_hi and eu_hi < us_lo
    assert [e["key"] for e in groups["eu"]["flagged"]] == ["eu-7"] and groups["us"]["flagged"] == []
    assert cli_main(["explain", "us-0", "--checkpoint", str(tmp_path / "ck")]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["group"] == "us" and ev["state"] in ("normal", "undecided") and ev["samples"] > 1000
    assert ev["threshold_interval"] == [us_lo, us_hi]
    assert cli_main(["explain", "nope", "--checkpoint", str(tmp_path / "ck")]) == 1
    assert cli_main(["explain", "eu-7", "--checkpoint", str(tmp_path / "missing")]) == 2


def test_restart_from_the_checkpoint_continues_exactly(tmp_path):
    """Half the stream, exit, the other half appended, run again == one run over the whole stream."""
    rows = lines(30_000, seed=5)
    write(tmp_path / "r.jsonl", rows)
    assert run_main(args(tmp_path)) == 0
    ref = monitor_state(tmp_path)
    ref_alerts = (tmp_path / "alerts.jsonl").read_text()
    for name in ("r.jsonl", "ck", "alerts.jsonl"):
        (tmp_path / name).unlink()
    write(tmp_path / "r.jsonl", rows[:13_333])
    assert run_main(args(tmp_path)) == 0
    write(tmp_path / "r.jsonl", rows[13_333:])
    assert run_main(args(tmp_path)) == 0
    assert monitor_state(tmp_path) == ref
    assert (tmp_path / "alerts.jsonl").read_text() == ref_alerts
    assert json.loads((tmp_path / "s.json").read_text())["records"] == 30_000


def test_groups_beyond_max_groups_and_bad_groups_are_dead_lettered(tmp_path):
    rows = lines(2_000)
    rows += [json.dumps({"key": "x", "value": {"reward": 1}, "timestamp": T0 + 5000}),
             json.dumps({"key": "y", "value": {"reward": 1, "region": {"a": 1}}, "timestamp": T0 + 5001}),
             json.dumps({"key": "eu-1", "value": {"reward": 1, "region": "us"}, "timestamp": T0 + 5002})]
    write(tmp_path / "r.jsonl", rows)
    assert run_main(args(tmp_path, "--max-groups", "1")) == 0
    reasons = [json.loads(x)["reason"] for x in (tmp_path / "dlq.jsonl").read_text().splitlines()]
    first = json.loads(lines(1)[0])["value"]["region"]  # the first group seen takes the one slot
    n_other = sum(1 for r in lines(2_000) if json.loads(r)["value"]["region"] != first)
    assert reasons.count("too_many_groups") == n_other + (first == "eu")
    assert reasons.count("missing_group") == 1 and reasons.count("bad_group") == 1
    assert reasons.count("group_mismatch") == (first == "eu")
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["records"] == 2_003 and sum(s["invalid"].values()) == len(reasons)


def test_mode_episodes_keeps_the_episode_behaviour(tmp_path):
    write(tmp_path / "r.jsonl", lines(20_000))
    a = args(tmp_path, "--mode", "episodes", "--max-episodes", "1")
    a.remove("--group-by")
    a.remove("region")
    assert run_main(a) == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["mode"] == "passive" and len(s["episodes"]) == 1
    # a checkpoint of one mode is refused by the other (exit 2, a clear error)
    assert run_main(args(tmp_path)) == 2
    # episode settings in the continuous mode: an error, not silently ignored
    assert run_main(args(tmp_path, "--checkpoint", "none", "--policy", "wrr", "--key-ttl", "60")) == 2


def test_forget_silent_reaches_the_monitor_and_is_refused_by_the_episode_modes(tmp_path):
    write(tmp_path / "r.jsonl", lines(2_000))
    assert run_main(args(tmp_path, "--forget-silent")) == 0
    assert monitor_state(tmp_path)["forget_silent"] is True
    (tmp_path / "ck").unlink()
    assert run_main(args(tmp_path)) == 0
    assert "forget_silent" not in monitor_state(tmp_path)  # the default: evidence kept, the format unchanged
    a = args(tmp_path, "--mode", "episodes", "--checkpoint", "none", "--forget-silent")
    a.remove("--group-by")
    a.remove("region")
    assert run_main(a) == 2


def test_a_checkpoint_with_damaged_key_rows_is_a_clear_error(tmp_path, capsys):
    """A valid hash over key rows that do not decode (an edit re-hashed, a bug elsewhere): exit 2 naming the
    key, nothing half restored."""
    write(tmp_path / "r.jsonl", lines(2_000))
    assert run_main(args(tmp_path)) == 0
    store = FileCheckpointStore(tmp_path / "ck")
    doc = store.load()
    keys = doc["scheduler"]["monitor"]["keys"]
    assert keys["format"] == "key-rows" and len(keys["rows"]) == len(KEYS)
    keys["rows"][3] = keys["rows"][3][:-4]
    store.save(doc)
    capsys.readouterr()
    assert run_main(args(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "checkpoint" in err and repr(keys["names"][3]) in err and "base64" in err


def test_explain_reads_an_incremental_checkpoint_directory(tmp_path, capsys):
    """``--checkpoint dir:PATH`` (the incremental store of many keys) is read as the file one is."""
    write(tmp_path / "r.jsonl", lines(40_000))
    extra = ["--checkpoint", f"dir:{tmp_path / 'ckdir'}"]
    assert run_main([*args(tmp_path)[:6], *extra, *args(tmp_path)[8:]]) == 0
    assert not (tmp_path / "ck").exists()
    capsys.readouterr()
    assert cli_main(["explain", "eu-7", "--checkpoint", f"dir:{tmp_path / 'ckdir'}"]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["group"] == "eu" and ev["state"] == "outlier" and ev["samples"] > 1000
    assert cli_main(["explain", "--checkpoint", f"dir:{tmp_path / 'ckdir'}"]) == 0
    groups = {g["name"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    assert [e["key"] for e in groups["eu"]["flagged"]] == ["eu-7"]
    assert cli_main(["explain", "eu-7", "--checkpoint", f"dir:{tmp_path / 'nothing'}"]) == 2
    assert not (tmp_path / "nothing").exists()  # a read writes nothing
    capsys.readouterr()  # the directory without dir: was "[Errno 21] Is a directory"
    assert cli_main(["explain", "eu-7", "--checkpoint", str(tmp_path / "ckdir")]) == 2
    assert f"is a directory: a directory of incremental checkpoints is dir:{tmp_path / 'ckdir'}" in \
        capsys.readouterr().err


def test_silence_records_reaches_the_monitor_and_may_change_on_a_restart(tmp_path, capsys):
    """``--silence-records N`` (0: never) is the monitor's ``key_ttl`` and every group's; a restart may
    change it and ``--forget-silent`` (membership only), but not the settings that define the statistics
    (``--k``, the alphas, the reward model): those are one error line naming both values, exit 2."""
    write(tmp_path / "r.jsonl", lines(2_000))
    assert run_main(args(tmp_path, "--silence-records", "0")) == 0
    st = monitor_state(tmp_path)
    assert st["key_ttl"] is None and all(g["ttl"] is None for g in st["groups"].values())
    write(tmp_path / "r.jsonl", lines(2_000, start=2_000))
    assert run_main(args(tmp_path, "--silence-records", "300", "--forget-silent")) == 0
    st = monitor_state(tmp_path)
    assert st["key_ttl"] == 300 and st["forget_silent"] is True
    assert all(g["ttl"] == 300 for g in st["groups"].values())
    capsys.readouterr()
    assert run_main(args(tmp_path, "--silence-records", "300", "--k", "3")) == 2
    err = capsys.readouterr().err
    assert "k 2.0 (this run: 3.0)" in err and "fresh checkpoint" in err
    assert run_main(args(tmp_path, "--silence-records", "300", "--monitor-alpha", "0.01")) == 2
    assert "alpha 0.001 (this run: 0.01)" in capsys.readouterr().err
    a = args(tmp_path, "--mode", "episodes", "--checkpoint", "none", "--silence-records", "5")
    a.remove("--group-by")
    a.remove("region")
    assert run_main(a) == 2  # a continuous setting
    with pytest.raises(SystemExit) as e:  # argparse: one line, exit 2
        run_main(args(tmp_path, "--silence-records", "-1"))
    assert e.value.code == 2 and "--silence-records: expected an integer >= 0, got '-1'" in capsys.readouterr().err


def test_a_lone_surrogate_group_is_dead_lettered_and_a_restart_does_not_crash(tmp_path):
    """A group value with no UTF-8 form (the JSON escape of a lone surrogate) is refused as bad_group at intake;
    it stopped the daemon with a UnicodeEncodeError, and again on every restart from the checkpoint."""
    rows = lines(3_000)
    rows.insert(1_500, '{"key": "eu-1", "value": {"reward": 1, "region": "\\ud800"}, "timestamp": ' + f"{T0 + 1_500}}}")
    write(tmp_path / "r.jsonl", rows)
    assert run_main(args(tmp_path, "--checkpoint-interval", "0")) == 0
    dl = [json.loads(x) for x in (tmp_path / "dlq.jsonl").read_text().splitlines()]
    assert [(d["reason"], d["source"].rsplit(":", 1)[1]) for d in dl] == [("bad_group", "1500")]
    assert "lone surrogate" in dl[0]["detail"]
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["records"] == 3_001 and s["invalid"] == {"bad_group": 1}
    write(tmp_path / "r.jsonl", lines(500, seed=3, start=3_001))  # the restart reads on from the checkpoint
    assert run_main(args(tmp_path, "--checkpoint-interval", "0")) == 0
    assert json.loads((tmp_path / "s.json").read_text())["records"] == 3_501


def test_a_key_that_sent_one_record_and_went_quiet_is_named_as_what_the_threshold_waits_for(tmp_path, capsys,
                                                                                             caplog):
    """One record of a key (a typo, a host gone) holds its group's threshold until --silence-records drops
    it: the run warns, naming the key, and `explain` lists it as the quietest member; with a small
    --silence-records the band and the alert come back."""
    typo = json.dumps({"key": "eu-typo", "value": {"reward": 0, "region": "eu"}, "timestamp": T0 - 1})
    write(tmp_path / "r.jsonl", [typo] + lines(40_000))
    with caplog.at_level("WARNING", logger="streamarms.scheduler"):
        assert run_main(args(tmp_path)) == 0
    assert not (tmp_path / "alerts.jsonl").exists() or "eu-7" not in (tmp_path / "alerts.jsonl").read_text()
    assert any("waits for key 'eu-typo'" in r.getMessage() for r in caplog.records)
    capsys.readouterr()
    assert cli_main(["explain", "eu-7", "--checkpoint", str(tmp_path / "ck")]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["threshold_interval"] == [None, None]
    assert ev["threshold_waiting_for"]["quietest"][0]["key"] == "eu-typo"
    assert cli_main(["explain", "--checkpoint", str(tmp_path / "ck")]) == 0
    eu = [g for g in json.loads(capsys.readouterr().out)["groups"] if g["name"] == "eu"][0]
    assert eu["threshold_waiting_for"]["quietest"][0]["key"] == "eu-typo"
    for f in ("ck", "alerts.jsonl", "s.json", "dlq.jsonl"):
        (tmp_path / f).unlink(missing_ok=True)
    assert run_main(args(tmp_path, "--silence-records", "2000")) == 0
    alerts = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert [(a["arm"], a["kind"]) for a in alerts] == [("eu-7", "outlier")]


@pytest.mark.parametrize("flag", [["--alpha", "0.01"], ["--threshold", "0.5"], ["--requests-topic", "req"],
                                  ["--max-in-flight", "4"]])
def test_the_other_policies_and_active_modes_flags_are_refused_in_the_continuous_mode(tmp_path, capsys, flag):
    """`--alpha 0.01` looks like `--monitor-alpha` but is a policy's parameter: silently ignored before."""
    write(tmp_path / "r.jsonl", lines(100))
    assert run_main(args(tmp_path, *flag)) == 2
    assert f"{flag[0]}: the continuous mode" in capsys.readouterr().err
    assert not (tmp_path / "ck").exists()


def test_a_group_without_a_threshold_is_said_at_the_stop(tmp_path, capsys):
    """A key with one record (a typo'd key) holds its group's threshold: the run ended with "flagged now:
    none" and nothing else, which read as "no outlier". Now the summary's ``no_threshold`` names the group
    and the key it waits for, and the last lines say so."""
    rows = lines(3000)
    rows.insert(10, json.dumps({"key": "typo ", "value": {"reward": 1, "region": KEYS[0][0]}, "timestamp": T0 + 10}))
    write(tmp_path / "r.jsonl", rows)
    a = [x for x in args(tmp_path) if x != "--quiet"]
    assert run_main(a) == 0
    out = capsys.readouterr().out
    got = json.loads((tmp_path / "s.json").read_text())["no_threshold"]
    assert [g["group"] for g in got] == [KEYS[0][0]] and got[0]["quietest"][0]["key"] == "typo "
    assert "no threshold at the stop" in out and "'typo '" in out, out


@pytest.mark.slow  # (~10-15 s: the long tier; the quick suite keeps under its 15 minutes)
def test_a_key_set_that_keeps_growing_is_warned_about(tmp_path, caplog):
    """A trial's fleet gained a key every 5k records: every join restarts the threshold's evidence, and in
    600k records nothing was flagged, without a word. Now a warning names the churn (a fixed key set
    never gets it: the other tests' streams)."""
    rng = random.Random(3)
    rows = []
    for t in range(240_000):
        n = 20 + t // 5_000  # a new key every 5k records
        k = rng.randrange(n)
        rows.append(json.dumps({"key": f"k{k}", "value": {"reward": int(rng.random() < (0.5 if k == 3 else 0.1)),
                                                          "region": "eu"}, "timestamp": T0 + t}))
    write(tmp_path / "r.jsonl", rows)
    with caplog.at_level("WARNING"):
        assert run_main(args(tmp_path)) == 0
    assert any("threshold restarted" in r.getMessage() and "--arms fixes the key set" in r.getMessage()
               for r in caplog.records), [r.getMessage()[:100] for r in caplog.records]

"""Drills of issue 10 on the JSONL path (no broker): a fuzzed stream and kill -9 restarts.

* >= 1e5 bad records (every kind the issue lists) interleaved with a clean stream: no crash, every
  bad record in the dead letters with a reason, and the decision equal to the clean stream's;
* kill -9 ten times in the middle of an episode (a real ``streamarms run`` process), restarting from
  the file checkpoint each time: the same decision, samples and records as an uninterrupted run.
"""

from __future__ import annotations

import json

import pytest
from drill_util import OUTLIERS, assert_same_run, clean_stream, fuzzed, jsonl_line, kill_9_drill, run_cli

from streamarms.runtime import INVALID_REASONS

pytestmark = pytest.mark.drill

def write(path, recs):
    with open(path, "wb") as f:
        for k, v, ts in recs:
            f.write(jsonl_line(k, v, ts) + b"\n")


def args_for(src, tmp_path, tag):
    return ["--rewards-file", str(src), "--policy", "wrr", "--k", "2", "--delta", "0.1", "--seed", "0",
            "--discovery-records", "500", "--episode-interval", "1e9", "--forever", "--mode", "episodes",
            "--summary-json", str(tmp_path / f"{tag}.json"), "--log-level", "warning"]


def test_fuzz_1e5_bad_records_through_jsonl(tmp_path):
    clean = clean_stream(150_000, seed=11)
    fuzz, bad_at = fuzzed(clean, 100_000, seed=12)
    write(tmp_path / "clean.jsonl", clean)
    write(tmp_path / "fuzz.jsonl", fuzz)
    p = run_cli(args_for(tmp_path / "clean.jsonl", tmp_path, "clean"))
    assert p.returncode == 0, p.stderr[-3000:]
    dl = tmp_path / "dl.jsonl"
    p = run_cli([*args_for(tmp_path / "fuzz.jsonl", tmp_path, "fuzz"), "--dead-letter-file", str(dl)])
    assert p.returncode == 0, p.stderr[-3000:]
    ref = json.loads((tmp_path / "clean.json").read_text())
    got = json.loads((tmp_path / "fuzz.json").read_text())
    assert set(ref["flagged"]) <= set(OUTLIERS) and ref["flagged"]
    e_ref, e_got = ref["episodes"][0], got["episodes"][0]
    for k in ("outliers", "samples", "threshold", "threshold_interval", "undecided", "normals"):
        assert e_got[k] == e_ref[k], k
    assert got["samples"] == ref["samples"] and got["flagged"] == ref["flagged"]
    assert got["known_arms"] == 20  # junk keys took no arm slot
    # every bad record, and only those, in the dead letters, each with a reason
    lines = [json.loads(x) for x in dl.read_text().splitlines()]
    offsets = sorted(int(x["source"].rsplit(":", 1)[1]) for x in lines)
    assert offsets == sorted(bad_at)
    assert all(x["reason"] in INVALID_REASONS and x["reason"] != "rejected_by_policy" for x in lines)
    assert got["dead_letters"] == len(bad_at) == sum(got["invalid"].values())
    assert len({x["reason"] for x in lines}) >= 9  # the kinds really differ


def test_kill_9_ten_times_with_the_file_checkpoint(tmp_path):
    clean = clean_stream(1_000_000, seed=21)
    fuzz, _ = fuzzed(clean, 20_000, seed=22, big=1)
    write(tmp_path / "in.jsonl", fuzz)
    # eight episodes back to back (~540k records): one episode (~60k records) is ~0.1 s of a quiet machine's
    # replay, shorter than the kills' own spread, so one episode let most lives end before their kill
    common = ["--rewards-file", str(tmp_path / "in.jsonl"), "--policy", "wrr", "--k", "2", "--delta", "0.02",
              "--discovery-records", "500", "--max-episodes", "8", "--episode-interval", "0", "--log-level", "warning"]
    ck = tmp_path / "state.ckpt"
    # kill -9 while the episodes run, at a point that moves on each time
    ref, got, killed = kill_9_drill(common, ["--checkpoint", str(ck)], ck, tmp_path, lives=10, spread=4)
    assert killed >= 5  # most kills landed mid-run (a fast machine may finish a few runs first)
    # the summary of the resumed run covers the whole stream: its counters come from the checkpoint
    assert_same_run(got, ref)

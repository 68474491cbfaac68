"""Drill: the every-reward feed's batched runs (``policy.update_batch`` over a poll batch, WRR's numpy
skip-ahead with enough keys) under kill -9. A real ``streamarms run --passive-feed all`` over 100 keys
with bad records, two episodes, killed mid-run several times with a file checkpoint, then resumed: the
summary equals an uninterrupted run's (records, samples, skipped, refusals, alerts, both episodes'
decisions): a restart loses nothing and counts nothing twice.
"""

from __future__ import annotations

import json
import random

import pytest
from drill_util import assert_same_run, kill_9_drill

pytestmark = pytest.mark.drill


def _stream(path, n: int, n_keys: int, seed: int) -> None:
    rng = random.Random(seed)
    means = [0.2] * (n_keys - 2) + [0.9, 0.95]
    with open(path, "w") as f:
        for i in range(n):
            a = rng.randrange(n_keys)
            if rng.random() < 0.003:  # bad records: refused, dead-lettered, counted once
                f.write(json.dumps({"arm": f"k{a:03d}", "reward": rng.choice(["x", 2, None, 0.5])}) + "\n")
                continue
            f.write(f'{{"arm": "k{a:03d}", "reward": {int(rng.random() < means[a])}, '
                    f'"timestamp": {1_700_000_000_000 + i}}}\n')


def test_kill_9_during_feed_all_batched_runs(tmp_path):
    _stream(tmp_path / "in.jsonl", 250_000, 100, seed=41)
    common = ["--rewards-file", str(tmp_path / "in.jsonl"), "--policy", "wrr", "--k", "2", "--delta", "0.1",
              "--passive-feed", "all", "--discovery-records", "3000", "--max-episodes", "2", "--episode-interval", "0",
              "--log-level", "warning"]
    ck = tmp_path / "state.ckpt"
    ref, got, killed = kill_9_drill(common, ["--checkpoint", str(ck)], ck, tmp_path, lives=6, spread=3)
    assert len(ref["episodes"]) == 2 and ref["alerts"]["outlier"] >= 2 and sum(ref["invalid"].values()) > 0
    assert killed >= 3
    assert_same_run(got, ref)
    assert got["alerts"] == ref["alerts"] and got["flagged"] == ref["flagged"] and len(got["episodes"]) == 2

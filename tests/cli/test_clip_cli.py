"""``--clip``: bounded rewards outside ``--reward-range`` count as its nearest end instead of being refused.

The latency case it is for: a host whose slow requests time out (values far above the range) is the
outlier. Refused as dead letters, those records left only the host's fast requests, and it looked like
every other host; clipped, they count as the range's top and the host is flagged."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.cli import main

HOSTS = [f"h{i:02d}" for i in range(20)]
SLOW = "h07"


def _latencies(path, n=60_000, seed=21):
    """Latencies in ms (1 ms apart): ~U(50, 150) for every host; h07 times out (30,000 ms) in 30% of requests."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            h = HOSTS[i % len(HOSTS)]
            x = 30_000 if h == SLOW and rng.random() < 0.3 else round(rng.uniform(50, 150), 1)
            f.write(json.dumps({"arm": h, "reward": x, "timestamp": 1_700_000_000_000 + i}) + "\n")


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever"]], ids=["episodes", "continuous"])
def test_a_host_whose_slow_requests_exceed_the_range_is_found_only_with_clip(tmp_path, capsys, mode):
    p = tmp_path / "lat.jsonl"
    _latencies(p)
    common = ["run", "--rewards-file", str(p), "--checkpoint", "none", "--reward-model", "bounded",
              "--reward-range", "0,1000", "--k", "2", *mode]
    assert main([*common, "--summary-json", str(tmp_path / "refused.json")]) == 0
    refused = json.loads((tmp_path / "refused.json").read_text())
    assert refused["invalid"]["out_of_model"] > 0 and refused["clipped"] == 0 and SLOW not in refused["flagged"]
    capsys.readouterr()
    assert main([*common, "--clip", "--summary-json", str(tmp_path / "clipped.json")]) == 0
    out = capsys.readouterr().out
    clipped = json.loads((tmp_path / "clipped.json").read_text())
    assert clipped["invalid"] == {} and clipped["dead_letters"] == 0, clipped["invalid"]
    assert clipped["flagged"] == [SLOW], clipped["flagged"]
    # every timeout read was clipped once (the first record of a key is decoded twice: counted once)
    assert 0 < clipped["clipped"] <= refused["invalid"]["out_of_model"]
    assert f"{clipped['clipped']:,} rewards clipped to [0, 1000]" in out, out


def test_clip_without_the_bounded_model_is_refused(tmp_path, capsys):
    p = tmp_path / "r.jsonl"
    p.write_text('{"arm": "a", "reward": 1}\n')
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--clip"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--clip" in err and "--reward-model bounded" in err, err

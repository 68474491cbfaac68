"""The default ``prefetch`` (rewards held per planned key) lets WRR, the default policy, decide on a stream
of 50 keys: WRR asks for a key about ``rho* ~ n^(2/3)`` times in a row (~14 here), and with 4 held rewards
(the default before) the rest of each run had to wait for the key's next records while every other record
was skipped -- 347k records to decide where 32 takes ~58k (``streamarms run --prefetch 4|32`` on this
stream's 3M-line version; at 200 keys 4 did not decide in 6M records)."""

from __future__ import annotations

import json
import random

from streamarms.cli.run import main as run_main
from streamarms.runtime import SchedulerConfig


def _stream(path, n_keys: int = 50, lines: int = 150_000) -> None:
    rng = random.Random(3)
    means = [rng.uniform(0.2, 0.4) for _ in range(n_keys)]
    means[7], means[30] = 0.9, 0.85
    with open(path, "w") as f:
        for i in range(lines):
            a = rng.randrange(n_keys)
            f.write(f'{{"arm":"k{a}","reward":{int(rng.random() < means[a])},"timestamp":{1_700_000_000_000 + i}}}\n')


def _run(tmp_path, *extra: str) -> dict:
    out = tmp_path / "s.json"
    assert run_main(["--rewards-file", str(tmp_path / "r.jsonl"), "--max-episodes", "1", "--quiet",
                     "--summary-json", str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_the_default_prefetch_lets_wrr_decide_on_50_keys(tmp_path):
    _stream(tmp_path / "r.jsonl")
    assert SchedulerConfig().prefetch == 32
    d = _run(tmp_path)
    assert d["episodes"] and d["episodes"][0]["outliers"] == ["k30", "k7"] and d["records"] < 100_000
    starved = _run(tmp_path, "--prefetch", "4")
    assert not starved["episodes"] and starved["records"] == 150_000  # not decided in the whole stream

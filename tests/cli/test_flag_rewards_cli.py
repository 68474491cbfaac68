"""Error flags as rewards, as logs and data frames write them: a JSON log's ``"error": true`` and the CSV
``pandas.DataFrame.to_csv`` writes (an unnamed index column first, ``True``/``False`` cells) give the host with
the high error rate in both modes of ``streamarms run``, each the same run as the log with 1 and 0."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.cli import main

MODES = {"episodes": ["--policy", "cs", "--max-episodes", "1"], "continuous": ["--forever"]}


def _flags(n: int = 40_000, seed: int = 4) -> list[tuple[str, bool]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        h = f"h{rng.randrange(15):02d}"
        out.append((h, rng.random() < (0.25 if h == "h06" else 0.04)))
    return out


def _run(path, mode: str) -> dict:
    summary = path.with_suffix(".summary.json")
    assert main(["run", "--rewards-file", str(path), "--checkpoint", "none", "--key-field", "host", "--reward-field",
                 "error", "--summary-json", str(summary), "--quiet", *MODES[mode]]) == 0
    return json.loads(summary.read_text())


@pytest.mark.parametrize("mode", sorted(MODES))
def test_json_booleans_and_a_data_frames_csv_are_the_run_of_ones_and_zeros(tmp_path, mode):
    rows = _flags()
    (tmp_path / "ints.jsonl").write_text("".join(json.dumps({"host": h, "error": int(e)}) + "\n" for h, e in rows))
    (tmp_path / "flags.jsonl").write_text("".join(json.dumps({"host": h, "error": e}) + "\n" for h, e in rows))
    (tmp_path / "frame.csv").write_text(",host,error\n" + "".join(f"{i},{h},{e}\n" for i, (h, e) in enumerate(rows)))
    ref = _run(tmp_path / "ints.jsonl", mode)
    assert ref["flagged"] == ["h06"] and not ref["invalid"]
    for name in ("flags.jsonl", "frame.csv"):
        got = _run(tmp_path / name, mode)
        assert {k: got[k] for k in ("flagged", "records", "invalid")} == \
            {k: ref[k] for k in ("flagged", "records", "invalid")}, name

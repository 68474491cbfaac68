"""Records grouped by key (a file sorted or concatenated by key): the run says so, and how to interleave them.

An episode compares keys whose records it sees side by side; in a file whose keys come one block each, every
episode ends for silent keys with a few keys and no decision, and before this the run said only that.
"""

from __future__ import annotations

import json
import random

from streamarms.cli import main
from streamarms.runtime.codec import RewardCodec
from streamarms.runtime.keys import KeyRegistry


def _rows(seed: int = 3, keys: int = 20, each: int = 1500) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(f"w{i:02d}", int(rng.random() < (0.3 if i == 7 else 0.1))) for i in range(keys) for _ in range(each)]


def _csv(path, rows) -> None:
    path.write_text("worker,wrong\n" + "".join(f"{w},{r}\n" for w, r in rows))


def _run(path, tmp_path, *extra: str) -> dict:
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(path), "--key-field", "worker", "--reward-field", "wrong",
                 "--summary-json", str(summary), *extra]) == 0
    return json.loads(summary.read_text())


def test_a_table_sorted_by_key_is_named_with_the_command_that_shuffles_it(tmp_path, capsys, caplog):
    p = tmp_path / "workers.csv"
    _csv(p, _rows())
    got = _run(p, tmp_path)
    g = got["keys_grouped"]
    assert g["keys_returned"] == 0 and g["keys_left"] >= 3 and g["silent_episodes"] >= 2
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("the records come grouped by key:")
    assert f"(head -n 1 {p}; tail -n +2 {p} | shuf) > {tmp_path / 'workers.shuffled.csv'}" in last
    assert "stream time" not in last  # the frozen clock's line gives way to the cause
    # ... said once during the run too, as soon as it is clear
    assert sum("grouped by key" in r.getMessage() for r in caplog.records) == 1


def test_the_same_records_interleaved_say_nothing_of_it_and_decide(tmp_path, capsys):
    rows = _rows()
    random.Random(0).shuffle(rows)
    p = tmp_path / "workers.csv"
    _csv(p, rows)
    got = _run(p, tmp_path, "--policy", "cs")
    assert "keys_grouped" not in got
    assert "w07" in got["flagged"]
    assert "grouped by key" not in capsys.readouterr().out


def test_timestamped_json_lines_concatenated_by_key_are_sorted_by_their_time(tmp_path, capsys):
    p = tmp_path / "hosts.jsonl"
    with p.open("w") as f:
        for j, (w, r) in enumerate(_rows(keys=12, each=3000)):  # each key's own log, in time order, one after another
            f.write(json.dumps({"worker": w, "wrong": r, "ts": 1_700_000_000_000 + (j % 3000) * 50}) + "\n")
    got = _run(p, tmp_path, "--timestamp-field", "ts")
    assert got["keys_grouped"]["keys_returned"] == 0
    assert f"jq -c -s 'sort_by(.ts)[]' {p} > {tmp_path / 'hosts.by-time.jsonl'}" in capsys.readouterr().out


def test_keys_that_go_silent_and_come_back_are_not_called_grouped():
    """The registry's counts: a key forgotten (silent) and seen again is a return; a live stream's pausing keys
    return, a grouped stream's never do."""
    r = KeyRegistry(RewardCodec(), max_arms=10)
    for k in "abcd":
        r.new_key(k.encode(), 0.0)
    r.forget(["a", "b", "c"])
    r.forget(["a"])  # already forgotten: not counted twice
    assert (r.left, r.returned) == (3, 0)
    r.new_key(b"a", 1.0)
    r.new_key(b"e", 1.0)  # a new key is not a return
    assert (r.left, r.returned) == (3, 1)
    r.restore({"x": 0.0})  # a restored registry starts its counts of forgotten keys afresh
    r.new_key(b"b", 2.0)
    assert r.returned == 1


def test_inspect_names_a_key_whose_records_come_in_blocks(tmp_path, capsys):
    p = tmp_path / "workers.csv"
    _csv(p, _rows())
    assert main(["inspect", str(p)]) == 0
    assert "the records are grouped by worker: its 7 values come one block each" in capsys.readouterr().out
    rows = _rows()
    random.Random(0).shuffle(rows)
    _csv(p, rows)
    assert main(["inspect", str(p)]) == 0
    assert "grouped" not in capsys.readouterr().out


def test_the_continuous_monitor_on_a_sorted_file_says_so_too(tmp_path, capsys):
    """--forever on the sorted table: its threshold waited for the first key, silent since its block, and the run
    said only that; now it names the grouping. A live source is not judged (keys that stop there stopped)."""
    p = tmp_path / "workers.csv"
    _csv(p, _rows())
    got = _run(p, tmp_path, "--forever")
    assert got["keys_grouped"]["group"] == "default" and got["keys_grouped"]["keys"] == 20
    out = capsys.readouterr().out
    assert "the records come grouped by key: half of the 20 keys of group 'default' have had no record" in out
    rows = _rows()
    random.Random(0).shuffle(rows)
    _csv(p, rows)
    assert "keys_grouped" not in _run(p, tmp_path, "--forever")


def test_a_file_sorted_by_keys_of_fewer_records_than_a_silence_says_why_no_episode_started(tmp_path, capsys):
    """12 keys of 1,000 records each, sorted: discovery never ended (a new key every 1,000 records), no key went silent
    for the grouping warning, and the run said only that it stopped while discovering keys. It says that the keys came
    one at a time, and what to do."""
    p = tmp_path / "sorted.csv"
    _csv(p, sorted(_rows(keys=12, each=1000)))
    assert main(["run", "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "wrong",
                 "--checkpoint", "none"]) == 0
    out = capsys.readouterr().out
    assert "no episode started: the run stopped while discovering keys (12 so far)" in out, out
    assert "its keys came one at a time, a new one every 1,000 records or so, as when a file is sorted" in out, out
    rows = _rows(keys=12, each=1000)
    random.Random(1).shuffle(rows)
    _csv(p, rows)
    assert main(["run", "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "wrong",
                 "--checkpoint", "none", "--max-episodes", "1"]) == 0
    assert "came one at a time" not in capsys.readouterr().out

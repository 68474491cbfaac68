"""The first episode waits for the keys to settle, not for 10 s of a clock the keys' rates do not know.

Before: discovery ended ``discovery_seconds`` (10 s) of stream time after the first record. A stream of a record a
second (a crowd-sourcing export, a quiet service) had shown 10 of its 25 keys by then, and the first episode
decided without the other 15 -- an outlier among them was never looked at. Now the time rule also waits until as
many records have come since the last new key as before it (a key not seen yet then has a share of about 3 / r of
the stream), at the latest ``DISCOVERY_CAP`` times ``discovery_seconds``.
"""

from __future__ import annotations

import json
import random

from streamarms.cli import main
from streamarms.policies.anytime import AnytimeKSigma
from streamarms.runtime import EventClock, Scheduler, SchedulerConfig
from streamarms.runtime.episodes import DISCOVERY_CAP, EpisodeLifecycle


def _slow_stream(path, keys: int = 25, records: int = 80_000, seconds: float = 1.0, seed: int = 5,
                 new_every: int = 0) -> None:
    """A record every ``seconds`` of stream time, keys drawn at random; key ``w07`` at 0.3, the others 0.1.
    ``new_every``: a key never seen before every that many records as well (keys that keep coming)."""
    rng = random.Random(seed)
    with path.open("w") as f:
        for j in range(records):
            w = f"fresh{j}" if new_every and j % new_every == 0 else f"w{rng.randrange(keys):02d}"
            f.write(json.dumps({"worker": w, "wrong": int(rng.random() < (0.3 if w == "w07" else 0.1)),
                                "timestamp": int(1_700_000_000_000 + j * seconds * 1000)}) + "\n")


def _episode_one(path, tmp_path, *extra: str) -> dict:
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(path), "--key-field", "worker", "--reward-field", "wrong", "--policy",
                 "cs", "--max-episodes", "1", "--summary-json", str(summary), "--quiet", *extra]) == 0
    return json.loads(summary.read_text())


def test_a_record_a_second_has_every_key_in_the_first_episode(tmp_path):
    p = tmp_path / "slow.jsonl"
    _slow_stream(p)
    got = _episode_one(p, tmp_path)
    assert got["episodes"][0]["arms"] == 25
    assert "not_examined" not in got
    assert got["flagged"] == ["w07"]


def test_a_fast_stream_starts_as_before(tmp_path):
    """A thousand records a second: every key is in after a few dozen records, and the episode starts after
    --discovery-records records without a new key (1,000), as before."""
    p = tmp_path / "fast.jsonl"
    _slow_stream(p, seconds=0.001)
    got = _episode_one(p, tmp_path)
    e = got["episodes"][0]
    assert e["arms"] == 25
    assert got["records"] - e["records"] < 1_200  # the episode started within ~1,000 records of the last new key


def test_keys_that_keep_coming_start_the_episode_at_the_cap(tmp_path):
    """A new key every 5 records for ever: the keys never settle, and discovery ends DISCOVERY_CAP x 10 s after
    the first record (at a record a second: by record ~300), not never."""
    e = EpisodeLifecycle(SchedulerConfig(min_arms=3, discovery_records=1000, discovery_seconds=10.0))
    start = None
    for r in range(1, 2000):
        if r % 5 == 1 or r <= 3:
            e.on_new_key(records=r, now=float(r))
        if e.discovery_over(now=float(r), n_arms=3 + r // 5, records=r, fixed=False):
            start = r
            break
    assert start == 1 + DISCOVERY_CAP * 10


def test_a_snapshot_from_before_the_rule_restores():
    e = EpisodeLifecycle(SchedulerConfig())
    state = {"phase": "discovering", "episode": 0, "episode_started": 0.0, "next_start": None,
             "discovery": {"first_record_at": 5.0, "new_key_record": 40}, "history": []}
    e.restore(state, None, 0)
    assert e.first_key_record == 40  # the settling part counts from the last new key
    assert e.discovery_over(now=15.0, n_arms=5, records=41, fixed=False)
    assert e.snapshot()["discovery"]["first_key_record"] == 40


def test_feed_all_gives_up_no_want():
    """--passive-feed all (cs's default in run) gives the policy every reward of its keys, whatever it wants: a want
    that waits too long is not given up (before: at a record a second, a re-plan every few records, and the replay
    took 6x as long), and the decisions are those of any want timeout."""
    rng = random.Random(2)
    keys = [f"w{rng.randrange(25):02d}".encode() for _ in range(80_000)]
    recs = [(k, float(j), b'{"reward": %d}' % int(rng.random() < (0.3 if k == b"w07" else 0.1)))
            for j, k in enumerate(keys)]
    ends_of = []
    for wait in (0.5, 1e9):
        ends: list = []
        s = Scheduler(lambda arms, ep: AnytimeKSigma(arms, k=2.0, delta=0.1), clock=(clock := EventClock()),
                      config=SchedulerConfig(passive_feed="all", want_timeout=wait, max_episodes=1),
                      on_episode_end=ends.append)
        for key, t, value in recs:
            clock.advance(t)
            s.offer(key, value)
        assert s.counters.timeouts == 0
        ends_of.append([(e["arms"], e["samples"], e["outliers"]) for e in ends])
    assert ends_of[0] == ends_of[1] and ends_of[0][0][2] == ["w07"]


def test_stale_first_records_do_not_end_discovery_at_once(tmp_path):
    """A log that starts with a few records of the day before (a stray old line, a merged backlog): the stream's time
    jumps by a day at its first live record. That jump counted as discovery time -- past the cap at once -- and the
    first episode started on the three stale records' keys, without the 22 others (w07, the outlier, among them)."""
    p, live = tmp_path / "stale.jsonl", tmp_path / "live.jsonl"
    _slow_stream(live)
    day = 86_400_000
    stale = [json.dumps({"worker": f"w{i:02d}", "wrong": 0, "timestamp": 1_700_000_000_000 - day + i}) for i in range(3)]
    p.write_text("\n".join(stale) + "\n" + live.read_text())
    got = _episode_one(p, tmp_path)
    assert got["episodes"][0]["arms"] == 25, got["episodes"]
    assert got["flagged"] == ["w07"]


def test_a_run_resumed_around_the_jump_starts_the_episode_where_an_uninterrupted_one_does():
    """The jump rule reads the checkpointed discovery state and the record's time alone: snapshots taken before the
    jump, at it and while the keys settle after it resume to the same episode."""
    rng = random.Random(3)
    recs = [(f"w{i:02d}".encode(), float(i), b'{"reward": 0}') for i in range(3)]  # the day before
    for j in range(80_000):
        k = f"w{rng.randrange(25):02d}"
        recs.append((k.encode(), 86_400.0 + j, b'{"reward": %d}' % int(rng.random() < (0.3 if k == "w07" else 0.1))))

    def run(cuts):
        ends: list = []
        make = lambda: Scheduler(lambda arms, ep: AnytimeKSigma(arms, k=2.0, delta=0.1),  # noqa: E731
                                 clock=EventClock(), config=SchedulerConfig(passive_feed="all", max_episodes=1),
                                 on_episode_end=ends.append)
        s, i = make(), 0
        for cut in [*cuts, len(recs)]:
            for key, t, value in recs[i:cut]:
                s.clock.advance(t)
                s.offer(key, value)
            i = cut
            state = json.loads(json.dumps(s.snapshot()))
            s = make()
            s.restore(state)
        return [(e["arms"], e["records"], e["samples"], e["outliers"]) for e in ends]

    whole = run([])
    assert whole[0][0] == 25 and whole[0][3] == ["w07"]
    for cuts in ([2], [3], [4], [3, 60], [100, 170]):
        assert run(cuts) == whole, cuts

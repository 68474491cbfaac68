"""A key silent for ``episode_silence_records`` records leaves the running episode (streamarms.runtime.silence).

Before the rule, a key with one record before the first episode stalled all detection forever: WRR samples
every arm once first and ``defer`` is ignored then, so the plan waited for it (README: "A key whose records
are rare or stop does not stall the others").
"""

from __future__ import annotations

import json
import random

import pytest

from streamarms.models import BernoulliModel
from streamarms.policies.base import Decision
from streamarms.policies.ksigma import WeightedRoundRobin
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig
from streamarms.runtime.scheduler import _ExamplePolicy
from streamarms.sim import zww17_example

MEANS = zww17_example()  # 20 keys, the outliers are the last two
KEYS = [f"r{i:02d}" for i in range(len(MEANS))]
TRUTH = ["r18", "r19"]


def wrr(names, ep):
    return WeightedRoundRobin(names, k=2.0, delta=0.1)


def make(build=wrr, **cfg):
    clock = EventClock()
    alerts: list[dict] = []
    ends: list[dict] = []
    s = Scheduler(build, clock=clock, emit_alert=alerts.append, on_episode_end=ends.append,
                  config=SchedulerConfig(**cfg), codec=RewardCodec(model=BernoulliModel()), policy_name="wrr")
    return s, clock, alerts, ends


def stream(n, seed, t0=1.0, keys=KEYS, means=MEANS):
    rng = random.Random(seed)
    for i in range(n):
        a = rng.randrange(len(keys))
        yield keys[a].encode(), b'{"reward": %d}' % (rng.random() < means[a]), t0 + i * 0.001


def rare_stream(n=200_000, seed=1):
    """One record of ``rare-key`` first, then the 20 keys (the rare one never again)."""
    return [(b"rare-key", b'{"reward": 0}', 0.0), *stream(n, seed)]


def feed(s, clock, recs, how="offer"):
    if how == "offer":
        for k, v, t in recs:
            clock.advance(t)
            s.offer(k, v)
            if s.finished:
                break
        return
    for i in range(0, len(recs), 997):  # batches that do not line up with anything
        b = recs[i:i + 997]
        n, _ = s.offer_batch([r[0] for r in b], [r[1] for r in b], [r[2] * 1000.0 for r in b], clock)
        if s.finished:
            break


CFG = dict(discovery_records=200, episode_interval=1e9, max_episodes=2)


@pytest.mark.parametrize("how,feed_mode", [("offer", "planned"), ("batch", "planned"), ("batch", "all")])
def test_a_key_with_one_record_leaves_the_episode_and_the_others_are_decided(how, feed_mode):
    s, clock, alerts, ends = make(**CFG, passive_feed=feed_mode)
    feed(s, clock, rare_stream(), how)
    assert s.finished and len(ends) == 2
    limit = max(10 * 200, 100 * 21)
    assert ends[0]["reason"] == f"silent keys: rare-key (no record in {limit:,} records)"
    assert ends[0]["arms"] == 21 and "rare-key" in ends[0]["undecided"] and not ends[0]["done"]
    assert ends[0]["records"] in (limit, limit + 1)  # (+1: the record that started it was counted before)
    # the next episode started at once (not after the interval), without the key, and decides
    assert ends[1]["started"] == ends[0]["ended"] and ends[1]["reason"] == "done"
    assert ends[1]["arms"] == 20 and ends[1]["outliers"] == TRUTH
    assert "rare-key" not in s.known_arms
    assert sorted(a["arm"] for a in alerts) == TRUTH


def test_the_batch_path_decides_exactly_as_offer():
    runs = []
    for how in ("offer", "batch"):
        s, clock, alerts, ends = make(**CFG)
        feed(s, clock, rare_stream(), how)
        runs.append((ends, alerts, s.stats()))
    assert runs[0] == runs[1]


def test_without_the_rule_the_key_stalls_the_episode_as_before():
    s, clock, alerts, ends = make(**CFG, episode_silence_records=0)
    feed(s, clock, rare_stream())
    assert not s.finished and ends == [] and s.used == 20 and s.phase == "running"  # each other key once
    assert s.silence.unheard() == ["rare-key"]  # what the run's "episode unfinished" line names


def test_a_key_that_stops_mid_episode():
    recs = [r for i, r in enumerate(stream(300_000, seed=2)) if not (r[0] == b"r05" and i > 5_000)]
    s, clock, alerts, ends = make(**CFG, episode_silence_records=3_000)
    feed(s, clock, recs)
    assert s.finished and len(ends) == 2
    assert ends[0]["reason"] == "silent keys: r05 (no record in 3,000 records)" and ends[0]["samples"] > 0
    assert ends[1]["started"] == ends[0]["ended"] and ends[1]["arms"] == 19
    assert ends[1]["reason"] == "done" and ends[1]["outliers"] == TRUTH


def test_a_silent_key_that_comes_back_joins_a_later_episode():
    recs = rare_stream(120_000)
    late = list(stream(200_000, seed=3, t0=recs[-1][2] + 1.0, keys=[*KEYS, "rare-key"], means=[*MEANS, 0.2]))
    s, clock, alerts, ends = make(discovery_records=200, episode_interval=60.0, max_episodes=4)
    feed(s, clock, recs + late)
    assert ends[0]["reason"].startswith("silent keys: rare-key") and ends[1]["arms"] == 20
    later = [e for e in ends[2:] if e["arms"] == 21]
    assert later and later[0]["reason"] == "done" and later[0]["outliers"] == TRUTH


@pytest.mark.parametrize("how", ["offer", "batch"])
def test_checkpoint_restore_inside_the_silence_count_equals_an_uninterrupted_run(how):
    recs = rare_stream(150_000, seed=4)

    def run(cuts, old=False):
        s, clock, alerts, ends = make(**CFG)
        i = 0
        for cut in [*cuts, len(recs)]:
            feed(s, clock, recs[i:cut], how)
            i = cut
            if s.finished:
                break
            state = json.loads(json.dumps(s.snapshot()))
            if old:
                del state["silence"]  # a checkpoint from before the rule still loads
            s, clock, alerts2, ends2 = make(**CFG)
            s.restore(state)
            alerts2[:0], ends2[:0] = alerts, ends
            alerts, ends = alerts2, ends2
        return s, alerts, ends

    s0, alerts0, ends0 = run([])
    assert s0.finished and ends0[0]["reason"].startswith("silent keys: rare-key")
    # cuts while the count runs (the episode starts after ~200 records, ends ~2,100 later), at its end, after
    for cuts in ([1_000], [250, 1_234, 2_299, 2_300, 2_301, 40_000]):
        s1, alerts1, ends1 = run(cuts)
        assert (ends1, alerts1, s1.stats()) == (ends0, alerts0, s0.stats())
    s2, _, ends2 = run([1_000], old=True)  # the count restarts at the restore: later, the same outcome
    assert ends2[0]["reason"] == ends0[0]["reason"] and ends2[1]["outliers"] == TRUTH


class _SaysNormal(_ExamplePolicy):
    """Reports every arm it has not finished as normal (a policy's guess at an unfinished episode)."""

    def decision(self) -> Decision:
        d = super().decision()
        return Decision(outliers=d.outliers, normals=d.normals + d.undecided, undecided=[], estimated_outliers=[],
                        threshold=0.5, threshold_interval=(0.5, 0.5), pulls=d.pulls, done=d.done)


def test_a_flagged_key_left_out_for_silence_is_not_cleared():
    out: list[dict] = []
    clock = EventClock()
    s = Scheduler(lambda arms, ep: _SaysNormal(arms), clock=clock, emit_alert=out.append,
                  config=SchedulerConfig(discovery_records=10, episode_interval=0.0, max_episodes=2,
                                         episode_silence_records=500))
    t = 0.0
    for i in range(3_000):  # episode 1: c is an outlier; then c stops
        key = "abcd"[i % 4] if i < 100 else "abd"[i % 3]
        t += 0.01
        clock.advance(t)
        s.offer(key.encode(), b'{"reward": %d}' % (key == "c"))
        if s.finished:
            break
    assert [(a["arm"], a["kind"]) for a in out] == [("c", "outlier")]
    assert s.history[1]["reason"].startswith("silent keys: c") and "c" in s.alerts.flagged

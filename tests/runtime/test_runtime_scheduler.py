"""Scheduler: passive plan-following, active requests, episodes, alerts, timeouts, state round trip."""

from __future__ import annotations

import json
import math
import random

import pytest
from runtime_policy import PlanCheckingRR

from streamarms.models import BernoulliModel
from streamarms.policies.ksigma import WeightedRoundRobin
from streamarms.runtime import INVALID_REASONS, EventClock, InvalidRecord, RewardCodec, Scheduler, SchedulerConfig
from streamarms.sim import zww17_example


def make(policy=None, *, arms=None, emit_request=None, **cfg):
    clock = EventClock()
    alerts: list[dict] = []
    ends: list[dict] = []
    policy = policy or (lambda names, ep: PlanCheckingRR(names))
    s = Scheduler(policy, clock=clock, emit_alert=alerts.append, on_episode_end=ends.append,
                  config=SchedulerConfig(**cfg), arms=arms, emit_request=emit_request,
                  codec=RewardCodec(model=BernoulliModel()))
    return s, clock, alerts, ends


def bern_stream(keys, means, n, seed, dt=0.001, t0=0.0):
    rng = random.Random(seed)
    for i in range(n):
        a = rng.randrange(len(keys))
        yield keys[a].encode(), b'{"reward": %d}' % (rng.random() < means[a]), t0 + i * dt


def feed(s, clock, records, until_finished=True):
    bad = []
    for key, value, t in records:
        clock.advance(t)
        r = s.offer(key, value)
        if r is not None:
            bad.append(r.reason)
        if until_finished and s.finished:
            break
    return bad


# ----------------------------------------------------------------------------------------------
def test_policy_receives_exactly_its_plan_and_request_objects():
    keys = [f"k{i}" for i in range(6)]
    s, clock, alerts, ends = make(lambda names, ep: PlanCheckingRR(names, need=30, pair_every=4),
                                  discovery_records=50, max_episodes=1, window=4, prefetch=2)
    feed(s, clock, bern_stream(keys, [0.2] * 5 + [0.9], 50_000, seed=1))
    assert s.finished
    p = s.policy
    assert p.steps == 6 * 30 == s.used == ends[0]["samples"]
    assert {k for _, k, _ in p.requests_seen} == {"arm", "pair"}
    assert all(rid is not None for _, k, rid in p.requests_seen if k == "pair")
    st = s.stats()
    assert st["records"] == st["used"] + st["skipped"] + st["held"] + sum(st["invalid"].values())
    assert [a["arm"] for a in alerts] == ["k5"]


def test_window_and_prefetch_reduce_records_read_not_samples_used():
    keys = [f"k{i}" for i in range(10)]
    reads = {}
    for window, prefetch in [(1, 1), (10, 4)]:
        s, clock, _, _ = make(lambda names, ep: PlanCheckingRR(names, need=50), discovery_records=50,
                              max_episodes=1, window=window, prefetch=prefetch)
        feed(s, clock, bern_stream(keys, [0.3] * 10, 100_000, seed=2))
        assert s.finished and s.used == 500
        reads[window] = s.records
    assert reads[10] < reads[1] / 3  # with one want at a time ~10 records per sample, with the window ~1-2


def test_skipped_records_are_not_parsed_unless_validate_all():
    # window 1: only records of the head are taken; every other record carries garbage
    keys = ["a", "b", "c"]
    recs, t = [], 0.0
    for key in keys * 5:  # discovery: valid records
        recs.append((key.encode(), b'{"reward": 0}', t))
        t += 0.01
    plan = ["a", "b", "c"] * 10
    for want in plan:
        for other in keys:
            if other != want:
                recs.append((other.encode(), b"garbage", t))
                t += 0.01
        recs.append((want.encode(), b'{"reward": 1}', t))
        t += 0.01
    for validate in ("used", "all"):
        s, clock, _, _ = make(lambda names, ep: PlanCheckingRR(names, need=10), discovery_records=3,
                              max_episodes=1, window=1, prefetch=1, validate=validate)
        bad = feed(s, clock, recs)
        assert s.finished and s.used == 30
        garbage = sum(v == b"garbage" for _, v, _ in recs[:s.records])
        assert garbage > 30
        assert len(bad) == (0 if validate == "used" else garbage) and set(bad) <= {"not_json"}


def test_which_records_are_used_does_not_depend_on_their_values():
    keys = [f"k{i}" for i in range(5)]
    runs = []
    for seed_values in (10, 11):
        rng_keys, rng_vals = random.Random(3), random.Random(seed_values)
        recs = []
        for i in range(20_000):
            recs.append((keys[rng_keys.randrange(5)].encode(),
                         b'{"reward": %d}' % (rng_vals.random() < 0.5), i * 0.001))
        s, clock, _, _ = make(lambda names, ep: PlanCheckingRR(names, need=40), discovery_records=30,
                              max_episodes=1, window=3, prefetch=2)
        feed(s, clock, recs)
        runs.append((s.policy.log, s.records, s.skipped))
    assert runs[0] == runs[1]


def test_discovery_and_keys_first_seen_during_an_episode_join_the_next():
    s, clock, _, ends = make(lambda names, ep: PlanCheckingRR(names, need=5), discovery_records=20,
                             max_episodes=2, episode_interval=10.0)
    recs = list(bern_stream(["a", "b", "c"], [0.1, 0.1, 0.9], 200, seed=4, dt=0.01))
    recs += list(bern_stream(["a", "b", "c", "d"], [0.1, 0.1, 0.9, 0.1], 3000, seed=5, dt=0.01, t0=2.0))
    feed(s, clock, recs)
    assert [e["arms"] for e in ends] == [3, 4]
    assert ends[1]["started"] >= ends[0]["started"] + 10.0
    assert s.finished


def test_discovery_waits_for_its_gate_every_partition_delivered():
    """The first partitions' keys arrive, 'no new key for N records' holds, but the source's gate says a
    partition has not delivered yet: discovery goes on (the late partition's key 'd' is in episode 1);
    a tick asks the gate again without a record, and once it opens the episode starts."""
    opened = [False]
    s, clock, _, ends = make(lambda names, ep: PlanCheckingRR(names, need=5), discovery_records=20, max_episodes=1)
    s.episodes.gate = lambda: opened[0]
    feed(s, clock, bern_stream(["a", "b", "c"], [0.1, 0.1, 0.9], 200, seed=4, dt=0.001), until_finished=False)
    assert s.phase == "discovering" and s.episodes.gated
    feed(s, clock, bern_stream(["d", "a"], [0.1, 0.1], 30, seed=5, dt=0.001, t0=1.0), until_finished=False)
    assert s.phase == "discovering" and s.episodes.gated  # 20 records without a new key again: still gated
    opened[0] = True
    s.tick()  # no record: the gate is asked at the next turn; it opens, and the rule starts again from here
    assert s.phase == "discovering" and not s.episodes.gated
    # the late partition's second key 'e' comes after its first records (kafka: the gate opened on the
    # partition's first fetched batch): it is in episode 1; 20 records without a new key then start it
    feed(s, clock, bern_stream(["e", "a"], [0.1, 0.1], 40, seed=7, dt=0.001, t0=1.5), until_finished=False)
    assert s.phase == "running" and sorted(s.policy.arms) == ["a", "b", "c", "d", "e"]
    feed(s, clock, bern_stream(["a", "b", "c", "d", "e"], [0.1, 0.1, 0.9, 0.1, 0.1], 3000, seed=6, dt=0.001,
                               t0=2.0))
    assert ends[0]["arms"] == 5


def test_an_open_gate_changes_nothing():
    """A gate that is open when the rule first holds (every partition delivered in time): the episode
    starts at once, as without a gate."""
    s, clock, _, ends = make(lambda names, ep: PlanCheckingRR(names, need=5), discovery_records=20, max_episodes=1)
    s.episodes.gate = lambda: True
    feed(s, clock, bern_stream(["a", "b", "c"], [0.1, 0.1, 0.9], 200, seed=4, dt=0.001), until_finished=False)
    assert s.phase in ("running", "finished") and sorted(s.policy.arms) == ["a", "b", "c"]
    assert s.episodes.start_records <= 3 + 21  # the three keys in the first records, then 20 without a new one


def test_silent_arm_is_deferred_and_never_stalls_the_others():
    keys = ["a", "b", "c", "d", "e"]
    recs = list(bern_stream(keys, [0.2] * 5, 100, seed=6, dt=0.01))  # all keys, then 'e' goes silent
    recs += list(bern_stream(keys[:4], [0.2] * 4, 20_000, seed=7, dt=0.01, t0=1.0))
    s, clock, _, ends = make(lambda names, ep: PlanCheckingRR(names, need=25), discovery_records=50,
                             max_episodes=1, window=2, prefetch=1, want_timeout=1.0, episode_timeout=60.0,
                             episode_silence_records=0)  # the want timeouts alone (the silence rule: below)
    feed(s, clock, recs)
    assert s.finished
    e = ends[0]
    assert e["reason"] == "timeout" and e["undecided"] == ["e"]
    p = s.policy
    assert all(p.m[k] == 25 for k in keys[:4])
    assert "e" in p.deferred
    # the four others finished early: not held up by a want of 'e' per round
    assert p.log.index("d") < 10 and len(p.log) == 4 * 25 + p.m["e"]


def test_active_mode_requests_bounded_matched_and_timed_out():
    names = [f"w{i}" for i in range(6)]
    sent: list[tuple[str, dict]] = []
    s, clock, alerts, ends = make(lambda arms, ep: PlanCheckingRR(arms, need=15), arms=names,
                                  emit_request=lambda arm, payload: sent.append((arm, payload)),
                                  mode="active", max_in_flight=4, prefetch=2, request_timeout=5.0, max_episodes=1)
    s.tick()  # fixed arms: the episode starts without a record
    assert s.phase == "running" and 0 < len(sent) <= 4
    rng = random.Random(8)
    t, answered, peak = 0.0, 0, 0
    bad = []
    while not s.finished and t < 10_000:
        t += 0.1
        clock.advance(t)
        s.tick()
        if not sent:
            continue
        arm, req = sent.pop(0)
        answered += 1
        if answered % 9 == 0:
            continue  # lost: must time out and be replaced
        if answered % 13 == 0:
            r = s.offer(b"w0" if arm != "w0" else b"w1", json.dumps({"reward": 1, "request_id": req["request_id"]}))
            bad.append(r.reason if r else None)
            continue
        value = {"reward": int(rng.random() < (0.9 if arm == "w5" else 0.1)), "request_id": req["request_id"]}
        assert s.offer(arm.encode(), json.dumps(value).encode()) is None
        s.offer(arm.encode(), json.dumps({"reward": 1, "request_id": "nope"}).encode())  # unsolicited: skipped
        peak = max(peak, s.stats()["in_flight"])
    assert s.finished and ends[0]["reason"] == "done" and s.used == 6 * 15
    assert peak <= 4
    assert s.counters.timeouts > 0 and s.counters.unmatched > 0
    assert set(bad) == {"request_mismatch"}
    assert [a["arm"] for a in alerts] == ["w5"]


def test_alerts_outlier_then_cleared_and_no_repeat():
    clock_switch = 5.0
    rng = random.Random(9)
    recs = []
    for i in range(4000):
        t = i * 0.01
        k = "abcd"[rng.randrange(4)]
        hot = k == "a" and t < clock_switch
        recs.append((k.encode(), b'{"reward": %d}' % hot, t))
    s, clock, alerts, ends = make(lambda names, ep: PlanCheckingRR(names, need=5), discovery_records=20,
                                  max_episodes=3, episode_interval=10.0)
    feed(s, clock, recs)
    assert len(ends) == 3
    assert [(a["arm"], a["kind"], a["episode"]) for a in alerts] == [("a", "outlier", 1), ("a", "cleared", 2)]
    assert all(a["alert_id"] == f"{a['episode']}:{a['arm']}:{a['kind']}" for a in alerts)
    need = {"arm", "kind", "episode", "policy", "estimate", "interval", "threshold", "delta", "samples", "time"}
    assert need <= set(alerts[0])


@pytest.mark.parametrize("which", ["plan-rr", "wrr", "wrr-feed-all"])
def test_snapshot_restore_mid_run_equals_uninterrupted(which):
    means = zww17_example()
    keys = [f"r{i:02d}" for i in range(len(means))]
    if which.startswith("wrr"):
        build = lambda names, ep: WeightedRoundRobin(names, k=2.0, delta=0.1)  # noqa: E731
        cfg = dict(discovery_records=200, max_episodes=2, episode_interval=30.0, want_timeout=0.5, prefetch=4,
                   passive_feed="all" if which == "wrr-feed-all" else "planned")  # (a small hold: the gap times out)
        n = 300_000
    else:
        build = lambda names, ep: PlanCheckingRR(names, need=200, pair_every=5)  # noqa: E731
        cfg = dict(discovery_records=200, max_episodes=2, episode_interval=5.0, want_timeout=0.05)
        n = 60_000
    # a stream with a gap in one key (exercises timeouts, cool-downs, held rewards)
    recs = [r for r in bern_stream(keys, means, n, seed=12) if not (r[0] == b"r03" and 3.0 < r[2] < 9.0)]

    def run(cuts):
        s, clock, alerts, ends = make(build, **cfg)
        i = 0
        for cut in [*cuts, len(recs)]:
            while i < cut and not s.finished:
                k, v, t = recs[i]
                clock.advance(t)
                s.offer(k, v)
                i += 1
            if s.finished:
                break
            state = json.loads(json.dumps(s.snapshot()))
            s, clock, alerts2, ends2 = make(build, **cfg)
            s.restore(state)
            alerts2[:0] = alerts
            ends2[:0] = ends
            alerts, ends = alerts2, ends2
        return s, alerts, ends

    s0, alerts0, ends0 = run([])
    assert s0.finished and len(ends0) == 2
    for cuts in ([1_000], [150, 7_777, 20_001, 40_000]):
        s1, alerts1, ends1 = run(cuts)
        assert ends1 == ends0
        assert alerts1 == alerts0
        assert s1.stats() == s0.stats()
    assert s0.counters.timeouts > 0 or which == "wrr-feed-all"


def test_feed_all_gives_every_reward_of_an_episode_arm_and_reads_fewer_records():
    means = zww17_example()
    keys = [f"r{i:02d}" for i in range(len(means))]
    runs = {}
    for feed_mode in ("planned", "all"):
        s, clock, alerts, ends = make(lambda names, ep: WeightedRoundRobin(names, k=2.0, delta=0.1),
                                      discovery_records=200, max_episodes=1, passive_feed=feed_mode)
        feed(s, clock, bern_stream(keys, means, 400_000, seed=3))
        assert s.finished and ends[0]["outliers"] == ["r18", "r19"]
        runs[feed_mode] = ends[0]
    assert runs["all"]["samples"] == runs["all"]["records"]  # nothing skipped while the episode ran
    assert runs["planned"]["samples"] < runs["planned"]["records"]
    assert runs["all"]["records"] < runs["planned"]["records"]


def test_feed_all_skips_keys_outside_the_episode_and_counts_bad_records():
    s, clock, alerts, ends = make(lambda names, ep: WeightedRoundRobin(names, k=2.0, delta=0.1),
                                  arms=["a", "b", "c"], passive_feed="all")
    bad = feed(s, clock, [(b"a", b'{"reward": 1}', 0.0), (b"zz", b'{"reward": 1}', 0.1),
                          (b"b", b'{"reward": 2}', 0.2), (b"c", b'{"reward": 0}', 0.3)])
    assert bad == ["out_of_model"] and s.used == 2 and s.policy.pulls == 2


def test_feed_all_is_for_passive_mode():
    with pytest.raises(ValueError, match="passive_feed 'all' applies to passive mode only"):
        SchedulerConfig(mode="active", passive_feed="all")
    with pytest.raises(ValueError, match="passive_feed must be 'planned' or 'all'"):
        SchedulerConfig(passive_feed="some")


def test_invalid_records_each_reason():
    codec = RewardCodec(model=BernoulliModel(), max_key_bytes=8)
    cases = {
        "key_missing": (None, b'{"reward": 1}'),
        "key_not_utf8": (b"\xff\xfe", b'{"reward": 1}'),
        "key_too_long": (b"x" * 9, b'{"reward": 1}'),
        "value_missing": (b"a", None),
        "not_json": (b"a", b"{nope"),
        "not_object": (b"a", b"[1]"),
        "missing_reward": (b"a", b'{"r": 1}'),
        "not_numeric": (b"a", b'{"reward": "1"}'),
        "not_finite": (b"a", b'{"reward": NaN}'),
        "out_of_model": (b"a", b'{"reward": 0.5}'),
    }
    for reason, (key, value) in cases.items():
        with pytest.raises(InvalidRecord) as e:
            codec.reward(codec.arm(key), value)
        assert e.value.reason == reason and reason in INVALID_REASONS
    with pytest.raises(InvalidRecord, match="not_numeric"):
        codec.reward("a", b'{"reward": "true"}')
    assert codec.reward("a", b'{"reward": true}') == 1.0  # a flag (tests/runtime/test_flag_rewards.py)


def test_bad_records_never_stop_the_scheduler_and_are_counted():
    s, clock, _, _ = make(lambda names, ep: PlanCheckingRR(names, need=5), discovery_records=10,
                          max_episodes=1, validate="all", window=3)
    good = list(bern_stream(["a", "b", "c"], [0.1, 0.1, 0.9], 2000, seed=13, dt=0.01))
    recs = []
    for i, r in enumerate(good):
        recs.append(r)
        if i % 50 == 7:
            recs.append((b"b", b'{"reward": 0.5}', r[2]))
            recs.append((None, b'{"reward": 1}', r[2]))
    bad = feed(s, clock, recs)
    assert s.finished
    assert set(bad) == {"out_of_model", "key_missing"}
    assert s.counters.invalid["out_of_model"] == bad.count("out_of_model") > 0


def test_max_arms_refuses_a_key_flood():
    s, clock, _, _ = make(max_arms=5, discovery_records=10_000)
    bad = feed(s, clock, [(f"k{i}".encode(), b'{"reward": 1}', i * 0.001) for i in range(100)], until_finished=False)
    assert len(s.known_arms) == 5 and bad.count("too_many_arms") == 95


def test_key_ttl_forgets_silent_keys_between_episodes():
    s, clock, _, ends = make(lambda names, ep: PlanCheckingRR(names, need=3), discovery_records=20,
                             max_episodes=2, episode_interval=20.0, key_ttl=5.0)
    recs = list(bern_stream(["a", "b", "c", "d"], [0.1] * 4, 500, seed=14, dt=0.01))
    recs += list(bern_stream(["a", "b", "c"], [0.1] * 3, 5000, seed=15, dt=0.01, t0=5.0))
    feed(s, clock, recs)
    assert [e["arms"] for e in ends] == [4, 3]


def test_fixed_arms_skip_other_keys():
    s, clock, _, ends = make(lambda names, ep: PlanCheckingRR(names, need=5), arms=["a", "b", "c"], max_episodes=1)
    feed(s, clock, bern_stream(["a", "b", "c", "zz"], [0.1] * 4, 2000, seed=16))
    assert s.finished and ends[0]["arms"] == 3 and "zz" not in s.known_arms


@pytest.mark.parametrize("kw, msg", [
    (dict(mode="both"), "mode must be"), (dict(window=0), "window must be >= 1"),
    (dict(want_timeout=0), "want_timeout must be > 0"), (dict(max_arms=2, min_arms=3), "max_arms"),
    (dict(max_episodes=0), "max_episodes must be >= 1"), (dict(validate="some"), "validate must be"),
    (dict(prefetch=0), "prefetch must be >= 1"),
])
def test_config_errors_say_the_valid_range(kw, msg):
    with pytest.raises(ValueError, match=msg):
        SchedulerConfig(**kw)


@pytest.mark.parametrize("name", ["rr", "wrr"])
@pytest.mark.parametrize("model", ["bernoulli", "bounded"])
def test_ksigma_restore_continues_bit_for_bit(name, model):
    """The daemon's restart guarantee needs policies whose restore is exact, not just equivalent."""
    from streamarms.registry import build_policy
    from streamarms.sim import Environment
    means = zww17_example()
    names = [str(i) for i in range(len(means))]
    env = Environment(means, seed=21, model="bernoulli")
    a = build_policy(name, names, k=2.0, delta=0.1, reward_model=model)
    b = None
    events_a, events_b = [], []
    t = 0
    while not a.done and t < 60_000:
        arm = a.next_request().arm
        x = env.pull(arm)
        events_a += a.update(arm, x)
        t += 1
        if t in (1, 20, 21, 500, 4_321, 9_999):
            b = type(a).restore(json.loads(json.dumps(a.snapshot())))
            events_b = list(events_a)
        elif b is not None:
            assert b.next_request() is not None and b.next_request().arm == arm
            events_b += b.update(arm, x)
    assert b is not None and a.done == b.done and a.pulls == b.pulls
    assert events_a == events_b and (model == "bounded" or a.done)
    assert a.decision().to_dict() == b.decision().to_dict()


def test_an_episode_that_cannot_be_built_is_retried_later():
    def build(names, ep):
        if len(names) < 5:
            raise ValueError(f"needs 5 arms, got {len(names)}")
        return PlanCheckingRR(names, need=3)

    s, clock, _, ends = make(build, discovery_records=20, min_arms=3, max_episodes=1, episode_interval=2.0)
    recs = list(bern_stream(["a", "b", "c"], [0.1] * 3, 300, seed=17, dt=0.01))
    recs += list(bern_stream(["a", "b", "c", "d", "e"], [0.1] * 5, 3000, seed=18, dt=0.01, t0=3.0))
    feed(s, clock, recs)
    assert s.finished and ends[0]["arms"] == 5 and s.episodes.build_error is None


def test_discovery_time_counts_from_the_first_timestamp_not_from_a_first_record_without_one():
    """A first record without a timestamp left the clock at 0; the next one's (ms since 1970) made
    ``discovery_seconds`` look long over, and episode 1 started on the 3 keys seen so far."""
    from streamarms.runtime.config import SchedulerConfig
    from streamarms.runtime.episodes import EpisodeLifecycle
    e = EpisodeLifecycle(SchedulerConfig(min_arms=3, discovery_records=1000, discovery_seconds=10.0))
    e.on_new_key(records=1, now=0.0)  # no timestamp
    for i, key_time in enumerate([1.7e9, 1.7e9 + 1, 1.7e9 + 2], start=2):
        e.on_new_key(records=i, now=key_time)
    assert not e.discovery_over(now=1.7e9 + 2, n_arms=4, records=4, fixed=False)
    assert not e.discovery_over(now=1.7e9 + 9, n_arms=4, records=500, fixed=False)
    assert e.discovery_over(now=1.7e9 + 10.5, n_arms=4, records=600, fixed=False)


def test_an_undated_episode_has_no_timeout_until_dated_and_survives_a_checkpoint():
    """A group member's episode joined before its first record (stream clock at 0) is undated: no timeout, and
    its summary does not count from 0 (it would have timed out at the first record's timestamp, ms since
    1970); dated at that record, it times out ``episode_timeout`` later and its next start counts from there.
    A checkpoint taken in between restores it undated (no ``Infinity`` in the JSON)."""
    from streamarms.runtime.config import SchedulerConfig
    from streamarms.runtime.episodes import EpisodeLifecycle
    from streamarms.runtime.scheduler import _ExamplePolicy
    cfg = SchedulerConfig(episode_timeout=60.0, episode_interval=100.0)
    e = EpisodeLifecycle(cfg)
    e.begin(_ExamplePolicy(["a", "b"]), now=0.0, records=0, dated=False)
    assert e.deadline(n_arms=2, fixed=False) == (math.inf, math.inf) and not e.timed_out(1.7e9)
    assert e.summary(e.policy.decision(), 1.7e9, "stop", 5, "p")["duration"] == 0
    state = json.loads(json.dumps(e.snapshot(), allow_nan=False))
    back = EpisodeLifecycle(cfg)
    back.restore(state, e.policy, 0)
    assert not back.dated and not back.timed_out(1.7e9)
    back.date(1.7e9)
    assert back.deadline(n_arms=2, fixed=False) == (1.7e9 + 60.0, math.inf) and back.next_start == 1.7e9 + 100.0
    assert not back.timed_out(1.7e9 + 59.0) and back.timed_out(1.7e9 + 60.0)


def test_a_running_episode_restored_under_another_reward_model_is_refused():
    """Resumed with --reward-model bounded, a Bernoulli episode's WRR refused every reward of 5 the codec let
    through: 885 rejected_by_policy, of which only the 129 given at once were dead-lettered (a held reward
    has no record left to send). The restore refuses the mismatch instead; between episodes it may change."""
    from streamarms.models import BoundedModel

    keys = [f"k{i}" for i in range(10)]
    wrr = lambda names, ep: WeightedRoundRobin(names, k=2.0, delta=0.1)  # noqa: E731
    s, clock, _, _ = make(wrr, discovery_records=50, max_episodes=2, episode_interval=1e9)
    feed(s, clock, bern_stream(keys, [0.2] * 9 + [0.9], 3_000, seed=3), until_finished=False)
    assert s.phase == "running"
    state = json.loads(json.dumps(s.snapshot()))

    def fresh(model):
        return Scheduler(lambda names, ep: WeightedRoundRobin(names, k=2.0, delta=0.1, model=model),
                         clock=EventClock(), config=SchedulerConfig(discovery_records=50, max_episodes=2,
                                                                    episode_interval=1e9),
                         codec=RewardCodec(model=model))

    fresh(BernoulliModel()).restore(state)  # the same model: resumes
    with pytest.raises(ValueError, match="reward model .*bernoulli.* this run .*bounded"):
        fresh(BoundedModel(0.0, 10.0)).restore(state)
    state["phase"] = "idle"  # between episodes the run's model applies to the next one
    fresh(BoundedModel(0.0, 10.0)).restore(state)

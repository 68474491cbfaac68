"""The batched path (``Scheduler.offer_batch``) decides exactly as ``Scheduler.offer`` record by record.

Same stream, cut into poll batches of random sizes: the refusals (which record, which reason), the
alerts, the episode summaries (decisions, sample counts), the counters and the whole snapshot must be
equal -- passive plan-following (both validation settings), the "every reward" feed, active mode
(answers generated from the requests of the previous batch, so both paths see the same answers),
with bad records, late new keys and several episodes.
"""

from __future__ import annotations

import json
import random

import pytest
from runtime_policy import PlanCheckingRR

from streamarms.models import BernoulliModel
from streamarms.policies.anytime import AnytimeKSigma
from streamarms.policies.ksigma import WeightedRoundRobin
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig
from streamarms.runtime import batch as batch_module

_BAD = [b'{"reward": "1"}', b"not json", b'{"reward": 2}', b"[1]", None, b'{"r": 1}', b'{"reward": NaN}',
        b'{"reward": 1' + b"0" * 400 + b"}", b'{"reward": true}']

POLICIES = {
    "rr": lambda arms, ep: PlanCheckingRR(arms, need=40),
    "wrr": lambda arms, ep: WeightedRoundRobin(arms, k=2.0, delta=0.1),
    "cs": lambda arms, ep: AnytimeKSigma(arms, k=2.0, delta=0.1),
}


def stream(n: int, n_keys: int, seed: int, bad_rate: float = 0.02):
    """(key, value, timestamp ms): Bernoulli rewards, two outliers, bad records and late keys."""
    rng = random.Random(seed)
    means = [0.2] * (n_keys - 2) + [0.9, 0.95]
    out = []
    for i in range(n):
        a = rng.randrange(n_keys if i > n // 3 else n_keys - 1)  # the last key appears late
        key = f"k{a:03d}".encode()
        u = rng.random()
        if u < bad_rate:
            value = rng.choice(_BAD)
            if u < bad_rate / 4:
                key = rng.choice([None, b"\xff\xfe", b""])
        else:
            value = b'{"reward": %d}' % (rng.random() < means[a])
        ts = 1_700_000_000_000 + i if rng.random() > 0.01 else None  # a few records without a timestamp
        out.append((key, value, ts))
    return out


def make(policy: str, **cfg):
    clock = EventClock()
    out = {"alerts": [], "ends": [], "requests": []}
    s = Scheduler(POLICIES[policy], clock=clock, emit_alert=out["alerts"].append,
                  on_episode_end=out["ends"].append, codec=RewardCodec(model=BernoulliModel()),
                  emit_request=(lambda arm, payload: out["requests"].append((arm, payload)))
                  if cfg.get("mode") == "active" else None,
                  config=SchedulerConfig(**cfg), request_prefix="r")
    return s, clock, out


def per_record(s: Scheduler, clock: EventClock, batch) -> tuple[int, list[tuple[int, str]]]:
    """The daemon's former loop: advance the clock to the largest timestamp, offer, stop when finished."""
    bad = []
    for i, (key, value, ts) in enumerate(batch):
        if ts is not None and ts / 1000.0 > clock.now:
            clock.now = ts / 1000.0
        r = s.offer(key, value)
        if r is not None:
            bad.append((i, r.reason))
        if s.finished:
            return i + 1, bad
    return len(batch), bad


def batched(s: Scheduler, clock: EventClock, batch) -> tuple[int, list[tuple[int, str]]]:
    n, bad = s.offer_batch([r[0] for r in batch], [r[1] for r in batch], [r[2] for r in batch])
    return n, [(i, e.reason) for i, e in bad]


def run(records, policy: str, path, **cfg):
    s, clock, out = make(policy, **cfg)
    rng = random.Random(5)
    pos, refused = 0, []
    while pos < len(records) and not s.finished:
        size = rng.choice([1, 2, 7, 50, 333, 1000])
        batch = records[pos:pos + size]
        n, bad = path(s, clock, batch)
        refused += [(pos + i, r) for i, r in bad]
        pos += n
        s.tick()
    return s, out, refused, pos


def assert_same(a, b) -> None:
    (sa, oa, ra, pa), (sb, ob, rb, pb) = a, b
    assert pa == pb and ra == rb
    assert oa["alerts"] == ob["alerts"] and oa["ends"] == ob["ends"] and oa["requests"] == ob["requests"]
    assert sa.stats() == sb.stats()
    assert json.dumps(sa.snapshot(), sort_keys=True) == json.dumps(sb.snapshot(), sort_keys=True)


@pytest.mark.parametrize("policy,validate", [("rr", "all"), ("rr", "used"), ("wrr", "all"), ("wrr", "used")])
def test_passive_plan_following_batched_equals_per_record(policy, validate):
    records = stream(40_000, 12, seed=1)
    cfg = dict(discovery_records=300, episode_interval=0.0, max_episodes=3, validate=validate, window=4, prefetch=2)
    ref = run(records, policy, per_record, **cfg)
    assert ref[0].counters.episodes_done >= 2 and ref[2]  # the stream exercises episodes and refusals
    assert_same(ref, run(records, policy, batched, **cfg))


@pytest.mark.parametrize("interval,arms,feed,validate", [
    (12.0, None, "planned", "all"), (9.0, [f"k{a:03d}" for a in range(12)], "planned", "all"),
    (12.0, None, "all", "all"), (12.0, None, "planned", "used"), (12.0, None, "all", "used")])
def test_idle_gaps_batched_equals_per_record(interval, arms, feed, validate, monkeypatch):
    """Between episodes (``episode_interval`` of stream time) whole batches are counted at once
    (``batch._idle_batch``): the next episode must start at the same record, with the same counters.
    ``--validate used``: the idle batch is not even decoded, its bad values pass unseen as in ``offer``."""
    records = stream(60_000, 12, seed=6, bad_rate=0.002)
    cfg = dict(discovery_records=300, episode_interval=interval, max_episodes=6, window=4, prefetch=2,
               passive_feed=feed, validate=validate)

    def run_fixed(path):
        s, clock, out = make("wrr", **cfg)
        if arms is not None:  # arms given up front: a key outside them is skipped
            s = Scheduler(POLICIES["wrr"], clock=clock, emit_alert=out["alerts"].append,
                          on_episode_end=out["ends"].append, codec=RewardCodec(model=BernoulliModel()),
                          config=SchedulerConfig(**cfg), arms=arms[:-1])
        rng, pos, refused = random.Random(9), 0, []
        while pos < len(records) and not s.finished:
            batch = records[pos:pos + rng.choice([1, 7, 50, 200, 1000])]
            n, bad = path(s, clock, batch)
            refused += [(pos + i, r) for i, r in bad]
            pos += n
            s.tick()
        return s, out, refused, pos

    ref = run_fixed(per_record)
    assert ref[0].counters.episodes_done >= 2 and ref[2]
    gaps = [b["started"] - a["ended"] for a, b in zip(ref[1]["ends"], ref[1]["ends"][1:])]
    assert max(gaps) > 1.0  # the stream has idle stretches between episodes
    idle, calls = batch_module._idle_batch, []
    monkeypatch.setattr(batch_module, "_idle_batch", lambda *a: calls.append(idle(*a)) or calls[-1])
    assert_same(ref, run_fixed(batched))
    assert calls.count(True) > 10  # not vacuous: whole idle batches were counted at once


@pytest.mark.parametrize("policy", ["cs", "wrr"])
def test_every_reward_feed_batched_equals_per_record(policy):
    records = stream(60_000, 12, seed=2)
    cfg = dict(discovery_records=300, episode_interval=0.0, max_episodes=3, passive_feed="all")
    ref = run(records, policy, per_record, **cfg)
    assert ref[0].counters.episodes_done >= 2 and ref[0].used > 0
    assert_same(ref, run(records, policy, batched, **cfg))


@pytest.mark.parametrize("policy", ["cs", "wrr"])
def test_every_reward_feed_many_keys_batched_equals_per_record(policy):
    """Enough keys for the policies' numpy skip-ahead (``update_batch``) to run inside the feed-all runs."""
    records = stream(120_000, 300, seed=4, bad_rate=0.002)
    cfg = dict(discovery_records=3000, episode_interval=0.0, max_episodes=2, passive_feed="all")
    ref = run(records, policy, per_record, **cfg)
    assert ref[0].used > 50_000 and ref[1]["alerts"] and ref[2]  # alerts and refusals inside the runs
    assert_same(ref, run(records, policy, batched, **cfg))


def test_key_ttl_and_never_finishing_runs_batched_equals_per_record():
    records = stream(20_000, 8, seed=3)
    cfg = dict(discovery_records=200, episode_interval=2.0, max_episodes=None, key_ttl=3.0)
    ref = run(records, "wrr", per_record, **cfg)
    assert ref[3] == len(records)
    assert_same(ref, run(records, "wrr", batched, **cfg))


def active_run(path, n_batches: int = 400):
    """Answers to the previous batch's requests (some lost, some mismatched), plus unsolicited noise."""
    s, clock, out = make("rr", mode="active", discovery_records=50, max_in_flight=6, prefetch=2,
                         request_timeout=0.5, episode_interval=0.0, max_episodes=2)
    rng = random.Random(7)
    t, refused, handled = 1_700_000_000_000, [], 0
    for b in range(n_batches):
        batch = []
        pending, out["requests"][:] = list(out["requests"]), []
        for arm, req in pending:
            t += 7
            if rng.random() < 0.05:
                continue  # lost: times out
            key = arm.encode() if rng.random() > 0.03 else b"k000"
            x = int(rng.random() < (0.9 if arm == "k005" else 0.2))
            batch.append((key, json.dumps({"reward": x, "request_id": req["request_id"]}).encode(), t))
        for _ in range(rng.randrange(1, 20)):  # unsolicited records announce keys, bad ones are refused
            t += 3
            a = rng.randrange(6)
            value = rng.choice(_BAD) if rng.random() < 0.1 else b'{"reward": %d}' % (rng.random() < 0.5)
            batch.append((f"k{a:03d}".encode(), value, t))
        n, bad = path(s, clock, batch)
        refused += [(b, i, r) for i, r in bad]
        handled += n
        s.tick()
        if s.finished:
            break
    return s, out, refused, handled


def test_active_batched_equals_per_record():
    ref = active_run(per_record)
    assert ref[0].counters.episodes_done >= 1 and ref[0].counters.requests_sent > 0 and ref[2]
    assert_same(ref, active_run(batched))


def test_batch_decoder_agrees_with_the_per_record_codec():
    codec = RewardCodec(model=BernoulliModel())
    values = _BAD + [b'{"reward": 0}', b'{"reward": 1.0}', b'{"reward": 1, "x": [1, 2]}', "{\"reward\": 1}",
                     b'{"reward": 1e999}', b'{"reward": -0.0}', b"\xff{", b'{"reward": 0.5}']
    for v, x in zip(values, codec.rewards(values)):
        try:
            want = codec.reward("a", v)
        except Exception:
            want = None
        assert x == want, v


@pytest.mark.parametrize("n,seed", [(20, 1), (300, 2)])
def test_policy_update_batch_equals_update_one_by_one(n, seed):
    """AnytimeKSigma.update_batch skips ahead with numpy; the default (WRR) loops over update."""
    from streamarms.policies.base import Policy

    rng = random.Random(seed)
    means = [0.2] * (n - 2) + [0.8, 0.9]
    arms = [rng.randrange(n) for _ in range(400 * n if n < 100 else 100 * n)]
    xs = [float(rng.random() < means[a]) for a in arms]
    bad = [0.5, 10 ** 400, "x", None, float("nan")]  # the batch stops before each, update() says why
    for j in range(0, len(xs), 997):
        xs[j] = bad[(j // 997) % len(bad)]
    names = [f"a{i}" for i in range(n)]
    for make_policy in (lambda: AnytimeKSigma(names, k=2.0, delta=0.1),
                        lambda: WeightedRoundRobin(names, k=2.0, delta=0.1)):
        p, q = make_policy(), make_policy()
        ev_p, bad_p = [], []
        for j, (a, x) in enumerate(zip(arms, xs)):
            try:
                ev_p += [(j, e) for e in p.update(names[a], x)]
            except ValueError as e:
                bad_p.append((j, str(e)))
        ev_q, bad_q, pos, calls = [], [], 0, 0
        while pos < len(xs):
            end = min(len(xs), pos + rng.choice([1, 15, 16, 100, 3000]))
            k, ev = q.update_batch(arms[pos:end], xs[pos:end])
            calls += 1
            pos += k
            ev_q += [(pos - 1, e) for e in ev]
            if pos < end and not ev:
                with pytest.raises(ValueError) as err:
                    q.update(names[arms[pos]], xs[pos])
                bad_q.append((pos, str(err.value)))
                pos += 1
        assert ev_q == ev_p and bad_q == bad_p and len(bad_p) > 0 and len(ev_p) > 0
        assert json.dumps(q.snapshot()) == json.dumps(p.snapshot())
        if isinstance(q, AnytimeKSigma):
            assert type(q).update_batch is not Policy.update_batch


@pytest.mark.parametrize("make_policy", [WeightedRoundRobin, AnytimeKSigma], ids=["wrr", "cs"])
@pytest.mark.parametrize("bad", [-1, 300, 2.5, "a0", None])
def test_update_batch_refuses_a_bad_index_on_the_numpy_path_too(make_policy, bad):
    """A batch long enough for the numpy paths (>= 16 rewards, >= 40 arms) with one index that is not an
    arm's, anywhere: ValueError naming it, nothing ingested (-1 is not the last arm)."""
    names = [f"a{i}" for i in range(300)]
    p = make_policy(names)
    rng = random.Random(3)
    arms = [rng.randrange(300) for _ in range(2000)]
    xs = [float(rng.random() < 0.3) for _ in arms]
    p.update_batch(arms[:500], xs[:500])
    before = json.dumps(p.snapshot())
    arms[1500] = bad
    with pytest.raises(ValueError, match=rf"arm index {bad!r} \(position 1000\)"):
        p.update_batch(arms[500:], xs[500:])
    with pytest.raises(ValueError, match="one arm index per reward"):
        p.update_batch(arms[500:1000], xs[500:999])
    assert json.dumps(p.snapshot()) == before

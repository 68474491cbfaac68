"""``WeightedRoundRobin.update_batch`` (numpy skip-ahead, :mod:`streamarms.policies.ksigma_batch`) equals
``update`` reward by reward: the same events at the same rewards, the same refusals, the same snapshot
(every count, sum, running sum, bracket sum, certificate and schedule float), and the same stopping time.

Streams: arms drawn at random (the skip-ahead's case), arms in the order the policy asks for them (WRR's
own schedule: every reward is the current arm), means close to the threshold (many ambiguous
activity tests), refused rewards and out-of-range arms, batches of random sizes.
"""

from __future__ import annotations

import json
import random

import pytest

from streamarms.policies import ksigma_batch
from streamarms.policies.ksigma import WeightedRoundRobin


def _means(n: int, kind: str) -> list[float]:
    if kind == "clear":
        return [0.2] * (n - 2) + [0.8, 0.9]
    # near: a spread of means, a few just above the threshold's neighbourhood
    rng = random.Random(n)
    return [min(0.95, max(0.05, rng.gauss(0.3, 0.08))) for _ in range(n - 3)] + [0.55, 0.6, 0.62]


def _run_reference(p, names, arms, xs):
    events, refused = [], []
    for j, (a, x) in enumerate(zip(arms, xs)):
        try:
            events += [(j, e) for e in p.update(names[a] if 0 <= a < len(names) else "nope", x)]
        except ValueError as e:
            refused.append((j, str(e)))
    return events, refused


def _run_batched(q, names, arms, xs, rng):
    events, refused, pos = [], [], 0
    while pos < len(xs):
        end = min(len(xs), pos + rng.choice([1, 17, 64, 500, 4000, 20000]))
        k, ev = q.update_batch(arms[pos:end], xs[pos:end])
        pos += k
        events += [(pos - 1, e) for e in ev]
        if pos < end and not ev:
            with pytest.raises(ValueError) as err:
                a = arms[pos]
                q.update(names[a] if 0 <= a < len(names) else "nope", xs[pos])
            refused.append((pos, str(err.value)))
            pos += 1
    return events, refused


@pytest.mark.parametrize("n,kind,seed", [(80, "clear", 1), (300, "near", 2), (1000, "clear", 3),
                                         (1000, "near", 4)])
def test_random_arms(n, kind, seed):
    rng = random.Random(seed)
    means = _means(n, kind)
    N = 150 * n
    arms = [rng.randrange(n) for _ in range(N)]
    xs = [float(rng.random() < means[a]) for a in arms]
    for j in range(5000, N, 20011):  # refused: not a Bernoulli reward (a bad index refuses the whole batch:
        xs[j] = 0.5                   # test_a_bad_index_refuses_the_whole_batch)
    names = [f"a{i}" for i in range(n)]
    p, q = WeightedRoundRobin(names), WeightedRoundRobin(names)
    calls = {"skip": 0}
    skip = ksigma_batch._skip

    def counting(*args):
        calls["skip"] += 1
        return skip(*args)

    ksigma_batch._skip = counting
    try:
        got = _run_batched(q, names, arms, xs, rng)
    finally:
        ksigma_batch._skip = skip
    want = _run_reference(p, names, arms, xs)
    assert got == want
    assert json.dumps(q.snapshot()) == json.dumps(p.snapshot())
    assert q.pulls == p.pulls and q.done == p.done
    assert len(want[1]) > 0 and calls["skip"] > 0  # not vacuous: refusals seen, the skip-ahead ran
    if kind == "clear":
        assert len(want[0]) > 0


def test_policy_order_stream_until_done():
    """Rewards in the order WRR asks for them (each is the current arm), to the stop."""
    n = 70
    names = [f"a{i}" for i in range(n)]
    means = _means(n, "clear")
    rng = random.Random(7)
    p = WeightedRoundRobin(names)
    arms, xs = [], []
    while not p.done and len(xs) < 2_000_000:
        r = p.next_request()
        a = p.index[r.arm]
        x = float(rng.random() < means[a])
        arms.append(a)
        xs.append(x)
        p.update(r.arm, x)
    assert p.done
    q, ref = WeightedRoundRobin(names), WeightedRoundRobin(names)
    want = _run_reference(ref, names, arms, xs)
    got = _run_batched(q, names, arms, xs, random.Random(8))
    assert got == want and q.done
    assert json.dumps(q.snapshot()) == json.dumps(ref.snapshot())


def test_fallbacks_are_the_default_path():
    """Few arms, another model or two-sided: update() one by one (same results, trivially)."""
    for kw, n in (({}, 20), ({"model": "bounded"}, 200), ({"two_sided": True}, 200)):
        names = [str(i) for i in range(n)]
        rng = random.Random(n)
        arms = [rng.randrange(n) for _ in range(20 * n)]
        xs = [float(rng.random() < 0.3) for _ in arms]
        p, q = WeightedRoundRobin(names, **kw), WeightedRoundRobin(names, **kw)
        assert _run_batched(q, names, arms, xs, rng) == _run_reference(p, names, arms, xs)
        assert json.dumps(q.snapshot()) == json.dumps(p.snapshot())


def _rules_only(names):
    """A WRR whose every reward goes through the rules (``update_one`` switched off)."""
    p = WeightedRoundRobin(names)
    p._fused = False
    return p


@pytest.mark.parametrize("n,kind,order,seed", [(5, "clear", "policy", 1), (20, "clear", "policy", 2),
                                                (20, "near", "policy", 3), (20, "near", "random", 4),
                                                (60, "near", "policy", 5)])
def test_fused_update_equals_the_rules(n, kind, order, seed):
    """``update`` through :func:`ksigma_batch.update_one` (the fused common pull, with the certificate's
    scalar refresh) equals ``update`` through the rules: the same events at the same rewards, refusals,
    deferrals and the same snapshot (checked every 997 rewards and at the end), until the stop (or
    60,000 rewards)."""
    names = [f"a{i}" for i in range(n)]
    means = _means(n, kind)
    rng = random.Random(seed)
    p, q = _rules_only(names), WeightedRoundRobin(names)
    assert q._fused
    fused = {"fast": 0}
    one = ksigma_batch.update_one

    def counting(*args):
        r = one(*args)
        fused["fast"] += r is not None
        return r

    ksigma_batch.update_one = counting
    try:
        j = 0
        while not p.done and j < 60_000:
            j += 1
            if order == "policy" or rng.random() < 0.5:
                a = p.index[p.next_request().arm]
            else:
                a = rng.randrange(n)
            x = float(rng.random() < means[a])
            if j % 3001 == 0:
                x = 0.5  # refused alike
            if j % 5003 == 0:
                p.defer(names[a]), q.defer(names[a])
            got = want = None
            try:
                want = p.update(names[a], x)
            except ValueError as e:
                want = str(e)
            try:
                got = q.update(names[a], x)
            except ValueError as e:
                got = str(e)
            assert got == want, j
            if j % 997 == 0:
                assert json.dumps(q.snapshot()) == json.dumps(p.snapshot()), j
    finally:
        ksigma_batch.update_one = one
    assert p.done == q.done and (p.done or kind == "near")  # "near" means may need more pulls
    assert json.dumps(q.snapshot()) == json.dumps(p.snapshot())
    assert fused["fast"] > j // 2  # not vacuous: most pulls took the fused step


def test_the_fused_pulls_pending_array_updates_stay_bounded():
    """The fused pull notes each updated arm for the numpy arrays (synced when next read); unread for many
    pulls, the note list stops at n + 1 entries (then the sync copies every arm) and the arrays are exact."""
    names = [f"a{i}" for i in range(5)]
    p = WeightedRoundRobin(names)
    rng = random.Random(3)
    for _ in range(500):
        a = names[rng.randrange(5)]
        if ksigma_batch.update_one(p, a, float(rng.random() < 0.3)) is None:
            p.update(a, float(rng.random() < 0.3))
        assert len(p._np_dirty) <= len(names) + 1
    assert list(p._m_np) == [float(x) for x in p.m] and list(p._s_np) == [float(x) for x in p.s]

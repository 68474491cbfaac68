"""The continuous monitor (issue 14): alerts follow shifts, the stated false-alarm rates hold, groups
have their own thresholds, snapshots continue bit for bit, bad input changes nothing."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from streamarms.monitor import ContinuousMonitor, EDetector
from tests.stats_util import clopper_pearson_lower


def max_failures(runs: int, rate: float, alpha: float = 1e-3) -> int:
    """Smallest c with P(Binomial(runs, rate) > c) <= alpha (scipy: runs may be large)."""
    from scipy.stats import binom
    return int(binom.ppf(1.0 - alpha, runs, rate))


def _stream(rng: np.random.Generator, rates: np.ndarray, n_records: int, start: int = 0):
    """Round-robin over the keys (record t belongs to key t % n), Bernoulli rewards."""
    n = len(rates)
    keys = np.arange(start, start + n_records) % n
    x = (rng.random(n_records) < rates[keys]).astype(float)
    return keys, x


def test_shift_is_alerted_and_shift_back_cleared():
    """20 keys, rates 0.05..0.24; key 0 jumps to 0.8 and back. 5 seeds: every one alerts after the jump,
    clears after the return, and raises nothing else."""
    base = 0.05 + 0.01 * np.arange(20)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        mon = ContinuousMonitor(k=2.0)
        alerts = []
        for lo, hi, jump in ((0, 20000, False), (20000, 40000, True), (40000, 70000, False)):
            rates = base.copy()
            if jump:
                rates[0] = 0.8
            keys, x = _stream(rng, rates, hi - lo, start=lo)
            for t, (kk, xx) in enumerate(zip(keys, x), start=lo):
                alerts += mon.update(f"k{kk}", xx, time=float(t))
        kinds = [(a["key"], a["kind"]) for a in alerts]
        assert kinds == [("k0", "outlier"), ("k0", "cleared")], (seed, kinds)
        assert 20000 < alerts[0]["time"] < 40000 and alerts[1]["time"] > 40000
        ev = alerts[0]
        assert ev["interval"][0] > ev["threshold_interval"][1] and ev["margin"] > 0 and ev["samples"] > 0


@pytest.mark.slow  # (~14 s: the long tier runs it; the quick suite stays under 15 minutes)
def test_stationary_false_alerts_within_stated_rate():
    """The guarantee of :mod:`streamarms.monitor.monitor`: P(any false alert in a run) <= alpha E[S] +
    alpha_theta E[E] (S segments, E epochs). Loose levels so that the bound is not vacuous; 40 seeded runs
    with a true outlier each (found in every run: the monitor is not mute). The runs with a false alert
    stay within the binomial bound of that rate, and the detector's false restarts within alpha_cd per
    sample."""
    alpha, alpha_theta, alpha_cd = 0.01, 0.01, 1e-4
    rates = np.array([0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.22, 0.24, 0.8])  # theta = 0.645
    theta = rates.mean() + 2.0 * rates.std()
    runs, bad_runs, found, bound, samples, restarts = 40, 0, 0, 0.0, 0, 0
    for seed in range(runs):
        rng = np.random.default_rng(100 + seed)
        mon = ContinuousMonitor(k=2.0, alpha=alpha, alpha_theta=alpha_theta, alpha_cd=alpha_cd)
        keys, x = _stream(rng, rates, 24000)
        false = 0
        for t, (kk, xx) in enumerate(zip(keys, x)):
            for a in mon.update(f"k{kk}", xx, time=float(t)):
                if (a["kind"] == "outlier") != (rates[kk] > theta):
                    false += 1
                elif a["kind"] == "outlier":
                    found += 1
        bad_runs += false > 0
        segments = sum(1 + ks.restarts for ks in mon.keys.values())
        bound += (alpha * segments + alpha_theta * mon.groups["default"].epoch) / runs
        samples += mon.records
        restarts += mon.counts["restarts"]
    assert found == runs
    assert bound < 0.5  # a bound that can be violated
    assert bad_runs <= max_failures(runs, bound), (bad_runs, bound)
    assert clopper_pearson_lower(bad_runs, runs) <= bound
    assert restarts <= max_failures(samples, alpha_cd), (restarts, samples)


def test_edetector_false_restart_rate_and_power():
    """With the true mean as the interval (oracle), restarts per sample stay within alpha_cd; a shift by
    0.1 is detected within a few hundred samples."""
    rng = random.Random(5)
    det = EDetector(alpha_cd=1e-3, low=0.0, high=1.0)
    n = 100000
    false = sum(det.observe(float(rng.random() < 0.3), 0.3, 0.3) for _ in range(n))
    assert false <= max_failures(n, 1e-3)
    delays = []
    for _ in range(20):
        det.reset()
        t = 1
        while not det.observe(float(rng.random() < 0.4), 0.3, 0.3):
            t += 1
        delays.append(t)
    assert np.median(delays) < 400, delays


def test_two_groups_get_their_own_thresholds():
    """Group 'a' around 0.1 (theta ~ 0.57), group 'b' around 0.8 (theta ~ 0.86): a key at 0.7 is an
    outlier in 'a'; in 'b' no key is, although all are above 'a''s threshold."""
    rng = np.random.default_rng(3)
    rates_a = np.array([0.08, 0.1, 0.12, 0.1, 0.09, 0.11, 0.1, 0.7])
    rates_b = np.array([0.75, 0.8, 0.85, 0.78, 0.82, 0.8, 0.77, 0.83])
    mon = ContinuousMonitor(k=2.0)
    alerts = []
    for t in range(40000):
        i = t % 8
        grp, rates = ("a", rates_a) if (t // 8) % 2 == 0 else ("b", rates_b)
        alerts += mon.update(f"{grp}{i}", float(rng.random() < rates[i]), time=float(t), group=grp)
    assert [(a["key"], a["kind"]) for a in alerts] == [("a7", "outlier")]
    ta, tb = mon.groups["a"].interval(), mon.groups["b"].interval()
    assert ta[1] < 0.75 and tb[0] > ta[1], (ta, tb)
    assert mon.evidence("b2")["state"] != "outlier"
    assert mon.evidence("a7")["group"] == "a"


@pytest.mark.parametrize("restart", ["edetector", "window"])
def test_snapshot_restore_continues_bit_for_bit(restart):
    rng = np.random.default_rng(11)
    rates = 0.05 + 0.02 * np.arange(12)
    rates[3] = 0.7
    keys, x = _stream(rng, rates, 30000)
    a = ContinuousMonitor(k=2.0, restart=restart, window=500)
    out_a, out_b = [], []
    for t in range(15000):
        out_a += a.update(f"k{keys[t]}", x[t], time=float(t), group="g" if keys[t] % 2 else "h")
    b = ContinuousMonitor.loads(json.dumps(json.loads(a.dumps())))
    assert b.snapshot() == a.snapshot()
    for t in range(15000, 30000):
        out_a += a.update(f"k{keys[t]}", x[t], time=float(t), group="g" if keys[t] % 2 else "h")
        out_b += b.update(f"k{keys[t]}", x[t], time=float(t), group="g" if keys[t] % 2 else "h")
    assert out_b == out_a[len(out_a) - len(out_b):]
    assert a.dumps() == b.dumps()


def test_bad_input_is_a_clear_error_and_changes_nothing():
    mon = ContinuousMonitor()
    for t in range(50):
        mon.update(f"k{t % 3}", float(t % 2), time=float(t))
    before = mon.dumps()
    with pytest.raises(ValueError, match="'k1'.*0.5"):
        mon.update("k1", 0.5, time=99.0)
    with pytest.raises(ValueError, match="'new'.*nan"):
        mon.update("new", float("nan"), time=99.0)
    with pytest.raises(ValueError, match="'k0' belongs to group 'default'"):
        mon.update("k0", 1.0, time=99.0, group="other")
    with pytest.raises(ValueError):
        mon.update("k2", "x", time=99.0)
    assert mon.dumps() == before
    with pytest.raises(ValueError, match="bounded reward model"):
        ContinuousMonitor(model="subgaussian")
    with pytest.raises(ValueError, match="restart"):
        ContinuousMonitor(restart="sometimes")


def test_window_rule_also_follows_a_shift():
    rng = np.random.default_rng(2)
    base = 0.05 + 0.01 * np.arange(20)
    mon = ContinuousMonitor(k=2.0, restart="window", window=1000)
    alerts = []
    for lo, hi, jump in ((0, 20000, False), (20000, 40000, True), (40000, 80000, False)):
        rates = base.copy()
        if jump:
            rates[0] = 0.8
        keys, x = _stream(rng, rates, hi - lo, start=lo)
        for t, (kk, xx) in enumerate(zip(keys, x), start=lo):
            alerts += mon.update(f"k{kk}", xx, time=float(t))
    assert [(a["key"], a["kind"]) for a in alerts] == [("k0", "outlier"), ("k0", "cleared")]


def test_evidence_is_strict_json_before_and_after_the_threshold_exists():
    mon = ContinuousMonitor()
    mon.update("a", 1.0, time=5.0)
    ev = mon.evidence("a")
    json.dumps(ev, allow_nan=False)
    assert ev["margin"] is None and ev["threshold_interval"] == [None, None] and ev["segment_since"] == 5.0
    rng = random.Random(0)
    for t in range(3000):
        mon.update("abc"[t % 3], float(rng.random() < 0.3), time=float(t))
    ev = mon.evidence("a")
    json.dumps(ev, allow_nan=False)
    assert ev["threshold_samples"] > 0 and ev["margin"] is not None
    with pytest.raises(KeyError):
        mon.evidence("zzz")


@pytest.mark.parametrize("ttl", [3000, None])
def test_a_silent_key_is_dropped_so_the_threshold_keeps_working(ttl):
    """k9 stops at record 5000; k0 jumps to 0.9 at 10000. With a ttl the silent key leaves the group and
    the jump is alerted; without one the threshold is frozen (the documented failure the ttl prevents)."""
    rng = np.random.default_rng(4)
    rates = 0.1 + 0.01 * np.arange(10)
    mon = ContinuousMonitor(k=2.0, key_ttl=ttl)
    alerts = []
    t = 0
    while t < 60000:
        kk = int(rng.integers(0, 10))
        if kk == 9 and t >= 5000:
            continue
        p = 0.9 if (kk == 0 and t >= 10000) else rates[kk]
        alerts += mon.update(f"k{kk}", float(rng.random() < p), time=float(t))
        t += 1
    g = mon.groups["default"]
    if ttl is None:
        assert alerts == [] and "k9" in g.members and g.interval()[1] == float("inf")
    else:
        assert [(a["key"], a["kind"]) for a in alerts] == [("k0", "outlier")]
        assert "k9" not in g.members and g.n == 9
        mon.update("k9", 0.0, time=float(t))  # it comes back: a member again, a new epoch
        assert "k9" in g.members and g.n == 10


def test_a_damaged_edetector_snapshot_is_a_clear_error():
    """A snapshot whose statistics do not match its bets (5 up, 7 down for 6 bets: the right total), or
    that lacks its bets, is refused with a ValueError naming the problem, never half-restored."""
    from streamarms.monitor.restart import restart_from_snapshot
    det = EDetector()
    for t in range(40):
        det.observe(float(t % 2), 0.3, 0.1)
    snap = json.loads(json.dumps(det.snapshot()))
    assert restart_from_snapshot(snap).snapshot() == det.snapshot()
    n = len(snap["lambdas"])
    torn = {**snap, "up": snap["up"][:n - 1], "down": snap["down"] + snap["up"][n - 1:]}
    with pytest.raises(ValueError, match="up and .* down statistics"):
        restart_from_snapshot(torn)
    with pytest.raises(ValueError, match="lacks 'lambdas'"):
        restart_from_snapshot({k: v for k, v in snap.items() if k != "lambdas"})


@pytest.mark.parametrize("key, reward, kw", [("", 1.0, {}), ("a", np.True_, {}), ("a", "1", {}),
                                             ("a", 1.0, {"time": "x"}), ("a", 1.0, {"time": float("nan")}),
                                             ("a", 1.0, {"time": True}), ("a", 1.0, {"group": ""})])
def test_update_refuses_bad_keys_rewards_and_times_and_changes_nothing(key, reward, kw):
    mon = ContinuousMonitor(k=2.0)
    mon.update("a", 1.0, time=1.0)
    before = json.dumps(mon.snapshot(), sort_keys=True, default=str)
    with pytest.raises(ValueError):
        mon.update(key, reward, **kw)
    assert json.dumps(mon.snapshot(), sort_keys=True, default=str) == before

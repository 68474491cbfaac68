"""cs's speed-ups change no decision (issue 9, "Speed"): the memoised Beta-Binomial interval and the
memoised per-arm terms of the threshold track against the plain computation, on the same seeded
streams -- active and passive, one- and two-sided, Bernoulli and bounded rewards, bad rewards
mixed in -- comparing every event and snapshots along the way, bit for bit."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.confidence import beta_binomial, threshold
from streamarms.models import make_model
from streamarms.policies.anytime import AnytimeKSigma


class _NoMemo(dict):  # type: ignore[type-arg]
    """A memo that never remembers: every record computes its terms afresh."""

    def get(self, key, default=None):  # noqa: ANN001
        return default

    def __setitem__(self, key, value) -> None:  # noqa: ANN001
        return None


def _run(n, model, two_sided, mode, steps, seed):
    rng = random.Random(seed)
    means = [rng.uniform(0.2, 0.4) for _ in range(n - 2)] + [0.8, 0.9]
    if two_sided:
        means[0] = 0.02
    pol = AnytimeKSigma([str(i) for i in range(n)], k=2.0, delta=0.1, model=make_model(model), two_sided=two_sided)
    trace = []
    for t in range(steps):
        if pol.done:
            break
        a = int(pol.next_request().arm) if mode == "active" else rng.randrange(n)
        p = means[a]
        if model == "bernoulli":
            x = 1.0 if rng.random() < p else 0.0
        else:
            x = min(1.0, max(0.0, rng.betavariate(max(p * 5, 0.05), max((1 - p) * 5, 0.05))))
        if t % 997 == 13:
            with pytest.raises(ValueError):
                pol.update(str(a), 1.5)
        trace += [(t, repr(e)) for e in pol.update(str(a), x)]
        if t % 4000 == 0:
            trace.append((t, json.dumps(pol.snapshot(), sort_keys=True)))
    trace.append((-1, json.dumps(pol.snapshot(), sort_keys=True) + repr(pol.decision())))
    return trace


CASES = [(20, "bernoulli", False, "active", 40_000, 1), (30, "bernoulli", True, "active", 40_000, 2),
         (300, "bernoulli", False, "passive", 40_000, 3), (200, "bernoulli", True, "passive", 30_000, 4),
         (3, "bernoulli", False, "active", 20_000, 6), (20, "bounded", False, "active", 20_000, 7),
         (100, "bounded", True, "passive", 20_000, 8)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{'two' if c[2] else 'one'}-{c[3]}")
def test_memoised_path_equals_plain_path(case, monkeypatch):
    fast = _run(*case)
    beta_binomial.cached_interval.cache_clear()
    monkeypatch.setattr(beta_binomial, "cached_interval", beta_binomial.beta_binomial_interval)
    orig = threshold.ThresholdTrack._after_restore

    def plain(self):  # noqa: ANN001, ANN202
        orig(self)
        self._memo = _NoMemo()

    monkeypatch.setattr(threshold.ThresholdTrack, "_after_restore", plain)
    slow = _run(*case)
    assert len(fast) == len(slow)
    assert fast == slow
    assert any(not s.startswith("{") for _, s in fast[:-1]), "no event: the case compares nothing but snapshots"


def test_cached_interval_equals_fresh_computation():
    for m in range(1, 60):
        for S in range(0, m + 1):
            assert beta_binomial.cached_interval(m, float(S), 1e-4, 0.5, 0.5) == \
                beta_binomial.beta_binomial_interval(m, float(S), 1e-4)

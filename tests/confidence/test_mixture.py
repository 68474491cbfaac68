"""The discrete-mixture boundary (streamarms.confidence.mixture): equals a brute-force root of the mixture
sum; increasing in v, c and the sub-Gaussian variance; below the stitched boundary over the counts the
threshold track reaches; anytime coverage of a sub-Gaussian and a sub-gamma random walk over 1e4 paths
(Clopper-Pearson); the threshold track keeps the stitched boundary for snapshots taken before it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from stats_util import clopper_pearson_upper
from track_util import feed_track

from streamarms.confidence import BetaBinomialCS, stitched_boundary
from streamarms.confidence.mixture import mixture_boundary, mixture_grid
from streamarms.confidence.threshold import ThresholdTrack, grid_levels

PATHS = 10_000


def _brute(v: float, alpha: float, v_min: float, c: float = 0.0, v_sg: float | None = None) -> float:
    """Bisection (200 steps) on the mixture sum itself, term by term in plain floats."""
    lam, lw = mixture_grid(alpha, v_min)

    def total(s: float) -> float:
        out = 0.0
        for lj, wj in zip(lam, np.exp(lw)):
            e = lj * lj / (2 * (1 - c * lj)) * v if c * lj < 1 else math.inf
            if v_sg is not None:
                e = min(e, lj * lj / 2 * v_sg)
            if e < math.inf:
                out += wj * math.exp(lj * s - e)
        return out

    lo, hi = 0.0, 1.0
    while total(hi) < 1 / alpha:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < 1 / alpha else (lo, mid)
    return hi


@pytest.mark.parametrize("v,c,v_sg", [(0.3, 0.0, None), (1.0, 0.0, None), (444.0, 0.0, None), (444.0, 0.15, None),
                                      (444.0, 0.15, 500.0), (1e6, 0.0, None), (1e11, 0.3, 2e11), (50.0, 2.0, 60.0)])
def test_mixture_equals_brute_force_root(v, c, v_sg):
    got = mixture_boundary(v, 0.0125, 1.0, c, v_sg)
    assert got == pytest.approx(_brute(v, 0.0125, 1.0, c, v_sg), rel=1e-9)
    assert got >= _brute(v, 0.0125, 1.0, c, v_sg) * (1 - 1e-12)  # Newton from the right: never below


def test_mixture_is_monotone_and_below_stitched():
    vs = np.array([0.5, 1, 2, 10, 100, 1e4, 1e8])
    u = mixture_boundary(vs, 0.01, 1.0, 0.2)
    assert np.all(np.diff(u) > 0)
    assert np.all(mixture_boundary(vs, 0.01, 1.0, 0.3) >= u)
    assert np.all(mixture_boundary(vs, 0.01, 1.0, 0.2, 1.1 * vs) <= u)
    assert np.all(mixture_boundary(vs, 0.01, 1.0, 0.2, 1.1 * vs) <= mixture_boundary(vs, 0.01, 1.0, 0.2, 1.2 * vs))
    # over the counts the track reaches (v >= 10 v_min), ~10% below the stitched boundary
    for v in (10.0, 444.0, 1e4, 1e6, 1e10):
        ratio = mixture_boundary(v, 0.0125, 1.0) / stitched_boundary(v, 0.0125, 1.0)
        assert 0.85 < ratio < 0.93, (v, ratio)


@pytest.mark.parametrize("kind", ["gaussian", "bernoulli-gamma"])
def test_mixture_boundary_anytime_coverage(kind):
    """A walk that EVER crosses u(V_t) up to t = 3000 counts as a miss; the CP upper bound <= alpha."""
    alpha, T = 0.05, 3000
    rng = np.random.default_rng(11)
    t = np.arange(1, T + 1, dtype=float)
    if kind == "gaussian":  # N(0, 1) steps: sub-Gaussian, V_t = t, c = 0
        bound = mixture_boundary(t, alpha, 1.0)
        steps = lambda: rng.standard_normal((1000, T))  # noqa: E731
    else:  # centred Bernoulli(0.1) steps in [-0.1, 0.9]: Bennett, V_t = 0.09 t, c = 0.9 / 3
        bound = mixture_boundary(0.09 * t, alpha, 0.09, 0.3)
        steps = lambda: (rng.random((1000, T)) < 0.1) - 0.1  # noqa: E731
    miss = 0
    for _ in range(PATHS // 1000):
        miss += int(np.any(np.cumsum(steps(), axis=1) >= bound, axis=1).sum())
    assert clopper_pearson_upper(miss, PATHS) <= alpha, miss


def test_track_keeps_stitched_boundary_for_old_snapshots():
    rng = np.random.default_rng(3)
    means = list(0.2 + 0.5 * rng.random(20))
    track = ThresholdTrack(20, 2.0, 0.05, low=0.0, high=1.0, bernoulli=True)
    arms = [BetaBinomialCS(0.0025) for _ in means]
    feed_track(track, arms, means, 30, rng)
    snap = track.snapshot()
    assert snap["boundary"] == "mixture"
    assert ThresholdTrack.restore(snap).boundary == "mixture"
    old = {k: v for k, v in snap.items() if k != "boundary"}  # a snapshot from before the mixture
    restored = ThresholdTrack.restore(old)
    assert restored.boundary == "stitched"
    assert restored.snapshot()["boundary"] == "stitched"
    with pytest.raises(ValueError, match="unknown threshold boundary 'nope'"):
        ThresholdTrack(20, 2.0, 0.05, low=0.0, high=1.0, boundary="nope")
    # the stitched track is wider at the same totals: the mixture is the tighter default
    g = max(lv for lv in grid_levels(30))
    new_w = track.result["upper_level"][1] - track.result["upper_level"][0]
    restored._advance(g)
    assert restored.result["upper_level"][1] - restored.result["upper_level"][0] > new_w

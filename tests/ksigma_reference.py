"""A literal, O(n)-per-pull transcription of [ZWW17] Alg. 1 (RR) and Alg. 2 (WRR).

Everything is recomputed from scratch after every pull, exactly as the paper states it; it exists
only to check that the fast policies in ``streamarms.policies.ksigma`` make the same pulls, stop at
the same T and return the same set.
"""

from __future__ import annotations

import numpy as np

from streamarms import bounds
from streamarms.models import BernoulliModel, BoundedModel


def _active(m, s, T, k, delta, model, two_sided):
    n = len(m)
    dprime = bounds.zww17_significance(delta, n, T, 2 if two_sided else 1)
    y = s / m
    mu, sigma = y.mean(), y.std()
    hi, lo = mu + k * sigma, mu - k * sigma
    beta = model.radii(m, s, dprime)
    if isinstance(model, BoundedModel):
        h = n / np.sum(1.0 / m)
        rth = bounds.ksigma_threshold_radius(model.span, bounds.l_k(k, n, delta), h, dprime)
    elif isinstance(model, BernoulliModel):
        rth = bounds.delta_method_threshold_radius(k, y, beta, two_sided)
    else:
        rth = bounds.lipschitz_threshold_radius(k, beta)
    active = np.zeros(n, dtype=bool)
    for i in range(n):  # Eq. 2, arm by arm
        thresholds = [hi, lo] if two_sided else [hi]
        for th in thresholds:
            if y[i] > th:
                a = y[i] - beta[i] < th + rth
            else:
                a = y[i] + beta[i] > th - rth
            active[i] |= a
    out = (y > hi) | ((y < lo) if two_sided else False)
    return active, out


def reference_run(means_env, n, k, delta, model, two_sided=False, wrr=False, rho=None, max_pulls=10**6):
    """Run Alg. 1 / Alg. 2 literally; returns (pull sequence, returned set, T, stopped)."""
    m = np.zeros(n)
    s = np.zeros(n)
    seq = []

    def pull(i):
        x = means_env.pull(str(i))
        m[i] += 1
        s[i] += x
        seq.append(i)

    for i in range(n):              # line 1
        pull(i)
    T = n
    c = np.zeros(n)
    if rho is None:
        rho = bounds.optimal_rho(k, n, delta)
    i = 0                           # "i <- 1" (0-based)
    active, out = _active(m, s, T, k, delta, model, two_sided)
    while active.any() and T < max_pulls:
        i = (i + 1) % n             # i <- i % n + 1
        if not wrr:
            pull(i)
            T += 1
            active, out = _active(m, s, T, k, delta, model, two_sided)
            continue
        c[i] += rho
        while True:                 # repeat ... until i not in A or m_i >= c_i
            pull(i)
            T += 1
            active, out = _active(m, s, T, k, delta, model, two_sided)
            if not active[i] or m[i] >= c[i] or T >= max_pulls:
                break
    return seq, sorted(str(j) for j in np.nonzero(out)[0]), T, not active.any()

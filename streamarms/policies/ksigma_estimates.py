"""The k-sigma rule and the estimates every k-sigma policy keeps ([ZWW17]: Zhuang, Wang, Wang. *Identifying Outlier
Arms in Multi-Armed Bandit*. NeurIPS 2017; the policies: :mod:`streamarms.policies.ksigma`).

An arm ``i`` with mean ``y_i`` is an outlier iff ``y_i > theta = mu_y + k sigma_y`` (population mean and standard
deviation over the arms' means); with ``two_sided`` an arm below ``mu_y - k sigma_y`` too.
:func:`ksigma_outliers` says which arms of known means are; :class:`_KSigmaEstimates` keeps what RR, WRR and NRR
share: the counts and sums of every arm, running sums of the sample means (``theta_hat`` in O(1)), the round-robin
cursor and the plan of requests.

>>> ksigma_outliers([0.1, 0.1, 0.1, 0.1, 0.9], k=1.5), ksigma_thresholds([0.0, 1.0, 0.0, 1.0], 1.0)
([4], (0.0, 1.0))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..models import RewardModel, make_model
from ..validation import K_MAX, check_ksigma_params
from .base import Policy, Request

__all__ = ["ksigma_outliers", "ksigma_thresholds", "at_threshold", "too_few_for_k", "keys_for_k"]


def ksigma_outliers(means: Sequence[float], k: float, two_sided: bool = False) -> list[int]:
    """Indices of the true k-sigma outliers of ``means`` ([ZWW17] Sec. 3).

    >>> ksigma_outliers([0.1, 0.1, 0.1, 0.1, 0.9], k=1.5)
    [4]
    """
    lo, hi = ksigma_thresholds(means, k)
    return [i for i, v in enumerate(means) if v > hi or (two_sided and v < lo)]


def ksigma_thresholds(means: Sequence[float], k: float) -> tuple[float, float]:
    """``(mu - k sigma, mu + k sigma)`` of the means (population sd).

    >>> ksigma_thresholds([0.0, 1.0, 0.0, 1.0], 1.0)
    (0.0, 1.0)
    """
    y = np.asarray(means, dtype=float)
    mu, sigma = float(y.mean()), float(y.std())
    return mu - k * sigma, mu + k * sigma


def too_few_for_k(n: int, k: float) -> str | None:
    """Why none of ``n`` keys can lie beyond ``mu +- k sigma`` (population sd), or ``None`` when one can.

    Samuelson's inequality (P. A. Samuelson, *How deviant can you be?*, JASA 63, 1968): every one of ``n``
    numbers has ``|y_i - mu| <= sigma sqrt(n - 1)``, with equality only when the other ``n - 1`` are equal. So
    an outlier (``y_i > mu + k sigma``, strictly) needs ``k < sqrt(n - 1)``, i.e. ``n >= floor(k^2) + 2`` keys: 6
    at ``k = 2``, 8 at ``k = 2.5``, 11 at ``k = 3``. Below that every key is normal whatever the data: a run
    would spend its samples proving it.

    >>> too_few_for_k(6, 2.0) is None, too_few_for_k(8, 2.5) is None
    (True, True)
    >>> print(too_few_for_k(5, 2.0))  # doctest: +NORMALIZE_WHITESPACE
    with 5 keys no key can be an outlier at k = 2: a mean is at most sqrt(n - 1) = 2.00 standard deviations from
    the keys' mean (Samuelson's inequality), so every key is normal whatever the data; it takes 6 keys at k = 2,
    or a k below 2.00
    """
    if n < 2 or not 0 < k <= K_MAX or k < math.sqrt(n - 1):  # (a k out of range: the policy's own check says so)
        return None
    return (f"with {n} keys no key can be an outlier at k = {k:g}: a mean is at most sqrt(n - 1) = {math.sqrt(n - 1):.2f} "
            "standard deviations from the keys' mean (Samuelson's inequality), so every key is normal whatever the "
            f"data; it takes {keys_for_k(k)} keys at k = {k:g}, or a k below {math.sqrt(n - 1):.2f}")


def keys_for_k(k: float) -> int:
    """The fewest keys among which one can lie beyond ``mu +- k sigma``: ``floor(k^2) + 2`` (:func:`too_few_for_k`).

    >>> keys_for_k(2.0), keys_for_k(2.5), keys_for_k(3.0)
    (6, 8, 11)
    """
    return math.floor(k * k) + 2


def at_threshold(means: Sequence[float], lo: float, hi: float, two_sided: bool = False) -> list[int]:
    """Indices of the means equal (to rounding) to the threshold ``hi`` (or, ``two_sided``, to ``lo``): no
    fixed-confidence policy can classify such an arm, so a run on the instance never stops.

    >>> at_threshold([0.1, 0.5, 0.5000000000001], 0.0, 0.5)
    [1, 2]
    """
    ths = [hi] + ([lo] if two_sided else [])
    return [i for i, v in enumerate(means) if any(abs(v - t) <= 1e-12 * max(1.0, abs(t)) for t in ths)]

class _KSigmaEstimates(Policy):
    """Shared state of the k-sigma policies: counts, sums, running sums, theta_hat, RR cursor."""

    two_sided: bool

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"k": 1.5, "model": "bounded"}]

    def __init__(self, arms: Sequence[str], *, k: float = 2.0, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", two_sided: bool = False) -> None:
        super().__init__(arms)
        n = len(self.arms)
        check_ksigma_params(k, delta, n)
        self.k = float(k)
        self.delta = float(delta)
        self.model = make_model(model)
        if hasattr(self.model, "require_sum_based"):
            self.model.require_sum_based(self.name)
        # estimates other than the plain mean (TEA): the sum adds model.contribution(j, x)
        self._transforms = bool(getattr(self.model, "transforms", False))
        self._transformed = 0  # samples whose contribution differs from the reward (e.g. truncated)
        self.two_sided = bool(two_sided)
        self.n = n
        self.m: list[int] = [0] * n
        self.s: list[float] = [0.0] * n
        self._np_dirty: list[int] = []  # arms whose counts the arrays below do not show yet (_sync_np)
        self._m_np = np.zeros(n)
        self._s_np = np.zeros(n)
        self.T = 0
        self._n_unpulled = n
        self._init_ptr = 0          # first arm that may still have no sample
        self._cur = 0               # RR cursor: the arm wanted next (after initialisation)
        self._ignored_after_done = 0
        # running sums over sampled arms
        self._sy = 0.0
        self._syy = 0.0
        self._sinv = 0.0
        self._done = False
        self._requests: list[Request | None] = [None] * n

    # -- the counts as arrays (numpy work on all arms) ---------------------------------------------
    # ``m``/``s`` (lists) are the counts; the arrays repeat them for numpy. The fused pull of
    # ksigma_batch.update_one only notes the arm in ``_np_dirty`` (two numpy item stores were ~0.2 us of
    # its ~5 us); whoever reads an array first brings it up to date from the lists (same values).
    @property
    def _m_np(self) -> np.ndarray:
        if self._np_dirty:
            self._sync_np()
        return self._m_arr

    @_m_np.setter
    def _m_np(self, value: np.ndarray) -> None:
        self._np_dirty.clear()
        self._m_arr = value

    @property
    def _s_np(self) -> np.ndarray:
        if self._np_dirty:
            self._sync_np()
        return self._s_arr

    @_s_np.setter
    def _s_np(self, value: np.ndarray) -> None:
        self._np_dirty.clear()
        self._s_arr = value

    def _sync_np(self) -> None:
        dirty, m, s, ma, sa = self._np_dirty, self.m, self.s, self._m_arr, self._s_arr
        if len(dirty) > self.n:
            ma[:], sa[:] = m, s
        else:
            for j in dirty:
                ma[j], sa[j] = m[j], s[j]
        dirty.clear()

    # -- estimates ------------------------------------------------------------------------------
    @property
    def pulls(self) -> int:
        return self.T

    @property
    def done(self) -> bool:
        return self._done

    @property
    def initialised(self) -> bool:
        """Every arm has at least one sample (end of line 1 of Alg. 1 / Alg. 2)."""
        return self._n_unpulled == 0

    def _theta(self) -> tuple[float, float, float, float]:
        """(mu_hat, sigma_hat, theta_hat_upper, theta_hat_lower) from the running sums."""
        n = self.n
        mu = self._sy / n
        var = self._syy / n - mu * mu
        sigma = math.sqrt(var) if var > 0.0 else 0.0
        return mu, sigma, mu + self.k * sigma, mu - self.k * sigma

    def _resync_sums(self) -> None:
        """Recompute the running sums exactly (bounds floating-point drift)."""
        m = self._m_np
        pulled = m > 0
        y = np.divide(self._s_np, m, out=np.zeros(self.n), where=pulled)
        self._sy = float(y.sum())
        self._syy = float((y * y).sum())
        self._sinv = float(np.divide(1.0, m, out=np.zeros(self.n), where=pulled).sum())

    def _ingest(self, i: int, x: float) -> None:
        """Add one (validated) reward of arm i to counts and running sums."""
        mi, si = self.m[i], self.s[i]
        if mi:
            yo = si / mi
            self._sy -= yo
            self._syy -= yo * yo
            self._sinv -= 1.0 / mi
        else:
            self._n_unpulled -= 1
        mi += 1
        if self._transforms:
            cx = self.model.contribution(mi, x)
            if cx != x:
                self._transformed += 1
            x = cx
        si += x
        self.m[i], self.s[i] = mi, si
        self._m_np[i], self._s_np[i] = mi, si
        yn = si / mi
        self._sy += yn
        self._syy += yn * yn
        self._sinv += 1.0 / mi
        self.T += 1

    def _accept(self, arm: str, reward: Any) -> tuple[int, float] | None:
        """The arm's index and the checked reward (``ValueError`` if bad); ``None`` once done (a reward
        after the stop is counted and ignored)."""
        i = self._arm_index(arm)
        x = self.model.check(arm, reward)
        if self._done:
            self._ignored_after_done += 1
            return None
        return i, x

    def _estimated_outliers(self) -> list[int]:
        if not self.initialised:
            return []
        _, _, hi, lo = self._theta()
        y = self._s_np / self._m_np
        mask = y > hi
        if self.two_sided:
            mask |= y < lo
        return [int(i) for i in np.nonzero(mask)[0]]

    # -- round-robin plan ----------------------------------------------------------------------------
    def _init_request(self) -> int | None:
        while self._init_ptr < self.n and self.m[self._init_ptr] > 0:
            self._init_ptr += 1
        return self._init_ptr if self._init_ptr < self.n else None

    def _start_regular(self) -> None:
        # Alg. 1/2: i <- 1 (1-based), then i <- i % n + 1 before the first regular pull: arm 2.
        self._cur = 1 % self.n

    def _request(self, i: int) -> Request:
        """Arm i's request (frozen, so made once per arm and shared: the planned feed asks per sample)."""
        r = self._requests[i]
        if r is None:
            r = self._requests[i] = Request(self.arms[i])
        return r

    def next_request(self) -> Request | None:
        if self._done:
            return None
        if self._n_unpulled:  # not initialised
            i = self._init_request()
            assert i is not None
            return self._request(i)
        r = self._requests[self._cur]  # (_request, inline: the planned feed asks once per sample)
        return r if r is not None else self._request(self._cur)

    def wanted(self, k: int) -> list[Request]:
        if self._done or k <= 0:
            return []
        if not self.initialised:
            out: list[Request] = []
            j = self._init_request() or 0
            while j < self.n and len(out) < k:
                if self.m[j] == 0:
                    out.append(self._request(j))
                j += 1
            return out
        n, cur, reqs, make = self.n, self._cur, self._requests, self._request
        # (_request, its cache read inline: the planned feed asks for the window every few samples)
        return [reqs[i] or make(i) for i in [(cur + j) % n for j in range(min(k, n))]]

    def _params(self) -> dict[str, Any]:
        return {"k": self.k, "delta": self.delta, "model": self.model.to_dict(),
                "two_sided": self.two_sided}

    def _base_state(self) -> dict[str, Any]:
        return {"policy": type(self).__name__, "arms": list(self.arms), "params": self._params(),
                "m": list(self.m), "s": list(self.s), "T": self.T, "cur": self._cur,
                "done": self._done, "ignored_after_done": self._ignored_after_done,
                "transformed": self._transformed,
                "sums": [self._sy, self._syy, self._sinv]}

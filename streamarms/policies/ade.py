"""Adaptive Double Exploration (ADE): outlier arms with random threshold samples.

Zhang, Zhuang, Zhang, Zhou. *Adaptive Double-Exploration Tradeoff for Outlier Detection*. AAAI 2020,
Algorithm 1 ([ZZZZ20]).

The problem is the k-sigma outlier-arm problem of [ZWW17] (NeurIPS 2017): arm i, with rewards in
``[a, b]`` and mean ``y_i``, is an outlier iff ``y_i >= theta = mu_y + k sigma_y``, where ``mu_y`` and
``sigma_y`` are the (1/n) mean and standard deviation of the n arm means. ADE explores two things:

* **threshold samples** (random sampling): pick an arm uniformly at random from *all* n arms and pull it
  twice, giving a pair ``(x_l1, x_l2)``; from ``m_theta`` pairs,
  ``mu_hat = mean(x_l1)``, ``sigma_hat = sqrt(| mean(x_l1 x_l2) - mean(x_l1) mean(x_l2) |)``,
  ``theta_hat = mu_hat + k sigma_hat`` (Eq. 3);
* **sequential samples** of the arms: pull every arm of the candidate set ``S_t`` once; ``y_hat_i`` is
  the mean of arm i's sequential samples (Eq. 2). Threshold samples are *not* used for ``y_hat_i``
  (the paper's presented version; its Remark notes reuse would save at most half).

Rounds. A *round* ``t`` is one threshold sample (one pair, 2 pulls) or one sequential sample (one pull
of each candidate, ``|S_t|`` pulls). ``t = m_a + m_theta + 1`` where ``m_theta`` counts pairs and
``m_a`` counts sequential rounds; ``m_i`` is arm i's number of sequential samples (= ``m_a`` for a
candidate when every sample follows the plan). Rounds 1 and 2 initialise (one pair, then every arm
once) without a classification check; then each round samples the threshold if ``r_a,t <= r_theta,t``
and the arms otherwise, updates, and checks every candidate: normal if ``y_hat_i + r_i <= theta_hat -
r_theta``, outlier if ``y_hat_i - r_i >= theta_hat + r_theta``; classified arms leave ``S``. ADE stops
when ``S`` is empty and returns the outlier set ``O``. Confidence ([ZZZZ20] Lemmas 1-5, Thm. 1):

* ``delta_t = 3 delta / ((n + 4) pi^2 t^2)`` (:func:`~streamarms.bounds.ade_significance`);
* arm radius ``r_i = R sqrt(log(1/delta_t) / (2 m_i))`` (the reward model's radius at ``delta_t``);
* ``r_theta = (R + sqrt(2) k (R' + 2bR) / sqrt(U_sigma)) sqrt(log(1/delta_t) / (2 m_theta))``
  (:func:`~streamarms.bounds.ade_threshold_radius`), ``U_sigma = min over rounds of (sigma_hat^2 +
  eps_sigma)`` (:func:`~streamarms.bounds.ade_sigma_epsilon`, Lemma 4 reading; see there);
* with probability >= 1 - delta every interval holds at every round (union bound
  ``sum_t (2n + 8) delta_t = delta``), so every classification, and the output, is correct.

Choices and deviations (each keeps the guarantee; tests in ``tests/policies/test_ade.py``):

* **Reward range.** The paper assumes ``a >= 0`` "without loss of generality" (Lemma 2 needs it). We
  take that literally: threshold statistics are computed on ``x - a`` (a translation changes neither
  sigma nor the gaps), so ``R' + 2bR`` becomes ``R^2 + 2R^2 = 3R^2``. For ``[0, 1]`` rewards (the
  paper's experiments) this is exactly the paper's formula; for ``a > 0`` it is smaller (valid, as the
  paper's own WLOG); for ``a < 0`` it is what makes the method applicable at all.
* **Bernoulli model.** ``model="bernoulli"`` keeps the paper's threshold radius (0/1 rewards are
  bounded in [0, 1]) and uses the Agresti-Coull arm radius at ``delta_t`` of [ZWW17] Sec. 4.3, like
  the RR/WRR policies (heuristic, as [ZWW17] says; ``model="bounded"`` is the paper exactly). Its
  two-sided nominal level is delta_t, half the 2 delta_t per arm and round that the union bound
  grants. Arm radii then differ between arms: ``r_a,t`` (the sampling rule) is the largest radius
  among the candidates, which for equal sample counts is the paper's ``r_a,t``.
* **Two-sided rule** (``two_sided=True``, not in the paper): arms below ``theta_L = mu_y - k sigma_y``
  are outliers too. ``|theta_hat_L - theta_L| <= r_mu + k r_sigma = r_theta`` holds on the very same
  mu/sigma events as the upper threshold, so the union bound and ``delta_t`` are unchanged. Each arm
  has an upper side (outlier if ``L_i >= U_theta``, cleared if ``U_i <= L_theta``) and a lower side
  (outlier if ``U_i <= L_theta_L``, cleared if ``L_i >= U_theta_L``); an arm is an outlier as soon as
  one side says so and normal once both sides are cleared, possibly in different rounds (correct
  because the good event holds at all rounds at once).
* **Amortised checks.** After a sequential round every candidate is checked (vectorised; the round
  costs ``|S|`` pulls). After a threshold round (2 pulls) only arms whose interval can have crossed the
  threshold interval are checked: heaps keyed by ``U_i`` and ``L_i`` as of an earlier round are valid
  bounds because ``r_i`` only grows while ``m_i`` is fixed (``delta_t`` decreases), so exactly the same
  arms are classified in the same rounds as by the literal check of every candidate.
* **Streaming.** Rewards may arrive for any arm. An update without a threshold request is a
  sequential sample of that arm (it completes the arm's part of an open sequential round, otherwise it
  is an extra sample that only sharpens the arm's estimate). To keep ``delta_t <= delta_{m_i}`` for
  every count when extra samples push an ``m_i`` above ``t``, the schedule is evaluated at
  ``max(t, max_i m_i)`` (``= t`` on the paper's plan). ``defer`` of a threshold arm keeps the pair
  pending and draws the next pair (at most ``max_pending_pairs``); pairs enter the estimates strictly
  in draw order, so the estimated pairs are always the first ``m_theta`` uniform draws and
  availability cannot bias ``mu_hat``. ``defer`` of an arm in a sequential round moves it to the back.
  With extra samples, candidates' counts differ; ``r_a,t`` is then the current radius of the candidate
  whose radius was largest at the last sequential round (exact on the paper's plan).

Streaming caveats. A key that stops sending stalls ADE: a pending pair of it blocks the threshold
estimate (draw order), and a sequential round needs every candidate (RR/WRR stall on it too: theta
depends on every arm). In a passive stream a threshold pair waits for one specific, randomly drawn
key, so ADE reads about n records per threshold sample there (``wanted`` lists only pending pairs).

Caveat: with zero gap (an arm mean exactly at theta, e.g. all arms equal, where every arm is an
outlier by ``y_i >= theta``) no finite sample separates the intervals: ADE never stops on its own and
a driver's pull cap ends the run (``Decision.estimated_outliers`` is then the plug-in answer).

>>> import random
>>> means = [0.1, 0.2, 0.3, 0.9]      # theta = mu + 0.5 sigma = 0.53
>>> policy = AdaptiveDoubleExploration(["0", "1", "2", "3"], k=0.5, model="bounded", seed=1)
>>> rng = random.Random(7)
>>> while not policy.done:
...     req = policy.next_request()
...     x = 1.0 if rng.random() < means[int(req.arm)] else 0.0
...     _ = policy.update(req.arm, x, req)
>>> policy.decision().outliers, policy.pulls
(['3'], 59426)
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any, cast

from ..models import RewardModel, make_model
from ..validation import check_k
from . import ade_snapshot
from .ade_parts import ClassificationHeaps, Found, ThresholdEstimator, check_all, intervals, scalar_radius_at
from .ade_rounds import THRESHOLD, PendingPairs, SequentialRound
from .base import Decision, Event, Policy, Request
from .snapshot_fields import guarded

__all__ = ["AdaptiveDoubleExploration", "ade_outliers"]

_THRESHOLD = THRESHOLD
_SEQUENTIAL = "sequential"
_ARM = "arm"


def ade_outliers(means: Sequence[float], k: float, two_sided: bool = False) -> list[int]:
    """Indices of the true outliers under [ZZZZ20]'s definition ``O* = {i : y_i >= theta}``.

    (Note ``>=``: [ZWW17] uses ``>``; they differ only for a mean exactly at the threshold.) With
    ``two_sided``, arms with ``y_i <= mu - k sigma`` too.

    >>> ade_outliers([0.1, 0.1, 0.1, 0.1, 0.9], k=1.5)
    [4]
    >>> ade_outliers([0.5, 0.5, 0.5], k=2.0)     # all equal: every arm is at the threshold
    [0, 1, 2]
    """
    n = len(means)
    mu = sum(means) / n
    sd = math.sqrt(sum((y - mu) ** 2 for y in means) / n)
    hi, lo = mu + k * sd, mu - k * sd
    return [i for i, y in enumerate(means) if y >= hi or (two_sided and y <= lo)]


class AdaptiveDoubleExploration(Policy):
    """ADE ([ZZZZ20] Alg. 1): find the k-sigma outlier arms with probability >= 1 - delta.

    Parameters: ``arms`` (>= 2 distinct keys); ``k`` (>= 0) of ``theta = mu + k sigma``; ``delta`` in
    (0, 1); ``model``: ``"bernoulli"`` (0/1 rewards, Agresti-Coull arm radii), ``"bounded"`` /
    ``"hoeffding"`` ([0, 1] rewards, the paper's Hoeffding radii) or a :class:`RewardModel` with finite
    ``low``/``high`` (e.g. ``BoundedModel(a, b)``); ``seed`` of the policy's own RNG (threshold arm
    draws); ``two_sided``: also flag arms below ``mu - k sigma``; ``max_pending_pairs``: how many
    threshold pairs may be outstanding after ``defer`` calls.

    Threshold samples are requested as ``Request(arm, kind="threshold", request_id=r)``; both halves of
    a pair carry the same ``r`` and must be passed back to :meth:`update`.

    >>> p = AdaptiveDoubleExploration(["a", "b", "c"], k=1.0, seed=3)
    >>> p.next_request()
    Request(arm='a', kind='threshold', request_id=0)
    >>> p.update("a", 1, p.next_request())
    []
    >>> p.next_request()   # the second half of the same pair
    Request(arm='a', kind='threshold', request_id=0)
    >>> _ = p.update("a", 0, p.next_request())
    >>> [r.arm for r in p.wanted(5)]   # round 2: every arm once
    ['a', 'b', 'c']
    """

    name = "ade"

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        return [{"seed": 1}, {"seed": 2, "two_sided": True}]

    def __init__(self, arms: Sequence[str], *, k: float = 2.5, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", seed: int | None = None,
                 two_sided: bool = False, max_pending_pairs: int = 8) -> None:
        super().__init__(arms)
        n = len(self.arms)
        if n < 2:
            raise ValueError(f"ADE needs at least 2 arms (the threshold mu + k sigma of one arm is its own "
                             f"mean), got {n}")
        try:
            k = float(k)
            delta = float(delta)
        except (TypeError, ValueError):
            raise ValueError(f"k and delta must be numbers, got k={k!r}, delta={delta!r}") from None
        check_k(k, zero_ok=True)
        if not (0.0 < delta < 1.0):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        if isinstance(max_pending_pairs, bool) or not isinstance(max_pending_pairs, int) or max_pending_pairs < 1:
            raise ValueError(f"max_pending_pairs must be an integer >= 1, got {max_pending_pairs!r}")
        self.model: RewardModel = make_model(model)
        lo, hi = self.model.low, self.model.high
        if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"ADE needs a bounded reward model with finite low < high (the threshold radius "
                             f"depends on the range); got {self.model!r}")
        self.n = n
        self.k = k
        self.delta = delta
        self.two_sided = bool(two_sided)
        self.max_pending_pairs = max_pending_pairs
        self.seed = seed
        self._rng = random.Random(seed)
        # range, in the translated coordinates x - a (see module docstring): b' = R, R' = R^2
        self._lo, self._hi = float(lo), float(hi)
        self._radius_at: Callable[[float], Callable[[int, float], float]] = scalar_radius_at(self.model)
        self._requests = [Request(a) for a in self.arms]
        self._init_state()

    # ------------------------------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------------------------------
    def _init_state(self) -> None:
        n = self.n
        # per arm: sequential-sample count and raw sum (the model's radius takes raw sums)
        self._m: list[int] = [0] * n
        self._s: list[float] = [0.0] * n
        self._max_m = 0
        self._alive = bytearray(b"\x01") * n          # candidate set S
        self._n_alive = n
        self._status: list[str | None] = [None] * n   # "outlier" / "normal"
        self._side: list[str | None] = [None] * n     # "high" / "low" for outliers
        self._hi_clear = bytearray(n)                 # upper side: confidently below theta
        self._lo_clear = bytearray(n)                 # lower side: confidently above theta_L
        self._cand: list[int] = list(range(n))        # superset of S, compacted each sequential round
        self._pulls = 0
        # rounds
        self._t = 1          # the paper's t: index of the next round
        self._m_a = 0        # sequential rounds done
        self._est = ThresholdEstimator(n, self.k, self.delta, self._lo, self._hi - self._lo)
        # open round
        self._mode: str | None = None
        self._pairs = PendingPairs(self.arms)
        self._seq = SequentialRound(n)
        # r_a,t: arms ordered by radius at the last sequential round; first alive one is the largest
        self._ra_order: list[int] = []
        self._ra_ptr = 0
        # amortised classification (see module docstring): entries (key, arm, version)
        self._ver = [0] * n
        self._heaps = ClassificationHeaps(self.two_sided)
        self._open_next_round()

    # ------------------------------------------------------------------------------------------
    # the interface
    # ------------------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._n_alive == 0

    @property
    def pulls(self) -> int:
        return self._pulls

    def next_request(self) -> Request | None:
        if self._n_alive == 0:
            return None
        if self._mode == _THRESHOLD:
            pairs = self._pairs  # PendingPairs.head(), inline: this runs for every threshold pull
            return pairs.pairs[pairs.wish[0]][3]
        return self._requests[self._seq.head()]

    def wanted(self, k: int) -> list[Request]:
        if self.done or k <= 0:
            return []
        if self._mode == _THRESHOLD:
            return self._pairs.wanted(k)
        return [self._requests[i] for i in self._seq.wanted(k)]

    def defer(self, arm: str) -> None:
        i = self._arm_index(arm)
        if self.done:
            return
        if self._mode == _THRESHOLD:
            if self._pairs.defer(i) and len(self._pairs) < self.max_pending_pairs:
                self._pairs.draw(self._rng, self.n, front=True)
        elif self._mode == _SEQUENTIAL:
            self._seq.defer(i)

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        i = self.index.get(arm)
        if i is None:
            raise ValueError(f"unknown arm {arm!r} (reward {reward!r}): this policy's arms are fixed at "
                             f"construction ({self.n} arms)")
        x = self.model.check(arm, reward)
        if request is not None:
            if request.arm != arm:
                raise ValueError(f"reward for arm {arm!r} (value {reward!r}) was passed with a request for "
                                 f"arm {request.arm!r}")
            if request.kind == _THRESHOLD:
                # complete pairs enter the estimates in draw order (the first m_theta draws are i.i.d. uniform)
                ready = self._pairs.add_half(i, x, request, reward)
                self._pulls += 1
                if not ready:
                    return []
                events: list[Event] = []
                for x1, x2 in ready:
                    events.extend(self._finish_threshold_round(x1, x2))
                if not self._pairs.pairs and self._n_alive:
                    self._open_next_round()
                return events
            if request.kind != _ARM:
                raise ValueError(f"reward for arm {arm!r} (value {reward!r}) came with a request of unknown "
                                 f"kind {request.kind!r}; ADE issues 'arm' and 'threshold' requests")
        return self._arm_sample(i, x)

    # ------------------------------------------------------------------------------------------
    # ingesting samples
    # ------------------------------------------------------------------------------------------
    def _arm_sample(self, i: int, x: float) -> list[Event]:
        self._pulls += 1
        m = self._m[i] + 1
        self._m[i] = m
        self._s[i] += x
        if m > self._max_m:
            self._max_m = m
        seq = self._seq
        if self._mode == _SEQUENTIAL and seq.in_round[i]:  # SequentialRound.take, inline: hot path
            seq.in_round[i] = 0
            seq.remaining -= 1
            return self._finish_sequential_round() if seq.remaining == 0 else []
        # an extra sample outside the plan: refresh the arm's entries for the amortised check
        if self._alive[i] and self._m_a >= 1:
            self._ver[i] += 1
            self._push_arm(i, self._radius_at(self._est.d))
            if self._heaps.size() > 2 * self._n_alive + 64:   # stale entries
                self._rebuild_heaps()
        return []

    # ------------------------------------------------------------------------------------------
    # rounds
    # ------------------------------------------------------------------------------------------
    def _open_next_round(self) -> None:
        """Alg. 1 lines 5-8 (initialisation) and 13-19 (the sampling rule)."""
        if self._est.m_theta == 0:
            threshold = True
        elif self._m_a == 0:
            threshold = False
        else:
            threshold = self._r_a() <= cast(float, self._est.r_theta)
        if threshold:
            self._mode = _THRESHOLD
            self._pairs.draw(self._rng, self.n)
        else:
            self._mode = _SEQUENTIAL
            self._cand = [i for i in self._cand if self._alive[i]]
            self._seq.open(self._cand)

    def _finish_threshold_round(self, x1: float, x2: float) -> list[Event]:
        self._est.add_pair(x1, x2)
        self._t += 1
        self._update_threshold()
        if self._m_a == 0:      # initialisation round: no check (Alg. 1 line 10)
            return []
        return self._check_heaps()

    def _finish_sequential_round(self) -> list[Event]:
        checked = self._m_a >= 1     # round 2 (initialisation) is not followed by a check
        self._m_a += 1
        self._t += 1
        self._update_threshold()
        cand = [i for i in self._cand if self._alive[i]]
        y, r = self._intervals(cand)
        events = self._check_all(cand, y, r) if checked else []
        self._rebuild_heaps(cand, y, r)
        if not self.done:
            self._open_next_round()
        return events

    def _update_threshold(self) -> None:
        self._est.update(max(self._t, self._max_m))

    def _r_a(self) -> float:
        """r_a,t: the largest arm radius among the candidates (paper: all equal, R sqrt(log(1/d)/2m_a))."""
        order, p = self._ra_order, self._ra_ptr
        while not self._alive[order[p]]:
            p += 1
        self._ra_ptr = p
        j = order[p]
        return self._radius_at(self._est.d)(self._m[j], self._s[j])

    # ------------------------------------------------------------------------------------------
    # classification (Alg. 1 lines 23-31)
    # ------------------------------------------------------------------------------------------
    def _intervals(self, cand: list[int]) -> tuple[list[float], list[float]]:
        """``y_hat_i`` and ``r_i`` at the current ``delta_t`` for the arms ``cand``."""
        return intervals(cand, self._m, self._s, self._radius_at(self._est.d), self.model, self._est.d)

    def _check_all(self, cand: list[int], y: list[float], r: list[float]) -> list[Event]:
        """Check every candidate (after a sequential round, which cost ``|S|`` pulls)."""
        return self._classify(check_all(cand, y, r, self._est.bounds(), self.two_sided, self._hi_clear,
                                        self._lo_clear))

    def _check_heaps(self) -> list[Event]:
        """Check the candidates whose interval can have crossed the threshold's (after a pair)."""
        found = self._heaps.scan(self._est.bounds(), self._radius_at(self._est.d), self._alive, self._ver,
                                 self._m, self._s, self._hi_clear, self._lo_clear)
        return self._classify(found)

    def _classify(self, found: list[Found]) -> list[Event]:
        """Remove the found arms from S and emit their events in arm order (the paper's loop order)."""
        if not found:
            return []
        found.sort(key=lambda f: f[0])
        Lt, Ut, Llo, Ulo = self._est.bounds()
        th_lo = self._est.lower()
        events = []
        for i, kind, side, y, L, U in found:
            if not self._alive[i]:
                continue
            self._alive[i] = 0
            self._n_alive -= 1
            self._status[i] = kind
            self._side[i] = side
            if side == "low":
                thr, thr_iv = th_lo, (Llo, Ulo)
            else:
                thr, thr_iv = cast(float, self._est.theta_hat), (Lt, Ut)
            events.append(Event(self.arms[i], kind, float(y), (float(L), float(U)), thr, thr_iv,
                                self._m[i], self._pulls))
        return events

    # ------------------------------------------------------------------------------------------
    # heaps
    # ------------------------------------------------------------------------------------------
    def _push_arm(self, i: int, rad: Callable[[int, float], float]) -> None:
        m, s = self._m[i], self._s[i]
        self._heaps.push(i, s / m, rad(m, s), self._ver[i], self._hi_clear[i], self._lo_clear[i])

    def _rebuild_heaps(self, cand: list[int] | None = None, y: list[float] | None = None,
                       r: list[float] | None = None) -> None:
        """Fresh heaps and r_a order over the candidates (O(|S|), once per sequential round)."""
        if cand is None:
            cand = [i for i in self._cand if self._alive[i]]
            y = r = None
        self._heaps.rebuild(())
        if self._m_a == 0 or not cand:        # before round 2 some arms have no sample yet
            self._cand = [i for i in cand if self._alive[i]]
            self._ra_order, self._ra_ptr = list(self._cand), 0
            return
        if y is None or r is None:
            y, r = self._intervals(cand)
        keep = [j for j, i in enumerate(cand) if self._alive[i]]
        ver, hc, lc = self._ver, self._hi_clear, self._lo_clear
        self._heaps.rebuild([(cand[j], y[j], r[j], ver[cand[j]], hc[cand[j]], lc[cand[j]]) for j in keep])
        self._cand = [cand[j] for j in keep]
        # r_a,t order: largest radius first (stable sort: ties by arm index)
        self._ra_order = [cand[j] for j in sorted(keep, key=lambda j: -r[j])]
        self._ra_ptr = 0

    # ------------------------------------------------------------------------------------------
    # output
    # ------------------------------------------------------------------------------------------
    def decision(self) -> Decision:
        outliers = [a for i, a in enumerate(self.arms) if self._status[i] == "outlier"]
        normals = [a for i, a in enumerate(self.arms) if self._status[i] == "normal"]
        undecided = [a for i, a in enumerate(self.arms) if self._status[i] is None]
        est = self._est
        th = est.theta_hat
        th_iv = None if th is None or est.r_theta is None else (th - est.r_theta, th + est.r_theta)
        estimated = set(outliers)
        extra: dict[str, Any] = {
            "rounds": self._t - 1, "threshold_pairs": est.m_theta, "sequential_rounds": self._m_a,
            "mu_hat": est.mu_hat, "sigma_hat": est.sigma_hat, "r_theta": est.r_theta,
            "U_sigma": None if math.isinf(est.U_sigma) else est.U_sigma, "delta_t": est.delta_t,
            "high_outliers": [a for i, a in enumerate(self.arms) if self._side[i] == "high"],
            "low_outliers": [a for i, a in enumerate(self.arms) if self._side[i] == "low"],
        }
        if th is not None and est.r_theta is not None:
            th_lo = est.lower()
            if self.two_sided:
                extra["lower_threshold"] = th_lo
                extra["lower_threshold_interval"] = (th_lo - est.r_theta, th_lo + est.r_theta)
            for i, a in enumerate(self.arms):
                if self._status[i] is None and self._m[i] > 0:
                    y = self._s[i] / self._m[i]
                    if y >= th or (self.two_sided and y <= th_lo):
                        estimated.add(a)
        return Decision(outliers=outliers, normals=normals, undecided=undecided,
                        estimated_outliers=[a for a in self.arms if a in estimated],
                        threshold=th, threshold_interval=th_iv, pulls=self._pulls, done=self.done,
                        extra=extra)

    # ------------------------------------------------------------------------------------------
    # snapshot / restore
    # ------------------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        version, internal, gauss = self._rng.getstate()
        seq = self._seq.pending() if self._mode == _SEQUENTIAL else []
        return {
            "policy": self.name, "format": 1, "arms": list(self.arms),
            "params": {"k": self.k, "delta": self.delta, "two_sided": self.two_sided,
                       "max_pending_pairs": self.max_pending_pairs, "seed": self.seed},
            "model": self.model.to_dict(),
            "rng": [version, list(internal), gauss],
            "m": list(self._m), "s": list(self._s), "max_m": self._max_m,
            "status": list(self._status), "side": list(self._side),
            "hi_clear": list(self._hi_clear), "lo_clear": list(self._lo_clear),
            "cand": [i for i in self._cand if self._alive[i]], "pulls": self._pulls,
            "t": self._t, "m_a": self._m_a, **self._est.to_dict(),
            "mode": self._mode, **self._pairs.to_dict(), "seq_pending": seq,
            "ra_order": [i for i in self._ra_order[self._ra_ptr:] if self._alive[i]],
        }

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> AdaptiveDoubleExploration:
        """Rebuild from :meth:`snapshot` output; a malformed snapshot raises ``ValueError`` naming the field
        (:mod:`streamarms.policies.ade_snapshot`)."""
        self, f = ade_snapshot.construct(cls, state)
        v = ade_snapshot.check_rounds(self, f)
        self._m, self._s, self._max_m, self._status, self._side = v["m"], v["s"], v["max_m"], v["status"], v["side"]
        self._hi_clear, self._lo_clear = bytearray(v["hi_clear"]), bytearray(v["lo_clear"])
        self._alive = bytearray(1 if st is None else 0 for st in self._status)
        self._n_alive = sum(self._alive)
        self._cand, self._pulls, self._t, self._m_a, self._mode = v["cand"], v["pulls"], v["t"], v["m_a"], v["mode"]
        self._est.load(state)
        self._pairs.load(state)
        self._seq.load(v["seq_pending"])
        self._ver = [0] * self.n
        self._rebuild_heaps()
        self._ra_order, self._ra_ptr = v["ra_order"], 0
        return self

"""``OutlierArmDetector``: streamarms as a river anomaly detector, for river pipelines.

Records are dicts (river's ``x``). The detector reads two features: the *key* (which stream key, i.e.
which arm, the record belongs to) and the *reward* (the record's value for that key: clicked or not,
late or not, an error, a latency scaled to [0, 1]...). ``learn_one(x)`` offers the record to a
*passive* :class:`~streamarms.runtime.Scheduler` exactly as the daemon does with Kafka records: the
policy uses the reward only if it currently wants a sample of that key, otherwise the record is
skipped. ``score_one(x)`` says how outlying the record's *key* is.

The policy is any streamarms policy (default: Weighted Round-Robin, Zhuang, Wang, Wang. *Identifying
Outlier Arms in Multi-Armed Bandit*. NeurIPS 2017, with ``k = 2``, ``delta = 0.1`` and Bernoulli
rewards: a key is an outlier iff its mean reward exceeds ``mu + 2 sigma`` of the keys' means).

**Score scale** (a float in [0, 1]):

* ``1.0`` -- the key is *confidently* an outlier: the policy classified it (an event, or the final
  answer of an episode); with probability at least ``1 - delta`` that is right;
* ``0.0`` -- the key is confidently normal;
* strictly between 0 and 1 -- undecided. The value is ``(1 + g) / 2`` with ``g`` the key's *margin*
  ``(y_hat - theta_hat) / (beta + beta_theta)``: its estimated mean minus the estimated threshold, in
  units of the two confidence radii (for a two-sided rule, the distance beyond the nearer threshold).
  A policy declares a key decided exactly when ``|g| >= 1`` ([ZWW17] Eq. 2), so scores of undecided
  keys move continuously towards 0 or 1 as evidence accumulates; ``g`` is clipped to ``[-0.98,
  0.98]`` so that only a real classification reaches 0 or 1. For ``cs`` (asymmetric confidence
  sequences) the radii are the distances from each estimate to the end of its interval facing the other
  (:func:`evidence_margin`), so again ``|g| >= 1`` exactly when it classifies. Policies that expose
  neither give ``0.75`` / ``0.25`` for keys currently estimated outlying / normal;
* ``0.5`` -- nothing is known: the key has not been in an episode yet, or the record has no key.

Which verdict counts: a confident verdict of the current episode, else the confident verdict of the
last finished episode, else the current episode's graded score, else the last episode's graded score,
else 0.5. The graded part is refreshed from the policy's decision (an O(n) vectorised call) at the first
``score_one`` after ``max(1, n_arms // 16)`` samples since the last refresh, confident verdicts the moment they
are made: an undecided key's graded score may differ slightly with when keys were scored before (by the
evidence of at most those samples), its 0 or 1 never.

**Keys appearing over time: episodes.** A policy has a fixed set of arms. As in the daemon, the first
episode starts once at least ``min_arms`` keys are known and no new key has been seen for
``discovery`` records; keys first seen later join the *next* episode. An episode ends when the policy
stops, or after ``episode_timeout`` records (its undecided keys keep their graded score; the default,
a million records, is generous because an episode's length is counted in all records, of keys it wants
or not -- on the README's 31-key example WRR's first episode used 22.6k of its 30.5k records -- and a
cut-short episode's samples are lost); the next one starts ``episode_interval`` records after the previous one started (0: at once). Each episode starts
from scratch, so a key whose mean drifts is re-classified. Time is counted in ``learn_one`` calls:
every timeout below is a number of records, which makes the detector a deterministic function of the
records it is given (river's convention), whatever the wall clock.

**Records it ignores** (documented so it is safe in any pipeline, including river's own checks whose
datasets have neither feature): a record without the key feature or without the reward feature is
ignored by ``learn_one`` and scored by its key alone (0.5 when it has no key); when none of the first
1,000 records has both, a ``RuntimeWarning`` names the feature (a misspelt name would ignore the stream in
silence). A key beyond ``max_arms`` distinct keys is ignored (counted in ``n_refused``). Keys and rewards follow the daemon's
record rules: a key is a string (UTF-8 bytes too, as a Kafka key) or an integer (``7`` is the arm
``"7"``); a key of any other type (a bool, a float, NaN, a dict), an empty one or one over 256 bytes
raises ``ValueError``, and such a key scores 0.5. A boolean reward (``True`` or ``numpy.True_`` alike, as
river's binary targets are) is 1 and ``False`` 0 under a reward model of rates (the default Bernoulli,
bounded on ``[0, 1]``), as the daemon reads JSON booleans. A number is an ``int``, ``float``, numpy number,
``Fraction`` or ``Decimal``. A reward that is present but not a number (nor such a boolean), not finite (an
integer beyond the floats neither), or refused by the policy's reward model (e.g. ``0.5`` under the default
Bernoulli model) raises ``ValueError`` naming the key and value, with the detector unchanged.

The policy is given as a name of :data:`streamarms.registry.POLICIES` (``policy_params`` are then the
options of ``streamarms simulate``: ``k``, ``delta``, ``bound`` ("bernoulli" or "hoeffding"),
``two_sided``, ``rho``...) or as a policy class / callable ``policy(arms, **policy_params)``.

**Randomness.** ``seed`` (like river's randomised models) seeds the policy's random draws: episode
``e`` builds its policy with ``seed + e - 1``, so a detector is a deterministic function of its records
and its parameters. Policies without random draws (RR, WRR, NRR, GOLD, roai) ignore it; a callable
policy receives it only if it has a ``seed`` parameter. (A ``seed`` in ``policy_params`` does the same;
giving both is an error.)

**In river's anomaly filters.** ``anomaly.QuantileFilter`` and ``anomaly.ThresholdFilter`` by default
*protect* their detector: a record whose score is classified anomalous is not learnt. That is right for
a detector that models normal records, and wrong for this one: the score is a property of the record's
*key*, so protection withholds every record of a key once it looks outlying, and the policy, which
must keep sampling every key of an episode (the threshold is a function of all of them), waits for it
until ``episode_timeout``. (With QuantileFilter it is worse: the first scores are all 0.5, the 0.5
quantile is 0.5, and every record is classified anomalous.) Use
``QuantileFilter(detector, q, protect_anomaly_detector=False)``: the filter then learns every record
and still classifies the records of outlying keys as anomalous, so a model behind it in a pipeline
never learns from them. ``ThresholdFilter`` cannot be used that way in river <= 0.26.1: its
``learn_one`` only updates the detector when protection is *on* (with it off the detector never
learns, whatever the detector). With ThresholdFilter, learn the detector yourself and use the filter
(or ``score >= t``) only to classify; ``tests/test_ops_detector.py`` runs both pipelines.

>>> import random
>>> from streamarms import OutlierArmDetector
>>> rng = random.Random(7)
>>> means = {f"host-{i}": 0.1 for i in range(8)} | {"host-8": 0.9}
>>> detector = OutlierArmDetector(key="host", reward="slow")
>>> for _ in range(6000):
...     host = rng.choice(sorted(means))
...     x = {"host": host, "slow": int(rng.random() < means[host])}
...     detector.learn_one(x)
>>> detector.score_one({"host": "host-8"}), detector.score_one({"host": "host-0"})
(1.0, 0.0)
>>> detector.outliers
['host-8']
>>> detector.n_samples < detector.n_records   # the rewards it did not need were skipped
True
>>> detector
OutlierArmDetector (
  key="host"
  reward="slow"
  policy="wrr"
  policy_params=None
  window=32
  prefetch=32
  want_timeout=1000
  discovery=500
  min_arms=3
  max_arms=10000
  episode_interval=0
  episode_timeout=1000000
  seed=None
  passive_feed=None
  clip=False
)

Latencies, or any value with a known range, under the bounded model; ``clip=True`` takes a value beyond
the range as the range's end (a timed-out request is as slow as the timeout), counted in ``n_clipped``,
instead of a ``ValueError``:

>>> lat = OutlierArmDetector(key="host", reward="ms", policy="cs", clip=True,
...                          policy_params={"reward_model": "bounded", "reward_range": (0, 2000)})
>>> lat.learn_one({"host": "h1", "ms": 31_000}); lat.n_clipped
1
"""

from __future__ import annotations

import decimal
import inspect
import math
import numbers
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from river import base

from .models import BoundedModel, RewardModel, make_model
from .policies.base import Decision, Policy
from .policies.ksigma_estimates import too_few_for_k
from .runtime import EventClock, InvalidRecord, RewardCodec, Scheduler, SchedulerConfig
from .validation import short_repr

__all__ = ["OutlierArmDetector"]

_UNKNOWN = 0.5
_CLIP = 0.98
#: records ignored from the first one on (no key or no reward feature) before the warning that names them
_IGNORED_WARN = 1000


class _PassThroughCodec(RewardCodec):
    """The detector validates every reward itself (so errors do not depend on which records the
    scheduler happens to take) and hands the scheduler floats."""

    def __init__(self) -> None:
        super().__init__(model=None)

    def reward(self, arm: str, value: Any, count: bool = True) -> float:
        return value


def _check_feature(name: str, feature: Any) -> None:
    """A feature's name may be any hashable, as in river; ``None`` or ``""`` names none (every record ignored)."""
    try:
        ok = hash(feature) is not None and feature is not None and feature != ""
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must be the name of a feature (a string), got {feature!r}")


def _check_built(policy: Any, built: Any) -> None:
    """What a policy class or callable built is a :class:`Policy` (every record failed on an ``int``, deep inside)."""
    if not isinstance(built, Policy):
        raise TypeError(f"policy {getattr(policy, '__name__', policy)!r} returned {str(built)[:60]!r} "
                        f"({type(built).__name__}), not a streamarms Policy")


class OutlierArmDetector(base.AnomalyDetector):
    """A river anomaly detector that scores records by how outlying their *key* is (module docstring).

    Parameters
    ----------
    key
        Name of the feature that holds the stream key (the arm).
    reward
        Name of the feature that holds the reward (a number; 0/1 for the default Bernoulli model).
    policy
        A name in ``streamarms.registry.POLICIES`` (default ``"wrr"``) or a policy class / callable
        ``policy(arms, **policy_params) -> Policy``. It is built once at construction, on stand-in keys, so that
        bad ``policy_params`` raise ``ValueError`` there.
    policy_params
        Options for the policy (default: the policy's defaults; for "wrr": k=2, delta=0.1, Bernoulli).
    window
        How many keys the policy may want at once (the scheduler's passive window).
    prefetch
        Rewards held per wanted key until the policy asks for them. WRR pulls an undecided key about
        ``rho* ~ n^(2/3)`` times in a row, so a small value starves it when there are many keys.
    want_timeout
        Records after which an unmet want is given up and the key deferred.
    discovery
        The first episode starts once no new key has appeared for this many records.
    min_arms
        Never start an episode with fewer keys.
    max_arms
        Keys beyond this many are ignored.
    episode_interval
        Records between episode starts (0: the next episode starts when the previous one ends).
    episode_timeout
        End an episode that has not finished after this many records (``None``: never).
    seed
        Random seed of the policy; episode ``e`` uses ``seed + e - 1`` (``None``: unseeded).
    passive_feed
        ``"planned"``: the policy gets the rewards its plan asks for, in that order; ``"all"``: every reward
        of its keys as it arrives (anytime-valid policies: ``cs``, GOLD, the robust ones). ``None`` (default):
        the policy's own, as ``streamarms run`` (``cs``: all, ~4x fewer records than planned; the papers'
        policies: planned).
    clip
        With the bounded reward model: a reward beyond its range is taken as the range's end (counted in
        ``n_clipped``) instead of raising ``ValueError`` -- ``streamarms run --clip``'s rule.
    """

    _verdict: dict[str, float]
    _final: dict[str, float]
    _tally: dict[str, list[float]]
    _cache: dict[str, Any] | None

    def __init__(self, key: str = "key", reward: str = "reward", policy: str | Callable[..., Policy] = "wrr",
                 policy_params: dict[str, Any] | None = None, window: int = 32, prefetch: int = 32,
                 want_timeout: int = 1000,
                 discovery: int = 500, min_arms: int = 3, max_arms: int = 10_000, episode_interval: int = 0,
                 episode_timeout: int | None = 1_000_000, seed: int | None = None,
                 passive_feed: str | None = None, clip: bool = False) -> None:
        self.key = key
        self.reward = reward
        self.policy = policy
        self.policy_params = policy_params
        self.window = window
        self.prefetch = prefetch
        self.want_timeout = want_timeout
        self.discovery = discovery
        self.min_arms = min_arms
        self.max_arms = max_arms
        self.episode_interval = episode_interval
        self.episode_timeout = episode_timeout
        self.seed = seed
        self.passive_feed = passive_feed
        self.clip = clip
        for name, feature in (("key", key), ("reward", reward)):
            _check_feature(name, feature)
        if key == reward:
            raise ValueError(f"key and reward name the same feature {key!r}: a record's key and its reward are two "
                             "features")
        if not isinstance(policy, str) and not callable(policy):
            raise ValueError(f"policy must be a registered policy name or a callable, got {policy!r}")
        from .registry import POLICIES
        if isinstance(policy, str):
            if policy not in POLICIES:
                raise ValueError(f"unknown policy {policy!r}: choose one of {', '.join(sorted(POLICIES))}")
        if policy_params is not None and not isinstance(policy_params, dict):
            raise ValueError(f"policy_params must be a dict or None, got {policy_params!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
            raise ValueError(f"seed must be an integer or None, got {seed!r}")
        if seed is not None and policy_params and policy_params.get("seed") is not None:
            raise ValueError("give the seed either as seed= or in policy_params, not both")
        if passive_feed not in (None, "planned", "all"):
            raise ValueError(f"passive_feed must be 'planned', 'all' or None (the policy's own), got {passive_feed!r}")
        feed = passive_feed or (POLICIES[policy].passive_feed if isinstance(policy, str) else "planned")
        if feed == "all" and isinstance(policy, str) and POLICIES[policy].kind in ("threshold", "best"):
            raise ValueError(f"passive_feed 'all' needs a policy whose guarantee holds for any sampling order; "
                             f"{policy!r} has a budget or rounds of its own")
        try:
            self._config = SchedulerConfig(
                mode="passive", passive_feed=feed, window=window, prefetch=prefetch, want_timeout=float(want_timeout),
                discovery_records=discovery,
                discovery_seconds=float("inf"), min_arms=min_arms, max_arms=max_arms,
                episode_interval=float(episode_interval),
                episode_timeout=None if episode_timeout is None else float(episode_timeout))
        except ValueError as e:  # the scheduler's names and units; the detector's are these (time: records)
            raise ValueError(str(e).replace("discovery_records", "discovery").replace(" seconds", " records")) from None
        try:
            self._model = self._reward_model()
        except ValueError as e:  # (ConfigError too: an unknown name in policy_params)
            raise params_error(e, self.policy, self.policy_params) from None
        if not isinstance(clip, (bool, np.bool_)):
            raise ValueError(f"clip must be True or False, got {clip!r}")
        if clip and not isinstance(self._model, BoundedModel):
            raise ValueError("clip=True needs the bounded reward model (its range is what rewards are clipped to): "
                             "policy_params={'reward_model': 'bounded', 'reward_range': (lo, hi)}")
        self._check_params()
        self._reset()

    # -- construction helpers ------------------------------------------------------------------
    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"policy": "rr", "policy_params": {"k": 1.5, "delta": 0.05}, "window": 4, "discovery": 50,
               "want_timeout": 100, "episode_timeout": 5000}
        yield {"policy": "ade", "policy_params": {"k": 1.5}, "discovery": 50, "episode_timeout": 5000, "seed": 3}
        yield {"policy": "cs", "discovery": 50, "episode_timeout": 5000}
        yield {"policy": "cs", "policy_params": {"reward_model": "bounded", "reward_range": (0, 2000)}, "clip": True,
               "discovery": 50, "episode_timeout": 5000}

    def _params(self) -> dict[str, Any]:
        params = dict(self.policy_params or {})
        if self.seed is not None and self._accepts_seed():
            params["seed"] = int(self.seed)
        return params

    def _accepts_seed(self) -> bool:
        """Registered policies take ``seed`` as an option; a callable only if it has the parameter."""
        if isinstance(self.policy, str):
            return True
        try:
            ps = inspect.signature(self.policy).parameters
        except (TypeError, ValueError):
            return False
        return "seed" in ps

    def _default_model(self) -> bool:
        """The reward model is a registered policy's default (no ``reward_model`` in ``policy_params``)."""
        return isinstance(self.policy, str) and "reward_model" not in self._params()

    def _reward_model(self) -> RewardModel | None:
        """The reward model the policy will use, to validate every reward (not only the used ones)."""
        params = self._params()
        if isinstance(self.policy, str):
            from .registry import PolicyParams, reward_model_of
            return reward_model_of(PolicyParams.of(params))
        if "model" in params:
            return make_model(params["model"])
        try:
            p = inspect.signature(self.policy).parameters.get("model")
        except (TypeError, ValueError):
            p = None
        if p is not None and p.default is not inspect.Parameter.empty and p.default is not None:
            return make_model(p.default)
        return None

    def _check_params(self) -> None:
        """Build the policy once on stand-in keys, so bad ``policy_params`` (``delta=2``, ``k=-1``, ``lsa``
        without a threshold, a name a policy class does not take) fail here, not as a log line at every
        episode start while the scores stay 0.5. The registry speaks in CLI flags; the error names the
        ``policy_params`` key instead."""
        stand_ins = [f"key-{i}" for i in range(max(self.min_arms, 20))]
        try:
            if isinstance(self.policy, str):
                from .registry import build_policy
                build_policy(self.policy, stand_ins, **self._params())
            else:  # a class or callable: its own errors (TypeError: a keyword it does not take)
                _check_built(self.policy, self.policy(stand_ins, **self._params()))
        except (ValueError, TypeError) as e:
            raise params_error(e, self.policy, self.policy_params) from None

    def _build(self, arms: list[str], episode: int) -> Policy:
        params = self._params()
        if params.get("seed") is not None:
            params["seed"] = int(params["seed"]) + episode - 1
        if isinstance(self.policy, str):
            from .registry import POLICIES, build_policy
            k = params.get("k")
            why = too_few_for_k(len(arms), float(k) if isinstance(k, numbers.Real) else 2.0)
            if why is not None and POLICIES[self.policy].ksigma and episode == 1:
                warnings.warn(f"OutlierArmDetector: {why} (min_arms waits for them)", RuntimeWarning, stacklevel=2)
        try:  # the keys refused (GOLD's rho leaves no room on 10) were said in the log only, before
            policy = build_policy(self.policy, arms, **params) if isinstance(self.policy, str) else self.policy(arms, **params)
        except ValueError as e:  # (warned once a text)
            warnings.warn(f"OutlierArmDetector: cannot start an episode on {len(arms)} keys: {e}", RuntimeWarning, 2)
            raise
        # a new episode: its verdicts and sample tallies start empty
        self._verdict = {}
        self._tally = {}
        self._cache = None
        return self._tallying(policy)

    def _tallying(self, policy: Policy) -> Policy:
        """Count, per arm, the rewards the policy accepts (the graded score needs ``m`` and ``s``
        whatever the policy; the scheduler may hold rewards it never delivers)."""
        update = policy.update
        tally = self._tally

        def tallied(arm: str, reward: float, request: Any = None) -> Any:
            events = update(arm, reward, request)
            t = tally.get(arm)
            if t is None:
                tally[arm] = [1, reward]
            else:
                t[0] += 1
                t[1] += reward
            return events

        policy.update = tallied  # type: ignore[method-assign]
        return policy

    def _reset(self) -> None:
        self._clock = EventClock()
        self._scheduler = self._make_scheduler()
        self.n_records = 0          # learn_one calls
        self.n_ignored = 0          # records without the key or the reward feature
        self.n_refused = 0          # records of keys beyond max_arms
        self.n_clipped = 0          # rewards beyond the bounded model's range taken as its end (clip=True)
        self._cap_warned = False    # the warning that keys beyond max_arms are ignored was given
        self._verdict = {}     # current episode: confident classifications
        self._final = {}       # last finished episode: every arm's final score
        self._tally = {}       # current episode: [samples, sum] per arm
        self._cache = None

    def _make_scheduler(self) -> Scheduler:
        return Scheduler(self._build, clock=self._clock, config=self._config,
                         codec=_PassThroughCodec(), emit_alert=self._on_alert,
                         on_episode_end=self._on_episode_end,
                         policy_name=self.policy if isinstance(self.policy, str) else
                         getattr(self.policy, "name", getattr(self.policy, "__name__", "policy")),
                         emit_normal=True, alert_repeat=True, history=1)

    # -- scheduler callbacks -------------------------------------------------------------------
    def _on_alert(self, alert: dict[str, Any]) -> None:
        kind = alert["kind"]
        if kind == "outlier":
            self._verdict[alert["arm"]] = 1.0
        elif kind in ("normal", "cleared"):
            self._verdict[alert["arm"]] = 0.0

    def _on_episode_end(self, summary: dict[str, Any]) -> None:
        policy = self._scheduler.policy
        assert policy is not None
        cache = self._decision_cache(policy, force=True)
        final = {a: self._graded(a, cache, policy) for a in policy.arms}
        final.update(self._verdict)
        self._final = final

    # -- river API -----------------------------------------------------------------------------
    def learn_one(self, x: dict) -> None:
        try:
            key = x.get(self.key)
            r = x.get(self.reward)
        except AttributeError:
            raise TypeError(f"learn_one takes a dict of features (river's x), got {type(x).__name__}") from None
        if key is None or r is None:
            self.n_records += 1
            self.n_ignored += 1
            if self.n_ignored == _IGNORED_WARN == self.n_records:
                self._warn_ignored(x)
            return
        arm = river_key(key, self._scheduler.codec.max_key_bytes)
        reward, clipped = river_reward(arm, r, self._model, self.clip, self._default_model, self.reward)
        self.n_clipped += clipped
        self.n_records += 1
        self._clock.now += 1.0
        bad = self._scheduler.offer(arm, reward)  # type: ignore[arg-type]
        if isinstance(bad, InvalidRecord):
            self.n_refused += 1
            if bad.reason == "too_many_arms" and not self._cap_warned:  # once: the records of new keys are ignored
                self._cap_warned = True
                warnings.warn(f"OutlierArmDetector: key {short_repr(arm)} is beyond max_arms={self.max_arms} distinct "
                              "keys: the records of keys beyond it are ignored (counted in n_refused); raise max_arms "
                              "to examine them", RuntimeWarning, stacklevel=2)

    def _warn_ignored(self, x: dict) -> None:
        """Every one of the first records lacked the key or the reward feature: a misspelt name (``"Host"``
        for ``"host"``) ignores the whole stream without an error, which river's own checks (datasets with
        neither feature) need. Said once, as a warning."""
        lacks = " and ".join(f"{n}={f!r}" for n, f in (("key", self.key), ("reward", self.reward)) if x.get(f) is None)
        warnings.warn(f"OutlierArmDetector: none of the first {_IGNORED_WARN} records had a value for {lacks} (the "
                      f"last one's features: {sorted(map(str, x))[:12]}), so every one was ignored (counted "
                      "in n_ignored): is the feature's name misspelt?", RuntimeWarning, stacklevel=3)

    def score_one(self, x: dict) -> float:
        try:
            key = x.get(self.key)
        except AttributeError:
            raise TypeError(f"score_one takes a dict of features (river's x), got {type(x).__name__}") from None
        if key is None:
            return _UNKNOWN
        try:
            arm = river_key(key, self._scheduler.codec.max_key_bytes)
        except ValueError:  # a key learn_one refuses is no arm: nothing is known about it
            return _UNKNOWN
        v = self._verdict.get(arm)
        if v is not None:
            return v
        prev = self._final.get(arm)
        if prev is not None and (prev == 0.0 or prev == 1.0):
            return prev
        policy = self._scheduler.policy
        if policy is not None and arm in policy.index and arm in self._tally:
            return self._graded(arm, self._decision_cache(policy), policy)
        return prev if prev is not None else _UNKNOWN

    # -- scores --------------------------------------------------------------------------------
    def _decision_cache(self, policy: Policy, force: bool = False) -> dict[str, Any]:
        c = self._cache
        step = max(1, len(policy.arms) // 16)
        if not force and c is not None and policy.pulls - c["pulls"] < step:
            return c
        d: Decision = policy.decision()
        extra = d.extra if isinstance(d.extra, dict) else {}
        model = getattr(policy, "model", None)
        c = {"pulls": policy.pulls, "threshold": d.threshold,
             "radius": None if d.threshold_interval is None or d.threshold is None else
             (d.threshold_interval[1] - d.threshold_interval[0]) / 2.0,
             "lower": extra.get("lower_threshold"), "significance": extra.get("significance"),
             "interval": d.threshold_interval, "lower_interval": extra.get("lower_threshold_interval"),
             "model": model if isinstance(model, RewardModel) else None,
             "estimated": set(d.estimated_outliers)}
        self._cache = c
        return c

    def _graded(self, arm: str, c: dict[str, Any], policy: Policy) -> float:
        t = self._tally.get(arm)
        if t is None or t[0] == 0:
            return _UNKNOWN
        m, s = t
        theta, rth, model, sig = c["threshold"], c["radius"], c["model"], c["significance"]
        if theta is None or rth is None or model is None or sig is None:  # (cs: its keys' confidence sequences)
            g = evidence_margin(policy.arm_evidence(arm), c)
            return (0.75 if arm in c["estimated"] else 0.25) if g is None else (1.0 + g) / 2.0
        y = s / m
        width = model.radius(m, s, sig) + rth
        if not width > 0:
            return _UNKNOWN
        g = (y - theta) / width
        lo = c["lower"]
        if lo is not None:
            g = max(g, (lo - y) / width)
        g = min(_CLIP, max(-_CLIP, g))
        return (1.0 + g) / 2.0

    # -- what it found -------------------------------------------------------------------------
    @property
    def outliers(self) -> list[str]:
        """Keys whose current score is 1.0 (confident outliers), sorted."""
        arms = set(self._final) | set(self._verdict)
        return sorted(a for a in arms if self.score_one({self.key: a}) == 1.0)

    @property
    def n_samples(self) -> int:
        """Rewards the policy used (the rest of the records were skipped)."""
        return self._scheduler.used

    @property
    def episodes(self) -> int:
        """Episodes completed."""
        return self._scheduler.episodes_done

    # -- pickling (the scheduler holds callbacks; its state is plain data) ---------------------
    def __getstate__(self) -> dict[str, Any]:
        st = {k: v for k, v in self.__dict__.items() if k not in ("_scheduler", "_clock", "_cache", "_model")}
        st["_scheduler_state"] = self._scheduler.snapshot()
        st["_clock_now"] = self._clock.now
        c = self._cache
        st["_cache_state"] = None if c is None else {k: (sorted(v) if k == "estimated" else v)
                                                      for k, v in c.items() if k != "model"}
        return st

    def __setstate__(self, st: dict[str, Any]) -> None:
        st = dict(st)
        st.setdefault("clip", False)  # (a detector pickled before clip existed)
        st.setdefault("n_clipped", 0)
        sched_state = st.pop("_scheduler_state")
        clock_now = st.pop("_clock_now")
        cache = st.pop("_cache_state")
        self.__dict__.update(st)
        self._model = self._reward_model()
        self._clock = EventClock(clock_now)
        self._scheduler = self._make_scheduler()
        self._scheduler.restore(sched_state)
        if self._scheduler.policy is not None:
            self._tallying(self._scheduler.policy)
        self._cache = None
        if cache is not None and self._scheduler.policy is not None:
            model = getattr(self._scheduler.policy, "model", None)
            self._cache = dict(cache, estimated=set(cache["estimated"]),
                               model=model if isinstance(model, RewardModel) else None)


def evidence_margin(ev: dict[str, Any] | None, c: dict[str, Any]) -> float | None:
    """A key's margin ``g`` from its interval (``ev``: a policy's ``arm_evidence``, e.g. cs's confidence sequence)
    and the threshold's (``c``: the decision's ``threshold``, ``interval``, ``lower``, ``lower_interval``): its
    estimate minus the threshold over the two distances from each estimate to its interval's end facing the other
    (the radii of a symmetric interval), so ``|g| >= 1`` exactly when the intervals are apart (cs's rule); beyond the
    lower threshold when that is larger (two-sided); clipped to ``[-_CLIP, _CLIP]``. ``None`` when an interval is
    missing or not finite.

    >>> c = {"threshold": 0.5, "interval": [0.4, 0.6], "lower": None, "lower_interval": None}
    >>> round(evidence_margin({"estimate": 0.6, "interval": [0.55, 0.7]}, c), 3)  # 0.1 / (0.05 + 0.1)
    0.667
    >>> evidence_margin({"estimate": 0.7, "interval": [0.65, 0.8]}, c), evidence_margin(None, c)  # apart: clipped
    (0.98, None)
    """
    iv, theta, th = (ev or {}).get("interval"), c.get("threshold"), c.get("interval")
    if iv is None or theta is None or th is None or ev is None or ev.get("estimate") is None:
        return None
    y, lo, hi = ev["estimate"], iv[0], iv[1]

    def above(t: float, t_lo: float, t_hi: float) -> float | None:
        width = (y - lo) + (t_hi - t) if y >= t else (hi - y) + (t - t_lo)
        return (y - t) / width if width > 0 and math.isfinite(width) else None

    g = above(theta, th[0], th[1])
    if c.get("lower") is not None and c.get("lower_interval") is not None:
        g_low = above(c["lower"], *c["lower_interval"])
        if g_low is not None:
            g = -g_low if g is None else max(g, -g_low)
    return None if g is None else min(_CLIP, max(-_CLIP, g))


def river_reward(arm: str, r: Any, model: RewardModel | None, clip: bool,
                 default_model: Callable[[], bool], feature: str = "reward") -> tuple[float, bool]:
    """A record's reward by the daemon's rules (module docstring): the float, and whether ``clip`` took it as
    an end of the bounded ``model``'s range; ``ValueError`` naming the key and the value otherwise (a hint at
    the other models when ``default_model()`` says the model is the default: asked on that error only)."""
    if isinstance(r, (bool, np.bool_)):  # 1 or 0, as the daemon reads a JSON boolean (runtime.codec)
        if model is not None and not model.of_rates():
            raise ValueError(f"reward of key {arm!r} is a boolean ({bool(r)}): True and False are the rewards 1 and 0 "
                             f"under a model of rates (the default, bernoulli, or bounded on [0, 1]), not the "
                             f"{model.name} model")
        return (1.0 if r else 0.0), False
    if isinstance(r, str) or not isinstance(r, (numbers.Real, decimal.Decimal)):  # (a database's NUMERIC: Decimal)
        raise ValueError(f"reward of key {arm!r} is not a number: {short_repr(r)}" + (
            f" (river.stream.iter_csv reads every field as text: converters={{{feature!r}: float}} reads it as a "
            "number)" if isinstance(r, str) and _NUMBER_TEXT.fullmatch(r.strip()) else ""))
    try:
        x = float(r)
    except (OverflowError, ValueError):  # an integer beyond the floats (as the daemon reads it), Decimal('sNaN')
        raise ValueError(f"reward of key {arm!r} is not finite: {short_repr(r)}") from None
    if not math.isfinite(x):
        raise ValueError(f"reward of key {arm!r} is not finite: {r!r}")
    clipped = False
    if clip and isinstance(model, BoundedModel) and not model.low <= x <= model.high:
        x, clipped = (model.low if x < model.low else model.high), True
    if model is not None:
        try:
            x = model.check(arm, x)
        except ValueError as e:
            if default_model():
                raise ValueError(f"{e} (the default; other rewards: policy_params={{'reward_model': 'bounded', "
                                 f"'reward_range': (lo, hi)}} -- with clip=True for values beyond it --, or "
                                 f"'subgaussian' / 'heavy_tailed' with their model_params)") from None
            if isinstance(model, BoundedModel):
                raise ValueError(f"{e} (clip=True takes it as the range's end)") from None
            raise
    return x, clipped


def river_key(key: Any, limit: int) -> str:
    """The arm of a record's key, by the daemon's rule: a string (or UTF-8 bytes, as a Kafka key) or an
    integer (its digits, as a JSONL line's integer key); ``ValueError`` for any other key -- a bool, a
    float, NaN, a dict (the daemon refuses them as ``key_missing``: an arm named ``True`` would be a
    silent guess) -- for an empty key, one that is not UTF-8, or one over ``limit`` bytes."""
    if isinstance(key, str):
        arm = key
    elif isinstance(key, (bytes, bytearray)):
        try:
            arm = bytes(key).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"key {bytes(key[:64])!r} is not UTF-8") from None
    elif isinstance(key, numbers.Integral) and not isinstance(key, (bool, np.bool_)):
        arm = str(int(key))
    else:
        got = short_repr(key) + ("" if isinstance(key, (dict, list, tuple)) else f" (a {type(key).__name__})")
        raise ValueError(f"a key must be a string or an integer, as for the daemon; got {got}")
    if not arm:
        raise ValueError("key is empty")
    try:
        size = len(arm.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"key {arm[:64]!r} is not valid text (a lone surrogate): it has no UTF-8") from None
    if size > limit:
        raise ValueError(f"key {arm[:64]!r}... is longer than {limit} bytes")
    return arm


#: a number written as text (a CSV cell river.stream.iter_csv gives as a string)
_NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")

#: the ``policy_params`` key of a flag whose name differs (UCBE's ``--b``)
_DEST = {"b": "ucbe_b"}


def params_error(e: Exception, policy: Any, policy_params: Any) -> ValueError:
    """``e`` of the registry or the policy, in the detector's words: the registry speaks in CLI flags
    (``--moment-bound B``, ``--model-param sigma=S``); the error names the ``policy_params`` key instead."""
    said = re.sub(r"--model-param (\w+)=([^\s)]+)", r"policy_params['model_params']={'\1': \2}", str(e))
    said = re.sub(r"--policy ([a-z][\w-]*)", r"policy='\1'", said)  # (the detector's own argument)
    said = re.sub(r"--policy\b", "policy=", said)
    said = re.sub(r"--([a-z][a-z0-9-]*)", lambda m: f"policy_params['{_DEST.get(m.group(1), m.group(1).replace('-', '_'))}']",
                  said)
    if "unknown setting" in said:
        said += " (policy_params takes streamarms simulate's options: k, delta, reward_model, model_params, ...)"
    name = policy if isinstance(policy, str) else getattr(policy, "__name__", policy)
    return ValueError(f"policy {name!r} with policy_params={policy_params!r}: {said}")

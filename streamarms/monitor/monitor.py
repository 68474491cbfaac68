"""The continuous monitor: every key classified against its group's k-sigma threshold, forever.

No episodes: a key joins when it first appears; each reward updates its segment sequence, its restart
rule and its group's threshold track, then reclassifies it. A key is ``outlier`` when its interval lies
entirely above its group's threshold interval, ``normal`` when entirely below, ``undecided`` otherwise.
Alerts are the transitions of a standing flag: ``outlier`` when a key not flagged is classified outlier,
``cleared`` when a flagged key is classified normal (``undecided`` changes nothing). Each alert carries
its evidence and the stream time (the record's timestamp) at which it was raised.

False-alarm guarantee
---------------------
A *false alert* is an ``outlier`` alert on a key whose mean is ``<= theta`` of its group, or a ``cleared``
alert on a key whose mean is ``> theta``. Suppose the means of a group's keys do not change. Then:

* every *segment* of a key (its sequence since its last restart) starts at a stopping time and sees fresh
  iid rewards (the reward that triggers a restart belongs to no segment), so, given that it starts, it
  ever misses the key's mean with probability ``<= alpha``; every *epoch* of the group starts at a
  stopping time, and its threshold interval ever misses ``theta`` with probability ``<= alpha_theta``
  (:mod:`.group`);
* a false ``outlier`` alert needs the key's interval above the threshold's interval while ``mean <=
  theta``, so at that moment the current segment or the current epoch misses; likewise for ``cleared``.

Summing over the segments and epochs that start (each term conditional on its start),

    **P(any false alert in a group) <= alpha * E[S] + alpha_theta * E[E]**,

with ``S`` the number of segments of the group's keys and ``E`` the number of its epochs. A key's
segments restart only on its detector's false restarts, ``<= alpha_cd`` per sample in expectation
(:mod:`.restart`), and epochs start at each join, each restart and each drop (or return) of a silent
key: with ``n`` keys that never go silent and ``T`` records of the group, ``E[S] <= n + alpha_cd T`` and
``E[E] <= n + alpha_cd T``. E.g. the defaults (``alpha =
alpha_theta = 1e-3``, ``alpha_cd = 1e-6``), 30 keys and 1e7 records: ``P(any false alert) <= 0.08``.
After a real change, the same holds from the restart that follows it.

Cost per reward: O(1) amortised (two sequence updates, a Shiryaev-Roberts update over a fixed grid, an
O(1) interval test; interval evaluations and track records only at the track's geometric count levels).

>>> import random
>>> rng = random.Random(7)
>>> mon = ContinuousMonitor(k=2.0)
>>> rates = {f"k{i}": 0.05 + 0.01 * i for i in range(20)}
>>> alerts = []
>>> for t in range(60000):
...     key = f"k{t % 20}"
...     p = 0.8 if (key == "k0" and 20000 <= t < 40000) else rates[key]
...     alerts += mon.update(key, float(rng.random() < p), time=t)
>>> [(a["key"], a["kind"]) for a in alerts]
[('k0', 'outlier'), ('k0', 'cleared')]
>>> alerts[0]["time"] > 20000, alerts[1]["time"] > 40000
(True, True)
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..confidence import sequence_for
from ..confidence.threshold import ThresholdTrack
from ..models import RewardModel, make_model, model_from_dict
from .group import ThresholdGroup
from .key import NORMAL, OUTLIER, UNDECIDED, KeyState
from .restart import EDetector, WindowRestart

__all__ = ["ContinuousMonitor", "DEFAULT_GROUP"]

DEFAULT_GROUP = "default"
_LEVELS = ThresholdTrack.levels


class ContinuousMonitor:
    """Continuous k-sigma outlier monitor over a never-ending keyed stream (module docstring).

    ``k``: the threshold is ``mu + k sigma`` of the group's key means. ``alpha``: level of each key's
    segment sequence; ``alpha_theta``: of each group epoch's threshold interval; ``alpha_cd``: false
    restarts per sample of the e-detector. ``restart``: ``"edetector"`` (default, chosen by
    ``benchmarks/continuous.py``), ``"window"`` (every ``window`` samples) or ``"none"``.
    ``key_ttl``: a key with no record for this many records of its group leaves the group's threshold
    until its next record (``None``: never; then one silent key freezes its group's threshold).
    ``model``: a bounded reward model (``bernoulli`` or ``bounded``).

    >>> mon = ContinuousMonitor()
    >>> mon.update("a", 2.0, time=1.0)
    Traceback (most recent call last):
    ...
    ValueError: reward for arm 'a' is 2.0, outside [0.0, 1.0]
    >>> mon.keys
    {}
    """

    def __init__(self, *, k: float = 2.0, alpha: float = 1e-3, alpha_theta: float = 1e-3,
                 alpha_cd: float = 1e-6, restart: str = "edetector", window: int = 4096,
                 key_ttl: int | None = 1_000_000, model: str | RewardModel = "bernoulli") -> None:
        for name, a in (("alpha", alpha), ("alpha_theta", alpha_theta), ("alpha_cd", alpha_cd)):
            if not (isinstance(a, (int, float)) and 0.0 < a < 1.0):
                raise ValueError(f"{name} must be in (0, 1), got {a!r}")
        if not (isinstance(k, (int, float)) and math.isfinite(k) and k > 0):
            raise ValueError(f"k must be a positive number, got {k!r}")
        if restart not in ("edetector", "window", "none"):
            raise ValueError(f"restart must be 'edetector', 'window' or 'none', got {restart!r}")
        if not (isinstance(window, int) and window >= 1):
            raise ValueError(f"window must be a positive integer, got {window!r}")
        if key_ttl is not None and not (isinstance(key_ttl, int) and key_ttl >= 1):
            raise ValueError(f"key_ttl must be a positive number of records or None, got {key_ttl!r}")
        self._set_model(make_model(model))
        self.k, self.alpha, self.alpha_theta, self.alpha_cd = float(k), float(alpha), float(alpha_theta), float(alpha_cd)
        self.restart, self.window, self.key_ttl = restart, window, key_ttl
        self.keys: dict[str, KeyState] = {}
        self.groups: dict[str, ThresholdGroup] = {}
        self.records = 0
        self.counts = {"outlier": 0, "cleared": 0, "restarts": 0, "epochs": 0}

    # -- the hot path ----------------------------------------------------------------------------
    def update(self, key: str, reward: Any, *, time: float | None = None,
               group: str = DEFAULT_GROUP) -> list[dict[str, Any]]:
        """Ingest one record of ``key`` (in ``group``) at stream time ``time``; return the alerts raised.

        A bad reward raises ``ValueError`` naming the key and the value and changes nothing.
        A key stays in the group it joined with (a different ``group`` later is a ``ValueError``).
        """
        ks = self.keys.get(key)
        if ks is None:
            ks = self._new_key(key, group)
            x = ks.segment.check(reward)  # validate before the key is registered
            self._join(ks, time)
        else:
            if ks.group != group:
                raise ValueError(f"key {key!r} belongs to group {ks.group!r}, got a record for group {group!r}")
            x = ks.segment.check(reward)
        self.records += 1
        ks.samples += 1
        g = self.groups[ks.group]
        if ks.key not in g:  # dropped for silence: back in, a new epoch
            g.join(ks.key, time)
            self.counts["epochs"] += 1
        if g.touch(ks.key, time):
            self.counts["epochs"] += 1
        if ks.rule is not None and ks.rule.observe(x, *ks.base):
            self._restart_key(ks, g, time)
            return []  # the triggering reward belongs to no segment (module docstring)
        seg = ks.segment
        seg._update(x)
        if seg.m in _LEVELS:
            ks.base = seg.interval()
        ecs = ks.epoch_cs
        if ecs is None or ks.epoch != g.epoch:   # the key's first reward of this epoch
            ecs = sequence_for(self.model, g.alpha_member, ks.key)
            ks.epoch, ks.epoch_cs = g.epoch, ecs
        ecs._update(x)
        if ecs.m in _LEVELS:
            g.record(ecs.m, ecs.s, *ecs.interval())
        return self._classify(ks, g, time)

    def _classify(self, ks: KeyState, g: ThresholdGroup, time: float | None) -> list[dict[str, Any]]:
        th_lo, th_hi = g.interval()
        seg = ks.segment
        if seg.above(th_hi):
            ks.state = OUTLIER
            if not ks.flagged:
                ks.flagged = True
                return [self._alert("outlier", ks, g, time)]
        elif seg.below(th_lo):
            ks.state = NORMAL
            if ks.flagged:
                ks.flagged = False
                return [self._alert("cleared", ks, g, time)]
        else:
            ks.state = UNDECIDED
        return []

    def _set_model(self, model: RewardModel) -> None:
        if model.low is None or model.high is None:
            raise ValueError(f"the continuous monitor needs a bounded reward model, got {model.name!r}")
        self.model = model
        self._low, self._high = model.low, model.high   # the model's finite reward range

    # -- joins and restarts ----------------------------------------------------------------------
    def _new_key(self, key: str, group: str) -> KeyState:
        if not isinstance(key, str) or not isinstance(group, str):
            raise ValueError(f"key and group must be strings, got {key!r} / {group!r}")
        rule: EDetector | WindowRestart | None
        if self.restart == "edetector":
            rule = EDetector(self.alpha_cd, low=self._low, high=self._high)
        elif self.restart == "window":
            rule = WindowRestart(self.window)
        else:
            rule = None
        return KeyState(key, group, sequence_for(self.model, self.alpha, key), rule)

    def _join(self, ks: KeyState, time: float | None) -> None:
        self.keys[ks.key] = ks
        g = self.groups.get(ks.group)
        if g is None:
            g = self.groups[ks.group] = ThresholdGroup(ks.group, k=self.k, alpha_theta=self.alpha_theta,
                                                       low=self._low, high=self._high,
                                                       ttl=self.key_ttl)
        ks.segment_since = time
        g.join(ks.key, time)
        self.counts["epochs"] += 1

    def _restart_key(self, ks: KeyState, g: ThresholdGroup, time: float | None) -> None:
        ks.segment = sequence_for(self.model, self.alpha, ks.key)
        ks.base = (self._low, self._high)
        ks.restarts += 1
        ks.segment_since = time
        ks.state = UNDECIDED
        self.counts["restarts"] += 1
        g.restart(time)
        self.counts["epochs"] += 1

    # -- reading ---------------------------------------------------------------------------------
    def evidence(self, key: str) -> dict[str, Any]:
        """The key's current evidence: its interval, its group's threshold interval, the margin in units
        of the two radii (the gap between the intervals over the sum of their half-widths: positive when
        they are disjoint; ``None`` while the threshold is unknown), the samples behind each. JSON-able
        (strict: no NaN or infinity)."""
        ks = self.keys.get(key)
        if ks is None:
            raise KeyError(f"unknown key {key!r}")
        g = self.groups[ks.group]
        lo, hi = ks.segment.interval() if ks.segment.m else (self._low, self._high)
        th_lo, th_hi = g.interval()
        radii = (hi - lo) / 2.0 + (th_hi - th_lo) / 2.0
        gap = max(lo - th_hi, th_lo - hi)
        margin = gap / radii if math.isfinite(gap) and math.isfinite(radii) and radii > 0 else None
        th = g.estimate()
        return {"key": ks.key, "group": ks.group, "state": ks.state, "flagged": ks.flagged,
                "estimate": ks.segment.mean if ks.segment.m else None, "interval": [lo, hi], "samples": ks.segment.m,
                "samples_total": ks.samples, "segment_since": ks.segment_since,
                "threshold": th if math.isfinite(th) else None,
                "threshold_interval": [th_lo if math.isfinite(th_lo) else None, th_hi if math.isfinite(th_hi) else None],
                "threshold_samples": g.track.m_theta if g.track is not None else 0, "epoch_since": g.since,
                "margin": margin, "k": self.k, "alpha": self.alpha, "alpha_theta": self.alpha_theta}

    def _alert(self, kind: str, ks: KeyState, g: ThresholdGroup, time: float | None) -> dict[str, Any]:
        self.counts[kind] += 1
        a = self.evidence(ks.key)
        a["kind"] = kind
        a["time"] = time
        a["record"] = self.records
        a["alert_id"] = f"{ks.key}:{kind}:{self.records}"  # deterministic: dedup after redelivery
        return a

    # -- persistence -----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-able data; :meth:`restore` continues bit for bit."""
        return {"k": self.k, "alpha": self.alpha, "alpha_theta": self.alpha_theta, "alpha_cd": self.alpha_cd,
                "restart": self.restart, "window": self.window, "key_ttl": self.key_ttl,
                "model": self.model.to_dict(),
                "records": self.records, "counts": dict(self.counts),
                "keys": [ks.snapshot() for ks in self.keys.values()],
                "groups": [g.snapshot() for g in self.groups.values()]}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> ContinuousMonitor:
        obj = cls.__new__(cls)
        obj.k, obj.alpha, obj.alpha_theta, obj.alpha_cd = state["k"], state["alpha"], state["alpha_theta"], state["alpha_cd"]
        obj.restart, obj.window, obj.key_ttl = state["restart"], state["window"], state["key_ttl"]
        obj._set_model(model_from_dict(state["model"]))
        obj.records, obj.counts = state["records"], dict(state["counts"])
        obj.keys = {d["key"]: KeyState.restore(d) for d in state["keys"]}
        obj.groups = {d["name"]: ThresholdGroup.restore(d) for d in state["groups"]}
        return obj

    def dumps(self) -> str:
        return json.dumps(self.snapshot())

    @classmethod
    def loads(cls, text: str) -> ContinuousMonitor:
        return cls.restore(json.loads(text))

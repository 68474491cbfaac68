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
import numbers
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from ..confidence import ConfidenceSequence
from ..confidence.base import interval_margin
from ..confidence.restored import whole
from ..confidence.threshold import ThresholdTrack
from ..json_stream import lazy_default
from ..models import RewardModel, make_model, model_from_dict
from ..validation import check_k
from .columns import nan_none
from .group import ThresholdGroup
from .key import KeyState
from .restart import EDetector, WindowRestart
from .rows import key_rows, load_rows, members_by_seen
from .table import STATES, KeyTable, KeyView

__all__ = ["ContinuousMonitor", "DEFAULT_GROUP"]

DEFAULT_GROUP = "default"
_LEVELS = ThresholdTrack.levels
_UNDECIDED, _OUTLIER, _NORMAL = range(3)  # the table's state codes (STATES)
_NAN = math.nan


def _check_time(time: Any) -> None:
    """``ValueError`` unless ``time`` is a finite number of seconds (a record's stream time)."""
    if isinstance(time, bool) or not isinstance(time, (int, float)) or not math.isfinite(time):
        raise ValueError(f"time must be a finite number of seconds or None, got {time!r}")


def waiting_for(g: ThresholdGroup) -> dict[str, Any]:
    """Why group ``g`` has no threshold interval yet: its members (fewer than 2: a second key is needed)
    and the quietest of them, which the threshold most likely waits for, with what ends the wait."""
    if g.n < 2:
        return {"members": g.n, "reason": "the threshold needs records of at least 2 keys of the group"}
    return {"members": g.n, "quietest": g.quietest(),
            "reason": "the threshold needs records of every member; one with no record for --silence-records "
                      f"({f'{g.ttl:,}' if g.ttl is not None else 'off'}) of the group's records leaves it"}


def _positive_int(v: Any, what: str) -> int:
    """``v`` as an int when it is an integer >= 1 (numpy's too; not a bool), else ``ValueError``: ``what, got v``."""
    if isinstance(v, bool) or not (isinstance(v, numbers.Integral) and int(v) >= 1):
        raise ValueError(f"{what}, got {v!r}")
    return int(v)


def _settings(k: Any, alpha: Any, alpha_theta: Any, alpha_cd: Any, restart: Any, window: Any, key_ttl: Any,
              forget_silent: Any) -> tuple[Any, ...]:
    """The monitor's settings checked (``ValueError`` naming one) and as it keeps them: a constructor's, or a
    snapshot's (a k of -1 or "x" was restored as it was, and failed the records after)."""
    for name, a in (("alpha", alpha), ("alpha_theta", alpha_theta), ("alpha_cd", alpha_cd)):
        if not (isinstance(a, (int, float)) and 0.0 < a < 1.0):
            raise ValueError(f"{name} must be in (0, 1), got {a!r}")
    if restart not in ("edetector", "window", "none"):
        raise ValueError(f"restart must be 'edetector', 'window' or 'none', got {restart!r}")
    window = _positive_int(window, "window must be a positive integer")  # (numpy's integers too)
    key_ttl = None if key_ttl is None else _positive_int(key_ttl, "key_ttl must be a positive number of records or None")
    if not isinstance(forget_silent, bool):  # ("no" was true)
        raise ValueError(f"forget_silent must be True or False, got {forget_silent!r}")
    return check_k(k), float(alpha), float(alpha_theta), float(alpha_cd), restart, window, key_ttl, forget_silent


class ContinuousMonitor:
    """Continuous k-sigma outlier monitor over a never-ending keyed stream (module docstring).

    ``k``: the threshold is ``mu + k sigma`` of the group's key means. ``alpha``: level of each key's
    segment sequence; ``alpha_theta``: of each group epoch's threshold interval; ``alpha_cd``: false
    restarts per sample of the e-detector. ``restart``: ``"edetector"`` (default, chosen by
    ``benchmarks/continuous.py``), ``"window"`` (every ``window`` samples) or ``"none"``.
    ``forget_silent``: a key dropped for silence (``key_ttl``) is also forgotten -- its evidence dropped
    and its slot freed for a new key (default ``False``: its evidence is kept; it rejoins the threshold
    with its next record and continues its segment). A forgotten key's next record makes it a new key.
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
                 key_ttl: int | None = 1_000_000, model: str | RewardModel = "bernoulli",
                 forget_silent: bool = False) -> None:
        (self.k, self.alpha, self.alpha_theta, self.alpha_cd, self.restart, self.window, self.key_ttl,
         self.forget_silent) = _settings(k, alpha, alpha_theta, alpha_cd, restart, window, key_ttl, forget_silent)
        self._set_model(make_model(model))
        self._forgotten = 0  # keys forgotten (with records: the state version of a snapshot's rows)
        #: keys forgotten since a runner last emptied this list (not state: the runner drops its own
        #: per-key entries for them at once, so that a forgotten key no longer counts anywhere)
        self.forgotten: list[str] = []
        self._new_table()
        self.groups: dict[str, ThresholdGroup] = {}
        self.records = 0
        self.counts = {"outlier": 0, "cleared": 0, "restarts": 0, "epochs": 0}

    def _new_table(self) -> None:
        rule: EDetector | WindowRestart | None
        if self.restart == "edetector":
            rule = EDetector(self.alpha_cd, low=self._low, high=self._high)
        elif self.restart == "window":
            rule = WindowRestart(self.window)
        else:
            rule = None
        self.table = KeyTable(self.model, alpha=self.alpha, rule=rule)

    @property
    def keys(self) -> KeyView:
        """The keys as :class:`~.key.KeyState` objects, made on access (copies; the state is in
        :attr:`table`)."""
        return KeyView(self.table)

    # -- the hot path ----------------------------------------------------------------------------
    def update(self, key: str, reward: Any, *, time: float | None = None,
               group: str = DEFAULT_GROUP) -> list[dict[str, Any]]:
        """Ingest one record of ``key`` (in ``group``) at stream time ``time``; return the alerts raised.

        A bad reward raises ``ValueError`` naming the key and the value and changes nothing.
        A key stays in the group it joined with (a different ``group`` later is a ``ValueError``).
        """
        if time is not None and (type(time) is not float or not math.isfinite(time)):
            _check_time(time)
        t = self.table
        sb = t.seg
        seg = sb.proto
        i = t.slot.get(key)
        if i is None:
            if not isinstance(key, str) or not isinstance(group, str) or not key or not group:
                raise ValueError(f"key and group must be non-empty strings, got {key!r} / {group!r}")
            x = self._check(key, reward)  # validate before the key is registered
            i = t.add(key, group)
            self._join(i, key, group, time)
        else:
            if t.group_names[t.group[i]] != group:
                raise ValueError(f"key {key!r} belongs to group {t.group_names[t.group[i]]!r}, got a record "
                                 f"for group {group!r}")
            try:
                x = seg.check(reward)
            except ValueError:
                x = self._check(key, reward)  # raises, naming the key
        self.records += 1
        t.samples[i] += 1
        g = self.groups[group]
        if key not in g:  # dropped for silence: back in, a new epoch
            g.join(key, time)
            self.counts["epochs"] += 1
        dropped = g.touch(key, time)
        if dropped:
            self.counts["epochs"] += 1
            if self.forget_silent:
                for k in dropped:  # never this record's key: it was just seen
                    t.remove(k)
                self.forgotten.extend(dropped)
                self._forgotten += 1
        rule = t.rule
        if rule is not None and rule.observe(i, x, t.base_lo[i], t.base_hi[i]):
            self._restart_key(i, g, time)
            return []  # the triggering reward belongs to no segment (module docstring)
        sb.load(i, seg)
        seg._update(x)
        if seg.m in _LEVELS:
            t.base_lo[i], t.base_hi[i] = seg.interval()
        sb.store(i, seg)
        eb = t.ecs
        ea = t.ealpha[i]
        if t.epoch[i] != g.epoch or ea != ea:   # the key's first reward of this epoch (or ever: NaN)
            ea = t.ealpha[i] = g.alpha_member
            t.epoch[i] = g.epoch
            eb.reset(i)
        ecs = eb.levels.get(ea)
        ecs = eb.load(i, ecs if ecs is not None else eb.scratch(ea))
        ecs._update(x)
        if ecs.m in _LEVELS:
            g.record(ecs.m, ecs.s, *ecs.interval())
        eb.store(i, ecs)
        return self._classify(i, key, seg, g, time)

    def _check(self, key: str, reward: Any) -> float:
        """The reward as a float, or the sequence's ``ValueError`` naming the key."""
        sc = self.table.seg.proto
        try:
            return sc.check(reward)
        except ValueError:
            sc.arm = key
            try:
                return sc.check(reward)
            finally:
                sc.arm = ""

    def _classify(self, i: int, key: str, seg: ConfidenceSequence, g: ThresholdGroup,
                  time: float | None) -> list[dict[str, Any]]:
        th_lo, th_hi = g.interval()
        t = self.table
        if seg.above(th_hi):
            t.state[i] = _OUTLIER
            if not t.flagged[i]:
                t.flagged[i] = 1
                return [self._alert("outlier", key, time)]
        elif seg.below(th_lo):
            t.state[i] = _NORMAL
            if t.flagged[i]:
                t.flagged[i] = 0
                return [self._alert("cleared", key, time)]
        else:
            t.state[i] = _UNDECIDED
        return []

    def _set_model(self, model: RewardModel) -> None:
        if model.low is None or model.high is None:
            raise ValueError(f"the continuous monitor needs a bounded reward model, got {model.name!r}")
        self.model = model
        self._low, self._high = model.low, model.high   # the model's finite reward range

    # -- joins, restarts, removals ---------------------------------------------------------------
    def _join(self, i: int, key: str, group: str, time: float | None) -> None:
        g = self.groups.get(group)
        if g is None:
            g = self.groups[group] = ThresholdGroup(group, k=self.k, alpha_theta=self.alpha_theta,
                                                    low=self._low, high=self._high, ttl=self.key_ttl)
        self.table.since[i] = _NAN if time is None else time
        g.join(key, time)
        self.counts["epochs"] += 1

    def _restart_key(self, i: int, g: ThresholdGroup, time: float | None) -> None:
        t = self.table
        t.seg.reset(i)
        t.base_lo[i], t.base_hi[i] = self._low, self._high
        t.restarts[i] += 1
        t.since[i] = _NAN if time is None else time
        t.state[i] = _UNDECIDED
        self.counts["restarts"] += 1
        g.restart(time)
        self.counts["epochs"] += 1

    def forget(self, key: str, time: float | None = None) -> None:
        """Drop ``key`` and its evidence (its slot is reused by the next new key); if it was a member of
        its group's threshold, a new epoch starts without it. Its next record makes it a new key.
        ``KeyError`` for an unknown key."""
        t = self.table
        i = t.slot[key]
        g = self.groups[t.group_names[t.group[i]]]
        if g.leave(key, time):
            self.counts["epochs"] += 1
        t.remove(key)
        self.forgotten.append(key)
        self._forgotten += 1

    # -- reading ---------------------------------------------------------------------------------
    def classes(self) -> Iterator[tuple[str, str, str, bool]]:
        """``(key, group, state, flagged)`` of every key, from the columns (no object per key)."""
        t = self.table
        names, grp, st, fl = t.group_names, t.group, t.state, t.flagged
        for key, i in t.slot.items():
            yield key, names[grp[i]], STATES[st[i]], bool(fl[i])

    def evidence(self, key: str) -> dict[str, Any]:
        """The key's current evidence: its interval, its group's threshold interval, the margin in units
        of the two radii (the gap between the intervals over the sum of their half-widths: positive when
        they are disjoint; ``None`` while the threshold is unknown), the samples behind each. JSON-able
        (strict: no NaN or infinity)."""
        t = self.table
        i = t.slot.get(key)
        if i is None:
            raise KeyError(f"unknown key {key!r}")
        group = t.group_names[t.group[i]]
        g = self.groups[group]
        sb = t.seg
        seg = sb.load(i, sb.proto)
        lo, hi = seg.interval() if seg.m else (self._low, self._high)
        sb.store(i, seg)  # the running intersection may have narrowed
        th_lo, th_hi = g.interval()
        margin = interval_margin((lo, hi), (th_lo, th_hi))
        th = g.estimate()
        out = {"key": key, "group": group, "state": STATES[t.state[i]], "flagged": bool(t.flagged[i]),
               "estimate": seg.mean if seg.m else None, "interval": [lo, hi], "samples": seg.m,
               "samples_total": t.samples[i], "segment_since": nan_none(t.since[i]),
               "threshold": th if math.isfinite(th) else None,
               "threshold_interval": [th_lo if math.isfinite(th_lo) else None, th_hi if math.isfinite(th_hi) else None],
               "threshold_samples": g.track.m_theta if g.track is not None else 0, "epoch_since": g.since,
               "margin": margin, "k": self.k, "alpha": self.alpha, "alpha_theta": self.alpha_theta}
        if not (math.isfinite(th_lo) and math.isfinite(th_hi)):  # no band yet: whom it waits for
            out["threshold_waiting_for"] = waiting_for(g)
        if seg.m and not lo <= seg.mean <= hi:  # (read as a bug where nothing says why)
            out["note"] = ("the estimate lies outside the interval: the interval is the intersection of the key's "
                           "intervals at every count since its segment began (all valid at once), and a run of records "
                           "early in the segment left its " + ("lower" if seg.mean < lo else "upper") + " end where the "
                           "mean has since moved away from; a change of the key's rate beyond it starts a new segment")
        return out

    def _alert(self, kind: str, key: str, time: float | None) -> dict[str, Any]:
        self.counts[kind] += 1
        a = self.evidence(key)
        a["kind"] = kind
        a["time"] = time
        a["record"] = self.records
        a["alert_id"] = f"{key}:{kind}:{self.records}"  # deterministic: dedup after redelivery
        return a

    # -- persistence -----------------------------------------------------------------------------
    def _version(self) -> tuple[int, int]:
        """Changes with every change of the keys' columns (a record taken, a key forgotten)."""
        return self.records, self._forgotten

    def settings(self) -> dict[str, Any]:
        """The settings that define the statistics (the levels, the threshold, the restarts, the reward
        model): a run that resumes a checkpoint must have the same. ``key_ttl`` and ``forget_silent`` are
        not among them (:meth:`set_silence`).

        >>> ContinuousMonitor(k=2.5).settings()["k"]
        2.5
        """
        return {"k": self.k, "alpha": self.alpha, "alpha_theta": self.alpha_theta, "alpha_cd": self.alpha_cd,
                "restart": self.restart, "window": self.window, "model": self.model.to_dict()}

    def set_silence(self, key_ttl: int | None, forget_silent: bool) -> None:
        """Change how silent keys are handled (a resumed run's ``--silence-records``, ``--forget-silent``):
        every group drops a member silent for ``key_ttl`` of its records from its next record on (a new
        epoch, as any drop), and a dropped key is forgotten if ``forget_silent``. Membership only: no
        sequence's level changes, so the guarantee is the same as with the settings from the start.

        >>> mon = ContinuousMonitor()
        >>> mon.set_silence(5000, True); (mon.key_ttl, mon.forget_silent)
        (5000, True)
        """
        if key_ttl is not None and (isinstance(key_ttl, bool) or not (isinstance(key_ttl, int) and key_ttl >= 1)):
            raise ValueError(f"key_ttl must be a positive number of records or None, got {key_ttl!r}")
        self.key_ttl, self.forget_silent = key_ttl, bool(forget_silent)
        for g in self.groups.values():
            g.ttl = key_ttl

    def snapshot(self, *, rows: bool = True) -> dict[str, Any]:
        """The whole state as data; :meth:`restore` continues bit for bit. (``forget_silent`` appears only
        when set: the snapshots of the default monitor keep their format.)

        ``rows`` (default): the keys as binary rows (:mod:`.rows`: a few bytes of references a key until
        encoded; encode it -- a checkpoint store's ``save``, :meth:`dumps`, or ``json.dumps(snap,
        default=streamarms.json_stream.lazy_default)`` -- before the next :meth:`update`); ``groups`` by
        name, and a member's last record in its group (``seen``) in its row, so that a chunked store
        rewrites only the rows of the keys with records (the group's order of members, which every record
        changes, is restored by sorting them by ``seen``). ``rows=False``: a dict per key (the format of
        earlier versions, plain JSON data; fine for a few thousand keys).
        """
        out = {"k": self.k, "alpha": self.alpha, "alpha_theta": self.alpha_theta, "alpha_cd": self.alpha_cd,
               "restart": self.restart, "window": self.window, "key_ttl": self.key_ttl,
               "model": self.model.to_dict(), "records": self.records, "counts": dict(self.counts)}
        t = self.table
        if rows:
            seen = array("q", [-1]) * len(t.group)
            groups = {}
            for name, g in self.groups.items():
                if g.seen_in_order():
                    slot = t.slot
                    for k, v in g.last_seen.items():
                        seen[slot[k]] = v
                    groups[name] = g.snapshot(members=False)
                else:  # not from update() (a group fed by hand): its order as two lists
                    groups[name] = g.snapshot(compact=True)
            out["keys"], out["groups"] = key_rows(t, self._version, [("seen", seen)]), groups
        else:
            out["keys"] = [t.materialise(i, key).snapshot() for key, i in t.slot.items()]
            out["groups"] = [g.snapshot() for g in self.groups.values()]
        if self.forget_silent:
            out["forget_silent"] = True
        return out

    @classmethod
    def restore(cls, state: dict[str, Any]) -> ContinuousMonitor:
        """From either format of :meth:`snapshot`; ``ValueError`` (or ``KeyError``/``TypeError`` for a
        document of another shape) if it does not fit: nothing is half restored."""
        obj = cls.__new__(cls)
        try:
            (obj.k, obj.alpha, obj.alpha_theta, obj.alpha_cd, obj.restart, obj.window, obj.key_ttl,
             obj.forget_silent) = _settings(state["k"], state["alpha"], state["alpha_theta"], state["alpha_cd"],
                                            state["restart"], state["window"], state["key_ttl"],
                                            state.get("forget_silent", False))
        except ValueError as e:
            raise ValueError(f"the monitor's settings in the snapshot: {e}") from None
        obj._set_model(model_from_dict(state["model"]))
        obj.records = whole("the monitor's snapshot", "records", state["records"])
        obj.counts = {c: whole("the monitor's snapshot", f"counts {c}", n) for c, n in dict(state["counts"]).items()}
        obj._forgotten = 0
        obj.forgotten = []
        obj._new_table()
        keys, groups = state["keys"], state["groups"]
        obj.groups = {}
        if isinstance(keys, dict):
            seen = load_rows(obj.table, keys, ("seen",))["seen"]
            members = members_by_seen(obj.table, seen)
            for name, d in groups.items():
                if d["name"] != name:
                    raise ValueError(f"group {name!r} has the snapshot of group {d['name']!r}")
                obj.groups[name] = ThresholdGroup.restore(d, members.pop(name, OrderedDict()))
            if members:
                raise ValueError(f"key rows name members of groups the checkpoint lacks: {sorted(members)[:5]}")
        else:  # a dict per key (earlier versions): one key at a time, as a streamed checkpoint parses them
            put = obj.table.put
            for d in keys:
                put(KeyState.restore(d))
            obj.groups = {d["name"]: ThresholdGroup.restore(d) for d in groups}
        return obj

    def dumps(self) -> str:
        return json.dumps(self.snapshot(), default=lazy_default)

    @classmethod
    def loads(cls, text: str) -> ContinuousMonitor:
        return cls.restore(json.loads(text))

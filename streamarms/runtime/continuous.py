"""The continuous mode of the runtime: every record feeds one :class:`~streamarms.monitor.ContinuousMonitor`.

``streamarms run --forever`` (and ``--mode continuous``) runs this instead of the episode
:class:`~streamarms.runtime.scheduler.Scheduler`: no episodes, no restarts, no sampling plan. Every record
whose key and reward are valid is evidence (the passive mode with every reward used): it goes to
``monitor.update(key, reward, time=<the record's timestamp, seconds>, group=<its group>)`` and the
alerts the monitor returns go to ``emit_alert`` at once.

Records are refused (an :class:`~streamarms.runtime.records.InvalidRecord` with its reason, which the
daemon sends to the dead letters) exactly as in the episode mode, plus, with ``group_field``:

* ``missing_group``: the record's JSON has no ``group_field``;
* ``bad_group``: it is not a non-empty string of at most ``max_key_bytes`` bytes with a UTF-8 form (no
  lone surrogate), nor an integer of at most 64 bits;
* ``too_many_groups``: it would be group number ``max_groups + 1`` (the group is a Prometheus label:
  its set must stay bounded);
* ``group_mismatch``: the key joined another group (a key belongs to one group for life).

A refused record changes nothing but its counter.

The runner presents the facade the daemon, the metrics and the CLI read on a scheduler (``records``,
``used``, ``phase``, ``episode``, ``offer_batch``, ``tick``, ``stats()``, ``arm_states()``,
``snapshot()``/``restore()``, ``alerts.flagged``), so :class:`~streamarms.daemon.Daemon` runs it
unchanged: the checkpoint (monitor state + source positions in one document, positions committed after
it is durable) makes a restart lose nothing and count nothing twice. Its ``lock`` is held while a batch
is handled: another thread (the ``/explain`` endpoint) reads the monitor under it.

>>> from streamarms.monitor import ContinuousMonitor
>>> out = []
>>> r = ContinuousRunner(ContinuousMonitor(k=2.0), clock=EventClock(), emit_alert=out.append,
...                      group_field="service")
>>> n, bad = r.offer_batch([b"a", b"b", b"a"], [b'{"reward": 1, "service": "web"}', b'{"reward": 0}',
...                                             b'{"reward": 0, "service": "web"}'], [1000, 2000, 3000])
>>> n, [(i, e.reason) for i, e in bad]
(3, [(1, 'missing_group')])
>>> r.records, r.used, r.monitor.keys["a"].samples, r.monitor.evidence("a")["group"]
(3, 2, 2, 'web')
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..monitor import DEFAULT_GROUP, NORMAL, OUTLIER, ContinuousMonitor
from ..validation import json_kind
from . import decoder
from .batch import check_lengths
from .clock import EventClock
from .codec import RewardCodec
from .episodes import RUNNING
from .field_path import FieldPath
from .key_rule import KeyRule
from .keys import KeyRegistry
from .records import InvalidRecord
from .stats import SchedulerStats, StatsView

log = logging.getLogger("streamarms.scheduler")
__all__ = ["ContinuousRunner", "CONTINUOUS", "MonitorAlerts"]

#: records between two looks for groups whose threshold waits for a quiet key (:meth:`ContinuousRunner.tick`)
STALL_CHECK = 10_000


def stalled_groups(monitor: ContinuousMonitor) -> list[tuple[str, int, dict[str, Any]]]:
    """``(group, epoch, quietest member)`` of the groups with no threshold interval whose quietest member
    has had no record for ``max(100 n, 10,000)`` of the group's records (n: its members): a key that sent a
    record or a few and went quiet holds its group's threshold until ``key_ttl`` drops it.

    >>> from streamarms.monitor import ContinuousMonitor
    >>> mon = ContinuousMonitor(k=2.0)
    >>> _ = mon.update("typo", 1.0)
    >>> for i in range(20_000):
    ...     _ = mon.update(f"k{i % 5}", float(i % 3 == 0))
    >>> stalled_groups(mon)
    [('default', 6, {'key': 'typo', 'records_since': 20000})]
    """
    out = []
    for name, g in monitor.groups.items():
        lo, hi = g.interval()
        if g.n >= 2 and not (math.isfinite(lo) and math.isfinite(hi)):
            quiet = g.quietest(1)[0]
            if quiet["records_since"] >= max(100 * g.n, 10_000):
                out.append((name, g.epoch, quiet))
    return out


class EpochChurn:
    """Groups whose threshold keeps restarting: at least ``epochs`` new epochs (a key joined, left, or its
    mean moved) in each of two consecutive windows of ``window`` records. Each epoch restarts the
    threshold's evidence, so such a group may never flag a key; a start-up burst of joins fills one window
    at most, hence two. ``look(monitor, records)`` returns each such group once per run of churn.

    >>> from streamarms.monitor import ContinuousMonitor
    >>> mon, churn, said = ContinuousMonitor(k=2.0), EpochChurn(window=1000, epochs=5), []
    >>> for i in range(6000):  # a new key every 100 records
    ...     _ = mon.update(f"k{i // 100}", float(i % 3 == 0))
    ...     if i % 500 == 0: said += churn.look(mon, i)
    >>> said
    [('default', 10, 1000)]
    """

    def __init__(self, window: int = 100_000, epochs: int = 10) -> None:
        self.window, self.epochs = window, epochs
        #: group -> (epoch, records) at the window's start, and how many windows in a row churned before it
        self._start: dict[str, tuple[int, int, int]] = {}

    def look(self, monitor: Any, records: int) -> list[tuple[str, int, int]]:
        """``(group, new epochs, records)`` over the last two windows of each group that churned in both."""
        out = []
        for name, g in monitor.groups.items():
            e0, r0, run = self._start.setdefault(name, (g.epoch, records, 0))
            if records - r0 < self.window:
                continue
            run = run + 1 if g.epoch - e0 >= self.epochs else 0
            if run == 2:  # said once per run of churning windows
                out.append((name, g.epoch - e0, records - r0))
            self._start[name] = (g.epoch, records, run)
        return out


#: the mode name (checkpoints and ``run_info`` record it: a checkpoint of another mode is refused)
CONTINUOUS = "continuous"
POLICY_NAME = "continuous"


class MonitorAlerts:
    """The alerts of the continuous mode: ``emit`` (replaceable, as on
    :class:`~streamarms.alerts.AlertManager`), the keys flagged now (``key -> monitor record count at the
    alert``, for the metrics' most-recently-flagged order) and the counts by kind.

    >>> a = MonitorAlerts(); a.on_alert({"key": "x", "kind": "outlier", "record": 7}); a.flagged, a.counts["outlier"]
    ({'x': 7}, 1)
    """

    def __init__(self, emit: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.emit = emit if emit is not None else (lambda alert: None)
        self.flagged: dict[str, int] = {}
        self.counts: dict[str, int] = {"outlier": 0, "cleared": 0, "normal": 0}

    def on_alert(self, alert: dict[str, Any]) -> None:
        kind = alert["kind"]
        if kind == "outlier":
            self.flagged[alert["key"]] = int(alert["record"])
        elif kind == "cleared":
            self.flagged.pop(alert["key"], None)
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.emit(alert)

    def snapshot(self) -> dict[str, Any]:
        return {"flagged": dict(self.flagged), "counts": dict(self.counts)}

    def restore(self, state: dict[str, Any]) -> None:
        self.flagged = {str(k): int(v) for k, v in state["flagged"].items()}
        self.counts = {str(k): int(v) for k, v in state["counts"].items()}


def _group_name(v: Any, gfield: str, arm: str, max_bytes: int) -> str:
    """A record's group field as a group name, or ``bad_group``: a non-empty string with a UTF-8 form
    (no lone surrogate) of at most ``max_bytes`` bytes, or an integer of at most 64 bits (its digits;
    orjson reads a longer one as a float, so it is refused whichever parser read it).

    >>> _group_name(7, "g", "a", 256), _group_name("web", "g", "a", 256)
    ('7', 'web')
    >>> _group_name(10 ** 29, "g", "a", 256)
    Traceback (most recent call last):
    ...
    streamarms.runtime.records.InvalidRecord: bad_group: group 'g' of key 'a' must be a non-empty string of at most 256 bytes or an integer of at most 64 bits, got the number 100000000000000000000000000000 (an integer beyond 64 bits)
    >>> _group_name("\\ud800", "g", "a", 256)
    Traceback (most recent call last):
    ...
    streamarms.runtime.records.InvalidRecord: bad_group: group 'g' of key 'a' is not valid Unicode (a lone surrogate): '\\ud800'
    """
    if type(v) is int and -(1 << 63) <= v < (1 << 64):
        return str(v)
    if isinstance(v, str) and v:
        try:
            n = len(v.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidRecord("bad_group", f"group {gfield!r} of key {arm!r} is not valid Unicode (a lone "
                                             f"surrogate): {v[:64]!r}") from None
        if n <= max_bytes:
            return v
    if isinstance(v, str):
        shown = repr(v[:64])
    elif type(v) is int:
        shown = f"the number {str(v)[:64]} (an integer beyond 64 bits)"
    elif type(v) is float:  # (orjson reads an integer beyond 64 bits as a float: say so)
        shown = (f"the number {v!r} (not an integer, or an integer beyond 64 bits)" if v == v and abs(v) >= 1 << 63
                 else f"the number {v!r} (not an integer)")
    else:
        shown = json_kind(v)
    raise InvalidRecord("bad_group", f"group {gfield!r} of key {arm!r} must be a non-empty string of at most "
                                     f"{max_bytes} bytes or an integer of at most 64 bits, got {shown}")


class ContinuousRunner:
    """Feeds every valid record of a stream to a :class:`ContinuousMonitor` (module docstring).

    ``clock``: stream time (an :class:`EventClock`, advanced by :meth:`offer_batch` from the record
    timestamps); ``group_field``: the JSON field of a record naming its group (``None``: one group,
    ``"default"``); ``max_groups``: at most that many groups; ``max_arms``: at most that many keys;
    ``arms``: a fixed key set (records of other keys are skipped).
    """

    def __init__(self, monitor: ContinuousMonitor, *, clock: Callable[[], float], codec: RewardCodec | None = None,
                 emit_alert: Callable[[dict[str, Any]], None] | None = None, group_field: str | None = None,
                 max_groups: int = 100, max_arms: int = 10_000, arms: Sequence[str] | None = None) -> None:
        if not (isinstance(max_groups, int) and max_groups >= 1):
            raise ValueError(f"max_groups must be a positive integer, got {max_groups!r}")
        if group_field is not None and not (isinstance(group_field, str) and group_field):
            raise ValueError(f"group_field must be a non-empty field name, got {group_field!r}")
        self.monitor = monitor
        self.clock = clock
        self._ev = clock if isinstance(clock, EventClock) else None
        self.codec = codec if codec is not None else RewardCodec(model=monitor.model)
        self.group_field = group_field
        #: the group field as a path, for a name with dots (``None``: a plain name, or no groups)
        self._group_path = FieldPath(group_field) if group_field is not None and "." in group_field else None
        self.max_groups = max_groups
        self.alerts = MonitorAlerts(emit_alert)
        self.counters = SchedulerStats()
        self.keys = KeyRegistry(self.codec, max_arms, arms)
        self.lock = threading.Lock()
        #: key -> its group (a key belongs to one group for life)
        self._groups: dict[str, str] = {}
        #: read by the daemon (never called: there are no episodes)
        self.on_episode_end: Callable[[dict[str, Any]], None] | None = None
        self.policy_name = POLICY_NAME
        self.mode = CONTINUOUS
        self._stall_checked = 0
        self._stall_warned: dict[str, int] = {}
        self._churn = EpochChurn()

    # the scheduler facade (module docstring)
    records = property(lambda self: self.counters.records)
    used = property(lambda self: self.counters.used)
    phase = property(lambda self: RUNNING)
    episode = property(lambda self: 0)
    episodes_done = property(lambda self: 0)
    policy = property(lambda self: None)
    history = property(lambda self: [])
    finished = property(lambda self: False)
    known_arms = property(lambda self: self.keys.known)

    def decision(self) -> None:
        return None

    def tick(self) -> None:
        """Nothing is time-based: the monitor moves with records only. Every :data:`STALL_CHECK` records,
        a group whose threshold has no interval while a member has been quiet for ``max(100 n, 10,000)``
        of the group's records is warned about, once an epoch (:func:`stalled_groups`)."""
        r = self.counters.records
        if r - self._stall_checked >= STALL_CHECK:
            self._stall_checked = r
            for name, epoch, quiet in stalled_groups(self.monitor):
                if self._stall_warned.get(name) != epoch:
                    self._stall_warned[name] = epoch
                    log.warning("group %r has no threshold yet: it waits for key %r, which has had no record for "
                                "%d of the group's records (a key leaves the threshold after --silence-records=%s "
                                "of them; `streamarms explain` lists the quietest keys)", name, quiet["key"],
                                quiet["records_since"], self.monitor.groups[name].ttl or "off")
            for name, epochs, over in self._churn.look(self.monitor, r):
                fold = KeyRule.ids_fold(self.keys.known)
                log.warning("group %r's threshold restarted %d times in the last %d records (a key joined or left "
                            "the group, or a key's mean moved: each restart starts the threshold's evidence over); "
                            "while its keys keep changing this fast it may never flag a key. A key set that grows "
                            "without end (new keys every few thousand records) is the usual cause; --arms fixes the "
                            "key set%s", name, epochs, over,
                            "" if fold is None else f"; these keys are paths with ids ({fold[0]}): --key-ids makes "
                            "one key of each path's ids")

    def stats_view(self) -> StatsView:
        """Counters and gauges now, in the scheduler's shape (metrics, health and summaries read it)."""
        c = self.counters
        return StatsView(records=c.records, used=c.used, skipped=c.records - c.used - c.refused,
                         invalid=dict(c.invalid), phase=RUNNING, known_arms=len(self.keys),
                         alerts=dict(self.alerts.counts))

    def stats(self) -> dict[str, Any]:
        """:meth:`stats_view` as plain data, with the monitor's own counts."""
        return {**self.stats_view().as_dict(), "groups": len(self.monitor.groups),
                "restarts": self.monitor.counts["restarts"], "epochs": self.monitor.counts["epochs"]}

    def arm_states(self) -> dict[str, int]:
        """Keys by their current classification: ``active`` (undecided), ``outlier``, ``normal``."""
        out = {"active": 0, "outlier": 0, "normal": 0}
        for _, _, state, _ in self.monitor.classes():
            out["outlier" if state == OUTLIER else "normal" if state == NORMAL else "active"] += 1
        return out

    def evidence(self, key: str) -> dict[str, Any]:
        """The key's current evidence (:meth:`ContinuousMonitor.evidence`), safe from another thread."""
        with self.lock:
            return self.monitor.evidence(key)

    # -- records ---------------------------------------------------------------------------------
    def offer(self, key: bytes | str | None, value: bytes | str | None,
              time: float | None = None) -> InvalidRecord | None:
        """Handle one record at stream time ``time`` (default: the clock); its refusal, if any."""
        self.counters.records += 1
        t = self.clock() if time is None else time
        try:
            arm, x, group = self._decode(key, value)
        except InvalidRecord as e:
            self.counters.invalid[e.reason] += 1
            return e
        if arm is None:
            return None  # a key outside a fixed arm set: skipped
        self._feed(arm, x, group, t)
        return None

    def offer_batch(self, keys: Sequence[bytes | str | None], values: Sequence[bytes | str | None],
                    stamps: Sequence[float | None] | None = None, clock: EventClock | None = None,
                    parsed: Sequence[Any] | None = None) -> tuple[int, list[tuple[int, InvalidRecord]]]:
        """A poll batch in record order, as :meth:`offer` record by record (the daemon's contract of
        :meth:`Scheduler.offer_batch`); ``stamps`` (ms) advance ``clock`` and are each record's stream
        time; ``parsed[i]``, if given and not ``None``, is ``values[i]`` as the source parsed it (a JSON line is
        parsed once). Records of known keys with a valid reward (and group) take a fast path; every other record
        goes through :meth:`offer`, so the two cannot disagree."""
        tick = clock if clock is not None else self._ev
        if stamps is not None and tick is None:
            raise ValueError("stamps need an EventClock to advance")
        check_lengths(keys, values, stamps, parsed)
        out: list[tuple[int, InvalidRecord]] = []
        loads, field, gfield = decoder._loads, self.codec.reward_field, self.group_field
        rpath, gpath = self.codec.reward_path, self._group_path  # (dotted names: nested fields)
        by_rule = None if self.codec.plain else self.codec.by_rule  # (numeric strings, at_least)
        check = self.monitor.model.check
        arm_of, group_of = self.keys.arm_of, self._groups
        isfinite, c, feed = math.isfinite, self.counters, self._feed
        with self.lock:
            for i in range(len(values)):
                t: float | None = None
                if stamps is not None:
                    ts = stamps[i]
                    if ts is not None:
                        t = ts / 1000.0
                        if t > tick.now:  # type: ignore[union-attr]
                            tick.now = t  # type: ignore[union-attr]
                if t is None:
                    t = self.clock()
                arm = arm_of.get(keys[i])  # type: ignore[arg-type]
                x: Any = None
                g: Any = DEFAULT_GROUP
                if arm is not None:
                    try:
                        obj = None if parsed is None else parsed[i]
                        if obj is None:
                            obj = loads(values[i])
                        if type(obj) is dict:
                            x = (obj[field] if rpath is None else rpath(obj)) if by_rule is None else by_rule(obj)
                            if gfield is not None:
                                g = obj[gfield] if gpath is None else gpath(obj)
                    except Exception:  # anything: the per-record path says why
                        x = None
                    tx = type(x)
                    if (tx is float or tx is int) and isfinite(x) and g == group_of.get(arm):
                        try:
                            check(arm, float(x))
                        except ValueError:
                            x = None
                    else:
                        x = None
                if x is None:
                    bad = self.offer(keys[i], values[i], t)
                    if bad is not None:
                        out.append((i, bad))
                    continue
                c.records += 1
                feed(arm, float(x), g, t)  # type: ignore[arg-type]  # x is set only for a known arm
        return len(values), out

    # -- internals ---------------------------------------------------------------------------------
    def _decode(self, key: bytes | str | None, value: bytes | str | None) -> tuple[str | None, float, str]:
        """``(arm, reward, group)`` of a record, registering a new key only once all three are valid;
        ``arm`` is ``None`` for a key outside a fixed arm set."""
        codec = self.codec
        arm = self.keys.arm_of.get(key)  # type: ignore[arg-type]
        new = arm is None
        if new:
            arm = codec.arm(key)
            known = self.keys.arm_of.get(arm.encode("utf-8"))
            if known is not None:
                arm, new = known, False
            elif self.keys.fixed:
                return None, 0.0, DEFAULT_GROUP
        assert arm is not None
        obj = codec.parse(arm, value)
        x = codec.reward_of(arm, obj)
        group = self._group(arm, obj)
        if new:
            if len(self.keys) >= self.keys.max_arms:
                raise InvalidRecord("too_many_arms", f"new key {arm[:64]!r} refused: already {len(self.keys)} "
                                                     f"keys (max_arms={self.keys.max_arms})")
            self.keys.register(arm, 0.0)
            if isinstance(key, str):
                self.keys.arm_of[key] = arm
        return arm, x, group

    def _group(self, arm: str, obj: dict[str, Any]) -> str:
        gfield = self.group_field
        if gfield is None:
            g = DEFAULT_GROUP
        else:
            try:
                v = obj[gfield] if self._group_path is None else self._group_path(obj)
            except KeyError:
                raise InvalidRecord("missing_group", f"record of key {arm!r} has no {gfield!r} field") from None
            g = _group_name(v, gfield, arm, self.codec.max_key_bytes)
        known = self._groups.get(arm)
        if known is not None and known != g:
            raise InvalidRecord("group_mismatch", f"key {arm!r} belongs to group {known!r}, got a record for "
                                                  f"group {g[:64]!r}")
        if known is None and g not in self.monitor.groups and len(self.monitor.groups) >= self.max_groups:
            raise InvalidRecord("too_many_groups", f"new group {g[:64]!r} of key {arm!r} refused: already "
                                                   f"{len(self.monitor.groups)} groups (max_groups={self.max_groups})")
        return g

    def _feed(self, arm: str, x: float, group: str, t: float) -> None:
        self.counters.used += 1
        self._groups.setdefault(arm, group)
        mon = self.monitor
        for alert in mon.update(arm, x, time=t, group=group):
            self.alerts.on_alert(self._alert(alert))
        if mon.forgotten:
            self._release(mon.forgotten)

    def _release(self, forgotten: list[str]) -> None:
        """Drop the runner's own entries (key registry, group of the key) for keys the monitor forgot
        (``forget_silent``), and empty the list: a forgotten key no longer counts toward ``max_arms``
        nor holds memory here, and its next record registers it as a new key."""
        arm_of, seen, groups = self.keys.arm_of, self.keys.last_seen, self._groups
        for arm in forgotten:
            seen.pop(arm, None)
            groups.pop(arm, None)
            arm_of.pop(arm.encode("utf-8"), None)
            if arm_of.get(arm) == arm:
                del arm_of[arm]
        forgotten.clear()

    def _alert(self, a: dict[str, Any]) -> dict[str, Any]:
        """The monitor's alert as an alert record (:mod:`streamarms.alerts`' fields where they apply)."""
        a["arm"] = a["key"]
        a["policy"] = POLICY_NAME
        a["mode"] = CONTINUOUS
        a["episode"] = None
        a["delta"] = a["alpha"]
        a["pulls"] = a["samples"]
        return a

    # -- persistence -------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-able data (the monitor's own snapshot included)."""
        return {"format": 1, "mode": CONTINUOUS, "now": self.clock(), "monitor": self.monitor.snapshot(),
                "arms": self.keys.snapshot(), "groups_of": dict(self._groups),
                "counters": self.counters.snapshot(), "alerts": self.alerts.snapshot(),
                "group_field": self.group_field}

    def restore(self, state: dict[str, Any]) -> None:
        """Load :meth:`snapshot` output (the monitor continues bit for bit)."""
        if state.get("format") != 1:
            raise ValueError(f"unsupported continuous snapshot format {state.get('format')!r}")
        if state.get("mode") != CONTINUOUS:
            raise ValueError(f"checkpoint was taken in {state.get('mode')!r} mode, this run is "
                             f"{CONTINUOUS!r}: start with a fresh checkpoint to change mode")
        if state.get("group_field") != self.group_field:
            raise ValueError(f"checkpoint was taken with --group-by {state.get('group_field')!r}, this run has "
                             f"{self.group_field!r}: start with a fresh checkpoint to change the grouping")
        ours, mon = self.monitor, ContinuousMonitor.restore(state["monitor"])
        theirs = mon.settings()
        differ = [f"{name} {theirs[name]!r} (this run: {v!r})" for name, v in ours.settings().items()
                  if theirs[name] != v]
        if differ:
            raise ValueError(f"checkpoint was taken with {', '.join(differ)}: these define the statistics; "
                             "run with the checkpoint's settings, or start with a fresh checkpoint")
        if (mon.key_ttl, mon.forget_silent) != (ours.key_ttl, ours.forget_silent):
            log.info("silent keys: the checkpoint's key_ttl %s, forget_silent %s -> this run's %s, %s",
                     mon.key_ttl, mon.forget_silent, ours.key_ttl, ours.forget_silent)
            mon.set_silence(ours.key_ttl, ours.forget_silent)
        if isinstance(self.clock, EventClock):
            self.clock.advance(float(state["now"]))
        self.monitor = mon
        self.keys.restore(state["arms"])
        self._groups = {str(k): str(v) for k, v in state["groups_of"].items()}
        self.counters.restore(state["counters"])
        self.alerts.restore(state["alerts"])

"""Alerts: turn a policy's confident classifications into deduplicated alert records.

A policy reports an :class:`~streamarms.policies.base.Event` the moment it is confident that an arm is
an outlier or normal; at the end of an episode its :class:`~streamarms.policies.base.Decision` lists the
same (plus arms it classified without an event). :class:`AlertManager` keeps, across episodes, the set
of arms currently *flagged* as outliers and emits:

* ``outlier``: an arm becomes confidently an outlier and was not flagged (``repeat=True``: once per
  episode in which it is confidently an outlier, even if already flagged);
* ``cleared``: a flagged arm is confidently normal in a later episode;
* ``normal``: an arm never flagged is confidently normal (only with ``emit_normal=True``: on a large
  key space these are the bulk of classifications, so they are off by default).

Each alert is a plain dict (the JSON value of the alert record; the record key is the arm) with at
least ``arm key kind episode policy estimate interval threshold delta samples time`` (``key`` = ``arm``), plus
``threshold_interval``, ``pulls`` and a deterministic ``alert_id`` (``"<episode>:<arm>:<kind>"``) so a
consumer can drop the duplicates that at-least-once delivery after a crash may produce.

>>> from streamarms.policies.base import Event
>>> out = []
>>> am = AlertManager("wrr", delta=0.1, emit=out.append)
>>> am.begin_episode(1)
>>> am.on_event(Event("a", "outlier", 0.9, (0.85, 0.95), 0.5, (0.45, 0.55), 300, 4000), now=12.0)
>>> [(a["arm"], a["key"], a["kind"], a["alert_id"]) for a in out]
[('a', 'a', 'outlier', '1:a:outlier')]
>>> am.begin_episode(2)
>>> am.on_event(Event("a", "normal", 0.4, (0.35, 0.45), 0.5, (0.47, 0.53), 250, 3000), now=99.0)
>>> [a["kind"] for a in out], am.flagged
(['outlier', 'cleared'], {})
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from .policies.base import Decision, Event

__all__ = ["AlertManager", "AlertDeduplicator", "ALERT_KINDS"]

#: every kind an alert record may carry (bounded label set of ``streamarms_alerts_total``)
ALERT_KINDS = ("outlier", "cleared", "normal")


class AlertManager:
    """Deduplicating alert state machine over episodes (see module docstring).

    ``emit`` receives each alert dict; ``counts`` holds how many of each kind were emitted.
    """

    def __init__(self, policy: str, delta: float | None, emit: Callable[[dict[str, Any]], None] | None = None,
                 *, emit_normal: bool = False, repeat: bool = False) -> None:
        self.policy = policy
        self.delta = delta
        self.emit = emit if emit is not None else (lambda alert: None)
        self.emit_normal = emit_normal
        self.repeat = repeat
        #: arm -> episode in which it was (last) flagged as an outlier
        self.flagged: dict[str, int] = {}
        self.counts: dict[str, int] = {k: 0 for k in ALERT_KINDS}
        self.episode = 0
        self._seen: set[str] = set()  # arms already classified in the current episode

    def begin_episode(self, episode: int) -> None:
        self.episode = episode
        self._seen = set()

    # -- inputs --------------------------------------------------------------------------------
    def on_event(self, event: Event, now: float) -> None:
        """A classification the policy made during the episode."""
        self._classify(event.arm, event.kind, now, estimate=event.estimate, interval=event.interval,
                       threshold=event.threshold, threshold_interval=event.threshold_interval,
                       samples=event.samples, pulls=event.pulls)

    def on_events(self, events: Iterable[Event], now: float) -> None:
        for e in events:
            self.on_event(e, now)

    def on_decision(self, decision: Decision, now: float,
                    details: Callable[[str], dict[str, Any]] | None = None) -> None:
        """End of episode: classifications of the final decision that had no event yet.

        ``details(arm)`` may supply ``estimate``/``interval``/``samples`` for such arms; by default the
        estimate is the decision's ``extra["estimates"][arm]`` if the policy reports one.
        """
        if details is None:
            estimates = decision.extra.get("estimates") if isinstance(decision.extra, dict) else None
            if isinstance(estimates, dict):
                details = lambda arm: {"estimate": estimates[arm]} if arm in estimates else {}  # noqa: E731
        for kind, arms in (("outlier", decision.outliers), ("normal", decision.normals)):
            for arm in arms:
                if arm in self._seen:
                    continue
                d = details(arm) if details is not None else {}
                self._classify(arm, kind, now, estimate=d.get("estimate"), interval=d.get("interval"),
                               threshold=decision.threshold, threshold_interval=decision.threshold_interval,
                               samples=d.get("samples"), pulls=decision.pulls)

    def mark(self, arm: str, kind: str) -> None:
        """``arm`` was classified ``kind`` in this episode elsewhere (a group member that owned its key
        before a rebalance alerted it): no alert for it here. Its standing flag follows: flagged if an
        outlier, not flagged if normal (the other member emitted the ``cleared`` alert, if one was due)."""
        self._seen.add(arm)
        if kind == "outlier":
            self.flagged[arm] = self.episode
        else:
            self.flagged.pop(arm, None)

    # -- logic ---------------------------------------------------------------------------------
    def _classify(self, arm: str, kind: str, now: float, **fields: Any) -> None:
        if arm in self._seen:
            return
        self._seen.add(arm)
        if kind == "outlier":
            if arm not in self.flagged or self.repeat:
                self._emit(arm, "outlier", now, fields)
            self.flagged[arm] = self.episode
        elif kind == "normal":
            if arm in self.flagged:
                del self.flagged[arm]
                self._emit(arm, "cleared", now, fields)
            elif self.emit_normal:
                self._emit(arm, "normal", now, fields)

    def _emit(self, arm: str, kind: str, now: float, fields: dict[str, Any]) -> None:
        interval = fields.get("interval")
        ti = fields.get("threshold_interval")
        alert = {
            "arm": arm,
            "key": arm,  # the continuous mode's name for it: a reader of both modes reads "key"
            "kind": kind,
            "episode": self.episode,
            "policy": self.policy,
            "estimate": fields.get("estimate"),
            "interval": list(interval) if interval is not None else None,
            "threshold": fields.get("threshold"),
            "threshold_interval": list(ti) if ti is not None else None,
            "delta": self.delta,
            "samples": fields.get("samples"),
            "pulls": fields.get("pulls"),
            "time": now,
            "alert_id": f"{self.episode}:{arm}:{kind}",
        }
        self.counts[kind] += 1
        self.emit(alert)

    # -- persistence ---------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {"flagged": dict(self.flagged), "counts": dict(self.counts), "episode": self.episode,
                "seen": sorted(self._seen)}

    def restore(self, state: dict[str, Any]) -> None:
        self.flagged = {str(k): int(v) for k, v in state.get("flagged", {}).items()}
        self.counts = {k: 0 for k in ALERT_KINDS} | {k: int(v) for k, v in state.get("counts", {}).items()}
        self.episode = int(state.get("episode", 0))
        seen = state.get("seen", [])  # (a list, or a LazyArray of a large checkpoint: streamarms.json_lazy)
        if isinstance(seen, (str, bytes, dict)) or not isinstance(seen, Sequence) or \
                not all(isinstance(x, str) for x in seen):
            raise ValueError(f"the alerts' 'seen' in the checkpoint is {str(seen)[:60]}: a list of texts expected")
        self._seen = set(seen)


class AlertDeduplicator:
    """The consumer's side of at-least-once alerts: pass each ``alert_id`` once, drop its repeats.

    The daemon publishes an alert again only when it crashed after the send and before the checkpoint
    that covers it; the restart re-emits it from the previous checkpoint with the *same* ``alert_id``
    (``"<episode>:<arm>:<kind>"``, a function of the state at the checkpoint). So "keep the first record
    of every ``alert_id``" turns the alert topic into exactly-once alerts. Ids are kept per episode;
    ``keep_episodes`` (default: all) forgets the ids of older episodes -- 2 is enough for streamarms'
    own re-publications (a checkpoint follows every episode end, so a repeat belongs to the newest
    episode or the one just ended). ``streamarms dedupe-alerts`` applies it to a JSONL stream of alerts.

    >>> d = AlertDeduplicator()
    >>> alerts = [{"alert_id": "1:a:outlier"}, {"alert_id": "1:b:outlier"}, {"alert_id": "1:a:outlier"}]
    >>> [a["alert_id"] for a in d.filter(alerts)], d.dropped
    (['1:a:outlier', '1:b:outlier'], 1)
    """

    def __init__(self, keep_episodes: int | None = None) -> None:
        if keep_episodes is not None and keep_episodes < 1:
            raise ValueError(f"keep_episodes must be >= 1 or None, got {keep_episodes}")
        self.keep_episodes = keep_episodes
        self._seen: dict[str, set[str]] = {}
        self.passed = 0
        self.dropped = 0

    def accept(self, alert: dict[str, Any]) -> bool:
        """``True`` the first time this ``alert_id`` is seen (then remembered), ``False`` for a repeat.
        An alert without a string ``alert_id`` raises ``ValueError`` (it is not a streamarms alert)."""
        aid = alert.get("alert_id") if isinstance(alert, dict) else None
        if not isinstance(aid, str):
            raise ValueError(f"not a streamarms alert (no alert_id): {str(alert)[:200]}")
        episode = aid.split(":", 1)[0]
        seen = self._seen.get(episode)
        if seen is None:
            seen = self._seen[episode] = set()
            if self.keep_episodes is not None and len(self._seen) > self.keep_episodes:
                del self._seen[min(self._seen, key=_episode_order)]
        if aid in seen:
            self.dropped += 1
            return False
        seen.add(aid)
        self.passed += 1
        return True

    def filter(self, alerts: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The alerts of ``alerts`` whose ``alert_id`` was not seen before, in order."""
        for a in alerts:
            if self.accept(a):
                yield a


def _episode_order(episode: str) -> tuple[int, str]:
    return (int(episode), "") if episode.isdigit() else (-1, episode)

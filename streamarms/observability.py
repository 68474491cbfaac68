"""What an operator watches: the dashboard series of the daemon, and its readiness for ``/healthz``.

:mod:`streamarms.metrics` exports the runtime's counters (records, samples, alerts...). This module
adds the series an operator's dashboard needs on top of them, all with bounded label sets:

==============================================  =======  ==================================================
metric                                          type     meaning
==============================================  =======  ==================================================
``streamarms_consumer_lag_records{topic,        gauge    records between the consumer's position and the
partition}``                                             end of each assigned partition
``streamarms_follow_lag_bytes``                gauge    following files (``--follow``): the bytes written
                                                         to them and not read yet -- growing: the daemon
                                                         falls behind, and logrotate may remove a rotation
                                                         before it is read
``streamarms_follow_files_lost_total``         counter  following files: rotations removed (logrotate's
                                                         ``rotate N``) before the daemon read them -- their
                                                         lines lost (each said in a warning)
``streamarms_threshold``                        gauge    the current episode's outlier-threshold estimate
``streamarms_threshold_lower_bound`` /          gauge    its confidence interval (the interval every
``streamarms_threshold_upper_bound``                     arm's interval is compared with)
``streamarms_episode``                          gauge    number of the current (or last) episode
``streamarms_phase{phase}``                     gauge    1 for the scheduler's phase: discovering, running,
                                                         idle, finished; 0 for the others
``streamarms_episode_records``                  gauge    records seen in the current episode
``streamarms_episode_samples``                  gauge    rewards used in the current episode
``streamarms_episode_sample_ratio``             gauge    their ratio: the share of rewards used vs seen
``streamarms_flagged_arms``                     gauge    keys currently flagged as outliers (alerted, not
                                                         yet cleared)
``streamarms_flagged_arm{arm}``                 gauge    1 per flagged key -- only with
                                                         ``--metrics-flagged-arms N``, at most N series
                                                         (the most recently flagged); off by default
``streamarms_time_to_alert_seconds``            histo    from the start of an episode to each of its
                                                         outlier alerts (scheduler clock); continuous
                                                         mode: from the start of the key's evidence
``streamarms_broker_connected``                 gauge    1 while the broker answers, 0 during an outage
``streamarms_broker_disconnects_total``         counter  times the broker became unreachable
``streamarms_offset_resets_total``              counter  checkpointed positions outside their partition (or
                                                         whose last record changed: a replaced topic),
                                                         replaced by the ``--on-out-of-range`` rule
``streamarms_ready``                            gauge    1 when ``/healthz`` answers 200
``streamarms_loop_heartbeat_age_seconds``       gauge    seconds since the main loop last turned
``streamarms_build_info{version,policy,mode}``  gauge    always 1; the labels say what runs
==============================================  =======  ==================================================

Thread safety: the values are computed by :meth:`OperatorMetrics.refresh`, which the daemon's loop
calls about once a second *in the main thread* (the policy and the Kafka consumer are not
thread-safe); the HTTP thread that serves ``/metrics`` only reads the last computed snapshot.

Readiness (``/healthz``, :meth:`OperatorMetrics.health`): ready once the checkpoint has been loaded
(the daemon restores it before its loop starts), the loop has turned at least once, the consumer has
partitions assigned, the broker answers, the loop has turned within the last ``stall_seconds``, and it
has not gone ``stall_seconds`` without handling a record while records wait (lag > 0). A consumer that
has no partitions (more replicas than partitions, or during a rebalance) or has lost its broker is
alive but not ready; the liveness endpoint ``/livez`` (:meth:`streamarms.daemon.Daemon.health`) fails
on a loop that does not turn or makes no progress while records wait.

>>> from streamarms.metrics import Metrics
>>> from streamarms.runtime.scheduler import EventClock, Scheduler, SchedulerConfig, _ExamplePolicy
>>> clock = EventClock()
>>> s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=clock,
...               config=SchedulerConfig(discovery_records=5, max_episodes=1))
>>> class Source:                     # any daemon source; lag() is optional
...     def lag(self): return {"rewards:0": 12, "rewards:1": 0}
>>> m = Metrics()
>>> ops = OperatorMetrics(m, s, Source(), flagged_arms=5)
>>> ops.health()[0]                   # the loop has not turned yet
False
>>> for i in range(100):
...     clock.advance(i)
...     _ = s.offer(b"abc"[i % 3:i % 3 + 1], b'{"reward": %d}' % (i % 3 == 2))
>>> ops.refresh()
>>> ops.health()[0]
True
>>> text = m.render().decode()
>>> 'streamarms_consumer_lag_records{partition="0",topic="rewards"} 12.0' in text
True
>>> 'streamarms_flagged_arm{arm="c"} 1.0' in text, "streamarms_flagged_arms 1.0" in text
(True, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from .metrics import EPISODE_BUCKETS, Metrics
from .runtime import PHASES, Scheduler

__all__ = ["OperatorMetrics", "FLAGGED_ARMS_MAX"]

#: hard cap of ``--metrics-flagged-arms`` (label cardinality)
FLAGGED_ARMS_MAX = 1000


def _partitions(name: str) -> tuple[str, str]:
    topic, _, part = name.rpartition(":")
    return (topic, part) if topic else (name, "0")


class OperatorMetrics:
    """Dashboard series and readiness of a running daemon (module docstring).

    ``source`` is the daemon's source (``lag()`` -> ``{"topic:partition": records}`` is optional;
    a source with a ``merger`` reports its assigned partitions). ``daemon`` (optional) gives the loop
    heartbeat. ``flagged_arms``: export up to that many ``streamarms_flagged_arm{arm}`` series (0: none).
    ``checkpoint``: what happened to the checkpoint at start ("restored", "none" found, or "disabled").
    """

    def __init__(self, metrics: Metrics, scheduler: Scheduler, source: Any, *, daemon: Any = None,
                 flagged_arms: int = 0, checkpoint: str = "disabled", stall_seconds: float = 30.0,
                 info: dict[str, str] | None = None, wall: Callable[[], float] = time.monotonic) -> None:
        if not (isinstance(flagged_arms, int) and 0 <= flagged_arms <= FLAGGED_ARMS_MAX):
            raise ValueError(f"flagged_arms must be an integer in 0..{FLAGGED_ARMS_MAX}, got {flagged_arms!r}")
        self.metrics = metrics
        self.scheduler = scheduler
        self.source = source
        self.daemon = daemon
        self.flagged_arms = flagged_arms
        self.checkpoint = checkpoint
        self.stall_seconds = stall_seconds
        self.info = dict(info or {})
        self.wall = wall
        self._snap: dict[str, Any] | None = None   # replaced whole by refresh(), read by collect()
        self.time_to_alert = Histogram(
            "streamarms_time_to_alert_seconds",
            "Time from the start of an episode to each of its outlier alerts (scheduler clock).",
            buckets=EPISODE_BUCKETS, registry=metrics.registry)
        am = scheduler.alerts
        emit = am.emit

        def observed(alert: dict[str, Any]) -> None:
            if alert.get("kind") == "outlier":
                t = alert.get("time")
                # the continuous mode has no episodes: from the start of the key's current evidence
                # (its join, or the restart that followed a detected change)
                origin = alert["segment_since"] if "segment_since" in alert else self.scheduler.episodes.started
                if isinstance(t, (int, float)) and isinstance(origin, (int, float)):
                    self.time_to_alert.observe(max(0.0, float(t) - float(origin)))
            emit(alert)

        am.emit = observed
        metrics.add_provider(self.collect)
        add_refresher = getattr(metrics, "add_refresher", None)
        if add_refresher is not None:
            add_refresher(self.refresh)

    # -- main thread -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Compute every value (call from the thread that runs the scheduler)."""
        s = self.scheduler
        st = s.stats_view()
        snap: dict[str, Any] = {"at": self.wall(), "phase": st.phase, "episode": st.episode}
        lag_fn = getattr(self.source, "lag", None)
        snap["lag"] = dict(lag_fn()) if callable(lag_fn) else None
        merger = getattr(self.source, "merger", None)
        snap["assigned"] = (len(merger.partitions) > 0) if merger is not None else True
        snap["connected"] = getattr(self.source, "connected", True) is not False
        snap["disconnects"] = int(getattr(self.source, "disconnects", 0))
        snap["offset_resets"] = int(getattr(self.source, "out_of_range_resets", 0))
        lag_bytes = getattr(self.source, "lag_bytes", None) if getattr(self.source, "follow", False) else None
        snap["follow_lag_bytes"] = lag_bytes() if callable(lag_bytes) else None
        owed = getattr(self.source, "owed", None) if lag_bytes is not None else None
        snap["follow_files_lost"] = int(owed.lost) if owed is not None else None
        d = s.decision() if s.policy is not None else None
        if d is not None and d.threshold is not None:
            snap["threshold"] = float(d.threshold)
            ti = d.threshold_interval
            snap["threshold_interval"] = (float(ti[0]), float(ti[1])) if ti is not None else None
        if s.policy is not None:
            snap["episode_records"] = st.episode_records
            snap["episode_samples"] = int(s.policy.pulls)
        flagged = s.alerts.flagged
        snap["flagged"] = len(flagged)
        if self.flagged_arms:
            recent = sorted(flagged.items(), key=lambda kv: (-kv[1], kv[0]))[: self.flagged_arms]
            snap["flagged_list"] = sorted(a for a, _ in recent)
        self._snap = snap

    # -- readiness -----------------------------------------------------------------------------
    def _heartbeat_age(self) -> float | None:
        if self.daemon is not None and getattr(self.daemon, "heartbeat", None) is not None:
            return max(0.0, self.wall() - self.daemon.heartbeat)
        snap = self._snap
        return None if snap is None else max(0.0, self.wall() - snap["at"])

    def health(self) -> tuple[bool, dict[str, Any]]:
        """``(ready, details)`` for ``/healthz``."""
        snap = self._snap
        age = self._heartbeat_age()
        reasons = []
        if snap is None:
            reasons.append("main loop not started")
        elif not snap["assigned"]:  # (a source of files -- it has paths -- has a partition a file)
            files = getattr(self.source, "paths", None) is not None
            reasons.append("no file to read yet: none that --rewards-file names is there" if files else
                           "no partitions assigned")
        if snap is not None and not snap.get("connected", True):
            reasons.append("broker unreachable")
        if age is not None and age >= self.stall_seconds:
            reasons.append(f"main loop stalled for {age:.0f} s")
        if self.daemon is not None and hasattr(self.daemon, "progress_at"):
            idle = self.wall() - self.daemon.progress_at
            if idle >= self.stall_seconds:
                reasons.append(f"no record handled for {idle:.0f} s while {self.daemon.lag_records} records wait")
        ready = not reasons
        # (at start: the checkpoint restored or none found; since: how many this run has made durable)
        info: dict[str, Any] = {"status": "ready" if ready else "not ready", "checkpoint_at_start": self.checkpoint}
        if self.checkpoint != "disabled":
            info["checkpoints_made"] = int(getattr(self.metrics, "checkpoints", 0))
        if reasons:
            info["reasons"] = reasons
        if snap is not None:
            info.update(phase=snap["phase"], episode=snap["episode"], partitions_assigned=snap["assigned"])
        if age is not None:
            info["loop_age_seconds"] = round(age, 3)
        return ready, info

    # -- scrape thread -------------------------------------------------------------------------
    def collect(self) -> Iterable[Metric]:
        snap = self._snap
        ready, _ = self.health()
        yield GaugeMetricFamily("streamarms_ready", "1 when /healthz reports ready.", value=1.0 if ready else 0.0)
        bi = GaugeMetricFamily("streamarms_build_info", "Always 1; the labels say what runs.",
                               labels=["version", "policy", "mode"])
        from . import __version__
        mode = self.info["mode"] if "mode" in self.info else getattr(self.scheduler, "mode", None) or \
            self.scheduler.config.mode
        bi.add_metric([__version__, str(self.info.get("policy", self.scheduler.policy_name)), str(mode)], 1.0)
        yield bi
        age = self._heartbeat_age()
        if age is not None:
            yield GaugeMetricFamily("streamarms_loop_heartbeat_age_seconds",
                                    "Seconds since the main loop last turned.", value=age)
        if snap is None:
            return
        yield GaugeMetricFamily("streamarms_broker_connected",
                                "1 while the broker answers; 0 during an outage (the daemon keeps its state).",
                                value=1.0 if snap.get("connected", True) else 0.0)
        yield CounterMetricFamily("streamarms_broker_disconnects", "Times the broker became unreachable.",
                                  value=float(snap.get("disconnects", 0)))
        yield CounterMetricFamily("streamarms_offset_resets",
                                  "Positions outside their partition replaced by the --on-out-of-range rule.",
                                  value=float(snap.get("offset_resets", 0)))
        if snap.get("follow_lag_bytes") is not None:
            yield GaugeMetricFamily("streamarms_follow_lag_bytes",
                                    "Following files: bytes written to them and not read yet.",
                                    value=float(snap["follow_lag_bytes"]))
        if snap.get("follow_files_lost") is not None:
            yield CounterMetricFamily("streamarms_follow_files_lost",
                                      "Following files: rotations removed before they were read (lines lost).",
                                      value=float(snap["follow_files_lost"]))
        if snap["lag"] is not None:
            lag = GaugeMetricFamily("streamarms_consumer_lag_records",
                                    "Records between the consumer position and the end of the partition.",
                                    labels=["topic", "partition"])
            for name in sorted(snap["lag"]):
                lag.add_metric(list(_partitions(name)), float(snap["lag"][name]))
            yield lag
        if "threshold" in snap:
            yield GaugeMetricFamily("streamarms_threshold", "Outlier-threshold estimate of the current episode.",
                                    value=snap["threshold"])
            ti = snap.get("threshold_interval")
            if ti is not None:
                yield GaugeMetricFamily("streamarms_threshold_lower_bound",
                                        "Lower end of the threshold's confidence interval.", value=ti[0])
                yield GaugeMetricFamily("streamarms_threshold_upper_bound",
                                        "Upper end of the threshold's confidence interval.", value=ti[1])
        yield GaugeMetricFamily("streamarms_episode", "Number of the current (or last) episode.",
                                value=float(snap["episode"] or 0))
        ph = GaugeMetricFamily("streamarms_phase", "1 for the scheduler's current phase.", labels=["phase"])
        for p in PHASES:
            ph.add_metric([p], 1.0 if snap["phase"] == p else 0.0)
        yield ph
        if "episode_records" in snap:
            r, u = snap["episode_records"], snap["episode_samples"]
            yield GaugeMetricFamily("streamarms_episode_records", "Records seen in the current episode.",
                                    value=float(r))
            yield GaugeMetricFamily("streamarms_episode_samples", "Rewards used in the current episode.",
                                    value=float(u))
            yield GaugeMetricFamily("streamarms_episode_sample_ratio",
                                    "Share of the current episode's records whose reward was used.",
                                    value=u / r if r else 0.0)
        yield GaugeMetricFamily("streamarms_flagged_arms", "Keys currently flagged as outliers.",
                                value=float(snap["flagged"]))
        if self.flagged_arms:
            fa = GaugeMetricFamily("streamarms_flagged_arm",
                                   f"1 per flagged key (at most {self.flagged_arms}, the most recently flagged).",
                                   labels=["arm"])
            for a in snap.get("flagged_list", []):
                fa.add_metric([a], 1.0)
            yield fa

"""Prometheus metrics of the streaming runtime, and the HTTP endpoint that serves them.

Names follow ``streamarms_<noun>_<unit>`` (``_total`` for counters, ``_seconds`` for durations).
Label values come from small fixed sets (reason, kind, state) -- never one series per stream key.

Counters are *not* incremented per record: the scheduler keeps plain integer counters and a custom
collector reads them when Prometheus scrapes, so the hot path pays nothing for metrics. They are
exported relative to the moment the daemon started (a restarted daemon restores its totals from the
checkpoint, but Prometheus counters must only ever grow within a process, so the restored part is
subtracted).

=============================================  =======  ==========================================
metric                                         type     meaning
=============================================  =======  ==========================================
``streamarms_records_total``                   counter  records read from the reward topics
``streamarms_samples_total``                   counter  rewards used by the policy
``streamarms_rewards_skipped_total``           counter  rewards read but not used (the saving)
``streamarms_rewards_wasted_total``            counter  rewards taken for a planned arm but never used
                                                        (held when the episode ended; part of skipped)
``streamarms_invalid_records_total{reason}``   counter  records refused (sent to the dead letters)
``streamarms_alerts_total{kind}``              counter  alerts emitted (outlier/cleared/normal)
``streamarms_episodes_total``                  counter  detection episodes completed
``streamarms_want_timeouts_total``             counter  wants / requests given up (arm deferred)
``streamarms_requests_total``                  counter  sample requests published (active mode)
``streamarms_dead_letters_total``              counter  records refused as dead letters (sink or not)
``streamarms_checkpoints_total``               counter  checkpoints made durable
``streamarms_checkpoints_unchanged_total``     counter  of these, not written again: the store held the
                                                        same state already (an idle daemon)
``streamarms_arms{state}``                     gauge    arms of the current episode: active/outlier/normal
``streamarms_keys``                            gauge    keys known (arms of the next episode)
``streamarms_requests_in_flight``              gauge    active mode: requests awaiting an answer
``streamarms_held_rewards``                     gauge    rewards held for planned arms, not yet used
``streamarms_checkpoint_age_seconds``          gauge    time since the last durable checkpoint
``streamarms_processing_latency_seconds``      histo    from a batch's arrival to the batch handled
                                                        (its last record's latency; one per batch)
``streamarms_episode_duration_seconds``        histo    episode length, scheduler clock
=============================================  =======  ==========================================

Other modules add their own series with :meth:`Metrics.add_provider` (a callable yielding
prometheus-client metric families at scrape time) or by registering on :attr:`Metrics.registry`;
values that must be computed in the daemon's thread are refreshed by callables given to
:meth:`Metrics.add_refresher` (the daemon calls :meth:`Metrics.refresh` about once a second).
``/healthz`` (readiness) and ``/livez`` (liveness) answer from the callables given to :meth:`Metrics.serve`
(:mod:`streamarms.observability` adds the operator's series and readiness).

>>> from streamarms.runtime.stats import StatsView
>>> m = Metrics()
>>> m.bind(lambda: StatsView(records=10, used=3, skipped=7, invalid={"not_json": 1}, alerts={"outlier": 2},
...                          episodes=1, known_arms=20), baseline=False)
>>> text = m.render().decode()
>>> "streamarms_samples_total 3.0" in text, 'streamarms_alerts_total{kind="outlier"} 2.0' in text
(True, True)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from .errors import ConfigError
from .runtime.stats import StatsView

__all__ = ["Metrics", "MetricsServer", "LATENCY_BUCKETS", "EPISODE_BUCKETS"]

LATENCY_BUCKETS = (1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0)
EPISODE_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)

_ALERT_KINDS = ("outlier", "cleared", "normal")
_ARM_STATES = ("active", "outlier", "normal")


class Metrics:
    """The runtime's metrics on their own :class:`~prometheus_client.CollectorRegistry`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._stats: Callable[[], StatsView] = StatsView
        self._baseline = StatsView()
        self._providers: list[Callable[[], Iterable[Metric]]] = []
        self._refreshers: list[Callable[[], None]] = []
        self.arm_states: dict[str, int] = {s: 0 for s in _ARM_STATES}
        self.dead_letters = 0
        self.checkpoints = 0
        self.checkpoints_unchanged = 0
        self.last_checkpoint: float | None = None  # time.monotonic() of the last durable checkpoint
        self.processing_latency = Histogram(
            "streamarms_processing_latency_seconds",
            "Time from the arrival of a batch of records to the handling of the whole batch (one per batch).",
            buckets=LATENCY_BUCKETS, registry=self.registry)
        self.episode_duration = Histogram(
            "streamarms_episode_duration_seconds", "Duration of completed detection episodes (scheduler clock).",
            buckets=EPISODE_BUCKETS, registry=self.registry)
        self.registry.register(_Collector(self))

    # -- wiring ------------------------------------------------------------------------------
    def bind(self, stats: Callable[[], StatsView], baseline: bool = True) -> None:
        """Read counters from ``stats()`` (e.g. :meth:`Scheduler.stats_view`); with ``baseline``, export them
        relative to their current values (totals restored from a checkpoint are not re-exported)."""
        self._stats = stats
        self._baseline = stats() if baseline else StatsView()

    def add_provider(self, provider: Callable[[], Iterable[Metric]]) -> None:
        """Add series computed at scrape time (``provider()`` yields metric families)."""
        self._providers.append(provider)

    def add_refresher(self, refresher: Callable[[], None]) -> None:
        """Call ``refresher()`` from the daemon's thread on every :meth:`refresh`."""
        self._refreshers.append(refresher)

    def refresh(self) -> None:
        """Recompute the values that must be computed where the scheduler runs (daemon thread)."""
        for r in self._refreshers:
            r()

    def set_arm_states(self, states: dict[str, int]) -> None:
        self.arm_states = {s: int(states.get(s, 0)) for s in _ARM_STATES}

    def checkpointed(self, unchanged: bool = False) -> None:
        """A checkpoint is durable; ``unchanged``: the store held it already (not written again)."""
        self.checkpoints += 1
        self.checkpoints_unchanged += unchanged
        self.last_checkpoint = time.monotonic()

    def render(self) -> bytes:
        """The exposition text (what ``/metrics`` serves)."""
        return generate_latest(self.registry)

    def serve(self, port: int, addr: str = "0.0.0.0",
              health: Callable[[], tuple[bool, dict[str, Any]]] | None = None,
              live: Callable[[], tuple[bool, dict[str, Any]]] | None = None,
              explain: Callable[[str], dict[str, Any]] | None = None) -> MetricsServer:
        """Serve ``/metrics``, ``/healthz`` and ``/livez`` (and ``/explain?key=`` with ``explain``) on
        ``addr:port`` from a daemon thread (port 0: any free port); a :class:`ConfigError` naming both when it
        cannot listen there (a port in use, an address no interface has: ``[Errno 98]`` alone named neither)."""
        try:
            return MetricsServer(self, port, addr, health, live, explain)
        except OSError as e:
            raise ConfigError(f"cannot serve the metrics on {addr or '*'}:{port} (--metrics-addr, --metrics-port): "
                              f"{e.strerror or e}") from None

    # -- collection --------------------------------------------------------------------------
    def _delta(self, st: StatsView, key: str, sub: str | None = None) -> float:
        """Counter ``key`` (``sub``: its entry) since :meth:`bind`."""
        cur, base = getattr(st, key), getattr(self._baseline, key)
        if sub is not None:
            cur, base = cur.get(sub, 0), base.get(sub, 0)
        return float(max(0, cur - base))

    def collect(self) -> Iterable[Metric]:
        st = self._stats()
        d = self._delta
        for name, key, doc in (
                ("streamarms_records", "records", "Records read from the reward topics."),
                ("streamarms_samples", "used", "Rewards used by the policy (samples)."),
                ("streamarms_rewards_skipped", "skipped", "Rewards read but not used by the policy."),
                ("streamarms_rewards_wasted", "wasted", "Rewards held for a planned arm but never used."),
                ("streamarms_episodes", "episodes", "Detection episodes completed."),
                ("streamarms_want_timeouts", "timeouts", "Wants or requests given up after their timeout."),
                ("streamarms_requests", "requests_sent", "Sample requests published (active mode).")):
            c = CounterMetricFamily(name, doc)
            c.add_metric([], d(st, key))
            yield c
        inv = CounterMetricFamily("streamarms_invalid_records", "Records refused, by reason.", labels=["reason"])
        for reason in sorted(st.invalid):
            inv.add_metric([reason], d(st, "invalid", reason))
        yield inv
        al = CounterMetricFamily("streamarms_alerts", "Alerts emitted, by kind.", labels=["kind"])
        for kind in _ALERT_KINDS:
            al.add_metric([kind], d(st, "alerts", kind))
        yield al
        dl = CounterMetricFamily("streamarms_dead_letters", "Records refused as dead letters: sent to the dead-letter sink when one is configured, counted either way.")
        dl.add_metric([], float(self.dead_letters))
        yield dl
        ck = CounterMetricFamily("streamarms_checkpoints", "Checkpoints made durable.")
        ck.add_metric([], float(self.checkpoints))
        yield ck
        same = CounterMetricFamily("streamarms_checkpoints_unchanged",
                                   "Checkpoints not written again: the store held the same state already.")
        same.add_metric([], float(self.checkpoints_unchanged))
        yield same
        arms = GaugeMetricFamily("streamarms_arms", "Arms of the current episode by state.", labels=["state"])
        for s in _ARM_STATES:
            arms.add_metric([s], float(self.arm_states.get(s, 0)))
        yield arms
        yield GaugeMetricFamily("streamarms_keys", "Stream keys known (the arms of the next episode).",
                                value=float(st.known_arms))
        yield GaugeMetricFamily("streamarms_requests_in_flight", "Sample requests awaiting an answer.",
                                value=float(st.in_flight))
        yield GaugeMetricFamily("streamarms_held_rewards", "Rewards held for planned arms, not yet used.",
                                value=float(st.held))
        if self.last_checkpoint is not None:
            yield GaugeMetricFamily("streamarms_checkpoint_age_seconds", "Seconds since the last durable checkpoint.",
                                    value=time.monotonic() - self.last_checkpoint)
        for p in self._providers:
            yield from p()


class _Collector:
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return self.metrics.collect()


class MetricsServer:
    """HTTP endpoint: ``/metrics`` (Prometheus text format), ``/healthz`` (readiness) and ``/livez``
    (liveness), both JSON with status 200 or 503 (``HEAD`` answers the same status and headers); with ``explain``, ``/explain?key=KEY``: ``explain(KEY)``
    as JSON (404 for an unknown key, 400 without one, 503 when it raises ``TimeoutError``: the episode
    modes' loop, which answers it, did not turn in time)."""

    def __init__(self, metrics: Metrics, port: int, addr: str = "0.0.0.0",
                 health: Callable[[], tuple[bool, dict[str, Any]]] | None = None,
                 live: Callable[[], tuple[bool, dict[str, Any]]] | None = None,
                 explain: Callable[[str], dict[str, Any]] | None = None) -> None:
        outer = self
        self.metrics = metrics
        self.health = health or (lambda: (True, {"status": "ok"}))
        self.live = live or self.health
        self.explain = explain

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                self._answer(body_too=True)

            def do_HEAD(self) -> None:  # noqa: N802  (load balancers and uptime checkers probe with HEAD)
                self._answer(body_too=False)

            def _answer(self, body_too: bool) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body, ctype, code = outer.metrics.render(), CONTENT_TYPE_LATEST, 200
                elif path in ("/healthz", "/health", "/livez"):
                    ok, info = outer.live() if path == "/livez" else outer.health()
                    body = json.dumps(info).encode()
                    ctype, code = "application/json", 200 if ok else 503
                elif path == "/explain" and outer.explain is not None:
                    code, info = outer._explain(self.path)
                    body, ctype = json.dumps(info, allow_nan=False).encode(), "application/json"
                elif path == "/":
                    body, ctype, code = (b"streamarms: /metrics /healthz /livez"
                                         + (b" /explain?key=KEY" if outer.explain is not None else b"") + b"\n",
                                         "text/plain", 200)
                else:
                    body, ctype, code = b"not found\n", "text/plain", 404
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body_too:
                    self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer((addr, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="streamarms-metrics", daemon=True)
        self.thread.start()

    def _explain(self, target: str) -> tuple[int, dict[str, Any]]:
        keys = parse_qs(urlsplit(target).query).get("key")
        if not keys:
            return 400, {"error": "give the key: /explain?key=KEY"}
        assert self.explain is not None
        try:
            return 200, self.explain(keys[0])
        except KeyError:
            return 404, {"error": f"unknown key {keys[0]!r}", "key": keys[0]}
        except TimeoutError as e:  # the episode modes' loop did not answer (stopping, or stalled: see /livez)
            return 503, {"error": str(e), "key": keys[0]}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

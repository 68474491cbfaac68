"""Prometheus series of the continuous mode: the threshold band of every group and the keys it flags.

Label sets stay bounded: ``group`` has at most ``--max-groups`` values (a record of one group too many is
refused), ``state`` three; the per-key series exist only for the flagged keys, at most
``--metrics-flagged-arms N`` of them (off by default), like ``streamarms_flagged_arm``.

=================================================  =======  ==============================================
metric                                             type     meaning
=================================================  =======  ==============================================
``streamarms_monitor_keys{group,state}``           gauge    keys tracked, by current classification
                                                            (outlier, normal, undecided)
``streamarms_monitor_flagged_keys{group}``         gauge    keys with a standing ``outlier`` alert
``streamarms_group_threshold{group}``              gauge    the group's k-sigma threshold estimate
``streamarms_group_threshold_lower_bound{group}``  gauge    its confidence interval (the band every key's
``streamarms_group_threshold_upper_bound{group}``           interval is compared with; absent until known)
``streamarms_monitor_restarts_total``              counter  key evidence restarted by the change detector
``streamarms_monitor_epochs_total``                counter  threshold epochs begun (joins, restarts, drops)
``streamarms_flagged_key_estimate{arm,group}``     gauge    a flagged key's mean estimate and interval
``streamarms_flagged_key_lower_bound{arm,group}``           (only with ``--metrics-flagged-arms N``: the N
``streamarms_flagged_key_upper_bound{arm,group}``           most recently flagged keys)
=================================================  =======  ==============================================

Values are computed by :meth:`MonitorMetrics.refresh` in the daemon's thread (about once a second,
O(keys)); the scrape thread reads the last snapshot only.

>>> from streamarms.metrics import Metrics
>>> from streamarms.monitor import ContinuousMonitor
>>> from streamarms.runtime import EventClock
>>> from streamarms.runtime.continuous import ContinuousRunner
>>> r = ContinuousRunner(ContinuousMonitor(), clock=EventClock(), group_field="svc")
>>> _ = r.offer_batch([b"a", b"b"], [b'{"reward": 1, "svc": "web"}', b'{"reward": 0, "svc": "web"}'])
>>> m = Metrics(); mm = MonitorMetrics(m, r, flagged_keys=5); mm.refresh()
>>> 'streamarms_monitor_keys{group="web",state="undecided"} 2.0' in m.render().decode()
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from .metrics import Metrics
from .monitor import NORMAL, OUTLIER, UNDECIDED
from .runtime.continuous import ContinuousRunner

__all__ = ["MonitorMetrics"]

_STATES = (OUTLIER, NORMAL, UNDECIDED)


class MonitorMetrics:
    """The continuous mode's series (module docstring); registers itself on ``metrics``."""

    def __init__(self, metrics: Metrics, runner: ContinuousRunner, *, flagged_keys: int = 0) -> None:
        if not (isinstance(flagged_keys, int) and flagged_keys >= 0):
            raise ValueError(f"flagged_keys must be a non-negative integer, got {flagged_keys!r}")
        self.runner = runner
        self.flagged_keys = flagged_keys
        counts = runner.monitor.counts
        #: totals restored from a checkpoint are not re-exported (counters grow within a process only)
        self._base = {"restarts": counts["restarts"], "epochs": counts["epochs"]}
        self._snap: dict[str, Any] | None = None
        metrics.add_provider(self.collect)
        metrics.add_refresher(self.refresh)

    def refresh(self) -> None:
        """Compute every value (call from the thread that feeds the monitor)."""
        mon = self.runner.monitor
        keys: dict[tuple[str, str], int] = {(g, s): 0 for g in mon.groups for s in _STATES}
        flagged: dict[str, int] = {g: 0 for g in mon.groups}
        for _, group, state, is_flagged in mon.classes():
            keys[(group, state)] += 1
            flagged[group] += is_flagged
        band = {}
        for name, g in mon.groups.items():
            lo, hi = g.interval()
            est = g.estimate()
            band[name] = (est if math.isfinite(est) else None,
                          lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)
        shown = []
        if self.flagged_keys:
            recent = sorted(self.runner.alerts.flagged.items(), key=lambda kv: (-kv[1], kv[0]))[: self.flagged_keys]
            for key, _ in sorted(recent):
                st = mon.keys.get(key)
                if st is not None and st.segment.m:
                    lo, hi = st.segment.interval()
                    shown.append((key, st.group, st.segment.mean, lo, hi))
        self._snap = {"keys": keys, "flagged": flagged, "band": band, "shown": shown,
                      "restarts": mon.counts["restarts"] - self._base["restarts"],
                      "epochs": mon.counts["epochs"] - self._base["epochs"]}

    def collect(self) -> Iterable[Metric]:
        snap = self._snap
        if snap is None:
            return
        k = GaugeMetricFamily("streamarms_monitor_keys", "Keys tracked by the continuous monitor, by state.",
                              labels=["group", "state"])
        for (g, s), n in sorted(snap["keys"].items()):
            k.add_metric([g, s], float(n))
        yield k
        f = GaugeMetricFamily("streamarms_monitor_flagged_keys", "Keys with a standing outlier alert, by group.",
                              labels=["group"])
        for g, n in sorted(snap["flagged"].items()):
            f.add_metric([g], float(n))
        yield f
        th = GaugeMetricFamily("streamarms_group_threshold", "The group's k-sigma threshold estimate.",
                               labels=["group"])
        lo = GaugeMetricFamily("streamarms_group_threshold_lower_bound",
                               "Lower end of the group threshold's confidence interval.", labels=["group"])
        hi = GaugeMetricFamily("streamarms_group_threshold_upper_bound",
                               "Upper end of the group threshold's confidence interval.", labels=["group"])
        for g, (e, a, b) in sorted(snap["band"].items()):
            for fam, v in ((th, e), (lo, a), (hi, b)):
                if v is not None:
                    fam.add_metric([g], float(v))
        yield th
        yield lo
        yield hi
        yield CounterMetricFamily("streamarms_monitor_restarts",
                                  "Key evidence restarted by the change detector.", value=float(snap["restarts"]))
        yield CounterMetricFamily("streamarms_monitor_epochs",
                                  "Threshold epochs begun (joins, restarts, silent keys dropped).",
                                  value=float(snap["epochs"]))
        if self.flagged_keys:
            fams = [GaugeMetricFamily(f"streamarms_flagged_key_{n}", doc, labels=["arm", "group"]) for n, doc in (
                ("estimate", "Mean estimate of a flagged key."),
                ("lower_bound", "Lower end of a flagged key's confidence interval."),
                ("upper_bound", "Upper end of a flagged key's confidence interval."))]
            for key, g, est, a, b in snap["shown"]:
                for fam, v in zip(fams, (est, a, b)):
                    fam.add_metric([key, g], float(v))
            yield from fams

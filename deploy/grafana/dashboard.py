"""Generates ``dashboards/streamarms.json``, the provisioned Grafana dashboard.

    python deploy/grafana/dashboard.py > deploy/grafana/dashboards/streamarms.json

The JSON is committed (Grafana provisions it as is); a test checks it equals this script's output, so
edit the panels here. Every query uses only series that ``streamarms run --metrics-port`` exports
(a test scrapes a live daemon and checks every ``streamarms_*`` name used below).
"""

from __future__ import annotations

import json
from typing import Any

DS = {"type": "prometheus", "uid": "prometheus"}
SEL = 'instance=~"$instance"'


def _q(expr: str, legend: str = "", ref: str = "A", **extra: Any) -> dict[str, Any]:
    t = {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto", "refId": ref, "range": True}
    t.update(extra)
    return t


def stat(title: str, desc: str, expr: str, unit: str = "short", mappings: list | None = None,
         thresholds: list | None = None, decimals: int | None = None) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": unit, "color": {"mode": "thresholds"},
                                "thresholds": {"mode": "absolute",
                                               "steps": thresholds or [{"color": "blue", "value": None}]}}
    if mappings:
        defaults["mappings"] = mappings
    if decimals is not None:
        defaults["decimals"] = decimals
    return {"type": "stat", "title": title, "description": desc, "datasource": DS,
            "targets": [_q(expr, instant=True, range=False)],
            "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "background", "graphMode": "area", "textMode": "value",
                        "justifyMode": "center", "orientation": "auto"}}


def series(title: str, desc: str, targets: list[dict[str, Any]], unit: str = "short", stack: bool = False,
           overrides: list | None = None, draw: str = "line", fill: int = 10, minimum: float | None = None,
           maximum: float | None = None) -> dict[str, Any]:
    custom: dict[str, Any] = {"drawStyle": draw, "lineWidth": 1, "fillOpacity": fill, "showPoints": "never",
                              "spanNulls": True, "stacking": {"mode": "normal" if stack else "none", "group": "A"}}
    defaults: dict[str, Any] = {"unit": unit, "custom": custom, "color": {"mode": "palette-classic"}}
    if minimum is not None:
        defaults["min"] = minimum
    if maximum is not None:
        defaults["max"] = maximum
    return {"type": "timeseries", "title": title, "description": desc, "datasource": DS,
            "targets": [dict(t, refId=chr(65 + i)) for i, t in enumerate(targets)],
            "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "none"}}}


def table(title: str, desc: str, expr: str) -> dict[str, Any]:
    return {"type": "table", "title": title, "description": desc, "datasource": DS,
            "targets": [_q(expr, "{{arm}}", instant=True, range=False, format="table")],
            "fieldConfig": {"defaults": {}, "overrides": []},
            "options": {"showHeader": True, "cellHeight": "sm"},
            "transformations": [{"id": "organize", "options": {
                "excludeByName": {"Time": True, "Value": True, "__name__": True, "job": True},
                "renameByName": {"arm": "flagged key", "instance": "daemon"}}}]}


def row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def _override_color(name: str, color: str, fill_to: str | None = None) -> dict[str, Any]:
    props: list[dict[str, Any]] = [{"id": "color", "value": {"mode": "fixed", "fixedColor": color}}]
    if fill_to:
        props.append({"id": "custom.fillBelowTo", "value": fill_to})
    return {"matcher": {"id": "byName", "options": name}, "properties": props}


def panels() -> list[tuple[dict[str, Any], int, int]]:
    """(panel, width, height) in reading order; rows take the full width."""
    ready_map = [{"type": "value", "options": {"0": {"text": "NOT READY", "color": "red"},
                                               "1": {"text": "READY", "color": "green"}}}]
    out: list[tuple[dict[str, Any], int, int]] = [
        (row("Outliers: what streamarms found"), 24, 1),
        (stat("Flagged outlier keys",
              "Keys currently flagged as outliers: alerted (confident at 1 - delta) and not cleared since. "
              "Red when any key is flagged.",
              f"sum(streamarms_flagged_arms{{{SEL}}})",
              thresholds=[{"color": "green", "value": None}, {"color": "red", "value": 1}]), 4, 4),
        (stat("New outlier alerts", "Outlier alerts emitted in the selected time range.",
              f'sum(increase(streamarms_alerts_total{{kind="outlier",{SEL}}}[$__range]))', decimals=0), 4, 4),
        (stat("Cleared", "Flagged keys found normal again by a later episode, in the selected time range.",
              f'sum(increase(streamarms_alerts_total{{kind="cleared",{SEL}}}[$__range]))', decimals=0), 4, 4),
        (stat("Keys watched", "Stream keys known: the arms of the next episode.",
              f"sum(streamarms_keys{{{SEL}}})"), 4, 4),
        (stat("Episode", "Number of the current (or last) detection episode.",
              f"max(streamarms_episode{{{SEL}}})"), 4, 4),
        (stat("Ready", "/healthz: checkpoint loaded, partitions assigned, main loop turning.",
              f"min(streamarms_ready{{{SEL}}})", mappings=ready_map,
              thresholds=[{"color": "red", "value": None}, {"color": "green", "value": 1}]), 4, 4),
        (series("Arms of the current episode by state",
                "active = still undecided (being sampled); outlier / normal = classified with confidence. "
                "An episode ends when no arm is active.",
                [_q(f"sum by (state) (streamarms_arms{{{SEL}}})", "{{state}}")], stack=True,
                overrides=[_override_color("active", "yellow"), _override_color("outlier", "red"),
                           _override_color("normal", "green")]), 12, 8),
        (series("Outlier threshold and its confidence interval",
                "The k-sigma threshold estimate (mean + k sd of the keys' mean rewards) with its confidence "
                "interval. A key is decided once its own interval clears this band; a narrow band means the "
                "episode is close to done.",
                [_q(f"streamarms_threshold{{{SEL}}}", "threshold"),
                 _q(f"streamarms_threshold_upper_bound{{{SEL}}}", "upper bound"),
                 _q(f"streamarms_threshold_lower_bound{{{SEL}}}", "lower bound")], fill=0,
                overrides=[_override_color("threshold", "purple"),
                           _override_color("upper bound", "light-purple", fill_to="lower bound"),
                           _override_color("lower bound", "light-purple")]), 12, 8),
        (table("Flagged keys",
               "The flagged keys themselves (needs --metrics-flagged-arms N: at most N series, off by default "
               "so that no series is created per stream key). The alerts topic has every alert in full.",
               f"streamarms_flagged_arm{{{SEL}}} == 1"), 8, 8),
        (series("Time to alert",
                "From the start of an episode to each outlier alert (scheduler clock: record time in passive "
                "mode), median and 90th percentile over the last hour.",
                [_q(f"histogram_quantile(0.5, sum by (le) (increase(streamarms_time_to_alert_seconds_bucket{{{SEL}}}[1h])))",
                    "median"),
                 _q(f"histogram_quantile(0.9, sum by (le) (increase(streamarms_time_to_alert_seconds_bucket{{{SEL}}}[1h])))",
                    "p90")], unit="s", fill=0), 8, 8),
        (series("Episode duration",
                "How long detection episodes take (scheduler clock), median and 90th percentile over the "
                "last hour; compare with the episode interval.",
                [_q(f"histogram_quantile(0.5, sum by (le) (increase(streamarms_episode_duration_seconds_bucket{{{SEL}}}[1h])))",
                    "median"),
                 _q(f"histogram_quantile(0.9, sum by (le) (increase(streamarms_episode_duration_seconds_bucket{{{SEL}}}[1h])))",
                    "p90")], unit="s", fill=0), 8, 8),
        (row("Savings: rewards read vs used"), 24, 1),
        (series("Rewards per second: read, used, skipped",
                "Records read from the reward topics, rewards the policy used (samples) and the rest "
                "(skipped). The gap between read and used is the saving.",
                [_q(f"sum(rate(streamarms_records_total{{{SEL}}}[$__rate_interval]))", "read"),
                 _q(f"sum(rate(streamarms_samples_total{{{SEL}}}[$__rate_interval]))", "used"),
                 _q(f"sum(rate(streamarms_rewards_skipped_total{{{SEL}}}[$__rate_interval]))", "skipped")],
                unit="reqps"), 12, 8),
        (series("Share of rewards used",
                "Used / read: over the dashboard's rate interval (all episodes and pauses) and within the "
                "current episode.",
                [_q(f"sum(rate(streamarms_samples_total{{{SEL}}}[$__rate_interval])) / "
                    f"sum(rate(streamarms_records_total{{{SEL}}}[$__rate_interval]))", "overall"),
                 _q(f"avg(streamarms_episode_sample_ratio{{{SEL}}})", "current episode")],
                unit="percentunit", minimum=0, maximum=1, fill=0), 12, 8),
        (series("Scheduler: timeouts, held and wasted rewards",
                "Wants given up (an arm without records in time is deferred), rewards held for planned arms "
                "and rewards held but never used when an episode ended.",
                [_q(f"sum(rate(streamarms_want_timeouts_total{{{SEL}}}[$__rate_interval]))", "want timeouts /s"),
                 _q(f"sum(streamarms_held_rewards{{{SEL}}})", "held"),
                 _q(f"sum(rate(streamarms_rewards_wasted_total{{{SEL}}}[$__rate_interval]))", "wasted /s")],
                fill=0), 12, 8),
        (series("Active mode: sample requests",
                "Requests published per second and requests awaiting an answer (zero in passive mode).",
                [_q(f"sum(rate(streamarms_requests_total{{{SEL}}}[$__rate_interval]))", "published /s"),
                 _q(f"sum(streamarms_requests_in_flight{{{SEL}}})", "in flight")], fill=0), 12, 8),
        (row("Operations: is the daemon keeping up?"), 24, 1),
        (series("Consumer lag per partition",
                "Records between the consumer's position and the end of each partition. Growing lag: the "
                "daemon cannot keep up; flat lag with no records read: a stalled consumer (alert).",
                [_q(f"streamarms_consumer_lag_records{{{SEL}}}", "{{topic}}:{{partition}}")], stack=True),
         8, 8),
        (series("Followed files: bytes not read yet",
                "Following log files (run --follow): the bytes written to them and not read yet. Growing: the "
                "daemon falls behind its writers, and logrotate may remove a rotation before it is read (alert).",
                [_q(f"streamarms_follow_lag_bytes{{{SEL}}}", "{{instance}}")], unit="bytes", fill=0), 8, 8),
        (series("Processing latency",
                "Time from the arrival of a batch of records to the handling of the whole batch (one per "
                "batch), 50th and 99th percentile.",
                [_q(f"histogram_quantile(0.5, sum by (le) (rate(streamarms_processing_latency_seconds_bucket{{{SEL}}}[$__rate_interval])))",
                    "p50"),
                 _q(f"histogram_quantile(0.99, sum by (le) (rate(streamarms_processing_latency_seconds_bucket{{{SEL}}}[$__rate_interval])))",
                    "p99")], unit="s", fill=0), 8, 8),
        (series("Refused records",
                "Records refused by reason (not JSON, no reward field, out of the reward model...) and those "
                "written to the dead-letter sink.",
                [_q(f"sum by (reason) (rate(streamarms_invalid_records_total{{{SEL}}}[$__rate_interval])) > 0",
                    "{{reason}}"),
                 _q(f"sum(rate(streamarms_dead_letters_total{{{SEL}}}[$__rate_interval]))", "dead letters")],
                unit="reqps", fill=0), 8, 8),
        (series("Heartbeat and checkpoint age",
                "Seconds since the main loop last turned (/livez fails after 30 s) and since the last durable "
                "checkpoint (what a crash would replay).",
                [_q(f"max(streamarms_loop_heartbeat_age_seconds{{{SEL}}})", "loop heartbeat"),
                 _q(f"max(streamarms_checkpoint_age_seconds{{{SEL}}})", "checkpoint")], unit="s", fill=0),
         8, 8),
        (series("Scheduler phase",
                "discovering: learning the keys before the first episode; running: an episode samples; idle: "
                "waiting for the next episode; finished: max episodes reached.",
                [_q(f"max by (phase) (streamarms_phase{{{SEL}}}) == 1", "{{phase}}")],
                draw="bars", fill=80, stack=True), 8, 8),
    ]
    return out + continuous_panels() + group_panels()


GSEL = 'instance=~"$instance",group=~"$group"'


def continuous_panels() -> list[tuple[dict[str, Any], int, int]]:
    """The continuous mode (``streamarms run --forever``): one group's threshold band (``$group``) with
    the flagged keys' intervals, keys by state, change detections."""
    return [
        (row("Continuous monitoring (streamarms run --forever): threshold band per group"), 24, 1),
        (series("Threshold band of $group with the flagged keys",
                "The group's k-sigma threshold (mean + k sd of its keys' means) and its confidence interval "
                "(the band), with the interval and estimate of every flagged key of the group (needs "
                "--metrics-flagged-arms N). A key is an outlier while its interval lies wholly above the band, "
                "and is cleared once wholly below it. The band widens after a key joins or its change "
                "detector restarts it (a new threshold epoch).",
                [_q(f"max(streamarms_group_threshold_upper_bound{{{GSEL}}})", "threshold upper"),
                 _q(f"max(streamarms_group_threshold_lower_bound{{{GSEL}}})", "threshold lower"),
                 _q(f"max(streamarms_group_threshold{{{GSEL}}})", "threshold"),
                 _q(f"streamarms_flagged_key_lower_bound{{{GSEL}}}", "{{arm}} lower"),
                 _q(f"streamarms_flagged_key_upper_bound{{{GSEL}}}", "{{arm}} upper"),
                 _q(f"streamarms_flagged_key_estimate{{{GSEL}}}", "{{arm}}")], fill=0,
                overrides=[_override_color("threshold", "purple"),
                           _override_color("threshold upper", "light-purple", fill_to="threshold lower"),
                           _override_color("threshold lower", "light-purple")]), 16, 9),
        (series("Keys of $group by state",
                "Keys tracked by the continuous monitor: outlier / normal = interval wholly above / below "
                "the band; undecided = overlapping it.",
                [_q(f"sum by (state) (streamarms_monitor_keys{{{GSEL}}})", "{{state}}")], stack=True,
                overrides=[_override_color("undecided", "yellow"), _override_color("outlier", "red"),
                           _override_color("normal", "green")]), 8, 9),
        (series("Flagged keys per group",
                "Keys with a standing outlier alert (cleared only by evidence of normal), by group.",
                [_q(f"sum by (group) (streamarms_monitor_flagged_keys{{{SEL}}})", "{{group}}")], fill=0), 12, 8),
        (series("Change detections and threshold epochs",
                "Keys whose evidence the change detector restarted (a mean moved), and threshold epochs "
                "begun (a key joined, restarted or went silent), per minute.",
                [_q(f"sum(rate(streamarms_monitor_restarts_total{{{SEL}}}[$__rate_interval])) * 60",
                    "restarts /min"),
                 _q(f"sum(rate(streamarms_monitor_epochs_total{{{SEL}}}[$__rate_interval])) * 60",
                    "epochs /min")], fill=0), 12, 8),
    ]


def group_panels() -> list[tuple[dict[str, Any], int, int]]:
    """Scale-out (``streamarms run --group-threshold``): the members of a group and how fresh the stats
    topic each member merged is (the threshold moves only when members see each other's progress)."""
    return [
        (row("Scale-out (streamarms run --group-threshold): members and the stats topic"), 24, 1),
        (stat("Group members", "Members that published this episode's stats to the group's stats topic "
              "(the most any member sees).", f"max(streamarms_group_members{{{SEL}}})", decimals=0), 4, 8),
        (series("Stats topic staleness per member",
                "Age of the oldest partition value of the group's stats a member merged. The threshold's "
                "interval only tightens when members see each other's progress: staleness costs samples, "
                "never correctness. Bounded by --group-interval plus the topic's delivery time.",
                [_q(f"streamarms_group_stats_staleness_seconds{{{SEL}}}", "{{instance}}")], unit="s",
                fill=0), 12, 8),
        (series("Partitions moved",
                "Partitions a member handed over or took over during a group episode (a rebalance: a member "
                "joined, left or was killed); the key state moves with them through the stats topic.",
                [_q(f"streamarms_group_partitions_moved{{{SEL}}}", "{{instance}}")], fill=0), 8, 8),
    ]


def dashboard() -> dict[str, Any]:
    placed = []
    x = y = 0
    row_h = 0
    for i, (p, w, h) in enumerate(panels(), start=1):
        if x + w > 24:
            x, y = 0, y + row_h
            row_h = 0
        p = dict(p, id=i, gridPos={"x": x, "y": y, "w": w, "h": h})
        placed.append(p)
        x += w
        row_h = max(row_h, h)
        if w == 24:
            x, y, row_h = 0, y + h, 0
    return {
        "uid": "streamarms",
        "title": "streamarms",
        "description": "Outlier keys found by streamarms, what it cost in rewards read, and whether the daemon keeps up.",
        "tags": ["streamarms", "kafka", "anomaly"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "timezone": "browser",
        "templating": {"list": [{
            "name": "instance", "label": "daemon", "type": "query", "datasource": DS,
            "definition": "label_values(streamarms_build_info, instance)",
            "query": {"query": "label_values(streamarms_build_info, instance)", "refId": "instances"},
            "refresh": 2, "includeAll": True, "multi": True, "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "sort": 1},
            {"name": "group", "label": "group (continuous mode)", "type": "query", "datasource": DS,
             "definition": 'label_values(streamarms_monitor_keys{instance=~"$instance"}, group)',
             "query": {"query": 'label_values(streamarms_monitor_keys{instance=~"$instance"}, group)',
                       "refId": "groups"},
             "refresh": 2, "includeAll": False, "multi": False, "sort": 1}]},
        "annotations": {"list": [
            {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
             "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard"},
            {"name": "Outlier alerts", "datasource": DS, "enable": True, "iconColor": "red",
             "expr": f'sum(changes(streamarms_alerts_total{{kind="outlier",{SEL}}}[1m])) > 0',
             "step": "60s", "titleFormat": "new outlier key(s)", "textFormat": "streamarms alerted"},
        ]},
        "panels": placed,
    }


if __name__ == "__main__":
    print(json.dumps(dashboard(), indent=2))

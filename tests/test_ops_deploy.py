"""deploy/ without a Docker engine: the files parse, their names and ports line up, the Prometheus rules
pass promtool (when installed), and every streamarms_* series the dashboard and the rules use is served
by a live daemon; `streamarms run --forever --metrics-port P` stops cleanly on SIGTERM."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
NAME = re.compile(r"\bstreamarms_[a-zA-Z0-9_]+")


def _yaml(path: Path) -> object:
    return yaml.safe_load(path.read_text())


def _compose() -> dict:
    return _yaml(DEPLOY / "docker-compose.yml")  # type: ignore[return-value]


def _toml() -> dict:
    return tomllib.loads((DEPLOY / "streamarms.toml").read_text())


def _k8s() -> dict[str, dict]:
    docs = list(yaml.safe_load_all((DEPLOY / "k8s" / "streamarms.yaml").read_text()))
    return {d["kind"]: d for d in docs}


def _dashboard() -> dict:
    return json.loads((DEPLOY / "grafana" / "dashboards" / "streamarms.json").read_text())


def _exprs_of_dashboard(d: dict) -> list[str]:
    out = [a["expr"] for a in d["annotations"]["list"] if "expr" in a]
    for v in d["templating"]["list"]:
        out.append(v["definition"])
    for p in d["panels"]:
        out.extend(t["expr"] for t in p.get("targets", []))
    return out


def _exprs_of_rules() -> list[str]:
    rules = _yaml(DEPLOY / "prometheus" / "streamarms-alerts.yml")
    return [r["expr"] for g in rules["groups"] for r in g["rules"]]  # type: ignore[index]


def _used_names() -> set[str]:
    return {m for e in _exprs_of_dashboard(_dashboard()) + _exprs_of_rules() for m in NAME.findall(e)}


# -- the files ---------------------------------------------------------------------------------------
def test_every_deploy_file_parses():
    ymls = sorted(DEPLOY.rglob("*.yml")) + sorted(DEPLOY.rglob("*.yaml"))
    assert len(ymls) >= 6
    for p in ymls:
        assert list(yaml.safe_load_all(p.read_text())), p
    for p in DEPLOY.rglob("*.json"):
        json.loads(p.read_text())
    tomllib.loads((DEPLOY / "streamarms.toml").read_text())


def test_dashboard_json_is_the_generators_output():
    out = subprocess.run([sys.executable, str(DEPLOY / "grafana" / "dashboard.py")], capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == _dashboard(), "run: python deploy/grafana/dashboard.py > deploy/grafana/dashboards/streamarms.json"


def test_dashboard_is_well_formed():
    d = _dashboard()
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24
        if p["type"] != "row":
            assert p["description"] and p["targets"], p["title"]
            assert all(t["datasource"]["uid"] == "prometheus" for t in p["targets"])
    ds = _yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")
    assert ds["datasources"][0]["uid"] == "prometheus"  # type: ignore[index]
    # each panel's queries use the instance variable, so a second daemon does not double counts
    for e in _exprs_of_dashboard(d)[1:]:
        if NAME.search(e) and "label_values" not in e:
            assert '$instance' in e, e
    # no panel exports per-key series except the opt-in flagged-arm table
    assert not any("by (arm)" in e for e in _exprs_of_dashboard(d))


def test_compose_services_line_up():
    c = _compose()
    services = c["services"]
    assert set(services) == {"kafka", "kafka-init", "producer", "streamarms", "prometheus", "grafana"}
    for name, svc in services.items():
        deps = svc.get("depends_on", [])
        for dep in deps:
            assert dep in services, f"{name} depends on unknown service {dep}"
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith("."):
                assert (DEPLOY / src).exists(), f"{name} mounts missing {src}"
            else:
                assert src in c["volumes"], f"{name} uses undeclared volume {src}"
        b = svc.get("build")
        if b:
            assert (DEPLOY / b["context"] / b["dockerfile"]).is_file()
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = kafka["environment"]
    assert "controller" in env["KAFKA_PROCESS_ROLES"] and "broker" in env["KAFKA_PROCESS_ROLES"]  # KRaft
    assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16
    advertised = {u.split("://")[1] for u in env["KAFKA_ADVERTISED_LISTENERS"].split(",")}
    cfg = _toml()
    assert cfg["bootstrap_servers"] in advertised and cfg["bootstrap_servers"].startswith("kafka:")
    assert services["producer"]["environment"]["BOOTSTRAP_SERVERS"] == cfg["bootstrap_servers"]
    assert services["producer"]["environment"]["REWARDS_TOPIC"] in cfg["rewards_topic"]
    init = services["kafka-init"]["command"][0]
    for topic in [*cfg["rewards_topic"], cfg["alerts_topic"], cfg["dead_letter_topic"]]:
        assert f"--topic {topic} " in init
    assert cfg["bootstrap_servers"] in init
    # the daemon: config mount, metrics port published and scraped
    sa = services["streamarms"]
    port = cfg["metrics_port"]
    assert f"{port}:{port}" in sa["ports"]
    conf_path = sa["command"][sa["command"].index("--config") + 1]
    assert any(v.endswith(f":{conf_path}:ro") and v.startswith("./streamarms.toml") for v in sa["volumes"])
    assert f"localhost:{port}/healthz" in " ".join(sa["healthcheck"]["test"])
    state_dir = os.path.dirname(cfg["checkpoint"])
    assert any(v.split(":")[1] == state_dir for v in sa["volumes"])
    prom = _yaml(DEPLOY / "prometheus" / "prometheus.yml")
    targets = [t for sc in prom["scrape_configs"] for s in sc.get("static_configs", []) for t in s["targets"]]  # type: ignore
    assert targets == [f"streamarms:{port}"]  # (static: a crashed daemon is a target that is down, StreamarmsDown)
    # the scale-out variant: the members (its service) found by DNS on the same port, and its own Prometheus file,
    # without the daemon it scales to 0 (a static target for it fired StreamarmsDown for good)
    group = _yaml(DEPLOY / "docker-compose.group.yml")["services"]  # type: ignore[index]
    assert "streamarms-member" in group and group["streamarms"]["deploy"]["replicas"] == 0
    assert group["prometheus"]["volumes"] == ["./prometheus/prometheus.group.yml:/etc/prometheus/prometheus.yml:ro"]
    gprom = _yaml(DEPLOY / "prometheus" / "prometheus.group.yml")
    assert [(sc["job_name"], [(d["names"], d["port"]) for d in sc.get("dns_sd_configs", [])], sc.get("static_configs"))
            for sc in gprom["scrape_configs"]] == [("streamarms-members", [(["streamarms-member"], port)], None)]  # type: ignore
    assert gprom["rule_files"] == prom["rule_files"]  # type: ignore[index]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in services["prometheus"]["volumes"]}
    for rf in prom["rule_files"]:  # type: ignore[index]
        assert rf in mounts and (DEPLOY / mounts[rf]).is_file()
    assert mounts["/etc/prometheus/prometheus.yml"] == "./prometheus/prometheus.yml"
    # Grafana: datasource -> prometheus service, dashboards provider path -> mounted JSON
    ds = _yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")
    assert ds["datasources"][0]["url"] == "http://prometheus:9090"  # type: ignore[index]
    assert "9090:9090" in services["prometheus"]["ports"]
    prov = _yaml(DEPLOY / "grafana" / "provisioning" / "dashboards" / "streamarms.yml")
    gmounts = {v.split(":")[1]: v.split(":")[0] for v in services["grafana"]["volumes"]}
    dash_dir = prov["providers"][0]["options"]["path"]  # type: ignore[index]
    assert gmounts[dash_dir] == "./grafana/dashboards"
    assert gmounts["/etc/grafana/provisioning"] == "./grafana/provisioning"
    home = services["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{dash_dir}/streamarms.json"
    # the Dockerfile ships what the services run
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert f"EXPOSE {port}" in dockerfile
    assert "COPY deploy/producer ./deploy/producer" in dockerfile and "WORKDIR /app" in dockerfile
    assert services["producer"]["entrypoint"][-1] == "/app/deploy/producer/demo_producer.py"
    assert (DEPLOY / "producer" / "demo_producer.py").is_file()


def _resolve(toml_text: str, tmp_path: Path):
    from streamarms.cli import build_parser
    from streamarms.cli.settings import resolve_settings
    p = tmp_path / "s.toml"
    p.write_text(toml_text)
    return resolve_settings(build_parser().parse_args(["run", "--config", str(p)]))


def test_configs_are_valid_run_settings(tmp_path):
    s = _resolve((DEPLOY / "streamarms.toml").read_text(), tmp_path)
    assert s.metrics_port == 9750 and s.rewards_topic == ["rewards"] and s.metrics_flagged_arms == 20
    k = _k8s()
    s2 = _resolve(k["ConfigMap"]["data"]["streamarms.toml"], tmp_path)
    assert s2.checkpoint.startswith("kafka:")
    assert {a for a in vars(s) if getattr(s, a) != getattr(s2, a)} <= {"bootstrap_servers", "checkpoint",
                                                                          "discovery_records", "discovery_seconds",
                                                                          "explicit"}


def test_k8s_manifest_lines_up():
    k = _k8s()
    assert set(k) == {"ConfigMap", "Deployment", "Service"}
    dep, svc, cm = k["Deployment"], k["Service"], k["ConfigMap"]
    cfg = tomllib.loads(cm["data"]["streamarms.toml"])
    port = cfg["metrics_port"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items()
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "Recreate"
    (ctr,) = dep["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in ctr["ports"]}
    assert ports["metrics"] == port
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics" and svc["spec"]["ports"][0]["port"] == port
    assert ctr["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert ctr["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert dep["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in ctr["volumeMounts"]}
    assert vols["config"]["configMap"]["name"] == cm["metadata"]["name"]
    conf = ctr["args"][ctr["args"].index("--config") + 1]
    assert conf == f"{mounts['config']}/streamarms.toml"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (apt-get install prometheus)")
def test_promtool_checks_config_and_rules(tmp_path):
    rules = DEPLOY / "prometheus" / "streamarms-alerts.yml"
    for name in ("prometheus.yml", "prometheus.group.yml"):
        prom = (DEPLOY / "prometheus" / name).read_text()
        (tmp_path / name).write_text(prom.replace("/etc/prometheus/rules/streamarms-alerts.yml", str(rules)))
    for args in (["check", "config", str(tmp_path / "prometheus.yml")],
                 ["check", "config", str(tmp_path / "prometheus.group.yml")], ["check", "rules", str(rules)],
                 ["test", "rules", "streamarms-alerts.test.yml"]):
        r = subprocess.run(["promtool", *args], capture_output=True, text=True, cwd=DEPLOY / "prometheus")
        assert r.returncode == 0, r.stdout + r.stderr


# -- a live daemon -----------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(*args: str, cwd: Path) -> tuple[subprocess.Popen, int]:
    """``run --forever`` of the embedded demo; in the episode mode unless ``args`` name a mode (``--forever``
    alone is the continuous mode, whose series are checked by the continuous tests below)."""
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    mode = [] if "--mode" in args else ["--mode", "episodes"]
    proc = subprocess.Popen([sys.executable, "-m", "streamarms.cli", "run", "--forever", *mode, "--metrics-port", str(port),
                             "--metrics-addr", "127.0.0.1", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, port


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _series_names(text: str) -> set[str]:
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def _scrape_until(proc: subprocess.Popen, port: int, want: set[str], timeout: float = 40.0) -> set[str]:
    deadline = time.monotonic() + timeout
    names: set[str] = set()
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            code, text = _get(port, "/metrics")
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)
            continue
        names = _series_names(text)
        if code == 200 and want <= names:
            return names
        time.sleep(0.3)
    return names


def _stop(proc: subprocess.Popen) -> tuple[int, float, str]:
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"no exit within 15 s of SIGTERM: {err[-2000:]}")
    return proc.returncode, time.monotonic() - t0, out + err


def test_run_forever_serves_metrics_and_stops_on_sigterm(tmp_path):
    proc, port = _start(cwd=tmp_path)
    try:
        want = {"streamarms_samples_total", "streamarms_alerts_total", "streamarms_arms"}
        names = _scrape_until(proc, port, want)
        assert want <= names, sorted(names)
        # readiness may lag the first scrape (the first checkpoint, a loaded machine): poll, don't read once
        deadline = time.monotonic() + 40
        code, body = _get(port, "/healthz")
        while not (code == 200 and json.loads(body)["status"] == "ready") and time.monotonic() < deadline:
            assert proc.poll() is None
            time.sleep(0.3)
            code, body = _get(port, "/healthz")
        assert code == 200 and json.loads(body)["status"] == "ready", body
        code, body = _get(port, "/livez")
        assert code == 200
        # /explain in the episode mode: the loop answers between two batches (it read the policy unlocked
        # from the server's thread before; the endpoint was the continuous mode's only)
        code, body = _get(port, "/explain?key=region-19")
        ev = json.loads(body)
        assert code == 200 and ev["key"] == "region-19" and ev["episode"] >= 1, body
        assert ev["state"] in ("outlier", "undecided", "normal", "not in an episode"), ev
        if ev["state"] != "not in an episode":
            assert {"estimate", "interval", "threshold_interval", "margin", "samples", "policy"} <= set(ev), ev
        assert _get(port, "/explain?key=nope")[0] == 404 and _get(port, "/explain")[0] == 400
    finally:
        rc, took, output = _stop(proc)
    assert rc == 0, output[-2000:]
    assert took < 10, took
    assert "stopped (SIGTERM)" in output


#: the series only a group member exports (``run --group-threshold``: the scale-out row and rule)
GROUP_ONLY = ("streamarms_group_stats_", "streamarms_group_members", "streamarms_group_partitions_")
#: the series only the continuous mode exports (its dashboard row and rules)
CONTINUOUS_ONLY = ("streamarms_group_threshold", "streamarms_monitor_", "streamarms_flagged_key_")
#: the series only a daemon following files exports (``run --follow``)
FOLLOW_ONLY = ("streamarms_follow_",)
NOT_EPISODES = GROUP_ONLY + CONTINUOUS_ONLY + FOLLOW_ONLY


def test_every_metric_of_the_dashboard_and_rules_is_served_live(tmp_path):
    used = {n for n in _used_names() if not n.startswith(NOT_EPISODES)}
    assert {"streamarms_consumer_lag_records", "streamarms_threshold", "streamarms_time_to_alert_seconds_bucket",
            "streamarms_flagged_arm", "streamarms_episode_sample_ratio"} <= used
    proc, port = _start("--checkpoint", str(tmp_path / "state.checkpoint"), "--checkpoint-interval", "0.5",
                        "--metrics-flagged-arms", "5", cwd=tmp_path)
    try:
        names = _scrape_until(proc, port, used)
        missing = sorted(used - names)
        assert not missing, f"dashboard/rules use series the daemon does not export: {missing}"
        code, text = _get(port, "/metrics")
        # bounded cardinality: no label takes a stream key except the opt-in, capped flagged-arm series
        per_key = [line for line in text.splitlines() if "region-" in line and not line.startswith("#")]
        assert per_key and all(line.startswith("streamarms_flagged_arm{") for line in per_key)
        assert len(per_key) <= 5
    finally:
        rc, took, output = _stop(proc)
    assert rc == 0 and took < 10, output[-2000:]
    assert (tmp_path / "state.checkpoint").exists()


def test_a_daemon_following_files_serves_the_follow_series_of_the_dashboard_and_rules(tmp_path):
    used = {n for n in _used_names() if n.startswith(FOLLOW_ONLY)}
    assert used == {"streamarms_follow_lag_bytes", "streamarms_follow_files_lost_total"}
    log = tmp_path / "app.jsonl"
    log.write_text("".join(json.dumps({"arm": f"k{i % 7}", "reward": i % 3 == 0}) + "\n" for i in range(5_000)))
    proc, port = _start("--follow", "--rewards-file", str(log), "--checkpoint", "none", cwd=tmp_path)
    try:
        names = _scrape_until(proc, port, used)
        assert used <= names, sorted(names)
    finally:
        rc, took, output = _stop(proc)
    assert rc == 0 and took < 10, output[-2000:]


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed (apt-get install prometheus)")
def test_a_real_prometheus_evaluates_every_dashboard_query_and_rule(tmp_path):
    """Prometheus scrapes a live daemon every second; every dashboard query must evaluate without error
    (and return data, but for the ones that are legitimately empty on a healthy demo), every rule be healthy."""
    proc, port = _start("--checkpoint", str(tmp_path / "state.checkpoint"), "--checkpoint-interval", "0.5",
                        "--metrics-flagged-arms", "5", cwd=tmp_path)
    prom_port = _free_port()
    rules = DEPLOY / "prometheus" / "streamarms-alerts.yml"
    (tmp_path / "prom.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": "streamarms", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}]}))
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prom.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def api(path: str, **params: str) -> dict:
        url = f"http://127.0.0.1:{prom_port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            return json.loads(e.read())

    def query(expr: str) -> dict:
        expr = expr.replace("$instance", ".*").replace("$__rate_interval", "5s").replace("$__range", "5m")
        return api("query", query=expr)

    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                r = query('rate(streamarms_records_total[5s]) > 0 and on() streamarms_flagged_arms > 0')
                if r.get("status") == "success" and r["data"]["result"]:
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.5)
        else:
            pytest.fail("Prometheus never saw the daemon's records")
        d = _dashboard()
        may_be_empty = {"Refused records", "outlier-annotation"}
        # the continuous and scale-out rows (this daemon runs episodes alone; other tests serve those series)
        may_be_empty |= {p["title"] for p in d["panels"] if any(
            c in t["expr"] for t in p.get("targets", []) for c in NOT_EPISODES)}
        checked = 0
        for title, expr in ([(p["title"], t["expr"]) for p in d["panels"] for t in p.get("targets", [])]
                            + [("outlier-annotation", d["annotations"]["list"][1]["expr"])]):
            r = query(expr)
            assert r["status"] == "success", (title, expr, r)
            if title not in may_be_empty:
                assert r["data"]["result"], (title, expr)
            checked += 1
        assert checked >= 30
        groups = api("rules")["data"]["groups"]
        health = {rule["name"]: rule["health"] for g in groups for rule in g["rules"]}
        assert len(health) == len(_exprs_of_rules()) and set(health.values()) == {"ok"}, health
    finally:
        prom.terminate()
        prom.wait(timeout=20)
        rc, _, output = _stop(proc)
    assert rc == 0, output[-2000:]


def test_continuous_mode_serves_its_series_and_explain(tmp_path):
    """``run --forever`` (the continuous mode): every series of the dashboard's continuous row and of the
    continuous rules is served, group and state labels only (flagged keys capped), and /explain answers."""
    used = {n for n in _used_names() if n.startswith(CONTINUOUS_ONLY)}
    assert {"streamarms_group_threshold_upper_bound", "streamarms_flagged_key_lower_bound",
            "streamarms_monitor_keys", "streamarms_monitor_restarts_total"} <= used
    proc, port = _start("--mode", "continuous", "--checkpoint", str(tmp_path / "state.checkpoint"),
                        "--checkpoint-interval", "0.5", "--metrics-flagged-arms", "5", cwd=tmp_path)
    try:
        names = _scrape_until(proc, port, used | {"streamarms_alerts_total", "streamarms_flagged_arms"})
        missing = sorted(used - names)
        assert not missing, f"the continuous row/rules use series the daemon does not export: {missing}"
        code, text = _get(port, "/metrics")
        per_key = [line for line in text.splitlines() if "region-" in line and not line.startswith("#")]
        assert per_key and all(line.startswith(("streamarms_flagged_arm{", "streamarms_flagged_key_"))
                               for line in per_key)
        assert 'streamarms_build_info{mode="continuous",policy="continuous"' in text
        code, body = _get(port, "/explain?key=region-19")
        ev = json.loads(body)
        assert code == 200 and ev["key"] == "region-19" and ev["group"] == "default" and ev["samples_total"] > 0
        assert set(ev) >= {"state", "interval", "threshold_interval", "margin", "samples", "threshold_samples"}
        assert _get(port, "/explain?key=nope")[0] == 404 and _get(port, "/explain")[0] == 400
    finally:
        rc, took, output = _stop(proc)
    assert rc == 0 and took < 10, output[-2000:]
    assert "ALERT outlier region-19 (group default)" in output or "ALERT outlier region-18" in output


def test_the_scale_out_row_and_rule_use_what_a_group_member_exports():
    """A group member (``run --group-threshold``, needs Kafka: the drills in tests/kafka run it) exports its
    series from ``streamarms/cli/group.py``: every group-only name the dashboard and rules use is one of them."""
    used = {n for n in _used_names() if n.startswith(GROUP_ONLY)}
    assert {"streamarms_group_stats_staleness_seconds", "streamarms_group_members"} <= used
    exported = set(re.findall(r'GaugeMetricFamily\("(streamarms_[a-z_]+)"', (ROOT / "streamarms" / "cli" / "group.py").read_text()))
    assert used <= exported, sorted(used - exported)

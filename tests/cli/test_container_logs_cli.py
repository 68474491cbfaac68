"""A Kubernetes node's container logs (CRI: ``TIME stdout F LINE``) and Docker's json-file logs: every CRI line was
refused as not JSON and ``inspect`` said only that a plain-text log needs ``--line-pattern``; a Docker line was one
text field. ``inspect`` now names the format (and the applications' own, JSON or an access log), its suggested
command finds the outlier, and a restart reads every entry once."""

from __future__ import annotations

import datetime as dt
import json
import random
import shlex

from test_inspect_cli import _run_suggested

from streamarms.cli import main

T0 = dt.datetime(2026, 11, 30, 10, tzinfo=dt.UTC)


def _cri_json(path, n, start=0, seed=1):
    rng = random.Random(seed + start)
    with open(path, "a") as f:
        for i in range(start, start + n):
            host = f"worker-{rng.randrange(12)}"
            level = "error" if rng.random() < (0.5 if host == "worker-3" else 0.02) else "info"
            t = (T0 + dt.timedelta(milliseconds=40 * i)).strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"
            f.write(f"{t} {rng.choice(['stdout', 'stderr'])} F " +
                    json.dumps({"level": level, "host": host, "ms": rng.randrange(1, 500)}) + "\n")


def _docker_access(path, n, seed=2):
    rng = random.Random(seed)
    paths = ["/", *(f"/api/{c}" for c in "abcdefghijk")]
    with open(path, "w") as f:
        for i in range(n):
            p = rng.choice(paths)
            status = 503 if rng.random() < (0.5 if p == "/api/c" else 0.02) else 200
            t = T0 + dt.timedelta(milliseconds=40 * i)
            line = (f'10.0.0.{rng.randrange(9)} - - [{t.strftime("%d/%b/%Y:%H:%M:%S +0000")}] "GET {p} HTTP/1.1" '
                    f'{status} 12 "-" "curl/8"\n')
            f.write(json.dumps({"log": line, "stream": "stdout", "time": t.isoformat()}) + "\n")


def _first_suggestion(capsys, path) -> tuple[str, list[str]]:
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    first = next(line for line in out.splitlines() if line.startswith("  streamarms run "))
    return out, shlex.split(first)[1:]


def test_a_kubernetes_node_s_container_log_of_json_lines(tmp_path, capsys):
    p = tmp_path / "app_default_worker-abc.log"
    _cri_json(p, 12_000)
    out, command = _first_suggestion(capsys, p)
    assert out.startswith("the lines are a container runtime's log (Kubernetes' CRI format, or Docker's json-file), "
                          "not the applications' lines: read with --rewards-format container\n"), out
    assert "keys (values that repeat): host (12)\n" in out, out  # (not ms: a duration by its name)
    assert command == ["run", "--rewards-file", str(p), "--rewards-format", "container", "--key-field", "host",
                       "--reward-field", "level", "--reward-in", "error", "--policy", "cs"], command
    got = _run_suggested(tmp_path, command, "--policy", "cs", "--max-episodes", "1")
    assert got["flagged"] == ["worker-3"] and not got["invalid"], got
    assert T0.timestamp() <= got["episodes"][0]["started"] < T0.timestamp() + 60  # (the runtime's times)


def test_a_restart_reads_every_entry_once(tmp_path):
    p, ck, summary = tmp_path / "c.log", str(tmp_path / "c.ckpt"), tmp_path / "s.json"
    _cri_json(p, 3_000)
    base = ["run", "--rewards-file", str(p), "--rewards-format", "container", "--key-field", "host", "--reward-field",
            "level", "--reward-in", "error", "--forever", "--checkpoint", ck, "--summary-json", str(summary), "--quiet"]
    assert main(base) == 0
    _cri_json(p, 2_000, start=3_000)
    assert main(base) == 0
    assert json.loads(summary.read_text())["records"] == 5_000


def test_docker_s_json_file_log_of_an_access_log(tmp_path, capsys):
    p = tmp_path / "abc-json.log"
    _docker_access(p, 12_000)
    out, command = _first_suggestion(capsys, p)
    assert "read with --rewards-format container --line-pattern combined\n" in out, out
    assert command[3:7] == ["--line-pattern", "combined", "--rewards-format", "container"], command
    got = _run_suggested(tmp_path, command, "--policy", "cs", "--max-episodes", "1")
    assert got["flagged"] == ["/api/c"] and not got["invalid"], got


def test_the_pod_whose_error_rate_stands_out_from_a_node_s_pod_logs(tmp_path):
    """The applications write no pod name: the pod is the path's (``kubernetes.pod_name``), read from every file of
    ``/var/log/pods/*/*/*.log``."""
    rng = random.Random(3)
    files = []
    for i in range(12):
        d = tmp_path / "pods" / f"shop_web-{i}_0c1e{i}" / "app"
        d.mkdir(parents=True)
        files.append(open(d / "0.log", "w"))
    for j in range(24_000):
        i = rng.randrange(12)
        t = (T0 + dt.timedelta(milliseconds=20 * j)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        failed = rng.random() < (0.5 if i == 7 else 0.02)
        files[i].write(f"{t} stdout F " + json.dumps({"level": "error" if failed else "info"}) + "\n")
    for f in files:
        f.close()
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(tmp_path / "pods/*/*/*.log"), "--rewards-format", "container",
                 "--key-field", "kubernetes.pod_name", "--reward-field", "level", "--reward-in", "error",
                 "--policy", "cs", "--max-episodes", "1", "--checkpoint", "none", "--quiet",
                 "--summary-json", str(summary)]) == 0
    got = json.loads(summary.read_text())
    assert got["flagged"] == ["web-7"] and not got["invalid"], got


def test_kubectl_logs_of_many_pods_piped_in_with_their_prefix_and_times(tmp_path):
    """``kubectl logs -f -l app=web --prefix --timestamps | streamarms run --rewards-file - --rewards-format
    container``: each line is ``[pod/POD/CONTAINER] TIME LINE``, the pod named only by the prefix."""
    import subprocess
    import sys

    rng = random.Random(4)
    src, out = tmp_path / "kubectl.out", tmp_path / "s.json"
    with open(src, "w") as f:
        for j in range(24_000):
            i = rng.randrange(12)
            t = (T0 + dt.timedelta(milliseconds=20 * j)).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
            failed = rng.random() < (0.5 if i == 9 else 0.02)
            f.write(f"[pod/web-{i}-5d8f/app] {t} " + json.dumps({"level": "error" if failed else "info"}) + "\n")
    with src.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", "-", "--rewards-format",
                               "container", "--key-field", "kubernetes.pod_name", "--reward-field", "level",
                               "--reward-in", "error", "--policy", "cs", "--max-episodes", "1", "--checkpoint", "none",
                               "--quiet", "--summary-json", str(out)], stdin=stdin, capture_output=True, text=True,
                              timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    assert got["flagged"] == ["web-9-5d8f"] and not got["invalid"], got
    assert T0.timestamp() <= got["episodes"][0]["started"] < T0.timestamp() + 60  # (kubectl's times)


def test_a_line_whose_last_part_has_not_come_is_said_at_the_end_not_dropped(tmp_path, caplog):
    """A container that stopped mid-way through a long line (its runtime's last entry a part, ``P``): the parts were
    held and the replay ended without a word of them."""
    p, summary = tmp_path / "c.log", tmp_path / "s.json"
    _cri_json(p, 300)
    with open(p, "a") as f:
        f.write('2026-11-30T11:00:00Z stdout P {"level": "error", \n')
    assert main(["run", "--rewards-file", str(p), "--rewards-format", "container", "--key-field", "host",
                 "--reward-field", "level", "--reward-in", "error", "--checkpoint", "none", "--quiet",
                 "--summary-json", str(summary)]) == 0
    got = json.loads(summary.read_text())
    assert got["records"] == 300 and got["incomplete_last_lines"] == {str(p): 19}, got
    assert any("its last part not written" in r.getMessage() for r in caplog.records)

"""``streamarms inspect FILE``: the fields of a log or a table and the ``run`` flags that read them -- a suggested
command runs as printed and finds the outlier key; a table's text numbers, a pattern's fields, a flag written
only when set are read as ``run`` reads them; what it cannot read says why."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import shlex

from streamarms.cli import main


def _nginx(path, n=20_000, seed=2):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            up = f"10.0.0.{rng.randrange(12)}:8080"
            bad = rng.random() < (0.35 if up == "10.0.0.7:8080" else 0.02)
            f.write(json.dumps({"time_local": 1_700_000_000 + i // 10, "upstream_addr": up, "request_id": f"r{i}",
                                "status": str(rng.choice([502, 503]) if bad else 200),
                                "request_time": round(rng.expovariate(10), 3)}) + "\n")


def _suggested(out: str) -> list[list[str]]:
    lines = out.split("suggested (a start: which rate matters is yours to say):\n", 1)[1].splitlines()
    commands = [shlex.split(line)[1:] for line in lines if line.startswith("  streamarms run ")]
    assert all(c[-2:] == ["--policy", "cs"] for c in commands), commands  # (the engine: a first file's records decide)
    return [c[:-2] for c in commands]


def _inspected_as(capsys, path, pattern: str) -> list[list[str]]:
    """``inspect path``, which must name the lines' format ``pattern``: its suggested commands."""
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"read with --line-pattern {pattern}" in out, out
    return _suggested(out)


def _run_suggested(tmp_path, command: list[str], *flags: str) -> dict:
    """Run a suggested ``command`` as printed (with ``flags``, no checkpoint, quiet): its ``--summary-json``."""
    summary = tmp_path / "suggested-summary.json"
    assert main([*command, "--checkpoint", "none", "--quiet", "--summary-json", str(summary), *flags]) == 0
    return json.loads(summary.read_text())


def _requests(rng: random.Random, n: int, keys: list[str], outlier: str, every_ms: int):
    """``n`` requests, one each ``every_ms`` from 10:00 on 2026-11-30: (time, key, failed), the ``outlier`` key's
    failing half the time, the others' 2%."""
    t0 = dt.datetime(2026, 11, 30, 10, tzinfo=dt.UTC)
    for i in range(n):
        key = rng.choice(keys)
        yield t0 + dt.timedelta(milliseconds=every_ms * i), key, rng.random() < (0.5 if key == outlier else 0.02)


def test_a_log_s_fields_and_the_command_that_finds_its_outlier(tmp_path, capsys):
    p = tmp_path / "access.jsonl"
    _nginx(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "10,000 records read" in out and "request_id" in out
    assert "keys (values that repeat): upstream_addr (12)" in out  # (not the request id: one record each)
    commands = _suggested(out)
    assert commands[0] == ["run", "--rewards-file", str(p), "--key-field", "upstream_addr", "--reward-field", "status",
                           "--numeric-strings", "--reward-at-least", "500", "--timestamp-field", "time_local",
                           "--timestamp-unit", "s"], commands
    assert any("--reward-model" in c and "request_time" in c for c in commands)
    assert _run_suggested(tmp_path, commands[0], "--policy", "cs")["flagged"] == ["10.0.0.7:8080"]


def test_a_table_a_pattern_and_a_flag_written_only_when_set(tmp_path, capsys):
    rng = random.Random(4)
    csv = tmp_path / "labels.csv"
    csv.write_text("worker_id,task,wrong\n" + "".join(
        f"w{w},t{i},{int(rng.random() < (0.4 if w == 3 else 0.1))}\n" for i in range(3000) for w in [rng.randrange(9)]))
    assert main(["inspect", str(csv)]) == 0
    assert _suggested(capsys.readouterr().out) == [["run", "--rewards-file", str(csv), "--key-field", "worker_id",
                                                    "--reward-field", "wrong"]]
    log = tmp_path / "app.log"
    log.write_text("".join(f"host=h{i % 5} level={'ERROR' if i % 17 == 0 else 'INFO'} ms={i % 300}\n"
                           for i in range(2000)))
    pattern = r"host=(?P<host>\S+) level=(?P<level>\S+)"
    assert main(["inspect", str(log), "--line-pattern", pattern]) == 0
    assert ["run", "--rewards-file", str(log), "--line-pattern", pattern, "--key-field", "host", "--reward-field",
            "level", "--reward-in", "ERROR"] in _suggested(capsys.readouterr().out)
    sparse = tmp_path / "sparse.jsonl"
    sparse.write_text("".join(json.dumps({"host": f"h{i % 6}"} | ({"error": "timed out"} if i % 23 == 0 else {}))
                              + "\n" for i in range(3000)))
    assert main(["inspect", str(sparse)]) == 0
    assert ["run", "--rewards-file", str(sparse), "--key-field", "host", "--reward-field", "error", "--reward-match",
            ".", "--reward-missing", "0"] in _suggested(capsys.readouterr().out)


def test_a_compressed_export_with_row_ids_suggests_no_id_for_a_reward(tmp_path, capsys):
    """A labelling tool's ``.csv.gz`` export (read decompressed) numbers its items: an integer column none of whose
    values repeats is an id, not a reward to bound (it was suggested first, ``--reward-range 0,10000``)."""
    import gzip

    rng = random.Random(6)
    p = tmp_path / "labels.csv.gz"
    p.write_bytes(gzip.compress(("worker,item,wrong\n" + "".join(
        f"w{w},{i},{int(rng.random() < (0.4 if w == 3 else 0.1))}\n" for i in range(3000)
        for w in [rng.randrange(9)])).encode()))
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "3,000 records read" in out
    assert _suggested(out) == [["run", "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "wrong"]]


def test_what_it_cannot_read_says_why(tmp_path, capsys):
    text = tmp_path / "plain.log"
    text.write_text("[14.11.2023 22:13:20] worker 3 started\n" * 20)  # (no format inspect knows)
    assert main(["inspect", str(text)]) == 1
    out = capsys.readouterr().out
    assert "20 refused (not_json 20)" in out and "a plain-text log needs --line-pattern" in out
    array = tmp_path / "export.json"
    array.write_text(json.dumps([{"host": "a", "err": 1}] * 5, indent=2))
    assert main(["inspect", str(array)]) == 2
    assert "is one JSON array, not JSON lines" in capsys.readouterr().err


def test_inspect_reads_across_a_large_file_not_only_its_head(tmp_path, capsys):
    """A table sorted by key whose first key fills the first 10,000 rows: read from its head alone it had one
    worker (no key found) and no 'note' column; read across it, every place brings another worker, in blocks."""
    p = tmp_path / "sorted.csv"
    with p.open("w") as f:
        f.write("worker,wrong,note\n")
        for w in range(8):
            for j in range(12_000):
                f.write(f"w{w},{int(j % 9 == 0)},{'late' if w >= 4 else ''}\n")
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("15,000 records read from ") and "(the first 10,000, then 5,000 from 4 places across" in out
    import re
    seen = int(re.search(r"keys \(values that repeat\): worker \((\d+)\)", out).group(1))
    assert seen >= 5  # w0 and one a place at least
    assert f"the records are grouped by worker: its {seen} values come one block each" in out
    assert "'late'" in out


def test_a_spreadsheet_export_with_decimal_commas_reads_them_as_numbers(tmp_path, capsys):
    """A labelling tool's CSV export saved by a spreadsheet in much of Europe: ``;`` between the cells, a comma as
    the decimal mark (``4,62``). ``run`` reads the reward column's ``4,62`` as 4.62; ``inspect`` profiles it as
    the number ``run`` reads (it was text, suggested as a *key* of 800 values and never as a reward), and the
    suggested command finds the slow worker."""
    rng = random.Random(8)
    rows = ["worker_id;item;wrong;duration"] + [
        f"w{w:02d};{i};{int(rng.random() < 0.1)};{rng.uniform(1, 9) + (5 if w == 3 else 0):.2f}".replace(".", ",")
        for i in range(8000) for w in [rng.randrange(20)]]
    p = tmp_path / "labels.csv"
    p.write_bytes(("\ufeff" + "\r\n".join(rows) + "\r\n").encode())
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "keys (values that repeat): worker_id (20)\n" in out, out
    duration = next(line for line in out.splitlines() if line.startswith("  duration"))
    assert duration.endswith(" 1 .. 13.99"), duration
    command = next(c for c in _suggested(out) if "duration" in c)
    assert command == ["run", "--rewards-file", str(p), "--key-field", "worker_id", "--reward-field", "duration",
                       "--reward-model", "bounded", "--reward-range", "0,14", "--clip"], command
    assert _run_suggested(tmp_path, command, "--policy", "cs")["flagged"] == ["w03"]


def test_a_tab_separated_export_with_decimal_commas_is_read_with_decimal_comma(tmp_path, capsys):
    """Excel's "Unicode Text" in a locale whose decimal mark is a comma: UTF-16, tabs between the cells, ``4,62``.
    Every reward was refused (a decimal comma was read only between semicolons). ``inspect`` now profiles the
    column as those numbers and suggests ``--decimal-comma``, which reads them: the suggested command finds the slow
    worker, as the same table with points does. Without the flag each is refused naming it; the flag with no table
    to read is a usage error; ``1,234`` (thousands, in a locale with points) is not taken for a decimal comma."""
    rng = random.Random(8)
    rows = [(f"w{w:02d}", i, f"{rng.uniform(1, 9) + (5 if w == 3 else 0):.2f}")
            for i in range(8000) for w in [rng.randrange(20)]]
    p = tmp_path / "Export.txt"
    p.write_bytes(("\ufeffworker_id\titem\tduration\r\n" + "".join(
        f"{w}\t{i}\t{d.replace('.', ',')}\r\n" for w, i, d in rows)).encode("utf-16-le"))
    assert main(["inspect", str(p), "--rewards-format", "tsv"]) == 0
    out = capsys.readouterr().out
    duration = next(line for line in out.splitlines() if line.startswith("  duration"))
    assert duration.endswith(" 1 .. 13.98"), duration  # (numbers, not text)
    command = next(c for c in _suggested(out) if "duration" in c)
    assert command[command.index("--reward-field"):] == ["--reward-field", "duration", "--decimal-comma",
                                                         "--reward-model", "bounded", "--reward-range", "0,14",
                                                         "--clip"], command
    with_points = tmp_path / "points.tsv"
    with_points.write_text("worker_id\titem\tduration\n" + "".join(f"{w}\t{i}\t{d}\n" for w, i, d in rows))
    got = _run_suggested(tmp_path, command, "--policy", "cs")
    points = _run_suggested(tmp_path, [str(with_points) if c == str(p) else c for c in command
                                       if c not in ("--decimal-comma", "--rewards-format", "tsv")], "--policy", "cs")
    assert got["flagged"] == ["w03"] and not got["invalid"]
    assert {k: got[k] for k in ("flagged", "records")} == {k: points[k] for k in ("flagged", "records")}
    dead = tmp_path / "dead.jsonl"
    without = [c for c in command if c != "--decimal-comma"]
    assert main([*without, "--checkpoint", "none", "--quiet", "--max-episodes", "1", "--dead-letter-file",
                 str(dead)]) == 2  # (every record refused)
    assert "or --decimal-comma)" in dead.read_text().splitlines()[0]
    (tmp_path / "r.jsonl").write_text('{"arm": "a", "reward": 1}\n')
    assert main(["run", "--rewards-file", str(tmp_path / "r.jsonl"), "--decimal-comma", "--checkpoint", "none"]) == 2
    assert "--decimal-comma reads the reward column's decimal commas (0,25) in a table" in capsys.readouterr().err
    thousands = tmp_path / "us.tsv"
    thousands.write_text("host\tbytes\n" + "".join(f"h{i % 9}\t{1000 + 37 * i:,}\n" for i in range(3000)))
    assert main(["inspect", str(thousands)]) == 0
    assert "--decimal-comma" not in capsys.readouterr().out


def test_a_spreadsheet_s_true_false_and_a_column_name_with_spaces(tmp_path, capsys):
    """A spreadsheet writes booleans as ``TRUE``/``FALSE`` and names columns with spaces: the column is suggested as
    the reward (it was not: only ``True``/``true`` were booleans), every name is quoted for the shell, and a JSON
    line's ``"TRUE"`` text (the rarer outcome) gets the ``--numeric-strings`` that reads it (without it, every line was
    refused)."""
    rng = random.Random(5)
    csv = tmp_path / "crowd.csv"
    csv.write_text("Worker ID,Task,Wrong Answer\n" + "".join(
        f"W-{w},{i},{'TRUE' if rng.random() < (0.6 if w == 4 else 0.08) else 'FALSE'}\n"
        for i in range(20000) for w in [rng.randrange(8)]))
    assert main(["inspect", str(csv)]) == 0
    [command] = _suggested(capsys.readouterr().out)
    assert command == ["run", "--rewards-file", str(csv), "--key-field", "Worker ID", "--reward-field", "Wrong Answer"]
    assert _run_suggested(tmp_path, command, "--policy", "cs")["flagged"] == ["W-4"]
    lines = tmp_path / "b.jsonl"
    lines.write_text("".join(json.dumps({"host": f"h{i % 6}", "failed": "FALSE" if i % 5 else "TRUE"}) + "\n"
                             for i in range(600)))
    assert main(["inspect", str(lines)]) == 0
    assert _suggested(capsys.readouterr().out) == [["run", "--rewards-file", str(lines), "--key-field", "host",
                                                    "--reward-field", "failed", "--numeric-strings"]]


def test_a_true_false_field_mostly_true_is_suggested_as_the_rate_of_its_rarer_outcome(tmp_path, capsys):
    """Right answers, successes: ~0.9 true, and the key that stands out stands out low. The field was suggested as
    it is, and the run (one-sided: above ``mu + k sigma``, which reached past 1) could flag no key; the suggestion is
    now the rate of the rarer outcome, as written (``false``, ``0``, a spreadsheet's ``FALSE``), which finds it."""
    rng = random.Random(6)
    for name, true, false, written in [("a.jsonl", True, False, "false"), ("b.jsonl", 1, 0, "0"),
                                       ("c.jsonl", "TRUE", "FALSE", "FALSE")]:
        p = tmp_path / name
        p.write_text("".join(json.dumps({"worker": f"w{w}", "correct": false if rng.random() < (0.45 if w == 3 else 0.08)
                                         else true}) + "\n" for w in (rng.randrange(12) for _ in range(30_000))))
        assert main(["inspect", str(p)]) == 0
        [command] = _suggested(capsys.readouterr().out)
        assert command == ["run", "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "correct",
                           "--reward-in", written], command
        assert _run_suggested(tmp_path, command, "--policy", "cs")["flagged"] == ["w3"]


def _journald(path, n=24_000, seed=9):
    """``journalctl -o json``'s export: every field a text, the time in microseconds, the severity a syslog level."""
    rng = random.Random(seed)
    t = 1_764_500_000_000_000
    with open(path, "w") as f:
        for i in range(n):
            host = f"node-{rng.randrange(12)}"
            t += rng.randrange(1_000, 100_000)
            err = rng.random() < (0.3 if host == "node-3" else 0.03)
            f.write(json.dumps({"__CURSOR": f"s=1;i={i}", "__REALTIME_TIMESTAMP": str(t),
                                "__MONOTONIC_TIMESTAMP": str(t - 1_764_000_000_000_000), "_BOOT_ID": "b1",
                                "PRIORITY": rng.choice("0123") if err else rng.choice("4566"), "_HOSTNAME": host,
                                "SYSLOG_IDENTIFIER": rng.choice(["kubelet", "sshd", "containerd"]),
                                "_PID": str(rng.randrange(100, 9999)), "MESSAGE": "m"}) + "\n")


def test_a_journald_export_s_host_its_error_priorities_and_its_microseconds(tmp_path, capsys):
    """journald writes every field as text: its time (``__REALTIME_TIMESTAMP``, microseconds) was refused as no
    time (every record ``bad_timestamp``), its severity (``PRIORITY``, syslog's 0-7) was no suggested reward, and its
    process id (``_PID``) was suggested as a bounded one."""
    p = tmp_path / "journal.json"
    _journald(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    commands = _suggested(out)
    assert commands == [["run", "--rewards-file", str(p), "--key-field", "_HOSTNAME", "--reward-field", "PRIORITY",
                         "--reward-in", "0,1,2,3", "--timestamp-field", "__REALTIME_TIMESTAMP", "--timestamp-unit",
                         "us"]], out
    got = _run_suggested(tmp_path, commands[0], "--policy", "cs")
    assert got["flagged"] == ["node-3"] and got["invalid"] == {}, got


def test_a_pino_log_s_numeric_levels(tmp_path, capsys):
    """pino and bunyan write the level as a number (30 info, 50 error): it was no suggested reward at all."""
    rng = random.Random(3)
    p = tmp_path / "app.jsonl"
    with open(p, "w") as f:
        for i in range(20_000):
            host = f"web-{rng.randrange(9)}"
            err = rng.random() < (0.3 if host == "web-5" else 0.03)
            f.write(json.dumps({"level": rng.choice([50, 60]) if err else rng.choice([30, 30, 40]),
                                "time": 1_700_000_000_000 + 40 * i, "pid": rng.randrange(100, 200),
                                "hostname": host, "msg": "m"}) + "\n")
    assert main(["inspect", str(p)]) == 0
    commands = _suggested(capsys.readouterr().out)
    assert commands == [["run", "--rewards-file", str(p), "--key-field", "hostname", "--reward-field", "level",
                         "--reward-at-least", "50", "--timestamp-field", "time"]], commands
    assert _run_suggested(tmp_path, commands[0], "--policy", "cs")["flagged"] == ["web-5"]


def test_a_heroku_router_log_s_durations_are_no_key(tmp_path, capsys):
    """Heroku's router writes logfmt with durations in their unit (``service=18ms``): the durations were taken for
    the key (189 "values that repeat", and a false warning that the records came grouped by them)."""
    rng = random.Random(5)
    p = tmp_path / "router.log"
    with open(p, "w") as f:
        for _ in range(6_000):
            dyno = f"web.{rng.randrange(1, 9)}"
            status = rng.choice([500, 503]) if rng.random() < (0.4 if dyno == "web.4" else 0.02) else 200
            f.write(f'2026-11-30T10:00:00+00:00 heroku[router]: at=info method=GET path="/a{rng.randrange(9)}" '
                    f"dyno={dyno} connect={rng.randrange(3)}ms service={int(rng.expovariate(1 / 30))}ms "
                    f"status={status} protocol=https\n")
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "keys (values that repeat): dyno (8), path (9)\n" in out and "grouped" not in out, out  # (status: an outcome)
    commands = _suggested(out)  # (failures first, then durations)
    assert commands[0] == ["run", "--rewards-file", str(p), "--line-pattern", "logfmt", "--key-field", "dyno",
                           "--reward-field", "status", "--reward-at-least", "500"], commands
    assert commands[1][:9] == ["run", "--rewards-file", str(p), "--line-pattern", "logfmt", "--key-field", "dyno",
                               "--reward-field", "service"] and "--reward-unit" in commands[1], commands


def test_a_cloud_load_balancer_s_key_four_levels_deep(tmp_path, capsys):
    """A Google Cloud load balancer's request log names its backend three objects down
    (``resource.labels.backend_service_name``): inspect read two levels, missed it and took the response sizes (800
    numbers written as text) for the key."""
    rng = random.Random(8)
    p = tmp_path / "requests.jsonl"
    with open(p, "w") as f:
        for i in range(4_000):
            backend = f"backend-{rng.randrange(10)}"
            f.write(json.dumps({"httpRequest": {"status": 502 if rng.random() < 0.05 else 200,
                                                "responseSize": str(rng.randrange(100, 900)),
                                                "latency": f"{rng.expovariate(20):.6f}s"},
                                "resource": {"type": "http_load_balancer",
                                             "labels": {"backend_service_name": backend, "zone": "global"}},
                                "timestamp": f"2026-11-30T10:{i // 600:02d}:{i // 10 % 60:02d}Z"}) + "\n")
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "keys (values that repeat): resource.labels.backend_service_name (10), httpRequest.responseSize" in out, out
    assert _suggested(out)[0] == ["run", "--rewards-file", str(p), "--key-field", "resource.labels.backend_service_name",
                                  "--reward-field", "httpRequest.status", "--reward-at-least", "500"]


def test_a_kubernetes_ingress_nginx_log_is_known_and_keyed_by_its_upstream_service(tmp_path, capsys):
    """ingress-nginx's default lines are combined-format lines and more: read as ``combined`` they lost the service
    a request was routed to, and their request lengths (200-599 bytes) were taken for a status code."""
    rng = random.Random(3)
    p = tmp_path / "ingress.log"
    with open(p, "w") as f:
        for i in range(12_000):
            svc = f"default-svc{rng.randrange(12)}-80"
            status = 502 if rng.random() < (0.5 if svc == "default-svc4-80" else 0.02) else 200
            t = rng.expovariate(20)
            f.write(f'10.1.2.{rng.randrange(255)} - - [30/Nov/2026:10:{i // 600 % 60:02d}:{i // 10 % 60:02d} +0000] '
                    f'"GET /api/items/{rng.randrange(1000)} HTTP/1.1" {status} {rng.randrange(100, 900)} "-" "curl/8" '
                    f"{rng.randrange(200, 600)} {t:.3f} [{svc}] [] 10.2.0.{rng.randrange(40)}:8080 "
                    f"{rng.randrange(100, 900)} {t:.3f} {status} {rng.getrandbits(64):016x}\n")
    commands = _inspected_as(capsys, p, "ingress-nginx")
    assert commands[0] == ["run", "--rewards-file", str(p), "--line-pattern", "ingress-nginx", "--key-field",
                           "proxy_upstream_name", "--reward-field", "status", "--reward-at-least", "500",
                           "--timestamp-field", "time_local"], commands
    assert not any("request_length" in c and "--reward-at-least" in c for c in commands), commands
    assert _run_suggested(tmp_path, commands[0], "--policy", "cs")["flagged"] == ["default-svc4-80"]


def test_an_haproxy_log_is_known_and_keyed_by_its_servers(tmp_path, capsys):
    """HAProxy's HTTP log (sent through syslog) was no format inspect knew: every line refused as not JSON."""
    rng = random.Random(4)
    p = tmp_path / "haproxy.log"
    with open(p, "w") as f:
        for i in range(12_000):
            srv = f"web{rng.randrange(10)}"
            status = 503 if rng.random() < (0.5 if srv == "web7" else 0.02) else 200
            tr = int(rng.expovariate(1 / 40))
            clock = f"10:{i // 600 % 60:02d}:{i // 10 % 60:02d}"
            f.write(f"Nov 30 {clock} lb1 haproxy[1234]: 10.0.1.{rng.randrange(255)}:{rng.randrange(1024, 65535)} "
                    f"[30/Nov/2026:{clock}.{rng.randrange(1000):03d}] http-in app/{srv} 0/0/1/{tr}/{tr + 2} {status} "
                    f'{rng.randrange(100, 9000)} - - ---- 12/12/3/1/0 0/0 "GET /api/v1/item/{rng.randrange(500)} '
                    'HTTP/1.1"\n')
    commands = _inspected_as(capsys, p, "haproxy")
    status = ["run", "--rewards-file", str(p), "--line-pattern", "haproxy", "--key-field", "server_name",
              "--reward-field", "status_code", "--reward-at-least", "500", "--timestamp-field", "accept_date"]
    assert status in commands and all(c[6] == "server_name" for c in commands), commands
    assert any("time_backend_response" in c and "--reward-model" in c for c in commands)
    assert _run_suggested(tmp_path, status, "--policy", "cs")["flagged"] == ["web7"]


def test_an_istio_sidecar_log_is_known_and_keyed_by_its_upstream_cluster(tmp_path, capsys):
    """Envoy's and Istio's text access logs were no format inspect knew: every line refused as not JSON."""

    rng = random.Random(6)
    p = tmp_path / "istio.log"
    with open(p, "w") as f:
        for t, svc, bad in _requests(rng, 12_000, [f"svc{i}" for i in range(10)], "svc2", 50):
            d = int(rng.expovariate(1 / 20))
            ts = t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            f.write(f'[{ts}] "GET /api/{rng.randrange(9)} HTTP/1.1" {503 if bad else 200} {"UF" if bad else "-"} '
                    f'via_upstream - "-" 0 {rng.randrange(100, 900)} {d + 1} {d} "-" "curl/8" "{rng.getrandbits(64):x}" '
                    f'"{svc}:8080" "10.0.0.{rng.randrange(30)}:8080" outbound|8080||{svc}.default.svc.cluster.local '
                    f"10.1.0.5:41234 10.96.0.{rng.randrange(10)}:8080 10.1.0.5:50000 - default\n")
    commands = _inspected_as(capsys, p, "envoy")
    assert commands[0] == ["run", "--rewards-file", str(p), "--line-pattern", "envoy", "--key-field", "upstream_cluster",
                           "--reward-field", "response_code", "--reward-at-least", "500", "--timestamp-field",
                           "start_time"], commands
    assert _run_suggested(tmp_path, commands[0], "--policy", "cs")["flagged"] == [
        "outbound|8080||svc2.default.svc.cluster.local"]


def test_a_syslog_file_is_known_and_its_messages_failures_suggested(tmp_path, capsys):
    """A syslog file (``auth.log``) was a format inspect did not know, and a free text -- its messages -- no reward:
    the share of messages that say a failure is now suggested, and the command finds the host under attack."""
    rng = random.Random(4)
    t0 = dt.datetime(2026, 11, 30, 9)
    p = tmp_path / "auth.log"
    with open(p, "w") as f:
        for i in range(24_000):
            host = f"srv-{rng.randrange(12):02d}"
            when = (t0 + dt.timedelta(seconds=0.05 * i)).strftime("%b %d %H:%M:%S")
            if rng.random() < 0.3:
                f.write(f"{when} {host} CRON[{rng.randrange(99999)}]: pam_unix(cron:session): session opened\n")
            else:
                failed = rng.random() < (0.5 if host == "srv-03" else 0.04)
                f.write(f"{when} {host} sshd[{rng.randrange(99999)}]: {'Failed' if failed else 'Accepted'} password "
                        f"for u{rng.randrange(50)} from 10.0.{rng.randrange(9)}.{rng.randrange(250)} port 22 ssh2\n")
    commands = _inspected_as(capsys, p, "syslog")
    assert commands == [["run", "--rewards-file", str(p), "--line-pattern", "syslog", "--key-field", "host",
                         "--reward-field", "message", "--reward-match", "(?i)error|fail|fatal|denied|refused|timed? ?out",
                         "--timestamp-field", "time"]], commands
    assert _run_suggested(tmp_path, commands[0], "--policy", "cs")["flagged"] == ["srv-03"]


def test_a_traefik_access_log_s_service_its_status_and_its_nanoseconds(tmp_path, capsys):
    """Traefik's JSON access log names its fields in camel case (``ServiceName``, ``DownstreamStatus``) and writes
    ``Duration`` in ns, whole numbers that never repeat: the key was the service's address (3 values) for want of a
    known name, and the durations were taken for ids and not suggested. Camel-case names read as words, a duration by
    its name is no id, and failures are suggested first."""
    rng = random.Random(11)
    p = tmp_path / "traefik.json"
    with open(p, "w") as f:
        for i, (t, svc, bad) in enumerate(_requests(rng, 12_000, [f"svc{i}@kubernetes" for i in range(12)],
                                                    "svc4@kubernetes", 10)):
            ns = int(rng.expovariate(1 / 20e6)) + 1
            f.write(json.dumps({"ClientPort": str(rng.randrange(30000, 60000)), "DownstreamStatus": 502 if bad else 200,
                                "Duration": ns + 90_000, "OriginDuration": ns, "RetryAttempts": 0,
                                "RouterName": svc.replace("svc", "rt"), "ServiceAddr": f"10.2.0.{i % 3}:8080",
                                "ServiceName": svc, "RequestCount": i + 1, "time": t.isoformat()}) + "\n")
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "keys (values that repeat): ServiceName (12), ServiceAddr (3), RouterName (12)\n" in out, out
    commands = _suggested(out)
    assert commands[0] == ["run", "--rewards-file", str(p), "--key-field", "ServiceName", "--reward-field",
                           "DownstreamStatus", "--reward-at-least", "500", "--timestamp-field", "time"], commands
    assert [c[6] for c in commands] == ["DownstreamStatus", "Duration", "OriginDuration"], commands
    assert commands[1][7:10] == ["--reward-model", "bounded", "--reward-range"], commands
    assert _run_suggested(tmp_path, commands[0], "--policy", "cs")["flagged"] == ["svc4@kubernetes"]


def test_a_caddy_log_s_constant_flag_is_no_reward_and_its_lists_are_shown(tmp_path, capsys):
    """Caddy's JSON access log: a flag the same in every record (``request.tls.resumed``: false) was the first
    suggestion, before the status; its headers (lists) showed as "0 distinct" and nothing."""
    rng = random.Random(12)
    p = tmp_path / "caddy.log"
    with open(p, "w") as f:
        for i in range(3_000):
            host = f"shop{rng.randrange(6)}.example.com"
            f.write(json.dumps({"ts": 1764496800 + i / 10, "request": {
                "host": host, "headers": {"User-Agent": ["curl/8.0"]}, "tls": {"resumed": False}},
                "duration": rng.expovariate(20), "status": 502 if rng.random() < 0.05 else 200}) + "\n")
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"request\.headers\.User-Agent +100\.0% +list 100% +lists +\[\"curl/8\.0\"\]\n", out), out
    commands = _suggested(out)
    assert [c[6] for c in commands] == ["status", "duration"], commands


def test_an_application_s_text_log_with_stack_traces(tmp_path, capsys):
    """A Java service's log (logback's layout, ``host=`` in its messages, a stack trace after each error): inspect
    found no format ("needs --line-pattern"), and with a pattern each trace's line was a dead letter."""
    rng = random.Random(4)
    p = tmp_path / "service.log"
    with open(p, "w") as f:
        for i, (t, host, failed) in enumerate(_requests(rng, 20_000, [f"web-{i}" for i in range(10)], "web-4", 30)):
            f.write(f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d} {'ERROR' if failed else 'INFO '} "
                    f"[exec-{i % 8}] c.e.Cart host={host} - {'request failed' if failed else 'ok'}\n")
            if failed:
                f.write("java.lang.IllegalStateException: closed\n\tat com.example.Cart.add(Cart.java:42)\n"
                        "Caused by: java.io.EOFException\n\t... 12 more\n")
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the lines are an application's text log (a time, then a level"), out
    assert "keys (values that repeat): host (10)\n" in out and "refused (" not in out, out
    first = _suggested(out)[0]
    assert first == ["run", "--rewards-file", str(p), "--line-pattern", "app", "--key-field", "host", "--reward-field",
                     "level", "--reward-in", "ERROR", "--timestamp-field", "time"], first
    got = _run_suggested(tmp_path, first, "--policy", "cs", "--max-episodes", "1")
    assert got["flagged"] == ["web-4"] and got["invalid"] == {}, got


def test_a_compressed_file_cut_short_is_said_so_not_taken_for_text_in_a_code_page(tmp_path, capsys):
    """A ``.jsonl.bz2`` cut short: ``inspect`` said "0 records read" and nothing of the damage, or took the compressed
    bytes for text in Windows-1252 ("is not UTF-8: read as cp1252"). It now names the damage, as ``run`` does, and
    gives no advice on the encoding of bytes that are no text. A zip (a workbook) is no text either."""
    import bz2

    from streamarms.connectors.text_encoding import advice

    rng = random.Random(4)
    whole = bz2.compress(b"".join(b'{"arm": "h%d", "ms": %.3f}\n' % (rng.randrange(9), rng.random())
                                  for _ in range(5000)))
    assert len(whole) > 3000
    for cut in (300, len(whole) // 2):
        p = tmp_path / f"cut{cut}.jsonl.bz2"
        p.write_bytes(whole[:cut])
        code = main(["inspect", str(p)])
        out, err = capsys.readouterr()
        assert "not UTF-8" not in out + err and "cannot be decompressed" in out + err, (code, out, err)
        assert code in (1, 2)
    assert advice("x.xlsx", b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00\xff\xfe\x9a") is None


def test_a_few_odd_values_in_a_field_of_two_outcomes_do_not_hide_it(tmp_path, capsys):
    """One ``{"reward": 1e308}`` or ``"yes"`` among 3,000 0/1 rewards: inspect said 'no likely reward field'. Up to
    1% of odd values beside two outcomes leave it a reward (run refuses those as dead letters), and the run finds the
    outlier."""
    rng = random.Random(4)
    lines = [json.dumps({"host": f"h{h}", "reward": int(rng.random() < (0.5 if h == 2 else 0.05))})
             for h in (rng.randrange(12) for _ in range(24_000))]
    lines[100], lines[5000] = '{"host": "h1", "reward": 1e308}', '{"host": "h4", "reward": "yes"}'
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(lines) + "\n")
    assert main(["inspect", str(p)]) == 0
    [command] = _suggested(capsys.readouterr().out)
    assert command[:7] == ["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "reward"], command
    got = _run_suggested(tmp_path, command, "--max-episodes", "1")
    assert got["flagged"] == ["h2"] and sum(got["invalid"].values()) == 2, got


def test_a_time_under_another_name_a_http_date_and_texts_among_latencies(tmp_path, capsys):
    """A data-scientist drill: ``event_time`` holding seconds since the epoch was suggested as a latency of up to
    1.8e9 (and no time); an HTTP date (Fri, 01 Mar 2024 00:00:00 GMT) had no format; 5% of "timeout" cells among
    latencies hid the field (no reward suggested) and its column showed only the numbers' range; examples were cut at
    24 characters with no sign of it."""
    import csv
    rng = random.Random(0)
    rows = [(f"r{i % 10}", int(rng.random() < (0.4 if i % 10 == 3 else 0.1)), 1_709_251_200.0 + i,
             dt.datetime(2024, 3, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
             "timeout" if rng.random() < 0.05 else rng.randint(20, 2000)) for i in range(3000)]
    for column, want in (("event_time", ["--timestamp-field", "event_time", "--timestamp-unit", "s"]),
                         ("http_date", ["--timestamp-field", "http_date", "--timestamp-format", "%a, %d %b %Y %H:%M:%S %Z"])):
        p = tmp_path / f"{column}.csv"
        with open(p, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["region", "clicked", column, "response_ms"])
            for region, clicked, epoch, when, ms in rows:
                w.writerow([region, clicked, epoch if column == "event_time" else when.strftime("%a, %d %b %Y %H:%M:%S GMT"), ms])
        assert main(["inspect", str(p)]) == 0
        out = capsys.readouterr().out
        commands = _suggested(out)
        assert all(c[-len(want):] == want for c in commands), commands
        assert not any(c[c.index("--reward-field") + 1] == column for c in commands)
        assert any("--reward-field response_ms" in " ".join(c) for c in commands)
        assert re.search(r"response_ms .* 20 \.\. 2,000; \d+ not numbers: 'timeout' \(\d+\)", out), out
        if column == "http_date":
            assert "'Fri, 01 Mar 2024 00:00:00 GMT' (1)" in out
        assert main([*commands[0], "--policy", "cs", "--quiet",
                     "--checkpoint", "none"]) == 0  # (runs as printed)
        capsys.readouterr()


def test_two_outcomes_in_words_suggest_the_rarer_ones_rate(tmp_path, capsys):
    """click / no_click: "no likely reward field", and run's refusals then suggested --reward-in no_click (the common
    outcome, the first refused row's), whose threshold reached past 1."""
    rng = random.Random(1)
    p = tmp_path / "clicks.csv"
    p.write_text("region,clicked\n" + "".join(
        f"r{i % 10},{'click' if rng.random() < (0.6 if i % 10 == 3 else 0.1) else 'no_click'}\n" for i in range(10_000)))
    assert main(["inspect", str(p)]) == 0
    commands = _suggested(capsys.readouterr().out)
    assert commands[0][-4:] == ["--reward-field", "clicked", "--reward-in", "click"], commands
    assert main([*commands[0], "--policy", "cs", "--checkpoint", "none"]) == 0
    assert "flagged now: r3" in capsys.readouterr().out


def test_an_id_column_with_a_few_texts_is_no_reward(tmp_path, capsys):
    """Once up to a tenth of texts among numbers no longer hid a latency, a user id with 5% "anonymous" was suggested
    as a bounded reward (a review): whole numbers none of which repeats stay an id, a few texts aside."""
    rng = random.Random(0)
    p = tmp_path / "uid.csv"
    p.write_text("region,clicked,user_id\n" + "".join(
        f"r{i % 10},{int(rng.random() < 0.1)},{'anonymous' if rng.random() < 0.05 else 100_000 + i}\n"
        for i in range(3000)))
    assert main(["inspect", str(p)]) == 0
    commands = _suggested(capsys.readouterr().out)
    assert [c[c.index("--reward-field") + 1] for c in commands] == ["clicked"], commands

"""``streamarms run --line-pattern``: an nginx access log in the combined format (not JSON) gives the endpoint
whose 5xx rate stands out, in both modes, with the log's own times; a field the run reads that the pattern
has no group for is one error; a restart resumes at the next line and may not change the pattern."""

from __future__ import annotations

import datetime as dt
import json
import random
import shlex

import pytest

from streamarms.cli import main

PATHS = ["/", "/api/cart", "/api/search", "/api/login", "/static/app.js", "/api/orders", "/health", "/api/pay",
         "/api/user", "/api/items", "/api/stock", "/api/news", "/api/help", "/favicon.ico", "/api/ads"]


def _access_log(path, n=30_000, seed=8, start=0):
    rng = random.Random(seed)
    t0 = dt.datetime(2026, 11, 20, 10, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    with open(path, "a") as f:
        for i in range(start, start + n):
            p = rng.choice(PATHS)
            failed = rng.random() < (0.2 if p == "/api/pay" else 0.02)
            status = rng.choice([500, 502, 503]) if failed else rng.choice([200, 200, 304, 404])
            t = (t0 + dt.timedelta(milliseconds=20 * i)).strftime("%d/%b/%Y:%H:%M:%S %z")
            q = f"?q={rng.randrange(100)}" if p == "/api/search" else ""
            f.write(f'10.0.0.{rng.randrange(250)} - - [{t}] "GET {p}{q} HTTP/1.1" {status} {rng.randrange(5000)} '
                    f'"-" "Mozilla/5.0 (X11; Linux x86_64)"\n')


ARGS = ["--line-pattern", "combined", "--key-field", "path", "--reward-field", "status", "--reward-at-least", "500"]


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1", "--timestamp-field", "time_local"],
                                  ["--forever", "--timestamp-field", "time_local"]], ids=["episodes", "continuous"])
def test_the_endpoint_with_the_high_error_rate_of_an_access_log(tmp_path, mode):
    p, summary = tmp_path / "access.log", tmp_path / "s.json"
    p.write_text("a line of another program\n")
    _access_log(p)
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", *ARGS, "--summary-json", str(summary),
                 "--quiet", *mode]) == 0
    got = json.loads(summary.read_text())
    assert got["flagged"] == ["/api/pay"] and got["invalid"] == {"bad_row": 1}, got


def test_a_field_without_a_group_is_one_error_and_a_restart_goes_on(tmp_path, capsys):
    p, ck, summary = tmp_path / "access.log", str(tmp_path / "c.ckpt"), tmp_path / "s.json"
    _access_log(p, n=2_000)
    assert main(["run", "--rewards-file", str(p), *ARGS[:4], "--reward-field", "upstream_status"]) == 2
    assert "--line-pattern combined has no group 'upstream_status' (--reward-field): its groups are remote_addr," \
        in capsys.readouterr().err
    base = ["run", "--rewards-file", str(p), "--checkpoint", ck, *ARGS, "--forever", "--summary-json", str(summary)]
    assert main(base) == 0
    _access_log(p, n=1_000, start=2_000)
    assert main(base) == 0
    assert json.loads(summary.read_text())["records"] == 3_000  # every line once
    capsys.readouterr()
    assert main([*base, "--line-pattern", "common"]) == 2
    assert "--line-pattern 'combined' (this run: 'common')" in capsys.readouterr().err


@pytest.mark.parametrize("extra, needle", [
    (["--rewards-format", "csv"], "--line-pattern reads every --rewards-file line with a pattern"),
    (["--line-pattern", r"\d+"], "names no group"),
])
def test_what_cannot_go_with_a_pattern_is_refused(tmp_path, capsys, extra, needle):
    p = tmp_path / "access.log"
    _access_log(p, n=10)
    assert main(["run", "--rewards-file", str(p), *ARGS, *extra]) == 2
    assert needle in capsys.readouterr().err
    assert main(["run", "--line-pattern", "combined"]) == 2  # (the embedded demo's records are JSON)
    assert "--line-pattern reads the lines of --rewards-file files, or the values of Kafka" in capsys.readouterr().err
    # (a topic's values are read by it, and a field the pattern has no group for is an error before connecting)
    assert main(["run", "--bootstrap-servers", "localhost:1", "--rewards-topic", "t", "--line-pattern", "envoy"]) == 2
    assert "--line-pattern envoy has no group 'reward' (--reward-field)" in capsys.readouterr().err


def test_the_host_whose_share_of_failed_ssh_logins_stands_out_from_a_syslog(tmp_path):
    """A traditional syslog (``Dec 31 23:59:58 host sshd[812]: ...``: no year, no zone), read over New Year with
    its own times: the times were ``bad_timestamp`` dead letters, every line; they are read in the latest year
    that does not put them after tomorrow, so the stream's clock runs on across the year's end."""
    rng = random.Random(4)
    t0 = dt.datetime(2025, 12, 31, 23, 0, 0)
    lines = []
    for i in range(20_000):
        host = f"srv-{rng.randrange(12):02d}"
        failed = rng.random() < (0.4 if host == "srv-03" else 0.05)
        when = (t0 + dt.timedelta(seconds=0.5 * i)).strftime("%b %d %H:%M:%S")
        when = when[:4] + (when[4:6].replace("0", " ", 1) if when[4] == "0" else when[4:6]) + when[6:]
        lines.append(f"{when} {host} sshd[{rng.randrange(99999)}]: {'Failed' if failed else 'Accepted'} password for "
                     f"u{rng.randrange(50)} from 10.0.{rng.randrange(9)}.{rng.randrange(250)} port 22 ssh2\n")
    p, summary = tmp_path / "auth.log", tmp_path / "s.json"
    p.write_text("".join(lines))
    assert "Jan  1 00:" in p.read_text()
    pattern = r"^(?P<time>\w{3} [ \d]\d [\d:]{8}) (?P<host>\S+) sshd\[\d+\]: (?P<outcome>Failed|Accepted) password"
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--line-pattern", pattern, "--key-field",
                 "host", "--reward-field", "outcome", "--reward-in", "Failed", "--timestamp-field", "time",
                 "--policy", "cs", "--max-episodes", "1", "--summary-json", str(summary), "--quiet"]) == 0
    got = json.loads(summary.read_text())
    assert got["flagged"] == ["srv-03"] and not got["invalid"], got
    ep = got["episodes"][0]  # (stream time: 23:00 on Dec 31st, 2025, into New Year's night)
    assert dt.datetime(2025, 12, 31, 23, tzinfo=dt.UTC).timestamp() <= ep["started"] < \
        dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp() < ep["ended"], ep


def test_inspect_sees_an_access_log_and_its_command_finds_the_endpoint(tmp_path, capsys):
    """``streamarms inspect access.log`` without ``--line-pattern``: it said only "a plain-text log needs
    --line-pattern"; it now sees the combined format itself, and its first suggestion runs as printed."""
    from test_inspect_cli import _run_suggested

    p = tmp_path / "access.log"
    _access_log(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the lines are an access log in the combined format (nginx's and Apache's default), not "
                          "JSON: read with --line-pattern combined\n"), out
    first = next(line for line in out.splitlines() if line.startswith("  streamarms run "))
    command = shlex.split(first)[1:]
    assert command[3:5] == ["--line-pattern", "combined"] and "--reward-at-least" in command, command
    assert _run_suggested(tmp_path, command, "--policy", "cs", "--max-episodes", "1")["flagged"] == ["/api/pay"]


def _upstream_log(path, n=20_000, seed=3, pairs=True):
    """nginx's documented ``upstream_time`` format (``rt=$request_time ... urt="$upstream_response_time"``) with the
    upstream's address after it (``pairs``), or the combined format with ``$request_time $upstream_addr`` appended."""
    rng = random.Random(seed)
    t0 = dt.datetime(2026, 11, 20, 10, 0, 0, tzinfo=dt.UTC)
    with open(path, "w") as f:
        for i in range(n):
            up = f"10.0.1.{rng.randrange(8)}:8080"
            rt = min(rng.expovariate(1 / (0.4 if up == "10.0.1.5:8080" else 0.05)), 2.0)
            t = (t0 + dt.timedelta(milliseconds=50 * i)).strftime("%d/%b/%Y:%H:%M:%S %z")
            rest = f'rt={rt:.3f} uct="0.000" urt="{rt:.3f}" ua="{up}"' if pairs else f'"-" {rt:.3f} {up}'
            f.write(f'10.2.3.{rng.randrange(200)} - - [{t}] "GET /api/items/{rng.randrange(999)} HTTP/1.1" 200 '
                    f'{rng.randrange(9000)} "-" "Mozilla/5.0 (X11)" {rest}\n')


@pytest.mark.parametrize("pairs, key, reward", [(True, "ua", "rt"), (False, "extra_3", "extra_2")],
                         ids=["name=value", "appended"])
def test_what_a_combined_log_format_adds_after_its_fields_is_read(tmp_path, capsys, pairs, key, reward):
    """Most nginx configurations add the request's time and the upstream after the combined format's fields (the
    ``main`` format's ``"$http_x_forwarded_for"``, nginx's documented ``rt=$request_time urt=...``): those fields were
    dropped -- the slow upstream could not be found, and ``inspect`` did not show them. They are read (``name=value``
    pairs by name, other values as ``extra_N``), ``inspect`` suggests them, the run finds the upstream, and a name
    the lines do not give is still one error before the run."""
    p, summary = tmp_path / "access.log", tmp_path / "s.json"
    _upstream_log(p, pairs=pairs)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert f"keys (values that repeat): path (999), {key} (8)" in out, out
    assert f"--reward-field {reward} --reward-model bounded --reward-range 0,2" in out, out
    args = ["run", "--rewards-file", str(p), "--line-pattern", "combined", "--key-field", key, "--reward-field", reward,
            "--reward-model", "bounded", "--reward-range", "0,2", "--timestamp-field", "time_local"]
    assert main([*args, "--policy", "cs", "--k", "1.5", "--max-episodes", "1", "--summary-json", str(summary),
                 "--quiet"]) == 0
    got = json.loads(summary.read_text())
    assert got["flagged"] == ["10.0.1.5:8080"] and not got["invalid"], got
    capsys.readouterr()
    assert main([*args[:5], "--key-field", "upstream", *args[7:]]) == 2
    err = capsys.readouterr().err
    assert "--line-pattern combined has no group 'upstream' (--key-field): its groups are remote_addr," in err, err
    assert f"its first lines give {'rt, ua, uct, urt' if pairs else 'extra_2, extra_3'} after them" in err, err


def test_a_name_after_combined_s_groups_is_a_warning_where_no_line_can_be_read_before_the_run(caplog):
    """Standard input and a Kafka topic have no lines to read before the run: a name ``combined``'s rest may give is
    let through with a warning (a line without it is a ``key_missing`` dead letter); a pattern that reads no rest
    still refuses it."""
    from types import SimpleNamespace

    from streamarms.cli.file_input import check_columns
    from streamarms.connectors.kafka_lines import ValueLines
    from streamarms.connectors.pattern_lines import PatternLines
    from streamarms.errors import ConfigError

    s = SimpleNamespace(reward_field="rt", key_field="ua", group_by=None, explicit=set(), line_pattern="combined",
                        sheet=None)
    check_columns({"-": PatternLines("combined")}, s)
    check_columns({"-": ValueLines("combined")}, s, own_keys=True)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "--line-pattern combined has no group 'rt' (--reward-field)", "--line-pattern combined has no group 'ua' "
        "(--key-field)"] * 2
    with pytest.raises(ConfigError, match="--line-pattern envoy has no group 'rt'"):
        check_columns({"-": PatternLines("envoy")}, SimpleNamespace(**{**vars(s), "line_pattern": "envoy"}))

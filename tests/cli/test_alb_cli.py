"""``--line-pattern alb``: the target of an AWS Application Load Balancer whose 5xx rate stands out, from its access
log. ``inspect`` sees the format itself; its suggested command (keyed by ``target``, the record's time its ``time``)
runs as printed and finds the target; a request the load balancer answered itself (``"- - - "``) is read too, and
one it answered for want of a target (its target ``-``) is no key of its own."""

from __future__ import annotations

import datetime as dt
import random

from test_inspect_cli import _run_suggested, _suggested

from streamarms.cli import main


def _alb(path, n=30_000, seed=4):
    rng = random.Random(seed)
    t0 = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    targets = [f"10.0.1.{i}:8080" for i in range(10)]
    with open(path, "w") as f:
        for i in range(n):
            t = (t0 + dt.timedelta(milliseconds=40 * i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            target = rng.choice(targets)
            bad = rng.random() < (0.3 if target == "10.0.1.6:8080" else 0.02)
            status = 502 if bad else 200
            request = (f'"GET https://shop.example.com:443/api/items/{rng.randrange(999)}?page=2 HTTP/1.1"'
                       if i % 500 else '"- - - "')
            took, answered = f"{rng.uniform(0.01, 0.3) * (3 if target == '10.0.1.3:8080' else 1):.3f}", status
            if i % 97 == 0:  # answered by the balancer itself (no healthy target): no target, no target time
                target, status, took, answered = "-", 503, "-1", "-"
            f.write(f"https {t} app/shop/50dc6c495c0c9188 192.168.{rng.randrange(255)}.{rng.randrange(255)}:2817 "
                    f"{target} 0.000 {took} 0.000 {status} {answered} 120 {rng.randrange(9999)} "
                    f'{request} "Mozilla/5.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 '
                    'arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop/73e2d6bc24d8a067 '
                    f'"Root=1-58337281-1d84f3d73c47ec4e58577259" "shop.example.com" "-" 0 {t} "forward" "-" "-" '
                    f'"{target}" "{status}" "-" "-" TID_1\n')


def test_inspect_sees_an_alb_log_and_its_command_finds_the_failing_target(tmp_path, capsys):
    p = tmp_path / "alb.log"
    _alb(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the lines are an AWS Application Load Balancer's access log, not JSON: read with "
                          "--line-pattern alb\n"), out
    [command] = [c for c in _suggested(out) if "elb_status_code" in c]
    assert command == ["run", "--rewards-file", str(p), "--line-pattern", "alb", "--key-field", "target",
                       "--reward-field", "elb_status_code", "--reward-at-least", "500", "--timestamp-field", "time"]
    got = _run_suggested(tmp_path, command, "--policy", "cs", "--max-episodes", "1")
    assert got["flagged"] == ["10.0.1.6:8080"] and got["known_arms"] == 10, got  # ("-" is no key)
    assert set(got["invalid"]) == {"key_missing"}, got


def test_the_suggested_latency_command_finds_the_slow_target(tmp_path, capsys):
    """An ALB's processing time is ``-1`` when no target answered: no value, so ``inspect`` ranges the field from 0
    and suggests it as a latency, and the suggested command finds the target three times slower."""
    p = tmp_path / "alb.log"
    _alb(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "-1 .." not in out, out
    [command] = [c for c in _suggested(out) if "target_processing_time" in c]
    assert command[command.index("--reward-range") + 1].startswith("0,"), command
    got = _run_suggested(tmp_path, command, "--policy", "cs", "--max-episodes", "1")
    assert got["flagged"] == ["10.0.1.3:8080"] and got["known_arms"] == 10, got

"""``--rewards-format w3c``: the endpoint of an IIS log whose 5xx rate stands out. ``inspect`` sees the W3C
directives itself and suggests the format; the suggested command runs as printed and finds the endpoint, in both
modes, over a second block of directives (the service restarted) with the fields in another order."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from test_inspect_cli import _run_suggested, _suggested

from streamarms.cli import main

PATHS = ["/", "/api/cart", "/api/pay", "/api/search", "/login", "/img/logo.png", "/api/items", "/api/user"]
FIELDS = ["date", "time", "s-ip", "cs-method", "cs-uri-stem", "cs-uri-query", "s-port", "c-ip", "cs(User-Agent)",
          "sc-status", "sc-substatus", "time-taken"]


def _iis(path, n=40_000, seed=9):
    rng = random.Random(seed)
    t0 = dt.datetime(2026, 11, 30)
    with open(path, "w", newline="") as f:
        for i in range(n):
            if i in (0, n // 2):  # (a restart writes its directives again; the fields in another order)
                fields = FIELDS if i == 0 else FIELDS[::-1]
                f.write("#Software: Microsoft Internet Information Services 10.0\r\n#Version: 1.0\r\n"
                        f"#Date: {t0 + dt.timedelta(milliseconds=50 * i):%Y-%m-%d %H:%M:%S}\r\n"
                        f"#Fields: {' '.join(fields)}\r\n")
            p = rng.choice(PATHS)
            bad = rng.random() < (0.35 if p == "/api/pay" else 0.02)
            entry = {"date": f"{t0 + dt.timedelta(milliseconds=50 * i):%Y-%m-%d}",
                     "time": f"{t0 + dt.timedelta(milliseconds=50 * i):%H:%M:%S}", "s-ip": "10.0.0.5",
                     "cs-method": "GET", "cs-uri-stem": p, "cs-uri-query": "-", "s-port": "443",
                     "c-ip": f"10.1.{rng.randrange(255)}.{rng.randrange(255)}",
                     "cs(User-Agent)": "Mozilla/5.0+(Windows+NT+10.0)", "sc-status": "500" if bad else "200",
                     "sc-substatus": "0", "time-taken": str(rng.randrange(5, 400))}
            f.write(" ".join(entry[k] for k in fields) + "\r\n")


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever"]],
                         ids=["episodes", "continuous"])
def test_inspect_sees_an_iis_log_and_its_command_finds_the_endpoint(tmp_path, capsys, mode):
    p = tmp_path / "u_ex261130.log"
    _iis(p)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the lines are a W3C extended log (IIS, CloudFront: its #Fields directive names the "
                          "fields), not JSON: read with --rewards-format w3c\n"), out
    [command] = [c for c in _suggested(out) if "sc-status" in c]
    assert command == ["run", "--rewards-file", str(p), "--rewards-format", "w3c", "--key-field", "cs-uri-stem",
                       "--reward-field", "sc-status", "--reward-at-least", "500"], command
    got = _run_suggested(tmp_path, command, *mode)
    assert got["flagged"] == ["/api/pay"] and not got["invalid"], got
    assert got["records"] == 40_000 or "--max-episodes" in mode  # (continuous: read past the second block too)


def test_a_field_the_directives_do_not_name_is_one_error(tmp_path, capsys):
    p = tmp_path / "u_ex.log"
    _iis(p, n=100)
    assert main(["run", "--rewards-file", str(p), "--rewards-format", "w3c", "--key-field", "cs-uri-stem",
                 "--reward-field", "sc_status", "--checkpoint", "none"]) == 2
    err = capsys.readouterr().err
    assert f"{p} has no column 'sc_status' (--reward-field): its columns are date, time, s-ip" in err, err

"""A drill of hostile settings and outputs (session 48): each was a traceback, a hang or a silent misreading; each is
now one error line naming the setting (exit 2), or what a demanding user expects."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamarms.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, env: dict | None = None, stdin: bytes | None = None, stdout=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamarms.cli", *args], cwd=ROOT, input=stdin,
                          stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})), timeout=120)


@pytest.mark.parametrize("text, said", [
    ('bootstrap_servers = ""\n', "--bootstrap-servers is empty"),  # (a template's variable expanded to nothing
    ("rewards_file = []\n", "--rewards-file is empty"),  # ran the embedded demo on made-up data, exit 0)
    ("episode_interval = 30\nepisode-interval = 40\n", "'episode_interval' and 'episode-interval' are one setting"),
    ('reward_model = "bounded"\nreward_range = []\n', "reward_range = []: expected A,B, got an empty list"),
])
def test_a_config_that_names_nothing_or_a_setting_twice_is_refused(tmp_path, capsys, text, said):
    """(one spelling won in silence; [] was the default range)"""
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    assert main(["run", "--config", str(cfg), "--max-episodes", "1"]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("content, said", [
    (bytes(range(128, 256)) * 8, "not UTF-8 text"),
    ("k = 2\n".encode("utf-16"), "save it as UTF-8 (it is UTF-16)"),
    (("a = " + "[" * 5000 + "]" * 5000 + "\n").encode(), "nested too deeply"),
])
def test_a_config_that_is_no_toml_text_is_one_line(tmp_path, capsys, content, said):
    cfg = tmp_path / "c.toml"
    cfg.write_bytes(content)
    assert main(["run", "--config", str(cfg)]) == 2  # (UnicodeDecodeError, RecursionError: tracebacks)
    assert said in capsys.readouterr().err


def test_a_config_with_a_byte_order_mark_is_read(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_bytes("\ufeffk = 2.5\n".encode())  # (Windows' Notepad: "Invalid statement (at line 1, column 1)")
    assert main(["run", "--config", str(cfg), "--max-episodes", "1", "--quiet"]) == 0


def test_a_device_is_no_config_and_no_file_of_means(capsys):
    assert main(["run", "--config", "/dev/zero"]) == 2  # (read without end: memory)
    assert "more than 64 MiB" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["simulate", "--means", "@/dev/zero"])
    assert "more than 64 MiB" in capsys.readouterr().err


@pytest.mark.parametrize("args, said", [
    (["--min-arms", "50"], "the embedded demo has 20 keys, so no episode would start"),
    (["--reward-field", "nosuch"], "the embedded demo's records hold their reward in 'reward'"),
])
def test_a_demo_that_could_never_decide_is_refused(capsys, args, said):
    """Both ran until killed."""
    assert main(["run", *args]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("line, said", [("embedded_rate = 0", "embedded_rate = 0.0"),
                                        ("embedded_rate = nan", "embedded_rate = nan"),
                                        ("embedded_keys = 1", "embedded_keys = 1")])
def test_the_demos_own_settings_are_checked(tmp_path, capsys, line, said):
    cfg = tmp_path / "c.toml"
    cfg.write_text(line + "\n")
    assert main(["run", "--config", str(cfg), "--max-episodes", "1"]) == 2  # (ZeroDivisionError; a hang)
    assert said in capsys.readouterr().err


def test_simulate_refuses_what_overflowed(capsys):
    common = ["simulate", "--means", "0.1,0.2,0.15,0.12,0.18,0.11,0.9,0.13", "--runs", "1"]
    assert main([*common, "--policy", "ucbe", "--threshold", "0.5", "--budget", "5000", "--b", "600"]) == 2
    assert "UCBE b = 600 makes a = 4^b (T - K) / H too large for a float: give a smaller b" in capsys.readouterr().err
    assert main(["simulate", "--env", "student-t", "--moment-p", "1e308", "--runs", "1"]) == 2
    assert "moment order p must be in (1, 2]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*common[:1], "--means", "0.1,,0.3"])  # (two arms, the gap dropped in silence)
    assert "an empty item between two commas" in capsys.readouterr().err


def test_a_full_disk_on_stdout_is_one_line():
    for args in (["simulate", "--quiet", "--runs", "2"], ["simulate", "--quiet", "--json", "--runs", "2"]):
        with open("/dev/full", "w") as full:
            r = _cli(*args, stdout=full)
        assert r.returncode == 1 and b"Traceback" not in r.stderr, r.stderr[-600:]
        assert b"error: cannot write its output: No space left on device" in r.stderr


def test_a_key_the_terminal_cannot_encode_is_escaped(tmp_path):
    """PYTHONIOENCODING=ascii (a C locale's terminal): a UnicodeEncodeError lost the run's last lines."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"key": ["café", "日本", "🔥", "a", "b", "c", "d", "e"][i % 8],
                                     "reward": int(i % 8 == 2 or i % 17 == 0)}) + "\n" for i in range(8000)))
    r = _cli("run", "--rewards-file", str(p), "--policy", "cs", "--checkpoint", "none", "--log-level", "error",
             env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr[-600:]
    assert b"flagged now: \\U0001f525" in r.stdout


def test_dedupe_alerts_refuses_what_is_no_utf8_and_no_json_in_one_line(tmp_path):
    lat = tmp_path / "lat.jsonl"
    lat.write_bytes(b'{"alert_id":"1:caf\xe9:outlier"}\n')
    r = _cli("dedupe-alerts", str(lat))
    assert r.returncode == 2 and b"not UTF-8 text after line 0" in r.stderr and b"Traceback" not in r.stderr
    r = _cli("dedupe-alerts", stdin=b"[" * 100_000 + b"]" * 100_000 + b"\n")
    assert r.returncode == 2 and b"<stdin>:1: JSON nested too deeply to read" in r.stderr
    r = _cli("dedupe-alerts", "-", stdin=b'{"alert_id":"1:a:outlier"}\n' * 2)  # ("-": standard input, as run's)
    assert r.returncode == 0 and r.stdout.count(b"\n") == 1


def test_explain_says_in_one_line_that_no_broker_answers(capsys):
    assert main(["explain", "--checkpoint", "kafka:t", "--bootstrap-servers", "localhost:1"]) == 2
    assert "--bootstrap-servers localhost:1: no Kafka broker reachable at localhost:1" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--alerts-file", "--summary-json", "--dead-letter-file", "--group-id", "--alerts-topic",
                                  "--bootstrap-servers"])
def test_an_output_named_by_an_empty_text_is_an_error(capsys, flag):
    """--alerts-file '' wrote no alert and said nothing."""
    assert main(["run", "--max-episodes", "1", "--quiet", flag, ""]) == 2
    assert f"{flag} is empty ('')" in capsys.readouterr().err


def test_the_metrics_settings_are_named_when_they_cannot_be_served(capsys):
    import socket
    assert main(["run", "--max-episodes", "1", "--quiet", "--metrics-port", "0", "--metrics-flagged-arms", "-3"]) == 2
    assert "--metrics-flagged-arms -3: at most how many flagged keys to export, 0 to 1000" in capsys.readouterr().err
    with socket.socket() as busy:  # (a port in use: "OSError: [Errno 98]", exit 1, no port named)
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["run", "--max-episodes", "1", "--quiet", "--metrics-port", str(port), "--metrics-addr",
                     "127.0.0.1"]) == 2
    assert f"cannot serve the metrics on 127.0.0.1:{port} (--metrics-addr, --metrics-port)" in capsys.readouterr().err


def test_ctrl_c_in_simulate_reports_the_runs_done():
    """SIGINT printed "interrupted" and threw every finished run away."""
    import signal
    import time
    p = subprocess.Popen([sys.executable, "-m", "streamarms.cli", "simulate", "--runs", "100000", "--quiet", "--json"],
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(6)  # (a run of the default instance takes ~0.1 s: dozens are done)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in err, err[-600:]
    got = json.loads(out)
    assert got["interrupted"] and got["runs_asked"] == 100_000 and got["runs"] == len(got["results"]) > 0
    assert f"interrupted after {got['runs']:,} of 100,000 runs" in err

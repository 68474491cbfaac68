"""``--rewards-file`` patterns and directories: a TOML file's ``rewards_file = "logs/*.jsonl"`` (no shell expands
it) failed with ``cannot start: FileNotFoundError``, a directory with advice to pipe it on standard input."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.cli import main


def _log(path, hosts: range, n: int, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w") as f:
        for j in range(n):
            h = f"h{rng.choice(hosts)}"
            f.write(json.dumps({"host": h, "err": int(rng.random() < (0.3 if h == "h5" else 0.05)),
                                "ts": 1_700_000_000_000 + j * 20}) + "\n")


def test_a_pattern_in_the_toml_file_reads_every_match_and_a_restart_reads_a_new_one(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    _log(logs / "a.jsonl", range(12), 20_000, 1)
    (logs / "notes.txt").write_text("not a log\n")
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'rewards_file = ["{logs}/*.jsonl"]\nkey_field = "host"\nreward_field = "err"\n'
                   f'timestamp_field = "ts"\ncheckpoint = "{tmp_path / "ck"}"\nquiet = true\n')
    summary = tmp_path / "s.json"
    assert main(["run", "--config", str(cfg), "--summary-json", str(summary)]) == 0
    assert json.loads(summary.read_text())["records"] == 20_000
    _log(logs / "b.jsonl", range(12), 30_000, 2)  # a new match: the same run's pattern, resumed
    assert main(["run", "--config", str(cfg), "--summary-json", str(summary)]) == 0
    got = json.loads(summary.read_text())
    assert got["records"] == 50_000  # (the checkpoint's counts: a.jsonl's not read twice)
    assert "h5" in got["flagged"]


def test_a_pattern_that_matches_nothing_and_a_directory_are_errors_that_say_what_to_give(tmp_path, capsys):
    (tmp_path / "logs").mkdir()
    assert main(["run", "--rewards-file", str(tmp_path / "logs" / "*.log")]) == 2
    assert f"no file matches {tmp_path}/logs/*.log" in capsys.readouterr().err
    assert main(["run", "--rewards-file", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/logs is a directory: name its files, e.g. '{tmp_path}/logs/*.jsonl'" in err
    assert "standard input" not in err
    assert main(["inspect", str(tmp_path / "logs")]) == 2
    assert "is a directory" in capsys.readouterr().err
    # (a folder of files: the pattern of what it holds, as Kubernetes' /var/log/pods/NS_POD_UID/CONTAINER/0.log)
    for pod in ("shop_web-1_u1", "shop_web-2_u2"):
        (tmp_path / "logs" / pod / "app").mkdir(parents=True)
        for name in ("0.log", "0.log.20261130-100000", "0.log.20261129-100000.gz"):
            (tmp_path / "logs" / pod / "app" / name).write_text("")
    assert main(["run", "--rewards-file", str(tmp_path / "logs")]) == 2
    assert f"{tmp_path}/logs is a directory: name its files, e.g. '{tmp_path}/logs/*/*/*.log'" in \
        capsys.readouterr().err


@pytest.mark.parametrize("name", ["a[1].jsonl", "what?.jsonl"])
def test_a_file_whose_name_looks_like_a_pattern_is_that_file(tmp_path, name):
    p = tmp_path / name
    _log(p, range(6), 2_000, 3)
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "err", "--quiet",
                 "--summary-json", str(summary)]) == 0
    assert json.loads(summary.read_text())["records"] == 2_000


def test_a_pattern_that_meets_zstd_rotations_names_them_and_the_pipe(tmp_path, capsys):
    """(Rotated ``.gz`` files are read with the plain ones: ``tests/runtime/test_compressed_files.py``.)"""
    _log(tmp_path / "app.log", range(6), 500, 4)
    (tmp_path / "app.log.1.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 40)
    assert main(["run", "--rewards-file", str(tmp_path / "app.log*"), "--key-field", "host"]) == 2
    err = capsys.readouterr().err
    assert f"app.log* matches 1 zstd-compressed file ({tmp_path}/app.log.1.zst)" in err
    assert f"zstdcat -f {tmp_path}/app.log* | streamarms run --rewards-file - ..." in err


def test_follow_refuses_a_pattern_that_matches_a_rotation(tmp_path, capsys):
    """--follow reads app.log's rotations (app.log.1) itself: a pattern matching both would read app.log.1 twice."""
    _log(tmp_path / "app.log", range(6), 100, 5)
    _log(tmp_path / "app.log.1", range(6), 100, 6)
    assert main(["run", "--follow", "--rewards-file", str(tmp_path / "app.log*"), "--key-field", "host"]) == 2
    assert (f"--follow reads a file's rotations itself, and {tmp_path}/app.log* matches {tmp_path}/app.log.1, a "
            f"rotation of {tmp_path}/app.log") in capsys.readouterr().err
    (tmp_path / "app.log.1").unlink()  # (app.log alone: accepted once, refused at the restart after a rotation)
    assert main(["run", "--follow", "--rewards-file", str(tmp_path / "app.log*"), "--key-field", "host"]) == 2
    assert (f"--follow reads a file's rotations itself, and {tmp_path}/app.log* matches {tmp_path}/app.log.1, a "
            f"rotation of {tmp_path}/app.log once it is rotated") in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--timestamp-field", "ts"], ["--line-pattern", "logfmt"], ["--encoding", "cp1252"]],
                         ids=["timestamp-field", "line-pattern", "encoding"])
def test_following_a_pattern_that_matches_no_file_yet_takes_the_files_flags(tmp_path, flags):
    """A daily file's pattern on a fresh machine (``--follow --rewards-file 'logs/app-*.log'``, no file yet): the run
    said it would wait for the first file, then stopped (exit 2) on the flags that read files -- ``--timestamp-field``
    'is a Kafka record's', ``--key-field`` 'the embedded demo's' -- as if no file were given."""
    from streamarms.cli.main import build_parser
    from streamarms.cli.run_checks import check_run_settings
    from streamarms.cli.settings import resolve_settings

    s = resolve_settings(build_parser().parse_args([
        "run", "--follow", "--forever", "--rewards-file", str(tmp_path / "app-*.log"), "--key-field", "host",
        "--reward-field", "err", "--checkpoint", "none", *flags]))
    assert s.rewards_file == [] and not s.embedded
    check_run_settings(s)  # (no ConfigError)


def test_inspect_of_a_pattern_suggests_the_pattern_quoted(tmp_path, capsys):
    """Its suggestion ran as printed only for one or two files (``FILES`` for more): a pattern given is printed back,
    quoted, whatever it matches."""
    import shlex

    for i in range(4):
        _log(tmp_path / f"app-{i}.jsonl", range(6), 300, 20 + i)
    pattern = str(tmp_path / "app-*.jsonl")
    assert main(["inspect", pattern]) == 0
    out = capsys.readouterr().out
    assert f"  streamarms run --rewards-file {shlex.quote(pattern)} --key-field host --reward-field err" in out, out
    # two files: each named by its own --rewards-file (one flag for both was "unrecognized arguments")
    two = [str(tmp_path / "app-0.jsonl"), str(tmp_path / "app-1.jsonl")]
    assert main(["inspect", *two]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  streamarms run "))
    assert line.startswith(f"  streamarms run --rewards-file {two[0]} --rewards-file {two[1]} --key-field host"), line
    summary = tmp_path / "s.json"
    assert main([*shlex.split(line)[1:], "--quiet", "--summary-json", str(summary)]) == 0

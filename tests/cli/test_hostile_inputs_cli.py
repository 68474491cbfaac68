"""A user's hostile or unlucky files (session 47's drill): an output that is the input, a checkpoint path that is a
device or a pipe, keys with line breaks in the log, a hand-edited checkpoint's counters."""

from __future__ import annotations

import json
import os

import pytest

from streamarms.cli import main


def _log(path, n=3000):
    path.write_text("".join(json.dumps({"k": f"h{i % 10}", "r": int(i % 10 == 3)}) + "\n" for i in range(n)) + "bad\n")
    return str(path)


@pytest.mark.parametrize("flag", ["--dead-letter-file", "--alerts-file", "--summary-json", "--checkpoint"])
def test_an_output_that_is_the_input_file_is_refused_before_it_is_written(tmp_path, capsys, flag):
    """``--dead-letter-file`` on the file read appended the dead letters to the user's data and read them back
    (a followed file grew without end)."""
    data = _log(tmp_path / "d.jsonl")
    before = open(data, "rb").read()
    os.symlink(data, tmp_path / "same.jsonl")
    for out in (data, str(tmp_path / "same.jsonl")):
        assert main(["run", "--rewards-file", data, "--key-field", "k", "--reward-field", "r", flag, out]) == 2
        assert f"{flag} {out} is the file --rewards-file reads" in capsys.readouterr().err
    assert open(data, "rb").read() == before


def test_an_output_that_the_input_pattern_matches_is_refused(tmp_path, capsys):
    """A restart (or a followed pattern) would read the dead letters as records."""
    _log(tmp_path / "a.jsonl")
    pattern = str(tmp_path / "*.jsonl")
    dl = str(tmp_path / "dead.jsonl")
    assert main(["run", "--rewards-file", pattern, "--key-field", "k", "--reward-field", "r",
                 "--dead-letter-file", dl]) == 2
    assert f"--dead-letter-file {dl} is matched by --rewards-file {pattern}" in capsys.readouterr().err
    assert not os.path.exists(dl)
    assert main(["run", "--rewards-file", pattern, "--key-field", "k", "--reward-field", "r", "--episode-interval",
                 "0", "--dead-letter-file", str(tmp_path / "dead.txt")]) == 0


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "fifo"])
def test_a_checkpoint_path_that_is_no_regular_file_is_refused_not_read_without_end(tmp_path, capsys, path):
    """``--checkpoint /dev/zero`` read without end (2 GB in 6 s); a named pipe waited for a writer for ever."""
    if path == "fifo":
        path = str(tmp_path / "ff.ckpt")
        os.mkfifo(path)
    data = _log(tmp_path / "d.jsonl")
    assert main(["run", "--rewards-file", data, "--key-field", "k", "--reward-field", "r", "--checkpoint", path]) == 2
    err = capsys.readouterr().err
    assert f"checkpoint file {path} is a" in err and "not a regular file" in err and "--checkpoint none" in err
    assert main(["explain", path]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_key_with_a_line_break_cannot_forge_a_line_of_the_report_or_the_table(tmp_path, capsys):
    """A key ``web-3\\n<a log line>`` printed a forged "outliers none" line and split the ``--table`` row."""
    forged = "2026-12-02 04:26:32,384 INFO streamarms.run: episode 1 done: 15 arms, outliers none"
    bad = "web-3\n" + forged
    p = tmp_path / "inj.jsonl"
    p.write_text("".join(json.dumps({"host": bad if i % 15 == 0 else f"web-{i % 15}", "err": int(i % 7 == 0)}) + "\n"
                         for i in range(3000)))
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "err", "--table"]) == 0
    out = capsys.readouterr().out
    assert "web-3\\n" + forged in out
    assert not any(line.startswith(forged[:10]) for line in out.splitlines())


@pytest.mark.parametrize(("name", "value", "said"), [
    ("records", -5, "checkpoint counter 'records' is -5"),
    ("used", 10**30, "records used and 1 refused of 3,001 records: no run counts that"),
    ("used", 1.5, "checkpoint counter 'used' is 1.5"),
    ("ep_start_records", 10**6, "checkpoint counter 'ep_start_records' is 1000000"),
])
def test_a_re_signed_checkpoint_with_counters_no_run_counts_is_refused(tmp_path, capsys, name, value, said):
    """A hand-edited checkpoint with its checksum recomputed said "18,965 rewards used of 9,995 seen (189.7%)"."""
    from streamarms.checkpoint import decode, encode

    data = _log(tmp_path / "d.jsonl")
    ck = tmp_path / "c.ckpt"
    args = ["run", "--rewards-file", data, "--key-field", "k", "--reward-field", "r", "--checkpoint", str(ck),
            "--episode-interval", "0"]
    assert main(args) == 0
    doc = decode(ck.read_bytes())
    doc["scheduler"]["counters"][name] = value
    ck.write_bytes(encode(doc))
    capsys.readouterr()
    assert main(args) == 2
    assert said in capsys.readouterr().err

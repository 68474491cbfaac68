"""A JSONL replay resumed from its checkpoint never loses or double-counts a line: a file still being
written (its last line cut mid-write) keeps that line for a later run; a file truncated or replaced
under the checkpoint is refused with both sizes (connectors/jsonl_lines.py)."""

from __future__ import annotations

import json
import logging
import random

import pytest

from streamarms.checkpoint import CheckpointError
from streamarms.cli.run import main as run_main_argv
from streamarms.connectors.files import JsonlSource
from streamarms.connectors.jsonl_lines import LineReader


def _lines(n: int, seed: int = 1, first: int = 0) -> list[bytes]:
    means = [0.3] * 18 + [0.9, 0.95]  # two clear outlier keys: an episode ends within a few thousand lines
    rng = random.Random(seed)
    out = []
    for i in range(first, first + n):
        a = rng.randrange(len(means))
        out.append(b'{"arm": "k%d", "reward": %d, "timestamp": %d}\n'
                   % (a, rng.random() < means[a], 1_700_000_000_000 + i))
    return out


def _drain(src: JsonlSource) -> list:
    out = []
    while not src.exhausted:
        out += src.poll()
    return out


# -- the source ---------------------------------------------------------------------------------------
def test_a_last_line_cut_mid_write_is_left_unread_and_read_once_complete(tmp_path):
    p = tmp_path / "r.jsonl"
    lines = _lines(50)
    data = b"".join(lines)
    cut = len(b"".join(lines[:30])) + 17  # line 30 cut after 17 bytes
    p.write_bytes(data[:cut])
    src = JsonlSource([str(p)], max_records=7)
    got = _drain(src)
    assert [r.offset for r in got] == list(range(30)) and all(r.key is not None for r in got)
    assert src.incomplete == {str(p): 17}
    state = src.state()
    src.close()
    p.write_bytes(data)  # the writer finished the line, and more
    src2 = JsonlSource([str(p)], resume=state, max_records=7)
    rest = _drain(src2)
    src2.close()
    assert [r.offset for r in rest] == list(range(30, 50)) and src2.incomplete == {}
    assert [r.value + b"\n" for r in got + rest] == lines


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_a_last_line_without_newline_that_is_a_whole_object_is_a_record(tmp_path, eol):
    p = tmp_path / "r.jsonl"
    lines = _lines(20)
    p.write_bytes(b"".join(lines)[:-1])  # the common file: no newline after its last line
    src = JsonlSource([str(p)])
    got = _drain(src)
    assert len(got) == 20 and got[-1].key == json.loads(lines[-1])["arm"].encode() and src.incomplete == {}
    state = src.state()
    src.close()
    # the writer ends that line and goes on: the line end is not an empty line of its own (offsets as one run's)
    p.write_bytes(b"".join(lines)[:-1] + eol + b"".join(_lines(5, seed=2, first=20)))
    src2 = JsonlSource([str(p)], resume=state)
    rest = _drain(src2)
    src2.close()
    assert [r.offset for r in rest] == list(range(20, 25))


@pytest.mark.parametrize("tail", [b"\r", b"  ", b"\r\n"])
def test_a_blank_end_is_not_reported(tmp_path, tail):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(3)) + tail)
    src = JsonlSource([str(p)])
    assert len(_drain(src)) == 3 and src.incomplete == {}
    src.close()


def test_a_file_shorter_than_the_checkpoint_is_refused_with_both_sizes(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(70)))
    src = JsonlSource([str(p)])
    _drain(src)
    state = src.state()
    src.close()
    p.write_bytes(b"".join(_lines(30)))
    with pytest.raises(CheckpointError, match=r"shorter than the checkpoint.*\(30 lines\) now.*\(70 lines\)"):
        JsonlSource([str(p)], resume=state)
    # a checkpoint of the previous version (the line number only) is refused too
    old = {k: v[:2] for k, v in state.items()}
    with pytest.raises(CheckpointError, match=r"fewer lines than the checkpoint has read: 30 lines .* read 70 lines"):
        JsonlSource([str(p)], resume=old)


def test_a_longer_file_that_is_not_the_one_read_is_refused(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(70)))
    src = JsonlSource([str(p)])
    _drain(src)
    state = src.state()
    src.close()
    p.write_bytes(b"".join(_lines(90, seed=7)))
    with pytest.raises(CheckpointError, match="is not the file the checkpoint read.*line 70"):
        JsonlSource([str(p)], resume=state)
    p.write_bytes(b"".join(_lines(90)))  # the same file, appended to: resumes
    src2 = JsonlSource([str(p)], resume=state)
    assert [r.offset for r in _drain(src2)] == list(range(70, 90))
    src2.close()


@pytest.mark.parametrize("entry", [[-1, None], [3, None, -5, "00"], [3, None, "12", "00"], [3, None, 12, 7]])
def test_a_malformed_position_is_a_checkpoint_error(tmp_path, entry):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(10)))
    with pytest.raises(CheckpointError, match="position in .* is malformed"):
        JsonlSource([str(p)], resume={f"{p}:0": entry})


def test_a_checkpoint_of_the_previous_version_resumes_by_line(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(40)))
    src = JsonlSource([str(p)], resume={f"{p}:0": [25, 1_700_000_000_024]})
    got = _drain(src)
    assert [r.offset for r in got] == list(range(25, 40))
    entry = src.state()[f"{p}:0"]  # its next checkpoint has the byte position (and the file's size)
    assert entry[2] == p.stat().st_size and entry[4:] == [None, p.stat().st_size]
    src.close()


# -- the reader ---------------------------------------------------------------------------------------
_PIECES = [b'{"arm": "a", "reward": 1}', b"\n", b"\r\n", b"\r", b"x", b"\xff\xfe", b"\xe2\x82", "é".encode(), b" ",
           b"\n\n", b"\r\r\n", b"\x00", b"[" * 40]


def test_the_reader_gives_the_lines_text_mode_gives_and_resumes_at_each_one(tmp_path):
    rng = random.Random(3)
    p = tmp_path / "f.jsonl"
    for trial in range(60):
        data = b"".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 40))) + b"\n"
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # (UTF-16's mark: its text is read, test_text_encodings)
            data = b" " + data
        p.write_bytes(data)
        with open(p, encoding="utf-8", errors="surrogateescape") as f:
            want = [ln.rstrip("\n") for ln in f]
        r = LineReader(str(p), block=rng.choice([1, 2, 3, 7, 64, 1 << 16]))
        got = r.read(1000)
        assert got == want, (trial, data)
        marks = [r.mark(i) for i in range(len(got) + 1)]
        r.close()
        assert marks[-1][0] == len(data)
        for i in range(len(got) + 1):  # a checkpoint at any line resumes with exactly the lines after it
            r2 = LineReader(str(p), line=i, pos=marks[i][0], digest=marks[i][1], block=5)
            assert r2.read(1000) == want[i:], (trial, i, data)
            r2.close()


# -- streamarms run -----------------------------------------------------------------------------------
def _run(tmp_path, path, ck=None) -> dict:
    out = tmp_path / "s.json"
    args = ["--rewards-file", str(path), "--summary-json", str(out), "--quiet"] + (["--checkpoint", str(ck)] if ck else [])
    assert run_main_argv(args) == 0
    return json.loads(out.read_text())


def _key(s: dict) -> tuple:
    return ({k: s.get(k) for k in ("records", "samples", "skipped", "invalid", "flagged", "alerts")},
            [(e["episode"], e["samples"], e["records"], e["outliers"], e["threshold"]) for e in s["episodes"]])


def test_run_resumed_on_a_growing_file_decides_as_one_run(tmp_path, caplog):
    """The adversary's case: runs with a checkpoint on a file cut mid-line, then just before a newline, then
    whole, decide as one run over the whole file (a cut line was dead-lettered and lost)."""
    lines = _lines(30_000)
    data = b"".join(lines)
    p = tmp_path / "r.jsonl"
    p.write_bytes(data)
    full = _run(tmp_path, p)
    assert full["episodes"]
    ck = tmp_path / "ck"
    mid = len(b"".join(lines[:3000])) + 11
    before_newline = len(b"".join(lines[:9000])) - 1
    for cut in (mid, before_newline, len(data)):
        p.write_bytes(data[:cut])
        with caplog.at_level(logging.WARNING, logger="streamarms.run"):
            caplog.clear()
            s = _run(tmp_path, p, ck)
        if cut == mid:
            assert s["incomplete_last_lines"] == {str(p): 11}
            assert "ends in an incomplete line of 11 bytes" in caplog.text and "--checkpoint reads it" in caplog.text
        else:
            assert s["incomplete_last_lines"] == {} and "incomplete" not in caplog.text
        assert s["invalid"] == {}
    assert _key(s) == _key(full)


def test_run_refuses_a_replaced_shorter_file(tmp_path, capsys):
    p = tmp_path / "r.jsonl"
    ck = tmp_path / "ck"
    p.write_bytes(b"".join(_lines(7000)))
    _run(tmp_path, p, ck)
    p.write_bytes(b"".join(_lines(3000)))
    capsys.readouterr()
    assert run_main_argv(["--rewards-file", str(p), "--checkpoint", str(ck), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "shorter than the checkpoint's position" in err and "(3,000 lines) now" in err and "(7,000 lines)" in err
    assert "another --checkpoint" in err


def test_a_resumed_runs_summary_counts_dead_letters_from_the_first_start_as_its_records(tmp_path):
    """``--summary-json`` after a restart: ``records`` and ``invalid`` are running totals (restored from the
    checkpoint), and ``dead_letters`` was this process's alone -- 3 where ``invalid`` said 7."""
    lines = _lines(12_000)
    for i in (100, 2000, 3500, 5000):  # refused before the restart
        lines[i] = b"not json\n"
    for i in (7000, 9000, 11000):  # and after it
        lines[i] = b'{"key": "region-01"}\n'
    p = tmp_path / "r.jsonl"
    ck = tmp_path / "ck"
    p.write_bytes(b"".join(lines[:6000]))
    first = _run(tmp_path, p, ck)
    assert first["dead_letters"] == sum(first["invalid"].values()) == 4
    p.write_bytes(b"".join(lines))
    s = _run(tmp_path, p, ck)
    assert s["records"] == 12_000 and sum(s["invalid"].values()) == 7
    assert s["dead_letters"] == 7

"""A rotation removed by retention (logrotate's ``rotate N``) before a follower behind came to it: its lines cannot
be read, and the run says so -- a warning naming it and ``streamarms_follow_files_lost_total`` -- where it went on
with the next file and said nothing (:mod:`~streamarms.connectors.owed_rotations`). No warning when nothing is lost:
``test_rotation_model.py`` asserts it over its seeded rotations, retention of files read, and restarts."""

from __future__ import annotations

import gzip
import logging
import os

import pytest
from test_rotation_renames import _at_the_next_files_first_byte, _lines, _numbers, _rotate, _written

from streamarms.checkpoint import CheckpointError
from streamarms.connectors.files import JsonlSource


@pytest.mark.parametrize("gz", [False, True], ids=["rename", "compress"])
def test_a_rotation_removed_before_the_follower_read_it_is_said_and_counted(tmp_path, caplog, gz):
    p = str(tmp_path / "app.log")
    _written(p, 0, 100, 10**9)
    src = JsonlSource([p], follow=True, max_records=20)
    src.owed.look = 0
    got = src.poll(0.0)  # F: 20 of its 100 lines read
    _rotate(p, 10**9, gz)
    _written(p, 100, 200, 2 * 10**9)  # G, rotated while the follower reads F
    _rotate(p, 2 * 10**9, gz)
    _written(p, 200, 300, 3 * 10**9)  # H, at the path
    got += src.poll(0.0)  # (behind: F renamed away, G owed)
    _rotate(p, 3 * 10**9, gz)  # H rotated; retention (rotate 1) removes F, which is open, and G, never read
    for q in (f"{p}.2", f"{p}.3", f"{p}.2.gz", f"{p}.3.gz"):
        if q.endswith(".gz") == gz:
            (tmp_path / q).unlink()
    _written(p, 300, 400, 4 * 10**9)  # I, at the path
    with caplog.at_level(logging.WARNING, "streamarms.files"):
        for _ in range(40):
            got += src.poll(0.0)
    src.close()
    assert src.failure is None
    assert _numbers(got) == list(range(100)) + list(range(200, 400))  # (F, H, I: G's lines lost)
    assert src.owed.lost == 1
    said = [r.getMessage() for r in caplog.records if "removed before the run read it" in r.getMessage()]
    assert len(said) == 1 and ("app.log.1.gz" if gz else "app.log.1 ") in said[0] and "lines are lost" in said[0]
    assert 'its first line: {"arm": "k2", "reward": 0, "n": 100}' in said[0]  # (G's: which file it was)


def test_a_follower_behind_that_reads_every_rotation_says_nothing_lost(tmp_path, caplog):
    p = str(tmp_path / "app.log")
    _written(p, 0, 100, 10**9)
    src = JsonlSource([p], follow=True, max_records=20)
    src.owed.look = 0
    got = src.poll(0.0)
    for i in range(1, 5):  # four rotations (compressed) while it reads the first file, none removed
        _rotate(p, i * 10**9, True)
        _written(p, 100 * i, 100 * i + 100, (i + 1) * 10**9)
        got += src.poll(0.0)
    with caplog.at_level(logging.WARNING, "streamarms.files"):
        for _ in range(60):
            got += src.poll(0.0)
    src.close()
    assert _numbers(got) == list(range(500)) and src.owed.lost == 0
    assert not [r for r in caplog.records if "removed before" in r.getMessage()]


@pytest.mark.parametrize("gz", [False, True], ids=["rename", "compress"])
def test_a_restart_at_the_first_byte_of_a_file_removed_while_stopped_says_so(tmp_path, gz):
    """The checkpoint was at the first byte of F (the follower had come to it, none of its lines read); while the run
    was stopped F was rotated and removed (``rotate 1``). The restart took the oldest rotation after F and said
    nothing of F's lines; it now stops as a restart whose file was removed mid-way does."""
    p = str(tmp_path / "app.log")
    src = _at_the_next_files_first_byte(p, gz)
    _written(p, 100, 200, 2 * 10**9)  # F's lines, not read: the checkpoint at its first byte
    state = src.state()
    src.close()
    _rotate(p, 2 * 10**9, gz)  # stopped: F and G rotated, then both E and F removed (rotate 1)
    _written(p, 200, 300, 3 * 10**9)
    _rotate(p, 3 * 10**9, gz)
    for q in (f"{p}.2", f"{p}.3", f"{p}.2.gz", f"{p}.3.gz"):
        if q.endswith(".gz") == gz:
            (tmp_path / q).unlink()
    _written(p, 300, 400, 4 * 10**9)
    with pytest.raises(CheckpointError, match="none of its lines read yet.*removed while the run was stopped"):
        JsonlSource([p], follow=True, resume=state).poll(0.0)


@pytest.mark.parametrize("follow", [True, False], ids=["follow", "replay"])
def test_a_patterns_file_removed_while_stopped_with_lines_unread_is_said_and_counted(tmp_path, caplog, follow):
    """A day's log read part-way, the run stopped, the log removed (retention) before the restart: the restart is given
    the pattern's matches now and dropped that file in silence (a replay too). Its checkpoint entry now holds its size
    then: the bytes after the position are said lost. A day read to its end and removed says nothing (the common
    case)."""
    days = [str(tmp_path / f"app-{d}.log") for d in range(3)]
    for d, q in enumerate(days):
        _written(q, 100 * d, 100 * d + 100, (d + 1) * 10**9)
    pattern = [str(tmp_path / "app-*.log")]
    src = JsonlSource(days, follow=follow, patterns=pattern, max_records=20)
    got = src.poll(0.0)  # (in time order: the first day's first lines)
    state, first = src.state(), len(got)
    src.close()
    assert 0 < first < 100 and _numbers(got) == list(range(first))
    (tmp_path / "app-0.log").unlink()
    with caplog.at_level(logging.WARNING, "streamarms.files"):
        src = JsonlSource(days[1:], follow=follow, patterns=pattern, resume=state)
        got = src.poll(0.0) + src.poll(0.0)
    state = src.state()  # (app-1 and app-2 read to their ends)
    src.close()
    assert _numbers(got) == list(range(100, 300)) and src.owed.lost == 1
    said = [r.getMessage() for r in caplog.records if "no longer there: it was removed" in r.getMessage()]
    assert len(said) == 1 and "app-0.log" in said[0] and f"(its line {first}) are not read: lost" in said[0]
    (tmp_path / "app-1.log").unlink()
    caplog.clear()
    with caplog.at_level(logging.WARNING, "streamarms.files"):
        src = JsonlSource(days[2:], follow=follow, patterns=pattern, resume=state)
    src.close()
    assert src.owed.lost == 0 and not [r for r in caplog.records if "no longer there" in r.getMessage()]


def test_a_compressed_patterns_file_removed_while_stopped_part_read_is_said(tmp_path, caplog):
    """A replay of compressed days (``app-*.jsonl.gz``) stopped part-way through one, removed before the restart. Its
    position counts decompressed bytes, so the size kept is the decompressed one -- known once the reader came to the
    file's end, else -1 (some bytes left, how many unknown); the compressed size would say nothing of a file read
    part-way past it (logs compress tenfold). Read to its end and removed: nothing said."""
    lines = 50_000
    days = [str(tmp_path / f"app-{d}.jsonl.gz") for d in range(2)]
    for d, q in enumerate(days):
        with gzip.open(q, "wb") as f:
            f.write(_lines(lines * d, lines * d + lines))
    pattern = [str(tmp_path / "app-*.jsonl.gz")]
    src = JsonlSource(days, patterns=pattern, max_records=20)
    got = src.poll(0.0)
    state = src.state()
    src.close()
    assert 0 < len([n for n in _numbers(got) if n < lines]) < lines  # (day 0 read part-way)
    os.remove(days[0])
    with caplog.at_level(logging.WARNING, "streamarms.files"):
        src = JsonlSource(days[1:], patterns=pattern, resume=state)
        while src.poll(0.0):
            pass
    state = src.state()
    src.close()
    said = [r.getMessage() for r in caplog.records if "no longer there" in r.getMessage()]
    assert src.owed.lost == 1 and len(said) == 1 and "app-0.jsonl.gz" in said[0]
    assert "and the bytes of it after the checkpoint's position (its line 10) are not read: lost" in said[0]
    os.remove(days[1])
    caplog.clear()
    with caplog.at_level(logging.WARNING, "streamarms.files"):
        JsonlSource([], patterns=pattern, resume=state).close()
    assert not [r for r in caplog.records if "no longer there" in r.getMessage()]


@pytest.mark.parametrize("how", ["rotate-0", "truncated", "copy-at-the-path"])
def test_a_restart_at_the_first_byte_of_a_file_with_lines_gone_and_no_rotation_says_so(tmp_path, how):
    """The checkpoint at the first byte of F, which had lines; while stopped F was rotated and removed with no rotation
    kept (logrotate's ``rotate 0``), or truncated: the restart read the file at the path from its first byte and said
    nothing of F's lines. It now stops as a restart whose file was removed mid-way does. A file at the path that starts
    with F's bytes (F copied back) is F's lines: read, nothing said."""
    p = str(tmp_path / "app.log")
    src = _at_the_next_files_first_byte(p, False)
    _written(p, 100, 200, 2 * 10**9)  # F's lines, none read
    state = src.state()
    src.close()
    for q in tmp_path.iterdir():  # (E's rotation: past retention too)
        if q.name != "app.log":
            q.unlink()
    if how == "rotate-0":
        os.remove(p)
        _written(p, 200, 300, 3 * 10**9)
    elif how == "truncated":
        open(p, "wb").close()
        _written(p, 200, 300, 3 * 10**9)
    else:
        data = (tmp_path / "app.log").read_bytes()
        os.remove(p)
        (tmp_path / "app.log").write_bytes(data)
    if how != "copy-at-the-path":
        with pytest.raises(CheckpointError, match="none of its lines read yet.*rotate 0.*truncated or replaced"):
            JsonlSource([p], follow=True, resume=state).poll(0.0)
        return
    src = JsonlSource([p], follow=True, resume=state)
    got = src.poll(0.0) + src.poll(0.0)
    src.close()
    assert _numbers(got) == list(range(100, 200))

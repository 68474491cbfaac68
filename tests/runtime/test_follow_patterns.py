"""``streamarms run --follow --rewards-file 'logs/app-*.log'``: a log written under a new name each day or hour is
followed into each new file as it appears (``connectors/file_watch.py``), each line read once, across a restart;
what a pattern meets that is no new log (a rotation of a file followed, a file renamed, a compressed copy) is not
read again."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from streamarms.connectors.file_watch import PatternWatch
from streamarms.connectors.files import JsonlSource
from tests.runtime.test_jsonl_follow import _lines, _poll_all, _run_until_checkpointed, _summary


def _source(tmp_path, pattern: str = "app-*.jsonl", **kw) -> JsonlSource:
    """A following source of the matches of ``pattern`` there now, looking for new ones at every poll."""
    import glob
    full = str(tmp_path / pattern)
    src = JsonlSource(sorted(glob.glob(full)), follow=True, patterns=[full], **kw)
    assert src.watch is not None
    src.watch = PatternWatch([full], interval=0.0)
    return src


def _read(src: JsonlSource) -> list[tuple[str, int]]:
    return [(os.path.basename(r.topic), r.offset) for r in _poll_all(src)]


def test_a_new_file_that_matches_the_pattern_is_followed_from_its_first_line(tmp_path):
    (tmp_path / "app-1.jsonl").write_bytes(b"".join(_lines(30)))
    src = _source(tmp_path)
    try:
        assert len(_read(src)) == 30
        (tmp_path / "app-2.jsonl").write_bytes(b"".join(_lines(20, first=30)))
        got = _read(src)
        assert got == [("app-2.jsonl", i) for i in range(20)]
        assert src.paths[-1] == str(tmp_path / "app-2.jsonl") and not src.exhausted
        with open(tmp_path / "app-2.jsonl", "ab") as f:  # the new file is followed as it grows
            f.write(b"".join(_lines(5, first=50)))
        assert _read(src) == [("app-2.jsonl", i) for i in range(20, 25)]
        st = src.state()
        assert st[str(tmp_path / "app-2.jsonl") + ":0"][0] == 25  # checkpointed by its path, as a file given
    finally:
        src.close()


def test_a_rotation_a_renamed_file_and_a_compressed_copy_are_not_read_again(tmp_path, caplog):
    first = tmp_path / "app-1.jsonl"
    first.write_bytes(b"".join(_lines(30)))
    src = _source(tmp_path, "app-*")
    try:
        assert len(_read(src)) == 30
        os.link(first, tmp_path / "app-copy.jsonl")  # the same file under another name
        (tmp_path / "app-1.jsonl.1").write_bytes(b"".join(_lines(10, first=30)))  # named as app-1's rotation
        (tmp_path / "app-1.jsonl.gz").write_bytes(gzip.compress(first.read_bytes()))  # compressed once written
        os.mkdir(tmp_path / "app-dir")
        with caplog.at_level("WARNING", logger="streamarms.files"):
            assert _read(src) == [] and _read(src) == []
        assert src.paths == [str(first)]
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 1 and "app-1.jsonl.gz" in said[0] and "gzip-compressed" in said[0]  # said once
    finally:
        src.close()


def test_a_new_table_is_read_by_its_own_header(tmp_path):
    (tmp_path / "w-1.csv").write_text("arm,reward\na,1\nb,0\n")
    src = _source(tmp_path, "w-*.csv", tables={str(tmp_path / "w-1.csv"): ","}, table_of=lambda p: ",")
    try:
        assert [json.loads(r.value) for r in _poll_all(src)] == [{"arm": "a", "reward": "1"}, {"arm": "b", "reward": "0"}]
        (tmp_path / "w-2.csv").write_text("reward,arm\n0,c\n")  # the columns in another order
        assert [json.loads(r.value) for r in _poll_all(src)] == [{"reward": "0", "arm": "c"}]
    finally:
        src.close()


def test_a_new_file_that_cannot_be_read_is_said_once_and_the_others_go_on(tmp_path, caplog):
    (tmp_path / "app-1.jsonl").write_bytes(b"".join(_lines(10)))
    src = _source(tmp_path)
    try:
        _read(src)
        (tmp_path / "app-2.jsonl").write_text('[{"arm": "a", "reward": 1}]\n')  # a JSON array, not lines
        with caplog.at_level("WARNING", logger="streamarms.files"):
            assert _read(src) == [] and _read(src) == []
        assert "app-2.jsonl appeared while following" in caplog.text and caplog.text.count("app-2.jsonl appeared") == 1
        with open(tmp_path / "app-1.jsonl", "ab") as f:
            f.write(b"".join(_lines(3, first=10)))
        assert _read(src) == [("app-1.jsonl", i) for i in range(10, 13)]
    finally:
        src.close()



def test_a_new_file_that_cannot_be_opened_yet_is_tried_again_at_the_next_look(tmp_path, caplog, monkeypatch):
    """A log created before its mode lets the run read it (``create 0600`` then ``chmod``), or opened when no more
    files could be: an ``OSError`` passes. It was refused for good, each of its lines lost; now said once and tried
    again at every look, read from its first line once it opens."""
    import streamarms.connectors.files as files
    (tmp_path / "app-1.jsonl").write_bytes(b"".join(_lines(10)))
    src = _source(tmp_path)
    real, denied = files.open_lines, [0]

    def open_lines(path, **kw):
        if path.endswith("app-2.jsonl") and denied[0] >= 0:
            denied[0] += 1
            raise PermissionError(13, "Permission denied", path)
        return real(path, **kw)

    monkeypatch.setattr(files, "open_lines", open_lines)
    try:
        assert len(_read(src)) == 10
        (tmp_path / "app-2.jsonl").write_bytes(b"".join(_lines(4, first=10)))
        with caplog.at_level("WARNING", logger="streamarms.files"):
            assert _read(src) == [] and _read(src) == [] and denied[0] >= 2  # looks, each denied
            assert caplog.text.count("app-2.jsonl appeared while following") == 1  # said once
            assert "Permission denied" in caplog.text and "tried again at every look" in caplog.text
            denied[0] = -1  # (the mode is set)
            assert _read(src) == [("app-2.jsonl", i) for i in range(4)]  # the next look opens it: every line
        assert "app-2.jsonl can be read now" in caplog.text and src.paths[-1] == str(tmp_path / "app-2.jsonl")
    finally:
        src.close()


def test_a_match_gone_before_it_could_be_opened_is_waited_for_no_more(tmp_path):
    """A match that could not be opened and is removed (a temporary file) was kept among those to try again: the
    folder was then listed at every look for good, and a file that came to its path later was said to be one that
    "can be read now"."""
    d = tmp_path / "logs"
    d.mkdir()
    watch = PatternWatch([str(d / "app-*.jsonl")], interval=0.0)
    old = 1_600_000_000
    (d / "app-1.jsonl").write_bytes(b"")
    watch.refuse(str(d / "app-1.jsonl"), PermissionError(13, "Permission denied"))
    assert watch._unopened
    (d / "app-1.jsonl").unlink()
    os.utime(d, (old, old))
    assert watch.new_files([], lambda q, st: False) == [] and not watch._unopened
    assert watch._folder_unchanged(watch.patterns[0])  # (the folder is trusted again)


def test_a_folder_unchanged_since_the_last_look_is_not_listed_again(tmp_path, monkeypatch):
    """A look for new matches listed the pattern's folder every second: 5,000 files, a third of the run's idle CPU.
    The folder's modification time (a file created, renamed or linked in it sets it) now says when nothing came;
    a time too close to the look is not trusted, and every RELIST looks it is listed anyway."""
    import streamarms.connectors.file_watch as fw
    d = tmp_path / "logs"
    d.mkdir()
    (d / "app-1.jsonl").write_bytes(b"".join(_lines(3)))
    listed = []
    real = fw.glob.glob
    monkeypatch.setattr(fw.glob, "glob", lambda p: listed.append(p) or real(p))
    watch = PatternWatch([str(d / "app-*.jsonl")], interval=0.0)
    old = 1_600_000_000
    os.utime(d, (old, old))  # (modified long before the looks)

    held: list[str] = []

    def look():  # (as the source: each new match is read from now on)
        new = watch.new_files(held, lambda q, st: False)
        held.extend(new)
        return [os.path.basename(q) for q in new]
    assert look() == ["app-1.jsonl"] and len(listed) == 1
    assert look() == [] and len(listed) == 1  # unchanged: not listed
    (d / "app-2.jsonl").write_bytes(b"")  # a new file: the folder's time moves
    assert look() == ["app-2.jsonl"] and len(listed) == 2
    assert look() == [] and len(listed) == 3  # modified just now: listed again
    os.utime(d, (old, old))
    look()
    n = len(listed)
    (d / "app-3.jsonl").write_bytes(b"")
    os.utime(d, (old, old))  # a clock that did not move (a network file system's): found by a listing anyway
    found = [look() for _ in range(fw.RELIST)]
    assert sum(found, []) == ["app-3.jsonl"] and len(listed) == n + 1  # one listing in RELIST looks
    src_like = PatternWatch([str(tmp_path / "*" / "app-*.jsonl")], interval=0.0)  # a wildcard folder: always listed
    assert src_like._folder_unchanged(src_like.patterns[0]) is False

def _start(tmp_path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", str(tmp_path / "app-*.jsonl"), "--follow",
         "--forever", "--alerts-file", str(tmp_path / "alerts.jsonl"), "--checkpoint", str(tmp_path / "c.ckpt"),
         "--checkpoint-interval", "0.2", "--summary-json", str(tmp_path / "summary.json"), "--quiet"],
        stderr=subprocess.PIPE, text=True)


def test_run_follow_reads_each_days_file_as_it_appears_and_a_restart_counts_each_line_once(tmp_path):
    (tmp_path / "app-2026-11-28.jsonl").write_bytes(b"".join(_lines(1000)))

    def next_day():
        (tmp_path / "app-2026-11-29.jsonl").write_bytes(b"".join(_lines(500, first=1000)))
    err = _run_until_checkpointed(tmp_path, 1500, "a checkpoint of the next day's file", (1000, next_day), _start)
    assert "app-2026-11-29.jsonl appeared while following" in err
    # while the run is stopped: more lines in the day's file, and the next day's file
    with open(tmp_path / "app-2026-11-29.jsonl", "ab") as f:
        f.write(b"".join(_lines(300, first=1500)))
    (tmp_path / "app-2026-11-30.jsonl").write_bytes(b"".join(_lines(200, first=1800)))
    _run_until_checkpointed(tmp_path, 2000, "a checkpoint of every line", start=_start)
    assert _summary(tmp_path)["records"] == 2000  # every line of the three files once


def test_following_a_pattern_that_matches_nothing_yet_waits_for_its_first_file(tmp_path, caplog):
    from streamarms.cli.file_patterns import expand_files
    from streamarms.errors import ConfigError
    full = str(tmp_path / "app-*.jsonl")
    try:
        expand_files([full])
        raise AssertionError("a replay of a pattern that matches nothing is an error")
    except ConfigError as e:
        assert "no file matches" in str(e)
    with caplog.at_level("WARNING", logger="streamarms.files"):
        assert expand_files([full], waiting=True) == []
    assert "no file matches" in caplog.text and "yet" in caplog.text
    src = _source(tmp_path)
    try:
        assert _read(src) == [] and not src.exhausted
        (tmp_path / "app-1.jsonl").write_bytes(b"".join(_lines(7)))
        assert _read(src) == [("app-1.jsonl", i) for i in range(7)]
    finally:
        src.close()


def test_a_file_named_that_is_not_there_yet_is_read_when_it_appears_and_a_restart_counts_each_line_once(tmp_path):
    """A service started before the log it follows stopped with "cannot start: FileNotFoundError" (exit 1, a crash
    loop under a restart policy): the file is waited for, as a pattern's first file is."""
    from tests.runtime.test_jsonl_follow import _start as start_named
    p = tmp_path / "r.jsonl"

    def appears():
        p.write_bytes(b"".join(_lines(700)))
    err = _run_until_checkpointed(tmp_path, 700, "a checkpoint of the file that appeared", (0, appears),
                                  lambda d: start_named(d, "--dead-letter-file", str(d / "dead.jsonl")))
    assert "r.jsonl is not there yet: following, it is read from its first line when it appears" in err
    assert "r.jsonl appeared while following" in err and "FileNotFoundError" not in err
    with open(p, "ab") as f:  # while the run is stopped
        f.write(b"".join(_lines(300, first=700)) + b"not json\n")
    _run_until_checkpointed(tmp_path, 1001, "a checkpoint of every line", start=lambda d: start_named(
        d, "--dead-letter-file", str(d / "dead.jsonl")))
    assert _summary(tmp_path)["records"] == 1001
    letter, = [json.loads(x) for x in (tmp_path / "dead.jsonl").read_text().splitlines()]
    assert letter["source"].endswith(":0:1000") and "line" not in letter  # (following: an index counted on over
    # rotations is no line of the file at the path; a replay's letters have "line")


def test_a_file_followed_and_renamed_to_a_name_the_pattern_matches_is_not_read_again(tmp_path):
    # logrotate with `dateext` and `extension .jsonl`: app.jsonl is renamed app-20261129.jsonl, which 'app*.jsonl'
    # matches; the follower reads it to its end, then the new app.jsonl -- and the pattern takes neither again
    p = tmp_path / "app.jsonl"
    p.write_bytes(b"".join(_lines(30)))
    src = _source(tmp_path, "app*.jsonl")
    try:
        assert len(_read(src)) == 30
        with open(p, "ab") as f:
            f.write(b"".join(_lines(5, first=30)))
        os.replace(p, tmp_path / "app-20261129.jsonl")
        p.write_bytes(b"".join(_lines(10, first=35)))
        got = _read(src) + _read(src) + _read(src)
        assert [o for _, o in got] == list(range(30, 45)) and src.paths == [str(p)]
        assert _read(src) == [] and src.rotations == 1
    finally:
        src.close()


def test_a_match_removed_after_it_was_read_is_closed_and_a_file_at_its_path_later_is_new(tmp_path):
    # a log past its retention (winston's maxFiles, a cron's find -delete): its space is freed only once closed
    old, today = tmp_path / "app-28.jsonl", tmp_path / "app-29.jsonl"
    old.write_bytes(b"".join(_lines(10)))
    today.write_bytes(b"".join(_lines(5, first=10)))
    src = _source(tmp_path)
    try:
        assert len(_read(src)) == 15
        reader = src._readers[str(old)]
        os.remove(old)
        for _ in range(5):
            _read(src)
        assert src.paths == [str(today)] and reader._f.closed
        assert str(old) + ":0" not in src.state() and str(today) + ":0" in src.state()
        old.write_bytes(b"".join(_lines(4, first=20)))  # a new file at the removed one's path
        assert _read(src) == [("app-28.jsonl", i) for i in range(4)]
        with open(today, "ab") as f:  # the others go on
            f.write(b"".join(_lines(2, first=30)))
        assert _read(src) == [("app-29.jsonl", 5), ("app-29.jsonl", 6)]
    finally:
        src.close()


def test_a_file_given_by_name_and_removed_is_waited_for(tmp_path):
    p = tmp_path / "app.jsonl"
    p.write_bytes(b"".join(_lines(10)))
    src = JsonlSource([str(p)], follow=True)
    try:
        assert len(_poll_all(src)) == 10
        os.remove(p)
        for _ in range(5):
            src.poll(0.0)
        assert src.paths == [str(p)] and not src.exhausted
        p.write_bytes(b"".join(_lines(3, first=10)))  # a file at its path: read on, its lines numbered on
        assert [r.offset for r in _poll_all(src, 5)] == [10, 11, 12]
    finally:
        src.close()


def test_a_file_read_is_known_by_its_inode_and_its_first_bytes(tmp_path):
    # once a file read is removed its inode number is free, and a new file (tomorrow's log) may get it: that file is
    # new, though its (device, inode) is the old one's -- here the same inode with other first bytes
    from streamarms.connectors.file_watch import ReadFiles
    from streamarms.connectors.jsonl_lines import LineReader
    p = tmp_path / "app.jsonl"
    p.write_bytes(b"".join(_lines(5)))
    done, reader = ReadFiles(), LineReader(str(p))
    done.add(reader)
    reader.close()
    os.rename(p, tmp_path / "app-1.jsonl")
    q = str(tmp_path / "app-1.jsonl")
    assert done.holds(q, os.stat(q), set)  # renamed: the same file
    with open(q, "r+b") as f:
        f.write(b'{"arm": "other"}\n')
    assert not done.holds(q, os.stat(q), set)  # the same inode, other bytes: a new file
    gone = LineReader(q)
    os.remove(q)
    done.add(gone)  # a file removed is not kept: nothing can be it again
    gone.close()
    assert len(done._closed) == 1


@pytest.mark.parametrize("link", ["current.log", "0-current.log"])  # (named after the files, and before them)
def test_a_symlink_to_the_days_log_is_not_read_beside_it(tmp_path, caplog, link):
    # current.log -> app-29.log, as many loggers keep: '*.log' matches both names of one file, and the link is moved
    # on to the next day's file; each line must count once
    from streamarms.cli.file_patterns import expand_files
    (tmp_path / "app-29.log").write_bytes(b"".join(_lines(10)))
    os.symlink(tmp_path / "app-29.log", tmp_path / link)
    full = str(tmp_path / "*.log")
    with caplog.at_level("WARNING", logger="streamarms.files"):
        paths = expand_files([full])
    assert paths == [str(tmp_path / "app-29.log")] and f"{link} is the same file as" in caplog.text
    src = JsonlSource(paths, follow=True, patterns=[full])
    src.watch = PatternWatch([full], interval=0.0)
    try:
        assert len(_poll_all(src)) == 10
        (tmp_path / "app-30.log").write_bytes(b"".join(_lines(4, first=10)))  # the next day: the link moved on
        os.remove(tmp_path / link)
        os.symlink(tmp_path / "app-30.log", tmp_path / link)
        got = [(os.path.basename(r.topic), r.offset) for r in _poll_all(src)]
        assert got == [("app-30.log", i) for i in range(4)] and len(src.paths) == 2
        assert _poll_all(src) == []
    finally:
        src.close()

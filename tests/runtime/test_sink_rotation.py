"""Alert and dead-letter files under ``logrotate``: a file renamed away (or removed) under the run keeps
its lines, the run writes a new file at the path, and its checkpoints mark that file -- before, the next
checkpoint failed on the missing path (``FileNotFoundError``) or marked the renamed file's size against the
new file's bytes, and every later line went to the renamed file. ``copytruncate`` appends at the new end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from test_jsonl_follow import _append, _checkpointed_at, _lines, _wait_for

from streamarms.connectors.file_sinks import JsonlDeadLetterSink, JsonlSink


def _values(p) -> list:
    return [json.loads(x)["n"] for x in open(p).read().splitlines()]


@pytest.mark.parametrize("create", [True, False], ids=["create", "nocreate"])
def test_a_sink_renamed_away_goes_on_in_a_new_file_at_its_path_and_marks_that_file(tmp_path, create):
    p = tmp_path / "alerts.jsonl"
    sink = JsonlSink(str(p))
    sink.send({"n": 1})
    sink.flush()
    os.rename(p, tmp_path / "alerts.jsonl.1")
    if create:  # logrotate's `create`: an empty file at once
        p.write_text("")
    sink.send({"n": 2})
    mark = sink.mark()
    sink.send({"n": 3})
    sink.close()
    assert _values(tmp_path / "alerts.jsonl.1") == [1] and _values(p) == [2, 3] and sink.rotations == 1
    # a restart from the checkpoint of that mark cuts the new file back to it: exactly once
    again = JsonlSink(str(p))
    assert again.rewind(mark) == len('{"n":3}\n')
    again.close()
    assert _values(p) == [2]


def test_a_removed_dead_letter_file_is_begun_again_at_its_path_with_the_lines_buffered_after(tmp_path):
    from collections import namedtuple
    R = namedtuple("R", "topic partition offset key value")
    p = tmp_path / "dead.jsonl"
    sink = JsonlDeadLetterSink(str(p))
    sink.send(R("t", 0, 1, b"a", b"x"), "not_json")
    sink.flush()
    os.remove(p)
    sink.send(R("t", 0, 2, b"a", b"y"), "not_json")
    assert sink.mark() is not None
    sink.close()
    assert [json.loads(x)["source"] for x in p.read_text().splitlines()] == ["t:0:2"]


def test_copytruncate_of_a_sink_appends_at_the_new_end(tmp_path):
    p = tmp_path / "alerts.jsonl"
    sink = JsonlSink(str(p))
    sink.send({"n": 1})
    sink.flush()
    (tmp_path / "alerts.jsonl.1").write_bytes(p.read_bytes())
    os.truncate(p, 0)
    sink.send({"n": 2})
    sink.close()
    assert _values(p) == [2] and sink.rotations == 0  # (no hole of the old size before it)


def test_a_running_follow_run_goes_on_through_the_rotation_of_its_alert_and_dead_letter_files(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(_lines(2000)) + b"not json 1\n")
    dead, alerts = tmp_path / "dead.jsonl", tmp_path / "alerts.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", str(p), "--follow", "--forever",
         "--alerts-file", str(alerts), "--dead-letter-file", str(dead), "--checkpoint", str(tmp_path / "c.ckpt"),
         "--checkpoint-interval", "0.2", "--summary-json", str(tmp_path / "summary.json")],
        stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: _checkpointed_at(tmp_path, "c.ckpt") == 2001, proc, "a checkpoint of the first lines")
        os.rename(dead, tmp_path / "dead.jsonl.1")  # nocreate: the run makes the new file
        os.rename(alerts, tmp_path / "alerts.jsonl.1")
        alerts.write_text("")
        _append(p, b"not json 2\n" + b"".join(_lines(1000, 2001)))
        _wait_for(lambda: _checkpointed_at(tmp_path, "c.ckpt") == 3002, proc, "a checkpoint after the rotation")
        time.sleep(0.5)  # (a few more checkpoints: each one marks the new files)
    finally:
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 0, err
    assert "dead.jsonl was removed" in err or "dead.jsonl was rotated" in err
    assert [json.loads(x)["value"] for x in (tmp_path / "dead.jsonl.1").read_text().splitlines()] == ["not json 1"]
    assert [json.loads(x)["value"] for x in dead.read_text().splitlines()] == ["not json 2"]
    assert json.loads((tmp_path / "summary.json").read_text())["records"] == 3002


def test_a_restart_after_a_rotation_since_the_checkpoint_cuts_the_rotated_file_and_begins_the_path_again(tmp_path):
    """A crash after a rotation and before the next checkpoint: the lines after the checkpoint are in the
    rotated file's end and in the new file; the records read again make them again, so both go (exactly
    once). A run stopped at its checkpoint and rotated while stopped has nothing to cut, and no warning."""
    p, rotated = tmp_path / "alerts.jsonl", tmp_path / "alerts.jsonl.1"
    sink = JsonlSink(str(p))
    sink.send({"n": 1})
    mark = sink.mark()
    sink.send({"n": 2})
    os.rename(p, rotated)
    sink.send({"n": 3})  # (the new file)
    sink.flush()  # then a crash: no checkpoint
    again = JsonlSink(str(p))
    assert again.rewind(mark) == 2 * len('{"n":2}\n')
    again.close()
    assert _values(rotated) == [1] and _values(p) == []

    stopped = tmp_path / "b.jsonl"
    mark = _one_line_marked(stopped)
    os.rename(stopped, tmp_path / "b.jsonl.1")
    stopped.write_text("")
    assert JsonlSink(str(stopped)).rewind(mark) == 0
    assert _values(tmp_path / "b.jsonl.1") == [1]


def _one_line_marked(p) -> list:
    """A sink's file with one line, its mark (a checkpoint's), the run stopped."""
    sink = JsonlSink(str(p))
    sink.send({"n": 1})
    mark = sink.mark()
    sink.close()
    return mark


def test_a_mark_found_in_no_newest_rotation_is_left_as_it_is(tmp_path):
    p = tmp_path / "alerts.jsonl"
    mark = _one_line_marked(p)
    os.rename(p, tmp_path / "alerts.jsonl.2")
    (tmp_path / "alerts.jsonl.1").write_text('{"n":7}\n')  # a later rotation: two since the checkpoint
    os.utime(tmp_path / "alerts.jsonl.2", ns=(1, 1))
    p.write_text('{"n":8}\n')
    assert JsonlSink(str(p)).rewind(mark) is None
    assert _values(p) == [8] and _values(tmp_path / "alerts.jsonl.2") == [1]

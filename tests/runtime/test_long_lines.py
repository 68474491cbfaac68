"""A line too long to hold (``LineReader.max_line``, 4 MiB): a file of NUL bytes left by a crash, or a binary file
given by mistake, is one line of gigabytes, which the reader held whole (a 300 MB line took 2.2 GB and was copied
whole into the dead-letter file). Its bytes are counted, its first ones kept: it is a ``line_too_long`` dead letter,
the lines around it are read, and positions after it stay exact (a checkpoint resumes there)."""

from __future__ import annotations

import json
import os

import pytest

from streamarms.connectors.files import JsonlSource
from streamarms.connectors.jsonl_lines import LONG_KEPT, MAX_LINE, LineReader
from streamarms.connectors.pipe_lines import PipeLineReader

_LONG = b"\0" * (MAX_LINE + 3 * 65536 + 17)  # (more than a block past the limit, not a multiple of a block)


def _file(tmp_path, *parts: bytes):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"".join(parts))
    return str(p)


def test_a_line_too_long_is_counted_not_held_and_the_lines_around_it_are_read(tmp_path):
    p = _file(tmp_path, b'{"a": 1}\n', _LONG + b"\n", b'{"a": 2}\r\n', b'{"a": 3}')
    r = LineReader(p)
    got = r.read(10)
    assert got[0] == '{"a": 1}' and got[2:] == ['{"a": 2}', '{"a": 3}'] and len(got) == 4
    assert got[1] == "\0" * LONG_KEPT and r.too_long == {1: len(_LONG) + 1}
    assert r.position(2) == 9 + len(_LONG) + 1 and r.position(3) == r.position(2) + 10
    pos, digest = r.mark(2)
    r.close()
    again = LineReader(p, line=2, pos=pos, digest=digest)  # a checkpoint after the long line resumes there
    assert again.read(10) == ['{"a": 2}', '{"a": 3}']
    again.close()


@pytest.mark.parametrize("last", [b"", b"\n"])
def test_a_long_last_line_is_refused_not_dropped(tmp_path, last):
    r = LineReader(_file(tmp_path, b'{"a": 1}\n', _LONG + last))
    assert len(r.read(10)) == 2 and r.too_long == {1: len(_LONG) + len(last)} and r.eof
    r.close()


def test_a_follower_counts_a_long_line_written_in_pieces_then_reads_on(tmp_path):
    p = _file(tmp_path, b'{"a": 1}\n', _LONG)
    r = LineReader(p, follow=True)
    assert r.read(10) == ['{"a": 1}'] and r.eof and r.incomplete == b"" and not r.too_long  # not ended yet
    with open(p, "ab") as f:
        f.write(b"\0" * 1000 + b'\n{"a": 2}\n')
    r.more()
    got = r.read(10)
    assert got[1:] == ['{"a": 2}'] and r.too_long == {1: len(_LONG) + 1001}
    assert r.changed() is None
    r.close()


def test_lines_ended_by_a_lone_cr_are_read_however_long_the_file(tmp_path):
    # an old Mac's line ends: no \n anywhere, so every byte used to wait in memory for the end of the file
    lines = [b'{"a": %d}' % i for i in range(40_000)]
    r = LineReader(_file(tmp_path, b"\r".join(lines) + b"\r"))
    r.max_line = 65536
    got = r.read(50_000)
    assert got == [x.decode() for x in lines] and not r.too_long
    r.close()


def test_standard_input_refuses_a_long_line_too():
    data = b'{"a": 1}\n' + _LONG + b'\n{"a": 2}\n'
    r_fd, w_fd = os.pipe()
    r = PipeLineReader(os.fdopen(r_fd, "rb"))
    got: list = []
    for at in range(0, len(data), 1 << 16):  # (a pipe holds 64 KiB: written and read in turns)
        os.write(w_fd, data[at:at + (1 << 16)])
        got += r.read(10)
    os.close(w_fd)
    while not r.eof:
        got += r.read(10)
    r.close()
    assert len(got) == 3 and got[2] == '{"a": 2}' and r.too_long == {1: len(_LONG) + 1}


@pytest.mark.parametrize("table", [False, True])
def test_the_source_makes_a_long_line_a_line_too_long_dead_letter(tmp_path, table):
    if table:
        p = tmp_path / "r.csv"
        p.write_bytes(b"arm,reward\na,1\n" + _LONG + b"\nb,0\n")
        src = JsonlSource([str(p)], tables={str(p): ","})
    else:
        p = tmp_path / "r.jsonl"
        p.write_bytes(b'{"arm": "a", "reward": 1}\n' + _LONG + b'\n{"arm": "b", "reward": 0}\n')
        src = JsonlSource([str(p)])
    got = []
    while not src.exhausted:
        got += src.poll(0.0)
    src.close()
    assert [r.offset for r in got] == ([1, 2, 3] if table else [0, 1, 2])
    bad = got[1]
    assert bad.key.reason == "line_too_long" and f"{len(_LONG) + 1:,} bytes" in bad.key.detail
    assert len(bad.value) <= LONG_KEPT * 6  # (its first bytes, escaped: not the whole line)
    assert json.loads(got[2].value)["arm"] == "b"


def test_a_tables_first_line_read_again_is_not_held_whole_either(tmp_path):
    # a table's header is read again by a reader that resumes past it: a first line of NUL bytes is cut at MAX_LINE
    r = LineReader(_file(tmp_path, _LONG + b"\n", b"a,1\n"))
    assert len(r.first_line()) == MAX_LINE
    r.close()
    r = LineReader(_file(tmp_path, b"\xef\xbb\xbfarm,reward\r\n", b"a,1\n"))
    assert r.first_line() == "arm,reward"
    r.close()

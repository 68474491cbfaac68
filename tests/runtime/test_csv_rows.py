"""CSV and TSV files (:mod:`streamarms.connectors.csv_lines`): a row is the record its JSONL shorthand line
would be (cells as text, the header's names); a row that is not one of the header's columns is a
``bad_row`` dead letter naming the counts; the header is read again when a checkpoint resumes past it, and
each file followed after a rotation has its own."""

from __future__ import annotations

import json
import os
import random

import pytest

from streamarms.connectors.csv_lines import CsvTable, table_format
from streamarms.connectors.files import JsonlSource
from streamarms.connectors.line_time import LineTime
from streamarms.errors import ConfigError


def _all(src: JsonlSource, rounds: int = 4) -> list:
    out: list = []
    for _ in range(rounds):
        out += src.poll(0.0)
    return out


def test_a_row_is_the_record_of_its_jsonl_line(tmp_path):
    p = tmp_path / "r.csv"
    p.write_bytes(b'\xef\xbb\xbfarm,reward,timestamp,note\r\n'  # a byte order mark, CRLF (Excel's CSV)
                  b'eu,1,1700000000123,"a, quoted ""cell"""\r\n'
                  b'\r\n'                                        # a blank line: no row, but a line
                  b'007,0.5,2023-11-14T22:13:20Z,\r\n')
    recs = _all(JsonlSource([str(p)], tables={str(p): ","}))
    assert [(r.offset, r.key, r.timestamp) for r in recs] == [(1, b"eu", 1700000000123), (3, b"007", 1700000000000)]
    assert recs[0].parsed == {"arm": "eu", "reward": "1", "timestamp": "1700000000123", "note": 'a, quoted "cell"'}
    assert recs[1].parsed["arm"] == "007"  # a cell is text: a key, not the number 7


def test_spaces_after_the_delimiters_are_not_part_of_the_cells(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text('arm, reward, note\neu, 1, "x, y"\n')  # hand-written CSV: the reward must read as a number
    assert [r.parsed for r in _all(JsonlSource([str(p)], tables={str(p): ","}))] == \
        [{"arm": "eu", "reward": "1", "note": "x, y"}]


def test_rows_that_are_not_rows_of_the_header_are_bad_rows_and_nothing_else_moves(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text('arm,reward\na,1\nb,0,extra\nc\nd,"open quote\ne,1\nf,1,2023-99\n')
    recs = _all(JsonlSource([str(p)], tables={str(p): ","}))
    got = [(r.offset, r.key if isinstance(r.key, bytes) else r.key.reason) for r in recs]
    assert got == [(1, b"a"), (2, "bad_row"), (3, "bad_row"), (4, "bad_row"), (5, b"e"), (6, "bad_row")]
    assert "3 cells, the header 2 columns" in recs[1].key.detail and recs[1].value == b"b,0,extra"
    assert recs[3].value == b'd,"open quote'  # the line itself, for the dead letter


def test_poison_lines_are_records_the_codec_refuses_never_an_exception(tmp_path):
    p = tmp_path / "r.csv"
    p.write_bytes(b"arm,reward\nb," + b"9" * 200_000 + b"\n\xff\xfe,1\nc,1\x00\nd,1\n")
    recs = _all(JsonlSource([str(p)], tables={str(p): ","}))
    assert recs[0].key.reason == "bad_row" and "field limit" in recs[0].key.detail  # a cell over 128 KiB
    assert recs[1].key == b"\xff\xfe" and recs[1].parsed == {"arm": "\udcff\udcfe", "reward": "1"}  # key_not_utf8
    assert recs[1].value == b'{"arm":"\xff\xfe","reward":"1"}'
    assert [r.key for r in recs[2:]] == [b"c", b"d"]


def test_a_time_cell_is_a_number_in_the_unit_or_an_iso_date_time(tmp_path):
    p = tmp_path / "r.tsv"
    p.write_text("arm\tts\na\t1700000000.5\nb\t\nc\tyesterday\nd\tnan\n")
    recs = _all(JsonlSource([str(p)], tables={str(p): "\t"}, line_time=LineTime("ts", "s")))
    assert [r.timestamp for r in recs[:2]] == [1700000000500, None]  # an empty cell: no time
    assert [r.key.reason for r in recs[2:]] == ["bad_timestamp"] * 2 and recs[2].key.raw == b"c"


def test_a_restart_past_the_header_reads_it_again_and_goes_on_at_the_next_row(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("reward,arm\n" + "".join(f"{i % 2},k{i}\n" for i in range(50)))
    src = JsonlSource([str(p)], tables={str(p): ","}, max_records=20)
    first = src.poll(0.0)
    src.rollback(len(first) - 5)  # 5 records not handled: the checkpoint is before them
    state = src.state()
    src.close()
    again = _all(JsonlSource([str(p)], tables={str(p): ","}, resume=state))
    keys = [r.key for r in first[:-5] + again]
    assert keys == [f"k{i}".encode() for i in range(50)]  # neither lost nor read twice
    assert again[0].parsed == {"reward": str((len(first) - 5) % 2), "arm": f"k{len(first) - 5}"}


def test_a_header_longer_than_a_read_block_is_read_whole_on_a_restart(tmp_path):
    p = tmp_path / "r.csv"
    names = [f"column_{i:05d}" for i in range(8_000)]  # ~100 KB of header: more than one 64 KiB block
    p.write_text(",".join(["arm", *names]) + "\n" + "".join(f"k{i}," + ",".join("1" * len(names)) + "\n"
                                                             for i in range(3)))
    src = JsonlSource([str(p)], tables={str(p): ","}, max_records=2)
    first = src.poll(0.0)  # the header and the first row
    state = src.state()
    assert [r.key for r in first] == [b"k0"] and state[f"{p}:0"][0] == 2
    again = _all(JsonlSource([str(p)], tables={str(p): ","}, resume=state))
    assert [r.key for r in first + again] == [b"k0", b"k1", b"k2"]
    assert len(json.loads(again[0].value)) == len(names) + 1  # (no bad_row: the whole header was read)


def test_a_last_line_without_its_line_end_is_read_when_it_is_a_whole_row(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("arm,reward\na,1\nb,0")
    src = JsonlSource([str(p)], tables={str(p): ","})
    assert [r.key for r in _all(src)] == [b"a", b"b"] and src.incomplete == {}
    q = tmp_path / "q.csv"
    q.write_text("arm,reward\na,1\nb")  # half a row: still being written, not read, not refused
    src = JsonlSource([str(q)], tables={str(q): ","})
    assert [r.key for r in _all(src)] == [b"a"] and src.incomplete == {str(q): 1}


def test_a_followed_table_rotated_reads_the_new_files_header(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("arm,reward\na,1\n")
    src = JsonlSource([str(p)], tables={str(p): ","}, follow=True)
    assert [r.key for r in _all(src)] == [b"a"]
    os.rename(p, tmp_path / "r.csv.1")
    p.write_text("reward,arm,extra\n0,b,x\n")  # the new file's own header (its columns in another order)
    recs = _all(src, rounds=6)
    assert [(r.key, r.parsed) for r in recs] == [(b"b", {"reward": "0", "arm": "b", "extra": "x"})]
    src.close()


@pytest.mark.parametrize("head, why", [("arm,arm\n", "twice"), ("arm,,arm\n", "twice"), ("\n", "no header line")])
def test_a_bad_header_is_an_error_before_any_record(tmp_path, head, why):
    p = tmp_path / "r.csv"
    p.write_text(head + "a,1\n")
    with pytest.raises(ConfigError, match=why):
        JsonlSource([str(p)], tables={str(p): ","})


def test_the_format_is_the_files_name_unless_given():
    assert [table_format(p) for p in ("a.csv", "a.CSV.gz", "b.tsv", "c.tab", "d.jsonl", "e.log", "-")] == \
        ["csv", "csv", "tsv", "tsv", None, None, None]
    assert table_format("x.log", "tsv") == "tsv" and table_format("x.csv", "jsonl") is None
    t = CsvTable(",")
    t.set_header("arm,reward", "f")
    assert t.whole("a,1") and not t.whole("a") and not t.whole('a,"1')


@pytest.mark.parametrize("unit", ["ms", "s"])
def test_the_c_level_pass_makes_the_records_the_row_loop_makes(unit):
    """:meth:`CsvTable._plain_chunk` (the common chunk, in ``map`` passes) against the row loop, on random
    chunks of common and uncommon rows (empty time cells, fractions, out-of-range times, invalid UTF-8)."""
    rng, used = random.Random(7), 0
    for _ in range(300):
        header = rng.sample(["arm", "key", "timestamp", "reward", "x"], rng.randint(1, 5))
        cells = {"timestamp": ["1700000000123", "5", "", "1.5", "99999999999999999", "1700000000"]}
        rows = [",".join(rng.choice(cells.get(c, ["a", "007", "b c", "\u00e9", "", "\udcff"])) for c in header) + "\n"
                for _ in range(rng.randint(1, 6))]
        fast, loop = CsvTable(",", LineTime("timestamp", unit)), CsvTable(",", LineTime("timestamp", unit))
        for t in (fast, loop):
            t.set_header(",".join(header), "f")
        loop._plain_chunk = lambda *a: None  # type: ignore[method-assign]
        used += fast._plain_chunk("f", fast._rows(rows), 3) is not None
        assert fast.records("f", rows, 3) == loop.records("f", rows, 3), (header, rows)
    assert used >= 30  # (the C-level pass was taken, not only the loop)


def test_an_unnamed_column_is_read_and_a_semicolon_header_sets_the_delimiter(tmp_path):
    """pandas' to_csv writes its index as a first column without a name; a spreadsheet where the decimal mark is a
    comma exports its CSV with semicolons. Both were one error before any row."""
    p, q = tmp_path / "frame.csv", tmp_path / "sheet.csv"
    p.write_text(",arm,reward\n0,a,True\n1,b,0\n")
    q.write_text("arm;reward;note\na;1;x,y\nb;0;\nc;1\n")
    src = JsonlSource([str(p), str(q)], tables={str(p): ",", str(q): ","})
    recs = _all(src, rounds=4)
    assert [(r.key, r.parsed) for r in recs if r.parsed is not None] == [
        (b"a", {"": "0", "arm": "a", "reward": "True"}), (b"b", {"": "1", "arm": "b", "reward": "0"}),
        (b"a", {"arm": "a", "reward": "1", "note": "x,y"}), (b"b", {"arm": "b", "reward": "0", "note": ""})]
    assert recs[-1].key.reason == "bad_row" and "semicolon in an unquoted cell" in recs[-1].key.detail
    src.close()

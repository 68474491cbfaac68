"""``--rewards-format w3c``: W3C extended logs (IIS, CloudFront) -- the ``#Fields`` directive names an entry's
fields, a new one (a service restart) names those after it, ``-`` is no value, ``date`` and ``time`` make the
``timestamp``; an entry of another width is a ``bad_row``; a source resumed past a later ``#Fields`` block reads
its entries by that block's names, not the first's, from a plain or a compressed file."""

from __future__ import annotations

import gzip
import random

import pytest

from streamarms.connectors.files import JsonlSource
from streamarms.connectors.w3c_lines import BACK, W3cLines

HEAD = "#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n#Date: 2026-11-30 00:00:00\n"
FIRST = "#Fields: date time cs-uri-stem sc-status time-taken\n"
SECOND = "#Fields: date time sc-status time-taken cs-uri-stem c-ip\n"  # (another order, one field more)


def _entry(i: int, fields: str) -> str:
    path, status, ms = f"/p{i % 7}", 500 if i % 11 == 0 else 200, i % 300
    if fields is FIRST:
        return f"2026-11-30 00:{i // 60 % 60:02d}:{i % 60:02d} {path} {status} {ms}\n"
    return f"2026-11-30 01:{i // 60 % 60:02d}:{i % 60:02d} {status} {ms} {path} 10.0.0.{i % 250}\n"


def _records(src):
    out = []
    while batch := src.poll(0.0):
        out += batch
    return out


def test_entries_by_their_fields_with_a_cloudfront_tab_and_the_refusals():
    t = W3cLines()
    cloudfront = ["#Version: 1.0", "#Fields: date time x-edge-location sc-status time-taken cs-uri-stem",
                  "2026-11-30\t01:02:03\tFRA56-P1\t502\t0.051\t/index.html", "2026-11-30\t01:02:04\tFRA56-P1\t200\t-"]
    ok, bad = t.records("cf.log", cloudfront, 0)
    assert ok.parsed == {"date": "2026-11-30", "time": "01:02:03", "x-edge-location": "FRA56-P1", "sc-status": "502",
                         "time-taken": "0.051", "cs-uri-stem": "/index.html", "timestamp": "2026-11-30T01:02:03Z"}
    assert ok.timestamp == 1_796_000_523_000 and ok.key is None
    assert bad.key.reason == "bad_row" and "has 5 fields, and #Fields names 6" in bad.key.detail
    assert W3cLines().records("x.log", ["2026-11-30 01:02:03 / 200"], 0)[0].key.detail == \
        "the entry comes before any #Fields directive"
    assert t.header[-1] == "timestamp" and t.whole("#Remark: x") and not t.whole("a b")


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_source_resumed_past_a_later_fields_block_reads_it_by_that_block(tmp_path, packed):
    rng = random.Random(2)
    first = [_entry(i, FIRST) for i in range(rng.randrange(200, 400))]
    # (more than BACK bytes of entries after the second block: it is found by reading back block by block)
    second = [_entry(i, SECOND) for i in range(BACK // 30)]
    text = HEAD + FIRST + "".join(first) + HEAD + SECOND + "".join(second)
    p = tmp_path / ("u_ex.log.gz" if packed else "u_ex.log")
    p.write_bytes(gzip.compress(text.encode()) if packed else text.encode())
    whole = _records(JsonlSource([str(p)], tables={str(p): W3cLines()}, max_records=5000))
    assert len(whole) == len(first) + len(second) and all(r.key is None for r in whole)
    src = JsonlSource([str(p)], tables={str(p): W3cLines()}, max_records=len(first) + len(second) - 100)
    head = src.poll(0.0)
    src.rollback(len(head) - 50)  # (the last 50 not handled: the checkpoint is before them, past the second block)
    state = src.state()
    src.close()
    again = JsonlSource([str(p)], tables={str(p): W3cLines()}, resume=state)
    rest = _records(again)
    again.close()
    assert [r.parsed for r in head[:-50] + rest] == [r.parsed for r in whole]
    assert rest[0].parsed["c-ip"].startswith("10.0.0.") and set(rest[0].parsed) == {
        "date", "time", "sc-status", "time-taken", "cs-uri-stem", "c-ip", "timestamp"}

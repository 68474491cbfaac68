"""``--line-pattern``: a plain-text log's lines as records -- the named groups that matched are the fields
(text), a line the pattern does not match is a ``bad_row`` dead letter, the time group may be the common log
format's, and the source resumes a checkpoint at the next line as it does a JSON log's."""

from __future__ import annotations

import pytest

from streamarms.connectors.files import JsonlSource
from streamarms.connectors.line_time import LineTime
from streamarms.connectors.pattern_lines import PatternLines, clf_ms
from streamarms.errors import ConfigError

LINES = [
    '10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] "GET /api/cart?id=3 HTTP/1.1" 503 12 "-" "curl/8.0"\n',
    '10.0.0.8 - bob [14/Nov/2023:23:13:21 +0100] "POST /login HTTP/2.0" 200 0 "https://x/" "Mozilla/5.0"\n',
    '10.0.0.9 - - [14/Nov/2023:22:13:22 +0000] "\\x16\\x03\\x01" 400 157 "-" "-"\n',  # TLS sent to the HTTP port
    "\n",
    "not an access log line\n",
]


def test_the_combined_pattern_reads_an_access_log():
    recs = PatternLines("combined", LineTime("time_local")).records("access.log", LINES, 10)
    assert [r.offset for r in recs] == [10, 11, 12, 14]  # (the blank line counts, and is no record)
    first, second, tls, bad = recs
    assert first.parsed == {"remote_addr": "10.0.0.7", "remote_user": "-", "time_local": "14/Nov/2023:22:13:20 +0000",
                            "method": "GET", "path": "/api/cart", "query": "id=3", "protocol": "HTTP/1.1",
                            "status": "503", "body_bytes_sent": "12", "http_referer": "-", "http_user_agent": "curl/8.0"}
    assert (first.timestamp, second.timestamp, tls.timestamp) == (1_700_000_000_000, 1_700_000_001_000, 1_700_000_002_000)
    assert "path" not in tls.parsed and tls.parsed["status"] == "400"  # the request's parts: absent
    assert bad.key.reason == "bad_row" and bad.key.detail == "the line does not match --line-pattern combined"
    assert bad.value == b"not an access log line"
    common = PatternLines("common").records("a.log", LINES[:1], 0)[0].parsed
    assert "http_user_agent" not in common and common["status"] == "503"


def test_a_pattern_of_ones_own_and_its_refusals():
    t = PatternLines(r"level=(?P<level>\w+) host=(?P<arm>\S+)(?: ms=(?P<ms>\d+))? ts=(?P<timestamp>\S+)")
    recs = t.records("app.log", ["level=ERROR host=h1 ms=12 ts=1700000000123", "level=INFO host=h2 ts=2023-11-14T22:13:20Z",
                                 "level=INFO host=h3 ts=yesterday"], 0)
    assert [(r.key, r.timestamp) for r in recs[:2]] == [(b"h1", 1_700_000_000_123), (b"h2", 1_700_000_000_000)]
    assert recs[1].parsed == {"level": "INFO", "arm": "h2", "timestamp": "2023-11-14T22:13:20Z"}  # no ms: no field
    assert recs[2].key.reason == "bad_timestamp" and recs[2].key.raw == b"h3"
    assert t.whole("level=INFO host=h2 ts=5") and not t.whole("level=INFO")
    for bad, why in (("(unclosed", "not a regular expression"), (r"\d+ (\w+)", "names no group")):
        with pytest.raises(ConfigError, match=why):
            PatternLines(bad)


def test_clf_times():
    assert clf_ms("10/Oct/2000:13:55:36 -0700") == 971211336000
    assert clf_ms("31/Feb/2000:13:55:36 -0700") is None and clf_ms("10/Oct/2000") is None


def test_a_source_resumes_a_pattern_log_at_the_next_line(tmp_path):
    p = tmp_path / "access.log"
    p.write_text("".join(LINES[:2] * 10))
    lines = PatternLines("combined")
    src = JsonlSource([str(p)], tables={str(p): lines}, max_records=8)
    first = src.poll(0.0)
    src.rollback(len(first) - 3)  # 3 records not handled: the checkpoint is before them
    state = src.state()
    src.close()
    with open(p, "a") as f:
        f.write(LINES[0].replace("/api/cart", "/api/pay"))
    again = JsonlSource([str(p)], tables={str(p): lines}, resume=state)
    rest = again.poll(0.0) + again.poll(0.0)
    again.close()
    assert [r.parsed["path"] for r in first[:-3] + rest] == ["/api/cart", "/login"] * 10 + ["/api/pay"]

"""``--line-pattern``: a plain-text log's lines as records -- the named groups that matched are the fields
(text), a line the pattern does not match is a ``bad_row`` dead letter, the time group may be the common log
format's, and the source resumes a checkpoint at the next line as it does a JSON log's."""

from __future__ import annotations

import datetime as dt

import pytest

from streamarms.connectors.files import JsonlSource
from streamarms.connectors.line_time import LineTime
from streamarms.connectors.pattern_lines import PatternLines, clf_ms, is_continuation, syslog_ms
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
    assert first.parsed == {"remote_addr": "10.0.0.7", "time_local": "14/Nov/2023:22:13:20 +0000",  # ("-": none)
                            "method": "GET", "path": "/api/cart", "query": "id=3", "protocol": "HTTP/1.1",
                            "status": "503", "body_bytes_sent": "12", "http_user_agent": "curl/8.0"}
    assert (first.timestamp, second.timestamp, tls.timestamp) == (1_700_000_000_000, 1_700_000_001_000, 1_700_000_002_000)
    assert "path" not in tls.parsed and tls.parsed["status"] == "400"  # the request's parts: absent
    assert bad.key.reason == "bad_row" and bad.key.detail == "the line does not match --line-pattern combined"
    assert bad.value == b"not an access log line"
    common = PatternLines("common").records("a.log", LINES[:1], 0)[0].parsed
    assert "http_user_agent" not in common and common["status"] == "503"


def test_the_ingress_nginx_pattern_reads_its_upstreams_lists_and_empty_brackets():
    """Kubernetes ingress-nginx's default format is the combined format and nine fields more; a request retried on a
    second upstream writes each upstream field as a list, and one routed to no canary an empty bracket."""
    head = '10.1.2.3 - - [14/Nov/2023:22:13:20 +0000] "GET /api/items/7 HTTP/1.1" 502 150 "-" "curl/8.0" 420 0.012 '
    lines = [head + "[shop-cart-80] [] 10.2.0.7:8080 150 0.011 502 5f1c9a\n",
             head + "[shop-cart-80] [shop-cart-canary-80] 10.2.0.7:8080, 10.2.0.9:8080 0, 150 0.004, 0.008 502, 200 "
                    "7a2b\n",
             head + "[shop-cart-80] [] - - - - 9c3d\n",  # (no upstream answered: nginx itself)
             '10.1.2.3 - - [14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 200 1 "-" "curl/8.0"\n']  # (combined only)
    one, retried, none, plain = PatternLines("ingress-nginx", LineTime("time_local")).records("ingress.log", lines, 0)
    assert one.parsed == {"remote_addr": "10.1.2.3", "time_local": "14/Nov/2023:22:13:20 +0000", "method": "GET",
                          "path": "/api/items/7", "protocol": "HTTP/1.1", "status": "502", "body_bytes_sent": "150",
                          "http_user_agent": "curl/8.0", "request_length": "420", "request_time": "0.012",
                          "proxy_upstream_name": "shop-cart-80", "upstream_addr": "10.2.0.7:8080",
                          "upstream_response_length": "150", "upstream_response_time": "0.011",
                          "upstream_status": "502", "req_id": "5f1c9a"}
    assert one.timestamp == 1_700_000_000_000
    assert {k: retried.parsed[k] for k in ("proxy_alternative_upstream_name", "upstream_addr", "upstream_status",
                                           "req_id")} == {
        "proxy_alternative_upstream_name": "shop-cart-canary-80", "upstream_addr": "10.2.0.7:8080, 10.2.0.9:8080",
        "upstream_status": "502, 200", "req_id": "7a2b"}
    assert "upstream_addr" not in none.parsed and none.parsed["req_id"] == "9c3d"
    assert plain.key.reason == "bad_row"


def test_the_haproxy_pattern_reads_an_httplog_line_after_its_syslog_header():
    """HAProxy's HTTP log, as its manual's example and with a timer that never came (-1), captured headers and a
    bad request; its accept date has milliseconds and no zone (UTC)."""
    syslog = "Feb  6 12:14:14 localhost haproxy[14389]: "
    lines = [syslog + '10.0.1.2:33317 [14/Nov/2023:22:13:20.655] http-in static/srv1 10/0/30/69/109 200 2750 - - '
                      '---- 1/1/1/1/0 0/0 {1wt.eu} {} "GET /index.html?x=1 HTTP/1.1"\n',
             syslog + '10.0.1.2:33318 [14/Nov/2023:22:13:21.000] http-in static/srv2 5/0/-1/-1/3002 503 212 - - '
                      'SC-- 2/2/0/0/3 0/0 "GET /api HTTP/1.1"\n',
             syslog + '10.0.1.3:33319 [14/Nov/2023:22:13:22.000] http-in http-in/<NOSRV> -1/-1/-1/-1/0 400 187 - - '
                      'PR-- 1/1/0/0/0 0/0 "<BADREQ>"\n']
    ok, refused, bad = PatternLines("haproxy", LineTime("accept_date")).records("haproxy.log", lines, 0)
    assert ok.parsed == {"client_ip": "10.0.1.2", "client_port": "33317", "accept_date": "14/Nov/2023:22:13:20.655",
                         "frontend_name": "http-in", "backend_name": "static", "server_name": "srv1",
                         "time_request": "10", "time_queue": "0", "time_backend_connect": "30",
                         "time_backend_response": "69", "time_duration": "109", "status_code": "200",
                         "bytes_read": "2750", "termination_state": "----", "actconn": "1", "feconn": "1",
                         "beconn": "1", "srv_conn": "1", "retries": "0", "srv_queue": "0", "backend_queue": "0",
                         "captured_request_headers": "1wt.eu", "method": "GET", "path": "/index.html", "query": "x=1",
                         "protocol": "HTTP/1.1"}
    assert (ok.timestamp, refused.timestamp) == (1_700_000_000_655, 1_700_000_001_000)
    assert "time_backend_response" not in refused.parsed and refused.parsed["retries"] == "3"  # (-1: never came)
    assert bad.parsed["server_name"] == "<NOSRV>" and "path" not in bad.parsed and "time_request" not in bad.parsed


def test_the_envoy_pattern_reads_envoy_s_default_lines_and_istio_s():
    """Envoy's default format as its documentation's example; Istio's sidecar format adds three fields after the
    flags and six at the end; ``-`` is no value."""
    envoy = ('[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" '
             '"nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"\n')
    istio = ('[2026-11-30T10:00:00.050Z] "GET /api/4?x=1 HTTP/1.1" 503 UF upstream_reset_before_response_started'
             '{connection_failure} - "-" 0 91 3 - "-" "curl/8" "254499c7" "reviews:9080" "10.0.0.21:9080" '
             'outbound|9080||reviews.default.svc.cluster.local 10.1.0.5:41234 10.96.0.9:9080 10.1.0.5:50000 - '
             'default\n')
    a, b = PatternLines("envoy", LineTime("start_time")).records("envoy.log", [envoy, istio], 0)
    assert a.parsed == {"start_time": "2016-04-15T20:17:00.310Z", "method": "POST", "path": "/api/v1/locations",
                        "protocol": "HTTP/2", "response_code": "204", "bytes_received": "154", "bytes_sent": "0",
                        "duration": "226", "upstream_service_time": "100", "x_forwarded_for": "10.0.35.28",
                        "user_agent": "nsq2http", "request_id": "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2",
                        "authority": "locations", "upstream_host": "tcp://10.0.2.1:80"}
    assert a.timestamp == 1_460_751_420_310
    assert {k: b.parsed.get(k) for k in ("query", "response_code", "response_flags", "response_code_details",
                                         "upstream_service_time", "upstream_cluster", "route_name")} == {
        "query": "x=1", "response_code": "503", "response_flags": "UF",
        "response_code_details": "upstream_reset_before_response_started{connection_failure}",
        "upstream_service_time": None, "upstream_cluster": "outbound|9080||reviews.default.svc.cluster.local",
        "route_name": "default"}


def test_the_syslog_pattern_reads_traditional_rfc3339_and_pri_lines():
    """A syslog file's lines as rsyslog writes them: the traditional time or RFC 3339's, a program with or without its
    process id, and ``<PRI>`` before a line kept as it was sent."""
    lines = ["Nov 14 22:13:20 web-1 sshd[812]: Failed password for root from 10.0.0.1 port 22 ssh2\n",
             "2023-11-14T22:13:20.123456+00:00 web-2 kernel: [1234.5] Out of memory: Killed process 77\n",
             "<34>Nov 14 22:13:20 web-3 su: BAD SU root on /dev/pts/0\n",
             "not a syslog line\n"]
    a, b, c, bad = PatternLines("syslog", LineTime("time")).records("syslog", lines, 0)
    assert a.parsed == {"time": "Nov 14 22:13:20", "host": "web-1", "program": "sshd", "pid": "812",
                        "message": "Failed password for root from 10.0.0.1 port 22 ssh2"}
    assert b.parsed == {"time": "2023-11-14T22:13:20.123456+00:00", "host": "web-2", "program": "kernel",
                        "message": "[1234.5] Out of memory: Killed process 77"}
    assert b.timestamp == 1_700_000_000_123
    assert c.parsed["pri"] == "34" and c.parsed["program"] == "su" and "pid" not in c.parsed
    assert bad.key.reason == "bad_row"


def test_named_formats_are_read_after_a_prefix_and_a_poison_line_is_refused_at_once():
    """A named format's line is read at the line's start or after a few words -- a Kubernetes container log's
    ``2026-11-30T10:00:00.123Z stdout F``, a syslog header --, not searched for at every place in the line: that took
    time quadratic in a long word's length (a 40 KB line of one word: 5.7 s; the 4 MiB a reader holds: days), so one
    poison line stalled the run. ``benchmarks/pattern_lines.py`` measures it."""
    from streamarms.connectors.pattern_lines import PATTERNS

    assert all(PATTERNS[name].startswith("^") for name in PATTERNS), PATTERNS.keys()
    line = LINES[0].rstrip("\n")
    for prefix in ("", "2026-11-30T10:00:00.123456789Z stdout F ", "<190>Nov 14 22:13:20 lb-1 nginx: "):
        [r] = PatternLines("combined").records("access.log", [prefix + line], 0)
        assert r.parsed["status"] == "503" and r.parsed["remote_addr"] == "10.0.0.7", prefix
    poison = ["x" * (4 << 20), "[" * (4 << 20), "a:1 " * (1 << 20)]
    for name in PATTERNS:
        assert [r.key.reason for r in PatternLines(name).records("p.log", poison, 0)] == ["bad_row"] * 3, name


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


SYSLOG = (r"^(?P<time>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T\S+) (?P<host>\S+) "
          r"(?P<program>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?: (?P<message>.*)$")


def test_syslog_and_slash_times():
    """rsyslog's traditional lines (a time without year or zone) and its ISO ones; the year is the latest that
    does not put the time after tomorrow, so a log read on January 2nd keeps its December in the year before.
    Go's log package and nginx's error log write 2023/11/14 22:13:20."""
    t = PatternLines(SYSLOG, LineTime("time"))
    lines = ["Dec 31 23:59:58 web-1 sshd[812]: Failed password for root from 10.1.1.1 port 22 ssh2\n",
             "Jan  1 00:00:01 web-2 CRON[99]: (root) CMD (true)\n",
             "2023-11-14T22:13:20.123456+00:00 db-1 kernel: Out of memory\n",
             "Jan 32 00:00:01 web-2 cron: a day no month has\n"]
    t._now = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
    a, b, c, bad = t.records("syslog", lines, 0)
    assert a.parsed == {"time": "Dec 31 23:59:58", "host": "web-1", "program": "sshd", "pid": "812",
                        "message": "Failed password for root from 10.1.1.1 port 22 ssh2"}
    assert (a.timestamp, b.timestamp, c.timestamp) == (1_704_067_198_000, 1_704_067_201_000, 1_700_000_000_123)
    assert c.parsed["program"] == "kernel" and "pid" not in c.parsed
    assert bad.key.reason == "bad_timestamp"
    go = PatternLines(r"^(?P<time>\S+ \S+) handler=(?P<arm>\S+)", LineTime("time"))
    assert [r.timestamp for r in go.records("app.log", ["2023/11/14 22:13:20 handler=pay",
                                                         "2023/11/14 22:13:20.5 handler=cart"], 0)] == \
        [1_700_000_000_000, 1_700_000_000_500]
    now = dt.datetime(2026, 11, 29, 12, tzinfo=dt.UTC)
    assert syslog_ms("Nov 30 10:00:00", now) == 1_796_032_800_000  # (tomorrow: this year)
    assert syslog_ms("Dec  1 10:00:00", now) == 1_764_583_200_000  # (after tomorrow: last year)


def test_logfmt_lines_of_any_text_are_records_or_dead_letters_never_an_error():
    """``--line-pattern logfmt`` on lines of random text (quotes, backslashes, escapes of lone surrogates that JSON
    unquotes and UTF-8 cannot write, NUL, ``=`` anywhere): each is a record whose value is JSON, or a ``bad_row``
    dead letter; none raises (an escaped ``\\ud800`` in a quoted value stopped the run)."""
    import json
    import random

    rng = random.Random(11)
    alphabet = ['a', 'b', '=', ' ', '"', '\\', 'u', 'd', '8', '0', '\\ud800', '\\n', '\x00', 'é', '\t', 'x=1', 'k="v"']
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 30))) for _ in range(5000)]
    t = PatternLines("logfmt", LineTime("ts"))
    records = t.records("app.log", lines, 0)
    read = {r.offset for r in records}  # (a line not read: blank, or no pair and a continuation -- a leading space)
    assert all(not lines[n].strip() or is_continuation(lines[n]) for n in set(range(len(lines))) - read)
    assert len(read) > 4000
    bad = 0
    for r in records:
        if getattr(r.key, "reason", None) == "bad_row":
            bad += 1
            continue
        assert isinstance(json.loads(r.value.decode("utf-8", "surrogateescape")), dict)
    assert 100 < bad < len(records) - 100  # (both kinds were met)


def test_the_values_after_a_common_or_combined_line_s_fields_are_fields_of_their_own():
    """An nginx ``log_format`` that extends the combined one (``"$http_x_forwarded_for" $request_time
    rt=$request_time urt="$upstream_response_time"``): its values were dropped; a ``name=value`` pair is a field by
    its name, any other value ``extra_N`` (the N-th after the format's fields), ``-`` none; the format's own fields
    are never replaced. Only the named formats read a rest; a pattern of one's own reads its groups."""
    from streamarms.connectors.kafka_lines import ValueLines

    line = LINES[0].rstrip("\n") + ' "10.9.9.9, 10.0.0.1" 0.012 rt=0.5 urt="0.4, 0.1" status=999 - "" x\n'
    got = PatternLines("combined").records("a.log", [line], 0)[0].parsed
    assert {k: v for k, v in got.items() if k not in LINE_0} == {
        "extra_1": "10.9.9.9, 10.0.0.1", "extra_2": "0.012", "rt": "0.5", "urt": "0.4, 0.1", "extra_8": "x"}, got
    assert got["status"] == "503"
    common = PatternLines("common").records("a.log", LINES[:1], 0)[0].parsed  # (a combined line read as common)
    assert common["extra_2"] == "curl/8.0" and "extra_1" not in common and "http_user_agent" not in common
    assert PatternLines("combined").open and ValueLines("combined").open and not PatternLines("ingress-nginx").open
    own = PatternLines(r"(?P<host>\S+) (?P<_tail>.*)")
    assert not own.open and own.header == ["host", "_tail"]
    assert own.records("a.log", ["h1 a=1 2"], 0)[0].parsed == {"host": "h1", "_tail": "a=1 2"}


def test_apache_s_escaped_quotes_do_not_end_a_combined_field():
    """Apache writes a ``"`` inside a logged text as ``\\"`` (a bot's user agent, ``"Mozilla/5.0 (compatible;
    \\"Bot\\")"``): the user agent ended there, and the values after it (the request time, ``extra_1``) were lost --
    8% of a log's lines refused as ``missing_reward``."""
    line = ('1.2.3.4 - alice [31/Dec/2025:22:00:13 +0100] "GET /e HTTP/2.0" 503 13 "https://ex.com/?q=\\"a\\"" '
            '"Mozilla/5.0 (compatible; \\"Bot\\")" 0.144')
    got = PatternLines("combined").records("a.log", [line], 0)[0].parsed
    assert got["extra_1"] == "0.144" and got["path"] == "/e" and got["status"] == "503", got
    assert got["http_user_agent"] == 'Mozilla/5.0 (compatible; \\"Bot\\")' and got["http_referer"].endswith('\\"a\\"')


LINE_0 = {"remote_addr", "time_local", "method", "path", "query", "protocol", "status", "body_bytes_sent",
          "http_user_agent"}


def test_a_pattern_of_one_s_own_that_a_long_word_stalls_is_warned_of_once(caplog):
    """A pattern that begins with a repeat (``(?P<host>\\S+) ms=``) is searched for at every place in a line, each
    try reading to the word's end: a poison line of one long word stalls the run (the named formats are guarded;
    one's own is searched as given). It is warned of when the run starts, once; an anchored one is not."""
    slow = r"(?P<host>\S+) took=(?P<ms>\d+)"
    PatternLines(slow)
    PatternLines(slow)
    PatternLines("^" + slow)
    PatternLines(r"host=(?P<host>\S+)")
    PatternLines("combined")
    warned = [r.getMessage() for r in caplog.records if "searched for at every place" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith(f"--line-pattern {slow!r} begins with a repeat"), warned


#: an application's plain-text log with its exceptions' stack traces (logback's and Python logging's)
TRACED = """2026-11-30 10:00:00.001 INFO  [main] c.e.Cart host=web-1 - added
2026-11-30 10:00:00.002 ERROR [exec-3] c.e.Cart host=web-4 - request failed
java.lang.IllegalStateException: connection closed
\tat com.example.Cart.add(Cart.java:42)
\tat com.example.Api.post(Api.java:17)
Caused by: java.io.EOFException: null
\tat sun.nio.ch.IOUtil.read(IOUtil.java:1)
\t... 12 more
2026-11-30 10:00:00.003 ERROR [exec-1] app.jobs host=web-2 - job failed
Traceback (most recent call last):
  File "/srv/app/jobs.py", line 12, in run
    raise ValueError("bad input")
ValueError: bad input

During handling of the above exception, another exception occurred:

KeyError: 'x'
not a line of this log
2026-11-30 10:00:00.004 INFO  [main] c.e.Cart host=web-1 - added
"""


def test_a_stack_trace_s_lines_are_part_of_the_record_before_them_not_dead_letters():
    """Each line of an exception's stack trace was a ``bad_row`` dead letter (12 here for 3 records): a Java service's
    log with a trace a minute filled the dead letters and set off "most records were refused"."""
    t = PatternLines(r" (?P<level>ERROR|WARN|INFO) .* host=(?P<host>\S+)")
    recs = t.records("app.log", TRACED.splitlines(keepends=True), 0)
    assert [(r.offset, r.parsed) for r in recs if r.parsed] == [
        (0, {"level": "INFO", "host": "web-1"}), (1, {"level": "ERROR", "host": "web-4"}),
        (8, {"level": "ERROR", "host": "web-2"}), (18, {"level": "INFO", "host": "web-1"})]
    refused = [(r.offset, r.key.reason) for r in recs if not r.parsed]
    assert refused == [(17, "bad_row")]  # (a line that continues nothing is still refused)
    # logfmt alike: a trace's lines have no pair, and are no dead letters
    recs = PatternLines("logfmt").records("app.log", TRACED.splitlines(keepends=True), 0)
    assert [r.offset for r in recs if not r.parsed] == [17]


def test_a_trace_line_in_a_field_or_a_kafka_value_is_refused_saying_so():
    """A record is a unit of its own there (a shipper's record of one line): refused, not taken for blank."""
    from collections import namedtuple

    from streamarms.connectors.field_lines import FieldLines
    from streamarms.connectors.kafka_lines import ValueLines

    t = FieldLines("logfmt", "message")
    r = t.records("beats.jsonl", ['{"message": "\\tat com.example.Cart.add(Cart.java:42)"}'], 0)[0]
    assert r.key.detail == "the field 'message' is a line of a stack trace, no record of its own"
    record = namedtuple("R", "topic partition offset timestamp key value headers")
    got = ValueLines("logfmt")([record("t", 0, 5, 1, b"k", b"Caused by: java.io.EOFException", [])])
    assert got[0].key.detail == "the value is a line of a stack trace, no record of its own"


@pytest.mark.parametrize("line, fields", [
    ("2026-11-30 10:00:00.001 ERROR [exec-3] c.e.Cart host=web-4 - request failed",  # logback, a pair in the message
     {"time": "2026-11-30 10:00:00.001", "level": "ERROR", "host": "web-4",
      "message": "[exec-3] c.e.Cart host=web-4 - request failed"}),
    ("2026-11-30 10:00:00.123 [main] WARN  c.e.Cart - slow", {"time": "2026-11-30 10:00:00.123", "level": "WARN",
                                                            "message": "c.e.Cart - slow"}),  # log4j2's
    ("2026-11-30T10:00:00.123+01:00  INFO 12345 --- [main] c.e.Application : Started",  # Spring Boot's
     {"time": "2026-11-30T10:00:00.123+01:00", "level": "INFO", "message": "12345 --- [main] c.e.Application : Started"}),
    ("2026-11-30 10:00:00,123 - app.jobs - ERROR - job 7 failed",  # Python logging's asctime - name - levelname
     {"time": "2026-11-30 10:00:00,123", "level": "ERROR", "message": "job 7 failed"}),
    ("CRITICAL:app.jobs:disk full", {"level": "CRITICAL", "message": "app.jobs:disk full"}),  # its basicConfig default
    ("[2026-11-30 10:00:00,123] ERROR in app: boom", {"time": "2026-11-30 10:00:00,123", "level": "ERROR",
                                                     "message": "in app: boom"}),  # Flask's
    ("10:00:00.123 [main] DEBUG c.e.Cart - x", {"level": "DEBUG", "message": "c.e.Cart - x"}),  # a time of day: no time
    ("2026/11/30 10:00:00 INFO starting", {"time": "2026/11/30 10:00:00", "level": "INFO", "message": "starting"}),
    ("2026-11-30T10:00:00.000Z error: db down", {"time": "2026-11-30T10:00:00.000Z", "level": "error",
                                                 "message": "db down"}),  # winston's
    ("fail: Microsoft.AspNetCore.Server.Kestrel[13]", {"level": "fail",
                                                       "message": "Microsoft.AspNetCore.Server.Kestrel[13]"}),  # .NET's
    ("just a line INFO x", None), ("INFORMATION: x", None), ("ERRORS: 3", None),  # (a level after no time, a word)
    ("info about the run", None), ("errors: 3", None),  # (lower case: a level only before its colon)
])
def test_the_app_pattern_reads_application_logs_layouts(line, fields):
    got = PatternLines("app", LineTime("time")).records("app.log", [line + "\n"], 0)[0]
    assert (got.parsed or None) == fields
    if fields and "time" in fields:
        assert got.timestamp is not None and got.timestamp > 1_700_000_000_000  # (every time read as it is written)

"""Plain-text logs as rewards: :class:`PatternLines` (``streamarms run --line-pattern REGEX``).

Most logs are not JSON: an nginx or Apache access log in the combined format, a syslog line, an
application's ``key=value`` line. A regular expression with named groups reads each line as the record its
JSON line would be -- its value the JSON object of the groups that matched (``{"path": "/api", "status":
"503"}``), so ``--key-field``, ``--reward-field`` (with ``--reward-at-least``, ``--reward-in``),
``--group-by`` and ``--timestamp-field`` name groups, and the dead letters read it as they read a JSON line:

- the pattern is *searched* in the line (``re.search``: it may read a part of it); a line it does not match
  is refused as ``bad_row``, a dead letter naming the pattern; a blank line is no record, but counts as a line, and
  so is a line it does not match that continues the record before it (:func:`is_continuation`: a stack trace's
  lines after an application's ``ERROR`` line, each a dead letter before);
- a group that did not take part in the match is no field (as a missing JSON field), nor is a named pattern's
  ``-`` (what those logs write for no value: no referer, no target; an ALB's ``-1`` processing time too); the
  others are text, and the reward's is read as the number it writes (``streamarms run`` implies
  ``--numeric-strings``);
- the key is the ``arm`` (or ``key``) group's, else none: name the key's group with ``--key-field``;
- the time is the ``timestamp`` group's (or ``--timestamp-field``'s): a number in ``--timestamp-unit``, an
  ISO 8601 date-time, the common log format's ``10/Oct/2000:13:55:36 -0700`` (nginx's ``$time_local``,
  Apache's ``%t``), a traditional syslog time ``Nov 14 22:13:20`` (:func:`syslog_ms`: UTC, the year
  inferred), or ``2023/11/14 22:13:20`` (Go's log package, nginx's error log; UTC unless it says otherwise);
  an empty group is no time, anything else ``bad_timestamp``.

Named patterns (:data:`PATTERNS`): ``combined``, the access log format nginx and Apache write by default
(``remote_addr``, ``remote_user``, ``time_local``, ``method``, ``path`` -- the request's path without its
query, ``query`` --, ``protocol``, ``status``, ``body_bytes_sent``, ``http_referer``, ``http_user_agent``; the
request's parts are absent when its line is not a request: a TLS handshake sent to the HTTP port),
``common`` (the same without the last two) -- both also read what a ``log_format`` that extends them writes after
their fields (:func:`extra_fields`: nginx's ``main`` format's ``"$http_x_forwarded_for"``, ``$request_time
$upstream_addr`` appended, nginx's documented ``rt=$request_time urt="$upstream_response_time"``): a ``name=value``
pair as the field ``name``, any other value as ``extra_N``, the N-th value after the format's fields --,
``ingress-nginx`` (Kubernetes' ingress-nginx controller's default format: the combined format's fields, then
``request_length``, ``request_time``, ``proxy_upstream_name`` --
``namespace-service-port``, the key its requests are routed by --, ``proxy_alternative_upstream_name``,
``upstream_addr``, ``upstream_response_length``, ``upstream_response_time``, ``upstream_status`` -- a list, ``0.004,
0.012``, when it tried several upstreams -- and ``req_id``; an empty bracket is no field), ``haproxy`` (HAProxy's
HTTP log, ``option httplog``: ``client_ip``, ``accept_date``, ``frontend_name``, ``backend_name``, ``server_name``,
the timers ``time_request``, ``time_queue``, ``time_backend_connect``, ``time_backend_response`` (ms; none when
``-1``: the step never came) and ``time_duration``, ``status_code``, ``bytes_read``, ``termination_state``, the
connection counts and queues, the captured headers, and the request's ``method``, ``path``, ``query``,
``protocol``), ``envoy`` (Envoy's default access log and Istio's sidecar text format: ``start_time``, ``method``,
``path``, ``query``, ``protocol``, ``response_code`` -- 0: no response began --, ``response_flags``, ``bytes_received``,
``bytes_sent``, ``duration`` and ``upstream_service_time`` in ms, ``x_forwarded_for``, ``user_agent``,
``request_id``, ``authority``, ``upstream_host``; Istio's also ``response_code_details``,
``connection_termination_details``, ``upstream_transport_failure_reason``, ``upstream_cluster``,
``upstream_local_address``, ``downstream_local_address``, ``downstream_remote_address``, ``requested_server_name``,
``route_name``), ``syslog`` (a syslog file's lines: ``time`` -- ``Nov 14 22:13:20`` or RFC 3339 --, ``host``,
``program``, ``pid``, ``message``, and ``pri`` when the line starts with ``<PRI>``), ``alb``, an AWS Application
Load Balancer's access log (``time``, ``client``, ``target``, ``request_processing_time``, ``target_processing_time``, ``response_processing_time`` in
seconds (none when no target answered: ``-1``), ``elb_status_code``, ``target_status_code``, ``received_bytes``,
``sent_bytes``, ``method``, ``host``, ``path``, ``query``, ``protocol``, ``user_agent``), and ``app``, an application's
text log line -- a date and time, then (after at most three words: a thread, a pid, a logger) a level, or a level
first: log4j's and logback's layouts, Spring Boot's, Python logging's, Flask's; in lower case before a colon,
winston's and .NET's ``fail:`` -- read as ``time``, ``level`` (``TRACE`` .. ``ERROR``, ``FATAL``, ``CRITICAL``, as
written) and ``message``, with each ``key=value`` pair of the message a field of its own (``host=web-4``: the line's
own fields first). ``logfmt`` is no fixed pattern: it reads every ``key=value`` pair of a line as a field
(:data:`LOGFMT`: Heroku's and Go's logfmt, logrus' text lines, klog's structured pairs --
``time=2023-11-14T22:13:20Z level=error host=web-1 msg="upstream timed out" latency=1.2ms``), a double-quoted
value unquoted; a line without a pair is refused as ``bad_row``. Its fields differ from line to line, so a field
flag is not checked against them before the run (a line without the key's field is refused as ``key_missing``).
``--line-field F --line-pattern json`` reads a field's text as a JSON line (:mod:`~streamarms.connectors.field_lines`).

>>> t = PatternLines("combined")
>>> line = '10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] "GET /api/cart HTTP/1.1" 503 12 "-" "curl/8.0"'
>>> r = t.records("access.log", [line + "\\n"], 0)[0]
>>> r.parsed["path"], r.parsed["status"], r.key
('/api/cart', '503', None)
>>> PatternLines("combined", LineTime("time_local")).records("a.log", [line], 0)[0].timestamp
1700000000000
>>> PatternLines("logfmt").records("app.log", ['level=error host=web-1 msg="timed out: \\\\"db\\\\"" ms=12'], 0)[0].parsed
{'level': 'error', 'host': 'web-1', 'msg': 'timed out: "db"', 'ms': '12'}
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from streamarms.errors import ConfigError
from streamarms.runtime.clock import iso_ms

from .csv_lines import text_record
from .line_parse import refused_line
from .line_record import JsonlRecord
from .line_time import LineTime, stamp

__all__ = ["PatternLines", "PATTERNS", "NONE", "LOGFMT", "clf_ms", "syslog_ms", "extra_fields", "is_continuation"]

#: where a named format's line may start: at the line's start or after at most 12 words (a syslog header, the
#: ``2026-11-30T10:00:00.123Z stdout F`` of a Kubernetes container log, ``kubectl logs --timestamps``), the earliest
#: first -- a search of every place in the line took time quadratic in a long word's length (a 40 KB line of one
#: word: 5.7 s; a 4 MiB line, the longest held, days)
_START = r'^(?:\S* ){0,12}?'
#: a double-quoted field's text: Apache writes a ``"`` in it as ``\"`` (nginx as ``\x22``), which does not end it
_QUOTED = r'(?:[^"\\]|\\.)*'
_REQUEST = r'"(?:(?P<method>[A-Z]+) (?P<path>[^ "?]+)(?:\?(?P<query>[^ "]*))?(?: (?P<protocol>[^"]*))?|' + _QUOTED + r')"'
_COMMON = _START + r'(?P<remote_addr>\S+) \S+ (?P<remote_user>\S+) \[(?P<time_local>[^\]]+)\] ' + _REQUEST + \
    r' (?P<status>\d{3}) (?P<body_bytes_sent>\S+)'
#: an AWS Application Load Balancer's access log entry (its documented fields, to the user agent; the rest of the
#: line is left unread): the request's URL split into its host and ``path`` (without the query)
_ALB = (_START + r'(?P<type>\S+) (?P<time>\S+) (?P<elb>\S+) (?P<client>\S+) (?P<target>\S+) (?P<request_processing_time>\S+) '
        r'(?P<target_processing_time>\S+) (?P<response_processing_time>\S+) (?P<elb_status_code>\S+) '
        r'(?P<target_status_code>\S+) (?P<received_bytes>\S+) (?P<sent_bytes>\S+) '
        r'"(?P<method>\S+) (?:[a-z]+://(?P<host>[^/ "]+))?(?P<path>[^ ?"]*)(?:\?(?P<query>[^ "]*))? (?P<protocol>[^"]*?) ?" '
        r'"(?P<user_agent>[^"]*)"')
_COMBINED = _COMMON + r' "(?P<http_referer>' + _QUOTED + r')" "(?P<http_user_agent>' + _QUOTED + r')"'
#: an upstream field of nginx's: one value, or a list of them when a request was passed to several upstreams in
#: turn (``10.0.0.1:80, 10.0.0.2:80``; `` : `` between those of an internal redirect): a value is never ``:`` alone,
#: so where each field ends is never in doubt (a line of many `` : `` took time quadratic in their number)
_UPSTREAMS = r'(?::[^\s,]+|[^\s,:][^\s,]*)(?:(?:, | : )(?::[^\s,]+|[^\s,:][^\s,]*))*'
#: Kubernetes ingress-nginx's default format, ``upstreaminfo`` (its documentation's "Log format"): the combined
#: format, then the request's length and time, ``[proxy_upstream_name]`` (``namespace-service-port``), the
#: alternative (canary) upstream's name in brackets, and the upstreams' address, response length, time and status
#: (lists when it tried several: see :data:`_UPSTREAMS`), and the request's id
_INGRESS_NGINX = (_COMBINED + r' (?P<request_length>\S+) (?P<request_time>\S+) \[(?P<proxy_upstream_name>[^\]]*)\] '
                  r'\[(?P<proxy_alternative_upstream_name>[^\]]*)\] (?P<upstream_addr>' + _UPSTREAMS + r') '
                  r'(?P<upstream_response_length>' + _UPSTREAMS + r') (?P<upstream_response_time>' + _UPSTREAMS +
                  r') (?P<upstream_status>' + _UPSTREAMS + r') (?P<req_id>\S+)\s*$')
#: HAProxy's HTTP log format (``option httplog``; its configuration manual, "8.2.3. HTTP log format"), after the
#: syslog header: the manual's field names, its five timers named as Logstash's grok pattern names them
#: (``time_request`` TR, ``time_queue`` Tw, ``time_backend_connect`` Tc, ``time_backend_response`` Tr, in ms; -1:
#: that step never came; ``time_duration`` Ta/Tt, from the accept), the captured headers when configured, and the
#: request split as the combined format's
_HAPROXY = (_START + r'(?P<client_ip>\S+):(?P<client_port>\d+) \[(?P<accept_date>[^\]]+)\] (?P<frontend_name>\S+) '
            r'(?P<backend_name>[^\s/]+)/(?P<server_name>\S+) (?P<time_request>-?\d+)/(?P<time_queue>-?\d+)/'
            r'(?P<time_backend_connect>-?\d+)/(?P<time_backend_response>-?\d+)/\+?(?P<time_duration>-?\d+) '
            r'(?P<status_code>-?\d+) \+?(?P<bytes_read>\d+) (?P<captured_request_cookie>\S+) '
            r'(?P<captured_response_cookie>\S+) (?P<termination_state>\S+) (?P<actconn>\d+)/(?P<feconn>\d+)/'
            r'(?P<beconn>\d+)/(?P<srv_conn>\d+)/\+?(?P<retries>\d+) (?P<srv_queue>\d+)/(?P<backend_queue>\d+) '
            r'(?:\{(?P<captured_request_headers>[^}]*)\} )?(?:\{(?P<captured_response_headers>[^}]*)\} )?' + _REQUEST)
#: Envoy's default access log format (its documentation's "Default Format String"), and Istio's sidecar text format
#: (from Istio 1.8), which adds three fields after the response flags and six at the end: the field names are Istio's
#: JSON format's
_ENVOY = (_START + r'\[(?P<start_time>[^\]]+)\] ' + _REQUEST + r' (?P<response_code>\d+) (?P<response_flags>\S+) '
          r'(?:(?P<response_code_details>\S+) (?P<connection_termination_details>\S+) '
          r'"(?P<upstream_transport_failure_reason>[^"]*)" )?'
          r'(?P<bytes_received>\d+) (?P<bytes_sent>\d+) (?P<duration>\d+) (?P<upstream_service_time>\S+) '
          r'"(?P<x_forwarded_for>[^"]*)" "(?P<user_agent>[^"]*)" "(?P<request_id>[^"]*)" "(?P<authority>[^"]*)" '
          r'"(?P<upstream_host>[^"]*)"(?: (?P<upstream_cluster>\S+) (?P<upstream_local_address>\S+) '
          r'(?P<downstream_local_address>\S+) (?P<downstream_remote_address>\S+) (?P<requested_server_name>\S+) '
          r'(?P<route_name>\S+))?')
#: a syslog file's line as rsyslog and syslog-ng write it (``/var/log/syslog``, ``auth.log``, ``messages``): a time --
#: the traditional ``Nov 14 22:13:20`` (RFC 3164) or RFC 3339's ``2023-11-14T22:13:20.123456+00:00`` (rsyslog's default
#: file format on current distributions) --, the host, the program and its process id, and the message; a ``<PRI>``
#: before it (a line received as sent) is the field ``pri``
_SYSLOG = (r'^(?:<(?P<pri>\d{1,3})>)?(?P<time>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T[\d:.]+'
           r'(?:Z|[+-]\d{2}:?\d{2})?) (?P<host>\S+) (?P<program>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?: ?(?P<message>.*)$')
#: an application's text log line (``app``): a date and time, maybe bracketed (a bare time of day is read past, not
#: taken: no date), up to three words (a thread ``[main]``, a pid and ``---``, a logger and `` - ``), then a level (or
#: a level first) --
#: log4j's and logback's layouts, Spring Boot's, Python logging's (``%(asctime)s - %(name)s - %(levelname)s``, its
#: default ``ERROR:name:message``), Flask's, winston's, .NET's console -- and the rest is the message
_APP_LEVELS = ("TRACE|DEBUG|FINE|CONFIG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|SEVERE|FATAL|CRITICAL|CRIT|ALERT|EMERG|"
               # (in lower case before a colon: winston's "error: ..", .NET's console "fail: Microsoft..")
               "(?:trace|debug|info|notice|warn|warning|error|fatal|critical|dbug|trce|fail|crit)(?=:)")
_APP = (r'^(?:[\[(]?(?:(?P<time>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?|'
        r'\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)|\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)[\])]?\s+'
        r'(?:\S+\s+){0,3}?)?[\[<(]?(?P<level>' + _APP_LEVELS + r')[\]>)]?(?:[\s:|-]+|$)(?P<message>.*)$')
#: the rest of a line after the common or combined format's fields: the values a log format that extends them adds
#: (:func:`extra_fields`)
_TAIL = r'(?: (?P<_tail>.+))?'
#: one value of such a rest: a ``name=value`` pair (a name of letters, digits, ``_``, ``.``, ``-``; its value bare or
#: double-quoted), a double-quoted text, or a word
_EXTRA = re.compile(r'([A-Za-z_][\w.-]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)|("(?:[^"\\]|\\.)*")|(\S+)')
#: what the logs of a named pattern write for no value: no field (an ALB entry's processing times are ``-1`` when no
#: target answered, an HAProxy entry's timers when that step never came)
NONE = {"common": frozenset({"-"}), "combined": frozenset({"-"}), "ingress-nginx": frozenset({"-", ""}),
        "alb": frozenset({"-", "-1"}), "haproxy": frozenset({"-", "-1", ""}), "envoy": frozenset({"-", ""})}
log = logging.getLogger("streamarms.connectors")
#: the patterns of one's own warned of (:func:`searched_slowly`): once a process
_WARNED: set[str] = set()
#: patterns named by ``--line-pattern NAME``
PATTERNS = {
    "common": _COMMON + _TAIL,
    "combined": _COMBINED + _TAIL,
    "ingress-nginx": _INGRESS_NGINX,
    "alb": _ALB,
    "haproxy": _HAPROXY,
    "envoy": _ENVOY,
    "syslog": _SYSLOG,
    "app": _APP,
}

#: a line that continues the record before it: a stack trace's (Java's ``\tat ..``, ``Caused by: ..``,
#: ``\t... 12 more``; Python's ``Traceback (most recent call last):``, its indented lines and chained causes; Node's
#: ``    at ..``; Go's ``goroutine 7 [running]:``), an exception's own line (``java.io.IOException: ..``,
#: ``ValueError: ..``), or any line that starts with a space or a tab (a message's further lines)
_CONTINUATION = re.compile(r"[ \t]|Caused by: |Suppressed: |Traceback \(most recent call last\):|"
                           r"During handling of the above exception|The above exception was the direct cause|"
                           r"goroutine \d+ \[|(?:[A-Za-z_$][\w$]*\.)*[\w$]*(?:Exception|Error|Throwable)\b(?:$|:)")


def is_continuation(text: str) -> bool:
    """Whether a line that a pattern does not read continues the record before it (:data:`_CONTINUATION`): a line of
    a stack trace is no record of its own, and no dead letter.

    >>> [is_continuation(t) for t in ("\\tat com.example.Cart.add(Cart.java:42)", "Caused by: java.io.EOFException",
    ...  "java.lang.IllegalStateException: closed", "ValueError: bad input", "Traceback (most recent call last):")]
    [True, True, True, True, True]
    >>> [is_continuation(t) for t in ("garbage", "Error handling request", "2026-11-30 10:00:00 ERROR x", "")]
    [False, False, False, False]
    >>> is_continuation(" " * 20_000 + "x"), is_continuation("\\t" + chr(0) * 3)  # (poison lines: dead letters)
    (False, False)
    """
    # (its start says, read once; a line of more than 16 KiB or with a NUL byte is no trace's: a poison line, refused)
    return len(text) <= 16384 and _CONTINUATION.match(text[:512]) is not None and "\x00" not in text


#: a ``key=value`` pair of a logfmt line (``--line-pattern logfmt``): a key of no space, ``=`` or quote, at the
#: line's start or after a space; a value bare (to the next space) or double-quoted with backslash escapes
LOGFMT = re.compile(r'(?:^|(?<=\s))([^\s="]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)')

_CLF = re.compile(r"\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2}(\.\d{1,6})?( [+-]\d{4})?")
_SLASH_DATE = re.compile(r"\d{4}/\d{2}/\d{2}[ T]\d{2}:")
_SYSLOG_TIME = re.compile(r"[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}")


def clf_ms(text: str) -> int | None:
    """A common-log-format time (``10/Oct/2000:13:55:36 -0700``) as milliseconds since the epoch, else ``None``;
    also with a fraction of a second and no zone, as HAProxy's ``accept_date`` (``06/Feb/2009:12:14:14.655``:
    UTC, as an ISO time without an offset).

    >>> clf_ms("14/Nov/2023:23:13:20 +0100"), clf_ms("14/Nov/2023:22:13:20.655"), clf_ms("2023-11-14")
    (1700000000000, 1700000000655, None)
    """
    m = _CLF.fullmatch(text)
    if m is None:
        return None
    try:
        when = dt.datetime.strptime(text, "%d/%b/%Y:%H:%M:%S" + (".%f" if m[1] else "") + (" %z" if m[2] else ""))
    except ValueError:  # (a month name strptime does not know in this locale, day 31 of a short month)
        return None
    return round((when if m[2] else when.replace(tzinfo=dt.UTC)).timestamp() * 1000)


def syslog_ms(text: str, now: dt.datetime) -> int | None:
    """A traditional syslog time (``Nov 14 22:13:20``, RFC 3164: no year, no zone) as milliseconds since the
    epoch, else ``None``: UTC (as an ISO time without an offset), in the latest year that does not put it after
    the day after ``now`` (a log read in January keeps its December in the year before).

    >>> now = dt.datetime(2024, 1, 3, tzinfo=dt.UTC)
    >>> syslog_ms("Jan  2 10:00:00", now), syslog_ms("Dec 31 23:59:59", now) < syslog_ms("Jan  2 10:00:00", now)
    (1704189600000, True)
    >>> syslog_ms("Feb 29 12:00:00", now), syslog_ms("Feb 30 12:00:00", now), syslog_ms("2023-11-14", now)
    (1582977600000, None, None)
    """
    if not _SYSLOG_TIME.fullmatch(text):
        return None
    latest = now + dt.timedelta(days=1)
    for year in range(latest.year, latest.year - 8, -1):  # (Feb 29: the last leap year)
        try:
            when = dt.datetime.strptime(f"{year} {text}", "%Y %b %d %H:%M:%S").replace(tzinfo=dt.UTC)
        except ValueError:  # (not a day of that year, or a month name strptime does not know)
            continue
        if when <= latest:
            return round(when.timestamp() * 1000)
    return None


def searched_slowly(pattern: str) -> bool:
    """Whether a search for ``pattern`` takes time quadratic in a long word's length: it begins (in its first group,
    in any alternative) with a repeat of no upper bound -- ``(?P<host>\\S+) ms=``, ``.*error`` --, so the search
    tries every place in the line and each try reads on to the word's end; not when it is anchored (``^``) or begins
    with a text or a class the search skips to. (Read from the parsed pattern, not timed.)

    >>> [searched_slowly(p) for p in (r"(?P<host>\\S+) ms=", r".*x(?P<a>y)", r"(?:a|\\w+)(?P<b>c)")]
    [True, True, True]
    >>> [searched_slowly(p) for p in (r"^(?P<host>\\S+) ms=", r"host=(?P<h>\\S+)", r"\\d{3} (?P<s>x)")]
    [False, False, False]
    >>> searched_slowly(r"\\b(?P<a>\\w+)")  # (a boundary reads no character)
    True
    """
    try:
        import importlib

        c = importlib.import_module("re._constants")  # (the parser re compiles with: internal, stable in 3.11+)
        items = list(importlib.import_module("re._parser").parse(pattern))
    except Exception:  # (an internal module of another Python: no warning rather than a wrong one)
        return False
    repeats = {c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)}

    def first(seq: Any) -> bool:
        for op, av in seq:
            if op is c.AT and av in (c.AT_BEGINNING, c.AT_BEGINNING_STRING):
                return False
            if op is c.AT:
                continue  # (\b: no character read)
            if op is c.SUBPATTERN:
                return first(av[-1])
            if op is getattr(c, "ATOMIC_GROUP", None):
                return first(av)
            if op is c.BRANCH:
                return any(first(alt) for alt in av[1])
            return op in repeats and av[1] == c.MAXREPEAT
        return False

    return first(items)


class PatternLines:
    """The lines of the ``--rewards-file`` files read with one pattern (module docstring), as records: the
    same interface as :class:`~streamarms.connectors.csv_lines.CsvTable` (a file has no header: its first line
    is a record). ``pattern``: a regular expression with named groups, or a name of :data:`PATTERNS`.

    >>> t = PatternLines(r"host=(?P<host>\\S+) ms=(?P<ms>\\d+)")
    >>> t.header, [r.parsed for r in t.records("app.log", ["t=1 host=h1 ms=12", "garbage"], 0)][:1]
    (['host', 'ms'], [{'host': 'h1', 'ms': '12'}])
    >>> t.records("app.log", ["garbage"], 7)[0].key.reason
    'bad_row'
    """

    def __init__(self, pattern: str, line_time: LineTime | None = None) -> None:
        self.source = pattern
        #: every ``key=value`` pair is a field (``--line-pattern logfmt``), not a pattern's groups
        self.logfmt = pattern == "logfmt"
        try:
            self.pattern = LOGFMT if self.logfmt else re.compile(PATTERNS.get(pattern, pattern))
        except re.error as e:
            raise ConfigError(f"--line-pattern {pattern!r} is not a regular expression: {e}") from None
        if not self.pattern.groupindex and not self.logfmt:
            raise ConfigError(f"--line-pattern {pattern!r} names no group: name the fields it reads, as in "
                              r"'host=(?P<host>\S+) ms=(?P<ms>\d+)' (or give a named pattern: "
                              f"{', '.join(PATTERNS)}, logfmt; json with --line-field)")
        if pattern not in PATTERNS and not self.logfmt and searched_slowly(pattern) and pattern not in _WARNED:
            _WARNED.add(pattern)
            log.warning("--line-pattern %r begins with a repeat that is searched for at every place in a line: a "
                        "line of one long word (a poison line, a binary blob) takes time growing with the square of "
                        "its length to refuse (4 KB: ~0.1 s; 1 MB: about an hour); begin the pattern with ^ (the "
                        "line's start) or with a text it reads as it is", pattern)
        self.line_time = line_time if line_time is not None else LineTime()
        #: a line may give fields beyond the header (the common or combined format's rest: :func:`extra_fields`; the
        #: ``key=value`` pairs of an ``app`` line's message)
        self.open = ("_tail" in self.pattern.groupindex and pattern in PATTERNS) or pattern == "app"
        self._message_pairs = pattern == "app"
        #: the fields a line gives (the pattern's group names): what the run's field flags may name (``None``:
        #: logfmt, whose fields are each line's own)
        self.header: list[str] | None = None if self.logfmt else [
            g for g in self.pattern.groupindex if not (self.open and g == "_tail")]
        self._time = self.line_time.field
        #: the values a named pattern's log writes for none (the combined log's ``"-"`` referer, an ALB entry's
        #: ``-`` target for a request the balancer answered itself): no field, as W3C reads them (:data:`NONE`)
        self._none = NONE.get(pattern, frozenset())
        self._last: tuple[str, int] = ("", 0)  # the last time group read, and its time
        self._now = dt.datetime.now(dt.UTC)  # (the year of a syslog time without one)

    def set_header(self, line: str, where: str) -> None:
        """Nothing to do: a log read by a pattern has no header line."""

    def resume_header(self, reader: Any, position: int) -> None:
        """Nothing to do: a log read by a pattern has no header line."""

    def whole(self, text: str) -> bool:
        """Whether a last line without its line end is a whole record: the pattern matches it."""
        return self.pattern.search(text) is not None

    def records(self, path: str, lines: Sequence[str], first: int, header_line: bool = False) -> list[JsonlRecord]:
        """The records of ``lines`` (line numbers from ``first``); ``header_line`` is ignored (no header)."""
        out: list[JsonlRecord] = []
        search, none = self.pattern.search, self._none
        for n, line in enumerate(lines, first):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue  # a blank line
            m = None if self.logfmt else search(text)
            obj = _pairs(text) if self.logfmt else \
                {k: v for k, v in m.groupdict().items() if v is not None and v not in none} if m else {}
            if not obj:
                if is_continuation(text):
                    continue  # a line of a stack trace: part of the record before it, as a blank line is none
                shown = self.source if self.source in PATTERNS else f"{self.source[:80]!r}"
                why = "has no key=value pair (--line-pattern logfmt)" if self.logfmt else f"does not match --line-pattern {shown}"
                out.append(refused_line(path, n, text, f"the line {why}"))
                continue
            if self.open and "_tail" in obj:
                extra_fields(obj.pop("_tail"), obj, none)
            elif self._message_pairs and "=" in obj.get("message", ""):
                obj = {**_pairs(obj["message"]), **obj}  # (the message's pairs: host=web-4; the line's own first)
            out.append(text_record(path, n, text, obj, self._time, self._stamp))
        return out

    def _stamp(self, cell: str) -> int:
        """The time of a line's time group: the common log format's, else :func:`stamp`'s (a number in the unit,
        an ISO 8601 date-time); the last one read is kept (a log's lines share their second)."""
        if self.line_time.fmt is not None:
            return self.line_time.formatted(cell)
        if cell == self._last[0]:
            return self._last[1]
        ms = clf_ms(cell)
        if ms is None:
            ms = syslog_ms(cell, self._now)
        if ms is None and _SLASH_DATE.match(cell):  # Go's log package, nginx's error log: 2023/11/14 22:13:20
            ms = iso_ms(cell.replace("/", "-", 2))
        if ms is None:
            ms = stamp(cell, self.line_time.unit)
        self._last = (cell, ms)
        return ms

    def __repr__(self) -> str:
        return f"PatternLines({json.dumps(self.source)})"


def _pairs(text: str) -> dict[str, str]:
    """The ``key=value`` pairs of a logfmt line (:data:`LOGFMT`), a quoted value unquoted (:func:`_unquote`); a key
    given twice keeps its last value.

    >>> _pairs('a=1 b="x y" c= "no key" d=e=f'), _pairs("plain text"), _pairs(r'm="\\ud800"')
    ({'a': '1', 'b': 'x y', 'c': '', 'd': 'e=f'}, {}, {'m': '\\\\ud800'})
    """
    return {key: _unquote(value) for key, value in LOGFMT.findall(text)}


def extra_fields(rest: str, into: dict[str, str], none: frozenset[str] = frozenset()) -> None:
    """Add to ``into`` the values after a common or combined format's fields (:data:`_TAIL`): nginx's ``main``
    format's ``"$http_x_forwarded_for"``, a ``$request_time $upstream_addr`` appended, Apache's ``%D``, nginx's
    documented ``rt=$request_time urt="$upstream_response_time"``. A ``name=value`` pair is the field ``name``; any
    other value (a word, a double-quoted text, unquoted) is ``extra_N``, the N-th value after the format's fields. An
    empty value or one of ``none`` (``-``) is no field, and no value replaces a field already read.

    >>> r = {"status": "200"}
    >>> extra_fields('"-" 0.012 10.0.0.5:8080 "a b" rt=0.012 urt="0.010" status=x', r, frozenset({"-"})); r
    {'status': '200', 'extra_2': '0.012', 'extra_3': '10.0.0.5:8080', 'extra_4': 'a b', 'rt': '0.012', 'urt': '0.010'}
    """
    for i, (name, value, quoted, word) in enumerate(_EXTRA.findall(rest), 1):
        value = _unquote(value) if name else word or _unquote(quoted)
        name = name or f"extra_{i}"
        if value and value not in none and name not in into:
            into[name] = value


def _unquote(value: str) -> str:
    """A double-quoted value's text as JSON reads it (a Go or nginx escape JSON does not know, ``\\x22``, leaves
    the text between the quotes as it is); a bare value as it is."""
    if value.startswith('"'):
        if "\\" not in value:
            return value[1:-1]  # (nothing escaped: the text between the quotes)
        try:
            unquoted = json.loads(value)
            unquoted.encode("utf-8")  # (an escaped lone surrogate, "\ud800", has no UTF-8 to write it in)
            return unquoted
        except ValueError:  # (UnicodeEncodeError is one)
            return value[1:-1]
    return value

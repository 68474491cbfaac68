"""The ``streamarms run`` flags ``streamarms inspect`` suggests from the fields it profiled (:func:`suggestions`): a key
(a text or integer field whose values repeat), a reward read as it is or through a rule, and the records' time.

>>> f = FieldProfile("host")
>>> for i in range(50):
...     f.add(f"h{i % 5}")
>>> [k.name for k in key_candidates({"host": f}, 50)]
['host']
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

from ..runtime.key_rule import KeyRule
from .inspect_fields import DISTINCT, RECORD_KEY, FieldProfile

__all__ = ["suggestions", "key_candidates", "file_key_flags", "grouped_text", "time_format", "plain"]

#: names a key field often has, tried first (as :func:`plain` writes them: journald's ``_HOSTNAME`` is ``hostname``)
KEY_NAMES = (RECORD_KEY, "arm", "key", "host", "hostname", "host.name", "proxy_upstream_name", "upstream_cluster",
             "upstream_addr", "upstream", "upstream_host", "target", "server", "server_name", "backend_name",
             "instance", "pod", "pod_name", "container", "dyno", "service", "service_name", "region", "worker",
             "worker_id", "user", "user_id", "endpoint", "path", "route", "country", "shard", "node")
#: names a time field often has (as :func:`plain` writes them: journald's ``__REALTIME_TIMESTAMP``, OpenTelemetry's
#: ``timeUnixNano``)
TIME_NAMES = ("timestamp", "@timestamp", "time", "ts", "time_local", "datetime", "date", "created_at", "submitted_at",
              "realtime_timestamp", "time_unix_nano", "accept_date", "start_time")
#: the numeric severities of logs, by their field's plain name: the values a scale has, and the flag that reads its
#: errors and worse -- syslog's (journald's ``PRIORITY``, RFC 5424: 0 emerg .. 3 err .. 7 debug), pino's and
#: bunyan's ``level`` (10 trace .. 50 error, 60 fatal), Python's ``levelno`` (40 ERROR), OpenTelemetry's
#: ``severityNumber`` (17-20 ERROR, 21-24 FATAL)
LEVEL_SCALES = ((("priority", "severity", "syslog_severity", "level"), frozenset(range(8)), "--reward-in 0,1,2,3"),
                (("level",), frozenset(range(10, 61, 10)), "--reward-at-least 50"),
                (("levelno",), frozenset(range(0, 51, 10)), "--reward-at-least 40"),
                (("severity_number",), frozenset(range(1, 25)), "--reward-at-least 17"))
#: where a camel-case name's words part (:func:`plain`)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: the plain names of fields of ids (a process, a user, a port), which are no reward however many their values
_ID_NAME = re.compile(r"(?:^|[._])(?:pid|ppid|tid|uid|gid|id|port)$")
#: the plain names of durations (``request_time``, CloudFront's ``time-taken``, nginx's documented ``rt`` and ``urt``,
#: ``uct``, ``uht``): whole numbers that never repeat are
#: durations in a fine unit (Traefik's ``Duration`` in ns), not ids
_DURATION_NAME = re.compile(r"duration|latency|elapsed|took|taken|ttfb|(?:^|[._-])(?:time|ms|us|ns)(?:[._-]|$)|"
                            r"^u?[rchu]t$")
#: the plain names of a record's free text (a log line's message): its failures' words a reward, however few its texts
_TEXT_NAMES = ("message", "msg", "text_payload", "body")
#: ... and those of its outcome (a log line's level, a response's status): a reward, like a text never a key
_OUTCOME_NAMES = ("level", "levelname", "log_level", "loglevel", "lvl", "severity", "severity_text", "priority",
                  "status", "status_code", "outcome", "result") + _TEXT_NAMES
_ERRORISH = re.compile(r"(?i)err|fail|fatal|crit|timeout|timed.?out|refused|denied|reject|5\d\d")
#: the rule a free text's failures are suggested with (a syslog's messages: ``Failed password``, ``Connection refused``)
FAILURE_WORDS = "(?i)error|fail|fatal|denied|refused|timed? ?out"
_FAILURE = re.compile(FAILURE_WORDS)

def plain(name: str) -> str:
    """A field's name as :data:`KEY_NAMES`, :data:`TIME_NAMES` and :data:`LEVEL_SCALES` list it: lower case, words
    written in camel case parted by ``_`` (Traefik's ``ServiceName``, OpenTelemetry's ``timeUnixNano``), without
    journald's leading underscores.

    >>> plain("_HOSTNAME"), plain("__REALTIME_TIMESTAMP"), plain("timeUnixNano"), plain("host.name")
    ('hostname', 'realtime_timestamp', 'time_unix_nano', 'host.name')
    >>> plain("ServiceName"), plain("StartUTC"), plain("request.remoteIP")
    ('service_name', 'start_utc', 'request.remote_ip')
    """
    return _CAMEL.sub("_", name).lower().lstrip("_")


def key_candidates(fields: dict[str, FieldProfile], n: int) -> list[FieldProfile]:
    """Fields whose values repeat (a text or an integer, in most records, 2 to min(10,000, n / 5) values), or
    whose texts are paths with ids that repeat once ``--key-ids`` reads the ids as ``:id`` (``ids_distinct``)."""
    cap = min(DISTINCT - 1, max(2, n // 5))
    common = [f for f in fields.values() if f.present >= 0.9 * n and f.share("str") + f.share("int") >= 0.99
              and plain(f.name).split(".")[-1] not in TIME_NAMES + _OUTCOME_NAMES and not _measured(f)]
    for f in common:
        if (f.distinct > cap or f.more) and f.share("str") >= 0.99 and any("/" in str(v) for v in islice(f.values, 50)):
            fold = KeyRule.ids_fold([str(v) for v in f.values])  # (the run's own test of "paths with ids")
            if fold is not None and 2 <= fold[2] <= cap:
                f.ids_distinct = fold[2]
    out = [f for f in common if ((2 <= f.distinct <= cap and not f.more) or f.ids_distinct)
           and not (f.share("str") > 0.99 and time_format(f.values))]  # (a time in a format: no key)
    if any(f.distinct >= 3 for f in out):  # (two values: more likely a flag, a reward, than a key)
        out = [f for f in out if f.distinct >= 3]
    rank = {name: i for i, name in enumerate(KEY_NAMES)}

    def order(f: FieldProfile) -> tuple[int, float, int]:  # (a known name, its last part; names before numbers)
        name = plain(f.name)
        return rank.get(name, rank.get(name.rsplit(".", 1)[-1], len(rank))), f.numeric / f.present, f.distinct

    return sorted(out, key=order)


def _measured(f: FieldProfile) -> bool:
    """Whether ``f`` holds measurements rather than names: numbers (a table's written as text), more than 20 of
    them, some with a fraction (a duration, ``4.62``; a version ``2.1`` of a few values stays a key) or named as a
    duration (``ms``, ``request_time``), or durations written with their unit (Heroku's ``service=18ms``, however few
    their values: ``connect=0ms``).

    >>> f, g = FieldProfile("duration"), FieldProfile("connect")
    >>> for i in range(30): f.add(f"{i / 4}"); g.add(f"{i % 3}ms")
    >>> _measured(f), _measured(g), _measured(FieldProfile("host"))
    (True, True, False)
    """
    return f.numeric > 0.99 * f.present and (f.unit is not None or (f.distinct > 20 and (
        bool(_DURATION_NAME.search(plain(f.name))) or any(not x.is_integer() for x in islice(f.numbers, 1000)))))


#: the values of a field of two outcomes (a boolean's text in any case: a spreadsheet writes TRUE and FALSE)
_OUTCOMES = frozenset({0, 1, "0", "1", "true", "false"})


#: two words that are a yes-or-no outcome (besides a word and its negation: click / no_click)
_OUTCOME_PAIRS = frozenset(frozenset(p) for p in (("yes", "no"), ("y", "n"), ("pass", "fail"), ("passed", "failed"),
                                                  ("success", "failure"), ("succeeded", "failed"), ("hit", "miss"),
                                                  ("ok", "ko"), ("ok", "error"), ("ok", "failed")))


def _two_outcomes(a: str, b: str) -> bool:
    """Whether two texts are the outcomes of a yes-or-no event: a known pair, or a word and its negation.

    >>> _two_outcomes("click", "no_click"), _two_outcomes("Yes", "No"), _two_outcomes("sshd", "CRON")
    (True, True, False)
    """
    a, b = a.lower(), b.lower()
    negated = {f"{p}{sep}{w}" for w in (a, b) for p in ("no", "not", "non", "un") for sep in ("", "_", "-", " ")}
    return frozenset((a, b)) in _OUTCOME_PAIRS or a in negated or b in negated


def _reward_flags(f: FieldProfile, table: bool = False) -> str | None:
    """The flags that read ``f`` as a reward (``table``: its numbers are text, read as numbers without a flag), or
    ``None`` when it is no likely reward."""
    values = set(f.values)
    # (a boolean's text in any case, as run reads it with --numeric-strings: a spreadsheet writes TRUE and FALSE)
    texts = {v.lower() if type(v) is str else v for v in values}
    quoted = f.share("str") > 0 and not table and (f.numeric or bool(texts & {"true", "false"}))
    name = f"--reward-field {shlex.quote(f.name)}" + (f" --reward-unit {f.unit}" if f.unit else
                                                      " --numeric-strings" if quoted else "") + \
        (" --decimal-comma" if f.decimal_commas else "")
    # two outcomes, up to 1% of odd values beside them (a {"reward": 1e308} or a "yes" among 3,000 0/1 rewards: run
    # refuses those as dead letters; they hid the field from the suggestions)
    binary = {v: n for v, n in f.values.items() if (v.lower() if type(v) is str else v) in _OUTCOMES}
    if f.share("bool") > 0.99 or (len(binary) == 2 and sum(binary.values()) >= 0.99 * f.present):
        if len(binary) != 2:
            return None  # (the same value in every record: nothing to compare)
        rare, seen = min(binary.items(), key=lambda kv: kv[1])
        if str(rare).lower() in ("0", "false") and seen < f.present / 2:  # (right answers, successes: ~0.9 true)
            written = str(rare).lower() if type(rare) is bool else str(rare)
            return f"--reward-field {shlex.quote(f.name)} --reward-in {written}"  # (the rarer outcome's rate)
        return name
    if f.digits() and f.distinct >= 2:  # (a severity: journald's PRIORITY "3", pino's level 50)
        levels, last = {int(v) for v in values}, plain(f.name).rsplit(".", 1)[-1]
        for names, levels_of, flag in LEVEL_SCALES:
            if last in names and levels <= levels_of:
                return (f"--reward-field {shlex.quote(f.name)} {flag}" if flag.startswith("--reward-in")
                        else f"{name} {flag}")
        if _ID_NAME.search(plain(f.name)):
            return None  # (a process's, a user's id: no reward however many its values)
    if f.digits() and all(100 <= int(v) <= 599 for v in values) and 2 <= f.distinct <= 64 and not f.more:
        return name + " --reward-at-least 500"  # (a status code: HTTP registers about 60; more are lengths, sizes)
    free = plain(f.name).rsplit(".", 1)[-1] in _TEXT_NAMES  # (a log line's message, however few its texts)
    if f.share("str") > 0.99 and not f.numeric and 2 <= f.distinct <= 20 and not f.more and not free:
        by_count = sorted(f.values.items(), key=lambda kv: kv[1])
        rare = [str(v) for v, _ in by_count if _ERRORISH.search(str(v))]
        if not rare and f.distinct == 2 and _two_outcomes(*map(str, f.values)):  # (the rarer outcome's rate)
            rare = [str(by_count[0][0])]
        return f"{name} --reward-in {shlex.quote(','.join(rare[:3]))}" if rare else None
    if f.share("str") > 0.99 and not f.numeric and (f.distinct > 20 or f.more or free):  # (a free text: messages)
        said = sum(n for v, n in f.values.items() if _FAILURE.search(v)) / f.present
        return f"{name} --reward-match {shlex.quote(FAILURE_WORDS)}" if 0.001 <= said <= 0.5 else None
    digits = [n for v, n in f.values.items() if type(v) is int or (type(v) is str and v.isdigit())]
    if len(digits) >= 100 and sum(digits) >= 0.9 * sum(f.values.values()) and max(digits) == 1 and \
            not _DURATION_NAME.search(plain(f.name)):
        return None  # (whole numbers none of which repeats, a few texts aside -- "anonymous" --: an id or a counter,
        # an order number, a row: no reward; among the values counted, the first DISTINCT of a long column)
    # (up to a tenth of texts among them -- a latency's "timeout" -- which run refuses as dead letters; the field's
    # line above says how many)
    if f.numeric >= 0.9 * f.present and f.low >= 0 and f.high > 0 and f.distinct > 20:
        top = f.quantile(0.999) or f.high  # (up to two digits: 2,300 ms rather than 2,287.5)
        scale = 10.0 ** (math.floor(math.log10(top)) - 1)
        return f"{name} --reward-model bounded --reward-range 0,{math.ceil(top / scale) * scale:g} --clip"
    return None


#: time formats that logs and spreadsheets write and ISO 8601 does not read, tried in order (a month first: a
#: spreadsheet's default; a day first when a value rules the month out)
TIME_FORMATS = ("%m/%d/%Y %I:%M %p", "%m/%d/%Y %I:%M:%S %p", "%m/%d/%Y %H:%M", "%m/%d/%Y %H:%M:%S", "%d/%m/%Y %H:%M",
                "%d/%m/%Y %H:%M:%S", "%d.%m.%Y %H:%M", "%d.%m.%Y %H:%M:%S", "%m/%d/%y %H:%M", "%d-%b-%Y %H:%M:%S",
                "%b %d, %Y %I:%M:%S %p", "%a %b %d %H:%M:%S %Y", "%Y%m%d%H%M%S", "%Y%m%d %H%M%S",
                "%a, %d %b %Y %H:%M:%S %Z")  # (the last: an HTTP date, RFC 9110's IMF-fixdate)


def time_format(values: Iterable[Any]) -> str | None:
    """The first of :data:`TIME_FORMATS` that reads every one of ``values`` (texts; up to 200 tried), or ``None``:
    none does, or an ISO 8601 reader already reads them (no flag needed).

    >>> time_format(["11/14/2023 10:13 PM", "11/14/2023 9:05 AM"]), time_format(["14/11/2023 22:13"])
    ('%m/%d/%Y %I:%M %p', '%d/%m/%Y %H:%M')
    >>> time_format(["2023-11-14T22:13:20Z"]), time_format(["eu-west"])
    (None, None)
    """
    import datetime as dt

    texts = [str(v) for v in islice(values, 200)]
    if not texts or _iso_times(texts):
        return None
    for fmt in TIME_FORMATS:
        try:
            for t in texts:
                dt.datetime.strptime(t, fmt)
        except ValueError:
            continue
        return fmt
    return None


def _time_flags(fields: dict[str, FieldProfile]) -> str:
    from streamarms.connectors.line_time import epoch_unit

    rank = {name: i for i, name in enumerate(TIME_NAMES)}
    for f in sorted((f for f in fields.values() if plain(f.name) in rank), key=lambda f: rank[plain(f.name)]):
        name = f.name
        # a number (or its text): in the unit in which it is a time of this century ("timestamp" in ms: no flag)
        unit = epoch_unit(f.low) if f.low <= f.high and epoch_unit(f.low) == epoch_unit(f.high) else None
        if unit is not None:
            return "" if (name, unit) == ("timestamp", "ms") else (
                f" --timestamp-field {shlex.quote(name)}" + ("" if unit == "ms" else f" --timestamp-unit {unit}"))
        if name == "timestamp":
            if f.share("str") > 0.99 and _iso_times(f.values):
                return ""  # (read without a flag as it is: an ISO 8601 text)
            continue
        fmt = time_format(f.values) if f.share("str") > 0.99 else None
        return f" --timestamp-field {shlex.quote(name)}" + (f" --timestamp-format {shlex.quote(fmt)}" if fmt else "")
    for f in fields.values():  # a time under another name: numbers since the epoch, ISO 8601, one of the formats
        if (unit := epoch_times(f)) is not None:
            return f" --timestamp-field {shlex.quote(f.name)}" + ("" if unit == "ms" else f" --timestamp-unit {unit}")
        if f.share("str") > 0.99 and f.distinct > 1:
            if _iso_times(f.values):
                return f" --timestamp-field {shlex.quote(f.name)}"
            if (fmt := time_format(f.values)) is not None:
                return f" --timestamp-field {shlex.quote(f.name)} --timestamp-format {shlex.quote(fmt)}"
    return ""


#: a field's name that may hold a time (``event_time``, ``logged_at``, ``event_ts``, ``date``)
_TIME_NAME = re.compile(r"time|date|stamp|(?:^|[._-])ts(?:$|[._-])|(?:^|[._-])at$")


def epoch_times(f: FieldProfile) -> str | None:
    """The unit of ``f``'s numbers when they are times since the epoch under a name that may hold a time (not in
    :data:`TIME_NAMES`: ``event_time`` = 1709251200.0 is seconds), else ``None``: such a field is the records' time,
    not a reward (it was suggested as a latency of up to 1.8e9).

    >>> f = FieldProfile("event_time")
    >>> for i in range(30): f.add(1709251200.0 + i)
    >>> epoch_times(f), epoch_times(FieldProfile("bytes"))
    ('s', None)
    """
    from streamarms.connectors.line_time import epoch_unit

    if not (f.low <= f.high and f.numeric > 0.99 * f.present and _TIME_NAME.search(plain(f.name))):
        return None
    unit = epoch_unit(f.low)
    return unit if unit is not None and epoch_unit(f.high) == unit else None


def _iso_times(values: Iterable[Any]) -> bool:
    """Whether every one of ``values`` (up to 200 tried, at least one) is an ISO 8601 date and time, which
    ``--timestamp-field`` reads without a format.

    >>> _iso_times(["2026-11-30 01:00:00", "2026-11-30T01:00:05Z"]), _iso_times(["2026-11-30", "x"]), _iso_times([])
    (True, False, False)
    """
    from ..runtime.clock import iso_ms

    texts = [str(v) for v in islice(values, 200)]
    return bool(texts) and all(iso_ms(t) is not None for t in texts)


#: the policy a suggested command runs: streamarms' own engine (README, "streamarms' own engine"), which decides on
#: a fraction of WRR's samples -- on the tens of thousands of records a first file holds, WRR (run's default until
#: the engine meets its issue's whole bar) often decides nothing, and the command, run as printed, found no outlier
ENGINE = " --policy cs"


def suggestions(fields: dict[str, FieldProfile], n: int, files: str = "FILE", table: bool = False,
                source: str | None = None, by_file: str | None = None) -> list[str]:
    """``streamarms run`` commands for the likeliest key and each likely reward field (none: an empty list);
    ``table``: the records are a table's rows or a pattern's fields (text that ``run`` reads as numbers);
    ``source``: the flags that name the records (default ``--rewards-file`` ``files``; a Kafka topic's records
    carry their own time, and their key is :data:`RECORD_KEY`, read without ``--key-field``); ``by_file``: the
    flags that key the records by their files (:func:`file_key_flags`) when no field is a key."""
    keys = key_candidates(fields, n)
    if not keys and by_file is None:
        return []
    key = keys[0] if keys else None
    if key is None:
        flag = str(by_file)
    elif key.name == RECORD_KEY:
        flag = ""  # (run's key without --key-field; --key-ids reads a field's text, not the record's key)
    elif key.ids_distinct and key.name == "arm":
        flag = " --key-field arm --key-ids"
    else:
        flag = ("" if key.name == "arm" else f" --key-field {shlex.quote(key.name)}") + (
            " --key-ids" if key.ids_distinct else "")
    time = _time_flags(fields) if source is None else ""
    source = source or f"--rewards-file {files}"
    out = []
    for f in fields.values():
        if f is key or plain(f.name) in TIME_NAMES or epoch_times(f) is not None:
            continue
        # a field most records lack, written only when set ({"error": ...} on failures): its share of records
        reward = (f"--reward-field {shlex.quote(f.name)} --reward-match . --reward-missing 0" if f.present < 0.5 * n else
                  _reward_flags(f, table))
        if reward is not None:
            out.append((_kind(f, reward), f"streamarms run {source}{flag} {reward}{time}{ENGINE}"))
    return [command for _, command in sorted(out, key=lambda kc: kc[0])]


def file_key_flags(paths: Sequence[str]) -> str | None:
    """The flags that key the records of several files by their files (``--key-from-file``): by a name that differs
    from file to file without its extension (``logs/web-1.log``: ``web-1``), else by the folder (rsyslog's
    ``remote/web-1/app.log``), else by the whole path; ``None`` for one file, or standard input.

    >>> file_key_flags(["logs/web-1.log", "logs/web-2.log"]), file_key_flags(["r/a/app.log", "r/b/app.log"])
    (" --key-from-file --key-match '([^/]+)\\\\.log$'", " --key-from-file --key-match '([^/]+)/[^/]+$'")
    >>> file_key_flags(["a/x", "a/x.1"]), file_key_flags(["one.log"])
    (" --key-from-file --key-match '([^/]+)$'", None)
    """
    import os
    import re

    if len(paths) < 2 or "-" in paths:
        return None
    names = [os.path.basename(p) for p in paths]
    folders = [os.path.basename(os.path.dirname(p)) for p in paths]
    exts = {os.path.splitext(n)[1] for n in names}
    if len(set(names)) == len(names):
        ext = next(iter(exts)) if len(exts) == 1 and len({os.path.splitext(n)[0] for n in names}) == len(names) else ""
        match = f"([^/]+){re.escape(ext)}$" if ext else "([^/]+)$"
    elif all(folders) and len(set(zip(folders, names))) == len(names) and len(set(folders)) == len(folders):
        match = "([^/]+)/[^/]+$"
    else:
        return " --key-from-file"
    return f" --key-from-file --key-match {shlex.quote(match)}"


def _kind(f: FieldProfile, reward: str) -> int:
    """Where a suggestion stands among a record's: failures first (a status code, a level, a flag: the rates a person
    looks for first), then failures told by text, then durations, then other amounts (sizes, counts).

    >>> bounded = "--reward-model bounded --reward-range 0,1 --clip"
    >>> [_kind(FieldProfile(n), bounded) for n in ("time-taken", "Duration", "upstream_response_time", "urt")]
    [2, 2, 2, 2]
    >>> _kind(FieldProfile("sc-bytes"), bounded), _kind(FieldProfile("rtt_count"), bounded)
    (3, 3)
    >>> _kind(FieldProfile("status"), "--reward-at-least 500"), _kind(FieldProfile("msg"), "--reward-match x")
    (0, 1)
    """
    if "--reward-model bounded" not in reward:
        return 1 if "--reward-match" in reward else 0
    return 2 if f.unit is not None or _DURATION_NAME.search(plain(f.name)) else 3


def grouped_text(key: FieldProfile, n: int) -> str:
    """A warning when the key's values come one block each (at least 3 blocks, no value back after another), as in
    a file sorted or concatenated by key: ``run`` compares keys whose records come interleaved. Empty otherwise.

    >>> f = FieldProfile("worker")
    >>> for w in "aaabbbccc": f.add(w)
    >>> print(grouped_text(f, 9))
    the records are grouped by worker: its 3 values come one block each in the 9 records read (none comes back after another), as in a file sorted or concatenated by it; run compares keys whose records come interleaved: shuffle the records first, or sort them by their time (run says so too)
    >>> f.add("a"); grouped_text(f, 10)
    ''
    >>> g = FieldProfile("path")  # (values that do not repeat -- paths with ids, before --key-ids -- are no blocks)
    >>> for i in range(9): g.add(f"/cart/{i}")
    >>> grouped_text(g, 9)
    ''
    """
    if key.changes < 2 or key.returns or 2 * key.distinct > key.present:
        return ""
    return (f"the records are grouped by {key.name}: its {key.distinct:,} values come one block each in the {n:,} "
            "records read (none comes back after another), as in a file sorted or concatenated by it; run compares "
            "keys whose records come interleaved: shuffle the records first, or sort them by their time (run says so too)")

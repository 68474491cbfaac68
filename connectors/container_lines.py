"""A container runtime's log files as rewards: :class:`ContainerLines` (``streamarms run --rewards-format container``).

The log files a Kubernetes node keeps for its containers (``/var/log/containers/*.log``, ``/var/log/pods/...``) are
not the lines the applications wrote: the runtime (containerd, CRI-O) writes each in the CRI logging format, its time,
its stream and a tag before it::

    2026-11-30T10:00:00.123456789Z stdout F {"level": "error", "host": "worker-3", "ms": 412}

and Docker's default ``json-file`` driver (``/var/lib/docker/containers/*/*-json.log``) wraps it in JSON::

    {"log": "{\\"level\\": \\"error\\", ...}\\n", "stream": "stdout", "time": "2026-11-30T10:00:00.123456789Z"}

What ``kubectl logs`` writes is read the same way: with ``--timestamps`` a time before each line, with ``--prefix``
``[pod/POD/CONTAINER]`` before it (the pod's of ``kubectl logs -f -l app=web --prefix``: many pods in one stream).

Read as JSON lines, every CRI line was refused as ``not_json``, and a Docker line was one text field, ``log``.
:class:`ContainerLines` takes the application's line out of each entry (either format, line by line) and reads it
as ``--rewards-file`` would read the line itself: as a JSON object (the JSON lines' rules: ``--key-field``,
``--reward-field``, a dead letter for a line that is no JSON object), or, with ``--line-pattern``, by the pattern
(an access log written to a container's standard output). The record's time is the line's own (``--timestamp-field``)
when it has one, else the runtime's: when the line was written.

A file of a Kubernetes node's (``/var/log/pods/NAMESPACE_POD_UID/CONTAINER/0.log``, or its link
``/var/log/containers/POD_NAMESPACE_CONTAINER-ID.log``) names the pod: each of its records gets the field
``kubernetes`` -- ``{"namespace_name", "pod_name", "container_name"}``, as Fluent Bit's Kubernetes filter names them
(:func:`kubernetes_fields`) -- unless the line has one of its own, so ``--key-field kubernetes.pod_name`` compares
the pods, whatever their applications write; ``kubectl logs --prefix`` names the pod and container the same way.

A line longer than the runtime's buffer (16 KiB) is written as several entries: CRI's tag ``P`` (partial) on all
but the last (``F``), Docker's ``log`` without its line end on all but the last. They are joined, per stream, into
one line, which is the record of the last entry's line number; the parts are no records. Parts whose last has not
come at the end of a replay are said as a file's incomplete last line is (:meth:`ContainerLines.held`; the
checkpoint's position stays before them unless a record of the other stream came after them: a restart then reads
the rest alone, a dead letter). A line that is no entry of either format is a ``bad_row`` dead letter.

>>> t = ContainerLines()
>>> lines = ['2023-11-14T22:13:20.5Z stdout F {"arm": "eu", "reward": 1}\\n',
...          '{"log": "{\\\\"arm\\\\": \\\\"us\\\\", \\\\"reward\\\\": 0}\\\\n", "stream": "stdout", '
...          '"time": "2023-11-14T22:13:21Z"}\\n', '2023-11-14T22:13:22Z stderr P {"arm": "eu", \\n',
...          '2023-11-14T22:13:22Z stderr F "reward": 0}\\n', 'hello\\n']
>>> [(r.offset, r.key, r.timestamp) for r in t.records("c.log", lines, 0)][:3]
[(0, b'eu', 1700000000500), (1, b'us', 1700000001000), (3, b'eu', 1700000002000)]
>>> t.records("c.log", lines, 0)[3].key.reason
'bad_row'
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from streamarms.runtime.clock import iso_ms

from .line_parse import refused_line, to_record
from .line_record import JsonlRecord, with_members
from .line_time import LineTime

__all__ = ["ContainerLines", "entry_line", "kubernetes_fields", "plainly_an_entry"]

#: a CRI log entry: an RFC 3339 time, the stream, the tags (``F`` full, ``P`` partial; more after ``:``), the line;
#: or a time and the line (``kubectl logs --timestamps``, ``docker logs -t``)
_CRI = re.compile(r"(\d{4}-\d{2}-\d{2}T[\d:.]+(?:Z|[+-]\d{2}:\d{2})) "
                  r"(?:(stdout|stderr) ([A-Z](?::\S*)?)(?: |\Z))?(.*)\Z", re.S)
#: the pod and container ``kubectl logs --prefix`` writes before each line
_PREFIX = re.compile(r"\[pod/([^/\]\s]+)/([^\]\s]+)\] ")
#: the fields of a Docker json-file entry
_DOCKER_FIELDS = frozenset({"log", "stream", "time", "attrs"})
#: the most of a line kept while its parts are joined (as a file's longest line: LONG_KEPT)
_JOINED_MAX = 4 << 20
_WHAT = ("the line is no container runtime's log entry (CRI: 'TIME stdout|stderr F|P LINE'; Docker's json-file: "
         '{"log": LINE, "stream": .., "time": ..}; kubectl logs --timestamps: \'TIME LINE\', --prefix: '
         "'[pod/POD/CONTAINER] LINE')")


def _entry(text: str) -> tuple[str, bool, str, int | None, tuple[str, str] | None] | None:
    """A log entry's stream, whether it is a part of a longer line, the application's line (without its line end),
    the runtime's time in ms and the pod and container ``kubectl logs --prefix`` named, or ``None``: ``text`` is no
    entry of these formats."""
    named = None
    if text.startswith("[pod/") and (p := _PREFIX.match(text)) is not None:
        named, text = (p[1], p[2]), text[p.end():]
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if type(obj) is dict and type(obj.get("log")) is str:
            log, when = obj["log"], obj.get("time")
            return (str(obj.get("stream", "")), not log.endswith("\n"), log.removesuffix("\n"),
                    iso_ms(when) if type(when) is str else None, named)
        return None if named is None else ("", False, text, None, named)  # (kubectl --prefix, no time)
    m = _CRI.match(text)
    if m is None:
        return None if named is None else ("", False, text, None, named)
    return m[2] or "", (m[3] or "").startswith("P"), m[4], iso_ms(m[1]), named


#: the log file of a pod's container as the kubelet names it, and its link in /var/log/containers
_POD_FILE = re.compile(r"(?:^|/)pods/(?P<namespace_name>[^/_]+)_(?P<pod_name>[^/_]+)_[^/_]+/(?P<container_name>[^/]+)"
                       r"/\d+\.log(?:\.[^/]*)?\Z")
_POD_LINK = re.compile(r"(?:^|/)(?P<pod_name>[^/_]+)_(?P<namespace_name>[^/_]+)_(?P<container_name>[^/]+)-[0-9a-f]{64}"
                       r"\.log\Z")


#: the pod's fields as a run's flags name them (``--key-field kubernetes.pod_name``)
POD_FIELDS = ("kubernetes.namespace_name", "kubernetes.pod_name", "kubernetes.container_name")


def kubernetes_fields(path: str) -> dict[str, str] | None:
    """The pod a Kubernetes node's container log file at ``path`` is of (its namespace, pod and container, as the
    kubelet names the file or its link), or ``None``: the path is not named so.

    >>> kubernetes_fields("/var/log/pods/shop_checkout-7d9f-x2b_0c1e-11aa/app/0.log")
    {'namespace_name': 'shop', 'pod_name': 'checkout-7d9f-x2b', 'container_name': 'app'}
    >>> kubernetes_fields("/var/log/containers/checkout-7d9f-x2b_shop_app-" + "ab" * 32 + ".log")["pod_name"]
    'checkout-7d9f-x2b'
    >>> kubernetes_fields("/var/log/app.log") is None
    True
    """
    m = _POD_FILE.search(path) or _POD_LINK.search(path)
    return None if m is None else {k: m[k] for k in ("namespace_name", "pod_name", "container_name")}


def plainly_an_entry(text: str) -> bool:
    """Whether ``text`` is plainly an entry of a runtime's log, as a format's guess may take it: a CRI line (its
    stream and tag), a Docker json-file line, a line of ``kubectl logs --prefix``, or a time before a JSON object
    (``kubectl logs --timestamps``); not a time before text, which many logs write (a syslog file's RFC 3339
    lines), nor a JSON record with fields beyond Docker's (Fluent Bit's ``log`` beside ``kubernetes``: ``--line-field
    log`` keeps them).

    >>> [plainly_an_entry(t) for t in ('2023-11-14T22:13:20Z stdout F x', '2023-11-14T22:13:20Z {"a": 1}',
    ...                                '2023-11-14T22:13:20Z web-1 sshd[1]: Failed', '[pod/web-1/app] hello')]
    [True, True, False, True]
    >>> plainly_an_entry('{"log": "x\\\\n", "stream": "stdout"}'), plainly_an_entry('{"log": "x", "kubernetes": {}}')
    (True, False)
    """
    entry = _entry(text)
    if entry is None:
        return False
    if text.startswith("{"):  # (Docker's own fields only: a shipper's record, Fluent Bit's, says more of the line)
        return set(json.loads(text)) <= _DOCKER_FIELDS
    return bool(entry[0]) or entry[4] is not None or entry[2].startswith("{")


def entry_line(text: str) -> str | None:
    """The application's line in ``text``, an entry of a container runtime's log (CRI or Docker's json-file; a part
    of a longer line, its part), else ``None``.

    >>> entry_line("2023-11-14T22:13:20.123456789Z stdout F hello")
    'hello'
    >>> entry_line('{"log": "hi\\\\n", "stream": "stderr"}')
    'hi'
    >>> entry_line('{"level": "info"}'), entry_line("Nov 14 22:13:20 host sshd[1]: x")
    (None, None)
    """
    entry = _entry(text)
    return None if entry is None else entry[2]


class ContainerLines:
    """The lines of a container runtime's log files (module docstring) read as JSON lines, or by ``lines`` (a
    :class:`~streamarms.connectors.pattern_lines.PatternLines`: ``--line-pattern``); the same interface as the other
    tables (no header line).

    >>> from streamarms.connectors.pattern_lines import PatternLines
    >>> t = ContainerLines(lines=PatternLines(r"host=(?P<host>\\S+) ms=(?P<ms>\\d+)"))
    >>> r = t.records("c.log", ["2023-11-14T22:13:20Z stdout F host=h1 ms=12"], 7)[0]
    >>> r.offset, r.timestamp, r.parsed, t.header[:3]
    (7, 1700000000000, {'host': 'h1', 'ms': '12'}, ['host', 'ms', 'kubernetes.namespace_name'])
    """

    def __init__(self, line_time: LineTime | None = None, lines: Any = None) -> None:
        self.line_time = line_time if line_time is not None else LineTime()
        #: the pattern the applications' lines are read by (``None``: JSON lines)
        self.lines = lines
        #: the pattern as the messages name it, else ``container``
        self.source = lines.source if lines is not None else "container"
        #: the fields a line gives: the pattern's groups and a kubelet's file's pod (``None``: JSON or logfmt lines,
        #: each their own)
        self.header: list[str] | None = None if lines is None or lines.header is None else [*lines.header, *POD_FIELDS]
        #: a line may give fields beyond the header (a combined log's rest)
        self.open = bool(getattr(lines, "open", False))
        self._parts: dict[tuple[str, str, Any], str] = {}  # (path, stream, pod) -> the parts of a line read so far
        self._pods: dict[str, tuple[dict[str, str], bytes] | None] = {}  # path -> its pod's field, and its JSON
        self._prefixed: dict[tuple[str, str], tuple[dict[str, str], bytes] | None] = {}  # (kubectl --prefix's)

    def set_header(self, line: str, where: str) -> None:
        """Nothing to do: a container's log has no header line."""

    def resume_header(self, reader: Any, position: int) -> None:
        """Nothing to do: a container's log has no header line."""

    def whole(self, text: str) -> bool:
        """Whether a last line without its line end is a whole entry (a runtime writes an entry in one write: a
        line cut short is a Docker entry that is no JSON yet, or a CRI line whose JSON is not whole)."""
        entry = _entry(text)
        if entry is None or entry[1]:
            return False
        if self.lines is not None:
            return bool(self.lines.whole(entry[2]))
        from .jsonl_lines import is_json_object

        return is_json_object(entry[2])

    def records(self, path: str, lines: Sequence[str], first: int, header_line: bool = False) -> list[JsonlRecord]:
        """The records of ``lines`` (line numbers from ``first``); ``header_line`` is ignored (no header)."""

        if path not in self._pods:
            self._pods[path] = _pod_json(kubernetes_fields(path))
        path_pod = self._pods[path]
        out: list[JsonlRecord] = []
        for n, line in enumerate(lines, first):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue  # a blank line
            entry = _entry(text)
            if entry is None:
                out.append(refused_line(path, n, text, _WHAT))
                continue
            stream, part, log, when, named = entry
            if part or (path, stream, named) in self._parts:
                log = self._parts.pop((path, stream, named), "") + log
                if part and len(log) <= _JOINED_MAX:
                    self._parts[(path, stream, named)] = log
                    continue
                if part:
                    out.append(refused_line(path, n, log[:1000], f"a line of more than {_JOINED_MAX:,} characters "
                                                                  "written in parts: not read"))
                    continue
            if not log.strip():
                continue  # (an empty line the application wrote)
            if self.lines is None:
                r = to_record(path, n, log, line_time=self.line_time)
            else:
                got = self.lines.records(path, [log], n)
                if not got:
                    continue
                r = got[0]
            if getattr(r.key, "reason", None) is None:
                if r.timestamp is None and when is not None:
                    r = r._replace(timestamp=when)  # (the runtime's time: the line has none of its own)
                pod = path_pod if named is None else self._named(named)
                if pod is not None:
                    r = _with_pod(r, *pod)
            out.append(r)
        return out

    def held(self, path: str) -> int:
        """The bytes of ``path``'s lines written in parts whose last part has not come (not read yet)."""
        return sum(len(text.encode("utf-8", "surrogateescape")) for (p, _, _), text in self._parts.items() if p == path)

    def _named(self, named: tuple[str, str]) -> tuple[dict[str, str], bytes] | None:
        """The field ``kubernetes`` of the pod and container ``kubectl logs --prefix`` named (kept: a few pods)."""
        if named not in self._prefixed:
            self._prefixed[named] = _pod_json({"pod_name": named[0], "container_name": named[1]})
        return self._prefixed[named]

    def __repr__(self) -> str:
        return f"ContainerLines({self.source!r})"


def _pod_json(pod: dict[str, str] | None) -> tuple[dict[str, str], bytes] | None:
    """A pod's fields and their JSON (written once, added to each record's), or ``None``."""
    return None if pod is None else (pod, json.dumps(pod, separators=(",", ":")).encode())


def _with_pod(r: JsonlRecord, pod: dict[str, str], pod_json: bytes) -> JsonlRecord:
    """``r`` with the field ``kubernetes`` (its pod), unless its line has one: its value's text as the line wrote it,
    the field added at its end (no number or text of the line written again)."""
    if (r.parsed is not None and "kubernetes" in r.parsed) or (r.parsed is None and (
            r.value is None or b'"kubernetes"' in r.value or not bytes(r.value).lstrip().startswith(b"{"))):
        return r  # (the line's own field, or a key-and-value line's value that is no object: the codec refuses it)
    return r._replace(value=with_members(r.value, b'"kubernetes":' + pod_json),
                      parsed=None if r.parsed is None else {**r.parsed, "kubernetes": pod})

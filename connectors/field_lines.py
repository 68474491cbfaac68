"""JSON records that carry a log line in one of their fields, read by a pattern: :class:`FieldLines`
(``streamarms run --line-field FIELD --line-pattern P``).

Log shippers send each line as they read it, wrapped in JSON with what they know of it: Filebeat and Vector as
``message`` (``{"@timestamp": .., "message": "10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] \\"GET /api/cart ..", "host":
{..}, "kubernetes": {..}}``), Fluent Bit as ``log``, Google Cloud Logging's exports as ``textPayload``, Loki's as
``line``. Read as JSON, the line was one text field: its status, path or time could not be a key or a reward.
``--line-field`` names the field, ``--line-pattern`` reads its text (a named format, ``logfmt``, or a pattern of
one's own: :class:`~streamarms.connectors.pattern_lines.PatternLines`), and the groups join the record's fields --
beside the wrapper's own, which keep a name both have (``kubernetes.pod_name`` stays the shipper's). The record's key
and time are the wrapper's when it has them (``--timestamp-field`` names either a wrapper's field or a group), else
the line's. A record that is no JSON object is refused as a JSON line is; one whose field is missing, no text, or
not read by the pattern is ``bad_row``, a dead letter naming why. The same reads a Kafka record's value
(:class:`~streamarms.connectors.kafka_lines.ValueLines`).

>>> from streamarms.connectors.line_time import LineTime
>>> t = FieldLines("combined", "message", LineTime("time_local"))
>>> line = ('10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] \\\\"GET /api/cart HTTP/1.1\\\\" 503 12 \\\\"-\\\\" '
...         '\\\\"curl/8.0\\\\"')
>>> r = t.records("beats.jsonl", ['{"message": "' + line + '", "host": {"name": "lb-1"}}'], 0)[0]
>>> r.parsed["status"], r.parsed["host"], r.timestamp
('503', {'name': 'lb-1'}, 1700000000000)
>>> t.records("beats.jsonl", ['{"message": 7}', '{"msg": "x"}'], 0)[1].key.detail
"the record has no field 'message' (--line-field)"
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from streamarms.runtime.field_path import FieldPath
from streamarms.runtime.records import RefusedKey

from .line_parse import key_bytes, refused_line, to_record
from .line_record import JsonlRecord, with_fields
from .line_time import JSON_NAMES, LineTime
from .pattern_lines import PatternLines

__all__ = ["FieldLines"]


class FieldLines:
    """The records of JSON lines whose field ``field`` holds a log line read by ``pattern`` (module docstring); the
    same interface as the other tables (no header line; no fields known before the lines: ``header`` is ``None``).

    >>> t = FieldLines(r"^GET (?P<path>\\S+) took=(?P<ms>\\d+)", "log")
    >>> t.fields_of({"log": "GET / took=12", "ms": "the wrapper's"})
    ({'path': '/'}, None)
    >>> t.fields_of({"log": "POST /"})[1]
    "the field 'log' does not match --line-pattern '^GET (?P<path>\\\\\\\\S+) took=(?P<ms>\\\\\\\\d+)'"
    """

    header = None
    open = False

    def __init__(self, pattern: str, field: str, line_time: LineTime | None = None) -> None:
        self.line_time = line_time if line_time is not None else LineTime()
        #: what reads the field's text (the run's times: a group ``--timestamp-field`` names is the line's time);
        #: ``None``: ``json``, the text is a JSON line, read as one
        self.lines = None if pattern == "json" else PatternLines(pattern, self.line_time)
        self.field = field
        self._get = FieldPath(field).get
        #: the pattern as the messages name it
        self.source = pattern if self.lines is None else self.lines.source

    def set_header(self, line: str, where: str) -> None:
        """Nothing to do: JSON lines have no header line."""

    def resume_header(self, reader: Any, position: int) -> None:
        """Nothing to do: JSON lines have no header line."""

    @staticmethod
    def whole(text: str) -> bool:
        """Whether a last line without its line end is a whole record: a whole JSON object."""
        from .jsonl_lines import is_json_object

        return is_json_object(text)

    def fields_of(self, obj: dict[str, Any], where: str = "(field)"
                  ) -> tuple[dict[str, str], int | None] | tuple[str, str]:
        """The fields the pattern reads in ``obj``'s line that ``obj`` has not, and the line's time (``None``: the
        pattern reads none), or why it cannot be read: ``(reason, detail)``."""
        text = self._get(obj, None)
        if text is None:
            return "bad_row", f"the record has no field {self.field!r} (--line-field)"
        if type(text) is not str:
            kind = JSON_NAMES.get(type(text), type(text).__name__)
            return "bad_row", f"the field {self.field!r} is {kind}, not a log line's text (--line-field)"
        if self.lines is None:  # (json: its fields, its time, its refusals -- not_json, not_object -- a JSON line's)

            got = [to_record(where, 0, text.rstrip("\r\n"), line_time=self.line_time)] if text.strip() else []
        else:
            got = self.lines.records(where, [text], 0)
        if not got:  # (blank, or a stack trace's line: no record of its own in a file, a record's whole text here)
            return "bad_row", f"the field {self.field!r} is " + ("blank" if not text.strip() else
                                                                   "a line of a stack trace, no record of its own")
        r = got[0]
        if type(r.key) is RefusedKey:
            return r.key.reason, r.key.detail.replace("the line", f"the field {self.field!r}", 1)
        groups = r.parsed if r.parsed is not None else _object(r.value)
        if groups is None:  # (--line-pattern json: a {"key": .., "value": ..} line whose value is no object)
            return "not_object", f"the field {self.field!r} holds no JSON object of fields"
        return {k: v for k, v in groups.items() if k not in obj}, r.timestamp

    def records(self, path: str, lines: Sequence[str], first: int, header_line: bool = False) -> list[JsonlRecord]:
        """The records of ``lines`` (line numbers from ``first``); ``header_line`` is ignored (no header)."""

        out: list[JsonlRecord] = []
        for n, line in enumerate(lines, first):
            if not line.strip():
                continue  # a blank line
            r = to_record(path, n, line, line_time=self.line_time)
            if type(r.key) is RefusedKey:
                out.append(r)
                continue
            obj = r.parsed if r.parsed is not None else _object(r.value)
            if obj is None:  # (a {"key": .., "value": ..} line whose value is no object: the codec refuses it)
                out.append(r)
                continue
            read = self.fields_of(obj, path)
            if type(read[0]) is str:
                out.append(refused_line(path, n, line, str(read[1]), str(read[0]), r.key))
                continue
            added, ts = read
            assert isinstance(added, dict)
            key = r.key if r.key is not None else key_bytes(added.get("key", added.get("arm")))
            out.append(r._replace(value=with_fields(r.value, added), key=key,
                                  timestamp=r.timestamp if r.timestamp is not None else ts,
                                  parsed=None if r.parsed is None else {**obj, **added}))
        return out

    def __repr__(self) -> str:
        return f"FieldLines({self.source!r}, {self.field!r})"


def _object(value: bytes | None) -> dict[str, Any] | None:
    """The JSON object a record's value is, else ``None`` (none, a text, a list: a key-and-value line's value)."""
    try:
        obj = json.loads(value) if value is not None else None
    except ValueError:
        return None
    return obj if type(obj) is dict else None

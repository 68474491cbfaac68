"""The record a line of a ``--rewards-file`` becomes: :data:`JsonlRecord` (a JSON line's,
:mod:`~streamarms.connectors.files`; a table row's, :mod:`~streamarms.connectors.csv_lines`).

>>> JsonlRecord("f", 0, 3, None, b"eu", b'{"reward":1}', None, {"reward": 1}).offset
3
"""

from __future__ import annotations

import json
from collections import namedtuple
from typing import Any

__all__ = ["JsonlRecord", "with_fields", "with_members"]

#: a record of a JSONL file: the fields of kafka-python's ConsumerRecord that streamarms reads, and
#: ``parsed``: the value as parsing the line already gave it (a JSON object parsed by orjson, at most
#: ``decoder._SHORT`` bytes), else ``None`` -- the daemon hands it to the codec, which then does not
#: parse the value a second time
JsonlRecord = namedtuple("JsonlRecord", "topic partition offset timestamp key value headers parsed")


def with_fields(value: bytes, fields: dict[str, Any]) -> bytes:
    """The JSON object ``value`` with ``fields`` added at its end, its own text as it was (no number or text of it
    written again: ``1.50`` stays ``1.50``); the caller leaves out a name it has.

    >>> with_fields(b'{"ms": 1.50} ', {"pod": "web-1"}), with_fields(b"{}", {"a": 1}), with_fields(b'{"a": 1}', {})
    (b'{"ms": 1.50,"pod":"web-1"}', b'{"a":1}', b'{"a": 1}')
    """
    if not fields:
        return value
    added = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))[1:-1].encode("utf-8", "surrogateescape")
    return with_members(value, added)


def with_members(value: bytes, members: bytes) -> bytes:
    """The JSON object ``value`` with ``members`` -- ``"name":value`` pairs already written as JSON, comma-separated --
    added at its end (:func:`with_fields`; members written once for many records, a pod's).

    >>> with_members(b'{"a": 1}', b'"pod":"web-1"'), with_members(b"{ }", b'"b":2')
    (b'{"a": 1,"pod":"web-1"}', b'{"b":2}')
    """
    body = bytes(value).rstrip()[:-1].rstrip()  # (the object without its closing brace)
    return body + (b"," if body != b"{" else b"") + members + b"}"

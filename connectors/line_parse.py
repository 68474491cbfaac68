"""One line of a JSON-lines file as a record (:class:`~streamarms.connectors.line_record.JsonlRecord`): its key, value
and time, or a refused record saying why (``not_json``, ``not_object``, ``bad_timestamp``, ``key_missing``: the
key is a :class:`~streamarms.runtime.records.RefusedKey`); the format is in :mod:`~streamarms.connectors.files`'
docstring. :func:`line_by_line` reads a chunk of lines, :func:`shorthand_chunk` the common chunk of shorthand lines in
C-level passes. Also used by the readers of lines that carry a JSON object (a container's log, a field's line).

>>> r = to_record("f.jsonl", 7, '{"arm": "eu", "reward": 1, "timestamp": 5}')
>>> r.offset, r.key, r.timestamp, r.value
(7, b'eu', 5, b'{"arm": "eu", "reward": 1, "timestamp": 5}')
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import repeat
from typing import Any

from streamarms.runtime.decoder import _SHORT
from streamarms.runtime.records import RefusedKey
from streamarms.validation import json_error_text

from .line_record import JsonlRecord
from .line_time import JSON_NAMES, MAX_TIMESTAMP_MS, LineTime

__all__ = ["to_record", "line_by_line", "shorthand_chunk", "key_bytes", "text_bytes", "refused_line", "DEFAULT_TIME"]

_fast_loads: Callable[[bytes | str], Any]
_fast_dumps: Callable[[Any], bytes]
try:
    import orjson

    _fast_loads, _fast_dumps = orjson.loads, orjson.dumps
except ImportError:  # pragma: no cover - orjson is a dependency of streamarms
    _fast_loads, _fast_dumps = json.loads, lambda v: json.dumps(v).encode("utf-8")

#: a line's time where it is by default: ``timestamp``, in ms
DEFAULT_TIME = LineTime()


def text_bytes(text: str) -> bytes:
    """Text read with ``surrogateescape`` back to the file's bytes (invalid UTF-8 stays invalid, so the
    codec refuses such a key as ``key_not_utf8`` instead of seeing replacement characters)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a JSON escape of a lone surrogate: keep it as (invalid) UTF-8 bytes
        return text.encode("utf-8", "surrogatepass")


def key_bytes(key: Any) -> bytes | None:
    """A line's key as the record's key bytes: a string (its UTF-8, see :func:`text_bytes`) or an integer (its
    digits); anything else -- a bool, a float, a list, an object -- is no key (the codec refuses the record
    as ``key_missing``): an arm named ``True`` or ``['a']`` would be a silent guess at what was meant. An
    integer has at most 64 bits, whichever parser read it.

    >>> key_bytes("eu"), key_bytes(7), key_bytes(True), key_bytes(1.5), key_bytes(["a"])
    (b'eu', b'7', None, None, None)
    """
    if isinstance(key, str):
        return text_bytes(key)
    if type(key) is int and -(1 << 63) <= key < (1 << 64):  # (orjson reads a longer one as a float)
        return str(key).encode()
    return None


def refused_line(path: str, n: int, line: str, detail: str, reason: str = "bad_row",
                 key: bytes | None = None) -> JsonlRecord:
    """The record of line ``n`` refused for ``reason``: its key says why (:class:`~streamarms.runtime.records.
    RefusedKey`); its dead letter keeps the line, without its line end."""
    return JsonlRecord(path, 0, n, None, RefusedKey.of(reason, detail, key), text_bytes(line.rstrip("\r\n")), None,
                       None)


def to_record(path: str, offset: int, line: str, fast: bool = True, line_time: LineTime = DEFAULT_TIME,
               obj: Any = None) -> JsonlRecord:
    """One line as a record. ``fast``: parse with orjson (~4x the standard library on these small
    lines); whatever orjson refuses or cannot write back (NaN, huge ints, lone surrogates, deep
    nesting) takes the standard library's path, so a line becomes the same record either way (only
    ``parsed`` is left ``None`` on that path). A line that is not JSON, not an object or has a bad
    timestamp is a refused record (module docstring). ``obj``: the line as orjson parsed it already, if it did.

    >>> [to_record("f", 0, line).key.reason for line in ('{"arm": "a"} x', '[1]', '{"arm": "a", "timestamp": "soon"}')]
    ['not_json', 'not_object', 'bad_timestamp']
    """
    try:
        if obj is None or not fast:
            obj = _fast_loads(line) if fast else json.loads(line)
    except (ValueError, TypeError, RecursionError) as e:  # a poison line (even nested 100,000 deep) is one bad record
        if fast:
            return to_record(path, offset, line, fast=False, line_time=line_time)
        return refused_line(path, offset, line, f"the line is not JSON ({json_error_text(e)})", "not_json")
    if type(obj) is not dict:
        return refused_line(path, offset, line, "the line is JSON but not an object: "
                            f"{JSON_NAMES.get(type(obj), type(obj).__name__)}", "not_object")
    try:
        ts = line_time.of(obj)
    except ValueError as e:
        return refused_line(path, offset, line, str(e), "bad_timestamp", key_bytes(obj.get("key", obj.get("arm"))))
    parsed: dict[str, Any] | None = None
    if "key" in obj and "value" in obj:  # the envelope of a Kafka record (``"value": null``: a record without one)
        key = obj["key"]
        value = obj["value"]
        if isinstance(value, str):
            vb: bytes | None = text_bytes(value)
        elif value is None:
            vb = None
        else:
            try:
                vb = _fast_dumps(value) if fast else json.dumps(value).encode("utf-8")
            except (ValueError, TypeError, RecursionError):
                if fast:
                    return to_record(path, offset, line, fast=False, line_time=line_time)
                vb = text_bytes(line.rstrip("\n"))
            if fast and type(value) is dict and len(vb) <= _SHORT:
                parsed = value  # orjson writes back what it read: parsing vb gives this object
    else:  # the shorthand: the line is the value, its key in ``arm`` (or ``key``: ``{"key": "eu", "reward": 1}``)
        key = obj["key"] if "key" in obj else obj.get("arm")
        vb = text_bytes(line.rstrip("\n"))
        if fast and len(vb) <= _SHORT:
            parsed = obj  # the shorthand line, parsed by orjson: the value
    kb = key_bytes(key)
    if kb is None and key is not None:  # say what the key was, not that there was none
        what = ("a number that is not an integer of at most 64 bits" if type(key) in (int, float)
                else JSON_NAMES.get(type(key), type(key).__name__))
        return refused_line(path, offset, line, f"the key is {what}, not a string or an integer", "key_missing")
    return JsonlRecord(path, 0, offset, ts, kb, vb, None, parsed)


def shorthand_chunk(path: str, lines: list[str], first: int) -> list[JsonlRecord] | None:
    """The records of ``lines`` (line numbers from ``first``) when every one is the common shorthand line
    (a JSON object without ``key``, a string ``arm``, an integer ``timestamp`` in range, at most ``_SHORT`` bytes,
    plain UTF-8), built in C-level passes (``map``, ``set``) -- the records :func:`line_by_line` makes
    of them; else ``None``, at the first line that is not (any exception, a type out of place), and
    :func:`line_by_line` reads the lines. Why: the line loop's per-line calls were ~20% of a detecting
    replay (cProfile, 20 keys)."""
    if not lines:
        return []
    try:
        head = _fast_loads(lines[0])  # a file of other lines (a log's own fields) is not parsed twice over
        if type(head) is not dict or "key" in head or type(head.get("arm")) is not str:
            return None
        objs = list(map(_fast_loads, lines))
        if set(map(type, objs)) != _DICT or any(map(dict.__contains__, objs, repeat("key"))):
            return None
        keys: list[Any] = list(map(dict.get, objs, repeat("arm")))
        stamps: list[Any] = list(map(dict.get, objs, repeat("timestamp")))
        if set(map(type, keys)) != _STR or set(map(type, stamps)) != _INT \
                or min(stamps) < 0 or max(stamps) > MAX_TIMESTAMP_MS:
            return None
        values = list(map(str.encode, map(str.rstrip, lines, repeat("\n"))))
        if max(map(len, values)) > _SHORT:
            return None
        kbs = list(map(str.encode, keys))
    except Exception:  # whatever it is, the line loop says which line and what
        return None
    return list(map(tuple.__new__, repeat(JsonlRecord), zip(repeat(path), repeat(0), range(first, first + len(lines)),
                                                          stamps, kbs, values, repeat(None), objs)))


def line_by_line(path: str, lines: list[str], first: int, line_time: LineTime = DEFAULT_TIME) -> list[JsonlRecord]:
    """The records of ``lines`` (line numbers from ``first``; a blank line is none, but counts), their times
    where ``line_time`` says."""
    if not line_time.default:
        return [to_record(path, n, line, line_time=line_time) for n, line in enumerate(lines, first) if line.strip()]
    chunk: list[JsonlRecord] = []
    loads, add, new = _fast_loads, chunk.append, tuple.__new__
    for n, line in enumerate(lines, first):
        obj = None
        try:  # the common line, inline: to_record's shorthand branch (the same record)
            obj = loads(line)
            if type(obj) is dict and "key" not in obj:
                key, ts = obj.get("arm"), obj.get("timestamp")
                if type(key) is str and type(ts) is int and 0 <= ts <= MAX_TIMESTAMP_MS:
                    vb = line.rstrip("\n").encode()  # (orjson refuses lone surrogates: plain UTF-8)
                    add(new(JsonlRecord, (path, 0, n, ts, key.encode(), vb, None,
                                          obj if len(vb) <= _SHORT else None)))
                    continue
        except Exception:  # anything else: to_record says what the line is
            pass
        if line.strip():
            add(to_record(path, n, line, obj=obj))  # (parsed above, if it was)
    return chunk


_DICT, _STR, _INT = frozenset((dict,)), frozenset((str,)), frozenset((int,))

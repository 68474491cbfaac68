"""Keys read from a field of the record's value (``streamarms run --key-field NAME``): :class:`KeyFieldSource`.

Many streams are not keyed by the thing to watch: a Kafka topic keyed by request id (or not keyed at
all) whose values name the host, a JSONL log of ``{"host": "h1", "latency_ms": 120}``. With
``--key-field host`` each record's key is its value's ``host`` field, so no job in front of the
detector has to re-key the stream (``jq``, a Kafka Streams job). :class:`KeyFieldSource` wraps any reward
source and changes each record's key; everything else -- positions, checkpoints, lag, rollback -- is the
wrapped source's, so a restart resumes where it would without it.

* **What a key is.** The field holds a string (its UTF-8) or an integer of at most 64 bits (its
  digits: ``7`` and ``"7"`` are the same key), as the ``arm`` of a JSONL line. A boolean, a float, an
  array, an object or ``null`` is no key: an arm named ``True`` would be a silent guess. Such a record,
  and one without the field, is refused as ``key_missing`` with a detail naming the field and what it
  held; a value that is not JSON, not an object, or absent (a tombstone) is refused as ``not_json``,
  ``not_object`` or ``value_missing``, as the codec would refuse it. Every refusal is a
  :class:`~streamarms.runtime.records.RefusedKey`, so it reaches the dead letters and the counters by the
  path of every refused record; the codec still checks the key's length and UTF-8.
* **Dead letters keep the record.** A record refused later (say ``out_of_model``) is dead-lettered with
  the key it arrived with, not the field's: :data:`FieldRecord` keeps it as ``source_key``, which the
  dead-letter sinks write (:func:`~streamarms.runtime.records.record_key`).
* **Cost.** Every value is parsed to find its key, also the records the policy skips (``--validate
  used`` parses nothing less), but once: the records carry the parsed value (``decoded_values``), which
  the episode scheduler reads instead of parsing the value again.
* **Key rules.** ``rule`` (a :class:`~streamarms.runtime.key_rule.KeyRule`: ``--key-ids``, ``--key-match``) makes
  the field's text (an integer's digits) the key it names: ids in a path read as ``:id``, or the part a pattern
  finds. A text the pattern does not find is refused as ``key_missing``, its detail naming both. Once per distinct
  text (the texts' keys are cached), so a rule costs nothing per record of a known text.
* **Partitions.** A key's records may now arrive on several partitions. One run reading all of them
  sees every record of a key; members of a ``--group-threshold`` group own keys by partition, so that
  mode refuses ``--key-field`` (the producers must key the records by the field for it).

>>> from collections import namedtuple
>>> R = namedtuple("R", "topic partition offset timestamp key value")
>>> class S:
...     def poll(self, timeout): return [R("t", 0, 0, None, b"req-1", b'{"host": "h1", "ms": 120}'),
...                                      R("t", 0, 1, None, None, b'{"host": 7, "ms": 90}'),
...                                      R("t", 0, 2, None, b"req-3", b'{"ms": 90}')]
...     def state(self): return {"t:0": 3}
>>> src = KeyFieldSource(S(), "host")
>>> a, b, c = src.poll(0.1)
>>> a.key, a.source_key, b.key, a.parsed, c.key.reason, c.key.detail
(b'h1', b'req-1', b'7', {'host': 'h1', 'ms': 120}, 'key_missing', "the value has no 'host' field (--key-field)")
>>> src.state()
{'t:0': 3}
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from . import decoder
from .decoder import _SHORT
from .field_path import FieldPath
from .key_rule import KeyRule
from .records import RefusedKey

__all__ = ["KeyFieldSource", "FieldRecord", "field_key"]

#: a record with its key read from its value: the source record's position, time, value and headers, the
#: field's key (UTF-8 bytes, or a :class:`~streamarms.runtime.records.RefusedKey`), the parsed value (``None``
#: when it is not a JSON object) and the key the record arrived with (``source_key``: its dead letter's)
FieldRecord = namedtuple("FieldRecord", "topic partition offset timestamp key value headers parsed source_key")

_NAMES = {str: "a string", bool: "a boolean", list: "an array", dict: "an object", type(None): "null",
          int: "an integer", float: "a number"}


def field_key(obj: dict[str, Any], field: str | FieldPath, raw: Any) -> bytes | RefusedKey:
    """The key in ``obj[field]`` (module docstring, "What a key is"; a name with dots: a nested field,
    :class:`~streamarms.runtime.field_path.FieldPath`, which a caller reading many records makes once and passes);
    ``raw`` is the record's own key (a refused key keeps it).

    >>> field_key({"h": "eu"}, "h", None), field_key({"h": 12}, "h", None)
    (b'eu', b'12')
    >>> field_key({"h": 1.5}, "h", b"r").detail
    "the 'h' field is a number, not a string or an integer (--key-field)"
    >>> field_key({"host": {"name": "h1"}}, "host.name", None)
    b'h1'
    """
    path = field if isinstance(field, FieldPath) else FieldPath(field)
    key, field = path.get(obj, _ABSENT), path.name
    if isinstance(key, str):
        try:
            return key.encode("utf-8", "surrogateescape")  # (a JSONL line's invalid UTF-8: key_not_utf8)
        except UnicodeEncodeError:  # a lone surrogate escaped in the JSON: invalid UTF-8 bytes (key_not_utf8)
            return key.encode("utf-8", "surrogatepass")
    if type(key) is int and -(1 << 63) <= key < (1 << 64):
        return str(key).encode()
    if key is _ABSENT:
        return RefusedKey.of("key_missing", f"the value has no {field!r} field (--key-field)", _bytes_or_none(raw))
    what = "an integer of more than 64 bits" if type(key) is int else _NAMES.get(type(key), type(key).__name__)
    return RefusedKey.of("key_missing", f"the {field!r} field is {what}, not a string or an integer (--key-field)",
                         _bytes_or_none(raw))


_ABSENT: Any = object()
_UNSEEN: Any = object()


def _bytes_or_none(raw: Any) -> bytes | None:
    """A record's own key as a refused key keeps it (``RefusedKey.raw``: bytes or None)."""
    if raw is None or isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogatepass")
    if type(raw) is RefusedKey:
        return _bytes_or_none(raw.raw)
    return bytes(raw)


class KeyFieldSource:
    """A reward source whose records' keys are their values' ``field`` (module docstring).

    >>> class One:
    ...     def poll(self, timeout): return [FieldRecord("f", 0, 0, None, None, b'{"w": "ann", "err": 1}', None, None, None)]
    >>> r = KeyFieldSource(One(), "w").poll(0.1)[0]
    >>> r.key, r.parsed
    (b'ann', {'w': 'ann', 'err': 1})
    """

    #: the records carry their parsed values (``parsed``): the episode scheduler does not parse them again
    decoded_values = True
    #: at most this many keys are kept made (:meth:`poll`)
    CACHE = 100_000

    def __init__(self, source: Any, field: str, rule: KeyRule | None = None) -> None:
        if not field or not field.strip():
            raise ValueError("the key field needs a name")
        self.source = source
        self.field = field
        self.rule = rule
        self._path = FieldPath(field)
        self._nested = self._path if self._path.nested else None  # (the inline path reads a flat name itself)
        #: field text -> its key bytes (``None``: the rule finds no key in it): a dict lookup per record instead of
        #: encoding it (and applying the rule), and one bytes object per key in the scheduler's maps
        self._keys: dict[str, bytes | None] = {}

    def poll(self, timeout: float = 0.2) -> list[FieldRecord]:
        batch = self.source.poll(timeout)
        if not batch:
            return []
        # one source, one record type: whether records carry a parse and headers is asked once a batch
        has_parsed, has_headers = hasattr(batch[0], "parsed"), hasattr(batch[0], "headers")
        out: list[FieldRecord] = []
        add, new, field, keys, loads = out.append, tuple.__new__, self.field, self._keys, decoder._loads
        path = self._nested
        for r in batch:
            raw = r.key
            try:  # the common record, inline: rekey's path for a JSON object whose field is a string
                obj = r.parsed if has_parsed else None
                if obj is None:
                    v = r.value
                    if len(v) > _SHORT:  # (decoder.loads refuses a deep nest unparsed: rekey's path)
                        raise ValueError
                    obj = loads(v)
                k = obj[field] if path is None else path(obj)
                if type(k) is str and type(raw) is not RefusedKey:
                    kb = keys.get(k, _UNSEEN)
                    if kb is _UNSEEN:
                        kb = self._made(k)
                    if kb is None:
                        raise ValueError  # (the rule finds no key in it: rekey's path refuses it)
                    add(new(FieldRecord, (r.topic, r.partition, r.offset, r.timestamp, kb, r.value,
                                          r.headers if has_headers else None, obj, raw)))
                    continue
            except Exception:  # anything else (not JSON, no field, a surrogate, ...): rekey says what
                pass
            add(self.rekey(r))
        return out

    def _made(self, k: str) -> bytes | None:
        keys = self._keys
        if len(keys) >= self.CACHE:  # a flood of distinct keys: start over, never grow without bound
            keys.clear()
        if self.rule is not None:
            ruled = self.rule.apply(k)
            if ruled is None:
                keys[k] = None
                return None
            k2 = ruled
        else:
            k2 = k
        kb = k2.encode("utf-8", "surrogateescape")  # (raises for a lone surrogate: rekey's path)
        keys[k] = kb
        return kb

    def rekey(self, r: Any) -> FieldRecord:
        """One record with its key read from its value (or refused: module docstring)."""
        key = r.key
        obj = getattr(r, "parsed", None)
        if type(key) is RefusedKey:  # the source refused it already (a JSONL line that is not JSON): its reason
            return FieldRecord(r.topic, r.partition, r.offset, r.timestamp, key, r.value, _headers(r), None, key)
        if obj is None:
            obj, why = _parse(r.value)
            if why is not None:
                return FieldRecord(r.topic, r.partition, r.offset, r.timestamp,
                                   RefusedKey.of(why[0], why[1], _bytes_or_none(key)), r.value, _headers(r), None, key)
        kb = field_key(obj, self._path, key)
        if self.rule is not None and type(kb) is bytes:
            kb = self._ruled(kb, key)
        return FieldRecord(r.topic, r.partition, r.offset, r.timestamp, kb, r.value, _headers(r), obj, key)

    def _ruled(self, kb: bytes, raw: Any) -> bytes | RefusedKey:
        """The rule's key of the field's key ``kb`` (its text, or an integer's digits), or its refusal."""
        assert self.rule is not None
        text = kb.decode("utf-8", "surrogateescape")
        ruled = self.rule.apply(text)
        if ruled is None:
            return RefusedKey.of("key_missing", f"the {self.field!r} field's text {text[:80]!r} holds no key for "
                                                f"{self.rule.flag} (--key-field)", _bytes_or_none(raw))
        return ruled.encode("utf-8", "surrogateescape")

    def __getattr__(self, name: str) -> Any:  # state, rollback, commit, close, exhausted, failure, lag, ...
        return getattr(self.source, name)


def _headers(r: Any) -> Sequence[Any] | None:
    return getattr(r, "headers", None)


def _parse(value: Any) -> tuple[Any, tuple[str, str] | None]:
    """``(the value as a JSON object, None)`` or ``(None, (reason, detail))`` as the codec would refuse it."""
    if value is None:
        return None, ("value_missing", "the record has no value, so no key field (--key-field)")
    try:
        obj = decoder.loads(value)
    except ValueError as e:
        return None, ("not_json", f"the value is {e}, so no key field (--key-field)")
    if not isinstance(obj, dict):
        return None, ("not_object", f"the value is JSON but {_NAMES.get(type(obj), 'not an object')}, "
                                    "so no key field (--key-field)")
    return obj, None

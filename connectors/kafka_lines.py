"""A Kafka topic of plain-text log lines (``streamarms run --bootstrap-servers .. --line-pattern P``): :class:`ValueLines`.

Not every pipeline turns its logs into JSON before Kafka: rsyslog's ``omkafka``, Vector's or Fluent Bit's ``text``
and ``raw`` encodings, and a ``kafkacat -P`` of an access log send each line as it is, an nginx line a record. A
``--line-pattern`` reads such a record's value as ``--rewards-file`` reads a line
(:class:`~streamarms.connectors.pattern_lines.PatternLines`: a regular expression's named groups, a named format --
``combined``, ``ingress-nginx``, ``haproxy``, ``envoy``, ``syslog``, ``alb`` -- or ``logfmt``), and the run reads the JSON object
of its fields in its place:

- a value the pattern does not match, a blank one or one that is not UTF-8 text is refused as ``bad_row``: a dead
  letter with the reason, the value as it came and the record's own key, its offset consumed like any refused
  record's;
- the record's key is the ``arm`` (``key``) group's when the pattern has one, else the record's own (``--key-field``
  names a group);
- its time stays Kafka's (a time group is a field like another: ``--timestamp-field`` reads files only);
- a record without a value (a tombstone), or one a screen before refused (:mod:`.record_time`), is passed on as it
  is, for the codec to refuse with its own reason.

A topic of a shipper's JSON records that carry the line in a field (Filebeat's and Vector's ``message``, Fluent Bit's
``log``): ``--line-field`` names it, and the line's fields join the record's
(:class:`~streamarms.connectors.field_lines.FieldLines`; a value whose field is missing or not read is ``bad_row``).

The source's own records (its checkpoint's fingerprints, a rollback) are not changed: each record read is a copy.

>>> from collections import namedtuple
>>> R = namedtuple("R", "topic partition offset timestamp key value headers")
>>> lines = ValueLines("host=(?P<host>[a-z0-9-]+) status=(?P<status>[0-9]+)")
>>> ok, bad = lines([R("logs", 0, 7, 1, b"k", b"t=1 host=web-1 status=503", []), R("logs", 0, 8, 2, b"k", b"oops", [])])
>>> ok.value, ok.key, ok.offset
(b'{"host":"web-1","status":"503"}', b'k', 7)
>>> bad.key.reason, bad.key.raw, bad.value
('bad_row', b'k', b'oops')
>>> print(bad.key.detail)
the value does not match --line-pattern 'host=(?P<host>[a-z0-9-]+) status=(?P<status>[0-9]+)'
"""

from __future__ import annotations

from typing import Any

from streamarms.runtime import decoder
from streamarms.runtime.records import RefusedKey

from .field_lines import FieldLines
from .line_record import with_fields
from .line_time import LineTime
from .pattern_lines import PatternLines

__all__ = ["ValueLines"]

#: the time field the lines are read with: none a pattern can name (a group's name has no space), so a time group is
#: a field like another, and the record's time stays Kafka's
_NO_TIME = "(kafka)"


class ValueLines:
    """Kafka records whose values are log lines, read by one ``--line-pattern`` (module docstring): calling it with
    a batch of records gives the batch with each value read.

    >>> ValueLines("combined").header[:3]
    ['remote_addr', 'remote_user', 'time_local']
    """

    def __init__(self, pattern: str, field: str | None = None) -> None:
        #: the field of a JSON value whose text the pattern reads (``--line-field``; ``None``: the whole value)
        self.field = None if field is None else FieldLines(pattern, field, LineTime(_NO_TIME))
        whole = PatternLines(pattern, LineTime(_NO_TIME)) if self.field is None else None
        #: what reads each value (``None``: json, read in the field only)
        self.lines = whole if self.field is None else self.field.lines
        #: the pattern as the messages name it
        self.source = pattern if self.lines is None else self.lines.source
        #: the fields a value gives (``None``: logfmt, whose fields are each line's own; a JSON value's, the
        #: field's line's beside them) and whether a value may give more (the combined format's rest)
        self.header, self.open = (whole.header, whole.open) if whole is not None else (None, False)

    def __call__(self, records: list[Any]) -> list[Any]:
        if self.field is not None:
            return [self._in_field(r) for r in records]
        todo: list[int] = []  # (the records to read, and their texts: read in one call, numbered by their place)
        texts: list[str] = []
        out = list(records)
        for i, r in enumerate(records):
            if r.value is None or type(r.key) is RefusedKey:
                continue
            try:
                texts.append(bytes(r.value).decode("utf-8"))
            except UnicodeDecodeError:
                out[i] = self._refused(r, "the value is not UTF-8 text")
                continue
            todo.append(i)
        assert self.lines is not None  # (a pattern for the whole value: json is read in a field only)
        read = {got.offset: got for got in self.lines.records("(kafka)", texts, 0)}  # (a blank line: none)
        for n, i in enumerate(todo):
            r, got = records[i], read.get(n)
            if got is None:  # (blank, or a stack trace's line: no record of its own -- a record here, refused)
                out[i] = self._refused(r, "the value is blank" if not texts[n].strip() else
                                       "the value is a line of a stack trace, no record of its own")
            elif type(got.key) is RefusedKey:
                out[i] = self._refused(r, got.key.detail.replace("the line", "the value", 1))
            else:
                out[i] = r._replace(value=got.value, key=r.key if got.key is None else got.key)
        return out

    def _in_field(self, r: Any) -> Any:
        """``r`` with the fields its JSON value's line gives added to the value (:class:`FieldLines`), else refused."""
        if r.value is None or type(r.key) is RefusedKey:
            return r
        try:
            obj = decoder.loads(r.value)
        except ValueError:
            return r  # (no JSON: the codec refuses it as not_json, as any such value)
        if type(obj) is not dict:
            return r
        assert self.field is not None
        read = self.field.fields_of(obj, "(kafka)")
        if type(read[0]) is str:
            why = str(read[1]).replace("the record", "the value", 1)
            return r._replace(key=RefusedKey.of(str(read[0]), why, r.key))
        added = read[0]
        assert isinstance(added, dict)
        return r._replace(value=with_fields(bytes(r.value), added))

    @staticmethod
    def _refused(r: Any, detail: str) -> Any:
        """``r`` refused as ``bad_row`` (the daemon counts it and dead-letters it with its value as it came)."""
        return r._replace(key=RefusedKey.of("bad_row", detail, r.key))

"""Keys read from the file each record came from (``streamarms run --key-from-file``): :class:`FileKeySource`.

Many logs do not name the thing to watch in their lines: each host (container, instance, shard) writes its own
file -- ``logs/web-1.log``, rsyslog's ``/var/log/remote/web-1/app.log``, the logs downloaded from each machine --
and a line of a plain-text application log says ``ERROR`` but not where. With ``--key-from-file`` a record's key is
the path of the file it was read from (as the run names it: a pattern's match, ``logs/web-1.log``; a rotation is
read under its file's path, so a host keeps its key across them), or with ``--key-match REGEX`` (``--key-ids``) the
part of the path the rule finds: ``--key-match '([^/]+)\\.log$'`` keys by ``web-1``. Everything else -- positions,
checkpoints, the records' values -- is the wrapped source's. A record the source refused keeps its refusal; a path
the rule finds no key in is refused as ``key_missing``, naming both.

Cost: one dict lookup per record (a path's key is made once).

>>> from collections import namedtuple
>>> R = namedtuple("R", "topic partition offset timestamp key value headers parsed")
>>> class S:
...     def poll(self, timeout): return [R("logs/web-1.log", 0, 0, None, None, b'{"level": "ERROR"}', None, None),
...                                      R("logs/db.txt", 0, 0, None, None, b'{"level": "INFO"}', None, None)]
>>> a, b = FileKeySource(S(), KeyRule(match=r"([^/]+)\\.log$")).poll(0.1)
>>> a.key, a.source_key, b.key.reason
(b'web-1', None, 'key_missing')
>>> print(b.key.detail)
the path 'logs/db.txt' holds no key for --key-match '([^/]+)\\\\.log$' (--key-from-file)
"""

from __future__ import annotations

from typing import Any

from .key_field import FieldRecord
from .key_rule import KeyRule
from .records import RefusedKey

__all__ = ["FileKeySource"]


class FileKeySource:
    """A reward source whose records' keys are the paths of the files they came from, or the part of each path a
    ``rule`` finds (module docstring). Its records are :data:`~streamarms.runtime.key_field.FieldRecord` (the key
    the record came with kept as ``source_key``, for its dead letter).

    >>> class One:
    ...     def poll(self, timeout): return [FieldRecord("app-eu.log", 0, 3, 7, None, b'{"err": 1}', None, None, None)]
    >>> r = FileKeySource(One()).poll(0.1)[0]
    >>> r.key, r.offset, r.timestamp
    (b'app-eu.log', 3, 7)
    """

    #: the records carry their parsed values when the wrapped source's do
    decoded_values = True

    def __init__(self, source: Any, rule: KeyRule | None = None) -> None:
        self.source = source
        self.rule = rule
        #: path -> its key (bytes), or its refusal's detail (str): made once a path
        self._keys: dict[str, bytes | str] = {}

    def poll(self, timeout: float = 0.2) -> list[Any]:
        batch = self.source.poll(timeout)
        if not batch:
            return []
        has_parsed, has_headers = hasattr(batch[0], "parsed"), hasattr(batch[0], "headers")
        out, keys, new = [], self._keys, tuple.__new__
        for r in batch:
            raw = r.key
            k = keys.get(r.topic)
            if k is None:
                k = keys[r.topic] = self._made(r.topic)
            key: bytes | RefusedKey
            if type(raw) is RefusedKey:  # (the source refused it: its reason stays)
                key = raw
            else:
                key = k if isinstance(k, bytes) else RefusedKey.of("key_missing", k, raw)
            out.append(new(FieldRecord, (r.topic, r.partition, r.offset, r.timestamp, key, r.value,
                                         r.headers if has_headers else None, r.parsed if has_parsed else None, raw)))
        return out

    def _made(self, path: str) -> bytes | str:
        """``path``'s key, or why it has none (the rule finds none in it)."""
        if self.rule is None:
            return path.encode("utf-8", "surrogateescape")
        key = self.rule.apply(path)
        if not key:
            return f"the path {path[:200]!r} holds no key for {self.rule.flag} (--key-from-file)"
        return key.encode("utf-8", "surrogateescape")

    def __getattr__(self, name: str) -> Any:  # state, rollback, commit, close, exhausted, failure, bytes_read, ...
        return getattr(self.source, name)

"""Canonical JSON in pieces: :func:`iter_json` yields exactly ``json.dumps(obj, separators=(",", ":"),
sort_keys=True)``, a piece at a time, so that a checkpoint of a million keys is written (and hashed) as
it is encoded instead of being built as one string, then one bytes object, then a third with its header
(issue 13: the full file checkpoint at 1e6 keys peaked at twice the state's memory).

Containers are walked down to those of more than ``chunk`` items; these are encoded ``chunk`` items at
a time by the C encoder (a slice of a list, the next ``chunk`` keys of a dict in sorted order, the next
``chunk`` elements of a :class:`~streamarms.json_lazy.LazyArray`, made as they are encoded), so the
speed stays the C encoder's and a piece stays small as long as no single item is huge. A dict with a key
that is not a string is encoded whole (``json`` converts such keys after sorting them).

>>> doc = {"b": [1, 2.5, None], "a": {"y": list(range(5)), "x": "s"}, "c": {}}
>>> "".join(iter_json(doc, chunk=2)) == json.dumps(doc, separators=(",", ":"), sort_keys=True)
True
>>> len(list(iter_json(list(range(10)), chunk=3)))  # "[" + 4 slices with their commas + "]"
9
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import islice
from typing import Any

from .json_lazy import LazyArray

__all__ = ["iter_json", "lazy_default"]


def lazy_default(obj: Any) -> Any:
    """``json``'s ``default`` for a :class:`~streamarms.json_lazy.LazyArray` (a snapshot's array made as it
    is encoded, or one parsed from a file as it is iterated): encoded as the list it is.

    >>> json.dumps({"a": LazyArray(2, lambda: iter([1, 2]))}, default=lazy_default)
    '{"a": [1, 2]}'
    """
    if isinstance(obj, LazyArray):
        return list(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_encode = json.JSONEncoder(separators=(",", ":"), sort_keys=True, default=lazy_default).encode


def iter_json(obj: Any, chunk: int = 10_000) -> Iterator[str]:
    """The pieces of ``obj``'s canonical JSON (module docstring)."""
    if isinstance(obj, dict) and obj and all(isinstance(k, str) for k in obj):
        keys = sorted(obj)
        yield "{"
        if len(keys) > chunk:
            for i in range(0, len(keys), chunk):
                if i:
                    yield ","
                yield _encode({k: obj[k] for k in keys[i:i + chunk]})[1:-1]
        else:
            for i, k in enumerate(keys):
                yield ("," if i else "") + _encode(k) + ":"
                yield from iter_json(obj[k], chunk)
        yield "}"
    elif isinstance(obj, (list, tuple)) and obj:
        yield "["
        if len(obj) > chunk:
            for i in range(0, len(obj), chunk):
                if i:
                    yield ","
                yield _encode(list(obj[i:i + chunk]))[1:-1]
        else:
            for i, v in enumerate(obj):
                if i:
                    yield ","
                yield from iter_json(v, chunk)
        yield "]"
    elif isinstance(obj, LazyArray) and len(obj):  # iterated once, ``chunk`` elements at a time
        it = iter(obj)
        yield "["
        sep = ""
        while part := list(islice(it, chunk)):
            yield sep + _encode(part)[1:-1]
            sep = ","
        yield "]"
    else:
        yield _encode(obj)

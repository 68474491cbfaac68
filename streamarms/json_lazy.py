"""A large JSON document read from a file a piece at a time (issue 13: a restart from the full file
checkpoint at 1e6 keys must stay within 1 GB RSS).

``json.loads`` of a checkpoint body builds the whole document as one object tree (at 1e6 keys a million
small dicts, every arm name four or five times over, every float its own object) next to the state being
restored from it; the allocator then keeps most of the tree's freed memory. :func:`load_lazy` instead:

* reads the body a block at a time (``os.pread`` of the open descriptor: never the whole body at once);
* parses objects key by key and arrays element by element (each element by the C decoder's
  ``raw_decode``), so the text in memory is one block and one element;
* turns an array of more than ``big`` elements into a :class:`LazyArray`: its elements were checked
  (parsed and dropped) on the way, and are parsed again, one at a time, only when the array is iterated
  -- a restore that turns each element into its compact form (a confidence sequence object) never holds
  the array's million dicts at once;
* shares equal strings (one object per arm name, however many containers name the arm, as a fed
  process holds them) and the first ``floats`` distinct float literals (the constants every arm repeats).

The result equals ``json.loads`` of the body (a :class:`LazyArray` iterates, indexes, compares and
converts to numpy as the list would) value for value and bit for bit: the same C decoder parses every
scalar. It needs ASCII text, which every writer of ``json.dumps``'s default ``ensure_ascii`` produces
(:class:`NotAscii` otherwise: read that document the ordinary way). A checkpoint's hash is checked over
the whole range before this reads it (``FileCheckpointStore.load_streamed``): nothing parsed is used unchecked.

>>> import tempfile, json, os
>>> path = os.path.join(tempfile.mkdtemp(), "doc.json")
>>> doc = {"arms": [f"k{i}" for i in range(10)], "cs": [{"arm": f"k{i}", "m": i} for i in range(10)], "x": 0.5}
>>> with open(path, "wb") as f: n = f.write(json.dumps(doc).encode())
>>> lazy = load_lazy(OpenFile(path), 0, n, big=4)
>>> type(lazy["cs"]).__name__, len(lazy["cs"]), lazy == doc       # the file is read again when iterated
('LazyArray', 10, True)
>>> lazy["cs"][3]["arm"] is lazy["arms"][3]                        # one object per name
True
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, overload

__all__ = ["load_lazy", "LazyArray", "NotAscii", "OpenFile", "Shared"]

_WS = re.compile(r"[ \t\n\r]*")
_plain = json.JSONDecoder()
_NUMBER = frozenset("0123456789.eE+-")
#: by an array's first character, the text between two of its elements, and where the comma is in it
_SEPARATORS = {"{": ("},{", 1), "[": ("],[", 1), '"': ('","', 1)}
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class NotAscii(ValueError):
    """The text has a byte outside ASCII (:func:`load_lazy` reads byte offsets as character offsets)."""


class OpenFile:
    """A file opened for reading, closed when the last :class:`LazyArray` reading it is gone.

    >>> import tempfile; f = OpenFile(tempfile.mkstemp()[1]); f.size
    0
    """

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self.fd).st_size

    def __del__(self) -> None:
        fd, self.fd = getattr(self, "fd", -1), -1
        if fd >= 0:
            os.close(fd)


class _Cursor:
    """The ASCII text of the bytes ``[start, end)`` of ``fd``, read a block at a time, and a position."""

    def __init__(self, fd: int, start: int, end: int, block: int) -> None:
        self.fd, self.end, self.block = fd, end, block
        self.buf, self.base, self.pos = "", start, 0

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def more(self, size: int = 0) -> bool:
        """Append the next block (or ``size`` bytes if more), dropping what was parsed; ``False`` at the end."""
        at = self.base + len(self.buf)
        if at >= self.end:
            return False
        data = os.pread(self.fd, min(max(self.block, size), self.end - at), at)
        if not data:
            raise json.JSONDecodeError("the file ends before the document", self.buf, len(self.buf))
        if not data.isascii():
            raise NotAscii("the text is not ASCII")
        self.buf = self.buf[self.pos:] + data.decode("ascii")
        self.base += self.pos
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            m = _WS.match(self.buf, self.pos)
            self.pos = m.end() if m else self.pos
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, chars: str, what: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise json.JSONDecodeError(f"Expecting {what}", self.buf, self.pos)
        self.pos += 1
        return c

    def elements(self, decoder: list[json.JSONDecoder]) -> Iterator[Any]:
        """The values of the array whose ``[`` was just consumed, through its ``]``, parsed by ``decoder[0]``
        (the caller may replace it between two blocks). Fast paths: the block's whole elements decoded as one
        array by the C decoder; else its values separated by a bare ``,`` scanned back to back by the C
        scanner; white space, a value across the block's end or an error takes :meth:`value` and
        :meth:`expect`."""
        if self.peek() == "]":
            self.pos += 1
            return
        chunks, seen = True, 0  # chunks tried from the 16th element on: a short array is not worth the copy
        while True:
            dec = decoder[0]
            scan = dec.scan_once  # type: ignore[attr-defined]  # the C scanner raw_decode calls
            buf, pos, n = self.buf, self.pos, len(self.buf)
            if chunks and seen >= 16 and pos < n:
                # the block's whole elements at once: "[" + text up to a separator + "]" decodes only if the
                # cut is between two elements (inside one, a bracket or a string would stay open)
                sep, back = _SEPARATORS.get(buf[pos], (",", 0))
                k = buf.rfind(sep, pos)
                if k > pos:
                    try:
                        values = dec.decode("[" + buf[pos:k + back] + "]")
                    except ValueError:
                        chunks = False  # not this array's shape: element by element from here
                    else:
                        self.pos = k + back + 1
                        yield from values
                        continue
            while True:
                try:
                    v, e = scan(buf, pos)
                except (StopIteration, ValueError):
                    break
                if e >= n:
                    break
                c = buf[e]
                if c == ",":
                    self.pos = pos = e + 1
                    seen += 1
                    yield v
                    if decoder[0] is not dec:
                        break
                elif c == "]":
                    self.pos = e + 1
                    yield v
                    return
                else:
                    break
            if decoder[0] is not dec:
                continue
            v = self.value(dec)
            last = self.expect(",]", "',' delimiter") == "]"
            seen += 1
            yield v
            if last:
                return

    def value(self, decoder: json.JSONDecoder) -> Any:
        """One whole value by ``decoder``'s C scanner; a value that ends at the block's end, or before a
        character that could continue a number (``1.`` of ``1.5``), is parsed again once the next block is in."""
        self.peek()
        size = self.block
        while True:
            try:
                v, e = decoder.raw_decode(self.buf, self.pos)
                if (e < len(self.buf) and self.buf[e] not in _NUMBER) or self.base + len(self.buf) >= self.end:
                    self.pos = e
                    return v
            except json.JSONDecodeError:
                if self.base + len(self.buf) >= self.end:
                    raise
            if not self.more(size):
                raise json.JSONDecodeError("Unterminated value", self.buf, self.pos)
            size *= 2  # a value longer than a block: parsed again O(log) times, not once a block


class Shared:
    """Equal strings made one object; the first ``floats`` distinct float literals likewise (parsed by
    :attr:`decoder`).

    >>> sh = Shared(); a, b = sh.walk(["x" * 9, {"k": "x" * 9}]); a is b["k"]
    True
    """

    def __init__(self, floats: int = 1 << 16) -> None:
        self.strings: dict[str, str] = {}
        self.floats: dict[str, float] = {}
        self._get = self.floats.get
        self.cap = floats
        self.decoder = json.JSONDecoder(parse_float=self._float)

    def _float(self, text: str) -> float:
        v = self._get(text)
        if v is None:
            v = float(text)
            if len(self.floats) < self.cap:
                self.floats[text] = v
        return v

    def walk(self, v: Any) -> Any:
        """``v`` with its strings replaced by the shared ones (lists and dict values in place)."""
        t = type(v)
        if t is str:
            return self.strings.setdefault(v, v)
        if t is list:
            for i, x in enumerate(v):
                if type(x) in (str, list, dict):
                    v[i] = self.walk(x)
        elif t is dict:
            for k, x in v.items():
                if type(x) in (str, list, dict):
                    v[k] = self.walk(x)
        return v


def _file_elements(file: OpenFile, start: int, end: int, shared: Shared, block: int,
                   share: bool = True) -> Iterator[Any]:
    """The elements of the array at bytes ``[start, end)`` of ``file``, parsed one block at a time (their
    strings shared unless ``share`` is false)."""
    cur = _Cursor(file.fd, start, end, block)
    cur.expect("[", "'['")
    walk = shared.walk
    if not share:
        yield from cur.elements([shared.decoder])
        return
    for v in cur.elements([shared.decoder]):
        t = type(v)
        yield walk(v) if t is dict or t is list or t is str else v


class LazyArray(Sequence[Any]):
    """``n`` elements made by ``source()`` (a new iterator each time) when iterated: a JSON array of a file
    parsed an element at a time (module docstring), or a chunked checkpoint's blocks decoded one at a time.

    In order access (iteration, ``a[0], a[1], ...`` as numpy does) runs ``source`` once; any other index
    starts again from the first element. A file's array holds the open descriptor (the file it was checked
    in, even if a newer checkpoint replaced the path since).

    >>> a = LazyArray(3, lambda: iter([1, 2, 3])); len(a), list(a), a[1], a == [1, 2, 3]
    (3, [1, 2, 3], 2, True)
    """

    def __init__(self, n: int, source: Callable[[], Iterator[Any]], what: str = "",
                 raw: Callable[[], Iterator[Any]] | None = None) -> None:
        self._n, self._source, self._what, self._raw = n, source, what, raw
        self._it: Iterator[Any] | None = None
        self._next = 0

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Any]:
        return self._source()

    def iter_raw(self) -> Iterator[Any]:
        """The elements without sharing their strings (an array of one-use strings, such as the rows of a
        checkpoint, would otherwise keep every one of them in the shared table until the document goes)."""
        return self._raw() if self._raw is not None else self._source()

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return list(self)[i]
        j = i + self._n if i < 0 else i
        if not 0 <= j < self._n:
            raise IndexError("LazyArray index out of range")
        if self._it is None or j < self._next:
            self._it, self._next = iter(self), 0
        while self._next < j:
            next(self._it)
            self._next += 1
        self._next += 1
        v = next(self._it)
        if self._next == self._n:
            self._it = None
        return v

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, LazyArray)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like a list

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np
        return np.array(list(self), dtype=dtype)

    def __repr__(self) -> str:
        return f"LazyArray({self._n} elements{self._what})"


class _Loader:
    def __init__(self, file: OpenFile, cur: _Cursor, big: int, shared: Shared) -> None:
        self.file, self.cur, self.big, self.shared = file, cur, big, shared

    def value(self) -> Any:
        c = self.cur.peek()
        if c == "{":
            return self.object()
        if c == "[":
            return self.array()
        return self.shared.walk(self.cur.value(self.shared.decoder))

    def object(self) -> dict[str, Any]:
        cur, strings, walk = self.cur, self.shared.strings, self.shared.walk
        scan = self.shared.decoder.scan_once  # type: ignore[attr-defined]
        cur.pos += 1
        out: dict[str, Any] = {}
        if cur.peek() == "}":
            cur.pos += 1
            return out
        while True:
            # fast path: "key":scalar members, a bare ',' or '}' after each, all within the block
            buf, pos, n = cur.buf, cur.pos, len(cur.buf)
            while pos < n and buf[pos] == '"':
                try:
                    k, e = _scanstring(buf, pos + 1)
                    if e + 1 >= n or buf[e] != ":" or buf[e + 1] in "{[":
                        break
                    v, e = scan(buf, e + 1)
                except (StopIteration, ValueError):
                    break
                if e >= n or buf[e] not in ",}":
                    break
                out[strings.setdefault(k, k)] = walk(v)
                cur.pos = pos = e + 1
                if buf[e] == "}":
                    return out
            # one member the general way
            if cur.peek() != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", cur.buf, cur.pos)
            k = cur.value(_plain)
            k = strings.setdefault(k, k)
            cur.expect(":", "':' delimiter")
            out[k] = self.value()
            if cur.expect(",}", "',' delimiter") == "}":
                return out

    def array(self) -> list[Any] | LazyArray:
        cur = self.cur
        start = cur.offset
        cur.pos += 1
        items: list[Any] = []
        walk = self.shared.walk
        decoder = [self.shared.decoder]
        values = cur.elements(decoder)
        for v in values:
            items.append(walk(v))
            if len(items) > self.big:  # a big one: checked now, parsed again when iterated
                decoder[0] = _plain
                n = len(items) + sum(1 for _ in values)
                end = cur.offset
                return LazyArray(n, partial(_file_elements, self.file, start, end, self.shared, cur.block),
                                 raw=partial(_file_elements, self.file, start, end, self.shared, cur.block, False),
                                 what=f" at bytes {start}..{end}")
        return items


def load_lazy(file: OpenFile, start: int, end: int, *, big: int = 10_000, floats: int = 1 << 16,
              block: int = 1 << 20) -> Any:
    """The JSON document in bytes ``[start, end)`` of ``file`` (module docstring). Raises
    ``json.JSONDecodeError`` (a ``ValueError``) on bad JSON, :class:`NotAscii` on a byte above 127."""
    cur = _Cursor(file.fd, start, end, block)
    doc = _Loader(file, cur, big, Shared(floats)).value()
    if cur.peek() != "":
        raise json.JSONDecodeError("Extra data", cur.buf, cur.pos)
    return doc

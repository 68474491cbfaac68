"""Bytes made from a file as they are read: the base of the streams a
:class:`~streamarms.connectors.compressed_lines.CompressedLineReader` reads as it reads a decompressed file.

A UTF-16 file's text as UTF-8 (:class:`~streamarms.connectors.text_encoding.Utf16Stream`), a workbook's sheet
as CSV lines (:class:`~streamarms.connectors.workbook_lines.WorkbookStream`): each makes its bytes in pieces
(:meth:`MadeStream._more`) from the file's start. :class:`MadeStream` gives them the ``read``, ``seek``, ``tell`` and
``fileno`` the reader needs; its positions are in the bytes made, and a seek backwards makes them again from the
file's start, as a gzip file is decompressed again (a checkpoint's position is reached so at a restart).

>>> import io
>>> class Upper(MadeStream):
...     def _start(self): self._done = False
...     def _more(self):
...         if self._done: return None
...         data = self._raw.read(4); self._done = not data
...         return data.upper()
>>> s = Upper(io.BytesIO(b"abcdefghij")); s.read(3), s.read(100), s.tell()
(b'ABC', b'DEFGHIJ', 10)
>>> s.seek(2), s.read(2)
(2, b'CD')
"""

from __future__ import annotations

import importlib
from typing import IO, Any

from streamarms.errors import ConfigError

__all__ = ["MadeStream", "reader_module"]


def reader_module(name: str, raw: IO[bytes], what: str, extra: str, instead: str) -> Any:
    """The module ``name`` that reads the file ``raw`` (``what`` it is), imported; without it a ``ConfigError`` naming
    the extra that installs it and what to do ``instead``.

    >>> import io
    >>> reader_module("no_such_reader", io.BytesIO(), "a Thing file", "thing", "write it as CSV")
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: the file is a Thing file, read with no_such_reader: pip install 'streamarms[thing]' \
(or write it as CSV)
    """
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigError(f"{getattr(raw, 'name', 'the file')} is {what}, read with {name.split('.')[0]}: pip install "
                          f"'streamarms[{extra}]' (or {instead})") from None


class MadeStream:
    """A read-only stream of the bytes a subclass makes from ``raw`` (open for reading in binary) from its start
    (module docstring): :meth:`_start` begins, :meth:`_more` gives the next bytes (``None`` at the end)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.name = getattr(raw, "name", None)
        self._restart()

    def _restart(self) -> None:
        self._raw.seek(0)
        self._buf = b""
        self._pos = 0   # the position of the first byte of _buf
        self._end = False
        self._start()

    def _start(self) -> None:
        """Begin making the bytes from the file's start (its read position is there)."""

    def _more(self) -> bytes | None:
        """The next bytes made (maybe none yet), or ``None`` once every byte was made."""
        raise NotImplementedError

    def read(self, n: int = -1) -> bytes:
        """The next ``n`` bytes (all that are left: ``n`` < 0), fewer only at the end."""
        while (n < 0 or len(self._buf) < n) and not self._end:
            more = self._more()
            if more is None:
                self._end = True
            else:
                self._buf += more
        data, self._buf = (self._buf, b"") if n < 0 else (self._buf[:n], self._buf[n:])
        self._pos += len(data)
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        """To the position ``pos`` of the bytes made (from the start only)."""
        if whence != 0:
            raise ValueError("the bytes made from a file are sought from their start only")
        if pos < self._pos:
            self._restart()
        while self._pos < pos and self.read(min(pos - self._pos, 1 << 20)):
            pass
        return self._pos

    def tell(self) -> int:
        return self._pos

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        self._raw.close()

"""The pack files of :class:`~streamarms.chunked_checkpoint.ChunkedCheckpointStore`: writing a save's pack
(:class:`PackWriter`), patches (:class:`Patch`: the elements of a block that differ from its root) and
reading blocks back, each verified against its name (:class:`PackReader`).

>>> apply_text([1, 2, 3], [[1, 5]])
b'[1,5,3]'
"""

from __future__ import annotations

import hmac
import json
import os
from typing import Any

from .checkpoint import CheckpointError
from .json_lazy import OpenFile
from .json_stream import lazy_default

__all__ = ["PackWriter", "Patch", "PackReader", "apply_text", "dumps"]


def dumps(x: Any) -> bytes:
    """The canonical JSON text of a block (as the store names and stores it)."""
    return json.dumps(x, separators=(",", ":"), sort_keys=True, default=lazy_default).encode("utf-8")


class PackWriter:
    """A pack file being written: created at its first block, fsynced (if asked) when closed.

    >>> import tempfile; w = PackWriter(os.path.join(tempfile.mkdtemp(), "p.bin"), fsync=False)
    >>> w.write(b"[1]", False), w.write(b"[2,3]", False), w.close(), w.bytes
    (0, 3, None, 8)
    """

    def __init__(self, path: str, fsync: bool) -> None:
        self.path, self.fsync = path, fsync
        self.f: Any = None
        self.bytes = self.blocks = self.patches = 0

    def write(self, data: bytes, patch: bool) -> int:
        """Append ``data``; its offset."""
        if self.f is None:
            self.f = open(self.path, "wb")
        off = self.bytes
        self.f.write(data)
        self.bytes += len(data)
        self.blocks += 1
        self.patches += patch
        return off

    def close(self) -> None:
        if self.f is not None:
            self.f.flush()
            if self.fsync:
                os.fsync(self.f.fileno())
            self.f.close()
            self.f = None


class Patch(bytes):
    """Stored bytes of a patch block (``[[position, element], ...]``) with the full block it applies to.

    >>> p = Patch(b"[[0,9]]", "ab12"); bytes(p), p.base
    (b'[[0,9]]', 'ab12')
    """

    base: str

    def __new__(cls, data: bytes, base: str) -> Patch:
        obj = super().__new__(cls, data)
        obj.base = base
        return obj


def _apply(old: list[Any], changes: list[Any]) -> list[Any]:
    out = list(old)
    for j, x in changes:
        out[j] = x
    return out


def apply_text(old: list[Any], changes: list[Any]) -> bytes:
    return dumps(_apply(old, changes))


class PackReader:
    """Reads blocks (full or patches, resolved and verified against their names) from a directory's packs.

    >>> import hashlib, tempfile; d = tempfile.mkdtemp()
    >>> open(os.path.join(d, "pack-1.bin"), "wb").write(b"[1,2]")
    5
    >>> name = hashlib.sha256(b"[1,2]").hexdigest()
    >>> PackReader(d, {name: ["pack-1.bin", 0, 5]}, lambda b: hashlib.sha256(b).hexdigest()).block(name)
    [1, 2]
    """

    def __init__(self, directory: str, index: dict[str, list[Any]], name_of: Any, streamed: bool = False) -> None:
        self.dir, self.index, self.name_of = directory, index, name_of
        self.files: dict[str, bytes] = {}
        self.cache: dict[str, bytes] = {}
        #: ``streamed``: packs kept open and read a block at a time (``pread``), only roots cached
        self.open: dict[str, OpenFile] | None = {} if streamed else None
        self.cache_max = 0 if streamed else 4096

    def _read(self, pack: str, off: int, size: int) -> bytes:
        if self.open is not None:
            f = self.open.get(pack)
            if f is None:
                try:
                    f = self.open[pack] = OpenFile(os.path.join(self.dir, pack))
                except FileNotFoundError:
                    raise CheckpointError(f"checkpoint in {self.dir}: pack {pack} is missing") from None
            return os.pread(f.fd, size, off)
        if pack not in self.files:
            try:
                with open(os.path.join(self.dir, pack), "rb") as fh:
                    self.files[pack] = fh.read()
            except FileNotFoundError:
                raise CheckpointError(f"checkpoint in {self.dir}: pack {pack} is missing") from None
        return self.files[pack][off:off + size]

    def root(self, name: str) -> str:
        """The full block ``name`` is stored as a patch of (``name`` itself if it is stored whole)."""
        loc = self.index.get(name)
        return str(loc[3]) if loc is not None and len(loc) > 3 else name

    def block(self, name: str) -> Any:
        """The block's elements, freshly decoded (never shared between two calls)."""
        return json.loads(self.text(name))

    def text(self, name: str) -> bytes:
        got = self.cache.get(name)
        if got is not None:
            return got
        loc = self.index.get(name)
        if loc is None:
            raise CheckpointError(f"checkpoint in {self.dir}: block {name[:12]} is not in the index")
        pack, off, size = loc[0], loc[1], loc[2]
        data = self._read(pack, off, size)
        if len(data) != size:
            raise CheckpointError(f"checkpoint in {self.dir}: block {name[:12]} in {pack} is damaged (short)")
        try:
            if len(loc) > 3:  # a patch on a full block (its root: never itself a patch)
                if len(self.index.get(loc[3], ())) != 3:
                    raise ValueError("a patch on a patch")
                data = apply_text(self.block(loc[3]), json.loads(data))
        except (ValueError, TypeError, IndexError):
            raise CheckpointError(f"checkpoint in {self.dir}: block {name[:12]} in {pack} is damaged") from None
        if not hmac.compare_digest(self.name_of(data), name):
            raise CheckpointError(f"checkpoint in {self.dir}: block {name[:12]} in {pack} is damaged")
        if len(self.cache) < self.cache_max:
            self.cache[name] = data
        return data

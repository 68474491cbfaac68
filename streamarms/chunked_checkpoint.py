"""Incremental checkpoints: a manifest plus content-addressed blocks (base + deltas), :class:`ChunkedCheckpointStore`.

A checkpoint document of a run with many keys is dominated by a few long per-key lists (the policy's
confidence sequences, sampling keys, states; the scheduler's key registry). Between two checkpoints
only the keys that got samples change. This store therefore writes

* every long list (``>= min_list`` elements, found by walking the document's dicts; a dict that large
  counts as the list of its ``[key, value]`` pairs) as **blocks** of ``block`` consecutive elements, each block named by the SHA-256 of its JSON text (HMAC-SHA256 with a
  secret key: a forger cannot make a block match its name);
* a **pack** file per save holding only the blocks not already stored (the delta: the blocks of keys
  that changed), written and fsynced first. A changed block is stored as a **patch** -- the elements
  that differ from the last *full* block stored at the same place (its root) -- so a save writes
  about the keys changed since that root, not whole blocks; a patch still carries the new block's
  name (the hash of its full text), and loading applies it to its root (one level, never a chain) and
  checks the result against that name. A patch that would not be shorter than the block is not
  written: the full block is, and becomes the root;
* a **manifest** (the rest of the document, the block names of each list and where every live block
  lives), encoded like a file checkpoint (:func:`streamarms.checkpoint.encode`: SHA-256 or HMAC) and
  atomically renamed over ``MANIFEST`` -- the commit point. A crash before the rename leaves the previous
  manifest and all its packs intact; packs no manifest references are deleted after the rename.

When the packs hold more than ``compact_ratio`` times the live bytes (dead blocks of old states), the
save writes one new base pack with every live block instead of a delta. :meth:`load` rebuilds the
document from the manifest and the blocks (each verified against its name), equal -- key for key, bit
for bit once encoded -- to the document that was saved.

**Cost.** The bytes written (and fsynced) are about the changed keys'; the CPU is not: a save still
encodes and hashes every block (it cannot know which keys changed without the policy saying so), about
what a full JSON checkpoint costs -- which is why the daemon saves in a forked child
(:mod:`streamarms.background_checkpoint`). A policy that reported its changed arms would make it O(changed).

The store keeps no state between saves that the directory does not hold (each save re-reads the
manifest's block index), so a save may run in a forked child (:mod:`streamarms.background_checkpoint`).

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> store = ChunkedCheckpointStore(d, block=4, min_list=8, fsync=False)
>>> doc = {"run": {"x": 1}, "policy": {"cs": [{"m": i, "s": 0.5 * i} for i in range(20)], "T": 3}}
>>> store.save(doc); store.last_written["blocks"], store.load() == doc
(5, True)
>>> doc["policy"]["cs"][17]["m"] = 99          # one key changed: one block written
>>> store.save(doc); store.last_written["blocks"], store.load() == doc
(1, True)
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
from collections.abc import Callable, Iterator
from functools import partial
from itertools import islice
from typing import Any

from .checkpoint import (
    CheckpointError,
    CheckpointStore,
    atomic_write,
    check_writable_directory,
    decode,
    encode,
    file_mark,
)
from .chunked_packs import PackReader, PackWriter, Patch, apply_text, dumps
from .json_lazy import LazyArray, Shared

__all__ = ["ChunkedCheckpointStore", "split_document", "join_document"]

#: the key that marks a list stored as blocks (a document may not use it itself)
MARK = "\u0000blocks"
_MANIFEST = "MANIFEST"


def split_document(doc: Any, min_list: int, block: int, slices: list[list[Any]] | None = None) -> tuple[Any, list[bytes]]:
    """``(skeleton, blocks)``: ``doc`` with every list of ``>= min_list`` elements that is a dict value
    replaced by ``{MARK: [first block index, number of blocks, length]}`` (a dict of as many entries: its
    ``[key, value]`` pairs, marked ``"dict"``), and the JSON text of the blocks (``slices``, if given,
    receives the blocks' elements). A :class:`~streamarms.json_lazy.LazyArray` counts as a list.

    >>> split_document({"a": [1, 2, 3], "b": 4, "c": {"x": 1, "y": 2}}, min_list=2, block=2)[1]
    [b'[1,2]', b'[3]', b'[["x",1],["y",2]]']
    """
    blocks: list[bytes] = []

    def put(i: int, part: list[Any], data: bytes) -> None:
        blocks.append(data)
        if slices is not None:
            slices.append(part)

    return _split(doc, min_list, block, put), blocks


def _split(doc: Any, min_list: int, block: int, put: Callable[[int, list[Any], bytes], None]) -> Any:
    """:func:`split_document` a block at a time: ``put(index, elements, text)`` gets each block as it is
    made (a long list is read once, ``block`` elements at a time: a snapshot's lazy arrays are never
    whole in memory); returns the skeleton."""
    count = 0

    def walk(x: Any) -> Any:
        nonlocal count
        if not isinstance(x, dict):
            return x
        if MARK in x:
            raise ValueError(f"a checkpoint document may not use the key {MARK!r}")
        out = {}
        for k, v in x.items():
            big_dict = isinstance(v, dict) and len(v) >= min_list
            if big_dict or (isinstance(v, (list, LazyArray)) and len(v) >= min_list):
                it = iter(([a, b] for a, b in v.items()) if big_dict else v)
                first, n = count, 0
                while part := list(islice(it, block)):
                    put(count, part, dumps(part))
                    count += 1
                    n += len(part)
                out[k] = {MARK: [first, count - first, n] + (["dict"] if big_dict else [])}
            else:
                out[k] = walk(v)
        return out

    return walk(doc)


def join_document(skeleton: Any, blocks: list[Any]) -> Any:
    """Inverse of :func:`split_document` (``blocks`` decoded).

    >>> join_document({'a': {'\\x00blocks': [0, 2, 3]}, 'b': 4}, [[1, 2], [3]])
    {'a': [1, 2, 3], 'b': 4}
    """
    if not isinstance(skeleton, dict):
        return skeleton
    if MARK in skeleton:
        first, count, length = skeleton[MARK][:3]
        out: list[Any] = []
        for b in blocks[first:first + count]:
            out.extend(b)
        if len(out) != length:
            raise CheckpointError(f"checkpoint block list has {len(out)} elements, manifest says {length}")
        if skeleton[MARK][3:] == ["dict"]:
            try:
                return {str(k): v for k, v in out}
            except (TypeError, ValueError):
                raise CheckpointError("checkpoint block dict is damaged") from None
        return out
    return {k: join_document(v, blocks) for k, v in skeleton.items()}


def _blocks(reader: PackReader, names: list[str], shared: Shared, share: bool = True) -> Iterator[Any]:
    """The elements of the blocks ``names``, a block read, verified and decoded at a time (strings shared
    unless ``share`` is false)."""
    for name in names:
        block = shared.decoder.decode(reader.text(name).decode("utf-8"))
        yield from shared.walk(block) if share else block


def _join_streamed(skeleton: Any, names: list[str], sizes: list[int], reader: PackReader, shared: Shared) -> Any:
    """:func:`join_document` with each long list a :class:`LazyArray` of its blocks (``sizes``: elements
    per block, counted when the blocks were verified)."""
    if not isinstance(skeleton, dict):
        return skeleton
    if MARK in skeleton:
        first, count, length = skeleton[MARK][:3]
        n = sum(sizes[first:first + count])
        if n != length:
            raise CheckpointError(f"checkpoint block list has {n} elements, manifest says {length}")
        arr = LazyArray(n, partial(_blocks, reader, names[first:first + count], shared), f" in {count} blocks",
                        raw=partial(_blocks, reader, names[first:first + count], shared, False))
        if skeleton[MARK][3:] == ["dict"]:
            strings: dict[str, str] = shared.strings
            try:
                return {strings.setdefault(str(k), str(k)): v for k, v in arr}
            except (TypeError, ValueError):
                raise CheckpointError("checkpoint block dict is damaged") from None
        return arr
    return {k: _join_streamed(v, names, sizes, reader, shared) for k, v in skeleton.items()}


class ChunkedCheckpointStore(CheckpointStore):
    """Checkpoints as a manifest + content-addressed blocks in pack files, in ``directory`` (module docstring).

    ``block``: elements per block (smaller: finer deltas, a larger manifest); ``min_list``: the length from
    which a list is stored as blocks; ``compact_ratio``: rewrite a base when packs exceed this many times
    the live bytes. :attr:`last_written` tells what the last save wrote (blocks, bytes, whether a base).
    """

    fork_safe = True  # plain files: a forked child may save (streamarms.background_checkpoint)

    def __init__(self, directory: str | os.PathLike[str], *, block: int = 256, min_list: int = 1024,
                 compact_ratio: float = 2.0, fsync: bool = True, secret: bytes | None = None) -> None:
        if block < 1 or min_list < 1 or compact_ratio <= 1.0:
            raise ValueError(f"block and min_list must be >= 1 and compact_ratio > 1, got {block}, {min_list}, "
                             f"{compact_ratio}")
        self.dir = os.fspath(directory)
        self.block, self.min_list, self.compact_ratio = int(block), int(min_list), float(compact_ratio)
        self.fsync = fsync
        self.secret = secret or None
        self.last_written: dict[str, Any] = {}
        self.saves = 0

    def describe(self) -> str:
        return f"chunked checkpoint directory {self.dir}"

    def check_writable(self) -> None:
        check_writable_directory(self.dir, self.describe())

    def saved_mark(self) -> tuple[int, int, int, int] | None:
        """The manifest's :func:`~streamarms.checkpoint.file_mark` (every save replaces it)."""
        return file_mark(os.path.join(self.dir, _MANIFEST))

    def _name(self, data: bytes) -> str:
        if self.secret:
            return hmac.new(self.secret, data, hashlib.sha256).hexdigest()
        return hashlib.sha256(data).hexdigest()

    def _read_manifest(self) -> dict[str, Any] | None:
        try:
            with open(os.path.join(self.dir, _MANIFEST), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        return decode(data, f"checkpoint manifest {self.dir}/{_MANIFEST}", self.secret)

    # -- load ------------------------------------------------------------------------------------
    def load(self) -> dict[str, Any] | None:
        man = self._read_manifest()
        if man is None:
            return None
        reader = PackReader(self.dir, man["index"], self._name)
        decoded = [reader.block(name) for name in man["blocks"]]
        doc = join_document(man["doc"], decoded)
        if not isinstance(doc, dict):
            raise CheckpointError(f"checkpoint in {self.dir} is damaged: the document is not an object")
        return doc

    def load_streamed(self) -> dict[str, Any] | None:
        """:meth:`load` for a restore (issue 13: 1e6 keys within 1 GB RSS). Every block is read, verified
        against its name and counted first, as :meth:`load` does, but not kept; a long list is then a
        :class:`~streamarms.json_lazy.LazyArray` whose blocks are read again (from the packs opened during
        the check) and decoded one at a time as the restore iterates it, equal strings one object (a list
        stored for a dict is built whole). Same document, same errors as :meth:`load`."""
        man = self._read_manifest()
        if man is None:
            return None
        reader = PackReader(self.dir, man["index"], self._name, streamed=True)
        names: list[str] = man["blocks"]
        sizes = [len(reader.block(name)) for name in names]  # every block verified now
        doc = _join_streamed(man["doc"], names, sizes, reader, Shared())
        if not isinstance(doc, dict):
            raise CheckpointError(f"checkpoint in {self.dir} is damaged: the document is not an object")
        return doc

    # -- save ------------------------------------------------------------------------------------
    def save(self, state: dict[str, Any]) -> None:
        """Store ``state`` durably (module docstring); one save at a time per directory (an advisory lock:
        a save that outlived its daemon finishes, or dies, before another starts)."""
        os.makedirs(self.dir, exist_ok=True)
        fd = os.open(os.path.join(self.dir, "LOCK"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._save(state)
        finally:
            os.close(fd)  # releases the lock

    def _save(self, state: dict[str, Any]) -> None:
        """One pass over the document, a block at a time: each block is named, and one not stored yet is
        written to this save's pack at once (a patch on its predecessor where that is shorter); nothing
        holds the document's blocks. If the packs then exceed ``compact_ratio`` times the live bytes, a
        second pass writes every block whole into a new base pack instead."""
        prev = self._read_manifest()
        seq = int(prev["seq"]) + 1 if prev else 1
        old_index: dict[str, list[Any]] = prev["index"] if prev else {}
        old_names: list[str] = prev["blocks"] if prev else []
        pack = f"pack-{seq:08d}.bin"
        reader = PackReader(self.dir, old_index, self._name) if prev else None
        skeleton, names, index, sizes, out = self._write_blocks(state, pack, old_index, old_names, reader)
        live_bytes = sum(sizes.values())
        pack_bytes = dict((prev or {}).get("packs", {}))
        base = not prev or sum(pack_bytes.values()) + out.bytes > self.compact_ratio * max(live_bytes, 1)
        if base and prev:  # compaction: every live block whole in one new pack
            skeleton, names, index, sizes, out = self._write_blocks(state, pack, {}, [], None)
            pack_bytes = {}
        if out.bytes:
            pack_bytes[pack] = out.bytes
        for loc in list(index.values()):  # a patch needs its root kept
            if len(loc) > 3 and loc[3] not in index:
                index[loc[3]] = old_index[loc[3]]
        used = {loc[0] for loc in index.values()}
        pack_bytes = {p: s for p, s in pack_bytes.items() if p in used}
        man = {"seq": seq, "doc": skeleton, "blocks": names, "index": index, "packs": pack_bytes}
        man_bytes = encode(man, self.secret)
        self._replace(_MANIFEST, man_bytes)
        for fn in os.listdir(self.dir):  # packs the new manifest does not use (the old base after a compaction)
            if fn.startswith("pack-") and fn.endswith(".bin") and fn not in used:
                os.unlink(os.path.join(self.dir, fn))
        self.saves += 1
        self.last_written = {"blocks": out.blocks, "patches": out.patches, "bytes": out.bytes,
                             "manifest_bytes": len(man_bytes), "base": base, "live_bytes": live_bytes,
                             "manifest_blocks": len(names)}

    def _write_blocks(self, state: dict[str, Any], pack: str, old_index: dict[str, list[Any]], old_names: list[str],
                      reader: PackReader | None) -> tuple[Any, list[str], dict[str, list[Any]], dict[str, int], PackWriter]:
        """Split ``state`` and write the blocks not in ``old_index`` to ``pack`` (fsynced, closed); returns
        the skeleton, the block names, the index of every block, each block's size and the pack written."""
        names: list[str] = []
        index: dict[str, list[Any]] = {}
        sizes: dict[str, int] = {}
        out = PackWriter(os.path.join(self.dir, pack), self.fsync)

        def put(i: int, part: list[Any], data: bytes) -> None:
            n = self._name(data)
            names.append(n)
            if n in sizes:  # the same block twice in one document: stored once
                return
            sizes[n] = len(data)
            if n in old_index:
                index[n] = old_index[n]
                return
            before = old_names[i] if i < len(old_names) and old_names[i] in old_index else None
            b = data if before is None or reader is None else self._patch(reader, before, data, part)
            off = out.write(b, isinstance(b, Patch))
            index[n] = [pack, off, len(b), b.base] if isinstance(b, Patch) else [pack, off, len(b)]

        try:
            skeleton = _split(state, self.min_list, self.block, put)
        finally:
            out.close()
        return skeleton, names, index, sizes, out

    def _patch(self, reader: PackReader, before: str, data: bytes, elements: list[Any]) -> bytes:
        """The bytes to store for a changed block (``data``, its ``elements``) whose predecessor is ``before``:
        a patch against the predecessor's root (itself, or the full block it patches) when that is valid
        (applying it gives exactly ``data``) and shorter, else ``data`` itself."""
        root = reader.root(before)
        old = reader.block(root)
        if len(old) != len(elements):
            return data
        changes = [[j, x] for j, (x, y) in enumerate(zip(elements, old)) if x != y]
        patch = dumps(changes)
        if len(patch) >= len(data) or apply_text(old, changes) != data:  # e.g. 1 vs 1.0: == but not the same
            return data
        return Patch(patch, root)

    def _replace(self, name: str, data: bytes) -> None:
        atomic_write(os.path.join(self.dir, name), data, self.fsync)

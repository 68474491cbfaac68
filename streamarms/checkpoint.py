"""Checkpoints: the daemon's whole state (policy, scheduler, consumed offsets) saved together.

The rule that makes a restart lose nothing and count nothing twice: the state of the scheduler and
the offsets of the records it has handled are written *in one document*, made durable, and only then
are the offsets committed to the consumer group. On restart the daemon restores the document and
seeks every partition to the offsets in it (records before them were counted already; records after
them were not), whatever the group's committed offsets say.

Stores:

* :class:`FileCheckpointStore`: a JSON file replaced atomically (write a temporary file,
  ``fsync`` it, ``rename`` it over the old one, ``fsync`` the directory), with a SHA-256 of the body so
  that a torn or edited file is refused rather than half-loaded.
* ``streamarms.connectors.kafka_checkpoint.KafkaCheckpointStore``: the same document as the latest value of a
  key in a compacted Kafka topic (durable once the broker acknowledged it with ``acks=all``).

**Integrity vs authenticity.** The SHA-256 in the header detects damage (a torn write, a stray
edit), not a forger: anyone who can write the file or topic can write a matching hash. With a secret
key -- ``$STREAMARMS_CHECKPOINT_KEY`` (the key itself) or ``$STREAMARMS_CHECKPOINT_KEY_FILE`` (a file
holding it), read by :func:`checkpoint_key` -- the header carries an HMAC-SHA256 of the body instead,
and a checkpoint is loaded only if its HMAC verifies under that key: one without an HMAC, or signed
with another key, is refused. :meth:`CheckpointStore.integrity` says which of the two is in force
(the daemon logs it at start). Either way a checkpoint never decides what code runs: the scheduler
resolves the policy class it names among the loaded policy classes only, never by importing.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> store = FileCheckpointStore(os.path.join(d, "state.json"))
>>> store.load() is None
True
>>> store.save({"offsets": {"rewards:0": [42, 1000]}})
>>> store.load()
{'offsets': {'rewards:0': [42, 1000]}}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

from .errors import StreamarmsError
from .json_lazy import NotAscii, OpenFile, load_lazy
from .json_stream import iter_json, lazy_default
from .validation import json_kind

#: what a path that is no regular file is, for the errors (a checkpoint's, an input file's)
FILE_KINDS = {stat.S_IFIFO: "a named pipe", stat.S_IFCHR: "a character device", stat.S_IFSOCK: "a socket",
              stat.S_IFDIR: "a directory", stat.S_IFBLK: "a block device"}

__all__ = ["CheckpointStore", "FileCheckpointStore", "CheckpointError", "check_blocks", "encode", "decode", "decode_parts",
           "write_encoded", "checkpoint_key", "atomic_write", "file_mark", "check_writable_directory", "KEY_ENV", "KEY_FILE_ENV"]

#: environment variables that hold the HMAC key (or the path of a file holding it)
KEY_ENV, KEY_FILE_ENV = "STREAMARMS_CHECKPOINT_KEY", "STREAMARMS_CHECKPOINT_KEY_FILE"

_MAGIC = "streamarms-checkpoint"


class CheckpointError(StreamarmsError, RuntimeError):
    """A checkpoint exists but cannot be used (corrupt, or written for another configuration)."""


def checkpoint_key(env: Any = None) -> bytes | None:
    """The HMAC key from ``$STREAMARMS_CHECKPOINT_KEY`` or the file named by
    ``$STREAMARMS_CHECKPOINT_KEY_FILE`` (trailing newline stripped), else ``None``.

    >>> checkpoint_key({"STREAMARMS_CHECKPOINT_KEY": "correct horse battery"})
    b'correct horse battery'
    >>> checkpoint_key({}) is None
    True
    """
    env = os.environ if env is None else env
    text, path = env.get(KEY_ENV), env.get(KEY_FILE_ENV)
    if text and path:
        raise ValueError(f"set {KEY_ENV} or {KEY_FILE_ENV}, not both")
    if path:
        try:
            with open(path, "rb") as f:
                key = f.read().rstrip(b"\r\n")
        except OSError as e:
            raise ValueError(f"{KEY_FILE_ENV}={path}: cannot read the checkpoint key: {e.strerror}") from None
    else:
        key = text.encode("utf-8") if text else b""
    if not key:
        return None
    if len(key) < 16:
        raise ValueError(f"the checkpoint HMAC key is {len(key)} bytes; use at least 16 (e.g. 32 random bytes)")
    return key


def _mac(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def encode(state: dict[str, Any], key: bytes | None = None) -> bytes:
    """The stored form: a header line (format, SHA-256 or, with ``key``, HMAC-SHA256, length) and the
    JSON body.

    >>> decode(encode({"a": [1, 2.5]}))
    {'a': [1, 2.5]}
    >>> k = b"0123456789abcdef"
    >>> decode(encode({"a": 1}, k), key=k)
    {'a': 1}
    >>> decode(encode({"a": 1}), key=k)
    Traceback (most recent call last):
    ...
    streamarms.checkpoint.CheckpointError: checkpoint has no HMAC but a checkpoint key is set: refused (it may be forged); move it away to start afresh
    """
    body = json.dumps(state, separators=(",", ":"), sort_keys=True, default=lazy_default).encode("utf-8")
    head: dict[str, Any] = {"format": _MAGIC, "version": 1}
    if key:
        head["hmac_sha256"] = _mac(key, body)
    else:
        head["sha256"] = hashlib.sha256(body).hexdigest()
    head["bytes"] = len(body)
    return json.dumps(head, separators=(",", ":")).encode("utf-8") + b"\n" + body


def decode(data: bytes, where: str = "checkpoint", key: bytes | None = None) -> dict[str, Any]:
    """Inverse of :func:`encode`; raises :class:`CheckpointError` on any damage (or, with ``key``, on
    a missing or wrong HMAC).

    >>> decode(encode({"a": 1})[:-2])
    Traceback (most recent call last):
    ...
    streamarms.checkpoint.CheckpointError: checkpoint is damaged: body has 5 bytes, header says 7
    """
    head, sep, body = data.partition(b"\n")
    return decode_parts(head, body, where, key)


def _check_head(head: bytes, n: int, where: str, key: bytes | None) -> tuple[Any, Any]:
    """The checks of a header line against a body of ``n`` bytes; returns a fresh hasher for the body and
    the digest it must give (:func:`_verify`)."""
    try:
        h = json.loads(head)
    except ValueError:
        raise CheckpointError(f"{where} is not a streamarms checkpoint (bad header)") from None
    if not isinstance(h, dict) or h.get("format") != _MAGIC:
        raise CheckpointError(f"{where} is not a streamarms checkpoint")
    if h.get("version") != 1:
        raise CheckpointError(f"{where} has unsupported version {h.get('version')!r}")
    if n != h.get("bytes"):
        raise CheckpointError(f"{where} is damaged: body has {n} bytes, header says {h.get('bytes')}")
    mac = h.get("hmac_sha256")
    if key:
        if not isinstance(mac, str):
            raise CheckpointError(f"{where} has no HMAC but a checkpoint key is set: refused (it may be forged); "
                                  "move it away to start afresh")
        return hmac.new(key, digestmod=hashlib.sha256), mac
    if mac is not None:
        raise CheckpointError(f"{where} is signed (HMAC) but no checkpoint key is set: set {KEY_ENV} or "
                              f"{KEY_FILE_ENV}")
    return hashlib.sha256(), h.get("sha256")


def _verify(hasher: Any, expected: Any, where: str, key: bytes | None) -> None:
    if key:
        if not hmac.compare_digest(expected, hasher.hexdigest()):
            raise CheckpointError(f"{where} fails HMAC verification (another key, or forged): refused")
    elif hasher.hexdigest() != expected:
        raise CheckpointError(f"{where} is damaged: SHA-256 mismatch")


def decode_parts(head: bytes, body: bytes, where: str = "checkpoint", key: bytes | None = None) -> dict[str, Any]:
    """:func:`decode` of a header line and a body already apart (a file read line, then rest: no copy of
    the body)."""
    hasher, expected = _check_head(head, len(body), where, key)
    hasher.update(body)
    _verify(hasher, expected, where, key)
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise CheckpointError(f"{where} is damaged: body is not JSON") from None
    if not isinstance(doc, dict):
        raise CheckpointError(f"{where} is damaged: body is not an object")
    return doc


#: the blocks of a daemon's checkpoint (:func:`~streamarms.daemon.checkpoint_document`), each a JSON object when there
BLOCKS = ("run", "scheduler", "source", "sinks")


def check_blocks(doc: Any, where: str, required: Sequence[str] = ()) -> None:
    """:class:`CheckpointError` unless ``doc`` is a JSON object whose blocks (:data:`BLOCKS`) are objects and has the
    ``required`` ones: a document with the right checksum but another shape (written by another program, or edited
    and its checksum made again) is refused by name, never met later as an attribute or a key that is not there.

    >>> check_blocks({"run": {}, "scheduler": [1, 2]}, "c.ckpt")
    Traceback (most recent call last):
    ...
    streamarms.checkpoint.CheckpointError: the checkpoint in c.ckpt is not one a streamarms daemon wrote: its 'scheduler' is a JSON array, not an object
    >>> check_blocks({"run": {}, "scheduler": {}}, "c.ckpt", required=("scheduler", "source"))
    Traceback (most recent call last):
    ...
    streamarms.checkpoint.CheckpointError: the checkpoint in c.ckpt is not one a streamarms daemon wrote: it has no 'source'
    """
    if not isinstance(doc, dict):
        raise CheckpointError(f"the checkpoint in {where} is not one a streamarms daemon wrote: {json_kind(doc)}, "
                              "not an object")
    for name in required:
        if name not in doc:
            raise CheckpointError(f"the checkpoint in {where} is not one a streamarms daemon wrote: it has no {name!r}")
    for name in BLOCKS:
        if name in doc and not isinstance(doc[name], dict):
            raise CheckpointError(f"the checkpoint in {where} is not one a streamarms daemon wrote: its {name!r} is "
                                  f"{json_kind(doc[name])}, not an object")


class CheckpointStore(ABC):
    """Where the daemon keeps its checkpoint. ``save`` returns only once the state is durable."""

    #: HMAC key (module docstring); ``None``: SHA-256 integrity only
    secret: bytes | None = None

    def integrity(self) -> str:
        """Which protection is in force, for the start-up log."""
        if self.secret:
            return "HMAC-SHA256 (integrity and authenticity: a checkpoint not signed with the key is refused)"
        return (f"SHA-256 (integrity only: detects damage, not forgery; set {KEY_ENV} or {KEY_FILE_ENV} "
                "for HMAC authenticity)")

    @abstractmethod
    def load(self) -> dict[str, Any] | None:
        """The last saved state, or ``None`` if there is none."""

    def load_streamed(self) -> dict[str, Any] | None:
        """:meth:`load` for a restore: a store may return its large arrays as
        :class:`~streamarms.json_lazy.LazyArray` (parsed as the restore iterates them). Default: :meth:`load`."""
        return self.load()

    @abstractmethod
    def save(self, state: dict[str, Any]) -> None:
        """Store ``state``; when this returns, a crash cannot lose it."""

    def saved_mark(self) -> Any:
        """What identifies the checkpoint the store holds now (for a file: :func:`file_mark`), equal to the
        mark read just after the last :meth:`save` as long as nothing changed it since; ``None`` when the
        store cannot tell. A daemon compares the two before it leaves an unchanged checkpoint unwritten
        (:mod:`streamarms.last_save`). Default: ``None`` (every checkpoint is written)."""
        return None

    def check_writable(self) -> None:
        """:class:`CheckpointError` if a :meth:`save` cannot succeed, as far as can be told without one: a run
        checks it before it reads a record, rather than fail at its first checkpoint. Default: nothing to
        check (a store that only a save can try)."""

    def describe(self) -> str:
        return type(self).__name__

    def close(self) -> None:
        pass


def check_writable_directory(directory: str, what: str) -> None:
    """:class:`CheckpointError` naming ``what`` unless a file can be created in ``directory``, or in its nearest
    existing ancestor when it does not exist yet (a save creates it); tried with a file made and removed there.

    >>> d = tempfile.mkdtemp(); check_writable_directory(os.path.join(d, "new", "dir"), "x"); os.listdir(d)
    []
    >>> open(os.path.join(d, "f"), "w").close()
    >>> check_writable_directory(os.path.join(d, "f", "sub"), "checkpoint")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamarms.checkpoint.CheckpointError: cannot write the checkpoint: .../f is not a directory
    """
    d = os.path.abspath(directory)
    while not os.path.lexists(d) and os.path.dirname(d) != d:
        d = os.path.dirname(d)
    if not os.path.isdir(d):
        raise CheckpointError(f"cannot write the {what}: {d} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".streamarms-probe-", dir=d)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise CheckpointError(f"cannot write the {what}: no file can be created in {d} ({e.strerror or e})") from None


def file_mark(path: str) -> tuple[int, int, int, int] | None:
    """A file's device, inode, size and modification time (ns), or ``None`` if it is not there: a file
    replaced (``rename``), rewritten or touched since has another mark.

    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "x"); file_mark(p) is None
    True
    >>> atomic_write(p, b"1", fsync=False); a = file_mark(p); atomic_write(p, b"1", fsync=False); a == file_mark(p)
    False
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


#: the header line of a streamed file checkpoint is padded with spaces to this width (written last, once
#: the body's hash and length are known; JSON ignores the padding, so :func:`decode` reads both forms)
_HEAD_WIDTH = 256

#: bytes read at a time when a file checkpoint is hashed before it is parsed
_BLOCK = 1 << 20


def write_encoded(f: BinaryIO, state: dict[str, Any], key: bytes | None = None, chunk: int = 10_000) -> int:
    """Write :func:`encode`'s form of ``state`` to the seekable binary file ``f`` without building it: the
    body is encoded, hashed and written a piece at a time (:func:`~streamarms.json_stream.iter_json`),
    then the header (padded to a fixed width) is written over the space kept for it. Returns the bytes
    written. Same body and hash as :func:`encode`.

    >>> import io; f = io.BytesIO(); n = write_encoded(f, {"a": [1, 2.5]})
    >>> decode(f.getvalue()), n == len(f.getvalue())
    ({'a': [1, 2.5]}, True)
    """
    h = hmac.new(key, digestmod=hashlib.sha256) if key else hashlib.sha256()
    start = f.tell()
    f.write(b" " * _HEAD_WIDTH + b"\n")
    n = 0
    for piece in iter_json(state, chunk):
        b = piece.encode("utf-8")
        h.update(b)
        f.write(b)
        n += len(b)
    head: dict[str, Any] = {"format": _MAGIC, "version": 1, "hmac_sha256" if key else "sha256": h.hexdigest(),
                            "bytes": n}
    line = json.dumps(head, separators=(",", ":")).encode("utf-8")
    assert len(line) <= _HEAD_WIDTH
    end = f.tell()
    f.seek(start)
    f.write(line.ljust(_HEAD_WIDTH))
    f.seek(end)
    return _HEAD_WIDTH + 1 + n


def atomic_write(path: str, data: bytes | Callable[[BinaryIO], Any], fsync: bool = True) -> None:
    """Write ``data`` to ``path`` all or nothing: a temporary file in the same directory, renamed over
    ``path``; with ``fsync``, the file and then its directory are flushed to disk (a crash leaves the old
    file or the new one, never a torn one). ``data`` may be a function that writes to the open file.

    >>> import tempfile; d = tempfile.mkdtemp(); atomic_write(os.path.join(d, "x"), b"1", fsync=False)
    >>> open(os.path.join(d, "x"), "rb").read()
    b'1'
    """
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if fsync:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class FileCheckpointStore(CheckpointStore):
    """Checkpoint in a local file, replaced atomically; ``fsync=False`` skips the two fsyncs (faster,
    but a power loss may then lose the last checkpoint -- never tear it: rename stays atomic).
    """

    #: :meth:`load_streamed` parses arrays longer than this an element at a time as they are iterated
    lazy_over = 10_000
    #: plain file, temp file + rename: a forked child may save (:mod:`streamarms.background_checkpoint`)
    fork_safe = True

    def __init__(self, path: str | os.PathLike[str], fsync: bool = True, secret: bytes | None = None) -> None:
        self.path = os.fspath(path)
        self.fsync = fsync
        self.secret = secret or None
        self.saves = 0

    def describe(self) -> str:
        return f"file {self.path}"

    def saved_mark(self) -> tuple[int, int, int, int] | None:
        return file_mark(self.path)

    def check_writable(self) -> None:
        if os.path.isdir(self.path):
            raise CheckpointError(f"cannot write the checkpoint file {self.path}: it is a directory (a directory of "
                                  "incremental checkpoints is dir:PATH)")
        self._check_regular()
        check_writable_directory(os.path.dirname(os.path.abspath(self.path)), f"checkpoint file {self.path}")

    def _check_regular(self) -> None:
        """:class:`CheckpointError` for a path that is there but no regular file: reading ``/dev/zero`` or a named
        pipe would never end (a checkpoint is read whole), and ``/dev/null`` is not "no checkpoint"."""
        try:
            mode = os.stat(self.path).st_mode
        except OSError:
            return  # not there (a first run), or unreadable: the open says so
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            return
        what = FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise CheckpointError(f"checkpoint file {self.path} is {what}, not a regular file: a checkpoint is a file "
                              "streamarms writes and reads back (a run without one: --checkpoint none)")

    def load(self) -> dict[str, Any] | None:
        self._check_regular()
        try:
            with open(self.path, "rb") as f:
                head = f.readline()
                body = f.read()
        except FileNotFoundError:
            return None
        return decode_parts(head.rstrip(b"\n"), body, f"checkpoint file {self.path}", self.secret)

    def load_streamed(self) -> dict[str, Any] | None:
        """:meth:`load` that never holds the body, nor its whole object tree (issue 13: a restart at 1e6
        keys within 1 GB): the body is hashed a block at a time, then parsed by
        :func:`~streamarms.json_lazy.load_lazy` from the same open file (its arrays of more than
        :attr:`lazy_over` elements parsed again, an element at a time, as the restore iterates them).
        Same document, same errors as :meth:`load`; a body that is not ASCII (no writer of ours makes
        one) is read by :meth:`load`.
        """
        self._check_regular()
        try:
            src = OpenFile(self.path)
        except FileNotFoundError:
            return None
        where = f"checkpoint file {self.path}"
        first = os.pread(src.fd, 1 << 16, 0)
        nl = first.find(b"\n")
        if nl < 0:  # a header line this long is not ours: the ordinary path says why
            return self.load()
        start = nl + 1
        hasher, expected = _check_head(first[:nl], src.size - start, where, self.secret)
        for at in range(start, src.size, _BLOCK):
            hasher.update(os.pread(src.fd, min(_BLOCK, src.size - at), at))
        _verify(hasher, expected, where, self.secret)
        try:
            doc = load_lazy(src, start, src.size, big=self.lazy_over)
        except NotAscii:
            return self.load()
        except (ValueError, RecursionError):
            raise CheckpointError(f"{where} is damaged: body is not JSON") from None
        if not isinstance(doc, dict):
            raise CheckpointError(f"{where} is damaged: body is not an object")
        return doc

    def save(self, state: dict[str, Any]) -> None:
        """Streamed (:func:`write_encoded`): the document is never held as one string."""
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        atomic_write(self.path, lambda f: write_encoded(f, state, self.secret), self.fsync)
        self.saves += 1

"""Checkpoints: the daemon's whole state (policy, scheduler, consumed offsets) saved together.

The rule that makes a restart lose nothing and count nothing twice: the state of the scheduler and
the offsets of the records it has handled are written *in one document*, made durable, and only then
are the offsets committed to the consumer group. On restart the daemon restores the document and
seeks every partition to the offsets in it (records before them were counted already; records after
them were not), whatever the group's committed offsets say.

Stores:

* :class:`FileCheckpointStore` (default): a JSON file replaced atomically (write a temporary file,
  ``fsync`` it, ``rename`` it over the old one, ``fsync`` the directory), with a SHA-256 of the body so
  that a torn or edited file is refused rather than half-loaded.
* ``streamarms.connectors.kafka.KafkaCheckpointStore``: the same document as the latest value of a
  key in a compacted Kafka topic (durable once the broker acknowledged it with ``acks=all``).

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
import json
import os
from abc import ABC, abstractmethod
from typing import Any

from .errors import StreamarmsError

__all__ = ["CheckpointStore", "FileCheckpointStore", "CheckpointError", "encode", "decode"]

_MAGIC = "streamarms-checkpoint"


class CheckpointError(StreamarmsError, RuntimeError):
    """A checkpoint exists but cannot be used (corrupt, or written for another configuration)."""


def encode(state: dict[str, Any]) -> bytes:
    """The stored form: a header line (format, SHA-256, length) and the JSON body.

    >>> decode(encode({"a": [1, 2.5]}))
    {'a': [1, 2.5]}
    """
    body = json.dumps(state, separators=(",", ":"), sort_keys=True).encode("utf-8")
    header = json.dumps({"format": _MAGIC, "version": 1, "sha256": hashlib.sha256(body).hexdigest(),
                         "bytes": len(body)}, separators=(",", ":")).encode("utf-8")
    return header + b"\n" + body


def decode(data: bytes, where: str = "checkpoint") -> dict[str, Any]:
    """Inverse of :func:`encode`; raises :class:`CheckpointError` on any damage.

    >>> decode(encode({"a": 1})[:-2])
    Traceback (most recent call last):
    ...
    streamarms.checkpoint.CheckpointError: checkpoint is damaged: body has 5 bytes, header says 7
    """
    head, sep, body = data.partition(b"\n")
    try:
        h = json.loads(head)
    except ValueError:
        raise CheckpointError(f"{where} is not a streamarms checkpoint (bad header)") from None
    if not isinstance(h, dict) or h.get("format") != _MAGIC:
        raise CheckpointError(f"{where} is not a streamarms checkpoint")
    if h.get("version") != 1:
        raise CheckpointError(f"{where} has unsupported version {h.get('version')!r}")
    if len(body) != h.get("bytes"):
        raise CheckpointError(f"{where} is damaged: body has {len(body)} bytes, header says {h.get('bytes')}")
    if hashlib.sha256(body).hexdigest() != h.get("sha256"):
        raise CheckpointError(f"{where} is damaged: SHA-256 mismatch")
    return json.loads(body)


class CheckpointStore(ABC):
    """Where the daemon keeps its checkpoint. ``save`` returns only once the state is durable."""

    @abstractmethod
    def load(self) -> dict[str, Any] | None:
        """The last saved state, or ``None`` if there is none."""

    @abstractmethod
    def save(self, state: dict[str, Any]) -> None:
        """Store ``state``; when this returns, a crash cannot lose it."""

    def describe(self) -> str:
        return type(self).__name__

    def close(self) -> None:
        pass


class FileCheckpointStore(CheckpointStore):
    """Checkpoint in a local file, replaced atomically; ``fsync=False`` skips the two fsyncs (faster,
    but a power loss may then lose the last checkpoint -- never tear it: rename stays atomic).
    """

    def __init__(self, path: str | os.PathLike[str], fsync: bool = True) -> None:
        self.path = os.fspath(path)
        self.fsync = fsync
        self.saves = 0

    def describe(self) -> str:
        return f"file {self.path}"

    def load(self) -> dict[str, Any] | None:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        return decode(data, f"checkpoint file {self.path}")

    def save(self, state: dict[str, Any]) -> None:
        data = encode(state)
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        tmp = f"{self.path}.tmp-{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                if self.fsync:
                    os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        if self.fsync:
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.saves += 1

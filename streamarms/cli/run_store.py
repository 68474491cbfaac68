"""Where ``streamarms run`` keeps its checkpoint (``--checkpoint``: a file, ``dir:PATH``, ``kafka:TOPIC``, ``auto`` or
``none``; :func:`checkpoint_store`), checked writable before a record is read, and which daemon saves it
(:func:`daemon_class`: a file store from a forked child, so the loop does not stall).

>>> import os, tempfile
>>> from streamarms.cli.settings import RunSettings
>>> checkpoint_store(RunSettings(checkpoint="none"), None) is None
True
"""

from __future__ import annotations

import os
from typing import Any

from ..checkpoint import CheckpointStore, FileCheckpointStore, checkpoint_key
from ..daemon import Daemon
from ..errors import ConfigError
from .group import member_name
from .settings import RunSettings

__all__ = ["checkpoint_store", "daemon_class", "DEFAULT_CHECKPOINT_TOPIC"]

#: the compacted topic that holds the checkpoints (key: the group) when a broker is configured
DEFAULT_CHECKPOINT_TOPIC = "streamarms-checkpoints"


def checkpoint_store(s: RunSettings, kafka_cfg: dict[str, Any] | None, pool: Any = None) -> CheckpointStore | None:
    """The store ``--checkpoint`` names (``None``: none); a file or a directory is checked writable now, before
    a record is read (a run that cannot checkpoint would fail at its first save, or lose its work at exit)."""
    spec = s.checkpoint
    if spec in (None, "none", False):
        return None
    kind, _, where = spec.partition(":") if spec.startswith(("dir:", "kafka:")) else ("", "", spec)
    if not where.strip():  # '' meant no checkpoint, 'dir:' failed at the first save
        raise ConfigError(f"--checkpoint {spec!r} names no " + {"dir": "directory (dir:PATH)", "kafka": "topic (kafka:TOPIC)"}
                          .get(kind, "checkpoint: give PATH, dir:PATH or kafka:TOPIC, or none to run without one"))
    try:
        secret = checkpoint_key()
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if spec == "auto":
        if kafka_cfg is None:
            return None
        # with a broker, the checkpoint lives next to the data: a container restart does not lose it, and
        # (with the cluster id it records) another cluster cannot pick it up by sharing a group name
        spec = f"kafka:{DEFAULT_CHECKPOINT_TOPIC}"
    if isinstance(spec, str) and spec.startswith("kafka:"):
        if kafka_cfg is None:
            raise ConfigError("--checkpoint kafka:TOPIC needs --bootstrap-servers")
        from streamarms.connectors.kafka_checkpoint import KafkaCheckpointStore
        key = f"{s.group_id}/{member_name(s)}" if s.group_threshold else s.group_id  # a member's own state
        return KafkaCheckpointStore(kafka_cfg, spec[len("kafka:"):], key=key, secret=secret, pool=pool)
    if pool is not None:
        raise ConfigError("--exactly-once needs the checkpoint in Kafka (--checkpoint kafka:TOPIC or auto): a file "
                          "cannot join the transaction")
    if isinstance(spec, str) and spec.startswith("dir:"):
        from ..chunked_checkpoint import ChunkedCheckpointStore
        store: CheckpointStore = ChunkedCheckpointStore(spec[len("dir:"):], fsync=bool(s.fsync), secret=secret)
    else:
        store = FileCheckpointStore(spec, fsync=bool(s.fsync), secret=secret)
    store.check_writable()
    return store


def daemon_class(store: CheckpointStore | None, transaction: Any) -> type[Daemon]:
    """File stores (a file or ``dir:``) checkpoint from a forked child (issue 13: no loop stall with many keys;
    a full file checkpoint of a million keys takes seconds to build and write)."""
    if getattr(store, "fork_safe", False) and transaction is None and hasattr(os, "fork"):
        from ..background_checkpoint import BackgroundCheckpointDaemon
        return BackgroundCheckpointDaemon
    return Daemon

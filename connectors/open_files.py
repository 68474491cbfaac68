"""Room for many open files: a replay of ``--rewards-file 'logs/*.jsonl'`` holds every match open at once.

Files are merged like a topic's partitions (:class:`~streamarms.connectors.ordering.PartitionMerger`: by time,
each file read where it is), so each one stays open while the replay runs. A year of hourly files is thousands
of them, past the 1,024 open files a process may have by default on most systems (the *soft* limit), and the run
could not start (``OSError: [Errno 24] Too many open files``). :func:`room_for` raises the soft limit up to the
*hard* one, which a process may do by itself (as the Go runtime does for every program), and says what to do when
even that is too few.

>>> room_for(10)   # a few files: nothing to change
"""

from __future__ import annotations

import logging

from streamarms.errors import ConfigError

__all__ = ["room_for", "SPARE"]

log = logging.getLogger("streamarms.files")

#: open files kept for everything else a run opens: sinks, the checkpoint, sockets, the metrics server, imports
SPARE = 256


def room_for(files: int) -> None:
    """Make sure this process may hold ``files`` files open beside :data:`SPARE` others: raise the soft limit of open
    files when it is lower (up to the hard limit); a :class:`ConfigError` naming both numbers when the hard limit is
    too low too. No-op where the platform has no such limits (Windows)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return
    need = files + SPARE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        raise ConfigError(f"{files:,} files are read at once (each stays open: they are merged by time), and this "
                          f"process may open {hard:,} files at most (ulimit -Hn): raise that limit, or join the "
                          f"files into fewer (they are merged by their records' times; cat keeps each file's order)")
    target = 4 * need if hard == resource.RLIM_INFINITY else min(hard, 4 * need)  # (room to spare: rotations, sinks)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as e:
        raise ConfigError(f"{files:,} files are read at once (each stays open), and the limit of open files ({soft:,}, "
                          f"ulimit -n) could not be raised ({e}): raise it, or join the files into fewer") from e
    log.info("%d files to read at once: the limit of open files raised from %d to %d", files, soft,
             resource.getrlimit(resource.RLIMIT_NOFILE)[0])

"""``--rewards-file`` patterns (and ``streamarms inspect``'s files): :func:`expand_files`."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ConfigError

__all__ = ["expand_files"]

_GLOB = frozenset("*?[")


def expand_files(paths: Sequence[str]) -> list[str]:
    """``--rewards-file`` as given, its patterns expanded: a path that is no file but holds ``*``, ``?`` or ``[``
    is a glob pattern (quoted on the command line, or in the TOML file, which no shell expands), every match read
    (sorted by name; a match already named is not added again). A pattern that matches nothing, or a directory, is a
    :class:`ConfigError` that says what to give.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); _ = [open(os.path.join(d, n), "w").close() for n in ("b.jsonl", "a.jsonl", "x.csv")]
    >>> [os.path.basename(p) for p in expand_files([os.path.join(d, "a.jsonl"), os.path.join(d, "*.jsonl")])]
    ['a.jsonl', 'b.jsonl']
    >>> expand_files([os.path.join(d, "*.log")])
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: no file matches .../*.log
    >>> expand_files([d])
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: ... is a directory: name its files, e.g. '.../*.jsonl' (quoted, the pattern is expanded by streamarms: every match is read)
    """
    import glob
    import os

    out: list[str] = []
    for p in paths:
        if p != "-" and os.path.isdir(p):
            raise ConfigError(f"{p} is a directory: name its files, e.g. '{os.path.join(p, '*.jsonl')}' (quoted, "
                              "the pattern is expanded by streamarms: every match is read)")
        if p == "-" or os.path.lexists(p) or not _GLOB & set(p):
            out.append(p)  # (as given: a path given twice is for the run's own checks to refuse)
            continue
        matches = sorted(m for m in glob.glob(p) if not os.path.isdir(m))
        if not matches:
            raise ConfigError(f"no file matches {p}")
        out.extend(m for m in matches if m not in out)
    return out

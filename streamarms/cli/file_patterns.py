"""``--rewards-file`` patterns (and ``streamarms inspect``'s files): :func:`expand_files`."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ConfigError

__all__ = ["expand_files", "patterns_of"]

_GLOB = frozenset("*?[")


def _refuse_compressed(pattern: str, matches: Sequence[str]) -> None:
    """A pattern that matches files in a compressed format streamarms cannot read (zstd; gzip, bzip2 and xz are read
    as they are) is one error naming them and the pipe that reads them all, not the error of the first one read."""
    from streamarms.connectors.compressed_lines import DECOMPRESSORS
    from streamarms.connectors.file_kinds import compressed_file

    packed = [(m, kind) for m in matches if (kind := compressed_file(m)) is not None and kind[0] not in DECOMPRESSORS]
    if packed:
        cats = sorted({cat for _, (_, cat) in packed})
        names = ", ".join(m for m, _ in packed[:3]) + (f" and {len(packed) - 3} more" if len(packed) > 3 else "")
        pipe = (f"{cats[0]} -f {pattern} | streamarms run --rewards-file - ..." if len(cats) == 1
                else "decompress them into the run on standard input")
        raise ConfigError(f"{pattern} matches {len(packed)} {packed[0][1][0]}-compressed file"
                          f"{'s' if len(packed) > 1 else ''} ({names}), which streamarms cannot decompress (gzip, bzip2 "
                          f"and xz files are read as they are): name the others (a narrower pattern), or read them "
                          f"all on standard input ({pipe}; without a checkpoint: a pipe is not read twice)")


def _is_pattern(p: str) -> bool:
    import os

    return p != "-" and not os.path.lexists(p) and bool(_GLOB & set(p))


def patterns_of(paths: Sequence[str]) -> list[str]:
    """The entries of ``--rewards-file`` that :func:`expand_files` expands (a followed run looks for new matches).

    >>> patterns_of(["-", "logs/app-*.log", "no/such/file.jsonl"])
    ['logs/app-*.log']
    """
    return [p for p in paths if _is_pattern(p)]


def files_within(folder: str, most: int = 2000) -> str:
    """The pattern of the files most of the folder holds (up to 4 levels down, the first ``most`` entries; a rotation,
    ``app.log.1`` or ``.gz``, is not counted): ``folder/*/*/*.log`` of Kubernetes' ``/var/log/pods``; else
    ``folder/*.jsonl``.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> for pod in ("ns_a_1", "ns_b_2"):
    ...     os.makedirs(os.path.join(d, pod, "app")); _ = [open(os.path.join(d, pod, "app", n), "w").close()
    ...                                                  for n in ("0.log", "0.log.20261130-100000.gz")]
    >>> files_within(d)[len(d):], files_within(os.path.join(d, "ns_a_1", "app"))[-6:]
    ('/*/*/*.log', '/*.log')
    >>> files_within(tempfile.mkdtemp())[-8:]
    '/*.jsonl'
    """
    import os
    from collections import Counter

    from streamarms.connectors.file_kinds import PACKED_SUFFIXES

    kinds: Counter[tuple[int, str]] = Counter()
    seen = 0
    for top, dirs, names in os.walk(folder):
        below = os.path.relpath(top, folder)
        depth = 0 if below == os.curdir else below.count(os.sep) + 1
        if depth >= 3:
            dirs.clear()
        for name in names:
            ext = os.path.splitext(name)[1]
            if ext and not _rotation(name) and not name.endswith(PACKED_SUFFIXES):
                kinds[(depth, ext)] += 1
        seen += len(names) + len(dirs)
        if seen >= most:
            break
    if not kinds:
        return os.path.join(folder, "*.jsonl")
    (depth, ext), _ = kinds.most_common(1)[0]
    return os.path.join(folder, *(["*"] * depth), "*" + ext)


def _rotation(name: str) -> bool:
    """Whether a file's name is a rotation's (a digit after its last dot or dash: ``app.log.1``, ``0.log.20261130``)."""
    last = name.rsplit(".", 1)[-1]
    return last[:1].isdigit()


def expand_files(paths: Sequence[str], waiting: bool = False) -> list[str]:
    """``--rewards-file`` as given, its patterns expanded: a path that is no file but holds ``*``, ``?`` or ``[``
    is a glob pattern (quoted on the command line, or in the TOML file, which no shell expands), every match read
    (sorted by name; a match already named is not added again). A file that is not there, a pattern that matches
    nothing, or a directory, is a
    :class:`ConfigError` that says what to give -- unless ``waiting`` (``--follow``: the files a pattern names are
    read as they appear), when it is a warning.

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
    >>> expand_files(["no-such.jsonl"])
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: --rewards-file no-such.jsonl: no such file (a --follow run waits for a file given by name)
    """
    import glob
    import os

    out: list[str] = []
    for p in paths:
        if p != "-" and os.path.isdir(p):
            raise ConfigError(f"{p} is a directory: name its files, e.g. '{files_within(p)}' (quoted, "
                              "the pattern is expanded by streamarms: every match is read)")
        if not _is_pattern(p):
            if p != "-" and not waiting and not os.path.lexists(p):
                raise ConfigError(f"--rewards-file {p}: no such file (a --follow run waits for a file given by name)")
            out.append(p)  # (as given: a path given twice is for the run's own checks to refuse)
            continue
        matches = sorted(m for m in glob.glob(p) if not os.path.isdir(m))
        if not matches and waiting:
            import logging
            logging.getLogger("streamarms.files").warning(
                "no file matches %s yet: following, each file that comes to match it is read as it appears", p)
        elif not matches:
            raise ConfigError(f"no file matches {p}")
        _refuse_compressed(p, matches)
        named = set(out)  # (a year of hourly files: a set, not a scan of the list per match)
        out.extend(m for m in matches if m not in named)
    from streamarms.connectors.file_watch import one_name_per_file

    return one_name_per_file(out)

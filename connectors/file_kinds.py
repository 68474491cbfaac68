"""What a file's first bytes say it is: compressed, and what decompresses it (:func:`compressed`); a format of records
that is no lines of text -- a workbook, a Parquet, Avro or SQLite file, an archive -- and what makes lines of it
(:func:`binary_format`, and :func:`piped_binary` for standard input); inside a compressed file, either of them
(:func:`what_binary`: a ``.parquet.gz``). One place for the readers of files and of pipes, and for ``inspect``; the
bytes themselves are :mod:`~streamarms.connectors.magics`'.

>>> compressed(b"\\x1f\\x8b\\x08\\x00"), what_binary(b"PAR1\\x15\\x04"), binary_format("a.jsonl", b'{"arm": "a"}')
(('gzip', 'zcat'), 'a Parquet file', None)
"""

from __future__ import annotations

import os

from .magics import COMPRESSED, PARQUET, ZIP
from .text_encoding import marked, refuse_followed_marked, utf16_unmarked

__all__ = ["compressed", "compressed_file", "binary_format", "piped_binary", "what_binary", "BINARY_HEADS",
           "PACKED_SUFFIXES"]

#: the names of compressed files (a rotation ``F.1.gz`` while ``F.1`` is still there is being compressed)
PACKED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


def compressed(head: bytes) -> tuple[str, str] | None:
    """``(format, decompressor)`` when a file starting with ``head`` is compressed, else ``None``.

    >>> compressed(b"\\x1f\\x8b\\x08\\x00"), compressed(b'{"arm": "a"}')
    (('gzip', 'zcat'), None)
    """
    for magic, kind, cat in COMPRESSED:
        if head.startswith(magic):
            return kind, cat
    return None


#: the first bytes of files of records that are not lines of text, what each is, and how to make lines of it: a
#: workbook or a Parquet file given by mistake was one long incomplete line, and the run said its input was empty
_BINARY = ((ZIP, "a zip archive (an Excel workbook, .xlsx, is one: replayed, not followed, a workbook is "
                           "read as its sheet's table)",
            "give a zipped log's lines on standard input: unzip -p {path} | streamarms run --rewards-file - ..."),
           (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an Excel 97-2003 workbook (.xls)", "save the sheet as CSV"),
           (PARQUET, "a Parquet file (replayed, not followed, it is read as a table of its rows)",
            "write its rows as CSV lines first, e.g. duckdb -c \"COPY (FROM '{path}') TO '{path}.csv'\""),
           (b"Obj\x01", "an Avro container file", "write its records as JSON lines first: avro-tools tojson {path}"),
           (b"SQLite format 3\x00", "an SQLite database",
            "export a table as CSV: sqlite3 -header -csv {path} 'select * from TABLE' > TABLE.csv"),
           (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract it first (7z x {path})"),
           (b"Rar!\x1a\x07", "a RAR archive", "extract it first"),
           (b"%PDF-", "a PDF document", "export its table as CSV"),
           (b"\x7fELF", "a program (an ELF executable or library)", "give the file the events are written to"),
           (b"\x89PNG\r\n\x1a\n", "a PNG image", "give the file the events are written to"),
           (b"\xff\xd8\xff", "a JPEG image", "give the file the events are written to"))


def binary_format(path: str, head: bytes) -> str | None:
    """What the file at ``path`` is when its first bytes ``head`` are those of a format of records that is not lines
    of text (a workbook, a Parquet or Avro file, an archive) or of text this reader cannot read as lines (UTF-16), with
    what makes lines of it; else ``None``. A workbook and UTF-16 text with its mark are read when replayed
    (:mod:`~streamarms.connectors.compressed_lines`), never followed.

    >>> print(binary_format("book.xlsx", b"PK\\x03\\x04\\x14\\x00")[:60])
    book.xlsx is a zip archive (an Excel workbook, .xlsx, is one
    >>> binary_format("a.jsonl", b'{"arm": "a"}') is None
    True
    """
    if (found := _binary(head)) is not None:
        what, how = found
        return f"{path} is {what}, not lines of text: {how.format(path=path)}"
    if codec := marked(head):  # (read as its text when replayed: compressed_lines.open_lines; never followed)
        return str(refuse_followed_marked(path, codec))
    return utf16_unmarked(path, head)


#: the first bytes of every format :data:`_BINARY` names
BINARY_HEADS = tuple(magic for magic, _, _ in _BINARY)


def piped_binary(head: bytes) -> str | None:
    """The error of standard input whose first bytes ``head`` are those of a format of records that is not lines of
    text (:func:`binary_format`'s), else ``None``: its records were read as lines, every one a dead letter.

    >>> print(piped_binary(b"PAR1\\x15\\x04")[:73])
    standard input is a Parquet file, not lines of text: give the file itself
    """
    if _binary(head) is None:
        return None
    return (f"standard input is {what_binary(head)}, not lines of text: give the file itself as --rewards-file "
            "(a workbook's sheet and a Parquet file's rows are read as tables; a pipe cannot be read again, which they "
            "need), or write its records as lines into the run")


def what_binary(head: bytes) -> str | None:
    """What a file is whose first bytes ``head`` are no text: a format :data:`_BINARY` names or a compressed file
    (inside a compressed file: a ``.parquet.gz``, a ``.gz.gz``), else ``None``. Read as lines, its bytes would be a
    header of one odd column and rows of garbage.

    >>> what_binary(b"PAR1\\x15\\x04"), what_binary(b"\\x1f\\x8b\\x08"), what_binary(b'{"arm": "a"}')
    ('a Parquet file', 'a gzip file', None)
    """
    if (found := _binary(head)) is not None:
        return found[0].split(" (")[0]
    return None if (packed := compressed(head)) is None else f"a {packed[0]} file"


def _binary(head: bytes) -> tuple[str, str] | None:
    """What a file starting with ``head`` is and how to make lines of it, when :data:`_BINARY` names its format."""
    return next(((what, how) for magic, what, how in _BINARY if head.startswith(magic)), None)


def compressed_file(path: str) -> tuple[str, str] | None:
    """:func:`compressed` of the regular file at ``path`` (its first bytes); ``None`` also for a path that is no
    regular file or cannot be read (its reader says what is wrong with it; a named pipe is not opened: that would
    wait for a writer).

    >>> compressed_file("/nonexistent") is None
    True
    """
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return compressed(f.read(6))
    except OSError:
        return None

"""The first bytes that say a file is no plain text: compressed (and which program decompresses it to standard
output), a zip archive (an Excel workbook is one) or a Parquet file. One table for the readers that open such files,
the encoding advice that must not name a code page for such bytes, and ``inspect``.

>>> [kind for _, kind, _ in COMPRESSED], ZIP in BINARY, PARQUET in BINARY, set(MAGICS) < set(BINARY)
(['gzip', 'bzip2', 'xz', 'zstd'], True, True, True)
"""

from __future__ import annotations

__all__ = ["COMPRESSED", "MAGICS", "ZIP", "PARQUET", "BINARY"]

#: the magic bytes of compressed files, their format, and what decompresses them to standard output (a compressed
#: log read as text would be one long run of not_json dead letters)
COMPRESSED = ((b"\x1f\x8b", "gzip", "zcat"), (b"BZh", "bzip2", "bzcat"), (b"\xfd7zXZ\x00", "xz", "xzcat"),
              (b"\x28\xb5\x2f\xfd", "zstd", "zstdcat"))
#: the magic bytes of every compressed format
MAGICS = tuple(magic for magic, _, _ in COMPRESSED)
#: the first bytes of a zip archive (a workbook, ``.xlsx``)
ZIP = b"PK\x03\x04"
#: the first bytes of a Parquet file (its last four too)
PARQUET = b"PAR1"
#: the first bytes of files that are no text to name an encoding of: compressed (a file cut short or damaged, which
#: no decompressor read, is still no text), zip archives and Parquet files
BINARY = (*MAGICS, ZIP, PARQUET)

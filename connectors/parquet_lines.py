"""Parquet files as tables: a ``.parquet`` file given as ``--rewards-file`` is read as the CSV of its rows.

Event data at rest is Parquet far more often than CSV: a warehouse's export (BigQuery, Snowflake, Athena), a Spark
or pandas job's output. Such a file was refused ("write its rows as CSV first"). :class:`ParquetStream` gives its rows
as the lines of a CSV table, UTF-8 bytes, to :class:`~streamarms.connectors.compressed_lines.CompressedLineReader`,
which reads them as it reads a decompressed file -- as a workbook's sheet is read
(:mod:`~streamarms.connectors.workbook_lines`): the first line is the header (the schema's column names), a
checkpoint's position is in those bytes, and a restart reads the file again up to it. A cell is written as ``run``
reads a table's cell: a number as its digits, ``true``/``false``, a timestamp in ISO 8601 (``2026-11-30
10:00:00.123``: read as UTC by ``--timestamp-field``, or with its ``Z``), empty for null; a line break inside a
text is a space (a table is read a line a row); a list, a struct or a map as its JSON text.

pyarrow reads the file (``pip install 'streamarms[parquet]'``; a row group at a time, in batches of
:attr:`ParquetStream.BATCH` rows: a file of a hundred million rows is not held whole); without it a Parquet file is
refused naming that command. A Parquet file is final: ``--follow`` refuses it, as it does a workbook.

>>> import io, datetime as dt, pyarrow as pa, pyarrow.parquet as pq
>>> table = pa.table({"worker": ["w1", "w2"], "wrong": [1, None], "note": ["late\\nagain", None],
...                   "at": pa.array([dt.datetime(2026, 11, 30, 10), None], pa.timestamp("ms"))})
>>> raw = io.BytesIO(); pq.write_table(table, raw); _ = raw.seek(0)
>>> print(ParquetStream(raw).read(1000).decode())
"worker","wrong","note","at"
"w1",1,"late again",2026-11-30 10:00:00.000
"w2",,,
<BLANKLINE>
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import IO, Any

from streamarms.errors import ConfigError

from .made_stream import MadeStream, reader_module

__all__ = ["ParquetStream", "PARQUET_SUFFIXES"]

#: the names of the Parquet files read as tables (by their content: a file that starts with ``PAR1``)
PARQUET_SUFFIXES = (".parquet", ".pq")


class ParquetStream(MadeStream):
    """The rows of the Parquet file ``raw`` (open for reading in binary, seekable: the schema is at its end) as CSV
    lines in UTF-8 (:class:`~streamarms.connectors.made_stream.MadeStream`: read as a decompressed file is; module
    docstring). A file pyarrow cannot open is a ``ConfigError``; one damaged in a later row group an ``OSError``
    there (read as a compressed file cut short: the rows before it are read)."""

    #: rows converted at a time
    BATCH = 16_384

    def __init__(self, raw: IO[bytes]) -> None:
        for part in ("pyarrow.parquet", "pyarrow.csv", "pyarrow.compute", "pyarrow"):  # (the parts used: imported)
            self._pa = reader_module(part, raw, "a Parquet file", "parquet", "write its rows as CSV first")
        super().__init__(raw)

    def _start(self) -> None:
        pa = self._pa
        try:
            self._file = pa.parquet.ParquetFile(self._raw)
        except Exception as e:  # (a damaged file, another format: pyarrow's own errors)
            raise ConfigError(f"{self.name or 'the file'} cannot be read as a Parquet file ({e}): a damaged file, or "
                              "another format that starts with the same bytes") from e
        self._batches: Iterator[Any] = self._file.iter_batches(batch_size=self.BATCH)
        self._header = True
        self._done = False

    def _more(self) -> bytes | None:
        """The CSV lines of the next :attr:`BATCH` rows (the header before the first; ``None`` after the last)."""
        if self._done:
            return None
        try:
            batch = next(self._batches, None)
            if batch is None:
                self._done = True
                if not self._header:
                    return None
                schema = self._file.schema_arrow  # (no rows: the header alone)
                batch = self._pa.RecordBatch.from_arrays([self._pa.array([], f.type) for f in schema], schema=schema)
            out = io.BytesIO()
            self._pa.csv.write_csv(self._plain(batch), out, self._pa.csv.WriteOptions(include_header=self._header))
        except Exception as e:  # (a damaged row group: pyarrow's own errors)
            raise OSError(f"its rows are damaged ({type(e).__name__}: {e})") from e  # (read as a compressed file cut)
        self._header = False
        return out.getvalue()

    def _plain(self, batch: Any) -> Any:
        """``batch`` with every column a CSV writer takes: bytes as their UTF-8 text, a list, struct or map as its JSON
        text, a text's line breaks made spaces."""
        pa, types = self._pa, self._pa.types
        columns = []
        for column in batch.columns:
            t = column.type
            if types.is_dictionary(t):
                column, t = column.dictionary_decode(), t.value_type
            if types.is_binary(t) or types.is_large_binary(t) or types.is_fixed_size_binary(t):
                column, t = pa.array([None if v is None else _text(v) for v in column.to_pylist()], pa.string()), pa.string()
            elif types.is_nested(t):
                column = pa.array([None if v is None else json.dumps(v, default=_text, ensure_ascii=False)
                                   for v in column.to_pylist()], pa.string())
            if types.is_string(t) or types.is_large_string(t):
                column = pa.compute.replace_substring_regex(column, "\r\n|\r|\n", " ")
            columns.append(column)
        return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _text(v: Any) -> str:
    """Bytes as their UTF-8 text (a byte that is none: U+FFFD), or a value JSON has no type for (a date inside a
    list) as text."""
    return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else str(v)

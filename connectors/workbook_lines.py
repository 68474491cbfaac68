"""Excel workbooks as tables: an ``.xlsx`` (``.xlsm``) given as ``--rewards-file`` is read as the CSV of its sheet.

Labelling tools, survey and QA exports, and people's own spreadsheets are workbooks far more often than CSV files;
a workbook was refused ("save the sheet as CSV"). :class:`WorkbookStream` gives the rows of one sheet -- the one
``--sheet`` names, else the active one (open when the workbook was saved: the first, unless another was; a workbook
of several sheets says which it reads, :func:`sheet_note`) -- as the lines of a CSV table, UTF-8 bytes, to
:class:`~streamarms.connectors.compressed_lines.CompressedLineReader`, which reads them as it reads a decompressed
file: its first row is the header (:class:`~streamarms.connectors.csv_lines.CsvTable`), a checkpoint's position is
in those bytes, and a restart reads the sheet again up to it. A cell is written as ``run`` reads a table's cell: a
number as its digits (``0.25``; a whole number without ``.0``), ``true``/``false``, a date and time in ISO 8601
(``2026-11-30T10:00:00``: read as UTC by ``--timestamp-field``), empty for none; a line break inside a cell is a
space (a table is read a line a row). A formula's value is the one Excel saved with the workbook. A wholly empty
row is a blank line (no record).

openpyxl reads the workbook (``pip install 'streamarms[excel]'``; read-only, row by row: a sheet of a million rows
is not held whole); without it a workbook is refused naming that command. A workbook is final: ``--follow`` refuses
it, as it does a compressed file.

>>> import io, openpyxl
>>> book = openpyxl.Workbook(); sheet = book.active
>>> for row in (["worker", "wrong", "note"], ["w1", 1, "late\\nagain"], [None, None, None], ["w2", 0.5, None]):
...     sheet.append(row)
>>> raw = io.BytesIO(); book.save(raw); _ = raw.seek(0)
>>> WorkbookStream(raw).read(100)
b'worker,wrong,note\\nw1,1,late again\\n\\nw2,0.5,\\n'
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import zipfile
from collections.abc import Sequence
from typing import IO, Any

from streamarms.errors import ConfigError

from .made_stream import MadeStream, reader_module
from .magics import ZIP

__all__ = ["WorkbookStream", "is_workbook", "workbook_given", "sheet_names", "sheet_note", "sheet_notes",
           "WORKBOOK_SUFFIXES"]

#: the names of the workbooks read as tables (by their content: a zip holding ``xl/workbook.xml``)
WORKBOOK_SUFFIXES = (".xlsx", ".xlsm")


def is_workbook(path: str) -> bool:
    """Whether the file at ``path`` is an Office Open XML workbook (a zip holding ``xl/workbook.xml``); not a named
    pipe or a device (opening a pipe would wait for its writer)."""
    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as f:
            if f.read(4) != ZIP:
                return False
        with zipfile.ZipFile(path) as z:
            return "xl/workbook.xml" in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def workbook_given(path: str) -> bool:
    """Whether ``path`` is a workbook by its name (``.xlsx``, ``.xlsm``) or by its content (:func:`is_workbook`)."""
    return path.lower().endswith(WORKBOOK_SUFFIXES) or is_workbook(path)


def sheet_names(path: str) -> tuple[list[str], str | None]:
    """The names of the sheets of the workbook at ``path`` in their tabs' order, and the active one's (``[], None``:
    none there, or damaged), from its ``xl/workbook.xml`` alone (openpyxl would read its shared strings first).

    >>> import openpyxl, os, tempfile
    >>> book = openpyxl.Workbook(); book.active.title = "About"; _ = book.create_sheet("Results"); book.active = 1
    >>> p = os.path.join(tempfile.mkdtemp(), "qa.xlsx"); book.save(p); sheet_names(p)
    (['About', 'Results'], 'Results')
    """
    import xml.etree.ElementTree as ET

    try:
        with zipfile.ZipFile(path) as z:
            root = ET.fromstring(z.read("xl/workbook.xml"))
    except (OSError, KeyError, zipfile.BadZipFile, ET.ParseError, RuntimeError):  # (its reader says what is wrong)
        return [], None
    names = [e.get("name") or "" for e in root.iter() if e.tag.rpartition("}")[2] == "sheet"]
    view = next((e for e in root.iter() if e.tag.rpartition("}")[2] == "workbookView"), None)
    tab = view.get("activeTab", "0") if view is not None else "0"
    active = int(tab) if tab.isdigit() and int(tab) < len(names) else 0
    return names, names[active] if names else None


def sheet_note(path: str, sheet: str | None) -> str:
    """Which sheet of the workbook at ``path`` is read, when it has several (``sheet``: ``--sheet``'s, else the active
    one); ``""`` for a workbook of one sheet or a file that is none.

    >>> import openpyxl, os, tempfile
    >>> book = openpyxl.Workbook(); book.active.title = "About"; _ = book.create_sheet("Results")
    >>> p = os.path.join(tempfile.mkdtemp(), "qa.xlsx"); book.save(p); print(sheet_note(p, None))
    it has 2 sheets (About, Results), and its active one, About, is read: --sheet NAME reads another
    >>> print(sheet_note(p, "Results"))
    it has 2 sheets (About, Results); Results is read (--sheet)
    """
    names, active = sheet_names(path) if workbook_given(path) else ([], None)
    if len(names) < 2:
        return ""
    shown = ", ".join(names[:10]) + (f", ... ({len(names)} in all)" if len(names) > 10 else "")
    if sheet is not None:
        return f"it has {len(names)} sheets ({shown}); {sheet} is read (--sheet)"
    return f"it has {len(names)} sheets ({shown}), and its active one, {active}, is read: --sheet NAME reads another"


def sheet_notes(paths: Sequence[str], sheet: str | None, most: int = 5) -> list[str]:
    """``path: note`` (:func:`sheet_note`) for each of the first ``most`` workbooks (by their names) of several sheets
    among ``paths``: a run that reads the wrong sheet may well find its columns (the same export's sheet of last
    month)."""
    books = [p for p in paths if p.lower().endswith(WORKBOOK_SUFFIXES)][:most]
    return [f"{p}: {note}" for p in books if (note := sheet_note(p, sheet))]


def _cell(v: Any) -> str:
    """A cell's text as a table's cell (module docstring)."""
    if v is None:
        return ""
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return str(v.total_seconds())
    text = str(v)
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ") if "\n" in text or "\r" in text else text


class WorkbookStream(MadeStream):
    """The sheet ``sheet`` (``None``: the active one) of the workbook ``raw`` (open for reading in binary) as CSV
    lines in UTF-8 (:class:`~streamarms.connectors.made_stream.MadeStream`: read as a decompressed file is; module
    docstring). A sheet the workbook does not have is a ``ConfigError`` naming those it has."""

    def __init__(self, raw: IO[bytes], sheet: str | None = None) -> None:
        self.sheet = sheet
        self._openpyxl = reader_module("openpyxl", raw, "an Excel workbook", "excel", "save its sheet as CSV")
        super().__init__(raw)

    def _start(self) -> None:
        try:
            book = self._openpyxl.load_workbook(self._raw, read_only=True, data_only=True)
        except Exception as e:  # (a damaged or encrypted workbook: zipfile's, openpyxl's own errors)
            raise ConfigError(f"{self.name or 'the workbook'} cannot be read as an Excel workbook ({e}): a damaged or "
                              "password-protected file; save its sheet as CSV") from e
        self._rows = self._sheet(book).iter_rows(values_only=True)
        self._done = False
        self._out = io.StringIO()
        self._csv = csv.writer(self._out, lineterminator="\n")

    def _sheet(self, book: Any) -> Any:
        """The sheet to read of ``book``: :attr:`sheet`, else the active one."""
        if self.sheet is None:
            return book.active if book.active is not None else book.worksheets[0]
        if self.sheet not in book.sheetnames:
            raise ConfigError(f"{self.name or 'the workbook'} has no sheet {self.sheet!r} (--sheet): its sheets are "
                              f"{', '.join(book.sheetnames)}")
        sheet = book[self.sheet]
        if not hasattr(sheet, "iter_rows"):
            raise ConfigError(f"{self.name or 'the workbook'}: its sheet {self.sheet!r} (--sheet) is a chart, not a "
                              "sheet of cells")
        return sheet

    def _more(self) -> bytes | None:
        """The CSV lines of the next rows, about 64 KiB of them (``None`` after the last row)."""
        if self._done:
            return None
        out = self._out
        out.seek(0)
        out.truncate()
        try:
            for row in self._rows:
                cells = [_cell(v) for v in row]
                if any(cells):
                    self._csv.writerow(cells)
                else:
                    out.write("\n")  # (an empty row: a blank line, no record)
                if out.tell() >= 1 << 16:
                    break
            else:
                self._done = True
        except Exception as e:  # (its sheet's XML damaged, or the zip member under it: the parser's, zipfile's errors)
            raise OSError(f"its sheet is damaged ({type(e).__name__}: {e})") from e  # (read as a compressed file cut)
        return out.getvalue().encode("utf-8", "surrogatepass")

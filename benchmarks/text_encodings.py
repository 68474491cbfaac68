"""How fast files that are not UTF-8 are read (``connectors/text_encoding.py``): the same table of a labelling team's
rows (names with accented letters) written in UTF-8, in Windows-1252 (read with ``--encoding cp1252``), in UTF-16
with its byte-order mark (Excel's Unicode Text: read through its UTF-8 text) and as an Excel workbook's sheet
(``connectors/workbook_lines.py``, openpyxl), each replayed by the source a run reads (``JsonlSource``: lines, rows,
records). This prints rows per second on one core (process time, best of
``--repeat``) and each against UTF-8.

Usage::

    python benchmarks/text_encodings.py               # 20,000 rows
    python benchmarks/text_encodings.py --rows 200000
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile

from container_lines import _best  # (the least process time of repeated calls: the benchmarks' own measure)

from streamarms.connectors.files import JsonlSource

NAMES = ["Müller", "Jäger", "Çelik", "Núñez", "Ørsted", "Smith", "Rossi", "García"]


def _table(rows: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    out = ["Datum;Bearbeiter;Fehler;Bemerkung"]
    for i in range(rows):
        out.append(f"30.11.2026 10:{i // 60 % 60:02d};{rng.choice(NAMES)}{rng.randrange(20)};{rng.randrange(2)};"
                   f"{rng.choice(['ok', 'größer als erwartet', 'zu spät'])}")
    return "\r\n".join(out) + "\r\n"


def _workbook(path: str, text: str) -> None:
    """The table ``text`` saved as the first sheet of an Excel workbook (openpyxl: the ``excel`` extra)."""
    import openpyxl

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet()
    for line in text.splitlines():
        sheet.append(line.split(";"))
    book.save(path)


def _replay(path: str, encoding: str) -> int:
    src = JsonlSource([path], tables={path: ","}, encoding=encoding, max_records=5000)  # (";" found by the header)
    n = 0
    try:
        while not src.exhausted:
            n += len(src.poll())
    finally:
        src.close()
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    text = _table(opts.rows)
    folder = tempfile.mkdtemp()
    cases = (("UTF-8", "utf-8", "utf-8"), ("Windows-1252, --encoding cp1252", "cp1252", "cp1252"),
             ("UTF-16 with its mark (no flag)", "utf-16", "utf-8"))
    rates = []
    for name, written, read in cases + (("Excel workbook (.xlsx)", "xlsx", "utf-8"),):
        path = os.path.join(folder, f"{written}.csv" if written != "xlsx" else "table.xlsx")
        if written == "xlsx":
            _workbook(path, text)
        else:
            with open(path, "wb") as f:
                f.write(text.encode(written))
        assert _replay(path, read) == opts.rows, name
        rates.append((name, os.path.getsize(path), opts.rows / _best(lambda p=path, e=read: _replay(p, e), opts.repeat)))
    print(f"{'file':<34} {'bytes':>12} {'rows/s':>12} {'vs UTF-8':>9}")
    for name, size, rate in rates:
        print(f"{name:<34} {size:>12,} {rate:>12,.0f} {rate / rates[0][2]:>9.2f}")


if __name__ == "__main__":
    main()

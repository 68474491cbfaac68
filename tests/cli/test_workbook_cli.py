"""An Excel workbook given as ``--rewards-file`` (``connectors/workbook_lines.py``): read as the CSV table of its first
sheet -- the same run as the sheet saved as CSV, resumable at a checkpoint, suggested by ``inspect`` -- where it was
refused ("save the sheet as CSV"). Labelling and QA tools export workbooks far more often than CSV files."""

from __future__ import annotations

import datetime as dt
import json
import random
import shlex
import sys

import pytest
from test_inspect_cli import _run_suggested

from streamarms.cli import main

openpyxl = pytest.importorskip("openpyxl")

T0 = dt.datetime(2026, 11, 30, 10)


def _rows(n: int, seed: int = 3) -> list[list]:
    """A QA team's rows: the time (a date cell), the reviewer, wrong (0/1; 40% for Müller3, 5% for the others), and a
    note written on two lines in the cell when wrong."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        w = f"Müller{rng.randrange(15)}"
        bad = rng.random() < (0.4 if w == "Müller3" else 0.05)
        rows.append([T0 + dt.timedelta(seconds=i), w, int(bad), "zu spät\nnochmal" if bad else None])
    return rows


def _book(path, rows: list[list]) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Export"
    sheet.append(["Zeit", "Bearbeiter", "Fehler", "Bemerkung"])
    for i, row in enumerate(rows):
        sheet.append(row)
        if i == 100:
            sheet.append([None, None, None, None])  # (an empty row: no record)
    book.create_sheet("Notes").append(["not read"])  # (the sheet open when it was saved only)
    book.save(path)


def _summary(tmp_path, path, *flags: str) -> dict:
    out = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(path), "--key-field", "Bearbeiter", "--reward-field", "Fehler",
                 "--timestamp-field", "Zeit", "--policy", "cs", "--quiet", "--summary-json", str(out), *flags]) == 0
    return json.loads(out.read_text())


def _key(s: dict) -> tuple:
    return ({k: s.get(k) for k in ("records", "samples", "invalid", "flagged", "alerts")},
            [(e["episode"], e["samples"], e["records"], e["outliers"], e["threshold"]) for e in s["episodes"]])


def _same_run_and_resumes(tmp_path, path, want: dict) -> None:
    """``path`` replayed is ``want``'s run; stopped after its first episode and resumed, the same run again (no row
    twice or lost)."""
    assert _key(_summary(tmp_path, path, "--checkpoint", "none")) == _key(want)
    ck = tmp_path / "ck"
    first = _summary(tmp_path, path, "--checkpoint", str(ck), "--max-episodes", "1")
    assert len(first["episodes"]) == 1 and first["records"] < want["records"]
    assert _key(_summary(tmp_path, path, "--checkpoint", str(ck))) == _key(want)


def test_a_workbook_is_the_same_run_as_its_sheet_saved_as_csv_and_resumes(tmp_path, capsys):
    rows = _rows(20_000)
    book, table = tmp_path / "qa.xlsx", tmp_path / "qa.csv"
    _book(book, rows)
    with open(table, "w", encoding="utf-8") as f:
        f.write("Zeit,Bearbeiter,Fehler,Bemerkung\n")
        for i, (t, w, bad, note) in enumerate(rows):
            f.write(f"{t.isoformat()},{w},{bad},{(note or '').replace(chr(10), ' ')}\n")
            if i == 100:
                f.write("\n")
    want = _summary(tmp_path, table, "--checkpoint", "none")
    assert want["flagged"] == ["Müller3"] and len(want["episodes"]) >= 2
    _same_run_and_resumes(tmp_path, book, want)
    # (--encoding is the text files' : a workbook's cells are read as they are, whatever it says)
    assert _key(_summary(tmp_path, book, "--checkpoint", "none", "--encoding", "cp1252")) == _key(want)
    # inspect reads it as run does, and suggests the command
    capsys.readouterr()
    assert main(["inspect", str(book)]) == 0
    out = capsys.readouterr().out
    assert "'Müller0' (" in out and "'zu spät nochmal' (" in out, out
    first_command = next(shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run "))
    assert first_command == ["run", "--rewards-file", str(book), "--key-field", "Bearbeiter", "--reward-field", "Fehler",
                             "--timestamp-field", "Zeit", "--policy", "cs"], first_command
    assert _run_suggested(tmp_path, first_command, "--policy", "cs", "--max-episodes", "1")["flagged"] == ["Müller3"]


def test_a_followed_damaged_or_unreadable_workbook_is_one_clear_error(tmp_path, capsys, monkeypatch):
    book = tmp_path / "qa.xlsx"
    _book(book, _rows(50))
    flags = ["run", "--key-field", "Bearbeiter", "--reward-field", "Fehler", "--quiet"]
    assert main([*flags, "--rewards-file", str(book), "--follow"]) == 2
    assert "is a zip archive (an Excel workbook, .xlsx, is one: replayed, not followed" in capsys.readouterr().err
    import zipfile
    damaged = tmp_path / "damaged.xlsx"
    with zipfile.ZipFile(damaged, "w") as z:
        z.writestr("xl/workbook.xml", "<not a workbook")
    assert main([*flags, "--rewards-file", str(damaged)]) == 2
    assert f"{damaged} cannot be read as an Excel workbook (" in capsys.readouterr().err
    cut = tmp_path / "cut.xlsx"  # (cut short: no zip directory, so no workbook by its content; read as text, its
    cut.write_bytes(book.read_bytes()[:3000])  # bytes were a header of one odd column, "has no column 'Fehler'")
    assert main([*flags, "--rewards-file", str(cut)]) == 2
    assert f"{cut} is named as an Excel workbook but is none Excel can open" in capsys.readouterr().err
    sheet_cut = tmp_path / "sheet-cut.xlsx"  # (its sheet's XML cut in the middle: the parser fails on a row, after
    with zipfile.ZipFile(book) as src, zipfile.ZipFile(sheet_cut, "w") as dst:  # the workbook opened; a crash)
        for item in src.infolist():
            data = src.read(item)
            dst.writestr(item, data[:len(data) // 2] if item.filename.startswith("xl/worksheets/") else data)
    assert main([*flags, "--rewards-file", str(sheet_cut)]) == 2
    assert f"{sheet_cut} cannot be read as an Excel workbook (its sheet is damaged (ParseError" in \
        capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # (without the extra)
    assert main([*flags, "--rewards-file", str(book)]) == 2
    assert "is an Excel workbook, read with openpyxl: pip install 'streamarms[excel]'" in capsys.readouterr().err


def test_sheet_reads_the_sheet_it_names_and_a_workbook_of_several_says_which_is_read(tmp_path, capsys):
    """A workbook whose active sheet is a cover note and whose rows are on another: every column was missing and
    nothing said that another sheet held them. Now the error names the sheets, ``inspect`` finds the sheet with keys,
    ``--sheet`` reads the one named (the same run as that sheet alone, resumed at a checkpoint; a restart may not
    change it)."""
    rows = _rows(20_000)
    alone, book = tmp_path / "alone.xlsx", tmp_path / "qa.xlsx"
    _book(alone, rows)
    _book(book, rows)
    wb = openpyxl.load_workbook(book)
    cover = wb.create_sheet("About", 0)
    cover.append(["QA export of November; the rows are on the sheet Export"])
    from openpyxl.chart import BarChart, Reference
    chart = BarChart()
    chart.add_data(Reference(wb["Export"], min_col=3, min_row=1, max_row=50))
    wb.create_chartsheet("Chart").add_chart(chart)
    wb.active = 0
    wb.save(book)
    flags = ["run", "--key-field", "Bearbeiter", "--reward-field", "Fehler", "--quiet", "--checkpoint", "none"]
    capsys.readouterr()
    assert main([*flags, "--rewards-file", str(book)]) == 2
    err = capsys.readouterr().err
    assert "has no column 'Fehler'" in err and ("it has 4 sheets (About, Export, Notes, Chart), and its active one, "
                                                "About, is read: --sheet NAME reads another") in err, err
    assert main(["inspect", str(book)]) == 0  # (the active sheet has no keys: inspect finds the sheet that has)
    out = capsys.readouterr().out
    assert "its active sheet, About, has no column of keys; its sheet Export has: read with --sheet Export" in out
    assert "streamarms run --rewards-file " + str(book) + " --sheet Export --key-field Bearbeiter" in out, out
    assert _key(_summary(tmp_path, book, "--checkpoint", "none", "--sheet", "Export")) == \
        _key(want := _summary(tmp_path, alone, "--checkpoint", "none"))
    ck = tmp_path / "ck"
    assert len(_summary(tmp_path, book, "--checkpoint", str(ck), "--sheet", "Export", "--max-episodes", "1")[
        "episodes"]) == 1
    assert _key(_summary(tmp_path, book, "--checkpoint", str(ck), "--sheet", "Export")) == _key(want)
    capsys.readouterr()
    assert main([*flags[:-2], "--checkpoint", str(ck), "--rewards-file", str(book), "--sheet", "Notes"]) == 2
    assert "--sheet" in capsys.readouterr().err
    for sheet, said in (("Nope", f"{book} has no sheet 'Nope' (--sheet): its sheets are About, Export, Notes, Chart"),
                        ("Chart", "its sheet 'Chart' (--sheet) is a chart, not a sheet of cells")):
        assert main([*flags, "--rewards-file", str(book), "--sheet", sheet]) == 2
        assert said in capsys.readouterr().err
    table = tmp_path / "t.csv"
    table.write_text("Bearbeiter,Fehler\na,1\n")
    assert main([*flags, "--rewards-file", str(table), "--sheet", "Export"]) == 2
    assert "--sheet names the sheet of an Excel workbook to read" in capsys.readouterr().err
    assert main(["inspect", str(book), "--sheet", "Export"]) == 0
    out = capsys.readouterr().out
    assert "it has 4 sheets (About, Export, Notes, Chart); Export is read (--sheet)" in out, out
    command = next(shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run "))
    assert command[:5] == ["run", "--rewards-file", str(book), "--sheet", "Export"], command
    assert _run_suggested(tmp_path, command, "--policy", "cs", "--max-episodes", "1")["flagged"] == ["Müller3"]

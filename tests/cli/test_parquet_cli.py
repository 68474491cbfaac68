"""A Parquet file given as ``--rewards-file`` (``connectors/parquet_lines.py``): read as the CSV table of its rows --
the same run as those rows saved as CSV, resumable at a checkpoint, suggested by ``inspect`` -- where it was refused
("write its rows as CSV first"). Warehouse exports and Spark or pandas jobs write Parquet far more often than CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
import shlex
import sys

import pytest
from test_inspect_cli import _run_suggested
from test_workbook_cli import _same_run_and_resumes, _summary

from streamarms.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

T0 = dt.datetime(2026, 11, 30, 10)


def _table(n: int, seed: int = 3):
    """A QA team's rows: the time, the reviewer, wrong (0/1; 40% for Müller3, 5% for the others)."""
    rng = random.Random(seed)
    who = [f"Müller{rng.randrange(15)}" for _ in range(n)]
    wrong = [int(rng.random() < (0.4 if w == "Müller3" else 0.05)) for w in who]
    at = [T0 + dt.timedelta(seconds=i) for i in range(n)]
    return pa.table({"Zeit": pa.array(at, pa.timestamp("ms")), "Bearbeiter": who, "Fehler": wrong})


def test_a_parquet_file_is_the_same_run_as_its_rows_saved_as_csv_and_resumes(tmp_path, capsys):
    table = _table(20_000)
    rows, copy = tmp_path / "qa.parquet", tmp_path / "qa.csv"
    pq.write_table(table, rows, row_group_size=3_000)  # (several row groups: read a batch at a time)
    with open(copy, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(table.column_names)
        for t, who, wrong in zip(*(table.column(c).to_pylist() for c in table.column_names)):
            w.writerow([t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3], who, wrong])
    want = _summary(tmp_path, copy, "--checkpoint", "none")
    assert want["flagged"] == ["Müller3"] and len(want["episodes"]) >= 2 and want["invalid"] == {}
    _same_run_and_resumes(tmp_path, rows, want)
    capsys.readouterr()
    assert main(["inspect", str(rows)]) == 0
    out = capsys.readouterr().out
    assert any(line.split()[:1] == ["Bearbeiter"] and "15 distinct" in line for line in out.splitlines()), out
    command = next(shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run "))
    assert command == ["run", "--rewards-file", str(rows), "--key-field", "Bearbeiter", "--reward-field", "Fehler",
                       "--timestamp-field", "Zeit", "--policy", "cs"], command
    assert _run_suggested(tmp_path, command, "--policy", "cs", "--max-episodes", "1")["flagged"] == ["Müller3"]


def test_a_parquet_file_s_other_columns_are_cells_a_table_reads():
    """A list, a struct or bytes as their text, a text's line break a space, a dictionary-encoded column its values,
    nulls empty; a file with no rows is its header."""
    from streamarms.connectors.parquet_lines import ParquetStream

    table = pa.table({"host": pa.array(["a", "b\nc"]).dictionary_encode(), "tags": [[1, 2], None],
                      "extra": [{"zone": "eu"}, {"zone": None}], "raw": [b"ok\xff", None], "ms": [1.5, None]})
    raw = io.BytesIO()
    pq.write_table(table, raw)
    raw.seek(0)
    got = list(csv.reader(io.StringIO(ParquetStream(raw).read(-1).decode())))
    assert got == [["host", "tags", "extra", "raw", "ms"], ["a", "[1, 2]", '{"zone": "eu"}', "ok\ufffd", "1.5"],
                   ["b c", "", '{"zone": null}', "", ""]], got
    empty = io.BytesIO()
    pq.write_table(table.slice(0, 0), empty)
    empty.seek(0)
    assert ParquetStream(empty).read(-1) == b'"host","tags","extra","raw","ms"\n'


def test_a_followed_damaged_or_unreadable_parquet_file_is_one_clear_error(tmp_path, capsys, monkeypatch):
    rows = tmp_path / "qa.parquet"
    pq.write_table(_table(6_000), rows, row_group_size=1_000)
    flags = ["run", "--key-field", "Bearbeiter", "--reward-field", "Fehler", "--quiet", "--checkpoint", "none"]
    assert main([*flags, "--rewards-file", str(rows), "--follow"]) == 2
    assert "is a Parquet file (replayed, not followed, it is read as a table of its rows)" in capsys.readouterr().err
    data = rows.read_bytes()
    cut = tmp_path / "cut.parquet"  # (cut short: no footer, so no schema)
    cut.write_bytes(data[:len(data) // 2])
    assert main([*flags, "--rewards-file", str(cut)]) == 2
    assert f"{cut} cannot be read as a Parquet file (" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # (without the extra)
    assert main([*flags, "--rewards-file", str(rows)]) == 2
    assert "is a Parquet file, read with pyarrow: pip install 'streamarms[parquet]'" in capsys.readouterr().err

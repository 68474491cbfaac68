"""Exports that are not UTF-8, as Windows tools and spreadsheets write them: Excel's "CSV" in the system's code page
(Windows-1252 in Western Europe: a German locale's ``;`` and decimal commas), Excel's "Unicode Text" (UTF-16, tabs).
Before, every record of the first was refused (``key_not_utf8``) with no word of why at the start, ``inspect`` showed
``'M\\udcfcller'`` and suggested a run that refused everything; the second had no column the flags could name."""

from __future__ import annotations

import json
import random
import shlex

import pytest
from test_inspect_cli import _run_suggested

from streamarms.cli import main

WORKERS = [f"{n}{i}" for n in ("Müller", "Jäger", "Çelik", "Núñez", "Ørsted") for i in range(3)]


def _export(p, encoding: str, sep: str = ";", n: int = 12_000, seed: int = 5) -> None:
    """A labelling team's export: each row a worker's item, wrong in 40% for Jäger1, 5% for the others."""
    rng = random.Random(seed)
    rows = [sep.join(("Datum", "Arbeiter", "Fehler", "Bemerkung"))]
    for i in range(n):
        w = rng.choice(WORKERS)
        wrong = rng.random() < (0.4 if w == "Jäger1" else 0.05)
        rows.append(sep.join((f"30.11.2026 {10 + i // 3600:02d}:{i // 60 % 60:02d}", w, str(int(wrong)),
                              "größer" if wrong else "ok")))
    p.write_bytes(("\r\n".join(rows) + "\r\n").encode(encoding))


def _suggested(out: str) -> list[list[str]]:
    commands = [shlex.split(line)[1:] for line in out.splitlines() if line.startswith("  streamarms run ")]
    assert all(c[-2:] == ["--policy", "cs"] for c in commands), commands  # (the engine: a first file's records decide)
    return [c[:-2] for c in commands]


def test_a_windows_1252_export_is_named_by_inspect_and_read_with_encoding(tmp_path, capsys, caplog):
    p = tmp_path / "fehler.csv"
    _export(p, "cp1252")
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{p} is not UTF-8: read as cp1252 (Windows' Western European text"), out
    assert "'Jäger0' (" in out and "\\udc" not in out, out
    first = _suggested(out)[0]
    assert first[:6] == ["run", "--rewards-file", str(p), "--encoding", "cp1252", "--key-field"], first
    assert first[6:] == ["Arbeiter", "--reward-field", "Fehler", "--timestamp-field", "Datum", "--timestamp-format",
                         "%d.%m.%Y %H:%M"], first
    got = _run_suggested(tmp_path, first, "--policy", "cs", "--max-episodes", "1")
    assert got["flagged"] == ["Jäger1"] and got["invalid"] == {}, got
    # without --encoding: the run says at its start what the file is and which flag reads it
    summary = tmp_path / "s.json"
    with caplog.at_level("WARNING", logger="streamarms.cli"):
        assert main(["run", "--rewards-file", str(p), "--key-field", "Arbeiter", "--reward-field", "Fehler",
                     "--quiet", "--summary-json", str(summary)]) == 2  # (every record refused)
    said = [r.getMessage() for r in caplog.records if "is not UTF-8" in r.getMessage()]
    assert said and "(line 2: " in said[0] and "--encoding cp1252 reads it" in said[0], said
    assert json.loads(summary.read_text())["invalid"].get("key_not_utf8", 0) > 0


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be-marked", "utf-32", "utf-32-be-marked"])
def test_excel_s_unicode_text_is_read_as_it_is(tmp_path, capsys, encoding):
    p = tmp_path / "fehler.txt"
    codec = encoding[:6]
    if encoding in ("utf-16", "utf-32"):
        _export(p, encoding, sep="\t")  # (Excel: little-endian with its mark; UTF-32: .NET's Encoding.UTF32)
    else:
        _export(p, "utf-8", sep="\t")
        p.write_bytes("\ufeff".encode(f"{codec}-be") + p.read_text(encoding="utf-8").encode(f"{codec}-be"))
    assert main(["inspect", str(p)]) == 0  # (a .txt: the table is found in its lines)
    out = capsys.readouterr().out
    assert out.startswith("the lines are a table separated by tabs (its first line names the columns), not JSON: "
                          "read with --rewards-format tsv\n"), out
    assert "'Jäger0' (" in out and "--encoding" not in out, out
    got = _run_suggested(tmp_path, ["run", "--rewards-file", str(p), "--rewards-format", "tsv", "--key-field",
                                    "Arbeiter", "--reward-field", "Fehler", "--timestamp-field", "Datum",
                                    "--timestamp-format", "%d.%m.%Y %H:%M"], "--policy", "cs", "--max-episodes", "1")
    assert got["flagged"] == ["Jäger1"] and got["invalid"] == {}, got
    # followed: refused, naming the conversion (a writer does not append UTF-16 lines to a log followed)
    assert main(["run", "--rewards-file", str(p), "--rewards-format", "tsv", "--follow", "--key-field", "Arbeiter",
                 "--reward-field", "Fehler", "--quiet"]) == 2
    assert f"is {codec.upper()} text (its byte-order mark says so), and --follow" in capsys.readouterr().err


def test_a_restart_with_another_encoding_is_refused(tmp_path, capsys):
    p, ck = tmp_path / "fehler.csv", tmp_path / "ck"
    _export(p, "cp1252", n=3_000)
    flags = ["run", "--rewards-file", str(p), "--key-field", "Arbeiter", "--reward-field", "Fehler", "--quiet",
             "--checkpoint", str(ck), "--max-episodes", "1"]
    assert main([*flags, "--encoding", "windows-1252"]) == 0
    capsys.readouterr()
    assert main([*flags, "--encoding", "latin-1"]) == 2
    assert "--encoding 'cp1252' (this run: 'iso8859-1')" in capsys.readouterr().err
    assert main([*flags, "--encoding", "cp1252"]) == 0  # (the same codec by another name: the same setting)
    utf8 = [*flags[:-4], "--checkpoint", str(tmp_path / "ck8"), *flags[-2:]]
    # (UTF-8 named: the default, unchanged; the first run refuses every row, the restart reads nothing new)
    assert main(utf8) == 2 and main([*utf8, "--encoding", "UTF8"]) == 0


@pytest.mark.parametrize("flags, said", [
    (["--encoding", "utf-16"], "is read without --encoding; convert any other to UTF-8 first"),
    (["--encoding", "ansi"], "--encoding ansi: no such encoding (e.g. cp1252 for Windows' Western European text"),
])
def test_an_encoding_that_cannot_be_read_is_one_error_before_the_run(tmp_path, capsys, flags, said):
    p = tmp_path / "fehler.csv"
    _export(p, "cp1252", n=100)
    assert main(["run", "--rewards-file", str(p), "--key-field", "Arbeiter", "--reward-field", "Fehler", *flags]) == 2
    assert said in capsys.readouterr().err


def test_encoding_is_for_files(capsys):
    assert main(["run", "--bootstrap-servers", "127.0.0.1:1", "--rewards-topic", "t", "--encoding", "cp1252"]) == 2
    assert "--encoding is the --rewards-file files' encoding (a Kafka record's value is UTF-8)" in \
        capsys.readouterr().err

"""``streamarms run --rewards-file labels.csv``: a table (CSV, TSV; by the name or ``--rewards-format``) is
read as the JSON lines of its rows -- the same run to the record --, a column the run reads that the header
lacks is one clear error (exit 2), a bad row a ``bad_row`` dead letter, and a restart goes on at the next
row."""

from __future__ import annotations

import json
import random

from streamarms.cli import main

T0 = 1_700_000_000_000


def _rows(n: int, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        w = rng.randrange(12)
        out.append({"worker": f"w{w:02d}", "task": f"t{i}", "wrong": int(rng.random() < (0.5 if w == 7 else 0.1)),
                    "timestamp": T0 + 100 * i})
    return out


def _write(path, rows: list[dict], form: str) -> None:
    with open(path, "w") as f:
        if form == "jsonl":
            f.writelines(json.dumps(r) + "\n" for r in rows)
        else:
            sep = "," if form == "csv" else "\t"
            f.write(sep.join(rows[0]) + "\n")
            f.writelines(sep.join(str(v) for v in r.values()) + "\n" for r in rows)


def _run(tmp_path, name: str, *flags: str) -> dict:
    summary = tmp_path / f"{name}.json"
    assert main(["run", "--rewards-file", str(tmp_path / name), "--key-field", "worker", "--reward-field", "wrong",
                 "--policy", "cs", "--summary-json", str(summary), "--quiet", *flags]) == 0
    return json.loads(summary.read_text())


def test_a_table_is_the_same_run_as_its_json_lines(tmp_path):
    rows = _rows(20_000)
    for form in ("jsonl", "csv", "tsv"):
        _write(tmp_path / f"r.{form}", rows, form)
    _write(tmp_path / "r.log", rows, "csv")
    ref = _run(tmp_path, "r.jsonl", "--checkpoint", "none")
    assert ref["flagged"] == ["w07"]
    for name, flags in (("r.csv", ()), ("r.tsv", ()), ("r.log", ("--rewards-format", "csv"))):
        got = _run(tmp_path, name, "--checkpoint", "none", *flags)
        assert {k: got[k] for k in ("flagged", "records", "invalid", "episodes")} == \
            {k: ref[k] for k in ("flagged", "records", "invalid", "episodes")}, name


def test_a_missing_column_is_one_error_and_a_bad_row_a_dead_letter(tmp_path, capsys):
    p = tmp_path / "r.csv"
    _write(p, _rows(300), "csv")
    assert main(["run", "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "error"]) == 2
    assert "has no column 'error' (--reward-field): its columns are worker, task, wrong, timestamp" in \
        capsys.readouterr().err
    assert main(["run", "--rewards-file", str(p), "--reward-field", "wrong"]) == 2
    err = capsys.readouterr().err
    assert "no 'arm' or 'key' column naming each row's key: name the column with --key-field" in err
    assert main(["run", "--rewards-format", "csv"]) == 2
    assert "--rewards-format says what the --rewards-file files hold" in capsys.readouterr().err
    with open(p, "ab") as f:
        f.write(b"w01,t9,1,1700000099999,extra\nw02,t10,maybe,1700000099999\n\xff\xfe,t11,1,1700000099999\n")
    dead = tmp_path / "dead.jsonl"
    got = _run(tmp_path, "r.csv", "--checkpoint", "none", "--dead-letter-file", str(dead))
    letters = [json.loads(x) for x in dead.read_text().splitlines()]
    assert [d["reason"] for d in letters] == ["bad_row", "not_numeric", "key_not_utf8"]
    assert got["invalid"] == {"bad_row": 1, "not_numeric": 1, "key_not_utf8": 1}
    assert "5 cells, the header 4 columns" in letters[0]["detail"]
    lines = p.read_bytes().splitlines()  # each names its line from 1, the header counted (sed -n Np), as editors do
    assert [lines[d["line"] - 1] for d in letters] == [b"w01,t9,1,1700000099999,extra", b"w02,t10,maybe,1700000099999",
                                                       b"\xff\xfe,t11,1,1700000099999"]
    assert [d["source"].rsplit(":", 1)[1] for d in letters] == [str(d["line"] - 1) for d in letters]  # (0-based there)


def test_a_restart_reads_the_rows_added_since_and_no_row_twice(tmp_path):
    rows = _rows(4_000, seed=5)
    p, ckpt = tmp_path / "r.csv", tmp_path / "r.ckpt"
    _write(p, rows[:2_500], "csv")
    first = _run(tmp_path, "r.csv", "--checkpoint", str(ckpt), "--forever", "--mode", "episodes")
    with open(p, "a") as f:
        f.writelines(",".join(str(v) for v in r.values()) + "\n" for r in rows[2_500:])
    again = _run(tmp_path, "r.csv", "--checkpoint", str(ckpt), "--forever", "--mode", "episodes")
    same = _run(tmp_path, "r.csv", "--checkpoint", str(ckpt), "--forever", "--mode", "episodes", "--rewards-format",
                "csv")  # (the format the name gave: the same run)
    assert main(["run", "--rewards-file", str(p), "--checkpoint", str(ckpt), "--key-field", "worker", "--reward-field",
                 "wrong", "--policy", "cs", "--rewards-format", "jsonl"]) == 2  # another reading of the file
    # the summary counts from the first run's start: every row once, and none again at a third start
    assert (first["records"], again["records"], same["records"]) == (2_500, 4_000, 4_000)
    assert again["invalid"] == {}


def test_a_zstd_table_is_refused_naming_the_pipe_that_reads_it(tmp_path, capsys):
    """(gzip, bzip2 and xz tables are read as they are: ``tests/runtime/test_compressed_files.py``.)"""
    for name, form in (("r.csv.zst", "csv"), ("r.jsonl.zst", "jsonl")):
        (tmp_path / name).write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 40)
        assert main(["run", "--rewards-file", str(tmp_path / name), "--key-field", "worker", "--reward-field",
                     "wrong"]) == 2
        err = capsys.readouterr().err
        pipe = f"zstdcat {tmp_path / name} | streamarms run --rewards-file -" + (" --rewards-format csv" if form == "csv"
                                                                                else " ...")
        assert pipe in err and "is zstd-compressed, which streamarms cannot decompress" in err, err


def test_a_semicolon_export_reads_the_rewards_decimal_commas(tmp_path, capsys):
    """A spreadsheet where the decimal mark is a comma writes ``0,25`` in a file separated by semicolons: the
    reward's cells are those numbers (the same run as the file with points), other columns stay text, and a
    decimal comma elsewhere (a comma-separated file, JSON lines) is a dead letter that says where it is read."""
    rng = random.Random(5)
    rows = [(f"h{h:02d}", round(rng.uniform(0, 0.4) + (0.3 if h == 4 else 0.0), 3), f"{i},{h}")
            for i in range(30_000) for h in [rng.randrange(15)]]
    (tmp_path / "eu.csv").write_text("host;seconds;note\n" + "".join(
        f"{h};{str(x).replace('.', ',')};{n}\n" for h, x, n in rows))
    (tmp_path / "us.csv").write_text("host,seconds,note\n" + "".join(f'{h},{x},"{n}"\n' for h, x, n in rows))
    got = {}
    for name in ("eu.csv", "us.csv"):
        summary = tmp_path / f"{name}.json"
        assert main(["run", "--rewards-file", str(tmp_path / name), "--key-field", "host", "--reward-field",
                     "seconds", "--reward-model", "bounded", "--reward-range", "0,1", "--policy", "cs",
                     "--checkpoint", "none", "--summary-json", str(summary), "--quiet"]) == 0
        got[name] = json.loads(summary.read_text())
    assert got["eu.csv"]["flagged"] == ["h04"] and not got["eu.csv"]["invalid"]
    assert {k: got["eu.csv"][k] for k in ("flagged", "records", "episodes")} == \
        {k: got["us.csv"][k] for k in ("flagged", "records", "episodes")}
    (tmp_path / "r.jsonl").write_text('{"arm": "a", "reward": "0,5"}\n')
    dead = tmp_path / "dead.jsonl"
    assert main(["run", "--rewards-file", str(tmp_path / "r.jsonl"), "--numeric-strings", "--reward-model",
                 "bounded", "--reward-range", "0,1", "--dead-letter-file", str(dead), "--checkpoint", "none",
                 "--quiet"]) == 2  # (every record refused)
    assert "a decimal comma is read only in a table's reward column: one separated by semicolons, or --decimal-comma" \
        in dead.read_text()


def test_amounts_with_their_thousands_grouped_are_numbers_in_a_decimal_comma_table(tmp_path, capsys):
    """Excel's "CSV" in Germany writes ``1.235,97`` (France ``1 235,97``): refused as ``not_numeric``, so the seller
    whose every sale passed a thousand was left out of the run without a word. They are the numbers the locale
    means, as in the file written with points; a lone ``1.234`` is 1234 only with ``--decimal-comma``."""
    rng = random.Random(8)
    rows = [(f"s{s}", round(rng.uniform(2500, 4000) if s == 3 else rng.uniform(200, 1500), 2))
            for s in (rng.randrange(8) for _ in range(12_000))]

    def de(x: float, sep: str) -> str:
        whole, frac = f"{x:.2f}".split(".")
        return (f"{int(whole):,}".replace(",", sep)) + "," + frac

    (tmp_path / "de.csv").write_text("seller;amount\n" + "".join(f"{s};{de(x, '.')}\n" for s, x in rows))
    (tmp_path / "fr.csv").write_text("seller;amount\n" + "".join(f"{s};{de(x, chr(0x202f))}\n" for s, x in rows))
    (tmp_path / "us.csv").write_text("seller,amount\n" + "".join(f"{s},{x:.2f}\n" for s, x in rows))
    got = {}
    for name in ("de.csv", "fr.csv", "us.csv"):
        summary = tmp_path / f"{name}.json"
        assert main(["run", "--rewards-file", str(tmp_path / name), "--key-field", "seller", "--reward-field", "amount",
                     "--reward-model", "bounded", "--reward-range", "0,5000", "--policy", "cs", "--checkpoint", "none",
                     "--summary-json", str(summary), "--quiet"]) == 0
        got[name] = json.loads(summary.read_text())
    assert got["de.csv"]["flagged"] == ["s3"] and not got["de.csv"]["invalid"], got["de.csv"]["invalid"]
    for name in ("de.csv", "fr.csv"):
        assert {k: got[name][k] for k in ("flagged", "records", "samples", "episodes")} == \
            {k: got["us.csv"][k] for k in ("flagged", "records", "samples", "episodes")}
    assert main(["inspect", str(tmp_path / "de.csv")]) == 0
    assert "--reward-field amount --reward-model bounded" in capsys.readouterr().out


def test_a_database_s_export_separated_by_vertical_bars_is_a_table(tmp_path, capsys):
    """``psql -A`` (and Hive's, SAP's exports) separate cells by ``|``: the header was one column named
    ``worker|task|wrong|timestamp``. Its ``(N rows)`` footer is a bad row, a dead letter; ``inspect`` names the
    format of such a ``.txt`` file."""
    rows = _rows(20_000)
    _write(tmp_path / "r.jsonl", rows, "jsonl")
    lines = ["|".join(rows[0])] + ["|".join(str(v) for v in r.values()) for r in rows] + [f"({len(rows)} rows)"]
    (tmp_path / "export.txt").write_text("\n".join(lines) + "\n")
    want = _run(tmp_path, "r.jsonl")
    got = _run(tmp_path, "export.txt", "--rewards-format", "csv")
    assert got["invalid"] == {"bad_row": 1}
    assert (got["flagged"], got["samples"]) == (want["flagged"], want["samples"]) and want["flagged"] == ["w07"]
    assert main(["inspect", str(tmp_path / "export.txt")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the lines are a table (its first line names the columns; cells separated by commas, "
                          "semicolons or vertical bars), not JSON: read with --rewards-format csv\n"), out
    assert "--rewards-format csv --key-field worker --reward-field wrong" in out, out

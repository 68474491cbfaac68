"""gzip, bzip2 and xz files are read as they are (``connectors/compressed_lines.py``): a rotated ``app.log.2.gz`` or
an export's ``.csv.gz`` replays as its decompressed copy does, resumes at a checkpoint (positions in the
decompressed bytes), and a file cut short or replaced says so. Before, each was refused with a ``zcat`` pipe, which
cannot be resumed."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random

import pytest

from streamarms.checkpoint import CheckpointError
from streamarms.cli.main import main
from streamarms.cli.run import main as run_main
from streamarms.connectors.compressed_lines import CompressedLineReader, open_lines
from streamarms.connectors.files import JsonlSource
from streamarms.connectors.jsonl_lines import LineReader

PACKS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


def _lines(n: int, seed: int = 1) -> list[bytes]:
    means = [0.3] * 18 + [0.9, 0.95]  # two clear outlier keys: an episode ends within a few thousand lines
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a = rng.randrange(len(means))
        out.append(b'{"arm": "k%d", "reward": %d, "timestamp": %d}\n' % (a, rng.random() < means[a], 1_700_000_000_000 + i))
    return out


def _run(tmp_path, path, *more: str) -> dict:
    out = tmp_path / "s.json"
    assert run_main(["--rewards-file", str(path), "--summary-json", str(out), "--quiet", "--episode-interval", "10",
                     *more]) == 0
    return json.loads(out.read_text())


def _key(s: dict) -> tuple:
    return ({k: s.get(k) for k in ("records", "samples", "skipped", "invalid", "flagged", "alerts")},
            [(e["episode"], e["samples"], e["records"], e["outliers"], e["threshold"]) for e in s["episodes"]])


def _drain(src: JsonlSource) -> list:
    out = []
    while not src.exhausted:
        out += src.poll()
    return out


@pytest.mark.parametrize("ext", sorted(PACKS))
def test_a_compressed_log_replays_as_its_plain_copy_and_resumes_at_its_checkpoint(tmp_path, ext):
    data = b"".join(_lines(30_000))
    plain = tmp_path / "r.jsonl"
    plain.write_bytes(data)
    full = _run(tmp_path, plain)
    assert len(full["episodes"]) >= 2
    packed = tmp_path / f"r.jsonl.{ext}"
    packed.write_bytes(PACKS[ext](data))
    assert _key(_run(tmp_path, packed)) == _key(full)
    # stopped after its first episode, then resumed from the checkpoint: the same run, no record twice or lost
    ck = tmp_path / "ck"
    first = _run(tmp_path, packed, "--checkpoint", str(ck), "--max-episodes", "1")
    assert len(first["episodes"]) == 1 and first["records"] < full["records"]
    assert _key(_run(tmp_path, packed, "--checkpoint", str(ck))) == _key(full)


def test_the_reader_resumes_at_every_line_of_a_file_of_several_members(tmp_path):
    """``cat a.gz b.gz > c.gz`` is one gzip file of two members (zcat reads both); a checkpoint at any line, a last
    line without its newline and ``\\r\\n`` line ends resume exactly, as for a plain file."""
    rng = random.Random(5)
    text = [b'{"arm": "a%d", "reward": %d}' % (rng.randrange(9), rng.randrange(2)) for _ in range(300)]
    data = b"\r\n".join(text[:150]) + b"\n" + b"\n".join(text[150:])  # (the last line has no line end)
    p = tmp_path / "m.jsonl.gz"
    p.write_bytes(gzip.compress(data[:4000]) + gzip.compress(data[4000:]))
    r = open_lines(str(p))
    assert isinstance(r, CompressedLineReader)
    got = r.read(1000)
    assert got == [t.decode() for t in text]
    resumes_at_every_line(r, got, lambda i, pos, digest: open_lines(str(p), line=i, pos=pos, digest=digest), 7)


def resumes_at_every_line(r, got: list[str], reopen, step: int) -> None:
    """Each ``step``-th line's mark of the reader ``r`` (which read ``got``; closed here), reopened by ``reopen(line,
    pos, digest)``, reads exactly the lines after it."""
    marks = [r.mark(i) for i in range(len(got) + 1)]
    r.close()
    for i in range(0, len(got) + 1, step):
        r2 = reopen(i, *marks[i])
        assert r2.read(1000) == got[i:], i
        r2.close()


def test_a_csv_gz_export_is_read_with_its_header_and_progress_is_in_compressed_bytes(tmp_path):
    rows = [f"w{i % 12},{int(i % 12 == 3 or (i * 7919) % 10 < 2)}" for i in range(24_000)]
    p = tmp_path / "labels.csv.gz"
    p.write_bytes(gzip.compress(("worker,wrong\n" + "\n".join(rows) + "\n").encode()))
    s = _run(tmp_path, p, "--key-field", "worker", "--reward-field", "wrong")
    assert s["records"] == 24_000 and s["invalid"] == {} and "w3" in s["flagged"]
    src = JsonlSource([str(p)], tables=None)
    _drain(src)
    assert src.bytes_read() == p.stat().st_size  # (the replay's progress bar: against the size on disk)
    src.close()


def test_a_file_cut_short_reads_its_lines_then_fails_the_run_naming_it(tmp_path, capsys):
    """A ``.gz`` still being written (or damaged) has whole lines, then a stream that ends without its end: those
    lines are read, the half line after them is not, and the run ends with exit 1 saying so -- not a traceback,
    not a silent end of file."""
    data = b"".join(_lines(20_000))
    p = tmp_path / "r.jsonl.gz"
    p.write_bytes(gzip.compress(data)[:-5000])
    src = JsonlSource([str(p)])
    got = _drain(src)
    assert 0 < len(got) < 20_000 and all(r.key is not None and not hasattr(r.key, "reason") for r in got)
    assert [r.value + b"\n" for r in got] == _lines(20_000)[:len(got)]
    assert "cannot be decompressed after its line" in src.failure and "cut short or damaged" in src.failure
    src.close()
    assert run_main(["--rewards-file", str(p), "--quiet"]) == 1
    assert "cut short or damaged; the lines before were read, nothing after" in capsys.readouterr().err


def test_gzip_data_damaged_inside_is_said_as_a_cut_file_is(tmp_path, capsys):
    """Found by fuzzing: damaged deflate data raises ``zlib.error``, which is no ``OSError``, so a ``.gz`` damaged
    inside crashed ``inspect`` (a traceback) and stopped ``run`` with ``cannot start: error`` (exit 1). Damaged at
    its start it is a clear error (exit 2); damaged after whole lines, those are read and the run fails naming it."""
    garbage = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\xff" * 64  # (a member with an invalid block type)
    start, later = tmp_path / "start.jsonl.gz", tmp_path / "later.jsonl.gz"
    start.write_bytes(garbage)
    later.write_bytes(gzip.compress(b"".join(_lines(20_000))) + garbage)
    assert run_main(["--rewards-file", str(start), "--quiet"]) == 2
    assert "cannot be decompressed as gzip (Error -3 while decompressing data" in capsys.readouterr().err
    assert main(["inspect", str(start)]) == 2
    assert "cannot be decompressed as gzip" in capsys.readouterr().err
    src = JsonlSource([str(later)])
    n = len(_drain(src))  # (the lines of the blocks decompressed before the damage: gzip reads ahead)
    assert 0 < n <= 20_000 and f"cannot be decompressed after its line {n:,}" in src.failure
    src.close()
    assert run_main(["--rewards-file", str(later), "--quiet"]) == 1
    assert "cut short or damaged; the lines before were read, nothing after" in capsys.readouterr().err


def test_a_replaced_compressed_file_is_refused_at_restart(tmp_path):
    p = tmp_path / "r.jsonl.gz"
    p.write_bytes(gzip.compress(b"".join(_lines(70))))
    src = JsonlSource([str(p)])
    _drain(src)
    state = src.state()
    src.close()
    p.write_bytes(gzip.compress(b"".join(_lines(30))))
    with pytest.raises(CheckpointError, match=r"shorter than the checkpoint's position.*decompressed now"):
        JsonlSource([str(p)], resume=state)
    p.write_bytes(gzip.compress(b"".join(_lines(90, seed=7))))
    with pytest.raises(CheckpointError, match="is not the file the checkpoint read.*line 70"):
        JsonlSource([str(p)], resume=state)
    p.write_bytes(gzip.compress(b"".join(_lines(90))))  # the same lines and more (a longer export): resumes
    src2 = JsonlSource([str(p)], resume=state)
    assert [r.offset for r in _drain(src2)] == list(range(70, 90))
    src2.close()


def test_a_file_with_gzip_magic_that_is_no_gzip_is_a_clear_error(tmp_path, capsys):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"\x1f\x8b not gzip at all\n")
    assert run_main(["--rewards-file", str(p), "--quiet"]) == 2
    assert "cannot be decompressed as gzip" in capsys.readouterr().err


def test_zstd_and_follow_are_refused_with_the_command_that_reads_them(tmp_path, capsys):
    """zstd has no decoder in Python's standard library; --follow reads files that grow, which no .gz does."""
    z = tmp_path / "r.jsonl.zst"
    z.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    assert run_main(["--rewards-file", str(z), "--checkpoint", "none"]) == 2
    err = capsys.readouterr().err
    assert "is zstd-compressed, which streamarms cannot decompress" in err and f"zstdcat {z} | streamarms run" in err
    g = tmp_path / "r.jsonl.gz"
    g.write_bytes(gzip.compress(b"".join(_lines(10))))
    with pytest.raises(Exception, match="--follow reads files that grow: a compressed file does not"):
        LineReader(str(g), follow=True)


@pytest.mark.parametrize("name, head, said", [
    ("logs.zip", b"PK\x03\x04\x14\x00", "is a zip archive (an Excel workbook, .xlsx, is one: replayed, not followed, "
                                         "a workbook is read as its sheet's table), not lines of text: give a "
                                         "zipped log's lines on standard input"),
    ("data.parquet", b"PAR1\x15\x04", "cannot be read as a Parquet file ("),  # (a real one is read: test_parquet_cli)
    ("old.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "is an Excel 97-2003 workbook (.xls)"),
    ("e.avro", b"Obj\x01\x04\x14", "is an Avro container file"),
    ("app.db", b"SQLite format 3\x00", "is an SQLite database"),
])
def test_a_workbook_a_parquet_file_or_an_archive_is_named_with_what_makes_lines_of_it(tmp_path, capsys, name, head,
                                                                                       said):
    """A spreadsheet or a Parquet file given by mistake (no line end in its bytes) was one incomplete line: the run
    said its input was empty, and ``inspect`` found no field (a Parquet file is read now; one that is none is
    refused); a zip of JSON lines stored uncompressed was read as
    text, its archive's bytes around the lines dead letters."""
    p = tmp_path / name
    p.write_bytes(head + bytes(range(256)) * 20)
    assert run_main(["--rewards-file", str(p), "--checkpoint", "none"]) == 2
    assert f"{p} {said}" in capsys.readouterr().err
    assert main(["inspect", str(p)]) == 2
    assert f"{p} {said}" in capsys.readouterr().err


def test_a_pattern_reads_the_rotated_gz_files_with_the_plain_ones(tmp_path):
    """``--rewards-file 'app.log*'`` over app.log, app.log.1 and app.log.2.gz (logrotate's compress) reads all three;
    only zstd rotations are refused (``tests/cli/test_rewards_file_patterns_cli.py`` has the message)."""
    lines = _lines(9_000)
    (tmp_path / "app.log").write_bytes(b"".join(lines[6000:]))
    (tmp_path / "app.log.1").write_bytes(b"".join(lines[3000:6000]))
    (tmp_path / "app.log.2.gz").write_bytes(gzip.compress(b"".join(lines[:3000])))
    s = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(tmp_path / "app.log*"), "--quiet", "--summary-json", str(s)]) == 0
    assert json.loads(s.read_text())["records"] == 9_000


@pytest.mark.parametrize("ext", sorted(PACKS))
def test_a_compressed_stream_on_standard_input_is_decompressed(tmp_path, ext):
    """``cat app.log.2.gz | streamarms run --rewards-file -`` (or ``aws s3 cp s3://b/x.gz -``): every line was a
    ``not_json`` dead letter. The stream is decompressed as it comes, in pieces of any size, a gzip of several
    members too."""
    lines = _lines(3_000)
    data = b"".join(lines)
    blob = PACKS[ext](data) if ext != "gz" else gzip.compress(data[:5000]) + gzip.compress(data[5000:])
    got, reader = piped(blob)
    assert reader.kind is not None and reader.damage is None
    assert [g.encode() + b"\n" for g in got] == lines


def piped(blob: bytes, prepare=None) -> tuple[list[str], object]:
    """The lines a :class:`PipeLineReader` reads of ``blob`` written to its pipe in pieces of 1 to 4,000 bytes (a
    compressed member, a line, a character cut anywhere), and the reader (closed); ``prepare(reader)`` first."""
    import os

    from streamarms.connectors.pipe_lines import PipeLineReader

    r_fd, w_fd = os.pipe()
    reader = PipeLineReader(os.fdopen(r_fd, "rb"))
    if prepare is not None:
        prepare(reader)
    got: list[str] = []
    rng = random.Random(2)
    at = 0
    while at < len(blob):
        n = rng.choice([1, 3, 7, 100, 4000])
        os.write(w_fd, blob[at:at + n])
        at += n
        got += reader.read(10_000)
    os.close(w_fd)
    while not reader.eof:
        got += reader.read(10_000)
    reader.close()
    return got, reader


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "cut-short"])
def test_run_reads_a_gzip_stream_on_standard_input_and_names_one_cut_short(tmp_path, cut):
    import subprocess
    import sys

    blob = gzip.compress(b"".join(_lines(20_000)))
    src = tmp_path / "in.gz"
    src.write_bytes(blob[:-3000] if cut else blob)
    out = tmp_path / "s.json"
    with src.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", "-", "--quiet",
                               "--summary-json", str(out)], stdin=stdin, capture_output=True, text=True, timeout=300)
    summary = json.loads(out.read_text())
    # (cut short: the half line at the cut is a dead letter, as a pipe's last line cut by its writer is -- never dropped)
    assert summary["invalid"] == ({"not_json": 1} if cut else {}), summary["invalid"]
    if not cut:
        assert proc.returncode == 0 and summary["records"] == 20_000, proc.stderr
        return
    assert proc.returncode == 1 and 0 < summary["records"] < 20_000, proc.stderr
    assert "standard input (gzip) ended before its compressed stream did" in proc.stderr, proc.stderr


@pytest.mark.parametrize("head, what", [(b"PAR1\x15\x04", "a Parquet file"), (b"PK\x03\x04\x14\x00", "a zip archive"),
                                        (b"SQLite format 3\x00", "an SQLite database")])
def test_records_that_are_no_text_on_standard_input_are_refused_not_read_as_lines(head, what):
    """A Parquet file or a workbook piped into the run was read as lines, every one a dead letter; its first bytes
    now say what it is (however the pipe cuts them), and the run stops naming it."""
    from streamarms.errors import ConfigError

    with pytest.raises(ConfigError, match=f"standard input is {what}, not lines of text: give the file itself as "
                                          "--rewards-file"):
        piped(head + bytes(range(256)) * 20)


@pytest.mark.parametrize("head, what", [(b"PAR1\x15\x04", "a Parquet file"), (b"PK\x03\x04\x14\x00", "a zip archive"),
                                        (gzip.compress(b"x"), "a gzip file")])
def test_a_compressed_file_that_holds_no_text_is_refused_with_the_command_that_decompresses_it(tmp_path, capsys, head,
                                                                                              what):
    """A ``.parquet.gz`` was decompressed and read as lines: ``inspect`` showed one column named ``PAR1<8L`` and rows
    of garbage, ``run`` said the reward field was missing. The decompressed bytes now say what they are, in a file and
    on standard input."""
    from streamarms.errors import ConfigError

    blob = gzip.compress(head + bytes(range(256)) * 20)
    p = tmp_path / "e.parquet.gz"
    p.write_bytes(blob)
    said = f"{p} is {what} compressed with gzip, no text: decompress it first (zcat {p} > {tmp_path / 'e.parquet'})"
    assert run_main(["--rewards-file", str(p), "--checkpoint", "none"]) == 2
    assert said in capsys.readouterr().err
    assert main(["inspect", str(p)]) == 2
    assert said in capsys.readouterr().err
    with pytest.raises(ConfigError, match=f"standard input is {what} compressed with gzip, no text: decompress it "
                                          "into a file"):
        piped(blob)
    got, _ = piped(gzip.compress(b"PA\n" * 3))  # (text that starts as a format's bytes do is read)
    assert got == ["PA"] * 3


def test_records_found_to_be_no_text_once_read_end_the_run_as_a_bad_configuration(tmp_path):
    """A Parquet file piped in is known for what it is only once its bytes arrive: the run stopped with exit 1, a
    runtime failure (a broker gone); it is exit 2 now, as the same file named by --rewards-file is."""
    import subprocess
    import sys

    src = tmp_path / "e.parquet.gz"
    src.write_bytes(gzip.compress(b"PAR1\x15\x04" + bytes(range(256)) * 20))
    summary = tmp_path / "s.json"
    with src.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "streamarms.cli", "run", "--rewards-file", "-", "--quiet",
                               "--summary-json", str(summary)], stdin=stdin, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "standard input is a Parquet file compressed with gzip, no text" in proc.stderr
    # (the summary's stop_reason is the error: it was null after every error)
    assert json.loads(summary.read_text())["stop_reason"].startswith("error: standard input is a Parquet file")

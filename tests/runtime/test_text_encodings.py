"""Files that are not UTF-8 (``connectors/text_encoding.py``): a Windows code page read with ``--encoding``, UTF-16
with its byte-order mark read as it is (Excel's Unicode Text, PowerShell's ``Out-File``), each resumable at every line
of a checkpoint. Before, every key with an accented letter of a cp1252 export was refused (``key_not_utf8``), and a
UTF-16 file's lines were bytes with NULs between them."""

from __future__ import annotations

import json
import os
import random

import pytest
from test_compressed_files import piped, resumes_at_every_line

from streamarms.connectors.compressed_lines import CompressedLineReader, open_lines
from streamarms.connectors.files import JsonlSource
from streamarms.connectors.jsonl_lines import LineReader
from streamarms.connectors.text_encoding import Utf16Stream, advice, check_encoding, guess, utf16_unmarked
from streamarms.errors import ConfigError

#: names with letters outside ASCII, as the files of a Western European labelling team have them
NAMES = ["Müller", "Jäger", "Ørsted", "Çelik", "Šimůnek", "Núñez", "O'Brien", "Łukasz"]
#: ... those Windows-1252 writes
CP1252_NAMES = ["Müller", "Jäger", "Ørsted", "Çelik", "Núñez", "O'Brien"]


def _rows(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(CP1252_NAMES)}{rng.randrange(3)};{rng.randrange(2)}" for _ in range(n)]


def _drain(src: JsonlSource) -> list:
    out = []
    while not src.exhausted:
        out += src.poll()
    return out


def test_a_cp1252_table_is_read_as_its_text_with_encoding_and_refused_key_by_key_without(tmp_path):
    rows = _rows(2_000)
    p = tmp_path / "labels.csv"
    p.write_bytes(("worker;wrong\r\n" + "\r\n".join(rows) + "\r\n").encode("cp1252"))
    src = JsonlSource([str(p)], tables={str(p): ","}, encoding="cp1252")
    got = _drain(src)
    src.close()
    assert [json.loads(r.value)["worker"] for r in got] == [r.split(";")[0] for r in rows]
    assert [r.key for r in got] == [None] * len(rows)  # (the key is named by --key-field: the codec reads it)
    # read as UTF-8 (the default), the same bytes: each accented name a byte that is no UTF-8 (kept, then refused)
    src = JsonlSource([str(p)], tables={str(p): ","})
    plain = _drain(src)
    src.close()
    assert sum("\udcfc" in json.loads(r.value.decode("utf-8", "surrogateescape"))["worker"] for r in plain) > 100


@pytest.mark.parametrize("encoding", ["cp1252", "latin-1", "cp1250"])
def test_a_code_page_reader_resumes_at_every_line(tmp_path, encoding):
    """Positions stay the file's bytes: a checkpoint at any line (``\\r\\n`` ends, a last line without one) resumes
    exactly, as for UTF-8."""
    names = [n for n in NAMES if _encodes(n, encoding)]
    rng = random.Random(7)
    text = [json.dumps({"arm": rng.choice(names), "reward": rng.randrange(2)}, ensure_ascii=False) for _ in range(300)]
    p = tmp_path / "r.jsonl"
    p.write_bytes(("\r\n".join(text[:150]) + "\n" + "\n".join(text[150:])).encode(encoding))
    r = LineReader(str(p))
    r.encoding = check_encoding(encoding)
    got = r.read(1000)
    assert got == text

    def reopen(i: int, pos: int, digest: str) -> LineReader:
        r2 = LineReader(str(p), line=i, pos=pos, digest=digest)
        r2.encoding = check_encoding(encoding)
        return r2

    resumes_at_every_line(r, got, reopen, 11)


def _encodes(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_a_utf16_file_with_its_mark_is_read_and_resumed_at_every_line(tmp_path, codec):
    """UTF-32 too (it was read as bytes: a header of one column, ``\\udcff\\udcfe w o r k e r``)."""
    rng = random.Random(9)
    text = ["Datum\tArbeiter\tFehler"] + [f"30.11.2026\t{rng.choice(NAMES)}\t{rng.randrange(2)}" for _ in range(400)]
    p = tmp_path / "export.txt"
    p.write_bytes("\ufeff".encode(codec) + "\r\n".join(text).encode(codec))  # (Excel: CRLF, no last line end)
    r = open_lines(str(p))
    assert isinstance(r, CompressedLineReader) and r.kind == codec[:6]
    assert r.first_line() == text[0]
    got = r.read(1000)
    r.read(1)
    assert got == text[:-1] and r.incomplete  # (a tab-separated last row without its line end: no JSON object)
    assert r.tell() == p.stat().st_size  # (a replay's progress: against the size on disk)
    resumes_at_every_line(r, got, lambda i, pos, digest: open_lines(str(p), line=i, pos=pos, digest=digest), 13)


def test_a_utf16_table_replays_through_the_source_as_its_utf8_copy(tmp_path):
    rows = [r.replace(";", "\t") for r in _rows(3_000)]
    text = "worker\twrong\r\n" + "\r\n".join(rows) + "\r\n"
    marked, plain = tmp_path / "u.tsv", tmp_path / "p.tsv"
    marked.write_bytes(text.encode("utf-16"))
    plain.write_bytes(text.encode("utf-8"))
    values = []
    for path, encoding in ((marked, "cp1252"), (plain, "utf-8")):  # (the mark wins over --encoding)
        src = JsonlSource([str(path)], tables={str(path): "\t"}, encoding=encoding)
        values.append([r.value for r in _drain(src)])
        src.close()
    assert values[0] == values[1] and len(values[0]) == 3_000


def test_a_followed_utf16_file_and_one_without_its_mark_are_refused_naming_the_conversion(tmp_path):
    p = tmp_path / "ps.log"
    p.write_bytes('{"arm": "a", "reward": 1}\r\n'.encode("utf-16"))
    with pytest.raises(ConfigError, match="UTF-16 text .*--follow.*iconv -f UTF-16 -t UTF-8"):
        open_lines(str(p), follow=True)
    q = tmp_path / "bare.csv"
    q.write_bytes("arm,reward\n".encode("utf-16-le"))
    with pytest.raises(ConfigError, match="without a byte-order mark.*iconv -f UTF-16LE -t UTF-8"):
        open_lines(str(q))


def test_a_utf16_stream_on_standard_input_is_read_as_its_text(tmp_path):
    """PowerShell 5 pipes UTF-16 text: read in pieces of any size (a code unit cut between two reads)."""
    lines = [json.dumps({"arm": random.Random(i).choice(NAMES), "reward": i % 2}, ensure_ascii=False)
             for i in range(500)]

    def given_cp1252(reader):  # (--encoding given: the mark says what the text is)
        reader.encoding = "cp1252"

    got, reader = piped("\r\n".join(lines).encode("utf-16"), given_cp1252)
    assert reader.kind == "utf-16" and got == lines
    got, reader = piped("\r\n".join(lines).encode("utf-32"), given_cp1252)
    assert reader.kind == "utf-32" and got == lines


def test_the_utf16_stream_seeks_backwards_by_reading_again():
    import io

    text = "".join(f"{n}{i}\n" for i, n in enumerate(NAMES * 50))
    s = Utf16Stream(io.BytesIO(text.encode("utf-16")))
    data = text.encode("utf-8")
    for at in (0, 5, 1000, 17, len(data) - 3, 3):
        assert s.seek(at) == at and s.read(40) == data[at:at + 40]
    assert s.seek(len(data) + 10) == len(data) and s.read(5) == b""


@pytest.mark.parametrize("name, ok", [("cp1252", "cp1252"), ("Windows-1252", "cp1252"), ("latin1", "iso8859-1"),
                                      ("shift_jis", "shift_jis"), ("gb18030", "gb18030"), ("utf-8", "utf-8")])
def test_check_encoding_takes_the_codecs_whose_lines_are_ascii_s(name, ok):
    assert check_encoding(name) == ok


@pytest.mark.parametrize("name, says", [("utf-16", "read without --encoding"), ("utf-32-le", "not ASCII's bytes"),
                                        ("cp037", "not ASCII's bytes"), ("klingon", "no such encoding"),
                                        ("rot13", "not ASCII's bytes"), ("idna", "not ASCII's bytes")])
def test_check_encoding_refuses_what_cannot_be_split_into_lines(name, says):
    with pytest.raises(ConfigError, match=says):
        check_encoding(name)


def test_guess_names_cp1252_for_western_text_only():
    western = "Datum;Arbeiter;Bemerkung\n30.11.2026;Müller;größer als erwartet, Ångström\n".encode("cp1252")
    assert guess(western) == "cp1252"
    assert guess("名前,値\n田中,1\n".encode("shift_jis")) is None  # (a multi-byte code page: bytes in runs)
    assert guess("Müller".encode()) is None and guess(b"") is None
    assert guess("abc Müller".encode()[:-5]) is None  # (UTF-8 cut in a sequence at the end of the sample)
    said = advice("x.csv", western)
    assert said is not None and "line 2" in said and "--encoding cp1252" in said
    assert "--encoding NAME" in str(advice("y.csv", "名前\n".encode("shift_jis")))
    assert advice("z.csv", "Müller\n".encode()) is None


def test_utf16_unmarked_needs_text_in_every_code_unit():
    assert utf16_unmarked("a", "arm,reward\n".encode("utf-16-be")) is not None
    assert utf16_unmarked("a", b"arm,reward\x00\x00\x00\x00") is None
    assert utf16_unmarked("a", "ar".encode("utf-16-le")) is None  # (too short to tell)


@pytest.mark.parametrize("mode", ["rename", "copytruncate"])
def test_a_followed_code_page_log_is_read_in_it_through_its_rotations(tmp_path, mode):
    """Each file a follower comes to -- the rotated one read on, a copy, the new file at the path -- is read in the
    files' encoding, not only the first."""
    import shutil

    def lines(first: int, last: int) -> bytes:
        return b"".join(json.dumps({"arm": CP1252_NAMES[i % 6], "reward": i % 2, "i": i}, ensure_ascii=False)
                        .encode("cp1252") + b"\r\n" for i in range(first, last))

    p = tmp_path / "app.log"
    p.write_bytes(lines(0, 100))
    src = JsonlSource([str(p)], follow=True, encoding="cp1252")
    got = []
    for _ in range(3):
        got += src.poll(0.0)
    with open(p, "ab") as f:
        f.write(lines(100, 150))
    if mode == "rename":
        os.replace(p, f"{p}.1")
        p.write_bytes(b"")
    else:
        shutil.copyfile(p, f"{p}.1")
        with open(p, "r+b") as f:
            f.truncate(0)
    with open(p, "ab") as f:
        f.write(lines(150, 200))
    for _ in range(10):
        got += src.poll(0.0)
    src.close()
    assert src.failure is None and src.rotations == 1
    assert [json.loads(r.value)["arm"] for r in got] == [CP1252_NAMES[i % 6] for i in range(200)]

"""Drill: every input format, its bytes mutated, through ``streamarms run`` and ``streamarms inspect`` -- and every
checkpoint kind, its state mutated with its checksum made again, through a restart and ``streamarms explain``.

The JSON-lines drill (``test_drills.py``) fuzzes records; the formats added since (tables, UTF-16 and UTF-32, access
and application logs, W3C, container logs, compressed files, workbooks, Parquet) are read by parsers of their own,
and a checkpoint's shape was trusted once its checksum held. Mutating them found seven ways to crash or stop with
``cannot start`` (exit 1) where a clear error was due: a gzip file damaged inside (``zlib.error``), a workbook's
damaged sheet XML or a ``.xlsx`` cut short, a checkpoint's ``run`` or ``scheduler`` block that is no object, a
monitor's threshold totals or interval of another shape; later, a checkpoint without its ``source`` block and one
holding an integer too large for a float. Each mutated input must now end as a run does (exit 0), as a clear error
(exit 2), or -- a compressed file, workbook or Parquet file damaged after whole lines -- with those lines read and
the run failing naming the damage (exit 1); never with a traceback. Seeded: the same mutations every run.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
import os
import random
import traceback
from collections.abc import Iterator

import pytest

from streamarms.checkpoint import FileCheckpointStore
from streamarms.cli import main

pytestmark = pytest.mark.drill

#: mutations of each clean file, and of each checkpoint (``STREAMARMS_FUZZ_MUTANTS=1000`` for a longer search)
MUTANTS = int(os.environ.get("STREAMARMS_FUZZ_MUTANTS", "60"))


def _clean(fmt: str, n: int = 1500) -> tuple[bytes, list[str], str]:
    """A clean file of ``fmt`` (``n`` records of 7 hosts), the flags that read it, and its name's ending."""
    r = random.Random(7)
    host = [f"h{i % 7}" for i in range(n)]
    if fmt == "csv":
        rows = ["host,ms,err"] + [f"{host[i]},{r.uniform(1, 900):.2f},{int(r.random() < 0.1)}" for i in range(n)]
        return ("\n".join(rows) + "\n").encode(), ["--key-field", "host", "--reward-field", "err"], ".csv"
    if fmt == "csv-utf32":  # (.NET's Encoding.UTF32, with its mark)
        rows = ["host,err"] + [f"{host[i]},{int(r.random() < 0.1)}" for i in range(n)]
        return ("\ufeff" + "\n".join(rows) + "\n").encode("utf-32-le"), ["--key-field", "host", "--reward-field",
                                                                          "err"], ".csv"
    if fmt == "tsv-utf16":  # (Excel's Unicode Text in a locale with decimal commas)
        rows = ["host\tms"] + [f"{host[i]}\t{r.uniform(1, 900):.2f}".replace(".", ",") for i in range(n)]
        return ("\ufeff" + "\r\n".join(rows) + "\r\n").encode("utf-16-le"), [
            "--rewards-format", "tsv", "--decimal-comma", "--key-field", "host", "--reward-field", "ms",
            "--reward-model", "bounded", "--reward-range", "0,1000", "--clip"], ".txt"
    if fmt == "combined":
        rows = [f'10.0.0.{i % 9} - - [30/Nov/2026:10:{i // 60 % 60:02d}:{i % 60:02d} +0000] "GET /api/cart/{i} '
                f'HTTP/1.1" {500 if r.random() < 0.1 else 200} {r.randrange(9999)} "-" "curl/8.0"' for i in range(n)]
        return ("\n".join(rows) + "\n").encode(), ["--line-pattern", "combined", "--key-field", "remote_addr",
                                                   "--reward-field", "status", "--reward-at-least", "500"], ".log"
    if fmt == "logfmt":
        rows = [f'ts=2026-11-30T10:00:{i % 60:02d}Z level={"error" if r.random() < 0.1 else "info"} host={host[i]} '
                f'msg="req {i} done"' for i in range(n)]
        return ("\n".join(rows) + "\n").encode(), ["--line-pattern", "logfmt", "--key-field", "host",
                                                   "--reward-field", "level", "--reward-in", "error"], ".log"
    if fmt == "w3c":
        rows = ["#Software: Microsoft Internet Information Services 10.0",
                "#Fields: date time s-ip cs-method cs-uri-stem sc-status time-taken"] + [
            f"2026-11-30 10:00:{i % 60:02d} 10.0.0.{i % 7} GET /x/{i} {500 if r.random() < 0.1 else 200} 9"
            for i in range(n)]
        return ("\r\n".join(rows) + "\r\n").encode(), ["--rewards-format", "w3c", "--key-field", "s-ip",
                                                       "--reward-field", "sc-status", "--reward-at-least", "500"], ".log"
    if fmt == "container":
        rows = [f"2026-11-30T10:00:{i % 60:02d}.000000001Z stdout F " + json.dumps(
            {"host": host[i], "level": "error" if r.random() < 0.1 else "info"}) for i in range(n)]
        return ("\n".join(rows) + "\n").encode(), ["--rewards-format", "container", "--key-field", "host",
                                                   "--reward-field", "level", "--reward-in", "error"], ".log"
    if fmt == "jsonl-gz":
        rows = [json.dumps({"arm": host[i], "reward": int(r.random() < 0.1)}) for i in range(n)]
        return gzip.compress(("\n".join(rows) + "\n").encode()), [], ".jsonl.gz"
    if fmt == "xlsx":
        openpyxl = pytest.importorskip("openpyxl")
        book = openpyxl.Workbook()
        sheet = book.active
        sheet.append(["host", "err"])
        for i in range(n):
            sheet.append([host[i], int(r.random() < 0.1)])
        book.active.title = "Export"
        book.create_sheet("About", 0).append(["a cover note"])  # (the rows on a sheet that is not the first)
        out = io.BytesIO()
        book.save(out)
        return out.getvalue(), ["--sheet", "Export", "--key-field", "host", "--reward-field", "err"], ".xlsx"
    if fmt == "parquet":
        pa, pq = pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")
        table = pa.table({"host": host, "err": [int(r.random() < 0.1) for _ in range(n)],
                          "ms": [r.uniform(1, 900) for _ in range(n)]})
        out = io.BytesIO()
        pq.write_table(table, out, row_group_size=300)  # (several row groups: damage after whole rows)
        return out.getvalue(), ["--key-field", "host", "--reward-field", "err"], ".parquet"
    raise KeyError(fmt)


#: bytes a mutation inserts: separators, quotes, line ends, bytes that are no UTF-8, a byte-order mark, a huge line
JUNK = [b"\x00", b"\xff\xfe", b"\n", b"\r", b"\t", b",", b";", b'"', b"\\", b"{", b"}", b"[", b"\xc3", b"NaN", b"1e999",
        b"\xef\xbb\xbf", b"#Fields: a b\n", b"x" * 300_000, b" F ", b"="]


def _mutated(data: bytes, r: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(r.choice([1, 3, 10, 50])):
        op, at = r.random(), r.randrange(max(len(b), 1))
        if op < 0.3:
            b[at:at + 1] = bytes([r.randrange(256)])
        elif op < 0.6:
            b[at:at] = r.choice(JUNK)
        elif op < 0.8:
            del b[at:at + r.randrange(1, 200)]
        elif op < 0.9:
            del b[at:]
        else:
            j = r.randrange(max(len(b), 1))
            b[at:at] = b[j:j + r.randrange(1, 500)]
    return bytes(b)


def _call(argv: list[str]) -> tuple[object, str]:
    """``main(argv)`` in this process: its exit code (``"raised"`` with the traceback when an exception escaped),
    and what it wrote."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
            code = main(argv)
    except SystemExit as e:
        code = e.code
    except BaseException:  # noqa: BLE001  (what the drill looks for)
        return "raised", traceback.format_exc()
    return code, out.getvalue()


def _fine(command: str, code: object, said: str) -> bool:
    if "Traceback" in said or "cannot start:" in said:
        return False
    if code in (0, 2):
        return True
    # exit 1: a damaged compressed file or workbook after whole lines (read, then the run fails naming it), or
    # inspect finding no field in what is left of a file
    return code == 1 and ("cut short or damaged" in said or (command == "inspect" and "no field found" in said))


@pytest.mark.parametrize("fmt", ["csv", "tsv-utf16", "csv-utf32", "combined", "logfmt", "w3c", "container", "jsonl-gz",
                                 "xlsx", "parquet"])
def test_a_mutated_file_of_every_format_is_read_or_refused_never_a_crash(tmp_path, fmt):
    """The clean file runs as usual; each mutant through ``run`` (dead letters to a file) and ``inspect``."""
    data, flags, ext = _clean(fmt)
    format_flags = flags[:2] if flags[:1] in (["--rewards-format"], ["--sheet"]) else []
    bad = []
    for k in range(MUTANTS + 1):
        p = tmp_path / f"in{ext}"
        p.write_bytes(data if k == 0 else _mutated(data, random.Random(1000 * len(fmt) + k)))
        for argv in (["run", "--rewards-file", str(p), *flags, "--checkpoint", "none", "--quiet", "--max-episodes",
                      "2", "--dead-letter-file", str(tmp_path / "dead.jsonl")], ["inspect", str(p), *format_flags]):
            code, said = _call(argv)
            if not _fine(argv[0], code, said) or (k == 0 and code != 0):
                bad.append(f"mutant {k}, {argv[0]}: exit {code}: {said.strip()[-600:]}")
    assert not bad, "\n".join(bad)


def _leaves(o: object, path: tuple = ()) -> Iterator[tuple]:
    """The path of every part of ``o`` (a checkpoint's state), leaves and the objects and lists above them."""
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _leaves(v, (*path, i))
    if path:
        yield path


#: what a mutation puts in place of a part of a checkpoint's state (``KeyError``: the part removed)
SWAPS = [None, -1, 0, 1, 2 ** 70, 10 ** 400, 1e308, -1e308, 0.5, "x", "", [], {}, True, [1, 2], {"a": 1}, "1e999", KeyError]


@pytest.mark.parametrize("kind", ["wrr", "cs", "continuous"])
def test_a_checkpoint_mutated_with_its_checksum_made_again_is_resumed_or_refused_never_a_crash(tmp_path, kind):
    """Parts of a real checkpoint replaced by another type or value, or removed; each mutant through a restart,
    ``explain`` and ``explain --table``."""
    rows = tmp_path / "r.csv"
    r = random.Random(3)
    rows.write_text("host,err\n" + "".join(f"h{i % 7},{int(r.random() < (0.4 if i % 7 == 3 else 0.1))}\n"
                                           for i in range(20_000)))
    ck = tmp_path / "c.ckpt"
    flags = ["run", "--rewards-file", str(rows), "--key-field", "host", "--reward-field", "err", "--checkpoint",
             str(ck), "--quiet", *({"wrr": ["--max-episodes", "2"], "cs": ["--policy", "cs", "--max-episodes", "2"],
                                   "continuous": ["--forever"]}[kind])]
    assert _call(flags)[0] == 0
    store = FileCheckpointStore(ck)
    clean = store.load()
    parts = list(_leaves(clean))
    bad = []
    for k in range(MUTANTS):
        rng = random.Random(k)
        doc = copy.deepcopy(clean)
        for _ in range(rng.choice([1, 1, 2, 3])):
            *up, last = rng.choice(parts)
            at = doc
            try:
                for name in up:
                    at = at[name]
                if isinstance(at, dict) != isinstance(last, str):  # (a list an earlier mutation made an object)
                    continue
                swap = rng.choice(SWAPS)
                if swap is KeyError:
                    del at[last]
                else:
                    at[last] = swap
            except (KeyError, IndexError, TypeError):  # (a part an earlier mutation removed or replaced)
                pass
        for argv in (flags, ["explain", str(ck)], ["explain", str(ck), "--table"]):
            store.save(doc)  # (a restart writes its own checkpoint: each command starts from the mutant)
            code, said = _call(argv)
            if not _fine(argv[0], code, said):
                bad.append(f"mutant {k}, {argv[0]}: exit {code}: {said.strip()[-600:]}")
    assert not bad, "\n".join(bad)

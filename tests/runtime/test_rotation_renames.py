"""A follower names the next rotation to read by a folder listing, then opens it: a rotation between the two shifts
the names (``F.1`` becomes ``F.2``, the path's file becomes ``F.1``), and the name listed is another file by then.

The retention rotation drill (``test_rotation_drill.py``, rotations every ~0.3 s) lost 3,000 and 6,393 lines so in
about one run of ten: the follower, behind, listed ``app.log.2.gz`` as the file after the one it had read, a rotation
renamed it ``app.log.3.gz`` before it opened it, and it read the newer file then at ``app.log.2.gz`` -- the file
between never. A file listed is opened by its name and taken only when it is still the file listed (its device and
inode); otherwise the folder is listed again (:func:`~streamarms.connectors.jsonl_lines.open_listed`)."""

from __future__ import annotations

import gzip
import os

import pytest

from streamarms.connectors import follow_rotations
from streamarms.connectors.files import JsonlSource


def _lines(first: int, last: int) -> bytes:
    return b"".join(b'{"arm": "k%d", "reward": %d, "n": %d}\n' % (n % 7, n % 3 == 0, n) for n in range(first, last))


def _rotate(p: str, t: int, gz: bool) -> None:
    """Shift ``p``'s rotations up by one, rename ``p`` to ``p.1`` (gzipped when ``gz``) with the time ``t`` (ns), and
    leave an empty file at ``p``."""
    for i in range(9, 0, -1):
        for ext in ("", ".gz"):
            if os.path.exists(f"{p}.{i}{ext}"):
                os.replace(f"{p}.{i}{ext}", f"{p}.{i + 1}{ext}")
    os.replace(p, f"{p}.1")
    os.utime(f"{p}.1", ns=(t, t))
    if gz:
        with open(f"{p}.1", "rb") as src, gzip.open(f"{p}.1.gz", "wb") as dst:
            dst.write(src.read())
        os.utime(f"{p}.1.gz", ns=(t, t))
        os.remove(f"{p}.1")
    open(p, "wb").close()


def _written(p: str, first: int, last: int, t: int) -> None:
    with open(p, "ab") as f:
        f.write(_lines(first, last))
    os.utime(p, ns=(t, t))


def _at_the_next_files_first_byte(p: str, gz: bool) -> JsonlSource:
    """A follower of ``p`` that read E (lines 0-99), rotated, and came to the file after it, F, empty at the path: at
    its first byte."""
    _written(p, 0, 100, 10**9)
    src = JsonlSource([p], follow=True)
    got = src.poll(0.0) + src.poll(0.0)
    _rotate(p, 10**9, gz)
    for _ in range(4):
        got += src.poll(0.0)
    assert len(got) == 100
    return src


def _numbers(records) -> list[int]:
    return [int(r.value.rsplit(b":", 1)[1].rstrip(b"}")) for r in records]


def _race(monkeypatch, name: str, listed: bool, rotation) -> list:
    """``follow_rotations.<name>`` (a listing) patched: the first time it finds a file (``listed``) or none, ``rotation()`` runs
    just after it -- a rotation between the listing and the opening. The list returned holds what it found then."""
    real, raced = getattr(follow_rotations, name), []

    def racing(*args):
        found = real(*args)
        if (found is not None) == listed and not raced:
            raced.append(found)
            rotation()
        return found

    monkeypatch.setattr(follow_rotations, name, racing)
    return raced


def _read_once(got: list, src: JsonlSource, raced: list, lines: range) -> None:
    """The race came (``raced``), the source did not fail, and ``got`` holds each of ``lines`` once, in order."""
    assert raced and src.failure is None
    assert _numbers(got) == list(lines) and [r.offset for r in got] == list(lines)


def _polled(src: JsonlSource, got: list | None = None) -> list:
    """``got`` and the records of 12 polls of ``src``, which is closed then."""
    got = list(got or [])
    for _ in range(12):
        got += src.poll(0.0)
    src.close()
    return got


@pytest.mark.parametrize("gz", [False, True], ids=["rename", "compress"])
def test_a_rotation_between_listing_the_next_file_and_opening_it_loses_no_file(tmp_path, monkeypatch, gz):
    p = str(tmp_path / "app.log")
    _written(p, 0, 100, 10**9)
    src = JsonlSource([p], follow=True)
    got = src.poll(0.0) + src.poll(0.0)
    _written(p, 100, 200, 2 * 10**9)  # F: lines 0-199, the follower at 100; rotated
    _rotate(p, 2 * 10**9, gz)
    _written(p, 200, 300, 3 * 10**9)  # G: 200-299, rotated before the follower looks
    _rotate(p, 3 * 10**9, gz)
    _written(p, 300, 400, 4 * 10**9)  # H: 300-399, at the path
    raced = _race(monkeypatch, "next_rotation", True,  # (G listed as the next to read: the next rotation comes now)
                  lambda: (_rotate(p, 4 * 10**9, gz), _written(p, 400, 500, 5 * 10**9)))
    got = _polled(src, got)
    _read_once(got, src, raced, range(500))


@pytest.mark.parametrize("gz", [False, True], ids=["rename", "compress"])
def test_a_restart_at_a_files_first_byte_loses_no_file_to_a_rotation_while_it_starts(tmp_path, monkeypatch, gz):
    """The checkpoint at the first byte of F (the follower had just come to it) names F by its number and first bytes
    (:mod:`~streamarms.connectors.start_mark`): the restart lists the rotations and opens F's; a rotation between
    the two gave F's name to the next file, which was read in F's place."""
    p = str(tmp_path / "app.log")
    src = _at_the_next_files_first_byte(p, gz)
    state = src.state()
    src.close()
    _written(p, 100, 200, 2 * 10**9)  # stopped: F (100-199) and G (200-299) rotated, H at the path
    _rotate(p, 2 * 10**9, gz)
    _written(p, 200, 300, 3 * 10**9)
    _rotate(p, 3 * 10**9, gz)
    _written(p, 300, 400, 4 * 10**9)
    raced = _race(monkeypatch, "first_to_read", True,  # (F listed as the file to read first: the rotation comes now)
                  lambda: (_rotate(p, 4 * 10**9, gz), _written(p, 400, 500, 5 * 10**9)))
    src = JsonlSource([p], follow=True, resume=state)
    got = _polled(src)
    _read_once(got, src, raced, range(100, 500))


@pytest.mark.parametrize("gz", [False, True], ids=["rename", "compress"])
def test_a_restart_at_the_first_byte_of_a_file_with_lines_rotated_while_stopped_reads_it(tmp_path, gz):
    """The checkpoint at the first byte of F, which had lines then (none read: the run stopped as it came to F); while
    stopped F was rotated (and compressed) and so was G after it. F is found by its first bytes as stored or, once
    compressed, decompressed (:func:`~streamarms.connectors.start_mark.first_to_read`): every line from F's first on
    is read once, in order."""
    p = str(tmp_path / "app.log")
    src = _at_the_next_files_first_byte(p, gz)
    _written(p, 100, 200, 2 * 10**9)  # F's lines, none read
    state = src.state()
    src.close()
    _rotate(p, 2 * 10**9, gz)  # stopped: F and G rotated, H at the path
    _written(p, 200, 300, 3 * 10**9)
    _rotate(p, 3 * 10**9, gz)
    _written(p, 300, 400, 4 * 10**9)
    src = JsonlSource([p], follow=True, resume=state)
    got = _polled(src)
    assert src.failure is None and src.owed.lost == 0
    assert _numbers(got) == list(range(100, 400)) and [r.offset for r in got] == list(range(100, 400))


@pytest.mark.parametrize("gz", [False, True], ids=["rename", "compress"])
def test_a_rotation_between_listing_no_rotation_and_opening_the_path_loses_no_file(tmp_path, monkeypatch, gz):
    """The follower read F (renamed away) to its end and listed the rotations: none after F, so the file at the path,
    G, is next. A rotation between that listing and the opening of the path by its name renamed G away (and
    compressed it), and the follower opened the newer H in G's place: G's lines were lost (found in the compress
    drill, 1,200 lines in a run of ~37). The path's file is now opened before the listing and held."""
    p = str(tmp_path / "app.log")
    _written(p, 0, 100, 10**9)
    src = JsonlSource([p], follow=True)
    got = src.poll(0.0) + src.poll(0.0)
    _rotate(p, 10**9, gz)  # F (0-99) rotated; G at the path
    _written(p, 100, 200, 2 * 10**9)
    raced = _race(monkeypatch, "next_rotation", False,  # (none after F: the path's G next -- the rotation comes now)
                  lambda: (_rotate(p, 2 * 10**9, gz), _written(p, 200, 300, 3 * 10**9)))
    got = _polled(src, got)
    _read_once(got, src, raced, range(300))


@pytest.mark.parametrize("gz", [False, True], ids=["rename", "compress"])
def test_a_restart_at_a_files_first_byte_loses_no_file_to_a_rotation_after_its_listing(tmp_path, monkeypatch, gz):
    """The checkpoint at the first byte of F, which is still at the path at the restart: no rotation to read first,
    so the restart opened the path by its name -- after a rotation between the listing and that opening had renamed
    F away and made a newer file, F's lines were lost. The path's file is opened before the listing and held."""
    p = str(tmp_path / "app.log")
    src = _at_the_next_files_first_byte(p, gz)
    _written(p, 100, 200, 2 * 10**9)  # F's lines, none read
    state = src.state()
    src.close()
    raced = _race(monkeypatch, "first_to_read", False,  # (F at the path: none to read first -- the rotation comes now)
                  lambda: (_rotate(p, 2 * 10**9, gz), _written(p, 200, 300, 3 * 10**9)))
    src = JsonlSource([p], follow=True, resume=state)
    got = _polled(src)
    _read_once(got, src, raced, range(100, 300))

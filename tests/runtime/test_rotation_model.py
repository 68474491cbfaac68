"""Property: a follower behind random rotations reads every line exactly once, in order.

Seeded sequences of a writer's appends, rotations (renamed; renamed and gzipped at once; copied and truncated;
copied, truncated and the copy gzipped), retention (the oldest rotations removed once read past, as logrotate's
``rotate N`` does), polls of a follower that reads less than the writer writes, and restarts from the follower's
checkpoint, in-process (no timing). Every file's modification time comes from a logical clock in the order the
writes happen (the real clock's ticks are coarser than this test's steps; a rotation is ordered by its mtime). The
drill (``test_rotation_drill.py``) does the same against the real clock and a real process, once per mode; this
runs many sequences. Its first runs found three ways to lose lines, each now mended (``connectors/files.py``):

- a restart from a checkpoint at the first byte of a file (the follower had just come to it) that was rotated while
  the run was stopped took the file at the path: every byte position 0 matches, so the lines of the checkpoint's
  file and of the rotations between were skipped (:mod:`~streamarms.connectors.start_mark` names the file);
- a follower that had read nothing of a file renamed away (and had not looked yet) took the empty files rotated
  after it for ``copytruncate`` copies, and left the file's lines;
- a ``copytruncate`` while the follower was behind, the file written again past its offset before it looked,
  had it read on there in the new bytes (``JsonlSource._uncut``).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil

import pytest

from streamarms.connectors.files import JsonlSource

MODES = ["rename", "compress", "copytruncate", "copytruncate-compress"]
#: rotations kept (older ones are removed once the follower has read past them)
KEEP = 2


class _Writer:
    """The log ``app.log`` and its rotations, and which lines each holds."""

    def __init__(self, folder, mode: str) -> None:
        self.p, self.mode, self.n, self.t = str(folder / "app.log"), mode, 0, 1_000
        #: the rotation chain, newest first: index 0 is the path's file; each entry (first line, end line)
        self.chain: list[list[int]] = [[0, 0]]
        open(self.p, "w").close()
        self._stamp(self.p)

    def _stamp(self, path: str) -> None:
        self.t += 1
        os.utime(path, ns=(self.t * 10**9, self.t * 10**9))

    def name(self, i: int) -> str:
        if i == 0:
            return self.p
        return f"{self.p}.{i}.gz" if os.path.exists(f"{self.p}.{i}.gz") else f"{self.p}.{i}"

    def write(self, k: int) -> None:
        with open(self.p, "a") as f:
            for _ in range(k):
                f.write(json.dumps({"arm": f"k{self.n % 7}", "reward": self.n % 3 == 0, "n": self.n}) + "\n")
                self.n += 1
        self._stamp(self.p)
        self.chain[0][1] = self.n

    def rotate(self) -> None:
        for i in range(len(self.chain) - 1, 0, -1):
            q = self.name(i)
            os.replace(q, q.replace(f".{i}", f".{i + 1}", 1) if q.endswith(".gz") else f"{self.p}.{i + 1}")
        if self.mode in ("rename", "compress"):
            os.replace(self.p, self.p + ".1")
            open(self.p, "w").close()
            self._stamp(self.p)
        else:  # copytruncate: the copy's time is when it is made
            shutil.copyfile(self.p, self.p + ".1")
            self._stamp(self.p + ".1")
            with open(self.p, "r+") as f:
                f.truncate(0)
            self._stamp(self.p)
        if self.mode.endswith("compress"):  # gzip F.1 -> F.1.gz, its times kept, F.1 removed
            st = os.stat(self.p + ".1")
            with open(self.p + ".1", "rb") as src, gzip.open(self.p + ".1.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.utime(self.p + ".1.gz", ns=(st.st_atime_ns, st.st_mtime_ns))
            os.remove(self.p + ".1")
        self.chain.insert(0, [self.n, self.n])

    def retire(self, read: int) -> None:
        """Remove the oldest rotations past :data:`KEEP` once the follower has read past them (never one with a line
        not read: that loss would be the test's, not the follower's)."""
        while len(self.chain) > KEEP + 1 and self.chain[-1][1] < read:
            os.remove(self.name(len(self.chain) - 1))
            self.chain.pop()


def _run(tmp_path, mode: str, seed: int) -> tuple[list[int], int, _Writer]:
    rng = random.Random(seed)
    w = _Writer(tmp_path, mode)
    src = JsonlSource([w.p], follow=True, max_records=rng.choice([20, 60, 150]))
    src.owed.look, lost = 0, 0  # (the rotations owed listed at every read: no file read is said lost)
    got: list[int] = []

    def poll(times: int) -> None:
        for _ in range(times):
            for r in src.poll(0.0):
                got.append(json.loads(r.value)["n"])
                assert r.offset == len(got) - 1, (r.offset, len(got))

    for _ in range(rng.randrange(40, 80)):
        op = rng.random()
        if op < 0.45:
            w.write(rng.randrange(1, 120))
        elif op < 0.6:
            w.rotate()
        elif op < 0.7:
            w.retire(len(got))
        elif op < 0.75:  # a restart from the checkpoint
            state = src.state()
            src.close()
            lost += src.owed.lost
            src = JsonlSource([w.p], follow=True, resume=state, max_records=src.max_records)
            src.owed.look = 0
        poll(rng.randrange(0, 3))
        assert src.failure is None, src.failure
    w.write(5)
    for _ in range(400):
        if len(got) >= w.n:
            break
        poll(1)
    failure = src.failure
    src.close()
    assert failure is None, failure
    assert lost + src.owed.lost == 0, "a rotation read was said lost"
    return got, w.n, w


@pytest.mark.parametrize("mode", MODES)
def test_a_follower_behind_random_rotations_reads_every_line_once(tmp_path, mode):
    for seed in range(40):
        folder = tmp_path / f"s{seed}"
        folder.mkdir()
        got, n, w = _run(folder, mode, seed)
        assert got == list(range(n)), (mode, seed, len(got), n, [e for e in w.chain])

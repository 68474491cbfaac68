"""Alert and dead-letter files that are not regular files: devices and pipes."""

from __future__ import annotations

import json

from streamarms.cli import main


def test_sinks_that_are_not_regular_files_take_the_run_and_its_checkpoints(tmp_path, capsys):
    """``--alerts-file /dev/null`` stopped the run at its first checkpoint (fsync of a device: EINVAL)."""
    p = tmp_path / "log.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 10}", "reward": int(i % 10 == 3 or i % 7 == 0)}) + "\n"
                         for i in range(20_000)) + "not json\n")
    ck = str(tmp_path / "c.ckpt")
    args = ["run", "--rewards-file", str(p), "--checkpoint", ck, "--max-episodes", "1",
            "--alerts-file", "/dev/null", "--dead-letter-file", "/dev/null"]
    assert main(args) == 0
    assert main(args) == 0  # resumed: nothing to cut back in a device
    assert "stopping on error" not in capsys.readouterr().err

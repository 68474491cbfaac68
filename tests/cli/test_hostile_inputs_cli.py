"""A user's hostile or unlucky files (session 47's drill): an output that is the input, a checkpoint path that is a
device or a pipe, keys with line breaks in the log, a hand-edited checkpoint's counters."""

from __future__ import annotations

import json
import os

import pytest

from streamarms.cli import main


def _log(path, n=3000):
    path.write_text("".join(json.dumps({"k": f"h{i % 10}", "r": int(i % 10 == 3)}) + "\n" for i in range(n)) + "bad\n")
    return str(path)


@pytest.mark.parametrize("flag", ["--dead-letter-file", "--alerts-file", "--summary-json", "--checkpoint"])
def test_an_output_that_is_the_input_file_is_refused_before_it_is_written(tmp_path, capsys, flag):
    """``--dead-letter-file`` on the file read appended the dead letters to the user's data and read them back
    (a followed file grew without end)."""
    data = _log(tmp_path / "d.jsonl")
    before = open(data, "rb").read()
    os.symlink(data, tmp_path / "same.jsonl")
    for out in (data, str(tmp_path / "same.jsonl")):
        assert main(["run", "--rewards-file", data, "--key-field", "k", "--reward-field", "r", flag, out]) == 2
        assert f"{flag} {out} is the file --rewards-file reads" in capsys.readouterr().err
    assert open(data, "rb").read() == before


def test_an_output_that_the_input_pattern_matches_is_refused(tmp_path, capsys):
    """A restart (or a followed pattern) would read the dead letters as records."""
    _log(tmp_path / "a.jsonl")
    pattern = str(tmp_path / "*.jsonl")
    dl = str(tmp_path / "dead.jsonl")
    assert main(["run", "--rewards-file", pattern, "--key-field", "k", "--reward-field", "r",
                 "--dead-letter-file", dl]) == 2
    assert f"--dead-letter-file {dl} is matched by --rewards-file {pattern}" in capsys.readouterr().err
    assert not os.path.exists(dl)
    assert main(["run", "--rewards-file", pattern, "--key-field", "k", "--reward-field", "r", "--episode-interval",
                 "0", "--dead-letter-file", str(tmp_path / "dead.txt")]) == 0


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "fifo"])
def test_a_checkpoint_path_that_is_no_regular_file_is_refused_not_read_without_end(tmp_path, capsys, path):
    """``--checkpoint /dev/zero`` read without end (2 GB in 6 s); a named pipe waited for a writer for ever."""
    if path == "fifo":
        path = str(tmp_path / "ff.ckpt")
        os.mkfifo(path)
    data = _log(tmp_path / "d.jsonl")
    assert main(["run", "--rewards-file", data, "--key-field", "k", "--reward-field", "r", "--checkpoint", path]) == 2
    err = capsys.readouterr().err
    assert f"checkpoint file {path} is a" in err and "not a regular file" in err and "--checkpoint none" in err
    assert main(["explain", path]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_key_with_a_line_break_cannot_forge_a_line_of_the_report_or_the_table(tmp_path, capsys):
    """A key ``web-3\\n<a log line>`` printed a forged "outliers none" line and split the ``--table`` row."""
    forged = "2026-12-02 04:26:32,384 INFO streamarms.run: episode 1 done: 15 arms, outliers none"
    bad = "web-3\n" + forged
    p = tmp_path / "inj.jsonl"
    p.write_text("".join(json.dumps({"host": bad if i % 15 == 0 else f"web-{i % 15}", "err": int(i % 7 == 0)}) + "\n"
                         for i in range(3000)))
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "err", "--table"]) == 0
    out = capsys.readouterr().out
    assert "web-3\\n" + forged in out
    assert not any(line.startswith(forged[:10]) for line in out.splitlines())


@pytest.mark.parametrize(("name", "value", "said"), [
    ("records", -5, "checkpoint counter 'records' is -5"),
    ("used", 10**30, "records used and 1 refused of 3,001 records: no run counts that"),
    ("used", 1.5, "checkpoint counter 'used' is 1.5"),
    ("ep_start_records", 10**6, "checkpoint counter 'ep_start_records' is 1000000"),
])
def test_a_re_signed_checkpoint_with_counters_no_run_counts_is_refused(tmp_path, capsys, name, value, said):
    """A hand-edited checkpoint with its checksum recomputed said "18,965 rewards used of 9,995 seen (189.7%)"."""
    from streamarms.checkpoint import decode, encode

    data = _log(tmp_path / "d.jsonl")
    ck = tmp_path / "c.ckpt"
    args = ["run", "--rewards-file", data, "--key-field", "k", "--reward-field", "r", "--checkpoint", str(ck),
            "--episode-interval", "0"]
    assert main(args) == 0
    doc = decode(ck.read_bytes())
    doc["scheduler"]["counters"][name] = value
    ck.write_bytes(encode(doc))
    capsys.readouterr()
    assert main(args) == 2
    assert said in capsys.readouterr().err


def test_the_lines_of_a_quoted_cell_with_a_line_break_are_refused_not_read_as_rows(tmp_path, capsys):
    """``w1,1,"ok`` / ``w9,0,fine"`` (one row, its comment with a line break) counted a record of key w9, reward 0;
    a stray quote that no line below closes refuses its own line only."""
    rows = "".join(f"w{i % 10},{int(i % 10 == 3)},x\n" for i in range(3000))
    p = tmp_path / "c.csv"
    p.write_text('worker,wrong,comment\nw1,1,"ok\nw9,0,fine"\n' + rows)
    dl = tmp_path / "dl.jsonl"
    args = ["run", "--rewards-file", str(p), "--key-field", "worker", "--reward-field", "wrong", "--episode-interval",
            "0", "--dead-letter-file", str(dl), "--summary-json", str(tmp_path / "s.json")]
    assert main(args) == 0
    letters = [json.loads(x) for x in dl.read_text().splitlines()]
    assert [d["line"] for d in letters] == [2, 3]
    assert "left open at its end, and line 3 closes it" in letters[0]["detail"]
    assert "opened on line 2" in letters[1]["detail"]
    assert json.loads((tmp_path / "s.json").read_text())["records"] == 3002
    p.write_text('worker,wrong,comment\nw1,1,"stray quote\n' + rows)  # never closed
    dl.unlink()
    assert main(args) == 0
    assert [json.loads(x)["line"] for x in dl.read_text().splitlines()] == [2]


def test_a_restart_says_that_the_unterminated_row_its_last_run_read_was_cut_mid_write(tmp_path, caplog):
    """A CSV's last row without its line end is read (most files end so); when the file then goes on with that line,
    the restart says the row was cut mid-write and read short (it was silently a wrong value and a bad_row)."""
    p = tmp_path / "lat.csv"
    p.write_text("host,ms\n" + "".join(f"h{i % 8},{100 + i % 50}\n" for i in range(3000)) + "h5,12")
    args = ["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "ms", "--reward-model", "bounded",
            "--reward-range", "0,2000", "--checkpoint", str(tmp_path / "c.ckpt"), "--episode-interval", "0"]
    assert main(args) == 0
    with open(p, "a") as f:
        f.write("34\nh5,200\n")
    caplog.clear()
    assert main(args) == 0
    said = [r.getMessage() for r in caplog.records if "cut mid-write" in r.getMessage()]
    assert len(said) == 1 and "its line 3,002 had no line end" in said[0]


@pytest.mark.parametrize("damage", ["cut", "trailing garbage"])
def test_a_damaged_gzip_file_has_every_line_before_the_damage_read(tmp_path, caplog, capsys, damage):
    """A gzip file cut short lost the whole lines of the last block read (8,914 of zcat's 9,799), and a warning
    said a later run would read its incomplete last line; trailing garbage lost 198 of 20,000 lines."""
    import gzip
    import subprocess

    lines = "".join(json.dumps({"host": f"h{i % 12}", "err": int(i % 19 == 0), "pad": "x" * 30}) + "\n"
                    for i in range(20_000)).encode()
    packed = gzip.compress(lines)
    p = tmp_path / "r.jsonl.gz"
    p.write_bytes(packed[:len(packed) // 2] if damage == "cut" else packed + b"garbage")
    whole = subprocess.run(["sh", "-c", f"zcat {p} 2>/dev/null | wc -l"], capture_output=True, text=True).stdout
    s = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "err", "--episode-interval",
                 "0", "--summary-json", str(s)]) == 1
    assert json.loads(s.read_text())["records"] == int(whole) == (20_000 if damage != "cut" else int(whole))
    assert "cannot be decompressed after its line" in capsys.readouterr().err
    assert not any("a later run reads it" in r.getMessage() for r in caplog.records)


def test_explain_says_why_a_continuous_keys_estimate_lies_outside_its_interval(tmp_path, capsys):
    """A burst of 6 errors early in a key's segment left the running intersection's lower end above the key's mean
    (estimate 0.0568, interval [0.066, 0.091]): sound, and read as a bug where nothing said why."""
    import random

    rnd = random.Random(0)
    hosts = [f"h{rnd.randrange(15)}" for _ in range(20_000)]
    lines = [json.dumps({"host": h, "err": int(rnd.random() < (0.3 if h == "h3" else 0.05))}) for h in hosts]
    lines[100:100] = [json.dumps({"host": "h1", "err": 1})] * 6
    p = tmp_path / "b.jsonl"
    p.write_text("\n".join(lines) + "\n")
    ck = str(tmp_path / "c.ckpt")
    assert main(["run", "--forever", "--rewards-file", str(p), "--key-field", "host", "--reward-field", "err",
                 "--checkpoint", ck]) == 0
    capsys.readouterr()
    noted = 0
    for key in sorted(set(hosts)):
        assert main(["explain", ck, key]) == 0
        ev = json.loads(capsys.readouterr().out)
        lo, hi = ev["interval"]
        assert ("note" in ev) == (not lo <= ev["estimate"] <= hi)
        noted += "note" in ev
    assert noted >= 1


def test_a_restart_without_the_checkpoints_policy_names_the_flag_that_resumes_it(tmp_path, capsys):
    """Resuming a cs checkpoint without --policy said "(this run: 'wrr')", not that wrr is only the default."""
    data = _log(tmp_path / "d.jsonl")
    args = ["run", "--rewards-file", data, "--key-field", "k", "--reward-field", "r", "--checkpoint",
            str(tmp_path / "c.ckpt"), "--episode-interval", "0"]
    assert main([*args, "--policy", "cs"]) == 0
    capsys.readouterr()
    assert main(args) == 2
    assert "(--policy cs resumes it; without --policy a run takes the default)" in capsys.readouterr().err


def test_dead_letters_name_json_kinds_in_json_words_and_a_long_integer_whole(tmp_path):
    """'a JSON NoneType / list / dict'; a 5,000-digit integer (valid JSON) was 'not_json' with Python's advice cut
    mid-word ('use sys.set_int_max_str_digits() t')."""
    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps({"k": f"h{i % 10}", "r": i % 2}) + "\n" for i in range(300))
                 + '{"k": "a", "r": null}\n{"k": "a", "r": [1]}\n{"k": "a", "r": {"x": 1}}\n'
                 + '{"k": "a", "r": ' + "1" * 5000 + "}\n")
    dl = tmp_path / "dl.jsonl"
    assert main(["run", "--rewards-file", str(p), "--key-field", "k", "--reward-field", "r", "--episode-interval", "0",
                 "--dead-letter-file", str(dl)]) == 0
    details = [json.loads(x)["detail"] for x in dl.read_text().splitlines()]
    assert [d.rsplit(": ", 1)[-1] for d in details[:3]] == ["null", "a JSON array", "a JSON object"]
    assert "a number of more than 4,300 digits" in details[3] and "set_int_max_str_digits" not in details[3]


def test_a_program_is_refused_as_no_text_and_a_tables_lines_of_spaces_are_blank(tmp_path, capsys):
    """/bin/ls gave 705 not_json dead letters and advice to try --encoding cp1252; a CSV line of spaces was a bad_row
    where a JSON lines file skips it."""
    assert main(["run", "--rewards-file", "/bin/ls", "--key-field", "k", "--reward-field", "r"]) == 2
    assert "/bin/ls is a program (an ELF executable or library), not lines of text" in capsys.readouterr().err
    p = tmp_path / "ws.csv"
    p.write_text("k,r\n" + "".join(f"h{i % 10},{int(i % 10 == 3)}\n   \n" for i in range(2000)))
    s = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--key-field", "k", "--reward-field", "r", "--episode-interval", "0",
                 "--summary-json", str(s)]) == 0
    out = json.loads(s.read_text())
    assert out["records"] == 2000 and sum(out["invalid"].values()) == 0


def test_simulate_says_when_too_few_arms_for_k_can_hold_an_outlier(capsys):
    """``--means 0.1,0.2,0.9 --k 2`` spent 928-1,553 pulls to return the empty set in silence (run warns of it)."""
    assert main(["simulate", "--policy", "cs", "--means", "0.1,0.2,0.9", "--k", "2", "--runs", "1", "--quiet"]) == 0
    assert "with 3 keys no key can be an outlier at k = 2" in capsys.readouterr().err
    assert main(["simulate", "--policy", "cs", "--means", "0.1,0.2,0.9", "--k", "1.2", "--runs", "1", "--quiet"]) == 0
    assert "no key can be an outlier" not in capsys.readouterr().err


def test_a_tsv_line_of_tabs_only_is_blank_in_a_clean_chunk_too(tmp_path):
    """``\\t\\t`` in an otherwise clean chunk was a record of an empty key (the fast path), skipped in another."""
    p = tmp_path / "r.tsv"
    p.write_text("arm\treward\tnote\n" + "".join(f"h{i % 10}\t{int(i % 10 == 3)}\tx\n\t\t\n" for i in range(2000)))
    s = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--episode-interval", "0", "--summary-json", str(s)]) == 0
    out = json.loads(s.read_text())
    assert out["records"] == 2000 and sum(out["invalid"].values()) == 0


def test_an_output_through_a_symlinked_directory_that_the_pattern_lists_is_refused(tmp_path, capsys):
    (tmp_path / "logs").mkdir()
    _log(tmp_path / "logs" / "a.jsonl")
    os.symlink(tmp_path / "logs", tmp_path / "linkdir")
    pattern = str(tmp_path / "logs" / "*.jsonl")
    dl = str(tmp_path / "linkdir" / "dead.jsonl")
    assert main(["run", "--rewards-file", pattern, "--key-field", "k", "--reward-field", "r",
                 "--dead-letter-file", dl]) == 2
    assert "is matched by --rewards-file" in capsys.readouterr().err

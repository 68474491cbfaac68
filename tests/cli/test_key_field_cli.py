"""``streamarms run --key-field NAME``: a stream keyed by a field of its values (no ``arm``, no Kafka key)."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.cli import main

HOSTS = [f"h{i:02d}" for i in range(20)]
BAD = ("h07", "h13")


def _log(path, n=60_000, seed=5, head=""):
    """Request log lines ``{"host", "err", "req"}`` (no arm): 10% errors, 50% on h07 and h13."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write(head)
        for i in range(n):
            h = HOSTS[i % len(HOSTS)]
            f.write(json.dumps({"host": h, "err": int(rng.random() < (0.5 if h in BAD else 0.1)), "req": i,
                                "timestamp": 1_700_000_000_000 + i}) + "\n")


POISON = ('{"err": 1}\n{"host": true, "err": 0}\n{"host": "h01", "err": 5}\n{"host": null, "err": 0}\n'
          'not json\n{"host": ["h01"], "err": 1}\n')


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever"]], ids=["episodes", "continuous"])
def test_the_outlier_hosts_of_a_log_keyed_by_a_field_are_found_and_bad_lines_dead_lettered(tmp_path, capsys, mode):
    p = tmp_path / "log.jsonl"
    _log(p, head=POISON)
    dlq, summary = tmp_path / "dlq.jsonl", tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--key-field", "host", "--reward-field", "err",
                 "--dead-letter-file", str(dlq), "--summary-json", str(summary), *mode]) == 0
    s = json.loads(summary.read_text())
    assert sorted(s["flagged"]) == list(BAD), s["flagged"]
    assert s["invalid"] == {"key_missing": 4, "out_of_model": 1, "not_json": 1}, s["invalid"]
    dead = [json.loads(x) for x in dlq.read_text().splitlines()]
    assert [d["reason"] for d in dead] == ["key_missing", "key_missing", "out_of_model", "key_missing", "not_json",
                                           "key_missing"]
    assert dead[0]["detail"] == "the value has no 'host' field (--key-field)"
    assert dead[1]["detail"] == "the 'host' field is a boolean, not a string or an integer (--key-field)"
    assert all(d["key"] is None for d in dead)  # each line's own key (it had none), not the field's
    assert dead[2]["value"] == '{"host": "h01", "err": 5}'


def test_without_key_field_the_same_log_says_which_flag_reads_the_key(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    _log(p, n=200)
    dlq = tmp_path / "dlq.jsonl"
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--reward-field", "err", "--max-episodes", "1",
                 "--dead-letter-file", str(dlq)]) == 2  # (every record refused)
    first = json.loads(dlq.read_text().splitlines()[0])
    assert first["reason"] == "key_missing" and "--key-field NAME" in first["detail"], first


def test_a_kafka_form_line_reads_the_key_field_in_its_value(tmp_path, capsys):
    p = tmp_path / "k.jsonl"
    p.write_text("".join(json.dumps({"key": f"r{i}", "value": {"w": HOSTS[i % 20], "reward": 1}}) + "\n"
                         for i in range(400)))
    out = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--key-field", "w", "--policy", "cs",
                 "--max-episodes", "1", "--summary-json", str(out)]) == 0
    s = json.loads(out.read_text())
    assert s["invalid"] == {} and s["records"] == 400, s
    assert "discovering keys (20 so far)" in capsys.readouterr().out


@pytest.mark.parametrize("extra,needle", [
    ([], "the embedded demo's records have keys of their own"),
    (["--bootstrap-servers", "localhost:1", "--rewards-topic", "t", "--group-threshold", "--policy", "cs"],
     "--key-field does not apply to --group-threshold"),
    (["--rewards-file", "-", "--key-field", " "], "--key-field needs a field name"),
])
def test_key_field_where_it_cannot_apply_is_refused_before_anything_runs(tmp_path, capsys, extra, needle):
    args = ["run", "--checkpoint", "none", *extra]
    if "--key-field" not in extra:
        args += ["--key-field", "host"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert needle in err, err


def test_a_restart_may_not_change_the_key_field(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    _log(p, n=300)
    ck = str(tmp_path / "c.ckpt")
    base = ["run", "--rewards-file", str(p), "--checkpoint", ck, "--reward-field", "err", "--max-episodes", "1"]
    assert main([*base, "--key-field", "host"]) == 0
    capsys.readouterr()
    assert main([*base, "--key-field", "req"]) == 2
    err = capsys.readouterr().err
    assert "--key-field 'host' (this run: 'req')" in err, err


@pytest.mark.parametrize("mode", [["--policy", "cs", "--max-episodes", "1"], ["--forever", "--group-by", "svc.id"]],
                         ids=["episodes", "continuous"])
def test_nested_key_and_reward_fields_by_dotted_names(tmp_path, mode):
    """A structured log nests its fields (``{"host": {"name": ..}, "http": {"err": ..}}``): dotted names read
    them, in both modes; a line with the field flat under its dotted name counts the same."""
    rng = random.Random(3)
    p = tmp_path / "log.jsonl"
    with open(p, "w") as f:
        for i in range(30_000):
            h = HOSTS[i % len(HOSTS)]
            err = int(rng.random() < (0.5 if h in BAD else 0.1))
            rec = {"host": {"name": h}, "http": {"err": err}, "svc": {"id": "web"}} if i % 7 else \
                {"host.name": h, "http.err": err, "svc.id": "web"}
            f.write(json.dumps(rec) + "\n")
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--key-field", "host.name",
                 "--reward-field", "http.err", "--summary-json", str(summary), *mode]) == 0
    s = json.loads(summary.read_text())
    assert sorted(s["flagged"]) == list(BAD) and not s["invalid"], s


@pytest.mark.parametrize("flag", ["--key-field", "--reward-field", "--group-by"])
def test_a_dotted_name_with_an_empty_step_is_refused(tmp_path, capsys, flag):
    p = tmp_path / "log.jsonl"
    _log(p, n=10)
    extra = ["--forever"] if flag == "--group-by" else []
    assert main(["run", "--rewards-file", str(p), flag, "host..name", *extra]) == 2
    assert f"{flag}: field path 'host..name' has an empty step" in capsys.readouterr().err

"""Configuration errors of ``streamarms run`` (issue 10 item 10): one line on stderr, exit 2, TOML values
through the same validators as the flags, an unknown key answered with the nearest valid one."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from streamarms.cli import main
from streamarms.cli.settings import DEFAULTS, resolve_settings
from streamarms.errors import ConfigError, StreamarmsError


def _run_config(tmp_path: Path, text: str, capsys, *flags: str) -> tuple[int, str]:
    p = tmp_path / "c.toml"
    p.write_text(text)
    code = main(["run", "--config", str(p), "--quiet", *flags])
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize("text, says", [
    ('metrics_port = "abc"', "metrics_port = 'abc': expected a TCP port"),
    ("metrics_port = 70000", "a TCP port is in 0..65535"),
    ("window = 0", "window = 0: expected a positive integer"),
    ("window = 2.5", "window = 2.5: expected a positive integer"),
    ('log_level = "loud"', "log_level = 'loud': choose one of debug, info, warning, error"),
    ('quiet = "yes"', "quiet = 'yes': expected true or false"),
    ('k = "two"', "k = 'two'"),
    ("k = true", "k = True: expected a number"),
    ('rewards_topic = 5', "rewards_topic = 5"),
    ("want_timeout = -1", "want_timeout = -1: expected a number >= 0"),
    ('key_ttl = "soon"', "key_ttl = 'soon': expected a number of seconds"),
    ('kafka = "x"', "[kafka] must be a table"),
    ("window = [", "--config"),  # not TOML at all
    ('arms = ",,"', "arms = ',,': expected key names A,B,.. (at least one"),  # was: no filter
])
def test_a_bad_toml_value_is_one_line_and_exit_2(tmp_path, capsys, text, says):
    code, err = _run_config(tmp_path, text, capsys)
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith("streamarms run: error: ") and says in err, err


@pytest.mark.parametrize("key, near", [("metrics_prot", "metrics_port"), ("bootstrap-server", "bootstrap_servers"),
                                       ("rewardstopic", "rewards_topic")])
def test_an_unknown_key_suggests_the_nearest(tmp_path, capsys, key, near):
    code, err = _run_config(tmp_path, f'{key} = "x"', capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert f"unknown setting {key!r} (did you mean {near!r}?)" in err, err


def test_an_unknown_key_far_from_all_names_has_no_suggestion(tmp_path, capsys):
    code, err = _run_config(tmp_path, 'zzzzqqq = 1', capsys)
    assert code == 2 and "unknown setting 'zzzzqqq'" in err and "did you mean" not in err


def test_a_missing_config_file(tmp_path, capsys):
    code = main(["run", "--config", str(tmp_path / "nope.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "no such file" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("flags, says", [
    (["--delta", "2"], "delta"),
    (["--policy", "gold", "--rho", "3"], "rho"),
    (["--reward-range", "0;1"], "--reward-range must be A,B"),
    (["--model-param", "oops"], "expected KEY=VALUE"),
    # a parameter the model does not take was ignored (bernoulli, bounded) or a TypeError (heavy_tailed, exit 1)
    (["--model-param", "foo=bar"], "the bernoulli reward model has no parameter 'foo' (its parameters: z_rule)"),
    (["--reward-model", "bounded", "--model-param", "foo=bar"], "no parameter 'foo' (its parameters: a, b)"),
    (["--reward-model", "heavy_tailed", "--moment-bound", "3", "--model-param", "foo=1"],
     "no parameter 'foo' (its parameters: p, B, estimator, C, delta0)"),
    # k beyond any key's reach (a typo) overflowed the intervals' arithmetic with a numpy warning and ran
    (["--k", "1e308"], "k must be a finite number > 0 and at most 1000, got 1e+308"),
    (["--k", "1e308", "--policy", "roai"], "and at most 1000, got 1e+308"),
    (["--k", "1e308", "--policy", "ade"], "and at most 1000, got 1e+308"),
    (["--mode", "active", "--rewards-file", "-"], "--mode active needs --requests-topic"),
    (["--passive-feed", "all", "--policy", "apt", "--threshold", "0.5", "--budget", "1000"],
     "--passive-feed all needs a policy whose guarantee holds for any sampling order"),
    (["--passive-feed", "all", "--mode", "active"], "passive_feed 'all' applies to passive mode only"),
    # a setting of another reward model or mode was ignored without a word (a trial: --reward-range without
    # --reward-model bounded refused every latency record as not 0/1, exit 0)
    (["--reward-range", "0,5000"], "--reward-range applies to --reward-model bounded, but the reward model is "
                                   "'bernoulli' (the default: 0/1 rewards): add --reward-model bounded"),
    (["--reward-model", "bounded", "--moment-bound", "5"], "--moment-bound: settings of the heavy_tailed reward model"),
    (["--estimator", "mom"], "--estimator: settings of the heavy_tailed reward model, but the reward model is "
                             "'bernoulli'"),
    (["--monitor-alpha", "0.01"], "--monitor-alpha applies to the continuous mode"),
    (["--max-groups", "3"], "--max-groups applies to the continuous mode"),
    (["--reward-model", "subgaussian"], "needs the rewards' scale around their key's mean: --model-param sigma=S"),
    # cs has no anytime sequence for the plain mean: it ran TEA under the name ea
    (["--policy", "cs", "--reward-model", "heavy_tailed", "--moment-bound", "9", "--estimator", "ea"],
     "choose tea or mom"),
])
def test_a_bad_setting_found_at_start_up_is_exit_2(tmp_path, capsys, flags, says):
    code = main(["run", "--quiet", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err


def test_k_beyond_any_key_is_refused_in_the_continuous_mode_too(tmp_path, capsys):
    """The monitor's k has the policies' bound (it overflowed with a numpy warning and ran)."""
    (tmp_path / "r.jsonl").write_text("".join(f'{{"arm": "k{i % 5}", "reward": {i % 2}}}\n' for i in range(50)))
    code = main(["run", "--quiet", "--mode", "continuous", "--rewards-file", str(tmp_path / "r.jsonl"),
                 "--checkpoint", "none", "--k", "1e308"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "k must be a finite number > 0 and at most 1000" in err, err


@pytest.mark.parametrize("value", ["", ",,", " , "])
def test_an_arms_filter_without_a_name_is_refused(capsys, value):
    """``--arms ''`` or ``--arms ,,`` ran as if no filter were given (every key taken)."""
    with pytest.raises(SystemExit) as e:  # argparse: one line, exit 2
        main(["run", "--quiet", "--arms", value])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"--arms: expected key names A,B,.. (at least one; leave the flag out to take every " \
        f"key), got {value!r}" in err, err


@pytest.mark.parametrize("flags, says", [
    (["--model-param", "foo=bar"], "the bernoulli reward model has no parameter 'foo' (its parameters: z_rule)"),
    (["--reward-model", "bounded", "--reward-range", "1,0"], "bounded reward model needs finite a < b"),  # was exit 1
    # was circular: "--moment-bound: ... drop them", then "needs a bound B ... --moment-bound B"
    (["--reward-model", "heavy_tailed", "--moment-bound", "9"], "needs a bounded reward model (bernoulli or bounded), "
                                                                "got 'heavy_tailed': give --reward-model bounded"),
    (["--delta", "0.05"], "its error level is --monitor-alpha"),
])
def test_a_bad_reward_model_of_the_continuous_mode_is_exit_2(tmp_path, capsys, flags, says):
    (tmp_path / "r.jsonl").write_text("".join(f'{{"arm": "k{i % 5}", "reward": {i % 2}}}\n' for i in range(50)))
    code = main(["run", "--quiet", "--mode", "continuous", "--rewards-file", str(tmp_path / "r.jsonl"),
                 "--checkpoint", "none", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err


@pytest.mark.parametrize("spec, says", [
    ("", "--checkpoint '' names no checkpoint: give PATH, dir:PATH or kafka:TOPIC, or none"),  # was: no checkpoint
    ("dir:", "--checkpoint 'dir:' names no directory (dir:PATH)"),  # was: [Errno 2] ... '' at the first save
    ("kafka:", "--checkpoint 'kafka:' names no topic (kafka:TOPIC)"),
    ("{tmp}/f/x.ckpt", "cannot write the checkpoint file {tmp}/f/x.ckpt: {tmp}/f is not a directory"),
    ("dir:{tmp}/f", "cannot write the chunked checkpoint directory {tmp}/f: {tmp}/f is not a directory"),
    ("{tmp}", "cannot write the checkpoint file {tmp}: it is a directory (a directory of incremental checkpoints "
              "is dir:PATH)"),
    pytest.param("/proc/x.ckpt", "cannot write the checkpoint file /proc/x.ckpt: no file can be created in /proc",
                 marks=pytest.mark.skipif(not Path("/proc/self").exists(), reason="no /proc")),
])
def test_a_checkpoint_that_cannot_be_written_is_refused_before_a_record_is_read(tmp_path, capsys, spec, says):
    """Such a run used to read its records, alert, and fail at its first checkpoint (or take '' for none)."""
    (tmp_path / "f").write_text("")
    (tmp_path / "r.jsonl").write_text("".join(f'{{"arm": "k{i % 5}", "reward": {i % 2}}}\n' for i in range(50)))
    code = main(["run", "--quiet", "--rewards-file", str(tmp_path / "r.jsonl"), "--alerts-file", str(tmp_path / "a"),
                 "--min-arms", "2", "--discovery-records", "5", "--checkpoint", spec.format(tmp=tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and says.format(tmp=tmp_path) in err, err
    assert not (tmp_path / "a").exists()  # nothing read, nothing alerted


def test_good_toml_values_equal_the_flags(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('window = 8\nwant_timeout = 2\nrewards_topic = "r"\nfrom_beginning = false\nlog_level = "debug"\n'
                 'metrics_port = 9000\nk = 3\nkey_ttl = 60\n[consumer]\nfetch_max_wait_ms = 100\n')
    from streamarms.cli.main import build_parser
    s = resolve_settings(build_parser().parse_args(["run", "--config", str(p)]))
    assert (s.window, s.want_timeout, s.rewards_topic, s.from_beginning, s.log_level, s.metrics_port, s.k) == \
        (8, 2.0, ["r"], False, "debug", 9000, 3.0)
    assert s.consumer_option == ["fetch_max_wait_ms=100"]
    assert s.key_ttl == 60.0 and resolve_settings(build_parser().parse_args(["run", "--key-ttl", "60"])).key_ttl == 60.0


def test_every_setting_has_a_flag():
    from streamarms.cli.settings import _flags
    assert set(_flags()) == set(DEFAULTS)


def test_the_error_hierarchy():
    from streamarms.checkpoint import CheckpointError
    from streamarms.runtime import InvalidRecord
    assert issubclass(ConfigError, StreamarmsError) and issubclass(ConfigError, ValueError)
    assert issubclass(InvalidRecord, StreamarmsError) and issubclass(InvalidRecord, ValueError)
    assert issubclass(CheckpointError, StreamarmsError)


def test_arrival_order_holds_a_polls_worth_of_rewards_per_planned_key_unless_told(tmp_path):
    """``--order arrival`` hands out a partition's records in runs of up to a poll: ``prefetch`` defaults to
    ``max_poll_records`` there (tests/runtime/test_arrival_order.py shows why); a given value is kept."""
    from streamarms.cli.main import build_parser

    def settings(*flags: str):
        return resolve_settings(build_parser().parse_args(["run", "--bootstrap-servers", "b:9092", *flags]))

    assert settings().prefetch == 32 and settings("--mode", "active").prefetch == 4
    assert settings("--order", "arrival").prefetch == 1000
    assert settings("--order", "arrival", "--max-poll-records", "300").prefetch == 300
    assert settings("--order", "arrival", "--prefetch", "4").prefetch == 4
    p = tmp_path / "c.toml"
    p.write_text('order = "arrival"\nprefetch = 8\n')
    assert resolve_settings(build_parser().parse_args(["run", "--config", str(p)])).prefetch == 8


def test_a_kafka_runs_alert_and_dead_letter_files_take_the_place_of_the_topics():
    """They were ignored with --bootstrap-servers (tests/kafka: the files take them now); both a file and a topic
    named, or a file with --exactly-once (its transaction holds Kafka's writes only), is an error."""
    from streamarms.cli.main import build_parser

    def settings(*flags: str):
        return resolve_settings(build_parser().parse_args(["run", "--bootstrap-servers", "b:9092", *flags]))

    s = settings("--alerts-file", "a.jsonl", "--dead-letter-file", "d.jsonl")
    assert (s.alerts_topic, s.dead_letter_topic, s.alerts_file) == (None, None, "a.jsonl")
    assert settings().alerts_topic == "streamarms-alerts"
    assert settings("--dead-letter-file", "d.jsonl").alerts_topic == "streamarms-alerts"
    for flags, says in ((["--alerts-file", "a", "--alerts-topic", "t"], "--alerts-file and --alerts-topic both say "
                                                                         "where the alerts go: give one"),
                        (["--dead-letter-file", "d", "--dead-letter-topic", "t"], "both say where the dead letters go"),
                        (["--alerts-file", "a", "--exactly-once"], "--exactly-once writes the alerts and dead letters "
                                                                   "in its Kafka transaction")):
        with pytest.raises(ConfigError, match=says):
            settings(*flags)


def test_subgaussian_rewards_from_the_command_line(tmp_path, capsys):
    """The README's ``subgaussian`` model was not a --reward-model choice: Gaussian-noise rewards (any real
    number) with a known scale, one key 4 sd above the rest."""
    rng = random.Random(1)
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 20}", "reward": rng.gauss(5.0 if i % 20 == 7 else 1.0, 1.0)})
                         + "\n" for i in range(20_000)))
    code = main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--policy", "cs", "--reward-model",
                 "subgaussian", "--model-param", "sigma=1", "--max-episodes", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "flagged now: k7" in out and "0 refused" in out, out


def test_toml_takes_a_range_as_a_list(tmp_path, capsys):
    """``reward_range = [0, 10]`` was refused ("expected a string"); the flag's ``A,B`` text still works."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 4}", "reward": (i % 7) + (3 if i % 4 == 1 else 0)}) + "\n"
                         for i in range(400)))
    (tmp_path / "c.toml").write_text('reward_model = "bounded"\nreward_range = [0, 10]\narms = ["k0", "k1", "k2"]\n')
    code = main(["run", "--config", str(tmp_path / "c.toml"), "--rewards-file", str(p), "--checkpoint", "none",
                 "--quiet", "--summary-json", str(tmp_path / "s.json")])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["invalid"] == {} and summary["dead_letters"] == 0 and summary["skipped"] == 100, summary


@pytest.mark.parametrize("flags, warned", [(["--max-episodes", "3", "--rewards-file", "-"], True),
                                           (["--forever", "--mode", "episodes", "--rewards-file", "-"], True),
                                           (["--max-episodes", "3", "--rewards-file", "-", "--episode-timeout", "60"], False),
                                           (["--max-episodes", "1", "--rewards-file", "-"], False),
                                           (["--forever", "--rewards-file", "-"], False),
                                           (["--max-episodes", "3", "--rewards-file", "r.jsonl"], False)])
def test_episodes_without_a_timeout_are_warned_about(tmp_path, flags, warned):
    """An undecidable key (mean at the threshold) holds an episode forever and no later episode starts: a run
    of several episodes without --episode-timeout on a source that does not end (here standard input; Kafka,
    --follow) says so at the start (not one episode, nor the continuous mode: no episodes). A replay of files
    ends: its last lines say it when an episode held the later ones back (next test)."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 4}", "reward": i % 2}) + "\n" for i in range(40)))
    with p.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "streamarms.cli", "run", "--checkpoint", "none", "--quiet", *flags],
                              stdin=stdin, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ("without --episode-timeout" in proc.stderr) == warned


def test_a_replay_whose_episode_held_the_later_ones_back_says_so_at_the_stop(tmp_path, capsys):
    """Two keys at the same rate never separate from the threshold: the first episode runs to the end of the day's
    log, and no later one starts; the last line says so and names --episode-timeout."""
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"arm": f"k{i % 3}", "reward": int(i % 7 == 0), "timestamp": 60_000 * i}) + "\n"
                         for i in range(2_000)))
    summary = tmp_path / "s.json"
    assert main(["run", "--rewards-file", str(p), "--checkpoint", "none", "--summary-json", str(summary)]) == 0
    assert "past --episode-interval (300 s), so no later episode started: --episode-timeout SEC" in capsys.readouterr().out
    assert json.loads(summary.read_text())["unfinished_episode"]["held_back"] == 300.0

"""``streamarms run --group-threshold`` settings (issue 13): refused clearly where the group mode cannot
run; the scale-out deploy files are valid settings for it. (Runs against a broker: tests/kafka.)"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from streamarms.cli.group import check_group_settings, stats_topic
from streamarms.cli.run import main as run_main
from streamarms.cli.settings import add_run_arguments, resolve_settings
from streamarms.errors import ConfigError

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _settings(*argv: str):
    p = argparse.ArgumentParser()
    add_run_arguments(p)
    return resolve_settings(p.parse_args(list(argv)))


@pytest.mark.parametrize("argv, msg", [
    (["--group-threshold", "--policy", "cs"], "needs Kafka"),
    (["--group-threshold", "--bootstrap-servers", "x:9092", "--rewards-topic", "r", "--policy", "wrr"], "policy cs"),
    (["--group-threshold", "--bootstrap-servers", "x:9092", "--rewards-topic", "r", "--policy", "cs",
      "--mode", "active", "--requests-topic", "q"], "passive"),
    (["--group-interval", "2"], "applies to --group-threshold"),
    (["--group-chunk-keys", "100"], "applies to --group-threshold"),
    (["--group-threshold", "--bootstrap-servers", "x:9092", "--rewards-topic", "r", "--policy", "cs",
      "--episode-silence-records", "5000"], "does not apply to --group-threshold"),
])
def test_refused_with_a_clear_message(argv, msg):
    with pytest.raises(ConfigError, match=msg):
        check_group_settings(_settings(*argv))


def test_refused_before_connecting_exit_2(capsys):
    assert run_main(["--group-threshold", "--policy", "wrr", "--bootstrap-servers", "127.0.0.1:1",
                     "--rewards-topic", "r"]) == 2
    assert "policy cs" in capsys.readouterr().err


def test_stats_topic_named_from_the_group():
    assert stats_topic(_settings("--group-id", "fraud")) == "fraud-stats"
    assert stats_topic(_settings("--group-stats-topic", "s")) == "s"


def test_deploy_files_run_the_group_mode(tmp_path):
    docs = {d["kind"]: d for d in yaml.safe_load_all((DEPLOY / "k8s" / "streamarms-group.yaml").read_text())}
    conf = tmp_path / "g.toml"
    conf.write_text(docs["ConfigMap"]["data"]["streamarms.toml"])
    s = _settings("--config", str(conf))
    check_group_settings(s)
    assert s.group_threshold and s.policy == "cs"
    assert docs["StatefulSet"]["spec"]["replicas"] >= 2
    compose = yaml.safe_load((DEPLOY / "docker-compose.group.yml").read_text())
    cmd = compose["services"]["streamarms-member"]["command"]
    assert "--group-threshold" in cmd and compose["services"]["streamarms-member"]["deploy"]["replicas"] >= 2


def test_the_silence_rule_is_off_for_group_members():
    """A member's silent key must not end its episode alone: the group's episode ends group-wide."""
    from streamarms.cli.run import _scheduler_config
    on = _scheduler_config(_settings("--bootstrap-servers", "x:9092", "--rewards-topic", "r", "--policy", "cs"))
    off = _scheduler_config(_settings("--group-threshold", "--bootstrap-servers", "x:9092", "--rewards-topic", "r",
                                      "--policy", "cs"))
    assert on.episode_silence_records is None and off.episode_silence_records == 0

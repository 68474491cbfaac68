"""Regressions of scale-out mode (``streamarms run --group-threshold``) found in trials: an arm without a
sample taken over while the group's threshold track is past 0 (a division by zero stopped the member);
the standing flags of a partition's keys move with the partition (one ``outlier`` alert per key across
the group); the first group episode covers every partition's keys; a joining member's stream clock."""

from __future__ import annotations

import random

from streamarms.errors import ConfigError, operational
from streamarms.policies.anytime_group import GroupKSigma


def test_an_arm_without_samples_taken_over_mid_episode_is_sampled_not_a_division_by_zero():
    """A member restarted into a running group episode takes a partition over from a value that names its
    keys without a state (an announcement: no samples) while the other partitions' totals put the group's
    ``m_theta`` past 0: the sampling rule asked ``s / m`` of the new arm (``float division by zero``)."""
    board: dict = {}
    part = {"a0": "t:0", "a1": "t:0", "b0": "t:1"}

    def member(arms):
        return GroupKSigma(arms, group_n=3, partition_of=part.__getitem__, publish=board.__setitem__,
                           fetch=lambda: board, clock=lambda: 0.0, interval=0.0, k=1.5, delta=0.1)

    a, b = member(["a0", "a1"]), member(["b0"])
    rng = random.Random(0)
    for _ in range(20):
        for pol in (a, b):
            for arm in pol.arms:
                pol.update(arm, float(rng.random() < 0.5))
        a.sync(0.0)
        b.sync(0.0)
    c = b.regroup((), {"t:2": {"arms": {"c0": None}}})
    assert c is not None
    c.sync(0.0)
    assert c.track.m_theta > 0 and c.cs[c.index["c0"]].m == 0
    assert c.next_request().arm == "c0"  # its radius is unbounded: it goes first
    assert "c0" in [r.arm for r in c.wanted(2)]


def test_an_unexpected_error_is_told_from_an_operational_one():
    """``streamarms run`` logs a bug's traceback at ERROR level (not only with --log-level debug)."""
    from streamarms.connectors.kafka_sinks import SinkError

    assert operational(ConfigError("x")) and operational(ConnectionError()) and operational(SinkError("x"))
    assert not operational(ZeroDivisionError("float division by zero")) and not operational(KeyError("k"))

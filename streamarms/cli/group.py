"""``streamarms run --group-threshold``: the wiring of one member of a detecting consumer group (issue 13).

Every member runs ``streamarms run --group-threshold --group-id G --policy cs`` on the same reward
topic(s) (``partitions >= members``: a member without partitions idles as a standby). The consumer group
splits the partitions; the members share the stats topic (default ``G-stats``, compacted, key
``G/topic:partition``) through :mod:`streamarms.connectors.group_stats`; the episode protocol is
:mod:`streamarms.group_member`. Each member checkpoints under its own key (``G/<member>``).

Exported (``--metrics-port``): ``streamarms_group_stats_staleness_seconds`` (age of the oldest
partition value this member merged: how far behind its view of the group may be; the decision
latency the group adds is at most about this plus one ``--group-interval``),
``streamarms_group_members`` (members that published this episode), ``streamarms_group_partitions_moved``
(partitions handed over or taken over during an episode: their key state moves through the stats topic),
``streamarms_group_stats_incomplete_values`` (partitions whose latest head waits for its chunks: a value
in flight; a member killed mid-publish no longer hides the previous value, its chunks are in the other
slots -- ``streamarms.group_chunks``).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterable
from typing import Any

from ..errors import ConfigError
from ..group_member import GroupMember, PartitionNotingSource
from ..runtime import ACTIVE

__all__ = ["PUBLISH_BUDGET", "check_group_settings", "member_name", "stats_topic", "wire_group_member"]

#: seconds a loop turn may spend publishing the member's stats values (GroupMember.publish_budget): a value
#: carries its partition's key state (~8 us of CPU a key), so a round over many keys is split over turns,
#: one partition's value chunk by chunk (a copy-on-write cut: streamarms.group_cut), and the loop stalls
#: about this plus one chunk
PUBLISH_BUDGET = 0.5

log = logging.getLogger("streamarms.group")


def member_name(s: Any) -> str:
    """``--group-member``, or the host name (stable across restarts of a pod / container)."""
    return str(s.group_member or socket.gethostname())


def stats_topic(s: Any) -> str:
    return str(s.group_stats_topic or f"{s.group_id}-stats")


def check_group_settings(s: Any) -> None:
    """``--group-threshold`` needs Kafka, the ``cs`` policy and the passive episode mode."""
    if not s.group_threshold:
        for f in ("group_stats_topic", "group_member", "group_interval", "group_chunk_keys"):
            if f in s.explicit:
                raise ConfigError(f"--{f.replace('_', '-')} applies to --group-threshold")
        return
    if not s.bootstrap_servers:
        raise ConfigError("--group-threshold needs Kafka (--bootstrap-servers): the members meet in a consumer group")
    if s.policy != "cs":
        raise ConfigError(f"--group-threshold runs the policy cs (its threshold is made of additive totals), "
                          f"not {s.policy!r}")
    if s.mode == ACTIVE or s.mode == "continuous":
        raise ConfigError("--group-threshold runs passive episodes (--mode passive)")
    if s.episode_silence_records:
        raise ConfigError("--episode-silence-records does not apply to --group-threshold: a group's episode ends "
                          "group-wide, never on one member's silent key")


def wire_group_member(app: Any) -> GroupMember:
    """Wrap ``app.source`` to note key partitions, connect the stats topic, install the member on
    ``app.scheduler``; returns it (``Daemon(on_turn=member.turn)``)."""
    from streamarms.connectors.group_stats import KafkaStatsPublisher, KafkaStatsReader
    from streamarms.group_threshold import stats_key
    from streamarms.group_track import SteppedPublish
    s = app.s
    name = member_name(s)
    topic = stats_topic(s)
    app.source = source = PartitionNotingSource(app.source)
    reader = KafkaStatsReader(app.kafka_cfg, topic, s.group_id)
    # the reader's view of the chunks on the topic: unchanged chunks are not sent again
    publisher = KafkaStatsPublisher(app.kafka_cfg, topic, s.group_id, name, chunk_keys=int(s.group_chunk_keys),
                                    on_topic=reader.chunks_on, named=reader.named)
    app.closers += [publisher, reader]
    sched = app.scheduler
    arm_part: dict[str, str] = {}
    scanned = [-1]  # the key counts at the last scan: a miss rescans only when keys were added since

    def partition_of(arm: str) -> str | None:
        p = arm_part.get(arm)
        if p is None and (n := len(sched.keys.arm_of) + len(source.part_of_key)) != scanned[0]:
            scanned[0] = n
            for raw, a in sched.keys.arm_of.items():
                q = source.part_of_key.get(raw)
                if q is not None:
                    arm_part[a] = q
            p = arm_part.get(arm)
        return p

    def owned() -> Iterable[str]:
        return [f"{tp.topic}:{tp.partition}" for tp in source.consumer.assignment()]

    def expected() -> Iterable[str]:
        return [f"{t}:{p}" for t in s.rewards_topic for p in sorted(source.consumer.partitions_for_topic(t) or ())]

    from ..registry import PolicyParams, _ksigma_kw
    params = _ksigma_kw(PolicyParams(**s.policy_params()))  # exactly what ``cs`` gets from the registry
    def catch_up() -> None:
        try:
            reader.catch_up(timeout=5.0)
        except TimeoutError as e:  # take over from what has arrived (an older value: still consistent)
            log.warning("%s", e)

    sink = app.alert_sink
    # a large partition's value goes out chunk by chunk over the loop's turns (GroupTrack.publish_budget)
    publish = SteppedPublish(publisher.publish, publisher.publish_steps)
    member = GroupMember(sched, publish=publish, fetch=lambda: reader.latest, owned=owned,
                         expected=expected, partition_of=partition_of, params=params,
                         poll_board=lambda: reader.poll(0.0), stats_key=lambda p: stats_key(s.group_id, p),
                         interval=float(s.group_interval), member=name,
                         position_of=lambda p: source.state().get(p), flush=sink.flush if sink is not None else None,
                         flush_board=publisher.flush, catch_up=catch_up, publish_budget=PUBLISH_BUDGET)
    inner: Any = source.source  # the Kafka source: the key state moves with its partitions
    inner.on_assign, inner.on_revoke = member.on_assign, member.on_revoke
    if app.metrics is not None:
        from prometheus_client.core import GaugeMetricFamily

        def collect() -> Iterable[Any]:
            yield GaugeMetricFamily("streamarms_group_stats_staleness_seconds",
                                    "Age of the oldest partition value of the group's stats this member merged.",
                                    value=member.staleness)
            ep = sched.episode
            yield GaugeMetricFamily("streamarms_group_members", "Members that published this episode's stats.",
                                    value=len({v.get("member") for v in reader.latest.values() if v.get("episode") == ep}))
            yield GaugeMetricFamily("streamarms_group_stats_incomplete_values",
                                    "Partitions whose latest stats head waits for chunks (the previous value is used).",
                                    value=len(reader.board.pending()))
            yield GaugeMetricFamily("streamarms_group_partitions_moved",
                                    "Partitions handed or taken over during a group episode.", value=member.moved)
        app.metrics.add_provider(collect)
    return member

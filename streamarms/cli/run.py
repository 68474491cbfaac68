"""``streamarms run``: the long-running detector (the product's main job).

Three ways to feed it:

* **Kafka** (``--bootstrap-servers`` and ``--rewards-topic``): consume the reward topics as group
  ``--group-id``, publish alerts to ``--alerts-topic``, refused records to ``--dead-letter-topic`` and,
  in ``--mode active``, sample requests to ``--requests-topic``; checkpoint to a file (default
  ``./streamarms-<group>.checkpoint``), a compacted topic (``--checkpoint kafka:TOPIC``) or, for many keys, a
  directory of incremental checkpoints (``--checkpoint dir:PATH``: changed keys only, saved by a forked child
  so the loop does not stall; :mod:`streamarms.chunked_checkpoint`, :mod:`streamarms.background_checkpoint`).
* **JSONL replay** (``--rewards-file``, repeatable): a recorded stream; alerts to ``--alerts-file``.
* **Embedded default** (nothing configured): an in-memory stream of 20 keys with two known outliers,
  one episode, a readable summary (outliers found vs truth, rewards used vs seen), exit 0 -- in a few
  seconds. ``--forever`` keeps it running in new episodes; ``--mode active`` answers the requests with
  a built-in responder.

Every flag has a TOML equivalent in ``--config FILE`` (same name, dashes or underscores; tables
``[kafka]``, ``[consumer]``, ``[producer]`` pass settings through to kafka-python); flags win over
the file, the file over the defaults. SASL/SSL: ``--security-protocol``, ``--sasl-mechanism``,
``--sasl-username``, ``--sasl-password`` (or env ``STREAMARMS_SASL_PASSWORD``), ``--ssl-cafile``,
``--ssl-certfile``, ``--ssl-keyfile``, ``--ssl-password`` (or env ``STREAMARMS_SSL_PASSWORD``), and any
kafka-python client setting with ``--kafka-option KEY=VALUE``.

Exit codes: 0 clean stop (episodes done, SIGTERM/SIGINT, input exhausted); 1 runtime failure (a sink
could not deliver, the broker is unreachable); 2 bad configuration (also an input found, once read, to be no records
the flags can read: a Parquet file on standard input).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any

from tqdm.contrib.logging import logging_redirect_tqdm

from ..checkpoint import CheckpointError
from ..daemon import Daemon, restore_checkpoint, rewind_sinks
from ..errors import ConfigError, operational
from ..metrics import Metrics
from ..policies.base import Policy
from ..policies.ksigma_estimates import keys_for_k, too_few_for_k
from ..policies.snapshot_fields import MALFORMED
from ..progress import ReplayProgress
from ..progress import wanted as progress_wanted
from ..registry import POLICIES, PolicyParams, reward_model_of
from ..runtime import ACTIVE, EventClock, RewardCodec, Scheduler, SchedulerConfig
from ..runtime.continuous import CONTINUOUS, ContinuousRunner
from ..runtime.contracts import AlertSink, DeadLetterSink, RequestSink
from ..runtime.evidence import key_evidence
from ..runtime.file_key import FileKeySource
from ..runtime.key_field import KeyFieldSource
from ..runtime.key_rule import KeyRule
from .continuous import alert_line, build_runner, continuous_summary
from .embedded import EmbeddedResponder, embedded_means, embedded_stream
from .file_input import file_source
from .group import wire_group_member
from .one_line import OneLineFormatter
from .restart import statistics_settings
from .run_checks import check_run_settings, warn_untimed_episodes
from .run_report import (
    all_refused_text,
    episode_text,
    files_summary,
    frozen_clock_text,
    grouped_keys,
    grouped_keys_text,
    incomplete_text,
    not_examined,
    stop_lines,
    stop_plot,
    stop_table,
    time_unit_text,
    unfinished,
)
from .run_store import checkpoint_store, daemon_class
from .settings import RunSettings, _kv, add_run_arguments, resolve_settings
from .types import allow_negative_lists, key_names

__all__ = ["add_run_parser", "run_main", "main"]

log = logging.getLogger("streamarms.run")


# ----------------------------------------------------------------------------------------------
# argument parsing
# ----------------------------------------------------------------------------------------------
def add_run_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``run`` to the ``streamarms`` sub-commands (sets ``handler=run_main``)."""
    p = subparsers.add_parser(
        "run", help="run the streaming detector (Kafka, JSONL replay, or the embedded demo)",
        description=__doc__.split("\n\n")[0] + " With nothing configured it runs an embedded demo.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(p)
    p.set_defaults(handler=run_main)
    return p


# ----------------------------------------------------------------------------------------------
# building the pieces
# ----------------------------------------------------------------------------------------------
def _policy_builder(s: RunSettings) -> Callable[[list[str], int], Policy]:
    """Episode ``e``'s policy: the settings' parameters, seed ``seed + e - 1``. The first episode of a k-sigma
    rule on too few keys for its k (none can be an outlier: :func:`too_few_for_k`) is warned of, once."""
    spec = POLICIES[s.policy]
    said = [not spec.ksigma]

    def build(arms: list[str], episode: int) -> Policy:
        if not said[0] and (why := too_few_for_k(len(arms), s.k)) is not None:
            said[0] = True
            log.warning("episode %d: %s (--min-arms %d waits for them)", episode, why, keys_for_k(s.k))
        return spec.build(arms, **s.policy_params(seed=None if s.seed is None else int(s.seed) + episode - 1))

    return build


def _scheduler_config(s: RunSettings) -> SchedulerConfig:
    """The settings of the same names (every field of :class:`SchedulerConfig` is one); 0 s timeouts: none."""
    kw = {f.name: getattr(s, f.name) for f in fields(SchedulerConfig)}
    kw.update(episode_timeout=s.episode_timeout or None, key_ttl=s.key_ttl or None)
    if getattr(s, "group_threshold", False):
        kw["episode_silence_records"] = 0  # a group's episode ends group-wide (GroupMember), not on one member's key
    if "passive_feed" not in s.explicit and s.mode != ACTIVE and s.policy in POLICIES:
        kw["passive_feed"] = POLICIES[s.policy].passive_feed  # the policy's own default
    return SchedulerConfig(**kw)


def _kafka_config(s: RunSettings) -> dict[str, Any]:
    from streamarms.connectors.kafka import client_config
    cfg = client_config(s.bootstrap_servers, security_protocol=s.security_protocol, sasl_mechanism=s.sasl_mechanism,
                        sasl_plain_username=s.sasl_username, sasl_plain_password=s.sasl_password,
                        ssl_cafile=s.ssl_cafile, ssl_certfile=s.ssl_certfile, ssl_keyfile=s.ssl_keyfile,
                        ssl_password=s.ssl_password)
    cfg.update(dict(_kv(x) for x in (s.kafka_option or [])))
    return cfg



#: seconds /explain waits for the episode loop to answer (it turns at least every poll timeout)
EXPLAIN_TIMEOUT = 5.0


def _value_lines(s: RunSettings) -> Any:
    """What reads a topic's values as log lines (``--line-pattern``: ``connectors/kafka_lines.py``), or ``None``."""
    if s.line_pattern is None:
        return None
    from streamarms.connectors.kafka_lines import ValueLines

    return ValueLines(s.line_pattern, s.line_field)


def _keyed(source: Any, s: RunSettings) -> Any:
    """``source`` with its records' keys read from ``--key-field`` or ``--key-from-file`` (by ``--key-match`` and
    ``--key-ids``), or as it is."""
    rule = KeyRule(match=s.key_match, ids=s.key_ids) if s.key_match is not None or s.key_ids else None
    if s.key_field is not None:
        return KeyFieldSource(source, s.key_field, rule)
    return FileKeySource(source, rule) if s.key_from_file else source


# ----------------------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------------------
def run_main(opts: argparse.Namespace) -> int:
    try:
        s = resolve_settings(opts)
    except ConfigError as e:
        print(f"streamarms run: error: {e}", file=sys.stderr)
        return 2
    level = getattr(logging, str(s.log_level).upper(), logging.INFO)
    handler = logging.StreamHandler(sys.stderr)  # (a key's line break cannot forge a record of its own)
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    if level > logging.DEBUG:  # kafka-python's own lines (dozens per outage) only with --log-level debug;
        logging.getLogger("kafka").setLevel(logging.CRITICAL)  # streamarms logs the outage in one line
    try:
        app = _App(s)
    except (ConfigError, CheckpointError) as e:
        print(f"streamarms run: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the broker is unreachable, a file cannot be opened, ...
        log.debug("start-up failed", exc_info=True)
        text, name = str(e), type(e).__name__
        # kafka-python repeats its type name in the message; BrokerUnreachable's message says it all
        what = text if text.startswith(name) or name == "BrokerUnreachable" else f"{name}: {text}"
        print(f"streamarms run: error: cannot start: {what}", file=sys.stderr)
        return 1
    return app.run()


def _mode_text(s: RunSettings, cfg: SchedulerConfig | None) -> str:
    if cfg is None or cfg.mode == ACTIVE:
        return f"{s.mode} mode"
    return "passive mode, " + ("every reward of its keys fed" if cfg.passive_feed == "all" else "following its plan")


def _demo_text(s: RunSettings, n: int, truth: list[str] | None, cfg: SchedulerConfig | None) -> str:
    """The embedded demo's first line: its ``n`` keys, their known outliers and what runs on them."""
    return (f"streamarms run: embedded demo (no --bootstrap-servers): {n} keys with Bernoulli rewards, known outliers "
            f"{', '.join(truth or []) or 'none'}; "
            + (f"continuous monitor k={s.k:g} alpha={s.monitor_alpha:g} (every record used, no episodes; Ctrl-C to "
               f"stop)" if s.mode == CONTINUOUS else f"policy {s.policy} k={s.k:g} delta={s.delta:g}, {_mode_text(s, cfg)}"))


class _App:
    """The wiring of one ``streamarms run``."""

    def __init__(self, s: RunSettings) -> None:
        self.s = s
        #: where the text for a person goes: stderr when a JSON stream (alerts, dead letters, the summary)
        #: is written to stdout (``-``), so that stdout stays one JSON value a line for ``jq`` and the like
        self.human = sys.stderr if "-" in (s.alerts_file, s.dead_letter_file, s.summary_json) else sys.stdout
        check_run_settings(s)
        #: the continuous mode (the default of --forever): a ContinuousRunner in place of the Scheduler
        self.continuous = s.mode == CONTINUOUS
        build = _policy_builder(s)
        # bad parameters fail here, before anything connects (enough arms for every family's constraints)
        try:
            if self.continuous:  # the monitor's reward model (its other settings: build_runner)
                self.model = reward_model_of(PolicyParams(**s.policy_params()))
            else:
                probe = POLICIES[s.policy].build([f"probe-{i}" for i in range(64)], **s.policy_params(seed=s.seed))
                # (not through build: its too-few-keys warning is for an episode's keys, not 64 stand-ins)
                self.codec = RewardCodec(s.reward_field, getattr(probe, "model", None), clip=s.clip,
                                         request_id_field=s.request_id_field, max_key_bytes=s.max_key_bytes,
                                         numeric_strings=bool(s.numeric_strings), at_least=s.reward_at_least,
                                         reward_in=s.reward_in, reward_match=s.reward_match,
                                         missing=s.reward_missing, unit=s.reward_unit)
                self.sched_config = _scheduler_config(s)
        except ConfigError:
            raise
        except ValueError as e:  # the policy's, the model's, the codec's or the scheduler's check of a setting
            raise ConfigError(f"{e}") from None
        self.alerts: list[dict[str, Any]] = []
        self.closers: list[Any] = []
        self.truth: list[str] | None = None
        self.kafka_cfg = _kafka_config(s) if s.bootstrap_servers else None
        clock_kind = s.clock if s.clock != "auto" else ("wall" if s.mode == ACTIVE else "event")
        self.event_clock = EventClock() if clock_kind == "event" else None
        self.frozen_warned = False  # frozen_clock_text said once
        self.grouped_warned = False  # grouped_keys_text said once
        self.rule_warned = False  # a reward rule that matched nothing, said once during the run
        self.unit_unchecked = bool(s.rewards_file) and self.event_clock is not None  # (time_unit_text: once)
        self.progress: ReplayProgress | None = None  # a replay's bar on a terminal (run)
        clock = self.event_clock if self.event_clock is not None else time.time
        self.run_info = {"mode": s.mode, "policy": CONTINUOUS if self.continuous else s.policy,
                         "topics": sorted(s.rewards_topic or []) or sorted(s.rewards_file_given or s.rewards_file or [])
                         or ["embedded"],
                         "k": s.k, "delta": s.delta, "reward_model": s.reward_model, "group_id": s.group_id,
                         "settings": statistics_settings(  # a restart may not change them (cli.restart)
                             s, continuous=self.continuous, clock=clock_kind, passive_feed=None if self.continuous
                             or s.mode == ACTIVE else self.sched_config.passive_feed)}
        if self.kafka_cfg is not None:  # one clear line within seconds if no broker answers
            from streamarms.connectors.kafka import probe_cluster
            self.run_info["cluster_id"] = probe_cluster(self.kafka_cfg)
        # exactly-once: the transactional producer starts (fencing a killed run's zombie and ending its
        # transaction) before the checkpoint is read, so the read sees only committed checkpoints
        self.pool = self._transactional_pool() if s.exactly_once else None
        self.store = checkpoint_store(s, self.kafka_cfg, self.pool)
        if self.store is not None:
            log.info("checkpoint: %s, protected by %s", self.store.describe(), self.store.integrity())
        doc = restore_checkpoint(self.store, self.run_info) if self.store is not None else None
        resume = doc["source"] if doc else None

        self._build_io(resume)
        rewind_sinks(doc, [self.alert_sink, self.dead_letter_sink])  # exactly once across a crash (file sinks)
        arms = key_names(s.arms) if isinstance(s.arms, str) else s.arms  # (a list from the flag or the file)
        if self.embedded_arms is not None and s.mode == ACTIVE:
            arms = self.embedded_arms
        self.scheduler: Scheduler | ContinuousRunner
        if self.continuous:
            self.scheduler = build_runner(
                k=s.k, alpha=s.monitor_alpha, alpha_cd=s.change_alpha,
                model=self.model, clock=clock, emit_alert=self._alert,
                group_by=s.group_by, max_groups=s.max_groups, max_arms=s.max_arms, arms=arms,
                reward_field=s.reward_field, max_key_bytes=s.max_key_bytes, forget_silent=bool(s.forget_silent),
                key_ttl=s.silence_records or None, clip=s.clip, numeric_strings=bool(s.numeric_strings),
                at_least=s.reward_at_least, reward_in=s.reward_in, reward_match=s.reward_match,
                missing=s.reward_missing, unit=s.reward_unit)
        else:
            if arms and len(set(arms)) < self.sched_config.min_arms:  # (it used to wait forever for an episode)
                raise ConfigError(f"--arms names {len(set(arms))} key(s), fewer than --min-arms "
                                  f"{self.sched_config.min_arms}: no episode could ever start; name more keys or "
                                  "lower --min-arms")
            self.scheduler = Scheduler(
                build, clock=clock, config=self.sched_config, codec=self.codec, emit_alert=self._alert,
                emit_request=self.request_sink.send if self.request_sink is not None else None,
                on_episode_end=self._episode_end, arms=arms, policy_name=s.policy, delta=s.delta,
                emit_normal=bool(s.emit_normal), alert_repeat=bool(s.alert_repeat),
                request_prefix=os.urandom(3).hex() + "-")
        if doc is not None:
            assert self.store is not None  # doc was read from it
            try:
                self.scheduler.restore(doc["scheduler"])
            except ValueError as e:  # another mode, a policy class that is not loaded (nothing imported)
                raise CheckpointError(f"the checkpoint in {self.store.describe()}: {e}") from None
            except MALFORMED as e:  # a valid hash, not our shape
                raise CheckpointError(f"the checkpoint in {self.store.describe()} is malformed: "
                                      f"{type(e).__name__}: {e}") from None
            log.info("resumed from %s: episode %d, %d records, %d samples", self.store.describe(),
                     self.scheduler.episode, self.scheduler.records, self.scheduler.used)
        #: records refused before this process (each one a dead letter then): the summary's ``dead_letters`` is a
        #: running total, as its ``records`` and ``invalid`` are
        self.refused_before = sum(self.scheduler.stats()["invalid"].values()) if doc is not None else 0
        self.records_before = self.scheduler.stats()["records"] if doc is not None else 0  # (all_refused_text)
        if s.bootstrap_servers and isinstance(self.scheduler, Scheduler):
            # discovery ends only once every assigned partition has delivered a record (or after
            # --discovery-seconds of wall time): a partition fetched late still has its keys in episode 1
            from streamarms.connectors.discovery import EveryPartitionRead
            src = self.source
            self.scheduler.episodes.gate = EveryPartitionRead(
                lambda: [(tp.topic, tp.partition) for tp in src.consumer.assignment()], src.merger.delivered,
                cap=s.discovery_seconds)
        self.metrics = Metrics() if s.metrics_port is not None else None
        self.group = wire_group_member(self) if s.group_threshold else None
        self.daemon = daemon_class(self.store, self.transaction)(
                             self.scheduler, self.source, clock=self.event_clock, alert_sink=self.alert_sink,
                             request_sink=self.request_sink, dead_letter_sink=self.dead_letter_sink,
                             checkpoint=self.store, checkpoint_interval=s.checkpoint_interval, metrics=self.metrics,
                             run_info=self.run_info, stop_when_exhausted=bool(s.rewards_file),
                             transaction=self.transaction, on_turn=self._turn)
        if doc is None and self.store is not None and s.rewards_file:  # a first checkpoint before any record:
            Daemon.checkpoint(self.daemon)  # the file sinks' sizes, for a restart after a crash before the next
        self.server = None
        if self.metrics is not None and s.metrics_port is not None:
            from ..observability import OperatorMetrics  # operator's series and readiness (/healthz)
            self.ops = OperatorMetrics(
                self.metrics, self.scheduler, self.source, daemon=self.daemon,  # type: ignore[arg-type]  # the facade
                flagged_arms=int(s.metrics_flagged_arms or 0),
                info={"policy": str(self.run_info["policy"]), "mode": s.mode},
                checkpoint="disabled" if self.store is None else ("restored" if doc is not None else "none found"))
            explain: Any = None
            if isinstance(self.scheduler, ContinuousRunner):
                from ..monitor_metrics import MonitorMetrics
                MonitorMetrics(self.metrics, self.scheduler, flagged_keys=int(s.metrics_flagged_arms or 0))
                explain = self.scheduler.evidence  # (under the runner's lock)
            elif isinstance(self.scheduler, Scheduler):  # the episode modes: the loop answers between batches
                sched, calls = self.scheduler, self.daemon.calls
                explain = lambda key: calls.ask(  # noqa: E731
                    lambda: key_evidence(sched.policy, sched.keys.last_seen, key, sched.episode,
                                         dict(sched.alerts.flagged)), timeout=EXPLAIN_TIMEOUT)
            self.server = self.metrics.serve(s.metrics_port, s.metrics_addr, health=self.ops.health,
                                             live=self.daemon.health, explain=explain)
            log.info("metrics on http://%s:%d/metrics", s.metrics_addr, self.server.port)

    def _sink_topics(self) -> list[str]:
        s = self.s
        return [t for t in (s.alerts_topic, s.requests_topic if s.mode == ACTIVE else None, s.dead_letter_topic) if t]

    def _transactional_pool(self) -> Any:
        """The one transactional producer of ``--exactly-once`` (transactional id from the group id)."""
        s = self.s
        if self.kafka_cfg is None:
            raise ConfigError("--exactly-once needs Kafka (--bootstrap-servers)")
        from streamarms.connectors.kafka_checkpoint import KafkaTransaction
        from streamarms.connectors.kafka_sinks import KafkaProducerPool
        if s.create_topics:
            self._create_topics()
        opts = {"max_request_size": 16 * 1024 * 1024, "compression_type": "gzip"}  # the checkpoint rides along
        opts.update(dict(_kv(x) for x in (s.producer_option or [])))
        return KafkaProducerPool(self.kafka_cfg, opts, self._sink_topics(),
                                 transactional_id=KafkaTransaction.transactional_id(s.group_id))

    def _create_topics(self) -> None:
        from streamarms.connectors.kafka import ensure_topics
        s = self.s
        want = {t: 1 for t in s.rewards_topic or []}
        for t in (s.alerts_topic, s.requests_topic, s.dead_letter_topic):
            if t:
                want[t] = 1
        assert self.kafka_cfg is not None
        ensure_topics(self.kafka_cfg, want)

    def _build_io(self, resume: dict[str, Any] | None) -> None:
        s = self.s
        self.alert_sink: AlertSink | None = None
        self.request_sink: RequestSink | None = None
        self.dead_letter_sink: DeadLetterSink | None = None
        self.embedded_arms: list[str] | None = None
        self.transaction: Any = None
        if s.bootstrap_servers:
            from streamarms.connectors.kafka import KafkaRewardSource, warn_missing_topics
            from streamarms.connectors.kafka_sinks import (
                KafkaAlertSink,
                KafkaDeadLetterSink,
                KafkaProducerPool,
                KafkaRequestSink,
            )
            cfg = self.kafka_cfg
            assert cfg is not None
            if s.create_topics and self.pool is None:
                self._create_topics()
            elif not s.create_topics:
                warn_missing_topics(cfg, s.rewards_topic)
            pool = self.pool if self.pool is not None else \
                KafkaProducerPool(cfg, dict(_kv(x) for x in (s.producer_option or [])), self._sink_topics())
            from streamarms.connectors.file_sinks import JsonlDeadLetterSink, JsonlSink
            self.alert_sink = JsonlSink(s.alerts_file) if s.alerts_file else \
                KafkaAlertSink(pool, s.alerts_topic) if s.alerts_topic else None  # (a file: settings' _files_for_kafka)
            if s.mode == ACTIVE:
                self.request_sink = KafkaRequestSink(pool, s.requests_topic)
            if s.dead_letter_file or s.dead_letter_topic:
                self.dead_letter_sink = JsonlDeadLetterSink(s.dead_letter_file) if s.dead_letter_file else \
                    KafkaDeadLetterSink(pool, s.dead_letter_topic)
            self.source = KafkaRewardSource(s.rewards_topic, s.group_id, cfg, resume=resume,
                                            ordered=s.order == "timestamp", max_poll_records=s.max_poll_records,
                                            from_beginning=bool(s.from_beginning),
                                            consumer_options=dict(_kv(x) for x in (s.consumer_option or [])),
                                            on_out_of_range=s.on_out_of_range, start_from=s.start_from,
                                            max_timestamp_ahead=s.max_timestamp_ahead, values=_value_lines(s))
            if self.pool is not None:
                from streamarms.connectors.kafka_checkpoint import KafkaTransaction
                self.transaction = KafkaTransaction(self.pool, self.source)
        elif s.start_from is not None:
            raise ConfigError("--start-from needs Kafka (--bootstrap-servers): a file replays from its first line")
        elif s.files_named:  # (following a pattern that matches no file yet: [] and one)
            from streamarms.connectors.file_sinks import JsonlDeadLetterSink, JsonlSink
            if s.mode == ACTIVE:
                raise ConfigError("--mode active needs Kafka (--bootstrap-servers): a file cannot answer requests")
            self.source = file_source(s, resume)
            self.alert_sink = JsonlSink(s.alerts_file) if s.alerts_file else None
            self.dead_letter_sink = JsonlDeadLetterSink(s.dead_letter_file) if s.dead_letter_file else None
            if self.dead_letter_sink is not None:  # (a pipe's lines are no file's; a followed file's count runs on
                # over its rotations, so its index is no line of the file at the path)
                self.dead_letter_sink.lines = "-" not in (s.rewards_file or []) and not s.follow
        else:
            from streamarms.connectors.memory import GeneratedSource, MemoryBroker, MemorySource
            n = int(s.embedded_keys)
            means = embedded_means(n)
            names = [f"region-{i:02d}" for i in range(n)]
            self.embedded_means = dict(zip(names, means))
            truth = POLICIES[s.policy].truth(means, **s.policy_params())
            if truth is not None:
                self.truth = sorted(names[int(i)] for i in truth)
            if s.mode != ACTIVE:
                keys = [nm.encode() for nm in names]
                self.source = GeneratedSource(lambda: embedded_stream(keys, means, int(s.seed or 0), s.embedded_rate),
                                              resume=resume)
            else:
                broker = MemoryBroker()
                broker.create_topic("answers")
                self.source = MemorySource(broker, ["answers"], resume=resume)
                self.request_sink = EmbeddedResponder(broker, "answers", self.embedded_means, int(s.seed or 0), None)
                self.embedded_arms = names
            if s.alerts_file:
                from streamarms.connectors.file_sinks import JsonlSink
                self.alert_sink = JsonlSink(s.alerts_file)
        self.source = _keyed(self.source, s)  # (after KafkaTransaction, which commits the Kafka source's positions)

    # -- callbacks -----------------------------------------------------------------------------
    def _alert(self, alert: dict[str, Any]) -> None:
        self.alerts.append(alert)
        del self.alerts[:-1000]
        if self.alert_sink is not None:
            self.alert_sink.send(alert)
        if self.continuous:
            msg = alert_line(alert)
            if self.s.embedded and not self.s.quiet:
                self._say(msg)
            else:
                log.info(msg)
            return
        est = alert.get("estimate")
        iv = alert.get("interval")
        thr = alert.get("threshold")
        msg = (f"ALERT {alert['kind']:<7} {alert['arm']}  episode {alert['episode']}"
               + (f"  estimate {est:.4g}" if isinstance(est, (int, float)) else "")
               + (f" [{iv[0]:.4g}, {iv[1]:.4g}]" if iv else "")
               + (f"  threshold {thr:.4g}" if isinstance(thr, (int, float)) else "")
               + (f"  after {alert['pulls']:,} samples" if alert.get("pulls") is not None else ""))
        if self.s.embedded and not self.s.quiet:
            self._say(msg)
        else:
            log.info(msg)

    #: rewards a reward rule made 0 before the run warns that it has matched none (it says so at the stop too)
    RULE_MISSES_WARNED = 10_000

    def _turn(self) -> None:
        """Between two batches: the group member's turn, the replay's progress bar, and a warning, once, for a
        rule that matches nothing."""
        if self.group is not None:
            self.group.turn()
        progress = self.progress
        if progress is not None and progress.due():
            progress.update(self.source.bytes_read(), self.scheduler.records, len(self.scheduler.alerts.flagged))
        rule = self.scheduler.codec.rule
        if rule is not None and not self.rule_warned and not rule.hit and rule.misses >= self.RULE_MISSES_WARNED:
            log.warning("%s", rule.unmatched())
            self.rule_warned = True
        if self.unit_unchecked and (now := self.event_clock() if self.event_clock else 0.0) > 0:  # (first time)
            self.unit_unchecked = False
            if text := time_unit_text(now, self.s):
                log.warning("%s", text)

    def _episode_end(self, summary: dict[str, Any]) -> None:
        log.info("episode %d %s: %d arms, %d samples over %d records, outliers %s%s", summary["episode"],
                 "done" if summary["reason"] == "done" else f"ended ({summary['reason']})", summary["arms"],
                 summary["samples"], summary["records"], ", ".join(summary["outliers"]) or "none",
                 f", undecided {len(und)} ({', '.join(und[:5])}{', ...' if len(und) > 5 else ''})"
                 if (und := summary["undecided"]) else "")
        if self.s.embedded and not self.s.quiet:
            self._say(episode_text(summary, self.truth))
        frozen = frozen_clock_text(self.event_clock, self.s, summary["episode"])
        if frozen and not self.frozen_warned:
            log.warning("%s", frozen)
            self.frozen_warned = True
        if not self.grouped_warned and (g := grouped_keys(self.scheduler)) is not None:
            log.warning("%s", grouped_keys_text(g, self.s, self.event_clock))
            self.grouped_warned = True

    # -- output --------------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        print(text, file=self.human, flush=True)

    def summary(self, code: int, elapsed: float) -> dict[str, Any]:
        st = self.scheduler.stats()
        out = {"exit_code": code, "stop_reason": self.daemon.stop_reason, "elapsed_seconds": round(elapsed, 3),
                "policy": self.s.policy, "mode": self.s.mode, "k": self.s.k,
                **({"monitor_alpha": self.s.monitor_alpha, "change_alpha": self.s.change_alpha} if self.continuous
                   else {"delta": self.s.delta}),
                "records": st["records"], "samples": st["used"], "skipped": st["skipped"],
                "invalid": {k: v for k, v in st["invalid"].items() if v},
                "dead_letters": self.refused_before + self.daemon.dead_letters,
                "clipped": self.scheduler.codec.clipped,
                "episodes": self.scheduler.history, "alerts": st["alerts"], "flagged": sorted(self.scheduler.alerts.flagged),
                "true_outliers": self.truth, "known_arms": st["known_arms"]}
        rule = self.scheduler.codec.rule
        if rule is not None and (unmatched := rule.unmatched()):
            out["reward_rule_unmatched"] = unmatched
        out.update(files_summary(self.source))  # (files ending in a line not read yet; rotations removed unread)
        if isinstance(self.scheduler, ContinuousRunner):
            out.update(continuous_summary(self.scheduler.monitor, self.s.group_by))
        else:
            out["phase_at_stop"] = self.scheduler.phase
            out["unfinished_episode"] = unfinished(self.scheduler, self.daemon.stop_reason)
            if out["unfinished_episode"] is None and (late := not_examined(self.scheduler)) is not None:
                out["not_examined"] = late
        if (g := grouped_keys(self.scheduler, replay=bool(self.s.rewards_file) and not self.s.follow)) is not None:
            out["keys_grouped"] = g
        return out

    def run(self) -> int:
        s = self.s
        warn_untimed_episodes(s, self.continuous)
        if s.embedded and not s.quiet:
            self._say(_demo_text(s, len(getattr(self, "embedded_means", {})), self.truth,
                                 getattr(self, "sched_config", None)))
        t0 = time.monotonic()
        code = 0
        self.progress = replay_progress(self.source, s)
        try:
            with (logging_redirect_tqdm() if self.progress is not None else contextlib.nullcontext()):
                code = self.daemon.run()
            failure = getattr(self.source, "failure", None)
            if code == 0 and failure:  # a followed file changed under the run: stopped, checkpointed
                log.error("stopping: %s", failure)
                print(f"streamarms run: error: {failure}", file=sys.stderr)
                code = 1
        except Exception as e:  # a sink could not deliver, the broker went away, ...
            log.error("stopping on error: %s", e, exc_info=log.isEnabledFor(logging.DEBUG) or not operational(e))
            print(f"streamarms run: error: {e}", file=sys.stderr)
            # (bad input found once read -- a Parquet file piped in -- is a bad configuration, as at the start)
            code = 2 if isinstance(e, ConfigError) else 1
            if self.daemon.stop_reason is None:  # (the summary's stop_reason: the error, not null)
                self.daemon.stop_reason = f"error: {e}"
        finally:
            if self.progress is not None:
                self.progress.close()
            if self.server is not None:
                self.server.close()
            if self.store is not None:
                self.store.close()
            for c in self.closers:
                c.close()
        elapsed = time.monotonic() - t0
        nothing = None if code else all_refused_text(self.daemon.stop_reason, self.scheduler.stats(), self.records_before,
                                                     quiet=bool(s.quiet))
        code = 2 if nothing else code
        out = self.summary(code, elapsed)
        for path, n in out.get("incomplete_last_lines", {}).items():
            log.warning("%s", incomplete_text(path, n, self.store is not None, bool(s.follow)))
        if (code == 0 or nothing) and not s.quiet:
            for line in stop_lines(out, self.scheduler, s, getattr(self, "sched_config", None), self.event_clock):
                self._say(line)
        if code == 0 and s.table:
            self._say(stop_table(self.scheduler))
        if code == 0 and s.plot:
            self._say(stop_plot(self.scheduler, s.plot))
        if s.summary_json:
            text = json.dumps(out, indent=None if s.summary_json == "-" else 1, default=str)
            if s.summary_json == "-":
                print(text)
            else:
                try:
                    with open(s.summary_json, "w") as f:
                        f.write(text + "\n")
                except OSError as e:  # (checked at start; the disk may be full or the directory gone now)
                    print(f"streamarms run: error: cannot write the summary: {e}", file=sys.stderr)
                    return code or 1
        if nothing:
            print(f"streamarms run: error: {nothing}", file=sys.stderr)
        return code


def replay_progress(source: Any, s: RunSettings) -> ReplayProgress | None:
    """The progress bar of a replay of files (not followed, not standard input) on a terminal, or ``None``."""
    if not s.rewards_file or s.follow or "-" in s.rewards_file or not hasattr(source, "bytes_read") \
            or not progress_wanted(quiet=bool(s.quiet)):
        return None
    try:
        total = sum(os.path.getsize(p) for p in s.rewards_file)
    except OSError:
        return None
    bar = ReplayProgress(total, start=source.bytes_read())
    return bar if bar.enabled else None


def main(argv: Sequence[str] | None = None) -> int:
    """``streamarms run [flags]`` as a function (tests, embedding): the same as the command."""
    parser = allow_negative_lists(argparse.ArgumentParser(prog="streamarms run", description=__doc__.split("\n\n")[0]))
    add_run_arguments(parser)
    return run_main(parser.parse_args(argv))


"""The settings of ``streamarms run``: every setting and its default (:data:`DEFAULTS`), its flag
(:func:`add_run_arguments`), the TOML file, and the merge flags > file > defaults
(:func:`resolve_settings`).
"""

from __future__ import annotations

import argparse
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..errors import ConfigError
from ..group_chunks import CHUNK_KEYS
from ..registry import POLICIES, PolicyParams
from ..runtime import ACTIVE, PASSIVE, SchedulerConfig
from ..runtime.continuous import CONTINUOUS
from .types import (
    key_names,
    match_pattern,
    match_values,
    nonneg_float,
    nonneg_int,
    port,
    positive_int,
    probability,
    start_from,
)

__all__ = ["RunSettings", "DEFAULTS", "EMBEDDED_DEFAULTS", "add_run_arguments", "resolve_settings"]

#: ``--prefetch`` in active mode: the requests sent ahead per planned arm (those the plan drops are wasted)
ACTIVE_PREFETCH = 4

_SCHED, _POLICY = SchedulerConfig(), PolicyParams()
#: ``--mode episodes``: the episode mode that samples the stream (an alias of ``passive``)
EPISODES = "episodes"


@dataclass(frozen=True)
class RunSettings:
    """Every setting of ``streamarms run`` with its type and default (flags and TOML keys use these
    names); :func:`resolve_settings` fills it from flags > file > defaults. The last four fields are
    derived, not settings.

    >>> s = RunSettings()
    >>> s.policy, s.k, s.window, s.embedded
    ('wrr', 2.0, 32, False)
    >>> s.policy_params(seed=3)["seed"], s.policy_params()["reward_range"]
    (3, (0.0, 1.0))
    """

    # where rewards come from / where results go
    bootstrap_servers: str | None = None
    rewards_topic: list[str] | None = None
    alerts_topic: str | None = "streamarms-alerts"
    requests_topic: str | None = None
    dead_letter_topic: str | None = None
    group_id: str = "streamarms"
    group_threshold: bool = False
    group_stats_topic: str | None = None
    group_member: str | None = None
    group_interval: float = 1.0
    group_chunk_keys: int = CHUNK_KEYS
    create_topics: bool = False
    from_beginning: bool = True
    max_poll_records: int = 1000
    order: str = "timestamp"
    on_out_of_range: str = "earliest"
    start_from: str | int | None = None
    max_timestamp_ahead: float = 3600.0
    rewards_file: list[str] | None = None
    follow: bool = False
    alerts_file: str | None = None
    dead_letter_file: str | None = None
    # the policy (mode: passive/active episodes, or continuous -- the default of --forever)
    mode: str = _SCHED.mode
    passive_feed: str = _SCHED.passive_feed
    policy: str = "wrr"
    k: float = _POLICY.k
    delta: float = _POLICY.delta
    reward_model: str = "bernoulli"
    reward_range: str | None = None
    clip: bool = False
    model_param: list[str] | None = None
    two_sided: bool = _POLICY.two_sided
    rho: float | None = None
    seed: int | None = 0
    # parameters of the other policy families (see `streamarms simulate --help`)
    threshold: float | None = None
    budget: int | None = None
    epsilon: float | None = None
    ucbe_b: float | None = None
    alpha: float | None = None
    estimator: str | None = None
    moment_p: float | None = None
    moment_bound: float | None = None
    # the continuous mode
    group_by: str | None = None
    max_groups: int = 100
    monitor_alpha: float = 1e-3
    change_alpha: float = 1e-6
    forget_silent: bool = False
    silence_records: int = 1_000_000
    # records
    reward_field: str = "reward"
    numeric_strings: bool = False
    decimal_comma: bool = False
    reward_at_least: float | None = None
    reward_in: list[str] | None = None
    reward_match: str | None = None
    reward_missing: float | None = None
    reward_unit: str | None = None
    key_field: str | None = None
    key_match: str | None = None
    key_ids: bool = False
    key_from_file: bool = False
    timestamp_field: str = "timestamp"
    timestamp_format: str | None = None
    timestamp_unit: str = "ms"
    rewards_format: str = "auto"
    line_pattern: str | None = None
    line_field: str | None = None
    encoding: str | None = None
    sheet: str | None = None
    request_id_field: str = "request_id"
    max_key_bytes: int = 256
    validate: str = _SCHED.validate
    arms: str | list[str] | None = None
    # scheduling (the defaults are SchedulerConfig's)
    max_episodes: int | None = _SCHED.max_episodes
    episode_interval: float = _SCHED.episode_interval
    episode_timeout: float | None = _SCHED.episode_timeout
    window: int = _SCHED.window
    prefetch: int = _SCHED.prefetch
    want_timeout: float = _SCHED.want_timeout
    max_in_flight: int = _SCHED.max_in_flight
    request_timeout: float = _SCHED.request_timeout
    discovery_records: int = _SCHED.discovery_records
    discovery_seconds: float = _SCHED.discovery_seconds
    min_arms: int = _SCHED.min_arms
    max_arms: int = _SCHED.max_arms
    key_ttl: float | None = _SCHED.key_ttl
    episode_silence_records: int | None = _SCHED.episode_silence_records
    clock: str = "auto"
    # alerts
    emit_normal: bool = False
    alert_repeat: bool = False
    # state, metrics, process
    checkpoint: str | None = "auto"
    checkpoint_interval: float = 5.0
    fsync: bool = True
    exactly_once: bool = False
    metrics_port: int | None = None
    metrics_addr: str = "0.0.0.0"
    metrics_flagged_arms: int = 0
    forever: bool = False
    summary_json: str | None = None
    log_level: str = "info"
    quiet: bool = False
    table: bool = False
    plot: str | None = None
    # Kafka security and pass-through
    security_protocol: str | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = None
    kafka_option: list[str] | None = None
    consumer_option: list[str] | None = None
    producer_option: list[str] | None = None
    # embedded demo
    embedded_keys: int = 20
    embedded_rate: float = 1000.0
    # derived by resolve_settings (not settings: no flag, no TOML key)
    explicit: frozenset[str] = field(default=frozenset(), metadata={"derived": True})
    embedded: bool = field(default=False, metadata={"derived": True})
    reward_bounds: tuple[float, float] = field(default=(0.0, 1.0), metadata={"derived": True})
    model_params: dict[str, Any] = field(default_factory=dict, metadata={"derived": True})
    #: ``--rewards-file`` as given, before its patterns were expanded: what a restart compares (a pattern's new
    #: matches, a log rotated in, do not make the checkpoint another run's)
    rewards_file_given: list[str] | None = field(default=None, metadata={"derived": True})

    @property
    def files_named(self) -> list[str]:
        """The files the run reads: ``--rewards-file``'s matches, or the patterns given while a followed one matches
        no file yet (it waits for them: the flags that read files apply)."""
        return self.rewards_file or self.rewards_file_given or []

    def policy_params(self, *, seed: int | None = None) -> dict[str, Any]:
        """The :class:`~streamarms.registry.PolicyParams` these settings give (``seed``: this episode's)."""
        return {"k": self.k, "delta": self.delta, "two_sided": self.two_sided, "rho": self.rho,
                "reward_model": self.reward_model, "reward_range": self.reward_bounds,
                "model_params": self.model_params, "seed": seed, "epsilon": self.epsilon,
                "threshold": self.threshold, "budget": self.budget, "ucbe_b": self.ucbe_b, "alpha": self.alpha,
                "estimator": self.estimator, "moment_p": self.moment_p, "moment_bound": self.moment_bound}


#: every setting of ``streamarms run`` and its default (from :class:`RunSettings`)
DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(RunSettings) if not f.metadata.get("derived")}
#: what the embedded demo (nothing configured) changes, unless set: one short episode, its own output
EMBEDDED_DEFAULTS: dict[str, Any] = {"max_episodes": 1, "episode_interval": 30.0, "discovery_records": 200,
                                     "log_level": "warning"}

_TABLES = {"kafka": "kafka_option", "consumer": "consumer_option", "producer": "producer_option",
           "model": "model_param"}


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``streamarms run`` (every default is ``None``: see :data:`DEFAULTS`)."""
    d = DEFAULTS
    p.add_argument("--config", metavar="FILE", help="TOML file with any of these settings (flags win)")
    g = p.add_argument_group("Kafka")
    g.add_argument("--bootstrap-servers", metavar="HOST:PORT[,..]", help="Kafka brokers (none: embedded demo)")
    g.add_argument("--rewards-topic", action="append", metavar="TOPIC", help="reward topic (repeatable)")
    g.add_argument("--alerts-topic", metavar="TOPIC", help=f"alert topic (default {d['alerts_topic']})")
    g.add_argument("--requests-topic", metavar="TOPIC", help="sample-request topic (active mode)")
    g.add_argument("--dead-letter-topic", metavar="TOPIC", help="topic for refused records (reason in a header)")
    g.add_argument("--group-id", metavar="ID", help=f"consumer group (default {d['group_id']})")
    g.add_argument("--group-threshold", action="store_true", default=None,
                   help="scale out: the members of --group-id detect together (policy cs), the threshold from every "
                        "member's per-partition totals on a compacted stats topic; one alert per key group-wide")
    g.add_argument("--group-stats-topic", metavar="TOPIC", help="the group's stats topic (default <group-id>-stats)")
    g.add_argument("--group-member", metavar="NAME",
                   help="this member's name: its checkpoint key and stats tag (default: the host name)")
    g.add_argument("--group-interval", type=nonneg_float, metavar="SEC",
                   help="publish and merge the group's stats at most every SEC (default 1; the view's staleness)")
    g.add_argument("--group-chunk-keys", type=positive_int, metavar="N",
                   help="keys per record of a partition's stats value (default 2000): a partition's key state "
                        "goes in chunks of N keys, only the changed ones are sent again")
    g.add_argument("--create-topics", action="store_true", default=None, help="create missing topics at start")
    g.add_argument("--from-beginning", action=argparse.BooleanOptionalAction, default=None,
                   help="with no committed offset, start at the earliest record (default) or the latest")
    g.add_argument("--max-poll-records", type=positive_int, metavar="N", help="records per poll (default 1000)")
    g.add_argument("--order", choices=["timestamp", "arrival"],
                   help="record order across partitions: reproducible timestamp merge (default) or poll order "
                        "(runs of up to a poll per partition: --prefetch defaults to --max-poll-records)")
    g.add_argument("--on-out-of-range", choices=["earliest", "latest", "fail"],
                   help="a checkpointed position outside its partition (topic recreated, records expired): read "
                        "from the partition's start (default), its end, or stop with an error")
    g.add_argument("--start-from", type=start_from, metavar="TIMESTAMP|earliest|latest",
                   help="backfill: a partition without a checkpointed position starts at the first record at or "
                        "after TIMESTAMP (ms since the epoch, or ISO 8601, UTC by default), or at its start / end, "
                        "whatever the group's committed offset (default: the committed offset)")
    g.add_argument("--security-protocol", choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
    g.add_argument("--sasl-mechanism", metavar="MECH", help="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI")
    g.add_argument("--sasl-username", metavar="USER")
    g.add_argument("--sasl-password", metavar="PASS", help="(prefer env STREAMARMS_SASL_PASSWORD)")
    g.add_argument("--ssl-cafile", metavar="FILE")
    g.add_argument("--ssl-certfile", metavar="FILE")
    g.add_argument("--ssl-keyfile", metavar="FILE")
    g.add_argument("--ssl-password", metavar="PASS", help="(prefer env STREAMARMS_SSL_PASSWORD)")
    g.add_argument("--kafka-option", action="append", metavar="KEY=VALUE", help="kafka-python setting for all clients")
    g.add_argument("--consumer-option", action="append", metavar="KEY=VALUE", help="kafka-python consumer setting")
    g.add_argument("--producer-option", action="append", metavar="KEY=VALUE", help="kafka-python producer setting")
    g = p.add_argument_group("files")
    g.add_argument("--rewards-file", action="append", metavar="PATH", help="replay a JSONL file of records, or a CSV/TSV table (--rewards-format; repeatable; a quoted pattern "
                                                          "'logs/*.jsonl' reads every match; gzip, bzip2 and xz files are read "
                                                          "decompressed; '-': standard input, read until "
                                                          "its writer closes it, e.g. tail -F log | jq -c ...)")
    g.add_argument("--rewards-format", choices=["auto", "jsonl", "csv", "tsv", "w3c", "container"],
                   help="what the --rewards-file files hold: JSON lines, or a table whose first line names its "
                        "columns (CSV, TSV: a row a line, its cells read as a JSON line's fields, the reward's as a "
                        "number), or a W3C extended log (w3c: IIS, CloudFront; its #Fields directive names the "
                        "fields, sc-status, time-taken, ...), or a container runtime's log (container: Kubernetes' "
                        "/var/log/pods/*/*/*.log, Docker's json-file, kubectl logs --prefix --timestamps; each "
                        "entry's line read as JSON, or by --line-pattern; the pod as the field kubernetes). Default "
                        "auto: by the file's name (.csv, .tsv), else JSON lines")
    g.add_argument("--line-pattern", metavar="REGEX",
                   help="read every --rewards-file line (every Kafka record's value) with this regular expression: "
                        "its named groups are the record's fields (text; the reward's read as a number), a line it "
                        "does not match a bad_row dead letter; or a named pattern: combined, common (the access logs "
                        "of nginx and Apache: remote_addr, time_local, method, path, status, ...), ingress-nginx "
                        "(Kubernetes' ingress-nginx controller's: the same, then request_time, proxy_upstream_name, "
                        "upstream_status, ...), haproxy (its HTTP log: backend_name, server_name, "
                        "time_backend_response, status_code, ...), envoy (Envoy's default access log, Istio's "
                        "sidecar text log: response_code, duration, upstream_host, upstream_cluster, ...), syslog (a "
                        "syslog file's time, host, program, pid, message), alb (an AWS load balancer's: target, "
                        "elb_status_code, target_processing_time, ...), app (an application's text log, log4j's, "
                        "logback's, Spring Boot's, Python logging's: time, level, message and the message's "
                        "key=value pairs), logfmt (every key=value "
                        "pair of a line is a field: level=error host=web-1 latency=1.2ms msg=\"timed out\"), or json "
                        "(the line is a JSON object: with --line-field, an application's JSON line a shipper wrapped)")
    g.add_argument("--line-field", metavar="FIELD",
                   help="read --line-pattern in this field of each JSON record, not the whole line or value: the "
                        "log line a shipper wrapped (Filebeat's and Vector's message, Fluent Bit's log, Google Cloud "
                        "Logging's textPayload, Loki's line); its groups join the record's own fields")
    g.add_argument("--encoding", metavar="NAME",
                   help="the --rewards-file files' text encoding when it is not UTF-8: cp1252 (what Excel and most "
                        "Windows programs write in Western Europe and the Americas), latin-1, cp1251, shift_jis, "
                        "gb18030, ...; UTF-16 with its byte-order mark (Excel's Unicode Text) is read without it")
    g.add_argument("--sheet", metavar="NAME",
                   help="the sheet of an Excel workbook (.xlsx) --rewards-file reads, by its name; else the active "
                        "one (open when it was saved), and a workbook of several sheets says which is read")
    g.add_argument("--follow", action="store_true", default=None,
                   help="keep reading the --rewards-file files as they grow (tail -F): the run goes on at their end "
                        "until stopped (SIGTERM, Ctrl-C, --max-episodes); a line is read once its line end is "
                        "written. A file renamed away or copied and truncated (logrotate) is read to its end, then the "
                        "file at its path; one truncated or rewritten with no copy beside it stops the run (exit 1). "
                        "A quoted pattern ('logs/app-*.log') is looked at once a second: each file that comes to "
                        "match it is followed too (a log named by the day)")
    g.add_argument("--alerts-file", metavar="PATH", help="append alerts as JSON lines ('-': stdout)")
    g.add_argument("--dead-letter-file", metavar="PATH", help="append refused records as JSON lines")
    g = p.add_argument_group("policy")
    g.add_argument("--mode", choices=[CONTINUOUS, EPISODES, PASSIVE, ACTIVE],
                   help="continuous: every record feeds a monitor that never restarts (the default with --forever); "
                        "episodes (= passive): detection episodes sampling the stream (the default without "
                        "--forever); active: episodes that request samples")
    g.add_argument("--passive-feed", choices=["planned", "all"],
                   help="passive: give the policy the rewards its plan asks for (planned) or every "
                        "reward of its arms as it arrives (all: fewer records read; k-sigma, GOLD, robust). "
                        "Default: the policy's own (cs: all; the papers' policies: planned)")
    g.add_argument("--policy", choices=sorted(POLICIES), help=f"policy (default {d['policy']})")
    g.add_argument("--k", type=float, help="k of the k-sigma rule (default 2; at most 1000)")
    g.add_argument("--delta", type=float, help="error probability (default 0.1)")
    g.add_argument("--reward-model", choices=["bernoulli", "bounded", "heavy_tailed", "subgaussian"],
                   help="what a reward is: 0/1 (default), bounded in --reward-range, heavy-tailed (--moment-bound), "
                        "sub-Gaussian around its key's mean (--model-param sigma=S)")
    g.add_argument("--reward-range", metavar="A,B", help="range of bounded rewards (default 0,1)")
    g.add_argument("--clip", action="store_true", default=None,
                   help="bounded rewards: a value outside --reward-range counts as its nearest end (e.g. a latency "
                        "above the request timeout as the timeout) instead of being refused as a dead letter")
    g.add_argument("--model-param", action="append", metavar="KEY=VALUE",
                   help="reward-model parameter, wins over the flags above (bernoulli: z_rule; bounded: a, b; "
                        "heavy_tailed: p, B, estimator, C, delta0; subgaussian: sigma; another name is an error)")
    g.add_argument("--two-sided", action="store_true", default=None, help="also flag arms far below the mean")
    g.add_argument("--rho", type=float, help="WRR rho (default rho* of the paper)")
    g.add_argument("--seed", type=int, help="seed of randomised policies (episode e uses seed + e - 1)")
    g = p.add_argument_group("parameters of other policy families (as in `streamarms simulate`)")
    g.add_argument("--threshold", type=float, help="lsa/apt/ucbe/uniform: the known threshold theta")
    g.add_argument("--budget", type=positive_int, metavar="T", help="lsa/apt/ucbe/uniform/sr: samples per episode")
    g.add_argument("--epsilon", type=float, help="GOLD distance factor; APT precision; SR-T(TEA) design gap")
    g.add_argument("--b", dest="ucbe_b", type=float, metavar="B", help="UCBE exploration parameter b")
    g.add_argument("--alpha", type=float, help="LSA alpha (default 1.35)")
    g.add_argument("--estimator", choices=["ea", "tea", "mom"], help="heavy-tailed mean estimate")
    g.add_argument("--moment-p", type=float, metavar="P", help="heavy-tailed: moment order p in (1, 2]")
    g.add_argument("--moment-bound", type=float, metavar="B", help="heavy-tailed: bound B on E|X|^p")
    g = p.add_argument_group("continuous mode")
    g.add_argument("--group-by", metavar="FIELD",
                   help="JSON field of a record naming its group (a service, a country): a threshold per group")
    g.add_argument("--max-groups", type=positive_int, metavar="N",
                   help=f"refuse (dead-letter) records of a new group beyond N groups (default {d['max_groups']})")
    g.add_argument("--monitor-alpha", type=probability, metavar="A",
                   help="level of each key's and each threshold's confidence sequence (default 0.001): "
                        "P(false alert) <= A x (segments + epochs) while means are constant")
    g.add_argument("--change-alpha", type=probability, metavar="A",
                   help="change detector: at most A false restarts of a key per record of it (default 1e-6)")
    g.add_argument("--silence-records", type=nonneg_int, metavar="N",
                   help="a key with no record for N records of its group leaves the group's threshold until its "
                        "next record (default 1,000,000; 0: never -- then one silent key freezes its group's "
                        "threshold)")
    g.add_argument("--forget-silent", action="store_true", default=None,
                   help="drop the evidence of a key silent for --silence-records records of its group (it has left "
                        "the threshold) and reuse its memory; its next record makes it a new key (default: keep "
                        "it, it rejoins with its evidence)")
    g = p.add_argument_group("records")
    g.add_argument("--max-timestamp-ahead", type=nonneg_float, metavar="SECONDS",
                   help="refuse (dead-letter, reason bad_timestamp) a record -- a Kafka record, a file's line -- "
                        "stamped more than SECONDS after this machine's clock (a Kafka record also before 1970): one "
                        "producer or host with a wrong clock would otherwise move the stream clock to its time for "
                        "good (default 3600 for Kafka, Kafka 4.0's own limit; 54000, 15 h, for a file's lines, whose "
                        "local times written without a zone are read as UTC; 0: no limit)")
    g.add_argument("--reward-field", metavar="NAME", help="JSON field holding the reward (default reward); a "
                   "dotted name (http.latency_ms) reads a nested field, or the field of that very name if there is one")
    g.add_argument("--numeric-strings", action="store_true", default=None,
                   help="read a reward written as a string holding a JSON number (\"0.005\", \"503\": logs that "
                        "quote every value, as nginx's escape=json) as that number; else such a value is refused")
    g.add_argument("--decimal-comma", action="store_true", default=None,
                   help="read the reward column's decimal commas (0,25) in any table: a tab-separated export of a "
                        "spreadsheet in a locale that writes them (Excel's Unicode Text), a quoted \"0,25\" in a "
                        "CSV file (a file separated by semicolons reads them without it)")
    g.add_argument("--reward-at-least", type=float, metavar="X",
                   help="the reward is 1 when the field's number is at least X, else 0: a rate from a value (an "
                        "error rate from status codes: --reward-field status --reward-at-least 500; slow requests: "
                        "a latency field and the SLO). Needs a model holding 0 and 1 (the default, bernoulli)")
    g.add_argument("--reward-in", type=match_values, metavar="V,W,..",
                   help="the reward is 1 when the field is one of these texts, else 0: a rate from a category (the "
                        "share of error lines: --reward-field level --reward-in ERROR,FATAL; an integer matches its "
                        "digits, a boolean true/false). Needs a model holding 0 and 1 (the default, bernoulli)")
    g.add_argument("--reward-match", type=match_pattern, metavar="REGEX",
                   help="the reward is 1 when the regular expression is found in the field's text, else 0: a rate "
                        "from a message (--reward-field msg --reward-match 'timed? out|refused'; (?i) ignores case). "
                        "Needs a model holding 0 and 1 (the default, bernoulli)")
    g.add_argument("--reward-missing", type=float, metavar="X",
                   help="the reward of a record without the reward's field (a flag a log writes only when it is "
                        "set: --reward-field error --reward-match . --reward-missing 0); else such a record is "
                        "refused (missing_reward)")
    g.add_argument("--reward-unit", choices=("ns", "us", "ms", "s", "m", "h"), metavar="UNIT",
                   help="read a duration written with its unit (\"17.19ms\", \"850µs\", \"1.2s\", Go's \"1m30s\"; "
                        "Java's ISO 8601 \"PT0.123S\") as the number of UNIT (ns, us, ms, s, m, h) it lasts; a "
                        "number without a unit is taken as "
                        "already in UNIT. With --reward-at-least (--reward-unit ms --reward-at-least 500: the rate "
                        "of requests slower than 500 ms) or --reward-model bounded")
    g.add_argument("--key-field", metavar="NAME",
                   help="JSON field of the value naming the record's key (a host, a worker), in place of the "
                        "record's own key (Kafka) or a line's arm (files); every value is then parsed. A dotted "
                        "name (host.name) reads a nested field, as --reward-field")
    g.add_argument("--key-from-file", action="store_true", default=None,
                   help="--rewards-file: each record's key is the file it came from (its path; with --key-match, the "
                        "part the pattern finds: --key-match '([^/]+)\\.log$' keys logs/web-1.log by web-1), when "
                        "each host writes its own log and its lines do not name it")
    g.add_argument("--key-ids", action="store_true", default=None,
                   help="--key-field (--key-from-file): each /-separated segment of the key that is an id (a "
                        "number, a UUID, a hex hash, a long token with digits) reads as :id -- /users/8812/orders and "
                        "/users/17/orders are one key")
    g.add_argument("--key-match", type=match_pattern, metavar="REGEX",
                   help="--key-field (--key-from-file): the key is the part of the field's text (the path) the "
                        "regular expression finds (its group 'key', else its first group, else the whole match): "
                        "--key-match '^/[^/]+' keys by a path's first segment. A text it does not find is refused "
                        "(key_missing)")
    g.add_argument("--timestamp-field", metavar="NAME",
                   help="--rewards-file: the field of a line holding its time (default timestamp; @timestamp, time, "
                        "ts; dotted: nested): a number in --timestamp-unit (also written as text: journald's "
                        "__REALTIME_TIMESTAMP, us), or an ISO 8601 date-time")
    g.add_argument("--timestamp-format", metavar="FMT",
                   help="--rewards-file: the time field's text read by this strptime format, UTC unless it reads a "
                        "zone (%%z): '%%m/%%d/%%Y %%I:%%M %%p' (a spreadsheet's 11/14/2023 10:13 PM), '%%d.%%m.%%Y %%H:%%M'")
    g.add_argument("--timestamp-unit", choices=["ms", "s", "us", "ns"],
                   help="--rewards-file: a numeric time is milliseconds (default), seconds (1700000000.123: nginx's "
                        "$msec), microseconds or nanoseconds (OpenTelemetry's timeUnixNano) since the epoch")
    g.add_argument("--request-id-field", metavar="NAME", help="JSON field of answers holding the request id")
    g.add_argument("--max-key-bytes", type=positive_int, metavar="N", help="longer keys are refused (default 256)")
    g.add_argument("--validate", choices=["used", "all"],
                   help="check every record, so every bad one is dead-lettered (default), or parse only "
                        "the records the policy takes (fast path)")
    g.add_argument("--arms", type=key_names, metavar="A,B,..", help="fixed arm set (other keys are skipped)")
    g = p.add_argument_group("episodes and scheduling")
    g.add_argument("--max-episodes", type=positive_int, metavar="N", help="stop after N episodes (default: run forever; "
                   "the embedded demo runs 1; a --group-threshold member stops after the group's episode N, "
                   "counting those run before it joined)")
    g.add_argument("--episode-interval", type=nonneg_float, metavar="SEC", help="between episode starts (default 300)")
    g.add_argument("--episode-timeout", type=nonneg_float, metavar="SEC", help="end an unfinished episode after this")
    g.add_argument("--window", type=positive_int, metavar="N", help="planned arms to take rewards for (default 32)")
    g.add_argument("--prefetch", type=positive_int, metavar="N", help="rewards held per planned arm (default 32; active mode: requests sent ahead, 4; "
                        "with --order arrival "
                        "--max-poll-records: a partition's records come in runs of a poll)")
    g.add_argument("--want-timeout", type=nonneg_float, metavar="SEC", help="defer an arm after this (default 30)")
    g.add_argument("--max-in-flight", type=positive_int, metavar="N", help="active: outstanding requests (default 32)")
    g.add_argument("--request-timeout", type=nonneg_float, metavar="SEC", help="active: drop a request (default 30)")
    g.add_argument("--discovery-records", type=positive_int, metavar="N",
                   help="first episode starts when no new key appeared for N records (default 1000) ...")
    g.add_argument("--discovery-seconds", type=nonneg_float, metavar="SEC", help="... or SEC (default 10) of stream time after the first "
                   "record once the keys settle (as many records since the last new key as before it; at the latest "
                   "30 x SEC); with Kafka, not before every assigned partition has delivered a record (or SEC of wall time)")
    g.add_argument("--min-arms", type=positive_int, metavar="N", help="arms needed to start an episode (default 3)")
    g.add_argument("--max-arms", type=positive_int, metavar="N", help="refuse new keys beyond N arms (default 10000)")
    g.add_argument("--key-ttl", type=nonneg_float, metavar="SEC",
                   help="forget a key with no record for this long, checked when an episode starts: it leaves the "
                        "next episode's arms and frees its place under --max-arms (default 0: never)")
    g.add_argument("--episode-silence-records", type=nonneg_int, metavar="N",
                   help="passive: end the running episode when one of its keys has had no record for N records "
                        "of the stream (a k-sigma policy needs every key's samples: a silent key would stall it); "
                        "the silent keys are forgotten (their next record makes them new keys, which join a "
                        "later episode) and the next episode starts at once without them. 0: never (default: "
                        "max(10 x --discovery-records, 100 x the episode's keys): a key ~100 times rarer than "
                        "the average is left out rather than waited for)")
    g.add_argument("--clock", choices=["auto", "event", "wall"],
                   help="scheduler time: record timestamps (passive default) or the wall clock (active default)")
    g = p.add_argument_group("alerts")
    g.add_argument("--emit-normal", action="store_true", default=None, help="also alert 'normal' classifications")
    g.add_argument("--alert-repeat", action="store_true", default=None,
                   help="alert an outlier again in every episode it is found (default: once until cleared)")
    g = p.add_argument_group("state, metrics, process")
    g.add_argument("--checkpoint", metavar="PATH|dir:PATH|kafka:TOPIC|none",
                   help="where to checkpoint (default: the compacted topic kafka:streamarms-checkpoints, key = "
                        "the group, with Kafka; none otherwise); dir:PATH: incremental, saved in the background "
                        "(many keys). A file or directory is checked writable at start. A run resuming it must have "
                        "its settings that define the statistics (--k, --delta, --policy and its parameters, the "
                        "reward model, --arms, ...; an error names each that differs)")
    g.add_argument("--checkpoint-interval", type=nonneg_float, metavar="SEC", help="seconds between checkpoints (default 5)")
    g.add_argument("--exactly-once", action=argparse.BooleanOptionalAction, default=None,
                   help="Kafka: alerts, dead letters, requests, the checkpoint (kafka:TOPIC) and the consumed offsets "
                        "as one transaction per checkpoint; read the alerts with isolation.level=read_committed "
                        "(default off: at-least-once, deduplicate by alert_id)")
    g.add_argument("--fsync", action=argparse.BooleanOptionalAction, default=None, help="fsync checkpoints (default on)")
    g.add_argument("--metrics-port", type=port, metavar="PORT", help="serve /metrics and /healthz on this port")
    g.add_argument("--metrics-addr", metavar="ADDR", help="bind address of the metrics server (default 0.0.0.0)")
    g.add_argument("--metrics-flagged-arms", type=int, metavar="N",
                   help="also export streamarms_flagged_arm{arm} for at most N flagged keys (default 0: none)")
    g.add_argument("--forever", action="store_true", default=None,
                   help="run until stopped (a --rewards-file replay: until its end, or with --follow until stopped), "
                        "in the continuous mode unless "
                        "--mode says otherwise")
    g.add_argument("--summary-json", metavar="PATH", help="write the final summary as JSON ('-': stdout)")
    g.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    g.add_argument("--quiet", action="store_true", default=None, help="no summary on stdout")
    g.add_argument("--table", action="store_true", default=None,
                   help="at the stop, every key's evidence as a table (state, estimate, interval, samples, margin: "
                        "what `streamarms explain CHECKPOINT --table` prints), after the summary")
    g.add_argument("--plot", metavar="FILE",
                   help="at the stop, draw every key's estimate and interval against the threshold's band to FILE "
                        "(.png, .svg, .pdf: what `streamarms explain CHECKPOINT --plot FILE` draws); needs "
                        "matplotlib (pip install 'streamarms[plot]')")
    g.add_argument("--embedded-keys", type=positive_int, metavar="N", help=argparse.SUPPRESS)
    g.add_argument("--embedded-rate", type=float, metavar="R", help=argparse.SUPPRESS)


def _norm(key: str) -> str:
    return key.replace("-", "_")


def _flags() -> dict[str, argparse.Action]:
    """Setting name -> its flag (type, choices, kind), to validate TOML values exactly as flags."""
    p = argparse.ArgumentParser(add_help=False)
    add_run_arguments(p)
    return {a.dest: a for a in p._actions if a.dest in DEFAULTS}


def _toml_value(key: str, value: Any, flag: argparse.Action | None, where: str) -> Any:
    """A TOML value through the validator of its flag: the same checks, a :class:`ConfigError` if bad.

    >>> f = _flags()
    >>> _toml_value("window", 8, f["window"], "c.toml"), _toml_value("rewards_topic", "r", f["rewards_topic"], "")
    (8, ['r'])
    >>> _toml_value("reward_range", [0, 5000], f["reward_range"], "c.toml"), _toml_value("arms", ["a", "b"], f["arms"], "")
    ('0,5000', ['a', 'b'])
    >>> _toml_value("metrics_port", "abc", f["metrics_port"], "c.toml")
    Traceback (most recent call last):
    ...
    streamarms.errors.ConfigError: c.toml: metrics_port = 'abc': expected a TCP port, got 'abc'
    """
    if flag is None:  # pragma: no cover - every setting has a flag
        return value
    bad = f"{where}: {key} = {value!r}"
    if flag.nargs == 0 or isinstance(flag, argparse.BooleanOptionalAction):
        if not isinstance(value, bool):
            raise ConfigError(f"{bad}: expected true or false")
        return value
    if isinstance(flag, argparse._AppendAction):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ConfigError(f"{bad}: expected a string or a list of strings")
        return [_toml_scalar(key, v, flag, where) for v in items]
    if isinstance(value, list) and "," in str(flag.metavar or ""):  # reward_range = [0, 5000], arms = ["a", "b"]
        if not value:  # (reward_range = [] was the default range, in silence)
            raise ConfigError(f"{bad}: expected {flag.metavar}, got an empty list")
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            raise ConfigError(f"{bad}: expected {flag.metavar} as a string or a list of numbers or strings")
        value = ",".join(str(v) for v in value)
    return _toml_scalar(key, value, flag, where)


def _toml_scalar(key: str, value: Any, flag: argparse.Action, where: str) -> Any:
    bad = f"{where}: {key} = {value!r}"
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"{bad}: expected {'a number' if flag.type in (int, float) else 'a string'}")
    conv = flag.type
    out: Any = value if conv is None else None
    if conv is not None:
        try:
            if not callable(conv):  # argparse also takes a registered type's name; no flag of ours uses one
                raise TypeError(f"type {conv!r} is a name, not a converter")
            out = conv(str(value))
        except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
            raise ConfigError(f"{bad}: {e}") from None
    elif not isinstance(value, str):
        out = str(value)
    if flag.choices is not None and out not in flag.choices:
        raise ConfigError(f"{bad}: choose one of {', '.join(map(str, flag.choices))}")
    return out


#: the settings that name an output, a topic, a group or a field, for which an empty text names nothing (those that
#: read input say so in their own words: --key-field, --checkpoint, --line-pattern, --timestamp-format, ...)
NAMES_NOT_EMPTY = frozenset({"alerts_topic", "requests_topic", "dead_letter_topic", "group_id", "group_stats_topic",
                             "alerts_file", "dead_letter_file", "summary_json", "plot", "request_id_field",
                             "sasl_username", "ssl_cafile", "ssl_certfile", "ssl_keyfile"})

#: the largest ``--config`` file read (a settings file is a few KiB; 50 MB of settings loaded in 1.5 s)
MAX_CONFIG_BYTES = 64 << 20


def _load_toml(path: str) -> dict[str, Any]:
    where = f"--config {path}"
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)  # (/dev/zero, a log given by mistake: not read without end)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{where}: more than {MAX_CONFIG_BYTES >> 20} MiB: no settings file is (a log or "
                              "a device given by mistake?)")
        text = raw.decode("utf-8")
        data = tomllib.loads(text[1:] if text.startswith("\ufeff") else text)  # (a BOM, as Windows' editors write)
    except FileNotFoundError:
        raise ConfigError(f"--config: no such file {path!r}") from None
    except OSError as e:
        raise ConfigError(f"{where}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:  # (a binary file, UTF-16 from a Windows editor)
        utf16 = raw[:2] in (b"\xff\xfe", b"\xfe\xff")
        raise ConfigError(f"{where}: not UTF-8 text (byte {e.start:,}: {raw[e.start:e.start + 1]!r}): TOML is "
                          f"UTF-8; {'save it as UTF-8 (it is UTF-16)' if utf16 else 'is it a TOML file?'}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}: arrays or tables nested too deeply to read") from None
    flags = _flags()
    out: dict[str, Any] = {}
    spelt: dict[str, str] = {}
    for key, value in data.items():
        k = _norm(key)
        if k in spelt:  # (episode_interval and episode-interval: one of them won in silence)
            raise ConfigError(f"{where}: {spelt[k]!r} and {key!r} are one setting: give it once")
        spelt[k] = key
        if k in _TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: [{k}] must be a table of KEY = VALUE")
            out[_TABLES[k]] = [f"{kk}={vv if not isinstance(vv, bool) else str(vv).lower()}" for kk, vv in value.items()]
        elif k in DEFAULTS:
            out[k] = _toml_value(k, value, flags.get(k), where)
        else:
            raise ConfigError.unknown(key, [*DEFAULTS, *_TABLES], where=where)
    return out


def resolve_settings(opts: argparse.Namespace) -> RunSettings:
    """Flags > TOML file > :data:`EMBEDDED_DEFAULTS` (the embedded demo only) > :data:`DEFAULTS`."""
    from_file = _load_toml(opts.config) if getattr(opts, "config", None) else {}
    cfg: dict[str, Any] = {}
    for key in DEFAULTS:
        flag = getattr(opts, key, None)
        if flag is not None:
            cfg[key] = flag
        elif key in from_file:
            cfg[key] = from_file[key]
    explicit = frozenset(cfg)
    for key in ("bootstrap_servers", "rewards_file"):  # (empty: a template's variable that expanded to nothing
        given = cfg.get(key)  # ran the embedded demo on made-up data, exit 0; "," and [""] name nothing either)
        if key in cfg and not any(part.strip() for part in (given.split(",") if isinstance(given, str) else given or [])):
            raise ConfigError(f"{'--' + key.replace('_', '-')} is empty ({cfg[key]!r}): name "
                              f"{'the Kafka brokers' if key == 'bootstrap_servers' else 'a file to read'}, or leave "
                              "it out for the embedded demo")
    for key in NAMES_NOT_EMPTY & explicit:  # (an alerts file of '' wrote no alert, and said nothing)
        if isinstance(cfg[key], str) and not cfg[key].strip():
            raise ConfigError(f"--{key.replace('_', '-')} is empty ({cfg[key]!r}): name it, or leave it out")
    if cfg.get("mode") == EPISODES:
        cfg["mode"] = PASSIVE
    elif "mode" not in cfg and cfg.get("forever"):
        cfg["mode"] = CONTINUOUS
    embedded = not cfg.get("bootstrap_servers") and not cfg.get("rewards_file")
    if embedded:
        for key, value in EMBEDDED_DEFAULTS.items():
            if key not in explicit and not (key == "max_episodes" and cfg.get("forever")):
                cfg[key] = value
    for key, env in (("sasl_password", "STREAMARMS_SASL_PASSWORD"), ("ssl_password", "STREAMARMS_SSL_PASSWORD")):
        if cfg.get(key) is None:
            cfg[key] = os.environ.get(env)
    s = RunSettings(**cfg)
    if s.order == "arrival" and "prefetch" not in explicit:
        # poll order hands out a partition's records in runs of up to a poll: a plan that spans keys of
        # several partitions starves if it may hold only a few rewards a key (WRR on the 20-key stream in
        # 4 partitions: not decided after 200k records with 4, 41k with a poll's worth, 64k in timestamp
        # order: tests/runtime/test_arrival_order.py)
        s = replace(s, prefetch=max(s.prefetch, s.max_poll_records))
    elif s.mode == ACTIVE and "prefetch" not in explicit:  # requests sent ahead per planned arm: a few
        s = replace(s, prefetch=ACTIVE_PREFETCH)
    bounds = (0.0, 1.0)
    if s.reward_range:
        try:
            a, b = (float(v) for v in str(s.reward_range).split(","))
        except ValueError:
            raise ConfigError(f"--reward-range must be A,B (two numbers), got {s.reward_range!r}") from None
        bounds = (a, b)
    if s.rewards_file:
        from .file_patterns import expand_files
        s = replace(s, rewards_file=expand_files(s.rewards_file, waiting=bool(s.follow)), rewards_file_given=list(s.rewards_file))
    from streamarms.connectors.csv_lines import table_format
    files = s.files_named
    formats = {table_format(p, s.rewards_format) or "jsonl" for p in files}
    if s.key_from_file and (s.key_field is not None or not files or "-" in files):
        raise ConfigError("--key-from-file keys each record by the file it came from: give --rewards-file files "
                          "(not standard input), and no --key-field" if s.key_field is None else
                          "--key-from-file and --key-field both name the key: give one")
    if s.encoding is not None:
        from streamarms.connectors.text_encoding import check_encoding

        if not files:
            raise ConfigError("--encoding is the --rewards-file files' encoding (a Kafka record's value is UTF-8)")
        named = check_encoding(s.encoding)
        s = replace(s, encoding=None if named == "utf-8" else named)  # (UTF-8 is the default: the same setting)
    if s.line_pattern == "json" and s.line_field is None:
        raise ConfigError("--line-pattern json reads a field's text as a JSON line (--line-field log): JSON lines and "
                          "Kafka records of JSON are read as JSON without a pattern")
    if s.line_field is not None and (s.line_pattern is None or s.rewards_format not in ("auto", "jsonl")):
        raise ConfigError("--line-field names the field of each JSON record that --line-pattern reads: give both, "
                          "on JSON lines (not --rewards-format " + s.rewards_format + ")" if s.line_pattern else
                          "--line-field names the field of each JSON record that --line-pattern reads: give the "
                          "pattern (--line-pattern combined, logfmt, or your own)")
    if s.line_field is not None:
        formats = {"jsonl"} if files else set()  # (JSON lines: a field of each read by the pattern)
    elif s.line_pattern is not None and s.rewards_format != "container":  # every file is read by the pattern
        if s.rewards_format not in ("auto", "pattern"):
            raise ConfigError(f"--line-pattern reads every --rewards-file line with a pattern; --rewards-format "
                              f"{s.rewards_format} reads them otherwise: give one")
        formats = {"pattern"} if files or s.bootstrap_servers else set()  # (a topic's values: its lines)
    if s.sheet is not None:
        from streamarms.connectors.workbook_lines import workbook_given

        if not any(workbook_given(p) for p in files):
            raise ConfigError("--sheet names the sheet of an Excel workbook to read: give --rewards-file a workbook "
                              "(.xlsx)")
    if s.bootstrap_servers and (s.alerts_file or s.dead_letter_file):
        s = _files_for_kafka(s, explicit)
    if s.decimal_comma and not formats & {"csv", "tsv"}:
        raise ConfigError("--decimal-comma reads the reward column's decimal commas (0,25) in a table: give "
                          "--rewards-file CSV or TSV files (--rewards-format csv or tsv for another name)")
    return replace(s, explicit=explicit, embedded=embedded, reward_bounds=bounds,
                   model_params=dict(_kv(x) for x in (s.model_param or [])),
                   # a table's cells (a pattern's groups) are text: the reward's is read as the number it writes
                   numeric_strings=s.numeric_strings or bool(formats - {"jsonl", "container"}) or (
                       s.line_pattern is not None),
                   # what the files are read as (a restart compares it): auto resolved where the files agree
                   rewards_format=formats.pop() if len(formats) == 1 else s.rewards_format)


def _files_for_kafka(s: RunSettings, explicit: frozenset[str]) -> RunSettings:
    """A Kafka run's ``--alerts-file`` (``--dead-letter-file``) takes the alerts (dead letters) in place of the topic
    (they were ignored: the alerts went to the default topic, the refused records to no sink); naming both is an error,
    and so is ``--exactly-once``, whose transaction holds Kafka's writes, not a file's."""
    if s.exactly_once:
        raise ConfigError("--exactly-once writes the alerts and dead letters in its Kafka transaction, which a file is "
                          "not part of: drop --alerts-file/--dead-letter-file (the topics hold them), or --exactly-once")
    for file, topic in (("alerts_file", "alerts_topic"), ("dead_letter_file", "dead_letter_topic")):
        if getattr(s, file) and topic in explicit and getattr(s, topic):
            raise ConfigError(f"--{file.replace('_', '-')} and --{topic.replace('_', '-')} both say where the "
                              f"{'alerts' if file == 'alerts_file' else 'dead letters'} go: give one")
    return replace(s, alerts_topic=None if s.alerts_file else s.alerts_topic,
                   dead_letter_topic=None if s.dead_letter_file else s.dead_letter_topic)


def _kv(text: str) -> tuple[str, Any]:
    """``"max_poll_records=500"`` -> ``("max_poll_records", 500)``.

    >>> _kv("ssl_check_hostname=false"), _kv("client_id=a=b")
    (('ssl_check_hostname', False), ('client_id', 'a=b'))
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"expected KEY=VALUE, got {text!r}")
    raw = raw.strip()
    value: Any = raw
    if raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    else:
        for conv in (int, float):
            try:
                value = conv(raw)
                break
            except ValueError:
                pass
    return key.strip().replace("-", "_").replace(".", "_"), value

"""``streamarms run``: the long-running detector (the product's main job).

Three ways to feed it:

* **Kafka** (``--bootstrap-servers`` and ``--rewards-topic``): consume the reward topics as group
  ``--group-id``, publish alerts to ``--alerts-topic``, refused records to ``--dead-letter-topic`` and,
  in ``--mode active``, sample requests to ``--requests-topic``; checkpoint to a file (default
  ``./streamarms-<group>.checkpoint``) or a compacted topic (``--checkpoint kafka:TOPIC``).
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
could not deliver, the broker is unreachable); 2 bad configuration.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import time
import tomllib
from types import SimpleNamespace
from typing import Any, Iterator, Sequence

from .cli import _positive_int as _pos_int
from .checkpoint import CheckpointError, CheckpointStore, FileCheckpointStore, checkpoint_key
from .daemon import Daemon, restore_checkpoint
from .metrics import Metrics
from .registry import POLICIES
from .scheduler import ACTIVE, PASSIVE, EventClock, RewardCodec, Scheduler, SchedulerConfig

__all__ = ["add_run_parser", "run_main", "main", "resolve_settings", "DEFAULTS", "embedded_means"]

log = logging.getLogger("streamarms.run")

#: every setting of ``streamarms run`` and its default (flags and TOML keys use these names)
DEFAULTS: dict[str, Any] = {
    # where rewards come from / where results go
    "bootstrap_servers": None, "rewards_topic": None, "alerts_topic": "streamarms-alerts",
    "requests_topic": None, "dead_letter_topic": None, "group_id": "streamarms", "create_topics": False,
    "from_beginning": True, "max_poll_records": 1000, "order": "timestamp",
    "rewards_file": None, "alerts_file": None, "dead_letter_file": None,
    # the policy
    "mode": PASSIVE, "policy": "wrr", "k": 2.0, "delta": 0.1, "reward_model": "bernoulli", "reward_range": None,
    "model_param": None, "two_sided": False, "rho": None, "seed": 0,
    # parameters of the other policy families (see `streamarms simulate --help`)
    "threshold": None, "budget": None, "epsilon": None, "ucbe_b": None, "alpha": None, "estimator": None,
    "moment_p": None, "moment_bound": None,
    # records
    "reward_field": "reward", "request_id_field": "request_id", "max_key_bytes": 256, "validate": "all",
    "arms": None,
    # scheduling
    "max_episodes": None, "episode_interval": 300.0, "episode_timeout": None, "window": 32, "prefetch": 4,
    "want_timeout": 30.0, "max_in_flight": 32, "request_timeout": 30.0, "discovery_records": 1000,
    "discovery_seconds": 10.0, "min_arms": 3, "max_arms": 10_000, "key_ttl": None, "clock": "auto",
    # alerts
    "emit_normal": False, "alert_repeat": False,
    # state, metrics, process
    "checkpoint": "auto", "checkpoint_interval": 5.0, "fsync": True, "metrics_port": None,
    "metrics_addr": "0.0.0.0", "metrics_flagged_arms": 0, "forever": False, "summary_json": None, "log_level": "info", "quiet": False,
    # Kafka security and pass-through
    "security_protocol": None, "sasl_mechanism": None, "sasl_username": None, "sasl_password": None,
    "ssl_cafile": None, "ssl_certfile": None, "ssl_keyfile": None, "ssl_password": None,
    "kafka_option": None, "consumer_option": None, "producer_option": None,
    # embedded demo
    "embedded_keys": 20, "embedded_rate": 1000.0,
}

_LIST_KEYS = {"rewards_topic", "rewards_file", "kafka_option", "consumer_option", "producer_option", "model_param"}
_TABLES = {"kafka": "kafka_option", "consumer": "consumer_option", "producer": "producer_option",
           "model": "model_param"}


# ----------------------------------------------------------------------------------------------
# argument parsing
# ----------------------------------------------------------------------------------------------
def _nonneg_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return v


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a TCP port, got {text!r}") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is in 0..65535, got {text!r}")
    return v


def add_run_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``run`` to the ``streamarms`` sub-commands (sets ``handler=run_main``)."""
    p = subparsers.add_parser(
        "run", help="run the streaming detector (Kafka, JSONL replay, or the embedded demo)",
        description=__doc__.split("\n\n")[0] + " With nothing configured it runs an embedded demo.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(p)
    p.set_defaults(handler=run_main)
    return p


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
    g.add_argument("--create-topics", action="store_true", default=None, help="create missing topics at start")
    g.add_argument("--from-beginning", action=argparse.BooleanOptionalAction, default=None,
                   help="with no committed offset, start at the earliest record (default) or the latest")
    g.add_argument("--max-poll-records", type=_pos_int, metavar="N", help="records per poll (default 1000)")
    g.add_argument("--order", choices=["timestamp", "arrival"],
                   help="record order across partitions: reproducible timestamp merge (default) or poll order")
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
    g.add_argument("--rewards-file", action="append", metavar="PATH", help="replay a JSONL file of records (repeatable)")
    g.add_argument("--alerts-file", metavar="PATH", help="append alerts as JSON lines ('-': stdout)")
    g.add_argument("--dead-letter-file", metavar="PATH", help="append refused records as JSON lines")
    g = p.add_argument_group("policy")
    g.add_argument("--mode", choices=[PASSIVE, ACTIVE], help="passive: sample the stream; active: request samples")
    g.add_argument("--policy", choices=sorted(POLICIES), help=f"policy (default {d['policy']})")
    g.add_argument("--k", type=float, help="k of the k-sigma rule (default 2)")
    g.add_argument("--delta", type=float, help="error probability (default 0.1)")
    g.add_argument("--reward-model", choices=["bernoulli", "bounded", "heavy_tailed"],
                   help="what a reward is: 0/1 (default), bounded in --reward-range, heavy-tailed")
    g.add_argument("--reward-range", metavar="A,B", help="range of bounded rewards (default 0,1)")
    g.add_argument("--model-param", action="append", metavar="KEY=VALUE", help="reward-model parameter")
    g.add_argument("--two-sided", action="store_true", default=None, help="also flag arms far below the mean")
    g.add_argument("--rho", type=float, help="WRR rho (default rho* of the paper)")
    g.add_argument("--seed", type=int, help="seed of randomised policies (episode e uses seed + e - 1)")
    g = p.add_argument_group("parameters of other policy families (as in `streamarms simulate`)")
    g.add_argument("--threshold", type=float, help="lsa/apt/ucbe/uniform: the known threshold theta")
    g.add_argument("--budget", type=_pos_int, metavar="T", help="lsa/apt/ucbe/uniform/sr: samples per episode")
    g.add_argument("--epsilon", type=float, help="GOLD distance factor; APT precision; SR-T(TEA) design gap")
    g.add_argument("--b", dest="ucbe_b", type=float, metavar="B", help="UCBE exploration parameter b")
    g.add_argument("--alpha", type=float, help="LSA alpha (default 1.35)")
    g.add_argument("--estimator", choices=["ea", "tea", "mom"], help="heavy-tailed mean estimate")
    g.add_argument("--moment-p", type=float, metavar="P", help="heavy-tailed: moment order p in (1, 2]")
    g.add_argument("--moment-bound", type=float, metavar="B", help="heavy-tailed: bound B on E|X|^p")
    g = p.add_argument_group("records")
    g.add_argument("--reward-field", metavar="NAME", help="JSON field holding the reward (default reward)")
    g.add_argument("--request-id-field", metavar="NAME", help="JSON field of answers holding the request id")
    g.add_argument("--max-key-bytes", type=_pos_int, metavar="N", help="longer keys are refused (default 256)")
    g.add_argument("--validate", choices=["used", "all"],
                   help="check every record, so every bad one is dead-lettered (default), or parse only "
                        "the records the policy takes (fast path)")
    g.add_argument("--arms", metavar="A,B,..", help="fixed arm set (other keys are skipped)")
    g = p.add_argument_group("episodes and scheduling")
    g.add_argument("--max-episodes", type=_pos_int, metavar="N", help="stop after N episodes (default: run forever; "
                   "the embedded demo runs 1)")
    g.add_argument("--episode-interval", type=_nonneg_float, metavar="SEC", help="between episode starts (default 300)")
    g.add_argument("--episode-timeout", type=_nonneg_float, metavar="SEC", help="end an unfinished episode after this")
    g.add_argument("--window", type=_pos_int, metavar="N", help="planned arms to take rewards for (default 32)")
    g.add_argument("--prefetch", type=_pos_int, metavar="N", help="rewards held per planned arm (default 4)")
    g.add_argument("--want-timeout", type=_nonneg_float, metavar="SEC", help="defer an arm after this (default 30)")
    g.add_argument("--max-in-flight", type=_pos_int, metavar="N", help="active: outstanding requests (default 32)")
    g.add_argument("--request-timeout", type=_nonneg_float, metavar="SEC", help="active: drop a request (default 30)")
    g.add_argument("--discovery-records", type=_pos_int, metavar="N",
                   help="first episode starts when no new key appeared for N records (default 1000) ...")
    g.add_argument("--discovery-seconds", type=_nonneg_float, metavar="SEC", help="... or after SEC (default 10)")
    g.add_argument("--min-arms", type=_pos_int, metavar="N", help="arms needed to start an episode (default 3)")
    g.add_argument("--max-arms", type=_pos_int, metavar="N", help="refuse new keys beyond N arms (default 10000)")
    g.add_argument("--key-ttl", type=_nonneg_float, metavar="SEC", help="forget keys silent for this long")
    g.add_argument("--clock", choices=["auto", "event", "wall"],
                   help="scheduler time: record timestamps (passive default) or the wall clock (active default)")
    g = p.add_argument_group("alerts")
    g.add_argument("--emit-normal", action="store_true", default=None, help="also alert 'normal' classifications")
    g.add_argument("--alert-repeat", action="store_true", default=None,
                   help="alert an outlier again in every episode it is found (default: once until cleared)")
    g = p.add_argument_group("state, metrics, process")
    g.add_argument("--checkpoint", metavar="PATH|kafka:TOPIC|none",
                   help="where to checkpoint (default: ./streamarms-<group>.checkpoint with Kafka, none otherwise)")
    g.add_argument("--checkpoint-interval", type=_nonneg_float, metavar="SEC", help="seconds between checkpoints (default 5)")
    g.add_argument("--fsync", action=argparse.BooleanOptionalAction, default=None, help="fsync checkpoints (default on)")
    g.add_argument("--metrics-port", type=_port, metavar="PORT", help="serve /metrics and /healthz on this port")
    g.add_argument("--metrics-addr", metavar="ADDR", help="bind address of the metrics server (default 0.0.0.0)")
    g.add_argument("--metrics-flagged-arms", type=int, metavar="N",
                   help="also export streamarms_flagged_arm{arm} for at most N flagged keys (default 0: none)")
    g.add_argument("--forever", action="store_true", default=None, help="embedded demo: keep running new episodes")
    g.add_argument("--summary-json", metavar="PATH", help="write the final summary as JSON ('-': stdout)")
    g.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    g.add_argument("--quiet", action="store_true", default=None, help="no summary on stdout")
    g.add_argument("--embedded-keys", type=_pos_int, metavar="N", help=argparse.SUPPRESS)
    g.add_argument("--embedded-rate", type=float, metavar="R", help=argparse.SUPPRESS)


def _norm(key: str) -> str:
    return key.replace("-", "_")


def _load_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ValueError(f"--config: no such file {path!r}") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"--config {path}: {e}") from None
    out: dict[str, Any] = {}
    unknown = []
    for key, value in data.items():
        k = _norm(key)
        if k in _TABLES and isinstance(value, dict):
            out[_TABLES[k]] = [f"{kk}={vv if not isinstance(vv, bool) else str(vv).lower()}" for kk, vv in value.items()]
        elif k in DEFAULTS:
            if k in _LIST_KEYS and isinstance(value, str):
                value = [value]
            out[k] = value
        else:
            unknown.append(key)
    if unknown:
        raise ValueError(f"--config {path}: unknown setting(s) {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(sorted(DEFAULTS))} and tables [kafka] [consumer] [producer] [model]")
    return out


def resolve_settings(opts: argparse.Namespace) -> SimpleNamespace:
    """Flags > TOML file > :data:`DEFAULTS` (plus the embedded demo's own defaults)."""
    from_file = _load_toml(opts.config) if getattr(opts, "config", None) else {}
    cfg: dict[str, Any] = {}
    explicit: set[str] = set()
    for key, default in DEFAULTS.items():
        flag = getattr(opts, key, None)
        if flag is not None:
            cfg[key] = flag
            explicit.add(key)
        elif key in from_file:
            cfg[key] = from_file[key]
            explicit.add(key)
        else:
            cfg[key] = list(default) if isinstance(default, list) else default
    s = SimpleNamespace(**cfg)
    s.explicit = explicit
    s.embedded = not s.bootstrap_servers and not s.rewards_file
    if s.sasl_password is None:
        s.sasl_password = os.environ.get("STREAMARMS_SASL_PASSWORD")
    if s.ssl_password is None:
        s.ssl_password = os.environ.get("STREAMARMS_SSL_PASSWORD")
    if s.embedded:
        if "max_episodes" not in explicit and not s.forever:
            s.max_episodes = 1
        if "episode_interval" not in explicit:
            s.episode_interval = 30.0
        if "discovery_records" not in explicit:
            s.discovery_records = 200
        if "log_level" not in explicit:
            s.log_level = "warning"  # the demo prints its own readable lines
    # the registry reads the reward model from these names
    s.bound = None
    s.a, s.b_max = 0.0, 1.0
    if s.reward_range:
        try:
            a, b = (float(v) for v in str(s.reward_range).split(","))
        except ValueError:
            raise ValueError(f"--reward-range must be A,B (two numbers), got {s.reward_range!r}") from None
        s.a, s.b_max = a, b
    s.model_params = dict(_kv(x) for x in (s.model_param or []))
    return s


def _kv(text: str) -> tuple[str, Any]:
    """``"max_poll_records=500"`` -> ``("max_poll_records", 500)``.

    >>> _kv("ssl_check_hostname=false"), _kv("client_id=a=b")
    (('ssl_check_hostname', False), ('client_id', 'a=b'))
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
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


# ----------------------------------------------------------------------------------------------
# building the pieces
# ----------------------------------------------------------------------------------------------
def _policy_builder(s: SimpleNamespace) -> Any:
    spec = POLICIES[s.policy]

    def build(arms: list[str], episode: int) -> Any:
        ns = SimpleNamespace(**vars(s))
        ns.seed = None if s.seed is None else int(s.seed) + episode - 1
        return spec.build(list(arms), ns)

    return build


def _scheduler_config(s: SimpleNamespace) -> SchedulerConfig:
    return SchedulerConfig(
        mode=s.mode, window=s.window, prefetch=s.prefetch, want_timeout=s.want_timeout,
        max_in_flight=s.max_in_flight, request_timeout=s.request_timeout, discovery_records=s.discovery_records,
        discovery_seconds=s.discovery_seconds, min_arms=s.min_arms,
        max_episodes=None if s.forever and s.embedded and "max_episodes" not in s.explicit else s.max_episodes,
        episode_interval=s.episode_interval, episode_timeout=s.episode_timeout or None, max_arms=s.max_arms,
        key_ttl=s.key_ttl or None, validate=s.validate)


def _kafka_config(s: SimpleNamespace) -> dict[str, Any]:
    from streamarms.connectors.kafka import client_config
    cfg = client_config(s.bootstrap_servers, security_protocol=s.security_protocol, sasl_mechanism=s.sasl_mechanism,
                        sasl_plain_username=s.sasl_username, sasl_plain_password=s.sasl_password,
                        ssl_cafile=s.ssl_cafile, ssl_certfile=s.ssl_certfile, ssl_keyfile=s.ssl_keyfile,
                        ssl_password=s.ssl_password)
    cfg.update(dict(_kv(x) for x in (s.kafka_option or [])))
    return cfg


def embedded_means(n: int) -> list[float]:
    """Means of the embedded demo's keys: the [ZWW17]-style 20-arm instance of ``streamarms simulate``
    (two outliers at k = 2), repeated with jitter for more keys."""
    from .sim import zww17_example
    base = zww17_example()
    if n == len(base):
        return list(base)
    rng = random.Random(n)
    normals = [m for m in base if m < 0.5]
    means = [rng.choice(normals) + rng.uniform(-0.02, 0.02) for _ in range(max(0, n - 2))]
    return means + [0.75, 0.85][: min(2, n)]


def _embedded_stream(keys: list[bytes], means: list[float], seed: int, rate: float,
                     start_ms: int = 1_700_000_000_000) -> Iterator[tuple[bytes, bytes, int]]:
    rng = random.Random(seed)
    n = len(keys)
    values = (b'{"reward": 0}', b'{"reward": 1}')
    step = 1000.0 / rate
    i = 0
    while True:
        a = rng.randrange(n)
        yield keys[a], values[rng.random() < means[a]], start_ms + int(i * step)
        i += 1


class _EmbeddedResponder:
    """Active mode of the embedded demo: answers each request at once with a draw of the arm."""

    def __init__(self, broker: Any, topic: str, means: dict[str, float], seed: int, clock: Any) -> None:
        self.broker, self.topic, self.means, self.clock = broker, topic, means, clock
        self.rng = random.Random(seed)

    def send(self, arm: str, payload: dict[str, Any]) -> None:
        x = 1 if self.rng.random() < self.means[arm] else 0
        self.broker.produce(self.topic, arm, json.dumps({"reward": x, "request_id": payload["request_id"]}),
                            timestamp=int(time.time() * 1000))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def _checkpoint_store(s: SimpleNamespace, kafka_cfg: dict[str, Any] | None) -> CheckpointStore | None:
    spec = s.checkpoint
    if spec in (None, "", "none", False):
        return None
    if spec == "auto":
        if kafka_cfg is None:
            return None
        spec = f"streamarms-{s.group_id}.checkpoint"
    if isinstance(spec, str) and spec.startswith("kafka:"):
        if kafka_cfg is None:
            raise ValueError("--checkpoint kafka:TOPIC needs --bootstrap-servers")
        from streamarms.connectors.kafka import KafkaCheckpointStore
        return KafkaCheckpointStore(kafka_cfg, spec[len("kafka:"):], key=s.group_id, secret=checkpoint_key())
    return FileCheckpointStore(spec, fsync=bool(s.fsync), secret=checkpoint_key())


def _connectors() -> None:
    """Make ``streamarms.connectors`` importable from a source checkout too."""
    from ._paths import use_local_connectors
    use_local_connectors()


# ----------------------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------------------
def run_main(opts: argparse.Namespace) -> int:
    try:
        s = resolve_settings(opts)
    except ValueError as e:
        print(f"streamarms run: error: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=getattr(logging, str(s.log_level).upper(), logging.INFO), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app = _App(s)
    except (ValueError, CheckpointError) as e:
        print(f"streamarms run: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the broker is unreachable, a file cannot be opened, ...
        log.debug("start-up failed", exc_info=True)
        print(f"streamarms run: error: cannot start: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return app.run()


class _App:
    """The wiring of one ``streamarms run``."""

    def __init__(self, s: SimpleNamespace) -> None:
        self.s = s
        _connectors()
        if s.policy not in POLICIES:
            raise ValueError(f"unknown policy {s.policy!r}: choose one of {', '.join(sorted(POLICIES))}")
        if s.mode == ACTIVE and not s.embedded and not s.requests_topic:
            raise ValueError("--mode active needs --requests-topic (where sample requests are published)")
        if s.bootstrap_servers and not s.rewards_topic:
            raise ValueError("--bootstrap-servers needs at least one --rewards-topic")
        build = _policy_builder(s)
        # bad parameters fail here, before anything connects (enough arms for every family's constraints)
        probe = build([f"probe-{i}" for i in range(64)], 1)
        model = getattr(probe, "model", None)
        self.codec = RewardCodec(s.reward_field, model, request_id_field=s.request_id_field,
                                 max_key_bytes=s.max_key_bytes)
        self.sched_config = _scheduler_config(s)
        self.alerts: list[dict[str, Any]] = []
        self.closers: list[Any] = []
        self.truth: list[str] | None = None
        self.kafka_cfg = _kafka_config(s) if s.bootstrap_servers else None
        clock_kind = s.clock if s.clock != "auto" else ("wall" if s.mode == ACTIVE else "event")
        self.event_clock = EventClock() if clock_kind == "event" else None
        clock = self.event_clock if self.event_clock is not None else time.time
        self.run_info = {"mode": s.mode, "policy": s.policy,
                         "topics": sorted(s.rewards_topic or []) or sorted(s.rewards_file or []) or ["embedded"],
                         "k": s.k, "delta": s.delta, "reward_model": s.reward_model, "group_id": s.group_id}
        self.store = _checkpoint_store(s, self.kafka_cfg)
        if self.store is not None:
            log.info("checkpoint: %s, protected by %s", self.store.describe(), self.store.integrity())
        doc = restore_checkpoint(self.store, self.run_info) if self.store is not None else None
        resume = doc["source"] if doc else None

        self._build_io(resume)
        arms = [a.strip() for a in s.arms.split(",") if a.strip()] if isinstance(s.arms, str) else s.arms
        if self.embedded_arms is not None and s.mode == ACTIVE:
            arms = self.embedded_arms
        self.scheduler = Scheduler(
            build, clock=clock, config=self.sched_config, codec=self.codec, emit_alert=self._alert,
            emit_request=self.request_sink.send if self.request_sink is not None else None,
            on_episode_end=self._episode_end, arms=arms, policy_name=s.policy, delta=s.delta,
            emit_normal=bool(s.emit_normal), alert_repeat=bool(s.alert_repeat),
            request_prefix=os.urandom(3).hex() + "-")
        if doc is not None:
            try:
                self.scheduler.restore(doc["scheduler"])
            except (KeyError, TypeError, ValueError) as e:
                raise CheckpointError(f"the checkpoint in {self.store.describe()} cannot be restored: "
                                      f"{type(e).__name__}: {e}") from None
            log.info("resumed from %s: episode %d, %d records, %d samples", self.store.describe(),
                     self.scheduler.episode, self.scheduler.records, self.scheduler.used)
        self.metrics = Metrics() if s.metrics_port is not None else None
        self.daemon = Daemon(self.scheduler, self.source, clock=self.event_clock, alert_sink=self.alert_sink,
                             request_sink=self.request_sink, dead_letter_sink=self.dead_letter_sink,
                             checkpoint=self.store, checkpoint_interval=s.checkpoint_interval, metrics=self.metrics,
                             run_info=self.run_info, stop_when_exhausted=bool(s.rewards_file))
        self.server = None
        if self.metrics is not None:
            from .observability import OperatorMetrics  # operator's series and readiness (/healthz)
            self.ops = OperatorMetrics(
                self.metrics, self.scheduler, self.source, daemon=self.daemon,
                flagged_arms=int(s.metrics_flagged_arms or 0), info={"policy": s.policy, "mode": s.mode},
                checkpoint="disabled" if self.store is None else ("restored" if doc is not None else "none found"))
            self.server = self.metrics.serve(s.metrics_port, s.metrics_addr, health=self.ops.health,
                                             live=self.daemon.health)
            log.info("metrics on http://%s:%d/metrics", s.metrics_addr, self.server.port)

    def _build_io(self, resume: dict[str, Any] | None) -> None:
        s = self.s
        self.alert_sink: Any = None
        self.request_sink: Any = None
        self.dead_letter_sink: Any = None
        self.embedded_arms: list[str] | None = None
        if s.bootstrap_servers:
            from streamarms.connectors.kafka import (KafkaAlertSink, KafkaDeadLetterSink, KafkaProducerPool,
                                                     KafkaRequestSink, KafkaRewardSource, ensure_topics)
            cfg = self.kafka_cfg
            assert cfg is not None
            if s.create_topics:
                want = {t: 1 for t in s.rewards_topic}
                for t in (s.alerts_topic, s.requests_topic, s.dead_letter_topic):
                    if t:
                        want[t] = 1
                ensure_topics(cfg, want)
            sink_topics = [t for t in (s.alerts_topic, s.requests_topic if s.mode == ACTIVE else None,
                                       s.dead_letter_topic) if t]
            pool = KafkaProducerPool(cfg, dict(_kv(x) for x in (s.producer_option or [])), sink_topics)
            self.alert_sink = KafkaAlertSink(pool, s.alerts_topic) if s.alerts_topic else None
            if s.mode == ACTIVE:
                self.request_sink = KafkaRequestSink(pool, s.requests_topic)
            if s.dead_letter_topic:
                self.dead_letter_sink = KafkaDeadLetterSink(pool, s.dead_letter_topic)
            self.source = KafkaRewardSource(s.rewards_topic, s.group_id, cfg, resume=resume,
                                            ordered=s.order == "timestamp", max_poll_records=s.max_poll_records,
                                            from_beginning=bool(s.from_beginning),
                                            consumer_options=dict(_kv(x) for x in (s.consumer_option or [])))
        elif s.rewards_file:
            from streamarms.connectors.files import JsonlDeadLetterSink, JsonlSink, JsonlSource
            if s.mode == ACTIVE:
                raise ValueError("--mode active needs Kafka (--bootstrap-servers): a file cannot answer requests")
            self.source = JsonlSource(s.rewards_file, resume=resume, ordered=s.order == "timestamp")
            self.alert_sink = JsonlSink(s.alerts_file) if s.alerts_file else None
            self.dead_letter_sink = JsonlDeadLetterSink(s.dead_letter_file) if s.dead_letter_file else None
        else:
            from streamarms.connectors.memory import GeneratedSource, MemoryBroker, MemorySource
            n = int(s.embedded_keys)
            means = embedded_means(n)
            names = [f"region-{i:02d}" for i in range(n)]
            self.embedded_means = dict(zip(names, means))
            spec = POLICIES[s.policy]
            if spec.truth is not None:
                self.truth = sorted(names[int(i)] for i in spec.truth(means, s))
            if s.mode == PASSIVE:
                keys = [nm.encode() for nm in names]
                self.source = GeneratedSource(lambda: _embedded_stream(keys, means, int(s.seed or 0), s.embedded_rate),
                                              resume=resume)
            else:
                broker = MemoryBroker()
                broker.create_topic("answers")
                self.source = MemorySource(broker, ["answers"], resume=resume)
                self.request_sink = _EmbeddedResponder(broker, "answers", self.embedded_means, int(s.seed or 0), None)
                self.embedded_arms = names
            if s.alerts_file:
                from streamarms.connectors.files import JsonlSink
                self.alert_sink = JsonlSink(s.alerts_file)

    # -- callbacks -----------------------------------------------------------------------------
    def _alert(self, alert: dict[str, Any]) -> None:
        self.alerts.append(alert)
        del self.alerts[:-1000]
        if self.alert_sink is not None:
            self.alert_sink.send(alert)
        est = alert.get("estimate")
        iv = alert.get("interval")
        thr = alert.get("threshold")
        msg = (f"ALERT {alert['kind']:<7} {alert['arm']}  episode {alert['episode']}"
               + (f"  estimate {est:.4g}" if isinstance(est, (int, float)) else "")
               + (f" [{iv[0]:.4g}, {iv[1]:.4g}]" if iv else "")
               + (f"  threshold {thr:.4g}" if isinstance(thr, (int, float)) else "")
               + (f"  after {alert['pulls']:,} samples" if alert.get("pulls") is not None else ""))
        if self.s.embedded and not self.s.quiet:
            print(msg, flush=True)
        else:
            log.info(msg)

    def _episode_end(self, summary: dict[str, Any]) -> None:
        st = self.scheduler.stats()
        log.info("episode %d %s: %d arms, %d samples over %d records, outliers %s%s", summary["episode"],
                 "done" if summary["reason"] == "done" else f"ended ({summary['reason']})", summary["arms"],
                 summary["samples"], summary["records"], ", ".join(summary["outliers"]) or "none",
                 f", undecided {len(summary['undecided'])}" if summary["undecided"] else "")
        if self.s.embedded and not self.s.quiet:
            self._print_episode(summary, st)

    # -- output --------------------------------------------------------------------------------
    def _print_episode(self, e: dict[str, Any], st: dict[str, Any]) -> None:
        used_share = e["samples"] / e["records"] if e["records"] else 0.0
        print(f"episode {e['episode']} {'done' if e['done'] else 'ended: ' + e['reason']}: "
              f"{e['samples']:,} rewards used of {e['records']:,} seen ({100 * used_share:.1f}%), "
              f"{e['arms']} arms", flush=True)
        print(f"  outliers found: {', '.join(e['outliers']) or 'none'}")
        if self.truth is not None:
            found = set(e["outliers"])
            truth = set(self.truth)
            missed = sorted(truth - found)
            false = sorted(found - truth)
            verdict = "all found, no false alarm" if not missed and not false else \
                f"missed {', '.join(missed) or 'none'}; false alarms {', '.join(false) or 'none'}"
            print(f"  true outliers:  {', '.join(self.truth) or 'none'}  -> {verdict}")
        if e["undecided"]:
            print(f"  undecided: {len(e['undecided'])} arms")

    def summary(self, code: int, elapsed: float) -> dict[str, Any]:
        st = self.scheduler.stats()
        return {"exit_code": code, "stop_reason": self.daemon.stop_reason, "elapsed_seconds": round(elapsed, 3),
                "policy": self.s.policy, "mode": self.s.mode, "k": self.s.k, "delta": self.s.delta,
                "records": st["records"], "samples": st["used"], "skipped": st["skipped"],
                "invalid": {k: v for k, v in st["invalid"].items() if v}, "dead_letters": self.daemon.dead_letters,
                "episodes": self.scheduler.history, "alerts": st["alerts"], "flagged": sorted(self.scheduler.alerts.flagged),
                "true_outliers": self.truth, "known_arms": st["known_arms"]}

    def run(self) -> int:
        s = self.s
        if s.embedded and not s.quiet:
            means = getattr(self, "embedded_means", {})
            print(f"streamarms run: embedded demo (no --bootstrap-servers): {len(means)} keys with Bernoulli "
                  f"rewards, known outliers {', '.join(self.truth or []) or 'none'}; policy {s.policy} "
                  f"k={s.k:g} delta={s.delta:g}, {s.mode} mode", flush=True)
        t0 = time.monotonic()
        code = 0
        try:
            code = self.daemon.run()
        except Exception as e:  # a sink could not deliver, the broker went away, ...
            log.error("stopping on error: %s", e, exc_info=log.isEnabledFor(logging.DEBUG))
            print(f"streamarms run: error: {e}", file=sys.stderr)
            code = 1
        finally:
            if self.server is not None:
                self.server.close()
            if self.store is not None:
                self.store.close()
        elapsed = time.monotonic() - t0
        out = self.summary(code, elapsed)
        if code == 0 and not s.quiet:
            st = self.scheduler.stats()
            share = st["used"] / st["records"] if st["records"] else 0.0
            print(f"stopped ({self.daemon.stop_reason}) after {elapsed:.1f} s: {self.scheduler.episodes_done} "
                  f"episode(s), {st['used']:,} rewards used of {st['records']:,} seen ({100 * share:.1f}%), "
                  f"{sum(st['invalid'].values())} refused; flagged now: "
                  f"{', '.join(sorted(self.scheduler.alerts.flagged)) or 'none'}", flush=True)
        if s.summary_json:
            text = json.dumps(out, indent=None if s.summary_json == "-" else 1, default=str)
            if s.summary_json == "-":
                print(text)
            else:
                with open(s.summary_json, "w") as f:
                    f.write(text + "\n")
        return code


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m streamarms.run_cli [flags]``: the same as ``streamarms run``."""
    parser = argparse.ArgumentParser(prog="streamarms run", description=__doc__.split("\n\n")[0])
    add_run_arguments(parser)
    return run_main(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

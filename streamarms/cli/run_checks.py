"""What ``streamarms run`` checks of its settings before it reads a record, all of it in
:func:`check_run_settings`: one source named (:func:`check_sources`), no flag this run would not read
(:func:`check_mode_flags`, :data:`EPISODE_ONLY`: a flag silently ignored reads as taken), the files written at the
stop writable now (:func:`check_outputs`); and the warning for episodes with no timeout on a source that does not end
(:func:`warn_untimed_episodes`). Each check raises a ``ConfigError`` that names the flag and what to give instead
(exit 2, nothing read).

>>> import os, tempfile
>>> check_writable_file("--summary-json", os.path.join(tempfile.mkdtemp(), "s.json"))
>>> check_writable_file("--plot", "/nonexistent/p.png")
Traceback (most recent call last):
...
streamarms.errors.ConfigError: --plot /nonexistent/p.png: the directory /nonexistent does not exist
"""

from __future__ import annotations

import fnmatch
import logging
import math
import os
import re

from ..errors import ConfigError
from ..observability import FLAGGED_ARMS_MAX
from ..registry import POLICIES
from ..runtime import ACTIVE
from ..runtime.continuous import CONTINUOUS
from ..runtime.field_path import FieldPath
from .file_patterns import patterns_of
from .group import check_group_settings
from .settings import RunSettings

__all__ = ["check_run_settings", "check_writable_file", "check_sources", "check_mode_flags", "check_outputs",
           "warn_untimed_episodes", "CONTINUOUS_ONLY", "EPISODE_ONLY"]

log = logging.getLogger("streamarms.run")

#: settings that mean something in the episode modes only (an error in the continuous mode, not ignored)
EPISODE_ONLY = frozenset({"policy", "delta", "max_episodes", "episode_interval", "episode_timeout", "passive_feed",
                           "window", "prefetch", "want_timeout", "discovery_records", "discovery_seconds",
                           "min_arms", "key_ttl", "episode_silence_records", "two_sided", "rho", "emit_normal", "alert_repeat",
                           # the other policy families' parameters, and active mode's
                           "threshold", "budget", "epsilon", "ucbe_b", "alpha", "estimator", "moment_p", "moment_bound",
                           "max_in_flight", "request_timeout", "requests_topic", "request_id_field"})


def check_run_settings(s: RunSettings) -> None:
    """Every check of ``s`` made before anything connects or a record is read (a ``ConfigError`` naming the flag):
    the outputs writable, the policy known, one source, the group's settings, no flag of another mode."""
    check_outputs(s)
    if s.policy not in POLICIES:
        raise ConfigError(f"unknown policy {s.policy!r}: choose one of {', '.join(sorted(POLICIES))}")
    if s.mode == ACTIVE and not s.embedded and not s.requests_topic:
        raise ConfigError("--mode active needs --requests-topic (where sample requests are published)")
    check_sources(s)
    if not 0 <= (s.metrics_flagged_arms or 0) <= FLAGGED_ARMS_MAX:  # (was "cannot start: ValueError", exit 1)
        raise ConfigError(f"--metrics-flagged-arms {s.metrics_flagged_arms}: at most how many flagged keys to export, "
                          f"0 to {FLAGGED_ARMS_MAX}")
    if s.embedded:
        check_embedded(s)
    if s.passive_feed == "all" and POLICIES[s.policy].kind in ("threshold", "best"):
        raise ConfigError(f"--passive-feed all needs a policy whose guarantee holds for any sampling order; "
                          f"{s.policy!r} has a budget or rounds of its own (use --passive-feed planned)")
    continuous = s.mode == CONTINUOUS
    check_group_settings(s)
    if continuous and (s.group_by is not None and not s.group_by.strip()):
        raise ConfigError("--group-by needs a field name")
    check_mode_flags(s, continuous)
    episodic = sorted(EPISODE_ONLY & s.explicit)
    if continuous and episodic:
        raise ConfigError(f"{', '.join('--' + e.replace('_', '-') for e in episodic)}: the continuous mode "
                          "(the default of --forever) has no episodes and no policy; add --mode episodes to run "
                          "episodes, or drop them" + ("; its error level is --monitor-alpha (false alerts)"
                                                      if "delta" in episodic else ""))


def check_writable_file(flag: str, path: str) -> None:
    """``ConfigError`` unless ``path`` can be written (its directory exists and is writable; it is not a
    directory, nor a file that cannot be written)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ConfigError(f"{flag} {path}: is a directory")
    if not os.path.isdir(folder):
        raise ConfigError(f"{flag} {path}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ConfigError(f"{flag} {path}: not writable")


def check_sources(s: RunSettings) -> None:
    """``ConfigError`` unless the settings name one source: Kafka topics, files, or neither (the demo)."""
    if s.bootstrap_servers and not s.rewards_topic:
        raise ConfigError("--bootstrap-servers needs at least one --rewards-topic")
    files = s.files_named
    if s.bootstrap_servers and files:
        raise ConfigError("--rewards-file replays a file, --bootstrap-servers reads Kafka: give one of them")
    if s.follow and not files:
        raise ConfigError("--follow follows --rewards-file files (a Kafka topic is always followed)")
    if s.follow and files != (s.rewards_file_given or files):
        given = set(files)  # (by name: a pattern of a year of hourly files is 8,760 of them, compared in one pass)
        rotated = [(m[1], g) for g in files if (m := re.fullmatch(r"(.+)\.\d+(?:\.gz)?", g)) and m[1] in given]
        later = next(((f, f + ".1") for f in files for g in s.rewards_file_given or []  # (a restart would meet it)
                      if fnmatch.fnmatchcase(f + ".1", g) and f != g), None)
        rotated = rotated or ([later] if later else [])
        if rotated:
            raise ConfigError(f"--follow reads a file's rotations itself, and {' '.join(s.rewards_file_given or [])} matches "
                              f"{rotated[0][1]}, a rotation of {rotated[0][0]}{' once it is rotated' if later else ''}: give "
                              f"the file alone (--rewards-file {rotated[0][0]}), or a pattern that matches no rotation")
    if files.count("-") > 1:
        raise ConfigError("--rewards-file - (standard input) can be given once")
    if "-" in files and s.checkpoint not in (None, "none", "auto"):
        raise ConfigError("--rewards-file - (standard input) cannot be resumed from a checkpoint: a pipe cannot be "
                          "read again. Drop --checkpoint, or write the stream to a file and --follow it")
    if ("timestamp_field" in s.explicit or "timestamp_unit" in s.explicit or s.timestamp_format) and not files:
        raise ConfigError("--timestamp-field, --timestamp-unit and --timestamp-format say where and how a --rewards-file "
                          "line's time is; a Kafka record's time is its own (the producer's or the broker's)")
    if "rewards_format" in s.explicit and not files:
        raise ConfigError("--rewards-format says what the --rewards-file files hold; a Kafka record's value is JSON")
    if s.line_pattern is not None and not files and not s.bootstrap_servers:
        raise ConfigError("--line-pattern reads the lines of --rewards-file files, or the values of Kafka records "
                          "(--bootstrap-servers); the embedded demo's are JSON")
    if s.line_pattern is not None and s.bootstrap_servers:  # (a field it has no group for: before connecting)
        from streamarms.connectors.kafka_lines import ValueLines

        from .file_input import check_columns

        check_columns({"-": ValueLines(s.line_pattern, s.line_field)}, s, own_keys=True)
    for flag, name in (("--reward-field", s.reward_field), ("--key-field", s.key_field), ("--group-by", s.group_by),
                       ("--timestamp-field", s.timestamp_field)):
        if name is not None and "." in name:
            try:
                FieldPath(name)
            except ValueError as e:
                raise ConfigError(f"{flag}: {e}") from None
    if s.key_field is not None:
        if not s.key_field.strip():
            raise ConfigError("--key-field needs a field name")
        if not (s.bootstrap_servers or files):
            raise ConfigError("--key-field reads each key from the record's value, of Kafka records or --rewards-file "
                              "lines; the embedded demo's records have keys of their own")
        if s.group_threshold:
            raise ConfigError("--key-field does not apply to --group-threshold: the members own keys by partition, "
                              "and a key read from the value may arrive on every partition (have the producers key "
                              "the records by that field instead)")


def check_embedded(s: RunSettings) -> None:
    """The embedded demo's settings: its records (``{"reward": 0 or 1}``, keyed) read by ``--reward-field
    reward``, its keys and its rate (settings a TOML file may give), and enough keys for ``--min-arms`` -- a demo
    whose every record was refused, or whose episode waited for keys it never has, ran until killed."""
    if s.reward_field != "reward":
        raise ConfigError(f"--reward-field {s.reward_field!r}: the embedded demo's records hold their reward in "
                          "'reward' (give --rewards-file or --bootstrap-servers to read other records)")
    if isinstance(s.embedded_keys, bool) or not isinstance(s.embedded_keys, int) or s.embedded_keys < 2:
        raise ConfigError(f"embedded_keys = {s.embedded_keys!r}: the demo's number of keys, an integer >= 2")
    rate = s.embedded_rate
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (math.isfinite(rate) and rate > 0):
        raise ConfigError(f"embedded_rate = {rate!r}: the demo's records per second of stream time, a number > 0")
    if s.mode != CONTINUOUS and s.min_arms > s.embedded_keys:
        raise ConfigError(f"--min-arms {s.min_arms}: the embedded demo has {s.embedded_keys} keys, so no episode "
                          f"would start")


def check_outputs(s: RunSettings) -> None:
    """``ConfigError`` for a file written at the stop that could not be (said now, not after the run), and for an
    output that is one of the files read (:func:`check_not_an_input`)."""
    check_not_an_input(s)
    if s.summary_json and s.summary_json != "-":
        check_writable_file("--summary-json", s.summary_json)
    if s.plot:
        check_writable_file("--plot", s.plot)
        from .explain_plot import plot_problem

        if (problem := plot_problem(s.plot)) is not None:
            raise ConfigError(problem)


def check_not_an_input(s: RunSettings) -> None:
    """``ConfigError`` for an output file that is a ``--rewards-file`` file, or that its pattern matches: the run
    would read its own alerts, dead letters or checkpoint back as records (a followed file without end)."""
    files, patterns = s.files_named, s.rewards_file_given or []
    if not files:
        return
    spec = s.checkpoint if isinstance(s.checkpoint, str) else None
    outputs = [("--alerts-file", s.alerts_file), ("--dead-letter-file", s.dead_letter_file),
               ("--summary-json", s.summary_json), ("--plot", s.plot),  # (a dir: checkpoint is no file a glob lists)
               ("--checkpoint", None if spec in ("none", "auto") or (spec or "").startswith(("kafka:", "dir:")) else spec)]
    for flag, out in outputs:
        if not out or out == "-":
            continue
        where = os.path.abspath(out)
        same = next((f for f in files if f != "-" and (os.path.abspath(f) == where or _same_file(f, out))), None)
        real = os.path.realpath(out)  # (a pattern or an output through a symlinked directory)
        match = next((g for g in patterns_of(patterns) if _globbed(where, os.path.abspath(g)) or _globbed(
            real, os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(g))), os.path.basename(g)))), None)
        if same is not None or match is not None:
            said = f"is the file --rewards-file reads ({same})" if same is not None else \
                f"is matched by --rewards-file {match}"
            raise ConfigError(f"{flag} {out} {said}: the run would read what it writes back as records. Write it "
                              "elsewhere" + (" (another directory, or a name the pattern does not match)" if same is None
                                             else ""))


def _globbed(path: str, pattern: str) -> bool:
    """Whether :func:`glob.glob` ``pattern`` would list ``path`` (both absolute): name by name (a ``*`` crosses no
    ``/``), a hidden name only by a pattern's name that starts with ``.``.

    >>> _globbed("/l/dead.jsonl", "/l/*.jsonl"), _globbed("/l/x/dead.jsonl", "/l/*.jsonl"), _globbed("/l/.d.jsonl", "/l/*")
    (True, False, False)
    """
    names, parts = path.split(os.sep), pattern.split(os.sep)
    return len(names) == len(parts) and all(fnmatch.fnmatchcase(n, p) and (not n.startswith(".") or p.startswith("."))
                                            for n, p in zip(names, parts))


def _same_file(a: str, b: str) -> bool:
    """Whether ``b`` is the regular file ``a`` (a terminal both stdin and stdout read and write is not)."""
    try:
        return os.path.isfile(b) and os.path.samefile(a, b)
    except OSError:
        return False


#: settings only the continuous mode reads (an episodes run would ignore them)
CONTINUOUS_ONLY = ("group_by", "forget_silent", "silence_records", "monitor_alpha", "change_alpha", "max_groups")


def check_mode_flags(s: RunSettings, continuous: bool) -> None:
    """``ConfigError`` for a setting this run would not read (a flag silently ignored reads as taken)."""
    model = s.reward_model
    if continuous and model not in ("bernoulli", "bounded"):
        raise ConfigError(f"the continuous mode (the default of --forever) needs a bounded reward model (bernoulli or "
                          f"bounded), got {model!r}: give --reward-model bounded --reward-range A,B with a range that "
                          "holds the values (values outside it are dead letters; with --clip they count as its nearest "
                          "end), or add --mode episodes to run episodes with the heavy_tailed model")
    for opt in CONTINUOUS_ONLY:
        if not continuous and opt in s.explicit:
            raise ConfigError(f"--{opt.replace('_', '-')} applies to the continuous mode (--forever, or --mode "
                              "continuous)")
    if (s.key_match is not None or s.key_ids) and s.key_field is None and not s.key_from_file:
        raise ConfigError("--key-ids and --key-match read the key from --key-field's text: name the field (a JSON "
                          "line's arm: --key-field arm), or --key-from-file (the file's path)")
    rules = [(flag, rule) for flag, rule in (("--reward-at-least", s.reward_at_least), ("--reward-in", s.reward_in),
                                             ("--reward-match", s.reward_match)) if rule is not None]
    for flag, _ in rules:
        if s.clip or model not in ("bernoulli", "bounded"):
            raise ConfigError(f"{flag} makes every reward 0 or 1: it needs the bernoulli reward model (the "
                              f"default), not {model!r}" + (", and nothing is left to --clip" if s.clip else ""))
    if s.reward_unit is not None and (s.reward_in is not None or s.reward_match is not None):
        raise ConfigError(f"--reward-unit reads durations as numbers, and {rules[0][0]} reads the field's text: give "
                          "one (--reward-unit ms --reward-at-least 500 is the rate of durations of 500 ms or more)")
    if len(rules) > 1:
        raise ConfigError(f"{' and '.join(f for f, _ in rules)} are rules for one reward: give one (--reward-in "
                          "matches texts, --reward-match finds a pattern in a text, --reward-at-least compares numbers)")
    if s.clip and model != "bounded":
        raise ConfigError(f"--clip clips to --reward-range, a setting of --reward-model bounded, but the reward model "
                          f"is {model!r}: add --reward-model bounded --reward-range A,B")
    if "reward_range" in s.explicit and model != "bounded":
        raise ConfigError(f"--reward-range applies to --reward-model bounded, but the reward model is {model!r}"
                          + (" (the default: 0/1 rewards)" if "reward_model" not in s.explicit else "")
                          + ": add --reward-model bounded")
    heavy = [f"--{o.replace('_', '-')}" for o in ("estimator", "moment_p", "moment_bound") if o in s.explicit]
    if heavy and not continuous and model != "heavy_tailed" and POLICIES[s.policy].kind not in ("threshold", "best"):
        raise ConfigError(f"{', '.join(heavy)}: settings of the heavy_tailed reward model, but the reward model is "
                          f"{model!r}: add --reward-model heavy_tailed, or drop them")


def warn_untimed_episodes(s: RunSettings, continuous: bool) -> None:
    """Said once the run has started (a run that cannot start says only why), for a source that does not end (Kafka,
    ``--follow``, standard input): a replay of files ends, and its last lines say when an episode held the next ones
    back (:func:`~streamarms.cli.run_report.unfinished_text`)."""
    endless = bool(s.bootstrap_servers or s.follow or "-" in (s.rewards_file or []) or s.embedded)
    if endless and not continuous and s.max_episodes != 1 and not s.episode_timeout:
        log.warning("episodes without --episode-timeout: an episode with a key it cannot decide (a mean at the "
                    "threshold) never ends, and no later episode starts; --episode-timeout SEC (stream time) "
                    "ends it, reports the undecided keys and starts the next")

"""What a restart of ``streamarms run`` may change.

A run records in its checkpoint (the ``run`` block's ``settings``, by flag: :func:`statistics_settings`)
the settings that define its statistics -- what is decided and the guarantee an alert states -- and a run
that resumes the checkpoint must have the same: :func:`streamarms.daemon.restore_checkpoint` refuses it
otherwise, naming every setting that differs with the checkpoint's value and this run's (exit 2, before a
record is read). The same rule in both modes: the state in the checkpoint (a policy's counts and
intervals, a monitor's sequences) was built under those settings and cannot be re-read under others, so
a run with other settings starts with a fresh checkpoint (another ``--checkpoint``, or ``none``).

* **Refused** in both modes: ``--k``, the reward model (``--reward-model``, ``--reward-range``, ``--clip``,
  ``--model-param``), ``--arms`` (which keys are fed), ``--reward-field``, ``--numeric-strings``,
  ``--reward-at-least``, ``--reward-in``, ``--reward-match``, ``--reward-missing``, ``--reward-unit`` and
  ``--decimal-comma`` (what a reward is), ``--key-field`` and ``--key-from-file`` (what a key is),
  ``--timestamp-field`` and ``--timestamp-unit`` (what a line's time is: the stream clock the checkpoint's
  times are on), ``--rewards-format``, ``--line-pattern``, ``--line-field``, ``--encoding`` and ``--sheet`` (how a line
  is read).
* **Refused** in the episode modes: ``--policy`` and every policy parameter (``--delta``, ``--two-sided``,
  ``--rho``, ``--seed``, ``--epsilon``, ``--threshold``, ``--budget``, ``--b``, ``--alpha``, ``--estimator``,
  ``--moment-p``, ``--moment-bound``; of ``--rho``, ``--epsilon``, ``--threshold``, ``--budget``, ``--b`` and
  ``--alpha`` only those the policy reads), ``--passive-feed`` (which rewards the policy is given: its sampling
  rule) and ``--clock`` (the checkpoint's times -- episode start, deadlines, waits -- are on its clock).
  The running episode's policy keeps its own parameters whatever the flags say, so a change would not
  apply to it while the alerts, the summary and the next checkpoint claimed it did. A refusal for another ``--policy``
  does not name the ``--passive-feed`` that comes with it (each policy has its own default feed).
* **Refused** in the continuous mode: ``--monitor-alpha``, ``--change-alpha``, ``--group-by`` (the monitor
  also checks its own settings on restore).
* **May change**: where records come from and results go (alert, dead-letter and request sinks), metrics,
  logging, ``--checkpoint-interval``, ``--fsync``, ``--order``, ``--validate``, ``--max-key-bytes``,
  ``--max-arms``, ``--max-groups``, ``--request-id-field``; how episodes are paced, which applies from the
  restart on and leaves the decision rule as it is (``--max-episodes``, ``--episode-interval``,
  ``--episode-timeout``, the discovery settings, ``--min-arms``, ``--key-ttl``, ``--window``,
  ``--prefetch``, ``--want-timeout``, ``--max-in-flight``, ``--request-timeout``, ``--emit-normal``,
  ``--alert-repeat``); and in the continuous mode ``--silence-records`` and ``--forget-silent``
  (membership only, :meth:`~streamarms.monitor.ContinuousMonitor.set_silence`).

``--mode``, the policy's name and the reward topics (or files) are compared as before (the ``run``
block's ``mode``, ``policy``, ``topics``); a checkpoint written before the settings were recorded is
compared on those only.

>>> from streamarms.cli.settings import RunSettings
>>> st = statistics_settings(RunSettings(k=3.0, arms="a,b"), continuous=False, passive_feed="planned", clock="event")
>>> st["--k"], st["--arms"], st["--reward-range"], st["--passive-feed"]
(3.0, ['a', 'b'], [0.0, 1.0], 'planned')
>>> sorted(statistics_settings(RunSettings(), continuous=True, passive_feed=None, clock="event"))[:4]
['--arms', '--change-alpha', '--clip', '--decimal-comma']
"""

from __future__ import annotations

import json
from typing import Any

from ..registry import OPTIONS, POLICIES, option_flag
from .settings import RunSettings
from .types import key_names

__all__ = ["statistics_settings"]

#: flag -> the setting, of the settings that define the statistics (module docstring): both modes
_COMMON = {"--k": "k", "--reward-model": "reward_model", "--reward-range": "reward_bounds", "--clip": "clip",
           "--model-param": "model_params", "--arms": "arms", "--reward-field": "reward_field",
           "--key-field": "key_field", "--key-from-file": "key_from_file", "--key-match": "key_match",
           "--key-ids": "key_ids",
           "--numeric-strings": "numeric_strings", "--reward-at-least": "reward_at_least",
           "--reward-in": "reward_in", "--reward-match": "reward_match", "--reward-missing": "reward_missing",
           "--reward-unit": "reward_unit", "--decimal-comma": "decimal_comma",
           "--timestamp-field": "timestamp_field", "--timestamp-unit": "timestamp_unit",
           "--timestamp-format": "timestamp_format",
           "--rewards-format": "rewards_format", "--line-pattern": "line_pattern", "--line-field": "line_field",
           "--encoding": "encoding", "--sheet": "sheet"}
#: ... the episode modes
_EPISODES = {"--policy": "policy", "--delta": "delta", "--two-sided": "two_sided", "--rho": "rho", "--seed": "seed",
             "--epsilon": "epsilon", "--threshold": "threshold", "--budget": "budget", "--b": "ucbe_b",
             "--alpha": "alpha", "--estimator": "estimator", "--moment-p": "moment_p", "--moment-bound": "moment_bound"}
#: ... the continuous mode
_CONTINUOUS = {"--monitor-alpha": "monitor_alpha", "--change-alpha": "change_alpha", "--group-by": "group_by"}


def statistics_settings(s: RunSettings, *, continuous: bool, passive_feed: str | None, clock: str) -> dict[str, Any]:
    """The settings of ``s`` that a restart may not change (module docstring), by flag, as JSON holds them
    (what the checkpoint's ``run`` block keeps and the next run compares). ``passive_feed``: the
    scheduler's (the policy's default when not given; ``None`` in the active and continuous modes);
    ``clock``: the scheduler's (``event`` or ``wall``)."""
    flags = {**_COMMON, **(_CONTINUOUS if continuous else _EPISODES)}
    out = {flag: getattr(s, name) for flag, name in flags.items()}
    spec = POLICIES.get(s.policy)
    if not continuous and spec is not None:  # a policy's option only where the policy reads it: a checkpoint
        for opt in OPTIONS:  # written when an unread option was ignored (not refused) does not bar the restart
            if opt not in spec.params:
                out.pop(option_flag(opt), None)
    if isinstance(s.arms, str):
        out["--arms"] = key_names(s.arms)
    if not continuous:
        out["--clock"] = clock
        if passive_feed is not None:
            out["--passive-feed"] = passive_feed
    return dict(json.loads(json.dumps(out)))  # tuples as lists, as the checkpoint gives them back

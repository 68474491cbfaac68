"""``streamarms run`` in the continuous mode (the default of ``--forever``): the pieces it adds to a run.

* :func:`build_runner`: the :class:`~streamarms.runtime.continuous.ContinuousRunner` over a
  :class:`~streamarms.monitor.ContinuousMonitor` from the run's settings (``--k``, ``--monitor-alpha``,
  ``--change-alpha``, ``--group-by``, ``--max-groups``, ``--forget-silent``, the reward model, which must be
  bounded);
* :func:`alert_line`: the one-line log of an alert.

The monitor's false-alarm guarantee (``streamarms/monitor/monitor.py``): while the means of a group's keys
do not change, P(any false alert in the group) <= alpha E[segments] + alpha_theta E[epochs], with
``alpha = alpha_theta = --monitor-alpha`` and the change detector restarting a key falsely at most
``--change-alpha`` times per record of the key in expectation.

>>> r = build_runner(k=2.0, alpha=1e-3, alpha_cd=1e-6, model="bernoulli", clock=lambda: 0.0)
>>> type(r.monitor).__name__, r.monitor.alpha_theta, r.group_field
('ContinuousMonitor', 0.001, None)
>>> build_runner(k=2.0, alpha=1e-3, alpha_cd=1e-6, model="heavy_tailed", clock=lambda: 0.0)
Traceback (most recent call last):
...
streamarms.errors.ConfigError: the continuous mode needs a bounded reward model (bernoulli or bounded), got 'heavy_tailed'
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ConfigError
from ..models import RewardModel
from ..monitor import ContinuousMonitor
from ..monitor.monitor import waiting_for
from ..runtime.codec import RewardCodec
from ..runtime.continuous import ContinuousRunner

__all__ = ["build_runner", "alert_line", "continuous_summary", "no_threshold_text"]


def build_runner(*, k: float, alpha: float, alpha_cd: float, model: str | RewardModel, clock: Callable[[], float],
                 emit_alert: Callable[[dict[str, Any]], None] | None = None, group_by: str | None = None,
                 max_groups: int = 100, max_arms: int = 10_000, arms: Sequence[str] | None = None,
                 reward_field: str = "reward", max_key_bytes: int = 256, forget_silent: bool = False,
                 key_ttl: int | None = 1_000_000, clip: bool = False, numeric_strings: bool = False,
                 at_least: float | None = None, reward_in: Sequence[str] | None = None,
                 reward_match: str | None = None, missing: float | None = None,
                 unit: str | None = None) -> ContinuousRunner:
    """The runner of one continuous ``streamarms run`` (module docstring); bad settings: :class:`ConfigError`.
    ``key_ttl`` (``--silence-records``): a key silent for this many records of its group leaves its
    threshold; ``forget_silent`` (``--forget-silent``): the monitor then also forgets it
    (:class:`~streamarms.monitor.ContinuousMonitor`), and the runner's key registry lets it go."""
    name = model if isinstance(model, str) else model.name
    if name not in ("bernoulli", "bounded", "hoeffding"):
        raise ConfigError(f"the continuous mode needs a bounded reward model (bernoulli or bounded), got {name!r}")
    try:
        mon = ContinuousMonitor(k=k, alpha=alpha, alpha_theta=alpha, alpha_cd=alpha_cd, model=model,
                                forget_silent=forget_silent, key_ttl=key_ttl)
        codec = RewardCodec(reward_field, mon.model, max_key_bytes=max_key_bytes, clip=clip,
                            numeric_strings=numeric_strings, at_least=at_least, reward_in=reward_in,
                            reward_match=reward_match, missing=missing, unit=unit)
        return ContinuousRunner(mon, clock=clock, codec=codec, emit_alert=emit_alert, group_field=group_by,
                                max_groups=max_groups, max_arms=max_arms, arms=arms)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def alert_line(a: dict[str, Any]) -> str:
    """One line per alert: the key, its group, its interval vs the threshold's, the margin, the samples.

    >>> alert_line({"kind": "outlier", "arm": "k0", "group": "default", "estimate": 0.8, "interval": [0.7, 0.9],
    ...             "threshold_interval": [0.2, 0.3], "margin": 3.5, "samples": 420, "time": 1700000000.5})
    'ALERT outlier k0 (group default)  estimate 0.8 [0.7, 0.9]  threshold [0.2, 0.3]  margin 3.5 radii  420 samples  at 2023-11-14T22:13:20.500Z'

    A stream time that is no date (records without timestamps: seconds from 0) is said in seconds (``at 12 s``).
    """
    ti = a.get("threshold_interval") or [None, None]
    th = f"[{ti[0]:.4g}, {ti[1]:.4g}]" if None not in ti else "unknown"
    margin = a.get("margin")
    return (f"ALERT {a['kind']} {a['arm']} (group {a['group']})  estimate {a['estimate']:.4g} "
            f"[{a['interval'][0]:.4g}, {a['interval'][1]:.4g}]  threshold {th}"
            + (f"  margin {margin:.3g} radii" if isinstance(margin, (int, float)) else "")
            + f"  {a['samples']:,} samples  at {_when(a['time'])}")


def _when(t: float) -> str:
    """A stream time (s) as a person reads it: a date in UTC (ms) from 2001 on, else the seconds it counts."""
    if t >= 978_307_200:
        return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return f"{t:.15g} s"


def continuous_summary(mon: ContinuousMonitor, group_by: str | None) -> dict[str, Any]:
    """The continuous run's part of ``--summary-json``; ``no_threshold``: the groups whose threshold has no
    interval at the stop (so none of their keys can be flagged), with whom each waits for.

    >>> mon = ContinuousMonitor(); _ = mon.update("a", 1.0)
    >>> s = continuous_summary(mon, None); s["groups"], s["no_threshold"][0]["group"], s["no_threshold"][0]["members"]
    (1, 'default', 1)
    """
    out: dict[str, Any] = {"policy": "continuous", "groups": len(mon.groups), "restarts": mon.counts["restarts"],
                           "epochs": mon.counts["epochs"], "group_by": group_by}
    out["no_threshold"] = [{"group": name, **waiting_for(g)} for name, g in sorted(mon.groups.items())
                           if not all(map(math.isfinite, g.interval()))]
    return out


def no_threshold_text(groups: list[dict[str, Any]]) -> str:
    """One line on the groups without a threshold at the stop ("flagged now: none" alone reads as "no outlier").

    >>> print(no_threshold_text([{"group": "default", "members": 41, "quietest": [{"key": "ep10 ",
    ...                           "records_since": 599_000}]}]))
    no threshold at the stop, so no key of these groups could be flagged: 'default' (41 keys) waits for a record of every key; the quietest, 'ep10 ', has had none for 599,000 records (see --silence-records)
    """
    parts = []
    for g in groups[:3]:
        q = g.get("quietest") or []
        parts.append(f"{g['group']!r} ({g['members']} keys) " + (
            f"waits for a record of every key; the quietest, {q[0]['key']!r}, has had none for "
            f"{q[0]['records_since']:,} records (see --silence-records)" if q else "needs records of at least 2 keys"))
    more = f" (and {len(groups) - 3} more groups)" if len(groups) > 3 else ""
    return f"no threshold at the stop, so no key of these groups could be flagged: {'; '.join(parts)}{more}"

"""A key's evidence in a detection episode (``streamarms explain`` on a checkpoint of the episode modes):
what the episode's policy has classified it as, its estimate and interval, the threshold's, and the margin
between them, as strict JSON (no NaN or infinity). The continuous mode's own is
:meth:`streamarms.monitor.ContinuousMonitor.evidence`; the same fields where they mean the same.

>>> from streamarms.policies.anytime import AnytimeKSigma
>>> pol = AnytimeKSigma(list("abcdef"), k=1.0)
>>> while not pol.done:
...     arm = pol.next_request().arm
...     _ = pol.update(arm, 1.0 if arm == "f" else 0.0)
>>> ev = episode_evidence(pol, "f", episode=1)
>>> ev["state"], ev["margin"] > 0, episode_evidence(pol, "a", episode=1)["state"]
('outlier', True, 'normal')
>>> episode_evidence(None, "c", episode=0)["state"]
'not in an episode'
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable
from typing import Any

from ..confidence.base import interval_margin
from ..policies.base import Decision, Policy

__all__ = ["episode_evidence", "episode_summary", "key_evidence", "finite_or_none", "finite_pair"]


def finite_or_none(x: Any) -> float | None:
    """``x`` as a float for strict JSON: ``None`` for none, NaN or an infinity."""
    return float(x) if x is not None and math.isfinite(x) else None


def finite_pair(iv: Any) -> list[float | None] | None:
    """An interval for strict JSON (:func:`finite_or_none` of each end); ``None`` for none."""
    return None if iv is None else [finite_or_none(iv[0]), finite_or_none(iv[1])]


def _state(d: Decision, key: str) -> str:
    if key in d.outliers:
        return "outlier"
    if key in d.normals:
        return "normal"
    return "undecided"


def episode_evidence(policy: Policy | None, key: str, episode: int, decision: Decision | None = None,
                     state: str | None = None) -> dict[str, Any]:
    """``key``'s evidence in the running (or last) episode's ``policy``; ``state`` is ``"not in an episode"``
    when the policy does not have the key (it joins the next episode) or there is none. ``decision`` and
    ``state``: the policy's decision and the key's state in it, if already known (no scan of its lists)."""
    out: dict[str, Any] = {"key": key, "episode": episode}
    if policy is None or key not in policy.index:
        out["state"] = "not in an episode"
        return out
    d = policy.decision() if decision is None else decision
    got = policy.arm_evidence(key)
    ev = got or {}
    if got is None:
        out["note"] = f"policy {policy.name!r} does not expose a key's estimate and interval"
    iv = ev.get("interval")
    th = d.threshold_interval
    lower = d.extra.get("lower_threshold_interval") if isinstance(d.extra, dict) else None
    margin = interval_margin(iv, th)
    if lower is not None and iv is not None and ev.get("estimate") is not None and d.threshold is not None:
        low = d.extra.get("lower_threshold")
        if low is not None and abs(ev["estimate"] - low) < abs(ev["estimate"] - d.threshold):
            margin = interval_margin(iv, lower)  # nearer the lower threshold: that is the one it is judged against
    out.update(state=state or _state(d, key), estimate=finite_or_none(ev.get("estimate")), interval=finite_pair(iv),
               samples=ev.get("samples"), threshold=finite_or_none(d.threshold), threshold_interval=finite_pair(th),
               margin=margin, pulls=d.pulls, policy=policy.name)
    if lower is not None:
        out.update(lower_threshold=finite_or_none(d.extra.get("lower_threshold")), lower_threshold_interval=finite_pair(lower))
    return out


def key_evidence(policy: Policy | None, known: Container[str], key: str, episode: int,
                 flagged: dict[str, int] | None = None) -> dict[str, Any]:
    """:func:`episode_evidence` for ``/explain``: ``KeyError`` for a key neither ``known`` (the scheduler's
    keys) nor in the episode's policy. ``flagged``: the alerts' flagged keys (key -> the episode that
    flagged it); the key's ``flagged`` and ``flagged_in_episode`` say whether an outlier alert stands for it
    -- a key flagged in one episode is ``undecided`` in the next until that episode classifies it again."""
    if key not in known and (policy is None or key not in policy.index):
        raise KeyError(key)
    out = episode_evidence(policy, key, episode)
    if flagged is not None:
        out["flagged"] = key in flagged
        if key in flagged:
            out["flagged_in_episode"] = flagged[key]
    return out


def episode_summary(policy: Policy | None, known: Iterable[str], episode: int, phase: str,
                    show: int = 50, flagged: dict[str, int] | None = None) -> dict[str, Any]:
    """The episode at a glance: its outliers (each with its evidence), how many keys are normal, the
    undecided ones (the first ``show``), the threshold, the known keys that wait for the next episode, and
    (``flagged`` given) the keys an outlier alert stands for, whichever episode raised it."""
    known = sorted(known)
    out: dict[str, Any] = {"episode": episode, "phase": phase, "keys": len(known)}
    if flagged is not None:
        out["flagged"] = sorted(flagged)[:show]
    if policy is None:
        out["waiting"] = known[:show]
        return out
    d = policy.decision()
    out.update(policy=policy.name, pulls=d.pulls, done=d.done, threshold=finite_or_none(d.threshold),
               threshold_interval=finite_pair(d.threshold_interval),
               outliers=[episode_evidence(policy, k, episode, d, "outlier") for k in sorted(d.outliers)[:show]],
               normal=len(d.normals), undecided=len(d.undecided), undecided_keys=sorted(d.undecided)[:show],
               waiting=[k for k in known if k not in policy.index][:show])  # (index: a dict)
    return out

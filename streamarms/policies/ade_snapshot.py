"""Restoring :class:`~streamarms.policies.ade.AdaptiveDoubleExploration` from a snapshot, every field checked.

The fields are read through :class:`~streamarms.policies.snapshot_fields.Fields`: the parameters go through
the constructor, per-arm lists have one entry per arm, each arm's sum lies in ``[low m_i, high m_i]``, and
the counters agree the way a run keeps them -- ``t = 1 + m_theta + m_a`` (every finished round, threshold or
sequential, moved ``t`` on), ``pulls`` = the arms' samples + both halves of the ``m_theta`` pairs used + the
halves of the pending pairs, ``max_m`` the largest count; the pending pairs are those from ``next_proc_rid``
to ``next_rid - 1``, of arms in range; the candidates are the undecided arms; an unfinished run has a round
open. A forged or damaged snapshot is
refused with a ``ValueError`` naming the field instead of restoring a policy that fails later. Kept apart
from the class (near the size limit).
"""

from __future__ import annotations

import math
from typing import Any

from ..models import model_from_dict
from .ade_rounds import THRESHOLD
from .snapshot_fields import Fields

__all__ = ["construct", "check_rounds"]

_STATUS = (None, "outlier", "normal")
_SIDE = (None, "high", "low")


def construct(cls: Any, state: Any) -> tuple[Any, Fields]:
    """A new policy with the snapshot's arms, parameters and model, and the snapshot's fields."""
    f = Fields(state, policy=cls.name)
    f.choice("format", (1,), default=1)  # (the only one so far)
    arms = f.arms()
    p = f.sub("params")
    with f.part("model"):
        model = model_from_dict(f.raw("model"))
    with f.part("params"):  # the constructor's checks
        pol = cls(arms, k=p.number("k"), delta=p.number("delta"), model=model, seed=p.raw("seed"),
                  two_sided=p.flag("two_sided"), max_pending_pairs=p.integer("max_pending_pairs", low=1))
    with f.part("rng"):
        version, internal, gauss = f.raw("rng")
        pol._rng.setstate((version, tuple(internal), gauss))
    return pol, f


def check_rounds(pol: Any, f: Fields) -> dict[str, Any]:
    """The snapshot's per-arm state, counters, estimator and open round, checked against each other;
    returns the values (``load`` of the class reads them)."""
    n = pol.n
    m, s = f.counts("m"), f.numbers("s")
    f.sums_within("s", m, s, pol._lo, pol._hi)
    v: dict[str, Any] = {"m": m, "s": s}
    v["max_m"] = f.integer("max_m")
    if v["max_m"] != max(m):
        raise f.fail("max_m", f"is {v['max_m']}, but the largest count is {max(m)}")
    for name, allowed in (("status", _STATUS), ("side", _SIDE)):
        vals = f.sequence(name)
        bad = next((j for j, x in enumerate(vals) if not any(x is a or x == a for a in allowed)), None)
        if bad is not None:
            raise f.fail(name, f"entry {bad} must be one of {list(allowed)}, got {vals[bad]!r}")
        v[name] = vals
    v["hi_clear"], v["lo_clear"] = f.counts("hi_clear", high=1), f.counts("lo_clear", high=1)
    v["cand"] = f.indices("cand", distinct=True)
    v["m_theta"] = f.integer("m_theta")
    v["m_a"] = f.integer("m_a")
    v["t"] = f.integer("t", low=1)
    if v["t"] != 1 + v["m_theta"] + v["m_a"]:
        raise f.fail("t", f"is {v['t']}, but {v['m_theta']} threshold and {v['m_a']} sequential rounds "
                          f"were done: t = {1 + v['m_theta'] + v['m_a']}")
    _check_estimator(pol, f, v["m_theta"])
    alive = v["status"].count(None)
    v["mode"] = f.choice("mode", (None, THRESHOLD, "sequential"))
    pairs = f.sequence("pairs", None)
    v["next_proc_rid"] = f.integer("next_proc_rid")
    v["next_rid"] = f.integer("next_rid", low=v["next_proc_rid"])
    halves = 0
    for j, pair in enumerate(pairs):
        pf = Fields({"pair": pair}, n, where=f"pairs[{j}].")
        rid, arm, x1, x2 = pf.sequence("pair", 4)
        pf.state = {"rid": rid, "arm": arm}
        pf.integer("rid", low=v["next_proc_rid"], high=v["next_rid"] - 1)
        pf.index("arm")
        for x in (x1, x2):
            if x is not None:
                pf.state = {"reward": x}
                pf.number("reward", pol._lo, pol._hi)
                halves += 1
    rids = [int(p[0]) for p in pairs]
    if sorted(rids) != list(range(v["next_proc_rid"], v["next_rid"])):
        raise f.fail("pairs", f"must hold the pairs {v['next_proc_rid']} to {v['next_rid'] - 1} (next_proc_rid "
                              f"to next_rid - 1), each once, got request ids {sorted(rids)[:10]}")
    wish = f.counts("pair_wish", None)
    if not set(wish) <= set(rids) or len(set(wish)) != len(wish):
        raise f.fail("pair_wish", "must list distinct request ids of the pending pairs")
    v["seq_pending"] = f.indices("seq_pending", distinct=True)
    v["ra_order"] = f.indices("ra_order", distinct=True)
    undecided = {i for i, st in enumerate(v["status"]) if st is None}
    if set(v["cand"]) != undecided:
        raise f.fail("cand", "must list the undecided arms (those with no status)")
    if v["m_a"] >= 1 and set(v["ra_order"]) != undecided:  # (the order is set by the first sequential round)
        raise f.fail("ra_order", "must list the undecided arms (those with no status)")
    v["pulls"] = f.integer("pulls")
    want = sum(m) + 2 * v["m_theta"] + halves
    if v["pulls"] != want:
        raise f.fail("pulls", f"is {v['pulls']}, but the samples add up to {want} (arm samples {sum(m)}, "
                              f"{v['m_theta']} threshold pairs, {halves} halves of pending pairs)")
    if alive and not ((v["mode"] == THRESHOLD and wish) or (v["mode"] == "sequential" and v["seq_pending"])):
        raise f.fail("mode", f"is {v['mode']!r} with nothing pending, but {alive} arms are undecided")
    return v


def _check_estimator(pol: Any, f: Fields, m_theta: int) -> None:
    """The threshold estimator's sums (of pairs translated to ``[0, R]``) and estimates."""
    R = pol._hi - pol._lo
    S1, S2, S12 = f.numbers("S", 3)
    tol = 1e-9 * max(1.0, R * R * m_theta)
    if not (-tol <= S1 <= R * m_theta + tol and -tol <= S2 <= R * m_theta + tol
            and -tol <= S12 <= R * R * m_theta + tol):
        raise f.fail("S", f"is not the sums of {m_theta} pairs of rewards in [{pol._lo}, {pol._hi}]")
    if f.raw("U_sigma") is not None:
        f.number("U_sigma", low=0.0)
    est = f.sequence("est", 5)
    for j, x in enumerate(est):
        if x is None and m_theta == 0:
            continue
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise f.fail("est", f"entry {j} must be a finite number, got {x!r}")

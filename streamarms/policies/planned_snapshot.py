"""Restoring the round-planned policies -- GOLD (:mod:`~streamarms.policies.gold`) and the robust k-sigma
(:mod:`~streamarms.policies.robust`) -- from a snapshot, every field checked.

Both keep per-arm counts and sums (``T``/``pulls`` their total), optionally the engine's confidence
sequences (``intervals="cs"``: one per arm, counting the same samples) and a :class:`RoundPlan`
of the arms still owed a sample this round (never empty while the run is not done). The fields are read
through :class:`~streamarms.policies.snapshot_fields.Fields`, the parameters go through the constructor; a
forged or damaged snapshot is refused with a ``ValueError`` naming the field instead of restoring a
policy that fails later. Snapshots from before ``seed``, ``intervals`` and ``cs`` restore (the defaults).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..confidence.arms import ArmSequences
from ..confidence.factory import sequence_for
from ..models import model_from_dict
from .snapshot_fields import Fields

__all__ = ["construct", "load_counts", "load_plan", "load_gold", "load_robust"]


def construct(cls: Any, state: Any, names: tuple[str, ...], flags: tuple[str, ...] = ()) -> tuple[Any, Fields]:
    """A new policy with the snapshot's arms, model, numeric parameters ``names`` and boolean ones ``flags``,
    and the snapshot's fields."""
    f = Fields(state, policy=cls.name)
    arms = f.arms()
    kw: dict[str, Any] = {name: f.number(name) for name in names}
    kw.update((name, f.flag(name)) for name in flags)
    with f.part("model"):
        kw["model"] = model_from_dict(f.raw("model"))
    kw["intervals"] = f.choice("intervals", ("paper", "cs"), default="paper")
    with f.part("params"):  # the constructor's checks
        pol = cls(arms, seed=f.raw("seed", None), **kw)
    return pol, f


def load_counts(pol: Any, f: Fields, total: str) -> tuple[list[int], list[float], int]:
    """The per-arm counts and sums, their total (field ``total``), and the confidence sequences (with the
    same counts) when the policy uses them."""
    m, s = f.counts("m"), f.numbers("s")
    if not getattr(pol.model, "transforms", False):  # (TEA's sums are of truncated rewards)
        f.sums_within("s", m, s, pol.model.low, pol.model.high)
    T = f.integer(total)
    f.total(total, T, m)
    if (pol.intervals == "cs") != (f.raw("cs", None) is not None):
        raise f.fail("cs", f"must be given exactly when intervals is 'cs' (intervals is {pol.intervals!r})")
    if pol.intervals == "cs":
        with f.part("cs"):
            template = sequence_for(pol.model, pol.delta / pol.n, pol.arms[0])
        seqs = ArmSequences.__new__(ArmSequences)
        seqs.seqs = f.sequences("cs", template, pol.model.low, pol.model.high)
        differ = np.flatnonzero(np.asarray([c.m for c in seqs.seqs]) != np.asarray(m))
        if len(differ):
            j = int(differ[0])
            raise f.fail("cs", f"entry {j} counts {seqs.seqs[j].m} samples, but m has {m[j]}")
        pol._cs = seqs
    return m, s, T


def load_plan(pol: Any, f: Fields, done: bool) -> None:
    """The arms still owed a sample this round: some while the run is not done."""
    plan = f.indices("plan", distinct=True)
    if not done and not plan:
        raise f.fail("plan", "is empty, but the run is not done")
    pol._plan.start(plan)


def load_robust(pol: Any, f: Fields) -> None:
    """The robust k-sigma's state (``RobustOutlierArmIdentification.restore``)."""
    m, s, pulls = load_counts(pol, f, "pulls")
    pol.m, pol.s, pol._pulls = np.array(m, dtype=np.int64), np.array(s, dtype=float), pulls
    for i in np.flatnonzero(pol.m > 0).tolist():
        pol.L[i], pol.U[i] = pol._arm_interval(i)
    status = f.counts("status", high=2)  # undecided, normal, outlier
    pol.status = np.array(status, dtype=np.int8)
    pol._done = f.flag("done")
    if pol._done != (0 not in status):
        raise f.fail("done", f"is {pol._done}, but {status.count(0)} arms are undecided")
    pol.rounds = f.integer("rounds")
    if f.raw("stats") is not None:
        med_lo, med_hi, mad_lo, mad_hi = f.numbers("stats", 4)
        pol._stats = (med_lo, med_hi, mad_lo, mad_hi)
    elif pol._done or status.count(0) < len(status):
        raise f.fail("stats", "is missing, but arms are classified")
    load_plan(pol, f, pol._done)


def load_gold(pol: Any, f: Fields) -> None:
    """GOLD's state (``GenericOutlierDetection.restore``): counts, the graph of cores and edges, the
    communities and the terminal arms with their S-scores."""
    n = pol.n
    pol.m, pol.s, pol.T = load_counts(pol, f, "T")
    if f.raw("T0") is None:  # the initial round (a sample of every arm) is not over
        pol.T0 = None
        if 0 not in pol.m:
            raise f.fail("T0", "is null (the graph is not built), but every arm has a sample")
    else:
        pol.T0 = f.integer("T0", low=n, high=pol.T)
        if 0 in pol.m:
            raise f.fail("T0", "is set (the graph was built), but an arm has no sample")
    pol.terminal = f.flags("terminal")
    pol.S = f.counts("S", high=pol.T)
    wrong = next((i for i in range(n) if pol.terminal[i] != (pol.S[i] > 0)), None)
    if wrong is not None:
        raise f.fail("S", f"entry {wrong} is {pol.S[wrong]}, but the arm is "
                          f"{'' if pol.terminal[wrong] else 'not '}terminal (S > 0 exactly for terminal arms)")
    if pol.T0 is None and any(pol.terminal):
        raise f.fail("terminal", "has terminal arms before the graph was built (T0 is null)")
    pol.n_terminal = sum(pol.terminal)
    pol._done = f.flag("done")
    if pol._done and pol.n_terminal < pol.budget:
        raise f.fail("done", f"is true with {pol.n_terminal} terminal arms, fewer than the budget {pol.budget}")
    pol._first_check = f.flag("first_check")
    comp = f.counts("comp")
    pol.comp = np.array(comp, dtype=np.int64)
    pol._next_label = f.integer("next_label", low=max(comp))
    core_lo, core_hi = f.numbers("core_lo", finite=False), f.numbers("core_hi", finite=False)
    empty = f.flags("core_empty")
    edges = f.sequence("S_edges", None)
    for j, e in enumerate(edges):
        ef = Fields({"edge": e}, n, where=f"S_edges[{j}].")
        ef.indices("edge", 2, distinct=True)
    graph = {"core_lo": core_lo, "core_hi": core_hi, "core_empty": empty, "S_edges": edges}
    pol.graph.load(graph, [not t for t in pol.terminal], built=pol.T0 is not None)
    load_plan(pol, f, pol._done)


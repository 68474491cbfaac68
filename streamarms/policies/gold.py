"""GOLD: generic (high, low and in-between) outlier arms, ranked.

Ban, He. *Generic Outlier Detection in Multi-Armed Bandit*. KDD 2020 ([BH20], seed
``001_de55ab858af93a14.txt``). Two parts:

* **The definition** (Sec. 3): an (epsilon, rho)-outlier arm group ``N^`` is a run of arms, in the order
  of their true means, whose distance to the normal arms above (``N_u``) and below (``N_l``) exceeds
  ``(1 + epsilon)`` times every normal arm's neighbourhood distance, with more than ``rho n`` normal arms
  and each non-empty side larger than ``(1 - rho) n`` (Def. 3.2). :func:`outlier_groups` lists every such
  group of a vector of true means; :func:`true_outliers` is their union (the ground truth of a simulation).
* **The algorithm** (Alg. 1, :class:`GenericOutlierDetection`): arms are nodes of a neighbourhood graph;
  ``i ~ j`` while ``|y_hat_i - y_hat_j| <= b (beta_i + beta_j)`` with ``b = gold_b(epsilon)`` and
  radii at ``delta' = 6 delta / (pi^2 n T^2)``; edges are only ever removed. Communities are connected
  components; an arm reaches *terminal status* (S-score = T) the first time its community has fewer than
  ``n (1 - rho)`` arms; GOLD pulls the non-terminal arms round-robin and stops at the end of the round in
  which at least ``n (1 - rho)`` arms are terminal. Output: arms ranked by ascending S (never-terminal
  arms last). Thm. 5.1: with probability >= 1 - delta every outlier group is ranked ahead of its normal
  arms.

How the graph is kept without n^2 edges (the arms' intervals are ``J_i = [y_hat_i - b beta_i,
y_hat_i + b beta_i]``; neighbours = intersecting intervals):

1. Between two pulls of an arm its centre is fixed and its radius only grows (delta' shrinks with T and
   every reward model's radius is non-increasing in delta), so an overlap can only be lost at a pull of
   one of its two arms, where Alg. 1 checks it. Hence *edge (i, j) is in G_T iff J_i and J_j have
   intersected at every time since the graph was built* ("edges only ever removed").
2. The **core** of an arm, ``K_i`` = intersection of all its intervals since then, shrinks only when the
   arm is pulled. If two cores intersect, a common point lies in both intervals at every time, so the
   edge is present. Cores form an interval graph: the arms whose cores meet a's are found by bisection
   in sorted core endpoints.
3. Edges present although the cores are disjoint are few (the cores trail the current intervals by the
   wander of the centres) and are kept explicitly: ``edge(i, j) <=> cores meet or {i, j} in S``. When
   a's core shrinks, pairs whose cores stop meeting move to S if their intervals still meet, and pairs in
   S are dropped when their intervals separate. Only a's edges can change at a's pull.
4. A community can only split at the pull of one of its arms, and only if that pull removed an edge.
   If every removed edge (a, j) has a two-step detour a - k - j the community is still connected;
   otherwise its components are recomputed (sorted cores give the core-graph runs, S edges join runs).

So a pull costs O(log n) plus the edges it touches; only real splits cost O(community). The test-suite
replays random runs against a literal O(n^2) transcription of Alg. 1 and requires identical S-scores.

Reading of Alg. 1 (stated where the pseudo-code is ambiguous):

* line 36 assigns ``S[i] <- T`` for every arm of every small community at every pull, which would give all
  terminal arms the final T; the text ("S[i] will be updated when arm i achieves the terminal status")
  fixes it: S is set once, the first time.
* the round's arm list ``N = Psi - Psi^`` is fixed at the start of each while-iteration, so an arm that
  turns terminal mid-round is still pulled in that round, and the stopping test runs between rounds.
* neighbours are tested on interval endpoints (``lo_i <= hi_j and lo_j <= hi_i``), the same inequality
  as Eq. 2 up to rounding; the Bernoulli radius is the model's Agresti-Coull radius around ``y_hat``
  as in the paper.
* streaming: rewards of any arm are accepted (each is a pull: T and that arm's estimate advance); the
  graph is built the first time every arm has a reward (the paper's initial round). Ties between S-scores
  are broken by arm order.
* ``intervals="cs"`` (an option, not the paper's): ``beta_i`` is the smallest radius about ``y_hat_i``
  that covers arm i's anytime confidence sequence at level ``delta / n``
  (:class:`streamarms.confidence.arms.ArmSequences`) instead of the model's radius at ``delta'``; Thm.
  5.1's proof needs only ``|y_hat_i - y_i| <= beta_i`` for every arm at every T, which the sequences give
  with probability ``>= 1 - delta`` without the union over T. The rule is otherwise unchanged.
* ``n (1 - rho)`` is computed exactly from the decimal ``rho`` (``rho = 0.9`` gives exactly ``n / 10``).
  If ``n (1 - rho) <= 1`` no community can be small enough and Alg. 1 never stops: refused.

>>> import random
>>> from streamarms.policies.gold import GenericOutlierDetection
>>> means = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.99]
>>> pol = GenericOutlierDetection([str(i) for i in range(11)], epsilon=2.5, rho=0.85, seed=0)
>>> rng = random.Random(1)
>>> while not pol.done:
...     arm = pol.next_request().arm
...     _ = pol.update(arm, float(rng.random() < means[int(arm)]))
>>> d = pol.decision()
>>> d.ranking[0], d.outliers      # stops once n (1 - rho) = 1.65 arms are terminal: two
('10', ['10', '0'])
>>> true_outliers(means, 2.5, 0.85)
[10]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import numpy as np

from .. import bounds
from ..confidence.arms import ArmSequences
from ..models import BernoulliModel, RewardModel, make_model
from . import planned_snapshot
from .base import Decision, Event, Policy, Request
from .gold_graph import CoreGraph
from .rounds import RoundPlan, RoundPlanned
from .snapshot_fields import guarded

__all__ = ["GenericOutlierDetection", "OutlierGroup", "outlier_groups", "true_outliers",
           "ranking_respects_groups", "validate_gold_params", "outlier_budget"]

# ============================================================================================
# The (epsilon, rho) definitions (Sec. 3)
# ============================================================================================
def _exact(x: float) -> Fraction:
    """The decimal a float prints as, exactly (``0.9`` -> 9/10): cut-offs like ``n (1 - rho)`` are then
    not blurred by binary rounding (``50 * (1 - 0.9)`` is 4.999... in floats)."""
    return Fraction(repr(float(x)))


def outlier_budget(n: int, rho: float) -> Fraction:
    """``n (1 - rho)`` exactly: communities smaller than this are terminal; GOLD stops once this many
    arms are terminal.

    >>> outlier_budget(50, 0.9)
    Fraction(5, 1)
    """
    return n * (1 - _exact(rho))


def validate_gold_params(n: int, epsilon: float, rho: float) -> None:
    """Refuse parameters outside the ranges of [BH20] with a message that states the valid range.

    >>> validate_gold_params(20, 2.5, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: rho must lie strictly between 0.5 and 1 (Ban & He, KDD 2020, Def. 3.1), got 1.0
    """
    bounds.gold_b(epsilon)  # raises with the valid range
    if not (isinstance(rho, (int, float)) and math.isfinite(rho)) or not 0.5 < rho < 1.0:
        raise ValueError(f"rho must lie strictly between 0.5 and 1 (Ban & He, KDD 2020, Def. 3.1), got {rho!r}")
    if outlier_budget(n, rho) <= 1:
        raise ValueError(f"with n={n} arms rho={rho!r} leaves no room for an outlier: GOLD needs "
                         f"n (1 - rho) > 1 (a community must be able to be smaller than n (1 - rho)), "
                         f"i.e. rho < 1 - 1/n = {1 - 1 / n:.6g}, or more than 1/(1 - rho) arms")


@dataclass(frozen=True)
class OutlierGroup:
    """An (epsilon, rho)-outlier arm group ([BH20] Def. 3.2) with the normal arms above and below it.

    All three are lists of arm indices (into the means the group was computed from), sorted by mean.

    >>> g = outlier_groups([0.1, 0.11, 0.12, 0.9], 2.5, 0.7)[0]
    >>> g.members, g.upper, g.lower
    ([3], [], [0, 1, 2])
    """

    members: list[int]
    upper: list[int]
    lower: list[int]


def _max_gap_prefix_suffix(ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pre[k]`` = largest consecutive gap among ys[:k], ``suf[k]`` = among ys[k:] (0 when < 2 values)."""
    n = len(ys)
    gaps = np.diff(ys)
    pre = np.zeros(n + 1)
    suf = np.zeros(n + 1)
    if n >= 2:
        pre[2:] = np.maximum.accumulate(gaps)
        suf[:n - 1] = np.maximum.accumulate(gaps[::-1])[::-1]
    return pre, suf


def outlier_groups(means: Sequence[float], epsilon: float, rho: float, strict: bool = False) -> list[OutlierGroup]:
    """Every (epsilon, rho)-outlier arm group of the true means ([BH20] Def. 3.2).

    A group is a run ``N^`` of arms in the order of their means (ties never split, since the arms above
    and below are defined by strict inequalities and together with ``N^`` must be all arms) such that

    * Constraint (1): with ``G`` the largest neighbourhood distance ``<>^1(i, N)`` of a normal arm
      (the largest gap between consecutive means inside ``N_u`` or inside ``N_l``), the distance from
      every member to ``N_u`` and to ``N_l`` (where non-empty) exceeds ``(1 + epsilon) G``;
    * Constraint (2): ``|N_u| + |N_l| > rho n`` and each of ``|N_u|``, ``|N_l|`` is 0 or ``> (1 - rho) n``.

    ``strict=False`` (default) accepts ``|N_u| + |N_l| = rho n`` exactly, i.e. a group of exactly
    ``(1 - rho) n`` arms: the paper's own synthetic data (Sec. 6.1) injects exactly ``(1 - rho) n``
    outliers "until they satisfy the criterion", which the strict text would reject. Thm. 5.1's proof
    needs ``|N^| < (1 - rho) n``; a group of exactly that size is ranked first only if it splits into
    smaller communities (it does unless its arms are much closer to each other than to the normal arms).
    ``strict=True`` reads Constraint (2) literally.

    Groups are returned in order of their lowest mean, then size. O(n * n (1 - rho)) vectorised.

    >>> means = [0.05, 0.06, 0.07, 0.08, 0.5, 0.92, 0.93, 0.94, 0.95, 0.96]
    >>> [g.members for g in outlier_groups(means, 2.5, 0.85)]
    [[4]]
    """
    y = np.asarray(means, dtype=float)
    n = len(y)
    if n == 0:
        return []
    if not np.all(np.isfinite(y)):
        raise ValueError("true means must be finite")
    bounds.gold_b(epsilon)  # validates epsilon
    if not (isinstance(rho, (int, float)) and math.isfinite(rho)) or not 0.5 < rho < 1.0:
        raise ValueError(f"rho must lie strictly between 0.5 and 1 (Ban & He, KDD 2020, Def. 3.1), got {rho!r}")
    order = np.argsort(y, kind="stable")
    ys = y[order]
    cap = outlier_budget(n, rho)               # |N^| < n (1 - rho); each non-empty side > n (1 - rho)
    rho_n = n * _exact(rho)                    # |N_u| + |N_l| > rho n
    pre, suf = _max_gap_prefix_suffix(ys)
    # a block may start at k only if ys[k-1] < ys[k] and end at e only if ys[e] < ys[e+1]
    start_ok = np.ones(n, dtype=bool)
    start_ok[1:] = ys[1:] > ys[:-1]
    end_ok = np.ones(n, dtype=bool)
    end_ok[:-1] = ys[:-1] < ys[1:]
    factor = 1.0 + float(epsilon)
    found: list[tuple[int, int]] = []
    # for an integer v and a fraction x: v > x <=> v > floor(x); v >= x <=> v >= ceil(x)
    min_normals = math.floor(rho_n) + 1 if strict else math.ceil(rho_n)
    size = 1
    while (size < cap if strict else size <= cap) and size < n:
        starts = np.arange(0, n - size + 1)
        ends = starts + size - 1
        n_low = starts
        n_up = n - 1 - ends
        ok = start_ok[starts] & end_ok[ends]
        ok &= (n_low + n_up) >= min_normals
        ok &= (n_up == 0) | (n_up > math.floor(cap))
        ok &= (n_low == 0) | (n_low > math.floor(cap))
        G = np.maximum(pre[starts], suf[np.minimum(ends + 1, n)])
        up_gap = np.where(n_up > 0, ys[np.minimum(ends + 1, n - 1)] - ys[ends], np.inf)
        low_gap = np.where(n_low > 0, ys[starts] - ys[np.maximum(starts - 1, 0)], np.inf)
        ok &= (up_gap > factor * G) & (low_gap > factor * G)
        for s0 in np.flatnonzero(ok).tolist():
            found.append((s0, s0 + size - 1))
        size += 1
    found.sort()
    return [OutlierGroup(members=order[s:e + 1].tolist(), upper=order[e + 1:].tolist(),
                         lower=order[:s].tolist()) for s, e in found]


def true_outliers(means: Sequence[float], epsilon: float, rho: float, strict: bool = False) -> list[int]:
    """Indices of the arms that belong to at least one (epsilon, rho)-outlier group, sorted
    (``strict``: see :func:`outlier_groups`).

    >>> true_outliers([0.05, 0.06, 0.07, 0.08, 0.5, 0.92, 0.93, 0.94, 0.95, 0.96], 2.5, 0.85)
    [4]
    """
    out: set[int] = set()
    for g in outlier_groups(means, epsilon, rho, strict):
        out.update(g.members)
    return sorted(out)


def ranking_respects_groups(ranking: Sequence[int], groups: Iterable[OutlierGroup]) -> bool:
    """[BH20] Problem definition / Thm. 5.1: every group member is ranked ahead of its ``N_u`` and ``N_l``.

    >>> g = OutlierGroup(members=[3], upper=[], lower=[0, 1, 2])
    >>> ranking_respects_groups([3, 0, 1, 2], [g]), ranking_respects_groups([0, 3, 1, 2], [g])
    (True, False)
    """
    rank = {arm: r for r, arm in enumerate(ranking)}
    for g in groups:
        worst_member = max(rank[j] for j in g.members)
        normals = g.upper + g.lower
        if normals and worst_member > min(rank[i] for i in normals):
            return False
    return True


# ============================================================================================
# The algorithm (Alg. 1)
# ============================================================================================
class GenericOutlierDetection(RoundPlanned, Policy):
    """GOLD ([BH20] Alg. 1): rank arms so that generic (epsilon, rho)-outlier groups come first.

    Parameters: ``epsilon`` (> e^(1/16) - 1, sets ``b``), ``rho`` in (0.5, 1) (assumed share of normal
    arms; also needs ``n (1 - rho) > 1``), ``delta`` (failure probability), ``model`` (``"bernoulli"``:
    Agresti-Coull radius; ``"bounded"``/``"hoeffding"`` with ``a``, ``b`` via a model object: Hoeffding).
    ``seed`` is accepted for interface uniformity; GOLD is deterministic.

    :meth:`decision` gives ``ranking`` (ascending S-score, never-terminal arms last, ties by arm order) and
    ``outliers`` = the terminal arms in rank order; ``extra["S"]`` has the S-scores of terminal arms.
    No events are emitted during a run: reaching terminal status is not by itself a confident
    classification (Thm. 5.1 is a statement about the final ranking).

    >>> pol = GenericOutlierDetection(["a", "b", "c", "d", "e", "f"], epsilon=1.0, rho=0.6)
    >>> [pol.next_request().arm for _ in range(2)]    # the initial round asks every arm once
    ['a', 'a']
    >>> for arm, x in zip("abcdef", [0, 0, 1, 0, 0, 1]):
    ...     _ = pol.update(arm, x)
    >>> pol.pulls, pol.done, pol.wanted(3)
    (6, False, [Request(arm='a', kind='arm', request_id=None), Request(arm='b', kind='arm', request_id=None), Request(arm='c', kind='arm', request_id=None)])
    """

    name = "gold"

    def __init__(self, arms: Sequence[str], *, epsilon: float = 2.5, rho: float = 0.9, delta: float = 0.1,
                 model: RewardModel | str = "bernoulli", seed: int | None = None, intervals: str = "paper") -> None:
        super().__init__(arms)
        n = len(self.arms)
        validate_gold_params(n, epsilon, rho)
        if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
            raise ValueError(f"delta must lie strictly between 0 and 1, got {delta!r}")
        self.epsilon = float(epsilon)
        self.rho = float(rho)
        self.delta = float(delta)
        self.model = make_model(model)
        # count-and-sum estimates only (MoM is refused with a clear message); TEA adds contributions
        self.model.require_sum_based(self.name)
        self.seed = seed
        self.b = bounds.gold_b(self.epsilon)
        self.budget = outlier_budget(n, self.rho)
        self.n = n
        # per-arm statistics (Python lists: the per-reward path touches single entries)
        self.m: list[int] = [0] * n
        self.s: list[float] = [0.0] * n
        self.T = 0
        self.T0: int | None = None           # pull at which the graph was built (all arms sampled once)
        self.terminal: list[bool] = [False] * n
        self.S: list[int] = [0] * n          # S-score (T at terminal status); 0 = never terminal
        self.n_terminal = 0
        self._done = False
        self._first_check = False
        # graph state (valid once T0 is set)
        self.comp = np.zeros(n, dtype=np.int64)   # community label of every arm
        self._next_label = 0
        self.stats = {"recomputes": 0, "detours": 0, "splits": 0}
        self.graph = CoreGraph(n, self.stats)         # cores + explicit edges (valid once T0 is set)
        self._bernoulli = isinstance(self.model, BernoulliModel)
        self._at_T = -1                               # T of the cached delta' (and z)
        self._dp = 1.0
        self._z = 0.0
        self._plan = RoundPlan()   # Alg. 1's rounds; the first one is the initial pull of every arm
        self._start_round(initial=True)
        if intervals not in ("paper", "cs"):
            raise ValueError(f"intervals must be 'paper' or 'cs', got {intervals!r}")
        self.intervals = intervals
        self._cs = ArmSequences(self.model, self.delta / n, self.arms) if intervals == "cs" else None

    # ----------------------------------------------------------------------------------------
    # planning
    # ----------------------------------------------------------------------------------------
    def _start_round(self, initial: bool = False) -> None:
        if initial:
            self._plan.start(i for i in range(self.n) if self.m[i] == 0)
        else:
            self._plan.start(i for i in range(self.n) if not self.terminal[i])

    # ----------------------------------------------------------------------------------------
    # intervals J_i = [y_hat - b beta, y_hat + b beta] at the current T
    # ----------------------------------------------------------------------------------------
    def _refresh_level(self) -> None:
        if self._at_T != self.T:
            self._at_T = self.T
            self._dp = bounds.gold_significance(self.delta, self.n, self.T)
            if self._bernoulli:
                self._z = cast(BernoulliModel, self.model).z(self._dp)

    def _interval(self, i: int) -> tuple[float, float]:
        m, s = self.m[i], self.s[i]
        if self._cs is not None:
            r = self.b * self._cs.radius_about(i, s / m)
            return s / m - r, s / m + r
        self._refresh_level()
        if self._bernoulli:
            r = self.b * float(bounds.agresti_coull_radius(float(m), s, self._z))
        else:
            r = self.b * float(self.model.radius(m, s, self._dp))
        y = s / m
        return y - r, y + r

    def _intervals(self, idx: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        if self._cs is not None:
            lo_hi = np.array([self._interval(i) for i in idx], dtype=float).reshape(-1, 2)
            return lo_hi[:, 0], lo_hi[:, 1]
        self._refresh_level()
        m = np.array([self.m[i] for i in idx], dtype=np.int64)
        s = np.array([self.s[i] for i in idx], dtype=float)
        if self._bernoulli:
            r = self.b * np.asarray(bounds.agresti_coull_radius(m, s, self._z), dtype=float)
        else:
            r = self.b * np.asarray(self.model.radii(m, s, self._dp), dtype=float)
        y = s / m
        return y - r, y + r

    # ----------------------------------------------------------------------------------------
    # update
    # ----------------------------------------------------------------------------------------
    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        i = self._arm_index(arm)
        x = self.model.check(arm, reward)
        self.T += 1
        self.m[i] += 1
        x = self.model.contribution(int(self.m[i]), x)  # x itself, but 0 above TEA's truncation level
        self.s[i] += x
        if self._cs is not None:
            self._cs.update(i, x)
        if self._done:
            return []
        plan = self._plan
        plan.tick(i)
        if self.T0 is None:
            if plan.empty:
                self._build_graph()
                self._start_round()
            return []
        if not self.terminal[i]:
            self._pull_update(i)
        if self._first_check:
            self._first_check = False
            live = [i for i in range(self.n) if not self.terminal[i]]
            for label in sorted(set(self.comp[live].tolist())):
                self._check_terminal([j for j in live if self.comp[j] == label])
        if plan.empty:
            if self.n_terminal >= self.budget:
                self._done = True
                plan.clear()
            else:
                self._start_round()
        return []

    def _build_graph(self) -> None:
        """Alg. 1 lines 9-12: G = pairs whose intervals meet, at the end of the initial round."""
        self.T0 = self.T
        lo, hi = self._intervals(range(self.n))
        self.graph.build(lo.tolist(), hi.tolist())
        for g in self.graph.runs(list(range(self.n))):
            self.comp[g] = self._new_label()
        self._first_check = True   # UpdatePsi^andS first runs after the first pull of the main loop

    def _new_label(self) -> int:
        self._next_label += 1
        return self._next_label

    def _pull_update(self, a: int) -> None:
        """UpdateG for arm a's new interval, then split a's community if it lost its connectivity."""
        lo_a, hi_a = self._interval(a)
        graph = self.graph
        changed = graph.shrink(a, lo_a, hi_a)
        partners = graph.S_adj.get(a)
        if not changed and not partners:
            return
        cand = changed + (list(partners) if partners else [])
        lo_c, hi_c = self._intervals(cand)
        meets = ((lo_c <= hi_a) & (lo_a <= hi_c)).tolist()
        lost: list[int] = []
        nc = len(changed)
        for k, j in enumerate(cand):
            if k < nc:
                if meets[k]:
                    graph.add_edge(a, j)       # cores apart, intervals still meet: keep the edge explicitly
                else:
                    lost.append(j)
            elif not meets[k]:
                graph.remove_edge(a, j)
                lost.append(j)
        if lost and not all(graph.detour(a, j) for j in lost):
            self._recompute(int(self.comp[a]))

    def _recompute(self, label: int) -> None:
        """Components of community ``label`` from scratch: core runs joined by S edges."""
        self.stats["recomputes"] += 1
        members = np.flatnonzero(self.comp == label).tolist()
        comps = self.graph.components(members)
        if len(comps) == 1:
            return
        self.stats["splits"] += 1
        pieces = sorted(sorted(g) for g in comps)
        for g in pieces:
            self.comp[g] = self._new_label()
        for g in pieces:
            self._check_terminal(g)

    def _check_terminal(self, members: list[int]) -> None:
        """UpdatePsi^andS for one community: smaller than n (1 - rho) -> its arms turn terminal now."""
        if not members or not len(members) < self.budget:
            return
        for i in members:
            if self.terminal[i]:
                continue
            self.terminal[i] = True
            self.S[i] = self.T
            self.n_terminal += 1
            self.graph.drop(i)

    # ----------------------------------------------------------------------------------------
    # answers
    # ----------------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._done

    @property
    def pulls(self) -> int:
        return self.T

    def ranking_indices(self) -> list[int]:
        """Arm indices by ascending S-score (ties by arm order), never-terminal arms last."""
        term = sorted((self.S[i], i) for i in range(self.n) if self.terminal[i])
        return [i for _, i in term] + [i for i in range(self.n) if not self.terminal[i]]

    def decision(self) -> Decision:
        ranking = self.ranking_indices()
        k = self.n_terminal
        outliers = [self.arms[i] for i in ranking[:k]]
        rest = [self.arms[i] for i in ranking[k:]]
        live = [i for i in range(self.n) if not self.terminal[i]]
        return Decision(
            outliers=outliers,
            normals=rest if self._done else [],
            undecided=[] if self._done else rest,
            estimated_outliers=list(outliers),
            threshold=None,
            threshold_interval=None,
            pulls=self.T,
            done=self._done,
            ranking=[self.arms[i] for i in ranking],
            extra={"S": {self.arms[i]: self.S[i] for i in ranking[:k]},
                   "epsilon": self.epsilon, "rho": self.rho, "b": self.b,
                   "communities": len(set(self.comp[live].tolist())) if self.T0 is not None else 1},
        )

    @property
    def S_adj(self) -> dict[int, set[int]]:
        """The explicit edges S (pairs whose intervals meet although their cores are disjoint)."""
        return self.graph.S_adj

    def communities(self) -> list[list[str]]:
        """The current arm communities (connected components of the neighbourhood graph), terminal ones
        included, each in arm order; a single community until the graph is built."""
        if self.T0 is None:
            return [list(self.arms)]
        out: dict[int, list[str]] = {}
        for i, label in enumerate(self.comp.tolist()):
            out.setdefault(label, []).append(self.arms[i])
        return sorted(out.values(), key=lambda g: self.index[g[0]])

    # ----------------------------------------------------------------------------------------
    # persistence
    # ----------------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {
            "policy": self.name, "arms": list(self.arms), "epsilon": self.epsilon, "rho": self.rho,
            "delta": self.delta, "model": self.model.to_dict(), "seed": self.seed,
            "m": list(self.m), "s": list(self.s), "T": self.T, "T0": self.T0,
            "terminal": list(self.terminal), "S": list(self.S), "done": self._done,
            "first_check": self._first_check, "comp": self.comp.tolist(), "next_label": self._next_label,
            **self.graph.to_dict(),
            "plan": self._plan.to_list(),
            "intervals": self.intervals, "cs": None if self._cs is None else self._cs.snapshot(),
        }

    @classmethod
    @guarded
    def restore(cls, state: dict[str, Any]) -> GenericOutlierDetection:
        """Rebuild from :meth:`snapshot` output; a malformed snapshot raises ``ValueError`` naming the field
        (:mod:`streamarms.policies.planned_snapshot`)."""
        pol, f = planned_snapshot.construct(cls, state, ("epsilon", "rho", "delta"))
        planned_snapshot.load_gold(pol, f)
        return pol

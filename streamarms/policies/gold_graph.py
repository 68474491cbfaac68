"""GOLD's neighbourhood graph, kept as shrinking cores plus a few explicit edges.

Ban, He. *Generic Outlier Detection in Multi-Armed Bandit*. KDD 2020 ([BH20], Alg. 1 lines 9-12 and
UpdateG). The representation and why it is exact are explained in :mod:`streamarms.policies.gold`
(points 1-4): ``edge(i, j) <=> cores K_i, K_j meet or {i, j} in S``. This class owns the cores, the sorted
core endpoints and the explicit edge set ``S``; it knows nothing of pulls, rounds or terminal status
(:class:`~streamarms.policies.gold.GenericOutlierDetection` drives it).

>>> g = CoreGraph(3, {"detours": 0})
>>> g.build([0.0, 0.5, 2.0], [1.0, 1.5, 3.0])
>>> g.runs([0, 1, 2])                       # cores [0,1] and [0.5,1.5] overlap; [2,3] is alone
[[0, 1], [2]]
>>> g.shrink(1, 1.2, 1.5)                   # arm 1's core becomes [1.2, 1.5]: arm 0's core no longer meets it
[0]
>>> g.add_edge(0, 1); g.components([0, 1])  # intervals still meet: the edge is kept explicitly
[[0, 1]]
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["CoreGraph"]

#: how many candidates a two-step-detour search may inspect before recomputing the community
_DETOUR_BUDGET = 64


class CoreGraph:
    """Cores ``K_i`` (with endpoints sorted for bisection) and the explicit edges ``S`` of n arms."""

    def __init__(self, n: int, stats: dict[str, int]) -> None:
        self.n = n
        self.stats = stats                       # shared with the policy: counts "detours"
        self.core_lo: list[float] = [0.0] * n
        self.core_hi: list[float] = [0.0] * n
        self.core_empty: list[bool] = [False] * n
        self._lo_list: list[tuple[float, int]] = []   # (core_lo, arm) of live arms with non-empty cores
        self._hi_list: list[tuple[float, int]] = []   # (core_hi, arm), same arms
        self.S_adj: dict[int, set[int]] = {}          # edges alive although the cores are disjoint

    def build(self, lo: Sequence[float], hi: Sequence[float]) -> None:
        """Cores = the intervals at the end of the initial round (every pair meeting is an edge)."""
        self.core_lo = [float(v) for v in lo]
        self.core_hi = [float(v) for v in hi]
        self.core_empty = [False] * self.n
        self._lo_list = sorted(zip(self.core_lo, range(self.n)))
        self._hi_list = sorted(zip(self.core_hi, range(self.n)))

    def runs(self, members: list[int]) -> list[list[int]]:
        """Connected components of the core graph restricted to ``members``: maximal overlapping runs of
        the cores sorted by left end (arms with empty cores are alone)."""
        groups = [[i] for i in members if self.core_empty[i]]
        ne = [i for i in members if not self.core_empty[i]]
        if ne:
            idx = np.array(ne, dtype=np.int64)
            lo = np.array([self.core_lo[i] for i in ne])
            hi = np.array([self.core_hi[i] for i in ne])
            order = np.argsort(lo, kind="stable")
            run_hi = np.maximum.accumulate(hi[order])
            breaks = np.flatnonzero(lo[order][1:] > run_hi[:-1]) + 1
            groups.extend(g.tolist() for g in np.split(idx[order], breaks))
        return groups

    def components(self, members: list[int]) -> list[list[int]]:
        """Connected components of ``members``: core runs joined by S edges (union-find)."""
        runs = self.runs(members)
        node = {}
        for r, g in enumerate(runs):
            for i in g:
                node[i] = r
        parent = list(range(len(runs)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for i in members:
            for j in self.S_adj.get(i, ()):
                ri, rj = find(node[i]), find(node[j])
                if ri != rj:
                    parent[ri] = rj
        comps: dict[int, list[int]] = {}
        for r, g in enumerate(runs):
            comps.setdefault(find(r), []).extend(g)
        return list(comps.values())

    def _remove_entry(self, i: int) -> None:
        if self.core_empty[i]:
            return
        lst = self._lo_list
        del lst[bisect_left(lst, (self.core_lo[i], i))]
        lst = self._hi_list
        del lst[bisect_left(lst, (self.core_hi[i], i))]

    def drop(self, i: int) -> None:
        """Arm ``i`` left the graph (terminal): forget its core entry and its explicit edges."""
        self._remove_entry(i)
        for j in list(self.S_adj.get(i, ())):
            self.remove_edge(i, j)

    def shrink(self, a: int, lo_a: float, hi_a: float) -> list[int]:
        """Intersect a's core with its new interval; return the arms whose cores met K_a but not the
        new core (all of K_a's partners if the core vanished, which happens only outside the good event)."""
        if self.core_empty[a]:
            return []
        klo, khi = self.core_lo[a], self.core_hi[a]
        nlo = klo if klo >= lo_a else lo_a
        nhi = khi if khi <= hi_a else hi_a
        if nlo == klo and nhi == khi:
            return []
        self._remove_entry(a)
        his, los = self._hi_list, self._lo_list
        if nlo > nhi:
            k0 = bisect_left(his, (klo, -1))
            self.core_empty[a] = True
            return [j for _, j in his[k0:] if self.core_lo[j] <= khi]
        # partners whose cores met K_a but not the new core: ends inside the cut-off slivers
        changed = [j for _, j in his[bisect_left(his, (klo, -1)):bisect_left(his, (nlo, -1))]]
        changed.extend(j for _, j in los[bisect_right(los, (nhi, self.n)):bisect_right(los, (khi, self.n))])
        self.core_lo[a] = nlo
        self.core_hi[a] = nhi
        insort(los, (nlo, a))
        insort(his, (nhi, a))
        return changed

    def add_edge(self, i: int, j: int) -> None:
        self.S_adj.setdefault(i, set()).add(j)
        self.S_adj.setdefault(j, set()).add(i)

    def remove_edge(self, i: int, j: int) -> None:
        for x, y in ((i, j), (j, i)):
            p = self.S_adj.get(x)
            if p is not None:
                p.discard(y)
                if not p:
                    del self.S_adj[x]

    def detour(self, a: int, j: int) -> bool:
        """Is there k with edges a-k and k-j (so that losing edge a-j cannot disconnect)?"""
        self.stats["detours"] += 1
        lo, hi, empty = self.core_lo, self.core_hi, self.core_empty
        if not empty[a] and not empty[j]:
            # k whose core meets both cores must cover the gap between them
            if hi[a] < lo[j]:
                left_hi, right_lo = hi[a], lo[j]
            else:
                left_hi, right_lo = hi[j], lo[a]
            his = self._hi_list
            k0 = bisect_left(his, (right_lo, -1))
            for _, k in his[k0:k0 + _DETOUR_BUDGET]:
                if lo[k] <= left_hi and k != a and k != j:
                    return True
            los = self._lo_list
            k1 = bisect_right(los, (left_hi, self.n))
            for _, k in reversed(los[max(0, k1 - _DETOUR_BUDGET):k1]):
                if hi[k] >= right_lo and k != a and k != j:
                    return True
        # k in S(a) whose core meets j's, or in S(a) and S(j); k in S(j) whose core meets a's
        Sa = self.S_adj.get(a, ())
        Sj = self.S_adj.get(j, ())
        for mine, other, other_S in ((Sa, j, Sj), (Sj, a, Sa)):
            if not mine:
                continue
            if not empty[other]:
                olo, ohi = lo[other], hi[other]
                for k in mine:
                    if not empty[k] and lo[k] <= ohi and hi[k] >= olo:
                        return True
            if other_S and not other_S.isdisjoint(mine):
                return True
        return False

    def to_dict(self) -> dict[str, Any]:
        return {"core_lo": list(self.core_lo), "core_hi": list(self.core_hi),
                "core_empty": list(self.core_empty),
                "S_edges": sorted([i, j] for i, p in self.S_adj.items() for j in p if i < j)}

    def load(self, state: dict[str, Any], live: Sequence[bool], built: bool) -> None:
        """Restore from :meth:`to_dict`; ``live[i]`` is False for terminal arms (not in the sorted lists)."""
        self.core_lo = [float(v) for v in state["core_lo"]]
        self.core_hi = [float(v) for v in state["core_hi"]]
        self.core_empty = [bool(v) for v in state["core_empty"]]
        if built:
            keep = [i for i in range(self.n) if live[i] and not self.core_empty[i]]
            self._lo_list = sorted((self.core_lo[i], i) for i in keep)
            self._hi_list = sorted((self.core_hi[i], i) for i in keep)
        self.S_adj = {}
        for i, j in state["S_edges"]:
            self.add_edge(int(i), int(j))

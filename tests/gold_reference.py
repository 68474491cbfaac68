"""A literal O(n^2)-per-pull transcription of GOLD (Ban & He, KDD 2020, Alg. 1), for tests only.

It keeps the edge set E as an n x n boolean matrix, runs UpdateG over *all* pairs after every pull
(removing an edge as soon as its two intervals are disjoint, never adding one), recomputes the
connected components of E from scratch and applies UpdatePsi^andS to every community. It shares only
the reward model and ``bounds`` with :class:`streamarms.policies.gold.GenericOutlierDetection`; the round
plan is re-implemented here (a list, no tickets).
"""

from __future__ import annotations

import numpy as np

from streamarms import bounds
from streamarms.models import make_model
from streamarms.policies.gold import outlier_budget


class LiteralGOLD:
    def __init__(self, n: int, *, epsilon: float, rho: float, delta: float, model="bernoulli") -> None:
        self.n = n
        self.delta = delta
        self.model = make_model(model)
        self.b = bounds.gold_b(epsilon)
        self.budget = outlier_budget(n, rho)
        self.m = np.zeros(n, dtype=np.int64)
        self.s = np.zeros(n)
        self.T = 0
        self.E: np.ndarray | None = None
        self.terminal = np.zeros(n, dtype=bool)
        self.S = np.zeros(n, dtype=np.int64)
        self.done = False
        self.first = False
        self.todo = [i for i in range(n)]          # initial round: every arm once

    def next_request(self) -> int | None:
        return None if self.done or not self.todo else self.todo[0]

    def _intervals(self) -> tuple[np.ndarray, np.ndarray]:
        dp = bounds.gold_significance(self.delta, self.n, self.T)
        y = self.s / self.m
        r = self.b * np.asarray(self.model.radii(self.m, self.s, dp), dtype=float)
        return y - r, y + r

    def _overlap(self) -> np.ndarray:
        lo, hi = self._intervals()
        return (lo[:, None] <= hi[None, :]) & (lo[None, :] <= hi[:, None])

    def _components(self) -> list[list[int]]:
        """Connected components of E by min-label propagation (each arm ends with its component's
        smallest index)."""
        label = np.arange(self.n)
        big = self.n
        while True:
            nb = np.where(self.E, label[None, :], big).min(axis=1)
            new = np.minimum(label, nb)
            if np.array_equal(new, label):
                break
            label = new
        return [np.flatnonzero(label == r).tolist() for r in np.unique(label)]

    def update(self, i: int, x: float) -> None:
        self.T += 1
        self.m[i] += 1
        self.s[i] += x
        if self.done:
            return
        if i in self.todo:
            self.todo.remove(i)
        if self.E is None:
            if not self.todo:                        # lines 9-12: build G after the initial round
                self.E = self._overlap()
                self.todo = [j for j in range(self.n) if not self.terminal[j]]
            return
        self.E &= self._overlap()                    # UpdateG: every pair, edges only removed
        for comp in self._components():              # UpdatePsi^andS
            if len(comp) < self.budget:
                for j in comp:
                    if not self.terminal[j]:
                        self.terminal[j] = True
                        self.S[j] = self.T
        if not self.todo:
            if self.terminal.sum() >= self.budget:
                self.done = True
            else:
                self.todo = [j for j in range(self.n) if not self.terminal[j]]


class RefinedRunsGOLD(LiteralGOLD):
    """The tempting shortcut, *not* Alg. 1: communities = maximal overlapping runs of the current
    intervals, refined by the previous communities (so communities only split). It forgets which
    individual edges were removed: a removed edge whose intervals meet again still connects. Tests use
    it to show that the equivalence test can tell the difference."""

    def update(self, i: int, x: float) -> None:
        self.T += 1
        self.m[i] += 1
        self.s[i] += x
        if self.done:
            return
        if i in self.todo:
            self.todo.remove(i)
        if self.E is None:
            if not self.todo:
                self.E = np.zeros(self.n, dtype=np.int64)   # community labels
                self._refine()
                self.todo = list(range(self.n))
            return
        self._refine()
        for label in np.unique(self.E):
            comp = np.flatnonzero(self.E == label)
            if len(comp) < self.budget:
                for j in comp:
                    if not self.terminal[j]:
                        self.terminal[j] = True
                        self.S[j] = self.T
        if not self.todo:
            if self.terminal.sum() >= self.budget:
                self.done = True
            else:
                self.todo = [j for j in range(self.n) if not self.terminal[j]]

    def _refine(self) -> None:
        lo, hi = self._intervals()
        new = np.zeros(self.n, dtype=np.int64)
        nxt = 0
        for label in np.unique(self.E):
            members = np.flatnonzero(self.E == label)
            order = members[np.argsort(lo[members], kind="stable")]
            run_hi = np.maximum.accumulate(hi[order])
            for g in np.split(order, np.flatnonzero(lo[order][1:] > run_hi[:-1]) + 1):
                new[g] = nxt
                nxt += 1
        self.E = new

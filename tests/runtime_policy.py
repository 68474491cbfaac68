"""A small deterministic policy for the runtime tests (scheduler, daemon): any policy must plug in.

``PlanCheckingRR`` pulls arms round robin, ``need`` samples each; an arm is classified when it has
them (outlier iff its mean > ``cut``). It records every update and, with ``strict``, checks that each
reward it gets is for the arm its plan asked for (the scheduler's promise). Every ``pair_every``-th
plan step asks for a ``kind="pair"`` request with a request id, which must come back in ``update``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamarms.policies.base import Decision, Event, Policy, Request


class PlanCheckingRR(Policy):
    name = "plan-rr"

    def __init__(self, arms: Sequence[str], need: int = 20, cut: float = 0.5, strict: bool = True,
                 pair_every: int = 0) -> None:
        super().__init__(arms)
        self.need, self.cut, self.strict, self.pair_every = need, cut, strict, pair_every
        self.m = {a: 0 for a in self.arms}
        self.s = {a: 0.0 for a in self.arms}
        self.cur = 0
        self.steps = 0
        self.log: list[str] = []
        self.deferred: list[str] = []
        self.requests_seen: list[tuple[str, str, int | None]] = []

    # plan: round robin over arms that still need samples
    def _order(self) -> list[int]:
        n = len(self.arms)
        return [(self.cur + j) % n for j in range(n) if self.m[self.arms[(self.cur + j) % n]] < self.need]

    def _request(self, i: int, first: bool) -> Request:
        if first and self.pair_every and self.steps % self.pair_every == self.pair_every - 1:
            return Request(self.arms[i], kind="pair", request_id=self.steps)
        return Request(self.arms[i])

    def next_request(self) -> Request | None:
        o = self._order()
        return self._request(o[0], True) if o else None

    def wanted(self, k: int) -> list[Request]:
        o = self._order()[:k]
        return [self._request(i, j == 0) for j, i in enumerate(o)]

    def defer(self, arm: str) -> None:
        self.deferred.append(arm)
        o = self._order()
        if o and self.arms[o[0]] == arm:
            self.cur = (self.index[arm] + 1) % len(self.arms)

    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        i = self._arm_index(arm)
        x = self._finite(arm, reward)
        if self.strict:
            want = self.next_request()
            assert want is not None and want.arm == arm, f"got {arm}, plan wanted {want}"
            assert request == want, f"request {request} != planned {want}"
        if request is not None:
            self.requests_seen.append((request.arm, request.kind, request.request_id))
        self.log.append(arm)
        self.m[arm] += 1
        self.s[arm] += x
        self.steps += 1
        self.cur = (i + 1) % len(self.arms)  # one sample per turn
        if self.m[arm] == self.need:
            y = self.s[arm] / self.need
            return [Event(arm, "outlier" if y > self.cut else "normal", y, (y, y), self.cut,
                          (self.cut, self.cut), self.need, self.steps)]
        return []

    @property
    def done(self) -> bool:
        return all(v >= self.need for v in self.m.values())

    @property
    def pulls(self) -> int:
        return self.steps

    def decision(self) -> Decision:
        fin = [a for a in self.arms if self.m[a] >= self.need]
        out = [a for a in fin if self.s[a] / self.need > self.cut]
        return Decision(outliers=out, normals=[a for a in fin if a not in out],
                        undecided=[a for a in self.arms if a not in fin], estimated_outliers=out,
                        threshold=self.cut, threshold_interval=(self.cut, self.cut), pulls=self.steps,
                        done=self.done)

    def snapshot(self) -> dict[str, Any]:
        return {"arms": self.arms, "need": self.need, "cut": self.cut, "strict": self.strict,
                "pair_every": self.pair_every, "m": self.m, "s": self.s, "cur": self.cur, "steps": self.steps,
                "log": self.log, "deferred": self.deferred, "requests_seen": self.requests_seen}

    @classmethod
    def restore(cls, st: dict[str, Any]) -> PlanCheckingRR:
        p = cls(st["arms"], st["need"], st["cut"], st["strict"], st["pair_every"])
        p.m = {a: int(v) for a, v in st["m"].items()}
        p.s = {a: float(v) for a, v in st["s"].items()}
        p.cur, p.steps = int(st["cur"]), int(st["steps"])
        p.log = list(st["log"])
        p.deferred = list(st["deferred"])
        p.requests_seen = [tuple(r) for r in st["requests_seen"]]  # type: ignore[misc]
        return p

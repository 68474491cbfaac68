"""ADE's two kinds of open round: the threshold pairs in flight and the arms a sequential round still owes.

Zhang, Zhuang, Zhang, Zhou. *Adaptive Double-Exploration Tradeoff for Outlier Detection*. AAAI 2020
([ZZZZ20], Alg. 1); see :mod:`streamarms.policies.ade` for the algorithm and its streaming reading.
:class:`PendingPairs` holds the threshold samples (an arm drawn uniformly, pulled twice) that have been
asked for; complete pairs leave strictly in draw order, so the estimated pairs are always the first
``m_theta`` uniform draws whatever order the rewards arrive in. :class:`SequentialRound` holds the
candidates that a sequential round (one pull of every candidate) still needs. Neither decides which kind
of round comes next; both only book-keep the one that is open.

>>> import random
>>> pairs = PendingPairs(["a", "b"])
>>> pairs.draw(random.Random(1), 2)
>>> req = pairs.head(); req
Request(arm='a', kind='threshold', request_id=0)
>>> pairs.add_half(0, 1.0, req, 1.0), pairs.add_half(0, 0.0, req, 0.0)
((), [(1.0, 0.0)])
>>> rnd = SequentialRound(3); rnd.open([0, 2]); rnd.defer(0); rnd.wanted(5)
[2, 0]
>>> rnd.take(2), rnd.take(0), rnd.remaining
(True, True, 0)
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from typing import Any

from .base import Request

__all__ = ["THRESHOLD", "PendingPairs", "SequentialRound"]

#: the kind of ADE's threshold requests (both halves of a pair carry the pair's request id)
THRESHOLD = "threshold"


class PendingPairs:
    """Threshold pairs by request id: ``[arm index, x1 | None, x2 | None, Request]``, wanted in the
    order of ``wish`` (``defer`` moves an arm's pairs to the back), consumed in draw order."""

    def __init__(self, arms: Sequence[str]) -> None:
        self.arms = arms
        self.pairs: dict[int, list[Any]] = {}
        self.wish: list[int] = []          # pending request ids, most wanted first
        self.next_rid = 0
        self.next_proc_rid = 0             # the next pair to enter the estimates (draw order)

    def __len__(self) -> int:
        return len(self.pairs)

    def draw(self, rng: random.Random, n: int, front: bool = False) -> None:
        """A threshold sample: an arm uniformly at random from all ``n`` arms, to be pulled twice."""
        rid = self.next_rid
        self.next_rid += 1
        j = rng.randrange(n)
        self.pairs[rid] = [j, None, None, Request(self.arms[j], THRESHOLD, rid)]
        if front:
            self.wish.insert(0, rid)
        else:
            self.wish.append(rid)

    def head(self) -> Request:
        return self.pairs[self.wish[0]][3]

    def wanted(self, k: int) -> list[Request]:
        """Up to ``k`` requests for distinct arms, most wanted first."""
        out: list[Request] = []
        seen: set[int] = set()
        for rid in self.wish:
            j = self.pairs[rid][0]
            if j not in seen:
                seen.add(j)
                out.append(self.pairs[rid][3])
                if len(out) >= k:
                    break
        return out

    def defer(self, i: int) -> bool:
        """Move arm ``i``'s pairs to the back of the wish list; whether it had any."""
        rids = [r for r in self.wish if self.pairs[r][0] == i]
        for r in rids:
            self.wish.remove(r)
            self.wish.append(r)
        return bool(rids)

    def add_half(self, i: int, x: float, request: Request, raw: Any) -> Sequence[tuple[float, float]]:
        """Book reward ``x`` of arm ``i`` for ``request``'s pair (``ValueError``, nothing changed, if the
        request is not a pending pair of arm ``i``); the pairs now complete in draw order, removed."""
        rid = request.request_id
        pair = self.pairs.get(rid) if isinstance(rid, int) else None
        if pair is None:
            raise ValueError(f"reward for arm {self.arms[i]!r} (value {raw!r}) answers threshold request "
                             f"{rid!r}, which is not pending (already complete or never issued)")
        if pair[0] != i:
            raise ValueError(f"reward for arm {self.arms[i]!r} (value {raw!r}) answers threshold request "
                             f"{rid!r}, which asked for arm {self.arms[pair[0]]!r}")
        if pair[1] is None:
            pair[1] = x
            return ()
        pair[2] = x
        self.wish.remove(pair[3].request_id)
        nxt = self.next_proc_rid
        if rid != nxt:
            return ()
        pairs = self.pairs
        ready: list[tuple[float, float]] = []
        while True:
            done = pairs.pop(nxt)
            ready.append((done[1], done[2]))
            nxt += 1
            later = pairs.get(nxt)
            if later is None or later[2] is None:
                break
        self.next_proc_rid = nxt
        return ready

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": [[rid, p[0], p[1], p[2]] for rid, p in sorted(self.pairs.items())],
                "pair_wish": list(self.wish), "next_rid": self.next_rid, "next_proc_rid": self.next_proc_rid}

    def load(self, state: dict[str, Any]) -> None:
        self.pairs = {int(rid): [int(j), x1, x2, Request(self.arms[int(j)], THRESHOLD, int(rid))]
                      for rid, j, x1, x2 in state["pairs"]}
        self.wish = [int(r) for r in state["pair_wish"]]
        self.next_rid = int(state["next_rid"])
        self.next_proc_rid = int(state["next_proc_rid"])


class SequentialRound:
    """The candidates a sequential round still needs one sample of, in the order they are wanted.

    ``defer`` re-queues an arm at the back with a new token; queue entries whose token is not the arm's
    current one are stale and skipped.
    """

    def __init__(self, n: int) -> None:
        self.in_round = bytearray(n)
        self.queue: deque[tuple[int, int]] = deque()
        self.token: dict[int, int] = {}
        self.remaining = 0

    def open(self, cand: Sequence[int]) -> None:
        self.token.clear()
        self.queue = deque((i, 0) for i in cand)
        for i in cand:
            self.in_round[i] = 1
        self.remaining = len(cand)

    def _live(self, entry: tuple[int, int]) -> bool:
        i, tok = entry
        return bool(self.in_round[i]) and self.token.get(i, 0) == tok

    def head(self) -> int:
        q, in_round, token = self.queue, self.in_round, self.token  # hot: inline _live
        while True:
            i, tok = q[0]
            if in_round[i] and (not token or token.get(i, 0) == tok):
                return i
            q.popleft()

    def wanted(self, k: int) -> list[int]:
        """Up to ``k`` arms still owed, in queue order."""
        q = self.queue
        while q and not self._live(q[0]):
            q.popleft()
        out: list[int] = []
        for entry in q:
            if self._live(entry):
                out.append(entry[0])
                if len(out) >= k:
                    break
        return out

    def defer(self, i: int) -> None:
        if self.in_round[i]:
            tok = self.token.get(i, 0) + 1
            self.token[i] = tok
            self.queue.append((i, tok))

    def take(self, i: int) -> bool:
        """Arm ``i``'s sample of this round, if it still owed one (then ``True``)."""
        if not self.in_round[i]:
            return False
        self.in_round[i] = 0
        self.remaining -= 1
        return True

    def pending(self) -> list[int]:
        """The arms still owed, each once, in queue order (the snapshot)."""
        return list(dict.fromkeys(i for (i, tok) in self.queue if self._live((i, tok))))

    def load(self, pending: Sequence[int]) -> None:
        self.in_round = bytearray(len(self.in_round))
        self.token = {}
        self.queue = deque((int(i), 0) for i in pending)
        for i, _ in self.queue:
            self.in_round[i] = 1
        self.remaining = len(self.queue)

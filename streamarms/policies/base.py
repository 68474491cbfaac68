"""The policy interface every streamarms policy implements.

A policy is a pure state machine over arms named by string keys: it says which arm it wants next
(:meth:`Policy.next_request`), ingests rewards (:meth:`Policy.update`), reports classifications as
soon as they are certain (:class:`Event`), and gives its current answer (:meth:`Policy.decision`).
It does no I/O, reads no clock and uses no global random state: randomised policies take a seed and
keep their own ``random.Random``. Its whole state can be written to plain JSON-able data with
:meth:`Policy.snapshot` and restored with :meth:`Policy.restore`.

Streaming contract (used by the scheduler):

* ``update`` accepts a reward for *any* known arm, not only the one last requested. Fixed-confidence
  guarantees of the k-sigma, GOLD and robust policies hold whatever the sampling order, as long as the
  order does not depend on the reward values; only the efficiency depends on following the plan.
* ``wanted(k)`` lists up to ``k`` distinct arms the policy would like next, most wanted first, so a
  passive scheduler can keep a window of outstanding wants.
* ``defer(arm)`` tells the policy that a wanted arm is not available now (no record arrived in
  time); the policy re-plans and never waits on that arm forever.
* A request may carry a ``kind`` (e.g. ADE's paired ``"threshold"`` samples). Such a request must be
  answered by passing it back to ``update(arm, reward, request=...)``.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..validation import finite_reward

__all__ = ["Request", "Event", "Decision", "Policy", "arm_indices", "arm_list"]


@dataclass(frozen=True)
class Request:
    """A wish of the policy: one sample of ``arm``.

    ``kind`` is ``"arm"`` for an ordinary sample; policies that need samples for another purpose
    (ADE's threshold pairs) set their own kind and ``request_id`` and expect the request back in
    :meth:`Policy.update`.

    >>> Request("3")
    Request(arm='3', kind='arm', request_id=None)
    """

    arm: str
    kind: str = "arm"
    request_id: int | None = None


@dataclass(frozen=True)
class Event:
    """An arm classified with confidence during a run.

    ``kind`` is ``"outlier"`` or ``"normal"``. Under the same good event that makes the final answer
    correct (probability >= 1 - delta), every event is already correct, so it can be acted on at once.

    >>> Event("7", "outlier", estimate=0.9, interval=(0.85, 0.95), threshold=0.5,
    ...       threshold_interval=(0.45, 0.55), samples=120, pulls=4000).kind
    'outlier'
    """

    arm: str
    kind: str
    estimate: float
    interval: tuple[float, float]
    threshold: float | None
    threshold_interval: tuple[float, float] | None
    samples: int
    pulls: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Decision:
    """A policy's answer at a moment of its run.

    * ``outliers`` / ``normals``: arms classified with confidence (for a finished fixed-confidence run,
      ``outliers`` is the paper's returned set);
    * ``undecided``: arms not yet classified with confidence;
    * ``estimated_outliers``: the plug-in answer from the current estimates (the paper's output when a
      run is forced to stop at a pull cap);
    * ``threshold`` and ``threshold_interval``: the estimated outlier threshold and its confidence
      interval (for two-sided rules, the upper one; ``extra["lower_threshold"]`` has the other);
    * ``ranking``: arms, most outlying first, for policies that rank;
    * ``pulls``: total samples used; ``done``: the stopping rule has fired.

    >>> d = Decision(outliers=["1"], normals=["0"], undecided=[], estimated_outliers=["1"],
    ...              threshold=0.5, threshold_interval=(0.4, 0.6), pulls=10, done=True)
    >>> d.outliers
    ['1']
    """

    outliers: list[str]
    normals: list[str]
    undecided: list[str]
    estimated_outliers: list[str]
    threshold: float | None
    threshold_interval: tuple[float, float] | None
    pulls: int
    done: bool
    ranking: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def arm_list(arms: Sequence[str]) -> list[str]:
    """``arms`` as a list; a string is refused (``"abc"`` was the arms ``a``, ``b`` and ``c``)."""
    if isinstance(arms, (str, bytes)):
        raise ValueError(f"arms must be a sequence of keys, got the string {arms[:40]!r}: one arm is [{arms[:40]!r}]")
    return list(arms)


class Policy(ABC):
    """Base class of every pure-exploration policy.

    Subclasses set ``name`` (the CLI name) and implement the abstract methods. Arms are given as a
    sequence of distinct string keys and fixed for the life of the policy (an episode).
    """

    name: ClassVar[str] = "policy"

    def __init__(self, arms: Sequence[str]) -> None:
        arms = [str(a) for a in arm_list(arms)]
        if len(arms) == 0:
            raise ValueError("a policy needs at least one arm")
        if len(set(arms)) != len(arms):
            dup = sorted({a for a in arms if arms.count(a) > 1})
            raise ValueError(f"arm names must be distinct; repeated: {dup[:5]}")
        self.arms: list[str] = arms
        self.index: dict[str, int] = {a: i for i, a in enumerate(arms)}

    @property
    def dated_at_start(self) -> bool:
        """``False``: the episode is dated later by what runs it (its ``--episode-timeout`` and the next start
        count from then): a group's announcement, at the group's start (:mod:`streamarms.group_member`)."""
        return True

    # -- helpers for subclasses ------------------------------------------------------------------
    def _arm_index(self, arm: str) -> int:
        try:
            return self.index[arm]
        except KeyError:
            raise ValueError(f"unknown arm {arm!r}: this policy's arms are fixed at construction "
                             f"({len(self.arms)} arms)") from None

    #: the reward as a float, or ``ValueError`` naming the arm and the value
    _finite = staticmethod(finite_reward)

    @classmethod
    def _unit_test_params(cls) -> list[dict[str, Any]]:
        """Parameter sets the conformance suite (:mod:`streamarms.checks`) builds the policy with, on
        arms with 0/1 rewards (default: the defaults)."""
        return [{}]

    # -- the interface ---------------------------------------------------------------------------
    @abstractmethod
    def next_request(self) -> Request | None:
        """The sample the policy wants next, or ``None`` when it wants nothing (done)."""

    def wanted(self, k: int) -> list[Request]:
        """Up to ``k`` requests the policy would like next, most wanted first (default: one)."""
        r = self.next_request()
        return [] if r is None else [r]

    def defer(self, arm: str) -> None:
        """The wanted ``arm`` cannot be sampled now: re-plan without it (default: nothing)."""

    @abstractmethod
    def update(self, arm: str, reward: float, request: Request | None = None) -> list[Event]:
        """Ingest one reward of ``arm``; return the classifications it made certain.

        Raises ``ValueError`` naming the arm and value for an unknown arm or a reward the reward
        model refuses; the policy's state is then unchanged.
        """

    @property
    @abstractmethod
    def done(self) -> bool:
        """Whether the stopping rule has fired."""

    @abstractmethod
    def decision(self) -> Decision:
        """The current answer (see :class:`Decision`)."""

    @property
    @abstractmethod
    def pulls(self) -> int:
        """Total rewards ingested."""

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """The full state as plain JSON-able data (``restore`` rebuilds an equal policy)."""

    @classmethod
    @abstractmethod
    def restore(cls, state: dict[str, Any]) -> Policy:
        """Rebuild a policy from :meth:`snapshot` output. A snapshot that is not one this policy wrote (a
        field missing, of another type, out of range, inconsistent with the others) raises ``ValueError``
        naming the field, never another exception, and never restores a policy that fails later: read it
        with :class:`streamarms.policies.snapshot_fields.Fields` under ``@guarded``
        (``streamarms.checks`` tries forged snapshots on every policy)."""

    def arm_evidence(self, arm: str) -> dict[str, Any] | None:
        """Arm ``arm``'s ``estimate``, confidence ``interval`` and ``samples`` now, for explanations
        (``streamarms explain``); ``None`` when the policy does not expose them (the default)."""
        return None

    @classmethod
    def _check_snapshot(cls, state: dict[str, Any]) -> None:
        """``ValueError`` unless ``state`` is a snapshot of this policy (for :meth:`restore`; the field by
        field reading: :class:`streamarms.policies.snapshot_fields.Fields`, ``Fields(state, policy=cls.name)``
        does this check too)."""
        if not isinstance(state, dict) or state.get("policy") != cls.name:
            got = state.get("policy") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"snapshot is of policy {got!r}, not {cls.name!r}")

    def update_batch(self, arms: Sequence[int], rewards: Sequence[float]) -> tuple[int, list[Event]]:
        """Ingest rewards in order (``arms[j]``: an index into :attr:`arms`) until one makes events.

        Returns ``(n, events)``: the first ``n`` rewards were ingested, exactly as ``n`` calls of
        :meth:`update` would have, and ``events`` are those of the ``n``-th -- the batch stops right
        after a reward with events or that makes the policy done (the caller emits them at that
        reward's time, ends the episode, or calls again with the rest). ``n < len(rewards)`` with no events means reward ``n`` is refused: the caller
        asks :meth:`update` for the error (the state is unchanged). An index that is not one of
        :attr:`arms` (negative, too large, not an integer) or a count of indices other than of rewards
        refuses the whole batch with ``ValueError`` before anything is ingested (:func:`arm_indices`,
        one vectorised check: ``-1`` is no "last arm" here). Default: :meth:`update` one by
        one; a policy whose state depends only on per-arm counts and sums overrides it to skip ahead
        with numpy (``AnytimeKSigma``).

        >>> from streamarms.policies.ksigma import WeightedRoundRobin
        >>> p = WeightedRoundRobin(["a", "b", "c"], k=2.0, delta=0.1)
        >>> p.update_batch([0, 1, 2, 0], [1.0, 0.0, 1.0, 5.0]), p.pulls
        ((3, []), 3)
        """
        arm_indices(arms, len(self.arms), len(rewards))
        return self._update_each(arms, rewards)

    def _update_each(self, arms: Sequence[int], rewards: Sequence[float]) -> tuple[int, list[Event]]:
        """:meth:`update_batch` by :meth:`update`, reward by reward (the indices already checked)."""
        names, was_done = self.arms, self.done
        for j in range(len(rewards)):
            try:
                events = self.update(names[arms[j]], rewards[j])
            except ValueError:
                return j, []
            if events or (self.done and not was_done):
                return j + 1, events
        return len(rewards), []

    def feed(self, samples: Iterable[tuple[str, float]]) -> list[Event]:
        """Ingest several ``(arm, reward)`` pairs; return all events."""
        events: list[Event] = []
        for arm, x in samples:
            events.extend(self.update(arm, x))
        return events

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_arms={len(self.arms)}, pulls={self.pulls}, done={self.done})"


_INT = {int}


def arm_indices(arms: Sequence[int], n_arms: int, n_rewards: int) -> Sequence[int] | np.ndarray:
    """``arms`` (:meth:`Policy.update_batch`'s indices) after one vectorised check: one integer per reward,
    each in ``[0, n_arms)``; else ``ValueError`` naming the first bad index and its position (nothing is
    ingested). Returns a numpy array, or the list itself when it is a list of valid ints.

    >>> arm_indices([2, 0], 3, 2), arm_indices(np.array([2, 0]), 3, 2).tolist()
    ([2, 0], [2, 0])
    >>> arm_indices([0, -1], 3, 2)
    Traceback (most recent call last):
    ...
    ValueError: update_batch: arm index -1 (position 1) is not one of the policy's 3 arms (0 to 2)
    """
    if type(arms) is list and len(arms) == n_rewards and (not arms or set(map(type, arms)) == _INT):
        # the scheduler's lists of ints, checked by C loops (type, min, max) without numpy's conversion,
        # which costs more than the update of a short batch; anything else takes the numpy check below
        if not arms or (min(arms) >= 0 and max(arms) < n_arms):
            return arms  # (a list of valid indices serves as well)
    try:
        a = np.asarray(arms)
    except (TypeError, ValueError, OverflowError):  # (a ragged list, say)
        a = np.asarray([None], dtype=object)
    if a.ndim != 1 or len(a) != n_rewards:
        raise ValueError(f"update_batch needs one arm index per reward, got {len(arms)} indices for "
                         f"{n_rewards} rewards")
    if not a.size:
        return a
    if a.dtype.kind not in "iu":  # floats, strings, None, huge ints; booleans alone (a mask, not indices --
        # a bool among ints is its int, as in Python)
        j = next((j for j, v in enumerate(arms) if isinstance(v, bool) or not isinstance(v, numbers.Integral)
                  or not -(1 << 62) < v < (1 << 62)), 0)
        raise ValueError(f"update_batch: arm index {arms[j]!r} (position {j}) is not an integer")
    bad = (a < 0) | (a >= n_arms)
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(f"update_batch: arm index {int(a[j])} (position {j}) is not one of the policy's "
                         f"{n_arms} arms (0 to {n_arms - 1})")
    return a

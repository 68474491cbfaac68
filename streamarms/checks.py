"""One conformance suite for every policy, in the manner of ``river.checks``.

:func:`yield_checks` yields the checks that apply to a policy class; :func:`check_policy` runs them all
for every parameter set of the class's ``_unit_test_params()`` (a classmethod of
:class:`~streamarms.policies.base.Policy`, ``[{}]`` by default; a family that needs parameters, such
as a threshold or a budget, overrides it). Every check drives the policy with seeded 0/1 rewards
(12 arms: ten with mean 0.1, two outliers at 0.9 and 0.8) in the order the policy asks for them:

* snapshot -> JSON -> restore mid-run, then the restored copy continues exactly as the original
  (same requests, same events, same final snapshot);
* a bad reward (NaN, infinity, an integer too large for a float, an unknown arm) raises
  ``ValueError`` naming the arm and changes nothing (the snapshot is equal before and after);
* ``update_batch`` with an index that is not an arm's (``-1``, ``n``, ``1.5``, a name, ``True``) or
  a count of indices other than of rewards raises ``ValueError`` and changes nothing;
* a forged snapshot (a field deleted, of another type, out of range) is refused by ``restore`` with
  ``ValueError``, or restores into a policy that runs; another policy's name or one arm fewer is refused;
* ``wanted(k)`` lists distinct arms, the first being ``next_request()``;
* random ``defer`` never stalls: while the policy is not done it always has a request;
* the same parameters and the same rewards give the same run;
* decision invariants: outliers, normals and undecided are disjoint arms of the policy, ``pulls``
  agrees, and a done decision comes from a done policy.

>>> from streamarms.policies.ksigma import RoundRobin
>>> [c.__name__ for c in yield_checks(RoundRobin)][:2]
['check_snapshot_restore_continues', 'check_bad_reward_changes_nothing']
>>> check_policy(RoundRobin)
"""

from __future__ import annotations

import copy
import json
import math
import random
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from .policies.base import Policy

__all__ = ["yield_checks", "check_policy"]

MEANS = [0.1] * 10 + [0.9, 0.8]
ARMS = [f"a{i}" for i in range(len(MEANS))]
MAX_PULLS = 10_000

Check = Callable[[type[Policy], dict[str, Any]], None]


class _Rewards:
    """Seeded 0/1 rewards, one stream per arm: the j-th reward of an arm is the same in every copy."""

    def __init__(self, seed: int) -> None:
        self.rngs = {a: random.Random(seed * 1000 + i) for i, a in enumerate(ARMS)}

    def __call__(self, arm: str) -> float:
        return 1.0 if self.rngs[arm].random() < MEANS[ARMS.index(arm)] else 0.0


def _step(policy: Policy, rewards: _Rewards) -> tuple[Any, ...] | None:
    """One request answered; what happened (for comparing two runs), or ``None`` when done."""
    if policy.done:
        return None
    r = policy.next_request()
    if r is None:
        return None
    x = rewards(r.arm)
    events = policy.update(r.arm, x, r)
    return (r.arm, r.kind, x, [e.to_dict() for e in events])


def _run(policy: Policy, rewards: _Rewards, pulls: int) -> list[tuple[Any, ...]]:
    out = []
    for _ in range(pulls):
        s = _step(policy, rewards)
        if s is None:
            break
        out.append(s)
    return out


def _state(policy: Policy) -> str:
    return json.dumps(policy.snapshot(), sort_keys=True)


def check_snapshot_restore_continues(cls: type[Policy], params: dict[str, Any]) -> None:
    a, ra = cls(ARMS, **params), _Rewards(1)
    _run(a, ra, 157)
    b = cls.restore(json.loads(json.dumps(a.snapshot())))
    assert _state(b) == _state(a), "restore(snapshot) differs from the policy"
    rb = copy.deepcopy(ra)
    assert _run(a, ra, MAX_PULLS) == _run(b, rb, MAX_PULLS), "the restored policy continues differently"
    assert _state(a) == _state(b)
    assert a.decision().to_dict() == b.decision().to_dict()


def check_bad_reward_changes_nothing(cls: type[Policy], params: dict[str, Any]) -> None:
    p = cls(ARMS, **params)
    _run(p, _Rewards(2), 40)
    before = _state(p)
    bad: list[tuple[str, Any]] = [(ARMS[0], math.nan), (ARMS[1], math.inf), (ARMS[2], 10 ** 400), ("no-such-arm", 1.0),
                                  (ARMS[0], "1"), (ARMS[1], True), (ARMS[2], b"0")]  # (a str or a bool: no number)
    for arm, x in bad:
        try:
            p.update(arm, x)
        except ValueError as e:
            assert repr(arm) in str(e) or arm in str(e), f"the error does not name the arm: {e}"
        else:
            raise AssertionError(f"update({arm!r}, {x!r}) did not raise ValueError")
        assert _state(p) == before, f"update({arm!r}, {x!r}) changed the state"


def check_update_batch_refuses_bad_indices(cls: type[Policy], params: dict[str, Any]) -> None:
    p = cls(ARMS, **params)
    _run(p, _Rewards(2), 40)
    before = _state(p)
    n = len(ARMS)
    bad: list[tuple[list[Any], list[float]]] = [([-1], [1.0]), ([n], [1.0]), ([0, 1.5], [1.0, 0.0]),
                                                ([0, "a1"], [1.0, 0.0]), ([True], [1.0]), ([0, 1], [1.0])]
    for arms, rewards in bad:
        try:
            p.update_batch(arms, rewards)
        except ValueError:
            pass
        else:
            raise AssertionError(f"update_batch({arms!r}, {rewards!r}) did not raise ValueError")
        assert _state(p) == before, f"update_batch({arms!r}, {rewards!r}) changed the state"
    if not p.done:  # a reward too large for a float is refused like any other: counted, not raised
        k, _ = p.update_batch([0, 1], [1.0, 10 ** 400])
        assert k <= 1, f"update_batch ingested a reward of 10**400 ({k} of 2 taken)"


def _forgeries(snap: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Copies of ``snap`` with one field changed (``(what, copy)``): each field of every object, and the
    first entry of every list, deleted or replaced by a value of another kind or out of range."""
    items: list[tuple[Any, Any]] = (list(snap.items()) if isinstance(snap, dict) else
                                    [(0, snap[0])] if isinstance(snap, list) and snap else [])
    for key, value in items:
        here = (*path, key)
        if isinstance(value, bool):
            swaps: list[Any] = ["yes"]
        elif isinstance(value, (int, float)):
            swaps = [-7, math.nan, 1e300, "x", 2.5, None]
        elif isinstance(value, list):
            swaps = ["pop", [], None]
        elif isinstance(value, str):
            swaps = ["zzz", 3]
        else:
            swaps = [{}] if isinstance(value, dict) else []
        for new in ["del", *swaps]:
            forged = copy.deepcopy(snap)
            if new == "del":
                del forged[key]
            elif new == "pop":
                if not value:
                    continue
                forged[key].pop()
            else:
                forged[key] = new
            yield "/".join(map(str, here)) + f": {new!r}", forged
        for what, inner in _forgeries(value, here):
            forged = copy.deepcopy(snap)
            forged[key] = inner
            yield what, forged


def check_restore_refuses_forged_snapshots(cls: type[Policy], params: dict[str, Any]) -> None:
    """A snapshot with one field deleted, of another type or out of range: ``restore`` raises ``ValueError``,
    or the restored policy runs (no raw ``KeyError``/``TypeError``, no policy that fails pulls later).
    Another policy's name and an arms list one shorter are always refused."""
    p = cls(ARMS, **params)
    _run(p, _Rewards(7), 157)
    snap = json.loads(json.dumps(p.snapshot()))
    must = []
    if "policy" in snap:
        must.append(("policy: another", dict(snap, policy="zzz")))
    if isinstance(snap.get("arms"), list):
        must.append(("arms: one shorter", dict(snap, arms=snap["arms"][:-1])))
    for what, forged in must:
        try:
            cls.restore(forged)
        except ValueError:
            continue
        raise AssertionError(f"restore accepted a snapshot with {what}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (a huge but legal k overflows a radius: inf)
        for what, forged in _forgeries(snap):
            _restore_and_run(cls, what, forged)


def _restore_and_run(cls: type[Policy], what: str, forged: Any) -> None:
    """Restore ``forged``; unless refused (``ValueError``), run the policy a little (``AssertionError`` if
    either raises anything else)."""
    try:
        q = cls.restore(forged)
    except ValueError:
        return
    except Exception as e:
        raise AssertionError(f"restore of a snapshot with {what} raised {type(e).__name__}: {e}") from e
    try:
        rng = random.Random(3)
        for _ in range(60):
            r = q.next_request()
            if r is None:
                break
            q.update(r.arm, float(rng.random() < 0.5), r)
        q.decision()
        q.wanted(4)
        q.defer(q.arms[0])
        json.dumps(q.snapshot())
    except Exception as e:
        raise AssertionError(f"a snapshot with {what} was restored, then the policy failed: "
                             f"{type(e).__name__}: {e}") from e


def check_wanted_head_is_next_request(cls: type[Policy], params: dict[str, Any]) -> None:
    p, rewards = cls(ARMS, **params), _Rewards(3)
    for _ in range(50):
        if p.done:
            break
        w = p.wanted(5)
        arms = [r.arm for r in w]
        assert len(arms) == len(set(arms)) <= 5, f"wanted(5) repeats arms: {arms}"
        head = p.next_request()
        assert (head is None) == (not w), "wanted() and next_request() disagree on wanting something"
        if head is not None:
            assert (w[0].arm, w[0].kind) == (head.arm, head.kind), f"wanted head {w[0]} != next_request {head}"
        _step(p, rewards)


def check_defer_never_stalls(cls: type[Policy], params: dict[str, Any]) -> None:
    p, rewards, rng = cls(ARMS, **params), _Rewards(4), random.Random(4)
    for _ in range(3_000):
        if p.done:
            return
        r = p.next_request()
        assert r is not None, "not done, yet no request"
        if rng.random() < 0.3:
            p.defer(r.arm)
            assert p.done or p.next_request() is not None, f"defer({r.arm!r}) left no request"
            continue
        p.update(r.arm, rewards(r.arm), r)


def check_same_parameters_same_run(cls: type[Policy], params: dict[str, Any]) -> None:
    a, b = cls(ARMS, **params), cls(ARMS, **params)
    assert _run(a, _Rewards(5), 2_000) == _run(b, _Rewards(5), 2_000)
    assert _state(a) == _state(b)


def check_decision_invariants(cls: type[Policy], params: dict[str, Any]) -> None:
    p, rewards = cls(ARMS, **params), _Rewards(6)
    for pulls in (0, 20, 500, MAX_PULLS):
        _run(p, rewards, pulls)
        d = p.decision()
        o, n, u = set(d.outliers), set(d.normals), set(d.undecided)
        assert not (o & n or o & u or n & u), f"outliers/normals/undecided overlap: {d}"
        assert o | n | u <= set(ARMS), "the decision names arms the policy does not have"
        assert d.pulls == p.pulls, f"decision pulls {d.pulls} != policy pulls {p.pulls}"
        assert not d.done or p.done, "a done decision from a policy that is not done"


def yield_checks(cls: type[Policy]) -> Iterator[Check]:
    """The checks for a policy class (all of them apply to every policy)."""
    yield check_snapshot_restore_continues
    yield check_bad_reward_changes_nothing
    yield check_update_batch_refuses_bad_indices
    yield check_restore_refuses_forged_snapshots
    yield check_wanted_head_is_next_request
    yield check_defer_never_stalls
    yield check_same_parameters_same_run
    yield check_decision_invariants


def check_policy(cls: type[Policy]) -> None:
    """Run every check on ``cls`` for each of its ``_unit_test_params()``; raise on the first failure."""
    for params in cls._unit_test_params():
        for check in yield_checks(cls):
            check(cls, dict(params))

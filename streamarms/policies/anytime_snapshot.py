"""Restoring :class:`~streamarms.policies.anytime.AnytimeKSigma` (and its group member) from a snapshot.

Every field is checked as it is read (:class:`~streamarms.policies.snapshot_fields.Fields`): ``k``,
``delta`` and ``arm_share`` as the constructor checks them, one confidence sequence per arm with the
policy's own settings, the classifications ``-1 / 0 / 1`` agreeing with ``n_undecided``, ``T`` the sum of
the arms' counts (of a policy alone), the threshold track of the policy's arms, ``k``, ``alpha`` and sides with ``m_theta`` no
more than every arm's count. A forged or damaged snapshot is refused with a ``ValueError`` naming the
field instead of restoring a policy that fails later. Kept apart from the class (at the size limit).
"""

from __future__ import annotations

import math
from typing import Any, cast

from ..confidence.factory import sequence_for
from ..confidence.threshold import INFINITE_TOTALS, ThresholdTrack
from ..models import RewardModel, SubGaussianModel, model_from_dict
from ..validation import check_ksigma_params
from .base import Policy
from .snapshot_fields import Fields

__all__ = ["restore_arms", "restore_track", "track_range"]


def restore_arms(cls: Any, state: Any, n: int | None = None) -> tuple[Any, Fields]:
    """Everything of a snapshot but the threshold track, with ``n`` arms behind the per-arm alpha (default:
    the snapshot's arms), and the snapshot's fields."""
    f = Fields(state, policy=cls.name)
    arms = f.arms()
    alone = n is None  # (a group member's arms may hold samples of partitions taken over from others)
    n = len(arms) if n is None else n
    obj = cls.__new__(cls)
    Policy.__init__(obj, arms)
    k, delta, arm_share = f.number("k"), f.number("delta"), f.number("arm_share")
    with f.part("k"):
        check_ksigma_params(k, delta, n)
    if not 0 < arm_share < 1:
        raise f.fail("arm_share", f"must be in (0, 1), got {arm_share!r}")
    obj.k, obj.delta, obj.two_sided, obj.arm_share = k, delta, f.flag("two_sided"), arm_share
    with f.part("model"):
        obj.model = model_from_dict(f.raw("model"))
    obj.alpha_arm = obj.arm_share * obj.delta / n
    obj.alpha_theta = (1.0 - obj.arm_share) * obj.delta
    with f.part("model"):
        template = sequence_for(obj.model, obj.alpha_arm, arms[0])
    obj.cs = f.sequences("cs", template, obj.model.low, obj.model.high)
    obj.state = f.sequence("state")
    bad = next((j for j, v in enumerate(obj.state) if type(v) is not int or v not in (-1, 0, 1)), None)
    if bad is not None:
        raise f.fail("state", f"entry {bad} must be -1, 0 or 1, got {obj.state[bad]!r}")
    obj.n_undecided = f.integer("n_undecided", high=len(arms))
    if obj.n_undecided != obj.state.count(0):
        raise f.fail("n_undecided", f"is {obj.n_undecided}, but {obj.state.count(0)} arms are undecided")
    obj.T, obj.ignored = f.integer("T"), f.integer("ignored")
    if alone:
        f.total("T", obj.T, [c.m for c in obj.cs])
    obj.key = f.numbers("key", finite=False)
    obj.deferred = f.indices("deferred", distinct=True)
    # absent in a snapshot from before the sums of squares
    obj.q = None if f.raw("q", None) is None else f.numbers("q", low=0.0)
    return obj, f


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


def track_range(model: RewardModel) -> dict[str, Any]:
    """The threshold track's reward range of ``model`` (``low``/``high``, or ``sigma_x``): the constructor's
    and the restore's (which compares a snapshot's track with it)."""
    if model.name in ("bernoulli", "bounded"):
        return {"low": model.low, "high": model.high}
    if model.name == "subgaussian":
        return {"sigma_x": cast(SubGaussianModel, model).sigma}
    return {}


def restore_track(obj: Any, f: Fields) -> None:
    """The threshold track: the policy's own (its arms, k, alpha, sides, reward range), ``m_theta`` reached by
    every arm, its per-level totals and its results numbers."""
    t = f.sub("track")
    levels = t.raw("totals")
    if not isinstance(levels, dict):
        raise t.fail("totals", f"must be an object, got {type(levels).__name__}")
    for g in levels:
        if not (isinstance(g, str) and g.isdigit()):
            raise t.fail("totals", f"has a level that is not an integer: {g!r}")
        tg = Fields(levels, where=t.name("totals."))
        for i, x in enumerate(tg.numbers(g, None, finite=False)):
            if math.isinf(x) and INFINITE_TOTALS.get(i) != math.copysign(1.0, x):
                raise tg.fail(g, f"entry {i} must be a finite number, got {x!r}")
    results = t.sub("result")
    for key, v in results.state.items():
        results.numbers(key, 2, finite=False) if isinstance(v, list) else results.number(key, finite=False)
    with f.part("track"):
        track = ThresholdTrack.restore(t.state)
    want = {"n": len(obj.arms), "k": obj.k, "alpha": obj.alpha_theta, "two_sided": obj.two_sided,
            "low": None, "high": None, "sigma_x": None, **track_range(obj.model)}
    if t.flag("bernoulli", default=False) and obj.model.name != "bernoulli":  # (False: a track from before the
        raise t.fail("bernoulli", f"is true, but the policy's rewards are {obj.model.name}")  # Bernoulli proxy)
    for key, v in want.items():
        got = t.raw(key)
        if not (got == v and type(got) is type(v) or (isinstance(v, float) and isinstance(got, (int, float))
                                                      and not isinstance(got, bool) and math.isclose(got, v))):
            raise t.fail(key, f"is {_short(got)}, the policy's is {v!r}")
    m_min = min(c.m for c in obj.cs)
    if not (type(track.m_theta) is int and 0 <= track.m_theta <= m_min):
        raise t.fail("m_theta", f"({track.m_theta!r}) is not a level every arm has reached (the least count is {m_min})")
    obj.track = track

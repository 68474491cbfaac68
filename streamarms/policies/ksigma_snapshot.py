"""Restoring the k-sigma policies (:mod:`streamarms.policies.ksigma`: RR, WRR, NRR) from a snapshot.

Every field is checked as it is read (:class:`~streamarms.policies.snapshot_fields.Fields`): the
parameters go through the constructor (the same checks as a new policy), per-arm lists must have
one entry per arm, counts be non-negative integers adding up to ``T``, each arm's sum lie within
``[low m_i, high m_i]`` of a bounded reward model, the cursor and the certificate's arms be arm
indices. A forged or damaged snapshot is refused with a ``ValueError`` naming the field, instead of
restoring a policy that fails later. Snapshots of every earlier version restore: the fields added
since the first one (``ignored_after_done``, ``transformed``, ``check``) are optional.

These functions read and write the policy's own state (one concept: the policy's restore), kept
apart so that the policy classes stay a screenful of rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..models import model_from_dict
from .snapshot_fields import Fields

__all__ = ["construct", "load_base_state", "load_check", "load_schedule", "load_naive"]

#: the smallest ``ctx_T`` a snapshot holds (``ksigma_batch.CTX_LAZY``)
_CTX_LAZY = -2


def construct(cls: Any, state: Any) -> tuple[Any, Fields]:
    """A new policy of class ``cls`` with the snapshot's arms and parameters, and its fields."""
    f = Fields(state, policy=cls.__name__)
    arms = f.arms()
    params = f.sub("params")
    kw = dict(params.state)
    with params.part("model"):
        kw["model"] = model_from_dict(params.raw("model"))
    kw["k"], kw["delta"] = params.number("k"), params.number("delta")
    kw["two_sided"] = params.flag("two_sided", default=False)
    with f.part("params"):  # the constructor's own checks (k > 0, delta in (0, 1), rho >= 1, ...)
        pol = cls(arms, **kw)
    return pol, f


def load_base_state(pol: Any, f: Fields) -> None:
    """The counts, sums and cursor every k-sigma policy has."""
    m = f.counts("m")
    s = f.numbers("s")
    if not getattr(pol.model, "transforms", False):  # (TEA's sums are of truncated rewards)
        f.sums_within("s", m, s, pol.model.low, pol.model.high)
    T = f.integer("T")
    f.total("T", T, m)
    pol.m, pol.s = m, s
    pol._m_np = np.array(m, dtype=float)
    pol._s_np = np.array(s, dtype=float)
    pol.T = T
    pol._cur = f.index("cur")
    pol._done = f.flag("done")
    pol._ignored_after_done = f.integer("ignored_after_done", default=0)
    pol._transformed = f.integer("transformed", high=T, default=0)
    pol._n_unpulled = m.count(0)
    sums = f.numbers("sums", 3)
    pol._resync_sums()  # the exact running sums, to compare: the stored ones only drift by rounding
    for j, (got, exact) in enumerate(zip(sums, (pol._sy, pol._syy, pol._sinv))):
        if abs(got - exact) > 1e-6 * (pol.n + abs(exact)):
            raise f.fail("sums", f"entry {j} ({got!r}) is not the running sum of the counts and sums ({exact!r})")
    pol._sy, pol._syy, pol._sinv = sums


def load_check(pol: Any, f: Fields) -> None:
    """RR's and WRR's reported arms and the incremental stopping check's state (``check``; absent in a
    snapshot from before it: the next pull then runs a full check)."""
    n = pol.n
    pol._reported = bytearray(f.counts("reported", high=1))
    if f.raw("check", None) is None:
        if pol.initialised and not pol._done:
            if pol._radius_kind != "mcdiarmid":
                pol._open_window()
            pol._cert_idx = []
        return
    c = f.sub("check")
    pol._events_total = c.integer("events_total")
    pol._cert_idx = c.indices("cert_idx")
    pol._cert_val = c.numbers("cert_val", len(pol._cert_idx))
    pol._cert_ptr = c.integer("cert_ptr", high=len(pol._cert_idx))
    pol._cert_hi0, pol._cert_lo0 = c.number("cert_hi0"), c.number("cert_lo0")
    pol._pulled_since = set(c.indices("pulled_since"))
    pol._win_lo = c.integer("win_lo")
    pol._win_hi = c.integer("win_hi", low=pol._win_lo)
    rad = {}
    for name in ("rad_lo", "rad_hi"):
        size = len(c.sequence(name, None))
        rad[name] = c.numbers(name, n if size else 0, finite=False)  # empty until a window opens
    if pol._win_hi and pol._radius_kind != "mcdiarmid" and not (rad["rad_lo"] and rad["rad_hi"]):
        raise c.fail("rad_lo", "is empty, but a z window is open (win_hi > 0)")
    if pol._win_hi:  # the radius functions of the open z window
        pol._rfn_lo = pol.model.radius_fn(pol.significance(max(pol._win_lo, 1)))
        pol._rfn_hi = pol.model.radius_fn(pol.significance(pol._win_hi))
    pol._ctx_T = c.integer("ctx_T", low=_CTX_LAZY)
    pol._ctx = tuple(c.numbers("ctx", 7, finite=False))
    pol._rad_lo, pol._rad_hi = rad["rad_lo"], rad["rad_hi"]
    pol._bsums = c.numbers("bsums", 8, finite=False)
    lti = c.raw("last_threshold_interval")
    pol._last_threshold_interval = None if lti is None else tuple(c.numbers("last_threshold_interval", 2,
                                                                            finite=False))


def load_schedule(pol: Any, f: Fields) -> None:
    """WRR's per-arm pull targets ``c``."""
    pol.c = f.numbers("c", low=0.0)


def load_naive(pol: Any, f: Fields) -> None:
    """NRR's last change and previous thresholds."""
    pol._last_change = f.integer("last_change", high=pol.T)
    pol._theta_prev = tuple(f.numbers("theta_prev", 2))
    pol._sorted = sorted((pol.s[i] / pol.m[i], i) for i in range(pol.n) if pol.m[i])

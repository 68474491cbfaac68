"""The conformance suite (streamarms.checks) on every policy the package exports."""

from __future__ import annotations

import pytest

import streamarms.policies as policies
from streamarms import checks
from streamarms.policies.base import Policy

CLASSES = [getattr(policies, n) for n in policies.__all__
           if isinstance(getattr(policies, n), type) and issubclass(getattr(policies, n), Policy)
           and getattr(policies, n) is not Policy]


def test_every_policy_module_is_covered():
    names = {c.__module__.rsplit(".", 1)[1] for c in CLASSES}
    assert names >= {"ksigma", "ade", "anytime", "gold", "robust", "best_arm", "thresholding"}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("check", list(checks.yield_checks(Policy)), ids=lambda c: c.__name__)
def test_conformance(cls, check):
    for params in cls._unit_test_params():
        check(cls, dict(params))


def test_a_broken_policy_fails_the_suite():
    from streamarms.policies.ksigma import RoundRobin

    class Forgetful(RoundRobin):  # its snapshot loses the round-robin cursor (a valid but wrong one)
        def snapshot(self):
            s = super().snapshot()
            s["cur"] = (s["cur"] + 1) % len(s["arms"])
            return s

    with pytest.raises(AssertionError):
        checks.check_snapshot_restore_continues(Forgetful, {})

    class Amnesic(RoundRobin):  # its snapshot loses the sample counts: restore refuses it (sums of no rewards)
        def snapshot(self):
            s = super().snapshot()
            s["m"] = [0] * len(s["m"])
            return s

    with pytest.raises(ValueError, match=r"snapshot field 's' entry \d+ \(1.0\) is not a sum of 0 rewards"):
        checks.check_snapshot_restore_continues(Amnesic, {})

"""Per-arm memory (issue 13, one member at scale): the classes held once per arm stay compact, and the
snapshot format of checkpoints written before they were (``__slots__``, lazy requests) still loads.

Memory itself is measured by ``benchmarks/scale_keys.py``, not asserted here."""

from __future__ import annotations

import json
import random

import pytest

from streamarms.confidence.base import sequence_from_snapshot
from streamarms.confidence.beta_binomial import BetaBinomialCS
from streamarms.policies.anytime import AnytimeKSigma

#: BetaBinomialCS(0.01, "k7") after rewards 1,0,0,1,1,0,0,0 and interval(), as written before __slots__
OLD_BB = {"alpha": 0.01, "arm": "k7", "m": 8, "s": 3.0, "a": 0.5, "b": 0.5, "lo": 0.024978350859500127,
          "hi": 0.8853759116525953, "kind": "beta_binomial"}


def test_beta_binomial_has_no_instance_dict() -> None:
    c = BetaBinomialCS(0.1, "a")
    assert not hasattr(c, "__dict__")
    with pytest.raises(AttributeError):
        c.extra = 1  # type: ignore[attr-defined]
    assert BetaBinomialCS(0.1, "b")._c is c._c  # the constants are shared, not one float per arm


def test_old_beta_binomial_snapshot_loads_and_continues() -> None:
    c = sequence_from_snapshot(dict(OLD_BB))
    assert c.snapshot() == OLD_BB  # same fields, same order
    assert list(c.snapshot()) == list(OLD_BB)
    fresh = BetaBinomialCS(0.01, "k7")
    for x in [1, 0, 0, 1, 1, 0, 0, 0]:
        fresh.update(x)
    fresh.interval()
    for x in [1, 1, 0]:
        c.update(x)
        fresh.update(x)
    assert c.interval() == fresh.interval() and c.snapshot() == fresh.snapshot()


def test_unknown_field_in_a_snapshot_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown field 'junk'"):
        sequence_from_snapshot(dict(OLD_BB, junk=1))


def _run(pol: AnytimeKSigma, rng: random.Random, steps: int) -> list[tuple[str, int]]:
    out = []
    for _ in range(steps):
        r = pol.next_request()
        if r is None:
            break
        ev = pol.update(r.arm, float(rng.random() < (0.9 if r.arm == "7" else 0.3)))
        out.append((r.arm, len(ev)))
    return out


def test_anytime_snapshot_round_trip_through_json_is_bit_for_bit() -> None:
    """A checkpoint (JSON) of the slotted, lazily-requesting policy restores and continues exactly."""
    rng = random.Random(5)
    pol = AnytimeKSigma([str(i) for i in range(40)], k=2.0, delta=0.1)
    _run(pol, rng, 3000)
    state = rng.getstate()
    back = AnytimeKSigma.restore(json.loads(json.dumps(pol.snapshot())))
    a = _run(pol, rng, 3000)
    rng.setstate(state)
    b = _run(back, rng, 3000)
    assert a == b and pol.snapshot() == back.snapshot()


def test_anytime_requests_are_built_lazily() -> None:
    pol = AnytimeKSigma([str(i) for i in range(10_000)], k=2.0, delta=0.1)
    assert pol._requests.count(None) == 10_000
    r = pol.next_request()
    assert r is not None and r is pol.next_request() and pol._requests.count(None) == 9_999


#: EDetector(1e-3) after observing 1,0,0,1,1,0 against (0.1, 0.3), as written when its statistics were lists
OLD_ED = {"kind": "edetector", "alpha_cd": 0.001, "low": 0.0, "high": 1.0,
          "lambdas": [0.02, 0.05, 0.1, 0.2, 0.4, 0.7],
          "up": [6.073573267342415, 6.182270450383421, 6.358672397639001, 6.691524268095997, 7.262643052543999,
                 7.8320871609110005],
          "down": [5.843182661076338, 5.612416132291734, 5.2398230229710006, 4.540485351744, 3.3302280028159994,
                   1.998880299779], "restarts": 0}


def test_continuous_per_key_classes_are_slotted_and_old_detector_snapshots_load() -> None:
    from streamarms.monitor.key import KeyState
    from streamarms.monitor.restart import EDetector, WindowRestart, restart_from_snapshot

    ks = KeyState("a", "g", BetaBinomialCS(0.01, "a"), EDetector(1e-3))
    for obj in (ks, ks.rule, WindowRestart(5)):
        assert not hasattr(obj, "__dict__"), type(obj).__name__
    assert EDetector(1e-3).lambdas is EDetector(1e-4).lambdas  # one grid of bets for every key
    old = restart_from_snapshot(json.loads(json.dumps(OLD_ED)))
    assert old.snapshot() == OLD_ED
    fresh = EDetector(1e-3)
    for x in [1, 0, 0, 1, 1, 0, 1, 1]:
        fresh.observe(float(x), 0.1, 0.3)
    for x in [1, 1]:
        old.observe(float(x), 0.1, 0.3)
    assert old.snapshot() == fresh.snapshot()
    back = KeyState.restore(json.loads(json.dumps(ks.snapshot())))
    assert back.snapshot() == ks.snapshot()
    with pytest.raises(ValueError, match="unknown field"):
        restart_from_snapshot(dict(OLD_ED, junk=1))

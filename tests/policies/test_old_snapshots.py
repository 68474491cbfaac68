"""Snapshots written by earlier versions still restore, field checks and all.

``data/old_snapshots.json``: one mid-run snapshot (12 arms, 157 rewards) of each policy class, written by
the oldest commit that has it -- ``254cc1a`` (RR, WRR, NRR: no ``check``, no ``transformed``), ``866a011``
(ADE, GOLD, roai, SE, SR and the thresholding policies), ``fbcafa4`` (cs) -- keyed ``"Class @ commit"``.
Each must restore under today's checks (``streamarms/policies/snapshot_fields.py``) and keep running.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import streamarms.policies as policies

OLD = json.loads((Path(__file__).parent / "data" / "old_snapshots.json").read_text())


@pytest.mark.parametrize("key", sorted(OLD))
def test_an_old_snapshot_restores_and_runs(key):
    cls = getattr(policies, key.split(" @ ")[0])
    p = cls.restore(OLD[key])
    assert p.pulls > 0 and p.arms == OLD[key]["arms"]
    assert cls.restore(json.loads(json.dumps(p.snapshot()))).pulls == p.pulls  # its own snapshot too
    rng = random.Random(1)
    for _ in range(300):
        r = p.next_request()
        if r is None:
            break
        p.update(r.arm, float(rng.random() < 0.3), r)
    p.decision()
    assert cls.restore(json.loads(json.dumps(p.snapshot()))).pulls == p.pulls

"""The streamed checkpoint encoding (issue 13: a full file checkpoint at 1e6 keys is written a piece at a
time): its JSON is byte for byte ``json.dumps(..., sort_keys=True)``'s, its file decodes like
:func:`encode`'s, and a damaged or re-signed one is refused the same way."""

from __future__ import annotations

import io
import json
import math
import random

import pytest

from streamarms.checkpoint import CheckpointError, FileCheckpointStore, decode, encode, write_encoded
from streamarms.json_stream import iter_json


def _random_doc(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice([None, True, False, rng.randint(-10**12, 10**12), rng.random() * 10**rng.randint(-8, 8),
                           math.inf, -0.0, "", "ké\u2603\"\\n", str(rng.random())])
    if r < 0.65:
        return [_random_doc(rng, depth + 1) for _ in range(rng.choice([0, 1, 3, 40]))]
    return {f"k{rng.randint(0, 99)}\u00e9": _random_doc(rng, depth + 1) for _ in range(rng.choice([0, 1, 3, 40]))}


@pytest.mark.parametrize("chunk", [1, 2, 7, pytest.param(10_000, marks=pytest.mark.slow)])  # (10,000: ~8 s)
def test_the_pieces_are_json_dumps_exactly(chunk):
    rng = random.Random(chunk)
    for _ in range(200):
        doc = _random_doc(rng)
        assert "".join(iter_json(doc, chunk)) == json.dumps(doc, separators=(",", ":"), sort_keys=True)


def test_a_dict_with_non_string_keys_is_encoded_whole():
    doc = {"a": {1: "x", 2: "y"}, "b": (1, 2)}
    assert "".join(iter_json(doc, 1)) == json.dumps(doc, separators=(",", ":"), sort_keys=True)


@pytest.mark.parametrize("key", [None, b"0123456789abcdef"])
def test_a_streamed_file_has_the_body_and_hash_of_encode(tmp_path, key):
    doc = {"arms": {f"key-{i:05d}": i * 0.5 for i in range(25_000)}, "cs": [{"m": i, "s": 0.0} for i in range(25_000)]}
    f = io.BytesIO()
    n = write_encoded(f, doc, key, chunk=1000)
    data = f.getvalue()
    assert n == len(data) and decode(data, key=key) == doc
    head, _, body = data.partition(b"\n")
    ref_head, _, ref_body = encode(doc, key).partition(b"\n")
    assert body == ref_body and json.loads(head) == json.loads(ref_head)
    store = FileCheckpointStore(tmp_path / "c.json", fsync=False, secret=key)
    store.save(doc)
    assert store.load() == doc
    raw = (tmp_path / "c.json").read_bytes()
    i = raw.index(b"key-12345") + 8
    (tmp_path / "c.json").write_bytes(raw[:i] + b"6" + raw[i + 1:])  # one digit of the body changed
    with pytest.raises(CheckpointError):
        store.load()

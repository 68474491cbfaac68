"""The lazily parsed file checkpoint (issue 13: a restart at 1e6 keys within 1 GB RSS): the document equals
``json.loads``'s value for value whatever the block size, a restore from it gives the same state bit for
bit, and a damaged, truncated or re-signed file is refused with the same CheckpointError as ``load``."""

from __future__ import annotations

import json
import math
import os
import random
import struct

import numpy as np
import pytest

from streamarms.checkpoint import CheckpointError, FileCheckpointStore
from streamarms.json_lazy import LazyArray, NotAscii, OpenFile, load_lazy
from streamarms.json_stream import lazy_default
from streamarms.models import BernoulliModel
from streamarms.registry import build_policy
from streamarms.runtime import EventClock, RewardCodec, Scheduler, SchedulerConfig
from tests.test_json_stream import _random_doc


def _bits(x):
    """Values with floats compared by their bits (-0.0 is not 0.0, nan equals itself)."""
    if isinstance(x, float):
        return ("f", struct.pack("<d", x))
    if isinstance(x, (list, LazyArray)):
        return [_bits(v) for v in x]
    if isinstance(x, dict):
        return {k: _bits(v) for k, v in x.items()}
    return x


def _write(tmp_path, text, name="doc.json"):
    p = tmp_path / name
    p.write_bytes(text.encode("ascii"))
    return OpenFile(str(p))


@pytest.mark.parametrize("block", [1, 3, 64, 1 << 20])
def test_equals_json_loads_bit_for_bit_at_any_block_size(tmp_path, block):
    rng = random.Random(block)
    for i in range(10):
        doc = {"big": [{"x": rng.random() * 10 ** rng.randint(-30, 30), "arm": f"k{j}", "z": -0.0, "n": 10 ** 20 + j}
                       for j in range(rng.randint(0, 40))],
               "floats": [rng.choice([1.5, -2.5e-300, 1e308, math.inf, -0.0, 7]) for _ in range(rng.randint(0, 30))],
               "r": _random_doc(rng)}
        text = json.dumps(doc, separators=(",", ":") if i % 2 else None, sort_keys=bool(i % 3))
        lazy = load_lazy(_write(tmp_path, text), 0, len(text), block=block, big=rng.choice([1, 5, 100]))
        assert _bits(lazy) == _bits(json.loads(text))


def test_a_lazy_array_iterates_indexes_compares_and_converts_like_the_list(tmp_path):
    text = json.dumps({"a": list(range(50)), "s": ["x"] * 3})
    doc = load_lazy(_write(tmp_path, text), 0, len(text), big=10)
    a = doc["a"]
    assert isinstance(a, LazyArray) and len(a) == 50 and doc["s"] == ["x"] * 3
    assert list(a) == list(range(50)) and a == list(range(50)) and list(range(50)) == a
    assert [a[i] for i in range(50)] == list(range(50))  # in order: one pass
    assert a[-1] == 49 and a[3] == 3 and a[10:12] == [10, 11]
    with pytest.raises(IndexError):
        a[50]
    assert np.array(a, dtype=np.int64).tolist() == list(range(50))


def test_equal_strings_are_one_object(tmp_path):
    text = json.dumps({"arms": {f"k{i}": 0.0 for i in range(30)}, "cs": [{"arm": f"k{i}"} for i in range(30)],
                       "w": [[f"k{i}", [f"k{i}", "arm", None]] for i in range(30)]})
    doc = load_lazy(_write(tmp_path, text), 0, len(text), big=5)
    names = list(doc["arms"])
    assert all(c["arm"] is names[i] for i, c in enumerate(doc["cs"]))
    assert all(w[0] is names[i] and w[1][0] is names[i] for i, w in enumerate(doc["w"]))


@pytest.mark.parametrize("text", ['{"a":[1,2', '{"a":1}x', '[1,2,]', '{"a" 1}', '{"a":[1.,2]}', "", '{"a":tru}',
                                  '{"a":[' + "1," * 30 + "}"])
def test_bad_json_is_a_value_error(tmp_path, text):
    with pytest.raises(ValueError):
        doc = load_lazy(_write(tmp_path, text), 0, len(text), block=2, big=4)
        list(doc["a"]) if isinstance(doc, dict) and isinstance(doc.get("a"), LazyArray) else None


def test_non_ascii_text_is_refused_not_misread(tmp_path):
    p = tmp_path / "u.json"
    p.write_bytes('{"k\u00e9": 1}'.encode("utf-8"))
    f = OpenFile(str(p))
    with pytest.raises(NotAscii):
        load_lazy(f, 0, f.size)


def _scheduler(arms=None):
    return Scheduler(lambda a, ep: build_policy("cs", a, k=2.0, delta=0.1), clock=EventClock(), arms=arms,
                     config=SchedulerConfig(passive_feed="all", max_arms=100_000), codec=RewardCodec(model=BernoulliModel()))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A fed cs scheduler of 2,000 keys saved to a file (read with arrays of more than 500 elements lazy)."""
    n = 2_000
    s = _scheduler([f"key-{i:06d}" for i in range(n)])
    s.tick()
    rng = random.Random(13)
    for _ in range(3):
        keys = [f"key-{rng.randrange(n):06d}".encode() for _ in range(n)]
        s.offer_batch(keys, [b'{"reward": %d}' % (rng.random() < 0.1) for _ in keys])
    path = tmp_path_factory.mktemp("lazy") / "c.json"
    FileCheckpointStore(path, fsync=False).save({"run": {"x": 1}, "scheduler": s.snapshot()})
    return path, s.snapshot()


def test_a_restore_from_the_lazy_document_is_the_restore_from_load(saved):
    path, snap = saved
    store = FileCheckpointStore(path, fsync=False)
    store.lazy_over = 500
    lazy = store.load_streamed()
    assert lazy is not None
    assert isinstance(lazy["scheduler"]["policy"]["state"]["cs"], LazyArray)
    a, b = _scheduler(), _scheduler()
    a.restore(store.load()["scheduler"])  # type: ignore[index]
    b.restore(lazy["scheduler"])
    assert _bits(b.snapshot()) == _bits(a.snapshot()) == _bits(json.loads(json.dumps(snap)))
    keys = [f"key-{i:06d}".encode() for i in range(0, 2_000, 7)]
    vals = [b'{"reward": 1}'] * len(keys)
    a.offer_batch(keys, vals)
    b.offer_batch(keys, vals)
    assert _bits(b.snapshot()) == _bits(a.snapshot())


def test_a_missing_file_is_none(tmp_path):
    assert FileCheckpointStore(tmp_path / "none.json").load_streamed() is None


@pytest.mark.parametrize("damage", ["digit", "truncate", "append", "header"])
def test_damage_is_the_same_checkpoint_error_as_load(saved, tmp_path, damage):
    raw = saved[0].read_bytes()
    if damage == "digit":
        i = raw.index(b"key-001234") + 9
        raw = raw[:i] + (b"5" if raw[i:i + 1] != b"5" else b"6") + raw[i + 1:]
    elif damage == "truncate":
        raw = raw[:len(raw) // 2]
    elif damage == "append":
        raw = raw + b" "
    else:
        raw = raw.replace(b"streamarms-checkpoint", b"streamarms-checkpoinx", 1)
    p = tmp_path / "bad.json"
    p.write_bytes(raw)
    store = FileCheckpointStore(p, fsync=False)
    with pytest.raises(CheckpointError) as ref:
        store.load()
    with pytest.raises(CheckpointError) as got:
        store.load_streamed()
    assert str(got.value) == str(ref.value)


def test_a_body_with_a_valid_hash_but_bad_json_is_refused(tmp_path):
    from streamarms.checkpoint import encode
    p = tmp_path / "c.json"
    data = encode({"a": [1, 2]})
    head, _, body = data.partition(b"\n")
    body = b'{"a":[1,2}'
    import hashlib
    h = json.loads(head)
    h["sha256"], h["bytes"] = hashlib.sha256(body).hexdigest(), len(body)
    p.write_bytes(json.dumps(h).encode() + b"\n" + body)
    with pytest.raises(CheckpointError, match="body is not JSON"):
        FileCheckpointStore(p).load_streamed()


@pytest.mark.parametrize("with_key", [True, False])
def test_hmac_is_checked_before_the_body_is_parsed(saved, tmp_path, with_key):
    key = b"0123456789abcdef0123"
    p = tmp_path / "signed.json"
    FileCheckpointStore(p, fsync=False, secret=key).save({"a": list(range(20_000))})
    store = FileCheckpointStore(p, secret=key if with_key else None)
    if with_key:
        assert list(store.load_streamed()["a"]) == list(range(20_000))  # type: ignore[index]
        with pytest.raises(CheckpointError, match="HMAC"):
            FileCheckpointStore(p, secret=b"another key of 16+ bytes").load_streamed()
    else:
        with pytest.raises(CheckpointError, match="signed"):
            store.load_streamed()


def test_the_file_stays_readable_after_a_newer_save_replaced_it(tmp_path):
    p = tmp_path / "c.json"
    store = FileCheckpointStore(p, fsync=False)
    store.save({"a": list(range(20_000))})
    doc = store.load_streamed()
    store.save({"a": [0]})  # atomic rename: the open descriptor still reads the old file
    assert list(doc["a"]) == list(range(20_000))  # type: ignore[index]
    assert os.path.getsize(p) < 1000


def test_a_continuous_runner_restores_the_same_from_the_lazy_document(tmp_path):
    """(600 keys, arrays of more than 100 elements lazy: the same code as 10,000 at scale.)"""
    from streamarms.cli.continuous import build_runner

    def runner():
        return build_runner(k=2.0, alpha=0.1, alpha_cd=1e-6, model="bernoulli", clock=EventClock(), max_arms=100_000)

    n, rng = 600, random.Random(5)
    r = runner()
    for rnd in range(2):
        keys = [f"k{i}".encode() for i in range(n)]
        r.offer_batch(keys, [b'{"reward": %d}' % (rng.random() < 0.2) for _ in keys],
                      [1000 * (rnd * n + i) for i in range(n)])
    store = FileCheckpointStore(tmp_path / "c.json", fsync=False)
    store.lazy_over = 100
    store.save({"scheduler": r.snapshot()})
    lazy = store.load_streamed()
    assert isinstance(lazy["scheduler"]["monitor"]["keys"]["rows"], LazyArray)  # type: ignore[index]
    a, b = runner(), runner()
    a.restore(store.load()["scheduler"])  # type: ignore[index]
    b.restore(lazy["scheduler"])  # type: ignore[index]
    assert _bits(b.snapshot()) == _bits(a.snapshot()) == _bits(json.loads(json.dumps(r.snapshot(), default=lazy_default)))


@pytest.mark.parametrize("shape", ["dicts", "lists", "strings", "numbers", "mixed", "spaced"])
def test_whole_blocks_decoded_at_once_give_the_same_elements(tmp_path, shape):
    """The block-at-once path (a cut at a separator decodes only between two elements): separators inside
    strings and nested containers, every cut position (small blocks), white space (element by element)."""
    rng = random.Random(shape)
    tricky = ['},{', '],[', '","', ',', '"', '\\\\', 'a"},{"b']

    def element(i):
        s = rng.choice(tricky) + str(i)
        return {"dicts": lambda: {"arm": s, "m": i, "x": [s, {"y": s}], "f": rng.random()},
                "lists": lambda: [s, [s, "arm", None], [[i], []], 0.5],
                "strings": lambda: s,
                "numbers": lambda: rng.choice([i, -i * 1e-300, 1e308, 0.1 * i]),
                "mixed": lambda: rng.choice([{"a": s}, [s], s, i, None, True]),
                "spaced": lambda: {"a": [s, i]}}[shape]()

    doc = {"a": [element(i) for i in range(3000)], "b": [element(i) for i in range(20)], "c": {"d": [1, 2]}}
    text = json.dumps(doc, separators=(", ", ": ") if shape == "spaced" else (",", ":"))
    f = _write(tmp_path, text)
    for block in (97, 1000, 4096, 1 << 20):
        lazy = load_lazy(f, 0, len(text), block=block, big=100)
        assert isinstance(lazy["a"], LazyArray)
        assert _bits(lazy) == _bits(json.loads(text))


def _chunked_copy(saved, tmp_path, **kw):
    from streamarms.chunked_checkpoint import ChunkedCheckpointStore
    doc = FileCheckpointStore(saved[0]).load()
    store = ChunkedCheckpointStore(tmp_path / "dir", fsync=False, **kw)
    store.save(doc)  # type: ignore[arg-type]
    doc["scheduler"]["policy"]["state"]["cs"][5]["m"] += 1  # type: ignore[index]  # a delta: a patch block
    doc["scheduler"]["policy"]["state"]["T"] += 1  # type: ignore[index]  # (one more sample: restore checks T)
    store.save(doc)  # type: ignore[arg-type]
    return store, doc


def test_the_chunked_store_restores_the_same_from_its_streamed_load(saved, tmp_path):
    store, doc = _chunked_copy(saved, tmp_path)
    lazy = store.load_streamed()
    assert isinstance(lazy["scheduler"]["policy"]["state"]["cs"], LazyArray)  # type: ignore[index]
    assert _bits(lazy) == _bits(store.load()) == _bits(doc)
    a, b = _scheduler(), _scheduler()
    a.restore(store.load()["scheduler"])  # type: ignore[index]
    b.restore(lazy["scheduler"])  # type: ignore[index]
    assert _bits(b.snapshot()) == _bits(a.snapshot())
    assert a.policy.cs[5].m == doc["scheduler"]["policy"]["state"]["cs"][5]["m"]  # type: ignore[union-attr]


def test_a_damaged_chunked_block_is_the_same_error_as_load(saved, tmp_path):
    store, _ = _chunked_copy(saved, tmp_path)
    packs = sorted(p for p in os.listdir(store.dir) if p.startswith("pack"))
    path = os.path.join(store.dir, packs[0])
    raw = bytearray(open(path, "rb").read())
    i = raw.index(b"key-000777") + 9
    raw[i] = ord("5") if raw[i] != ord("5") else ord("6")
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CheckpointError) as ref:
        store.load()
    with pytest.raises(CheckpointError) as got:
        store.load_streamed()
    assert str(got.value) == str(ref.value)

"""``--key-ids`` and ``--key-match``: the key is what the key field names, not every id it carries.

Keyed by an access log's ``path`` as written, each user's ``/api/cart/8812`` was a key of its own: 10,000 keys
(then ``too_many_arms``), none with the records a rate needs, and no key flagged -- the failing endpoint among them.
"""

from __future__ import annotations

import json
import random

from streamarms.cli import main
from streamarms.runtime.key_field import KeyFieldSource
from streamarms.runtime.key_rule import KeyRule

ENDPOINTS = ["/api/users/{}/orders", "/api/users/{}", "/api/items/{}", "/api/search", "/static/app.js",
             "/api/cart/{}", "/login", "/api/items/{}/reviews"]


def _access(path, n: int = 60_000, seed: int = 9) -> None:
    rng = random.Random(seed)
    with path.open("w") as f:
        for j in range(n):
            e = rng.choice(ENDPOINTS)
            p = e.format(rng.randrange(1, 100_000)) if "{}" in e else e
            bad = 0.2 if e == "/api/cart/{}" else 0.02
            f.write(json.dumps({"path": p, "status": 502 if rng.random() < bad else 200,
                                "ts": 1_700_000_000_000 + 20 * j}) + "\n")


def _run(tmp_path, path, *extra: str) -> tuple[int, dict]:
    summary = tmp_path / "s.json"
    rc = main(["run", "--rewards-file", str(path), "--key-field", "path", "--reward-field", "status",
               "--reward-at-least", "500", "--timestamp-field", "ts", "--policy", "cs", "--max-episodes", "1",
               "--summary-json", str(summary), *extra])
    return rc, json.loads(summary.read_text()) if summary.exists() else {}


def test_paths_with_ids_are_named_and_key_ids_finds_the_failing_endpoint(tmp_path, capsys):
    p = tmp_path / "access.jsonl"
    _access(p)
    rc, got = _run(tmp_path, p)
    assert rc == 0 and got["flagged"] == []
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "they are paths with ids: --key-ids reads /api/cart/" in last and " as /api/cart/:id (" in last
    rc, got = _run(tmp_path, p, "--key-ids")
    assert rc == 0 and got["flagged"] == ["/api/cart/:id"]
    assert got["episodes"][0]["arms"] == len(ENDPOINTS)


def test_key_match_keys_by_the_part_it_finds_and_refuses_a_text_without_it(tmp_path):
    p = tmp_path / "access.jsonl"
    _access(p, n=20_000)
    dead = tmp_path / "dead.jsonl"
    rc, got = _run(tmp_path, p, "--key-match", r"^/api/(?P<key>\w+)", "--dead-letter-file", str(dead), "--quiet")
    assert rc == 0
    assert got["known_arms"] == 4  # users, items, search, cart
    letters = [json.loads(x) for x in dead.read_text().splitlines()]
    assert letters and {d["reason"] for d in letters} == {"key_missing"}
    assert got["invalid"]["key_missing"] == len(letters)
    assert "holds no key for --key-match" in letters[0]["detail"] and "'/static/app.js'" in letters[0]["detail"] \
        or "'/login'" in letters[0]["detail"]


def test_key_rules_need_the_key_field_and_a_restart_may_not_change_them(tmp_path, capsys):
    p = tmp_path / "access.jsonl"
    _access(p, n=5_000)
    assert main(["run", "--rewards-file", str(p), "--key-ids", "--quiet"]) == 2
    assert "--key-ids and --key-match read the key from --key-field's text" in capsys.readouterr().err
    ck = str(tmp_path / "ck")
    assert _run(tmp_path, p, "--key-ids", "--checkpoint", ck, "--quiet")[0] == 0
    assert _run(tmp_path, p, "--checkpoint", ck, "--quiet")[0] != 0
    assert "--key-ids True (this run: False)" in capsys.readouterr().err


def test_inspect_suggests_key_ids(tmp_path, capsys):
    p = tmp_path / "access.jsonl"
    _access(p, n=10_000)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "keys (values that repeat): path (8 with --key-ids)" in out
    assert f"streamarms run --rewards-file {p} --key-field path --key-ids --reward-field status" in out


def test_an_integer_key_and_an_unmatched_text_seen_twice():
    class Src:
        def poll(self, timeout):
            from streamarms.runtime.key_field import FieldRecord
            vals = [b'{"q": 20231114}', b'{"q": "orders-2023-11-14"}', b'{"q": "X"}', b'{"q": "X"}']
            return [FieldRecord("f", 0, i, None, None, v, None, None, None) for i, v in enumerate(vals)]

    recs = KeyFieldSource(Src(), "q", KeyRule(match=r"^[a-z]+")).poll(0.1)
    assert recs[0].key.reason == "key_missing"  # (digits: no letters to find)
    assert recs[1].key == b"orders"
    assert recs[2].key.reason == recs[3].key.reason == "key_missing"  # (the second from the cache of texts)
    assert KeyFieldSource(Src(), "q", KeyRule(ids=True)).poll(0.1)[0].key == b":id"

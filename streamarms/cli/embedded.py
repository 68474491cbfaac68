"""The embedded demo of ``streamarms run`` (nothing configured): an in-memory stream of keys with
known outliers, and in active mode a responder that answers each sample request at once.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["embedded_means", "embedded_stream", "EmbeddedResponder"]


def embedded_means(n: int) -> list[float]:
    """Means of the embedded demo's keys: the [ZWW17]-style 20-arm instance of ``streamarms simulate``
    (two outliers at k = 2), repeated with jitter for more keys."""
    from ..sim import zww17_example
    base = zww17_example()
    if n == len(base):
        return list(base)
    rng = random.Random(n)
    normals = [m for m in base if m < 0.5]
    means = [rng.choice(normals) + rng.uniform(-0.02, 0.02) for _ in range(max(0, n - 2))]
    return means + [0.75, 0.85][: min(2, n)]


def embedded_stream(keys: list[bytes], means: list[float], seed: int, rate: float,
                     start_ms: int = 1_700_000_000_000) -> Iterator[tuple[bytes, bytes, int]]:
    rng = random.Random(seed)
    n = len(keys)
    values = (b'{"reward": 0}', b'{"reward": 1}')
    step = 1000.0 / rate
    i = 0
    while True:
        a = rng.randrange(n)
        yield keys[a], values[rng.random() < means[a]], start_ms + int(i * step)
        i += 1


class EmbeddedResponder:
    """Active mode of the embedded demo: answers each request at once with a draw of the arm."""

    def __init__(self, broker: Any, topic: str, means: dict[str, float], seed: int, clock: Any) -> None:
        self.broker, self.topic, self.means, self.clock = broker, topic, means, clock
        self.rng = random.Random(seed)

    def send(self, arm: str, payload: dict[str, Any]) -> None:
        x = 1 if self.rng.random() < self.means[arm] else 0
        self.broker.produce(self.topic, arm, json.dumps({"reward": x, "request_id": payload["request_id"]}),
                            timestamp=int(time.time() * 1000))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

"""Demo producer for the docker-compose stack: keyed 0/1 rewards with a few outlier keys that move.

Every record is ``key = "region-NN"``, ``value = {"reward": 0 or 1}`` (the format ``streamarms run``
reads), produced at ``RATE`` records per second over ``KEYS`` keys. Normal keys have a reward rate
around 0.1; ``OUTLIERS`` keys have 0.6. Every ``SHIFT_SECONDS`` the outlier set moves on by one key,
so the dashboard shows new outlier alerts, and ``cleared`` alerts for the keys that went back to
normal. A record with a broken value is sent now and then (``BAD_EVERY``) so the dead-letter
topic and the invalid-records panel have something to show.

Settings (environment): ``BOOTSTRAP_SERVERS`` (kafka:19092), ``REWARDS_TOPIC`` (rewards), ``KEYS``
(40), ``OUTLIERS`` (2), ``RATE`` (400), ``SHIFT_SECONDS`` (900), ``BAD_EVERY`` (50000, 0: never),
``SEED`` (1). Stops cleanly on SIGTERM.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import sys
import time

from kafka import KafkaProducer
from kafka.errors import NoBrokersAvailable

log = logging.getLogger("demo-producer")


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def outlier_keys(names: list[str], n_outliers: int, shift: int) -> set[str]:
    """The outlier keys after ``shift`` moves: a window of ``n_outliers`` consecutive keys.

    >>> sorted(outlier_keys(["a", "b", "c", "d"], 2, 3))
    ['a', 'd']
    """
    return {names[(shift + j) % len(names)] for j in range(n_outliers)}


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    servers = _env("BOOTSTRAP_SERVERS", "kafka:19092")
    topic = _env("REWARDS_TOPIC", "rewards")
    n_keys = int(_env("KEYS", "40"))
    n_out = int(_env("OUTLIERS", "2"))
    rate = float(_env("RATE", "400"))
    shift_s = float(_env("SHIFT_SECONDS", "900"))
    bad_every = int(_env("BAD_EVERY", "50000"))
    rng = random.Random(int(_env("SEED", "1")))
    names = [f"region-{i:02d}" for i in range(n_keys)]
    base = {k: rng.uniform(0.06, 0.14) for k in names}

    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    producer = None
    while producer is None and not stop:
        try:
            producer = KafkaProducer(bootstrap_servers=servers.split(","), linger_ms=20, acks=1)
        except NoBrokersAvailable:
            log.info("waiting for Kafka at %s", servers)
            time.sleep(2)
    if producer is None:
        return 0
    t0 = time.monotonic()
    sent = 0
    shift = -1
    out: set[str] = set()
    while not stop:
        s = int((time.monotonic() - t0) // shift_s) if shift_s > 0 else 0
        if s != shift:
            shift = s
            out = outlier_keys(names, n_out, s)
            log.info("outlier keys now: %s", ", ".join(sorted(out)))
        key = rng.choice(names)
        p = 0.6 if key in out else base[key]
        sent += 1
        if bad_every and sent % bad_every == 0:
            value = b'{"reward": "oops"}'
        else:
            value = json.dumps({"reward": int(rng.random() < p)}).encode()
        producer.send(topic, key=key.encode(), value=value)
        # pace to RATE records per second
        ahead = sent / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    producer.flush(10)
    producer.close(10)
    log.info("stopped after %d records", sent)
    return 0


if __name__ == "__main__":
    sys.exit(main())

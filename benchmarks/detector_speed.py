"""Throughput of OutlierArmDetector.learn_one / score_one (records per second), and how many records
it needs to find the outliers, for a few key counts.

    python benchmarks/detector_speed.py
"""

from __future__ import annotations

import random
import time

from streamarms import OutlierArmDetector


def run(n_keys: int, n_records: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    means = {f"k{i:05d}": 0.05 for i in range(n_keys)} | {"k00000": 0.6}
    keys = sorted(means)
    xs = [{"key": k, "reward": int(rng.random() < means[k])} for k in (rng.choice(keys) for _ in range(n_records))]
    det = OutlierArmDetector(discovery=max(500, 20 * n_keys))
    found_at = None
    t0 = time.perf_counter()
    for i, x in enumerate(xs):
        det.learn_one(x)
        if found_at is None and i % 1000 == 0 and det.score_one({"key": "k00000"}) == 1.0:
            found_at = i
    t_learn = time.perf_counter() - t0
    t0 = time.perf_counter()
    for x in xs[:100_000]:
        det.score_one(x)
    t_score = time.perf_counter() - t0
    print(f"{n_keys:>6} keys: learn_one {n_records / t_learn:>10,.0f} rec/s, score_one "
          f"{min(n_records, 100_000) / t_score:>10,.0f} rec/s; outlier confident after ~{found_at} records, "
          f"{det.n_samples:,} of {det.n_records:,} rewards used, outliers {det.outliers[:3]}")


if __name__ == "__main__":
    for n, r in ((10, 100_000), (100, 400_000), (1000, 1_000_000)):
        run(n, r)

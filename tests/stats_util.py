"""Binomial bounds for statistical tests: fixed seeds, no flakes, no vacuous passes."""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Callable, Iterable
from typing import Any


def max_failures(runs: int, rate: float, alpha: float = 1e-3) -> int:
    """Smallest c with P(Binomial(runs, rate) > c) <= alpha.

    A correct policy (true error rate <= ``rate``) then exceeds ``c`` wrong answers with probability at
    most ``alpha`` for a random seed set, while a policy with a clearly higher error rate fails.

    >>> max_failures(100, 0.1)
    20
    """
    cdf = 0.0
    for c in range(runs + 1):
        cdf += math.comb(runs, c) * rate ** c * (1 - rate) ** (runs - c)
        if 1.0 - cdf <= alpha:
            return c
    return runs


def clopper_pearson_upper(failures: int, runs: int, level: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper confidence bound of a binomial rate (``level`` = 0.95).

    >>> round(clopper_pearson_upper(0, 1000), 5)
    0.00299
    """
    if failures >= runs:
        return 1.0
    from scipy.stats import beta
    return float(beta.ppf(level, failures + 1, runs - failures))


def clopper_pearson_lower(failures: int, runs: int, level: float = 0.95) -> float:
    """One-sided Clopper-Pearson lower confidence bound of a binomial rate.

    >>> clopper_pearson_lower(0, 100)
    0.0
    """
    if failures <= 0:
        return 0.0
    from scipy.stats import beta
    return float(beta.ppf(1.0 - level, failures, runs - failures + 1))


def seeded_map(fn: Callable[[Any], Any], jobs: Iterable[Any], processes: int | None = None) -> list[Any]:
    """``[fn(job) for job in jobs]`` over up to two forked worker processes (the machine's cores, at most
    2): the long seeded statistical tests (each run seeded by its job, so the results do not depend on
    the worker that ran it) take about half the wall time on the CI's two cores. ``fn`` must be a
    module-level function; an exception in a run is raised here.

    >>> seeded_map(abs, [-1, 2, -3], processes=1)
    [1, 2, 3]
    """
    jobs = list(jobs)
    procs = processes if processes is not None else min(2, os.cpu_count() or 1)
    if procs <= 1 or len(jobs) < 2:
        return [fn(j) for j in jobs]
    with multiprocessing.get_context("fork").Pool(procs) as pool:
        return pool.map(fn, jobs, chunksize=max(1, len(jobs) // (8 * procs)))

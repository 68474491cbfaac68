"""Simulated arms, the papers' synthetic instances, and a driver that runs a policy on them.

The simulator is the ``bandits`` side of the picture (banditpylib's split): arms that can be pulled,
an :class:`Environment` holding them with a seeded RNG, and :func:`run_policy`, the protocol that
makes a policy and an environment interact until the policy stops or a pull cap is reached.

>>> env = Environment([0.1, 0.9], seed=0)
>>> env.arm_names
['0', '1']
>>> env.pull("1") in (0.0, 1.0)
True
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast, runtime_checkable

from .policies.base import Decision, Event, Policy

__all__ = ["Arm", "BernoulliArm", "BoundedArm", "GaussianArm", "StudentTArm", "Environment", "RunResult",
           "run_policy", "samples_lower_bound", "zww17_synthetic", "zww17_example", "ade_uniform", "tbpz19_setup",
           "yslk18_instance"]


@runtime_checkable
class Arm(Protocol):
    """Anything with a ``mean`` and a ``pull(rng)`` returning one reward."""

    @property
    def mean(self) -> float: ...

    def pull(self, rng: random.Random) -> float: ...


@dataclass(frozen=True)
class BernoulliArm:
    """Rewards 1 with probability ``p``, else 0.

    >>> BernoulliArm(1.0).pull(random.Random(0))
    1.0
    """

    p: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"Bernoulli mean must be in [0, 1], got {self.p}")

    @property
    def mean(self) -> float:
        return self.p

    def pull(self, rng: random.Random) -> float:
        return 1.0 if rng.random() < self.p else 0.0

    def variance(self) -> float:
        return self.p * (1.0 - self.p)


@dataclass(frozen=True)
class BoundedArm:
    """Rewards in ``[a, b]`` with the given mean: a two-point distribution on {a, b} by default
    (the hardest bounded law for a given mean, variance maximal), or a Beta law (``shape="beta"``,
    concentration ``kappa``), scaled to [a, b].

    >>> arm = BoundedArm(0.3, 0.0, 1.0, shape="beta")
    >>> 0.0 <= arm.pull(random.Random(1)) <= 1.0
    True
    """

    mean: float
    a: float = 0.0
    b: float = 1.0
    shape: str = "two-point"
    kappa: float = 10.0

    def __post_init__(self) -> None:
        if not self.a <= self.mean <= self.b:
            raise ValueError(f"mean {self.mean} outside [{self.a}, {self.b}]")
        if self.shape not in ("two-point", "beta", "constant"):
            raise ValueError(f"unknown shape {self.shape!r}: two-point, beta or constant")

    def pull(self, rng: random.Random) -> float:
        a, b = self.a, self.b
        q = (self.mean - a) / (b - a)
        if self.shape == "constant" or q in (0.0, 1.0):
            return self.mean
        if self.shape == "two-point":
            return b if rng.random() < q else a
        return a + (b - a) * rng.betavariate(q * self.kappa, (1 - q) * self.kappa)

    def variance(self) -> float:
        """``(b - a)^2 q (1 - q)`` for two points, divided by ``kappa + 1`` for the Beta law; 0 if constant."""
        q = (self.mean - self.a) / (self.b - self.a)
        v = (self.b - self.a) ** 2 * q * (1.0 - q)
        return 0.0 if self.shape == "constant" else v / (self.kappa + 1.0) if self.shape == "beta" else v


@dataclass(frozen=True)
class GaussianArm:
    """Gaussian rewards ``N(mu, sd^2)`` (unbounded: use with a model that accepts them).

    >>> isinstance(GaussianArm(0.0, 1.0).pull(random.Random(0)), float)
    True
    """

    mu: float
    sd: float = 1.0

    @property
    def mean(self) -> float:
        return self.mu

    def pull(self, rng: random.Random) -> float:
        return rng.gauss(self.mu, self.sd)

    def variance(self) -> float:
        return self.sd ** 2


@dataclass(frozen=True)
class StudentTArm:
    """Heavy-tailed rewards: ``mean + scale * t``, t Student-t with ``df`` degrees of freedom.

    Moments of order below ``df`` are finite (variance ``scale^2 df / (df - 2)`` for df > 2), higher ones
    are not: with df = 3 the p-th moment is finite for every p in (1, 2], as in [YSLK18] Sec. 5.
    The t variate is ``Z / sqrt(V / df)``, Z standard normal and V chi-square (``2 * Gamma(df/2)``).

    >>> arm = StudentTArm(2.0, 3.0)
    >>> arm.mean, isinstance(arm.pull(random.Random(0)), float)
    (2.0, True)
    >>> round(arm.second_moment(), 6)
    7.0
    """

    mean: float
    df: float = 3.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and math.isfinite(self.df) and self.df > 0
                and math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"Student-t arm needs a finite mean, df > 0 and scale > 0; got mean={self.mean}, "
                             f"df={self.df}, scale={self.scale}")

    def pull(self, rng: random.Random) -> float:
        z = rng.gauss(0.0, 1.0)
        v = 2.0 * rng.gammavariate(self.df / 2.0, 1.0)
        return self.mean + self.scale * z / math.sqrt(v / self.df)

    def variance(self) -> float:
        """``scale^2 df / (df - 2)``, infinite for df <= 2."""
        return self.scale ** 2 * self.df / (self.df - 2.0) if self.df > 2 else math.inf

    def second_moment(self) -> float:
        """``E X^2 = mean^2 + variance`` (the raw moment bound B for p = 2)."""
        return self.mean ** 2 + self.variance()


def _make_arm(mean: float, model: str, a: float, b: float) -> Arm:
    if model == "bernoulli":
        return BernoulliArm(mean)
    if model in ("bounded", "hoeffding", "two-point"):
        return BoundedArm(mean, a, b)
    if model == "beta":
        return BoundedArm(mean, a, b, shape="beta")
    if model == "gaussian":
        return GaussianArm(mean, 1.0)
    raise ValueError(f"unknown arm model {model!r}: bernoulli, bounded, beta or gaussian")


class Environment:
    """A set of named arms and one seeded RNG; arms given as means are named ``"0"``..``"n-1"``.

    ``model`` says how means become arms (``bernoulli``: Bernoulli; ``bounded``: two-point on
    ``[a, b]``; ``beta``; ``gaussian`` with sd 1); a mapping of names to arm objects is used as is.

    >>> env = Environment({"eu": BernoulliArm(0.2), "us": BernoulliArm(0.4)}, seed=2)
    >>> env.means
    {'eu': 0.2, 'us': 0.4}
    """

    def __init__(self, arms: Sequence[float] | Mapping[str, Arm] | Sequence[Arm], seed: int | None = None,
                 model: str = "bernoulli", a: float = 0.0, b: float = 1.0) -> None:
        if isinstance(arms, Mapping):
            self.arms: dict[str, Arm] = {str(k): v for k, v in arms.items()}
        else:
            self.arms = {str(i): (x if isinstance(x, Arm) else _make_arm(float(cast(float, x)), model, a, b))
                         for i, x in enumerate(arms)}
        self.rng = random.Random(seed)
        self._pull = {name: arm.pull for name, arm in self.arms.items()}

    @property
    def arm_names(self) -> list[str]:
        return list(self.arms)

    @property
    def means(self) -> dict[str, float]:
        return {k: float(v.mean) for k, v in self.arms.items()}

    def pull(self, arm: str) -> float:
        try:
            return self._pull[arm](self.rng)
        except KeyError:
            raise ValueError(f"unknown arm {arm!r}") from None


@dataclass
class RunResult:
    """What :func:`run_policy` returns."""

    decision: Decision
    pulls: int
    capped: bool
    events: list[Event] = field(default_factory=list)


def run_policy(policy: Policy, env: Environment, max_pulls: int | None = None,
               keep_events: bool = True, on_progress: Callable[[int], None] | None = None,
               progress_every: int = 1 << 16) -> RunResult:
    """Run ``policy`` on ``env`` until it stops (or ``max_pulls`` rewards were used).

    Each step: ``req = policy.next_request(); x = env.pull(req.arm); policy.update(req.arm, x, req)``.
    ``on_progress(pulls)`` is called every ``progress_every`` pulls (for a progress bar; the loop's
    only per-pull check is the one against the next stop, so it costs nothing when absent).

    >>> from streamarms.policies.ksigma import RoundRobin
    >>> env = Environment([0.1, 0.1, 0.1, 0.1, 0.1, 0.9], seed=0)
    >>> run_policy(RoundRobin(env.arm_names, k=1.5), env, max_pulls=10).capped
    True
    >>> seen = []
    >>> _ = run_policy(RoundRobin(env.arm_names, k=1.5), env, max_pulls=10, on_progress=seen.append,
    ...                progress_every=4)
    >>> seen
    [4, 8]
    """
    events: list[Event] = []
    pull, update, nxt = env.pull, policy.update, policy.next_request
    cap = math.inf if max_pulls is None else max_pulls
    report = math.inf if on_progress is None else progress_every
    limit = min(cap, report)
    n = 0
    capped = False
    while True:
        if n >= limit:
            if n >= cap:
                capped = not policy.done
                break
            on_progress(n)  # type: ignore[misc]  # report < inf only when on_progress is given
            report += progress_every
            limit = min(cap, report)
        req = nxt()
        if req is None:
            break
        ev = update(req.arm, pull(req.arm), req)
        n += 1
        if ev and keep_events:
            events.extend(ev)
    return RunResult(policy.decision(), policy.pulls, capped, events)


def samples_lower_bound(gaps: Sequence[float], variances: Sequence[float], delta: float) -> float:
    """About the fewest rewards *any* delta-correct policy needs, in expectation, to classify arms whose
    means lie ``gaps`` from a threshold it is told, rewards of the given ``variances``:
    ``kl(delta, 1 - delta) sum_i 2 v_i / d_i^2`` (Garivier & Kaufmann, *Optimal best arm identification
    with fixed confidence*, COLT 2016, Thm 1, the nearest alternative moving one arm across the
    threshold; each arm taken as Gaussian, which is exact as its gap shrinks). Not knowing the threshold
    only adds to it. A gap of 0 (with variance > 0) gives ``inf``.

    >>> round(samples_lower_bound([0.1, 0.3], [0.25, 0.25], 0.1))
    98
    """
    kl = (1.0 - 2.0 * delta) * math.log((1.0 - delta) / delta)
    total = 0.0
    for d, v in zip(gaps, variances):
        if v > 0:
            total += math.inf if d == 0 else 2.0 * v / (d * d)
    return kl * total


# ------------------------------------------------------------------------------------------------
# instances of the papers' synthetic experiments
# ------------------------------------------------------------------------------------------------
def zww17_example() -> list[float]:
    """A fixed 20-arm instance in the style of [ZWW17] Sec. 5.1 with two outliers (arms 18, 19) at k = 2."""
    return [0.3173, 0.3411, 0.3165, 0.2348, 0.3453, 0.3223, 0.2732, 0.3291, 0.3182, 0.3147,
            0.3014, 0.3273, 0.2632, 0.2919, 0.2759, 0.3299, 0.3020, 0.2854, 0.75, 0.85]


def zww17_synthetic(n: int, k: float, rng: random.Random, n_outliers: int | None = None,
                    min_gap: float = 0.05) -> list[float]:
    """A random synthetic test case in the manner of [ZWW17] Sec. 5.1 (Bernoulli means).

    The paper gives n in {20, 50, 100, 200} and k in {2, 2.5, 3} but not its generator; here normal
    arms are drawn uniformly from [0.2, 0.4] and 1-3 outliers (or ``n_outliers``) from (theta, 1),
    redrawn until every arm is at least ``min_gap`` away from the threshold (so the runs end).

    >>> means = zww17_synthetic(20, 2.0, random.Random(0))
    >>> len(means)
    20
    """
    from .policies.ksigma import ksigma_outliers  # local: the simulator must not need policies

    for _ in range(10000):
        r = n_outliers if n_outliers is not None else rng.randint(1, 3)
        means = [rng.uniform(0.2, 0.4) for _ in range(n - r)]
        means += [rng.uniform(0.7, 0.95) for _ in range(r)]
        y = sum(means) / n
        sd = math.sqrt(sum((m - y) ** 2 for m in means) / n)
        theta = y + k * sd
        if min(abs(m - theta) for m in means) >= min_gap and len(ksigma_outliers(means, k)) == r:
            rng.shuffle(means)
            return means
    raise RuntimeError("could not draw an instance with the requested gap")


def ade_uniform(n: int, rng: random.Random) -> list[float]:
    """[ZZZZ20] synthetic family: n arm means uniform in [0, 1] (with k = 2.5 no arm is an outlier).

    >>> max(ade_uniform(50, random.Random(0))) <= 1.0
    True
    """
    return [rng.random() for _ in range(n)]


def tbpz19_setup(i: int) -> list[float]:
    """The three Bernoulli instances of [TBPZ19] Sec. 5 (threshold 0.5).

    1. arithmetic progression I: 0.2, 0.25, 0.3, 0.35, 0.45, 0.55, 0.65, 0.7, 0.75, 0.8;
    2. arithmetic progression II: 20 arms 0.405, 0.415, ..., 0.595;
    3. two groups: five arms at 0.45 and five at 0.505.

    >>> tbpz19_setup(2)[:2], len(tbpz19_setup(2))
    ([0.405, 0.415], 20)
    """
    if i == 1:
        return [round(0.2 + 0.05 * j, 10) for j in range(4)] + [0.45, 0.55] + \
            [round(0.65 + 0.05 * j, 10) for j in range(4)]
    if i == 2:
        return [round(0.405 + j / 100, 10) for j in range(20)]
    if i == 3:
        return [0.45] * 5 + [0.505] * 5
    raise ValueError(f"[TBPZ19] has setups 1, 2 and 3, not {i!r}")


def yslk18_instance(name: str = "S1") -> list[float]:
    """The synthetic instances of [YSLK18] Table 2: one arm at 2.0 and nine evenly spaced over
    [0.7, 1.5] (S1) or [1.0, 1.8] (S2); the paper adds Student-t noise with 3 degrees of freedom
    (p = 2, B = 7, C = 3).

    >>> yslk18_instance("S1")[:3]
    [2.0, 0.7, 0.8]
    """
    lo = {"S1": 0.7, "S2": 1.0}.get(name)
    if lo is None:
        raise ValueError(f"[YSLK18] instances are 'S1' and 'S2', not {name!r}")
    return [2.0] + [round(lo + 0.1 * j, 10) for j in range(9)]

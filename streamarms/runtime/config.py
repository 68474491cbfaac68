"""The scheduler's knobs: :class:`SchedulerConfig` and the two modes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PASSIVE", "ACTIVE", "SchedulerConfig"]

PASSIVE, ACTIVE = "passive", "active"


@dataclass
class SchedulerConfig:
    """Knobs of the :class:`Scheduler` (times in seconds of the scheduler's clock).

    >>> SchedulerConfig(mode="active").mode
    'active'
    >>> SchedulerConfig(window=0)
    Traceback (most recent call last):
    ...
    ValueError: window must be >= 1 (outstanding wants in passive mode), got 0
    """

    mode: str = PASSIVE
    #: passive: how many arms may be wanted at once
    window: int = 32
    #: rewards held per planned arm until the plan reaches it (passive; ``streamarms run`` takes 4 in active
    #: mode, where it is the requests sent ahead per arm). WRR asks for an arm about ``rho* ~ n^(2/3)``
    #: times in a row, so a few held rewards starve it: at 50 keys 4 took 347k records to decide where 32
    #: took 58k, at 200 keys 4 did not decide in 6M records, 32 in 5.0M (``tests/runtime/
    #: test_prefetch_default.py``); the 20-key stream does not care (~59k either way). A source in poll order
    #: (``KafkaRewardSource(ordered=False)``) hands out a partition's records in runs of up to a poll:
    #: hold a poll's worth there (``streamarms run --order arrival`` does), or a plan across partitions
    #: starves (``tests/runtime/test_arrival_order.py``)
    prefetch: int = 32
    #: passive: give up a want after this long without a record of the arm
    want_timeout: float = 30.0
    #: active: requests outstanding at once
    max_in_flight: int = 32
    #: active: drop a request not answered within this long
    request_timeout: float = 30.0
    #: first episode: start once no new key appeared for this many valid records (refused ones do not count) ...
    discovery_records: int = 1000
    #: ... or this long after the first record
    discovery_seconds: float = 10.0
    #: never start an episode with fewer known arms
    min_arms: int = 3
    #: stop after this many episodes (None: forever)
    max_episodes: int | None = None
    #: time between episode starts
    episode_interval: float = 300.0
    #: end an episode that has not finished after this long (None: never)
    episode_timeout: float | None = None
    #: refuse new keys beyond this many arms
    max_arms: int = 10_000
    #: forget keys with no record for this long (checked when an episode starts; None: never)
    key_ttl: float | None = None
    #: passive: end the running episode when an arm of it has had no record for this many records, forget
    #: those keys and start the next episode at once without them (:mod:`streamarms.runtime.silence`); 0:
    #: never; None (default): ``max(10 * discovery_records, 100 * arms of the episode)``
    episode_silence_records: int | None = None
    #: "all" (default): validate every record, so every bad one is refused (dead-lettered); "used":
    #: parse only the records the policy takes (the fast path: bad records among the skipped pass unseen)
    validate: str = "all"
    #: passive: "planned" gives the policy the rewards its plan asks for, in that order (its sampling
    #: rule runs as in a simulation); "all" gives it every reward of its arms as it arrives (sound for
    #: anytime-valid policies: :mod:`streamarms.runtime.intake`)
    passive_feed: str = "planned"

    def __post_init__(self) -> None:
        if self.mode not in (PASSIVE, ACTIVE):
            raise ValueError(f"mode must be 'passive' or 'active', got {self.mode!r}")
        if self.validate not in ("used", "all"):
            raise ValueError(f"validate must be 'used' or 'all', got {self.validate!r}")
        if self.passive_feed not in ("planned", "all"):
            raise ValueError(f"passive_feed must be 'planned' or 'all', got {self.passive_feed!r}")
        if self.passive_feed == "all" and self.mode != PASSIVE:
            raise ValueError("passive_feed 'all' applies to passive mode only")
        for name, lo, what in (("window", 1, "outstanding wants in passive mode"),
                               ("max_in_flight", 1, "requests outstanding in active mode"),
                               ("min_arms", 1, "arms needed to start an episode"),
                               ("prefetch", 1, "rewards held per planned arm"),
                               ("max_arms", 1, "cap on the number of arms"),
                               ("discovery_records", 1, "records without a new key before the first episode")):
            v = getattr(self, name)
            if not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be >= {lo} ({what}), got {v!r}")
        if self.max_arms < self.min_arms:
            raise ValueError(f"max_arms ({self.max_arms}) must be >= min_arms ({self.min_arms})")
        for name in ("want_timeout", "request_timeout", "discovery_seconds"):
            v = getattr(self, name)
            if not (v > 0):
                raise ValueError(f"{name} must be > 0 seconds, got {v!r}")
        if not self.episode_interval >= 0:
            raise ValueError(f"episode_interval must be >= 0 seconds, got {self.episode_interval!r}")
        if self.episode_timeout is not None and not self.episode_timeout > 0:
            raise ValueError(f"episode_timeout must be > 0 seconds or None, got {self.episode_timeout!r}")
        if self.key_ttl is not None and not self.key_ttl > 0:
            raise ValueError(f"key_ttl must be > 0 seconds or None, got {self.key_ttl!r}")
        s = self.episode_silence_records
        if s is not None and (not isinstance(s, int) or isinstance(s, bool) or s < 0):
            raise ValueError(f"episode_silence_records must be >= 0 (0: off) or None (automatic), got {s!r}")
        if self.max_episodes is not None and (not isinstance(self.max_episodes, int) or self.max_episodes < 1):
            raise ValueError(f"max_episodes must be >= 1 or None, got {self.max_episodes!r}")

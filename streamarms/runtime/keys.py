"""The known stream keys and their arm names: :class:`KeyRegistry`.

>>> from streamarms.runtime.codec import RewardCodec
>>> r = KeyRegistry(RewardCodec(), max_arms=2)
>>> r.new_key(b"a", 0.0), r.arm_of[b"a"], r.new_key("a", 1.0), r.known
('a', 'a', 'a', ['a'])
>>> r.new_key(b"b", 0.0)
'b'
>>> r.new_key(b"c", 0.0)
Traceback (most recent call last):
...
streamarms.runtime.records.InvalidRecord: too_many_arms: new key 'c' refused: already 2 arms (max_arms=2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .codec import RewardCodec
from .records import InvalidRecord

__all__ = ["KeyRegistry"]


_NO_VALUE: Any = object()


class KeyRegistry:
    """Raw key (bytes, or str) -> arm name, and arm -> when a record of it was last seen.

    ``arms`` fixes the arm set up front: keys outside it are not arms (:meth:`new_key` returns
    ``None``). Otherwise a new key becomes an arm, up to ``max_arms``. ``last_seen`` is kept up to date
    by the scheduler only when keys expire (``key_ttl``).

    :attr:`left` counts the keys forgotten (silent, or expired) and :attr:`returned` those of them that came
    back: a stream whose keys leave and never return has its records grouped by key (a file sorted or
    concatenated by key), which no episode can compare (``streamarms run`` says so). Both change only when a
    key is forgotten or new, never per record, and are counts of this process's run (not in the snapshot).
    """

    #: forgotten keys remembered for :attr:`returned` (beyond, a key that comes back is not counted)
    FORGOTTEN_KEPT = 100_000

    def __init__(self, codec: RewardCodec, max_arms: int, arms: Sequence[str] | None = None,
                 now: float = 0.0) -> None:
        self.codec = codec
        self.max_arms = max_arms
        self.arm_of: dict[bytes | str, str] = {}
        self.last_seen: dict[str, float] = {}
        self.fixed = bool(arms)
        self.left = self.returned = 0
        self._forgotten: set[str] = set()
        for a in arms or ():
            self.register(codec.arm(a), now)

    @property
    def known(self) -> list[str]:
        return sorted(self.last_seen)

    def __len__(self) -> int:
        return len(self.last_seen)

    def new_key(self, key: bytes | str | None, now: float, value: Any = _NO_VALUE) -> str | None:
        """The arm of a key not in :attr:`arm_of` yet, registering it; ``None`` for a key outside a
        fixed arm set; :class:`InvalidRecord` for a bad key or one too many.

        With ``value`` (the record's value), the key is registered only if the value holds a valid
        reward: a junk record with a junk key is refused without taking one of the ``max_arms`` slots
        (nor a place in the checkpoint). Once per arm, so the extra parse costs nothing."""
        arm = self.codec.arm(key)
        raw = arm.encode("utf-8")
        if raw in self.arm_of:  # a str key of an arm known by bytes
            if isinstance(key, str):
                self.arm_of[key] = arm
            return arm
        if self.fixed:
            return None
        if value is not _NO_VALUE:
            self.codec.reward(arm, value, count=False)  # raises InvalidRecord: the key stays unknown
        if len(self.last_seen) >= self.max_arms:
            raise InvalidRecord("too_many_arms", f"new key {arm[:64]!r} refused: already "
                                                 f"{len(self.last_seen)} arms (max_arms={self.max_arms})")
        self.register(arm, now)
        if isinstance(key, str):
            self.arm_of[key] = arm
        return arm

    def register(self, arm: str, now: float) -> None:
        if arm in self._forgotten:
            self._forgotten.discard(arm)
            self.returned += 1
        self.arm_of[arm.encode("utf-8")] = arm
        self.last_seen[arm] = now

    def forget_silent(self, now: float, ttl: float) -> None:
        """Forget the keys with no record for longer than ``ttl``."""
        self.forget({a for a, t in self.last_seen.items() if t + ttl < now})

    def forget(self, arms: Sequence[str] | set[str]) -> None:
        """Forget these keys: a record of one makes it a new key again."""
        stale = set(arms)
        if stale:
            for a in stale:
                if self.last_seen.pop(a, None) is not None:
                    self.left += 1
                    if len(self._forgotten) < self.FORGOTTEN_KEPT:
                        self._forgotten.add(a)
            for k in [k for k, v in self.arm_of.items() if v in stale]:
                del self.arm_of[k]  # in place: the scheduler holds this dict

    def snapshot(self) -> dict[str, float]:
        return dict(self.last_seen)

    def restore(self, state: dict[str, float]) -> None:
        self.arm_of.clear()  # in place: the scheduler holds this dict
        self.last_seen = {}
        self._forgotten.clear()
        for a, t in state.items():
            self.register(a, float(t))

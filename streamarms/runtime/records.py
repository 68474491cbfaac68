"""Why a record can be refused: :data:`INVALID_REASONS`, the :class:`InvalidRecord` error, and
:class:`RefusedKey`, the key a source gives a record it could not read; :func:`record_key`, what a dead
letter keeps."""

from __future__ import annotations

from typing import Any

from ..errors import StreamarmsError

__all__ = ["INVALID_REASONS", "InvalidRecord", "RefusedKey", "record_key"]

#: every reason a record can be refused for (the bounded label set of the invalid-records metric and
#: the value of the dead-letter ``reason`` header)
INVALID_REASONS = (
    "key_missing",        # record has no key
    "key_not_utf8",       # key bytes are not UTF-8
    "key_too_long",       # key longer than max_key_bytes
    "too_many_arms",      # a new key beyond max_arms
    "value_missing",      # no value (tombstone)
    "not_json",           # value is not JSON
    "not_object",         # value is JSON but not an object
    "missing_reward",     # the reward field is absent
    "not_numeric",        # the reward is not a JSON number
    "not_finite",         # NaN or +-inf
    "out_of_model",       # refused by the reward model (e.g. 0.5 under bernoulli)
    "request_mismatch",   # active mode: answer's key is not the requested arm
    "rejected_by_policy", # the policy raised ValueError on update
    "missing_group",      # continuous mode with --group-by: the group field is absent
    "bad_group",          # ... it is not a non-empty string (or integer) of at most max_key_bytes
    "too_many_groups",    # ... a new group beyond max_groups
    "group_mismatch",     # ... the key belongs to another group
    "bad_row",            # a CSV/TSV line that is not a row of its header's columns
    "line_too_long",      # a --rewards-file line longer than the reader keeps (4 MiB: a file of NUL bytes, no text)
    "bad_timestamp",      # a JSONL line's timestamp is not a number of ms in [0, year 10000); a Kafka record's
                          # is negative (not -1) or more than --max-timestamp-ahead after this machine's clock
)


class InvalidRecord(StreamarmsError, ValueError):
    """A record that cannot be used; ``reason`` is one of :data:`INVALID_REASONS`.

    >>> InvalidRecord("not_json", "b'{'").reason
    'not_json'
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class RefusedKey(tuple[str, str, bytes | None]):
    """The key of a record its source could not read (a JSONL line that is not JSON, not an object, or
    has a bad timestamp): ``(reason, detail, raw key or None)``. The codec refuses the record with this
    reason the moment it reads the key (:meth:`~streamarms.runtime.codec.RewardCodec.arm`), so the
    source's reason reaches the dead letters and the counters by the path of every refused record --
    no check on the path of good records. Hashable, and equal to no ``bytes`` or ``str`` key.

    >>> k = RefusedKey.of("not_json", "the line is not JSON", None)
    >>> k.reason, k.detail, k.raw, hash(k) == hash(RefusedKey.of("not_json", "the line is not JSON", None))
    ('not_json', 'the line is not JSON', None, True)
    """

    __slots__ = ()

    @classmethod
    def of(cls, reason: str, detail: str, raw: bytes | None) -> RefusedKey:
        if reason not in INVALID_REASONS:
            raise ValueError(f"unknown refusal reason {reason!r}")
        return cls((reason, detail, raw))

    reason = property(lambda self: self[0])
    detail = property(lambda self: self[1])
    raw = property(lambda self: self[2])


def record_key(record: Any) -> Any:
    """The key a record arrived with, which a dead-letter sink writes: for a key its source refused, the key
    the source read (:attr:`RefusedKey.raw`: the line's own key, or ``None``); for a record whose key was read
    from its value (``--key-field``, :mod:`~streamarms.runtime.key_field`), the record's own ``source_key``;
    else its key.

    >>> from collections import namedtuple
    >>> R, K = namedtuple("R", "key source_key"), namedtuple("K", "key")
    >>> record_key(R(b"h1", b"request-17")), record_key(R(RefusedKey.of("key_missing", "", None), b"r"))
    (b'request-17', None)
    >>> record_key(K(RefusedKey.of("bad_timestamp", "...", b"eu"))), record_key(K(b"eu"))
    (b'eu', b'eu')
    """
    key = record.key
    if type(key) is RefusedKey:
        return key.raw
    return getattr(record, "source_key", key)

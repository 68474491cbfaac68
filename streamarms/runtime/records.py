"""Why a record can be refused: :data:`INVALID_REASONS` and the :class:`InvalidRecord` error."""

from __future__ import annotations

from ..errors import StreamarmsError

__all__ = ["INVALID_REASONS", "InvalidRecord"]

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

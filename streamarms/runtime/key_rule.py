"""How a key field's text becomes the key (``--key-ids``, ``--key-match``): :class:`KeyRule`.

The field that names what to compare often carries more than the key. An access log's ``path`` holds ids --
``/api/users/8812/orders`` and ``/api/users/17/orders`` are one endpoint, and keyed by the path as written every
user's requests are a key of their own: thousands of keys of a few records each, none with the records a rate
needs. A host's name may carry a pod's suffix, a queue's name a date.

* ``ids`` (``--key-ids``): each ``/``-separated segment that is an id reads as ``:id`` -- a number, a UUID, a hex
  string of 8 or more characters with a digit (a hash, an object id), or a token of 20 or more letters, digits,
  ``-`` and ``_`` with a digit (an opaque id). ``/static/app.js`` and ``/api/v2/users`` keep their segments.
* ``match`` (``--key-match REGEX``): the key is the part of the text the regular expression finds
  (:func:`re.search`): its group named ``key`` if it has one, else its first group, else the whole match.
  A text it does not match is no key: the record is refused (``key_missing``, its dead letter naming the
  text and the pattern), never filed under a key of its own.

Both together: the ids first, then the match. A restart may change neither (the keys would change meaning).

>>> r = KeyRule(ids=True)
>>> r.apply("/api/users/8812/orders"), r.apply("/files/3f9a2b7c1d/raw"), r.apply("/static/app.js")
('/api/users/:id/orders', '/files/:id/raw', '/static/app.js')
>>> r.apply("/o/123e4567-e89b-12d3-a456-426614174000")
'/o/:id'
>>> KeyRule(match=r"^/[^/]+").apply("/api/users/1"), KeyRule(match=r"pod-(\\w+)-\\d+").apply("pod-web-7")
('/api', 'web')
>>> KeyRule(match=r"^/api").apply("/health") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["KeyRule"]

#: a path segment that is an id (module docstring)
_ID = re.compile(r"\d+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                 r"|(?=[^/]*\d)[0-9a-fA-F]{8,}|(?=[^/]*\d)[\w-]{20,}")


class KeyRule:
    """``ids`` and/or ``match`` (module docstring); :meth:`apply` gives the key of a text, or ``None`` when
    ``match`` does not find it. A bad pattern, or neither rule, is a ``ValueError``.

    >>> KeyRule(match="(").flag
    Traceback (most recent call last):
    ...
    ValueError: --key-match '(' is not a regular expression: missing ), unterminated subpattern at position 0
    """

    def __init__(self, *, match: str | None = None, ids: bool = False) -> None:
        if match is None and not ids:
            raise ValueError("a key rule needs --key-match or --key-ids")
        try:
            self.pattern = re.compile(match) if match is not None else None
        except re.error as e:
            raise ValueError(f"--key-match {match!r} is not a regular expression: {e}") from None
        self.ids = bool(ids)
        p = self.pattern
        self._group: str | int = 0 if p is None or not p.groups else ("key" if "key" in p.groupindex else 1)

    @property
    def flag(self) -> str:
        """The flags this rule is, as a message names them."""
        parts = (["--key-ids"] if self.ids else []) + (
            [f"--key-match {self.pattern.pattern!r}"] if self.pattern is not None else [])
        return " ".join(parts)

    @staticmethod
    def ids_fold(keys: Sequence[str], sample: int = 10_000) -> tuple[str, int, int] | None:
        """``(a key with an id, the keys, the keys with --key-ids)`` over the first ``sample`` of ``keys``, when
        ``--key-ids`` makes them a tenth as many or fewer (keys that are paths with ids); else ``None``.

        >>> KeyRule.ids_fold([f"/u/{i}" for i in range(100)]), KeyRule.ids_fold(["/a", "/b"])
        (('/u/0', 100, 1), None)
        """
        head = list(keys[:sample])
        rule = KeyRule(ids=True)
        folded = {rule.apply(k) for k in head}
        if not head or len(folded) * 10 > len(head):
            return None
        return next(k for k in head if rule.apply(k) != k), len(head), len(folded)

    def apply(self, text: str) -> str | None:
        if self.ids:
            text = "/".join(":id" if _ID.fullmatch(seg) else seg for seg in text.split("/"))
        if self.pattern is None:
            return text
        m = self.pattern.search(text)
        if m is None:
            return None
        key = m.group(self._group)
        return key if key is not None else m.group(0)  # (a group that did not take part: the whole match)

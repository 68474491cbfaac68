"""Whether a reward rule (``--reward-in``, ``--reward-at-least``) has ever made a reward 1:
:class:`RuleMisses`.

A rule that never matches makes every reward 0. Nothing can then stand out: an episode's keys all sit at the
threshold 0 and stay undecided, a continuous monitor never flags -- and nothing said why. The usual causes
are a case (``--reward-in ERROR`` on a log whose levels are ``error``), a typo, or a unit
(``--reward-at-least 500`` on latencies in seconds). Until the rule's first match this notes what the
field held instead (a few of its texts, or the largest number), so the run can say so; after it, nothing
(one attribute read a reward).

>>> m = RuleMisses("--reward-in ERROR,FATAL", ["ERROR", "FATAL"])
>>> for t in ["info"] * 30 + ["error"] * 3: m.miss(t)
>>> print(m.text())
--reward-in ERROR,FATAL has matched none of the rewards read, so every reward is 0 and no key can stand out. The \
field held 'info' (91%), 'error' (9.1%); 'error' differs from 'ERROR' only in case or spaces: --reward-in matches the \
exact text
>>> m.hit = True; m.text() is None
True
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["RuleMisses"]


class RuleMisses:
    """The misses of one reward rule (module docstring): ``flag`` is the rule as given (for the message),
    ``values`` the texts ``--reward-in`` matches (``None`` for ``--reward-at-least``). The codec reads each
    reward through :meth:`matched` or :meth:`at_least`, which note the misses before the rule's first 1.

    >>> m = RuleMisses("--reward-at-least 500"); m.miss_number(0.25); m.miss_number(2.5)
    >>> print(m.text())
    --reward-at-least 500 has matched none of the rewards read, so every reward is 0 and no key can stand out. \
The largest number the field held was 2.5
    """

    #: distinct texts kept (the first met; a field with more, an id, says little more)
    KEEP = 16

    def __init__(self, flag: str, values: Iterable[str] | None = None) -> None:
        self.flag = flag
        self.values = None if values is None else list(values)
        self._values = frozenset(self.values or ())
        #: whether the rule has made a reward 1
        self.hit = False
        #: rewards the rule made 0 before its first 1 (about: a key's first record may be read twice)
        self.misses = 0
        self._met: dict[str, int] = {}
        self._largest: float | None = None

    def matched(self, text: str) -> float:
        """``--reward-in``'s reward of a field's text: 1 when it is one of the values, else 0 (a miss)."""
        if text in self._values:
            self.hit = True
            return 1.0
        if not self.hit:
            self.miss(text)
        return 0.0

    def at_least(self, x: float, low: float) -> float:
        """``--reward-at-least``'s reward of a number: 1 when it is at least ``low``, else 0 (a miss)."""
        if x >= low:
            self.hit = True
            return 1.0
        if not self.hit:
            self.miss_number(x)
        return 0.0

    def miss(self, text: str) -> None:
        """A text the rule did not match (before its first match)."""
        self.misses += 1
        met = self._met
        if text in met:
            met[text] += 1
        elif len(met) < self.KEEP:
            met[text] = 1

    def miss_number(self, x: float) -> None:
        """A number below the rule's threshold (before the first at or above it)."""
        self.misses += 1
        if self._largest is None or x > self._largest:
            self._largest = x

    def text(self) -> str | None:
        """What the rule met instead, or ``None`` once it has matched (or before any reward)."""
        if self.hit or not self.misses:
            return None
        head = f"{self.flag} has matched none of the rewards read, so every reward is 0 and no key can stand out."
        if self.values is None:
            return head + ("" if self._largest is None else f" The largest number the field held was {self._largest:g}")
        met = sorted(self._met.items(), key=lambda kv: -kv[1])
        # (shares, not counts: a key's first record may be read twice, as the run meets the key)
        shown = ", ".join(f"{t[:40]!r} ({100 * n / self.misses:.2g}%)" for t, n in met[:8])
        folded = {v.strip().casefold(): v for v in self.values}
        near = [(t, folded[t.strip().casefold()]) for t, _ in met if t.strip().casefold() in folded]
        hint = "".join(f"; {t!r} differs from {v!r} only in case or spaces: {self.flag.split()[0]} matches the exact "
                       "text" for t, v in near[:2])
        return f"{head} The field held {shown}{hint}"

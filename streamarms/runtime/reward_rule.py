"""The rules that make each reward 0 or 1 (``--reward-at-least``, ``--reward-in``, ``--reward-match``):
:class:`RewardRule`.

A rate is often read from a field that is not 0/1 itself: a status code (1 when at least 500), a log level (1 when
``ERROR`` or ``FATAL``), a message (1 when it says ``timed out``). A rule turns the field into the reward; the
codec (:class:`~streamarms.runtime.codec.RewardCodec`) reads each record's reward through it.

A rule that never matches makes every reward 0. Nothing can then stand out: an episode's keys all sit at the
threshold 0 and stay undecided, a continuous monitor never flags -- and nothing said why. The usual causes are a
case (``--reward-in ERROR`` on a log whose levels are ``error``), a typo, or a unit (``--reward-at-least 500`` on
latencies in seconds). Until the rule's first match it notes what the field held instead (a few of its texts, or
the largest number), so the run can say so (:meth:`RewardRule.unmatched`); after it, nothing (one attribute store
a reward).

>>> r = RewardRule(values=["ERROR", "FATAL"])
>>> [r.of_text(t) for t in ["info"] * 30 + ["error"] * 3][-1]
0.0
>>> print(r.unmatched())
--reward-in ERROR,FATAL has matched none of the rewards read, so every reward is 0 and no key can stand out. The \
field held 'info' (91%), 'error' (9.1%); 'error' differs from 'ERROR' only in case or spaces: --reward-in matches the \
exact text
>>> r.of_text("FATAL"), r.unmatched()
(1.0, None)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["RewardRule"]


class RewardRule:
    """One rule (module docstring), exactly one of: ``at_least`` (the reward is 1 when the field's number is at
    least it), ``values`` (1 when the field's text is one of them), ``pattern`` (1 when the regular expression is
    found in the field's text, :func:`re.search`). :meth:`of_number` / :meth:`of_text` give a reward; a bad rule is
    a ``ValueError``. :meth:`of` builds the codec's rule (or none) and checks that it goes with the rest.

    >>> r = RewardRule(at_least=500); r.of_number(503.0), r.of_number(200.0)
    (1.0, 0.0)
    >>> r = RewardRule(pattern="timed? out"); r.of_text("upstream timed out (110)"), r.flag
    (1.0, "--reward-match 'timed? out'")
    >>> RewardRule(at_least=500, values=["x"])
    Traceback (most recent call last):
    ...
    ValueError: at_least, reward_in and reward_match are three rules for one reward: give one
    """

    #: distinct texts kept while the rule has not matched (the first met; a field with more, an id, says little more)
    KEEP = 16

    def __init__(self, *, at_least: float | None = None, values: Sequence[str] | None = None,
                 pattern: str | None = None) -> None:
        if sum(x is not None for x in (at_least, values, pattern)) != 1:
            raise ValueError("at_least, reward_in and reward_match are three rules for one reward: give one")
        if at_least is not None and (isinstance(at_least, bool) or not isinstance(at_least, (int, float))
                                     or not math.isfinite(at_least)):
            raise ValueError(f"at_least must be a finite number, got {at_least!r}")
        if values is not None and (isinstance(values, str) or not values or not all(isinstance(v, str) for v in values)):
            raise ValueError(f"reward_in must be texts to match, at least one, got {values!r}")
        self.at_least = at_least
        self.values = None if values is None else list(values)
        self._values = frozenset(self.values or ())
        self.pattern: re.Pattern[str] | None = None
        if pattern is not None:
            try:
                self.pattern = re.compile(pattern)
            except (re.error, TypeError) as e:
                raise ValueError(f"reward_match {pattern!r} is not a regular expression: {e}") from None
        #: the rule as the command line gives it (for messages)
        self.flag = (f"--reward-at-least {at_least:g}" if at_least is not None else
                     f"--reward-in {','.join(self.values or ())}" if values is not None else f"--reward-match {pattern!r}")
        #: whether the rule has made a reward 1
        self.hit = False
        #: rewards the rule made 0 before its first 1 (about: a key's first record may be read twice)
        self.misses = 0
        self._met: dict[str, int] = {}
        self._largest: float | None = None

    @classmethod
    def of(cls, at_least: float | None, values: Sequence[str] | None, pattern: str | None, clip: bool,
           model: Any) -> RewardRule | None:
        """The codec's rule, or ``None`` (no rule given): a ``ValueError`` for two rules, a rule with ``clip``
        (every reward is 0 or 1: nothing to clip) or a ``model`` that does not hold 0 and 1."""
        if at_least is None and values is None and pattern is None:
            return None
        rule = cls(at_least=at_least, values=values, pattern=pattern)
        name = "at_least" if at_least is not None else "reward_in" if values is not None else "reward_match"
        if clip:
            raise ValueError(f"{name} makes every reward 0 or 1: there is nothing to clip")
        if model is not None and not model.holds_flags():
            raise ValueError(f"{name} makes the rewards 0 and 1, which the {model.name} reward model does not hold "
                             "(use the Bernoulli model, the default)")
        return rule

    def of_number(self, x: float) -> float:
        """``at_least``'s reward of a number: 1 when it is at least the rule's, else 0 (a miss)."""
        assert self.at_least is not None
        if x >= self.at_least:
            self.hit = True
            return 1.0
        if not self.hit:
            self.misses += 1
            if self._largest is None or x > self._largest:
                self._largest = x
        return 0.0

    def of_text(self, text: str) -> float:
        """``values``' or ``pattern``'s reward of a field's text: 1 when it is one of the values (the pattern is
        found in it), else 0 (a miss)."""
        if (text in self._values) if self.pattern is None else (self.pattern.search(text) is not None):
            self.hit = True
            return 1.0
        if not self.hit:
            self.misses += 1
            met = self._met
            if text in met:
                met[text] += 1
            elif len(met) < self.KEEP:
                met[text] = 1
        return 0.0

    def unmatched(self) -> str | None:
        """What the rule met instead of a match, or ``None`` once it has matched (or before any reward)."""
        if self.hit or not self.misses:
            return None
        head = f"{self.flag} has matched none of the rewards read, so every reward is 0 and no key can stand out."
        if self.at_least is not None:
            return head + ("" if self._largest is None else f" The largest number the field held was {self._largest:g}")
        met = sorted(self._met.items(), key=lambda kv: -kv[1])
        # (shares, not counts: a key's first record may be read twice, as the run meets the key)
        shown = ", ".join(f"{t[:40]!r} ({100 * n / self.misses:.2g}%)" for t, n in met[:8])
        return f"{head} The field held {shown}{self._near(met)}"

    def _near(self, met: list[tuple[str, int]]) -> str:
        """The texts met that a value (the pattern) would match but for their case or spaces."""
        flag = self.flag.split()[0]
        if self.pattern is not None:
            folded = re.compile(self.pattern.pattern, self.pattern.flags | re.IGNORECASE)
            near = [t for t, _ in met if folded.search(t)]
            return (f"; {near[0]!r} would match but for its case: {flag} is case-sensitive, (?i) at the start of "
                    "the pattern makes it not") if near else ""
        values = {v.strip().casefold(): v for v in self.values or ()}
        pairs = [(t, values[t.strip().casefold()]) for t, _ in met if t.strip().casefold() in values]
        return "".join(f"; {t!r} differs from {v!r} only in case or spaces: {flag} matches the exact text"
                       for t, v in pairs[:2])

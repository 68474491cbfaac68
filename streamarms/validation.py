"""Shared validation: one home for the checks that the policies, the reward models and the command
line all need.

>>> finite_reward("a", 0.5), finite_reward("a", 1)
(0.5, 1.0)
>>> finite_reward("a", "0.5")
Traceback (most recent call last):
...
ValueError: reward for arm 'a' is not a number: '0.5' (a str)
>>> finite_reward("a", float("nan"))
Traceback (most recent call last):
...
ValueError: reward for arm 'a' is not finite: nan
>>> finite_reward("a", 10 ** 400)
Traceback (most recent call last):
...
ValueError: reward for arm 'a' is not finite: an integer of 1329 bits (too large for a float)
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

__all__ = ["finite_reward", "check_k", "check_ksigma_params", "K_MAX", "short_repr", "json_kind", "json_error_text", "JSON_NAMES"]

#: the largest k of a k-sigma rule: one of n keys is at most sqrt(n - 1) standard deviations from their
#: mean, so a larger k flags no key of fewer than a million: a typo, whose squares overflow the intervals'
#: arithmetic long before the largest float (``--k 1e308``)
K_MAX = 1000.0


def finite_reward(arm: str | None, reward: Any) -> float:
    """The reward as a float, or ``ValueError`` naming the arm and the value (not a number, not finite);
    ``arm=None``: a value with no arm (an estimator's input), named "value".

    A number is anything ``float`` takes (``int``, ``float``, ``Fraction``, ``Decimal``, numpy's scalars)
    but a string (``"1"`` is an unparsed field upstream, which ``float`` would hide) or a boolean (a policy
    takes numbers: ``int(flag)`` says it on purpose; the record readers -- the daemon's codec and
    ``OutlierArmDetector`` -- read a record's flag as 1 or 0 themselves, under a reward model of rates).

    >>> finite_reward(None, float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: value is not finite: inf
    >>> finite_reward("a", True)
    Traceback (most recent call last):
    ...
    ValueError: reward for arm 'a' is a boolean, not a number: True (give int(reward))
    >>> import numpy as np
    >>> finite_reward("a", np.True_)
    Traceback (most recent call last):
    ...
    ValueError: reward for arm 'a' is a boolean, not a number: np.True_ (give int(reward))
    """
    t = type(reward)
    if t is not float and t is not int:  # (the hot path: one type check; anything else is looked at)
        if isinstance(reward, bool) or t.__name__ in ("bool", "bool_"):  # (numpy's bool, without numpy)
            raise ValueError(f"{_what(arm)} is a boolean, not a number: {reward!r} (give int(reward))")
        if isinstance(reward, (str, bytes, bytearray)):
            raise ValueError(f"{_what(arm)} is not a number: {short_repr(reward)} (a {t.__name__})")
    try:
        x = float(reward)
    except (TypeError, ValueError):
        raise ValueError(f"{_what(arm)} is not a number: {short_repr(reward)}") from None
    except OverflowError:  # an integer beyond the floats: not finite, as the daemon's decoder reads it
        raise ValueError(f"{_what(arm)} is not finite: {short_repr(reward)}") from None
    if not math.isfinite(x):
        raise ValueError(f"{_what(arm)} is not finite: {reward!r}")
    return x


def _what(arm: str | None) -> str:
    return "value" if arm is None else f"reward for arm {arm!r}"


def check_k(k: Any, *, zero_ok: bool = False, rule: str = "") -> float:
    """``k`` of a k-sigma rule as a float: finite, > 0 (``zero_ok``: >= 0) and at most :data:`K_MAX`, else
    ``ValueError`` (``rule``: how the threshold uses k, for the message).

    >>> from fractions import Fraction
    >>> check_k(3), check_k(0, zero_ok=True), check_k(Fraction(5, 2))
    (3.0, 0.0, 2.5)
    >>> check_k(1e308)
    Traceback (most recent call last):
    ...
    ValueError: k must be a finite number > 0 and at most 1000, got 1e+308: one of n keys is at most sqrt(n - 1) standard deviations from their mean, so a larger k flags no key of fewer than a million
    """
    # (numpy's numbers are numbers -- np.float32(2.0) was "not a finite number"; True is not, k=True was 1)
    finite = isinstance(k, numbers.Real) and not isinstance(k, bool) and math.isfinite(k)
    if finite and (0 < k <= K_MAX or (zero_ok and k == 0)):
        return float(k)
    why = "" if not (finite and k > K_MAX) else ": a larger k is taken for a typo" if rule else \
        ": one of n keys is at most sqrt(n - 1) standard deviations from their mean, so a larger k flags no key of " \
        "fewer than a million"
    raise ValueError(f"k must be a finite number {'>=' if zero_ok else '>'} 0{rule} and at most {K_MAX:g}, "
                     f"got {k!r}{why}")


def short_repr(value: Any) -> str:
    """A value for an error message: its ``repr``, cut at 80 characters; a list, tuple or dict by its size
    (never the repr of a huge structure), an integer too large for a float by its size (its repr may
    have thousands of digits, or be refused beyond ``sys.get_int_max_str_digits()``).

    >>> short_repr(2 ** 2000), short_repr("x"), short_repr([1, 2])
    ('an integer of 2001 bits (too large for a float)', "'x'", 'a list of 2 entries')
    """
    if isinstance(value, (dict, list, tuple)):
        return f"a {type(value).__name__} of {len(value)} entries"
    if isinstance(value, int) and value.bit_length() > 1024:
        return f"an integer of {value.bit_length()} bits (too large for a float)"
    r = repr(value)
    return r if len(r) <= 80 else r[:77] + "..."


def check_ksigma_params(k: Any, delta: Any, n: int) -> None:
    """The k-sigma policies' parameters: ``k`` in (0, :data:`K_MAX`], ``delta`` in (0, 1), at least 2 arms.

    >>> check_ksigma_params(2.0, 0.1, 5)
    >>> check_ksigma_params(2.0, 1.5, 5)
    Traceback (most recent call last):
    ...
    ValueError: delta must be in (0, 1), got 1.5
    """
    check_k(k)
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if n < 2:
        raise ValueError(f"the k-sigma rule needs at least 2 arms, got {n}")


#: what a JSON value is, for the dead letters' details
JSON_NAMES = {str: "a string", bool: "a boolean", list: "an array", dict: "an object", type(None): "null",
              int: "an integer", float: "a number"}


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words (not Python's: ``NoneType``, ``list``, ``dict``), named JSON's.

    >>> json_kind([1]), json_kind(None), json_kind({"a": 1}), json_kind(True)
    ('a JSON array', 'null', 'a JSON object', 'a JSON boolean')
    """
    name = JSON_NAMES.get(type(value))
    if name is None or value is None:
        return name or f"a {type(value).__name__}"
    return "a JSON " + name.split(" ", 1)[1]


def json_error_text(e: BaseException) -> str:
    """Why a text is not JSON, for a dead letter: the parser's error, or for an integer of more digits than Python
    converts (valid JSON: ``sys.get_int_max_str_digits()``), that -- not its advice to raise the limit, cut short.

    >>> import json
    >>> try:
    ...     json.loads("1" * 5000)
    ... except ValueError as e:
    ...     print(json_error_text(e))
    a number of more than 4,300 digits (no reward or time has that many)
    """
    text = str(e)
    if "integer string conversion" in text:
        return f"a number of more than {sys.get_int_max_str_digits():,} digits (no reward or time has that many)"
    return f"{type(e).__name__}: {text[:120]}"

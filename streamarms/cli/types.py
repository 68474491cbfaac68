"""Argument types shared by the sub-commands: each turns a flag's text into a value or raises
:class:`argparse.ArgumentTypeError` with a one-line message (argparse then exits 2).

>>> positive_int("3"), finite("0.5"), port("8080")
(3, 0.5, 8080)
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any

from ..runtime.clock import iso_ms

__all__ = ["match_pattern", "arm_means", "key_names", "positive_int", "budget", "finite", "nonneg_float", "port", "probability", "start_from",
           "allow_negative_lists"]

#: a negative number, or a comma-separated list of numbers that starts with one (``-20,20``, ``-1e3,0.5``):
#: Python 3.11's argparse takes the list for a flag ("expected one argument") unless told otherwise
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$|^-[\d.]+(?:[eE][-+]?\d+)?(?:,\s*-?[\d.]+(?:[eE][-+]?\d+)?)+$")


def allow_negative_lists(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Let ``parser`` take ``--reward-range -20,20`` (a value starting with a minus sign) as a value.

    >>> p = allow_negative_lists(argparse.ArgumentParser())
    >>> _ = p.add_argument("--reward-range")
    >>> p.parse_args(["--reward-range", "-20,20"]).reward_range
    '-20,20'
    """
    parser._negative_number_matcher = _NEGATIVE
    return parser


#: the largest ``--means @FILE`` read (1e5 means are ~2 MB)
MAX_MEANS_CHARS = 64 << 20


def arm_means(text: str) -> list[float]:
    """``--means 0.1,0.2,..``, or ``--means @FILE``: the numbers of a text file, separated by commas, blanks or
    line breaks (a long instance: a command line holds at most 128 KiB in one argument on Linux, ~15k means).

    >>> arm_means("0.1, 0.2,0.9")
    [0.1, 0.2, 0.9]
    >>> arm_means("@/nonexistent/means.txt")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: @/nonexistent/means.txt: cannot read /nonexistent/means.txt: No such file or directory
    """
    named = text
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as f:
                text = f.read(MAX_MEANS_CHARS + 1)  # (@/dev/zero: not read without end)
            if len(text) > MAX_MEANS_CHARS:
                raise argparse.ArgumentTypeError(f"{named}: more than {MAX_MEANS_CHARS >> 20} MiB: no file of means is")
        except OSError as e:
            raise argparse.ArgumentTypeError(f"{named}: cannot read {text[1:]}: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise argparse.ArgumentTypeError(f"{named}: {text[1:]} is not a text file (UTF-8)") from None
    if (gap := re.search(r",[^\S\n]*,", text)) is not None:  # ("0.1,,0.3" ran two arms, the gap dropped in silence)
        raise argparse.ArgumentTypeError(f"{named[:80]}: an empty item between two commas (at character "
                                         f"{gap.start() + 1:,}): a mean is missing, or a comma is one too many")
    fields = [v for v in re.split(r"[,\s]+", text) if v]
    vals = []
    for v in fields:
        try:
            vals.append(float(v))
        except ValueError:
            where = f"{named}: " if named != text else ""
            raise argparse.ArgumentTypeError(f"{where}expected numbers separated by commas, got {v[:40]!r}"
                                             + ("" if where else f" in {text[:80]!r}")) from None
    if len(vals) < 2:
        raise argparse.ArgumentTypeError(f"{named[:80] + ': ' if named != text else ''}needs at least 2 arms, got "
                                         f"{len(vals)}")
    if not all(math.isfinite(v) for v in vals):
        raise argparse.ArgumentTypeError(f"{named[:80] + ': ' if named != text else ''}expected finite numbers")
    return vals


def key_names(text: str) -> list[str]:
    """``--arms A,B,..``: the key names (blanks around them dropped), at least one.

    >>> key_names("eu, us,")
    ['eu', 'us']
    >>> key_names(",,")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected key names A,B,.. (at least one; leave the flag out to take every key), got ',,'
    """
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected key names A,B,.. (at least one; leave the flag out to take every "
                                         f"key), got {text!r}")
    return names


def match_values(text: str) -> list[str]:
    """``--reward-in V,W,..``: the texts a reward field is matched against (blanks around them dropped), at least one.

    >>> match_values("ERROR, FATAL")
    ['ERROR', 'FATAL']
    >>> match_values(" ")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected the texts to match V,W,.. (at least one), got ' '
    """
    values = [a.strip() for a in text.split(",") if a.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected the texts to match V,W,.. (at least one), got {text!r}")
    return values


def match_pattern(text: str) -> str:
    """``--reward-match REGEX``: a regular expression (checked here: a bad one is a usage error naming it).

    >>> match_pattern("timed? out")
    'timed? out'
    >>> match_pattern("(unclosed")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a regular expression, got '(unclosed' (missing ), unterminated subpattern at position 0)
    """
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"expected a regular expression, got {text!r} ({e})") from None
    if not text:
        raise argparse.ArgumentTypeError("expected a regular expression, got '' (it would match every text)")
    return text


def _number(text: str, conv: Callable[[str], Any], ok: Callable[[Any], bool], unparsed: str, bad: str) -> Any:
    """``conv(text)`` if ``ok`` of it, else :class:`argparse.ArgumentTypeError` (``unparsed`` when
    ``conv`` fails, ``bad`` when the value is out of range), each followed by ``, got {text!r}``."""
    try:
        v = conv(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{unparsed}, got {text!r}") from None
    if not ok(v):
        raise argparse.ArgumentTypeError(f"{bad}, got {text!r}")
    return v


def positive_int(text: str) -> int:
    return _number(text, int, lambda v: v > 0, "expected a positive integer", "expected a positive integer")


def nonneg_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 0, "expected an integer >= 0", "expected an integer >= 0")


def budget(text: str) -> int:
    what = "--budget must be a non-negative integer"
    return int(_number(text, float, lambda v: math.isfinite(v) and v >= 0 and v == int(v), what, what))


def finite(text: str) -> float:
    return _number(text, float, math.isfinite, "expected a number", "expected a finite number")


def nonneg_float(text: str) -> float:
    return _number(text, float, lambda v: v >= 0, "expected a number of seconds", "expected a number >= 0")


def port(text: str) -> int:
    return _number(text, int, lambda v: 0 <= v <= 65535, "expected a TCP port", "a TCP port is in 0..65535")


def probability(text: str) -> float:
    return _number(text, float, lambda v: 0.0 < v < 1.0, "expected a probability", "expected a number in (0, 1)")


def start_from(text: str) -> str | int:
    """``earliest``, ``latest``, a timestamp in milliseconds since the epoch, or an ISO 8601 date-time (UTC
    unless it says otherwise) -> ``"earliest"``, ``"latest"`` or milliseconds.

    >>> start_from("latest"), start_from("1700000000000"), start_from("2023-11-14T22:13:20Z")
    ('latest', 1700000000000, 1700000000000)
    >>> start_from("yesterday")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected earliest, latest, milliseconds since the epoch or an ISO 8601 date-time, got 'yesterday'
    """
    t = text.strip()
    if t in ("earliest", "latest"):
        return t
    if t.isdigit():
        return int(t)
    ms = iso_ms(t, strict=False)
    if ms is None:
        raise argparse.ArgumentTypeError(f"expected earliest, latest, milliseconds since the epoch or an ISO 8601 "
                                         f"date-time, got {text!r}")
    if ms < 0:
        raise argparse.ArgumentTypeError(f"a timestamp before 1970, got {text!r}")
    return ms

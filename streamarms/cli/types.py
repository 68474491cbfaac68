"""Argument types shared by the sub-commands: each turns a flag's text into a value or raises
:class:`argparse.ArgumentTypeError` with a one-line message (argparse then exits 2).

>>> positive_int("3"), finite("0.5"), port("8080")
(3, 0.5, 8080)
"""

from __future__ import annotations

import argparse
import math

__all__ = ["arm_means", "positive_int", "budget", "finite", "nonneg_float", "port"]


def arm_means(text: str) -> list[float]:
    try:
        vals = [float(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--means must be comma-separated numbers, got {text!r}") from None
    if len(vals) < 2:
        raise argparse.ArgumentTypeError("--means needs at least 2 arms")
    if not all(math.isfinite(v) for v in vals):
        raise argparse.ArgumentTypeError("--means must be finite numbers")
    return vals


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def budget(text: str) -> int:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--budget must be a non-negative integer, got {text!r}") from None
    if not math.isfinite(v) or v < 0 or v != int(v):
        raise argparse.ArgumentTypeError(f"--budget must be a non-negative integer, got {text!r}")
    return int(v)


def finite(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def nonneg_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return v


def port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a TCP port, got {text!r}") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is in 0..65535, got {text!r}")
    return v

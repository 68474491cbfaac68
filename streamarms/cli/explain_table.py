"""``streamarms explain CHECKPOINT --table``: every key's evidence as a text table, for a person.

One row a key: its state, estimate, interval, samples and margin (the gap between its interval and the
threshold's in units of their half-widths: positive once classified), whether an outlier alert stands for
it, and in the continuous mode its group. Outliers first, then undecided keys, then normal ones, each by
estimate, highest first; the threshold (each group's, in the continuous mode) heads the table. The JSON of
``explain`` (without ``--table``) holds the same numbers unrounded.

>>> rows = [{"key": "h2", "state": "normal", "estimate": 0.021, "interval": [0.01, 0.03], "samples": 800,
...          "margin": 1.2}, {"key": "h9", "state": "outlier", "estimate": 0.13, "interval": [0.1, 0.16],
...          "samples": 2263, "margin": 0.4}]
>>> print(table(rows, ["threshold 0.0770 [0.0454, 0.0948]"]))
threshold 0.0770 [0.0454, 0.0948]
key  state    estimate  interval      samples  margin
h9   outlier  0.13      [0.1, 0.16]     2,263  +0.4
h2   normal   0.021     [0.01, 0.03]      800  +1.2
margin: the gap between the key's interval and the threshold's over the sum of their half-widths (> 0: apart, the key classified; < 0: they overlap)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .one_line import one_line

__all__ = ["table", "interval_text", "ordered"]

_ORDER = {"outlier": 0, "undecided": 1, "normal": 2}
#: the table's last line: what the margin column means
MARGIN_LEGEND = ("margin: the gap between the key's interval and the threshold's over the sum of their half-widths "
                 "(> 0: apart, the key classified; < 0: they overlap)")


def interval_text(iv: Sequence[float | None] | None) -> str:
    """``[lo, hi]`` with 4 significant digits (``-`` for none, ``inf`` for an open end).

    >>> interval_text([0.045402983, None]), interval_text(None)
    ('[0.0454, inf]', '-')
    """
    if iv is None:
        return "-"
    return "[" + ", ".join("inf" if x is None else f"{x:.4g}" for x in iv) + "]"


def _number(x: Any, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def ordered(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows outliers first, then undecided keys, then normal ones, each by estimate, highest first."""
    return sorted(rows, key=lambda r: (_ORDER.get(r.get("state", ""), 3), -(r.get("estimate") or 0.0), r["key"]))


def table(rows: Iterable[dict[str, Any]], head: Sequence[str] = (), top: int | None = None) -> str:
    """The rows (a key's evidence each, as ``explain KEY`` gives it) as an aligned text table under the
    ``head`` lines; ``top``: the first that many rows only (a line then says how many are left out)."""
    rows = ordered(rows)
    grouped, flags = any("group" in r for r in rows), any("flagged" in r for r in rows)
    cols = ["key", *(["group"] if grouped else []), "state", "estimate", "interval", "samples", "margin",
            *(["flagged"] if flags else [])]
    shown = rows if top is None else rows[:top]
    cells = [[one_line(str(r["key"])), *([one_line(str(r.get("group", "")))] if grouped else []), str(r.get("state", "")),
              _number(r.get("estimate"), ".4g"), interval_text(r.get("interval")), _number(r.get("samples"), ","),
              _number(r.get("margin"), "+.2g"), *(["yes" if r.get("flagged") else ""] if flags else [])]
             for r in shown]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(cols)]
    right = {cols.index("samples")}
    lines = list(head)
    for row in [cols, *cells]:
        lines.append("  ".join(v.rjust(w) if i in right and row is not cols else v.ljust(w)
                               for i, (v, w) in enumerate(zip(row, widths))).rstrip())
    if len(shown) < len(rows):
        lines.append(f"... {len(rows) - len(shown):,} more keys (--top)")
    if shown:
        lines.append(MARGIN_LEGEND)
    return "\n".join(lines)

"""``streamarms explain CHECKPOINT --plot FILE.png``: every key's evidence as a picture, for a person.

One row a key (the order of ``--table``: outliers, then undecided keys, then normal ones, each by estimate,
highest first), its estimate a dot and its interval a bar, coloured by its state (outlier red, undecided
orange, normal grey; a key with a standing alert has its name in bold); the threshold a vertical line and its
interval a shaded band (a two-sided policy's lower threshold too). A key is classified once its bar and the
band are apart, so the picture shows at a glance which keys are decided and how far each undecided one has to
go. The continuous mode draws one panel a group (each group has its own threshold). ``--top N`` (40 by
default) draws the first N keys of each panel; the title says how many were left out. matplotlib draws it
(``pip install 'streamarms[plot]'``); it is imported only here.

>>> rows = [{"key": "h9", "state": "outlier", "estimate": 0.13, "interval": [0.1, 0.16], "flagged": True},
...         {"key": "h2", "state": "normal", "estimate": 0.021, "interval": [0.01, 0.03]},
...         {"key": "h5", "state": "undecided", "estimate": 0.07, "interval": [0.05, None]}]
>>> p = Panel("episode 1", rows, [(0.077, (0.0454, 0.0948))])
>>> [r["key"] for r in p.shown(2)], [round(x, 3) for x in p.limits()]
(['h9', 'h5'], [0.0, 0.175])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .explain_table import ordered

__all__ = ["Panel", "draw", "TOP", "plot_problem"]

#: keys drawn a panel without ``--top``
TOP = 40
_COLOURS = {"outlier": "#d62728", "undecided": "#ff7f0e", "normal": "#7f7f7f"}


@dataclass
class Panel:
    """One threshold's keys: ``rows`` (a key's evidence each, as ``explain KEY`` gives it) and ``thresholds``
    (the estimate and interval of each threshold they are judged against; an end ``None`` is open)."""

    title: str
    rows: list[dict[str, Any]]
    thresholds: list[tuple[float | None, tuple[float | None, float | None]]] = field(default_factory=list)

    def shown(self, top: int) -> list[dict[str, Any]]:
        """The first ``top`` rows with an estimate, in ``--table``'s order."""
        return ordered(r for r in self.rows if r.get("estimate") is not None)[:top]

    def limits(self, top: int = TOP) -> tuple[float, float]:
        """The x range: every finite end drawn, widened by a tenth of its width (a key's open end runs to it), from
        0 when nothing drawn is below 0 and 0 is near."""
        xs = [x for r in self.shown(top) for x in (r["estimate"], *(r.get("interval") or ())) if x is not None]
        xs += [x for est, band in self.thresholds for x in (est, *band) if x is not None]
        lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
        pad = (hi - lo) / 10 or abs(hi) / 10 or 1.0
        return (0.0 if 0 <= lo < pad else lo - pad), hi + pad  # (no negative axis for keys that cannot go below 0)


def plot_problem(path: str) -> str | None:
    """Why ``--plot path`` cannot be drawn before anything is read (matplotlib missing, a file type it does not
    write), or ``None``.

    >>> plot_problem("keys.xyz")[:61], plot_problem("keys.svg")
    ('--plot keys.xyz: .xyz is no file type matplotlib writes: name', None)
    """
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return "--plot draws with matplotlib, which is not installed: pip install 'streamarms[plot]'"
    from matplotlib.backend_bases import FigureCanvasBase

    kinds = FigureCanvasBase.get_supported_filetypes()
    kind = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if kind not in kinds:
        what = f".{kind} is no file type matplotlib writes" if kind else "the name has no file type"
        return f"--plot {path}: {what}: name the file .png, .svg or .pdf (or {', '.join(sorted(kinds))})"
    return None


def draw(panels: Sequence[Panel], path: str, title: str, top: int = TOP) -> int:
    """Write the panels' picture to ``path`` (its type by its name: ``.png``, ``.svg``, ``.pdf``); the keys drawn.
    ``ImportError`` naming the extra when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("--plot draws with matplotlib, which is not installed: pip install 'streamarms[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heights = [max(len(p.shown(top)), 1) for p in panels]
    fig, axes = plt.subplots(len(panels), 1, squeeze=False, figsize=(8, 1.2 + 0.28 * sum(heights) + 0.6 * len(panels)),
                             gridspec_kw={"height_ratios": heights})
    drawn = 0
    for ax, panel in zip(axes[:, 0], panels):
        drawn += _panel(ax, panel, top)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return drawn


def _panel(ax: Any, panel: Panel, top: int) -> int:
    rows = panel.shown(top)
    lo, hi = panel.limits(top)
    for est, (a, b) in panel.thresholds:
        ax.axvspan(lo if a is None else a, hi if b is None else b, color="#1f77b4", alpha=0.15, lw=0)
        if est is not None:
            ax.axvline(est, color="#1f77b4", lw=1)
    for y, r in enumerate(rows):
        a, b = r.get("interval") or (None, None)
        colour = _COLOURS.get(r.get("state", ""), "#7f7f7f")
        ax.plot([lo if a is None else a, hi if b is None else b], [y, y], color=colour, lw=2, solid_capstyle="butt")
        ax.plot([r["estimate"]], [y], "o", color=colour, ms=4)
    ax.set_yticks(range(len(rows)), [str(r["key"])[:32] for r in rows], fontsize=8)
    for label, r in zip(ax.get_yticklabels(), rows):
        if r.get("flagged"):
            label.set_fontweight("bold")
    ax.set_ylim(len(rows) - 0.5 if rows else 0.5, -0.5)
    ax.set_xlim(lo, hi)
    left = sum(r.get("estimate") is not None for r in panel.rows) - len(rows)
    waiting = sum(r.get("estimate") is None for r in panel.rows)
    notes = [f"{left:,} more keys (--top)" if left else "", f"{waiting:,} without an estimate yet" if waiting else ""]
    ax.set_title("; ".join([panel.title, *(n for n in notes if n)]), fontsize=9, loc="left")
    ax.grid(axis="x", alpha=0.3)
    states = [s for s in _COLOURS if any(r.get("state") == s for r in rows)]
    if states:
        from matplotlib.lines import Line2D

        ax.legend([Line2D([], [], color=_COLOURS[s], marker="o", ms=4, lw=2) for s in states], states, fontsize=7,
                  loc="lower right", framealpha=0.8)
    if not math.isinf(lo):
        ax.set_xlabel("mean reward: estimate and interval; the band is the threshold's interval", fontsize=8)
    return len(rows)

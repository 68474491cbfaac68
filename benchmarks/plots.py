"""Plots of the benchmark results, for the README: reads the text the benchmarks print (saved in
``benchmarks/results/<name>.txt``) and writes ``benchmarks/results/<name>.png`` with matplotlib.

Reproduce (``pip install -e '.[bench]'`` for matplotlib)::

    python benchmarks/thresholding.py --no-cost > benchmarks/results/thresholding.txt
    python benchmarks/heavy_tails.py            > benchmarks/results/heavy_tails.txt
    python benchmarks/policy_speed.py           > benchmarks/results/policy_speed.txt
    PYTHONPATH=. python benchmarks/ade_vs_rr.py > benchmarks/results/ade_vs_rr.txt
    python benchmarks/plots.py                  # every results file present -> its PNG

The plots show the numbers of the text files, nothing else; a missing file is skipped with a note.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
NUM = re.compile(r"-?[0-9][0-9,]*\.?[0-9]*(?:e[-+]?[0-9]+)?")


def number(s: str) -> float | None:
    """``'3,504,858'`` -> 3504858.0, ``' *0.500±0.045'`` -> 0.5, ``'-'`` -> None."""
    m = NUM.search(s)
    return None if m is None else float(m.group().replace(",", ""))


def md_tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """Markdown tables in ``text``: (the non-table line just before, header cells, body rows)."""
    out: list[tuple[str, list[str], list[list[str]]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and set(lines[i + 1].replace("|", "")) <= set("-: "):
            title = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()
                          and not lines[j].startswith("|")), "")
            head = [c.strip() for c in lines[i].strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            out.append((title, head, rows))
        else:
            i += 1
    return out


def save(fig, name: str) -> None:
    path = RESULTS / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path.relative_to(RESULTS.parents[1])}")


def thresholding(text: str) -> None:
    """Mean misclassified arms vs budget, one panel per setup of Tao et al. (NeurIPS 2019)."""
    tables = [t for t in md_tables(text) if t[1] and t[1][0] == "T"]
    setups = list(re.finditer(r"Setup (\d+): K = (\d+)", text))  # one per table, in order
    fig, axes = plt.subplots(1, len(tables), figsize=(5 * len(tables), 4), squeeze=False)
    for ax, (title, head, rows) in zip(axes[0], tables):
        T = [number(r[0]) for r in rows]
        for j, name in enumerate(head[1:], start=1):
            if name.startswith("UCBE(-1)") or name == "APT(0)":
                continue  # far off the others; in the text file
            mean = [number(r[j]) for r in rows]
            se = [number(r[j].split("±")[1]) if "±" in r[j] else 0.0 for r in rows]
            style = dict(lw=2.5, color="black") if name == "LSA" else dict(lw=1.2)
            ax.errorbar(T, mean, yerr=se, label=name, marker="o", ms=3, capsize=2, **style)
        m = setups.pop(0) if setups else None
        ax.set_title(f"Setup {m.group(1)} (K = {m.group(2)})" if m else title)
        ax.set_xscale("log")
        ax.set_xticks(T, [f"{t:,.0f}" for t in T], fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("budget T (samples)")
        ax.set_ylabel("mean misclassified arms")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Known threshold on a budget: LSA vs baselines (200 seeded runs, ± s.e.)")
    save(fig, "thresholding")


def heavy_tails(text: str) -> None:
    """SE-delta samples / accuracy, and SR-T error vs budget (Yu et al., UAI 2018 instances)."""
    tables = md_tables(text)
    se = next(t for t in tables if t[1][0] == "instance")
    sr = [t for t in tables if t[1][0] == "T"]
    fig, axes = plt.subplots(1, 1 + len(sr), figsize=(max(7, 5 * (1 + len(sr))), 4.5), squeeze=False)
    ax = axes[0][0]
    names = se[1][1:]
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        xs, ys, oks = [], [], []
        for i, row in enumerate(se[2]):
            ok, pulls = (number(p) for p in row[j + 1].split("/"))
            xs.append(i + (j - (len(names) - 1) / 2) * width)
            ys.append(pulls)
            oks.append(ok)
        bars = ax.bar(xs, ys, width, label=name)
        for b, ok in zip(bars, oks):
            ax.annotate(f"{ok:.2f}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                        va="bottom", fontsize=7, color="red" if ok is not None and ok < 0.9 else "black")
    ax.set_xticks(range(len(se[2])), [r[0] for r in se[2]])
    ax.set_yscale("log")
    ax.set_ylabel("mean samples to stop (label: fraction correct)")
    ax.set_title("SE-delta, delta = 0.1 (UAI 2018 instances)", fontsize=10)
    ax.legend(fontsize=7)
    for ax, (title, head, rows) in zip(axes[0][1:], sr):
        T = [number(r[0]) for r in rows]
        for j, name in enumerate(head[1:], start=1):
            ax.plot(T, [number(r[j]) for r in rows], marker="o", label=name)
        ax.set_title(f"SR-T on {title.strip(':')}")
        ax.set_xscale("log")
        ax.set_xlabel("budget T")
        ax.set_ylabel("P(wrong arm)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Best arm, heavy tails (Student-t, 3 d.o.f.):\na Hoeffding-style radius stops early and is wrong")
    save(fig, "heavy_tails")


def ade_vs_rr(text: str) -> None:
    """Pulls to finish vs number of keys, ADE vs RR vs WRR (one pull per step), per interval kind."""
    blocks = re.split(r"\n\s*intervals: ", text)[1:]
    fig, axes = plt.subplots(1, len(blocks), figsize=(5.5 * len(blocks), 4), squeeze=False)
    for ax, block in zip(axes[0], blocks):
        kind = block.split()[0]
        rows = []
        for ln in block.splitlines()[2:]:  # the table ends at its first non-numeric line
            if not re.match(r"\s*\d", ln):
                break
            rows.append(ln.split())
        for col, name in ((2, "ADE"), (3, "RR"), (4, "WRR")):
            pts = [(number(r[0]), number(r[col])) for r in rows if number(r[col]) is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("keys n")
        ax.set_ylabel("samples until every key is classified")
        ax.set_title(f"{kind} intervals")
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    fig.suptitle("ADE (AAAI 2020) vs RR / WRR (NeurIPS 2017): uniform means, k = 2.5")
    save(fig, "ade_vs_rr")


def policy_speed(text: str) -> None:
    """Updates per second by policy, bound and number of arms (process time, noisy on a shared machine)."""
    rates: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for ln in text.splitlines():
        parts = ln.split()
        if len(parts) == 5 and parts[2].isdigit():
            rates[(parts[0], parts[1])][int(parts[2])] = float(parts[4].replace(",", ""))
    sizes = sorted({n for r in rates.values() for n in r})
    labels = [f"{p}\n{b}" for p, b in rates]
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * len(labels)), 4))
    width = 0.8 / len(sizes)
    for j, n in enumerate(sizes):
        xs = [i + (j - (len(sizes) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(xs, [r.get(n, 0) / 1e3 for r in rates.values()], width, label=f"n = {n:,}")
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylabel("thousand updates / s (one core)")
    ax.set_title("Policy speed: next_request + update per reward (2 shared cores: noisy)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    save(fig, "policy_speed")


PLOTS = {"thresholding": thresholding, "heavy_tails": heavy_tails, "ade_vs_rr": ade_vs_rr,
         "policy_speed": policy_speed}


def main(argv: list[str]) -> None:
    for name in argv or list(PLOTS):
        src = RESULTS / f"{name}.txt"
        if not src.exists():
            print(f"skip {name}: no {src.name} (run the benchmark first, see the docstring)")
            continue
        PLOTS[name](src.read_text())


if __name__ == "__main__":
    main(sys.argv[1:])

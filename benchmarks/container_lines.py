"""How fast a container runtime's log is read (``--rewards-format container``, ``connectors/container_lines.py``),
against the same applications' lines read as JSON lines, and what each form of entry costs.

Each entry is a CRI line (``TIME stdout F LINE``), a Docker json-file line (``{"log": LINE, ...}``) or a line of
``kubectl logs --prefix --timestamps``, around an application's JSON line (or, ``combined``, an access log line read
by ``--line-pattern combined``), from a file named as the kubelet names a pod's (so each record also gets the pod's
field). This prints entries per second on one core (process time, best of ``--repeat``), the JSON lines' own path
first.

Usage::

    python benchmarks/container_lines.py                  # 60,000 entries of each form
    python benchmarks/container_lines.py --entries 200000
"""

from __future__ import annotations

import argparse
import json
import random
import time

from streamarms.connectors.container_lines import ContainerLines
from streamarms.connectors.line_parse import line_by_line
from streamarms.connectors.pattern_lines import PatternLines

PATH = "/var/log/pods/shop_web-1_0c1e-11aa/app/0.log"


def _lines(n: int, seed: int = 1) -> tuple[list[str], list[str]]:
    """``n`` applications' JSON lines, and ``n`` access log lines."""
    rng = random.Random(seed)
    app, access = [], []
    for i in range(n):
        app.append(json.dumps({"level": rng.choice(["info"] * 30 + ["error"]), "host": f"worker-{rng.randrange(12)}",
                               "msg": "job done", "ms": rng.randrange(1, 500)}))
        access.append(f'10.0.0.{rng.randrange(250)} - - [30/Nov/2026:10:00:{i % 60:02d} +0000] "GET /api/{i % 9} '
                      f'HTTP/1.1" {rng.choice([200, 200, 304, 503])} {rng.randrange(5000)} "-" "curl/8.0"')
    return app, access


def _time(i: int) -> str:
    return f"2026-11-30T10:{i // 60000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}123456Z"


def _forms(lines: list[str]) -> dict[str, list[str]]:
    return {"CRI": [f"{_time(i)} stdout F {line}\n" for i, line in enumerate(lines)],
            "Docker json-file": [json.dumps({"log": line + "\n", "stream": "stdout", "time": _time(i)}) + "\n"
                                 for i, line in enumerate(lines)],
            "kubectl --prefix --timestamps": [f"[pod/web-1/app] {_time(i)} {line}\n" for i, line in enumerate(lines)]}


def _best(f, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        f()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=60_000)
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    app, access = _lines(opts.entries)
    rows = [("JSON lines (the applications' own)", "-",
             opts.entries / _best(lambda: line_by_line(PATH, [t + "\n" for t in app], 0), opts.repeat))]
    for content, lines, pattern in (("JSON", app, None), ("combined", access, "combined")):
        for form, entries in _forms(lines).items():
            table = ContainerLines(lines=PatternLines(pattern) if pattern else None)
            table.records(PATH, entries[:100], 0)  # (the patterns compiled, the pod's field made)
            rate = opts.entries / _best(lambda t=table, e=entries: t.records(PATH, e, 0), opts.repeat)
            rows.append((form, content, rate))
    print(f"{'entries':<36} {'lines inside':<14} {'entries/s':>12}")
    for form, content, rate in rows:
        print(f"{form:<36} {content:<14} {rate:>12,.0f}")


if __name__ == "__main__":
    main()

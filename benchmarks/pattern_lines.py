"""How long a named ``--line-pattern`` takes on an ordinary line and on a poison one (``connectors/pattern_lines.py``).

A pattern is looked for at the line's start or after a few words (``_START``). Searched at every place in the line,
the named formats took time quadratic in a long word's length: a 40 KB line of one word took 5.7 s with
``combined``, so one such line (a base64 blob, a binary record, a file of NUL bytes) stalled a run for minutes, and
the 4 MiB a reader holds for days. This prints, for each named format, the lines per second of an ordinary line of
its own and the milliseconds one poison line of each kind and size takes to be refused (process time, best of
``--repeat``).

Usage::

    python benchmarks/pattern_lines.py                     # poison lines of 40 KB and 1 MB
    python benchmarks/pattern_lines.py --sizes 40000 4194304
"""

from __future__ import annotations

import argparse
import time

from streamarms.connectors.pattern_lines import PATTERNS, PatternLines

#: an ordinary line of each named format
LINES = {
    "common": '10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] "GET /api/cart?id=3 HTTP/1.1" 503 12',
    "combined": '10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] "GET /api/cart?id=3 HTTP/1.1" 503 12 "-" "curl/8.0"',
    "ingress-nginx": '10.1.2.3 - - [14/Nov/2023:22:13:20 +0000] "GET /a HTTP/1.1" 502 150 "-" "curl/8.0" 420 0.012 '
                     "[shop-cart-80] [] 10.2.0.7:8080 150 0.011 502 5f1c9a",
    "alb": 'http 2023-11-14T22:13:20.123Z app/lb/1 10.0.0.1:5555 10.0.1.2:80 0.001 0.020 0.000 200 200 34 366 '
           '"GET http://example.com:80/api HTTP/1.1" "curl/8.0"',
    "haproxy": 'Feb  6 12:14:14 localhost haproxy[14389]: 10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in '
               'static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 "GET /index.html HTTP/1.1"',
    "envoy": '[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" '
             '"nsq2http" "cc21d9b0" "locations" "tcp://10.0.2.1:80"',
    "syslog": "Nov 14 22:13:20 web-1 sshd[812]: Failed password for root from 10.0.0.1 port 22 ssh2",
    "app": "2026-11-30 10:00:00.123 ERROR [exec-3] c.e.Cart host=web-4 - request failed",
}
#: the poison lines, by kind, of ``n`` bytes
POISON = {"one word": lambda n: "x" * n, "brackets": lambda n: "[" * n, "host:port words": lambda n: "a:1 " * (n // 4)}


def _best(lines: PatternLines, batch: list[str], repeat: int) -> float:
    """The least process time ``lines`` takes to read ``batch``, of ``repeat`` tries."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        lines.records("x", batch, 0)
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[40_000, 1_000_000], help="poison line sizes, bytes")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    assert set(LINES) == set(PATTERNS), set(PATTERNS) ^ set(LINES)
    head = f"{'pattern':<14} {'lines/s':>10}" + "".join(f" {k + ' ' + str(n):>24}" for n in args.sizes for k in POISON)
    print(head + "   (poison: ms to refuse one line)")
    for name, line in LINES.items():
        lines = PatternLines(name)
        assert not hasattr(lines.records("x", [line], 0)[0].key, "reason"), name  # (its own line: read)
        batch = [line] * 20_000
        rate = len(batch) / _best(lines, batch, args.repeat)
        cells = []
        for n in args.sizes:
            for make in POISON.values():
                cells.append(f"{1000 * _best(lines, [make(n)], args.repeat):>24.1f}")
        print(f"{name:<14} {rate:>10,.0f}" + " ".join([""] + cells))


if __name__ == "__main__":
    main()

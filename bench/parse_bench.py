"""Micro-benchmark of the KIP parser (not a test).

For every entry of tests/fixtures/parser/valid.kip (all spec examples plus extra
coverage): the median cold parse (LRU cache cleared before each run: grammar
match + AST build + validation) and the median cached re-parse. Targets: median
cold ≤ 1 ms, cached ≤ 20 µs.

    python bench/parse_bench.py [--repeat N] [--spec-only]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import parser_fixtures  # noqa: E402
from kip2cypher.parser import clear_cache, parse  # noqa: E402


def cold(text: str, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        clear_cache()
        start = time.perf_counter()
        parse(text)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cached(text: str, repeat: int) -> float:
    parse(text)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        parse(text)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--repeat", type=int, default=25, help="runs per entry (default 25)")
    options.add_argument("--spec-only", action="store_true", help="only the spec's own examples, not the extra coverage")
    args = options.parse_args()

    entries = [e for e in parser_fixtures.valid() if not (args.spec_only and e.name.startswith("extra:"))]
    rows = [(e.name, len(e.text), cold(e.text, args.repeat), cached(e.text, args.repeat * 40)) for e in entries]

    print(f"{'entry':<62} {'chars':>6} {'cold ms':>8} {'cached µs':>10}")
    for name, chars, cold_s, cached_s in rows:
        print(f"{name[:62]:<62} {chars:>6} {cold_s * 1e3:>8.3f} {cached_s * 1e6:>10.2f}")
    cold_median = statistics.median(r[2] for r in rows) * 1e3
    cached_median = statistics.median(r[3] for r in rows) * 1e6
    print(f"\n{len(rows)} entries: median cold {cold_median:.3f} ms (target ≤ 1 ms), "
          f"median cached {cached_median:.2f} µs (target ≤ 20 µs), slowest cold {max(r[2] for r in rows) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

"""Compile-only micro-benchmarks over the spec's examples (tests/fixtures/parser/valid.kip).

For every entry: median cold parse, median cold compile (parse + lowering, every cache
cleared) and median cached compile (``compile_plan`` on a warm cache: the cost every
repeated command pays before it reaches Neo4j). Entries that do not compile offline
(e.g. placeholders without parameters) are counted and skipped.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kip2cypher.errors import KipError
from kip2cypher.lower.compile import _compile_cached, compile_plan
from kip2cypher.syntax import parser as kparser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def entries() -> list[Any]:
    import parser_fixtures  # tests/parser_fixtures.py: the fixture loader

    return parser_fixtures.valid()


def _clear() -> None:
    _compile_cached.cache_clear()
    kparser.clear_cache()


def run(repeat_cold: int = 15, repeat_cached: int = 400, settings: Any = None) -> dict[str, Any]:
    rows = []
    skipped = []
    for entry in entries():
        try:
            _clear()
            compile_plan(entry.text, None, settings)
        except KipError as exc:
            skipped.append({"name": entry.name, "code": exc.code})
            continue
        parse_samples, cold_samples, cached_samples = [], [], []
        for _ in range(repeat_cold):
            _clear()
            t0 = time.perf_counter()
            kparser.parse(entry.text)
            parse_samples.append(time.perf_counter() - t0)
            _clear()
            t0 = time.perf_counter()
            compile_plan(entry.text, None, settings)
            cold_samples.append(time.perf_counter() - t0)
        for _ in range(repeat_cached):
            t0 = time.perf_counter()
            compile_plan(entry.text, None, settings)
            cached_samples.append(time.perf_counter() - t0)
        rows.append(
            {
                "name": entry.name,
                "chars": len(entry.text),
                "parse_cold_ms": statistics.median(parse_samples) * 1e3,
                "compile_cold_ms": statistics.median(cold_samples) * 1e3,
                "compile_cached_us": statistics.median(cached_samples) * 1e6,
            }
        )
    spec = [r for r in rows if not r["name"].startswith("extra:")]
    pick = spec or rows
    return {
        "entries": len(rows),
        "spec_entries": len(spec),
        "skipped": skipped,
        "parse_cold_median_ms": round(statistics.median(r["parse_cold_ms"] for r in pick), 4),
        "cold_median_ms": round(statistics.median(r["compile_cold_ms"] for r in pick), 4),
        "cached_median_us": round(statistics.median(r["compile_cached_us"] for r in pick), 3),
        "cold_max_ms": round(max(r["compile_cold_ms"] for r in pick), 3),
        "cold_p90_ms": round(sorted(r["compile_cold_ms"] for r in pick)[int(0.9 * (len(pick) - 1))], 3),
        "all_entries": {
            "cold_median_ms": round(statistics.median(r["compile_cold_ms"] for r in rows), 4),
            "cached_median_us": round(statistics.median(r["compile_cached_us"] for r in rows), 3),
        },
        "slowest": sorted(({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in pick), key=lambda r: -r["compile_cold_ms"])[:5],
    }

"""Compile-only micro-benchmarks over the spec's examples (tests/fixtures/parser/valid.kip).

For every entry: median cold parse, median cold compile (parse + lowering, every cache
cleared: a new shape) and median cached compile (``compile_plan`` on a warm cache: the cost every
repeated command pays before it reaches Neo4j). Entries that do not compile offline
(e.g. placeholders without parameters) are counted and skipped. ``templates_run``: a new text of
a known shape (a plan template's fill, ``lower.templates``); ``agent_stream``: the compile answers
for a stream of agent commands (bench/agent_loop.py).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kip2cypher.errors import KipError
from kip2cypher.lower.compile import _compile_cached, _templates, cache_stats, compile_plan
from kip2cypher.syntax import parser as kparser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def entries() -> list[Any]:
    import parser_fixtures  # tests/parser_fixtures.py: the fixture loader

    return parser_fixtures.valid()


def clear_caches() -> None:
    _compile_cached.cache_clear()
    _templates.clear()
    kparser.clear_cache()


def run(repeat_cold: int = 15, repeat_cached: int = 400, settings: Any = None) -> dict[str, Any]:
    rows = []
    skipped = []
    for entry in entries():
        try:
            clear_caches()
            compile_plan(entry.text, None, settings)
        except KipError as exc:
            skipped.append({"name": entry.name, "code": exc.code})
            continue
        parse_samples, cold_samples, cached_samples = [], [], []
        for _ in range(repeat_cold):
            clear_caches()
            t0 = time.perf_counter()
            kparser.parse(entry.text)
            parse_samples.append(time.perf_counter() - t0)
            clear_caches()
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


def _fresh(text: str, k: int) -> str | None:
    """``text`` with every literal a template stands for replaced by a value not used before (the
    same class, equalities and order), or None when it has no such literal."""
    from kip2cypher.lower import templates

    found = templates.shape(text)
    if found is None or not found.slots:
        return None
    pieces, last = [], 0
    for slot in found.slots:
        v = slot.value
        if isinstance(v, bool):
            new: Any = v
        elif isinstance(v, str):
            new = f"{v} {k}"[:250]
        elif isinstance(v, int):
            new = v * (k + 7) + (1 if v > 0 else -1)
        elif abs(v) < 1:
            new = v ** (1 + 1 / (k + 2))
        else:
            new = v * (k + 2) + 0.5
        pieces += [text[last : slot.start], json.dumps(new)]
        last = slot.end
    return "".join(pieces) + text[last:]


def templates_run(repeat: int = 200, settings: Any = None) -> dict[str, Any]:
    """A new text of a known shape (the template's fill) against a new shape (a cold compile), per
    spec example that has a literal a template stands for; the share of shapes templated."""
    rows, never = [], []
    for entry in entries():
        if entry.name.startswith("extra:") or _fresh(entry.text, 0) is None:
            continue
        clear_caches()
        try:
            compile_plan(entry.text, None, settings)
            compile_plan(_fresh(entry.text, 0), None, settings)
        except KipError:
            continue
        before = cache_stats()["template"]
        samples = []
        for k in range(1, repeat + 1):
            text = _fresh(entry.text, k)
            t0 = time.perf_counter()
            compile_plan(text, None, settings)
            samples.append(time.perf_counter() - t0)
        if cache_stats()["template"] - before < repeat:
            never.append(entry.name)
            continue
        rows.append({"name": entry.name, "hit_us": statistics.median(samples) * 1e6})
    return {
        "shapes": len(rows) + len(never),
        "templated": len(rows),
        "not_templated": never,
        "hit_median_us": round(statistics.median(r["hit_us"] for r in rows), 2) if rows else None,
        "hit_max_us": round(max(r["hit_us"] for r in rows), 2) if rows else None,
    }


def agent_stream(operations: int = 2000, settings: Any = None) -> dict[str, Any]:
    """Compile answers for a stream of agent commands (bench/agent_loop.py's mix, fresh values)."""
    from .agent_loop import stream
    from .graph import MemoryGraph

    texts = stream(MemoryGraph(10_000), operations)
    clear_caches()
    before = cache_stats()
    samples = []
    for text in texts:
        t0 = time.perf_counter()
        compile_plan(text, None, settings)
        samples.append(time.perf_counter() - t0)
    after = cache_stats()
    counts = {k: after[k] - before[k] for k in after}
    exact = counts["calls"] - counts["template"] - counts["cold"]
    return {
        "commands": len(texts),
        **counts,
        "exact": exact,
        "hit_rate": round((exact + counts["template"]) / counts["calls"], 3),
        "median_us": round(statistics.median(samples) * 1e6, 2),
        "mean_us": round(statistics.fmean(samples) * 1e6, 2),
    }

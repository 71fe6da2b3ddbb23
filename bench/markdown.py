"""Render benchmark reports as the Markdown tables of docs/performance.md.

python -m bench.markdown bench/results/report-100k.json [bench/results/report-10k.json …]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _f(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def queries_table(reports: list[dict[str, Any]]) -> str:
    """One row per query; KIP ms / Cypher ms / ratio per scale, db hits of the largest scale."""
    reports = sorted(reports, key=lambda r: r["concepts"])
    last = reports[-1]
    head = ["query", "feature"]
    for r in reports:
        head += [f"KIP ms {r['scale']}", f"Cypher ms {r['scale']}", f"ratio {r['scale']}"]
    head += [f"db hits KIP / Cypher ({last['scale']})", "rows", "compile cold ms", "cached µs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for q in last["queries"]:
        row = [f"`{q['name']}`", q["feature"]]
        for r in reports:
            match = next((x for x in r["queries"] if x["name"] == q["name"]), {})
            ratio = match.get("ratio")
            mark = "" if ratio is None or ratio <= r.get("targets", {}).get("max_ratio", 1.3) else " ✗"
            row += [_f(match.get("kip_ms")), _f(match.get("cypher_ms")), _f(ratio) + mark]
        row += [
            f"{_f(q.get('kip_db_hits'))} / {_f(q.get('cypher_db_hits'))}",
            _f(q.get("rows")),
            _f(q.get("compile_cold_ms")),
            _f(q.get("compile_cached_us"), 1),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def targets_table(report: dict[str, Any]) -> str:
    lines = ["| target | value | limit | met |", "|---|---|---|---|"]
    for name, t in report["summary"]["targets"].items():
        lines.append(f"| {name} | {_f(t['value'], 3)} | {t['target']} | {'yes' if t['met'] else '**no**'} |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    reports = [json.loads(Path(p).read_text()) for p in argv]
    print(queries_table(reports))
    print()
    largest = max(reports, key=lambda r: r["concepts"])
    print(targets_table(largest))


if __name__ == "__main__":
    main(sys.argv[1:])

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


#: How a decided target shows in a table: met, missed (bold ✗), undecided (?).
MARKS = {"met": "", "missed": " **✗**", "undecided": " ?"}


def _ratio(q: dict[str, Any]) -> str:
    """The ratio, its 95 % interval and the decision of its target (reports before issue 29: the ratio alone)."""
    if q.get("ratio") is None:
        return "–"
    ci = q.get("ratio_ci")
    interval = f" [{ci[0]:.2f}–{ci[1]:.2f}]" if ci else ""
    return f"{q['ratio']:.2f}{interval}{MARKS.get(q.get('decision', 'met'), '')}"


def queries_table(reports: list[dict[str, Any]]) -> str:
    """One row per query; KIP ms / Cypher ms / ratio [95 % interval] and its decision per scale,
    db hits of the largest scale."""
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
            row += [_f(match.get("kip_ms")), _f(match.get("cypher_ms")), _ratio(match)]
        row += [
            f"{_f(q.get('kip_db_hits'))} / {_f(q.get('cypher_db_hits'))}",
            _f(q.get("rows")),
            _f(q.get("compile_cold_ms")),
            _f(q.get("compile_cached_us"), 1),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def targets_table(report: dict[str, Any]) -> str:
    """One row per target: value, 95 % interval (pair-timed ratios), limit, decision."""
    lines = ["| target | value | 95 % interval | limit | decision |", "|---|---|---|---|---|"]
    for name, t in report["summary"]["targets"].items():
        interval = t.get("interval")
        shown = f"{interval[0]:.2f}–{interval[1]:.2f}" if interval else "–"
        decision = t.get("decision") or ("met" if t.get("met") else "missed")
        lines.append(f"| {name} | {_f(t['value'], 3)} | {shown} | {t['target']} | {'**missed**' if decision == 'missed' else decision} |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    reports = [json.loads(Path(p).read_text()) for p in argv]
    print(queries_table(reports))
    print()
    largest = max(reports, key=lambda r: r["concepts"])
    print(targets_table(largest))


if __name__ == "__main__":
    main(sys.argv[1:])

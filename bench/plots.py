"""Plots of a benchmark report (matplotlib, the ``bench`` extra).

- ``ratio-<scale>.png``: KIP / hand-written Cypher per query, with the report's targets;
- ``scale.png``: time against graph size, from every full (not ``--quick``)
  ``report-<scale>.json`` in the output directory: per query class (read, path, search,
  write) the median over its queries of the KIP and the hand-written median ms, their ratio,
  and the graph load and capsule ingest times.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

COLORS = {"read": "#4C72B0", "path": "#55A868", "search": "#C44E52", "write": "#8172B2"}


def draw(report: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = []
    queries = [q for q in report["queries"] if q.get("ratio") is not None]
    if queries:
        fig, ax = plt.subplots(figsize=(10.5, 0.32 * len(queries) + 1.6))
        names = [q["name"] for q in queries][::-1]
        ratios = [q["ratio"] for q in queries][::-1]
        colors = [COLORS.get(q["kind"], "gray") for q in queries][::-1]
        ax.barh(names, ratios, color=colors)
        for y, r in enumerate(ratios):
            ax.text(r + 0.02, y, f"{r:.2f}", va="center", fontsize=7)
        ax.axvline(1.0, color="black", lw=0.8)
        targets = report.get("targets", {})
        ax.axvline(targets.get("median_ratio", 1.1), color="orange", ls="--", lw=1, label=f"median target {targets.get('median_ratio', 1.1)}")
        ax.axvline(targets.get("max_ratio", 1.3), color="red", ls="--", lw=1, label=f"per-query cap {targets.get('max_ratio', 1.3)}")
        ax.set_xlabel("KIP end-to-end / hand-written Cypher (median ms)")
        ax.set_title(f"kip2cypher vs hand-written Cypher — {report['scale']} concepts, Neo4j {report['neo4j_version']}")
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
        ax.legend(
            handles + ax.get_legend_handles_labels()[0],
            list(COLORS) + ax.get_legend_handles_labels()[1],
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
        )
        fig.tight_layout()
        path = out / f"ratio-{report['scale']}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        drawn.append(path)

    reports = []
    for file in sorted(out.glob("report-*.json")):
        try:
            reports.append(json.loads(file.read_text()))
        except (OSError, ValueError):
            continue
    reports = [r for r in reports if not r.get("quick")]
    reports.sort(key=lambda r: r.get("concepts", 0))
    if reports:
        path = out / "scale.png"
        draw_scale(plt, reports, path)
        drawn.append(path)
    return drawn


def _class_medians(report: dict[str, Any], kind: str) -> tuple[float, float, float]:
    import statistics

    qs = [q for q in report["queries"] if q.get("ratio") is not None and q["kind"] == kind]
    if not qs:
        return float("nan"), float("nan"), float("nan")
    return (statistics.median(q["kip_ms"] for q in qs), statistics.median(q["cypher_ms"] for q in qs), statistics.median(q["ratio"] for q in qs))


def draw_scale(plt: Any, reports: list[dict[str, Any]], path: Path) -> None:
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 5.5))
    xs = [r["concepts"] for r in reports]
    for kind, color in COLORS.items():
        medians = [_class_medians(r, kind) for r in reports]
        ax1.plot(xs, [m[0] for m in medians], "o-", color=color, label=f"{kind}: KIP")
        ax1.plot(xs, [m[1] for m in medians], "x:", color=color, label=f"{kind}: hand-written")
        ax2.plot(xs, [m[2] for m in medians], "o-", color=color, label=kind)
    load = [r.get("load", {}).get("total_s") for r in reports]
    ax3.plot(xs, load, "o-", color="black", label="graph load through KIP (s)")
    for key, style, name in (
        ("kip_s", "o-", "ingest KIP (s)"),
        ("cypher_s", "x:", "ingest hand-written (s)"),
        ("kip_embed_s", "s-", "ingest KIP, model on (s)"),
    ):
        ys = [r.get("ingest", {}).get(key) for r in reports]
        if any(y is not None for y in ys):
            ax3.plot(xs, ys, style, label=name)
    for ax in (ax1, ax2, ax3):
        ax.set_xscale("log")
        ax.set_xlabel("concepts in the graph")
        ax.legend(fontsize=7)
    ax1.set_yscale("log")
    ax1.set_ylabel("median over the class of the median ms")
    ax2.set_ylabel("median KIP / hand-written")
    targets = reports[-1].get("targets", {})
    ax2.axhline(targets.get("median_ratio", 1.1), color="orange", ls="--", lw=1)
    ax2.axhline(targets.get("max_ratio", 1.3), color="red", ls="--", lw=1)
    ax3.set_yscale("log")
    ax3.set_ylabel("seconds")
    fig.suptitle("Time against scale (" + ", ".join(r["scale"] for r in reports) + ")")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

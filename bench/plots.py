"""Plots of a benchmark report (matplotlib, the ``bench`` extra).

- ``ratio-<scale>.png``: KIP / hand-written Cypher per query, with the 1.15 / 1.5 targets;
- ``scale.png``: median KIP and Cypher time per query against graph size, from every
  ``report-<scale>.json`` in the output directory.
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
        ax.axvline(1.15, color="orange", ls="--", lw=1, label="median target 1.15")
        ax.axvline(1.5, color="red", ls="--", lw=1, label="per-query cap 1.5")
        ax.set_xlabel("KIP end-to-end / hand-written Cypher (median ms)")
        ax.set_title(f"kip2cypher vs hand-written Cypher — {report['scale']} concepts, Neo4j {report['neo4j_version']}")
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
        ax.legend(handles + ax.get_legend_handles_labels()[0], list(COLORS) + ax.get_legend_handles_labels()[1], fontsize=7,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0))
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
    reports.sort(key=lambda r: r.get("concepts", 0))
    if reports:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 6))
        names = [q["name"] for q in reports[-1]["queries"] if q.get("ratio") is not None]
        cmap = plt.get_cmap("tab20")
        for k, name in enumerate(names):
            xs, kip, cy, ratio = [], [], [], []
            for r in reports:
                q = next((q for q in r["queries"] if q["name"] == name and q.get("ratio") is not None), None)
                if q:
                    xs.append(r["concepts"])
                    kip.append(q["kip_ms"])
                    cy.append(q["cypher_ms"])
                    ratio.append(q["ratio"])
            color = cmap(k % 20)
            ax1.plot(xs, kip, "o-", color=color, label=name, lw=1, ms=3)
            ax1.plot(xs, cy, "x:", color=color, lw=0.8, ms=3)
            ax2.plot(xs, ratio, "o-", color=color, lw=1, ms=3)
        for ax in (ax1, ax2):
            ax.set_xscale("log")
            ax.set_xlabel("concepts in the graph")
        ax1.set_yscale("log")
        ax1.set_ylabel("median ms (o— KIP, x·· hand-written Cypher)")
        ax2.set_ylabel("KIP / Cypher")
        ax2.axhline(1.15, color="orange", ls="--", lw=1)
        ax2.axhline(1.5, color="red", ls="--", lw=1)
        ax1.legend(fontsize=6, ncol=2)
        fig.suptitle("Time against scale (" + ", ".join(r["scale"] for r in reports) + ")")
        fig.tight_layout()
        path = out / "scale.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        drawn.append(path)
    return drawn

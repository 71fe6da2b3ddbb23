"""The limits and SEARCH modes the lowering applies and DESCRIBE PRIMER advertises (docs/meta.md).

One place for each number, so what the engine says it does (``capabilities`` of the primer,
``execution.programs.describe``) is what it does (``lower.describe``, ``lower.export``,
``lower.search``).
"""

from __future__ import annotations

from typing import Any

from ..cypher import storage

#: Page size of DESCRIBE CONCEPT TYPES / PROPOSITION TYPES without LIMIT (next_cursor beyond).
DESCRIBE_DEFAULT_LIMIT = 1000
#: Elements per page when EXPORT has no LIMIT (next_cursor beyond), and the largest LIMIT accepted.
EXPORT_DEFAULT_LIMIT = 1000
EXPORT_MAX_LIMIT = 5000
#: Results returned when SEARCH has no LIMIT, and the largest LIMIT accepted (KIP_4002 beyond).
SEARCH_DEFAULT_LIMIT = 10
SEARCH_MAX_LIMIT = 1000
MODES = ("keyword", "semantic", "hybrid")


def search_capabilities(embedder: Any, unavailable_reason: str) -> dict[str, Any]:
    """The live SEARCH capability, as advertised by DESCRIBE PRIMER (``embedder``: the one in force, or None)."""
    out: dict[str, Any] = {
        "modes": list(MODES) if embedder else ["keyword"],
        "default_mode": "hybrid" if embedder else "keyword",
        "semantic": embedder is not None,
        "grounding_fields": {
            "concept": ["name"] + [f"attributes.{k}" for k in storage.GROUNDING_ATTRIBUTES],
            "proposition": ["predicate", "$PropositionType description"] + [f"attributes.{k}" for k in storage.GROUNDING_ATTRIBUTES],
        },
        "default_limit": SEARCH_DEFAULT_LIMIT,
        "max_limit": SEARCH_MAX_LIMIT,
        "score": "metadata._score in [0, 1]; keyword: lexical match quality, semantic: cosine similarity, hybrid: score-weighted reciprocal rank fusion",
    }
    if embedder is not None:
        out["embedder"] = {"name": embedder.name, "dimensions": embedder.dimensions}
    else:
        out["semantic_unavailable_reason"] = unavailable_reason + "; semantic and hybrid run as keyword"
    return out

"""What a bootstrap or the demo checks about the database it is about to write into
(``cli/target.py`` words it; docs/interfaces.md, "Bootstrap on a shared database").
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...cypher import catalog, storage
from ...lower.plan import EMPTY, Compiled
from ..requests import Context
from .admin import one, rows

SCHEMA_OBJECT_NAMES = tuple(Compiled(text, EMPTY, "the database's schema object names") for text in catalog.SCHEMA_OBJECT_NAMES)
NEXUS_EXISTS = Compiled(catalog.NEXUS_EXISTS, EMPTY, "the nexus node exists")
DEMO_TEAM_GRAPH = Compiled(catalog.DEMO_TEAM_GRAPH, EMPTY, "the demo's example team graph")


def foreign_nodes(own_mark: str | None = None) -> Generator[Any, Any, int]:
    """Nodes that are not the engine's (concepts and propositions of any namespace, nexus nodes,
    shadow vector nodes) nor carry the property ``own_mark``: somebody else's data."""
    statement = Compiled(catalog.foreign_nodes(own_mark), {"stems": list(storage.RESERVED_LABEL_STEMS)}, "the nodes that are not KIP's")
    return (yield from one(statement))["c"]


def bootstrap_state(ctx: Context) -> Generator[Any, Any, dict[str, Any]]:
    """What of a bootstrap already exists: the database's constraint and index names, and
    whether the namespace's nexus node does."""
    present: set[str] = set()
    for statement in SCHEMA_OBJECT_NAMES:
        present |= set((yield from one(statement))["names"])
    exists = (yield from one(NEXUS_EXISTS, {"namespace": ctx.names.namespace}))["c"]
    return {"schema_objects": present, "nexus_node": bool(exists)}


def demo_team_graph() -> Generator[Any, Any, list[dict[str, Any]]]:
    """Write the demo's example team graph (``catalog.DEMO_TEAM_GRAPH``, idempotent)."""
    return (yield from rows(DEMO_TEAM_GRAPH))

"""The namespaces of a database: list them, drop one (``kip2cypher namespaces``, docs/namespaces.md).

A namespace exists when its nexus node does (``ensure_schema``/``bootstrap`` made it) or when
elements carry its labels. Dropping one deletes exactly what carries that namespace's names —
its concepts and propositions (with their relationships), the shadow nodes of its adopted
concepts' and relationships' vectors, its constraints and indexes, its nexus node — and nothing
else: other namespaces and non-KIP data cannot carry those names. ``drop`` runs under ADMIN
access (its DDL runs only in auto-commit transactions), ``DROP_BATCH`` nodes per statement.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from ...cypher import catalog, storage
from ...errors import INVALID_IDENTIFIER, NOT_FOUND, KipError
from ...lower.plan import EMPTY, Compiled
from .admin import one, rows

#: Nodes deleted per statement while dropping (bounded memory on a large namespace).
DROP_BATCH = 10_000


@dataclass(frozen=True)
class NamespaceInfo:
    namespace: str  # "" = the default namespace
    concepts: int
    propositions: int
    bootstrapped: bool

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "concepts": self.concepts, "propositions": self.propositions, "bootstrapped": self.bootstrapped}


def _statement(text: str, label: str) -> Compiled:
    return Compiled(text, EMPTY, label)


def _count(label: str) -> Generator[Any, Any, int]:
    row = yield from one(_statement(catalog.count_label(label), f"count {label}"))
    return row["c"]


def listing() -> Generator[Any, Any, list[NamespaceInfo]]:
    """Every namespace of the database, the default one first, with its element counts."""
    bootstrapped = set((yield from one(_statement(catalog.NEXUS_NAMESPACES, "the bootstrapped namespaces")))["namespaces"])
    labelled = (yield from one(_statement(catalog.LABELLED_NAMESPACES, "the labelled namespaces")))["labelled"]
    found = bootstrapped | {ns for label in labelled if (ns := storage.element_label_namespace(label)) is not None} | {""}
    out = []
    for namespace in sorted(found):
        names = storage.names(namespace)
        out.append(NamespaceInfo(namespace, (yield from _count(names.concept)), (yield from _count(names.proposition)), namespace in bootstrapped))
    return out


def drop(namespace: str, batch: int = DROP_BATCH) -> Generator[Any, Any, dict[str, Any]]:
    """Delete everything of ``namespace`` and report what was removed. The default namespace
    cannot be dropped (it is the database's original layout; delete its data with KML)."""
    if not namespace:
        raise KipError(INVALID_IDENTIFIER, "The default namespace cannot be dropped.", "Name a namespace (see `kip2cypher namespaces list`).")
    if not storage.NAMESPACE_RE.match(namespace):
        raise KipError(
            INVALID_IDENTIFIER,
            f"{namespace!r} is not a namespace name.",
            "Namespaces are lower-case letters, digits and '_', starting with a letter, at most 32 characters.",
        )
    if namespace not in {info.namespace for info in (yield from listing())}:
        raise KipError(NOT_FOUND, f"The namespace {namespace!r} does not exist in this database.", "See `kip2cypher namespaces list`.")
    names = storage.names(namespace)
    removed: dict[str, Any] = {
        "namespace": namespace,
        "concepts": 0,
        "propositions": 0,
        "adopted_vectors": 0,
        "adopted_relationship_vectors": 0,
        "relationships": 0,
        "schema_objects": [],
        "nexus_node": False,
    }
    for label, key in (
        (names.proposition, "propositions"),
        (names.concept, "concepts"),
        (names.adopted_vector, "adopted_vectors"),
        (names.adopted_relationship_vector, "adopted_relationship_vectors"),
    ):
        while True:
            done = yield from one(_statement(catalog.delete_batch(label), f"delete {key}"), {"batch": batch})
            removed[key] += done["nodes"]
            removed["relationships"] += done["relationships"]
            if done["nodes"] < batch:
                break
    labels = [names.concept, names.proposition, names.adopted_vector, names.adopted_relationship_vector]
    # the adopted full-text indexes (docs/adopt.md) are on the team's labels / types: found by name
    adopted = [catalog.adopted_text_index(names), catalog.adopted_relationship_text_index(names)]
    for query, kind, what in ((catalog.CONSTRAINTS_ON, "CONSTRAINT", "constraints"), (catalog.INDEXES_ON, "INDEX", "indexes")):
        found = yield from one(_statement(query, f"the namespace's {what}"), {"labels": labels, "adopted": adopted})
        for name in found["names"]:
            yield from rows(_statement(catalog.drop_schema_object(kind, name), f"drop {kind.lower()}"))
            removed["schema_objects"].append(name)
    removed["nexus_node"] = bool((yield from one(_statement(catalog.DROP_NEXUS, "the nexus node"), {"namespace": namespace}))["nexus"])
    return removed

"""The namespaces of a database: list them, drop one (``kip2cypher namespaces``, docs/namespaces.md).

A namespace exists when its nexus node does (``ensure_schema``/``bootstrap`` made it) or when
elements carry its labels. Dropping one deletes exactly what carries that namespace's names —
its concepts and propositions (with their relationships), the shadow nodes of its adopted
concepts' and relationships' vectors, its constraints and indexes, its nexus node — and nothing
else: other namespaces and non-KIP data cannot carry those names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cypher import catalog, storage
from .cypher.builder import quote
from .errors import INVALID_IDENTIFIER, NOT_FOUND, KipError

#: Nodes deleted per transaction while dropping (bounded memory on a large namespace).
DROP_BATCH = 10_000

_LIST = """
CALL db.labels() YIELD label WHERE label STARTS WITH 'KipConcept__' OR label STARTS WITH 'KipProposition__'
RETURN collect(DISTINCT split(label, '__')[1]) AS labelled
"""
_NEXUS_NAMESPACES = f"MATCH (n:{storage.NEXUS}) RETURN collect(coalesce(n.namespace, '')) AS namespaces"
_SCHEMA_OBJECTS = """
SHOW CONSTRAINTS YIELD name, labelsOrTypes WHERE any(l IN labelsOrTypes WHERE l IN $labels)
RETURN collect(name) AS names
"""
_INDEXES = """
SHOW INDEXES YIELD name, labelsOrTypes, owningConstraint
WHERE owningConstraint IS NULL AND (any(l IN coalesce(labelsOrTypes, []) WHERE l IN $labels) OR name IN $adopted)
RETURN collect(name) AS names
"""
_DROP_NEXUS = f"MATCH (n:{storage.NEXUS} {{namespace: $namespace}}) DELETE n RETURN count(n) AS nexus"


@dataclass(frozen=True)
class NamespaceInfo:
    namespace: str  # "" = the default namespace
    concepts: int
    propositions: int
    bootstrapped: bool

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "concepts": self.concepts, "propositions": self.propositions, "bootstrapped": self.bootstrapped}


def _count(driver: Any, database: Any, label: str) -> int:
    records, _, _ = driver.execute_query(f"MATCH (n:{quote(label)}) RETURN count(n) AS c", database_=database, routing_="r")
    return records[0]["c"]


def list_namespaces(driver: Any, database: Any) -> list[NamespaceInfo]:
    """Every namespace of the database, the default one first, with its element counts."""
    records, _, _ = driver.execute_query(_NEXUS_NAMESPACES, database_=database, routing_="r")
    bootstrapped = set(records[0]["namespaces"])
    records, _, _ = driver.execute_query(_LIST, database_=database, routing_="r")
    found = bootstrapped | {name for name in records[0]["labelled"] if storage.NAMESPACE_RE.match(name)} | {""}
    out = []
    for namespace in sorted(found):
        names = storage.names(namespace)
        out.append(NamespaceInfo(namespace, _count(driver, database, names.concept), _count(driver, database, names.proposition), namespace in bootstrapped))
    return out


def drop_namespace(driver: Any, database: Any, namespace: str) -> dict[str, Any]:
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
    if namespace not in {info.namespace for info in list_namespaces(driver, database)}:
        raise KipError(NOT_FOUND, f"The namespace {namespace!r} does not exist in this database.", "See `kip2cypher namespaces list`.")
    names = storage.names(namespace)
    removed = {
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
        statement = f"MATCH (n:{quote(label)}) WITH n LIMIT {DROP_BATCH} DETACH DELETE n"
        while True:
            summary = driver.execute_query(statement, database_=database).summary
            removed[key] += summary.counters.nodes_deleted
            removed["relationships"] += summary.counters.relationships_deleted
            if summary.counters.nodes_deleted < DROP_BATCH:
                break
    labels = [names.concept, names.proposition, names.adopted_vector, names.adopted_relationship_vector]
    for query, kind in ((_SCHEMA_OBJECTS, "CONSTRAINT"), (_INDEXES, "INDEX")):
        # the adopted full-text indexes (docs/adopt.md) are on the team's labels / types: found by name
        records, _, _ = driver.execute_query(
            query, labels=labels, adopted=[catalog.adopted_text_index(names), catalog.adopted_relationship_text_index(names)], database_=database
        )
        for name in records[0]["names"]:
            driver.execute_query(f"DROP {kind} {quote(name)} IF EXISTS", database_=database)
            removed["schema_objects"].append(name)
    records, _, _ = driver.execute_query(_DROP_NEXUS, namespace=namespace, database_=database)
    removed["nexus_node"] = bool(records[0]["nexus"])
    return removed

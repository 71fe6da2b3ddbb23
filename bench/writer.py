"""Hand-written storage-model writes: what a Neo4j expert writes with UNWIND + MERGE.

They produce the same nodes, labels, properties and relationships as a KIP UPSERT
(docs/storage-model.md): ``:KipConcept:`<Type>``` nodes keyed by (type, name), reified
``:KipProposition`` nodes keyed by (subject, predicate, object) with ``KIP_SUBJECT`` /
``KIP_OBJECT`` relationships, and the native predicate relationship carrying ``kip_id``.
Values go through ``storage.encode`` exactly as KIP stores them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from kip2cypher.cypher import storage

from . import namespaced

CONCEPTS = """UNWIND $rows AS row
MERGE (n:KipConcept {type: row.type, name: row.name})
  ON CREATE SET n.id = 'C:' + replace(randomUUID(), '-', ''), n:$(row.type), n.`meta._version` = 1
  ON MATCH SET n.`meta._version` = n.`meta._version` + 1
SET n += row.props, n.`meta._updated_at` = $now
RETURN count(n) AS concepts"""

LINKS = """UNWIND $rows AS row
MATCH (s:KipConcept {type: row.st, name: row.sn})
MATCH (o:KipConcept {type: row.ot, name: row.on})
MERGE (l:KipProposition {subject: s.id, predicate: row.p, object: o.id})
  ON CREATE SET l.id = 'P:' + replace(randomUUID(), '-', '') + ':' + row.p, l.`meta._version` = 1
  ON MATCH SET l.`meta._version` = l.`meta._version` + 1
SET l += row.props, l.`meta._updated_at` = $now
MERGE (l)-[:KIP_SUBJECT]->(s)
MERGE (l)-[:KIP_OBJECT]->(o)
MERGE (s)-[:$(row.p) {kip_id: l.id}]->(o)
RETURN count(l) AS links"""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def props(attributes: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    return {**storage.encode_map(attributes, storage.ATTR_PREFIX), **storage.encode_map(metadata, storage.META_PREFIX)}


def concept_row(type_: str, name: str, attributes: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "name": name, "props": props(attributes, metadata)}


def link_row(subject: tuple, predicate: str, object_: tuple, attributes: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    return {"st": subject[0], "sn": subject[1], "p": predicate, "ot": object_[0], "on": object_[1], "props": props(attributes, metadata)}


def write(tx: Any, concepts: Iterable[dict[str, Any]], links: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """Both statements in one transaction (``tx`` is a neo4j transaction)."""
    now = now_iso()
    rows_c = list(concepts)
    rows_l = list(links)
    c = list(tx.run(namespaced.cypher(CONCEPTS), rows=rows_c, now=now))[0]["concepts"] if rows_c else 0
    n = list(tx.run(namespaced.cypher(LINKS), rows=rows_l, now=now))[0]["links"] if rows_l else 0
    return c, n

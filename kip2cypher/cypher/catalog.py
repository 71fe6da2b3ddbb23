"""Every schema object the engine creates (spec storage model, docs/storage-model.md): one catalog.

``SCHEMA`` lists the DDL in the order ``Nexus.ensure_schema`` applies it, each statement
idempotent (``IF NOT EXISTS``) and run in a transaction of its own:

- uniqueness constraints: concept id, concept (type, name), proposition id, proposition
  (subject, predicate, object);
- range indexes on concept name/type, proposition predicate and ``meta._updated_at`` (the
  executor finds the elements a KML command touched through it, for the embedding refresh);
- the full-text indexes of keyword SEARCH over the grounding fields;
- the vector indexes of semantic SEARCH (no fixed dimensions: any embedder's vectors are
  indexed; queries filter on the model name).
"""
from __future__ import annotations

from . import storage
from .builder import literal, quote

CONCEPT_TEXT_INDEX = "kip_concept_text"
PROPOSITION_TEXT_INDEX = "kip_proposition_text"
CONCEPT_VECTOR_INDEX = "kip_concept_embedding"
PROPOSITION_VECTOR_INDEX = "kip_proposition_embedding"
#: Lucene analyzer of both full-text indexes: standard tokenization, lower-casing and
#: ASCII folding ("Café" finds "cafe"), no stop-word removal.
ANALYZER = "standard-folding"
#: Grounding fields (properties) indexed for SEARCH CONCEPT and SEARCH PROPOSITION.
CONCEPT_TEXT_FIELDS = ("name",) + tuple(storage.attr_key(k) for k in storage.GROUNDING_ATTRIBUTES)
PROPOSITION_TEXT_FIELDS = ("predicate",) + tuple(storage.attr_key(k) for k in storage.GROUNDING_ATTRIBUTES)

_C, _P = storage.CONCEPT, storage.PROPOSITION
_UPDATED_AT = quote(storage.meta_key(storage.UPDATED_AT_KEY))


def _fulltext(name: str, var: str, label: str, fields: tuple[str, ...]) -> str:
    on_each = ", ".join(f"{var}.{quote(f)}" for f in fields)
    options = f"{{indexConfig: {{`fulltext.analyzer`: {literal(ANALYZER)}, `fulltext.eventually_consistent`: false}}}}"
    return f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR ({var}:{label}) ON EACH [{on_each}] OPTIONS {options}"


def _vector(name: str, var: str, label: str) -> str:
    return f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR ({var}:{label}) ON {var}.{storage.EMBEDDING} OPTIONS {{indexConfig: {{`vector.similarity_function`: 'cosine'}}}}"


SCHEMA: tuple[str, ...] = (
    f"CREATE CONSTRAINT kip_concept_id IF NOT EXISTS FOR (n:{_C}) REQUIRE n.id IS UNIQUE",
    f"CREATE CONSTRAINT kip_concept_type_name IF NOT EXISTS FOR (n:{_C}) REQUIRE (n.type, n.name) IS UNIQUE",
    f"CREATE CONSTRAINT kip_proposition_id IF NOT EXISTS FOR (p:{_P}) REQUIRE p.id IS UNIQUE",
    f"CREATE CONSTRAINT kip_proposition_spo IF NOT EXISTS FOR (p:{_P}) REQUIRE (p.subject, p.predicate, p.object) IS UNIQUE",
    f"CREATE INDEX kip_concept_name IF NOT EXISTS FOR (n:{_C}) ON (n.name)",
    f"CREATE INDEX kip_concept_type IF NOT EXISTS FOR (n:{_C}) ON (n.type)",
    f"CREATE INDEX kip_proposition_predicate IF NOT EXISTS FOR (p:{_P}) ON (p.predicate)",
    _fulltext(CONCEPT_TEXT_INDEX, "n", _C, CONCEPT_TEXT_FIELDS),
    _fulltext(PROPOSITION_TEXT_INDEX, "p", _P, PROPOSITION_TEXT_FIELDS),
    _vector(CONCEPT_VECTOR_INDEX, "n", _C),
    f"CREATE INDEX kip_concept_updated_at IF NOT EXISTS FOR (n:{_C}) ON (n.{_UPDATED_AT})",
    f"CREATE INDEX kip_proposition_updated_at IF NOT EXISTS FOR (p:{_P}) ON (p.{_UPDATED_AT})",
    _vector(PROPOSITION_VECTOR_INDEX, "p", _P),
)

"""Every schema object the engine creates (spec storage model, docs/storage-model.md): one catalog.

``SCHEMA`` lists the DDL in the order ``Nexus.ensure_schema`` applies it, each statement
idempotent (``IF NOT EXISTS``) and run in a transaction of its own:

- uniqueness constraints: concept id, concept (type, name), proposition id, proposition
  (subject, predicate, object);
- range indexes on concept name/type, proposition predicate and ``meta._updated_at`` (the
  executor finds the elements a KML command touched through it, for the embedding refresh);
- the full-text indexes of keyword SEARCH over the grounding fields;
- the vector indexes of semantic SEARCH (no fixed dimensions: any embedder's vectors are
  indexed; queries filter on the model name);
- the key of the nexus node (``NEXUS_CREATE``), which holds the cursor-signing secret.
"""

from __future__ import annotations

import functools

from . import storage
from .builder import literal, quote

#: Lucene analyzer of both full-text indexes: standard tokenization, lower-casing and
#: ASCII folding ("Café" finds "cafe"), no stop-word removal.
ANALYZER = "standard-folding"
#: Grounding fields (properties) indexed for SEARCH CONCEPT and SEARCH PROPOSITION.
CONCEPT_TEXT_FIELDS = ("name",) + tuple(storage.attr_key(k) for k in storage.GROUNDING_ATTRIBUTES)
PROPOSITION_TEXT_FIELDS = ("predicate",) + tuple(storage.attr_key(k) for k in storage.GROUNDING_ATTRIBUTES)

_UPDATED_AT = quote(storage.meta_key(storage.UPDATED_AT_KEY))


def concept_text_index(names: storage.Names) -> str:
    return names.schema_object("kip_concept_text")


def proposition_text_index(names: storage.Names) -> str:
    return names.schema_object("kip_proposition_text")


def concept_vector_index(names: storage.Names) -> str:
    return names.schema_object("kip_concept_embedding")


def proposition_vector_index(names: storage.Names) -> str:
    return names.schema_object("kip_proposition_embedding")


_FULLTEXT_OPTIONS = f"{{indexConfig: {{`fulltext.analyzer`: {literal(ANALYZER)}, `fulltext.eventually_consistent`: false}}}}"


def _fulltext(name: str, var: str, label: str, fields: tuple[str, ...]) -> str:
    on_each = ", ".join(f"{var}.{quote(f)}" for f in fields)
    return f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR ({var}:{label}) ON EACH [{on_each}] OPTIONS {_FULLTEXT_OPTIONS}"


def _vector(name: str, var: str, label: str) -> str:
    options = "{indexConfig: {`vector.similarity_function`: 'cosine'}}"
    return f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR ({var}:{label}) ON {var}.{storage.EMBEDDING} OPTIONS {options}"


@functools.lru_cache(maxsize=64)
def schema(names: storage.Names = storage.DEFAULT) -> tuple[str, ...]:
    """The DDL of one namespace, in the order ``ensure_schema`` applies it."""
    c, p, n = names.concept, names.proposition, names.schema_object
    return (
        f"CREATE CONSTRAINT {n('kip_concept_id')} IF NOT EXISTS FOR (n:{c}) REQUIRE n.id IS UNIQUE",
        f"CREATE CONSTRAINT {n('kip_concept_type_name')} IF NOT EXISTS FOR (n:{c}) REQUIRE (n.type, n.name) IS UNIQUE",
        f"CREATE CONSTRAINT {n('kip_proposition_id')} IF NOT EXISTS FOR (p:{p}) REQUIRE p.id IS UNIQUE",
        f"CREATE CONSTRAINT {n('kip_proposition_spo')} IF NOT EXISTS FOR (p:{p}) REQUIRE (p.subject, p.predicate, p.object) IS UNIQUE",
        f"CREATE INDEX {n('kip_concept_name')} IF NOT EXISTS FOR (n:{c}) ON (n.name)",
        f"CREATE INDEX {n('kip_concept_type')} IF NOT EXISTS FOR (n:{c}) ON (n.type)",
        f"CREATE INDEX {n('kip_proposition_predicate')} IF NOT EXISTS FOR (p:{p}) ON (p.predicate)",
        _fulltext(concept_text_index(names), "n", c, CONCEPT_TEXT_FIELDS),
        _fulltext(proposition_text_index(names), "p", p, PROPOSITION_TEXT_FIELDS),
        _vector(concept_vector_index(names), "n", c),
        f"CREATE INDEX {n('kip_concept_updated_at')} IF NOT EXISTS FOR (n:{c}) ON (n.{_UPDATED_AT})",
        f"CREATE INDEX {n('kip_proposition_updated_at')} IF NOT EXISTS FOR (p:{p}) ON (p.{_UPDATED_AT})",
        _vector(proposition_vector_index(names), "p", p),
        f"CREATE CONSTRAINT kip_nexus_namespace IF NOT EXISTS FOR (n:{storage.NEXUS}) REQUIRE n.namespace IS UNIQUE",
    )


#: The nexus node of a namespace (``$namespace``; ``""`` is the default): engine facts every process
#: must share — the secret CURSOR tokens are signed with, the adoption mapping (docs/adopt.md,
#: JSON; absent when nothing is adopted) and the storage layout (``storage.LAYOUT_KEY``). Created
#: with a fresh random secret and the layout this build writes by ``ensure_schema``; an existing
#: node keeps what it has (a node without the key is layout 1, docs/migration.md). The secret is
#: drawn by the server (two ``randomUUID()``: 244 bits from Java's SecureRandom), never sent as a
#: parameter: a parameter is printed by the ``-v`` Cypher log and by the driver's DEBUG log.
#: The layout of a nexus node without ``storage.LAYOUT_KEY`` (every node written before layouts were recorded).
LEGACY_LAYOUT = 1
NEXUS_CREATE = (
    f"MERGE (n:{storage.NEXUS} {{namespace: $namespace}}) "
    f"ON CREATE SET n.{storage.CURSOR_SECRET} = replace(randomUUID(), '-', '') + replace(randomUUID(), '-', ''), n.{storage.LAYOUT_KEY} = $layout "
    f"RETURN n.{storage.CURSOR_SECRET} AS secret, n.{storage.ADOPTION} AS adoption, coalesce(n.{storage.LAYOUT_KEY}, {LEGACY_LAYOUT}) AS layout"
)


@functools.lru_cache(maxsize=64)
def nexus_read(names: storage.Names) -> str:
    """The facts of a namespace's nexus node, one row always: ``secret``, ``adoption`` and
    ``layout`` — the node's (1 when it has none), else 1 when the namespace holds a layout-1
    Genesis without a nexus node (its ``$ConceptType`` concepts still carry the bare type label;
    an index seek on ``type``), else null: a namespace that was never bootstrapped."""
    meta = literal(storage.CONCEPT_TYPE)
    return (
        f"OPTIONAL MATCH (n:{storage.NEXUS} {{namespace: $namespace}}) "
        f"RETURN n.{storage.CURSOR_SECRET} AS secret, n.{storage.ADOPTION} AS adoption, "
        f"CASE WHEN n IS NOT NULL THEN coalesce(n.{storage.LAYOUT_KEY}, {LEGACY_LAYOUT}) "
        f"WHEN EXISTS {{ MATCH (c:{names.concept} {{type: {meta}}}) WHERE c.type IN labels(c) }} THEN {LEGACY_LAYOUT} END AS layout"
    )


def profile_state(names: storage.Names) -> str:
    """What a bootstrap decides from (``profiles.decide``): the profile recorded on the namespace's
    nexus node (null: none), whether the namespace holds a Genesis (its ``$ConceptType`` node) and
    which of the actors ``$actors`` (Person names) exist."""
    return (
        f"OPTIONAL MATCH (n:{storage.NEXUS} {{namespace: $namespace}}) "
        f"OPTIONAL MATCH (g:{names.concept} {{type: $meta, name: $meta}}) "
        f"RETURN n.{storage.PROFILE_KEY} AS profile, g IS NOT NULL AS genesis, "
        f"COLLECT {{ MATCH (a:{names.concept} {{type: $person}}) WHERE a.name IN $actors RETURN a.name }} AS actors"
    )


#: Record the profile a bootstrap applied (``$profile``) on the namespace's nexus node.
NEXUS_PROFILE = f"MATCH (n:{storage.NEXUS} {{namespace: $namespace}}) SET n.{storage.PROFILE_KEY} = $profile RETURN count(n) AS nexus"


def explain(statement: str) -> str:
    """``statement`` planned by Neo4j but not run (a dry run, ``Nexus.explain``)."""
    return f"EXPLAIN {statement}"


#: The server's version and edition (``Nexus.server_version``).
#: Neo4j 2026.x lists more than one component (the kernel first is not promised): the kernel's row.
SERVER_VERSION = "CALL dbms.components() YIELD name, versions, edition RETURN versions[0] AS v, edition AS e ORDER BY name <> 'Neo4j Kernel' LIMIT 1"

#: The labels and nexus nodes of the database: which namespaces exist and the layout each records (docs/migration.md).
LAYOUT_SURVEY = (
    "CALL db.labels() YIELD label WITH collect(label) AS labels\n"
    f"OPTIONAL MATCH (n:{storage.NEXUS})\n"
    "RETURN labels, collect(CASE WHEN n IS NOT NULL THEN "
    f"{{namespace: coalesce(n.namespace, ''), layout: coalesce(n.{storage.LAYOUT_KEY}, {LEGACY_LAYOUT})}} END) AS nexuses"
)

#: Store (``$adoption``: JSON) or remove (null) the adoption mapping of a namespace.
#: The labels and relationship types the database's elements carry (``kip2cypher adopt`` names
#: the nearest for a mapping's misspelled one).
GRAPH_NAMES = (
    "CALL () { CALL db.labels() YIELD label RETURN collect(label) AS labels } "
    "CALL () { CALL db.relationshipTypes() YIELD relationshipType RETURN collect(relationshipType) AS types } "
    "RETURN labels, types"
)
NEXUS_ADOPT = f"MATCH (n:{storage.NEXUS} {{namespace: $namespace}}) SET n.{storage.ADOPTION} = $adoption RETURN count(n) AS nexus"


def adopted_text_index(names: storage.Names) -> str:
    """The full-text index over the adopted types' text properties (docs/adopt.md), per namespace."""
    return names.schema_object("kip_adopted_text")


def adopted_text_ddl(names: storage.Names, labels: tuple[str, ...], properties: tuple[str, ...]) -> str:
    """``CREATE FULLTEXT INDEX`` over the team's labels and text properties (mapping names, quoted)."""
    on_each = ", ".join(f"n.{quote(p)}" for p in properties)
    label_union = "|".join(quote(label) for label in labels)
    return f"CREATE FULLTEXT INDEX {adopted_text_index(names)} IF NOT EXISTS FOR (n:{label_union}) ON EACH [{on_each}] OPTIONS {_FULLTEXT_OPTIONS}"


def adopted_vector_index(names: storage.Names) -> str:
    """The VECTOR index of the shadow nodes holding adopted concepts' vectors (docs/adopt.md)."""
    return names.schema_object("kip_adopted_embedding")


def adopted_relationship_vector_index(names: storage.Names) -> str:
    """The VECTOR index of the shadow nodes holding adopted relationships' vectors (docs/adopt.md)."""
    return names.schema_object("kip_adopted_relationship_embedding")


def adopted_vector_ddl(names: storage.Names) -> tuple[str, ...]:
    """The schema of the shadow nodes: one per (adopted type, team node) and one per (adopted
    predicate, team relationship) — the uniqueness that ``MERGE`` relies on, and the lookup a
    refresh does per element — and their vector indexes."""
    v, r = names.adopted_vector, names.adopted_relationship_vector
    return (
        f"CREATE CONSTRAINT {names.schema_object('kip_adopted_vector_node')} IF NOT EXISTS FOR (s:{v}) REQUIRE (s.type, s.element) IS UNIQUE",
        _vector(adopted_vector_index(names), "s", v),
        f"CREATE CONSTRAINT {names.schema_object('kip_adopted_relationship_vector_node')} IF NOT EXISTS FOR (s:{r}) REQUIRE (s.type, s.element) IS UNIQUE",
        _vector(adopted_relationship_vector_index(names), "s", r),
    )


def adopted_relationship_text_index(names: storage.Names) -> str:
    """The full-text index over the adopted predicates' text properties (docs/adopt.md), per namespace."""
    return names.schema_object("kip_adopted_relationship_text")


def adopted_relationship_text_ddl(names: storage.Names, rel_types: tuple[str, ...], properties: tuple[str, ...]) -> str:
    """``CREATE FULLTEXT INDEX`` over the team's relationship types and text properties (mapping names, quoted)."""
    on_each = ", ".join(f"r.{quote(p)}" for p in properties)
    type_union = "|".join(quote(t) for t in rel_types)
    index = adopted_relationship_text_index(names)
    return f"CREATE FULLTEXT INDEX {index} IF NOT EXISTS FOR ()-[r:{type_union}]-() ON EACH [{on_each}] OPTIONS {_FULLTEXT_OPTIONS}"


# ---------------------------------------------------------------------------- namespaces (docs/namespaces.md)
#: The namespaces that have a nexus node ("" = the default one).
NEXUS_NAMESPACES = f"MATCH (n:{storage.NEXUS}) RETURN collect(coalesce(n.namespace, '')) AS namespaces"
#: The namespaced concept and proposition labels the database's token store holds; the namespace
#: is everything after the stem's ``__`` (``storage.element_label_namespace``: a namespace name may
#: hold ``__`` itself, so the label is not split in Cypher).
LABELLED_NAMESPACES = (
    "CALL db.labels() YIELD label WHERE label STARTS WITH 'KipConcept__' OR label STARTS WITH 'KipProposition__' RETURN collect(label) AS labelled"
)
#: The constraints on any of ``$labels``.
CONSTRAINTS_ON = "SHOW CONSTRAINTS YIELD name, labelsOrTypes WHERE any(l IN labelsOrTypes WHERE l IN $labels) RETURN collect(name) AS names"
#: The indexes (not a constraint's own) on any of ``$labels``, or named in ``$adopted``.
INDEXES_ON = (
    "SHOW INDEXES YIELD name, labelsOrTypes, owningConstraint "
    "WHERE owningConstraint IS NULL AND (any(l IN coalesce(labelsOrTypes, []) WHERE l IN $labels) OR name IN $adopted) "
    "RETURN collect(name) AS names"
)
#: Delete a namespace's nexus node.
DROP_NEXUS = f"MATCH (n:{storage.NEXUS} {{namespace: $namespace}}) DELETE n RETURN count(n) AS nexus"


def count_label(label: str) -> str:
    """How many nodes carry ``label`` (an engine label, quoted all the same)."""
    return f"MATCH (n:{quote(label)}) RETURN count(n) AS c"


def delete_batch(label: str) -> str:
    """Delete up to ``$batch`` nodes carrying ``label`` with their relationships; returns how many
    nodes and (distinct) relationships went — what the driver's counters said before."""
    return (
        f"MATCH (n:{quote(label)}) WITH n LIMIT $batch WITH collect(n) AS nodes "
        "CALL (nodes) { UNWIND nodes AS n MATCH (n)-[r]-() WITH DISTINCT r DELETE r RETURN count(r) AS relationships } "
        "FOREACH (n IN nodes | DELETE n) RETURN size(nodes) AS nodes, relationships"
    )


def drop_schema_object(kind: str, name: str) -> str:
    """``DROP CONSTRAINT|INDEX <name> IF EXISTS`` (``kind`` is the engine's word; ``name`` is quoted)."""
    if kind not in ("CONSTRAINT", "INDEX"):
        raise ValueError(kind)
    return f"DROP {kind} {quote(name)} IF EXISTS"


# ---------------------------------------------------------------------------- the target of a bootstrap or the demo
def foreign_nodes(own_mark: str | None) -> str:
    """How many nodes are not the engine's (no label of ``$stems``, ``storage.RESERVED_LABEL_STEMS``,
    in any namespace) nor carry the property ``own_mark`` (the demo's example team graph)."""
    marked = f" AND n.{quote(own_mark)} IS NULL" if own_mark else ""
    return f"MATCH (n) WHERE NOT any(l IN labels(n) WHERE any(s IN $stems WHERE l = s OR l STARTS WITH s + '__')){marked} RETURN count(n) AS c"


#: The names of the database's indexes, then of its constraints (SHOW commands do not combine with UNION).
SCHEMA_OBJECT_NAMES = ("SHOW INDEXES YIELD name RETURN collect(name) AS names", "SHOW CONSTRAINTS YIELD name RETURN collect(name) AS names")
#: Whether a namespace's nexus node exists.
NEXUS_EXISTS = f"MATCH (n:{storage.NEXUS} {{namespace: $namespace}}) RETURN count(n) AS c"

#: The demo's example of a team's own graph (docs/adopt.md): built with MERGE (idempotent), every
#: node marked ``kip2cypher_demo`` so the foreign-data check knows it is the demo's own.
DEMO_MARK = "kip2cypher_demo"
DEMO_TEAM_GRAPH = f"""
MERGE (ada:DemoStaff {{staff_id: 'S1'}}) SET ada.name = 'Ada', ada.role = 'CTO', ada.{DEMO_MARK} = true
MERGE (lin:DemoStaff {{staff_id: 'S2'}}) SET lin.name = 'Lin', lin.role = 'Engineer', lin.{DEMO_MARK} = true
MERGE (sam:DemoStaff {{staff_id: 'S3'}}) SET sam.name = 'Sam', sam.role = 'Intern', sam.{DEMO_MARK} = true
MERGE (lin)-[:DEMO_REPORTS_TO]->(ada)
MERGE (sam)-[:DEMO_REPORTS_TO]->(lin)
"""


# ---------------------------------------------------------------------------- adoption (docs/adopt.md)
#: Every full-text index with its schema (an adopted text index exists as defined, or not).
FULLTEXT_INDEXES = "SHOW FULLTEXT INDEXES YIELD name, entityType, labelsOrTypes, properties RETURN name, entityType, labelsOrTypes, properties"
#: Whether the VECTOR index ``$name`` exists.
VECTOR_INDEX_EXISTS = "SHOW VECTOR INDEXES YIELD name WHERE name = $name RETURN count(*) AS n"
#: Wait (up to 300 s) until the index ``$name`` is online.
AWAIT_INDEX = "CALL db.awaitIndex($name, 300)"

"""``kip2cypher adopt``: register an adoption mapping in a namespace (docs/adopt.md), as programs.

``survey`` only reads: what the mapping would register, how many of the team's nodes and
relationships it exposes, the names it misspells, the state of its full-text indexes.
``Core.adopt`` then (unless a dry run) bootstraps the namespace, registers each adopted type
and predicate as a ``$ConceptType`` / ``$PropositionType`` (``registration``: an UPSERT capsule,
metadata ``adopted: true``, domain ``Adopted``) so DESCRIBE shows them, creates the full-text
indexes keyword SEARCH uses (``indexes``, ADMIN access; a schema object, no node or relationship
of the team's graph is written) and stores the mapping (JSON) on the namespace's nexus node
(``store``). ``Core.embed_adopted`` gives adopted elements SEARCH vectors on KIP's own shadow
nodes. Everything here is idempotent and writes only KIP's own data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

from ... import adoption as adopt
from ... import errors
from ...adoption import AdoptedPredicate, AdoptedType, Adoption
from ...cypher import adopted as team
from ...cypher import catalog, storage
from ...cypher.builder import Ident, Statement, frag
from ...errors import KipError
from ...lower.plan import EMPTY, Compiled
from ..requests import Context
from .admin import nexus_node, one, rows

DOMAIN_DESCRIPTION = "Types and predicates adopted from the team's own graph (read-only for KIP; docs/adopt.md)."
METADATA = '{ adopted: true, source: "kip2cypher adopt", author: "$system" }'
Program = Generator[Any, Any, Any]


def registration(adoption: Adoption) -> tuple[str, dict[str, Any]]:
    """The UPSERT capsule (and its parameters) registering every adopted type and predicate."""
    params: dict[str, Any] = {"domain_description": DOMAIN_DESCRIPTION}
    blocks = ['  CONCEPT ?adopted_domain { {type: "Domain", name: "%s"} SET ATTRIBUTES { description: :domain_description } }' % adopt.DOMAIN]
    for i, t in enumerate(adoption.types):
        params.update(
            {
                f"t{i}": t.name,
                f"t{i}_description": t.description,
                f"t{i}_schema": _schema(t.attributes, "node"),
                f"t{i}_from": {"label": t.label, "name_property": t.name_property, "key": t.key},
            }
        )
        blocks.append(
            f'  CONCEPT ?t{i} {{ {{type: "$ConceptType", name: :t{i}}} SET ATTRIBUTES {{ description: :t{i}_description, '
            f'instance_schema: :t{i}_schema, adopted_from: :t{i}_from }} SET PROPOSITIONS {{ ("belongs_to_domain", ?adopted_domain) }} }}'
        )
    for i, p in enumerate(adoption.predicates):
        params.update(
            {
                f"p{i}": p.name,
                f"p{i}_description": p.description,
                f"p{i}_subject": [p.subject],
                f"p{i}_object": [p.object],
                f"p{i}_schema": _schema(p.attributes, "relationship"),
                f"p{i}_from": {"relationship_type": p.rel_type},
            }
        )
        blocks.append(
            f'  CONCEPT ?p{i} {{ {{type: "$PropositionType", name: :p{i}}} SET ATTRIBUTES {{ description: :p{i}_description, '
            f"subject_types: :p{i}_subject, object_types: :p{i}_object, instance_schema: :p{i}_schema, adopted_from: :p{i}_from }} "
            f'SET PROPOSITIONS {{ ("belongs_to_domain", ?adopted_domain) }} }}'
        )
    return "UPSERT {\n" + "\n".join(blocks) + "\n}\nWITH METADATA " + METADATA, params


def _schema(attributes: tuple[tuple[str, str], ...], owner: str) -> dict[str, Any]:
    return {
        key: {"type": "any", "is_required": False, "description": f"The {owner} property {prop!r} of the team's graph (read-only)."} for key, prop in attributes
    }


def _fixed(text: str, label: str) -> Compiled:
    return Compiled(text, EMPTY, label)


def _count_type(t: AdoptedType) -> Compiled:
    n = frag("n")
    stmt = Statement()
    stmt.line("MATCH ", team.node(n, t))
    stmt.line("RETURN count(n) AS nodes, count(n.", Ident(t.name_property), ") AS named")
    return Compiled.of(stmt, "count an adopted type's nodes")


def _count_predicate(p: AdoptedPredicate, adoption: Adoption) -> Compiled:
    stmt = Statement()
    stmt.line("MATCH ()-[r:", Ident(p.rel_type), "]->() WITH count(r) AS all_of_type")
    stmt.line(
        "OPTIONAL MATCH ",
        team.node(frag("s"), adoption.type(p.subject)),
        "-[r:",
        Ident(p.rel_type),
        "]->",
        team.node(frag("o"), adoption.type(p.object)),
    )
    stmt.line("RETURN all_of_type, count(r) AS relationships")
    return Compiled.of(stmt, "count an adopted predicate's relationships")


def stored(ctx: Context) -> Generator[Any, Any, Adoption | None]:
    """The mapping stored on the namespace's nexus node (None: nothing adopted)."""
    text = (yield from nexus_node(ctx))["adoption"]
    return Adoption.from_json(text) if text else None


def survey_counts(adoption: Adoption) -> Program:
    """What the mapping exposes of the graph: nodes per type (and how many lack the name
    property), relationships per predicate (and how many of that type it does not expose)."""
    types = []
    for t in adoption.types:
        row = yield from one(_count_type(t))
        types.append({"type": t.name, "label": t.label, "nodes": row["nodes"], "without_name": row["nodes"] - row["named"]})
    predicates = []
    for p in adoption.predicates:
        row = yield from one(_count_predicate(p, adoption))
        predicates.append(
            {
                "predicate": p.name,
                "relationship_type": p.rel_type,
                "subject": p.subject,
                "object": p.object,
                "relationships": row["relationships"],
                "not_exposed": row["all_of_type"] - row["relationships"],
            }
        )
    return {"types": types, "predicates": predicates}


def _mapped_properties(what: AdoptedType | AdoptedPredicate) -> dict[str, str]:
    """The properties a mapping entry reads, each with the role it plays there (first role wins)."""
    roles: dict[str, str] = {}
    if isinstance(what, AdoptedType):
        roles[what.name_property] = "name"
        if what.key is not None:
            roles.setdefault(what.key, "key")
    for key, prop in what.attributes:
        roles.setdefault(prop, f"attribute {key}")
    for prop in what.text:
        roles.setdefault(prop, "text")
    return roles


def _nearest(name: str, candidates: list[str]) -> str:
    guess = errors.closest(name, candidates)
    return f"; did you mean {guess!r}?" if guess is not None else "."


def name_warnings(adoption: Adoption, surveyed: dict[str, Any]) -> Program:
    """The mapping's labels, relationship types and properties that no element of the database
    carries, each with the nearest name that exists: a misspelled mapping would otherwise expose
    nothing and say only "0 nodes". ``surveyed``: ``survey_counts`` (a label only KIP's own nodes
    carry is no team label). Properties are checked against every node of the label (every
    relationship of the type)."""
    graph = yield from one(_fixed(catalog.GRAPH_NAMES, "the database's labels and relationship types"))
    labels = [label for label in graph["labels"] if not storage.is_engine_label(label)]
    types = graph["types"]
    entries = [*adoption.types, *adoption.predicates]
    counts = {t["type"]: t["nodes"] for t in surveyed["types"]} | {p["predicate"]: p["relationships"] + p["not_exposed"] for p in surveyed["predicates"]}
    present = [what for what in entries if counts[what.name]]
    carried: dict[str, list[str]] = {}
    if present:
        found = yield from rows(Compiled.of(team.carried_statement(present, sample=None), "the properties the adopted elements carry"))
        carried = {present[row["i"]].name: row["keys"] for row in found}
    out = []
    for what in entries:
        is_type = isinstance(what, AdoptedType)
        where = f"{'types' if is_type else 'predicates'}.{what.name}"
        if what.name not in carried:
            missing = f"no node carries the label {what.label!r}" if is_type else f"no relationship has the type {what.rel_type!r}"
            out.append(f"{where}: {missing}{_nearest(what.label if is_type else what.rel_type, labels if is_type else types)}")
            continue
        owner = f"{what.label} node" if is_type else f"{what.rel_type} relationship"
        for prop, role in _mapped_properties(what).items():
            if prop not in carried[what.name]:
                out.append(f"{where}: no {owner} carries the property {prop!r} ({role}){_nearest(prop, carried[what.name])}")
    return out


def text_indexes(adoption: Adoption, names: storage.Names) -> Program:
    """The full-text indexes of the mapping's text properties — over the types' node properties
    (keyword SEARCH) and the predicates' relationship properties (keyword SEARCH PROPOSITION) —
    each its name, DDL and state (``_fulltext_state``), or None when nothing has text properties."""
    found = yield from rows(_fixed(catalog.FULLTEXT_INDEXES, "the full-text indexes"))
    schemas = {r["name"]: (r["entityType"], set(r["labelsOrTypes"]), set(r["properties"])) for r in found}
    labels = tuple(dict.fromkeys(t.label for t in adoption.types if t.text))
    properties = tuple(dict.fromkeys(p for t in adoption.types for p in t.text))
    rel_types = tuple(dict.fromkeys(p.rel_type for p in adoption.predicates if p.text))
    rel_properties = tuple(dict.fromkeys(prop for p in adoption.predicates for prop in p.text))
    nodes = _fulltext_state(schemas, catalog.adopted_text_index(names), "NODE", labels, properties, catalog.adopted_text_ddl(names, labels, properties))
    relationships = _fulltext_state(
        schemas,
        catalog.adopted_relationship_text_index(names),
        "RELATIONSHIP",
        rel_types,
        rel_properties,
        catalog.adopted_relationship_text_ddl(names, rel_types, rel_properties),
    )
    return (nodes if labels else None), (relationships if rel_types else None)


def _fulltext_state(schemas: dict[str, Any], name: str, entity: str, targets: tuple[str, ...], properties: tuple[str, ...], ddl: str) -> dict[str, Any]:
    """Index ``name`` over ``targets`` (labels / relationship types, ``entity`` "NODE" /
    "RELATIONSHIP") and ``properties``: its DDL and whether it exists as defined ("present"),
    otherwise ("different") or not ("missing"); ``taken_by``: another index over the same schema —
    Neo4j keeps one per schema, so ``IF NOT EXISTS`` would silently not create this one (another
    namespace adopted the same)."""
    wanted = (entity, set(targets), set(properties))
    state = "missing" if name not in schemas else ("present" if schemas[name] == wanted else "different")
    taken_by = next((other for other, schema in schemas.items() if other != name and schema == wanted), None)
    return {"name": name, "statement": ddl, "state": state, "taken_by": taken_by}


def vector_index_exists(name: str) -> Program:
    """Whether the VECTOR index ``name`` exists."""
    return bool((yield from one(_fixed(catalog.VECTOR_INDEX_EXISTS, "the vector index exists"), {"name": name}))["n"])


def link_counts(names: storage.Names) -> Program:
    """Memory propositions of the namespace written under ``link_memory`` (docs/adopt.md):
    ``linked``, those with an endpoint outside KIP's own nodes (an adopted concept), and
    ``dangling``, those that lost an endpoint because the team deleted the node they linked."""
    n = frag("n")
    stmt = Statement()
    stmt.line("OPTIONAL MATCH (p:", names.proposition, ")-[:", names.subject_rel, "|", names.object_rel, "]->(n) WHERE ", team.not_engine(n))
    stmt.line("WITH count(DISTINCT p) AS linked")
    stmt.line(
        "OPTIONAL MATCH (d:", names.proposition, ") WHERE NOT EXISTS { (d)-[:", names.subject_rel, "]->() } OR NOT EXISTS { (d)-[:", names.object_rel, "]->() }"
    )
    stmt.line("RETURN linked, count(d) AS dangling")
    row = yield from one(Compiled.of(stmt, "the memory propositions linked to adopted concepts"))
    return {"linked": row["linked"], "dangling": row["dangling"]}


def _link_memory(report: dict[str, Any], names: storage.Names, previous: Adoption | None, adoption: Adoption) -> Program:
    """Report the link_memory option and the links written under it. Turning it off while links
    exist is refused (KIP_2002): with the option off, reads assume memory never touches adopted
    concepts, so those links would be read as memory elements (docs/adopt.md, "link_memory")."""
    was_on = previous is not None and previous.link_memory
    if not (was_on or adoption.link_memory):
        return
    counts = yield from link_counts(names)
    linked = counts["linked"]
    report["link_memory"] = {"enabled": adoption.link_memory, "linked_propositions": linked, "dangling_propositions": counts["dangling"]}
    if was_on and not adoption.link_memory and linked:
        raise KipError(
            errors.CONSTRAINT_VIOLATION,
            f"link_memory cannot be turned off in namespace {names.namespace!r}: {linked} memory proposition(s) link to adopted concepts, "
            "and with the option off KIP would read their adopted endpoints as memory elements.",
            'Keep [options] link_memory = true, or first delete those propositions (e.g. DELETE PROPOSITIONS ?l WHERE { ?d {type: "Drug"} ?l (?n, "about", ?d) '
            "} "
            "per adopted type and predicate), then adopt again (docs/adopt.md).",
        )


def survey(ctx: Context, adoption: Adoption, *, dry_run: bool, create_index: bool) -> Program:
    """Everything ``adopt`` reads before it writes: returns ``(report, adoption, previous)`` —
    the report so far, the mapping completed with what SEARCH may query (its indexes), and the
    mapping stored before. Raises KIP_2002 when ``link_memory`` may not be turned off."""
    names = ctx.names
    previous = yield from stored(ctx)
    report: dict[str, Any] = {"namespace": names.namespace, "dry_run": dry_run, **(yield from survey_counts(adoption))}
    report["warnings"] = yield from name_warnings(adoption, report)
    yield from _link_memory(report, names, previous, adoption)
    index, rel_index = yield from text_indexes(adoption, names)

    def usable(each: dict[str, Any] | None) -> bool:
        return each is not None and (each["state"] == "present" or (create_index and not dry_run))

    # the vectors stay queried while their index exists (``embed`` made it)
    adoption = dataclasses.replace(
        adoption,
        text_indexed=usable(index),
        relationships_indexed=usable(rel_index),
        embedded=(yield from vector_index_exists(catalog.adopted_vector_index(names))),
        relationships_embedded=(yield from vector_index_exists(catalog.adopted_relationship_vector_index(names))),
    )
    report["mapping"] = "unchanged" if previous == adoption else ("would be stored" if dry_run else "stored")
    if previous is not None:
        dropped = [t.name for t in previous.types if adoption.type(t.name) is None] + [
            p.name for p in previous.predicates if adoption.predicate(p.name) is None
        ]
        if dropped:
            report["no_longer_adopted"] = dropped
    if dry_run:
        report["would_register"] = {
            "concept_types": [t.name for t in adoption.types],
            "predicates": [p.name for p in adoption.predicates],
            "domain": adopt.DOMAIN,
        }
    for key, each in (("text_index", index), ("relationship_text_index", rel_index)):
        if each is not None:
            report[key] = each
    return report, adoption, previous


def refuse_taken(report: dict[str, Any], create_index: bool) -> None:
    """An index to create whose schema another index already has cannot be: refused before any write."""
    for key in ("text_index", "relationship_text_index"):
        each = report.get(key)
        if each is not None and create_index and each["state"] != "present" and each["taken_by"]:
            raise KipError(
                errors.CONSTRAINT_VIOLATION,
                f"The full-text index {each['name']} cannot be created: Neo4j already has {each['taken_by']} over the same labels "
                "(or relationship types) and properties, and keeps one index per schema (another namespace adopted the same). Nothing was written.",
                "Give this namespace's mapping a different `text` list, or adopt without --create-index (docs/adopt.md).",
            )


def create_indexes(report: dict[str, Any]) -> Program:
    """Create the report's missing (or differently defined) full-text indexes and wait until they
    are online (ADMIN access: DDL); their state becomes "created"."""
    for key in ("text_index", "relationship_text_index"):
        each = report.get(key)
        if each is None or each["state"] == "present":
            continue
        if each["state"] == "different":
            yield from rows(_fixed(catalog.drop_schema_object("INDEX", each["name"]), "drop the adopted full-text index"))
        yield from rows(_fixed(each["statement"], "create the adopted full-text index"))
        yield from rows(_fixed(catalog.AWAIT_INDEX, "wait for the index"), {"name": each["name"]})
        each["state"] = "created"


def store(ctx: Context, adoption: Adoption) -> Program:
    """Store ``adoption`` (JSON) on the namespace's nexus node."""
    yield from one(_fixed(catalog.NEXUS_ADOPT, "store the adoption mapping"), {"namespace": ctx.names.namespace, "adoption": adoption.to_json()})


def vector_schema(ctx: Context) -> Program:
    """The shadow nodes' constraints and vector indexes (``catalog.adopted_vector_ddl``), online."""
    names = ctx.names
    for ddl in catalog.adopted_vector_ddl(names):
        yield from rows(_fixed(ddl, "the adopted vectors' schema"))
    for index in (catalog.adopted_vector_index(names), catalog.adopted_relationship_vector_index(names)):
        yield from rows(_fixed(catalog.AWAIT_INDEX, "wait for the index"), {"name": index})


def mark_embedded(ctx: Context) -> Program:
    """Mark the stored mapping ``embedded`` (SEARCH then queries the shadows' vectors); True when it changed."""
    current = yield from stored(ctx)
    if current is None or (current.embedded and current.relationships_embedded):
        return False
    yield from store(ctx, dataclasses.replace(current, embedded=True, relationships_embedded=True))
    return True

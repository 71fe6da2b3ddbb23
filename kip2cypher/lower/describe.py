"""KIP-META lowering (spec §5, §6.2.2): DESCRIBE here; SEARCH in ``search.py``; EXPORT in ``export.py``.

All META plans are read-only (``Plan("META", "READ", …)``). The behaviour and the
choices the spec leaves to the engine are documented in docs/meta.md.
"""
from __future__ import annotations

from typing import Any, Optional

from .. import cursor, embedding, errors
from ..version import __version__

from ..cypher import storage
from ..syntax import ast
from ..config import Settings
from ..cypher.builder import Ident, Param, Statement
from ..errors import KipError
from ._legacy import Compiled, Plan, Tx
from ..execution.results import concept_object
from ..syntax.values import resolve, resolve_int, resolve_str
from .search import search_capabilities

#: Page size of DESCRIBE CONCEPT TYPES / PROPOSITION TYPES without LIMIT (next_cursor beyond).
DESCRIBE_DEFAULT_LIMIT = 1000
#: Key concepts and key predicates listed per domain in DESCRIBE PRIMER.
PRIMER_KEY_CONCEPTS = 10
PRIMER_KEY_PROPOSITIONS = 10

# The projection of a node without engine-internal bulk (embedding vectors).
_NODE = "{.*, kip_embedding: null}"


# ------------------------------------------------------------------ cursors (kip2cypher.cursor)
def make_cursor(settings: Settings, scope: str, position: Any) -> str:
    """A signed token for ``position`` in the query identified by ``scope``."""
    return cursor.encode(settings, scope, position)


def read_cursor(settings: Settings, scope: str, token: Any) -> Any:
    """The position inside a token issued for the same query; KIP_1001 otherwise."""
    return cursor.decode(settings, scope, token)


def query_scope(kind: str, *parts: Any) -> str:
    """The fingerprint of a query (paging excluded), so a cursor cannot be replayed on another one."""
    return cursor.fingerprint(kind, *parts)


# ------------------------------------------------------------------ helpers
def _plan(statements: list[Compiled], runner) -> Plan:
    return Plan("META", "READ", statements, runner)


def definition_object(props: dict[str, Any]) -> dict[str, Any]:
    """A stored concept (a property map) as the KIP node object."""
    return concept_object(props)


def _names_statement(meta_type: str) -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.CONCEPT), " {type: ", Param(meta_type, "meta_type"), "})")
    stmt.line("RETURN t.name AS name ORDER BY name")
    return Compiled.of(stmt, f"all {meta_type} names")


# ------------------------------------------------------------------ DESCRIBE … TYPES
def _lower_type_list(command: Any, parameters: dict[str, Any], settings: Settings, meta_type: str, what: str) -> Plan:
    limit = resolve_int(command.limit, parameters, "LIMIT") if command.limit is not None else DESCRIBE_DEFAULT_LIMIT
    scope = query_scope(what)
    after = read_cursor(settings, scope, resolve(command.cursor, parameters)) if command.cursor is not None else None
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.CONCEPT), " {type: ", Param(meta_type, "meta_type"), "})")
    stmt.line("WHERE ", Param(after, "after"), " IS NULL OR t.name > ", Param(after, "after"))
    stmt.line("RETURN t.name AS name ORDER BY name LIMIT ", Param(limit + 1, "limit"))
    compiled = Compiled.of(stmt, what)

    def runner(tx: Tx) -> dict[str, Any]:
        names = [row["name"] for row in tx.run(compiled)]
        response: dict[str, Any] = {"result": names[:limit]}
        if len(names) > limit:
            response["next_cursor"] = make_cursor(settings, scope, names[limit - 1])
        return response

    return _plan([compiled], runner)


def lower_describe_concept_types(command: ast.DescribeConceptTypes, parameters: dict[str, Any], settings: Settings) -> Plan:
    return _lower_type_list(command, parameters, settings, storage.CONCEPT_TYPE, "DESCRIBE CONCEPT TYPES")


def lower_describe_proposition_types(command: ast.DescribePropositionTypes, parameters: dict[str, Any], settings: Settings) -> Plan:
    return _lower_type_list(command, parameters, settings, storage.PROPOSITION_TYPE, "DESCRIBE PROPOSITION TYPES")


# ------------------------------------------------------------------ DESCRIBE … TYPE "X"
def _lower_type_definition(command: Any, parameters: dict[str, Any], settings: Settings, meta_type: str, kind: str) -> Plan:
    name = resolve_str(command.name, parameters, f"DESCRIBE {kind.upper()}")
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.CONCEPT), " {type: ", Param(meta_type, "meta_type"), ", name: ", Param(name, "name"), "})")
    stmt.line(f"RETURN t{_NODE} AS t")
    compiled = Compiled.of(stmt, f"the {meta_type} node {name!r}")
    names = _names_statement(meta_type)

    def runner(tx: Tx) -> dict[str, Any]:
        rows = tx.run(compiled)
        if rows:
            return {"result": definition_object(rows[0]["t"])}
        candidates = [row["name"] for row in tx.run(names)]
        guess = errors.closest(name, candidates)
        listing = "DESCRIBE CONCEPT TYPES" if meta_type == storage.CONCEPT_TYPE else "DESCRIBE PROPOSITION TYPES"
        if guess is not None:
            hint = f"Did you mean \"{guess}\"? Names are case-sensitive; run {listing} to list the defined names."
        else:
            hint = f"Run {listing} to list the defined names, or define \"{name}\" with an UPSERT of a {meta_type} node."
        raise KipError(errors.NOT_FOUND, f"The {kind} \"{name}\" is not defined.", hint)

    return _plan([compiled, names], runner)


def lower_describe_concept_type(command: ast.DescribeConceptType, parameters: dict[str, Any], settings: Settings) -> Plan:
    return _lower_type_definition(command, parameters, settings, storage.CONCEPT_TYPE, "concept type")


def lower_describe_proposition_type(command: ast.DescribePropositionType, parameters: dict[str, Any], settings: Settings) -> Plan:
    return _lower_type_definition(command, parameters, settings, storage.PROPOSITION_TYPE, "proposition type")


# ------------------------------------------------------------------ DOMAINS and PRIMER
def _domains_statement(key_concepts: int, key_propositions: int) -> Compiled:
    """Every Domain with its member count and, when asked, its key concepts and predicates.

    Members are the concepts with a ``belongs_to_domain`` link to the domain. A member's
    weight is its degree: the number of propositions (other than domain membership) in
    which it is subject or object. Key concepts are the members of highest degree; key
    predicates are the predicates used most by propositions touching a member.
    """
    btd = Param(storage.BELONGS_TO_DOMAIN, "btd")
    stmt = Statement()
    stmt.line("MATCH (d:", Ident(storage.CONCEPT), " {type: ", Param(storage.DOMAIN, "domain"), "})")
    stmt.line("OPTIONAL MATCH (m:", Ident(storage.CONCEPT), ")-[:", Ident(storage.BELONGS_TO_DOMAIN), "]->(d)")
    stmt.line(
        "WITH d, m, CASE WHEN m IS NULL THEN 0 ELSE COUNT { (m)<-[:",
        Ident(storage.SUBJECT_REL), "|", Ident(storage.OBJECT_REL), "]-(p:", Ident(storage.PROPOSITION), ") WHERE p.predicate <> ", btd,
        " } END AS degree",
    )
    stmt.line("ORDER BY degree DESC, m.type, m.name")
    stmt.line(
        "WITH d, count(m) AS members, collect(CASE WHEN m IS NULL THEN null ELSE {type: m.type, name: m.name} END)[..",
        Param(key_concepts, "key_concepts"), "] AS key_concepts, collect(m) AS ms",
    )
    stmt.line(
        "WITH d, members, key_concepts, COLLECT { UNWIND ms AS m MATCH (m)<-[:",
        Ident(storage.SUBJECT_REL), "|", Ident(storage.OBJECT_REL), "]-(p:", Ident(storage.PROPOSITION), ") WHERE p.predicate <> ", btd,
        " WITH p.predicate AS predicate, count(DISTINCT p) AS uses ORDER BY uses DESC, predicate LIMIT ",
        Param(key_propositions, "key_propositions"), " RETURN predicate } AS key_propositions",
    )
    stmt.line(f"RETURN d{_NODE} AS d, members, key_concepts, key_propositions")
    stmt.line("ORDER BY members DESC, d.name")
    return Compiled.of(stmt, "domains with members, key concepts and key predicates")


def domain_summary(props: dict[str, Any], members: int) -> dict[str, Any]:
    node = definition_object(props)
    attributes = node["attributes"]
    summary: dict[str, Any] = {"id": node["id"], "name": node["name"], "description": attributes.get("description")}
    for key in ("display_hint", "scope_note", "aliases"):
        if key in attributes:
            summary[key] = attributes[key]
    summary["member_count"] = members
    return summary


def _domain_counts_statement() -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (d:", Ident(storage.CONCEPT), " {type: ", Param(storage.DOMAIN, "domain"), "})")
    stmt.line("RETURN d", _NODE, " AS d, COUNT { (:", Ident(storage.CONCEPT), ")-[:", Ident(storage.BELONGS_TO_DOMAIN), "]->(d) } AS members")
    stmt.line("ORDER BY members DESC, d.name")
    return Compiled.of(stmt, "domains with member counts")


def lower_describe_domains(command: ast.DescribeDomains, parameters: dict[str, Any], settings: Settings) -> Plan:
    compiled = _domain_counts_statement()

    def runner(tx: Tx) -> dict[str, Any]:
        return {"result": [domain_summary(row["d"], row["members"]) for row in tx.run(compiled)]}

    return _plan([compiled], runner)


SELF_IDENTITY_DEFAULT = (
    "I am an AI agent whose long-term memory is a Cognitive Nexus: a knowledge graph of concepts and "
    "propositions that I query and evolve with KIP. My persona has not been written down yet; it emerges "
    "through interaction and is recorded on my $self node."
)
NEXUS_DESCRIPTION = (
    "My memory and knowledge are stored in the Cognitive Nexus, which I can query via KIP (KQL FIND, META "
    "DESCRIBE/SEARCH/EXPORT) and evolve via KML (UPSERT, UPDATE, MERGE, DELETE)."
)


def _self_statement() -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (s:", Ident(storage.CONCEPT), " {type: ", Param("Person", "person"), ", name: ", Param("$self", "self"), "})")
    stmt.line(f"RETURN s{_NODE} AS s")
    return Compiled.of(stmt, "the $self node")


def capabilities(settings: Settings) -> dict[str, Any]:
    """What this engine can really do, from its live configuration."""
    from .export import EXPORT_DEFAULT_LIMIT, EXPORT_MAX_LIMIT

    return {
        "protocol": "KIP v1.0-RC10",
        "engine": f"kip2cypher {__version__} (Cypher on Neo4j)",
        "commands": ["FIND", "UPSERT", "UPDATE", "MERGE", "DELETE", "DESCRIBE", "SEARCH", "EXPORT"],
        "search": search_capabilities(embedding.resolve(settings), embedding.unavailable_reason()),
        "limits": {
            "max_path_hops": settings.max_hops,
            "max_result_rows": settings.max_result_rows,
            "max_batch_commands": settings.max_batch,
            "query_timeout_seconds": settings.query_timeout_s,
            "describe_page_size": DESCRIBE_DEFAULT_LIMIT,
            "export_default_limit": EXPORT_DEFAULT_LIMIT,
            "export_max_limit": EXPORT_MAX_LIMIT,
        },
        "strict_schema": settings.strict_schema,
    }


def identity_layer(self_props: Optional[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    identity: dict[str, Any] = {"type": "Person", "name": "$self"}
    if self_props is None:
        identity.update({"id": None, "exists": False, "summary": SELF_IDENTITY_DEFAULT, "attributes": {}})
    else:
        node = definition_object(self_props)
        attributes = node["attributes"]
        summary = attributes.get("identity_narrative") or attributes.get("persona") or attributes.get("description") or SELF_IDENTITY_DEFAULT
        if not isinstance(summary, str):
            summary = SELF_IDENTITY_DEFAULT
        identity.update({"id": node["id"], "exists": True, "summary": summary, "attributes": attributes})
    identity["nexus"] = NEXUS_DESCRIPTION
    identity["capabilities"] = capabilities(settings)
    return identity


def lower_describe_primer(command: ast.DescribePrimer, parameters: dict[str, Any], settings: Settings) -> Plan:
    self_stmt = _self_statement()
    domains = _domains_statement(PRIMER_KEY_CONCEPTS, PRIMER_KEY_PROPOSITIONS)

    def runner(tx: Tx) -> dict[str, Any]:
        rows = tx.run(self_stmt)
        identity = identity_layer(rows[0]["s"] if rows else None, tx.settings)
        domain_map = []
        for row in tx.run(domains):
            entry = domain_summary(row["d"], row["members"])
            entry["key_concepts"] = [c for c in row["key_concepts"] if c is not None]
            entry["key_propositions"] = list(row["key_propositions"])
            domain_map.append(entry)
        return {"result": {"identity": identity, "domain_map": domain_map, "total_domains": len(domain_map)}}

    return _plan([self_stmt, domains], runner)


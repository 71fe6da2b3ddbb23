"""The statements of an UPSERT (docs/kml.md): they do not depend on the command — rows travel
as parameters — so they are built once per namespace (``statements``) and carried by the plan."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from ..cypher import storage
from ..cypher.builder import COLLECTED, Fragment, Ident, Param, Part, Statement, frag, literal, return_collected
from ..domain import rules, writes
from .plan import Compiled

#: The kinds of outside references the resolve statement looks up (``k`` of a ``$refs`` item;
#: the ``KIND`` of ``upsert_plan.ConceptByName`` …).
BY_TYPE_NAME, CONCEPT_BY_ID, PROPOSITION_BY_ID, BY_TRIPLE = "ctn", "cid", "pid", "spo"


# ====================================================================== statements
def _resolve_statement(names: storage.Names) -> Compiled:
    """One row per ``$refs`` item ``{i, k, a, b, c}`` (``k``: the reference's ``KIND``)."""
    s = Statement()
    _resolve_lines(s, names, COLLECTED)
    return Compiled.of(s, "UPSERT: check types/predicates and look up outside targets", collected=True)


def _resolve_lines(s: Statement, names: storage.Names, column: str) -> None:
    """The lookup of ``$refs``, its rows collected as ``column``."""
    branches: tuple[tuple[str, str, str, Part], ...] = (
        (BY_TYPE_NAME, names.concept, "type: r.a, name: r.b", frag("n.", Ident(storage.attr_key("instance_schema")))),
        (CONCEPT_BY_ID, names.concept, "id: r.a", "null"),
        (PROPOSITION_BY_ID, names.proposition, "id: r.a", "null"),
        (BY_TRIPLE, names.proposition, "subject: r.a, predicate: r.b, object: r.c", "null"),
    )
    s.line("UNWIND ", Param(None, "refs"), " AS r")
    with s.block("CALL (r)"):
        for index, (kind, label, match, schema) in enumerate(branches):
            if index:
                s.line("UNION ALL")
            s.line("WITH r WHERE r.k = ", literal(kind))
            s.line("OPTIONAL MATCH (n:", label, " {", match, "})")
            s.line("RETURN n.id AS id, ", schema, " AS schema")
    s.line(return_collected(_columns("i", "id", "schema", i="r.i"), column))


def _columns(*keys: str, **exprs: str) -> list[tuple[str, Part]]:
    """``(key, expression)`` pairs for ``return_collected``: the variable of the same name
    unless ``exprs`` gives another expression."""
    return [(key, exprs.get(key, key)) for key in keys]


def _match_or_create(
    names: storage.Names, label: str, id_field: str, create: Callable[[Statement, storage.Names], None], *, concept: bool, attr_keys: bool = False
) -> Statement:
    """The frame of both UPSERT writes: per ``$rows`` item, match-or-create the element
    (``create``) or match it by ``row.<id_field>``, then the guarded write (``writes.apply_tail``)."""
    s = Statement()
    _match_or_create_lines(s, names, label, id_field, create, Param(None, "rows"), concept=concept, attr_keys=attr_keys)
    return s


def _match_or_create_lines(
    s: Statement,
    names: storage.Names,
    label: str,
    id_field: str,
    create: Callable[[Statement, storage.Names], None],
    rows: Part,
    *,
    concept: bool,
    attr_keys: bool = False,
) -> None:
    """``_match_or_create`` over the list expression ``rows``."""
    s.line("UNWIND ", rows, " AS row")
    with s.block("CALL (row)"):
        with s.block("CALL (row)"):
            s.line("WITH row WHERE row.", id_field, " IS NULL")
            create(s, names)
            s.line("RETURN n")
            s.line("UNION ALL")
            s.line("WITH row WHERE row.", id_field, " IS NOT NULL")
            s.line("OPTIONAL MATCH (n:", label, " {id: row.", id_field, "})")
            s.line("RETURN n")
        s.line("WITH row, n, ", writes.created_flag(), " AS created")
        writes.apply_tail(s, names, concept=concept, attr_keys=attr_keys)
    extra = ("tn", "attr_keys") if attr_keys else ()
    s.line(return_collected(_columns("i", "id", "status", "version", "created", *extra)))


def _create_concept(s: Statement, names: storage.Names) -> None:
    s.line("MERGE (n:", names.concept, " {type: row.type, name: row.name})")
    s.line("  ", writes.on_create_set(writes.new_concept_id(), frag("n:", vocabulary_name(names, "row.type"))))


def _create_proposition(s: Statement, names: storage.Names, linked: bool = False) -> None:
    # row.sc / row.oc: whether the endpoint is a concept (known in Python), so one index seek each
    s.line("OPTIONAL MATCH (sc:", names.concept, " {id: CASE WHEN row.sc THEN row.s END})")
    s.line("OPTIONAL MATCH (sp:", names.proposition, " {id: CASE WHEN row.sc THEN null ELSE row.s END})")
    s.line("OPTIONAL MATCH (oc:", names.concept, " {id: CASE WHEN row.oc THEN row.o END})")
    s.line("OPTIONAL MATCH (op:", names.proposition, " {id: CASE WHEN row.oc THEN null ELSE row.o END})")
    if linked:
        # row.sa / row.oa: the elementId of an adopted endpoint, found by the plan's adopted lookup
        # in this transaction (link_memory, docs/adopt.md); the team's node itself is not written.
        s.line("OPTIONAL MATCH (sa) WHERE elementId(sa) = row.sa")
        s.line("OPTIONAL MATCH (oa) WHERE elementId(oa) = row.oa")
        s.line("WITH row, coalesce(sc, sp, sa) AS s, coalesce(oc, op, oa) AS o")
    else:
        s.line("WITH row, coalesce(sc, sp) AS s, coalesce(oc, op) AS o")
    s.line("WHERE s IS NOT NULL AND o IS NOT NULL")
    s.line("MERGE (n:", names.proposition, " {subject: row.s, predicate: row.p, object: row.o})")
    s.line("  ", writes.on_create_set(writes.new_proposition_id("row.p")))
    s.line("WITH row, s, o, n")
    with s.block("CALL (row, s, o, n)"):
        s.line("WITH * WHERE ", writes.created_flag())
        _create_links(s, names)
    if linked:
        _relink(s, names)


def _create_links(s: Statement, names: storage.Names) -> None:
    """A proposition node's KIP_SUBJECT / KIP_OBJECT and its native relationship carrying its id."""
    s.line(
        "CREATE (n)-[:",
        names.subject_rel,
        "]->(s), (n)-[:",
        names.object_rel,
        "]->(o), ",
        "(s)-[:",
        vocabulary_name(names, "row.p"),
        " {",
        Ident(names.link_id),
        ": n.id}]->(o)",
    )


def _relink(s: Statement, names: storage.Names) -> None:
    """An existing proposition that lost an endpoint relationship — the team deleted the adopted
    node it linked (``DETACH DELETE``) and has created a node with the same adopted id since —
    is linked again: its remaining KIP_SUBJECT / KIP_OBJECT go and all three relationships are
    created anew (docs/adopt.md, "link_memory"). A whole proposition is left alone."""
    whole = frag("EXISTS { (n)-[:", names.subject_rel, "]->(s) } AND EXISTS { (n)-[:", names.object_rel, "]->(o) }")
    with s.block("CALL (row, s, o, n)"):
        s.line("WITH * WHERE NOT ", writes.created_flag(), " AND NOT (", whole, ")")
        s.line("OPTIONAL MATCH (n)-[old:", names.subject_rel, "|", names.object_rel, "]->()")
        s.line("DELETE old")
        s.line("WITH DISTINCT row, s, o, n")
        _create_links(s, names)


def _concept_statement(names: storage.Names, strict: bool) -> Compiled:
    s = _match_or_create(names, names.concept, "id", _create_concept, concept=True, attr_keys=strict)
    return Compiled.of(s, "UPSERT: match-or-create all CONCEPT blocks" + (" (strict schema)" if strict else ""), collected=True)


def _checked_concept_statement(names: storage.Names, strict: bool, *, flat: bool = False) -> Compiled:
    """The resolve lookup and the concept write in ONE statement (one round trip fewer), for a
    capsule whose concept rows need nothing the lookup finds (no adopted endpoints): ``refs``
    (the lookup's rows) is read before anything is written, and the write runs only when every
    reference listed in ``$required`` was found — any miss there is a KIP_2001/KIP_3002 the
    program raises (the transaction rolls back), so a misspelled type never even reaches the
    MERGE that would label a node. (A strict-mode schema read of a type this capsule defines
    may find nothing: not required.) The test is a column of its own (``ok``), read before the
    write's subquery: inside it, Neo4j would plan an ``Eager`` over the unwound rows for it.

    ``flat``: every row names a different concept by ``{type, name}`` (``UpsertPlan.flat``) —
    one MERGE pipeline over the rows instead of a subquery per row (``_merge_concepts``)."""
    s = Statement()
    with s.block("CALL ()"):
        _resolve_lines(s, names, "refs")
    s.line("WITH refs, all(x IN refs WHERE x.id IS NOT NULL OR NOT (x.i IN ", Param(None, "required"), ")) AS ok")
    with s.block("CALL (ok)"):
        rows = frag("CASE WHEN ok THEN ", Param(None, "rows"), " ELSE [] END")
        if flat:
            _merge_concepts(s, names, rows, strict)
        else:
            _match_or_create_lines(s, names, names.concept, "id", _create_concept, rows, concept=True, attr_keys=strict)
    s.line("RETURN refs, ", COLLECTED)
    label = "UPSERT: check types/predicates, look up outside targets and match-or-create all CONCEPT blocks"
    return Compiled.of(s, label + (", each a different {type, name}" if flat else "") + (" (strict schema)" if strict else ""))


def _merge_concepts(s: Statement, names: storage.Names, rows: Part, strict: bool) -> None:
    """Match-or-create concept rows that each name a different concept by ``{type, name}``, in
    one pipeline: the MERGE locks what it matches (``writes.match_lock``), then
    ``writes.merged_concept_tail``. A row never reads what another writes, so rows need not
    run one by one (a per-row subquery plans more ``Eager`` operators and projections)."""
    s.line("UNWIND ", rows, " AS row")
    _create_concept(s, names)
    s.line("  ", writes.match_lock("n"))
    s.line(return_collected(writes.merged_concept_tail(s, attr_keys=strict)))


def _proposition_statement(names: storage.Names, linked: bool = False) -> Compiled:
    create = functools.partial(_create_proposition, linked=True) if linked else _create_proposition
    s = _match_or_create(names, names.proposition, "pid", create, concept=False)
    return Compiled.of(
        s, "UPSERT: match-or-create PROPOSITION blocks and SET PROPOSITIONS links (one wave)" + (", adopted endpoints" if linked else ""), collected=True
    )


def _concept_probe_statement(names: storage.Names) -> Compiled:
    """dry_run: the same checks as the concept write, reading only."""
    version = Ident(writes.VERSION)
    s = Statement()
    s.line("UNWIND ", Param(None, "rows"), " AS row")
    with s.block("CALL (row)"):
        s.line("OPTIONAL MATCH (a:", names.concept, " {type: row.type, name: row.name})")
        s.line("OPTIONAL MATCH (b:", names.concept, " {id: row.id})")
        s.line("WITH row, coalesce(a, b) AS n")
        s.line("WITH row, n, properties(n) AS cur")
        s.line(
            "WITH row, n, cur, coalesce(",
            rules.cy_protected_concept("cur.type", "cur.name"),
            ", false) AS prot, ",
            "coalesce(",
            rules.cy_actor("cur.type", "cur.name"),
            ", false) AS actor",
        )
        s.line("WITH row, n, cur, prot, actor, CASE WHEN prot THEN coalesce(row.own, row.props) ELSE row.props END AS props")
        s.line("RETURN CASE")
        s.line("  WHEN n IS NULL AND row.id IS NOT NULL THEN 'missing'")
        s.line("  WHEN row.expect IS NOT NULL AND coalesce(CASE WHEN n IS NULL THEN 0 ELSE cur.", version, " END, -1) <> row.expect THEN 'version'")
        s.line("  WHEN prot AND any(k IN keys(props) WHERE cur[k] IS NULL OR cur[k] <> props[k]) AND NOT ", writes.superseded("cur"), " THEN 'protected'")
        s.line(
            "  WHEN actor AND row.cd IS NOT NULL AND cur.",
            Ident(writes.CORE_DIRECTIVES),
            " IS NOT NULL AND cur.",
            Ident(writes.CORE_DIRECTIVES),
            " <> row.cd THEN 'protected'",
        )
        s.line("  ELSE 'ok' END AS status, cur.", version, " AS version, n IS NULL AS created")
    s.line("RETURN row.i AS i, status, version, created")
    return Compiled.of(s, "UPSERT dry_run: probe CONCEPT blocks")


@dataclass(frozen=True)
class UpsertStatements:
    """The statements of every UPSERT in one namespace (command-independent: rows, references
    and the timestamp travel as run-time parameters)."""

    #: Looks up ``$refs``: ``[{i, k, a, b, c}]`` with ``k`` the ``KIND`` of the reference.
    resolve: Compiled
    #: Matches-or-creates ``$rows`` (``ConceptRow.payload()``) at ``$now``.
    concepts: Compiled
    #: ``concepts`` returning also each concept's type/name and attribute keys (strict instance_schema checks).
    concepts_strict: Compiled
    #: ``resolve`` and ``concepts`` (``concepts_strict``) in one statement: one record ``{refs, rows}``.
    checked_concepts: Compiled
    checked_concepts_strict: Compiled
    #: ``checked_concepts`` for rows that each name a different concept by ``{type, name}`` (``UpsertPlan.flat``).
    checked_concepts_flat: Compiled
    checked_concepts_flat_strict: Compiled
    #: dry_run: the checks of ``concepts`` without writing.
    probe: Compiled
    #: One wave of proposition rows.
    propositions: Compiled
    #: ``propositions`` when an endpoint is an adopted concept (rows carry ``sa`` / ``oa``).
    propositions_linked: Compiled


@functools.lru_cache(maxsize=64)
def statements(names: storage.Names = storage.DEFAULT) -> UpsertStatements:
    return UpsertStatements(
        resolve=_resolve_statement(names),
        concepts=_concept_statement(names, False),
        concepts_strict=_concept_statement(names, True),
        checked_concepts=_checked_concept_statement(names, False),
        checked_concepts_strict=_checked_concept_statement(names, True),
        checked_concepts_flat=_checked_concept_statement(names, False, flat=True),
        checked_concepts_flat_strict=_checked_concept_statement(names, True, flat=True),
        probe=_concept_probe_statement(names),
        propositions=_proposition_statement(names),
        propositions_linked=_proposition_statement(names, linked=True),
    )


def vocabulary_name(names: storage.Names, name: str) -> Fragment:
    """``$('kip:' + <expression>)``: a dynamic concept-type label or predicate relationship type in
    the namespace's label space (``$('kip.alice:' + row.p)`` in namespace ``alice``)."""
    return frag("$(", literal(names.predicate_prefix), " + ", name, ")")


# ====================================================================== the plan

"""EXPORT ?x WHERE {…} [LIMIT n] [CURSOR c] → a Knowledge Capsule (spec §5.3, docs/meta.md).

The matched elements are put in one total order, paged with a signed keyset cursor:

1. schema definitions — the ``$ConceptType`` node of ``$ConceptType``, then that of
   ``$PropositionType``, then the other ``$ConceptType`` nodes, then the
   ``$PropositionType`` nodes (each by name);
2. every other concept, by (type, name);
3. propositions, by nesting level (a proposition about a proposition comes after it),
   then predicate, then id.

So every page only refers to what an earlier page (or itself) defined, and the pages
apply in order. The lowering builds the page statement and the endpoint-identity lookup;
the program (``kip2cypher.execution.programs.export``) runs them and assembles the capsule.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from .. import cursor, errors
from ..adoption import AdoptedType, Adoption
from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Internal, Param, Statement, frag, join
from ..domain.capabilities import EXPORT_DEFAULT_LIMIT, EXPORT_MAX_LIMIT
from ..errors import KipError
from ..syntax import ast
from ..syntax.values import resolve, resolve_int
from . import adopted, grounding, surprises
from .context import NODE_KINDS
from .pattern import Pattern, lower_where
from .plan import Compiled, Plan


@dataclass(frozen=True)
class ExportPlan(Plan):
    """One EXPORT page: the page statement (run with ``after`` and ``fetch`` = ``limit`` + 1), the
    endpoint-identity lookup (run once per nesting level of outside endpoints), the cursor
    fingerprint and the names a KIP_2001 check may need (like FIND: all of them when the first
    page is empty, those used only in OPTIONAL / NOT / UNION always)."""

    page: Compiled
    refs: Compiled
    limit: int
    after: tuple[Any, ...] | None  # the sort key the previous page ended at (CURSOR)
    fingerprint: str
    #: The identity check of an EXPORT of adopted data (``_adopted_identities``); None for memory.
    identities: Compiled | None
    grounding_all: grounding.Names
    grounding_optional: grounding.Names
    grounding_at: grounding.Offsets  # where the command names each of them (KIP_2001 positions)

    def checks(self) -> tuple[Compiled, ...]:
        """The grounding check (and the identity check of adopted data), as listed (and EXPLAINed) by a dry run."""
        identities = (self.identities,) if self.identities is not None else ()
        return (*identities, grounding.check_statement(self.grounding_all, self.names)) if self.grounding_all else identities

    def steps(self) -> tuple[Compiled, ...]:
        names = (grounding.defined_names(self.names),) if self.grounding_all else ()
        return (self.page, *self.checks(), *names, self.refs)


def _page_statement(command: ast.Export, parameters: dict[str, Any], settings: Settings) -> tuple[Compiled, Compiled | None, Pattern]:
    """The page query, the identity check of adopted data (None for memory) and the lowered WHERE."""
    pattern = lower_where(command.where, parameters, settings)
    target = pattern.require(command.target, used_in="EXPORT", kinds=NODE_KINDS)
    pattern.distinct([command.target], used_in="EXPORT")
    if target.adopted is not None:
        return (
            _adopted_page(pattern, command.target, target.adopted, settings.adoption),
            _adopted_identities(pattern, command.target, target.adopted, settings.adoption),
            pattern,
        )
    stmt = pattern.statement()
    e, level, key = Internal("e"), Internal("level"), Internal("key")
    names = pattern.ctx.names
    prop = Ident(names.proposition)
    rels = (Ident(names.subject_rel), "|", Ident(names.object_rel))
    stmt.line("WITH ", pattern.ref(command.target), " AS ", e, " WHERE ", e, " IS NOT NULL")
    with stmt.block("CALL (", e, ")"):
        stmt.line("OPTIONAL MATCH path = (", e, ":", prop, ")-[:", *rels, "*1..]->(:", prop, ")")
        stmt.line("RETURN coalesce(max(length(path)), 0) AS ", level)
    ct, pt = Param(storage.CONCEPT_TYPE, "concept_type"), Param(storage.PROPOSITION_TYPE, "proposition_type")
    stmt.line("WITH ", e, ", CASE")
    stmt.line("  WHEN ", e, ":", prop, " THEN [5, ", level, ", ", e, ".predicate, ", e, ".id]")
    stmt.line("  WHEN ", e, ".type = ", ct, " AND ", e, ".name = ", ct, " THEN [0, 0, '', '']")
    stmt.line("  WHEN ", e, ".type = ", ct, " AND ", e, ".name = ", pt, " THEN [1, 0, '', '']")
    stmt.line("  WHEN ", e, ".type = ", ct, " THEN [2, 0, '', ", e, ".name]")
    stmt.line("  WHEN ", e, ".type = ", pt, " THEN [3, 0, '', ", e, ".name]")
    stmt.line("  ELSE [4, 0, ", e, ".type, ", e, ".name] END AS ", key)
    stmt.line("WHERE ", Param(None, "after"), " IS NULL OR ", key, " > ", Param(None, "after"))
    stmt.line("RETURN ", storage.node_projection(e), " AS element, ", e, ":", prop, " AS is_proposition, ", key, " AS sort_key")
    stmt.line("ORDER BY sort_key LIMIT ", Param(None, "fetch"))
    return Compiled.of(stmt, "EXPORT page"), None, pattern


def _adopted_page(pattern: Pattern, target: str, what: adopted.Adopted, adoption: Adoption) -> Compiled:
    """The page of an EXPORT whose target binds adopted nodes / relationships (docs/adopt.md,
    "EXPORT"): their KIP objects in the order of memory elements — concepts by (type, name),
    propositions by (predicate, id), at nesting level 0 — with the id last, so the order stays
    total; a proposition's row also carries the ``{id, type, name}`` of its two endpoints."""
    stmt = pattern.statement()
    e, key = Internal("e"), Internal("key")
    stmt.line("WITH ", pattern.ref(target), " AS ", e, " WHERE ", e, " IS NOT NULL")
    concept = isinstance(what, AdoptedType)
    if concept:
        stmt.line("WITH ", e, ", [4, 0, ", Param(what.name), ", ", e, ".", Ident(what.name_property), ", ", adopted.concept_id(e, what), "] AS ", key)
        refs = frag("[]")
    else:
        stmt.line("WITH ", e, ", [5, 0, ", Param(what.name), ", ", adopted.proposition_id(e, what), "] AS ", key)
        refs = frag(
            "[",
            join(", ", [_endpoint_ref(frag(end, "(", e, ")"), adoption.type(name)) for end, name in (("startNode", what.subject), ("endNode", what.object))]),
            "]",
        )
    stmt.line("WHERE ", Param(None, "after"), " IS NULL OR ", key, " > ", Param(None, "after"))
    stmt.line(
        "RETURN ",
        adopted.element(e, what, adoption),
        " AS element, ",
        "false" if concept else "true",
        " AS is_proposition, ",
        key,
        " AS sort_key, ",
        refs,
        " AS refs",
    )
    stmt.line("ORDER BY sort_key LIMIT ", Param(None, "fetch"))
    return Compiled.of(stmt, "EXPORT page (adopted)")


def _endpoint_ref(node: Fragment, t: AdoptedType) -> Fragment:
    return frag("{id: ", adopted.concept_id(node, t), ", type: ", Param(t.name), ", name: ", node, ".", Ident(t.name_property), "}")


def _adopted_identities(pattern: Pattern, target: str, what: adopted.Adopted, adoption: Adoption) -> Compiled:
    """For an EXPORT of adopted data: the concepts its capsule names by ``{type, name}`` that this
    cannot identify — nodes without a string name, and names several nodes share (among the
    exported concepts; for propositions, among all nodes of the endpoint's type, since the
    capsule's reference would find whichever the destination holds). One row: ``nameless``,
    ``duplicates`` (how many names) and up to five ``[type, name, nodes]`` examples. Over the
    whole exported set on every page: a later page must not hold what an earlier one could not."""
    stmt = pattern.statement()
    e = Internal("e")
    stmt.line("WITH ", pattern.ref(target), " AS ", e, " WHERE ", e, " IS NOT NULL")
    if isinstance(what, AdoptedType):
        name, n = Internal("name"), Internal("n")
        stmt.line("WITH ", e, ".", Ident(what.name_property), " AS ", name, ", count(*) AS ", n)
        stmt.line(
            "WITH sum(CASE WHEN ",
            name,
            " IS :: STRING NOT NULL THEN 0 ELSE ",
            n,
            " END) AS nameless, ",
            "collect(CASE WHEN ",
            name,
            " IS :: STRING NOT NULL AND ",
            n,
            " > 1 THEN [",
            Param(what.name),
            ", ",
            name,
            ", ",
            n,
            "] END) AS duplicates",
        )
    else:
        ends = {"startNode": adoption.type(what.subject), "endNode": adoption.type(what.object)}
        values = {end: frag(end, "(", e, ").", Ident(t.name_property)) for end, t in ends.items()}
        stmt.line("WITH ", join(", ", [frag(v, " AS ", Internal(end)) for end, v in values.items()]))
        named = join(" AND ", [frag(Internal(end), " IS :: STRING NOT NULL") for end in ends])
        per_type: dict[str, list[str]] = {}
        for end, t in ends.items():
            per_type.setdefault(t.name, []).append(end)
        lists = [
            frag(join(" + ", [frag("collect(DISTINCT ", Internal(end), ")") for end in sides]), " AS ", Internal(f"names{i}"))
            for i, sides in enumerate(per_type.values())
        ]
        stmt.line("WITH sum(CASE WHEN ", named, " THEN 0 ELSE 1 END) AS nameless, ", join(", ", lists))
        for i, type_name in enumerate(per_type):
            t, y, names, name = adoption.type(type_name), Internal("y"), Internal(f"names{i}"), Internal("name")
            with stmt.block(frag("CALL (", names, ")")):
                stmt.line("MATCH ", adopted.node(y, t))
                stmt.line("WITH ", y, ".", Ident(t.name_property), " AS ", name, ", ", y, " WHERE ", name, " IN ", names)
                stmt.line("WITH ", name, ", count(", y, ") AS n WHERE n > 1")
                stmt.line("RETURN collect([", Param(t.name), ", ", name, ", n]) AS ", Internal(f"shared{i}"))
        stmt.line("WITH nameless, ", join(" + ", [Internal(f"shared{i}") for i in range(len(per_type))]), " AS duplicates")
    stmt.line("RETURN nameless, size(duplicates) AS duplicates, duplicates[..5] AS examples")
    return Compiled.of(stmt, "EXPORT identities of adopted data")


@functools.lru_cache(maxsize=64)
def _refs_statement(names: storage.Names) -> Compiled:
    """The endpoint-identity lookup (the same for every EXPORT of a namespace)."""
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "ids"), " AS ref_id")
    stmt.line("OPTIONAL MATCH (c:", Ident(names.concept), " {id: ref_id})")
    stmt.line("OPTIONAL MATCH (p:", Ident(names.proposition), " {id: ref_id})")
    stmt.line("RETURN ref_id AS id, c.type AS type, c.name AS name, p.subject AS subject, p.predicate AS predicate, p.object AS object")
    return Compiled.of(stmt, "endpoint identities")


def lower_export(command: ast.Export, parameters: dict[str, Any], settings: Settings) -> ExportPlan:
    limit = resolve_int(command.limit, parameters, "LIMIT") if command.limit is not None else EXPORT_DEFAULT_LIMIT
    if limit > EXPORT_MAX_LIMIT:
        raise KipError(
            errors.RESOURCE_EXHAUSTED,
            f"EXPORT LIMIT {limit} exceeds the maximum of {EXPORT_MAX_LIMIT}.",
            f"Export in pages: LIMIT {EXPORT_MAX_LIMIT} or less, then CURSOR with each next_cursor.",
        )
    # The cursor is bound to the query without its paging (page N+1 matches page N).
    paging = {v.name for v in (command.limit, command.cursor) if isinstance(v, ast.Placeholder)}
    fingerprint = cursor.fingerprint(
        "EXPORT", command.target, repr(command.where), json.dumps({k: v for k, v in parameters.items() if k not in paging}, sort_keys=True, default=str)
    )
    after = cursor.decode(settings, fingerprint, resolve(command.cursor, parameters)) if command.cursor is not None else None
    page, identities, pattern = _page_statement(command, parameters, settings)
    return ExportPlan(
        page=page,
        refs=_refs_statement(storage.names(settings.namespace)),
        limit=limit,
        after=tuple(after) if isinstance(after, list) else after,
        fingerprint=fingerprint,
        identities=identities,
        grounding_all=grounding.names(pattern.grounding),
        grounding_optional=grounding.names(pattern.grounding, required_only=False),
        grounding_at=grounding.offsets(pattern.grounding),
        warnings=surprises.other_kind(pattern.ctx.other_kind_reads),
    )

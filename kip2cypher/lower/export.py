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
from typing import Any, Optional

from .. import cursor, errors
from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Ident, Internal, Param, Statement
from ..errors import KipError
from ..syntax import ast
from ..syntax.values import resolve, resolve_int
from . import adopted, grounding
from .pattern import NODE_KINDS, lower_where
from .plan import Compiled, Plan

#: Elements per page when EXPORT has no LIMIT (next_cursor beyond), and the largest LIMIT accepted.
EXPORT_DEFAULT_LIMIT = 1000
EXPORT_MAX_LIMIT = 5000


@dataclass(frozen=True)
class ExportPlan(Plan):
    """One EXPORT page: the page statement (run with ``after`` and ``fetch`` = ``limit`` + 1), the
    endpoint-identity lookup (run once per nesting level of outside endpoints), the cursor
    fingerprint and the names a KIP_2001 check may need (like FIND: all of them when the first
    page is empty, those used only in OPTIONAL / NOT / UNION always)."""

    KIND = "META"
    page: Compiled
    refs: Compiled
    limit: int
    after: Optional[tuple[Any, ...]]  # the sort key the previous page ended at (CURSOR)
    fingerprint: str
    grounding_all: grounding.Names
    grounding_optional: grounding.Names
    grounding_at: grounding.Offsets  # where the command names each of them (KIP_2001 positions)

    def checks(self) -> tuple[Compiled, ...]:
        """The grounding check, as listed (and EXPLAINed) by a dry run."""
        return (grounding.check_statement(self.grounding_all, self.names),) if self.grounding_all else ()

    def steps(self) -> tuple[Compiled, ...]:
        names = (grounding.defined_names(self.names),) if self.grounding_all else ()
        return (self.page, *self.checks(), *names, self.refs)


def _page_statement(command: ast.Export, parameters: dict[str, Any], settings: Settings) -> tuple[Compiled, grounding.Names, grounding.Names, grounding.Offsets]:
    """The page query, plus the (meta-type, name) pairs the WHERE grounds on: all, those
    only in OPTIONAL/NOT/UNION, and where the command names them."""
    pattern = lower_where(command.where, parameters, settings)
    target = pattern.require(command.target, used_in="EXPORT", kinds=NODE_KINDS)
    if target.adopted is not None:
        raise adopted.not_exported(target.adopted, command.target)
    pattern.distinct([command.target], used_in="EXPORT")
    stmt = pattern.statement()
    e, level, key = Internal("e"), Internal("level"), Internal("key")
    names = pattern.lowerer.names
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
    return (Compiled.of(stmt, "EXPORT page"), grounding.names(pattern.grounding), grounding.names(pattern.grounding, required_only=False),
            grounding.offsets(pattern.grounding))


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
        raise KipError(errors.RESOURCE_EXHAUSTED, f"EXPORT LIMIT {limit} exceeds the maximum of {EXPORT_MAX_LIMIT}.", f"Export in pages: LIMIT {EXPORT_MAX_LIMIT} or less, then CURSOR with each next_cursor.")
    # The cursor is bound to the query without its paging (page N+1 matches page N).
    paging = {v.name for v in (command.limit, command.cursor) if isinstance(v, ast.Placeholder)}
    fingerprint = cursor.fingerprint("EXPORT", command.target, repr(command.where), json.dumps({k: v for k, v in parameters.items() if k not in paging}, sort_keys=True, default=str))
    after = cursor.decode(settings, fingerprint, resolve(command.cursor, parameters)) if command.cursor is not None else None
    page, grounding_all, grounding_optional, grounding_at = _page_statement(command, parameters, settings)
    return ExportPlan(
        page=page,
        refs=_refs_statement(storage.names(settings.namespace)),
        limit=limit,
        after=tuple(after) if isinstance(after, list) else after,
        fingerprint=fingerprint,
        grounding_all=grounding_all,
        grounding_optional=grounding_optional,
        grounding_at=grounding_at,
    )

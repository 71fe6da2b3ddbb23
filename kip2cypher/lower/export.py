"""EXPORT ?x WHERE {…} [LIMIT n] [CURSOR c] → a Knowledge Capsule (spec §5.3, docs/meta.md).

The matched elements are put in one total order, paged with a signed keyset cursor:

1. schema definitions — the ``$ConceptType`` node of ``$ConceptType``, then that of
   ``$PropositionType``, then the other ``$ConceptType`` nodes, then the
   ``$PropositionType`` nodes (each by name);
2. every other concept, by (type, name);
3. propositions, by nesting level (a proposition about a proposition comes after it),
   then predicate, then id.

So every page only refers to what an earlier page (or itself) defined, and the pages
apply in order. The capsule is built as AST nodes and printed by ``printer.to_kip``, so it
is always text our parser accepts. In the capsule, an element of the same page is
referenced by its local handle; any other concept by ``{type, name}``; any other
proposition by a nested structural clause ``(subject, "predicate", object)`` — ids are not
portable. Reserved ``_`` metadata is never exported.
"""
from __future__ import annotations

import json
from typing import Any, Optional, Union

from .. import errors

from ..cypher import storage
from ..syntax import ast
from ..config import Settings
from ..cypher.builder import Ident, Internal, Param, Statement
from ..errors import KipError
from ._legacy import Compiled, Plan, Tx
from ..syntax.values import resolve, resolve_int

#: Elements per page when EXPORT has no LIMIT (next_cursor beyond), and the largest LIMIT accepted.
EXPORT_DEFAULT_LIMIT = 1000
EXPORT_MAX_LIMIT = 5000


# ------------------------------------------------------------------ values → AST
def value_node(value: Any) -> ast.Value:
    """A JSON value as a KIP value node (for the printer)."""
    if isinstance(value, dict):
        return ast.ObjectLit(tuple((str(k), value_node(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ast.ListLit(tuple(value_node(v) for v in value))
    return ast.Literal(value)


def object_node(values: dict[str, Any]) -> Optional[ast.ObjectLit]:
    return ast.ObjectLit(tuple((k, value_node(v)) for k, v in values.items())) if values else None


def author_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata without the engine's reserved ``_`` keys."""
    return {k: v for k, v in metadata.items() if not k.startswith("_")}


# ------------------------------------------------------------------ statements
def _page_statement(command: ast.Export, parameters: dict[str, Any], settings: Settings) -> tuple[Compiled, list, list]:
    """The page query, plus the (meta-type, name) pairs the WHERE grounds on: all, and those
    only in OPTIONAL/NOT/UNION (checked like FIND: KIP_2001 for an undefined name)."""
    from .pattern import NODE_KINDS, lower_where
    from .grounding import names as grounding_names

    pattern = lower_where(command.where, parameters, settings)
    pattern.require(command.target, used_in="EXPORT", kinds=NODE_KINDS)
    pattern.distinct([command.target], used_in="EXPORT")
    stmt = pattern.statement()
    e, level, key = Internal("e"), Internal("level"), Internal("key")
    prop, concept = Ident(storage.PROPOSITION), Ident(storage.CONCEPT)
    rels = (Ident(storage.SUBJECT_REL), "|", Ident(storage.OBJECT_REL))
    stmt.line("WITH ", pattern.ref(command.target), " AS ", e, " WHERE ", e, " IS NOT NULL")
    stmt.line("CALL (", e, ") {")
    stmt.line("  OPTIONAL MATCH path = (", e, ":", prop, ")-[:", *rels, "*1..]->(:", prop, ")")
    stmt.line("  RETURN coalesce(max(length(path)), 0) AS ", level)
    stmt.line("}")
    ct, pt = Param(storage.CONCEPT_TYPE, "concept_type"), Param(storage.PROPOSITION_TYPE, "proposition_type")
    stmt.line("WITH ", e, ", CASE")
    stmt.line("  WHEN ", e, ":", prop, " THEN [5, ", level, ", ", e, ".predicate, ", e, ".id]")
    stmt.line("  WHEN ", e, ".type = ", ct, " AND ", e, ".name = ", ct, " THEN [0, 0, '', '']")
    stmt.line("  WHEN ", e, ".type = ", ct, " AND ", e, ".name = ", pt, " THEN [1, 0, '', '']")
    stmt.line("  WHEN ", e, ".type = ", ct, " THEN [2, 0, '', ", e, ".name]")
    stmt.line("  WHEN ", e, ".type = ", pt, " THEN [3, 0, '', ", e, ".name]")
    stmt.line("  ELSE [4, 0, ", e, ".type, ", e, ".name] END AS ", key)
    stmt.line("WHERE ", Param(None, "after"), " IS NULL OR ", key, " > ", Param(None, "after"))
    stmt.line("RETURN ", e, "{.*, kip_embedding: null} AS element, ", e, ":", prop, " AS is_proposition, ", key, " AS sort_key")
    stmt.line("ORDER BY sort_key LIMIT ", Param(None, "fetch"))
    del concept
    return Compiled.of(stmt, "EXPORT page"), grounding_names(pattern.grounding), grounding_names(pattern.grounding, required_only=False)


def _refs_statement() -> Compiled:
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "ids"), " AS ref_id")
    stmt.line("OPTIONAL MATCH (c:", Ident(storage.CONCEPT), " {id: ref_id})")
    stmt.line("OPTIONAL MATCH (p:", Ident(storage.PROPOSITION), " {id: ref_id})")
    stmt.line("RETURN ref_id AS id, c.type AS type, c.name AS name, p.subject AS subject, p.predicate AS predicate, p.object AS object")
    return Compiled.of(stmt, "endpoint identities")


# ------------------------------------------------------------------ capsule assembly
Ref = Union[ast.Var, ast.ConceptClause, ast.PropositionClause]


class _Capsule:
    def __init__(self, tx: Tx, refs: Compiled) -> None:
        self.tx = tx
        self.refs_stmt = refs
        self.handles: dict[str, str] = {}
        self.known: dict[str, dict[str, Any]] = {}
        self.blocks: list[Union[ast.ConceptBlock, ast.PropositionBlock]] = []

    def load_refs(self, ids: set[str], inside: set[str] = frozenset()) -> None:
        """Fetch identities of outside endpoints (one query per nesting level), following
        nested propositions down to concepts. ``inside``: ids that will get handles."""
        todo = {i for i in ids if i not in self.known and i not in self.handles and i not in inside}
        while todo:
            rows = self.tx.run(self.refs_stmt, {"ids": sorted(todo)})
            todo = set()
            for row in rows:
                self.known[row["id"]] = row
                for endpoint in (row.get("subject"), row.get("object")):
                    if endpoint and endpoint not in self.known and endpoint not in self.handles:
                        todo.add(endpoint)

    def ref(self, element_id: str, depth: int = 0) -> Ref:
        if element_id in self.handles:
            return ast.Var(self.handles[element_id])
        row = self.known.get(element_id)
        if row is None or depth > 64:
            raise KipError(errors.INTERNAL_ERROR, f"EXPORT could not resolve the endpoint {element_id}.", "The graph changed during the export or holds a dangling reference; retry.")
        if row.get("type") is not None:
            return ast.ConceptClause(type=ast.Literal(row["type"]), name=ast.Literal(row["name"]))
        if row.get("predicate") is None:
            raise KipError(errors.INTERNAL_ERROR, f"EXPORT found a dangling endpoint reference {element_id}.", "Repair the proposition that refers to it; retry.")
        return ast.PropositionClause(
            subject=self.ref(row["subject"], depth + 1),
            predicate=ast.PredicatePattern((row["predicate"],)),
            object=self.ref(row["object"], depth + 1),
        )

    def concept(self, props: dict[str, Any]) -> None:
        attributes, metadata = storage.split_properties(props)
        handle = f"c{len(self.handles) + 1}"
        self.blocks.append(
            ast.ConceptBlock(
                handle=handle,
                identity=ast.ConceptClause(type=ast.Literal(props["type"]), name=ast.Literal(props["name"])),
                set_attributes=object_node(attributes),
                metadata=object_node(author_metadata(metadata)),
            )
        )
        self.handles[props["id"]] = handle

    def proposition(self, props: dict[str, Any]) -> None:
        attributes, metadata = storage.split_properties(props)
        self.load_refs({props["subject"], props["object"]})  # normally already loaded for the whole page
        identity = ast.PropositionClause(
            subject=self.ref(props["subject"]),
            predicate=ast.PredicatePattern((props["predicate"],)),
            object=self.ref(props["object"]),
        )
        handle = f"p{len(self.handles) + 1}"
        self.blocks.append(
            ast.PropositionBlock(handle=handle, identity=identity, set_attributes=object_node(attributes), metadata=object_node(author_metadata(metadata)))
        )
        self.handles[props["id"]] = handle

    def text(self) -> str:
        if not self.blocks:
            return ""
        from ..syntax.printer import to_kip

        return to_kip(ast.Capsule((ast.Upsert(tuple(self.blocks)),)))


def lower_export(command: ast.Export, parameters: dict[str, Any], settings: Settings) -> Plan:
    from .describe import make_cursor, query_scope, read_cursor

    limit = resolve_int(command.limit, parameters, "LIMIT") if command.limit is not None else EXPORT_DEFAULT_LIMIT
    if limit > EXPORT_MAX_LIMIT:
        raise KipError(errors.RESOURCE_EXHAUSTED, f"EXPORT LIMIT {limit} exceeds the maximum of {EXPORT_MAX_LIMIT}.", f"Export in pages: LIMIT {EXPORT_MAX_LIMIT} or less, then CURSOR with each next_cursor.")
    paging = {v.name for v in (command.limit, command.cursor) if isinstance(v, ast.Placeholder)}
    scope = query_scope("EXPORT", command.target, repr(command.where), json.dumps({k: v for k, v in parameters.items() if k not in paging}, sort_keys=True, default=str))
    after = read_cursor(settings, scope, resolve(command.cursor, parameters)) if command.cursor is not None else None
    page, grounding_all, grounding_optional = _page_statement(command, parameters, settings)
    refs = _refs_statement()

    def runner(tx: Tx) -> dict[str, Any]:
        from ._legacy import check_grounding

        rows = tx.run(page, {"after": after, "fetch": limit + 1})
        check_grounding(tx, grounding_all if not rows and after is None else grounding_optional)
        capsule = _Capsule(tx, refs)
        counts = {"concepts": 0, "propositions": 0}
        page_rows = rows[:limit]
        inside = {row["element"]["id"] for row in page_rows}
        endpoints = {row["element"][k] for row in page_rows if row["is_proposition"] for k in ("subject", "object")}
        capsule.load_refs(endpoints, inside)
        for row in page_rows:
            if row["is_proposition"]:
                capsule.proposition(row["element"])
                counts["propositions"] += 1
            else:
                capsule.concept(row["element"])
                counts["concepts"] += 1
        response: dict[str, Any] = {"result": {"capsule": capsule.text(), **counts}}
        if len(rows) > limit:
            response["next_cursor"] = make_cursor(settings, scope, rows[limit - 1]["sort_key"])
        return response

    statements = [page, refs]
    if grounding_all:
        from ._legacy import grounding_compiled

        statements.append(grounding_compiled(grounding_all))
    return Plan("META", "READ", statements, runner)

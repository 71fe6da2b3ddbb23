"""The EXPORT program: one page of elements, the identities of their outside endpoints (one
statement per nesting level), and the Knowledge Capsule that re-creates them.

The capsule is built as AST nodes and printed by ``syntax.printer.to_kip``, so it is always
text our parser accepts. An element of the same page is referenced by its local handle; any
other concept by ``{type, name}``; any other proposition by a nested structural clause
``(subject, "predicate", object)`` — ids are not portable. Reserved ``_`` metadata is never
exported.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any, Union

from ... import adoption, cursor, errors
from ...cypher import storage
from ...domain import rules
from ...errors import KipError
from ...lower.export import ExportPlan
from ...syntax import ast
from ...syntax.printer import to_kip
from ...syntax.values import non_finite
from ..requests import Context, Run
from . import grounding
from .dry_run import explain_all

#: Nested proposition references deeper than this are treated as a corrupt graph (a cycle).
MAX_REFERENCE_DEPTH = 64


def export(plan: ExportPlan, ctx: Context) -> Generator[Any, Any, dict]:
    if ctx.dry_run:
        return (yield from explain_all("META", (plan.page, plan.refs, *plan.checks())))
    if plan.identities is not None:
        _identifiable((yield Run(plan.identities, {}))[0])
    rows = yield Run(plan.page, {"after": None if plan.after is None else list(plan.after), "fetch": plan.limit + 1})
    # An undefined type or predicate makes the export empty; one only in OPTIONAL/NOT/UNION may hide anywhere.
    yield from grounding.check(plan.names, plan.grounding_all if not rows and plan.after is None else plan.grounding_optional, plan.grounding_at)
    page = rows[: plan.limit]
    capsule = _Capsule()
    capsule.learn([ref for row in page for ref in row.get("refs") or ()])  # endpoints of adopted relationships
    inside = {row["element"]["id"] for row in page}
    endpoints = {row["element"][k] for row in page if row["is_proposition"] for k in ("subject", "object")}
    yield from _identities(plan, capsule, capsule.unknown(endpoints, inside))
    counts = {"concepts": 0, "propositions": 0}
    for row in page:
        adopted = "refs" in row  # an adopted node / relationship (its KIP object, not a stored node)
        if row["is_proposition"]:
            # Normally already known for the whole page (an endpoint inside the page comes first).
            yield from _identities(plan, capsule, capsule.unknown((row["element"]["subject"], row["element"]["object"])))
            (capsule.adopted_proposition if adopted else capsule.proposition)(row["element"])
            counts["propositions"] += 1
        else:
            (capsule.adopted_concept if adopted else capsule.concept)(row["element"])
            counts["concepts"] += 1
    response: dict[str, Any] = {"result": {"capsule": capsule.text(), **counts}}
    if len(rows) > plan.limit:
        response["next_cursor"] = cursor.encode(ctx.settings, plan.fingerprint, rows[plan.limit - 1]["sort_key"])
    return response


def _identifiable(row: dict[str, Any]) -> None:
    """KIP_2002 when the capsule of adopted data would name a concept by a ``{type, name}`` that
    does not identify one node (``lower.export._adopted_identities``): the import would merge
    two of the team's nodes into one concept, or fail — never a silently different graph."""
    if not row["nameless"] and not row["duplicates"]:
        return
    problems = []
    if row["nameless"]:
        problems.append(
            f"{row['nameless']} exported element(s) have no text name (a node without the mapped name property, or a relationship with such an endpoint)"
        )
    if row["duplicates"]:
        shown = ", ".join(f"{t} {n!r} ({c} nodes)" for t, n, c in row["examples"])
        problems.append(f"{row['duplicates']} name(s) are shared by several nodes of one type: {shown}")
    raise KipError(
        errors.CONSTRAINT_VIOLATION,
        "EXPORT cannot write this adopted data as a capsule: a capsule names each concept by {type, name}, and "
        + "; ".join(problems)
        + ". Nothing was exported.",
        'Narrow the export to elements whose names identify one node, e.g. FILTER(?d.name != "…") or FILTER on the key '
        '(FILTER(?d.id != "A:Drug:…")); read the others with FIND (docs/adopt.md, "EXPORT").',
    )


def _identities(plan: ExportPlan, capsule: _Capsule, ids: set[str]) -> Generator[Any, Any, None]:
    """Look up the identities of ``ids``, then of the endpoints of those that are propositions,
    down to concepts: one statement per nesting level."""
    while ids:
        rows = yield Run(plan.refs, {"ids": sorted(ids)})
        ids = capsule.learn(rows)


# ------------------------------------------------------------------ values → AST
def value_node(value: Any) -> ast.Value:
    """A JSON value as a KIP value node (for the printer)."""
    if isinstance(value, dict):
        return ast.ObjectLit(tuple((str(k), value_node(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ast.ListLit(tuple(value_node(v) for v in value))
    return ast.Literal(value)


def object_node(values: dict[str, Any]) -> ast.ObjectLit | None:
    return ast.ObjectLit(tuple((k, value_node(v)) for k, v in values.items())) if values else None


def exportable(props: dict[str, Any], label: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An element's attributes and author metadata, refusing a stored NaN / ±Infinity (KIP_2003):
    a capsule holding one would not parse, so the backup would silently not re-apply. The engine
    never stores one (UPDATE skips non-finite results); older or foreign data may."""
    attributes, metadata = storage.split_properties(props)
    metadata = author_metadata(metadata)
    for what, values in (("attribute", attributes), ("metadata key", metadata)):
        for key, value in values.items():
            where = non_finite(value, f"{what} `{key}`")
            if where:
                raise KipError(
                    errors.INVALID_VALUE_TYPE,
                    f"EXPORT cannot write {where} of {label}: it holds a number that is not finite (NaN or Infinity), "
                    "which no KIP capsule can express; nothing was exported.",
                    f'Repair the value first (UPDATE ?x SET ATTRIBUTES {{ {key}: <a finite number or null> }} WHERE {{ ?x {{id: "{props["id"]}"}} }}, '
                    "or DELETE ATTRIBUTES / METADATA), then export again.",
                )
    return attributes, metadata


def author_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata without the engine's reserved ``_`` keys."""
    return {k: v for k, v in metadata.items() if not k.startswith("_")}


# ------------------------------------------------------------------ capsule assembly
Ref = Union[ast.Var, ast.ConceptClause, ast.PropositionClause]


def _named(row: dict[str, Any]) -> ast.ConceptClause:
    """The ``{type, name}`` reference of a concept identity row."""
    return ast.ConceptClause(type=ast.Literal(row["type"]), name=ast.Literal(row["name"]))


class _Capsule:
    """The blocks of one page, the handles given so far and the identities of outside endpoints."""

    def __init__(self) -> None:
        self.handles: dict[str, str] = {}
        self.known: dict[str, dict[str, Any]] = {}
        self.blocks: list[ast.ConceptBlock | ast.PropositionBlock] = []

    def unknown(self, ids: Iterable[str], inside: Iterable[str] = ()) -> set[str]:
        """The ids among ``ids`` with neither a handle nor a known identity (``inside``: ids that will get handles)."""
        skip = set(inside)
        return {i for i in ids if i not in self.known and i not in self.handles and i not in skip}

    def learn(self, rows: list[dict[str, Any]]) -> set[str]:
        """Record identity rows; returns the endpoints of the propositions among them still unknown."""
        for row in rows:
            self.known[row["id"]] = row
        return self.unknown(endpoint for row in rows for endpoint in (row.get("subject"), row.get("object")) if endpoint)

    def ref(self, element_id: str, depth: int = 0) -> Ref:
        if element_id in self.handles:
            return ast.Var(self.handles[element_id])
        if adoption.split_id(element_id) is not None:
            # an adopted concept a memory proposition links to (link_memory, docs/adopt.md): by its
            # id, as names need not be unique in the team's graph
            return ast.ConceptClause(id=ast.Literal(element_id))
        row = self.known.get(element_id)
        if row is None or depth > MAX_REFERENCE_DEPTH:
            raise KipError(
                errors.INTERNAL_ERROR,
                f"EXPORT could not resolve the endpoint {element_id}.",
                "The graph changed during the export or holds a dangling reference; retry.",
            )
        if row.get("type") is not None:
            return _named(row)
        if row.get("predicate") is None:
            raise KipError(
                errors.INTERNAL_ERROR, f"EXPORT found a dangling endpoint reference {element_id}.", "Repair the proposition that refers to it; retry."
            )
        return ast.PropositionClause(
            subject=self.ref(row["subject"], depth + 1),
            predicate=ast.PredicatePattern((row["predicate"],)),
            object=self.ref(row["object"], depth + 1),
        )

    def concept(self, props: dict[str, Any]) -> None:
        attributes, metadata = exportable(props, rules.label(props["type"], props["name"]))
        self.blocks.append(
            ast.ConceptBlock(
                handle=self._handle(props["id"], "c"),
                identity=ast.ConceptClause(type=ast.Literal(props["type"]), name=ast.Literal(props["name"])),
                set_attributes=object_node(attributes),
                metadata=object_node(metadata),
            )
        )

    def proposition(self, props: dict[str, Any]) -> None:
        attributes, metadata = exportable(props, f"(id: {rules.quoted(props['id'])})")
        identity = ast.PropositionClause(
            subject=self.ref(props["subject"]),
            predicate=ast.PredicatePattern((props["predicate"],)),
            object=self.ref(props["object"]),
        )
        self.blocks.append(
            ast.PropositionBlock(
                handle=self._handle(props["id"], "p"), identity=identity, set_attributes=object_node(attributes), metadata=object_node(metadata)
            )
        )

    def adopted_concept(self, obj: dict[str, Any]) -> None:
        """An adopted concept (its KIP object) as an ordinary block of its type: the mapped
        attributes, values as FIND shows them; no metadata (``adopted`` is not true of the copy)."""
        self.blocks.append(
            ast.ConceptBlock(
                handle=self._handle(obj["id"], "c"),
                identity=ast.ConceptClause(type=ast.Literal(obj["type"]), name=ast.Literal(obj["name"])),
                set_attributes=object_node(adoption.element_object(obj)["attributes"]),
            )
        )

    def adopted_proposition(self, obj: dict[str, Any]) -> None:
        """An adopted relationship as a proposition of its predicate between its endpoints' ``{type, name}``
        (learned from the page's ``refs``; never their ``A:…`` ids, which a nexus without the mapping lacks)."""
        identity = ast.PropositionClause(
            subject=_named(self.known[obj["subject"]]), predicate=ast.PredicatePattern((obj["predicate"],)), object=_named(self.known[obj["object"]])
        )
        self.blocks.append(
            ast.PropositionBlock(handle=self._handle(obj["id"], "p"), identity=identity, set_attributes=object_node(adoption.element_object(obj)["attributes"]))
        )

    def _handle(self, element_id: str, prefix: str) -> str:
        handle = f"{prefix}{len(self.handles) + 1}"
        self.handles[element_id] = handle
        return handle

    def text(self) -> str:
        if not self.blocks:
            return ""
        return to_kip(ast.Capsule((ast.Upsert(tuple(self.blocks)),)))

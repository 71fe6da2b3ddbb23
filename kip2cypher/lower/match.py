"""The match strategy of the namespace's own memory: pattern clauses → MATCH parts.

``MemoryMatch`` lowers one concept or proposition clause of a WHERE to the comma-separated
parts of a ``MATCH`` and their conditions, over KIP's storage model (docs/storage-model.md):
concepts by id, (type, name), name or their type's label; propositions on their native
relationship, or on their reified node when the proposition itself is bound. It records the
grounding names and the row keys (``context.Keys``) as it goes.

The strategy is chosen once per WHERE (``strategy``): a namespace with an adoption mapping
lowers through ``adopted_match.AdoptedMatch``, which reads the team's own labels and
relationship types first and falls back to this class; the hooks below (``foreign_link``,
``link_by_id``, ``whole``, ``new_end`` …) are where the two differ, so no clause lowering
tests which of them it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..cypher.builder import Fragment, Ident, Param, Part, Var, frag, join, literal
from ..errors import INVALID_SYNTAX, KipError
from ..syntax import ast
from ..syntax.values import resolve_predicate
from . import paths
from .context import CONCEPT, ELEMENT, PREDICATE, PROPOSITION, Binding, LoweringContext, node_key

TYPE_ROLE = "a concept type is checked against the schema and may become a node label"


def rel_types(predicate: ast.PredicatePattern, names: Any) -> Fragment:
    """``a|b``: the native relationship types of a predicate pattern, quoted."""
    return join("|", [Ident(names.rel(name)) for name in predicate.names])


class MemoryMatch:
    """Pattern clauses over KIP's own storage model (no adoption mapping)."""

    #: whether memory propositions may end at the team's nodes (``adopted_match.LinkedMatch``)
    LINKS_MEMORY = False

    def __init__(self, ctx: LoweringContext) -> None:
        self.ctx = ctx

    def bind_node(self, name: str, kind: str, scope: dict[str, Binding], avoid: frozenset[str]) -> tuple[Part, bool]:
        """The Cypher variable for node variable ``?name``; returns (ref, already_bound)."""
        binding = scope.get(name)
        if binding is not None:
            if binding.kind == PREDICATE:
                raise KipError(
                    INVALID_SYNTAX,
                    f"?{name} is bound to a predicate name and cannot also be a node.",
                    "Use different variables for predicates and for concepts/propositions.",
                )
            if binding.kind == ELEMENT and kind in (CONCEPT, PROPOSITION):
                binding.kind = kind
            elif binding.kind != kind and kind != ELEMENT and binding.kind != ELEMENT:
                raise KipError(
                    INVALID_SYNTAX,
                    f"?{name} is bound to a {binding.kind} and cannot also be a {kind}.",
                    "A variable binds either concept nodes or proposition links, not both.",
                )
            return binding.ref, True
        ref: Part = self.ctx.fresh("v") if name in avoid else Var(name)
        scope[name] = Binding(name, kind, ref)
        return ref, False

    def pattern_clause(
        self, clause: ast.ConceptClause | ast.PropositionClause, scope: dict[str, Binding], *, required: bool, avoid: frozenset[str]
    ) -> tuple[list[Fragment], list[Fragment], list[Fragment]]:
        """One top-level clause → (comma-separated MATCH parts, their WHERE conditions, clauses
        that follow the MATCH — the reachability ``CALL`` of a path)."""
        parts: list[Fragment] = []
        conds: list[Fragment] = []
        if isinstance(clause, ast.ConceptClause):
            parts.append(self.concept_node(clause, scope, required=required, avoid=avoid)[0])
            return parts, conds, []
        if paths.is_path(clause):
            return parts, conds, [paths.path(self, clause, scope, parts, conds, required=required, avoid=avoid)]
        self.proposition(clause, scope, parts, conds, need_node=clause.var is not None, required=required, avoid=avoid)
        return parts, conds, []

    def concept_node(
        self,
        clause: ast.ConceptClause,
        scope: dict[str, Binding],
        *,
        required: bool,
        avoid: frozenset[str],
        ref: Part | None = None,
        adopted: Any = None,
    ) -> tuple[Fragment, str]:
        """The node pattern of a concept clause and its Keys element (``ref``: the Cypher
        variable to give an anonymous clause, when the caller must refer to the node;
        ``adopted``: the type an untyped clause has where an adopted predicate expects it — only
        ``AdoptedMatch`` reads it)."""
        if clause.var is not None:
            ref, _ = self.bind_node(clause.var, CONCEPT, scope, avoid)
        key = self.ctx.keys.add(
            node_key(clause.var) if clause.var is not None else self.ctx.keys.anonymous(),
            seed=clause.id is not None or (clause.type is not None and clause.name is not None),
        )
        out = frag("(")
        if ref is not None:
            out.add(ref)
        props: list[Fragment] = []
        if clause.id is not None:
            props.append(frag("id: ", self.ctx.param(self.ctx.string_of(clause.id, "A concept `id`"))))
        type_name = self.ctx.string_of(clause.type, "A concept `type`", TYPE_ROLE) if clause.type is not None else None
        if type_name is not None:
            self.ctx.grounding.add(self.ctx.grounding.types, type_name, required, clause.type.span.start)
            if clause.var is not None:
                self.ctx.var_kinds.setdefault(clause.var, (True, type_name))
        if clause.name is not None:
            name = self.ctx.string_of(clause.name, "A concept `name`")
            if type_name is not None:
                # (type, name) is the composite unique key: a unique index seek.
                props.append(frag("type: ", Param(type_name)))
            props.append(frag("name: ", self.ctx.param(name)))
        if props or type_name is None:
            # the id and (type, name) keys are unique on the namespace's concept label
            out.add(":", self.ctx.names.concept)
        else:
            # a typed scan: the type's label is in the namespace's label space, so it alone names
            # this namespace's concepts of the type (no second label to intersect)
            out.add(":", Ident(self.ctx.names.label(type_name)))
        if props:
            out.add(" {", join(", ", props), "}")
        out.add(")")
        return out, key

    def endpoint(
        self,
        endpoint: ast.Endpoint,
        scope: dict[str, Binding],
        parts: list[Fragment],
        conds: list[Fragment],
        *,
        required: bool,
        avoid: frozenset[str],
        reified: bool,
        adopted: Any = None,
    ) -> tuple[Fragment | None, str | None]:
        """A subject/object → (node pattern, Keys element); (None, None) for a variable of a
        reified clause that nothing else reads (lean): the node need not be expanded to."""
        if isinstance(endpoint, ast.Var):
            if reified and endpoint.name in self.ctx.dont_care and endpoint.name not in scope:
                return None, None
            ref, bound = self.bind_node(endpoint.name, ELEMENT, scope, avoid)
            if not bound:
                conds.extend(self.new_end(endpoint.name, ref))
            return frag("(", ref, ")"), self.ctx.keys.add(node_key(endpoint.name))
        if isinstance(endpoint, ast.ConceptClause):
            return self.concept_node(endpoint, scope, required=required, avoid=avoid, adopted=adopted)
        node, key = self.proposition(endpoint, scope, parts, conds, need_node=True, required=required, avoid=avoid)
        return frag("(", node, ")"), key

    def proposition(
        self,
        clause: ast.PropositionClause,
        scope: dict[str, Binding],
        parts: list[Fragment],
        conds: list[Fragment],
        *,
        need_node: bool,
        required: bool,
        avoid: frozenset[str],
    ) -> tuple[Part | None, str | None]:
        """Append the pattern of a proposition clause to ``parts``; returns the proposition node
        variable when ``need_node`` (a ?link variable or a nested endpoint), and its Keys element."""
        node: Part | None = None
        key: str | None = None
        keys = self.ctx.keys
        if need_node:
            if clause.var is not None:
                node, _ = self.bind_node(clause.var, PROPOSITION, scope, avoid)
                key = node_key(clause.var)
            else:
                node = self.ctx.fresh("p")
                key = keys.anonymous()
        if clause.id is not None:
            link_id = self.ctx.string_of(clause.id, "A proposition `id`")
            return self.link_by_id(clause, link_id, node, key, scope, parts, conds, need_node=need_node, avoid=avoid)
        predicate = self.named(clause.predicate)
        if paths.is_path(clause):
            raise paths.bound_path()
        foreign = self.foreign_link(clause, predicate, scope, parts, conds, need_node=need_node, required=required, avoid=avoid)
        if foreign is not None:
            return foreign
        return self.memory_link_pattern(clause, predicate, node, key, scope, parts, conds, required=required, avoid=avoid)

    def link_by_id(
        self,
        clause: ast.PropositionClause,
        link_id: Any,
        node: Part | None,
        key: str | None,
        scope: dict[str, Binding],
        parts: list[Fragment],
        conds: list[Fragment],
        *,
        need_node: bool,
        avoid: frozenset[str],
    ) -> tuple[Part | None, str | None]:
        """``(id: "P:…")``: one memory proposition node by its id (a unique seek)."""
        held = self.whole_anchor(node)
        parts.append(frag("(", held if held is not None else "", ":", self.ctx.names.proposition, " {id: ", self.ctx.param(link_id), "})"))
        conds.extend(self.whole(held, True, True))
        keys = self.ctx.keys
        keys.add(key or keys.anonymous(), seed=True)
        return node, key

    def foreign_link(
        self,
        clause: ast.PropositionClause,
        predicate: ast.Predicate,
        scope: dict[str, Binding],
        parts: list[Fragment],
        conds: list[Fragment],
        *,
        need_node: bool,
        required: bool,
        avoid: frozenset[str],
    ) -> tuple[Part | None, str | None] | None:
        """The pattern of a clause that reads what is not memory (None: a memory clause). Memory
        has nothing else."""
        return None

    def memory_link_pattern(
        self,
        clause: ast.PropositionClause,
        predicate: ast.Predicate,
        node: Part | None,
        key: str | None,
        scope: dict[str, Binding],
        parts: list[Fragment],
        conds: list[Fragment],
        *,
        required: bool,
        avoid: frozenset[str],
    ) -> tuple[Part | None, str | None]:
        """A memory proposition clause: its native relationship, or its reified node when ``node``."""
        keys = self.ctx.keys
        # Endpoints first (a nested proposition endpoint appends its own part before this one).
        reified = node is not None
        subject, s_key = self.endpoint(clause.subject, scope, parts, conds, required=required, avoid=avoid, reified=reified)
        obj, o_key = self.endpoint(clause.object, scope, parts, conds, required=required, avoid=avoid, reified=reified)
        if isinstance(predicate, ast.PredicatePattern):
            self.ground_predicates(predicate, clause.predicate, required)
        if node is not None:
            keys.add(key)
            keys.rule([key], [s_key, o_key])  # one KIP_SUBJECT and one KIP_OBJECT per proposition
            label = frag(node, ":", self.ctx.names.proposition)
            if isinstance(predicate, ast.PredicatePattern) and len(predicate.names) == 1:
                label.add(" {predicate: ", Param(predicate.names[0]), "}")
                if clause.var is not None:
                    self.ctx.var_kinds.setdefault(clause.var, (False, predicate.names[0]))
                if s_key and o_key:
                    keys.rule([s_key, o_key], [key])  # (subject, predicate, object) is unique
            elif isinstance(predicate, ast.PredicatePattern):
                conds.append(frag(node, ".predicate IN ", Param(list(predicate.names))))
            else:
                self.bind_predicate(predicate.name, frag(node, ".predicate"), scope, conds, avoid)
                p_key = keys.add(node_key(predicate.name))
                keys.rule([key], [p_key])
                if s_key and o_key:
                    keys.rule([s_key, o_key, p_key], [key])
            pattern = frag("(", label, ")")
            conds.extend(self.whole(node, subject is None, obj is None))
            if subject is not None:
                pattern = frag(subject, "<-[:", self.ctx.names.subject_rel, "]-", pattern)
            if obj is not None:
                pattern = frag(pattern, "-[:", self.ctx.names.object_rel, "]->", obj)
            parts.append(pattern)
            return node, key
        rel_key = keys.add(keys.anonymous())
        keys.rule([rel_key], [s_key, o_key])
        if isinstance(predicate, ast.Var):
            rel = self.ctx.fresh("r")
            parts.append(frag(subject, "-[", rel, "]->", obj))
            conds.append(self.memory_link(rel))
            self.bind_predicate(predicate.name, self.predicate_of(rel), scope, conds, avoid)
            p_key = keys.add(node_key(predicate.name))
            keys.rule([rel_key], [p_key])
            keys.rule([s_key, o_key, p_key], [rel_key])  # one native relationship per proposition
            return None, None
        if len(predicate.names) == 1:
            keys.rule([s_key, o_key], [rel_key])  # one native relationship per proposition
        # ("a" | "b" between the same nodes can match more than once)
        # A memory predicate's type is in KIP's label space: every relationship of it is memory,
        # whatever its ends are (the team's nodes with link_memory included).
        parts.append(frag(subject, "-[:", rel_types(predicate, self.ctx.names), "]->", obj))
        return None, None

    def predicate_of(self, rel: Part) -> Fragment:
        """The predicate a native relationship stands for: its type, without the label-space prefix."""
        return frag("substring(type(", rel, "), ", str(len(self.ctx.names.predicate_prefix)), ")")

    def named(self, predicate: ast.Predicate) -> ast.Predicate:
        """A predicate pattern with every name bound (``:p`` → its parameter) and checked as a
        quoted name is (``values.resolve_predicate``); a predicate variable as it is."""
        if isinstance(predicate, ast.Var):
            return predicate
        names = tuple(resolve_predicate(name, self.ctx.parameters, predicate.span.start) for name in predicate.names)
        return replace(predicate, names=names)

    def ground_predicates(self, predicate: ast.PredicatePattern, written: ast.PredicatePattern, required: bool) -> None:
        """Record the names of ``predicate`` (``written`` bound by ``named``) for KIP_2001, at
        the placeholder that gave a name, else at the pattern. A misspelled alternative
        ("a" | "typo") or a zero-hop path ("p"{0,n}) does not empty the result, so such a name
        is never "required": it is checked on every run."""
        quantifier = predicate.quantifier
        certain = required and len(predicate.names) == 1 and (quantifier is None or int(quantifier.min) > 0)
        for name, as_written in zip(predicate.names, written.names):
            offset = as_written.span.start if isinstance(as_written, ast.Placeholder) else predicate.span.start
            self.ctx.grounding.add(self.ctx.grounding.predicates, name, certain, offset)

    def bind_predicate(self, name: str, expr: Fragment, scope: dict[str, Binding], conds: list[Fragment], avoid: frozenset[str]) -> None:
        binding = scope.get(name)
        if binding is None:
            scope[name] = Binding(name, PREDICATE, expr, is_variable=False)
            return
        if binding.kind != PREDICATE:
            raise KipError(
                INVALID_SYNTAX,
                f"?{name} is bound to a {binding.kind} and cannot also be a predicate.",
                "Use different variables for predicates and for concepts/propositions.",
            )
        conds.append(frag(expr, " = ", binding.ref))

    def memory_link(self, rel: Part) -> Fragment:
        """``rel``, a relationship matched without a type (a predicate variable), is the native
        relationship of one of the namespace's memory propositions: its type is in the namespace's
        label space (``kip:…`` / ``kip.<ns>:…``, docs/storage-model.md, "Label space"). Every
        other relationship — the team's own, KIP's structural ``KIP_SUBJECT`` / ``KIP_OBJECT``,
        another namespace's — fails it. A relationship's type is read with the relationship
        itself: no property read (the ``kip_id`` test of layout 1 was one db hit per row)."""
        return frag("type(", rel, ") STARTS WITH ", literal(self.ctx.names.predicate_prefix))

    def kip_element(self, ref: Part) -> Fragment:
        """``ref`` is a memory concept or proposition of the namespace (a label test)."""
        return frag("(", ref, ":", self.ctx.names.concept, " OR ", ref, ":", self.ctx.names.proposition, ")")

    # ------------------------------------------------------------------ hooks (``AdoptedMatch`` overrides)
    def new_end(self, name: str, ref: Part) -> list[Fragment]:
        """Conditions on an end variable a memory pattern binds first: none, memory ends are KIP's."""
        return []

    def whole_anchor(self, node: Part | None) -> Part | None:
        """The variable a proposition node matched by id needs (``whole``): none in memory."""
        return node

    def whole(self, node: Part | None, subject: bool, obj: bool) -> list[Fragment]:
        """Conditions that a proposition node still has both ends: always true in memory."""
        return []

    def bind_end(self, name: str, kind: str, adopted: Any, scope: dict[str, Binding], avoid: frozenset[str]) -> Part:
        """A path's end variable (``adopted``: the type the walk is over, only ``AdoptedMatch``)."""
        return self.bind_node(name, kind, scope, avoid)[0]

    def walked_type(self, predicate: ast.PredicatePattern, at: int) -> Any:
        """The type of the nodes a path walks through when they are the team's: none in memory."""
        return None

    def walk_types(self, predicate: ast.PredicatePattern, walked: Any) -> Fragment:
        """The relationship types a path's hops follow."""
        return rel_types(predicate, self.ctx.names)

"""The match strategy of a namespace that adopted the team's own graph (docs/adopt.md).

``AdoptedMatch`` reads the team's labels and relationship types as KIP concepts and
propositions where a clause names an adopted type or predicate (or its ends are bound to
adopted nodes), and lowers every other clause as memory (``match.MemoryMatch``, its base).
``LinkedMatch`` adds the mapping's ``link_memory``: memory propositions may end at adopted
nodes. ``strategy`` picks one of the three once per WHERE, from the settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import adoption as adopt
from ..cypher import clauses
from ..cypher.builder import Fragment, Ident, Param, Part, frag, join
from ..syntax import ast
from . import adopted as adopted_cy
from .context import CONCEPT, ELEMENT, PREDICATE, PROPOSITION, Binding, LoweringContext, node_key
from .match import TYPE_ROLE, MemoryMatch


def strategy(ctx: LoweringContext) -> MemoryMatch:
    """The match strategy of the context's namespace: memory, adopted, or adopted with link_memory."""
    if ctx.adoption is None:
        return MemoryMatch(ctx)
    return LinkedMatch(ctx) if ctx.adoption.link_memory else AdoptedMatch(ctx)


class AdoptedMatch(MemoryMatch):
    """Pattern clauses that may read the team's own nodes and relationships."""

    def bind_node(self, name: str, kind: str, scope: dict[str, Binding], avoid: frozenset[str]) -> tuple[Part, bool]:
        binding = scope.get(name)
        if binding is not None and binding.kind != PREDICATE and isinstance(binding.adopted, adopt.AdoptedPredicate) and kind != PROPOSITION:
            raise adopted_cy.nested_refused()
        return super().bind_node(name, kind, scope, avoid)

    def concept_node(
        self,
        clause: ast.ConceptClause,
        scope: dict[str, Binding],
        *,
        required: bool,
        avoid: frozenset[str],
        ref: Part | None = None,
        adopted: adopt.AdoptedType | None = None,
    ) -> tuple[Fragment, str]:
        chosen = self.adopted_type(clause, adopted)
        if chosen is not None:
            return self.adopted_node(clause, chosen, scope, required=required, avoid=avoid, ref=ref)
        if clause.type is None and clause.id is None:
            self.ctx.notes.append(
                "A concept clause without a type matches memory concepts only: give the type (e.g. "
                f"{{type: {self.ctx.adoption.types[0].name!r}, …}}) to read adopted concepts (docs/adopt.md).".replace("'", '"')
            )
        return super().concept_node(clause, scope, required=required, avoid=avoid, ref=ref)

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
        adopted: adopt.AdoptedType | None = None,
    ) -> tuple[Fragment | None, str | None]:
        if isinstance(endpoint, ast.Var) and adopted is not None:
            ref = self.adopt_var(endpoint.name, ELEMENT, adopted, scope, avoid)
            return adopted_cy.node(ref, adopted), self.ctx.keys.add(node_key(endpoint.name))
        return super().endpoint(endpoint, scope, parts, conds, required=required, avoid=avoid, reified=reified, adopted=adopted)

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
        by_id = self.adopted_link_by_id(clause, link_id, scope, parts, conds, avoid)
        if by_id is None:
            return super().link_by_id(clause, link_id, node, key, scope, parts, conds, need_node=need_node, avoid=avoid)
        if need_node and clause.var is None:
            raise adopted_cy.nested_refused(clause.span.start)
        return by_id

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
        """An adopted predicate, an alternative of adopted predicates, or a predicate variable whose
        ends are adopted: the team's relationships (None: the clause reads memory)."""
        adopted = self.adopted_predicate(predicate, clause.span.start)
        if adopted is not None:
            if need_node and clause.var is None:
                raise adopted_cy.nested_refused(clause.span.start)
            return self.adopted_link(clause, adopted, predicate, scope, parts, required=required, avoid=avoid)
        alternatives = self.adopted_alternatives(predicate)
        if alternatives is not None:
            if need_node:
                raise adopted_cy.unsupported('A ?link variable or a nested clause with an alternative of adopted predicates ("a" | "b")', clause.span.start)
            self.ground_predicates(predicate, clause.predicate, required)
            return self.adopted_variable_link(clause, alternatives, None, scope, parts, conds, required=required, avoid=avoid)
        if not isinstance(predicate, ast.Var) or not self.ctx.adoption.predicates:
            return None
        candidates = self.adopted_by_endpoints(clause, scope)
        if candidates is None:
            self.ctx.notes.append(
                f"?{predicate.name} ranges over memory predicates only: the adopted predicates ({', '.join(p.name for p in self.ctx.adoption.predicates)}) "
                "are read only when the clause names one, or when its subject or object is bound before it to an adopted type (docs/adopt.md)."
            )
            return None
        candidates, memory = self.with_memory(clause, candidates, predicate, scope)
        if candidates is None:
            return None
        if need_node and clause.var is None:
            raise adopted_cy.nested_refused(clause.span.start)
        return self.adopted_variable_link(clause, candidates, predicate, scope, parts, conds, required=required, avoid=avoid, memory=memory)

    def with_memory(
        self, clause: ast.PropositionClause, candidates: list[adopt.AdoptedPredicate], predicate: ast.Var, scope: dict[str, Binding]
    ) -> tuple[list[adopt.AdoptedPredicate] | None, bool]:
        """The adopted predicates ``?p`` reads between adopted ends, and whether memory ones too:
        never without link_memory (memory propositions do not touch adopted concepts)."""
        return candidates, False

    def bind_end(self, name: str, kind: str, adopted: Any, scope: dict[str, Binding], avoid: frozenset[str]) -> Part:
        if adopted is None:
            return super().bind_end(name, kind, adopted, scope, avoid)
        return self.adopt_var(name, kind, adopted, scope, avoid)

    def walk_types(self, predicate: ast.PredicatePattern, walked: Any) -> Fragment:
        if walked is None:
            return super().walk_types(predicate, walked)
        return frag(Ident(self.ctx.adoption.predicate(predicate.names[0]).rel_type))

    @staticmethod
    def typed_node(ref: Part, t: adopt.AdoptedType) -> Fragment:
        """``(ref:`Label`)``: a node of adopted type ``t`` (where a walk over its predicate starts)."""
        return adopted_cy.node(ref, t)

    def adopted_type(self, clause: ast.ConceptClause, default: adopt.AdoptedType | None) -> adopt.AdoptedType | None:
        """The adopted type a concept clause reads: the one it names (by ``type`` or by an
        ``A:<Type>:…`` id), else ``default``; None for a memory concept clause."""
        if self.ctx.adoption is None:
            return None
        if clause.type is not None:
            return self.ctx.adoption.type(self.ctx.string_of(clause.type, "A concept `type`", TYPE_ROLE))
        if clause.id is not None:
            split = adopt.split_id(self.ctx.value_of(clause.id))  # a kept placeholder: a memory id
            if split is not None:
                return self.ctx.adoption.type(split[0])
        return default

    def adopted_node(
        self, clause: ast.ConceptClause, t: adopt.AdoptedType, scope: dict[str, Binding], *, required: bool, avoid: frozenset[str], ref: Part | None
    ) -> tuple[Fragment, str]:
        """``(v:`Label` {`name_prop`: $name} WHERE …)``: the team's nodes of an adopted type.
        Names need not be unique there, so nothing here determines a row (no Keys seed)."""
        if clause.var is not None:
            ref = self.adopt_var(clause.var, CONCEPT, t, scope, avoid)
        elif ref is None:
            ref = self.ctx.fresh("n")
        key = self.ctx.keys.add(node_key(clause.var) if clause.var is not None else self.ctx.keys.anonymous())
        if clause.type is not None:
            self.ctx.grounding.add(self.ctx.grounding.types, t.name, required, clause.type.span.start)
        name = self.ctx.param(self.ctx.string_of(clause.name, "A concept `name`")) if clause.name is not None else None
        id_value = None
        if clause.id is not None:
            split = adopt.split_id(self.ctx.string_of(clause.id, "A concept `id`", "an adopted id decides the property it is looked up by"))
            id_value = split[1] if split is not None and split[0] == t.name else ""
        return adopted_cy.node(ref, t, name, id_value), key

    def adopt_var(self, name: str, kind: str, what: Any, scope: dict[str, Binding], avoid: frozenset[str]) -> Part:
        """Bind ``?name`` to an adopted node or relationship (it keeps the first adopted type it gets)."""
        ref, _ = self.bind_node(name, kind, scope, avoid)
        if scope[name].adopted is None:
            scope[name].adopted = what
        return ref

    def adopted_predicate(self, predicate: ast.Predicate, at: int) -> adopt.AdoptedPredicate | None:
        """The adopted predicate a (bound) predicate pattern names; None for memory predicates."""
        if self.ctx.adoption is None or not isinstance(predicate, ast.PredicatePattern):
            return None
        found = [self.ctx.adoption.predicate(name) for name in predicate.names]
        if not any(found):
            return None
        if len(found) > 1:
            if not all(found) or predicate.quantifier is not None:
                raise adopted_cy.unsupported('An alternative of predicates ("a" | "b") mixing adopted and memory predicates, or walked as a path,', at)
            return None  # all adopted: ``adopted_alternatives``
        return found[0]

    def adopted_alternatives(self, predicate: ast.Predicate) -> list[adopt.AdoptedPredicate] | None:
        """``"a" | "b"`` where every name is an adopted predicate (None otherwise)."""
        if self.ctx.adoption is None or not isinstance(predicate, ast.PredicatePattern) or len(predicate.names) < 2:
            return None
        found = [self.ctx.adoption.predicate(name) for name in predicate.names]
        return found if all(found) else None

    def adopted_link(
        self,
        clause: ast.PropositionClause,
        p: adopt.AdoptedPredicate,
        predicate: ast.PredicatePattern,
        scope: dict[str, Binding],
        parts: list[Fragment],
        *,
        required: bool,
        avoid: frozenset[str],
    ) -> tuple[Part | None, str | None]:
        """``(s:`S` …)-[r:`TYPE`]->(o:`O` …)``: the team's relationship itself (no proposition
        node); a ``?link`` variable binds the relationship."""
        if isinstance(clause.subject, ast.PropositionClause) or isinstance(clause.object, ast.PropositionClause):
            raise adopted_cy.unsupported("A nested proposition as subject or object", clause.span.start)
        subject, s_key = self.endpoint(
            clause.subject, scope, parts, [], required=required, avoid=avoid, reified=False, adopted=self.ctx.adoption.type(p.subject)
        )
        obj, o_key = self.endpoint(clause.object, scope, parts, [], required=required, avoid=avoid, reified=False, adopted=self.ctx.adoption.type(p.object))
        self.ground_predicates(predicate, clause.predicate, required)
        if clause.var is not None:
            rel = self.adopt_var(clause.var, PROPOSITION, p, scope, avoid)
            key = self.ctx.keys.add(node_key(clause.var))
        else:
            rel, key = self.ctx.fresh("r"), self.ctx.keys.add(self.ctx.keys.anonymous())
        self.ctx.keys.rule([key], [s_key, o_key])
        parts.append(frag(subject, "-[", rel, ":", Ident(p.rel_type), "]->", obj))
        return (rel if clause.var is not None else None), (key if clause.var is not None else None)

    def adopted_link_by_id(
        self, clause: ast.PropositionClause, link_id: str, scope: dict[str, Binding], parts: list[Fragment], conds: list[Fragment], avoid: frozenset[str]
    ) -> tuple[Part | None, str | None] | None:
        """``(id: "A:treats:@…")``: one relationship of an adopted predicate, by elementId."""
        split = adopt.split_id(link_id) if self.ctx.adoption is not None else None
        p = self.ctx.adoption.predicate(split[0]) if split is not None else None
        if p is None:
            return None
        if clause.var is not None:
            rel = self.adopt_var(clause.var, PROPOSITION, p, scope, avoid)
            key = self.ctx.keys.add(node_key(clause.var))
        else:
            rel, key = self.ctx.fresh("r"), self.ctx.keys.add(self.ctx.keys.anonymous())
        s, o = self.ctx.fresh("n"), self.ctx.fresh("n")
        parts.append(
            frag(
                adopted_cy.node(s, self.ctx.adoption.type(p.subject)),
                "-[",
                rel,
                ":",
                Ident(p.rel_type),
                "]->",
                adopted_cy.node(o, self.ctx.adoption.type(p.object)),
            )
        )
        mark = adopt.ELEMENT_MARK
        conds.append(frag("elementId(", rel, ") = ", Param(split[1][len(mark) :])) if split[1].startswith(mark) else frag("false"))
        return (rel if clause.var is not None else None), (key if clause.var is not None else None)

    def adopted_endpoint(self, endpoint: ast.Endpoint, scope: Mapping[str, Binding]) -> adopt.AdoptedType | None:
        """The adopted type of a clause's subject or object: a clause of an adopted type, or a
        variable bound to one before this clause (None: a memory element, or not bound yet)."""
        if isinstance(endpoint, ast.Var):
            binding = scope.get(endpoint.name)
            return binding.adopted if binding is not None and isinstance(binding.adopted, adopt.AdoptedType) else None
        return self.adopted_type(endpoint, None) if isinstance(endpoint, ast.ConceptClause) else None

    def adopted_by_endpoints(self, clause: ast.PropositionClause, scope: dict[str, Binding]) -> list[adopt.AdoptedPredicate] | None:
        """For ``(s, ?p, o)``: when ``s`` or ``o`` is an adopted concept (a clause of an adopted
        type, or a variable bound to one before this clause), the adopted predicates that can
        link them — memory propositions never touch adopted concepts, so these are all ``?p``
        can be. None when neither endpoint is adopted."""
        s, o = self.adopted_endpoint(clause.subject, scope), self.adopted_endpoint(clause.object, scope)
        if s is None and o is None:
            return None
        return [p for p in self.ctx.adoption.predicates if (s is None or p.subject == s.name) and (o is None or p.object == o.name)]

    def adopted_variable_link(
        self,
        clause: ast.PropositionClause,
        candidates: list[adopt.AdoptedPredicate],
        predicate: ast.Var | None,
        scope: dict[str, Binding],
        parts: list[Fragment],
        conds: list[Fragment],
        *,
        required: bool,
        avoid: frozenset[str],
        memory: bool = False,
    ) -> tuple[Part | None, str | None]:
        """``(s, ?p, o)`` over the adopted predicates that can link ``s`` and ``o`` (or ``(s, "a" |
        "b", o)`` over adopted alternatives, ``predicate`` None): one pattern ``-[r:`T1`|`T2`]->``
        and ``?p`` read from the relationship type. ``memory`` (link_memory, both ends adopted):
        memory propositions between them too, ``-[r]->`` where ``r`` is one of those types or
        carries the namespace's ``kip_id``, and ``?p`` its predicate."""
        subjects, objects = {p.subject for p in candidates}, {p.object for p in candidates}
        if len(subjects) > 1 or len(objects) > 1:
            listed = ", ".join(f"{p.name} ({p.subject} → {p.object})" for p in candidates)
            what = (
                f"?{predicate.name} here could be any of {listed}, which link different types; a predicate variable"
                if predicate is not None
                else f"The alternative {listed} links different types; such an alternative"
            )
            raise adopted_cy.unsupported(what, clause.span.start)
        if clause.var is not None and len(candidates) > 1:
            raise adopted_cy.unsupported(f"A ?{clause.var} link variable with a predicate variable that could be several adopted predicates", clause.span.start)
        s_type = self.ctx.adoption.type(subjects.pop()) if candidates else None
        o_type = self.ctx.adoption.type(objects.pop()) if candidates else None
        subject, s_key = self.endpoint(clause.subject, scope, parts, conds, required=required, avoid=avoid, reified=False, adopted=s_type)
        obj, o_key = self.endpoint(clause.object, scope, parts, conds, required=required, avoid=avoid, reified=False, adopted=o_type)
        if clause.var is not None:
            rel = self.adopt_var(clause.var, PROPOSITION, candidates[0] if candidates else None, scope, avoid)
            key = self.ctx.keys.add(node_key(clause.var))
        else:
            rel, key = self.ctx.fresh("r"), self.ctx.keys.add(self.ctx.keys.anonymous())
        self.ctx.keys.rule([key], [s_key, o_key])
        if not candidates:  # no adopted predicate links these types: nothing matches
            parts.append(frag(subject, "-[", rel, "]->", obj))
            conds.append(frag("false"))
            self.bind_predicate(predicate.name, frag("null"), scope, conds, avoid)
            return (rel if clause.var is not None else None), (key if clause.var is not None else None)
        rel_types = list(dict.fromkeys(p.rel_type for p in candidates))
        cases = [frag(" WHEN ", Param(p.rel_type), " THEN ", Param(p.name)) for p in candidates]
        adopted_name = frag("CASE type(", rel, ")", *cases, " END")
        if memory:
            link = self.memory_link(rel)
            parts.append(frag(subject, "-[", rel, "]->", obj))
            conds.append(frag("(", link, " OR type(", rel, ") IN ", Param(rel_types), ")"))
            adopted_name = frag("CASE WHEN ", link, " THEN ", self.predicate_of(rel), " ELSE ", adopted_name, " END")
        else:
            parts.append(frag(subject, "-[", rel, ":", join("|", [Ident(t) for t in rel_types]), "]->", obj))
        if predicate is not None:
            self.bind_predicate(predicate.name, adopted_name, scope, conds, avoid)
            p_key = self.ctx.keys.add(node_key(predicate.name))
            self.ctx.keys.rule([key], [p_key])
        return (rel if clause.var is not None else None), (key if clause.var is not None else None)

    def walked_type(self, predicate: ast.PredicatePattern, at: int) -> adopt.AdoptedType | None:
        """The adopted type a path over an adopted predicate walks through (None: a memory path).
        Only a predicate from a type to itself chains (reports_to: Employee → Employee)."""
        p = self.adopted_predicate(predicate, at)
        if p is None:
            return None
        if p.subject != p.object:
            raise adopted_cy.unsupported(f"A path over {p.name!r}, which links {p.subject} to {p.object} (its links cannot chain),", at)
        return self.ctx.adoption.type(p.subject)


class LinkedMatch(AdoptedMatch):
    """``AdoptedMatch`` with the mapping's link_memory: memory propositions may end at adopted nodes."""

    LINKS_MEMORY = True

    def new_end(self, name: str, ref: Part) -> list[Fragment]:
        return [self.memory_end(name, ref)]

    def whole_anchor(self, node: Part | None) -> Part | None:
        return node if node is not None else self.ctx.fresh("p")

    def with_memory(
        self, clause: ast.PropositionClause, candidates: list[adopt.AdoptedPredicate], predicate: ast.Var, scope: dict[str, Binding]
    ) -> tuple[list[adopt.AdoptedPredicate] | None, bool]:
        return self.linked_candidates(clause, candidates, predicate, scope)

    def linked_candidates(
        self, clause: ast.PropositionClause, candidates: list[adopt.AdoptedPredicate], predicate: ast.Var, scope: dict[str, Binding]
    ) -> tuple[list[adopt.AdoptedPredicate] | None, bool]:
        """``(s, ?p, o)`` with an adopted endpoint when link_memory is on: memory propositions may
        touch adopted concepts too. Returns the adopted predicates to read and whether memory
        predicates are read with them; (None, False): memory predicates only (the usual pattern).

        - an endpoint that is a memory element, or no adopted predicate fits: memory only (exact);
        - both endpoints adopted: the adopted predicates and the memory ones, in one pattern;
        - an endpoint not bound to anything yet: the adopted predicates only, said in ``warnings``
          — one variable cannot hold an adopted node of one clause and a memory element of
          another (docs/adopt.md, "link_memory")."""

        def kind(endpoint: ast.Endpoint) -> str:
            if isinstance(endpoint, ast.Var):
                binding = scope.get(endpoint.name)
                if binding is None:
                    return "unknown"
                return "adopted" if isinstance(binding.adopted, adopt.AdoptedType) else "memory"
            if isinstance(endpoint, ast.ConceptClause) and self.adopted_type(endpoint, None) is not None:
                return "adopted"
            return "memory"

        kinds = {kind(clause.subject), kind(clause.object)}
        if "memory" in kinds or not candidates:
            return None, False
        if "unknown" in kinds:
            free = next(e.name for e in (clause.subject, clause.object) if isinstance(e, ast.Var) and e.name not in scope)
            self.ctx.notes.append(
                f"?{predicate.name} ranges over the adopted predicates here ({', '.join(p.name for p in candidates)}): ?{free} is bound to nothing "
                f"before this clause, and one variable cannot hold both an adopted concept and a memory element. To read memory propositions "
                f'here too, bind ?{free} first to a type (a memory type, or an adopted one) or name the predicate (docs/adopt.md, "link_memory").'
            )
            return candidates, False
        if clause.var is not None:
            raise adopted_cy.unsupported(
                f"A ?{clause.var} link variable with a predicate variable that could be an adopted relationship or a memory proposition (link_memory)",
                clause.span.start,
            )
        return candidates, True

    def memory_end(self, name: str, ref: Part) -> Fragment:
        """With link_memory a memory proposition may end at an adopted node, but ``?name`` (bound
        here first, by a memory pattern) binds memory elements: the condition that keeps it to
        them, and the warning that says so (docs/adopt.md, "link_memory")."""
        note = (
            f"?{name} binds memory concepts and propositions only: a memory proposition may also end at an adopted concept "
            f'(link_memory); bind ?{name} to an adopted type before this clause (e.g. ?{name} {{type: "{self.ctx.adoption.types[0].name}"}}) to read those '
            "(docs/adopt.md)."
        )
        if note not in self.ctx.notes:
            self.ctx.notes.append(note)
        return self.kip_element(ref)

    def whole(self, node: Part, subject: bool, obj: bool) -> list[Fragment]:
        """With link_memory the team may delete an adopted node a memory proposition points at
        (``DETACH DELETE`` removes KIP's relationships with it): such a proposition has lost an
        endpoint and is not read. The tests for the endpoint relationships a pattern does not
        already expand (``subject`` / ``obj``: test that one)."""
        rels = [rel for rel, test in ((self.ctx.names.subject_rel, subject), (self.ctx.names.object_rel, obj)) if test]
        return [clauses.exists_pattern("(", node, ")-[:", rel, "]->()") for rel in rels]

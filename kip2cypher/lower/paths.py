"""Paths: ``(s, "p"{m,n}, o)`` → the clauses that bind or test its far end (docs/kql.md, "Paths").

KIP paths have walk semantics: the nodes reachable in exactly m steps are found layer by
layer, then ``ANY SHORTEST`` finds what those reach within the remaining n − m steps. The
pattern clauses a path's ends need (concept clauses, nested propositions, variables) come from
the match strategy (``match.MemoryMatch`` or ``adopted_match.AdoptedMatch``) given to ``path``.
"""

from __future__ import annotations

from typing import Any

from ..cypher import clauses, storage
from ..cypher.builder import Fragment, Ident, Part, frag, join
from ..errors import INVALID_SYNTAX, RESOURCE_EXHAUSTED, KipError
from ..syntax import ast
from . import adopted as adopted_cy
from .context import ELEMENT, Binding, node_key


def is_path(clause: Any) -> bool:
    """A proposition clause whose predicate has a quantifier ``{m,n}``."""
    return isinstance(clause, ast.PropositionClause) and isinstance(clause.predicate, ast.PredicatePattern) and clause.predicate.quantifier is not None


def bound_path() -> KipError:
    return KipError(
        INVALID_SYNTAX,
        'A path clause ("p"{m,n}) matches a chain of links, so it cannot be bound to a variable or used as a nested proposition.',
        "Drop the ?link variable, or match a single hop without the quantifier.",
    )


def path(
    match: Any, clause: ast.PropositionClause, scope: dict[str, Binding], parts: list[Fragment], conds: list[Fragment], *, required: bool, avoid: frozenset[str]
) -> Fragment:
    """A path clause ``(s, "p"{m,n}, o)`` → the ``CALL`` that binds or tests its far end.

    KIP paths have walk semantics (docs/kql.md, "Paths"): ``o`` matches when some walk of
    m..n ``p`` links leads from ``s`` to ``o``, links and nodes may repeat, and each ``o``
    is one solution however many walks reach it. Computed without enumerating walks: the
    nodes reachable in exactly m steps are found layer by layer (``WITH DISTINCT`` per
    step, so a layer is a set), then ``ANY SHORTEST`` finds what those reach within the
    remaining n − m steps — a breadth-first search, unbounded when n is open. It starts
    from whichever end is bound (both bound: a reachability test)."""
    if clause.var is not None:
        raise bound_path()
    predicate = match.named(clause.predicate)
    match.ground_predicates(predicate, clause.predicate, required)
    low, high = hops(predicate.quantifier, match.ctx.settings.max_hops)
    walked = match.walked_type(predicate, clause.span.start)
    s_ref, s_bound = path_end(match, clause.subject, scope, parts, conds, required=required, avoid=avoid, adopted=walked)
    o_ref, o_bound = path_end(match, clause.object, scope, parts, conds, required=required, avoid=avoid, adopted=walked)
    match.ctx.keys.add(match.ctx.keys.anonymous())  # a path element: nothing determines it, so DISTINCT stays
    types = match.walk_types(predicate, walked)

    def hop_end(node: Part) -> Fragment:
        """A node a hop reaches: over an adopted predicate, a node of its type."""
        return frag("(", node, ":", Ident(walked.label), ")") if walked is not None else frag("(", node, ")")

    def hop() -> Fragment:
        """What a hop's relationship pattern holds between its brackets: the predicate's type,
        in KIP's label space for a memory predicate (no team relationship has it)."""
        return frag(":", types)

    if o_ref == s_ref:
        o_bound = s_bound  # the same variable: bound only if it was before this clause
    # link_memory: a walk over a memory predicate may pass through adopted nodes (their KIP
    # links are the predicate's native relationships), but a free end variable binds memory
    # elements only (``memory_end``): tested where it is bound, in the MATCH or in the walk.
    free_ends = [
        (e.name, ref)
        for e, ref, bound in ((clause.subject, s_ref, s_bound), (clause.object, o_ref, o_bound))
        if match.LINKS_MEMORY and walked is None and isinstance(e, ast.Var) and not bound
    ]
    if not s_bound and not o_bound and walked is not None:
        parts.append(match.typed_node(s_ref, walked))  # every node of the adopted type may begin a walk
        s_bound = True
    if not s_bound and not o_bound:
        # Neither end known: start from every node that can begin such a walk.
        parts.append(frag("(", s_ref, ")"))
        if low == 0 or walked is None and not match.LINKS_MEMORY:
            # a walk of memory relationships begins at a KIP element: a label scan of KIP's
            # nodes, not of all the team's (with link_memory ``memory_end`` below says the same)
            conds.append(match.kip_element(s_ref))
        if low > 0:
            conds.append(clauses.exists_pattern("(", s_ref, ")-[", hop(), "]->()"))
        s_bound = True
    if o_ref == s_ref:  # (?x, "p"{m,n}, ?x): the end is the start, bound with it
        s_bound = o_bound = True
    forward = s_bound
    start, end, end_bound = (s_ref, o_ref, o_bound) if forward else (o_ref, s_ref, s_bound)
    walked_to = [match.memory_end(name, ref) for name, ref in dict(free_ends).items() if ref == end and not end_bound]
    conds.extend(match.memory_end(name, ref) for name, ref in dict(free_ends).items() if not (ref == end and not end_bound))
    arrows = ("-[", "]->") if forward else ("<-[", "]-")
    body: list[Fragment] = []
    current: Part = start
    carry = [end] if end_bound and end != start else []
    layers = low if low >= 2 else 0  # ANY SHORTEST alone is exact for a minimum of 0 or 1
    for _ in range(layers):
        nxt = match.ctx.fresh("x")
        body.append(frag("MATCH (", current, ")", arrows[0], hop(), arrows[1], hop_end(nxt)))
        body.append(frag("WITH DISTINCT ", join(", ", [nxt, *carry])))
        current = nxt
    first, last = (low, high) if not layers else (0, None if high is None else high - low)
    quantifier = f"{{{first},{'' if last is None else last}}}"
    if last == 0:  # no step left: the end is the last layer itself ({n,n} needs no search)
        body.append(frag("WITH * WHERE ", current, " = ", end) if end_bound else frag("WITH ", current, " AS ", end))
    elif walked is not None:
        # A quantified path pattern: every node a hop reaches has the adopted type's label.
        walk = frag("(()-[:", types, "]->", hop_end(""), ")", quantifier)
        first_node, last_node = (current, end) if forward else (end, current)
        body.append(frag("MATCH ANY SHORTEST ", hop_end(first_node), walk, "(", last_node, ")"))
    elif forward:
        body.append(frag("MATCH ANY SHORTEST (", current, ")-[", hop(), "]->", quantifier, "(", end, ")"))
    else:
        body.append(frag("MATCH ANY SHORTEST (", end, ")-[", hop(), "]->", quantifier, "(", current, ")"))
    if walked_to:
        body.append(frag("WITH * WHERE ", join(" AND ", walked_to)))
    if end_bound:
        body.append(frag("RETURN true AS ", match.ctx.fresh("reached"), " LIMIT 1"))
    else:
        body.append(frag("RETURN DISTINCT ", end))
    imports = [start, end] if end_bound and end != start else [start]
    return clauses.call(imports, body)


def path_end(
    match: Any,
    endpoint: ast.Endpoint,
    scope: dict[str, Binding],
    parts: list[Fragment],
    conds: list[Fragment],
    *,
    required: bool,
    avoid: frozenset[str],
    adopted: Any = None,
) -> tuple[Part, bool]:
    """A path's subject or object → (its Cypher variable, whether it is bound before the walk)."""
    if isinstance(endpoint, ast.Var):
        bound = endpoint.name in scope
        ref = match.bind_end(endpoint.name, ELEMENT, adopted, scope, avoid)
        match.ctx.keys.add(node_key(endpoint.name))
        return ref, bound
    if isinstance(endpoint, ast.ConceptClause):
        ref = None if endpoint.var is not None else match.ctx.fresh("n")
        node, _ = match.concept_node(endpoint, scope, required=required, avoid=avoid, ref=ref, adopted=adopted)
        parts.append(node)
        return (scope[endpoint.var].ref if endpoint.var is not None else ref), True
    if adopted is not None:
        raise adopted_cy.nested_refused(endpoint.span.start)
    node, _ = match.proposition(endpoint, scope, parts, conds, need_node=True, required=required, avoid=avoid)
    return node, True


def hops(quantifier: ast.Quantifier, max_hops: int) -> tuple[int, int | None]:
    """(m, n) of ``{m,n}`` (n None: open). The minimum costs one clause per step, so it is
    bounded by ``Settings.max_hops``; the maximum is not (a breadth-first search)."""
    low = int(quantifier.min)
    high = None if quantifier.max is None else int(quantifier.max)
    if high is not None and low > high:
        raise KipError(INVALID_SYNTAX, f"The path quantifier {{{low},{high}}} has min > max.", "Write {min,max} with min ≤ max.", offset=quantifier.span.start)
    if high is not None and high > storage.INT64_MAX:  # the bound is Cypher text: Neo4j parses it as a 64-bit integer
        raise KipError(
            INVALID_SYNTAX,
            f"The path quantifier's maximum {high} is above {storage.INT64_MAX}, the largest hop count there is.",
            f"Leave the maximum open ({{{low},}}) or write a smaller one.",
            offset=quantifier.span.start,
        )
    cap = max_hops
    if low > cap:
        raise KipError(
            RESOURCE_EXHAUSTED,
            f"The path quantifier asks for at least {low} hops; this engine expands at most {cap} mandatory hops (setting max_hops, KIP2CYPHER_MAX_HOPS).",
            f"Use a minimum of at most {cap} hops (the maximum may be larger or open: {{1,}}), or raise KIP2CYPHER_MAX_HOPS.",
        )
    return low, high

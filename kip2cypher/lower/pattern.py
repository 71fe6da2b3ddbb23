"""The shared WHERE lowering: KIP graph patterns → Cypher reading clauses.

Used by FIND (``lower/find.py``), by the KML statements that take a WHERE
(UPDATE, DELETE …, MERGE) and by EXPORT. Typical use::

    pattern = lower_where(command.where, parameters, settings)
    pattern.require("target", kinds={CONCEPT, PROPOSITION, ELEMENT})   # KIP_3001 if unbound
    pattern.distinct(["target"])            # WITH DISTINCT target   (one row per element)
    stmt = pattern.statement()              # MATCH … WHERE … WITH DISTINCT target
    stmt.line("SET ", pattern.ref("target"), ".x = 1")

``lower_where`` returns a ``Pattern``: the Cypher lines (``MATCH`` /
``OPTIONAL MATCH`` / ``WHERE`` / ``CALL { … UNION … }`` / ``EXISTS { … }``)
and the KIP variables visible after the WHERE with their kind:

- ``concept``      a ``:KipConcept`` node (bound by a concept clause)
- ``proposition``  a ``:KipProposition`` node (bound by ``?l (…)``)
- ``element``      a node of either kind (a subject/object variable)
- ``predicate``    a predicate name, a string (``(?s, ?p, ?o)``)

Lowering rules (the full list with rationale is in docs/kql.md):

- Each pattern clause is its own ``MATCH`` so that two clauses may bind the
  same relationship (KIP variables unify like SPARQL's, they are not subject
  to Cypher's relationship isomorphism inside one MATCH). Consecutive MATCH
  clauses form one query graph, so Neo4j's planner still picks the anchor
  (unique index seek on id or type+name, index seek on name, label scan).
- A proposition clause is matched on its native relationship
  ``(s)-[:`p`]->(o)`` unless the proposition itself must be bound (a ``?link``
  variable, a nested proposition endpoint), in which case its reified node is
  matched: ``(s)<-[:KIP_SUBJECT]-(l:KipProposition)-[:KIP_OBJECT]->(o)``.
  Where that relationship may touch an adopted node (docs/adopt.md) it must also carry
  ``kip_id``: the team's own relationships of the same type are not propositions.
- Path operators have walk semantics (``paths.py``).
- FILTER is group-level (like SPARQL): it sees every variable of its group,
  wherever written, and is placed as soon as those variables are bound. It is
  evaluated in three-valued logic — a test on a missing value is unknown, and
  only rows where the FILTER is true are kept — which is Cypher's own null
  semantics, so tests are emitted as written.
- NOT → ``NOT EXISTS { … }`` (correlated on the outer variables; its own
  variables stay inside). OPTIONAL → ``OPTIONAL MATCH … WHERE …`` for a single
  clause, ``OPTIONAL CALL (vars) { … RETURN new vars }`` otherwise. UNION →
  ``CALL { left RETURN … UNION right RETURN … }`` where *left* is everything
  written before the UNION in the same group (evaluated left to right).

This module holds the groups (``Lowerer``); the clauses come from the match strategy
(``match`` / ``adopted_match``), FILTER expressions from ``filters``, paths from ``paths``,
and the state they share from ``context`` (docs/architecture.md, "The WHERE lowering").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..config import Settings
from ..cypher import clauses
from ..cypher.builder import Fragment, Part, Statement, Var, frag, join
from ..errors import INVALID_SYNTAX, RESOURCE_EXHAUSTED, KipError
from ..syntax import ast
from ..syntax.regex_guard import regex_calls
from . import adopted as adopted_cy
from . import passes, paths
from .adopted_match import strategy
from .context import ELEMENT, PREDICATE, Binding, Grounding, LoweringContext, node_key, unbound, var_mentions
from .filters import Filters
from .form import Distinct, Where, step_line


@dataclass
class Pattern:
    """A lowered WHERE: Cypher lines plus the visible variables."""

    lines: list[Fragment]
    bindings: dict[str, Binding]
    grounding: Grounding
    lowerer: Lowerer

    # ---------------------------------------------------------------- variables
    @property
    def ctx(self) -> LoweringContext:
        """The lowering's shared state: names, grounding, notes, keys read."""
        return self.lowerer.ctx

    @property
    def filters(self) -> Filters:
        """The FILTER-expression lowering over this pattern's variables (values, guards, conditions)."""
        return self.lowerer.filters

    def require(self, name: str, *, used_in: str = "FIND", kinds: Iterable[str] | None = None, at: int | None = None) -> Binding:
        """The binding of ``?name``; KIP_3001 if the WHERE never binds it (visibly). ``at``: where
        the command uses it (a text offset, for the error's position)."""
        binding = self.bindings.get(name)
        if binding is None:
            raise unbound(name, used_in, at)
        if kinds is not None and binding.kind not in set(kinds):
            raise KipError(
                INVALID_SYNTAX,
                f"?{name} is bound to a {binding.kind} but {used_in} needs a {' or '.join(sorted(set(kinds)))}.",
                "Use a variable bound to a concept node or proposition link here."
                if binding.kind == PREDICATE
                else "Bind the right kind of element to this variable.",
                offset=at,
            )
        return binding

    def ref(self, name: str) -> Part:
        return self.require(name).ref

    def writable(self, name: str, action: str, at: int | None = None) -> None:
        """KIP_3004 at compile time when ``?name`` binds adopted data, which KIP never changes (docs/adopt.md)."""
        binding = self.require(name, used_in=action, at=at)
        if binding.adopted is not None:
            raise adopted_cy.read_only(binding.adopted, f"{action} on ?{name}", at)

    # ---------------------------------------------------------------- expressions
    def value(self, expr: ast.Var | ast.DotPath, *, used_in: str = "FIND") -> Fragment:
        """The raw stored value of ``?x`` / ``?x.path`` (decode attribute values with storage.decode;
        ``?x.attributes`` / ``?x.metadata`` yield ``properties(x)`` — split with storage.split_properties)."""
        return self.lowerer.filters.raw_value(expr, self.bindings, used_in)

    def condition(self, expr: ast.BoolExpr, *, used_in: str = "FILTER") -> Fragment:
        """A FILTER expression over the visible variables, never null."""
        return self.lowerer.filters.condition(expr, self.bindings, used_in)

    # ---------------------------------------------------------------- clauses
    def dedup(self, names: Iterable[str], *, used_in: str = "FIND") -> Distinct:
        """The ``Distinct`` keeping only ``names`` (their identities): one row per distinct
        solution over those variables; predicate variables are materialized as strings. The
        bindings become those of the kept variables. ``Distinct.unique`` records whether the
        row keys (``Keys``) prove the rows distinct already (the elision pass reads it)."""
        names = list(dict.fromkeys(names))
        items: list = []
        kept: dict[str, Binding] = {}
        for name in names:
            binding = self.require(name, used_in=used_in)
            var = Var(name)
            items.append(var if binding.is_variable and binding.ref == var else frag(binding.ref, " AS ", var))
            kept[name] = Binding(name, binding.kind, var, binding.nullable, True, binding.adopted)
        self.bindings = kept
        return Distinct(tuple(items), bool(items) and self.ctx.keys.unique(node_key(n) for n in names))

    def distinct(self, names: Iterable[str], *, used_in: str = "FIND") -> None:
        """Append the ``dedup`` of ``names`` to the lines; in a lean pattern
        (``lower_where(…, used=…)``) elided when the keys allow (``passes.elide``)."""
        step = self.dedup(names, used_in=used_in)
        kept = passes.elide(step, ordered=False) if self.ctx.lean else step
        if kept is not None:
            self.lines.append(step_line(kept))

    def statement(self) -> Statement:
        stmt = Statement()
        for line in self.lines:
            stmt.line(line)
        return stmt


#: UNION blocks one command may hold (docs/limits.md). Neo4j plans a union's branches together,
#: in time that grows faster than their number (on the 2-core test machine a FIND of 256 one-clause
#: branches took 3.9 s to plan, 512 took 11 s, 1 024 ran into the 30 s timeout; a UNION after
#: other clauses nests, and 256 of those timed out), and the compiler's Cypher for nested
#: UNIONs grows with the square of their number: 128 is far above any written query and below that.
MAX_UNION_BLOCKS = 128
#: Tests (comparisons, functions, boolean operands) all FILTERs of one command may hold together
#: (docs/limits.md). Neo4j's planning time grows with the square of their number and is not
#: cut short by the query timeout: 1 024 ``||`` operands planned in 6.4 s, 2 048 in 22 s,
#: 4 096 answered the 30 s timeout only after 86 s. An IN list has no such cost (one test).
MAX_FILTER_TESTS = 512


def check_size(items: tuple) -> None:
    """KIP_4002 at the first UNION block past ``MAX_UNION_BLOCKS``, or at the FILTER whose tests
    pass ``MAX_FILTER_TESTS``, in a WHERE (nested blocks included). An explicit stack: the walk
    must not recurse where lowering must not."""
    unions = tests = 0
    stack = list(reversed(items))
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Filter):
            tests += _tests(item.expr)
            if tests > MAX_FILTER_TESTS:
                raise _too_many(
                    f"The FILTERs of this command hold more than {MAX_FILTER_TESTS} tests together, the most one command may have.",
                    'Test alternatives of one value with one IN: FILTER(IN(?x.name, ["A", "B", …])), or split the command.',
                    item.span.start,
                )
        elif isinstance(item, (ast.NotBlock, ast.OptionalBlock, ast.UnionBlock)):
            unions += isinstance(item, ast.UnionBlock)
            if unions > MAX_UNION_BLOCKS:
                raise _too_many(
                    f"The WHERE holds more than {MAX_UNION_BLOCKS} UNION blocks, the most one command may have.",
                    'Say the alternatives in one pattern — a predicate alternative (?x, "a" | "b", ?y), '
                    'FILTER(IN(?x.name, ["A", "B"])) or a FILTER with || — or split them over several commands of a batch.',
                    item.span.start,
                )
            stack.extend(reversed(item.items))


def _tests(expr: Any) -> int:
    """The tests of a FILTER expression: its leaves under ``&&`` / ``||`` / ``!``."""
    count, stack = 0, [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BoolOp):
            stack.extend((node.left, node.right))
        elif isinstance(node, ast.NotExpr):
            stack.append(node.operand)
        else:
            count += 1
    return count


def _too_many(message: str, hint: str, offset: int) -> KipError:
    return KipError(RESOURCE_EXHAUSTED, message, hint, offset=offset)


def lower_where(where: Iterable[ast.WhereItem], parameters: Mapping[str, Any], settings: Settings, *, used: Iterable[str] | None = None) -> Pattern:
    """Lower a WHERE block. Raises KipError for unbound FILTER variables (KIP_3001), bad path
    quantifiers (KIP_1001/KIP_4002) and ill-typed placeholder values (KIP_1001).

    ``used``: every variable the caller reads after the WHERE (FIND and ORDER BY
    expressions, the target of a KML statement). Giving it opts in to the *lean*
    lowering, which yields the same solutions with less work:

    - the lean pass (``passes.lean``): a subject/object variable of a reified proposition
      clause that occurs nowhere else (not in the WHERE, not in ``used``) is not expanded:
      every proposition node has exactly one subject and one object, so the expansion cannot
      change the rows;
    - ``Pattern.distinct`` leaves the DISTINCT out when the rows are provably distinct
      already (``Keys``, ``passes.elide``). FIND takes ``Pattern.dedup`` instead and elides
      with its own pass (``passes.elide_distinct``).
    """
    form = Where(tuple(where))
    check_size(form.items)
    if used is not None:
        form = passes.lean(form, used)
    ctx = LoweringContext(parameters, settings, lean=used is not None, dont_care=form.unread)
    ctx.regex_budget = settings.max_regex_steps / max(1, regex_calls(form.items))  # all its REGEX share one budget per row
    lowerer = Lowerer(ctx)
    lines, bindings = lowerer.group(form.items, {}, required=True, top=True)
    return Pattern(lines, bindings, ctx.grounding, lowerer)


# ----------------------------------------------------------------------------- lowering
def _where_vars(item: Any, out: set[str]) -> set[str]:
    """Every variable name mentioned anywhere in an item (including nested blocks)."""
    out.update(var_mentions(item))
    return out


def bound_by(item: Any, out: set[str]) -> set[str]:
    """Variables an item binds for the rest of its group (NOT binds nothing; FILTER binds nothing)."""
    if isinstance(item, ast.ConceptClause):
        if item.var:
            out.add(item.var)
    elif isinstance(item, ast.PropositionClause):
        if item.var:
            out.add(item.var)
        for part in (item.subject, item.predicate, item.object):
            if isinstance(part, ast.Var):
                out.add(part.name)
            elif isinstance(part, (ast.ConceptClause, ast.PropositionClause)):
                bound_by(part, out)
    elif isinstance(item, (ast.OptionalBlock, ast.UnionBlock)):
        for sub in item.items:
            bound_by(sub, out)
    return out


def _union_runs(items: tuple) -> list[tuple[int, int]]:
    """``(first, stop)`` of each run of consecutive UNION blocks in a group, in order."""
    runs: list[tuple[int, int]] = []
    for index, item in enumerate(items):
        if isinstance(item, ast.UnionBlock):
            if runs and runs[-1][1] == index:
                runs[-1] = (runs[-1][0], index + 1)
            else:
                runs.append((index, index + 1))
    return runs


def _merged_binding(name: str, bindings: list[Binding | None]) -> Binding:
    """What ``?name`` is after a union whose branches bind it as ``bindings`` (None: not bound
    there, so the variable is null in that branch's rows)."""
    present = [b for b in bindings if b is not None]
    kinds = {b.kind for b in present}
    if PREDICATE in kinds and len(kinds) > 1:
        raise KipError(
            INVALID_SYNTAX,
            f"?{name} binds a predicate name in one UNION branch and an element in another.",
            "Use different variable names for predicates and elements.",
        )
    adopted = {b.adopted for b in present}
    if len(adopted) > 1:
        raise KipError(
            INVALID_SYNTAX,
            f"?{name} binds elements of different adopted types (or adopted and memory elements) in the UNION branches.",
            "Use a different variable in each branch (docs/adopt.md).",
        )
    nullable = len(present) < len(bindings) or any(b.nullable for b in present)
    return Binding(name, kinds.pop() if len(kinds) == 1 else ELEMENT, Var(name), nullable, adopted=adopted.pop())


class Lowerer:
    """Lowers the groups of one WHERE over its ``LoweringContext``."""

    def __init__(self, ctx: LoweringContext) -> None:
        self.ctx = ctx
        #: memory or adopted clauses: chosen once, from the namespace's adoption mapping
        self.match = strategy(ctx)
        self.filters = Filters(ctx)

    def group(
        self, items: tuple, scope: dict[str, Binding], *, required: bool, top: bool = False, avoid: frozenset[str] = frozenset()
    ) -> tuple[list[Fragment], dict[str, Binding]]:
        """Lower a group; returns its lines and the bindings visible after it (scope + new).

        ``avoid``: names that must not be bound under their own name (they belong to an
        enclosing scope this group cannot see — the UNION branch rule); such variables get
        an internal name and stay invisible outside the group.

        A UNION's left branch is everything written before it in the group, so
        ``A UNION {B} C UNION {D}`` is ``((A ∪ B) C) ∪ D``. A *run* of UNIONs (``A UNION {B}
        UNION {C} …``) is one union of all its branches — one ``CALL { … UNION … UNION … }``,
        not a CALL nested per UNION: the union removes duplicates, so grouping it either way
        gives the same rows, and the flat form nests nothing however long the run is."""
        runs = _union_runs(items)
        if not runs:
            return self.sequence(items, scope, required=required, avoid=avoid)
        if runs[0][0] == 0:
            raise KipError(
                INVALID_SYNTAX,
                "UNION { … } needs a pattern before it in the same block.",
                "Write the first alternative, then UNION { second alternative }.",
                offset=items[0].span.start,
            )
        # Everything up to the last run is the left branch of that run's union: lowered as a
        # nested group (its keys are not the top level's), run after run, without recursion.
        with self.ctx.nested():
            lines, bound = self.sequence(items[: runs[0][0]], scope, required=False, avoid=avoid)
            for index, (first, stop) in enumerate(runs):
                branches = [(lines, bound), *(self.group(items[i].items, {}, required=False, avoid=avoid | frozenset(scope)) for i in range(first, stop))]
                if index == len(runs) - 1:
                    break
                lines, bound = self.union(branches, scope, avoid)
                between, bound = self.sequence(items[stop : runs[index + 1][0]], bound, required=False, avoid=avoid)
                lines = [*lines, *between]
        lines, merged = self.union(branches, scope, avoid)
        rest = items[runs[-1][1] :]
        if rest:
            rest_lines, merged = self.sequence(rest, merged, required=required, avoid=avoid)
            lines = [*lines, *rest_lines]
        return lines, merged

    def union(
        self, branches: list[tuple[list[Fragment], dict[str, Binding]]], scope: dict[str, Binding], avoid: frozenset[str]
    ) -> tuple[list[Fragment], dict[str, Binding]]:
        """The union of a run's branches (the left one first, seeing ``scope``; the others
        independent): a ``CALL { … UNION … }`` returning the variables any branch binds anew,
        null where a branch does not bind one."""
        news = [{n: b for n, b in bound.items() if n not in scope and (index == 0 or n not in avoid)} for index, (_, bound) in enumerate(branches)]
        columns = list(dict.fromkeys(name for new in news for name in new))
        merged: dict[str, Binding] = dict(scope)
        for name in columns:
            merged[name] = _merged_binding(name, [new.get(name) for new in news])

        def returning(bindings: dict[str, Binding]) -> Fragment:
            cols = []
            for name in columns:
                binding = bindings.get(name)
                if binding is None:
                    cols.append(frag("null AS ", Var(name)))
                else:
                    cols.append(clauses.aliased(binding.ref, Var(name)))
            if not cols:
                return frag("RETURN true AS ", self.ctx.fresh("u"))
            return clauses.returning(cols)

        if not columns:
            # Nothing new in any branch: a union is then just an existence test of either branch.
            cond = frag("(", join(" OR ", [clauses.exists(branch_lines) for branch_lines, _ in branches]), ")")
            return [clauses.with_where([cond]) if scope else frag("WITH true AS ", self.ctx.fresh("u"), " WHERE ", cond)], merged
        body = clauses.union([[*branch_lines, returning(bound)] for branch_lines, bound in branches])
        # UNION removes duplicate rows: per outer row, the columns determine the CALL's row.
        self.ctx.keys.rule([self.ctx.keys.add(node_key(c)) for c in columns], [self.ctx.keys.add(self.ctx.keys.anonymous())])
        return [clauses.subquery("CALL", body, _refs(scope))], merged

    def sequence(
        self, items: tuple, scope: dict[str, Binding], *, required: bool, avoid: frozenset[str] = frozenset()
    ) -> tuple[list[Fragment], dict[str, Binding]]:
        """A UNION-free list of items: patterns and OPTIONALs in order, FILTER/NOT group-level."""
        scope = dict(scope)
        will_bind: set[str] = set(scope)
        for item in items:
            bound_by(item, will_bind)
        pending: list[tuple[Any, set[str]]] = []
        for item in items:
            if isinstance(item, ast.Filter):
                needs = _where_vars(item.expr, set())
                missing = sorted(needs - will_bind)
                if missing:
                    raise unbound(missing[0], "FILTER", item.span.start)
                pending.append((item, needs))
            elif isinstance(item, ast.NotBlock):
                pending.append((item, _where_vars(item, set()) & will_bind))
        found: list[clauses.Clause] = []
        # Conditions whose variables are all bound wait here until the current run of
        # mandatory MATCH clauses ends, then go into the WHERE of its last MATCH (one query
        # graph: Neo4j places each predicate where it is cheapest anyway).
        ready_conds: list[Fragment] = []

        def collect() -> None:
            for item, needs in list(pending):
                if needs <= set(scope):
                    pending.remove((item, needs))
                    ready_conds.append(self.filter_or_not(item, scope, avoid))

        def attach() -> None:
            if not ready_conds:
                return
            if found and found[-1].kind == "match":
                found[-1].where.extend(ready_conds)
            elif found:
                found.append(clauses.Clause(frag("WITH *"), "with", list(ready_conds)))
            else:
                pre_conds.extend(ready_conds)
            ready_conds.clear()

        pre_conds: list[Fragment] = []
        collect()
        for item in items:
            if isinstance(item, (ast.Filter, ast.NotBlock)):
                continue
            if isinstance(item, (ast.ConceptClause, ast.PropositionClause)):
                parts, conds, after = self.match.pattern_clause(item, scope, required=required, avoid=avoid)
                if parts:
                    found.append(clauses.Clause(clauses.match(parts), "match", conds))
                found.extend(clauses.Clause(line, "call") for line in after)
            elif isinstance(item, ast.OptionalBlock):
                # Conditions ready before a left join are applied before it.
                attach()
                optional = self.optional(item, scope, avoid)
                if optional is not None:
                    found.append(optional)
            else:  # pragma: no cover - UnionBlock is split off by group()
                raise AssertionError(item)
            collect()
        attach()
        if pending:  # pragma: no cover - every pending item's needs are in will_bind
            raise AssertionError(pending)
        lines: list[Fragment] = []
        if pre_conds:
            # Only conditions, no pattern (e.g. NOT { FILTER(…) }): a plain row filter.
            if scope:
                lines.append(clauses.with_where(pre_conds))
            else:
                raise KipError(
                    INVALID_SYNTAX, "A block of only FILTERs has nothing to filter.", "Add a pattern clause that binds the variables the FILTER tests."
                )
        for clause in found:
            lines.extend(clause.render())
        return lines, scope

    # ------------------------------------------------------------------ blocks
    def filter_or_not(self, item: Any, scope: dict[str, Binding], avoid: frozenset[str]) -> Fragment:
        if isinstance(item, ast.Filter):
            return self.filters.condition(item.expr, scope, "FILTER")
        return self.not_block(item, scope, avoid)

    def not_block(self, item: ast.NotBlock, scope: dict[str, Binding], avoid: frozenset[str]) -> Fragment:
        only_filters = all(isinstance(sub, ast.Filter) for sub in item.items)
        if only_filters:
            # NOT { … } is pattern negation: it keeps the row unless the block *matches*, and a
            # FILTER that is unknown (a missing value) does not match — hence coalesce(…, false).
            conds = [self.filters.condition(sub.expr, scope, "FILTER") for sub in item.items]
            return frag("NOT coalesce(", join(" AND ", conds), ", false)")
        with self.ctx.nested():
            lines, _ = self.group(item.items, scope, required=False, avoid=avoid)
        return clauses.not_exists(lines)

    def optional(self, item: ast.OptionalBlock, scope: dict[str, Binding], avoid: frozenset[str]) -> clauses.Clause | None:
        patterns = [sub for sub in item.items if isinstance(sub, (ast.ConceptClause, ast.PropositionClause))]
        filters = [sub for sub in item.items if isinstance(sub, ast.Filter)]
        if len(patterns) == 1 and len(patterns) + len(filters) == len(item.items) and not paths.is_path(patterns[0]):
            inner = dict(scope)
            with self.ctx.nested() as keys:
                parts, conds, _ = self.match.pattern_clause(patterns[0], inner, required=False, avoid=avoid)
            for sub in filters:
                needs = _where_vars(sub.expr, set())
                missing = sorted(needs - set(inner))
                if missing:
                    raise unbound(missing[0], "FILTER", sub.span.start)
                # the WHERE of an OPTIONAL MATCH: null fails the match like false does
                conds.append(self.filters.condition(sub.expr, inner, "FILTER"))
            new = {n: b for n, b in inner.items() if n not in scope}
            if not new:
                return None  # binds nothing new: a left join that cannot change the solutions
            # At most one match per outer row when the keys determine it; none gives one null row.
            self.ctx.keys.merge(keys)
            for name, binding in new.items():
                binding.nullable = True
                scope[name] = binding
            return clauses.Clause(clauses.optional_match(parts), "optional", conds)
        outer = dict(scope)
        with self.ctx.nested():
            lines, inner = self.group(item.items, scope, required=False, avoid=avoid)
        new = {n: b for n, b in inner.items() if n not in scope and n not in avoid}
        if not new:
            return None
        self.ctx.keys.add(self.ctx.keys.anonymous())  # any number of body rows per outer row: not modelled
        cols = []
        for name, binding in new.items():
            cols.append(clauses.aliased(binding.ref, Var(name)))
            scope[name] = Binding(name, binding.kind, Var(name), True, adopted=binding.adopted)
        body = [*lines, clauses.returning(cols)]
        return clauses.Clause(clauses.subquery("OPTIONAL CALL", body, _refs(outer)), "optional")


def _refs(scope: Mapping[str, Binding]) -> list[Part]:
    """The Cypher expressions of the variables in scope (what a subquery may import)."""
    return [binding.ref for binding in scope.values()]

"""The shared WHERE lowering: KIP graph patterns → Cypher reading clauses.

Used by FIND (``lower/kql.py``), by the KML statements that take a WHERE
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
- Path operators are native variable-length patterns ``[:`p`*m..n]``.
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
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .. import adoption as adopt
from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Internal, Param, Part, Statement, Var, frag, join, literal
from ..errors import INVALID_SYNTAX, RESOURCE_EXHAUSTED, KipError
from ..syntax import ast
from ..syntax.values import Deferred, describe, resolve, resolve_predicate
from . import adopted as adopted_cy
from . import adopted_values
from .context import CONCEPT, ELEMENT, PREDICATE, PROPOSITION, Binding, Grounding, LoweringContext, node_key, unbound
from .regex_guard import compile_search, regex_calls

SCALAR_FIELDS = ("id", "type", "name", "subject", "predicate", "object")
MAP_FIELDS = {"attributes": storage.ATTR_PREFIX, "metadata": storage.META_PREFIX}

INDENT = "  "


#: Stored values that are JSON text (objects, mixed lists, explicit null …) start with this.
JSON_MARKER_LITERAL = literal(storage.JSON_MARKER)
#: An explicitly stored JSON ``null``.
JSON_NULL_LITERAL = literal(storage.JSON_MARKER + "null")


def _indent(part: Part, prefix: str) -> Part:
    """Indent every line of an (engine-authored) multi-line fragment after its first.

    A copy made with an explicit stack, not recursion: a UNION after a UNION nests the first
    one's CALL inside the second's, so fragments nest as deep as the command repeats that."""
    if not isinstance(part, Fragment):
        return part.replace("\n", "\n" + prefix) if isinstance(part, str) else part
    root = Fragment()
    stack = [(part, root)]
    while stack:
        source, target = stack.pop()
        for sub in source.parts:
            if isinstance(sub, Fragment):
                copy = Fragment()
                target.parts.append(copy)
                stack.append((sub, copy))
            else:
                target.parts.append(sub.replace("\n", "\n" + prefix) if isinstance(sub, str) else sub)
    return root


def indent_lines(lines: Iterable[Fragment], prefix: str = INDENT) -> list[Fragment]:
    return [frag(prefix, _indent(line, prefix)) for line in lines]


def block(head: Part, lines: list[Fragment], tail: str = "}") -> Fragment:
    """``head {`` + indented lines + ``}`` as one multi-line fragment (one line if the body is one line)."""
    if len(lines) == 1:
        return frag(head, " ", lines[0], " ", tail)
    body = join("\n", indent_lines(lines))
    return frag(head, "\n", body, "\n", tail)


def _variables(part: Any, out: list) -> list:
    """Every Cypher variable (``Var``/``Internal``) appearing in a fragment, in order (an explicit
    stack: fragments nest as deep as the command's blocks, see ``_indent``)."""
    stack = [part]
    while stack:
        item = stack.pop()
        if isinstance(item, (Var, Internal)):
            if item not in out:
                out.append(item)
        elif isinstance(item, Fragment):
            stack.extend(reversed(item.parts))
    return out


def call_head(keyword: str, body: list[Fragment], scope: Mapping[str, Binding]) -> str | Fragment:
    """``CALL (a, _r0) {`` importing exactly the outer variables the body uses.

    Explicit imports rather than ``CALL (*)``: inside an ``EXISTS { … }`` Neo4j 5.26 does not
    import the enclosing query's variables with ``*``."""
    outer: list = []
    for binding in scope.values():
        _variables(binding.ref, outer)
    used = _variables(Fragment(list(body)), [])
    imports = [v for v in outer if v in used]
    if not imports:
        return keyword + " () {"
    return frag(keyword, " (", join(", ", imports), ") {")


class _Clause:
    """One emitted clause; a mandatory MATCH can still take WHERE conditions."""

    def __init__(self, head: Fragment, kind: str, where: list[Fragment] | None = None) -> None:
        self.head = head
        self.kind = kind  # "match" | "optional" | "call" | "with"
        self.where: list[Fragment] = list(where or [])

    def render(self) -> list[Fragment]:
        lines = [self.head]
        if self.where:
            lines.append(frag("WHERE ", join("\n  AND ", self.where)))
        return lines


@dataclass
class Pattern:
    """A lowered WHERE: Cypher lines plus the visible variables."""

    lines: list[Fragment]
    bindings: dict[str, Binding]
    grounding: Grounding
    lowerer: Lowerer
    #: Set by ``distinct``: whether it appended a ``WITH`` (ORDER BY may follow directly),
    #: and whether it could leave the DISTINCT out.
    projected: bool = False
    elided: bool = False

    # ---------------------------------------------------------------- variables
    @property
    def ctx(self) -> LoweringContext:
        """The lowering's shared state: names, grounding, notes, keys read."""
        return self.lowerer.ctx

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
        return self.lowerer.raw_value(expr, self.bindings, used_in)

    def condition(self, expr: ast.BoolExpr, *, used_in: str = "FILTER") -> Fragment:
        """A FILTER expression over the visible variables, never null."""
        return self.lowerer.condition(expr, self.bindings, used_in)

    # ---------------------------------------------------------------- clauses
    def distinct(self, names: Iterable[str], *, used_in: str = "FIND") -> None:
        """Append ``WITH DISTINCT …`` keeping only ``names`` (their identities): one row per
        distinct solution over those variables. Predicate variables are materialized as strings.

        In a lean pattern (``lower_where(…, used=…)``) the DISTINCT is left out when the
        pattern provably yields one row per distinct solution over ``names`` (``Keys``):
        then nothing is appended when every kept variable is a plain Cypher variable
        (``self.projected`` stays False), else a plain ``WITH`` materializes predicates."""
        names = list(dict.fromkeys(names))
        items = []
        kept: dict[str, Binding] = {}
        for name in names:
            binding = self.require(name, used_in=used_in)
            var = Var(name)
            if binding.is_variable and binding.ref == var:
                items.append(var)
            else:
                items.append(frag(binding.ref, " AS ", var))
            kept[name] = Binding(name, binding.kind, var, binding.nullable, True, binding.adopted)
        if not items:
            # Nothing projected: keep one row per solution existence.
            self.lines.append(frag("WITH DISTINCT true AS ", Internal("any")))
            self.projected = True
        elif self.ctx.lean and self.ctx.keys.unique(node_key(n) for n in names):
            self.elided = True
            if all(isinstance(item, Var) for item in items):
                self.projected = False
            else:
                self.lines.append(frag("WITH ", join(", ", items)))
                self.projected = True
        else:
            self.lines.append(frag("WITH DISTINCT ", join(", ", items)))
            self.projected = True
        self.bindings = kept

    def statement(self) -> Statement:
        stmt = Statement()
        for line in self.lines:
            stmt.line(line)
        return stmt


def is_path(clause: Any) -> bool:
    """A proposition clause whose predicate has a quantifier ``{m,n}``."""
    return isinstance(clause, ast.PropositionClause) and isinstance(clause.predicate, ast.PredicatePattern) and clause.predicate.quantifier is not None


def _bound_path() -> KipError:
    return KipError(
        INVALID_SYNTAX,
        'A path clause ("p"{m,n}) matches a chain of links, so it cannot be bound to a variable or used as a nested proposition.',
        "Drop the ?link variable, or match a single hop without the quantifier.",
    )


_TYPE_ROLE = "a concept type is checked against the schema and may become a node label"


def _nested_adopted(offset: int | None = None) -> KipError:
    return adopted_cy.unsupported("An adopted proposition as the subject or object of another proposition", offset)


def _types(predicate: ast.PredicatePattern, names: storage.Names) -> Fragment:
    """``a|b``: the native relationship types of a predicate pattern, quoted."""
    return join("|", [Ident(names.rel(name)) for name in predicate.names])


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

    - a subject/object variable of a reified proposition clause that occurs nowhere else
      (not in the WHERE, not in ``used``) is not expanded: every proposition node has
      exactly one subject and one object, so the expansion cannot change the rows;
    - ``Pattern.distinct`` leaves the DISTINCT out when the rows are provably distinct
      already (see ``Keys``).
    """
    items = tuple(where)
    check_size(items)
    lean = used is not None
    dont_care: frozenset[str] = frozenset()
    if lean:
        counts: dict[str, int] = {}
        for item in items:
            _count_vars(item, counts)
        outside = set(used or ())
        dont_care = frozenset(n for n, c in counts.items() if c == 1 and n not in outside)
    ctx = LoweringContext(parameters, settings, lean=lean, dont_care=dont_care)
    ctx.regex_budget = settings.max_regex_steps / max(1, regex_calls(items))  # all its REGEX share one budget per row
    lowerer = Lowerer(ctx)
    lines, bindings = lowerer.group(items, {}, required=True, top=True)
    return Pattern(lines, bindings, ctx.grounding, lowerer)


# ----------------------------------------------------------------------------- lowering
def _var_mentions(item: Any) -> Iterator[str]:
    """Every mention of a variable name in an item (nested blocks and expressions included)."""
    if isinstance(item, ast.Var):
        yield item.name
    elif isinstance(item, ast.DotPath):
        yield item.var
    elif isinstance(item, (ast.ConceptClause, ast.PropositionClause)):
        if item.var:
            yield item.var
        if isinstance(item, ast.PropositionClause):
            for part in (item.subject, item.predicate, item.object):
                if part is not None:
                    yield from _var_mentions(part)
    elif isinstance(item, ast.Filter):
        yield from _var_mentions(item.expr)
    elif isinstance(item, (ast.NotBlock, ast.OptionalBlock, ast.UnionBlock)):
        for sub in item.items:
            yield from _var_mentions(sub)
    elif isinstance(item, (ast.Comparison, ast.BoolOp)):
        yield from _var_mentions(item.left)
        yield from _var_mentions(item.right)
    elif isinstance(item, ast.NotExpr):
        yield from _var_mentions(item.operand)
    elif isinstance(item, ast.FuncCall):
        for arg in item.args:
            yield from _var_mentions(arg)


def _where_vars(item: Any, out: set[str]) -> set[str]:
    """Every variable name mentioned anywhere in an item (including nested blocks)."""
    out.update(_var_mentions(item))
    return out


def _count_vars(item: Any, counts: dict[str, int]) -> None:
    """How often each variable name is written anywhere in an item (nested blocks included)."""
    for name in _var_mentions(item):
        counts[name] = counts.get(name, 0) + 1


def _bound_by(item: Any, out: set[str]) -> set[str]:
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
                _bound_by(part, out)
    elif isinstance(item, (ast.OptionalBlock, ast.UnionBlock)):
        for sub in item.items:
            _bound_by(sub, out)
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


_CMP = {"==": " = ", "!=": " <> ", "<": " < ", ">": " > ", "<=": " <= ", ">=": " >= "}
_FLIP = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
_STRING_FUNCS = {"CONTAINS": " CONTAINS ", "STARTS_WITH": " STARTS WITH ", "ENDS_WITH": " ENDS WITH "}


class Lowerer:
    """Lowers the groups of one WHERE over its ``LoweringContext``."""

    def __init__(self, ctx: LoweringContext) -> None:
        self.ctx = ctx

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
                elif binding.is_variable and binding.ref == Var(name):
                    cols.append(Var(name))
                else:
                    cols.append(frag(binding.ref, " AS ", Var(name)))
            if not cols:
                return frag("RETURN true AS ", self.ctx.fresh("u"))
            return frag("RETURN ", join(", ", cols))

        if not columns:
            # Nothing new in any branch: a union is then just an existence test of either branch.
            cond = frag("(", join(" OR ", [block("EXISTS {", branch_lines) for branch_lines, _ in branches]), ")")
            return [frag("WITH * WHERE ", cond) if scope else frag("WITH true AS ", self.ctx.fresh("u"), " WHERE ", cond)], merged
        body = [line for index, (branch_lines, bound) in enumerate(branches) for line in ([frag("UNION")] if index else []) + [*branch_lines, returning(bound)]]
        # UNION removes duplicate rows: per outer row, the columns determine the CALL's row.
        self.ctx.keys.rule([self.ctx.keys.add(node_key(c)) for c in columns], [self.ctx.keys.add(self.ctx.keys.anonymous())])
        return [block(call_head("CALL", body, scope), body)], merged

    def sequence(
        self, items: tuple, scope: dict[str, Binding], *, required: bool, avoid: frozenset[str] = frozenset()
    ) -> tuple[list[Fragment], dict[str, Binding]]:
        """A UNION-free list of items: patterns and OPTIONALs in order, FILTER/NOT group-level."""
        scope = dict(scope)
        will_bind: set[str] = set(scope)
        for item in items:
            _bound_by(item, will_bind)
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
        clauses: list[_Clause] = []
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
            if clauses and clauses[-1].kind == "match":
                clauses[-1].where.extend(ready_conds)
            elif clauses:
                clauses.append(_Clause(frag("WITH *"), "with", list(ready_conds)))
            else:
                pre_conds.extend(ready_conds)
            ready_conds.clear()

        pre_conds: list[Fragment] = []
        collect()
        for item in items:
            if isinstance(item, (ast.Filter, ast.NotBlock)):
                continue
            if isinstance(item, (ast.ConceptClause, ast.PropositionClause)):
                parts, conds, after = self.pattern_clause(item, scope, required=required, avoid=avoid)
                if parts:
                    clauses.append(_Clause(frag("MATCH ", join(", ", parts)), "match", conds))
                clauses.extend(_Clause(line, "call") for line in after)
            elif isinstance(item, ast.OptionalBlock):
                # Conditions ready before a left join are applied before it.
                attach()
                optional = self.optional(item, scope, avoid)
                if optional is not None:
                    clauses.append(optional)
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
                lines.append(frag("WITH * WHERE ", join(" AND ", pre_conds)))
            else:
                raise KipError(
                    INVALID_SYNTAX, "A block of only FILTERs has nothing to filter.", "Add a pattern clause that binds the variables the FILTER tests."
                )
        for clause in clauses:
            lines.extend(clause.render())
        return lines, scope

    # ------------------------------------------------------------------ blocks
    def filter_or_not(self, item: Any, scope: dict[str, Binding], avoid: frozenset[str]) -> Fragment:
        if isinstance(item, ast.Filter):
            return self.condition(item.expr, scope, "FILTER")
        return self.not_block(item, scope, avoid)

    def not_block(self, item: ast.NotBlock, scope: dict[str, Binding], avoid: frozenset[str]) -> Fragment:
        only_filters = all(isinstance(sub, ast.Filter) for sub in item.items)
        if only_filters:
            # NOT { … } is pattern negation: it keeps the row unless the block *matches*, and a
            # FILTER that is unknown (a missing value) does not match — hence coalesce(…, false).
            conds = [self.condition(sub.expr, scope, "FILTER") for sub in item.items]
            return frag("NOT coalesce(", join(" AND ", conds), ", false)")
        with self.ctx.nested():
            lines, _ = self.group(item.items, scope, required=False, avoid=avoid)
        return block("NOT EXISTS {", lines)

    def optional(self, item: ast.OptionalBlock, scope: dict[str, Binding], avoid: frozenset[str]) -> _Clause | None:
        patterns = [sub for sub in item.items if isinstance(sub, (ast.ConceptClause, ast.PropositionClause))]
        filters = [sub for sub in item.items if isinstance(sub, ast.Filter)]
        if len(patterns) == 1 and len(patterns) + len(filters) == len(item.items) and not is_path(patterns[0]):
            inner = dict(scope)
            with self.ctx.nested() as keys:
                parts, conds, _ = self.pattern_clause(patterns[0], inner, required=False, avoid=avoid)
            for sub in filters:
                needs = _where_vars(sub.expr, set())
                missing = sorted(needs - set(inner))
                if missing:
                    raise unbound(missing[0], "FILTER", sub.span.start)
                # the WHERE of an OPTIONAL MATCH: null fails the match like false does
                conds.append(self.condition(sub.expr, inner, "FILTER"))
            new = {n: b for n, b in inner.items() if n not in scope}
            if not new:
                return None  # binds nothing new: a left join that cannot change the solutions
            # At most one match per outer row when the keys determine it; none gives one null row.
            self.ctx.keys.merge(keys)
            for name, binding in new.items():
                binding.nullable = True
                scope[name] = binding
            return _Clause(frag("OPTIONAL MATCH ", join(", ", parts)), "optional", conds)
        outer = dict(scope)
        with self.ctx.nested():
            lines, inner = self.group(item.items, scope, required=False, avoid=avoid)
        new = {n: b for n, b in inner.items() if n not in scope and n not in avoid}
        if not new:
            return None
        self.ctx.keys.add(self.ctx.keys.anonymous())  # any number of body rows per outer row: not modelled
        cols = []
        for name, binding in new.items():
            var = Var(name)
            cols.append(var if (binding.is_variable and binding.ref == var) else frag(binding.ref, " AS ", var))
            scope[name] = Binding(name, binding.kind, var, True, adopted=binding.adopted)
        body = [*lines, frag("RETURN ", join(", ", cols))]
        return _Clause(block(call_head("OPTIONAL CALL", body, outer), body), "optional")

    # ------------------------------------------------------------------ pattern clauses
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
            if isinstance(binding.adopted, adopt.AdoptedPredicate) and kind != PROPOSITION:
                raise _nested_adopted()
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
        if is_path(clause):
            return parts, conds, [self.path(clause, scope, parts, conds, required=required, avoid=avoid)]
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
        adopted: adopt.AdoptedType | None = None,
    ) -> tuple[Fragment, str]:
        """The node pattern of a concept clause and its Keys element (``ref``: the Cypher
        variable to give an anonymous clause, when the caller must refer to the node;
        ``adopted``: the type an untyped clause has where an adopted predicate expects it)."""
        chosen = self.adopted_type(clause, adopted)
        if chosen is not None:
            return self.adopted_node(clause, chosen, scope, required=required, avoid=avoid, ref=ref)
        if self.ctx.adoption is not None and clause.type is None and clause.id is None:
            self.ctx.notes.append(
                "A concept clause without a type matches memory concepts only: give the type (e.g. "
                f"{{type: {self.ctx.adoption.types[0].name!r}, …}}) to read adopted concepts (docs/adopt.md).".replace("'", '"')
            )
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
        type_name = self.ctx.string_of(clause.type, "A concept `type`", _TYPE_ROLE) if clause.type is not None else None
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

    # ------------------------------------------------------------------ adopted (docs/adopt.md)
    def adopted_type(self, clause: ast.ConceptClause, default: adopt.AdoptedType | None) -> adopt.AdoptedType | None:
        """The adopted type a concept clause reads: the one it names (by ``type`` or by an
        ``A:<Type>:…`` id), else ``default``; None for a memory concept clause."""
        if self.ctx.adoption is None:
            return None
        if clause.type is not None:
            return self.ctx.adoption.type(self.ctx.string_of(clause.type, "A concept `type`", _TYPE_ROLE))
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

    def memory_link(self, rel: Part) -> Fragment:
        """``rel``, a relationship matched without a type (a predicate variable), is the native
        relationship of one of the namespace's memory propositions: its type is in the namespace's
        label space (``kip:…`` / ``kip.<ns>:…``, docs/storage-model.md, "Label space"). Every
        other relationship — the team's own, KIP's structural ``KIP_SUBJECT`` / ``KIP_OBJECT``,
        another namespace's — fails it. A relationship's type is read with the relationship
        itself: no property read (the ``kip_id`` test of layout 1 was one db hit per row)."""
        return frag("type(", rel, ") STARTS WITH ", literal(self.ctx.names.predicate_prefix))

    def adopted_by_endpoints(self, clause: ast.PropositionClause, scope: dict[str, Binding]) -> list[adopt.AdoptedPredicate] | None:
        """For ``(s, ?p, o)``: when ``s`` or ``o`` is an adopted concept (a clause of an adopted
        type, or a variable bound to one before this clause), the adopted predicates that can
        link them — memory propositions never touch adopted concepts, so these are all ``?p``
        can be. None when neither endpoint is adopted."""
        s, o = self.adopted_endpoint(clause.subject, scope), self.adopted_endpoint(clause.object, scope)
        if s is None and o is None:
            return None
        return [p for p in self.ctx.adoption.predicates if (s is None or p.subject == s.name) and (o is None or p.object == o.name)]

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

    def kip_element(self, ref: Part) -> Fragment:
        """``ref`` is a memory concept or proposition of the namespace (a label test)."""
        return frag("(", ref, ":", self.ctx.names.concept, " OR ", ref, ":", self.ctx.names.proposition, ")")

    def whole(self, node: Part, subject: bool, obj: bool) -> list[Fragment]:
        """With link_memory the team may delete an adopted node a memory proposition points at
        (``DETACH DELETE`` removes KIP's relationships with it): such a proposition has lost an
        endpoint and is not read. The tests for the endpoint relationships a pattern does not
        already expand (``subject`` / ``obj``: test that one)."""
        rels = [rel for rel, test in ((self.ctx.names.subject_rel, subject), (self.ctx.names.object_rel, obj)) if test]
        return [frag("EXISTS { (", node, ")-[:", rel, "]->() }") for rel in rels]

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
        """A subject/object → (node pattern, Keys element); (None, None) for a variable of a
        reified clause that nothing else reads (lean): the node need not be expanded to."""
        if isinstance(endpoint, ast.Var):
            if reified and endpoint.name in self.ctx.dont_care and endpoint.name not in scope:
                return None, None
            if adopted is not None:
                ref = self.adopt_var(endpoint.name, ELEMENT, adopted, scope, avoid)
                return adopted_cy.node(ref, adopted), self.ctx.keys.add(node_key(endpoint.name))
            ref, bound = self.bind_node(endpoint.name, ELEMENT, scope, avoid)
            if not bound and self.ctx.link_memory:
                conds.append(self.memory_end(endpoint.name, ref))
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
            by_id = self.adopted_link_by_id(clause, link_id, scope, parts, conds, avoid)
            if by_id is not None:
                if need_node and clause.var is None:
                    raise _nested_adopted(clause.span.start)
                return by_id
            held = node if node is not None or not self.ctx.link_memory else self.ctx.fresh("p")
            parts.append(frag("(", held if held is not None else "", ":", self.ctx.names.proposition, " {id: ", self.ctx.param(link_id), "})"))
            if self.ctx.link_memory:
                conds.extend(self.whole(held, True, True))
            keys.add(key or keys.anonymous(), seed=True)
            return node, key
        predicate = self.named(clause.predicate)
        if is_path(clause):
            raise _bound_path()
        adopted = self.adopted_predicate(predicate, clause.span.start)
        if adopted is not None:
            if need_node and clause.var is None:
                raise _nested_adopted(clause.span.start)
            return self.adopted_link(clause, adopted, predicate, scope, parts, required=required, avoid=avoid)
        alternatives = self.adopted_alternatives(predicate)
        if alternatives is not None:
            if need_node:
                raise adopted_cy.unsupported('A ?link variable or a nested clause with an alternative of adopted predicates ("a" | "b")', clause.span.start)
            self.ground_predicates(predicate, clause.predicate, required)
            return self.adopted_variable_link(clause, alternatives, None, scope, parts, conds, required=required, avoid=avoid)
        if isinstance(predicate, ast.Var) and self.ctx.adoption is not None and self.ctx.adoption.predicates:
            candidates = self.adopted_by_endpoints(clause, scope)
            if candidates is None:
                self.ctx.notes.append(
                    f"?{predicate.name} ranges over memory predicates only: the adopted predicates ({', '.join(p.name for p in self.ctx.adoption.predicates)}) "
                    "are read only when the clause names one, or when its subject or object is bound before it to an adopted type (docs/adopt.md)."
                )
            else:
                memory = False
                if self.ctx.link_memory:
                    candidates, memory = self.linked_candidates(clause, candidates, predicate, scope)
                if candidates is not None:
                    if need_node and clause.var is None:
                        raise _nested_adopted(clause.span.start)
                    return self.adopted_variable_link(clause, candidates, predicate, scope, parts, conds, required=required, avoid=avoid, memory=memory)
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
            if self.ctx.link_memory:
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
        parts.append(frag(subject, "-[:", _types(predicate, self.ctx.names), "]->", obj))
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

    # ------------------------------------------------------------------ paths
    def path(
        self, clause: ast.PropositionClause, scope: dict[str, Binding], parts: list[Fragment], conds: list[Fragment], *, required: bool, avoid: frozenset[str]
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
            raise _bound_path()
        predicate = self.named(clause.predicate)
        self.ground_predicates(predicate, clause.predicate, required)
        low, high = self.hops(predicate.quantifier)
        walked = self.walked_type(predicate, clause.span.start)
        s_ref, s_bound = self.path_end(clause.subject, scope, parts, conds, required=required, avoid=avoid, adopted=walked)
        o_ref, o_bound = self.path_end(clause.object, scope, parts, conds, required=required, avoid=avoid, adopted=walked)
        self.ctx.keys.add(self.ctx.keys.anonymous())  # a path element: nothing determines it, so DISTINCT stays
        types = frag(Ident(self.ctx.adoption.predicate(predicate.names[0]).rel_type)) if walked is not None else _types(predicate, self.ctx.names)

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
            if self.ctx.link_memory and walked is None and isinstance(e, ast.Var) and not bound
        ]
        if not s_bound and not o_bound and walked is not None:
            parts.append(adopted_cy.node(s_ref, walked))  # every node of the adopted type may begin a walk
            s_bound = True
        if not s_bound and not o_bound:
            # Neither end known: start from every node that can begin such a walk.
            parts.append(frag("(", s_ref, ")"))
            if low == 0 or walked is None and not self.ctx.link_memory:
                # a walk of memory relationships begins at a KIP element: a label scan of KIP's
                # nodes, not of all the team's (with link_memory ``memory_end`` below says the same)
                conds.append(self.kip_element(s_ref))
            if low > 0:
                conds.append(frag("EXISTS { (", s_ref, ")-[", hop(), "]->() }"))
            s_bound = True
        if o_ref == s_ref:  # (?x, "p"{m,n}, ?x): the end is the start, bound with it
            s_bound = o_bound = True
        forward = s_bound
        start, end, end_bound = (s_ref, o_ref, o_bound) if forward else (o_ref, s_ref, s_bound)
        walked_to = [self.memory_end(name, ref) for name, ref in dict(free_ends).items() if ref == end and not end_bound]
        conds.extend(self.memory_end(name, ref) for name, ref in dict(free_ends).items() if not (ref == end and not end_bound))
        arrows = ("-[", "]->") if forward else ("<-[", "]-")
        body: list[Fragment] = []
        current: Part = start
        carry = [end] if end_bound and end != start else []
        layers = low if low >= 2 else 0  # ANY SHORTEST alone is exact for a minimum of 0 or 1
        for _ in range(layers):
            nxt = self.ctx.fresh("x")
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
            body.append(frag("RETURN true AS ", self.ctx.fresh("reached"), " LIMIT 1"))
        else:
            body.append(frag("RETURN DISTINCT ", end))
        imports = [start, end] if end_bound and end != start else [start]
        return block(frag("CALL (", join(", ", imports), ") {"), body)

    def walked_type(self, predicate: ast.PredicatePattern, at: int) -> adopt.AdoptedType | None:
        """The adopted type a path over an adopted predicate walks through (None: a memory path).
        Only a predicate from a type to itself chains (reports_to: Employee → Employee)."""
        p = self.adopted_predicate(predicate, at)
        if p is None:
            return None
        if p.subject != p.object:
            raise adopted_cy.unsupported(f"A path over {p.name!r}, which links {p.subject} to {p.object} (its links cannot chain),", at)
        return self.ctx.adoption.type(p.subject)

    def path_end(
        self,
        endpoint: ast.Endpoint,
        scope: dict[str, Binding],
        parts: list[Fragment],
        conds: list[Fragment],
        *,
        required: bool,
        avoid: frozenset[str],
        adopted: adopt.AdoptedType | None = None,
    ) -> tuple[Part, bool]:
        """A path's subject or object → (its Cypher variable, whether it is bound before the walk)."""
        if isinstance(endpoint, ast.Var):
            bound = endpoint.name in scope
            if adopted is not None:
                ref = self.adopt_var(endpoint.name, ELEMENT, adopted, scope, avoid)
            else:
                ref, _ = self.bind_node(endpoint.name, ELEMENT, scope, avoid)
            self.ctx.keys.add(node_key(endpoint.name))
            return ref, bound
        if isinstance(endpoint, ast.ConceptClause):
            ref = None if endpoint.var is not None else self.ctx.fresh("n")
            node, _ = self.concept_node(endpoint, scope, required=required, avoid=avoid, ref=ref, adopted=adopted)
            parts.append(node)
            return (scope[endpoint.var].ref if endpoint.var is not None else ref), True
        if adopted is not None:
            raise _nested_adopted(endpoint.span.start)
        node, _ = self.proposition(endpoint, scope, parts, conds, need_node=True, required=required, avoid=avoid)
        return node, True

    def hops(self, quantifier: ast.Quantifier) -> tuple[int, int | None]:
        """(m, n) of ``{m,n}`` (n None: open). The minimum costs one clause per step, so it is
        bounded by ``Settings.max_hops``; the maximum is not (a breadth-first search)."""
        low = int(quantifier.min)
        high = None if quantifier.max is None else int(quantifier.max)
        if high is not None and low > high:
            raise KipError(
                INVALID_SYNTAX, f"The path quantifier {{{low},{high}}} has min > max.", "Write {min,max} with min ≤ max.", offset=quantifier.span.start
            )
        if high is not None and high > storage.INT64_MAX:  # the bound is Cypher text: Neo4j parses it as a 64-bit integer
            raise KipError(
                INVALID_SYNTAX,
                f"The path quantifier's maximum {high} is above {storage.INT64_MAX}, the largest hop count there is.",
                f"Leave the maximum open ({{{low},}}) or write a smaller one.",
                offset=quantifier.span.start,
            )
        cap = self.ctx.settings.max_hops
        if low > cap:
            raise KipError(
                RESOURCE_EXHAUSTED,
                f"The path quantifier asks for at least {low} hops; this engine expands at most {cap} mandatory hops (setting max_hops, KIP2CYPHER_MAX_HOPS).",
                f"Use a minimum of at most {cap} hops (the maximum may be larger or open: {{1,}}), or raise KIP2CYPHER_MAX_HOPS.",
            )
        return low, high

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

    # ------------------------------------------------------------------ expressions
    def raw_value(self, expr: ast.Var | ast.DotPath, scope: Mapping[str, Binding], used_in: str) -> Fragment:
        if isinstance(expr, ast.Var):
            return frag(self.ctx.lookup(expr.name, scope, used_in).ref)
        binding = self.ctx.lookup(expr.var, scope, used_in)
        if binding.kind == PREDICATE:
            raise KipError(
                INVALID_SYNTAX,
                f"?{expr.var} binds a predicate name (a string); `?{expr.var}.{'.'.join(expr.path)}` has no meaning.",
                f"Use ?{expr.var} itself.",
            )
        if binding.adopted is not None:
            if expr.path[0] == "attributes" and len(expr.path) == 2 and binding.adopted.property_of(expr.path[1]) is None:
                self.ctx.unmapped.setdefault((expr.var, expr.path[1]), binding.adopted)  # always null: said in ``warnings``
            return adopted_cy.field(binding.ref, binding.adopted, expr.path, self.ctx.adoption)
        head = expr.path[0]
        if head in SCALAR_FIELDS:
            return frag(binding.ref, "." + head)
        prefix = MAP_FIELDS[head]
        if len(expr.path) == 1:
            return frag("properties(", binding.ref, ")")
        self.ctx.key_uses.setdefault((expr.var, prefix + expr.path[1]), expr.span.start)
        return frag(binding.ref, ".", Ident(prefix + expr.path[1]))

    def is_stored(self, expr: Any) -> bool:
        """True for ?x.attributes.k / ?x.metadata.k: values that may be stored as JSON text."""
        return isinstance(expr, ast.DotPath) and expr.path[0] in MAP_FIELDS and len(expr.path) == 2

    def is_null_literal(self, expr: Any) -> bool:
        return isinstance(expr, (ast.Literal, ast.Placeholder)) and self.ctx.value_of(expr) is None

    def needs_guard(self, op: str, other: Any) -> bool:
        """Whether a stored value compared by ``op`` with ``other`` must hide JSON text.

        Values Neo4j cannot hold (objects, mixed lists, an explicit null …) are stored as a
        string starting with U+001E. Compared with a number or boolean such a string is never
        equal and never ordered (Cypher yields false/null), and it sorts below every ordinary
        string, so ``=``, ``>`` and ``>=`` against a string literal are false too. Only the
        remaining cases need ``CASE WHEN v STARTS WITH <marker> THEN null ELSE v END``."""
        if not isinstance(other, (ast.Literal, ast.Placeholder)):
            return True
        value = self.ctx.value_of(other)
        if isinstance(value, Deferred):
            return True  # its type is known only at run time
        if value is None:
            return False  # a comparison with null is false whatever the stored value
        if op == "!=":
            return True
        if isinstance(value, (bool, int, float)):
            return False
        if isinstance(value, str):
            return op in ("<", "<=")
        return True

    def operand(self, expr: Any, scope: Mapping[str, Binding], used_in: str, guard: bool = True) -> Fragment:
        """A comparable value: JSON-text values (objects, explicit null …) compare as null."""
        if isinstance(expr, (ast.Literal, ast.ListLit, ast.Placeholder, ast.ObjectLit)):
            return frag(self.ctx.param(self.ctx.value_of(expr)))
        if isinstance(expr, ast.DotPath) and expr.path[0] in MAP_FIELDS and len(expr.path) == 1:
            raise KipError(
                INVALID_SYNTAX,
                f"?{expr.var}.{expr.path[0]} is a whole object; objects are not comparable in FILTER.",
                f"Test one key instead: ?{expr.var}.{expr.path[0]}.<key>.",
            )
        raw = self.raw_value(expr, scope, used_in)
        if guard and self.is_stored(expr):
            return frag("CASE WHEN ", raw, " STARTS WITH ", JSON_MARKER_LITERAL, " THEN null ELSE ", raw, " END")
        return raw

    def condition(self, expr: Any, scope: Mapping[str, Binding], used_in: str = "FILTER") -> Fragment:
        """A boolean FILTER expression, in KIP's three-valued logic (docs/kql.md, "Missing values").

        A comparison or function with a missing (null) operand is *unknown*; ``!`` of unknown is
        unknown, ``&&`` / ``||`` follow Kleene's tables, and a row is kept only when the FILTER
        is true — exactly Cypher's null semantics, so every test is emitted as is. Only
        ``IS_NULL`` / ``IS_NOT_NULL`` (and ``x == null`` / ``x != null``, read as them) are never
        unknown."""
        if isinstance(expr, ast.BoolOp):
            chain = self.bool_chain(expr, scope, used_in)
            # Conditions are AND-ed together by callers: an OR chain keeps its parentheses.
            return frag("(", chain, ")") if expr.op == "||" else chain
        if isinstance(expr, ast.NotExpr):
            inner = self.condition(expr.operand, scope, used_in)
            if isinstance(expr.operand, ast.BoolOp) and expr.operand.op == "||":
                return frag("NOT ", inner)  # already parenthesized
            return frag("NOT (", inner, ")")
        if isinstance(expr, ast.Comparison):
            kept = self.kept_operand(expr)
            if kept is not None:
                return self.kept_comparison(expr, kept, scope, used_in)
            # `x == null` / `x != null` read as JSON: a null test (IS_NULL / IS_NOT_NULL).
            # Any other comparison with null is false.
            for this, other in ((expr.left, expr.right), (expr.right, expr.left)):
                if self.is_null_literal(other):
                    if expr.op in ("==", "!="):
                        if self.is_null_literal(this):
                            return frag("true" if expr.op == "==" else "false")
                        call = ast.FuncCall("IS_NULL" if expr.op == "==" else "IS_NOT_NULL", (this,))
                        return self.function(call, scope, used_in)
                    return frag("null")  # an order comparison with null is unknown
            left = self.operand(expr.left, scope, used_in, guard=self.needs_guard(expr.op, expr.right))
            right = self.operand(expr.right, scope, used_in, guard=self.needs_guard(_FLIP[expr.op], expr.left))
            return adopted_values.checked(self, expr.op, (expr.left, expr.right), (left, right), frag(left, _CMP[expr.op], right), scope, used_in)
        if isinstance(expr, ast.FuncCall):
            return self.function(expr, scope, used_in)
        # A bare value used as a condition: true only when it is the boolean true.
        return frag(self.operand(expr, scope, used_in, guard=False), " = true")

    def kept_operand(self, expr: ast.Comparison) -> ast.Placeholder | None:
        """The placeholder of an ``==`` / ``!=`` operand kept for run time that may still be null."""
        if expr.op not in ("==", "!="):
            return None
        for side in (expr.right, expr.left):
            if isinstance(side, ast.Placeholder) and side.name not in self.ctx.non_null and isinstance(self.ctx.value_of(side), Deferred):
                return side
        return None

    def kept_comparison(self, expr: ast.Comparison, kept: ast.Placeholder, scope: Mapping[str, Binding], used_in: str) -> Fragment:
        """``x == :v`` with ``:v`` bound at run time: KIP reads ``x == null`` as a null test, so the
        statement decides when it runs — ``CASE WHEN $v IS NULL THEN <null test> ELSE x = $v END``
        (three-valued logic kept: the ELSE branch is the comparison as compiled with a value)."""
        this = expr.left if kept is expr.right else expr.right
        when_null = self.condition(replace(expr, left=this, right=ast.Literal(None, kept.span)), scope, used_in)
        outer, self.ctx.non_null = self.ctx.non_null, self.ctx.non_null | {kept.name}
        try:
            otherwise = self.condition(expr, scope, used_in)
        finally:
            self.ctx.non_null = outer
        return frag("CASE WHEN ", self.ctx.param(self.ctx.value_of(kept)), " IS NULL THEN ", when_null, " ELSE ", otherwise, " END")

    def bool_chain(self, expr: ast.BoolOp, scope: Mapping[str, Binding], used_in: str) -> Fragment:
        """``a && b && c`` → ``a AND b AND c``; parentheses only where && and || meet."""
        operands: list[Any] = []

        def flatten(node: Any) -> None:
            if isinstance(node, ast.BoolOp) and node.op == expr.op:
                flatten(node.left)
                flatten(node.right)
            else:
                operands.append(node)

        flatten(expr)
        parts = []
        for operand in operands:
            if isinstance(operand, ast.BoolOp):
                parts.append(frag("(", self.bool_chain(operand, scope, used_in), ")"))
            else:
                parts.append(self.condition(operand, scope, used_in))
        return join(" AND " if expr.op == "&&" else " OR ", parts)

    def function(self, call: ast.FuncCall, scope: Mapping[str, Binding], used_in: str) -> Fragment:
        name, args = call.name, call.args
        if name in ("IS_NULL", "IS_NOT_NULL"):
            arg = args[0]
            if isinstance(arg, ast.DotPath) and arg.path[0] in MAP_FIELDS and len(arg.path) == 1:
                raw = frag(self.ctx.lookup(arg.var, scope, used_in).ref)  # the whole object exists iff the element does
            elif isinstance(arg, (ast.Var, ast.DotPath)):
                raw = self.raw_value(arg, scope, used_in)
            else:
                raw = frag(self.ctx.param(self.ctx.value_of(arg)))
            if self.is_stored(arg):
                test = frag("(", raw, " IS NULL OR ", raw, " = ", JSON_NULL_LITERAL, ")")
            else:
                test = frag(raw, " IS NULL")
            return test if name == "IS_NULL" else frag("NOT ", test)
        if name == "IN":
            literal_list = isinstance(args[1], (ast.ListLit, ast.Placeholder, ast.Literal))
            if literal_list and not isinstance(self.ctx.value_of(args[1]), (list, Deferred)):
                raise KipError(
                    INVALID_SYNTAX,
                    f"IN needs a list as its second argument, got {describe(self.ctx.value_of(args[1]))}.",
                    'Write IN(?x, ["a", "b"]) or bind the placeholder to an array.',
                )
            value, items = self.operand(args[0], scope, used_in, guard=not literal_list), self.operand(args[1], scope, used_in)
            return adopted_values.checked(self, "IN", args, (value, items), frag(value, " IN ", items), scope, used_in)
        if name in _STRING_FUNCS:
            text, other = self.operand(args[0], scope, used_in), self.operand(args[1], scope, used_in)
            return adopted_values.checked(self, name, args, (text, other), frag(text, _STRING_FUNCS[name], other), scope, used_in)
        if name == "REGEX":
            return adopted_values.checked(self, name, args, (frag("null"), frag("null")), self.regex(args, scope, used_in), scope, used_in)
        raise KipError(INVALID_SYNTAX, f"Unknown FILTER function {name}.", "Use IN, IS_NULL, IS_NOT_NULL, CONTAINS, STARTS_WITH, ENDS_WITH or REGEX.")

    def regex(self, args: tuple[Any, ...], scope: Mapping[str, Binding], used_in: str) -> Fragment:
        """``v =~ <search pattern>``, guarded by the pattern's reach (``regex_guard``): a longer
        string makes Neo4j report the refusal pattern (KIP_4001) instead of searching it."""
        if not isinstance(args[1], (ast.Literal, ast.Placeholder)):
            raise KipError(
                INVALID_SYNTAX,
                "REGEX needs its pattern as a string literal or a placeholder; a pattern read from the graph cannot be checked before it runs.",
                'Write REGEX(?x, "pattern") or REGEX(?x, :pattern); to compare two values use ==, CONTAINS, STARTS_WITH or ENDS_WITH.',
            )
        pattern = resolve(args[1], self.ctx.parameters, role="a REGEX pattern is checked (syntax, cost) before it runs")
        if not isinstance(pattern, str):
            raise KipError(INVALID_SYNTAX, f"REGEX needs a string pattern, got {describe(pattern)}.", 'Write REGEX(?x, "pattern").')
        search = compile_search(pattern, self.ctx.regex_budget)
        subject = self.operand(args[0], scope, used_in)
        return frag(
            subject,
            " =~ CASE WHEN size(toStringOrNull(",
            subject,
            ")) > ",
            Param(search.reach),
            " THEN ",
            Param(search.refusal()),
            " ELSE ",
            Param(search.pattern),
            " END",
        )

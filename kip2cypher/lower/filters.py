"""FILTER expressions → Cypher conditions, in KIP's three-valued logic (docs/kql.md, "FILTER values").

``Filters`` lowers the expressions of FILTER (and the values FIND, ORDER BY and the KML
statements read) over the variables a WHERE binds: comparisons, ``&&`` / ``||`` / ``!``,
``IN``, the text functions and REGEX (priced by ``regex_guard``). Values Neo4j cannot hold are
stored as JSON text (docs/storage-model.md) and are hidden where they could change an outcome;
properties of adopted elements are checked when they run (``adopted_values``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Param, frag, join, literal
from ..errors import INVALID_SYNTAX, KipError
from ..syntax import ast
from ..syntax.regex_guard import compile_search
from ..syntax.values import Deferred, describe, resolve
from . import adopted as adopted_cy
from . import adopted_values
from .context import CONCEPT, ELEMENT, PREDICATE, PROPOSITION, Binding, LoweringContext

SCALAR_FIELDS = ("id", "type", "name", "subject", "predicate", "object")
#: The dot-path fields of each kind of element (§3.2); the other kind's fields never have a value.
FIELDS = {
    CONCEPT: ("id", "type", "name", "attributes", "metadata"),
    PROPOSITION: ("id", "subject", "predicate", "object", "attributes", "metadata"),
}
#: The fields only one kind has: on an endpoint variable that may bind either, null for the other (A5).
KIND_FIELDS = frozenset(FIELDS[CONCEPT]).symmetric_difference(FIELDS[PROPOSITION])


def kind_without(field: str) -> str:
    """The kind of element that lacks ``field``, one of ``KIND_FIELDS`` (docs/interop.md A5)."""
    return PROPOSITION if field in FIELDS[CONCEPT] else CONCEPT


def lacking_kind(binding: Binding, field: str) -> str | None:
    """docs/interop.md A5: the kind whose elements lack ``field`` when ``binding`` is an endpoint
    variable of memory that may bind either kind (there the value is null for that kind); else None."""
    if binding.kind != ELEMENT or binding.adopted is not None or field not in KIND_FIELDS:
        return None
    return kind_without(field)


MAP_FIELDS = {"attributes": storage.ATTR_PREFIX, "metadata": storage.META_PREFIX}

#: Stored values that are JSON text (objects, mixed lists, explicit null …) start with this.
JSON_MARKER_LITERAL = literal(storage.JSON_MARKER)
#: An explicitly stored JSON ``null``.
JSON_NULL_LITERAL = literal(storage.JSON_MARKER + "null")

_CMP = {"==": " = ", "!=": " <> ", "<": " < ", ">": " > ", "<=": " <= ", ">=": " >= "}
_FLIP = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
_STRING_FUNCS = {"CONTAINS": " CONTAINS ", "STARTS_WITH": " STARTS WITH ", "ENDS_WITH": " ENDS WITH "}


class Filters:
    """The FILTER-expression lowering of one WHERE (its context: parameters, notes, keys read)."""

    def __init__(self, ctx: LoweringContext) -> None:
        self.ctx = ctx

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
        fields = FIELDS.get(binding.kind)
        if fields is not None and expr.path[0] not in fields:
            # docs/interop.md A5: known at compile time, it could only ever be null (the reference refuses it too).
            raise KipError(
                INVALID_SYNTAX,
                f"?{expr.var} binds {'proposition links' if binding.kind == PROPOSITION else 'concept nodes'}, which have no"
                f" `{expr.path[0]}`: `?{expr.var}.{'.'.join(expr.path)}` can never have a value.",
                f"A {binding.kind} has "
                + ", ".join(f"?{expr.var}.{name}" for name in fields[:-2])
                + f", ?{expr.var}.attributes.<key> and ?{expr.var}.metadata.<key>.",
                offset=expr.span.start,
            )
        if lacking_kind(binding, expr.path[0]) is not None:
            self.ctx.other_kind_reads.setdefault((expr.var, expr.path[0]), {})[used_in] = None  # docs/interop.md A5: ``surprises.other_kind``
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

    def note_number(self, path: Any, other: Any) -> None:
        """docs/interop.md A3: a stored value compared with a number (or IN a list holding one) —
        text that reads as a number never matches it here, so an empty answer checks for such
        text (``lower.grounding.key_check``)."""
        if not self.is_stored(path) or not isinstance(other, (ast.Literal, ast.Placeholder, ast.ListLit)):
            return
        value = self.ctx.value_of(other)
        number = next((v for v in (value if isinstance(value, list) else [value]) if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
        if number is not None:
            self.ctx.numbers.setdefault((path.var, MAP_FIELDS[path.path[0]] + path.path[1]), number)

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
            self.note_number(expr.left, expr.right)
            self.note_number(expr.right, expr.left)
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
            self.note_number(args[0], args[1])
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

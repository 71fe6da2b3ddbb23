"""Where a command meets a point the spec leaves open: the ``warnings`` said with its answer.

docs/interop.md, part A, lists the points where kip2cypher's reading and the reference
engine's (anda_cognitive_nexus) can give an agent different answers. Those this module can
recognise in the command alone are found here, at compile time — nothing runs, the plan's
statements do not change, the program appends them to the answer (``execution.programs.start``):

- A1/A2: a FILTER test over an attribute or metadata value that drops a solution missing it
  where the reference keeps it (``!=``, a test under ``!``, two such values compared, an
  empty-string text test), unless the FILTER tests that value with IS_NULL / IS_NOT_NULL;
- A4: a string that reads as a number or as a date-time with an offset, compared as text;
- A6: ``COUNT`` of an attribute or metadata value, which leaves out the solutions without it;
- A7: a NOT that shares a variable with its block only through clauses written after it.

A5 (a concept-only field of an endpoint variable that may bind a proposition, or the reverse)
is found while the WHERE is lowered, where the variables' kinds are known: ``other_kind`` words
what the lowering recorded (``LoweringContext.other_kind_reads``) for the reads no row of the
answer can show — FILTER, ORDER BY, aggregates, KML — each lowering puts them in its plan.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from ..syntax import ast
from ..syntax.printer import to_kip
from ..syntax.values import JSON_NUMBER, Deferred, resolve
from .context import PROPOSITION, var_mentions
from .filters import FIELDS, kind_without
from .pattern import bound_by

_NUMBER = re.compile(JSON_NUMBER)
_OFFSET_TIME = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?[+-]\d\d:?\d\d")
_SHOWN = 120  # characters of a NOT block quoted in its warning


def text_read_as_typed(value: str) -> bool:
    """Whether a string literal draws A4 (a number or an offset date-time written as text): its
    warning depends on the value, so a plan template never stands for it (``lower.templates``).
    Both begin with ``-`` or a decimal digit (``\\d`` is any Unicode one): other text is not matched twice."""
    return (value[:1] == "-" or value[:1].isdecimal()) and bool(_NUMBER.fullmatch(value) or _OFFSET_TIME.fullmatch(value))


def warnings(command: ast.Command, parameters: Mapping[str, Any]) -> tuple[str, ...]:
    """The warnings of one command, each once, in the order of the text."""
    where = getattr(command, "where", None) or ()
    found = [*_block(where, set(), parameters, negated=False)]
    if isinstance(command, ast.Find):
        found += _counted_paths(command)
    return tuple(dict.fromkeys(found))


def _block(items: tuple, bound: set[str], parameters: Mapping[str, Any], *, negated: bool) -> Iterator[str]:
    """The warnings of one block, ``bound``: the variables bound before it (text order);
    ``negated``: the block is (inside) a NOT, whose FILTERs exclude solutions instead of keeping them."""
    later = [bound_by(item, set()) for item in items]
    for position, item in enumerate(items):
        if isinstance(item, ast.Filter):
            yield from _missing(item.expr, negated, parameters)
            yield from _text_compared(item.expr, parameters)
        elif isinstance(item, ast.NotBlock):
            yield from _late_not(item, bound, set().union(*later[position + 1 :]))
            yield from _block(item.items, set(bound), parameters, negated=not negated)
        elif isinstance(item, (ast.OptionalBlock, ast.UnionBlock)):
            yield from _block(item.items, set(bound), parameters, negated=negated)
        bound |= later[position]


# ----------------------------------------------------------------------------- A1, A2
def _stored(operand: Any) -> bool:
    """``?x.attributes.k`` / ``?x.metadata.k``: a value an element may lack (engine ``_`` metadata never is)."""
    return (
        isinstance(operand, ast.DotPath)
        and len(operand.path) == 2
        and operand.path[0] in ("attributes", "metadata")
        and not (operand.path[0] == "metadata" and operand.path[1].startswith("_"))
    )


def _null(operand: Any, parameters: Mapping[str, Any]) -> bool:
    """The literal null, or a placeholder bound to it (``x == null`` is a null test)."""
    return isinstance(operand, (ast.Literal, ast.Placeholder)) and resolve(operand, parameters, deferrable=True) is None


def _tests(expr: Any, negated: bool = False) -> Iterator[tuple[Any, bool]]:
    """Every elementary test of a FILTER expression, with whether an odd number of ``!`` holds it."""
    stack = [(expr, negated)]
    while stack:
        node, odd = stack.pop()
        if isinstance(node, ast.BoolOp):
            stack += [(node.right, odd), (node.left, odd)]
        elif isinstance(node, ast.NotExpr):
            stack.append((node.operand, not odd))
        else:
            yield node, odd


def _kept_by_reference(test: Any, negated: bool, parameters: Mapping[str, Any]) -> list[ast.DotPath]:
    """The stored values whose absence makes ``test`` unknown here (the solution dropped) while
    the reference engine, reading a missing value as null (or "" in text functions), holds it."""
    if isinstance(test, ast.Comparison):
        if _null(test.left, parameters) or _null(test.right, parameters):
            return []  # x == null is a null test in both engines
        paths = [side for side in (test.left, test.right) if _stored(side)]
        both = len(paths) == 2 and test.op in ("==", "<=", ">=")  # null == null on the reference
        return paths if paths and (negated or test.op == "!=" or both) else []
    if isinstance(test, ast.FuncCall) and test.name not in ("IS_NULL", "IS_NOT_NULL") and test.args and _stored(test.args[0]):
        empty = test.name in ("CONTAINS", "STARTS_WITH", "ENDS_WITH") and isinstance(test.args[1], ast.Literal) and test.args[1].value == ""
        return [test.args[0]] if negated or empty else []
    return []


def _missing(expr: Any, in_not: bool, parameters: Mapping[str, Any]) -> Iterator[str]:
    """A1/A2: one warning per FILTER whose outcome the reference would turn for a missing value
    (in a NOT, an unknown FILTER does not match: the NOT keeps what the reference excludes)."""
    guarded = {to_kip(t.args[0]) for t, _ in _tests(expr) if isinstance(t, ast.FuncCall) and t.name in ("IS_NULL", "IS_NOT_NULL") and t.args}
    paths = [to_kip(p) for test, odd in _tests(expr) for p in _kept_by_reference(test, odd, parameters)]
    paths = [p for p in dict.fromkeys(paths) if p not in guarded]
    if not paths:
        return
    shown = to_kip(expr)
    keep = " || ".join(f"IS_NULL({p})" for p in paths) + " || " + (f"({shown})" if isinstance(expr, ast.BoolOp) else shown)
    outcome = "this NOT does not exclude the solution" if in_not else "the solution is dropped"
    yield (
        f"FILTER({shown}): where {' or '.join(paths)} is missing the test is unknown — never true, even under != or !"
        f" — so {outcome}; the reference engine reads a missing value as null and may answer otherwise."
        f" To make the test hold for a missing value write FILTER({keep})"
    )


# ----------------------------------------------------------------------------- A4
def _text_compared(expr: Any, parameters: Mapping[str, Any]) -> Iterator[str]:
    """A4: a string literal compared that an agent may mean as a number or an instant."""
    for test, _ in _tests(expr):
        if not isinstance(test, ast.Comparison):
            continue
        for this, other in ((test.left, test.right), (test.right, test.left)):
            if not isinstance(this, (ast.DotPath, ast.Var)) or not isinstance(other, (ast.Literal, ast.Placeholder)):
                continue
            value = resolve(other, parameters, deferrable=True)
            if isinstance(value, Deferred) or not isinstance(value, str):
                continue
            shown = f"{to_kip(test.left)} {test.op} {to_kip(test.right)}"
            if not text_read_as_typed(value):
                continue
            if _NUMBER.fullmatch(value):
                how = "equals only the same text" if test.op in ("==", "!=") else 'orders as text, character by character ("10" < "3")'
                yield (
                    f'{shown}: "{value}" is text: it {how}, and never equals or orders against a number'
                    " (the reference engine compares a numeric string with a number, or with another numeric string, as numbers);"
                    f" to compare numbers, store and write numbers: {value}"
                )
            else:
                yield (
                    f'{shown}: "{value}" compares as text, not as an instant: a value written with another offset'
                    " or precision for the same moment does not match (the reference engine compares date-times as"
                    ' instants); write and store UTC times alike, e.g. "2025-01-01T00:00:00Z"'
                )


# ----------------------------------------------------------------------------- A6
def _counted_paths(find: ast.Find) -> Iterator[str]:
    """A6: COUNT(?x.attributes.k) counts the solutions holding k (§3.3: aggregation ignores null)."""
    for column in find.projections:
        if isinstance(column, ast.Aggregate) and column.func == "COUNT" and _stored(column.arg):
            path, var = to_kip(column.arg), f"?{column.arg.var}"
            if column.distinct:
                yield (
                    f"{to_kip(column)} counts the distinct values of {path} (missing ones ignored);"
                    f" the reference engine counts the distinct {var} — to count those write COUNT(DISTINCT {var})"
                )
            else:
                yield (
                    f"{to_kip(column)} counts only the solutions where {path} is present (aggregation ignores null values);"
                    f" the reference engine counts every {var} — to count solutions write COUNT({var})"
                )


# ----------------------------------------------------------------------------- A7
def _late_not(block: ast.NotBlock, bound: set[str], later: set[str]) -> Iterator[str]:
    """A7: a NOT correlated through variables that only clauses after it bind."""
    mentioned = set(var_mentions(block))
    late = sorted((mentioned & later) - bound)
    if not late:
        return
    shown = " ".join(to_kip(block).split())
    shown = shown if len(shown) <= _SHOWN else shown[: _SHOWN - 1] + "…"
    names = ", ".join(f"?{name}" for name in late)
    yield (
        f"{shown} is correlated with {names}, bound after it in the text — kip2cypher reads a block as a whole; the"
        f" reference engine reads clauses in order and would not see {names} in this NOT;"
        f" write the NOT after the clauses that bind {names} to read the same on both"
    )


# ----------------------------------------------------------------------------- A5
def other_kind(reads: Mapping[tuple[str, str], Iterable[str]], said: Collection[str] = ()) -> tuple[str, ...]:
    """A5: per endpoint variable and kind, the fields it is read for that the other kind lacks,
    and where — except in the clauses ``said`` at run time (FIND's columns and ORDER BY keys:
    a hidden column per row says it exactly, ``lower.find``). Where the variable binds the other
    kind the value is null here, and the reference engine refuses the command; whether any
    solution does is not known without matching the pattern again — a FILTER drops the row —
    so the entry says "may"."""
    fields: dict[tuple[str, str], list[str]] = {}
    where: dict[tuple[str, str], dict[str, None]] = {}
    for (var, field), used in reads.items():
        unsaid = [u for u in used if u not in said]
        if unsaid:
            lacking = kind_without(field)
            fields.setdefault((var, lacking), []).append(field)
            where.setdefault((var, lacking), {}).update(dict.fromkeys(unsaid))
    out = []
    for (var, lacking), asked in fields.items():
        has = FIELDS[lacking]
        if lacking == PROPOSITION:
            only, pin = "concepts", f'pin it with a concept clause, e.g. ?{var} {{type: "…"}}'
        else:
            only, pin = "propositions", f"bind it with a proposition clause, e.g. ?{var} (?a, ?p, ?b)"
        out.append(
            f"{', '.join(f'?{var}.{f}' for f in asked)} (in {' and '.join(where[(var, lacking)])}): ?{var} is an endpoint of a proposition clause"
            f" and may bind a {lacking}, which has no {' or '.join(asked)} (a {lacking} has {', '.join(has[:-1])} and {has[-1]});"
            " for such a solution the value is null here — a FILTER comparison with it is not true, ORDER BY sorts it as null, an aggregate"
            f" skips it — while the reference engine refuses the command (KIP_1001). To read only {only}, {pin}"
        )
    return tuple(out)

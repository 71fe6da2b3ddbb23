"""Property values of the team's graph read exactly (docs/adopt.md, "Values").

A team's nodes hold what Neo4j can store: besides strings, numbers and booleans also temporal
values (``date``, ``datetime`` …, ``duration``), points and byte arrays. KIP sees JSON, so FIND
shows a temporal value as Neo4j's own ISO 8601 text (``toString``, converted in Cypher — the
driver cannot even hold a date of year 10000), and ``adoption.jsonable`` converts points and
bytes. A FILTER must then read the value the answer shows: Neo4j never orders a ``datetime``
against a string (``null``), so ``opened_at > "2026-01-01T00:00:00Z"`` would silently match
nothing. Each comparison that reads an adopted property therefore checks, when it runs, what
the property holds:

- strings, numbers, booleans and lists of them compare exactly as memory values do;
- a temporal value compares with a value of its own Neo4j type: a text spelling that type
  (converted in Cypher by ``date()`` / ``datetime()`` …; ``adoption.temporal_kind`` picks the
  constructor at compile time and only lets valid texts through, so no conversion fails) or
  another property of that type. Zoned datetimes and times compare as instants (in UTC), so
  ``==`` agrees with ``<`` and ``>``. Durations have no order: only ``==`` / ``!=`` / ``IN``;
- anything else — a temporal value against another type (a ``date`` against a datetime text, a
  number), a duration ordered, a point, a byte array, a list of temporal values — cannot be
  compared exactly, and the statement stops with KIP_2003 naming the FILTER, the Neo4j types
  and the text to write (``refusal``) instead of answering what it cannot know.

The refusal is raised by Neo4j itself: ``'' =~ <invalid pattern>`` with the message in the
pattern (the regex guard's device, ``regex_guard.SearchRegex.refusal``), which
``execution.neo4j_errors`` turns back into the KIP error (``value_error``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .. import adoption as adopt
from ..cypher.builder import Fragment, Internal, Param, Part, frag, join, literal
from ..errors import INVALID_VALUE_TYPE, KipError
from ..syntax import ast
from ..syntax.printer import to_kip
from ..syntax.values import Deferred

#: Cypher's temporal types, and the values that compare exactly as JSON values do.
TEMPORAL = "DATE | LOCAL TIME | ZONED TIME | LOCAL DATETIME | ZONED DATETIME | DURATION"
PLAIN = "STRING | INTEGER | FLOAT | BOOLEAN | LIST<STRING | INTEGER | FLOAT | BOOLEAN>"
#: Starts the pattern text of a refusal; ``value_error`` finds it in Neo4j's message.
MARKER = "KIP_ADOPTED_VALUE"
ORDERING = ("<", "<=", ">", ">=")
TEXT_FUNCTIONS = ("CONTAINS(", "STARTS_WITH(", "ENDS_WITH(", "REGEX(")
#: What a text of each Neo4j type looks like (the hint of a refusal).
EXAMPLES = {
    "DATE": '"2026-01-05"',
    "LOCAL TIME": '"10:00:00"',
    "ZONED TIME": '"10:00:00+01:00"',
    "LOCAL DATETIME": '"2026-01-05T10:00:00"',
    "ZONED DATETIME": '"2026-01-05T10:00:00Z" or "2026-01-05T10:00:00+01:00"',
    "DURATION": '"P1DT2H"',
}


def display(value: Part) -> Fragment:
    """``value`` as FIND shows it: a temporal value (or a list of them) as its ISO 8601 text."""
    x = Internal("t")
    return frag(
        "CASE WHEN ", value, " IS :: ", TEMPORAL, " THEN toString(", value, ") ",
        "WHEN ", value, " IS :: LIST<", TEMPORAL, "> THEN [", x, " IN ", value, " | toString(", x, ")] ELSE ", value, " END",
    )  # fmt: skip


#: ``valueType()`` of the value each temporal constructor (``adoption.temporal_kind``) makes.
KIND_TYPE = {
    "date": "DATE NOT NULL",
    "localtime": "LOCAL TIME NOT NULL",
    "time": "ZONED TIME NOT NULL",
    "localdatetime": "LOCAL DATETIME NOT NULL",
    "datetime": "ZONED DATETIME NOT NULL",
    "duration": "DURATION NOT NULL",
}


def temporal_twin(value: Any) -> tuple[Fragment, str] | None:
    """The Neo4j temporal value a KIP string spells, built in Cypher (zoned values in UTC), and
    its ``valueType``; None for anything else."""
    kind = adopt.temporal_kind(value) if isinstance(value, str) else None
    if kind is None:
        return None
    made = frag(kind, "(", Param(value), ")")
    if kind == "datetime":
        made = frag("datetime({datetime: ", made, ", timezone: 'Z'})")
    elif kind == "time":
        made = frag("time({time: ", made, ", timezone: 'Z'})")
    return made, KIND_TYPE[kind]


def instant(value: Part) -> Fragment:
    """A temporal value read from the graph, zoned ones in UTC (``==`` then compares instants)."""
    return frag(
        "CASE WHEN ", value, " IS :: ZONED DATETIME THEN datetime({datetime: ", value, ", timezone: 'Z'}) ",
        "WHEN ", value, " IS :: ZONED TIME THEN time({time: ", value, ", timezone: 'Z'}) ELSE ", value, " END",
    )  # fmt: skip


class Side:
    """One operand of a checked comparison, as KIP text (``text``, for the refusal) and as Cypher:
    ``value`` — the operand, or the temporal twin of a literal text; ``type_of`` — its
    ``valueType`` (known at compile time for a literal); ``instant`` — what a temporal comparison
    compares. ``checked``: of unknown type until it runs (an adopted property, or a placeholder
    the caller binds); ``adopted``: it reads the team's graph; ``twin``: a literal text that
    spells a temporal value; ``string``: a literal text."""

    def __init__(
        self, text: str, value: Part, *, checked: bool = False, adopted: bool = False, type_of: Part | None = None, twin: bool = False, string: bool = False
    ) -> None:
        self.text, self.value, self.checked, self.adopted, self.twin, self.string = text, value, checked, adopted, twin, string
        self.type_of = type_of if type_of is not None else frag("valueType(", value, ")")
        self.instant = instant(value) if checked else value


def checked(lowerer: Any, op: str, exprs: Sequence[Any], cyphers: Sequence[Fragment], compared: Fragment, scope: Any, used_in: str) -> Fragment:
    """``compared`` — a comparison (``op``: ``==`` … ``>=``), ``IN`` or a text function (CONTAINS
    …) as the lowerer compiled it from the operands ``exprs`` (compiled: ``cyphers``) — checked
    at run time when an operand reads a property of the team's graph (module doc); unchanged
    otherwise, so memory-only FILTERs compile as before."""
    if lowerer.ctx.adoption is None:
        return compared
    sides = [side(lowerer, e, c, scope, used_in) for e, c in zip(exprs, cyphers)]
    if not any(s.adopted for s in sides):
        return compared
    if op == "IN":
        twins = _twins(lowerer, exprs[1])
        if twins is not None and not twins[1]:
            return compared  # no temporal text among the items: Cypher's IN is already the exact answer
        return membership(sides[0], sides[1], twins[0] if twins is not None else None, compared)
    others = [s for s in sides if not s.adopted]
    if op in ("==", "!=") and others and not any(s.checked or s.twin for s in others):
        # Against a literal that spells no temporal value (or a memory value), Cypher's = / <> is
        # already the exact answer (values of different types are never equal): an index seek.
        return compared
    if op in ("==", "!=", *ORDERING):
        return comparison(op, sides[0], sides[1], compared)
    return text_only(op, sides, compared)


def side(lowerer: Any, expr: Any, cypher: Fragment, scope: Any, used_in: str) -> Side:
    """The ``Side`` of one operand: an adopted property (read raw), a placeholder kept for the
    caller to bind, a literal (with its temporal twin), or anything else (a memory value)."""
    text = to_kip(expr)
    if isinstance(expr, ast.DotPath):
        binding = scope.get(expr.var)
        if binding is not None and binding.adopted is not None and reads_property(binding.adopted, expr.path):
            return Side(text, lowerer.raw_value(expr, scope, used_in), checked=True, adopted=True)
    if isinstance(expr, (ast.Literal, ast.Placeholder)):
        value = lowerer.ctx.value_of(expr)
        if isinstance(value, Deferred):
            return Side(text, cypher, checked=True)
        twin = temporal_twin(value)
        if twin is not None:
            return Side(text, twin[0], type_of=literal(twin[1]), twin=True, string=True)
        return Side(text, cypher, string=isinstance(value, str))
    return Side(text, cypher)


def reads_property(what: Any, path: tuple[str, ...]) -> bool:
    """``?x.<path>`` reads a property of the team's node or relationship (a mapped attribute, or
    a type's name property): a value of any Neo4j type."""
    if path[0] == "attributes":
        return len(path) == 2 and what.property_of(path[1]) is not None
    return path == ("name",) and isinstance(what, adopt.AdoptedType)


def _twins(lowerer: Any, expr: Any) -> tuple[Fragment, bool] | None:
    """A literal list (or a placeholder bound to one) with each text as its temporal twin, and
    whether any item has one."""
    values = lowerer.ctx.value_of(expr) if isinstance(expr, (ast.ListLit, ast.Placeholder)) else None
    if not isinstance(values, list):
        return None
    twins = [temporal_twin(v) for v in values]
    items = [t[0] if t is not None else Param(v) for t, v in zip(twins, values)]
    return frag("[", join(", ", items), "]"), any(t is not None for t in twins)


def _plain(sides: Sequence[Side]) -> Fragment:
    return join(" AND ", [frag(s.value, " IS :: ", PLAIN) for s in sides if s.checked])


def _null(sides: Sequence[Side]) -> Fragment:
    return join(" OR ", [frag(s.value, " IS NULL") for s in sides if s.checked])


def _bytes_as_text(left: Side, right: Side) -> Fragment | None:
    """A byte array compared with text: Cypher sees the bytes as a list of integers, FIND shows
    them as base64 text, so ``blob == "AP9raXA="`` would be false for the very text FIND shows."""
    tests = [
        frag(a.value, " IS :: LIST<INTEGER> NOT NULL AND ", b.value, " IS :: STRING NOT NULL")
        for a, b in ((left, right), (right, left))
        if a.checked and (b.checked or b.string)
    ]
    return join(" OR ", tests) if tests else None


def comparison(op: str, left: Side, right: Side, compared: Fragment) -> Fragment:
    """``compared`` (``left op right`` as memory compiles it) when both operands compare as JSON
    values, the temporal comparison when both are of one temporal type, ``==`` / ``!=`` of two
    values of different types that are not both temporal (never equal: exact), else the
    refusal — also for a byte array against text (``_bytes_as_text``)."""
    same = frag(left.value, " IS :: ", TEMPORAL, " AND ", left.type_of, " = ", right.type_of)
    if op in ORDERING:
        same.add(" AND NOT ", left.value, " IS :: DURATION")
    cypher_op = {"==": " = ", "!=": " <> "}.get(op, f" {op} ")
    refused = refusal(f"{left.text} {op} {right.text}", left.type_of, right.type_of)
    out = frag("CASE")
    bytes_test = _bytes_as_text(left, right)
    if bytes_test is not None:
        out.add(" WHEN ", bytes_test, " THEN ", refused)
    out.add(" WHEN ", _plain((left, right)), " THEN ", compared, " WHEN ", _null((left, right)), " THEN null")
    out.add(" WHEN ", same, " THEN ", left.instant, cypher_op, right.instant)
    if op in ("==", "!="):
        different = frag(left.type_of, " <> ", right.type_of, " AND NOT (", left.value, " IS :: ", TEMPORAL, " AND ", right.value, " IS :: ", TEMPORAL, ")")
        out.add(" WHEN ", different, " THEN ", "false" if op == "==" else "true")
    return out.add(" ELSE ", refused, " END")


def membership(value: Side, items: Side, twins: Fragment | None, compared: Fragment) -> Fragment:
    """``IN(value, items)`` checked like ``==`` (``comparison``): a temporal value is in a list
    when an item of its own type is the same instant; items that are no temporal value never
    match it, an item of another temporal type is refused (``twins``: a literal list with each
    text as its temporal twin)."""
    x = Internal("t")
    listed = twins if twins is not None else items.value
    kin = frag("NOT ", x, " IS :: ", TEMPORAL, " OR valueType(", x, ") = ", value.type_of)
    temporal = frag(value.value, " IS :: ", TEMPORAL, " AND all(", x, " IN ", listed, " WHERE ", kin, ")")
    members = frag("[", x, " IN ", listed, " WHERE (", x, " IS :: ", TEMPORAL, ") | ", instant(x), "]")
    other = frag("NOT ", value.value, " IS :: ", TEMPORAL, " AND all(", x, " IN ", listed, " WHERE valueType(", x, ") <> ", value.type_of, ")")
    return frag(
        "CASE WHEN ", _plain((value, items)), " THEN ", compared, " WHEN ", _null((value, items)), " THEN null",
        " WHEN ", temporal, " THEN ", value.instant, " IN ", members, " WHEN ", other, " THEN false",
        " ELSE ", refusal(f"IN({value.text}, {items.text})", value.type_of, frag("valueType(", listed, ")")), " END",
    )  # fmt: skip


def text_only(call: str, sides: Sequence[Side], compared: Fragment) -> Fragment:
    """A text function (CONTAINS, STARTS_WITH, ENDS_WITH, REGEX) of adopted values: they read
    strings; a temporal value, a point or bytes is refused rather than never matched."""
    first = next(s for s in sides if s.checked)
    text = f"{call}({', '.join(s.text for s in sides)})"
    return frag("CASE WHEN ", _plain(sides), " THEN ", compared, " ELSE ", refusal(text, first.type_of, first.type_of), " END")


def refusal(expression: str, left: Part, right: Part) -> Fragment:
    """A boolean that stops the statement with the KIP error for ``expression`` (the FILTER as
    written), naming the Neo4j types of both operands as they ran (``left`` / ``right``: their
    ``valueType``)."""
    head = "\t".join((MARKER, json.dumps(expression))) + "\t"
    return frag("'' =~ (", Param(head), " + ", left, " + '\\t' + ", right, " + ' (')")


def value_error(message: str) -> KipError | None:
    """The KIP error for Neo4j's report of a ``refusal`` pattern (None when it is not one)."""
    at = message.find(MARKER + "\t")
    if at < 0:
        return None
    fields = message[at:].split("\n", 1)[0].removesuffix(" (").split("\t")
    if len(fields) != 4:
        return None
    _, expression, left, right = fields
    try:
        expression = json.loads(expression)
    except ValueError:
        pass
    left, right = (t.replace(" NOT NULL", "") for t in (left, right))
    return KipError(INVALID_VALUE_TYPE, _why(expression, left, right), _fix(expression, left, right))


def _why(expression: str, left: str, right: str) -> str:
    where = f"FILTER {expression} reads a property of the team's graph that holds a Neo4j {left}"
    if expression.startswith(TEXT_FUNCTIONS):
        return f"{where}; {expression.split('(')[0]} reads text, so it cannot answer exactly."
    if {left, right} == {"LIST<INTEGER>", "STRING"}:
        return f"{where}, compared with {_a(right)}: a byte array is a list of integers to Neo4j but shown as base64 text, so this cannot answer exactly."
    if left == right == "DURATION":
        return f"{where}: durations have no order (is P1M longer than P30D?), so <, <=, > and >= cannot answer exactly."
    if _kind(left) in ("POINT", "BYTES", "LIST") or left == right:
        return f"{where}; KIP compares only strings, numbers, booleans, lists of them and temporal values, so this cannot answer exactly."
    return f"{where}, compared with {_a(right)}: values of different Neo4j types never compare equal or ordered, so this cannot answer exactly."


def _fix(expression: str, left: str, right: str) -> str:
    example = EXAMPLES.get(left)
    if expression.startswith(TEXT_FUNCTIONS) and example is not None:
        return f"Compare it with ==, <, >= … and text of its own type instead, e.g. {example} (a range of two comparisons for a prefix)."
    if {left, right} == {"LIST<INTEGER>", "STRING"}:
        return "Test a byte array with IS_NULL / IS_NOT_NULL and read it with FIND; compare lists of integers with IN."
    if left == right == "DURATION":
        return "Compare durations with == / != / IN only, or compare the dates they lead to."
    if example is not None:
        return (
            f"Compare it with text of its own type, written as FIND shows it, e.g. {example} "
            "(or another property of that type); use IS_NULL / IS_NOT_NULL to test presence, and FIND to read the value."
        )
    return 'Test it with IS_NULL / IS_NOT_NULL, and read it with FIND (docs/adopt.md, "Values" lists how each Neo4j type is shown).'


def _a(neo4j_type: str) -> str:
    return ("an " if neo4j_type[0] in "AEIOU" else "a ") + neo4j_type


def _kind(neo4j_type: str) -> str:
    if neo4j_type.startswith("LIST"):
        return "LIST"
    return "BYTES" if "BYTE" in neo4j_type else neo4j_type

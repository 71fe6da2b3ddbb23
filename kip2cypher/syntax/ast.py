"""Typed, immutable AST for KIP v1.0-RC10.

One class per construct of the spec. Every node carries its source ``span``
(character offsets into the command text); spans are excluded from equality so
that ``parse(print(ast)) == ast`` holds for the printer round trip.

Conventions
- Variable and handle names are stored without the leading ``?``.
- Placeholder names are stored without the leading ``:``.
- Literal values are AST nodes (``Literal``, ``ListLit``, ``ObjectLit``,
  ``Placeholder``) so a placeholder may stand at any value position, also
  nested inside objects and lists. ``values.resolve`` turns them into plain
  Python/JSON values once the request's parameters are known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True, slots=True)
class Span:
    """Half-open character range ``[start, end)`` in the command text."""

    start: int = 0
    end: int = 0


NO_SPAN = Span()


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# --------------------------------------------------------------------- values
@dataclass(frozen=True, slots=True)
class Literal:
    """A JSON primitive: str, int, float, bool or None."""

    value: str | int | float | bool | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ListLit:
    items: tuple[Value, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ObjectLit:
    """A JSON object; keys keep their textual order (duplicates are rejected by validation)."""

    entries: tuple[tuple[str, Value], ...]
    span: Span = _span()
    # Where each key starts (parallel to ``entries``), for KIP_1002 positions; not compared.
    key_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Placeholder:
    """``:name`` at a whole-value position, bound from the request's parameters."""

    name: str
    span: Span = _span()


Value = Union[Literal, ListLit, ObjectLit, Placeholder]


# ---------------------------------------------------------------- expressions
@dataclass(frozen=True, slots=True)
class Var:
    """``?name`` — a query variable or an UPSERT local handle."""

    name: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class DotPath:
    """``?var.id`` / ``?var.attributes.k`` / ``?var.metadata`` …

    ``path`` is the tuple of segments after the variable, e.g. ``("name",)``,
    ``("attributes", "risk_level")``, ``("metadata",)``.
    """

    var: str
    path: tuple[str, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Aggregate:
    """``COUNT(?x)``, ``COUNT(DISTINCT ?x)``, ``SUM``, ``AVG``, ``MIN``, ``MAX``."""

    func: str  # COUNT | SUM | AVG | MIN | MAX
    arg: Var | DotPath
    distinct: bool = False
    span: Span = _span()


Projection = Union[Var, DotPath, Aggregate]


@dataclass(frozen=True, slots=True)
class Comparison:
    """``left op right`` with op one of ``== != < > <= >=``."""

    op: str
    left: Operand
    right: Operand
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class BoolOp:
    """``left && right`` / ``left || right``."""

    op: str  # "&&" | "||"
    left: BoolExpr
    right: BoolExpr
    span: Span = _span()


def operands(node: BoolExpr, op: str) -> list[BoolExpr]:
    """The operands of a chain of ``op`` (``node`` itself when it is not a BoolOp of ``op``), in order."""
    out, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, BoolOp) and item.op == op:
            stack.extend((item.right, item.left))
        else:
            out.append(item)
    return out


def balanced(op: str, items: list[BoolExpr]) -> BoolExpr:
    """The canonical tree of ``op`` over ``items``: split in the middle, recursively (depth log2 n)."""
    if len(items) == 1:
        return items[0]
    middle = len(items) // 2
    left, right = balanced(op, items[:middle]), balanced(op, items[middle:])
    return BoolOp(op, left, right, Span(left.span.start, right.span.end))


@dataclass(frozen=True, slots=True)
class NotExpr:
    """``!expr``."""

    operand: BoolExpr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class FuncCall:
    """A FILTER function: IN, IS_NULL, IS_NOT_NULL, CONTAINS, STARTS_WITH, ENDS_WITH, REGEX."""

    name: str
    args: tuple[Operand, ...]
    span: Span = _span()


Operand = Union[Var, DotPath, Literal, ListLit, Placeholder]
BoolExpr = Union[Comparison, BoolOp, NotExpr, FuncCall, Var, DotPath, Literal, Placeholder]


# -------------------------------------------------------------------- clauses
@dataclass(frozen=True, slots=True)
class ConceptClause:
    """``?var {id: …}`` / ``{type: …, name: …}`` / ``{type: …}`` / ``{name: …}``.

    ``var`` is None when the clause stands inline as an endpoint or identity.
    """

    var: str | None = None
    id: Value | None = None
    type: Value | None = None
    name: Value | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Quantifier:
    """``{m,n}`` → (m, n); ``{m,}`` → (m, None); ``{m}`` → (m, m)."""

    min: int
    max: int | None
    span: Span = _span()


#: A predicate name as written: a quoted name, or a ``:placeholder`` that the lowering binds
#: from the request's parameters and then checks exactly as it checks a quoted name.
PredicateName = Union[str, Placeholder]


@dataclass(frozen=True, slots=True)
class PredicatePattern:
    """Named predicate(s): ``"p"``, ``"a" | "b"``, ``"p"{1,5}``, ``:p``, ``:p{1,3}``, ``"a" | :p``."""

    names: tuple[PredicateName, ...]
    quantifier: Quantifier | None = None
    span: Span = _span()


Predicate = Union[PredicatePattern, Var]
Endpoint = Union[Var, ConceptClause, "PropositionClause"]


@dataclass(frozen=True, slots=True)
class PropositionClause:
    """``?var (id: …)`` or ``?var (subject, predicate, object)``.

    Exactly one of ``id`` or the (subject, predicate, object) triple is set.
    """

    var: str | None = None
    id: Value | None = None
    subject: Endpoint | None = None
    predicate: Predicate | None = None
    object: Endpoint | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Filter:
    expr: BoolExpr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class NotBlock:
    items: tuple[WhereItem, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class OptionalBlock:
    items: tuple[WhereItem, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class UnionBlock:
    items: tuple[WhereItem, ...]
    span: Span = _span()


WhereItem = Union[ConceptClause, PropositionClause, Filter, NotBlock, OptionalBlock, UnionBlock]


@dataclass(frozen=True, slots=True)
class OrderKey:
    expr: Projection
    descending: bool = False
    span: Span = _span()


# ------------------------------------------------------------------------ KQL
@dataclass(frozen=True, slots=True)
class Find:
    projections: tuple[Projection, ...]
    where: tuple[WhereItem, ...]
    order_by: tuple[OrderKey, ...] = ()
    limit: Value | None = None
    cursor: Value | None = None
    span: Span = _span()


# ------------------------------------------------------------------------ KML
@dataclass(frozen=True, slots=True)
class PropositionEntry:
    """One ``("predicate", target) [WITH METADATA {…}]`` line of SET PROPOSITIONS.

    ``predicate`` is a quoted name or a ``:placeholder``; ``target`` is a handle (``Var``), a
    ``ConceptClause`` ({type,name} or {id}), or a ``PropositionClause`` ((id: …) or structural).
    """

    predicate: PredicateName
    target: Endpoint
    metadata: ObjectLit | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ConceptBlock:
    handle: str | None
    identity: ConceptClause
    expect_version: Value | None = None
    set_attributes: ObjectLit | None = None
    set_propositions: tuple[PropositionEntry, ...] | None = None
    metadata: ObjectLit | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PropositionBlock:
    handle: str | None
    identity: PropositionClause
    expect_version: Value | None = None
    set_attributes: ObjectLit | None = None
    metadata: ObjectLit | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Upsert:
    """One ``UPSERT { … } [WITH METADATA {…}]`` statement."""

    blocks: tuple[ConceptBlock | PropositionBlock, ...]
    metadata: ObjectLit | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Capsule:
    """A KML command made of one or more UPSERT statements (Genesis has two)."""

    upserts: tuple[Upsert, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class UpdateCall:
    """``ADD(a, b)``, ``MUL(a, b)``, ``CLAMP(x, lo, hi)``, ``COALESCE(x, d)``."""

    func: str
    args: tuple[UpdateValue, ...]
    span: Span = _span()


UpdateValue = Union[Literal, ListLit, ObjectLit, Placeholder, DotPath, UpdateCall]


@dataclass(frozen=True, slots=True)
class Assignments:
    """The body of ``SET ATTRIBUTES {…}`` / ``SET METADATA {…}`` in UPDATE."""

    entries: tuple[tuple[str, UpdateValue], ...]
    span: Span = _span()
    key_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Update:
    target: str
    set_attributes: Assignments | None
    set_metadata: Assignments | None
    where: tuple[WhereItem, ...]
    limit: Value | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class MergeConcept:
    source: str
    target: str
    where: tuple[WhereItem, ...]
    span: Span = _span()
    #: where ``?source`` / ``?target`` stand in the head (positions of their KIP_3002 / KIP_3003)
    source_span: Span = _span()
    target_span: Span = _span()


@dataclass(frozen=True, slots=True)
class DeleteAttributes:
    keys: tuple[str, ...]
    target: str
    where: tuple[WhereItem, ...]
    span: Span = _span()
    key_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class DeleteMetadata:
    keys: tuple[str, ...]
    target: str
    where: tuple[WhereItem, ...]
    span: Span = _span()
    key_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class DeletePropositions:
    target: str
    where: tuple[WhereItem, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class DeleteConcept:
    """``DELETE CONCEPT ?c DETACH WHERE {…}`` (DETACH is mandatory in the grammar)."""

    target: str
    where: tuple[WhereItem, ...]
    span: Span = _span()


# ----------------------------------------------------------------------- META
@dataclass(frozen=True, slots=True)
class DescribePrimer:
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class DescribeDomains:
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class DescribeConceptTypes:
    limit: Value | None = None
    cursor: Value | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class DescribeConceptType:
    name: Value
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class DescribePropositionTypes:
    limit: Value | None = None
    cursor: Value | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class DescribePropositionType:
    name: Value
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Search:
    target: str  # "CONCEPT" | "PROPOSITION"
    term: Value
    with_type: Value | None = None
    mode: Value | None = None
    threshold: Value | None = None
    limit: Value | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Export:
    target: str
    where: tuple[WhereItem, ...]
    limit: Value | None = None
    cursor: Value | None = None
    span: Span = _span()


Kql = Find
Kml = Union[Capsule, Update, MergeConcept, DeleteAttributes, DeleteMetadata, DeletePropositions, DeleteConcept]
Meta = Union[
    DescribePrimer,
    DescribeDomains,
    DescribeConceptTypes,
    DescribeConceptType,
    DescribePropositionTypes,
    DescribePropositionType,
    Search,
    Export,
]
Command = Union[Kql, Kml, Meta]

# ------------------------------------------------------------------- commands
#: The three kinds of command (spec §2): reads, writes, and questions about the memory itself.
KQL, KML, META = "KQL", "KML", "META"


@dataclass(frozen=True)
class CommandFamily:
    """One KIP command: the keyword it starts with, its kind, and the AST classes it parses into.

    ``COMMANDS`` below is the one table of commands: the kind of a parsed command, the kind of a
    text that did not parse (by its first word), the read-only rule and the words the engine
    lists (DESCRIBE PRIMER's capabilities, the read-only refusal, the MCP tool descriptions)
    are derived from it; tests check it against the grammar's ``command`` rule and the lexer."""

    word: str
    kind: str
    nodes: tuple[type, ...]


#: Every command, in the order of the grammar's ``command`` rule.
COMMANDS = (
    CommandFamily("FIND", KQL, (Find,)),
    CommandFamily("UPSERT", KML, (Capsule,)),
    CommandFamily("UPDATE", KML, (Update,)),
    CommandFamily("MERGE", KML, (MergeConcept,)),
    CommandFamily("DELETE", KML, (DeleteAttributes, DeleteMetadata, DeletePropositions, DeleteConcept)),
    CommandFamily(
        "DESCRIBE",
        META,
        (DescribePrimer, DescribeDomains, DescribeConceptTypes, DescribeConceptType, DescribePropositionTypes, DescribePropositionType),
    ),
    CommandFamily("SEARCH", META, (Search,)),
    CommandFamily("EXPORT", META, (Export,)),
)
_KIND_OF_NODE = {node: family.kind for family in COMMANDS for node in family.nodes}
_KIND_OF_WORD = {family.word: family.kind for family in COMMANDS}


def command_words(*kinds: str) -> tuple[str, ...]:
    """The leading keywords of the commands of ``kinds`` (all commands when none is given)."""
    return tuple(f.word for f in COMMANDS if not kinds or f.kind in kinds)


def command_nodes(*kinds: str) -> tuple[type, ...]:
    """The AST classes of the commands of ``kinds``."""
    return tuple(node for f in COMMANDS if f.kind in kinds for node in f.nodes)


KML_COMMANDS = command_nodes(KML)
META_COMMANDS = command_nodes(META)
#: The commands execute_kip_readonly runs, and the ones it refuses.
READ_WORDS = command_words(KQL, META)
WRITE_WORDS = command_words(KML)


def command_kind(command: Command) -> str:
    """``"KQL"``, ``"KML"`` or ``"META"`` — drives batch error rules and routing."""
    return _KIND_OF_NODE[type(command)]


def word_kind(word: str) -> str | None:
    """The kind of the command a keyword starts (None for any other word): how a text that
    did not parse is classified, without parsing it again."""
    return _KIND_OF_WORD.get(word)


def writes(kind: str | None) -> bool:
    """Whether commands of ``kind`` change the memory (KML): refused by execute_kip_readonly, run
    in a WRITE transaction."""
    return kind == KML


def listing(words: tuple[str, ...], conjunction: str = "and") -> str:
    """``"A, B and C"``: command words in a sentence."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"

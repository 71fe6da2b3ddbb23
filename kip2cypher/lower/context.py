"""The lowering context: what the parts of one WHERE lowering share.

One ``LoweringContext`` per lowered WHERE holds the command's parameters and settings, the
namespace's names, the fresh-name counter, the grounding names and the facts the lowering
records for later passes (row keys, attribute keys read, notes for the answer). The pattern,
FILTER, path and match-strategy modules take it as their one shared state, so none of them
imports another's class to reach it (docs/architecture.md, "Lowering").

It also defines the values those modules exchange: ``Binding`` (a visible KIP variable),
``Grounding`` (the type and predicate names to check) and ``Keys`` (what determines a row).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Internal, Param, Part, RuntimeParam
from ..errors import INVALID_SYNTAX, REFERENCE_ERROR, KipError
from ..syntax import ast
from ..syntax.values import Deferred, describe, resolve

CONCEPT = "concept"
PROPOSITION = "proposition"
ELEMENT = "element"
PREDICATE = "predicate"
NODE_KINDS = frozenset({CONCEPT, PROPOSITION, ELEMENT})


# ----------------------------------------------------------------------------- results
@dataclass
class Binding:
    """A KIP variable visible after (part of) the WHERE."""

    name: str
    kind: str
    #: The Cypher expression that holds the value: a variable (``Var``/``Internal``) for nodes
    #: and materialized predicate variables, or an expression such as ``type(_r0)``.
    ref: Part
    #: True when the variable may be null (bound in OPTIONAL or in only some UNION branches).
    nullable: bool = False
    #: Whether ``ref`` is a plain Cypher variable (False for an unmaterialized ``type(_r0)``).
    is_variable: bool = True
    #: The adopted type or predicate (``adoption.AdoptedType`` / ``AdoptedPredicate``) whose
    #: node or relationship ``ref`` holds (docs/adopt.md); None for memory elements.
    adopted: Any = None


@dataclass
class Grounding:
    """Concept types and predicates a pattern refers to (checked for KIP_2001)."""

    #: name -> required: outside OPTIONAL/NOT/UNION, not one of several alternatives, not a
    #: zero-hop path — an undefined required name empties the result, so checking it only
    #: when nothing matched is enough.
    types: dict[str, bool] = field(default_factory=dict)
    predicates: dict[str, bool] = field(default_factory=dict)
    #: (meta-type, name) -> where the command first names it (a text offset)
    offsets: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, table: dict[str, bool], name: str, required: bool, offset: int = 0) -> None:
        table[name] = table.get(name, False) or required
        meta = storage.CONCEPT_TYPE if table is self.types else storage.PROPOSITION_TYPE
        self.offsets.setdefault((meta, name), offset)

    def names(self, required_only: bool | None = None) -> tuple[list[str], list[str]]:
        def pick(table: dict[str, bool]) -> list[str]:
            return sorted(n for n, req in table.items() if required_only is None or req == required_only)

        return pick(self.types), pick(self.predicates)


class Keys:
    """What determines one row of the top-level MATCH: the elements a row binds and the
    functional dependencies between them, from the storage model (docs/storage-model.md):

    - a concept matched by ``id`` or by ``(type, name)`` is one node (unique constraints);
    - a proposition node has exactly one ``KIP_SUBJECT`` and one ``KIP_OBJECT``
      relationship, so it determines its endpoints; ``(subject, predicate, object)`` is
      unique, so endpoints plus a known predicate determine the proposition node;
    - a native relationship exists once per proposition, so its two endpoint nodes plus
      its type determine it (and it determines them and its type).

    A row is a function of the variables FIND keeps when every element follows from them
    (``unique``); then ``WITH DISTINCT`` cannot remove anything and is left out. Paths,
    alternatives ``"a" | "b"`` of a native relationship and ``OPTIONAL CALL`` bodies add
    an element nothing determines, so such patterns keep the DISTINCT."""

    def __init__(self) -> None:
        self.elements: set[str] = set()
        self.rules: list[tuple[frozenset[str], frozenset[str]]] = []
        self._anon = 0

    def anonymous(self) -> str:
        self._anon += 1
        return f"#{self._anon}"

    def add(self, key: str, *, seed: bool = False) -> str:
        self.elements.add(key)
        if seed:
            self.rules.append((frozenset(), frozenset({key})))
        return key

    def rule(self, premises: Iterable[str | None], conclusions: Iterable[str | None]) -> None:
        self.rules.append((frozenset(k for k in premises if k), frozenset(k for k in conclusions if k)))

    def merge(self, other: Keys) -> None:
        self.elements |= other.elements
        self.rules.extend(other.rules)

    def unique(self, kept: Iterable[str]) -> bool:
        known = set(kept)
        if not known:
            return False
        changed = True
        while changed:
            changed = False
            for premises, conclusions in self.rules:
                if premises <= known and not conclusions <= known:
                    known |= conclusions
                    changed = True
        return self.elements <= known


def node_key(name: str) -> str:
    """The Keys element of a KIP variable."""
    return "?" + name


def unbound(name: str, used_in: str, offset: int | None = None) -> KipError:
    return KipError(
        REFERENCE_ERROR,
        f"The variable ?{name} is used in {used_in} but never bound in WHERE.",
        f'Bind ?{name} with a pattern clause in WHERE (e.g. ?{name} {{type: "…"}} or (?{name}, "…", ?o)); '
        "variables bound inside NOT { … } are not visible outside it.",
        offset=offset,
    )


class LoweringContext:
    """The state one WHERE lowering shares: names, settings, parameters, fresh names, grounding."""

    def __init__(self, parameters: Mapping[str, Any], settings: Settings, *, lean: bool = False, dont_care: frozenset[str] = frozenset()) -> None:
        self.parameters = parameters
        self.settings = settings
        #: the storage vocabulary of the nexus's namespace: every label and relationship type emitted
        self.names = storage.names(settings.namespace)
        self.grounding = Grounding()
        self._counter = 0
        self.lean = lean
        #: variables written once in the whole WHERE and not read after it (lean only)
        self.dont_care = dont_care
        #: row determinants of the top-level group (nested groups record into a throwaway)
        self.keys = Keys()
        #: steps each REGEX may take on one value (``regex_guard``)
        self.regex_budget = settings.max_regex_steps
        #: attribute/metadata keys the command reads: (variable, stored key) → first text offset
        self.key_uses: dict[tuple[str, str], int] = {}
        #: (variable, stored key) → a number FILTER compares it with (``==``, ``<`` …, ``IN``): an
        #: empty answer checks whether the elements hold it as numeric text (docs/interop.md A3)
        self.numbers: dict[tuple[str, str], int | float] = {}
        #: (endpoint variable, concept-only or proposition-only field) read of a variable that may
        #: bind either kind → where it is read (``FILTER``, ``FIND`` …, in order): docs/interop.md A5
        self.other_kind_reads: dict[tuple[str, str], dict[str, None]] = {}
        #: (variable, attribute key) read of an adopted element whose mapping does not expose the key
        self.unmapped: dict[tuple[str, str], Any] = {}
        #: what a variable's elements are known to be: (True, concept type) / (False, predicate)
        self.var_kinds: dict[str, tuple[bool, str]] = {}
        #: the namespace's adoption mapping (docs/adopt.md); None: nothing adopted
        self.adoption = settings.adoption
        #: memory propositions may end at adopted concepts (the mapping's link_memory, docs/adopt.md)
        self.link_memory = bool(self.adoption is not None and self.adoption.link_memory)
        #: what the answer should say about how it was read (FIND ``warnings``)
        self.notes: list[str] = []
        #: kept placeholders known not to be null where the condition being built is evaluated
        self.non_null: frozenset[str] = frozenset()

    @contextmanager
    def nested(self) -> Iterator[Keys]:
        """Record the keys of a nested group (UNION branch, NOT, OPTIONAL) apart from the top level."""
        outer, self.keys = self.keys, Keys()
        try:
            yield self.keys
        finally:
            self.keys = outer

    # ------------------------------------------------------------------ helpers
    def fresh(self, prefix: str) -> Internal:
        name = Internal(f"{prefix}{self._counter}")
        self._counter += 1
        return name

    def value_of(self, value: ast.Value) -> Any:
        """The value at a plain-value position: a ``Deferred`` when a keeping compile leaves its
        placeholder for run time (render it with ``param``)."""
        return resolve(value, self.parameters, deferrable=True)

    @staticmethod
    def param(value: Any) -> Param | RuntimeParam:
        """A value as a Cypher parameter: ``$name`` for a kept placeholder."""
        return RuntimeParam(value.name, value.offset) if isinstance(value, Deferred) else Param(value)

    def string_of(self, value: ast.Value, what: str, role: str = "") -> str | Deferred:
        """A string value; with ``role`` (what the value shapes) it may not be left for run time."""
        resolved = resolve(value, self.parameters, role=role) if role else self.value_of(value)
        if not isinstance(resolved, (str, Deferred)):
            raise KipError(INVALID_SYNTAX, f"{what} must be a string, got {describe(resolved)}.", f"Bind the placeholder of {what} to a string.")
        return resolved

    def lookup(self, name: str, scope: Mapping[str, Binding], used_in: str) -> Binding:
        """The binding of ``?name`` in ``scope``; KIP_3001 when nothing binds it."""
        binding = scope.get(name)
        if binding is None:
            raise unbound(name, used_in)
        return binding


def var_mentions(item: Any) -> Iterator[str]:
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
                    yield from var_mentions(part)
    elif isinstance(item, ast.Filter):
        yield from var_mentions(item.expr)
    elif isinstance(item, (ast.NotBlock, ast.OptionalBlock, ast.UnionBlock)):
        for sub in item.items:
            yield from var_mentions(sub)
    elif isinstance(item, (ast.Comparison, ast.BoolOp)):
        yield from var_mentions(item.left)
        yield from var_mentions(item.right)
    elif isinstance(item, ast.NotExpr):
        yield from var_mentions(item.operand)
    elif isinstance(item, ast.FuncCall):
        for arg in item.args:
            yield from var_mentions(arg)


def mention_counts(items: Iterable[Any]) -> dict[str, int]:
    """How often each variable name is written in the items (nested blocks included)."""
    counts: dict[str, int] = {}
    for item in items:
        for name in var_mentions(item):
            counts[name] = counts.get(name, 0) + 1
    return counts

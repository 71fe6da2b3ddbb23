"""UPDATE (spec §4.3) and DELETE ATTRIBUTES / DELETE METADATA (§4.2.1–4.2.2), and the plan
every bulk mutation shares (``BulkPlan``: these three and the DELETEs of ``delete.py``).

All three are one Cypher statement on top of the shared WHERE lowering
(``lower/pattern.py``)::

    <WHERE lines>
    [WITH DISTINCT x] [WITH x LIMIT $limit]
    WITH x AS t, <protected> AS _prot           -- false when the WHERE pins an unprotectable type
    SET t._kip_lock = true REMOVE t._kip_lock   -- the element's write lock
    WITH t, _prot, {k: t[$p], …} AS _cur …      -- its keys, read after the lock; compute, compare
    FOREACH (… changed AND NOT _prot | SET …)   -- write
    WITH count(t) AS matched, <counts>, collect(<label of a protected t>) AS _bad
    RETURN matched, …, _bad

One pipeline from the match to the counts: no subquery per element and no collected list, so
the write reads its element from the match itself and Neo4j plans it without the Eager
barriers a list of nodes needs (docs/performance.md, round 7). All or nothing: a protected
element is never written, and when one matched the program refuses the command (KIP_3004) and
the transaction rolls back whatever the others wrote.

Update expressions (ADD/MUL/CLAMP/COALESCE) become Cypher expressions over the
element's own properties, read after its write lock, so concurrent bulk
updates never lose an increment. A null or non-number operand yields null and
the key is skipped for that element; so does a result that is not a finite number
(counted: ``skipped_non_finite``). An operand holding an integer beyond 64 bits is
refused (KIP_2003) rather than skipped. ``updated`` counts elements whose stored
state actually changed (and whose ``_version`` therefore grew).

The dry-run probe is the same statement without the lock and the write: it computes the
same counts in a read transaction. In strict schema mode the statement also returns what
the instance_schema checks need (the matched concepts' types with the computed values, or
the attributes a DELETE ATTRIBUTES removes); the program checks them and a failure rolls
the write back.

The program that runs a ``BulkPlan`` is ``kip2cypher.execution.programs.bulk``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import errors
from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Internal, Param, Part, Statement, frag, join
from ..domain import rules, writes
from ..errors import KipError
from ..syntax import ast
from ..syntax.values import resolve, resolve_int
from . import context, grounding, surprises
from . import pattern as pat
from .named import NamedElements, named_elements, named_target
from .plan import Compiled, Plan
from .update_values import Expr

#: The largest finite double: ``abs(x) <= MAX_DOUBLE`` is false for ±Infinity and NaN.
MAX_DOUBLE = "1.7976931348623157E308"
#: A stored integer beyond 64 bits: exact JSON text behind the marker, which Neo4j cannot compute with.
BIG_INTEGER = Param(storage.JSON_MARKER + "-?[0-9]+", "kip_big_int")
#: Strict schema checks a bulk program makes (``BulkPlan.schema_rule``).
CHECK_VALUES = "values"  # UPDATE: the attribute values written fit the instance_schema (KIP_2003)
CHECK_REQUIRED = "required"  # DELETE ATTRIBUTES: no required attribute is removed (KIP_2002)


# ====================================================================== the plan


@dataclass(frozen=True)
class BulkPlan(Plan):
    """A bulk KML mutation (UPDATE, DELETE ATTRIBUTES / METADATA / PROPOSITIONS / CONCEPT): one
    write statement over every element the WHERE matches.

    ``write`` (or, for a dry run, its read-only ``probe``, which computes the same counts
    without writing) returns one row: ``matched``, the command's counts and ``_bad`` — labels
    of the protected elements matched, in which case nothing was written and the command fails
    with KIP_3004 naming ``keyword``. ``result`` maps each response key to the row's column;
    ``reported`` the additive keys reported only when non-zero. UPDATE's row also has ``big``
    (operands beyond 64 bits: KIP_2003). With ``schema_rule`` (strict mode) the row's
    ``strict`` column lists ``[type, values-or-keys]`` of the matched concepts, checked against
    their types' instance_schema (read with ``instance_schemas``); ``written`` holds the plain
    attribute values the command writes, ``key_at`` where the command names each attribute.
    Grounding (KIP_2001): the names used only in OPTIONAL / NOT / UNION are checked on every
    run (a typo there would not empty the match), all names when nothing matched.
    """

    keyword: str
    write: Compiled
    probe: Compiled
    result: tuple[tuple[str, str], ...]  # (response key, row column)
    grounding_all: grounding.Names
    grounding_optional: grounding.Names
    grounding_at: grounding.Offsets  # where the command names each of them (KIP_2001 positions)
    reported: tuple[tuple[str, str], ...] = ()
    schema_rule: str = ""
    written: Mapping[str, Any] = field(default_factory=dict)
    key_at: Mapping[str, int] = field(default_factory=dict)
    #: UPDATE: the row's ``held`` counts the matched elements that already held every value
    #: written — not rewritten, not counted in ``updated``: said in ``warnings`` (docs/interop.md A9).
    held: bool = False
    #: DELETE of a target the WHERE names exactly (``delete.named_target``): how it names it; that
    #: nothing matched then means it does not exist (KIP_3002), not an empty pattern.
    named: rules.Named = ()
    #: UPDATE: such a target that matched nothing is zero counts and a ``warnings`` entry
    #: (Appendix 4 lists KIP_3002 for DELETE, not UPDATE; docs/interop.md A11).
    named_missing_is_empty: bool = False
    #: UPDATE whose WHERE of more clauses names elements exactly (``named_elements``): when
    #: nothing matched, ``named_check`` reads which do not exist, each said in ``warnings``
    #: (docs/interop.md A11).
    named_all: NamedElements = ()

    @property
    def named_check(self) -> Compiled | None:
        """The statement that reads which of ``named_all`` do not exist (``grounding.key_check``,
        as ``FindPlan.key_check``; run only when nothing matched)."""
        return grounding.key_check(self.names) if self.named_all else None

    @property
    def checks_values(self) -> bool:
        """Strict UPDATE: the values written must fit the instance_schema (else: no required attribute removed)."""
        return self.schema_rule == CHECK_VALUES

    @property
    def schemas_read(self) -> Compiled:
        """The statement that reads the instance_schemas ``schema_rule`` checks against."""
        return instance_schemas(self.names)

    def steps(self) -> tuple[Compiled, ...]:
        checks = (grounding.check_statement(self.grounding_all, self.names), grounding.defined_names(self.names)) if self.grounding_all else ()
        schemas = (self.schemas_read,) if self.schema_rule else ()
        named = (self.named_check,) if self.named_check is not None else ()
        return (self.write, self.probe, *schemas, *checks, *named)


@functools.lru_cache(maxsize=64)
def instance_schemas(names: storage.Names = storage.DEFAULT) -> Compiled:
    """The stored instance_schema of each concept type in ``$types`` (strict mode)."""
    s = Statement()
    s.line("UNWIND ", Param(None, "types"), " AS name")
    s.line("OPTIONAL MATCH (c:", names.concept, " {type: ", Param(storage.CONCEPT_TYPE, "concept_type"), ", name: name})")
    s.line("RETURN name, c.", Ident(storage.attr_key("instance_schema")), " AS schema")
    return Compiled.of(s, "strict schema: instance_schema of the matched concept types")


# ====================================================================== shared WHERE helpers
class Targets:
    """The lowered WHERE of a bulk KML statement, reduced to one row per distinct ``?target``."""

    def __init__(self, where, target: str, parameters, settings: Settings, used_in: str, kinds, limit=None) -> None:
        # Lean lowering (docs/kql.md): only ?target is read after the WHERE.
        self.pattern = pat.lower_where(where, parameters, settings, used=[target])
        self.names = self.pattern.ctx.names
        #: concept / proposition when the WHERE pins the kind (element: either)
        self.kind = self.pattern.require(target, used_in=used_in, kinds=kinds).kind
        self.pattern.writable(target, used_in)
        self.grounding_all = grounding.names(self.pattern.grounding)
        self.grounding_optional = grounding.names(self.pattern.grounding, required_only=False)
        self.grounding_at = grounding.offsets(self.pattern.grounding)
        self.pattern.distinct([target], used_in=used_in)
        self.var = self.pattern.ref(target)
        self.stmt = self.pattern.statement()
        if limit is not None:
            self.stmt.line("WITH ", self.var, " LIMIT ", Param(resolve_int(limit, parameters, "LIMIT"), "kip_limit"))

    def per_element(self, protected: Part) -> Statement:
        """One row per target, named ``t``, with ``_prot``: whether it is protected (``protected``,
        a test on the target's variable, or ``false``). Returns a copy of the statement so far: the
        start of the read-only dry-run probe, which the caller completes like the write."""
        self.stmt.line("WITH ", self.var, " AS t, ", protected, " AS _prot")
        return Statement().extend(self.stmt)

    def collect_guarded(self, matched: str, protected: Fragment) -> Statement:
        """Collect the targets into the list ``matched`` and the labels of the protected ones
        (``protected``: a test on ``x``) into ``_bad``. Returns a copy of the statement so far:
        the start of the read-only dry-run probe, which the caller completes like the write."""
        self.stmt.line("WITH collect(", self.var, ") AS ", matched)
        self.stmt.line("WITH ", matched, ", [x IN ", matched, " WHERE ", protected, " | ", element_label("x", self.names), "] AS _bad")
        return Statement().extend(self.stmt)

    def plan(self, keyword: str, what: str, probe: Statement, result: tuple[tuple[str, str], ...], **checks: Any) -> BulkPlan:
        """The plan of the finished write statement ``self.stmt`` (``what``: what it does, for its
        label) and of its ``probe``; ``checks``: the optional ``BulkPlan`` fields."""
        return BulkPlan(
            keyword=keyword,
            write=Compiled.of(self.stmt, f"{keyword}: match, check protection, {what}"),
            probe=Compiled.of(probe, f"{keyword} dry_run: match, check protection, count without writing"),
            result=result,
            grounding_all=self.grounding_all,
            grounding_optional=self.grounding_optional,
            grounding_at=self.grounding_at,
            warnings=surprises.other_kind(self.pattern.ctx.other_kind_reads),
            **checks,
        )


def bad_element(x: Any, names: storage.Names, *, core_directives: bool, kind: str = context.ELEMENT) -> Fragment:
    """Cypher: ``x`` is a protected element for a bulk mutation.

    Fully protected concepts and their CoreSchema links always; $self/$system
    only when the statement touches core_directives. ``kind``: what the WHERE binds ``x`` to
    (a ``concept`` clause only matches ``:KipConcept`` nodes, a ``?link (…)`` clause only
    ``:KipProposition`` nodes): then only that half is tested, without label checks.
    """
    concept = rules.cy_protected_node(x, names, actors=core_directives)
    if kind == context.CONCEPT:
        return frag("coalesce(", concept, ", false)")
    if kind == context.PROPOSITION:
        return frag("coalesce(", rules.cy_protected_link(x, names), ", false)")
    return frag(
        "coalesce((",
        x,
        ":",
        names.concept,
        " AND ",
        concept,
        ") OR (",
        x,
        ":",
        names.proposition,
        " AND ",
        rules.cy_protected_link(x, names),
        "), false)",
    )


def current(t: Any, keys: list[str]) -> Fragment:
    """Cypher: the stored values of ``keys`` on ``t`` (a map; a missing key is null) — read
    after ``t``'s lock, each by a key the planner cannot see (``t[$p]``): a static read may be
    answered from a value the match cached before the lock (a FILTER on the same key), which a
    concurrent writer may have changed since. Only these properties are read (``properties(t)``
    reads every one of them)."""
    return frag("{", join(", ", [frag(Ident(k), ": ", t, "[", Param(k), "]") for k in dict.fromkeys(keys)]), "}")


def element_label(x: Any, names: storage.Names) -> Fragment:
    """Cypher: a readable label for an element in error messages."""
    return frag(
        "CASE WHEN ", x, ":", names.concept, " THEN '{type: \"' + ", x, ".type + '\", name: \"' + ", x, ".name + '\"}' ELSE '(id: \"' + ", x, ".id + '\")' END"
    )


def lock(x: Part) -> Fragment:
    """Cypher: take the exclusive write lock on ``x`` (a no-op write; Neo4j locks on write)."""
    return frag("SET ", x, ".", Ident(writes.LOCK), " = true REMOVE ", x, ".", Ident(writes.LOCK))


@contextmanager
def each_element(stmt: Statement, names: storage.Names, returns: Part, totals: Part, *, write: bool) -> Iterator[Statement]:
    """The per-element step of UPDATE and DELETE ATTRIBUTES / METADATA (after ``Targets.per_element``):
    the lines written inside run once per element ``t`` — after its write lock when ``write`` (the
    dry-run probe reads only) —, carry ``t`` and ``_prot`` and write nothing when ``_prot``;
    ``returns`` (per element) are aggregated into ``totals``, with ``matched`` and ``_bad`` (the
    labels of the protected elements: the program refuses the command, KIP_3004, and the
    transaction rolls back)."""
    if write:
        stmt.line(lock("t"))
    yield stmt
    stmt.line("WITH t, _prot, ", returns)
    stmt.line("WITH count(t) AS matched, ", totals, ", collect(CASE WHEN _prot THEN ", element_label("t", names), " END) AS _bad")


#: The guard of a per-element write: the element changes and is not protected.
WRITES = "FOREACH (_ IN CASE WHEN changed AND NOT _prot THEN [1] ELSE [] END | "


def protection(targets: Targets, where: tuple[ast.WhereItem, ...], target: str, parameters: Mapping[str, Any], *, actors: bool) -> Part:
    """Cypher: whether the bulk write's element ``t`` is protected (``bad_element`` on the target's
    variable), or ``false`` when the WHERE itself rules it out — its top level pins ``?target`` to
    a concept type no protected concept has, or to a proposition whose predicate is not
    belongs_to_domain: a single named predicate, or a predicate variable with
    ``FILTER(?p != "belongs_to_domain")``. Saves a read of every element (its labels or predicate)."""
    for item in where:
        if isinstance(item, ast.ConceptClause) and item.var == target and item.type is not None:
            type_ = resolve(item.type, dict(parameters))
            if isinstance(type_, str) and not rules.protectable_type(type_, actors=actors):
                return "false"
        if isinstance(item, ast.PropositionClause) and item.var == target and _not_btd(item.predicate, where, parameters):
            return "false"
    return bad_element(targets.var, targets.names, core_directives=actors, kind=targets.kind)


def _not_btd(predicate: Any, where: tuple[ast.WhereItem, ...], parameters: Mapping[str, Any]) -> bool:
    """The proposition clause's ``predicate`` can never be belongs_to_domain (see ``protection``)."""
    if isinstance(predicate, ast.PredicatePattern):
        if predicate.quantifier is not None or len(predicate.names) != 1:
            return False
        name = predicate.names[0]
        name = resolve(name, dict(parameters)) if isinstance(name, ast.Placeholder) else name
        return isinstance(name, str) and name != storage.BELONGS_TO_DOMAIN
    if isinstance(predicate, ast.Var):
        excluded = (ast.Var(predicate.name), ast.Literal(storage.BELONGS_TO_DOMAIN))
        return any(
            isinstance(item, ast.Filter)
            and isinstance(item.expr, ast.Comparison)
            and item.expr.op == "!="
            and tuple(_bare(o) for o in (item.expr.left, item.expr.right)) in (excluded, excluded[::-1])
            for item in where
        )
    return False


def _bare(operand: Any) -> Any:
    """A FILTER operand without its position (to compare it with a made-up one)."""
    if isinstance(operand, ast.Var):
        return ast.Var(operand.name)
    if isinstance(operand, ast.Literal):
        return ast.Literal(operand.value)
    return None


def strict_rows(enabled: bool, row: Part, names: storage.Names) -> tuple[Part, str]:
    """The ``strict`` column (strict mode: the distinct ``row`` of every matched concept): the
    aggregate to add to the per-element totals, and the final column. Off, the column is a
    constant — an expression beside aggregates would become a grouping key (no rows, no row)."""
    if not enabled:
        return "", "[] AS strict"
    return frag(", collect(DISTINCT CASE WHEN t:", names.concept, " THEN ", row, " END) AS strict"), "strict"


# ====================================================================== UPDATE
@dataclass(frozen=True)
class _Assignment:
    key: str  # the stored key (``attr.k`` / ``meta.k``)
    value: Fragment  # a plain value, or the expression (its result is ``_raw.<key>``)
    computed: bool


def _update_element(stmt: Statement, sets: list[_Assignment], reads: list[str], *, write: bool) -> None:
    """The per-element lines of UPDATE (module doc): read, compute, guard, compare, write."""
    cur = Internal("cur")
    keys = [a.key for a in sets]
    computed = [a for a in sets if a.computed]
    stmt.line("WITH t, _prot, ", current("t", [*keys, *reads, writes.VERSION]), " AS ", cur)
    if computed:
        stmt.line("WITH t, _prot, ", cur, ", {", join(", ", [frag(Ident(a.key), ": ", a.value) for a in computed]), "} AS _raw")
    # A result that is not a finite number (±Infinity, NaN) is never stored: null skips the key.
    new = [
        frag(Ident(a.key), ": ", frag("CASE WHEN abs(_raw.", Ident(a.key), ") <= ", MAX_DOUBLE, " THEN _raw.", Ident(a.key), " END") if a.computed else a.value)
        for a in sets
    ]
    carried = ", _raw" if computed else ""
    stmt.line("WITH t, _prot, ", cur, carried, ", {", join(", ", new), "} AS _new")
    skipped = "size([k IN keys(_raw) WHERE _raw[k] IS NOT NULL AND _new[k] IS NULL])" if computed else "0"
    big = frag("[k IN ", Param(sorted(set(reads)), "kip_reads"), " WHERE ", cur, "[k] =~ ", BIG_INTEGER, "]") if reads else "[]"
    stmt.line(
        "WITH t, _prot, ",
        cur,
        ", _new, ",
        skipped,
        " AS _skipped, ",
        big,
        " AS _big, ",
        "any(k IN keys(_new) WHERE _new[k] IS NOT NULL AND (",
        cur,
        "[k] IS NULL OR ",
        cur,
        "[k] <> _new[k])) AS changed",
    )
    if write:
        assigned = [frag("t.", Ident(k), " = coalesce(_new.", Ident(k), ", ", cur, ".", Ident(k), ")") for k in keys]
        assigned.append(frag("t.", Ident(writes.VERSION), " = coalesce(", cur, ".", Ident(writes.VERSION), ", 0) + 1"))
        assigned.append(frag("t.", Ident(writes.UPDATED_AT), " = ", Param(None, writes.NOW)))
        stmt.line(WRITES, "SET ", join(", ", assigned), ")")


def _assignments(command: ast.Update, expr: Expr) -> tuple[list[_Assignment], dict[str, Any], dict[str, int]]:
    """The keys an UPDATE sets, lowered; the plain attribute values it writes (for the strict
    checks); where the command names each attribute (their error positions)."""
    entries: list[tuple[str, Any, int]] = []
    if command.set_attributes is not None:
        body = command.set_attributes
        spans = body.key_spans or (body.span,) * len(body.entries)
        entries += [(storage.attr_key(k), v, span.start) for (k, v), span in zip(body.entries, spans)]
    if command.set_metadata is not None:
        rules.check_metadata_keys([k for k, _ in command.set_metadata.entries], "UPDATE … SET METADATA")
        entries += [(storage.meta_key(k), v, command.set_metadata.span.start) for k, v in command.set_metadata.entries]
    if not entries:
        raise KipError(
            errors.INVALID_SYNTAX,
            "UPDATE needs at least one key in SET ATTRIBUTES or SET METADATA.",
            "Write UPDATE ?x SET ATTRIBUTES { key: value } WHERE { … }.",
        )
    keys = [k for k, _, _ in entries]
    if len(set(keys)) != len(keys):
        raise KipError(errors.INVALID_SYNTAX, "UPDATE sets the same key twice.", "List each key once per SET block.")
    sets: list[_Assignment] = []
    written: dict[str, Any] = {}
    key_at: dict[str, int] = {}
    for key, value, at in entries:
        computed = expr.computes(value)
        sets.append(_Assignment(key, expr.numeric(value) if computed else expr.plain(value), computed))
        if key.startswith(storage.ATTR_PREFIX):
            name = key[len(storage.ATTR_PREFIX) :]
            key_at[name] = at
            if not computed:
                written[name] = resolve(value, expr.parameters)
    return sets, written, key_at


def lower_update(command: ast.Update, parameters: dict[str, Any], settings: Settings) -> BulkPlan:
    expr = Expr(command.target, parameters)
    sets, written, key_at = _assignments(command, expr)
    touches_cd = any(a.key == writes.CORE_DIRECTIVES for a in sets)
    strict = settings.strict_schema and bool(key_at)  # only attributes have an instance_schema
    targets = Targets(command.where, command.target, parameters, settings, "UPDATE", context.NODE_KINDS, command.limit)
    named_all = named_elements(command.where, parameters, settings.adoption)
    # strict mode: the computed attribute values of each matched concept (plain ones are in the plan)
    results = frag(
        "{",
        join(
            ", ",
            [frag(Ident(a.key[len(storage.ATTR_PREFIX) :]), ": _new.", Ident(a.key)) for a in sets if a.computed and a.key.startswith(storage.ATTR_PREFIX)],
        ),
        "}",
    )
    # _held: written values the element already holds, all of them (docs/interop.md A9)
    held = "NOT changed AND any(k IN keys(_new) WHERE _new[k] IS NOT NULL) AS _held"
    big = frag("CASE WHEN size(_big) > 0 THEN [", element_label("t", targets.names), ", _big[0]] END AS big")
    returns = frag("changed, _skipped, ", held, ", ", big, ", _new" if strict else "")
    strict_total, strict_column = strict_rows(strict, frag("[t.type, ", results, "]"), targets.names)
    totals = frag(
        "count(CASE WHEN changed THEN 1 END) AS updated, sum(_skipped) AS skipped, count(CASE WHEN _held THEN 1 END) AS held, collect(big)[..3] AS big",
        strict_total,
    )

    probe = targets.per_element(protection(targets, command.where, command.target, parameters, actors=touches_cd))
    for stmt, write in ((targets.stmt, True), (probe, False)):
        with each_element(stmt, targets.names, returns, totals, write=write):
            _update_element(stmt, sets, expr.reads, write=write)
        stmt.line("RETURN matched, updated, skipped, held, big, ", strict_column, ", _bad")
    return targets.plan(
        "UPDATE",
        "compute and write per element",
        probe,
        (("updated", "updated"), ("matched", "matched")),
        reported=(("skipped_non_finite", "skipped"),),
        held=True,
        named=named_target(command.where, command.target),
        named_missing_is_empty=True,
        named_all=named_all,
        schema_rule=CHECK_VALUES if strict else "",
        written=written,
        key_at=key_at,
    )


# ====================================================================== DELETE ATTRIBUTES / METADATA
def _lower_delete_keys(command, parameters: dict[str, Any], settings: Settings, *, metadata: bool) -> BulkPlan:
    keyword = "DELETE METADATA" if metadata else "DELETE ATTRIBUTES"
    if metadata:
        rules.check_metadata_keys(command.keys, keyword)
    prefix = storage.META_PREFIX if metadata else storage.ATTR_PREFIX
    keys = [prefix + k for k in command.keys]
    touches_cd = not metadata and writes.CORE_DIRECTIVES in keys
    strict = settings.strict_schema and not metadata
    targets = Targets(command.where, command.target, parameters, settings, keyword, context.NODE_KINDS)
    probe = targets.per_element(protection(targets, command.where, command.target, parameters, actors=touches_cd))
    # strict mode: which of the listed attributes each matched concept holds (and would lose)
    held = frag("[t.type, [k IN ", Param(list(command.keys), "kip_names"), " WHERE _cur[", Param(prefix, "kip_prefix"), " + k] IS NOT NULL]]")
    strict_total, strict_column = strict_rows(strict, held, targets.names)
    totals = frag(
        "count(CASE WHEN changed AND is_concept THEN 1 END) AS concepts, count(CASE WHEN changed AND NOT is_concept THEN 1 END) AS propositions",
        strict_total,
    )
    for stmt, write in ((targets.stmt, True), (probe, False)):
        returns = frag("changed, t:", targets.names.concept, " AS is_concept", ", _cur" if strict else "")
        with each_element(stmt, targets.names, returns, totals, write=write):
            stmt.line("WITH t, _prot, ", current("t", [*keys, writes.VERSION]), " AS _cur")
            stmt.line("WITH t, _prot, _cur, any(k IN ", Param(keys, "kip_keys"), " WHERE _cur[k] IS NOT NULL) AS changed")
            if write:
                stmt.line(
                    WRITES,
                    "REMOVE ",
                    join(", ", [frag("t.", Ident(k)) for k in keys]),
                    " SET t.",
                    Ident(writes.VERSION),
                    " = coalesce(_cur.",
                    Ident(writes.VERSION),
                    ", 0) + 1, t.",
                    Ident(writes.UPDATED_AT),
                    " = ",
                    Param(None, writes.NOW),
                    ")",
                )
        stmt.line("RETURN matched, concepts, propositions, ", strict_column, ", _bad")
    spans = command.key_spans or (command.span,) * len(command.keys)
    return targets.plan(
        keyword,
        "remove keys",
        probe,
        (("updated_concepts", "concepts"), ("updated_propositions", "propositions")),
        schema_rule=CHECK_REQUIRED if strict else "",
        key_at={k: span.start for k, span in zip(command.keys, spans)},
        named=named_target(command.where, command.target),
    )


def lower_delete_attributes(command: ast.DeleteAttributes, parameters: dict[str, Any], settings: Settings) -> BulkPlan:
    return _lower_delete_keys(command, parameters, settings, metadata=False)


def lower_delete_metadata(command: ast.DeleteMetadata, parameters: dict[str, Any], settings: Settings) -> BulkPlan:
    return _lower_delete_keys(command, parameters, settings, metadata=True)

"""UPDATE (spec §4.3) and DELETE ATTRIBUTES / DELETE METADATA (§4.2.1–4.2.2), and the plan
every bulk mutation shares (``BulkPlan``: these three and the DELETEs of ``delete.py``).

All three are one Cypher statement on top of the shared WHERE lowering
(``lower/pattern.py``)::

    <WHERE lines>
    WITH DISTINCT t [WITH t LIMIT $limit]
    WITH collect(t) AS _ts                      -- the matched set
    WITH _ts, [x IN _ts WHERE <protected>] AS _bad
    CALL (_ts, _bad) {                          -- writes only when nothing protected matched
      … UNWIND _ts AS t
      CALL (t) { lock t; read its keys; compute; write if changed }
    }
    RETURN size(_ts) AS matched, updated …, _bad

Update expressions (ADD/MUL/CLAMP/COALESCE) become Cypher expressions over the
element's own properties, read after its write lock, so concurrent bulk
updates never lose an increment. A null or non-number operand yields null and
the key is skipped for that element. ``updated`` counts elements whose stored
state actually changed (and whose ``_version`` therefore grew).

The program that runs a ``BulkPlan`` is ``kip2cypher.execution.programs.bulk``.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from .. import errors
from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Internal, Param, Part, Statement, frag, join
from ..errors import KipError
from ..syntax import ast
from ..syntax.values import describe, resolve, resolve_int
from . import grounding
from . import pattern as pat
from . import rules
from . import writes as K
from .plan import Compiled, Plan

NUMERIC = " IS :: INTEGER | FLOAT"


# ====================================================================== the plan
@dataclass(frozen=True)
class BulkPlan(Plan):
    """A bulk KML mutation (UPDATE, DELETE ATTRIBUTES / METADATA / PROPOSITIONS / CONCEPT): one
    write statement over every element the WHERE matches.

    ``write`` (or, for a dry run, its read-only ``probe``) returns one row: ``matched``, the
    command's counts and ``_bad`` — labels of the protected elements matched, in which case
    nothing was written and the command fails with KIP_3004 naming ``keyword``. ``result``
    maps each response key to the row's column. Grounding (KIP_2001): the names used only in
    OPTIONAL / NOT / UNION are checked on every run (a typo there would not empty the match),
    all names when nothing matched.
    """

    KIND = "KML"
    ACCESS = "WRITE"
    keyword: str
    write: Compiled
    probe: Compiled
    result: tuple[tuple[str, str], ...]  # (response key, row column)
    grounding_all: grounding.Names
    grounding_optional: grounding.Names

    def steps(self) -> tuple[Compiled, ...]:
        checks = (grounding.check_statement(self.grounding_all, self.names), grounding.defined_names(self.names)) if self.grounding_all else ()
        return (self.write, self.probe, *checks)


# ====================================================================== shared WHERE helpers
class Targets:
    """The lowered WHERE of a bulk KML statement, reduced to one row per distinct ``?target``."""

    def __init__(self, where, target: str, parameters, settings: Settings, used_in: str, kinds, limit=None) -> None:
        # Lean lowering (docs/kql.md): only ?target is read after the WHERE.
        self.pattern = pat.lower_where(where, parameters, settings, used=[target])
        self.names = self.pattern.lowerer.names
        #: concept / proposition when the WHERE pins the kind (element: either)
        self.kind = self.pattern.require(target, used_in=used_in, kinds=kinds).kind
        self.grounding_all = grounding.names(self.pattern.grounding)
        self.grounding_optional = grounding.names(self.pattern.grounding, required_only=False)
        self.pattern.distinct([target], used_in=used_in)
        self.var = self.pattern.ref(target)
        self.stmt = self.pattern.statement()
        if limit is not None:
            self.stmt.line("WITH ", self.var, " LIMIT ", Param(resolve_int(limit, parameters, "LIMIT"), "kip_limit"))

    def collect_guarded(self, matched: str, protected: Fragment, dry_counts: str) -> Statement:
        """Collect the targets into the list ``matched`` and the labels of the protected ones
        (``protected``: a test on ``x``) into ``_bad``. Returns the read-only dry-run probe: the
        statement so far, returning ``matched``, ``dry_counts`` (zeros) and ``_bad``."""
        self.stmt.line("WITH collect(", self.var, ") AS ", matched)
        self.stmt.line("WITH ", matched, ", [x IN ", matched, " WHERE ", protected, " | ", element_label("x", self.names), "] AS _bad")
        probe = Statement().extend(self.stmt)
        probe.line("RETURN size(", matched, ") AS matched, ", dry_counts, ", _bad")
        return probe

    def plan(self, keyword: str, what: str, probe: Statement, result: tuple[tuple[str, str], ...]) -> BulkPlan:
        """The plan of the finished write statement ``self.stmt`` (``what``: what it does, for its label)."""
        return BulkPlan(
            keyword=keyword,
            write=Compiled.of(self.stmt, f"{keyword}: match, check protection, {what}"),
            probe=Compiled.of(probe, f"{keyword} dry_run: match and check protection"),
            result=result,
            grounding_all=self.grounding_all,
            grounding_optional=self.grounding_optional,
        )


def bad_element(x: Any, names: storage.Names, *, core_directives: bool, kind: str = pat.ELEMENT) -> Fragment:
    """Cypher: ``x`` is a protected element for a bulk mutation.

    Fully protected concepts and their CoreSchema links always; $self/$system
    only when the statement touches core_directives. ``kind``: what the WHERE binds ``x`` to
    (a ``concept`` clause only matches ``:KipConcept`` nodes, a ``?link (…)`` clause only
    ``:KipProposition`` nodes): then only that half is tested, without label checks.
    """
    concept = [rules.cy_protected_concept(frag(x, ".type"), frag(x, ".name"))]
    if core_directives:
        concept.append(rules.cy_actor(frag(x, ".type"), frag(x, ".name")))
    if kind == pat.CONCEPT:
        return frag("coalesce(", join(" OR ", concept), ", false)")
    if kind == pat.PROPOSITION:
        return frag("coalesce(", rules.cy_protected_link(x, names), ", false)")
    parts = [frag("(", x, ":", names.concept, " AND ", test, ")") for test in concept]
    parts.insert(1, frag("(", x, ":", names.proposition, " AND ", rules.cy_protected_link(x, names), ")"))
    return frag("coalesce(", join(" OR ", parts), ", false)")


def current(t: Any, keys: list[str]) -> Fragment:
    """Cypher: the stored values of ``keys`` on ``t`` (a map; a missing key is null) — read
    after ``t``'s lock. A map projection reads only these properties (``properties(t)`` reads
    every one of them)."""
    return frag(t, " {", join(", ", [frag(".", Ident(k)) for k in dict.fromkeys(keys)]), "}")


def element_label(x: Any, names: storage.Names) -> Fragment:
    """Cypher: a readable label for an element in error messages."""
    return frag("CASE WHEN ", x, ":", names.concept, " THEN '{type: \"' + ", x, ".type + '\", name: \"' + ", x, ".name + '\"}' ELSE '(id: \"' + ", x, ".id + '\")' END")


def lock(x: Part) -> Fragment:
    """Cypher: take the exclusive write lock on ``x`` (a no-op write; Neo4j locks on write)."""
    return frag("SET ", x, ".", Ident(K.LOCK), " = true REMOVE ", x, ".", Ident(K.LOCK))


@contextmanager
def each_locked(stmt: Statement, returns: Part, totals: Part) -> Iterator[Statement]:
    """The per-element write of UPDATE and DELETE ATTRIBUTES / METADATA: the lines written inside
    run once per element ``t`` of ``_ts`` under its write lock, and only when nothing protected
    matched; each returns ``returns``, aggregated into ``totals``."""
    with stmt.block("CALL (_ts, _bad)"):
        stmt.line("WITH _ts WHERE size(_bad) = 0")
        stmt.line("UNWIND _ts AS t")
        with stmt.block("CALL (t)"):
            stmt.line(lock("t"))
            yield stmt
            stmt.line("RETURN ", returns)
        stmt.line("RETURN ", totals)


# ====================================================================== UPDATE expressions
class Expr:
    """Lowers one UPDATE value position into a Cypher expression over ``cur`` (the element's properties)."""

    def __init__(self, target: str, parameters: dict[str, Any]) -> None:
        self.target = target
        self.parameters = parameters
        #: the stored keys the expressions read (``cur.<key>``)
        self.reads: list[str] = []

    def path(self, value: ast.DotPath) -> Fragment:
        if value.var != self.target:
            raise KipError(
                errors.REFERENCE_ERROR,
                f"An update expression can only read ?{self.target} itself, not ?{value.var}.",
                f"Each element's new value must come from its own state: use ?{self.target}.attributes.… / ?{self.target}.metadata.….",
            )
        if len(value.path) != 2 or value.path[0] not in ("attributes", "metadata"):
            raise KipError(
                errors.INVALID_SYNTAX,
                f"?{value.var}.{'.'.join(value.path)} is not a numeric operand.",
                f"Update expressions read ?{self.target}.attributes.<key> or ?{self.target}.metadata.<key>.",
            )
        prefix = storage.ATTR_PREFIX if value.path[0] == "attributes" else storage.META_PREFIX
        self.reads.append(prefix + value.path[1])
        return frag(Internal("cur"), ".", Ident(prefix + value.path[1]))

    def numeric(self, value: Any) -> Fragment:
        """A number-or-null expression (null when the operand is null or not a number)."""
        if isinstance(value, ast.DotPath):
            raw = self.path(value)
            return frag("CASE WHEN ", raw, NUMERIC, " THEN ", raw, " END")
        if isinstance(value, ast.UpdateCall):
            return self.call(value)
        v = resolve(value, self.parameters)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise KipError(
                errors.INVALID_VALUE_TYPE,
                f"Update expression operands must be numbers, got {describe(v)}.",
                "Use number literals, :placeholders bound to numbers, ?target.… paths or nested ADD/MUL/CLAMP/COALESCE.",
            )
        return frag(Param(v))

    def call(self, call: ast.UpdateCall) -> Fragment:
        f = call.func
        if f == "ADD":
            return frag("(", self.numeric(call.args[0]), " + ", self.numeric(call.args[1]), ")")
        if f == "MUL":
            return frag("(", self.numeric(call.args[0]), " * ", self.numeric(call.args[1]), ")")
        if f == "CLAMP":
            x, lo, hi = (self.numeric(a) for a in call.args)
            return frag(
                "CASE WHEN ", x, " IS NULL OR ", lo, " IS NULL OR ", hi, " IS NULL THEN null WHEN ", x, " < ", lo,
                " THEN ", lo, " WHEN ", x, " > ", hi, " THEN ", hi, " ELSE ", x, " END",
            )
        if f == "COALESCE":
            first, default = call.args
            d = self.numeric(default)
            if isinstance(first, ast.DotPath):
                raw = self.path(first)
                return frag(
                    "CASE WHEN ", raw, " IS NULL OR ", raw, " = ", pat.JSON_NULL_LITERAL, " THEN ", d,
                    " WHEN ", raw, NUMERIC, " THEN ", raw, " END",
                )
            return frag("coalesce(", self.numeric(first), ", ", d, ")")
        raise KipError(errors.INVALID_SYNTAX, f"Unknown update function {f}.", "Use ADD, MUL, CLAMP or COALESCE.")

    def top(self, value: Any) -> Fragment:
        """A value position: a plain JSON value (stored as is) or an update expression."""
        if isinstance(value, (ast.DotPath, ast.UpdateCall)):
            return self.numeric(value)
        return frag(Param(storage.encode(resolve(value, self.parameters))))


# ====================================================================== UPDATE
def lower_update(command: ast.Update, parameters: dict[str, Any], settings: Settings) -> BulkPlan:
    entries: list[tuple[str, Any]] = []
    if command.set_attributes is not None:
        entries += [(storage.attr_key(k), v) for k, v in command.set_attributes.entries]
    if command.set_metadata is not None:
        rules.check_metadata_keys([k for k, _ in command.set_metadata.entries], "UPDATE … SET METADATA")
        entries += [(storage.meta_key(k), v) for k, v in command.set_metadata.entries]
    if not entries:
        raise KipError(errors.INVALID_SYNTAX, "UPDATE needs at least one key in SET ATTRIBUTES or SET METADATA.", "Write UPDATE ?x SET ATTRIBUTES { key: value } WHERE { … }.")
    keys = [k for k, _ in entries]
    if len(set(keys)) != len(keys):
        raise KipError(errors.INVALID_SYNTAX, "UPDATE sets the same key twice.", "List each key once per SET block.")
    touches_cd = K.CORE_DIRECTIVES in keys
    expr = Expr(command.target, parameters)
    values = [expr.top(v) for _, v in entries]

    targets = Targets(command.where, command.target, parameters, settings, "UPDATE", pat.NODE_KINDS, command.limit)
    stmt, cur = targets.stmt, Internal("cur")
    probe = targets.collect_guarded("_ts", bad_element("x", targets.names, core_directives=touches_cd, kind=targets.kind), "0 AS updated")
    with each_locked(stmt, "changed", "count(CASE WHEN changed THEN 1 END) AS updated"):
        stmt.line("WITH t, ", current("t", [*keys, *expr.reads, K.VERSION]), " AS ", cur)
        new_map = join(", ", [frag(Ident(k), ": ", v) for k, v in zip(keys, values)])
        stmt.line("WITH t, ", cur, ", {", new_map, "} AS _new")
        stmt.line("WITH t, ", cur, ", _new, [k IN keys(_new) WHERE _new[k] IS NOT NULL] AS _keys")
        stmt.line("WITH t, ", cur, ", _new, any(k IN _keys WHERE ", cur, "[k] IS NULL OR ", cur, "[k] <> _new[k]) AS changed")
        with stmt.block("CALL (t, ", cur, ", _new, changed)"):
            stmt.line("WITH * WHERE changed")
            sets = [frag("t.", Ident(k), " = coalesce(_new.", Ident(k), ", ", cur, ".", Ident(k), ")") for k in keys]
            sets.append(frag("t.", Ident(K.VERSION), " = coalesce(", cur, ".", Ident(K.VERSION), ", 0) + 1"))
            sets.append(frag("t.", Ident(K.UPDATED_AT), " = ", Param(None, K.NOW)))
            stmt.line("SET ", join(", ", sets))
    stmt.line("RETURN size(_ts) AS matched, updated, _bad")
    return targets.plan("UPDATE", "compute and write per element", probe, (("updated", "updated"), ("matched", "matched")))


# ====================================================================== DELETE ATTRIBUTES / METADATA
def _lower_delete_keys(command, parameters: dict[str, Any], settings: Settings, *, metadata: bool) -> BulkPlan:
    keyword = "DELETE METADATA" if metadata else "DELETE ATTRIBUTES"
    if metadata:
        rules.check_metadata_keys(command.keys, keyword)
    prefix = storage.META_PREFIX if metadata else storage.ATTR_PREFIX
    keys = [prefix + k for k in command.keys]
    touches_cd = not metadata and K.CORE_DIRECTIVES in keys
    targets = Targets(command.where, command.target, parameters, settings, keyword, pat.NODE_KINDS)
    stmt = targets.stmt
    probe = targets.collect_guarded("_ts", bad_element("x", targets.names, core_directives=touches_cd, kind=targets.kind), "0 AS concepts, 0 AS propositions")
    totals = "count(CASE WHEN changed AND is_concept THEN 1 END) AS concepts, count(CASE WHEN changed AND NOT is_concept THEN 1 END) AS propositions"
    with each_locked(stmt, frag("changed, t:", targets.names.concept, " AS is_concept"), totals):
        stmt.line("WITH t, ", current("t", [*keys, K.VERSION]), " AS cur")
        stmt.line("WITH t, cur, any(k IN ", Param(keys, "kip_keys"), " WHERE cur[k] IS NOT NULL) AS changed")
        with stmt.block("CALL (t, cur, changed)"):
            stmt.line("WITH * WHERE changed")
            stmt.line("REMOVE ", join(", ", [frag("t.", Ident(k)) for k in keys]))
            stmt.line("SET t.", Ident(K.VERSION), " = coalesce(cur.", Ident(K.VERSION), ", 0) + 1, t.", Ident(K.UPDATED_AT), " = ", Param(None, K.NOW))
    stmt.line("RETURN size(_ts) AS matched, concepts, propositions, _bad")
    return targets.plan(keyword, "remove keys", probe, (("updated_concepts", "concepts"), ("updated_propositions", "propositions")))


def lower_delete_attributes(command: ast.DeleteAttributes, parameters: dict[str, Any], settings: Settings) -> BulkPlan:
    return _lower_delete_keys(command, parameters, settings, metadata=False)


def lower_delete_metadata(command: ast.DeleteMetadata, parameters: dict[str, Any], settings: Settings) -> BulkPlan:
    return _lower_delete_keys(command, parameters, settings, metadata=True)

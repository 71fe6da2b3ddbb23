"""KQL: ``FIND … WHERE … ORDER BY … LIMIT … CURSOR …`` → one parameterized Cypher query.

Shape of the generated query (docs/kql.md has every rule)::

    <WHERE lines from lower/pattern.py>
    WITH DISTINCT a, b                    -- §3.3 solution dedup on the identities of FIND's variables
    [WITH <group keys> AS cN, agg(…) AS cM] -- implicit GROUP BY when FIND aggregates
    ORDER BY k IS NULL, k DESC, …, a      -- nulls last; identity tie-break (nodes order by id)
    SKIP $skip LIMIT $limit               -- limit = LIMIT + 1 to know whether more remain
    RETURN … AS c0, … AS c1               -- whole nodes are projected only after the LIMIT

The lowering builds this shape unoptimised as a ``form.FindForm`` (``_FindLowering.form``),
then applies the optimisation passes of ``lower/passes.py`` in order (``lower_find``'s
``passes``): the lean WHERE, reads bound once, pre-grouping, the DISTINCT left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import cursor
from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Fragment, Head, Internal, Param, Part, Statement, Var, frag, join
from ..domain import rules
from ..errors import INVALID_SYNTAX, KipError
from ..syntax import ast
from ..syntax.values import resolve, resolve_int
from . import adopted, adopted_values, filters, grounding, passes, surprises
from .context import CONCEPT, PREDICATE, PROPOSITION, Binding
from .form import Column, FindForm, Group, Read, Step, With, lines
from .grounding import key_check
from .named import NamedElements, named_elements, named_target
from .passes import PASSES
from .pattern import Pattern, lower_where
from .plan import Compiled, Plan

AGG = {"COUNT": "count", "SUM": "sum", "AVG": "avg", "MIN": "min", "MAX": "max"}


def _vars_of(expr: ast.Projection | ast.OrderKey) -> str:
    if isinstance(expr, ast.Aggregate):
        expr = expr.arg
    return expr.name if isinstance(expr, ast.Var) else expr.var


def _column(index: int) -> Var:
    return Var(f"c{index}")


#: How a result column is decoded (``kip2cypher.execution.results.DECODERS``).
RAW, ELEMENT_OBJECT, STORED, ATTRIBUTES, METADATA = "raw", "element", "stored", "attributes", "metadata"
#: Adopted elements (docs/adopt.md): the object built in Cypher, and values read of them.
ADOPTED_OBJECT, ADOPTED_VALUE = "adopted", "adopted_value"


@dataclass(frozen=True)
class FindPlan(Plan):
    """A FIND: one query, its result columns, paging, and the type and predicate names it uses.

    The query checks its own names: a ``UNION ALL`` tail yields one ``_undefined`` row only
    when one of ``grounding`` is not defined, so a misspelled name is reported (KIP_2001)
    whatever the rest matched, in the same round trip.
    """

    query: Compiled
    columns: tuple[tuple[str, str], ...]  # (column name, decoder)
    limit: int | None
    offset: int
    fingerprint: str
    aggregates_only: bool
    grounding: grounding.Names
    grounding_at: grounding.Offsets = ()
    #: Attribute/metadata keys read of elements of a known type: (concept?, type or predicate,
    #: stored key, variable, a number FILTER compares it with or None) — checked only when the
    #: answer is empty (``key_check``).
    key_checks: tuple[tuple[bool, str, str, str, Any], ...] = ()
    #: Said with every answer (``warnings``): how the query read adopted data (docs/adopt.md).
    notes: tuple[str, ...] = ()
    #: The WHERE is one clause naming its element exactly (``named.named_target``): an empty
    #: answer means it does not exist — said in ``warnings`` (docs/interop.md A11).
    named: rules.Named = ()
    #: The elements a WHERE of more clauses names exactly (``named.named_elements``): an empty
    #: answer checks which exist (``key_check``) and says which do not (docs/interop.md A11).
    named_all: NamedElements = ()
    #: Attribute keys read of adopted elements that the mapping does not expose (variable, key,
    #: adopted type or predicate): always null, so said with every answer, with the properties
    #: the team's elements carry (``unmapped_check``) for the did-you-mean.
    unmapped: tuple[tuple[str, str, Any], ...] = ()
    unmapped_check: Compiled | None = None
    #: docs/interop.md A5: FIND or ORDER BY reads a field of an endpoint variable that only one
    #: kind of element has — (hidden column, variable, the kind without the field, the fields
    #: read, the fields that kind has, the clause). The column is a label test returned with each
    #: row (true: the row — a collapsed solution, a group — bound the other kind, the value is
    #: null); the program counts them for ``warnings``.
    other_kind: tuple[tuple[str, str, str, tuple[str, ...], tuple[str, ...], str], ...] = ()
    #: What ``fingerprint`` digests (``cursor.fingerprint(*fingerprint_parts)``): a plan template
    #: recomputes it for new values (``lower.templates``).
    fingerprint_parts: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    @property
    def key_check(self) -> Compiled:
        """The statement that checks ``key_checks`` (run only when the answer is empty)."""
        return key_check(self.names)

    def steps(self) -> tuple[Compiled, ...]:
        checks = (grounding.check_statement(self.grounding, self.names), grounding.defined_names(self.names)) if self.grounding else ()
        keys = (self.key_check,) if self.key_checks or self.named_all else ()
        unmapped = (self.unmapped_check,) if self.unmapped_check is not None else ()
        # the grounding check runs only for a dry run (which EXPLAINs the query instead of running it)
        return (self.query, *checks, *keys, *unmapped)


class _Column:
    """One FIND expression: how it is computed in Cypher and decoded in Python."""

    def __init__(self, expr: ast.Projection, index: int) -> None:
        self.expr = expr
        self.index = index
        self.var = _column(index)
        self.aggregate = isinstance(expr, ast.Aggregate)
        self.decode = RAW


def _decoder(expr: ast.Projection, binding: Binding) -> str:
    if binding.adopted is not None:
        if isinstance(expr, ast.Aggregate):
            return ADOPTED_VALUE if expr.func in ("MIN", "MAX") else RAW
        return ADOPTED_OBJECT if isinstance(expr, ast.Var) else ADOPTED_VALUE
    if isinstance(expr, ast.Aggregate):
        return STORED if expr.func in ("MIN", "MAX") else RAW
    if isinstance(expr, ast.Var):
        return RAW if binding.kind == PREDICATE else ELEMENT_OBJECT
    head = expr.path[0]
    if head in filters.MAP_FIELDS:
        if len(expr.path) == 1:
            return ATTRIBUTES if head == "attributes" else METADATA
        return STORED
    return RAW


class _FindLowering:
    def __init__(self, command: ast.Find, parameters: dict[str, Any], settings: Settings, chosen: tuple[str, ...]) -> None:
        self.command = command
        self.parameters = parameters
        self.settings = settings
        self.passes = chosen
        used = [_vars_of(p) for p in command.projections] + [_vars_of(k.expr) for k in command.order_by]
        self.pattern: Pattern = lower_where(command.where, parameters, settings, used=used if "lean" in chosen else None)
        self.columns = [_Column(expr, i) for i, expr in enumerate(command.projections)]
        self.aggregating = any(c.aggregate for c in self.columns)
        self.aggregates_only = all(c.aggregate for c in self.columns)
        #: Variables an aggregating ORDER BY reads that are functionally grouped (carried along).
        self.hidden_groups: list[str] = []
        #: Stored values a guard names twice, one object per value (the read-once pass's input).
        self.reads: dict[ast.DotPath, Read] = {}
        #: docs/interop.md A5: the hidden columns that say a row bound the other kind (``kind_columns``).
        self.other_kind: list[tuple[str, str, str, tuple[str, ...], tuple[str, ...], str]] = []

    # ------------------------------------------------------------------ checks
    def check(self) -> None:
        for column in self.columns:
            binding = self.pattern.require(_vars_of(column.expr), used_in="FIND", at=column.expr.span.start)
            if column.aggregate:
                agg = column.expr
                if agg.func != "COUNT" and isinstance(agg.arg, ast.Var) and binding.kind != PREDICATE:
                    raise KipError(
                        INVALID_SYNTAX,
                        f"{agg.func}(?{agg.arg.name}) aggregates whole {binding.kind} objects; {agg.func} needs values.",
                        f"Aggregate a dot path such as {agg.func}(?{agg.arg.name}.attributes.<key>), or use COUNT(?{agg.arg.name}).",
                    )
            column.decode = _decoder(column.expr, binding)
        for key in self.command.order_by:
            self.pattern.require(_vars_of(key.expr), used_in="ORDER BY", at=key.span.start)
            if self.aggregating and self._find_index(key.expr) is None and not isinstance(key.expr, ast.Aggregate):
                name = _vars_of(key.expr)
                if name not in self.identity_grouped():
                    raise KipError(
                        INVALID_SYNTAX,
                        f"With aggregation in FIND, ORDER BY can use a FIND expression, or a dot path of a variable FIND groups by (?{name} or ?{name}.id in "
                        "FIND).",
                        "Order by a grouping expression or an aggregation that also appears in FIND (e.g. ORDER BY COUNT(?n) DESC).",
                    )
                self.hidden_groups.append(name)
            if isinstance(key.expr, ast.Aggregate) and self._find_index(key.expr) is None:
                raise KipError(
                    INVALID_SYNTAX, "An aggregation in ORDER BY must also appear in FIND.", "Add the aggregation to FIND, or order by a FIND expression."
                )

    def identity_grouped(self) -> set[str]:
        """Variables whose identity is part of the GROUP BY key (?x or ?x.id in FIND)."""
        out = set()
        for column in self.columns:
            expr = column.expr
            if isinstance(expr, ast.Var) or (isinstance(expr, ast.DotPath) and expr.path == ("id",)):
                out.add(_vars_of(expr))
        return out

    def _find_index(self, expr: ast.Projection) -> int | None:
        for column in self.columns:
            if column.expr == expr:
                return column.index
        return None

    def key_checks(self) -> tuple[tuple[bool, str, str, str, Any], ...]:
        """The keys FILTER, ORDER BY and FIND read of variables whose type or predicate is known
        (engine metadata such as ``_version`` is always there and is not checked), each with the
        number FILTER compares it with, if any (docs/interop.md A3)."""
        ctx = self.pattern.ctx
        out = []
        for (var, key), _ in ctx.key_uses.items():
            if var in ctx.var_kinds and not key.startswith(storage.META_PREFIX + "_"):
                concept, name = ctx.var_kinds[var]
                out.append((concept, name, key, var, ctx.numbers.get((var, key))))
        return tuple(out)

    def kind_reads(self, exprs: Iterable[ast.Projection]) -> dict[tuple[str, str], list[str]]:
        """docs/interop.md A5: (endpoint variable, the kind without the field) → the fields read
        among ``exprs`` (aggregate arguments included) that only the other kind has, of a
        variable that may bind either kind."""
        out: dict[tuple[str, str], list[str]] = {}
        for expr in exprs:
            path = expr.arg if isinstance(expr, ast.Aggregate) else expr
            lacking = filters.lacking_kind(self.pattern.bindings[path.var], path.path[0]) if isinstance(path, ast.DotPath) else None
            if lacking is not None:
                out.setdefault((path.var, lacking), []).append(path.path[0])
        return out

    def kind_columns(self, exprs: Iterable[ast.Projection], where: str) -> list[tuple[Internal, Fragment, str]]:
        """The hidden columns of ``kind_reads`` — each a label test that says a row bound the
        variable to the kind without the field (``o.name IS NULL AND o:KipProposition``; ``… AND
        NOT o:KipProposition`` for the proposition fields: a concept of memory, or of the team's
        graph under ``link_memory``) — recorded in ``self.other_kind`` for the plan (``where``:
        the clause that reads them, for the warning)."""
        out = []
        for (var, lacking), fields in self.kind_reads(exprs).items():
            column = Internal(f"kind{len(self.other_kind)}")
            ref = self.pattern.bindings[var].ref
            is_lacking = frag(ref, ":", self.pattern.ctx.names.proposition)
            # the label is read only where the value is null (the value itself is read anyway, cached)
            null = frag(ref, "." + fields[0], " IS NULL AND ")
            out.append((column, frag(null, is_lacking if lacking == PROPOSITION else frag("NOT ", is_lacking)), var))
            self.other_kind.append((column.render(), var, lacking, tuple(dict.fromkeys(fields)), filters.FIELDS[lacking], where))
        return out

    # ------------------------------------------------------------------ expressions
    def projected_vars(self) -> list[str]:
        """The variables FIND's expressions read, in order."""
        return list(dict.fromkeys(_vars_of(c.expr) for c in self.columns))

    def hidden_sort_vars(self) -> list[str]:
        """ORDER BY variables that FIND does not keep (non-aggregating FIND only)."""
        if self.aggregating:
            return []
        kept = set(self.projected_vars())
        return [n for n in dict.fromkeys(_vars_of(k.expr) for k in self.command.order_by) if n not in kept]

    def key_vars(self) -> list[str]:
        names = [_vars_of(c.expr) for c in self.columns]
        if not self.aggregating:
            names += [_vars_of(k.expr) for k in self.command.order_by]
        return list(dict.fromkeys(names))

    def projection(self, expr: ast.Projection) -> Fragment:
        """A FIND expression over the deduplicated variables (raw stored values)."""
        if isinstance(expr, ast.Aggregate):
            return self.aggregate(expr)
        if isinstance(expr, ast.Var):
            binding = self.pattern.bindings[expr.name]
            if binding.adopted is not None:
                return adopted.element(binding.ref, binding.adopted, self.settings.adoption)
        return self.pattern.value(expr)

    def shown(self, column: _Column, value: Part) -> Part:
        """A column's value as returned: a property read of an adopted element (or its MIN / MAX)
        as FIND shows it, temporal values as text (``adopted_values.display``). Grouping and
        sorting happen before, on the values themselves (instants, not texts)."""
        expr = column.expr.arg if isinstance(column.expr, ast.Aggregate) else column.expr
        if column.decode != ADOPTED_VALUE or not isinstance(expr, ast.DotPath):
            return value
        read = adopted_values.reads_property(self.pattern.bindings[expr.var].adopted, expr.path)
        return adopted_values.display(value) if read else value

    def aggregate(self, agg: ast.Aggregate) -> Fragment:
        func = AGG[agg.func]
        distinct = "DISTINCT " if agg.distinct else ""
        arg = agg.arg
        if isinstance(arg, ast.Var) or not self.pattern.filters.is_stored(arg):
            value = self.pattern.value(arg)
        else:
            # A stored value is guarded (below), which names it twice (the read-once pass).
            value = self.guarded_read(arg)
            if agg.func == "COUNT":
                value = frag("CASE WHEN ", value, " = ", filters.JSON_NULL_LITERAL, " THEN null ELSE ", value, " END")
            elif agg.func in ("MIN", "MAX"):
                value = frag("CASE WHEN ", value, " STARTS WITH ", filters.JSON_MARKER_LITERAL, " THEN null ELSE ", value, " END")
        if agg.func in ("SUM", "AVG"):
            # SUM/AVG keep numbers only (JSON text is a string and drops out with the type test).
            value = frag("CASE WHEN ", value, " IS :: INTEGER | FLOAT THEN ", value, " END")
        return frag(func, "(", distinct, value, ")")

    def pre_group_owner(self) -> str | None:
        """The node variable ``?x`` whose properties are the whole grouping key, when the
        aggregation can run per node of ``?x`` first: every non-aggregated FIND expression is a
        dot path of ``?x``, every aggregate is a plain COUNT / MIN / MAX (partials combine
        exactly) and one of them aggregates another variable (else there is one row per ``?x``
        already and nothing to gain)."""
        if self.aggregates_only:
            return None
        owners = {_vars_of(c.expr) for c in self.columns if not c.aggregate}
        if len(owners) != 1 or any(isinstance(c.expr, ast.Var) for c in self.columns if not c.aggregate):
            return None
        owner = owners.pop()
        if self.pattern.bindings[owner].kind == PREDICATE:
            return None
        aggregates = [c.expr for c in self.columns if c.aggregate]
        if any(a.func not in ("COUNT", "MIN", "MAX") or a.distinct for a in aggregates):
            return None
        if all(_vars_of(a) == owner for a in aggregates):
            return None
        if any(name != owner for name in self.hidden_groups):
            return None
        return owner

    def guarded_read(self, expr: ast.DotPath) -> Fragment:
        """A stored attribute/metadata value a guard names twice: the same object for the same
        path, recorded in ``self.reads`` (``passes.read_once`` binds it once)."""
        read = self.reads.get(expr)
        if read is None:
            read = Read(Internal(f"a{len(self.reads)}"), self.pattern.value(expr))
            self.reads[expr] = read
        return read.value

    def sort_value(self, expr: ast.Projection) -> Fragment:
        """The value a non-aggregating ORDER BY key sorts on."""
        if isinstance(expr, ast.Var):
            binding = self.pattern.bindings[expr.name]
            ref = binding.ref
            if binding.adopted is not None:
                return adopted.name_value(ref, binding.adopted)
            if binding.kind == PREDICATE:
                return frag(ref)
            if binding.kind == CONCEPT:
                return frag(ref, ".name")
            if binding.kind == PROPOSITION:
                return frag(ref, ".id")
            return frag("coalesce(", ref, ".name, ", ref, ".id)")
        return self.pattern.filters.operand(expr, self.pattern.bindings, "ORDER BY")

    @staticmethod
    def return_columns(returning: list) -> list:
        """The column variables of the RETURN items (``x AS c0`` → ``c0``)."""
        out = []
        for item in returning:
            if isinstance(item, Fragment):
                out.append(item.parts[-1])
            else:
                out.append(item)
        return out

    # ------------------------------------------------------------------ build
    def group(self) -> Group:
        """The implicit GROUP BY of an aggregating FIND (its ``owner`` for the pre-grouping pass)."""
        bindings = self.pattern.bindings
        owner = self.pre_group_owner()
        columns = tuple(
            Column(c.var, self.aggregate(c.expr) if c.aggregate else self.projection(c.expr), c.index, c.expr.func if c.aggregate else None)
            for c in self.columns
        )
        # docs/interop.md A5: whether some solution of the group bound the other kind (``MAX`` combines partials)
        hidden = tuple(
            Column(column, frag("max(", test, ")"), len(self.columns) + i, "MAX", per_owner=var == owner)
            for i, (column, test, var) in enumerate(self.kind_tests())
        )
        carried = tuple(bindings[name].ref for name in reversed(dict.fromkeys(self.hidden_groups)))
        return Group(carried, columns + hidden, bindings[owner].ref if owner is not None else None)

    def kind_tests(self) -> list[tuple[Internal, Fragment, str]]:
        """``kind_columns`` of what FIND shows and of the ORDER BY keys it does not (docs/interop.md A5)."""
        shown = [c.expr for c in self.columns]
        return [*self.kind_columns(shown, "FIND"), *self.kind_columns([k.expr for k in self.command.order_by if k.expr not in shown], "ORDER BY")]

    def form(self) -> FindForm:
        """The FIND between its WHERE and its RETURN, unoptimised (``lower/form.py``)."""
        self.check()
        pattern = self.pattern
        distinct = pattern.dedup(self.key_vars())
        bindings = pattern.bindings
        steps: list[Step] = []
        order: list[Fragment] = []
        # The identity tie-break makes the order total: paging needs it (stable pages, the n+1
        # probe row) and an ORDER BY gets deterministic ties from it at the price of one more key
        # in a sort that runs anyway. Without LIMIT, CURSOR and ORDER BY nothing is sorted at all.
        total_order = self.command.limit is not None or self.command.cursor is not None or bool(self.command.order_by)

        def sort(value: Fragment, descending: bool) -> None:
            if descending:
                order.append(frag(value, " IS NULL"))
                order.append(frag(value, " DESC"))
            else:
                order.append(value)

        if self.aggregating:
            group = self.group()
            steps.append(group)
            for key in self.command.order_by:
                index = self._find_index(key.expr)
                if index is None:  # a path of an identity-grouped variable, carried along
                    sort(self.sort_value(key.expr), key.descending)
                    continue
                column = self.columns[index]
                value: Fragment = frag(column.var)
                if isinstance(key.expr, ast.Var) and bindings[key.expr.name].kind != PREDICATE:
                    value = frag("coalesce(", column.var, ".name, ", column.var, ".id)")
                sort(value, key.descending)
            for column in self.columns if total_order else ():
                if column.aggregate:
                    continue
                if isinstance(column.expr, ast.Var) and bindings[column.expr.name].kind != PREDICATE:
                    order.append(frag(column.var))  # nodes are orderable (by id): no elementId string per row
                elif not (isinstance(column.expr, ast.DotPath) and len(column.expr.path) == 1 and column.expr.path[0] in filters.MAP_FIELDS):
                    order.append(frag(column.var))
            returning = [frag(self.shown(c, c.var), " AS ", c.var) if c.decode == ADOPTED_VALUE else c.var for c in self.columns]
            returning += [column.var for column in group.columns[len(self.columns) :]]  # A5: after the answer's own
        elif self.hidden_sort_vars():
            # §3.3: solutions collapse on FIND's variables before ORDER BY. A sort key on a
            # variable FIND does not keep is read per collapsed solution as a representative:
            # the smallest value for ASC, the largest for DESC (nulls last, as always).
            kept = self.projected_vars()
            items: list[Fragment] = [frag(bindings[n].ref) for n in kept]
            for index, key in enumerate(self.command.order_by):
                if self.pattern.filters.is_stored(key.expr):
                    raw = self.pattern.value(key.expr)
                    value = frag("CASE WHEN ", raw, " STARTS WITH ", filters.JSON_MARKER_LITERAL, " THEN null ELSE ", raw, " END")
                else:
                    value = self.sort_value(key.expr)
                alias = Internal(f"k{index}")
                items.append(frag("max(" if key.descending else "min(", value, ") AS ", alias))
                sort(frag(alias), key.descending)
            hidden = self.kind_tests()  # per collapsed solution: whether one of its rows bound the other kind (A5)
            items += [frag("max(", test, ") AS ", column) for column, test, _ in hidden]
            steps.append(With(tuple(items)))
            order.extend(frag(bindings[n].ref) for n in kept)  # identity tie-break: a total order
            returning = [frag(self.shown(c, self.projection(c.expr)), " AS ", c.var) for c in self.columns]
            returning += [column for column, _, _ in hidden]
        else:
            projected: list[Fragment] = []
            for key in self.command.order_by:
                if self.pattern.filters.is_stored(key.expr):
                    # A guarded attribute value: guarded once, sorted under a name.
                    raw = self.guarded_read(key.expr)
                    alias = Internal(f"k{len(projected)}")
                    projected.append(frag("CASE WHEN ", raw, " STARTS WITH ", filters.JSON_MARKER_LITERAL, " THEN null ELSE ", raw, " END AS ", alias))
                    value = frag(alias)
                else:
                    value = self.sort_value(key.expr)
                sort(value, key.descending)
            if projected:
                steps.append(With(tuple(projected), star=True))
            for name in self.key_vars() if total_order else ():
                # Nodes are orderable values (by their id): sorting on the node itself costs nothing,
                # elementId(…) built a string per row (≈ 10 % of a 20k-row top-k at 100k).
                order.append(frag(bindings[name].ref))
            returning = [frag(self.shown(c, self.projection(c.expr)), " AS ", c.var) for c in self.columns]
            returning += [frag(test, " AS ", column) for column, test, _ in self.kind_tests()]  # A5: after the answer's own
        return FindForm(tuple(pattern.lines), distinct, tuple(steps), tuple(order), tuple(returning), tuple(self.reads.values()))

    def build(self) -> FindPlan:
        pattern = self.pattern
        form = passes.apply(self.form(), self.passes)
        names = grounding.names(pattern.grounding)
        core = lines(form)
        returning = list(form.returning)
        return_line = frag("RETURN ", join(", ", returning))
        unmapped = tuple((var, key, what) for (var, key), what in pattern.ctx.unmapped.items())

        # The query and the text its fingerprint digests begin with the same lines: rendered once.
        head = Head(core)
        fp_text, fp_params = Statement(head).line(return_line).build()
        fingerprint_parts = ("FIND", fp_text, fp_params)
        fingerprint = cursor.fingerprint(*fingerprint_parts)

        limit = resolve_int(self.command.limit, self.parameters, "LIMIT") if self.command.limit is not None else None
        offset = 0
        if self.command.cursor is not None:
            token = resolve(self.command.cursor, self.parameters)
            offset = cursor.decode_offset(self.settings, fingerprint, token)
        paging = []
        if offset:
            paging.append(frag("SKIP ", Param(offset, "skip")))
        if limit is not None:
            paging.append(frag("LIMIT ", Param(limit + 1, "limit")))
        stmt = Statement(head)
        if paging:
            stmt.line(join(" ", paging))
        if names:
            # Every type and predicate is checked in the same statement (one round trip): a typo
            # inside OPTIONAL / NOT / UNION or an alternative would not empty the result. The
            # UNION ALL tail adds one row, only when one of them is undefined.
            undefined = Internal("undefined")
            stmt.line(return_line, ", null AS ", undefined)
            stmt.line("UNION ALL")
            for line in grounding.undefined_names_lines(Param([list(p) for p in names], "kip_names"), undefined, pattern.ctx.names):
                stmt.line(line)
            stmt.line("RETURN ", join(", ", [frag("null AS ", column) for column in self.return_columns(returning)]), ", ", undefined)
        else:
            stmt.line(return_line)
        return FindPlan(
            query=Compiled.of(stmt, "FIND"),
            columns=tuple((c.var.name, c.decode) for c in self.columns),
            limit=limit,
            offset=offset,
            fingerprint=fingerprint,
            fingerprint_parts=fingerprint_parts,
            aggregates_only=self.aggregates_only,
            grounding=names,
            grounding_at=grounding.offsets(pattern.grounding),
            key_checks=self.key_checks(),
            notes=tuple(dict.fromkeys(pattern.ctx.notes)),
            named=named_target(self.command.where, getattr(self.command.where[0], "var", None) or "") if self.command.where else (),
            named_all=named_elements(self.command.where, self.parameters, self.settings.adoption),
            other_kind=tuple(self.other_kind),
            warnings=surprises.other_kind(pattern.ctx.other_kind_reads, said=("FIND", "ORDER BY")),
            unmapped=unmapped,
            unmapped_check=Compiled.of(adopted.carried_statement([what for _, _, what in unmapped]), "properties of adopted elements") if unmapped else None,
        )


def lower_find(command: ast.Find, parameters: dict[str, Any], settings: Settings, passes: Iterable[str] = PASSES) -> FindPlan:
    """Compile a FIND command into a read plan (one query; a grounding check only on an empty
    result), applying the optimisation ``passes`` (``lower/passes.py``; ``()``: unoptimised)."""
    chosen = tuple(passes)
    unknown = sorted(set(chosen) - set(PASSES))
    if unknown:
        raise ValueError(f"unknown FIND passes {unknown}; the passes are {PASSES}")
    return _FindLowering(command, parameters, settings, chosen).build()

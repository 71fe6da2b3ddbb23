"""The FIND program: one query; a KIP_2001 check only when the answer could hide a typo."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ... import cursor
from ...cypher import storage
from ...domain import adopted, rules
from ...errors import closest, too_many_rows
from ...lower.find import FindPlan
from ..requests import Context, Explain, Run
from ..results import DECODERS
from . import grounding


def find(plan: FindPlan, ctx: Context) -> Generator[Any, Any, dict]:
    if ctx.dry_run:
        # dry_run (interfaces): every type and predicate must be defined; the query is only EXPLAINed.
        yield from grounding.check(plan.names, plan.grounding, plan.grounding_at)
        yield Explain(plan.query)
        return {"result": {"dry_run": True, "kind": "KQL", "statements": [plan.query.text]}}
    cap = ctx.settings.max_result_rows
    # The LIMIT + 1 look-ahead row and the grounding row are not results: LIMIT = cap must work.
    extra = (1 if plan.limit is not None and plan.limit <= cap else 0) + (1 if plan.grounding else 0)
    rows = yield Run(plan.query, extra_rows=extra)
    if plan.grounding:
        undefined = [row["_undefined"] for row in rows if row["_undefined"] is not None]
        if undefined:
            yield from grounding.fail(plan.names, plan.grounding, undefined[0], plan.grounding_at)
        rows = [row for row in rows if row["_undefined"] is None]
    warnings = (yield from why_empty(plan.key_check, plan.key_checks, plan.named_all)) if not rows and (plan.key_checks or plan.named_all) else []
    if not rows and plan.named:
        warnings.append(absent(rules.shown_named(plan.named)))
    if len(rows) > cap + (1 if plan.limit is not None and plan.limit <= cap else 0):
        raise too_many_rows(cap)
    limit = plan.limit
    more = limit is not None and len(rows) > limit
    if more:
        rows = rows[:limit]
    warnings += other_kind(plan, rows)
    data = [[DECODERS[decoder](row[name]) for row in rows] for name, decoder in plan.columns]
    result: Any = [column[0] if column else None for column in data] if plan.aggregates_only else data
    response: dict[str, Any] = {"result": result[0] if len(plan.columns) == 1 else result}
    if more:
        response["next_cursor"] = cursor.encode(ctx.settings, plan.fingerprint, plan.offset + limit)
    if plan.unmapped_check is not None:
        warnings += yield from unmapped_keys(plan)
    warnings = [*plan.notes, *warnings]
    if warnings:
        response["warnings"] = warnings
    return response


def absent(named: str) -> str:
    """An element named exactly (by id or complete ``{type, name}``) that matched nothing does not
    exist: the reference engine answers KIP_3002 there (docs/interop.md A11)."""
    return f"The {named} does not exist (the reference engine answers KIP_3002 for an element named exactly that does not exist)"


def other_kind(plan: FindPlan, rows: list[dict]) -> list[str]:
    """docs/interop.md A5: the rows of the answer (collapsed solutions, groups) whose endpoint
    variable is bound to the kind of element that lacks the field FIND or ORDER BY reads (null
    there; the reference engine refuses the command)."""
    warnings = []
    for column, var, kind, asked, has, where in plan.other_kind:
        count = sum(1 for row in rows if row[column])
        if count:
            rows_were = "1 row bound" if count == 1 else f"{count} rows bound"
            fields = " or ".join(asked)
            warnings.append(
                f"{where} {', '.join(f'?{var}.{f}' for f in asked)}: {rows_were} ?{var} to a {kind}, which has no {fields}"
                f" (a {kind} has {', '.join(has[:-1])} and {has[-1]}), so the value is null there;"
                " the reference engine refuses the command (KIP_1001)"
            )
    return warnings


def unmapped_keys(plan: FindPlan) -> Generator[Any, Any, list[str]]:
    """The attribute keys read of adopted elements that their mapping does not expose, each with
    the mapped attribute or the team's property it most likely meant (docs/adopt.md)."""
    rows = yield Run(plan.unmapped_check)
    carried = {row["i"]: row["keys"] for row in rows}
    return [adopted.unmapped_warning(var, key, what, carried.get(i, [])) for i, (var, key, what) in enumerate(plan.unmapped)]


def why_empty(statement: Any, key_checks: tuple, named: tuple) -> Generator[Any, Any, list[str]]:
    """For an empty answer, one read (``key_check``) of why the pattern may have missed: the
    attribute/metadata keys it read that no element of that type carries (a likely misspelling,
    with the nearest key the elements do carry), keys FILTER compares with a number that elements
    hold as numeric text (docs/interop.md A3), elements the WHERE names exactly that do not exist (A11)."""
    checks = [{"i": i, "concept": c, "name": name, "key": key, "number": number is not None} for i, (c, name, key, _, number) in enumerate(key_checks)]
    elements = [{"i": i, "concept": c, "id": id_, "type": type_, "name": name} for i, (c, id_, type_, name) in enumerate(named)]
    rows = yield Run(statement, {"checks": checks, "named": elements})
    warnings = []
    for row in sorted(rows, key=lambda r: (r["named"], r["i"])):
        if row["named"]:
            if not row["present"]:
                concept, *values = named[row["i"]]
                warnings.append(absent(rules.named_element(concept, *(None if v is None else rules.quoted(v) for v in values))))
        else:
            warnings += _key_warnings(key_checks[row["i"]], row)
    return warnings


def _key_warnings(check: tuple, row: dict) -> list[str]:
    """The warnings of one key an empty answer read: not carried by any element of its type, or
    held as numeric text where FILTER compares it with a number."""
    concept, name, key, var, number = check
    prefix = storage.ATTR_PREFIX if key.startswith(storage.ATTR_PREFIX) else storage.META_PREFIX
    what = "attribute" if prefix == storage.ATTR_PREFIX else "metadata key"
    if row["text"] is not None:
        owner = f"{name} elements" if concept else f'"{name}" propositions'
        return [
            f'?{var}: {what} "{key[len(prefix) :]}" is held as text ({rules.quoted(row["text"])}) on {owner}; FILTER compares it with the number'
            f" {rules.quoted(number)}, and text never matches a number (the reference engine compares a numeric string with a number as numbers)"
            f" — compare with {rules.quoted(row['text'])} or store numbers"
        ]
    if row["present"] or not row["keys"]:  # carried by some element, or no element at all
        return []
    carried = sorted(k[len(prefix) :] for k in row["keys"] if k.startswith(prefix) and not k.startswith(storage.META_PREFIX + "_"))
    owner = f"{name}" if concept else f'"{name}" proposition'
    guess = closest(key[len(prefix) :], carried)
    return [
        f'?{var}: {what} "{key[len(prefix) :]}" is not present on any {owner}'
        + (f'; did you mean "{guess}"?' if guess else (f"; its {what}s include {', '.join(carried[:8])}." if carried else "."))
    ]

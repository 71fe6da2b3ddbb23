"""The FIND program: one query; a KIP_2001 check only when the answer could hide a typo."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ... import cursor
from ...cypher import storage
from ...domain import adopted
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
    warnings = (yield from missing_keys(plan)) if not rows and plan.key_checks else []
    if not rows and plan.named:
        warnings.append(absent(plan.named))
    if len(rows) > cap + (1 if plan.limit is not None and plan.limit <= cap else 0):
        raise too_many_rows(cap)
    limit = plan.limit
    more = limit is not None and len(rows) > limit
    if more:
        rows = rows[:limit]
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


def unmapped_keys(plan: FindPlan) -> Generator[Any, Any, list[str]]:
    """The attribute keys read of adopted elements that their mapping does not expose, each with
    the mapped attribute or the team's property it most likely meant (docs/adopt.md)."""
    rows = yield Run(plan.unmapped_check)
    carried = {row["i"]: row["keys"] for row in rows}
    return [adopted.unmapped_warning(var, key, what, carried.get(i, [])) for i, (var, key, what) in enumerate(plan.unmapped)]


def missing_keys(plan: FindPlan) -> Generator[Any, Any, list[str]]:
    """For an empty answer: the attribute/metadata keys it read that no element of that type
    carries (a likely misspelling), each with the nearest key the elements do carry."""
    checks = [{"i": i, "concept": c, "name": name, "key": key} for i, (c, name, key, _) in enumerate(plan.key_checks)]
    rows = yield Run(plan.key_check, {"checks": checks})
    warnings = []
    for row in sorted(rows, key=lambda r: r["i"]):
        concept, name, key, var = plan.key_checks[row["i"]]
        if row["present"] or not row["keys"]:  # carried by some element, or no element at all
            continue
        prefix = storage.ATTR_PREFIX if key.startswith(storage.ATTR_PREFIX) else storage.META_PREFIX
        what = "attribute" if prefix == storage.ATTR_PREFIX else "metadata key"
        carried = sorted(k[len(prefix) :] for k in row["keys"] if k.startswith(prefix) and not k.startswith(storage.META_PREFIX + "_"))
        owner = f"{name}" if concept else f'"{name}" proposition'
        guess = closest(key[len(prefix) :], carried)
        warnings.append(
            f'?{var}: {what} "{key[len(prefix) :]}" is not present on any {owner}'
            + (f'; did you mean "{guess}"?' if guess else (f"; its {what}s include {', '.join(carried[:8])}." if carried else "."))
        )
    return warnings

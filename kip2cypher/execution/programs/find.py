"""The FIND program: one query; a KIP_2001 check only when the answer could hide a typo."""
from __future__ import annotations

from typing import Any, Generator

from ... import cursor
from ...lower.find import FindPlan
from ...lower.grounding import check_statement
from ..requests import Context, Explain, Run
from ..results import DECODERS
from . import grounding


def find(plan: FindPlan, ctx: Context) -> Generator[Any, Any, dict]:
    if ctx.dry_run:
        # dry_run (interfaces): every type and predicate must be defined; the query is only EXPLAINed.
        yield from grounding.check(plan.grounding_all)
        yield Explain(plan.query)
        shown = [plan.query] + ([check_statement(plan.grounding_required)] if plan.grounding_required else [])
        return {"result": {"dry_run": True, "kind": "KQL", "statements": [s.text for s in shown]}}
    rows = yield Run(plan.query)
    if plan.grounding_optional:
        undefined = [row["_undefined"] for row in rows if row["_undefined"] is not None]
        if undefined:
            yield from grounding.fail(plan.grounding_optional, undefined[0])
        rows = [row for row in rows if row["_undefined"] is None]
    limit = plan.limit
    more = limit is not None and len(rows) > limit
    if more:
        rows = rows[:limit]
    empty = not rows or (plan.aggregates_only and rows[0].get("_solutions", 0) == 0)
    if empty:
        # An undefined type or predicate has no instances: check the remaining names.
        yield from grounding.check(plan.grounding_required)
    data = [[DECODERS[decoder](row[name]) for row in rows] for name, decoder in plan.columns]
    result: Any = [column[0] if column else None for column in data] if plan.aggregates_only else data
    response: dict[str, Any] = {"result": result[0] if len(plan.columns) == 1 else result}
    if more:
        response["next_cursor"] = cursor.encode(ctx.settings, plan.fingerprint, plan.offset + limit)
    return response

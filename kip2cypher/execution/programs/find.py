"""The FIND program: one query; a KIP_2001 check only when the answer could hide a typo."""
from __future__ import annotations

from typing import Any, Generator

from ... import cursor
from ...errors import too_many_rows
from ...lower.find import FindPlan
from ..requests import Context, Explain, Run
from ..results import DECODERS
from . import grounding


def find(plan: FindPlan, ctx: Context) -> Generator[Any, Any, dict]:
    if ctx.dry_run:
        # dry_run (interfaces): every type and predicate must be defined; the query is only EXPLAINed.
        yield from grounding.check(plan.grounding)
        yield Explain(plan.query)
        return {"result": {"dry_run": True, "kind": "KQL", "statements": [plan.query.text]}}
    cap = ctx.settings.max_result_rows
    # The LIMIT + 1 look-ahead row and the grounding row are not results: LIMIT = cap must work.
    extra = (1 if plan.limit is not None and plan.limit <= cap else 0) + (1 if plan.grounding else 0)
    rows = yield Run(plan.query, extra_rows=extra)
    if plan.grounding:
        undefined = [row["_undefined"] for row in rows if row["_undefined"] is not None]
        if undefined:
            yield from grounding.fail(plan.grounding, undefined[0])
        rows = [row for row in rows if row["_undefined"] is None]
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
    return response

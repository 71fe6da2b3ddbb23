"""The program of every bulk KML mutation (UPDATE, DELETE ATTRIBUTES / METADATA / PROPOSITIONS /
CONCEPT): one write statement, the protected-target refusal, a KIP_2001 check only when it can matter."""
from __future__ import annotations

from typing import Any, Generator

from ...lower import rules
from ...lower.update import BulkPlan
from ...lower.writes import NOW
from ..requests import Context, Run
from . import grounding


def bulk(plan: BulkPlan, ctx: Context) -> Generator[Any, Any, dict]:
    """A dry run runs the read-only probe instead of the write: the same checks, counts of zero."""
    statement = plan.probe if ctx.dry_run else plan.write
    rows = yield Run(statement, {NOW: ctx.now} if NOW in statement.params else {})
    row = rows[0]
    refuse_protected(row["_bad"], plan.keyword)
    # An undefined type or predicate matches nothing; one used only in OPTIONAL/NOT/UNION may hide anywhere.
    yield from grounding.check(plan.names, plan.grounding_all if row["matched"] == 0 else plan.grounding_optional)
    return {"result": {key: row[column] for key, column in plan.result}}


def refuse_protected(bad: list[str], keyword: str) -> None:
    """KIP_3004 naming (up to three of) the protected elements the command matched; nothing was written."""
    if bad:
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise rules.immutable(f"{keyword} matched {shown}, which")

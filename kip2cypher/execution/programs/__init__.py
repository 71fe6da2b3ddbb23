"""One program per plan kind — generators that yield requests and receive replies (``..requests``).

``PROGRAMS`` maps each plan class to its program; ``start`` is the program the executor runs
for a command: the plan's own, with its errors located in the command text. After a KML
write commits, the executor has the SEARCH embeddings of what it touched refreshed in the
background (``..background``, ``embeddings.refresh_touched``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from ...errors import KipError
from ...lower.describe import DomainsPlan, PrimerPlan, TypeDefinitionPlan, TypeListPlan
from ...lower.export import ExportPlan
from ...lower.find import FindPlan
from ...lower.merge import MergePlan
from ...lower.plan import Plan
from ...lower.search import SearchPlan
from ...lower.update import BulkPlan
from ...lower.upsert_plan import UpsertPlan
from ..requests import Context
from . import bulk, describe, export, find, merge, search, upsert

PROGRAMS: dict[type, Callable[[Any, Context], Generator[Any, Any, dict]]] = {
    FindPlan: find.find,
    SearchPlan: search.search,
    UpsertPlan: upsert.upsert,
    MergePlan: merge.merge,
    BulkPlan: bulk.bulk,
    ExportPlan: export.export,
    TypeListPlan: describe.type_list,
    TypeDefinitionPlan: describe.type_definition,
    DomainsPlan: describe.domains,
    PrimerPlan: describe.primer,
}


def start(plan: Plan, ctx: Context) -> Generator[Any, Any, dict]:
    """The whole program of one command: the plan's program, its errors located in the command,
    the compile-time ``warnings`` of the plan (docs/interop.md) after the program's own."""
    try:
        response = yield from PROGRAMS[type(plan)](plan, ctx)
    except KipError as exc:
        raise exc.locate(plan.command_text)
    if plan.warnings:
        response = {**response, "warnings": [*response.get("warnings", ()), *plan.warnings]}
    return response


def refreshes_embeddings(plan: Plan, ctx: Context) -> bool:
    """Whether the executor must have the embeddings of what this command wrote refreshed."""
    return plan.kind == "KML" and not ctx.dry_run and ctx.embedder is not None

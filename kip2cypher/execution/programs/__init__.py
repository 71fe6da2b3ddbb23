"""One program per plan kind — generators that yield requests and receive replies (``..requests``).

``PROGRAMS`` maps each plan class to its program; ``start`` composes the program the
executor runs for a command: the plan's own program, then, after a KML write, the refresh
of the SEARCH embeddings of every element the command touched.
"""
from __future__ import annotations

from typing import Any, Callable, Generator

from ...lower.describe import DomainsPlan, PrimerPlan, TypeDefinitionPlan, TypeListPlan
from ...lower.export import ExportPlan
from ...lower.find import FindPlan
from ...lower.plan import Plan
from ...lower.update import BulkPlan
from ..requests import Context
from .bulk import bulk
from .describe import domains, primer, type_definition, type_list
from .export import export
from .find import find

PROGRAMS: dict[type, Callable[[Any, Context], Generator[Any, Any, dict]]] = {
    FindPlan: find,
    BulkPlan: bulk,
    ExportPlan: export,
    TypeListPlan: type_list,
    TypeDefinitionPlan: type_definition,
    DomainsPlan: domains,
    PrimerPlan: primer,
}


def start(plan: Plan, ctx: Context) -> Generator[Any, Any, dict]:
    """The whole program of one command."""
    response = yield from PROGRAMS[type(plan)](plan, ctx)
    return response

"""Elements a WHERE names exactly — by ``{id}``, a complete ``{type, name}`` or ``(id: …)``:
DELETE's KIP_3002 for a missing target (``named_target``), and the elements an empty FIND or an
UPDATE that matched nothing checks the existence of (``named_elements``, docs/interop.md A11)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import adoption as adoption_ids
from ..domain import rules
from ..syntax import ast
from ..syntax.values import Deferred, resolve

#: Elements a WHERE names exactly: (concept?, id, type, name), the values as the command gives them.
NamedElements = tuple[tuple[bool, Any, Any, Any], ...]


def named_target(where: tuple[ast.WhereItem, ...], target: str) -> rules.Named:
    """How a DELETE's WHERE names its target exactly — its only clause binds ``target`` by id or by a
    complete ``{type, name}`` — else "". Spec Appendix 4: KIP_3002 "does not exist (for DELETE, …)":
    such a target that matches nothing does not exist. Any other pattern (a FILTER, another clause,
    a type alone) may simply match nothing, which stays zero counts (docs/kml.md)."""
    if len(where) != 1 or getattr(where[0], "var", None) != target:
        return ()
    exact = _exactly(where[0])
    return (exact[0], *(None if v is None else _written(v) for v in exact[1:])) if exact else ()


def named_elements(where: tuple[ast.WhereItem, ...], parameters: Mapping[str, Any], adoption: Any) -> NamedElements:
    """The elements a WHERE of more than one clause names exactly (``_exactly``), in its clauses
    and their endpoints — not inside FILTER, NOT, OPTIONAL or UNION, where a missing element need
    not empty the answer. Each must exist for the pattern to match, so an empty answer checks
    which do not (docs/interop.md A11; one clause is ``named_target``'s, no read needed). Memory
    elements only: an adopted type or id names the team's graph (docs/adopt.md); a placeholder
    kept for run time is left out."""
    if len(where) < 2:
        return ()
    found = []
    stack = list(reversed(where))
    while stack:
        clause = stack.pop()
        if isinstance(clause, ast.PropositionClause) and clause.id is None:
            stack += [clause.object, clause.subject]
        exact = _exactly(clause)
        values = [None if v is None else resolve(v, parameters, deferrable=True) for v in exact[1:]] if exact else []
        if not exact or any(isinstance(v, Deferred) for v in values) or _adopted(adoption, *values):
            continue
        found.append((exact[0], *values))
    return tuple(dict.fromkeys(found))


def _exactly(clause: Any) -> tuple[bool, ast.Value | None, ast.Value | None, ast.Value | None] | None:
    """How a clause names its element exactly — ``{id}``, a complete ``{type, name}``, ``(id: …)``:
    (concept?, id, type, name) — or None."""
    if isinstance(clause, ast.ConceptClause) and clause.id is not None:
        return (True, clause.id, None, None)
    if isinstance(clause, ast.ConceptClause) and clause.type is not None and clause.name is not None:
        return (True, None, clause.type, clause.name)
    if isinstance(clause, ast.PropositionClause) and clause.id is not None:
        return (False, clause.id, None, None)
    return None


def _adopted(adoption: Any, id_: Any, type_: Any, _name: Any) -> bool:
    """An element of the team's graph: an adopted type, or an adopted id (``A:…``)."""
    if adoption is None:
        return False
    return (isinstance(type_, str) and adoption.type(type_) is not None) or adoption_ids.split_id(id_) is not None


def _written(value: ast.Value) -> tuple[bool, Any]:
    """A value as the command wrote it (``rules.Named``): a placeholder's name, or a literal's value
    — the value itself, not its JSON text, so a plan template can put another in its place."""
    return (True, value.name) if isinstance(value, ast.Placeholder) else (False, getattr(value, "value", None))

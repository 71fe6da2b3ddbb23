"""What the programs report about adopted data (docs/adopt.md), shared with the lowering of it.

``LOOKUP_MAX``: how many nodes an adopted endpoint
lookup reads (``lower.adopted.lookup_statement``); the warning FIND gives for an attribute the
mapping does not expose, and the KIP errors an UPSERT reports for an adopted endpoint that
matches no node or several.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import adoption as adopt
from ..adoption import Adopted, AdoptedType
from ..errors import DUPLICATE_EXISTS, NOT_FOUND, KipError, closest

#: How many nodes an adopted endpoint lookup reads: one is the answer, two prove an ambiguity,
#: and a third lets the error show that there are more.
LOOKUP_MAX = 3


def unmapped_warning(var: str, key: str, what: Adopted, carried: Sequence[str]) -> str:
    """The ``warnings`` entry for ``?var.attributes.key`` of an adopted element whose mapping does
    not expose ``key`` (it reads as null): the mapped attribute or the team's property it most
    likely meant (``carried``: properties its nodes or relationships have)."""
    mapped = [k for k, _ in what.attributes]
    kind = f"type {what.name} (label {what.label})" if isinstance(what, AdoptedType) else f"predicate {what.name} (relationship type {what.rel_type})"
    table = f"[{'types' if isinstance(what, AdoptedType) else 'predicates'}.{what.name}]"
    head = f'?{var}: attribute "{key}" is not mapped for the adopted {kind}, so it reads as null'
    guess = closest(key, mapped)
    if guess is not None:
        return f'{head}; did you mean "{guess}"?'
    exposed = {prop for _, prop in what.attributes}
    unexposed = sorted(p for p in carried if p not in exposed)
    guess = key if key in unexposed else closest(key, unexposed)
    if guess is not None:
        return (
            f'{head}; did you mean "{guess}"? The team\'s elements carry a property "{guess}" the mapping does not expose: '
            f"add it to the attributes of {table} and run `kip2cypher adopt` again to read it."
        )
    return f"{head}; its attributes are {', '.join(mapped)}." if mapped else f"{head}; the mapping exposes no attribute of it."


def endpoint_missing(label: str, offset: int | None = None) -> KipError:
    """KIP_3002: an adopted endpoint that matches no node of the team's graph."""
    return KipError(
        NOT_FOUND,
        f"Concept {label} does not exist in the team's graph.",
        'Adopted concepts are the team\'s own nodes: FIND or SEARCH it to get its exact name or its "A:…" id; KIP cannot create it.',
        offset=offset,
    )


def endpoint_ambiguous(label: str, type_name: str, ids: Sequence[str], elements: Sequence[str], offset: int | None = None) -> KipError:
    """KIP_3003: an adopted endpoint that matches several nodes (names — and even ``key`` values —
    need not be unique in the team's graph): linking one of them would be arbitrary. The ids
    shown tell them apart (the elementId form where two share a key value)."""
    distinct = [i if ids.count(i) == 1 else adopt.id_prefix(type_name) + adopt.ELEMENT_MARK + e for i, e in zip(ids, elements)]
    more = " and more" if len(ids) >= LOOKUP_MAX else ""
    shown = ", ".join(f'"{i}"' for i in distinct[: LOOKUP_MAX - 1])
    return KipError(
        DUPLICATE_EXISTS,
        f"Concept {label} matches several nodes of the team's graph ({shown}{more}): linking one of them would be arbitrary.",
        'Name the one you mean by its adopted id, e.g. {id: "' + distinct[0] + '"} (FIND the candidates with their ids first).',
        offset=offset,
    )

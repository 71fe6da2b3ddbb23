"""KIP_2001 checks as sub-programs: ``yield from check(names)`` inside any program."""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any

from ...cypher import storage
from ...domain.grounding import Names, Offsets, grounding_check
from ...domain.grounding import defined_names as defined_names_statement
from ...errors import TYPE_MISMATCH, KipError, did_you_mean
from ..requests import Run


def check(names: storage.Names, pairs: Names, at: Offsets = ()) -> Generator[Any, Any, None]:
    """Raise KIP_2001 (with a did-you-mean hint) for the first of ``pairs`` that is not defined.

    Programs run this only when it can matter — typically when a pattern matched nothing (an
    undefined type has no instances) — which keeps the hot path at one round trip."""
    if not pairs:
        return
    rows = yield Run(grounding_check(names), {"names": [list(p) for p in pairs]})
    undefined = [(row["meta"], row["name"]) for row in rows if not row["defined"]]
    if undefined:
        yield from fail(names, pairs, undefined, at)


def fail(names: storage.Names, pairs: Names, undefined: Iterable[Any], at: Offsets = ()) -> Generator[Any, Any, None]:
    """KIP_2001 for the first of ``pairs`` (in order) that is in ``undefined``, positioned at
    the place the command names it (``at``)."""
    missing = {tuple(pair) for pair in undefined}
    meta, name = next((m, n) for m, n in pairs if (m, n) in missing)
    rows = yield Run(defined_names_statement(names), {"meta": meta})
    defined = [r["name"] for r in rows if isinstance(r["name"], str)]
    kind = "concept type" if meta == storage.CONCEPT_TYPE else "proposition type"
    what = "Concept type" if meta == storage.CONCEPT_TYPE else "Predicate"
    raise KipError(TYPE_MISMATCH, f'{what} "{name}" is not defined in the schema.', did_you_mean(kind, name, defined), offset=dict(at).get((meta, name)))


def defined_names(names: storage.Names, meta: str) -> Generator[Any, Any, list[str]]:
    """Every name defined under ``meta`` (sorted)."""
    rows = yield Run(defined_names_statement(names), {"meta": meta})
    return [r["name"] for r in rows]

"""KIP_2001 checks as sub-programs: ``yield from check(names)`` inside any program."""
from __future__ import annotations

from typing import Any, Generator, Iterable

from ...cypher import storage
from ...errors import TYPE_MISMATCH, KipError, did_you_mean
from ...lower.grounding import DEFINED_NAMES, GROUNDING, Names
from ..requests import Run


def check(pairs: Names) -> Generator[Any, Any, None]:
    """Raise KIP_2001 (with a did-you-mean hint) for the first of ``pairs`` that is not defined.

    Programs run this only when it can matter — typically when a pattern matched nothing (an
    undefined type has no instances) — which keeps the hot path at one round trip."""
    if not pairs:
        return
    rows = yield Run(GROUNDING, {"names": [list(p) for p in pairs]})
    undefined = [(row["meta"], row["name"]) for row in rows if not row["defined"]]
    if undefined:
        yield from fail(pairs, undefined)


def fail(pairs: Names, undefined: Iterable[Any]) -> Generator[Any, Any, None]:
    """KIP_2001 for the first of ``pairs`` (in order) that is in ``undefined``."""
    missing = {tuple(pair) for pair in undefined}
    meta, name = next((m, n) for m, n in pairs if (m, n) in missing)
    rows = yield Run(DEFINED_NAMES, {"meta": meta})
    defined = [r["name"] for r in rows if isinstance(r["name"], str)]
    kind = "concept type" if meta == storage.CONCEPT_TYPE else "proposition type"
    what = "Concept type" if meta == storage.CONCEPT_TYPE else "Predicate"
    raise KipError(TYPE_MISMATCH, f"{what} \"{name}\" is not defined in the schema.", did_you_mean(kind, name, defined))


def defined_names(meta: str) -> Generator[Any, Any, list[str]]:
    """Every name defined under ``meta`` (sorted)."""
    rows = yield Run(DEFINED_NAMES, {"meta": meta})
    return [r["name"] for r in rows]

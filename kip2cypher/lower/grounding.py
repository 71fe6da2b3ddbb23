"""Grounding (spec §2.9, KIP_2001) in the lowering: which names a command needs checked.

The statements that check them (``grounding_check``, ``defined_names``) are shared with the
programs that run them and live in ``domain.grounding``; here are the names a pattern refers
to, a check bound to them for a plan's steps, and the grounding tail FIND appends to its query.
"""

from __future__ import annotations

from ..cypher import storage
from ..cypher.builder import Fragment, Internal, Part, frag
from ..domain.grounding import Names, Offsets, grounding_check
from ..domain.grounding import defined_names as defined_names  # listed in the plans' steps
from .context import Grounding
from .plan import Compiled


def names(grounding: Grounding, required_only: bool | None = None) -> Names:
    """The ``(meta_type, name)`` pairs a pattern refers to (``required_only``: only / never those outside OPTIONAL/NOT/UNION)."""
    types, predicates = grounding.names(required_only)
    return tuple((storage.CONCEPT_TYPE, t) for t in types) + tuple((storage.PROPOSITION_TYPE, p) for p in predicates)


def offsets(grounding: Grounding) -> Offsets:
    return tuple(grounding.offsets.items())


def check_statement(pairs: Names, names: storage.Names) -> Compiled:
    """``grounding_check`` bound to ``pairs`` (for a plan's list of steps)."""
    return grounding_check(names).with_params(names=[list(p) for p in pairs])


def undefined_names_lines(pairs: Part, out: Internal, names: storage.Names) -> list[Fragment]:
    """Cypher lines binding ``out`` to the undefined ones of ``pairs`` (``[[meta_type, name], …]``),
    on a single row that exists only when at least one is undefined (to append to a statement
    with ``UNION ALL``)."""
    item, d = Internal("item"), Internal("d")
    return [
        frag("UNWIND ", pairs, " AS ", item, " OPTIONAL MATCH (", d, ":", names.concept, " {type: ", item, "[0], name: ", item, "[1]})"),
        frag("WITH collect(CASE WHEN ", d, " IS NULL THEN ", item, " END) AS ", out, " WHERE size(", out, ") > 0"),
    ]

"""Grounding (spec §2.9, KIP_2001) in the lowering: which names a command needs checked.

The statements that check them (``grounding_check``, ``defined_names``) are shared with the
programs that run them and live in ``domain.grounding``; here are the names a pattern refers
to, a check bound to them for a plan's steps, the grounding tail FIND appends to its query, and
``key_check``: why an empty answer may have missed (docs/interop.md A3, A11).
"""

from __future__ import annotations

import functools

from ..cypher import storage
from ..cypher.builder import Fragment, Internal, Param, Part, Statement, frag
from ..domain.grounding import Names, Offsets, grounding_check
from ..domain.grounding import defined_names as defined_names  # listed in the plans' steps
from ..syntax.values import JSON_NUMBER
from .context import Grounding
from .plan import Compiled


@functools.lru_cache(maxsize=64)
def key_check(names: storage.Names = storage.DEFAULT) -> Compiled:
    """What the data holds, read once and only when a FIND answered nothing or an UPDATE matched
    nothing — why the pattern may have missed:

    - per ``$checks`` item (a type or predicate, a stored key the command reads): does any element
      carry the key, which keys do a few carry (a misspelt key), and, when FILTER compares the key
      with a number (``number``), one value held as text that reads as a JSON number — which never
      matches a number here, and does on the reference engine (docs/interop.md A3);
    - per ``$named`` item (an element the WHERE names exactly): does it exist (A11)."""
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "checks"), " AS c")
    with stmt.block("CALL (c)"):
        stmt.line("MATCH (n:", names.concept, " {type: c.name}) WHERE c.concept")
        stmt.line("RETURN n")
        stmt.line("UNION ALL")
        stmt.line("MATCH (n:", names.proposition, " {predicate: c.name}) WHERE NOT c.concept")
        stmt.line("RETURN n")
    stmt.line("WITH c, collect(n) AS elements")
    stmt.line("RETURN false AS named, c.i AS i, any(n IN elements WHERE n[c.key] IS NOT NULL) AS present,")
    stmt.line("       reduce(ks = [], n IN elements[..100] | ks + [k IN keys(n) WHERE NOT k IN ks]) AS keys,")
    number = Param(JSON_NUMBER, "kip_number")
    stmt.line("       CASE WHEN c.number THEN head([n IN elements WHERE n[c.key] IS :: STRING AND n[c.key] =~ ", number, " | n[c.key]]) END AS text")
    stmt.line("UNION ALL")
    stmt.line("UNWIND ", Param(None, "named"), " AS e")
    stmt.line("RETURN true AS named, e.i AS i, CASE WHEN e.id IS NULL THEN EXISTS { MATCH (:", names.concept, " {type: e.type, name: e.name}) }")
    stmt.line("       WHEN e.concept THEN EXISTS { MATCH (:", names.concept, " {id: e.id}) }")
    stmt.line("       ELSE EXISTS { MATCH (:", names.proposition, " {id: e.id}) } END AS present, null AS keys, null AS text")
    return Compiled.of(stmt, "keys carried by elements of the type, named elements that exist (only for an empty answer)")


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

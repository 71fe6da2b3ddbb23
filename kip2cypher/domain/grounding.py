"""Grounding (spec §2.9, KIP_2001): the statements that tell which type and predicate names are defined.

A concept type is defined by a ``$ConceptType`` node, a predicate by a ``$PropositionType``
node. Names are passed as ``[meta_type, name]`` pairs. ``grounding_check`` answers which of them
have a definition node; ``defined_names`` lists every name under one meta-type, for the
did-you-mean hint of the error and for DESCRIBE. Which names a command needs checked, and
when, is decided by the lowering of each command (``lower.grounding``) and run by
``kip2cypher.execution.programs.grounding``: both take these statements from here.
"""

from __future__ import annotations

import functools

from ..cypher import storage
from ..cypher.builder import Param, Statement
from ..cypher.compiled import Compiled

Names = tuple[tuple[str, str], ...]
#: ((meta_type, name), text offset where the command first names it) — for error positions.
Offsets = tuple[tuple[tuple[str, str], int], ...]


@functools.lru_cache(maxsize=64)
def grounding_check(names: storage.Names = storage.DEFAULT) -> Compiled:
    """Which of ``$names`` (``[[meta_type, name], …]``) have a definition node."""
    stmt = Statement()
    stmt.line(
        "UNWIND ",
        Param(None, "names"),
        " AS item OPTIONAL MATCH (d:",
        names.concept,
        " {type: item[0], name: item[1]}) ",
        "RETURN item[0] AS meta, item[1] AS name, d IS NOT NULL AS defined",
    )
    return Compiled.of(stmt, "grounding check (runs only when it can matter)")


@functools.lru_cache(maxsize=64)
def defined_names(names: storage.Names = storage.DEFAULT) -> Compiled:
    """Every name defined under the meta-type ``$meta``, sorted."""
    stmt = Statement()
    stmt.line("MATCH (d:", names.concept, " {type: ", Param(None, "meta"), "})")
    stmt.line("RETURN d.name AS name ORDER BY name")
    return Compiled.of(stmt, "defined names (did-you-mean)")

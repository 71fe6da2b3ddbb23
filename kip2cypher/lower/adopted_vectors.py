"""Semantic SEARCH over adopted concepts (docs/adopt.md, "Semantic SEARCH"): the statements.

KIP never writes the team's nodes, so an adopted concept's vector lives on a **shadow node** of
KIP's own (``Names.adopted_vector``, e.g. ``KipAdoptedVector__alice``): ``{type, element,
kip_embedding, kip_embedding_model, kip_embedding_hash}`` — the adopted type, the team node's
elementId, the vector, the model, and the hash of model + embedded text. One per (type, node);
the VECTOR index ``catalog.adopted_vector_index`` covers them.

``kip2cypher adopt … --embed`` (``adopting.embed``) pages through each adopted type's nodes
(``nodes``) with their text and their shadow's hash, embeds the changed ones and ``MERGE``s
their shadows (``write``), then deletes the shadows whose node is gone, lost its label or its
text, or whose type is no longer adopted (``prune``). SEARCH reads ``search``: the nearest
shadows, each with its node's *current* KIP object and text, so the program can drop a hit
whose text changed since it was embedded.
"""
from __future__ import annotations

import functools
from typing import Optional

from ..adoption import Adoption, AdoptedType
from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Internal, Param, Part, Statement, frag, join, literal
from . import adopted
from .plan import Compiled


def _texts(ref: Part, t: AdoptedType) -> Fragment:
    """The text properties of ``t`` besides the name, as a list (nulls kept: the program skips them)."""
    return frag("[", join(", ", [frag(ref, ".", Ident(p)) for p in t.text if p != t.name_property]), "]")


def _has_text(ref: Part, t: AdoptedType) -> Fragment:
    return frag("any(_x IN [", join(", ", [frag(ref, ".", Ident(p)) for p in t.text]), "] WHERE _x IS NOT NULL)")


@functools.lru_cache(maxsize=64)
def nodes(names: storage.Names, t: AdoptedType) -> Compiled:
    """The next ``$chunk`` nodes of ``t`` after elementId ``$last`` that have some text, with
    their name, other text values and their shadow's hash and model (null: none yet)."""
    n, s = Internal("n"), Internal("s")
    stmt = Statement()
    stmt.line("MATCH ", adopted.node(n, t))
    stmt.line("WHERE elementId(", n, ") > ", Param(None, "last"), " AND ", _has_text(n, t))
    stmt.line("WITH ", n, " ORDER BY elementId(", n, ") LIMIT ", Param(None, "chunk"))
    stmt.line("OPTIONAL MATCH (", s, ":", Ident(names.adopted_vector), " {type: ", Param(t.name, "type"), ", element: elementId(", n, ")})")
    stmt.line("RETURN elementId(", n, ") AS element, ", n, ".", Ident(t.name_property), " AS name, ", _texts(n, t), " AS texts, ",
              s, ".", storage.EMBEDDING_HASH, " AS hash")
    return Compiled.of(stmt, f"adopted {t.name} nodes to embed")


@functools.lru_cache(maxsize=64)
def write(names: storage.Names) -> Compiled:
    """``MERGE`` the shadows of ``$rows`` (``{type, element, vector, hash}``) with their vectors."""
    s = Internal("s")
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "rows"), " AS row")
    stmt.line("MERGE (", s, ":", Ident(names.adopted_vector), " {type: row.type, element: row.element})")
    stmt.line("SET ", s, ".", storage.EMBEDDING, " = row.vector, ", s, ".", storage.EMBEDDING_MODEL, " = ", Param(None, "model"),
              ", ", s, ".", storage.EMBEDDING_HASH, " = row.hash")
    return Compiled.of(stmt, "write adopted concept vectors")


def _current(ref: Part, s: Part, adoption: Adoption, build) -> Fragment:
    """``CASE`` over the shadow's type: ``build(t)`` when the node ``ref`` is still a concept of
    that type (it has the label, no engine label), else null."""
    cases = [frag("WHEN ", s, ".type = ", Param(t.name), " AND ", ref, ":", Ident(t.label), " THEN ", build(t)) for t in adoption.types]
    return frag("CASE WHEN ", ref, " IS NULL OR NOT ", adopted.not_engine(ref), " THEN null ", join(" ", cases), " END")


@functools.lru_cache(maxsize=64)
def prune(names: storage.Names, adoption: Adoption) -> Compiled:
    """Delete up to ``$chunk`` shadows whose node is gone, is no longer a concept of the shadow's
    type (label removed, type no longer adopted) or has no text left; returns how many."""
    s, n = Internal("s"), Internal("n")
    stmt = Statement()
    stmt.line("MATCH (", s, ":", Ident(names.adopted_vector), ")")
    stmt.line("OPTIONAL MATCH (", n, ") WHERE elementId(", n, ") = ", s, ".element")
    stmt.line("WITH ", s, " WHERE coalesce(", _current(n, s, adoption, lambda t: _has_text(n, t)), ", false) = false")
    stmt.line("WITH ", s, " LIMIT ", Param(None, "chunk"))
    stmt.line("DETACH DELETE ", s)
    stmt.line("RETURN count(*) AS dropped")
    return Compiled.of(stmt, "drop shadows of adopted nodes gone or changed")


def search(names: storage.Names, adoption: Adoption, index: str, with_type: Optional[AdoptedType]) -> Compiled:
    """The nearest shadows (``$k`` of the index, ``$pool`` kept, of model ``$model`` and — with WITH
    TYPE — of that type): per hit its cosine ``score``, the ``hash`` it was embedded with and
    ``hit``: ``[KIP object, name, [other text values]]`` of the node as it is now (null when the
    node is gone or no longer of that type)."""
    s, node = Internal("s"), frag("node")
    stmt = Statement()
    stmt.line("CALL db.index.vector.queryNodes(", literal(index), ", ", Param(None, "k"), ", ", Param(None, "vector"), ") YIELD node AS ", s, ", score")
    stmt.line("WHERE ", s, ".", storage.EMBEDDING_MODEL, " = ", Param(None, "model"),
              *([" AND ", s, ".type = ", Param(with_type.name)] if with_type is not None else []))
    stmt.line("WITH ", s, ", score LIMIT ", Param(None, "pool"))
    stmt.line("OPTIONAL MATCH (node) WHERE elementId(node) = ", s, ".element")
    hit = _current(node, s, adoption, lambda t: frag("[", adopted.element(node, t, adoption), ", node.", Ident(t.name_property), ", ", _texts(node, t), "]"))
    stmt.line("RETURN score, ", s, ".", storage.EMBEDDING_HASH, " AS hash, ", s, ".type AS type, ", hit, " AS hit")
    return Compiled.of(stmt, "vector candidates (adopted concepts)")

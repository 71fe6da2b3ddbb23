"""Semantic SEARCH over adopted concepts (docs/adopt.md, "Semantic SEARCH"): the statements.

KIP never writes the team's nodes, so an adopted concept's vector lives on a **shadow node** of
KIP's own (``Names.adopted_vector``, e.g. ``KipAdoptedVector__alice``): ``{type, element,
kip_embedding, kip_embedding_model, kip_embedding_hash}`` — the adopted type, the team node's
elementId, the vector, the model, and the hash of model + embedded text. One per (type, node);
the VECTOR index ``catalog.adopted_vector_index`` covers them.

``kip2cypher adopt … --embed`` (``Nexus.embed_adopted``) pages through each adopted type's nodes
(``nodes``) with their text and their shadow's hash, embeds the changed ones and ``MERGE``s
their shadows (``write``), then deletes the shadows whose node is gone, lost its label or its
text, or whose type is no longer adopted (``prune``). SEARCH reads ``search``: the nearest
shadows, each with its node's *current* KIP object and text, so the program can drop a hit
whose text changed since it was embedded.

Adopted relationships get the same, on shadows labelled ``Names.adopted_relationship_vector``
(``element``: the relationship's elementId, ``type``: the predicate) with their own VECTOR index
``catalog.adopted_relationship_vector_index``: ``relationships``, ``prune_relationships`` and
``search_relationships`` mirror ``nodes``, ``prune`` and ``search``; ``write`` serves both.
"""

from __future__ import annotations

import functools

from ..adoption import Adopted, AdoptedPredicate, AdoptedType, Adoption
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
    stmt.line(
        "RETURN elementId(",
        n,
        ") AS element, ",
        n,
        ".",
        Ident(t.name_property),
        " AS name, ",
        _texts(n, t),
        " AS texts, ",
        s,
        ".",
        storage.EMBEDDING_HASH,
        " AS hash",
    )
    return Compiled.of(stmt, f"adopted {t.name} nodes to embed")


def reads(r: Part, p: AdoptedPredicate, adoption: Adoption) -> Fragment:
    """Relationship ``r`` is a proposition of ``p``: its type, from a node of the subject type to
    one of the object type (neither an engine node)."""
    s, o = frag("startNode(", r, ")"), frag("endNode(", r, ")")
    return frag(
        "type(",
        r,
        ") = ",
        Param(p.rel_type),
        " AND ",
        s,
        ":",
        Ident(adoption.type(p.subject).label),
        " AND ",
        o,
        ":",
        Ident(adoption.type(p.object).label),
    )


def _relationship_texts(r: Part, p: AdoptedPredicate, adoption: Adoption) -> Fragment:
    """``[subject name, object name, [text values]]`` of relationship ``r`` of ``p``: what its
    grounding text (``embedding.adopted_relationship_text``) is made of."""
    s, o = frag("startNode(", r, ")"), frag("endNode(", r, ")")
    return frag(
        "[",
        s,
        ".",
        Ident(adoption.type(p.subject).name_property),
        ", ",
        o,
        ".",
        Ident(adoption.type(p.object).name_property),
        ", [",
        join(", ", [frag(r, ".", Ident(prop)) for prop in p.text]),
        "]]",
    )


@functools.lru_cache(maxsize=64)
def relationships(names: storage.Names, p: AdoptedPredicate, adoption: Adoption) -> Compiled:
    """The next ``$chunk`` relationships of ``p`` after elementId ``$last``, with ``texts``
    (``_relationship_texts``) and their shadow's hash (null: none yet)."""
    r, s = Internal("r"), Internal("s")
    stmt = Statement()
    stmt.line(
        "MATCH ",
        adopted.node(Internal("a"), adoption.type(p.subject)),
        "-[",
        r,
        ":",
        Ident(p.rel_type),
        "]->",
        adopted.node(Internal("b"), adoption.type(p.object)),
    )
    stmt.line("WHERE elementId(", r, ") > ", Param(None, "last"))
    stmt.line("WITH ", r, " ORDER BY elementId(", r, ") LIMIT ", Param(None, "chunk"))
    stmt.line("OPTIONAL MATCH (", s, ":", Ident(names.adopted_relationship_vector), " {type: ", Param(p.name, "type"), ", element: elementId(", r, ")})")
    stmt.line("RETURN elementId(", r, ") AS element, ", _relationship_texts(r, p, adoption), " AS texts, ", s, ".", storage.EMBEDDING_HASH, " AS hash")
    return Compiled.of(stmt, f"adopted {p.name} relationships to embed")


@functools.lru_cache(maxsize=64)
def write(label: str) -> Compiled:
    """``MERGE`` the shadows (label ``label``) of ``$rows`` (``{type, element, vector, hash}``) with their vectors."""
    s = Internal("s")
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "rows"), " AS row")
    stmt.line("MERGE (", s, ":", Ident(label), " {type: row.type, element: row.element})")
    stmt.line(
        "SET ",
        s,
        ".",
        storage.EMBEDDING,
        " = row.vector, ",
        s,
        ".",
        storage.EMBEDDING_MODEL,
        " = ",
        Param(None, "model"),
        ", ",
        s,
        ".",
        storage.EMBEDDING_HASH,
        " = row.hash",
    )
    return Compiled.of(stmt, "write adopted vectors")


def refresh(names: storage.Names, what: Adopted, adoption: Adoption) -> tuple[Compiled, Compiled]:
    """For an adopted type or predicate: the statement paging through its elements (``nodes`` /
    ``relationships``) and the one writing their shadows' vectors (``write``)."""
    if isinstance(what, AdoptedType):
        return nodes(names, what), write(names.adopted_vector)
    return relationships(names, what, adoption), write(names.adopted_relationship_vector)


def _current(ref: Part, s: Part, adoption: Adoption, build) -> Fragment:
    """``CASE`` over the shadow's type: ``build(t)`` when the node ``ref`` is still a concept of
    that type (it has the label: no KIP node carries a team label), else null."""
    cases = [frag("WHEN ", s, ".type = ", Param(t.name), " AND ", ref, ":", Ident(t.label), " THEN ", build(t)) for t in adoption.types]
    return frag("CASE WHEN ", ref, " IS NULL THEN null ", join(" ", cases), " END")


def _prune(label: str, s: Part, find: Fragment, gone_or_changed: Fragment, what: str) -> Compiled:
    """Delete up to ``$chunk`` shadows ``s`` (label ``label``) for which, after the ``find``
    line binding their element, ``gone_or_changed`` holds; returns how many."""
    stmt = Statement()
    stmt.line("MATCH (", s, ":", Ident(label), ")")
    stmt.line(find)
    stmt.line("WITH ", s, " WHERE ", gone_or_changed)
    stmt.line("WITH ", s, " LIMIT ", Param(None, "chunk"))
    stmt.line("DETACH DELETE ", s)
    stmt.line("RETURN count(*) AS dropped")
    return Compiled.of(stmt, f"drop shadows of adopted {what} gone or changed")


@functools.lru_cache(maxsize=64)
def prune(names: storage.Names, adoption: Adoption) -> Compiled:
    """Delete up to ``$chunk`` shadows whose node is gone, is no longer a concept of the shadow's
    type (label removed, type no longer adopted) or has no text left; returns how many."""
    s, n = Internal("s"), Internal("n")
    return _prune(
        names.adopted_vector,
        s,
        frag("OPTIONAL MATCH (", n, ") WHERE elementId(", n, ") = ", s, ".element"),
        frag("coalesce(", _current(n, s, adoption, lambda t: _has_text(n, t)), ", false) = false"),
        "nodes",
    )


def _current_relationship(r: Part, s: Part, adoption: Adoption, build) -> Fragment:
    """``CASE`` over the shadow's predicate: ``build(p)`` when relationship ``r`` is still a
    proposition of that predicate, else null."""
    cases = [frag("WHEN ", s, ".type = ", Param(p.name), " AND ", reads(r, p, adoption), " THEN ", build(p)) for p in adoption.predicates]
    return frag("CASE WHEN ", r, " IS NULL THEN null ", join(" ", cases), " END")


@functools.lru_cache(maxsize=64)
def prune_relationships(names: storage.Names, adoption: Adoption) -> Compiled:
    """Delete up to ``$chunk`` relationship shadows whose relationship is gone or is no longer a
    proposition of the shadow's predicate (endpoint relabelled, predicate no longer adopted)."""
    s, r = Internal("s"), Internal("r")
    return _prune(
        names.adopted_relationship_vector,
        s,
        frag("OPTIONAL MATCH ()-[", r, "]->() WHERE elementId(", r, ") = ", s, ".element"),
        frag("coalesce(", _current_relationship(r, s, adoption, lambda p: frag("true")), ", false) = false"),
        "relationships",
    )


def pruning(names: storage.Names, adoption: Adoption) -> tuple[Compiled, Compiled]:
    """The node shadows' ``prune``, then the relationship shadows'."""
    return prune(names, adoption), prune_relationships(names, adoption)


def _nearest(index: str, with_type: str | None, find: str, hit: Fragment, what: str) -> Compiled:
    """The nearest shadows ``s`` of VECTOR index ``index`` (``$k`` of the index, ``$pool`` kept, of
    model ``$model`` and — with WITH TYPE — of type / predicate ``with_type``), their element bound
    by the ``find`` line (``s`` is its shadow), and per hit ``score``, ``hash``, ``type`` and ``hit``."""
    s = Internal("s")
    stmt = Statement()
    stmt.line("CALL db.index.vector.queryNodes(", literal(index), ", ", Param(None, "k"), ", ", Param(None, "vector"), ") YIELD node AS ", s, ", score")
    stmt.line(
        "WHERE ", s, ".", storage.EMBEDDING_MODEL, " = ", Param(None, "model"), *([" AND ", s, ".type = ", Param(with_type)] if with_type is not None else [])
    )
    stmt.line("WITH ", s, ", score LIMIT ", Param(None, "pool"))
    stmt.line(find, s, ".element")
    stmt.line("RETURN score, ", s, ".", storage.EMBEDDING_HASH, " AS hash, ", s, ".type AS type, ", hit, " AS hit")
    return Compiled.of(stmt, f"vector candidates (adopted {what})")


def search(names: storage.Names, adoption: Adoption, index: str, with_type: AdoptedType | None) -> Compiled:
    """The nearest node shadows (``_nearest``): per hit ``hit``: ``[KIP object, name, [other text
    values]]`` of the node as it is now (null when the node is gone or no longer of that type)."""
    s, node = Internal("s"), frag("node")
    hit = _current(node, s, adoption, lambda t: frag("[", adopted.element(node, t, adoption), ", node.", Ident(t.name_property), ", ", _texts(node, t), "]"))
    return _nearest(index, with_type.name if with_type else None, "OPTIONAL MATCH (node) WHERE elementId(node) = ", hit, "concepts")


def search_relationships(adoption: Adoption, index: str, with_type: AdoptedPredicate | None) -> Compiled:
    """The nearest relationship shadows (``_nearest``): per hit ``hit``: ``[KIP object, [subject
    name, object name, [text values]]]`` of the relationship as it is now (null when it is gone or
    no longer a proposition of that predicate)."""
    s, r = Internal("s"), frag("rel")
    hit = _current_relationship(r, s, adoption, lambda p: frag("[", adopted.element(r, p, adoption), ", ", _relationship_texts(r, p, adoption), "]"))
    return _nearest(index, with_type.name if with_type else None, "OPTIONAL MATCH ()-[rel]->() WHERE elementId(rel) = ", hit, "propositions")

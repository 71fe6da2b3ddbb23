"""The statements that keep SEARCH embeddings fresh (docs/meta.md, "Keeping vectors fresh").

An element's vector embeds its grounding text (``embedding.concept_text`` /
``proposition_text``); ``storage.EMBEDDING_HASH`` remembers which text and model produced
it, so an unchanged element is never embedded again. After every KML command the executor
has ``execution.programs.embeddings.refresh_touched`` run in the background
(``execution.background``): it pages through the elements whose ``meta._updated_at`` is the
command's timestamp or later (``TOUCHED``), reads their grounding fields and version
(``GROUNDING``), embeds the changed ones and writes the vectors of those still at that
version (``WRITE``).
"""
from __future__ import annotations

from ..cypher import storage
from ..cypher.builder import Ident, Param, Statement
from .plan import Compiled
from .writes import lock

KINDS = ("concept", "proposition")
_LABEL = {"concept": storage.CONCEPT, "proposition": storage.PROPOSITION}


def _fields(var: str) -> list:
    parts: list = ["["]
    for i, key in enumerate(storage.GROUNDING_ATTRIBUTES):
        parts += [", " if i else "", var, ".", Ident(storage.attr_key(key))]
    return parts + ["]"]


def _page(kind: str, since: bool) -> Compiled:
    """Element ids after ``$last`` in id order, ``$chunk`` at a time (``since``: only those
    written at or after ``$since``)."""
    stmt = Statement()
    updated = ["n.", Ident(storage.meta_key(storage.UPDATED_AT_KEY)), " >= ", Param(None, "since"), " AND "] if since else []
    stmt.line("MATCH (n:", _LABEL[kind], ") WHERE ", *updated, "n.id > ", Param(None, "last"))
    stmt.line("RETURN n.id AS id ORDER BY id LIMIT ", Param(None, "chunk"))
    return Compiled.of(stmt, f"{kind}s {'written by the command' if since else 'of the nexus'}, by id")


def _grounding(kind: str) -> Compiled:
    stmt = Statement()
    if kind == "concept":
        stmt.line("MATCH (n:", storage.CONCEPT, ") WHERE n.id IN ", Param(None, "ids"))
        stmt.line("RETURN n.id AS id, n.type AS type, n.name AS name, ", *_fields("n"), " AS vals, n.", storage.EMBEDDING_HASH, " AS hash, ", *_version("n"), " AS version")
    else:
        stmt.line("MATCH (p:", storage.PROPOSITION, ") WHERE p.id IN ", Param(None, "ids"))
        stmt.line("OPTIONAL MATCH (p)-[:", storage.SUBJECT_REL, "]->(s)")
        stmt.line("OPTIONAL MATCH (p)-[:", storage.OBJECT_REL, "]->(o)")
        stmt.line("RETURN p.id AS id, p.predicate AS predicate, coalesce(s.name, s.predicate) AS subject,")
        stmt.line("       coalesce(o.name, o.predicate) AS object, ", *_fields("p"), " AS vals, p.", storage.EMBEDDING_HASH, " AS hash, ", *_version("p"), " AS version")
    return Compiled.of(stmt, f"grounding text of {kind}s")


def _version(var: str) -> list:
    return ["coalesce(", var, ".", Ident(storage.meta_key(storage.VERSION_KEY)), ", -1)"]


def _write(kind: str) -> Compiled:
    """The vectors of ``$rows`` (``{id, vector, hash, version}``), each written only if its element
    still has the version whose grounding text was embedded: the refresh runs after the write
    committed (in the background), and a newer text must not get an older text's vector. The
    element is locked first (as every KML write does), so the version read is the committed one."""
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "rows"), " AS row")
    stmt.line("MATCH (n:", _LABEL[kind], " {id: row.id})")
    stmt.line(lock("n"))
    stmt.line("WITH n, row WHERE coalesce(n[", Param(storage.meta_key(storage.VERSION_KEY), "kip_vkey"), "], -1) = row.version")
    stmt.line(
        "SET n.", storage.EMBEDDING, " = row.vector, n.", storage.EMBEDDING_MODEL, " = ", Param(None, "model"),
        ", n.", storage.EMBEDDING_HASH, " = row.hash",
    )
    return Compiled.of(stmt, f"write {kind} embeddings")


TOUCHED = {kind: _page(kind, since=True) for kind in KINDS}
ALL = {kind: _page(kind, since=False) for kind in KINDS}
GROUNDING = {kind: _grounding(kind) for kind in KINDS}
WRITE = {kind: _write(kind) for kind in KINDS}
#: The refresh's statements in the order it issues them (for ``kip2cypher compile``).
REFRESH = tuple(stmt for kind in KINDS for stmt in (TOUCHED[kind], GROUNDING[kind], WRITE[kind]))
#: Elements read, embedded and written per round trip (always within ``max_result_rows``).
CHUNK = 500

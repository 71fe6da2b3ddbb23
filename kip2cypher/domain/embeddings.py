"""The statements that keep SEARCH embeddings fresh (docs/meta.md, "Keeping vectors fresh").

An element's vector embeds its grounding text (``embedding.concept_text`` /
``proposition_text``); ``storage.EMBEDDING_HASH`` remembers which text and model produced
it, so an unchanged element is never embedded again. After every KML command the executor
has ``execution.programs.embeddings.refresh_touched`` run in the background
(``execution.background``): it pages through the elements whose ``meta._updated_at`` is the
command's timestamp or later (``statements(…).touched``), reads their grounding fields and version
(``.grounding``), embeds the changed ones and writes the vectors of those still at that
version (``.write``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..cypher import storage
from ..cypher.builder import Ident, Param, Statement
from ..cypher.compiled import Compiled
from .writes import lock

KINDS = ("concept", "proposition")


def _label(names: storage.Names, kind: str) -> str:
    return names.concept if kind == "concept" else names.proposition


def _fields(var: str) -> list:
    parts: list = ["["]
    for i, key in enumerate(storage.GROUNDING_ATTRIBUTES):
        parts += [", " if i else "", var, ".", Ident(storage.attr_key(key))]
    return parts + ["]"]


def _page(names: storage.Names, kind: str, since: bool) -> Compiled:
    """Element ids after ``$last`` in id order, ``$chunk`` at a time (``since``: only those
    written at or after ``$since``)."""
    stmt = Statement()
    updated = ["n.", Ident(storage.meta_key(storage.UPDATED_AT_KEY)), " >= ", Param(None, "since"), " AND "] if since else []
    stmt.line("MATCH (n:", _label(names, kind), ") WHERE ", *updated, "n.id > ", Param(None, "last"))
    stmt.line("RETURN n.id AS id ORDER BY id LIMIT ", Param(None, "chunk"))
    return Compiled.of(stmt, f"{kind}s {'written by the command' if since else 'of the nexus'}, by id")


def _grounding(names: storage.Names, kind: str) -> Compiled:
    stmt = Statement()
    if kind == "concept":
        stmt.line("MATCH (n:", names.concept, ") WHERE n.id IN ", Param(None, "ids"))
        stmt.line(
            "RETURN n.id AS id, n.type AS type, n.name AS name, ",
            *_fields("n"),
            " AS vals, n.",
            storage.EMBEDDING_HASH,
            " AS hash, ",
            *_version("n"),
            " AS version",
        )
    else:
        stmt.line("MATCH (p:", names.proposition, ") WHERE p.id IN ", Param(None, "ids"))
        stmt.line("OPTIONAL MATCH (p)-[:", names.subject_rel, "]->(s)")
        stmt.line("OPTIONAL MATCH (p)-[:", names.object_rel, "]->(o)")
        stmt.line("RETURN p.id AS id, p.predicate AS predicate, coalesce(s.name, s.predicate) AS subject,")
        stmt.line(
            "       coalesce(o.name, o.predicate) AS object, ",
            *_fields("p"),
            " AS vals, p.",
            storage.EMBEDDING_HASH,
            " AS hash, ",
            *_version("p"),
            " AS version",
        )
    return Compiled.of(stmt, f"grounding text of {kind}s")


def _version(var: str) -> list:
    return ["coalesce(", var, ".", Ident(storage.meta_key(storage.VERSION_KEY)), ", -1)"]


def _write(names: storage.Names, kind: str) -> Compiled:
    """The vectors of ``$rows`` (``{id, vector, hash, version}``), each written only if its element
    still has the version whose grounding text was embedded: the refresh runs after the write
    committed (in the background), and a newer text must not get an older text's vector. The
    element is locked first (as every KML write does), so the version read is the committed one."""
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "rows"), " AS row")
    stmt.line("MATCH (n:", _label(names, kind), " {id: row.id})")
    stmt.line(lock("n"))
    stmt.line("WITH n, row WHERE coalesce(n[", Param(storage.meta_key(storage.VERSION_KEY), "kip_vkey"), "], -1) = row.version")
    stmt.line(
        "SET n.",
        storage.EMBEDDING,
        " = row.vector, n.",
        storage.EMBEDDING_MODEL,
        " = ",
        Param(None, "model"),
        ", n.",
        storage.EMBEDDING_HASH,
        " = row.hash",
    )
    return Compiled.of(stmt, f"write {kind} embeddings")


@dataclass(frozen=True)
class RefreshStatements:
    """The embedding statements of one namespace and element kind."""

    touched: Compiled  # elements written at or after ``$since``, by id
    all: Compiled  # every element, by id (``sync_embeddings``)
    grounding: Compiled  # the grounding fields of ``$ids``
    write: Compiled  # store ``$rows`` vectors


@functools.lru_cache(maxsize=128)
def statements(names: storage.Names, kind: str) -> RefreshStatements:
    return RefreshStatements(_page(names, kind, True), _page(names, kind, False), _grounding(names, kind), _write(names, kind))


def refresh(names: storage.Names) -> tuple[Compiled, ...]:
    """The refresh's statements in the order it issues them (for ``kip2cypher compile``)."""
    return tuple(stmt for kind in KINDS for stmt in (statements(names, kind).touched, statements(names, kind).grounding, statements(names, kind).write))


#: Elements read, embedded and written per round trip (always within ``max_result_rows``).
CHUNK = 500

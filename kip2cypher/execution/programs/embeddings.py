"""Keeping SEARCH embeddings fresh, as sub-programs the executor runs (docs/meta.md).

``refresh_touched`` runs after a KML command committed, in a write transaction of its own
(``execution.background``): it pages through the elements written at ``ctx.now`` or later
(their ``meta._updated_at``) and re-embeds those whose grounding text or model changed. ``refresh`` embeds a given list of
ids; ``Nexus.sync_embeddings`` uses it to back-fill a whole nexus.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from ... import embedding
from ...adoption import Adopted, AdoptedType
from ...cypher import storage
from ...domain.embeddings import CHUNK, KINDS, statements
from ...lower.plan import Compiled
from ..requests import Context, Embed, Run

log = logging.getLogger("kip2cypher")


def chunk_size(ctx: Context) -> int:
    """Rows per round trip: at most ``CHUNK`` and always within ``max_result_rows``."""
    return max(1, min(CHUNK, ctx.settings.max_result_rows))


def refresh_touched(ctx: Context) -> Generator[Any, Any, int]:
    """Re-embed every element written at ``ctx.now``; returns how many were (re-)embedded.

    A model failure (not the graph's) is logged and leaves the rest for ``sync_embeddings``:
    the write itself stands."""
    done = 0
    for kind in KINDS:
        last = ""
        while True:
            rows = yield Run(statements(ctx.names, kind).touched, {"since": ctx.now, "last": last, "chunk": chunk_size(ctx)})
            ids = [r["id"] for r in rows]
            if not ids:
                break
            last = ids[-1]
            try:
                done += yield from refresh(kind, ids, False, ctx)
            except (ImportError, RuntimeError, ValueError, TypeError, MemoryError) as exc:
                log.warning("embedding refresh skipped (%r); run kip2cypher.embedding.sync_embeddings later", exc)
                return done
    return done


def refresh(kind: str, ids: list[str], force: bool, ctx: Context) -> Generator[Any, Any, int]:
    """(Re-)embed the elements ``ids`` of ``kind`` whose grounding text or model changed (all with ``force``)."""
    rows = yield Run(statements(ctx.names, kind).grounding, {"ids": ids})
    todo = []
    for row in rows:
        attributes = {k: storage.safe_decode(v) for k, v in zip(storage.GROUNDING_ATTRIBUTES, row["vals"]) if v is not None}
        if kind == "concept":
            text = embedding.concept_text(row["type"] or "", row["name"] or "", attributes)
        else:
            text = embedding.proposition_text(row["subject"], row["predicate"] or "", row["object"], attributes)
        new_hash = embedding.text_hash(ctx.embedder.name, text)
        if force or new_hash != row.get("hash"):
            todo.append((row["id"], text, new_hash, row["version"]))
    if not todo:
        return 0
    vectors = yield Embed(tuple(text for _, text, _, _ in todo))
    payload = [{"id": i, "vector": [float(x) for x in v], "hash": h, "version": n} for (i, _, h, n), v in zip(todo, vectors)]
    yield Run(statements(ctx.names, kind).write, {"rows": payload, "model": ctx.embedder.name})
    return len(payload)


def _text(what: Adopted, row: dict[str, Any]) -> str:
    """The grounding text of one ``adopted_page`` row of ``what``."""
    if isinstance(what, AdoptedType):
        return embedding.adopted_text(what.name, row["name"], row["texts"])
    return embedding.adopted_relationship_text(what.name, *row["texts"])


def adopted_page(page: Compiled, last: str, chunk: int) -> Generator[Any, Any, list[dict[str, Any]]]:
    """The next ``chunk`` nodes (that have text) or relationships of an adopted type or predicate
    after elementId ``last``, with their shadow's hash (``page``: ``lower.adopted_vectors.refresh``)."""
    rows = yield Run(page, {"last": last, "chunk": chunk})
    return rows


def stale_adopted(what: Adopted, rows: list[dict[str, Any]], model: str, force: bool) -> list[tuple[str, str, str]]:
    """``(elementId, text, hash)`` of the elements ``rows`` (``adopted_page``) of ``what`` whose
    text or the model changed since their shadow's vector (all with ``force``)."""
    todo = []
    for row in rows:
        text = _text(what, row)
        new_hash = embedding.text_hash(model, text)
        if force or new_hash != row["hash"]:
            todo.append((row["element"], text, new_hash))
    return todo


def refresh_adopted(what: Adopted, write: Compiled, todo: list[tuple[str, str, str]], ctx: Context) -> Generator[Any, Any, int]:
    """Embed ``todo`` (``stale_adopted``) in one model batch and write the vectors on their
    shadow nodes with ``write`` (docs/adopt.md, "Semantic SEARCH"); returns how many."""
    vectors = yield Embed(tuple(text for _, text, _ in todo))
    payload = [{"type": what.name, "element": e, "vector": [float(x) for x in v], "hash": h} for (e, _, h), v in zip(todo, vectors)]
    yield Run(write, {"rows": payload, "model": ctx.embedder.name})
    return len(payload)


def prune_adopted(prunes: tuple[Compiled, ...], chunk: int) -> Generator[Any, Any, int]:
    """Delete up to ``chunk`` node shadows, then up to ``chunk`` relationship shadows, whose
    element is gone or no longer matches the mapping (``prunes``: ``lower.adopted_vectors.pruning``);
    returns how many."""
    dropped = 0
    for statement in prunes:
        rows = yield Run(statement, {"chunk": chunk})
        dropped += rows[0]["dropped"]
    return dropped

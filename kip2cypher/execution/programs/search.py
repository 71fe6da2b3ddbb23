"""The SEARCH program (spec §5.2, docs/meta.md): keyword, semantic or hybrid, then the hits whole.

Keyword runs the plain Lucene query first and the expanded (infix/fuzzy) one only when
LIMIT is not filled; propositions are also grounded by their predicate's name and
description. Semantic embeds the term (an ``Embed`` request) and queries the vector index.
Hybrid fuses both rankings. Without an embedder, semantic and hybrid run as keyword.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ... import adoption, embedding
from ...errors import TYPE_MISMATCH, KipError, did_you_mean
from ...lower.search import SearchPlan
from ..requests import Context, Embed, Run
from ..results import concept_object, proposition_object
from ..scoring import Hit, Scorer, fuse
from . import grounding


class AdoptedObject(dict):
    """A SEARCH hit that is an adopted concept: already its KIP object (not a stored node)."""


def _rows(row: dict[str, Any]) -> list[tuple[int, str, Any, bool]]:
    """(rank, id, whole node or lite value, whole?) for the one row of a candidates statement."""
    whole = row["whole"]
    out = [(i, n["id"], n, True) for i, n in enumerate(whole)]
    for i, lite in enumerate(row["rest"], start=len(whole)):
        out.append((i, lite if isinstance(lite, str) else lite[0], lite, False))
    return out


def keyword(plan: SearchPlan, first: list[dict[str, Any]] | None = None) -> Generator[Any, Any, list[Hit]]:
    """Keyword hits; ``first``: the plain query's rows when the hybrid statement already fetched them."""
    if plan.plain_query is None:
        return []
    scorer = Scorer(list(plan.query_words))
    floor = max(plan.threshold, 1e-9)
    # id -> (score, order, props, whole); order: index rank (first query), then after it.
    hits: dict[str, tuple[float, int, dict[str, Any] | None, bool]] = {}

    def candidates(query: str, offset: int, rows: list[dict[str, Any]] | None = None) -> Generator[Any, Any, None]:
        if rows is None:
            rows = yield Run(plan.fulltext, {"query": query, "type": plan.with_type, "whole": plan.limit})
        for row in rows:
            for rank, element_id, node, whole in _rows(row):
                known = hits.get(element_id)
                if known is not None:
                    if whole and not known[3]:  # fetched whole this time: no hydration needed
                        hits[element_id] = (known[0], known[1], node, True)
                    continue
                score = scorer.candidate(node, plan.concept)
                if score > 0:
                    hits[element_id] = (score, offset + rank, node, whole)

    def adopted(query: str, offset: int) -> Generator[Any, Any, None]:
        """Candidates among adopted concepts / relationships (their own full-text index, docs/adopt.md)."""
        if plan.adopted is None:
            return
        for rank, row in enumerate((yield Run(plan.adopted, {"query": query, "pool": plan.pool}))):
            obj, name, texts = row["hit"]
            element = AdoptedObject(adoption.element_object(obj))
            score = scorer.grounding(name if isinstance(name, str) else None, None, texts)
            if element["id"] not in hits and score > 0:
                hits[element["id"]] = (score, offset + rank, element, True)

    yield from candidates(plan.plain_query, 0, first)
    yield from adopted(plan.plain_query, 0)
    if not plan.concept:
        # The predicate name and its $PropositionType description ground every proposition of that predicate.
        scored: dict[str, float] = {}
        for row in (yield Run(plan.definitions, {"type": plan.with_type})):
            score = scorer.predicate(row["t"]["name"], row["t"])
            if score > 0:
                scored[row["t"]["name"]] = score
        if scored:
            best_first = sorted(scored, key=lambda p: (-scored[p], p))
            for row in (yield Run(plan.by_predicate, {"predicates": best_first, "pool": plan.pool})):
                score = scored[row["pred"]]
                known = hits.get(row["id"])
                if known is None or known[0] < score:
                    hits[row["id"]] = (score, -1, known[2] if known else None, known[3] if known else False)
            if plan.adopted_by_predicate is not None:
                for row in (yield Run(plan.adopted_by_predicate, {"predicates": best_first, "pool": plan.pool})):
                    element = AdoptedObject(adoption.element_object(row["hit"]))
                    if element["id"] not in hits or hits[element["id"]][0] < scored[row["pred"]]:
                        hits[element["id"]] = (scored[row["pred"]], -1, element, True)
    # The expensive expansions (infix, fuzzy) only when the plain query leaves LIMIT unfilled.
    if plan.full_query != plan.plain_query and sum(1 for h in hits.values() if h[0] >= floor) < plan.limit:
        yield from candidates(plan.full_query, plan.pool)
        yield from adopted(plan.full_query, plan.pool)
    ranked = sorted(hits.items(), key=lambda item: (-item[1][0], item[1][1], item[0]))
    return [(element_id, score, node if whole else None) for element_id, (score, _, node, whole) in ranked[: plan.pool]]


def _vector_params(plan: SearchPlan, ctx: Context, vector: list[float]) -> dict[str, Any]:
    k = plan.pool * 4 if plan.with_type else plan.pool
    return {"vector": vector, "model": ctx.embedder.name, "type": plan.with_type, "k": k, "pool": plan.pool, "whole": plan.limit}


def semantic(
    plan: SearchPlan, ctx: Context, vector: list[float] | None, warnings: list[str], rows: list[dict[str, Any]] | None = None
) -> Generator[Any, Any, list[Hit]]:
    """Vector hits of the embedded term ``vector`` (None: a blank term), memory and adopted
    elements in one ranking; ``rows``: the memory vector query's rows when the hybrid statement
    already fetched them."""
    if vector is None:
        return []
    if rows is None:
        rows = yield Run(plan.vector, _vector_params(plan, ctx, vector))
    out = []
    for row in rows:
        for rank, element_id, node, whole in _rows(row):
            out.append((element_id, _cosine(row["scores"][rank]), node if whole else None))
    if plan.adopted_vectors is not None:
        out += yield from adopted_semantic(plan, ctx, vector, warnings)
    out.sort(key=lambda item: (-item[1], item[0]))
    return out


def _cosine(score: float) -> float:
    """Neo4j's cosine score is (1 + cos) / 2; ``_score`` is cos, clipped to [0, 1]."""
    return max(0.0, min(1.0, 2.0 * float(score) - 1.0))


def _embedded_text(plan: SearchPlan, row: dict[str, Any]) -> str:
    """The grounding text of an adopted hit as it is now (``lower.adopted_vectors.search`` /
    ``search_relationships``), to compare with the one its vector was computed from."""
    hit = row["hit"]
    if plan.concept:
        return embedding.adopted_text(row["type"], hit[1], hit[2])
    return embedding.adopted_relationship_text(row["type"], *hit[1])


def adopted_semantic(plan: SearchPlan, ctx: Context, vector: list[float], warnings: list[str]) -> Generator[Any, Any, list[Hit]]:
    """Vector hits among adopted concepts / relationships (their shadow nodes, docs/adopt.md). A
    hit whose element is gone, no longer of its type or predicate, or whose text changed since it
    was embedded is left out — its vector is no longer the element's meaning — and ``warnings``
    says how many and how to refresh."""
    out, stale = [], 0
    for row in (yield Run(plan.adopted_vectors, _vector_params(plan, ctx, vector))):
        if row["hit"] is None or embedding.text_hash(ctx.embedder.name, _embedded_text(plan, row)) != row["hash"]:
            stale += 1
            continue
        element = AdoptedObject(adoption.element_object(row["hit"][0]))
        out.append((element["id"], _cosine(row["score"]), element))
    if stale:
        what, where = ("concept(s)", "node") if plan.concept else ("proposition(s)", "relationship or an endpoint")
        warnings.append(
            f"{stale} adopted {what} near the search term were left out of the semantic ranking: their {where} changed its text, "
            f"lost its label or is gone since its vector was computed. Run `kip2cypher adopt <mapping.toml> --embed` "
            "(or Nexus.embed_adopted) to refresh the vectors of adopted concepts and propositions."
        )
    return out


def search(plan: SearchPlan, ctx: Context) -> Generator[Any, Any, dict]:
    mode = plan.mode or ("hybrid" if ctx.embedder else "keyword")
    if ctx.embedder is None:
        mode = "keyword"
    warnings: list[str] = []
    vector = None
    if mode != "keyword" and plan.term.strip():
        vector = [float(x) for x in (yield Embed((plan.term,)))[0]]
    if mode == "keyword":
        ranked = yield from keyword(plan)
    elif mode == "semantic":
        ranked = yield from semantic(plan, ctx, vector, warnings)
    elif plan.plain_query is None or vector is None:
        ranked = fuse([(yield from keyword(plan)), (yield from semantic(plan, ctx, vector, warnings))])
    else:
        # One round trip for both indexes (the expanded keyword query still follows when needed).
        rows = yield Run(plan.hybrid, {**_vector_params(plan, ctx, vector), "query": plan.plain_query})
        ranked = fuse(
            [
                (yield from keyword(plan, [r for r in rows if r["source"] == "keyword"])),
                (yield from semantic(plan, ctx, vector, warnings, [r for r in rows if r["source"] == "vector"])),
            ]
        )
    chosen = [hit for hit in ranked if hit[1] >= plan.threshold and hit[1] > 0][: plan.limit]
    missing = [element_id for element_id, _, node in chosen if node is None]
    fetched = {row["node"]["id"]: row["node"] for row in (yield Run(plan.hydrate, {"ids": missing}))} if missing else {}
    results = []
    for element_id, score, node in chosen:
        node = node or fetched.get(element_id)
        if node is None:
            continue
        if isinstance(node, AdoptedObject):
            obj = dict(node)
        else:
            obj = concept_object(node) if plan.concept else proposition_object(node)
        obj["metadata"] = {**obj["metadata"], "_score": round(score, 4)}
        results.append(obj)
    if not results and plan.with_type is not None:
        names = yield from grounding.defined_names(plan.names, plan.meta_type)
        if plan.with_type not in names:
            kind = "concept type" if plan.concept else "predicate"
            raise KipError(TYPE_MISMATCH, f'WITH TYPE "{plan.with_type}" is not a defined {kind}.', did_you_mean(kind, plan.with_type, names))
    return {"result": results, "warnings": warnings} if warnings else {"result": results}

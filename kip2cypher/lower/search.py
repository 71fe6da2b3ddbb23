"""SEARCH CONCEPT|PROPOSITION (spec §5.2): keyword, semantic and hybrid retrieval on Neo4j indexes.

- Keyword: Neo4j full-text (Lucene) indexes over the grounding fields retrieve candidates —
  a plain term + prefix query first, the infix/fuzzy recall query only when that leaves
  LIMIT unfilled; each candidate is then scored in [0, 1] by ``Scorer`` — an absolute,
  documented measure (exact name/alias = 1.0), not a per-result normalization — so
  THRESHOLD means the same thing for every query. Only the first LIMIT candidates are
  fetched whole; the rest carry just what the score reads, and a hit promoted from among
  them is fetched by id. User text never reaches Lucene's query syntax: it is split into
  word tokens and every token is escaped.
- Semantic: the query text is embedded by the configured ``Embedder`` and matched on the
  VECTOR indexes (cosine); ``_score`` is the cosine similarity clipped to [0, 1].
- Hybrid: score-weighted reciprocal rank fusion of both rankings (docs/meta.md).

Without an embedder, "semantic" and "hybrid" run as "keyword" (spec §5.2.1).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from .. import adoption as adopt
from .. import errors
from ..config import Settings
from ..cypher import (
    catalog,  # noqa: E402
    storage,
)
from ..cypher.builder import Fragment, Ident, Internal, Param, Statement, frag, join, literal
from ..domain.capabilities import MODES, SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT
from ..errors import KipError
from ..syntax import ast
from ..syntax.values import describe, resolve, resolve_int, resolve_str
from ..text import MAX_QUERY_WORD_CHARS, is_cjk, query_words, words
from . import adopted, adopted_vectors, grounding
from .plan import Compiled, Plan

#: Candidates re-scored per LIMIT hit, and at least (see ``candidate_pool``).
POOL_FACTOR = 2
POOL_MIN = 20


# ------------------------------------------------------------------ the Lucene query
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def escape_lucene(token: str) -> str:
    return _LUCENE_SPECIAL.sub(r"\\\1", token)


def lucene_query(term: str, max_tokens: int = 32, expand: bool = False) -> str | None:
    """A Lucene query built only from escaped word tokens of ``term``; None when it has none.

    Each token matches as a term (boosted) and a prefix: the query keyword SEARCH runs
    first. With ``expand`` (the recall query, run only when that one leaves LIMIT unfilled)
    a token also matches as an infix — compound names such as ``belongs_to_domain`` are
    single index terms — and, when long enough, fuzzily. Those expansions cost: a
    leading-wildcard infix makes Lucene walk the whole term dictionary of every indexed
    field (3–7× the plain query at 100k concepts), a fuzzy term ≈ 2×.
    """
    seen = query_words(term, max_tokens)
    if not seen:
        return None
    clauses = []
    for token in dict.fromkeys(token[:MAX_QUERY_WORD_CHARS] for token in seen):
        quoted = escape_lucene(token)
        parts = [f"{quoted}^4"]
        if not any(is_cjk(c) for c in token):
            if len(token) >= 2:
                parts.append(f"{quoted}*^2")
            if expand and len(token) >= 3:
                parts.append(f"*{quoted}*")
            if expand and len(token) >= 5:
                parts.append(f"{quoted}~1")
        clauses.append("(" + " OR ".join(parts) + ")")
    return " OR ".join(clauses)


# ------------------------------------------------------------------ statements
#: What a candidate carries when it is not returned whole: a list [id, name, aliases,
#: [descriptive values present]] — only what the lexical score reads, and no map keys (the
#: driver decodes every key string); vector candidates carry their id alone.
_DESCRIPTIVE = [storage.attr_key(k) for k in storage.GROUNDING_ATTRIBUTES if k != "aliases"]


def _lite(name: str) -> list:
    """Builder parts of the lite candidate list (``name``: the name expression, or ``null``)."""
    descriptive = [part for i, key in enumerate(_DESCRIPTIVE) for part in ((", " if i else ""), "n.", Ident(key))]
    return ["[n.id, ", name, ", n.", Ident(storage.attr_key("aliases")), ", [x IN [", *descriptive, "] WHERE x IS NOT NULL]]"]


_CONCEPT_LITE = _lite("n.name")
_PROPOSITION_LITE = _lite("null")
_ID_ONLY = ["n.id"]


def _ranked_rows(stmt: Statement, lite: list, scores: bool = False, source: str | None = None) -> None:
    """One row: the candidates in index order, the first ``$whole`` whole, the rest ``lite``.

    The first LIMIT candidates are usually the hits: returning them whole spares a second
    round trip, while the rest of the pool (which only feeds the re-ranking) skips the
    properties that are not scored — notably the embedding vector. One row of lists
    instead of a row per candidate: per-record overhead was a third of the statement."""
    stmt.line("WITH collect(node) AS nodes", ", collect(score) AS scores" if scores else "")
    stmt.line(
        "RETURN ",
        *([literal(source), " AS source, "] if source else []),
        "[n IN nodes[..",
        Param(None, "whole"),
        "] | ",
        storage.node_projection("n"),
        "] AS whole, [n IN nodes[",
        Param(None, "whole"),
        "..] | ",
        *lite,
        "] AS rest",
        ", scores" if scores else (", null AS scores" if source else ""),
    )


def both_endpoints(var: str, names: storage.Names) -> Fragment:
    """Cypher: the proposition node ``var`` still has its subject and its object relationship."""
    return frag("EXISTS { (", var, ")-[:", names.subject_rel, "]->() } AND EXISTS { (", var, ")-[:", names.object_rel, "]->() }")


def _fulltext_lines(stmt: Statement, index: str, type_field: str, lite: list, pool: int, source: str | None = None, guard: Fragment | None = None) -> None:
    """``guard``: a further condition on ``node``, tested before a candidate takes a place in the pool."""
    stmt.line("CALL db.index.fulltext.queryNodes(", literal(index), ", ", Param(None, "query"), ") YIELD node")
    by_type = frag(Param(None, "type"), " IS NULL OR node.", type_field, " = ", Param(None, "type"))
    stmt.line("WHERE ", *(("(", by_type, ") AND ", guard) if guard else (by_type,)))
    stmt.line("WITH node LIMIT ", Param(pool, "pool"))
    _ranked_rows(stmt, lite, source=source)


def _fulltext(index: str, type_field: str, lite: list, pool: int, label: str, guard: Fragment | None = None) -> Compiled:
    stmt = Statement()
    _fulltext_lines(stmt, index, type_field, lite, pool, guard=guard)
    return Compiled.of(stmt, label)


@functools.lru_cache(maxsize=64)
def _predicate_definitions(names: storage.Names) -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(names.concept), " {type: ", Param(storage.PROPOSITION_TYPE, "meta_type"), "})")
    stmt.line("WHERE ", Param(None, "type"), " IS NULL OR t.name = ", Param(None, "type"))
    stmt.line("RETURN t{.name, .", Ident(storage.attr_key("aliases")), ", .", Ident(storage.attr_key("description")), "} AS t")
    return Compiled.of(stmt, "predicate definitions")


@functools.lru_cache(maxsize=64)
def _propositions_by_predicate(names: storage.Names, whole_only: bool = False) -> Compiled:
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "predicates"), " AS pred")
    with stmt.block("CALL (pred)"):
        stmt.line("MATCH (p:", Ident(names.proposition), " {predicate: pred})")
        if whole_only:
            stmt.line("WHERE ", both_endpoints("p", names))
        stmt.line("RETURN p.id AS id ORDER BY p.id LIMIT ", Param(None, "pool"))
    stmt.line("RETURN pred, id LIMIT ", Param(None, "pool"))
    return Compiled.of(stmt, "propositions of matching predicates")


def _vector_lines(stmt: Statement, index: str, type_field: str, k: int, source: str | None = None, guard: Fragment | None = None) -> None:
    stmt.line("CALL db.index.vector.queryNodes(", literal(index), ", ", Param(k, "k"), ", ", Param(None, "vector"), ") YIELD node, score")
    stmt.line(
        "WHERE node.",
        storage.EMBEDDING_MODEL,
        " = ",
        Param(None, "model"),
        " AND (",
        Param(None, "type"),
        " IS NULL OR node.",
        type_field,
        " = ",
        Param(None, "type"),
        ")",
        *((" AND ", guard) if guard else ()),
    )
    stmt.line("WITH node, score LIMIT ", Param(k, "pool"))
    _ranked_rows(stmt, _ID_ONLY, scores=True, source=source)


def _vector(index: str, type_field: str, k: int, guard: Fragment | None = None) -> Compiled:
    stmt = Statement()
    _vector_lines(stmt, index, type_field, k, guard=guard)
    return Compiled.of(stmt, f"vector candidates ({index})")


def _hybrid(text_index: str, vector_index: str, type_field: str, lite: list, pool: int, guard: Fragment | None = None) -> Compiled:
    """Hybrid's first round trip: the plain full-text query and the vector query in one
    statement, one row each (``source``: "keyword" / "vector")."""
    stmt = Statement()
    _fulltext_lines(stmt, text_index, type_field, lite, pool, source="keyword", guard=guard)
    stmt.line("UNION ALL")
    _vector_lines(stmt, vector_index, type_field, pool, source="vector", guard=guard)
    return Compiled.of(stmt, f"full-text and vector candidates ({text_index}, {vector_index})")


@functools.lru_cache(maxsize=128)
def _hydrate(label: str) -> Compiled:
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "ids"), " AS id")
    stmt.line("MATCH (n:", Ident(label), " {id: id})")
    stmt.line("RETURN ", storage.node_projection("n"), " AS node")
    return Compiled.of(stmt, "whole hits not already fetched")


# ------------------------------------------------------------------ the plan
def candidate_pool(limit: int) -> int:
    """How many index candidates are re-scored for LIMIT hits (Lucene's order is not ours)."""
    return max(limit * POOL_FACTOR, POOL_MIN)


@dataclass(frozen=True)
class SearchPlan(Plan):
    """SEARCH CONCEPT|PROPOSITION: the resolved clauses, the Lucene queries and the statements.

    Keyword: ``fulltext`` with ``plain_query`` (+ for propositions ``definitions`` and
    ``by_predicate``), then with ``full_query`` only when LIMIT is not filled. Semantic:
    ``vector`` with the embedded term. Hybrid: both, fused. Then ``hydrate`` for hits that
    were fetched only in part, and the defined names when WITH TYPE found nothing.
    """

    concept: bool
    term: str
    with_type: str | None
    mode: str | None
    threshold: float
    limit: int
    pool: int
    plain_query: str | None
    full_query: str | None
    query_words: tuple[str, ...]
    fulltext: Compiled
    definitions: Compiled | None
    by_predicate: Compiled | None
    vector: Compiled
    hybrid: Compiled
    hydrate: Compiled
    #: Keyword candidates among adopted concepts (docs/adopt.md); None: nothing adopted to search.
    adopted: Compiled | None = None
    #: Vector candidates among adopted concepts / relationships (their shadow nodes); None: none
    #: embedded to search.
    adopted_vectors: Compiled | None = None
    #: SEARCH PROPOSITION: the relationships of adopted predicates whose name or description
    #: matched (``$predicates``); None: no adopted predicate to ground.
    adopted_by_predicate: Compiled | None = None

    @property
    def reads_vectors(self) -> bool:
        return self.mode != "keyword"  # no MODE: hybrid when an embedder is configured

    @property
    def meta_type(self) -> str:
        return storage.CONCEPT_TYPE if self.concept else storage.PROPOSITION_TYPE

    def steps(self) -> tuple[Compiled, ...]:
        keyword = (self.fulltext,) if self.concept else (self.fulltext, self.definitions, self.by_predicate)
        adopted = tuple(c for c in (self.adopted, self.adopted_vectors, self.adopted_by_predicate) if c is not None)
        return (self.hybrid, *keyword, *adopted, self.vector, self.hydrate, grounding.defined_names(self.names))


def lower_search(command: ast.Search, parameters: dict[str, Any], settings: Settings) -> SearchPlan:
    term = resolve_str(command.term, parameters, f"SEARCH {command.target}")
    if len(term) > settings.max_search_term_chars:
        raise KipError(
            errors.RESOURCE_EXHAUSTED,
            f"The SEARCH term has {len(term)} characters; the limit is {settings.max_search_term_chars} (max_search_term_chars).",
            "Search for a short phrase: the few words that name what you are looking for.",
            offset=command.term.span.start,
        )
    with_type = resolve_str(command.with_type, parameters, "WITH TYPE") if command.with_type is not None else None
    mode = None
    if command.mode is not None:
        mode = resolve_str(command.mode, parameters, "MODE")
        if mode not in MODES:
            raise KipError(
                errors.INVALID_SYNTAX,
                f'MODE must be "keyword", "semantic" or "hybrid", got {describe(mode)}.',
                'Write MODE "keyword", MODE "semantic" or MODE "hybrid" (or omit MODE).',
            )
    threshold = 0.0
    if command.threshold is not None:
        value = resolve(command.threshold, parameters)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            raise KipError(
                errors.INVALID_SYNTAX,
                f"THRESHOLD expects a number between 0.0 and 1.0, got {describe(value)}.",
                "Write THRESHOLD followed by a number in [0.0, 1.0], e.g. THRESHOLD 0.5.",
            )
        threshold = float(value)
    limit = resolve_int(command.limit, parameters, "LIMIT") if command.limit is not None else SEARCH_DEFAULT_LIMIT
    if limit > SEARCH_MAX_LIMIT:
        raise KipError(
            errors.RESOURCE_EXHAUSTED,
            f"SEARCH LIMIT {limit} exceeds the maximum of {SEARCH_MAX_LIMIT}.",
            f"Use LIMIT {SEARCH_MAX_LIMIT} or less; narrow the search WITH TYPE.",
        )
    concept = command.target == "CONCEPT"
    pool = candidate_pool(limit)
    names = storage.names(settings.namespace)
    # link_memory: the team may delete a node a memory proposition points at (docs/adopt.md): such a
    # proposition has lost an endpoint relationship and is never read, so SEARCH skips it too
    guard = both_endpoints("node", names) if settings.adoption is not None and settings.adoption.link_memory else None
    if concept:
        text_index, vector_index = catalog.concept_text_index(names), catalog.concept_vector_index(names)
        fulltext = _fulltext(text_index, "type", _CONCEPT_LITE, pool, "full-text candidates (concepts)")
        hybrid = _hybrid(text_index, vector_index, "type", _CONCEPT_LITE, pool)
    else:
        text_index, vector_index = catalog.proposition_text_index(names), catalog.proposition_vector_index(names)
        fulltext = _fulltext(text_index, "predicate", _PROPOSITION_LITE, pool, "full-text candidates (propositions)", guard)
        hybrid = _hybrid(text_index, vector_index, "predicate", _PROPOSITION_LITE, pool, guard)
    return SearchPlan(
        concept=concept,
        term=term,
        with_type=with_type,
        mode=mode,
        threshold=threshold,
        limit=limit,
        pool=pool,
        plain_query=lucene_query(term),
        full_query=lucene_query(term, expand=True),
        query_words=tuple(words(term)),
        fulltext=fulltext,
        definitions=None if concept else _predicate_definitions(names),
        by_predicate=None if concept else _propositions_by_predicate(names, guard is not None),
        vector=_vector(vector_index, "type" if concept else "predicate", pool, guard),
        hybrid=hybrid,
        hydrate=_hydrate(names.concept if concept else names.proposition),
        adopted=_adopted_search(settings, names, with_type, "text_indexed") if concept else _adopted_relationship_search(settings, names, with_type),
        adopted_vectors=_adopted_search(settings, names, with_type, "embedded") if concept else _adopted_relationship_vectors(settings, names, with_type),
        adopted_by_predicate=None if concept else _adopted_by_predicate(settings, with_type),
    )


def _adopted_predicates(settings: Settings, with_type: str | None) -> tuple[adopt.AdoptedPredicate, ...]:
    """The adopted predicates a SEARCH PROPOSITION reads: all, or the one WITH TYPE names (none
    when it names a memory predicate)."""
    chosen = settings.adoption
    if chosen is None:
        return ()
    return tuple(p for p in chosen.predicates if with_type is None or p.name == with_type)


def _adopted_relationship_search(settings: Settings, names: storage.Names, with_type: str | None) -> Compiled | None:
    """Keyword SEARCH PROPOSITION over the adopted relationship full-text index (docs/adopt.md):
    per hit ``[object, null, [text values]]`` (the text values the lexical score reads), for the
    relationships an adopted predicate reads — its type between its subject and object labels."""
    chosen = [p for p in _adopted_predicates(settings, with_type) if p.text]
    if not chosen or not settings.adoption.relationships_indexed:
        return None
    r = Internal("r")
    stmt = Statement()
    stmt.line(
        "CALL db.index.fulltext.queryRelationships(",
        literal(catalog.adopted_relationship_text_index(names)),
        ", ",
        Param(None, "query"),
        ") YIELD relationship AS ",
        r,
    )
    cases = [
        frag(
            "WHEN ",
            adopted_vectors.reads(r, p, settings.adoption),
            " THEN [",
            adopted.element(r, p, settings.adoption),
            ", null, [x IN [",
            join(", ", [frag(r, ".", Ident(prop)) for prop in p.text]),
            "] WHERE x IS NOT NULL]]",
        )
        for p in chosen
    ]
    stmt.line("WITH CASE ", join(" ", cases), " END AS hit WHERE hit IS NOT NULL")
    stmt.line("RETURN hit LIMIT ", Param(None, "pool"))
    return Compiled.of(stmt, "full-text candidates (adopted propositions)")


def _adopted_relationship_vectors(settings: Settings, names: storage.Names, with_type: str | None) -> Compiled | None:
    """Semantic SEARCH PROPOSITION over the adopted relationships' shadow vectors, when they are
    embedded and WITH TYPE names none or an adopted predicate."""
    chosen = _adopted_predicates(settings, with_type)
    if not chosen or not settings.adoption.relationships_embedded:
        return None
    return adopted_vectors.search_relationships(
        settings.adoption, catalog.adopted_relationship_vector_index(names), chosen[0] if with_type is not None else None
    )


def _adopted_by_predicate(settings: Settings, with_type: str | None) -> Compiled | None:
    """Up to ``$pool`` relationships (by elementId) of the adopted predicates among
    ``$predicates`` (best first): a predicate's name and description ground all its
    propositions (spec §5.2.2). A predicate not in ``$predicates`` unwinds no row, so its
    relationships are never matched."""
    chosen = _adopted_predicates(settings, with_type)
    if not chosen:
        return None
    r, rank, predicates = Internal("r"), Internal("rank"), Param(None, "predicates")
    stmt = Statement()
    with stmt.block("CALL ()"):
        for i, p in enumerate(chosen):
            if i:
                stmt.line("UNION ALL")
            stmt.line("UNWIND [i IN range(0, size(", predicates, ") - 1) WHERE ", predicates, "[i] = ", Param(p.name), "] AS ", rank)
            stmt.line(
                "MATCH ",
                adopted.node(Internal("s"), settings.adoption.type(p.subject)),
                "-[",
                r,
                ":",
                Ident(p.rel_type),
                "]->",
                adopted.node(Internal("o"), settings.adoption.type(p.object)),
            )
            stmt.line("WITH ", rank, ", ", r, " ORDER BY elementId(", r, ") LIMIT ", Param(None, "pool"))
            stmt.line("RETURN ", rank, ", ", adopted.element(r, p, settings.adoption), " AS hit")
    stmt.line("RETURN ", predicates, "[", rank, "] AS pred, hit ORDER BY ", rank, " LIMIT ", Param(None, "pool"))
    return Compiled.of(stmt, "propositions of matching adopted predicates")


def _adopted_search(settings: Settings, names: storage.Names, with_type: str | None, index: str) -> Compiled | None:
    """The adopted full-text (``index`` "text_indexed") or vector ("embedded") statement when the
    namespace adopted types with that index, and WITH TYPE names none or an adopted one."""
    chosen = settings.adoption
    if chosen is None or not getattr(chosen, index):
        return None
    t = chosen.type(with_type) if with_type is not None else None
    if with_type is not None and t is None:
        return None
    if index == "embedded":
        return adopted_vectors.search(names, chosen, catalog.adopted_vector_index(names), t)
    return Compiled.of(adopted.search_statement(chosen, catalog.adopted_text_index(names), t), "full-text candidates (adopted concepts)")

"""SEARCH CONCEPT|PROPOSITION (spec §5.2): keyword, semantic and hybrid retrieval on Neo4j indexes.

- Keyword: Neo4j full-text (Lucene) indexes over the grounding fields retrieve candidates;
  each candidate is then scored in [0, 1] by ``lexical_score`` — an absolute, documented
  measure (exact name/alias = 1.0), not a per-result normalization — so THRESHOLD means the
  same thing for every query. User text never reaches Lucene's query syntax: it is split into
  word tokens and every token is escaped.
- Semantic: the query text is embedded by the configured ``Embedder`` and matched on the
  VECTOR indexes (cosine); ``_score`` is the cosine similarity clipped to [0, 1].
- Hybrid: score-weighted reciprocal rank fusion of both rankings (docs/meta.md).

Without an embedder, "semantic" and "hybrid" run as "keyword" (spec §5.2.1).
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Optional

from .. import ast, embedding, errors, storage
from ..config import Settings
from ..cypher.builder import Ident, Param, Statement
from ..errors import KipError
from ..plan import Compiled, Plan, Tx
from ..results import concept_object, proposition_object
from ..values import describe, resolve, resolve_int, resolve_str

CONCEPT_TEXT_INDEX = "kip_concept_text"
PROPOSITION_TEXT_INDEX = "kip_proposition_text"
CONCEPT_VECTOR_INDEX = "kip_concept_embedding"
PROPOSITION_VECTOR_INDEX = "kip_proposition_embedding"
#: Lucene analyzer of both full-text indexes: standard tokenization, lower-casing and
#: ASCII folding ("Café" finds "cafe"), no stop-word removal.
ANALYZER = "standard-folding"

#: Grounding fields (properties) indexed for SEARCH CONCEPT and SEARCH PROPOSITION.
CONCEPT_TEXT_FIELDS = ("name",) + tuple(storage.attr_key(k) for k in embedding.GROUNDING_ATTRIBUTES)
PROPOSITION_TEXT_FIELDS = ("predicate",) + tuple(storage.attr_key(k) for k in embedding.GROUNDING_ATTRIBUTES)

#: Results returned when SEARCH has no LIMIT, and the largest LIMIT accepted (KIP_4002 beyond).
SEARCH_DEFAULT_LIMIT = 10
SEARCH_MAX_LIMIT = 1000
#: Reciprocal-rank-fusion constant (the customary 60).
RRF_K = 60
MODES = ("keyword", "semantic", "hybrid")


def _on_each(var: str, fields: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"{var}.`{f}`" for f in fields) + "]"


SCHEMA_STATEMENTS = (
    f"CREATE FULLTEXT INDEX {CONCEPT_TEXT_INDEX} IF NOT EXISTS FOR (n:{storage.CONCEPT}) ON EACH "
    f"{_on_each('n', CONCEPT_TEXT_FIELDS)} OPTIONS {{indexConfig: {{`fulltext.analyzer`: '{ANALYZER}', `fulltext.eventually_consistent`: false}}}}",
    f"CREATE FULLTEXT INDEX {PROPOSITION_TEXT_INDEX} IF NOT EXISTS FOR (p:{storage.PROPOSITION}) ON EACH "
    f"{_on_each('p', PROPOSITION_TEXT_FIELDS)} OPTIONS {{indexConfig: {{`fulltext.analyzer`: '{ANALYZER}', `fulltext.eventually_consistent`: false}}}}",
    # No fixed dimensions: any embedder's vectors are indexed; queries filter on the model name.
    f"CREATE VECTOR INDEX {CONCEPT_VECTOR_INDEX} IF NOT EXISTS FOR (n:{storage.CONCEPT}) ON n.{embedding.EMBEDDING} "
    "OPTIONS {indexConfig: {`vector.similarity_function`: 'cosine'}}",
    # embedding.after_write finds the elements a KML statement touched through these.
    f"CREATE INDEX kip_concept_updated_at IF NOT EXISTS FOR (n:{storage.CONCEPT}) ON (n.`meta._updated_at`)",
    f"CREATE INDEX kip_proposition_updated_at IF NOT EXISTS FOR (p:{storage.PROPOSITION}) ON (p.`meta._updated_at`)",
    f"CREATE VECTOR INDEX {PROPOSITION_VECTOR_INDEX} IF NOT EXISTS FOR (p:{storage.PROPOSITION}) ON p.{embedding.EMBEDDING} "
    "OPTIONS {indexConfig: {`vector.similarity_function`: 'cosine'}}",
)

_NODE = "{.*, kip_embedding: null}"


def search_capabilities(settings: Optional[Settings]) -> dict[str, Any]:
    """The live SEARCH capability, as advertised by DESCRIBE PRIMER."""
    embedder = embedding.resolve(settings)
    out: dict[str, Any] = {
        "modes": list(MODES) if embedder else ["keyword"],
        "default_mode": "hybrid" if embedder else "keyword",
        "semantic": embedder is not None,
        "grounding_fields": {
            "concept": ["name"] + [f"attributes.{k}" for k in embedding.GROUNDING_ATTRIBUTES],
            "proposition": ["predicate", "$PropositionType description"] + [f"attributes.{k}" for k in embedding.GROUNDING_ATTRIBUTES],
        },
        "default_limit": SEARCH_DEFAULT_LIMIT,
        "max_limit": SEARCH_MAX_LIMIT,
        "score": "metadata._score in [0, 1]; keyword: lexical match quality, semantic: cosine similarity, hybrid: score-weighted reciprocal rank fusion",
    }
    if embedder is not None:
        out["embedder"] = {"name": embedder.name, "dimensions": embedder.dimensions}
    else:
        out["semantic_unavailable_reason"] = embedding.unavailable_reason() + "; semantic and hybrid run as keyword"
    return out


# ------------------------------------------------------------------ text normalization
_WORD = re.compile(r"\w+", re.UNICODE)
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def _is_cjk(char: str) -> bool:
    return embedding._is_cjk(ord(char))


def fold(text: str) -> str:
    """Lower-case and strip accents (what the index's ASCII folding does, near enough)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def tokens(text: str) -> list[str]:
    """Word tokens of a text or identifier: snake_case and CamelCase split, CJK per character."""
    out: list[str] = []
    for word in _WORD.findall(fold(embedding.identifier_words(text) if text else "")):
        word = word.replace("_", " ")
        for part in word.split():
            if any(_is_cjk(c) for c in part):
                chunk = ""
                for c in part:
                    if _is_cjk(c):
                        if chunk:
                            out.append(chunk)
                            chunk = ""
                        out.append(c)
                    else:
                        chunk += c
                if chunk:
                    out.append(chunk)
            else:
                out.append(part)
    return out


def escape_lucene(token: str) -> str:
    return _LUCENE_SPECIAL.sub(r"\\\1", token)


def lucene_query(term: str, max_tokens: int = 32) -> Optional[str]:
    """A Lucene query built only from escaped word tokens of ``term``; None when it has none.

    Each token matches as a term (boosted), a prefix, an infix (compound names such as
    ``belongs_to_domain`` are single index terms) and, when long enough, fuzzily.
    """
    seen: list[str] = []
    for token in _WORD.findall(fold(term)):
        if token not in seen:
            seen.append(token)
    seen = seen[:max_tokens]
    if not seen:
        return None
    clauses = []
    for token in seen:
        quoted = escape_lucene(token)
        parts = [f"{quoted}^4"]
        if not any(_is_cjk(c) for c in token):
            if len(token) >= 2:
                parts.append(f"{quoted}*^2")
            if len(token) >= 3:
                parts.append(f"*{quoted}*")
            if len(token) >= 5:
                parts.append(f"{quoted}~1")
        clauses.append("(" + " OR ".join(parts) + ")")
    return " OR ".join(clauses)


# ------------------------------------------------------------------ lexical score
def _token_similarity(q: str, f: str) -> float:
    if q == f:
        return 1.0
    if len(q) >= 2 and f.startswith(q):
        return 0.6 + 0.3 * len(q) / len(f)
    if len(q) >= 3 and q in f:
        return 0.5 + 0.3 * len(q) / len(f)
    if len(q) >= 4 and len(f) >= 4 and abs(len(q) - len(f)) <= 2:
        ratio = difflib.SequenceMatcher(None, q, f).ratio()
        if ratio >= 0.8:
            return 0.8 * ratio
    return 0.0


def field_score(query_tokens: list[str], text: str, name_like: bool) -> float:
    """How well one field matches the query, in [0, 1].

    Name-like fields (name, alias, predicate): coverage of the query tokens, discounted
    by the share of the field's tokens left unmatched (exact match = 1.0). Descriptive
    fields: coverage × 0.7 — a mention in a description never outranks a name match.
    """
    field_tokens = tokens(text)
    if not field_tokens or not query_tokens:
        return 0.0
    if name_like and field_tokens == query_tokens:
        return 1.0
    best = [max(_token_similarity(q, f) for f in field_tokens) for q in query_tokens]
    coverage = sum(best) / len(query_tokens)
    if coverage == 0:
        return 0.0
    if not name_like:
        return 0.7 * coverage
    matched = sum(1 for f in field_tokens if max(_token_similarity(q, f) for q in query_tokens) >= 0.5)
    precision = matched / len(field_tokens)
    return coverage * (0.6 + 0.4 * precision) * (0.95 if coverage < 1 or precision < 1 else 1.0)


def _texts(value: Any) -> list[str]:
    return embedding._text_values(embedding.safe_decode(value))


def concept_lexical_score(query_tokens: list[str], props: dict[str, Any]) -> float:
    best = field_score(query_tokens, props.get("name") or "", True)
    for alias in _texts(props.get(storage.attr_key("aliases"))):
        best = max(best, field_score(query_tokens, alias, True))
    for key in embedding.GROUNDING_ATTRIBUTES:
        if key == "aliases" or best >= 1.0:
            continue
        for text in _texts(props.get(storage.attr_key(key))):
            best = max(best, field_score(query_tokens, text, False))
    return best


def proposition_lexical_score(query_tokens: list[str], props: dict[str, Any]) -> float:
    best = 0.0
    for key in embedding.GROUNDING_ATTRIBUTES:
        for text in _texts(props.get(storage.attr_key(key))):
            best = max(best, field_score(query_tokens, text, key == "aliases"))
    return best


def predicate_lexical_score(query_tokens: list[str], predicate: str, definition: Optional[dict[str, Any]]) -> float:
    best = field_score(query_tokens, predicate, True)
    if definition:
        for alias in _texts(definition.get(storage.attr_key("aliases"))):
            best = max(best, field_score(query_tokens, alias, True))
        for text in _texts(definition.get(storage.attr_key("description"))):
            best = max(best, field_score(query_tokens, text, False))
    return best


# ------------------------------------------------------------------ statements
def _fulltext_concepts(pool: int) -> Compiled:
    stmt = Statement()
    stmt.line(f"CALL db.index.fulltext.queryNodes('{CONCEPT_TEXT_INDEX}', ", Param(None, "query"), ") YIELD node, score")
    stmt.line("WHERE ", Param(None, "type"), " IS NULL OR node.type = ", Param(None, "type"))
    stmt.line(f"RETURN node{_NODE} AS node, score LIMIT ", Param(pool, "pool"))
    return Compiled.of(stmt, "full-text candidates (concepts)")


def _fulltext_propositions(pool: int) -> Compiled:
    stmt = Statement()
    stmt.line(f"CALL db.index.fulltext.queryNodes('{PROPOSITION_TEXT_INDEX}', ", Param(None, "query"), ") YIELD node, score")
    stmt.line("WHERE ", Param(None, "type"), " IS NULL OR node.predicate = ", Param(None, "type"))
    stmt.line(f"RETURN node{_NODE} AS node, score LIMIT ", Param(pool, "pool"))
    return Compiled.of(stmt, "full-text candidates (propositions)")


def _predicate_definitions() -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.CONCEPT), " {type: ", Param(storage.PROPOSITION_TYPE, "meta_type"), "})")
    stmt.line("WHERE ", Param(None, "type"), " IS NULL OR t.name = ", Param(None, "type"))
    stmt.line(f"RETURN t{_NODE} AS t")
    return Compiled.of(stmt, "predicate definitions")


def _propositions_by_predicate() -> Compiled:
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "predicates"), " AS pred")
    stmt.line("CALL (pred) {")
    stmt.line("  MATCH (p:", Ident(storage.PROPOSITION), " {predicate: pred})")
    stmt.line(f"  RETURN p{_NODE} AS node ORDER BY p.id LIMIT ", Param(None, "pool"))
    stmt.line("}")
    stmt.line("RETURN node LIMIT ", Param(None, "pool"))
    return Compiled.of(stmt, "propositions of matching predicates")


def _vector(index: str, type_field: str, k: int) -> Compiled:
    stmt = Statement()
    stmt.line(f"CALL db.index.vector.queryNodes('{index}', ", Param(k, "k"), ", ", Param(None, "vector"), ") YIELD node, score")
    stmt.line(f"WHERE node.{embedding.EMBEDDING_MODEL} = ", Param(None, "model"), " AND (", Param(None, "type"), f" IS NULL OR node.{type_field} = ", Param(None, "type"), ")")
    stmt.line(f"RETURN node{_NODE} AS node, score LIMIT ", Param(None, "pool"))
    return Compiled.of(stmt, f"vector candidates ({index})")


def _type_defined(meta_type: str) -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.CONCEPT), " {type: ", Param(meta_type, "meta_type"), "})")
    stmt.line("RETURN t.name AS name")
    return Compiled.of(stmt, "defined names (for the WITH TYPE check)")


# ------------------------------------------------------------------ the plan
@dataclass
class SearchSpec:
    target: str
    term: str
    with_type: Optional[str]
    mode: Optional[str]
    threshold: float
    limit: int


def resolve_search(command: ast.Search, parameters: dict[str, Any]) -> SearchSpec:
    term = resolve_str(command.term, parameters, f"SEARCH {command.target}")
    with_type = resolve_str(command.with_type, parameters, "WITH TYPE") if command.with_type is not None else None
    mode = None
    if command.mode is not None:
        mode = resolve_str(command.mode, parameters, "MODE")
        if mode not in MODES:
            raise KipError(errors.INVALID_SYNTAX, f"MODE must be \"keyword\", \"semantic\" or \"hybrid\", got {describe(mode)}.", "Write MODE \"keyword\", MODE \"semantic\" or MODE \"hybrid\" (or omit MODE).")
    threshold = 0.0
    if command.threshold is not None:
        value = resolve(command.threshold, parameters)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            raise KipError(errors.INVALID_SYNTAX, f"THRESHOLD expects a number between 0.0 and 1.0, got {describe(value)}.", "Write THRESHOLD followed by a number in [0.0, 1.0], e.g. THRESHOLD 0.5.")
        threshold = float(value)
    limit = resolve_int(command.limit, parameters, "LIMIT") if command.limit is not None else SEARCH_DEFAULT_LIMIT
    if limit > SEARCH_MAX_LIMIT:
        raise KipError(errors.RESOURCE_EXHAUSTED, f"SEARCH LIMIT {limit} exceeds the maximum of {SEARCH_MAX_LIMIT}.", f"Use LIMIT {SEARCH_MAX_LIMIT} or less; narrow the search WITH TYPE.")
    return SearchSpec(command.target, term, with_type, mode, threshold, limit)


def _with_score(obj: dict[str, Any], score: float) -> dict[str, Any]:
    obj["metadata"] = {**obj["metadata"], "_score": round(score, 4)}
    return obj


def lower_search(command: ast.Search, parameters: dict[str, Any], settings: Settings) -> Plan:
    spec = resolve_search(command, parameters)
    concept = spec.target == "CONCEPT"
    pool = max(spec.limit * 5, 50)
    query = lucene_query(spec.term)
    query_tokens = tokens(spec.term)
    meta_type = storage.CONCEPT_TYPE if concept else storage.PROPOSITION_TYPE
    fulltext = _fulltext_concepts(pool) if concept else _fulltext_propositions(pool)
    vector = _vector(CONCEPT_VECTOR_INDEX if concept else PROPOSITION_VECTOR_INDEX, "type" if concept else "predicate", pool)
    definitions = _predicate_definitions()
    by_predicate = _propositions_by_predicate()
    defined = _type_defined(meta_type)
    statements = [fulltext, vector] + ([] if concept else [definitions, by_predicate]) + [defined]

    def keyword(tx: Tx) -> list[tuple[str, float, dict[str, Any]]]:
        if query is None:
            return []
        hits: dict[str, tuple[float, float, dict[str, Any]]] = {}
        for rank, row in enumerate(tx.run(fulltext, {"query": query, "type": spec.with_type})):
            node = row["node"]
            score = concept_lexical_score(query_tokens, node) if concept else proposition_lexical_score(query_tokens, node)
            if score > 0:
                hits[node["id"]] = (score, -rank, node)
        if not concept:
            # The predicate name and its $PropositionType description ground every proposition of that predicate.
            scored_predicates = {}
            for row in tx.run(definitions, {"type": spec.with_type}):
                score = predicate_lexical_score(query_tokens, row["t"]["name"], row["t"])
                if score > 0:
                    scored_predicates[row["t"]["name"]] = score
            if scored_predicates:
                best_first = sorted(scored_predicates, key=lambda p: (-scored_predicates[p], p))
                for row in tx.run(by_predicate, {"predicates": best_first, "pool": pool}):
                    node = row["node"]
                    score = scored_predicates[node["predicate"]]
                    if node["id"] not in hits or hits[node["id"]][0] < score:
                        hits[node["id"]] = (score, 0, node)
        ranked = sorted(hits.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
        return [(element_id, score, node) for element_id, (score, _, node) in ranked[:pool]]

    def semantic(tx: Tx, embedder: embedding.Embedder) -> list[tuple[str, float, dict[str, Any]]]:
        if not spec.term.strip():
            return []
        vector_value = [float(x) for x in embedder.embed([spec.term])[0]]
        k = pool * 4 if spec.with_type else pool
        rows = tx.run(vector, {"vector": vector_value, "model": embedder.name, "type": spec.with_type, "k": k, "pool": pool})
        out = []
        for row in rows:
            cosine = max(0.0, min(1.0, 2.0 * float(row["score"]) - 1.0))
            out.append((row["node"]["id"], cosine, row["node"]))
        out.sort(key=lambda item: (-item[1], item[0]))
        return out

    def runner(tx: Tx) -> dict[str, Any]:
        embedder = embedding.resolve(tx.settings)
        mode = spec.mode or ("hybrid" if embedder else "keyword")
        if embedder is None:
            mode = "keyword"
        if mode == "keyword":
            ranked = keyword(tx)
        elif mode == "semantic":
            ranked = semantic(tx, embedder)
        else:
            ranked = fuse([keyword(tx), semantic(tx, embedder)])
        results = []
        for _, score, node in ranked:
            if score < spec.threshold or score <= 0:
                continue
            obj = concept_object(node) if concept else proposition_object(node)
            results.append(_with_score(obj, score))
            if len(results) >= spec.limit:
                break
        if not results and spec.with_type is not None:
            names = [row["name"] for row in tx.run(defined)]
            if spec.with_type not in names:
                raise KipError(errors.TYPE_MISMATCH, f"WITH TYPE \"{spec.with_type}\" is not a defined {'concept type' if concept else 'predicate'}.", errors.did_you_mean("concept type" if concept else "predicate", spec.with_type, names))
        return {"result": results}

    return Plan("META", "READ", statements, runner)


def fuse(rankings: list[list[tuple[str, float, dict[str, Any]]]], k: int = RRF_K) -> list[tuple[str, float, dict[str, Any]]]:
    """Score-weighted reciprocal rank fusion.

    fused(d) = (1/R) · Σ_r s_r(d) · (k + 1) / (k + rank_r(d)), over the R rankings, where
    s_r is the hit's [0, 1] score in ranking r (0 when absent) and rank_r starts at 1. A hit
    ranked first with score 1.0 by every retriever scores 1.0; the ordering is RRF's,
    tempered by how good each match actually is.
    """
    fused: dict[str, float] = {}
    nodes: dict[str, dict[str, Any]] = {}
    for ranking in rankings:
        for rank, (element_id, score, node) in enumerate(ranking, start=1):
            fused[element_id] = fused.get(element_id, 0.0) + score * (k + 1) / (k + rank)
            nodes.setdefault(element_id, node)
    total = max(len(rankings), 1)
    out = [(element_id, value / total, nodes[element_id]) for element_id, value in fused.items()]
    out.sort(key=lambda item: (-item[1], item[0]))
    return out

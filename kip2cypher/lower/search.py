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
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from .. import embedding, errors

from ..cypher import storage
from ..syntax import ast
from ..config import Settings
from ..cypher.builder import Ident, Param, Statement
from ..errors import KipError
from ._legacy import Compiled, Plan, Tx
from ..execution.results import concept_object, proposition_object
from ..syntax.values import describe, resolve, resolve_int, resolve_str

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
#: Candidates re-scored per LIMIT hit, and at least (see ``candidate_pool``).
POOL_FACTOR = 2
POOL_MIN = 20
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


def search_capabilities(embedder: Any, unavailable_reason: str) -> dict[str, Any]:
    """The live SEARCH capability, as advertised by DESCRIBE PRIMER (``embedder``: the one in force, or None)."""
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
        out["semantic_unavailable_reason"] = unavailable_reason + "; semantic and hybrid run as keyword"
    return out


# ------------------------------------------------------------------ text normalization
_WORD = re.compile(r"\w+", re.UNICODE)
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def _is_cjk(char: str) -> bool:
    return embedding._is_cjk(ord(char))


def fold(text: str) -> str:
    """Lower-case and strip accents (what the index's ASCII folding does, near enough)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


@functools.lru_cache(maxsize=32768)
def _tokens(text: str) -> tuple[str, ...]:
    if text.isascii():
        # Fast path, same result as below: ASCII has no accents and no CJK; CamelCase and
        # snake_case split exactly as embedding.identifier_words does.
        return tuple(_ASCII_WORD.findall(_CAMEL.sub(" ", text).lower()))
    out: list[str] = []
    for word in _WORD.findall(fold(embedding.identifier_words(text))):
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
    return tuple(out)


def tokens(text: str) -> list[str]:
    """Word tokens of a text or identifier: snake_case and CamelCase split, CJK per character.

    Memoized per text (candidates' names and descriptions recur across searches)."""
    return list(_tokens(text)) if text else []


def escape_lucene(token: str) -> str:
    return _LUCENE_SPECIAL.sub(r"\\\1", token)


def _query_words(term: str, max_tokens: int) -> list[str]:
    seen: list[str] = []
    for token in _WORD.findall(fold(term)):
        if token not in seen:
            seen.append(token)
    return seen[:max_tokens]


def lucene_query(term: str, max_tokens: int = 32, expand: bool = False) -> Optional[str]:
    """A Lucene query built only from escaped word tokens of ``term``; None when it has none.

    Each token matches as a term (boosted) and a prefix: the query keyword SEARCH runs
    first. With ``expand`` (the recall query, run only when that one leaves LIMIT unfilled)
    a token also matches as an infix — compound names such as ``belongs_to_domain`` are
    single index terms — and, when long enough, fuzzily. Those expansions cost: a
    leading-wildcard infix makes Lucene walk the whole term dictionary of every indexed
    field (3–7× the plain query at 100k concepts), a fuzzy term ≈ 2×.
    """
    seen = _query_words(term, max_tokens)
    if not seen:
        return None
    clauses = []
    for token in seen:
        quoted = escape_lucene(token)
        parts = [f"{quoted}^4"]
        if not any(_is_cjk(c) for c in token):
            if len(token) >= 2:
                parts.append(f"{quoted}*^2")
            if expand and len(token) >= 3:
                parts.append(f"*{quoted}*")
            if expand and len(token) >= 5:
                parts.append(f"{quoted}~1")
        clauses.append("(" + " OR ".join(parts) + ")")
    return " OR ".join(clauses)


# ------------------------------------------------------------------ lexical score
def _similarity_ratio(a: str, b: str) -> float:
    """2·LCS(a, b) / (|a| + |b|): the classic similarity ratio, on the longest common subsequence."""
    total = len(a) + len(b)
    # An upper bound first (the LCS cannot exceed the shared characters): most pairs stop here.
    shared = sum(min(a.count(c), b.count(c)) for c in set(a))
    if 2 * shared < 0.8 * total:
        return 2 * shared / total
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b):
            current.append(previous[j] + 1 if ca == cb else max(previous[j + 1], current[j]))
        previous = current
    return 2 * previous[-1] / total


@functools.lru_cache(maxsize=65536)
def _token_similarity(q: str, f: str) -> float:
    if q == f:
        return 1.0
    if len(q) >= 2 and f.startswith(q):
        return 0.6 + 0.3 * len(q) / len(f)
    if len(q) >= 3 and q in f:
        return 0.5 + 0.3 * len(q) / len(f)
    if len(q) >= 4 and len(f) >= 4 and abs(len(q) - len(f)) <= 2:
        ratio = _similarity_ratio(q, f)
        if ratio >= 0.8:
            return 0.8 * ratio
    return 0.0


class Scorer:
    """The lexical score of one query; memoizes per field token and per field text across
    its candidates (names and descriptions share most of their words)."""

    def __init__(self, query_tokens: list[str]) -> None:
        self.query = tuple(query_tokens)
        self._vectors: dict[str, tuple[float, ...]] = {}
        self._fields: dict[tuple[str, bool], float] = {}

    def _vector(self, f: str) -> tuple[float, ...]:
        """The similarity of field token ``f`` to each query token."""
        vector = self._vectors.get(f)
        if vector is None:
            vector = self._vectors[f] = tuple(_token_similarity(q, f) for q in self.query)
        return vector

    def field(self, text: str, name_like: bool) -> float:
        """How well one field matches the query, in [0, 1].

        Name-like fields (name, alias, predicate): coverage of the query tokens, discounted
        by the share of the field's tokens left unmatched (exact match = 1.0). Descriptive
        fields: coverage × 0.7 — a mention in a description never outranks a name match.
        """
        key = (text, name_like)
        known = self._fields.get(key)
        if known is None:
            known = self._fields[key] = self._field(text, name_like)
        return known

    def _field(self, text: str, name_like: bool) -> float:
        query = self.query
        field_tokens = _tokens(text) if text else ()
        if not field_tokens or not query:
            return 0.0
        if name_like and field_tokens == query:
            return 1.0
        vectors = [self._vector(f) for f in field_tokens]
        coverage = sum(map(max, zip(*vectors))) / len(query)
        if coverage == 0:
            return 0.0
        if not name_like:
            return 0.7 * coverage
        precision = sum(max(v) >= 0.5 for v in vectors) / len(field_tokens)
        return coverage * (0.6 + 0.4 * precision) * (0.95 if coverage < 1 or precision < 1 else 1.0)

    def grounding(self, name: Optional[str], aliases: Any, descriptive: Iterable[Any]) -> float:
        """The best field: the name and each alias (name-like), then the descriptive values."""
        best = self.field(name, True) if name else 0.0
        for alias in _texts(aliases):
            best = max(best, self.field(alias, True))
        if best >= 0.7:
            return best  # a descriptive field scores at most 0.7
        for value in descriptive:
            for text in _texts(value):
                best = max(best, self.field(text, False))
        return best

    def concept(self, props: dict[str, Any]) -> float:
        return self.grounding(props.get("name"), props.get(_ALIASES), (props.get(k) for k in _DESCRIPTIVE))

    def proposition(self, props: dict[str, Any]) -> float:
        return self.grounding(None, props.get(_ALIASES), (props.get(k) for k in _DESCRIPTIVE))

    def candidate(self, row: Any, concept: bool) -> float:
        """A whole node (dict) or a lite row [id, name, aliases, [descriptive values]]."""
        if isinstance(row, dict):
            return self.concept(row) if concept else self.proposition(row)
        return self.grounding(row[1], row[2], row[3])

    def predicate(self, predicate: str, definition: Optional[dict[str, Any]]) -> float:
        best = self.field(predicate, True)
        if definition:
            for alias in _texts(definition.get(_ALIASES)):
                best = max(best, self.field(alias, True))
            for text in _texts(definition.get(storage.attr_key("description"))):
                best = max(best, self.field(text, False))
        return best


def field_score(query_tokens: list[str], text: str, name_like: bool) -> float:
    """How well one field matches the query, in [0, 1] (``Scorer.field``)."""
    return Scorer(query_tokens).field(text, name_like)


def _texts(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) and not value.startswith(storage.JSON_MARKER):
        return [value]
    return embedding._text_values(embedding.safe_decode(value))


_ALIASES = storage.attr_key("aliases")
_DESCRIPTIVE = tuple(storage.attr_key(k) for k in embedding.GROUNDING_ATTRIBUTES if k != "aliases")


def concept_lexical_score(query_tokens: list[str], props: dict[str, Any]) -> float:
    return Scorer(query_tokens).concept(props)


def proposition_lexical_score(query_tokens: list[str], props: dict[str, Any]) -> float:
    return Scorer(query_tokens).proposition(props)


def predicate_lexical_score(query_tokens: list[str], predicate: str, definition: Optional[dict[str, Any]]) -> float:
    return Scorer(query_tokens).predicate(predicate, definition)


# ------------------------------------------------------------------ statements
#: What a candidate carries when it is not returned whole: a list [id, name, aliases,
#: [descriptive values present]] — only what the lexical score reads, and no map keys (the
#: driver decodes every key string); vector candidates carry their id alone.
_DESCRIPTIVE_LIST = ", ".join(f"n.`{key}`" for key in (storage.attr_key(k) for k in embedding.GROUNDING_ATTRIBUTES if k != "aliases"))
_CONCEPT_LITE = f"[n.id, n.name, n.`{storage.attr_key('aliases')}`, [x IN [{_DESCRIPTIVE_LIST}] WHERE x IS NOT NULL]]"
_PROPOSITION_LITE = f"[n.id, null, n.`{storage.attr_key('aliases')}`, [x IN [{_DESCRIPTIVE_LIST}] WHERE x IS NOT NULL]]"
_ID_ONLY = "n.id"


def _ranked_rows(stmt: Statement, lite: str, scores: bool = False) -> None:
    """One row: the candidates in index order, the first ``$whole`` whole, the rest ``lite``.

    The first LIMIT candidates are usually the hits: returning them whole spares a second
    round trip, while the rest of the pool (which only feeds the re-ranking) skips the
    properties that are not scored — notably the embedding vector. One row of lists
    instead of a row per candidate: per-record overhead was a third of the statement."""
    stmt.line("WITH collect(node) AS nodes" + (", collect(score) AS scores" if scores else ""))
    stmt.line("RETURN [n IN nodes[..", Param(None, "whole"), f"] | n{_NODE}] AS whole, [n IN nodes[", Param(None, "whole"), f"..] | {lite}] AS rest" + (", scores" if scores else ""))


def _rows(row: dict[str, Any]) -> list[tuple[int, str, Any, bool]]:
    """(rank, id, whole node or lite value, whole?) for the one row of ``_ranked_rows``."""
    whole = row["whole"]
    out = [(i, n["id"], n, True) for i, n in enumerate(whole)]
    for i, lite in enumerate(row["rest"], start=len(whole)):
        out.append((i, lite if isinstance(lite, str) else lite[0], lite, False))
    return out


def _fulltext(index: str, type_field: str, lite: str, pool: int, label: str) -> Compiled:
    stmt = Statement()
    stmt.line(f"CALL db.index.fulltext.queryNodes('{index}', ", Param(None, "query"), ") YIELD node")
    stmt.line("WHERE ", Param(None, "type"), f" IS NULL OR node.{type_field} = ", Param(None, "type"))
    stmt.line("WITH node LIMIT ", Param(pool, "pool"))
    _ranked_rows(stmt, lite)
    return Compiled.of(stmt, label)


def _fulltext_concepts(pool: int) -> Compiled:
    return _fulltext(CONCEPT_TEXT_INDEX, "type", _CONCEPT_LITE, pool, "full-text candidates (concepts)")


def _fulltext_propositions(pool: int) -> Compiled:
    return _fulltext(PROPOSITION_TEXT_INDEX, "predicate", _PROPOSITION_LITE, pool, "full-text candidates (propositions)")


def _predicate_definitions() -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.CONCEPT), " {type: ", Param(storage.PROPOSITION_TYPE, "meta_type"), "})")
    stmt.line("WHERE ", Param(None, "type"), " IS NULL OR t.name = ", Param(None, "type"))
    stmt.line(f"RETURN t{{.name, .`{storage.attr_key('aliases')}`, .`{storage.attr_key('description')}`}} AS t")
    return Compiled.of(stmt, "predicate definitions")


def _propositions_by_predicate() -> Compiled:
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "predicates"), " AS pred")
    stmt.line("CALL (pred) {")
    stmt.line("  MATCH (p:", Ident(storage.PROPOSITION), " {predicate: pred})")
    stmt.line("  RETURN p.id AS id ORDER BY p.id LIMIT ", Param(None, "pool"))
    stmt.line("}")
    stmt.line("RETURN pred, id LIMIT ", Param(None, "pool"))
    return Compiled.of(stmt, "propositions of matching predicates")


def _vector(index: str, type_field: str, k: int) -> Compiled:
    stmt = Statement()
    stmt.line(f"CALL db.index.vector.queryNodes('{index}', ", Param(k, "k"), ", ", Param(None, "vector"), ") YIELD node, score")
    stmt.line(f"WHERE node.{embedding.EMBEDDING_MODEL} = ", Param(None, "model"), " AND (", Param(None, "type"), f" IS NULL OR node.{type_field} = ", Param(None, "type"), ")")
    stmt.line("WITH node, score LIMIT ", Param(None, "pool"))
    _ranked_rows(stmt, _ID_ONLY, scores=True)
    return Compiled.of(stmt, f"vector candidates ({index})")


def _hydrate(label: str) -> Compiled:
    stmt = Statement()
    stmt.line("UNWIND ", Param(None, "ids"), " AS id")
    stmt.line("MATCH (n:", Ident(label), " {id: id})")
    stmt.line(f"RETURN n{_NODE} AS node")
    return Compiled.of(stmt, "whole hits not already fetched")


def _type_defined(meta_type: str) -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.CONCEPT), " {type: ", Param(meta_type, "meta_type"), "})")
    stmt.line("RETURN t.name AS name")
    return Compiled.of(stmt, "defined names (for the WITH TYPE check)")


# ------------------------------------------------------------------ the plan
def candidate_pool(limit: int) -> int:
    """How many index candidates are re-scored for LIMIT hits (Lucene's order is not ours)."""
    return max(limit * POOL_FACTOR, POOL_MIN)


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


#: A ranked hit: (id, score, the whole node — or None when only part of it was fetched).
Hit = tuple[str, float, Optional[dict[str, Any]]]


def lower_search(command: ast.Search, parameters: dict[str, Any], settings: Settings) -> Plan:
    spec = resolve_search(command, parameters)
    concept = spec.target == "CONCEPT"
    pool = candidate_pool(spec.limit)
    plain_query = lucene_query(spec.term)
    full_query = lucene_query(spec.term, expand=True)
    query_tokens = tokens(spec.term)
    meta_type = storage.CONCEPT_TYPE if concept else storage.PROPOSITION_TYPE
    fulltext = _fulltext_concepts(pool) if concept else _fulltext_propositions(pool)
    vector = _vector(CONCEPT_VECTOR_INDEX if concept else PROPOSITION_VECTOR_INDEX, "type" if concept else "predicate", pool)
    definitions = _predicate_definitions()
    by_predicate = _propositions_by_predicate()
    hydrate = _hydrate(storage.CONCEPT if concept else storage.PROPOSITION)
    defined = _type_defined(meta_type)
    statements = [fulltext, vector] + ([] if concept else [definitions, by_predicate]) + [hydrate, defined]
    floor = max(spec.threshold, 1e-9)

    def keyword(tx: Tx) -> list[Hit]:
        if plain_query is None:
            return []
        scorer = Scorer(query_tokens)
        # id -> (score, order, props, whole); order: index rank (first query), then after it.
        hits: dict[str, tuple[float, int, Optional[dict[str, Any]], bool]] = {}

        def candidates(query: str, offset: int) -> None:
            for row in tx.run(fulltext, {"query": query, "type": spec.with_type, "whole": spec.limit}):
                for rank, element_id, node, whole in _rows(row):
                    known = hits.get(element_id)
                    if known is not None:
                        if whole and not known[3]:  # fetched whole this time: no hydration needed
                            hits[element_id] = (known[0], known[1], node, True)
                        continue
                    score = scorer.candidate(node, concept)
                    if score > 0:
                        hits[element_id] = (score, offset + rank, node, whole)

        candidates(plain_query, 0)
        if not concept:
            # The predicate name and its $PropositionType description ground every proposition of that predicate.
            scored_predicates = {}
            for row in tx.run(definitions, {"type": spec.with_type}):
                score = scorer.predicate(row["t"]["name"], row["t"])
                if score > 0:
                    scored_predicates[row["t"]["name"]] = score
            if scored_predicates:
                best_first = sorted(scored_predicates, key=lambda p: (-scored_predicates[p], p))
                for row in tx.run(by_predicate, {"predicates": best_first, "pool": pool}):
                    score = scored_predicates[row["pred"]]
                    known = hits.get(row["id"])
                    if known is None or known[0] < score:
                        hits[row["id"]] = (score, -1, known[2] if known else None, known[3] if known else False)
        # The expensive expansions (infix, fuzzy) only when the plain query leaves LIMIT unfilled.
        if full_query != plain_query and sum(1 for h in hits.values() if h[0] >= floor) < spec.limit:
            candidates(full_query, pool)
        ranked = sorted(hits.items(), key=lambda item: (-item[1][0], item[1][1], item[0]))
        return [(element_id, score, node if whole else None) for element_id, (score, _, node, whole) in ranked[:pool]]

    def semantic(tx: Tx, embedder: embedding.Embedder) -> list[Hit]:
        if not spec.term.strip():
            return []
        vector_value = [float(x) for x in embedder.embed([spec.term])[0]]
        k = pool * 4 if spec.with_type else pool
        rows = tx.run(vector, {"vector": vector_value, "model": embedder.name, "type": spec.with_type, "k": k, "pool": pool, "whole": spec.limit})
        out = []
        for row in rows:
            for rank, element_id, node, whole in _rows(row):
                cosine = max(0.0, min(1.0, 2.0 * float(row["scores"][rank]) - 1.0))
                out.append((element_id, cosine, node if whole else None))
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
        chosen = [hit for hit in ranked if hit[1] >= spec.threshold and hit[1] > 0][: spec.limit]
        missing = [element_id for element_id, _, node in chosen if node is None]
        fetched = {row["node"]["id"]: row["node"] for row in tx.run(hydrate, {"ids": missing})} if missing else {}
        results = []
        for element_id, score, node in chosen:
            node = node or fetched.get(element_id)
            if node is None:
                continue
            obj = concept_object(node) if concept else proposition_object(node)
            results.append(_with_score(obj, score))
        if not results and spec.with_type is not None:
            names = [row["name"] for row in tx.run(defined)]
            if spec.with_type not in names:
                raise KipError(errors.TYPE_MISMATCH, f"WITH TYPE \"{spec.with_type}\" is not a defined {'concept type' if concept else 'predicate'}.", errors.did_you_mean("concept type" if concept else "predicate", spec.with_type, names))
        return {"result": results}

    return Plan("META", "READ", statements, runner)


def fuse(rankings: list[list[Hit]], k: int = RRF_K) -> list[Hit]:
    """Score-weighted reciprocal rank fusion.

    fused(d) = (1/R) · Σ_r s_r(d) · (k + 1) / (k + rank_r(d)), over the R rankings, where
    s_r is the hit's [0, 1] score in ranking r (0 when absent) and rank_r starts at 1. A hit
    ranked first with score 1.0 by every retriever scores 1.0; the ordering is RRF's,
    tempered by how good each match actually is.
    """
    fused: dict[str, float] = {}
    nodes: dict[str, Optional[dict[str, Any]]] = {}
    for ranking in rankings:
        for rank, (element_id, score, node) in enumerate(ranking, start=1):
            fused[element_id] = fused.get(element_id, 0.0) + score * (k + 1) / (k + rank)
            if nodes.get(element_id) is None:
                nodes[element_id] = node
    total = max(len(rankings), 1)
    out = [(element_id, value / total, nodes[element_id]) for element_id, value in fused.items()]
    out.sort(key=lambda item: (-item[1], item[0]))
    return out

"""The lexical score of keyword SEARCH and the fusion of hybrid SEARCH (docs/meta.md): pure functions
the SEARCH program applies to the candidates Neo4j's indexes return.

- ``Scorer``: how well a candidate's grounding fields match the query words, in [0, 1] — an
  absolute, documented measure (exact name/alias = 1.0), not a per-result normalization, so
  THRESHOLD means the same thing for every query.
- ``fuse``: score-weighted reciprocal rank fusion of several rankings.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from ..cypher import storage
from ..text import MAX_QUERY_WORD_CHARS, words

#: A ranked hit: (id, score, the whole node — or None when only part of it was fetched).
Hit = tuple[str, float, dict[str, Any] | None]
#: Reciprocal-rank-fusion constant (the customary 60).
RRF_K = 60


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


#: Query tokens scored: the first 32 words of a term (Lucene gets its first 32 distinct
#: words), so scoring a candidate costs the same for a 20-word and a 2,000-word term.
MAX_QUERY_TOKENS = 32
#: Token pairs longer than this together are scored uncached (the cache holds short words only)
#: and without the LCS ratio (quadratic in the token length; typo tolerance is for words).
_SHORT_PAIR = 64


def _token_similarity(q: str, f: str) -> float:
    return _short_similarity(q, f) if len(q) + len(f) <= _SHORT_PAIR else _similarity(q, f, fuzzy=False)


@functools.lru_cache(maxsize=65536)
def _short_similarity(q: str, f: str) -> float:
    return _similarity(q, f, fuzzy=True)


def _similarity(q: str, f: str, fuzzy: bool) -> float:
    if q == f:
        return 1.0
    if len(q) >= 2 and f.startswith(q):
        return 0.6 + 0.3 * len(q) / len(f)
    if len(q) >= 3 and q in f:
        return 0.5 + 0.3 * len(q) / len(f)
    if fuzzy and len(q) >= 4 and len(f) >= 4 and abs(len(q) - len(f)) <= 2:
        ratio = _similarity_ratio(q, f)
        if ratio >= 0.8:
            return 0.8 * ratio
    return 0.0


class Scorer:
    """The lexical score of one query; memoizes per field token and per field text across
    its candidates (names and descriptions share most of their words)."""

    def __init__(self, query_tokens: list[str]) -> None:
        self.query = tuple(token[:MAX_QUERY_WORD_CHARS] for token in query_tokens[:MAX_QUERY_TOKENS])
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
        field_tokens = words(text) if text else ()
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

    def grounding(self, name: str | None, aliases: Any, descriptive: Iterable[Any]) -> float:
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

    def predicate(self, predicate: str, definition: dict[str, Any] | None) -> float:
        best = self.field(predicate, True)
        if definition:
            for alias in _texts(definition.get(_ALIASES)):
                best = max(best, self.field(alias, True))
            for text in _texts(definition.get(storage.attr_key("description"))):
                best = max(best, self.field(text, False))
        return best


def _texts(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) and not value.startswith(storage.JSON_MARKER):
        return [value]
    return storage.text_values(storage.safe_decode(value))


_ALIASES = storage.attr_key("aliases")
_DESCRIPTIVE = tuple(storage.attr_key(k) for k in storage.GROUNDING_ATTRIBUTES if k != "aliases")


def fuse(rankings: list[list[Hit]], k: int = RRF_K) -> list[Hit]:
    """Score-weighted reciprocal rank fusion.

    fused(d) = (1/R) · Σ_r s_r(d) · (k + 1) / (k + rank_r(d)), over the R rankings, where
    s_r is the hit's [0, 1] score in ranking r (0 when absent) and rank_r starts at 1. A hit
    ranked first with score 1.0 by every retriever scores 1.0; the ordering is RRF's,
    tempered by how good each match actually is.
    """
    fused: dict[str, float] = {}
    nodes: dict[str, dict[str, Any] | None] = {}
    for ranking in rankings:
        for rank, (element_id, score, node) in enumerate(ranking, start=1):
            fused[element_id] = fused.get(element_id, 0.0) + score * (k + 1) / (k + rank)
            if nodes.get(element_id) is None:
                nodes[element_id] = node
    total = max(len(rankings), 1)
    out = [(element_id, value / total, nodes[element_id]) for element_id, value in fused.items()]
    out.sort(key=lambda item: (-item[1], item[0]))
    return out

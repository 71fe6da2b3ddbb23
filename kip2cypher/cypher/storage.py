"""The storage model (docs/storage-model.md): names, schema objects and value encoding.

Every label, relationship type and property name the engine owns is defined
here once; lowering modules import them rather than spelling them again.
"""
from __future__ import annotations

import json
from typing import Any

from .builder import Fragment, Part, frag

# ------------------------------------------------------------------ names
CONCEPT = "KipConcept"
PROPOSITION = "KipProposition"
SUBJECT_REL = "KIP_SUBJECT"
OBJECT_REL = "KIP_OBJECT"
LINK_ID = "kip_id"  # property on the native predicate relationship: the proposition id
#: Concept types and predicates become labels / relationship types; these are the engine's own.
#: The nexus's own node (one per database) and its cursor-signing secret (cypher.catalog).
NEXUS = "KipNexus"
CURSOR_SECRET = "cursor_secret"
RESERVED_LABELS = (CONCEPT, PROPOSITION, NEXUS)
RESERVED_REL_TYPES = (SUBJECT_REL, OBJECT_REL)

CONCEPT_TYPE = "$ConceptType"
PROPOSITION_TYPE = "$PropositionType"
DOMAIN = "Domain"
BELONGS_TO_DOMAIN = "belongs_to_domain"

ATTR_PREFIX = "attr."
META_PREFIX = "meta."
VERSION_KEY = "_version"
UPDATED_AT_KEY = "_updated_at"
MERGED_FROM_KEY = "_merged_from"
#: Engine-internal properties of the SEARCH embeddings (never attributes or metadata):
#: the vector, the embedder that produced it and a hash of model + grounding text.
EMBEDDING = "kip_embedding"
EMBEDDING_MODEL = "kip_embedding_model"
EMBEDDING_HASH = "kip_embedding_hash"
#: Text attributes that take part in grounding (full-text index and embeddings), besides
#: the concept name / proposition predicate. ``aliases`` may be a string list.
GROUNDING_ATTRIBUTES = ("aliases", "description", "content_summary", "summary", "title", "scope_note", "content")

# Values Neo4j cannot hold natively are stored as this prefix + JSON text.
JSON_MARKER = "\u001eKIPJSON\u001e"

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

def _native(value: Any) -> bool:
    """True when Neo4j stores the value as is and returns it unchanged."""
    if isinstance(value, bool) or isinstance(value, float):
        return True
    if isinstance(value, int):
        return INT64_MIN <= value <= INT64_MAX
    if isinstance(value, str):
        return not value.startswith(JSON_MARKER)
    if isinstance(value, list):
        # Neo4j lists are homogeneous and hold no nulls; an empty list comes back as [].
        if not value:
            return True
        kinds = {bool if isinstance(v, bool) else (int if isinstance(v, int) else type(v)) for v in value}
        if len(kinds) != 1 or kinds.pop() not in (bool, int, float, str):
            return False
        return all(_native(v) for v in value)
    return False


def encode(value: Any) -> Any:
    """A JSON value → what is stored in a Neo4j property (native when possible)."""
    if _native(value):
        return value
    return JSON_MARKER + json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def decode(value: Any) -> Any:
    """A stored property value → the JSON value that was written."""
    if isinstance(value, str) and value.startswith(JSON_MARKER):
        return json.loads(value[len(JSON_MARKER):])
    return value


def split_properties(props: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Node properties → (attributes, metadata), decoded, keys in sorted order for stable output."""
    attributes: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key in sorted(props):
        if key.startswith(ATTR_PREFIX):
            attributes[key[len(ATTR_PREFIX):]] = decode(props[key])
        elif key.startswith(META_PREFIX):
            metadata[key[len(META_PREFIX):]] = decode(props[key])
    return attributes, metadata


def attr_key(name: str) -> str:
    return ATTR_PREFIX + name


def meta_key(name: str) -> str:
    return META_PREFIX + name


def node_projection(var: Part) -> Fragment:
    """``var{.*, kip_embedding: null}``: a node's properties without its embedding vector — the
    engine's bulk that no KIP result shows (every node returned whole to Python goes through it)."""
    return frag(var, "{.*, ", EMBEDDING, ": null}")


def encode_map(values: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A KIP attributes/metadata object → the property map to ``SET n += $map``."""
    return {prefix + key: encode(value) for key, value in values.items()}


def safe_decode(value: Any) -> Any:
    """``decode`` that never raises (a value it cannot decode simply has no text)."""
    try:
        return decode(value)
    except ValueError:
        return None


def text_values(value: Any) -> list[str]:
    """The strings of a decoded attribute value (a string, or the strings of a list)."""
    if isinstance(value, str):
        return [] if value.startswith(JSON_MARKER) else [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []

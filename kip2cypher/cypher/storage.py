"""The storage model (docs/storage-model.md): names, schema objects and value encoding.

Every label, relationship type and property name the engine owns is defined
here once; lowering modules import them rather than spelling them again.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from .builder import Fragment, Part, frag

# ------------------------------------------------------------------ names
#: The nexus node (one per namespace, key ``namespace``): engine facts every process shares,
#: such as the secret CURSOR tokens are signed with (cypher.catalog). Shared by all namespaces.
NEXUS = "KipNexus"
CURSOR_SECRET = "cursor_secret"
#: Property of the nexus node holding the namespace's adoption mapping (JSON, docs/adopt.md).
ADOPTION = "adoption"
#: Label stem of the shadow nodes holding adopted concepts' SEARCH vectors (``Names.adopted_vector``).
ADOPTED_VECTOR = "KipAdoptedVector"
#: Label stem of the shadow nodes holding adopted relationships' SEARCH vectors (``Names.adopted_relationship_vector``).
ADOPTED_RELATIONSHIP_VECTOR = "KipAdoptedRelationshipVector"
#: A namespace name: lower-case letters, digits and ``_``, starting with a letter (docs/namespaces.md).
NAMESPACE_RE = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
#: The reserved label space of memory vocabulary (docs/storage-model.md, "Label space"): a concept
#: type's label and a predicate's relationship type are ``kip:<name>`` in the default namespace and
#: ``kip.<namespace>:<name>`` in a named one. A team's schema does not spell labels with a colon
#: (they need backticks), and the two forms cannot meet: the default prefix is ``kip:``, every
#: named one ``kip.`` + a namespace name, which holds no colon.
VOCABULARY_STEM = "kip"
#: Kept from layout 1, where it separated a namespace from a predicate (``alice/treats``): a
#: predicate may still not contain it, so a layout-1 relationship type stays unambiguous until
#: the migration has renamed it.
PREDICATE_SEPARATOR = "/"
#: The storage layout this build reads and writes, recorded on every nexus node under
#: ``LAYOUT_KEY``: 1 = type labels and predicate types bare (``Drug``, ``treats``; ``alice/treats``
#: in a namespace; a nexus node without the key), 2 = in KIP's own label space. ``kip2cypher
#: migrate`` moves a nexus from 1 to 2 (docs/storage-model.md, "Migration").
LAYOUT = 2
LAYOUT_KEY = "layout"
#: Property of the nexus node naming the official capsule set it was bootstrapped with (``profiles``).
PROFILE_KEY = "profile"


@dataclass(frozen=True)
class Names:
    """The storage vocabulary of one namespace: every label, relationship type and engine property
    name its elements use. The default namespace (``""``) is the original layout; namespace
    ``alice`` suffixes the engine's labels and relationship types (``KipConcept__alice``,
    ``KIP_SUBJECT__alice``), names its link property ``kip_id__alice`` and prefixes its predicates'
    relationship types (``alice/treats``). Two namespaces share no label, no relationship type
    and no link property, so no pattern of one can match an element of the other: isolation is
    in the names, not in a filter (docs/storage-model.md, "Namespaces")."""

    namespace: str
    concept: str
    proposition: str
    subject_rel: str
    object_rel: str
    link_id: str
    #: ``kip:`` / ``kip.<namespace>:``: the prefix of every concept-type label and predicate
    #: relationship type of this namespace (``label``, ``rel``).
    predicate_prefix: str
    #: The label of KIP's shadow nodes holding the SEARCH vectors of adopted concepts (docs/adopt.md):
    #: the team's nodes never carry a vector.
    adopted_vector: str
    #: The label of the shadow nodes holding the SEARCH vectors of adopted relationships (their own
    #: vector index, so a concept search never spends its candidates on them).
    adopted_relationship_vector: str

    def rel(self, predicate: str) -> str:
        """The native relationship type of ``predicate`` (``kip:treats``, ``kip.alice:treats``)."""
        return self.predicate_prefix + predicate

    def label(self, type_name: str) -> str:
        """The label of the concepts of type ``type_name`` (``kip:Drug``, ``kip.alice:Drug``):
        always together with ``concept``; never a label of the team's own schema."""
        return self.predicate_prefix + type_name

    def schema_object(self, base: str) -> str:
        """The name of a constraint or index of this namespace."""
        return f"{base}__{self.namespace}" if self.namespace else base


@functools.lru_cache(maxsize=256)
def names(namespace: str = "") -> Names:
    """The vocabulary of ``namespace`` (``""``: the default namespace)."""
    if namespace and not NAMESPACE_RE.match(namespace):
        raise ValueError(f"not a namespace name: {namespace!r}")
    suffix = f"__{namespace}" if namespace else ""
    return Names(
        namespace=namespace,
        concept="KipConcept" + suffix,
        proposition="KipProposition" + suffix,
        subject_rel="KIP_SUBJECT" + suffix,
        object_rel="KIP_OBJECT" + suffix,
        link_id="kip_id" + suffix,
        predicate_prefix=f"{VOCABULARY_STEM}.{namespace}:" if namespace else f"{VOCABULARY_STEM}:",
        adopted_vector=ADOPTED_VECTOR + suffix,
        adopted_relationship_vector=ADOPTED_RELATIONSHIP_VECTOR + suffix,
    )


DEFAULT = names("")
#: Label and relationship-type stems the engine owns in every namespace: concept types and
#: predicates may not start with them (a type named KipConcept would label its instances
#: KipConcept and match every concept).
RESERVED_LABEL_STEMS = ("KipConcept", "KipProposition", NEXUS, ADOPTED_VECTOR, ADOPTED_RELATIONSHIP_VECTOR)
RESERVED_REL_STEMS = ("KIP_SUBJECT", "KIP_OBJECT")


def element_label_namespace(label: str) -> str | None:
    """The namespace whose concept or proposition label ``label`` is (``KipConcept`` → ``""``,
    ``KipProposition__a__b`` → ``a__b``), None for any other label. Everything after the stem's
    ``__`` is the namespace: a namespace name may itself hold ``__``, so the label is never split."""
    for stem in ("KipConcept", "KipProposition"):
        if label == stem:
            return ""
        if label.startswith(stem + "__") and NAMESPACE_RE.match(label[len(stem) + 2 :]):
            return label[len(stem) + 2 :]
    return None


def is_engine_label(label: str) -> bool:
    return any(label == stem or label.startswith(stem + "__") for stem in RESERVED_LABEL_STEMS)


def is_vocabulary_name(name: str) -> bool:
    """A label or relationship type in KIP's reserved vocabulary space (``kip:…``, ``kip.<ns>:…``)."""
    stem = VOCABULARY_STEM
    if name.startswith(stem + ":"):
        return True
    if name.startswith(stem + "."):
        namespace, colon, _ = name[len(stem) + 1 :].partition(":")
        return bool(colon) and NAMESPACE_RE.match(namespace) is not None
    return False


def is_kip_label(label: str) -> bool:
    """Any label kip2cypher creates: an engine label or a concept-type label."""
    return is_engine_label(label) or is_vocabulary_name(label)


def is_engine_rel_type(name: str) -> bool:
    return any(name == stem or name.startswith(stem + "__") for stem in RESERVED_REL_STEMS)


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
_SCALARS = (str, float, int, bool)


def _native(value: Any) -> bool:
    """True when Neo4j stores the value as is and returns it unchanged."""
    kind = type(value)  # the JSON scalars first, by exact type (a capsule encodes one per value)
    if kind is str:
        return not value.startswith(JSON_MARKER)
    if kind is float or kind is bool:
        return True
    if kind is int:
        return INT64_MIN <= value <= INT64_MAX
    if kind is list and value:
        first = type(value[0])
        if first in _SCALARS and all(type(v) is first for v in value):
            return first is float or first is bool or all(_native(v) for v in value)
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
    return _json_text(value)


def _json_text(value: Any) -> str:
    """A value Neo4j cannot hold natively, as the marker and its JSON text."""
    return JSON_MARKER + json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def decode(value: Any) -> Any:
    """A stored property value → the JSON value that was written."""
    if isinstance(value, str) and value.startswith(JSON_MARKER):
        return json.loads(value[len(JSON_MARKER) :])
    return value


def split_properties(props: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Node properties → (attributes, metadata), decoded, keys in sorted order for stable output."""
    attributes: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key in sorted(props):
        if key.startswith(ATTR_PREFIX):
            attributes[key[len(ATTR_PREFIX) :]] = decode(props[key])
        elif key.startswith(META_PREFIX):
            metadata[key[len(META_PREFIX) :]] = decode(props[key])
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
    """A KIP attributes/metadata object → the property map to ``SET n += $map`` (``encode``, inlined)."""
    return {prefix + key: value if _native(value) else _json_text(value) for key, value in values.items()}


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

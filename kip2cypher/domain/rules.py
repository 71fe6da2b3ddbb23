"""Schema and grounding rules for KML (spec §2.6, §2.9, §2.11, §4, Appendix 4).

Everything here is either a pure Python check on already-resolved values or a
builder for an engine-authored Cypher boolean fragment. No user text is ever
spliced into Cypher: engine constants travel as named parameters.

- Define before use: a concept type / predicate must be a ``$ConceptType`` /
  ``$PropositionType`` node (KIP_2001, with a did-you-mean repair hint).
- Reserved metadata: ``_``-prefixed metadata keys are engine-owned (KIP_2002).
- Protected targets (KIP_3004): the meta-type definitions, the ``Domain`` type,
  the ``belongs_to_domain`` predicate, the ``CoreSchema`` domain, the identity of
  ``$self`` / ``$system`` and their ``core_directives``; also the
  ``belongs_to_domain`` links that file the protected definitions under CoreSchema.
- Strict instance_schema mode (``Settings.strict_schema``, off by default):
  ``is_required`` → KIP_2002, value types → KIP_2003.

docs/kml.md explains each rule and every choice the spec leaves open.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from types import MappingProxyType
from typing import Any

from .. import errors
from ..cypher import storage
from ..cypher.builder import Fragment, Param, frag, join
from ..errors import KipError

# ------------------------------------------------------------------ protected targets
#: Concepts that KML may create (bootstrap) but never change, delete or merge.
PROTECTED_CONCEPTS: tuple[tuple[str, str], ...] = (
    (storage.CONCEPT_TYPE, storage.CONCEPT_TYPE),
    (storage.CONCEPT_TYPE, storage.PROPOSITION_TYPE),
    (storage.CONCEPT_TYPE, storage.DOMAIN),
    (storage.PROPOSITION_TYPE, storage.BELONGS_TO_DOMAIN),
    (storage.DOMAIN, "CoreSchema"),
)
#: System actors: their identity tuple and core_directives are protected; other attributes evolve.
ACTORS: tuple[tuple[str, str], ...] = (("Person", "$self"), ("Person", "$system"))
ACTOR_PROTECTED_ATTRIBUTES: tuple[str, ...] = ("core_directives",)

# Named parameters carrying the constants above into generated Cypher.
P_PROTECTED = "kip_protected"
P_ACTORS = "kip_actors"
P_GUARDED_TYPES = "kip_guarded_types"  # the types of the two lists above (a label pre-test)
P_BTD = "kip_btd"


def protected_kind(type_: str | None, name: str | None) -> str | None:
    """``"schema"`` for a fully protected concept, ``"actor"`` for $self/$system, else None."""
    if (type_, name) in PROTECTED_CONCEPTS:
        return "schema"
    if (type_, name) in ACTORS:
        return "actor"
    return None


def protected_pairs() -> Param:
    return Param([list(p) for p in PROTECTED_CONCEPTS], P_PROTECTED)


def actor_pairs() -> Param:
    return Param([list(p) for p in ACTORS], P_ACTORS)


def protectable_type(type_: str, *, actors: bool) -> bool:
    """Whether a concept of type ``type_`` can be a protected target (with ``actors``: or a
    $self / $system whose core_directives are written): a bulk write whose WHERE pins its target
    to any other type needs no protection test per element."""
    return any(t == type_ for t, _ in PROTECTED_CONCEPTS + (ACTORS if actors else ()))


def cy_protected_concept(type_expr: Any, name_expr: Any) -> Fragment:
    """Cypher: true when (type, name) is a fully protected concept."""
    return frag("[", type_expr, ", ", name_expr, "] IN ", protected_pairs())


def cy_actor(type_expr: Any, name_expr: Any) -> Fragment:
    """Cypher: true when (type, name) is $self or $system."""
    return frag("[", type_expr, ", ", name_expr, "] IN ", actor_pairs())


def cy_protected_node(x: Any, names: storage.Names, *, actors: bool) -> Fragment:
    """Cypher: the concept node ``x`` is fully protected (with ``actors``: or $self/$system).

    A memory concept carries its type's label (``names.label``, docs/storage-model.md), so a test of its
    labels comes first: a bulk UPDATE/DELETE over thousands of Events then reads no
    ``type``/``name`` property for the protection check. Measured on 20k Events:
    85 → 32 ms and 4 → 3 db hits per element (one ``labels()`` read beats three ``x:Label``
    tests: 41 ms, 6 db hits)."""
    guarded = Param(sorted({names.label(t) for t, _ in PROTECTED_CONCEPTS + ACTORS}), P_GUARDED_TYPES)
    tests = [cy_protected_concept(frag(x, ".type"), frag(x, ".name"))]
    if actors:
        tests.append(cy_actor(frag(x, ".type"), frag(x, ".name")))
    return frag("(any(_l IN labels(", x, ") WHERE _l IN ", guarded, ") AND (", join(" OR ", tests), "))")


def cy_protected_link(link: Any, names: storage.Names) -> Fragment:
    """Cypher: true when the proposition node is a belongs_to_domain link of a fully protected concept."""
    return frag(
        "(",
        link,
        ".predicate = ",
        Param(storage.BELONGS_TO_DOMAIN, P_BTD),
        " AND EXISTS { MATCH (",
        link,
        ")-[:",
        names.subject_rel,
        "]->(_ps:",
        names.concept,
        ") WHERE ",
        cy_protected_concept("_ps.type", "_ps.name"),
        " })",
    )


def immutable(what: str, detail: str = "", offset: int | None = None) -> KipError:
    """KIP_3004 for ``what`` (``offset``: where the command names it)."""
    return KipError(
        errors.IMMUTABLE_TARGET,
        f"{what} is a protected system structure and cannot be changed this way{(': ' + detail) if detail else ''}.",
        "Operation prohibited: meta-types, the Domain type, belongs_to_domain, CoreSchema, and the identity and "
        "core_directives of $self/$system are protected. Ordinary attributes of $self (persona, behavior_preferences, "
        "…) remain writable; narrow the WHERE pattern to exclude protected nodes.",
        offset=offset,
    )


def label(type_: str | None, name: str | None) -> str:
    return f"{{type: {quoted(type_)}, name: {quoted(name)}}}"


#: An element a WHERE names exactly (``lower.named.named_target``), or ``()``: (concept?, id, type,
#: name), each of the last three None or (placeholder?, its name or the literal's value).
Named = tuple


def shown_named(named: Named) -> str:
    """``named`` as messages show it: a literal as JSON text, a placeholder as ``:name``."""
    concept, *parts = named
    return named_element(concept, *(None if p is None else f":{p[1]}" if p[0] else quoted(p[1]) for p in parts))


def named_element(concept: bool, id_: str | None, type_: str | None = None, name: str | None = None) -> str:
    """An element named exactly — by id, a complete ``{type, name}`` or ``(id: …)`` — as messages
    show it; the values already written out (JSON text, or a ``:placeholder``)."""
    if id_ is not None:
        return f"concept {{id: {id_}}}" if concept else f"proposition (id: {id_})"
    return f"concept {{type: {type_}, name: {name}}}"


def quoted(value: Any) -> str:
    """``value`` as JSON text (``json.dumps(value, ensure_ascii=False)``); a string through the
    encoder's own C function, which is what ``dumps`` calls for one (without building an encoder:
    a capsule labels every SET PROPOSITIONS entry)."""
    if isinstance(value, str):
        return encode_basestring(value)
    return json.dumps(value, ensure_ascii=False)


# ------------------------------------------------------------------ reserved metadata
def check_metadata_keys(keys: Iterable[str], where: str) -> None:
    """KML may never set or delete ``_``-prefixed metadata (KIP_2002)."""
    for key in keys:
        if key.startswith("_"):
            raise KipError(
                errors.CONSTRAINT_VIOLATION,
                f"Metadata key `{key}` in {where} is reserved: `_`-prefixed metadata is maintained by the engine and read-only to KML.",
                "Never write _-prefixed metadata (_version, _updated_at, _merged_from …); drop the key or rename it without the underscore.",
            )


# ------------------------------------------------------------------ define before use
def undefined_type(name: str, candidates: list[str], at: int | None = None) -> KipError:
    return KipError(
        errors.TYPE_MISMATCH,
        f'Concept type "{name}" is not defined: no {{type: "$ConceptType", name: "{name}"}} node exists.',
        errors.did_you_mean("concept type", name, candidates),
        offset=at,
    )


def undefined_predicate(name: str, candidates: list[str], at: int | None = None) -> KipError:
    return KipError(
        errors.TYPE_MISMATCH,
        f'Predicate "{name}" is not defined: no {{type: "$PropositionType", name: "{name}"}} node exists.',
        errors.did_you_mean("predicate", name, candidates),
        offset=at,
    )


# ------------------------------------------------------------------ strict instance_schema
_JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _type_ok(expected: Any, value: Any, item_type: Any = None) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    known = [n for n in names if isinstance(n, str) and n.lower() in _JSON_TYPES]
    if not known:
        return True  # an unknown type word ("any", "datetime", …) is guidance, not a constraint
    if value is None:
        return True  # explicit null clears a value; it is never a type error
    if not any(_JSON_TYPES[n.lower()](value) for n in known):
        return False
    if item_type is not None and isinstance(value, list):
        return all(_type_ok(item_type, item) for item in value)
    return True


def check_value_types(type_name: str, instance_schema: Any, attributes: dict[str, Any], at: Mapping[str, int] = MappingProxyType({})) -> None:
    """Strict mode: every provided attribute that the schema types must have that JSON type
    (KIP_2003, positioned at ``at[key]``: where the command writes the key)."""
    if not isinstance(instance_schema, dict):
        return
    for key, value in attributes.items():
        spec = instance_schema.get(key)
        if not isinstance(spec, dict) or "type" not in spec:
            continue
        if not _type_ok(spec["type"], value, spec.get("item_type")):
            from ..syntax.values import describe

            raise KipError(
                errors.INVALID_VALUE_TYPE,
                f"Attribute `{key}` of a {type_name} must be of type {spec['type']!s}"
                f"{' of ' + str(spec['item_type']) if spec.get('item_type') else ''}, got {describe(value)}.",
                f'Correct the JSON value type; run DESCRIBE CONCEPT TYPE "{type_name}" to see its instance_schema.',
                offset=at.get(key),
            )
        enum = spec.get("enum")
        if isinstance(enum, list) and value is not None and value not in enum:
            raise KipError(
                errors.INVALID_VALUE_TYPE,
                f"Attribute `{key}` of a {type_name} must be one of {enum}, got {value!r}.",
                f'Use one of the enumerated values; run DESCRIBE CONCEPT TYPE "{type_name}".',
                offset=at.get(key),
            )


def _required(instance_schema: Any) -> list[str]:
    """The attributes an instance_schema marks ``is_required: true``."""
    if not isinstance(instance_schema, dict):
        return []
    return [k for k, spec in instance_schema.items() if isinstance(spec, dict) and spec.get("is_required") is True]


def check_required(type_name: str, instance_schema: Any, present: Iterable[str], element: str, at: int | None = None) -> None:
    """Strict mode: attributes marked is_required must be present after the write (KIP_2002)."""
    have = set(present)
    missing = [k for k in _required(instance_schema) if k not in have]
    if missing:
        raise KipError(
            errors.CONSTRAINT_VIOLATION,
            f"{element} is missing required attribute{'s' if len(missing) > 1 else ''} {', '.join('`' + m + '`' for m in missing)} of concept type "
            f"{type_name}.",
            f'Supply the missing required attributes in SET ATTRIBUTES; run DESCRIBE CONCEPT TYPE "{type_name}" to see its instance_schema.',
            offset=at,
        )


def check_required_kept(type_name: str, instance_schema: Any, removed: Iterable[str], keyword: str, at: Mapping[str, int]) -> None:
    """Strict mode: a DELETE ATTRIBUTES must not remove an attribute marked is_required (KIP_2002,
    positioned at the key in the command)."""
    required = set(_required(instance_schema))
    lost = [k for k in removed if k in required]
    if lost:
        raise KipError(
            errors.CONSTRAINT_VIOLATION,
            f"{keyword} would remove the required attribute{'s' if len(lost) > 1 else ''} {', '.join('`' + k + '`' for k in lost)} "
            f"from a {type_name} (strict instance_schema mode); nothing was written.",
            f"Required attributes can be changed with UPDATE … SET ATTRIBUTES but not removed; drop {', '.join(lost)} from the key list, "
            f'or narrow the WHERE. Run DESCRIBE CONCEPT TYPE "{type_name}" to see its instance_schema.',
            offset=at.get(lost[0]),
        )

"""Neo4j values → KIP result objects (spec §2.2–2.3, §6.2.2)."""

from __future__ import annotations

from typing import Any

from .. import adoption
from ..cypher import storage


def _props(entity: Any) -> dict[str, Any]:
    """Properties of a driver Node/Relationship or of an already-plain map."""
    if entity is None:
        return {}
    if isinstance(entity, dict):
        return entity
    return dict(entity.items())


def is_proposition(entity: Any) -> bool:
    labels = getattr(entity, "labels", None)
    if labels is not None:
        return any(label == "KipProposition" or label.startswith("KipProposition__") for label in labels)
    return "predicate" in _props(entity)


def concept_object(entity: Any) -> dict[str, Any]:
    props = _props(entity)
    attributes, metadata = storage.split_properties(props)
    return {"id": props.get("id"), "type": props.get("type"), "name": props.get("name"), "attributes": attributes, "metadata": metadata}


def proposition_object(entity: Any) -> dict[str, Any]:
    props = _props(entity)
    attributes, metadata = storage.split_properties(props)
    return {
        "id": props.get("id"),
        "subject": props.get("subject"),
        "predicate": props.get("predicate"),
        "object": props.get("object"),
        "attributes": attributes,
        "metadata": metadata,
    }


def element_object(entity: Any) -> Any:
    """A bound node of either kind → its KIP object; null stays null."""
    if entity is None:
        return None
    return proposition_object(entity) if is_proposition(entity) else concept_object(entity)


def _map_half(index: int):
    return lambda value: None if value is None else storage.split_properties(value)[index]


#: Column decoders by name (``kip2cypher.lower.find``): stored values → KIP JSON values.
DECODERS = {
    "raw": lambda value: value,
    "element": element_object,
    "stored": storage.decode,
    "attributes": _map_half(0),
    "metadata": _map_half(1),
    "adopted": adoption.element_object,
    "adopted_value": adoption.value_object,
}

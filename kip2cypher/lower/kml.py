"""KML lowering entry points (spec §4): UPSERT, UPDATE, MERGE, DELETE.

``compiler.LOWERINGS`` dispatches here; each function has the signature
``fn(command, parameters, settings) -> Plan``. The work lives in
``kml_upsert`` (UPSERT capsules), ``kml_update`` (UPDATE, DELETE ATTRIBUTES /
METADATA), ``kml_merge`` (MERGE CONCEPT) and ``kml_delete`` (DELETE
PROPOSITIONS / CONCEPT). Rules and choices: docs/kml.md.
"""
from __future__ import annotations

from .kml_delete import lower_delete_concept, lower_delete_propositions
from .kml_merge import lower_merge
from .kml_update import lower_delete_attributes, lower_delete_metadata, lower_update
from .kml_upsert import lower_capsule

__all__ = [
    "lower_capsule",
    "lower_update",
    "lower_merge",
    "lower_delete_attributes",
    "lower_delete_metadata",
    "lower_delete_propositions",
    "lower_delete_concept",
]

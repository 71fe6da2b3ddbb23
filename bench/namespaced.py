"""The hand-written Cypher of the bench, as an expert writes it for a nexus in a namespace.

``python -m bench --namespace alpha`` measures KIP in namespace ``alpha`` while a same-size
graph lives beside it (docs/performance.md, "Namespaces"). The hand-written side must ask the
same question of the same stored graph, so its statements use ``alpha``'s vocabulary
(docs/storage-model.md, "Namespaces"): the namespace's concept/proposition labels and
structural relationship types, its link property, its predicate relationship types
(`` `alpha/knows` ``), its index names — and a concept-type label is combined with the
namespace's concept label, because type labels are shared by every namespace.

The bench's Cypher is written once for the default namespace; ``cypher`` rewrites it. Only the
bench's own statements pass through here (no user text), and the rewrite is checked by the
runner like any hand-written statement: both sides must give the same answer.
"""

from __future__ import annotations

import re

from kip2cypher.cypher import catalog, storage

#: The vocabulary the hand-written statements use (set by ``use`` before the queries run).
names: storage.Names = storage.DEFAULT

#: The concept types of the bench graph (bench/graph.py) and its scratch type.
_TYPES = ("Organization", "Person", "Topic", "Event", "Document", "Place", "Scratch")
_INDEXES = (catalog.concept_text_index, catalog.proposition_text_index, catalog.concept_vector_index, catalog.proposition_vector_index)


def use(namespace: str) -> None:
    global names
    names = storage.names(namespace)


def cypher(text: str) -> str:
    """``text`` (written for the default namespace) in the vocabulary of ``names``."""
    if not names.namespace:
        return text
    prefix = names.predicate_prefix
    for index in _INDEXES:
        text = text.replace(f"'{index(storage.DEFAULT)}'", f"'{index(names)}'")
    text = re.sub(r"\bKipConcept\b", names.concept, text)
    text = re.sub(r"\bKipProposition\b", names.proposition, text)
    text = re.sub(r"\bKIP_SUBJECT\b", names.subject_rel, text)
    text = re.sub(r"\bKIP_OBJECT\b", names.object_rel, text)
    text = re.sub(r"\bkip_id\b", names.link_id, text)
    text = re.sub(r"\((\w*):(" + "|".join(_TYPES) + r")\b", lambda m: f"({m[1]}:{names.concept}:{m[2]}", text)
    text = re.sub(r"\[(\w*):([a-z][a-z_]*)", lambda m: f"[{m[1]}:`{prefix}{m[2]}`", text)
    text = text.replace("$(row.p)", f"$('{prefix}' + row.p)")
    return text.replace("type(r)", f"substring(type(r), {len(prefix)})")

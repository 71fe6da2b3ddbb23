"""The hand-written Cypher of the bench, as an expert writes it for a nexus in a namespace.

``python -m bench --namespace alpha`` measures KIP in namespace ``alpha`` while a same-size
graph lives beside it (docs/performance.md, "Namespaces"). The hand-written side must ask the
same question of the same stored graph, so its statements use ``alpha``'s vocabulary
(docs/storage-model.md, "Namespaces"): the namespace's concept/proposition labels and
structural relationship types, its link property, its predicate relationship types
(`` `kip.alpha:knows` ``), its concept-type labels (`` `kip.alpha:Person` ``), its index names.
The default namespace's type labels and predicate types are in KIP's label space too
(`` `kip:Person` ``, `` `kip:knows` ``), so every statement passes through ``cypher``.

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
    """``text`` (written for the default namespace, with bare type labels and predicate types) in
    the vocabulary of ``names``: every concept-type label and predicate relationship type in the
    namespace's label space (`` `kip:Person` ``, `` `kip.alpha:knows` ``), and outside the default
    namespace its engine labels, link property and index names."""
    prefix = names.predicate_prefix
    if names.namespace:
        for index in _INDEXES:
            text = text.replace(f"'{index(storage.DEFAULT)}'", f"'{index(names)}'")
        text = re.sub(r"\bKipConcept\b", names.concept, text)
        text = re.sub(r"\bKipProposition\b", names.proposition, text)
        text = re.sub(r"\bKIP_SUBJECT\b", names.subject_rel, text)
        text = re.sub(r"\bKIP_OBJECT\b", names.object_rel, text)
        text = re.sub(r"\bkip_id\b", names.link_id, text)
    text = re.sub(r"\((\w*):(" + "|".join(_TYPES) + r")\b", lambda m: f"({m[1]}:`{prefix}{m[2]}`", text)
    text = re.sub(r"\[(\w*):([a-z][a-z_]*)", lambda m: f"[{m[1]}:`{prefix}{m[2]}`", text)
    text = text.replace("$(row.p)", f"$('{prefix}' + row.p)").replace("$(row.type)", f"$('{prefix}' + row.type)")
    return text.replace("type(r)", f"substring(type(r), {len(prefix)})")

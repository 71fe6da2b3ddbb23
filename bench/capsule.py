"""Literal knowledge capsules (what an agent writes) and the identical hand-written write.

``handle_capsule`` renders concepts and links as ONE literal UPSERT capsule — CONCEPT
blocks with local handles, each linked to its Domain through SET PROPOSITIONS, then
PROPOSITION blocks between handles with attributes and metadata — together with the rows
``bench.writer`` needs to write exactly the same nodes and relationships by UNWIND + MERGE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import writer
from .graph import DOMAIN_OF, MemoryGraph, kip_map, kip_value

CAPSULE_METADATA = {"source": "bench-capsule", "author": "bench", "confidence": 0.9}


@dataclass
class Capsule:
    text: str
    concept_rows: list[dict[str, Any]]
    link_rows: list[dict[str, Any]]
    concepts: int
    propositions: int


def handle_capsule(concepts: list[tuple[str, str, dict[str, Any]]], links: list[tuple[int, str, int, dict[str, Any], dict[str, Any]]]) -> Capsule:
    """``concepts``: (type, name, attributes); ``links``: (subject index, predicate, object index, attributes, metadata).

    Domains are referenced through handles of CONCEPT blocks that only match the existing
    Domain (no attributes: nothing is written to it), as an agent writing a compact capsule would."""
    domains = sorted({DOMAIN_OF.get(type_, "Unsorted") for type_, _, _ in concepts})
    blocks = [f'  CONCEPT ?d{j} {{ {{type: "Domain", name: {kip_value(d)}}} }}' for j, d in enumerate(domains)]
    handle = {d: f"?d{j}" for j, d in enumerate(domains)}
    concept_rows = []
    link_rows = []
    # a link to an EARLIER handle without attributes/metadata of its own is written the short way,
    # as a SET PROPOSITIONS entry of its subject; the others become PROPOSITION blocks
    inline: dict[int, list[tuple[str, int]]] = {}
    blocks_after = []
    for s, predicate, o, attrs, meta in links:
        if o < s and not attrs and not meta:
            inline.setdefault(s, []).append((predicate, o))
        else:
            blocks_after.append((s, predicate, o, attrs, meta))
    for i, (type_, name, attrs) in enumerate(concepts):
        domain = DOMAIN_OF.get(type_, "Unsorted")
        entries = [f'("belongs_to_domain", {handle[domain]})'] + [f"({kip_value(p)}, ?c{o})" for p, o in inline.get(i, [])]
        blocks.append(
            f"  CONCEPT ?c{i} {{ {{type: {kip_value(type_)}, name: {kip_value(name)}}} SET ATTRIBUTES {kip_map(attrs)} "
            f"SET PROPOSITIONS {{ {' '.join(entries)} }} }}"
        )
        concept_rows.append(writer.concept_row(type_, name, attrs, CAPSULE_METADATA))
        link_rows.append(writer.link_row((type_, name), "belongs_to_domain", ("Domain", domain), {}, CAPSULE_METADATA))
        for p, o in inline.get(i, []):
            link_rows.append(writer.link_row((type_, name), p, concepts[o][:2], {}, CAPSULE_METADATA))
    for s, predicate, o, attrs, meta in blocks_after:
        set_attrs = f" SET ATTRIBUTES {kip_map(attrs)}" if attrs else ""
        with_meta = f" WITH METADATA {kip_map(meta)}" if meta else ""
        blocks.append(f"  PROPOSITION {{ (?c{s}, {kip_value(predicate)}, ?c{o}){set_attrs} }}{with_meta}")
        link_rows.append(writer.link_row(concepts[s][:2], predicate, concepts[o][:2], attrs, {**CAPSULE_METADATA, **meta}))
    text = "UPSERT {\n" + "\n".join(blocks) + "\n}\nWITH METADATA " + kip_map(CAPSULE_METADATA)
    return Capsule(text, concept_rows, link_rows, len(concepts), len(concepts) + len(links))


def ingest_capsule(concepts: int = 1000, propositions: int = 2000, prefix: str = "") -> Capsule:
    """``concepts`` concepts of the synthetic model and ``propositions`` propositions in one capsule:
    one ``belongs_to_domain`` link per concept (SET PROPOSITIONS) and PROPOSITION blocks for the rest."""
    graph = MemoryGraph(concepts)
    chosen = graph.concepts[:concepts]
    index = {c.key: i for i, c in enumerate(chosen)}
    # two attributes per concept, and no metadata of their own on links without attributes, keep
    # the capsule under the parser's 256 KiB command bound
    rows = [(c.type, prefix + c.name, dict(list(c.attributes.items())[:2])) for c in chosen]
    links = []
    for link in graph.links:
        if len(links) >= propositions - len(chosen):
            break
        if link.predicate in ("belongs_to_domain", "stated") or link.subject not in index or link.object not in index:
            continue
        meta = {"confidence": link.metadata["confidence"]} if link.attributes else {}
        links.append((index[link.subject], link.predicate, index[link.object], link.attributes, meta))
    return handle_capsule(rows, links)


def small_capsule(tag: str, people: int = 10, topics: int = 10) -> Capsule:
    """A small agent-style capsule (20 concepts, 40 propositions by default) with unique names per ``tag``."""
    concepts = []
    for i in range(people):
        concepts.append(("Person", f"{tag} person {i}", {"age": 20 + i, "city": "Oslo", "tags": ["friend", "expert"]}))
    for i in range(topics):
        concepts.append(("Topic", f"{tag} topic {i}", {"description": f"Note {i} about graph memory", "level": 1 + i % 5}))
    links = []
    for i in range(people):
        links.append((i, "knows", (i + 1) % people, {"since": 2000 + i}, {"confidence": 0.8}))
    for i in range(topics):
        links.append((people + i, "part_of", people + (i + 1) % topics, {}, {"confidence": 0.7}))
    return handle_capsule(concepts, links)

"""A deterministic synthetic memory graph, and its rendering as KIP capsules.

``MemoryGraph(n)`` builds, from a fixed seed, ``n`` concepts of six types and about five
propositions per concept over ten predicates (plus ``belongs_to_domain``):

=============  =======================================  ==================================
predicate      shape                                    used by
=============  =======================================  ==================================
knows          Person → 2 Persons                       joins, ``"knows"{1,3}``
works_at       80 % of Persons → Organization           joins, NOT, UNION, aggregation
located_in     Organization / Event → Place             joins
authored       1–2 Persons → each Document              OPTIONAL
cites          Document → 2 earlier Documents           joins
mentions       Event / Document → 2 Topics              bulk UPDATE (carries metadata)
attended       Person → 2 Events                        joins
part_of        Topic → parent Topic (a 4-ary tree)      ``"part_of"{1,3}`` (descendants)
follows        Topic → next Topic (chains of 20)        ``"follows"{1,5}``
stated         10 % of Persons → a ``knows`` link       higher-order lookups
=============  =======================================  ==================================

Attributes mix integers, floats, strings, ISO timestamps and string arrays; Events carry
``start_time``, ``event_class`` and a unique ``salience`` (so ORDER BY has no ties).
Everything is a pure function of ``n``: the query mix can name concepts that exist.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

SEED = 20260704

TYPES = {  # type -> share of the concepts
    "Person": 0.30,
    "Topic": 0.20,
    "Document": 0.20,
    "Event": 0.20,
    "Organization": 0.05,
    "Place": 0.05,
}
PREDICATES = {  # predicate -> (subject types, object types, description)
    "knows": (["Person"], ["Person"], "The subject person knows the object person."),
    "works_at": (["Person"], ["Organization"], "The person is employed by the organization."),
    "located_in": (["Organization", "Event"], ["Place"], "The subject is located in, or took place in, the place."),
    "authored": (["Person"], ["Document"], "The person wrote the document."),
    "cites": (["Document"], ["Document"], "The subject document cites the object document."),
    "mentions": (["Event", "Document"], ["Topic"], "The event or document mentions the topic."),
    "attended": (["Person"], ["Event"], "The person took part in the event."),
    "part_of": (["Topic"], ["Topic"], "The subject topic is a sub-topic of the object topic."),
    "follows": (["Topic"], ["Topic"], "The subject topic comes right after the object topic in a curriculum."),
    "stated": (["Person"], ["*"], "The person asserted the object proposition."),
}
DOMAINS = ["Social", "Work", "Research", "Episodes", "Geography"]
DOMAIN_OF = {"Person": "Social", "Organization": "Work", "Document": "Research", "Topic": "Research", "Event": "Episodes", "Place": "Geography"}

FIRST = [
    "Ada",
    "Alan",
    "Barbara",
    "Claude",
    "Donald",
    "Edsger",
    "Frances",
    "Grace",
    "John",
    "Ken",
    "Leslie",
    "Margaret",
    "Niklaus",
    "Radia",
    "Shafi",
    "Tim",
    "Vint",
    "Whitfield",
    "Xiaoyun",
    "Yukihiro",
]
LAST = [
    "Lovelace",
    "Turing",
    "Liskov",
    "Shannon",
    "Knuth",
    "Dijkstra",
    "Allen",
    "Hopper",
    "McCarthy",
    "Thompson",
    "Lamport",
    "Hamilton",
    "Wirth",
    "Perlman",
    "Goldwasser",
    "Berners",
    "Cerf",
    "Diffie",
    "Wang",
    "Matsumoto",
]
WORDS = [
    "quantum",
    "graph",
    "memory",
    "neural",
    "protein",
    "climate",
    "market",
    "language",
    "vision",
    "robotics",
    "cipher",
    "orbit",
    "enzyme",
    "lattice",
    "sparse",
    "entropy",
    "kernel",
    "galaxy",
    "tensor",
    "vaccine",
    "fusion",
    "ledger",
    "genome",
    "harbor",
    "glacier",
    "symphony",
    "canyon",
    "volcano",
    "pixel",
    "compiler",
]
CITIES = [
    "Amsterdam",
    "Berlin",
    "Cairo",
    "Dublin",
    "Edinburgh",
    "Florence",
    "Geneva",
    "Helsinki",
    "Istanbul",
    "Jakarta",
    "Kyoto",
    "Lisbon",
    "Madrid",
    "Nairobi",
    "Oslo",
    "Prague",
    "Quito",
    "Rome",
    "Seoul",
    "Toronto",
]
EVENT_CLASSES = ["Conversation", "Meeting", "SelfReflection", "Observation", "Task"]
INDUSTRIES = ["software", "biotech", "energy", "finance", "media", "logistics"]
TAGS = ["mentor", "friend", "colleague", "expert", "student", "author", "speaker", "reviewer"]
CHAIN = 20  # topics per "follows" chain
FANOUT = 4  # children per topic in the "part_of" tree


@dataclass
class Concept:
    type: str
    name: str
    attributes: dict[str, Any]

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.name)


@dataclass
class Link:
    subject: tuple  # (type, name) of a concept, or ("@", index into links) for a proposition
    predicate: str
    object: tuple
    attributes: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


class MemoryGraph:
    """The whole synthetic graph for a scale of ``n`` concepts (deterministic)."""

    def __init__(self, n: int, seed: int = SEED) -> None:
        self.n = n
        rnd = random.Random(seed + n)
        self.counts = {t: max(20, int(n * share)) for t, share in TYPES.items()}
        self.concepts: list[Concept] = []
        self.by_type: dict[str, list[Concept]] = {}
        for type_ in TYPES:
            items = [self._concept(type_, i, rnd) for i in range(self.counts[type_])]
            self.by_type[type_] = items
            self.concepts.extend(items)
        # unique salience per event: a permutation of the ranks
        events = self.by_type["Event"]
        ranks = list(range(len(events)))
        rnd.shuffle(ranks)
        for event, rank in zip(events, ranks):
            event.attributes["salience"] = round((rank + 1) / (len(events) + 1), 9)
        self.links: list[Link] = []
        self.knows_index: dict[tuple[str, str], int] = {}
        self._propositions(rnd)

    # ------------------------------------------------------------------ concepts
    @staticmethod
    def name(type_: str, i: int) -> str:
        if type_ == "Person":
            return f"{FIRST[i % len(FIRST)]} {LAST[(i // len(FIRST)) % len(LAST)]} {i}"
        if type_ == "Topic":
            return f"{WORDS[i % len(WORDS)].capitalize()} {WORDS[(i * 7 + 3) % len(WORDS)]} {i}"
        if type_ == "Document":
            return f"Paper {i}: on {WORDS[(i * 3) % len(WORDS)]} {WORDS[(i * 11 + 5) % len(WORDS)]}"
        if type_ == "Event":
            return f"Event {i}"
        if type_ == "Organization":
            return f"Org {i} {WORDS[(i * 13) % len(WORDS)].capitalize()} Labs"
        return f"{CITIES[i % len(CITIES)]} {i}"

    def _concept(self, type_: str, i: int, rnd: random.Random) -> Concept:
        name = self.name(type_, i)
        if type_ == "Person":
            attrs: dict[str, Any] = {
                "age": 18 + rnd.randrange(62),
                "score": round(rnd.random() * 100, 3),
                "city": CITIES[rnd.randrange(len(CITIES))],
                "tags": sorted(rnd.sample(TAGS, 2)),
                "email": f"user{i}@example.org",
            }
            if i % 10 == 0:
                attrs["aliases"] = [f"{FIRST[i % len(FIRST)]} {i}"]
        elif type_ == "Topic":
            attrs = {
                "description": f"Research on {WORDS[rnd.randrange(len(WORDS))]} and {WORDS[rnd.randrange(len(WORDS))]} systems",
                "level": rnd.randrange(1, 6),
                "aliases": [WORDS[(i * 5 + 1) % len(WORDS)] + f"-{i}"],
            }
        elif type_ == "Document":
            attrs = {
                "year": 1990 + rnd.randrange(35),
                "pages": rnd.randrange(4, 40),
                "keywords": sorted(rnd.sample(WORDS, 3)),
                "description": f"A study of {WORDS[rnd.randrange(len(WORDS))]} {WORDS[rnd.randrange(len(WORDS))]}",
            }
        elif type_ == "Event":
            day = rnd.randrange(3 * 365)
            attrs = {
                "start_time": f"{2023 + day // 365}-{1 + (day % 365) // 31:02d}-{1 + (day % 365) % 28:02d}T{rnd.randrange(24):02d}:{rnd.randrange(60):02d}:00Z",
                "event_class": EVENT_CLASSES[rnd.randrange(len(EVENT_CLASSES))],
                "participants": sorted({self.name("Person", rnd.randrange(max(20, int(self.n * TYPES["Person"])))) for _ in range(2)}),
                "content_summary": f"Talked about {WORDS[rnd.randrange(len(WORDS))]} and {WORDS[rnd.randrange(len(WORDS))]}",
            }
        elif type_ == "Organization":
            attrs = {"founded": 1900 + rnd.randrange(125), "size": rnd.randrange(5, 50000), "industry": INDUSTRIES[rnd.randrange(len(INDUSTRIES))]}
        else:
            attrs = {
                "country": CITIES[i % len(CITIES)][:2].upper(),
                "population": rnd.randrange(1000, 5_000_000),
                "lat": round(rnd.uniform(-60, 60), 5),
                "lon": round(rnd.uniform(-180, 180), 5),
            }
        return Concept(type_, name, attrs)

    # ------------------------------------------------------------------ propositions
    def _pick(self, rnd: random.Random, type_: str, k: int, exclude: int | None = None, below: int | None = None) -> list[int]:
        size = below if below is not None else self.counts[type_]
        out: list[int] = []
        while len(out) < min(k, size - (1 if exclude is not None and exclude < size else 0)):
            j = rnd.randrange(size)
            if j != exclude and j not in out:
                out.append(j)
        return out

    def _link(self, s: tuple, p: str, o: tuple, rnd: random.Random, **attributes: Any) -> int:
        day = rnd.randrange(3 * 365)
        meta = {
            "confidence": round(0.3 + 0.7 * rnd.random(), 4),
            "created_at": f"{2023 + day // 365}-{1 + (day % 365) // 31:02d}-{1 + (day % 365) % 28:02d}T00:00:00Z",
        }
        self.links.append(Link(s, p, o, attributes, meta))
        return len(self.links) - 1

    def _propositions(self, rnd: random.Random) -> None:
        bt = self.by_type
        key = lambda t, i: bt[t][i].key  # noqa: E731
        for c in self.concepts:
            self.links.append(Link(c.key, "belongs_to_domain", ("Domain", DOMAIN_OF[c.type])))
        for i in range(self.counts["Person"]):
            for j in self._pick(rnd, "Person", 2, exclude=i):
                self.knows_index[(bt["Person"][i].name, bt["Person"][j].name)] = self._link(
                    key("Person", i), "knows", key("Person", j), rnd, since=1990 + rnd.randrange(35)
                )
            if i % 5 != 4:
                self._link(
                    key("Person", i), "works_at", key("Organization", rnd.randrange(self.counts["Organization"])), rnd, role=TAGS[rnd.randrange(len(TAGS))]
                )
            for j in self._pick(rnd, "Event", 2):
                self._link(key("Person", i), "attended", key("Event", j), rnd)
        for i in range(self.counts["Organization"]):
            self._link(key("Organization", i), "located_in", key("Place", rnd.randrange(self.counts["Place"])), rnd)
        for i in range(self.counts["Event"]):
            self._link(key("Event", i), "located_in", key("Place", rnd.randrange(self.counts["Place"])), rnd)
            for j in self._pick(rnd, "Topic", 2):
                self._link(key("Event", i), "mentions", key("Topic", j), rnd, weight=round(rnd.random(), 4))
        for i in range(self.counts["Document"]):
            for a in self._pick(rnd, "Person", 1 + (i % 2)):
                self._link(key("Person", a), "authored", key("Document", i), rnd)
            if i > 2:
                for j in self._pick(rnd, "Document", 2, below=i):
                    self._link(key("Document", i), "cites", key("Document", j), rnd)
            for j in self._pick(rnd, "Topic", 2):
                self._link(key("Document", i), "mentions", key("Topic", j), rnd, weight=round(rnd.random(), 4))
        for i in range(1, self.counts["Topic"]):
            self._link(key("Topic", i), "part_of", key("Topic", (i - 1) // FANOUT), rnd)
        for i in range(self.counts["Topic"] - 1):
            if (i + 1) % CHAIN:
                self._link(key("Topic", i), "follows", key("Topic", i + 1), rnd)
        knows = sorted(self.knows_index.values())
        for i in range(0, self.counts["Person"], 10):
            target = knows[rnd.randrange(len(knows))]
            self._link(key("Person", i), "stated", ("@", target), rnd)

    # ------------------------------------------------------------------ helpers for the query mix
    def person(self, i: int) -> str:
        return self.by_type["Person"][i].name

    def topic(self, i: int) -> str:
        return self.by_type["Topic"][i].name

    def org(self, i: int) -> str:
        return self.by_type["Organization"][i].name

    def stated_example(self) -> tuple[str, str, str]:
        """(stater, fact subject, fact object) of the first ``stated`` link."""
        for link in self.links:
            if link.predicate == "stated":
                fact = self.links[link.object[1]]
                return link.subject[1], fact.subject[1], fact.object[1]
        raise AssertionError("no stated link")

    def stats(self) -> dict[str, Any]:
        by_pred: dict[str, int] = {}
        for link in self.links:
            by_pred[link.predicate] = by_pred.get(link.predicate, 0) + 1
        return {"concepts": len(self.concepts), "propositions": len(self.links), "by_type": dict(self.counts), "by_predicate": by_pred}


# ====================================================================== KIP rendering
def kip_value(value: Any) -> str:
    """A JSON value as KIP literal text (KIP values are JSON values)."""
    return json.dumps(value, ensure_ascii=False)


def kip_map(values: dict[str, Any]) -> str:
    return "{ " + ", ".join(f"{k}: {kip_value(v)}" for k, v in values.items()) + " }"


def concept_clause(key: tuple) -> str:
    return f"{{type: {kip_value(key[0])}, name: {kip_value(key[1])}}}"


def schema_capsule() -> str:
    """$ConceptType / $PropositionType definitions and the Domains of the synthetic graph."""
    blocks = []
    for type_ in [*TYPES, "Scratch"]:
        blocks.append(f"""  CONCEPT ?t_{type_.lower()} {{
    {{type: "$ConceptType", name: "{type_}"}}
    SET ATTRIBUTES {{ description: "Synthetic {type_} concepts of the benchmark graph." }}
    SET PROPOSITIONS {{ ("belongs_to_domain", {{type: "Domain", name: "CoreSchema"}}) }}
  }}""")
    for pred, (subjects, objects, description) in PREDICATES.items():
        blocks.append(f"""  CONCEPT ?p_{pred} {{
    {{type: "$PropositionType", name: "{pred}"}}
    SET ATTRIBUTES {{ description: {kip_value(description)}, subject_types: {kip_value(subjects)}, object_types: {kip_value(objects)} }}
    SET PROPOSITIONS {{ ("belongs_to_domain", {{type: "Domain", name: "CoreSchema"}}) }}
  }}""")
    for domain in DOMAINS:
        blocks.append(f"""  CONCEPT ?d_{domain.lower()} {{
    {{type: "Domain", name: "{domain}"}}
    SET ATTRIBUTES {{ description: "The {domain} part of the benchmark memory." }}
  }}""")
    return "UPSERT {\n" + "\n".join(blocks) + '\n}\nWITH METADATA { source: "bench", author: "$system", confidence: 1.0 }'


def concept_capsule(concepts: list[Concept]) -> str:
    """CONCEPT blocks with their attributes and their domain link (SET PROPOSITIONS)."""
    blocks = []
    for c in concepts:
        blocks.append(
            f"  CONCEPT {{\n    {concept_clause(c.key)}\n    SET ATTRIBUTES {kip_map(c.attributes)}\n"
            f'    SET PROPOSITIONS {{ ("belongs_to_domain", {concept_clause(("Domain", DOMAIN_OF[c.type]))}) }}\n  }}'
        )
    return "UPSERT {\n" + "\n".join(blocks) + '\n}\nWITH METADATA { source: "bench", confidence: 0.9 }'


def endpoint_text(graph_links: list[Link], ref: tuple) -> str:
    if ref[0] == "@":
        link = graph_links[ref[1]]
        return f"({endpoint_text(graph_links, link.subject)}, {kip_value(link.predicate)}, {endpoint_text(graph_links, link.object)})"
    return concept_clause(ref)


def proposition_capsule(graph_links: list[Link], links: list[Link]) -> str:
    """PROPOSITION blocks between existing concepts (and existing propositions for ``stated``)."""
    blocks = []
    for link in links:
        body = f"({endpoint_text(graph_links, link.subject)}, {kip_value(link.predicate)}, {endpoint_text(graph_links, link.object)})"
        attrs = f"\n    SET ATTRIBUTES {kip_map(link.attributes)}" if link.attributes else ""
        meta = f"\n  WITH METADATA {kip_map(link.metadata)}" if link.metadata else ""
        blocks.append(f"  PROPOSITION {{\n    {body}{attrs}\n  }}{meta}")
    return "UPSERT {\n" + "\n".join(blocks) + '\n}\nWITH METADATA { source: "bench" }'


def batches(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def load_capsules(graph: MemoryGraph, concept_batch: int = 500, link_batch: int = 1000) -> Iterator[tuple[str, str, int]]:
    """The capsules that load ``graph`` through KIP, in dependency order: (phase, text, elements)."""
    yield "schema", schema_capsule(), len(TYPES) + len(PREDICATES) + len(DOMAINS)
    for chunk in batches(graph.concepts, concept_batch):
        yield "concepts", concept_capsule(chunk), len(chunk)
    plain = [link for link in graph.links if link.predicate != "belongs_to_domain" and link.predicate != "stated"]
    for chunk in batches(plain, link_batch):
        yield "propositions", proposition_capsule(graph.links, chunk), len(chunk)
    stated = [link for link in graph.links if link.predicate == "stated"]
    for chunk in batches(stated, link_batch):
        yield "higher-order", proposition_capsule(graph.links, chunk), len(chunk)

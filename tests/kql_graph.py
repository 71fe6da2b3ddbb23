"""A small fixture graph for KQL tests, written with hand-made Cypher that follows
docs/storage-model.md exactly (no UPSERT involved).

Concepts are ``:KipConcept:`<Type>``` nodes with ``id``/``type``/``name`` and
``attr.*`` / ``meta.*`` properties (values through ``storage.encode``);
propositions are ``:KipProposition`` nodes with ``-[:KIP_SUBJECT]->`` /
``-[:KIP_OBJECT]->`` plus the native ``(s)-[:`predicate` {kip_id}]->(o)``.

Ids are readable (``C:aspirin``, ``P:treats:aspirin:headache``) so tests can
assert whole responses.
"""

from __future__ import annotations

from typing import Any

from kip2cypher.cypher import storage
from kip2cypher.cypher.builder import quote

UPDATED = "2025-01-01T00:00:00Z"

# Hostile vocabulary: must be stored and queried verbatim.
EVIL_TYPE = "Evil`Type}) DETACH DELETE n //"
EVIL_NAME = "x'}) MATCH (m) DETACH DELETE m //\""
EVIL_PREDICATE = "rel`]->() DETACH DELETE (n"
EVIL_KEY = "k`}) SET n.pwned = true //"

TYPES = [
    "$ConceptType",
    "$PropositionType",
    "Domain",
    "Drug",
    "Symptom",
    "DrugClass",
    "Person",
    "Event",
    "Product",
    "Company",
    "Category",
    EVIL_TYPE,
]
PREDICATES = [
    "belongs_to_domain",
    "treats",
    "has_side_effect",
    "belongs_to_class",
    "stated",
    "mentions",
    "manufactured_by",
    "is_subclass_of",
    "knows",
    "follows",
    EVIL_PREDICATE,
]


def _meta(extra: dict[str, Any] | None = None, version: int = 1) -> dict[str, Any]:
    meta = {"_version": version, "_updated_at": UPDATED}
    meta.update(extra or {})
    return meta


class Concept:
    def __init__(self, cid: str, type_: str, name: str, attributes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> None:
        self.id, self.type, self.name = cid, type_, name
        self.attributes = dict(attributes or {})
        self.metadata = _meta(metadata)

    def obj(self) -> dict[str, Any]:
        """The KIP object FIND returns for this concept."""
        return {
            "id": self.id,
            "type": self.type,
            "name": self.name,
            "attributes": dict(sorted(self.attributes.items())),
            "metadata": dict(sorted(self.metadata.items())),
        }


class Prop:
    def __init__(
        self, pid: str, subject: str, predicate: str, object_: str, attributes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None
    ) -> None:
        self.id, self.subject, self.predicate, self.object = pid, subject, predicate, object_
        self.attributes = dict(attributes or {})
        self.metadata = _meta(metadata)

    def obj(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "attributes": dict(sorted(self.attributes.items())),
            "metadata": dict(sorted(self.metadata.items())),
        }


def _slug(name: str) -> str:
    return "".join(ch.lower() if ch.isalnum() else "_" for ch in name).strip("_") or "x"


C: dict[str, Concept] = {}
P: dict[str, Prop] = {}


def concept(key: str, type_: str, name: str, attributes=None, metadata=None) -> Concept:
    c = Concept(f"C:{key}", type_, name, attributes, metadata)
    C[key] = c
    return c


def prop(key: str, subject: str, predicate: str, object_: str, attributes=None, metadata=None) -> Prop:
    """``subject``/``object_`` are keys of C or P."""
    s = (C.get(subject) or P[subject]).id
    o = (C.get(object_) or P[object_]).id
    p = Prop(f"P:{key}:{_slug(predicate)}", s, predicate, o, attributes, metadata)
    P[key] = p
    return p


# ------------------------------------------------------------------ schema (definition nodes)
for _t in TYPES:
    concept(f"type_{_slug(_t)}", "$ConceptType", _t, {"description": f"The {_t} type."})
for _p in PREDICATES:
    concept(f"pred_{_slug(_p)}", "$PropositionType", _p, {"description": f"The {_p} predicate."})

# ------------------------------------------------------------------ domain knowledge
concept("medical", "Domain", "Medical")
concept(
    "aspirin",
    "Drug",
    "Aspirin",
    {"risk_level": 2, "tags": ["nsaid", "otc"], "dosage": {"mg": 500, "form": "tablet"}, "aliases": ["ASA"], "approved": True, "note": None},
    {"source": "WHO list", "confidence": 0.95},
)
concept("ibuprofen", "Drug", "Ibuprofen", {"risk_level": 2, "tags": ["nsaid"], "price": 4.5}, {"source": "FDA", "confidence": 0.9})
concept("naproxen", "Drug", "Naproxen", {"risk_level": 3, "price": 6}, {"confidence": 0.8})
concept("acetaminophen", "Drug", "Acetaminophen", {"risk_level": 1, "price": 3}, {"source": "FDA", "expires_at": "2030-01-01T00:00:00Z"})
concept("morphine", "Drug", "Morphine", {"risk_level": 5, "controlled": True})
concept("vitamin_c", "Drug", "Vitamin C", {"description": "An essential nutrient; vitamin\nsupplement."})
concept("headache", "Symptom", "Headache", {"severity": "moderate"})
concept("fever", "Symptom", "Fever", {"severity": "high"})
concept("pain", "Symptom", "Pain")
concept("cold", "Symptom", "Cold")
concept("stomach_upset", "Symptom", "Stomach Upset", {"severity": "mild"})
concept("nsaid", "DrugClass", "NSAID")
concept("analgesic", "DrugClass", "Analgesic")
concept("opioid", "DrugClass", "Opioid")
concept("alice", "Person", "Alice", {"age": 34, "email": "alice@example.org"})
concept("bob", "Person", "Bob", {"age": 41})
concept("carol", "Person", "Carol")
concept("john", "Person", "John Doe")
concept(
    "ev1",
    "Event",
    "Checkup chat",
    {"event_class": "Conversation", "start_time": "2025-07-01T10:00:00Z", "participants": ["Alice", "Bob"], "salience_score": 0.7},
)
concept("ev2", "Event", "Old chat", {"event_class": "Conversation", "start_time": "2025-05-01T10:00:00Z", "participants": ["Alice"], "salience_score": 0.9})
concept("ev3", "Event", "Evening reflection", {"event_class": "SelfReflection", "start_time": "2025-08-01T21:00:00Z", "participants": ["Alice"]})
concept("ev4", "Event", "Hallway chat", {"event_class": "Conversation", "start_time": "2025-09-01T09:00:00Z"})
concept("ev5", "Event", "Pharmacy visit", {"event_class": "Conversation", "start_time": "2025-06-15T15:00:00Z", "participants": ["Bob"], "salience_score": 0.2})
concept("p_aspirin", "Product", "Aspirin", {"brand": "Bayer Aspirin"})
concept("p_advil", "Product", "Advil")
concept("bayer", "Company", "Bayer")
concept("pfizer", "Company", "Pfizer")
# Category hierarchy: a diamond (animal reaches living_thing via two paths) and a longer chain.
for _k, _n in [
    ("dog", "Dog"),
    ("mammal", "Mammal"),
    ("pet", "Pet"),
    ("animal", "Animal"),
    ("living", "Living Thing"),
    ("entity", "Entity"),
    ("thing", "Thing"),
]:
    concept(f"cat_{_k}", "Category", _n)
concept("evil", EVIL_TYPE, EVIL_NAME, {EVIL_KEY: "kept verbatim"})

prop("asp_med", "aspirin", "belongs_to_domain", "medical")
prop("ibu_med", "ibuprofen", "belongs_to_domain", "medical")
prop("alice_med", "alice", "belongs_to_domain", "medical")
prop("asp_head", "aspirin", "treats", "headache", {"efficacy": 0.8}, {"confidence": 0.9, "source": "trial-1"})
prop("asp_fever", "aspirin", "treats", "fever", {}, {"confidence": 0.85})
prop("ibu_head", "ibuprofen", "treats", "headache", {}, {"confidence": 0.95})
prop("ibu_fever", "ibuprofen", "treats", "fever", {}, {"confidence": 0.7})
prop("ace_head", "acetaminophen", "treats", "headache", {}, {"confidence": 0.6})
prop("ace_fever", "acetaminophen", "treats", "fever")
prop("nap_pain", "naproxen", "treats", "pain")
prop("mor_pain", "morphine", "treats", "pain", {}, {"confidence": 0.99})
prop("vitc_cold", "vitamin_c", "treats", "cold", {}, {"confidence": 0.3})
prop("asp_nsaid", "aspirin", "belongs_to_class", "nsaid")
prop("ibu_nsaid", "ibuprofen", "belongs_to_class", "nsaid")
prop("nap_nsaid", "naproxen", "belongs_to_class", "nsaid")
prop("ace_analg", "acetaminophen", "belongs_to_class", "analgesic")
prop("mor_opioid", "morphine", "belongs_to_class", "opioid")
prop("asp_se", "aspirin", "has_side_effect", "stomach_upset", {}, {"source": "FDA label"})
prop("ibu_se", "ibuprofen", "has_side_effect", "stomach_upset", {}, {"source": "EMA label"})
prop("mor_se_pain", "morphine", "has_side_effect", "headache", {}, {"source": "case report"})
# Higher order: John stated (Aspirin treats Headache); Bob stated (John stated …).
prop("john_stated", "john", "stated", "asp_head", {}, {"confidence": 0.75})
prop("bob_stated", "bob", "stated", "john_stated", {}, {"confidence": 0.5})
prop("alice_knows_bob", "alice", "knows", "bob", {"since": 2019}, {"confidence": 0.7, "created_at": "2024-01-01"})
prop("alice_follows_carol", "alice", "follows", "carol", {}, {"confidence": 0.4, "created_at": "2024-03-01"})
prop("bob_knows_carol", "bob", "knows", "carol")
prop("alice_stated_ibu", "alice", "stated", "ibu_head", {}, {"created_at": "2024-02-01"})
prop("ev1_asp", "ev1", "mentions", "aspirin")
prop("ev1_head", "ev1", "mentions", "headache")
prop("ev3_alice", "ev3", "mentions", "alice")
prop("prod_bayer", "p_aspirin", "manufactured_by", "bayer")
prop("advil_pfizer", "p_advil", "manufactured_by", "pfizer")
prop("dog_mammal", "cat_dog", "is_subclass_of", "cat_mammal")
prop("dog_pet", "cat_dog", "is_subclass_of", "cat_pet")
prop("mammal_animal", "cat_mammal", "is_subclass_of", "cat_animal")
prop("pet_animal", "cat_pet", "is_subclass_of", "cat_animal")
prop("animal_living", "cat_animal", "is_subclass_of", "cat_living")
prop("living_entity", "cat_living", "is_subclass_of", "cat_entity")
prop("entity_thing", "cat_entity", "is_subclass_of", "cat_thing")
prop("evil_link", "evil", EVIL_PREDICATE, "alice", {EVIL_KEY: 1})


def _props(attributes: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    return {**storage.encode_map(attributes, storage.ATTR_PREFIX), **storage.encode_map(metadata, storage.META_PREFIX)}


def load(driver, database: str | None = None, names: storage.Names = storage.DEFAULT) -> None:
    """Write the fixture graph into the namespace of ``names`` (which is expected to be empty)."""
    concept, proposition = names.concept, names.proposition
    with driver.session(database=database) as session:
        for c in C.values():
            labels = f":{concept}:{quote(names.label(c.type))}"
            session.run(
                f"CREATE (n{labels}) SET n = $props, n.id = $id, n.type = $type, n.name = $name",
                props=_props(c.attributes, c.metadata),
                id=c.id,
                type=c.type,
                name=c.name,
            ).consume()
        for p in P.values():  # insertion order: endpoints of higher-order links exist first
            session.run(
                f"MATCH (s {{id: $s}}) WHERE s:{concept} OR s:{proposition} "
                f"MATCH (o {{id: $o}}) WHERE o:{concept} OR o:{proposition} "
                f"CREATE (p:{proposition}) SET p = $props, p.id = $id, p.predicate = $pred, p.subject = $s, p.object = $o "
                f"CREATE (p)-[:{names.subject_rel}]->(s), (p)-[:{names.object_rel}]->(o) "
                f"CREATE (s)-[:{quote(names.rel(p.predicate))} {{{names.link_id}: $id}}]->(o)",
                props=_props(p.attributes, p.metadata),
                id=p.id,
                pred=p.predicate,
                s=p.subject,
                o=p.object,
            ).consume()


def counts(driver, database: str | None = None) -> tuple[int, int]:
    records = driver.execute_query("MATCH (n) RETURN count(n) AS n", database_=database).records
    rels = driver.execute_query("MATCH ()-[r]->() RETURN count(r) AS r", database_=database).records
    return records[0]["n"], rels[0]["r"]

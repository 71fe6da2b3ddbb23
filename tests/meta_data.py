"""Shared data and helpers for the META tests (DESCRIBE, SEARCH, EXPORT)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

MEDICAL = """
UPSERT {
  CONCEPT ?drug_t {
    {type: "$ConceptType", name: "Drug"}
    SET ATTRIBUTES { description: "A medicinal substance used to treat or prevent disease.", key_instances: ["Aspirin"] }
    SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }
  }
  CONCEPT ?symptom_t {
    {type: "$ConceptType", name: "Symptom"}
    SET ATTRIBUTES { description: "A physical or mental sign of illness." }
    SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }
  }
  CONCEPT ?treats_t {
    {type: "$PropositionType", name: "treats"}
    SET ATTRIBUTES { description: "The subject drug alleviates or cures the object symptom.", subject_types: ["Drug"], object_types: ["Symptom"] }
    SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }
  }
  CONCEPT ?hse_t {
    {type: "$PropositionType", name: "has_side_effect"}
    SET ATTRIBUTES { description: "The subject drug may cause the object symptom as an adverse reaction.", subject_types: ["Drug"], object_types: ["Symptom"] }
    SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }
  }
  CONCEPT ?medical {
    {type: "Domain", name: "Medical"}
    SET ATTRIBUTES { description: "Medicine: drugs, symptoms and treatments.", display_hint: "💊" }
  }
  CONCEPT ?headache {
    {type: "Symptom", name: "Headache"}
    SET ATTRIBUTES { description: "Pain in the head.", aliases: ["cephalalgia"] }
    SET PROPOSITIONS { ("belongs_to_domain", ?medical) }
  }
  CONCEPT ?fever {
    {type: "Symptom", name: "Fever"}
    SET ATTRIBUTES { description: "An elevated body temperature." }
    SET PROPOSITIONS { ("belongs_to_domain", ?medical) }
  }
  CONCEPT ?nausea {
    {type: "Symptom", name: "Nausea"}
    SET ATTRIBUTES { description: "An uneasy feeling in the stomach." }
    SET PROPOSITIONS { ("belongs_to_domain", ?medical) }
  }
  CONCEPT ?aspirin {
    {type: "Drug", name: "Aspirin"}
    SET ATTRIBUTES {
      aliases: ["acetylsalicylic acid", "ASA"],
      description: "A nonsteroidal anti-inflammatory drug used to relieve pain and reduce fever.",
      risk_level: 2,
      dosage_form: {type: "tablet", strength: "500mg"}
    }
    SET PROPOSITIONS {
      ("belongs_to_domain", ?medical)
      ("treats", ?headache)
      ("treats", ?fever) WITH METADATA { confidence: 0.8 }
      ("has_side_effect", ?nausea)
    }
  }
  CONCEPT ?ibuprofen {
    {type: "Drug", name: "Ibuprofen"}
    SET ATTRIBUTES { description: "A pain reliever of the propionic acid class.", risk_level: 3 }
    SET PROPOSITIONS { ("belongs_to_domain", ?medical) ("treats", ?headache) }
  }
  CONCEPT ?complex {
    {type: "Drug", name: "Aspirin Complex"}
    SET ATTRIBUTES { description: "A combination product." }
    SET PROPOSITIONS { ("belongs_to_domain", ?medical) }
  }
}
WITH METADATA { source: "meta-tests", author: "tester", confidence: 0.9 }
"""

PERSON_AND_SELF = """
UPSERT {
  CONCEPT ?person_t {
    {type: "$ConceptType", name: "Person"}
    SET ATTRIBUTES { description: "Any actor: a human, an AI or a group." }
    SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }
  }
  CONCEPT ?self {
    {type: "Person", name: "$self"}
    SET ATTRIBUTES {
      identity_narrative: "I am Medibot, a careful medical knowledge assistant.",
      core_directives: ["Be accurate", "Cite sources"]
    }
  }
}
WITH METADATA { source: "meta-tests", author: "$system" }
"""


def ok(response: dict[str, Any]) -> Any:
    assert "error" not in response, response
    return response["result"]


def load(nexus, *capsules: str) -> None:
    """Write the capsules and wait for their background embedding refresh (vectors in place)."""
    for capsule in capsules:
        ok(nexus.execute_kip(capsule))
    assert nexus.wait_for_embeddings(60)


def scores(results: list[dict[str, Any]]) -> list[float]:
    return [r["metadata"]["_score"] for r in results]


def names(results: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in results]


_WORD = re.compile(r"[a-z]+")

# Topic axes of the deterministic test embedder: words that share an axis are "synonyms".
_TOPICS = {
    "pain": ["pain", "ache", "headache", "relief", "relieve", "reliever", "analgesic", "aspirin", "ibuprofen", "cephalalgia", "migraine"],
    "heat": ["fever", "temperature", "hot", "heat", "pyrexia"],
    "stomach": ["nausea", "stomach", "vomit", "queasy"],
    "medicine": ["drug", "medicine", "medicinal", "tablet", "pill", "substance"],
    "domain": ["domain", "knowledge", "container", "organizing"],
    "type": ["type", "class", "category", "concept", "defines"],
}
_AXIS = {word: i for i, (_, words) in enumerate(sorted(_TOPICS.items())) for word in words}


class TopicEmbedder:
    """A tiny deterministic embedder for tests: one axis per topic plus a 'misc' axis.

    Texts that share no word but share a topic are similar — enough to test semantic
    retrieval end to end on the real Neo4j vector index without a model.
    """

    name = "test-topic-embedder-v1"
    dimensions = len(_TOPICS) + 1

    def __init__(self) -> None:
        self.calls: list[Sequence[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        out = []
        for text in texts:
            vector = [0.0] * self.dimensions
            for word in _WORD.findall(text.lower()):
                vector[_AXIS.get(word, self.dimensions - 1)] += 1.0 if word in _AXIS else 0.05
            if not any(vector):
                vector[-1] = 1.0
            out.append(vector)
        return out

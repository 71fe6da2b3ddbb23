"""Helpers for the KML tests: read the stored graph back directly (independent of KQL)."""

from __future__ import annotations

from typing import Any

from kip2cypher.domain import writes
from kip2cypher.execution import results

SCHEMA = """
UPSERT {
  CONCEPT ?drug_t { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "A medicinal substance." } }
  CONCEPT ?symptom_t { {type: "$ConceptType", name: "Symptom"} SET ATTRIBUTES { description: "A sign of illness." } }
  CONCEPT ?class_t { {type: "$ConceptType", name: "DrugClass"} SET ATTRIBUTES { description: "A class of drugs." } }
  CONCEPT ?person_t { {type: "$ConceptType", name: "Person"} SET ATTRIBUTES { description: "An actor." } }
  CONCEPT ?skill_t { {type: "$ConceptType", name: "SkillTopic"} SET ATTRIBUTES { description: "A skill." } }
  CONCEPT ?treats { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { description: "treats", subject_types: ["Drug"], object_types: ["Symptom"] } }
  CONCEPT ?hse { {type: "$PropositionType", name: "has_side_effect"} SET ATTRIBUTES { description: "side effect",
    subject_types: ["Drug"], object_types: ["Symptom"] } }
  CONCEPT ?btc { {type: "$PropositionType", name: "belongs_to_class"} SET ATTRIBUTES { description: "class",
    subject_types: ["Drug"], object_types: ["DrugClass"] } }
  CONCEPT ?stated { {type: "$PropositionType", name: "stated"} SET ATTRIBUTES { description: "stated", subject_types: ["Person"], object_types: ["*"] } }
  CONCEPT ?related { {type: "$PropositionType", name: "related_to"} SET ATTRIBUTES { description: "related", subject_types: ["*"], object_types: ["*"] } }
  CONCEPT ?nootropic { {type: "DrugClass", name: "Nootropic"} }
  CONCEPT ?brain_fog { {type: "Symptom", name: "Brain Fog"} }
}
WITH METADATA { source: "test-schema" }
"""

COGNIZINE = """
// Knowledge Capsule: cognizin.v1.0
// Description: Defines the novel nootropic drug "Cognizine" and its effects.

UPSERT {
  // Define the new side effect concept: Neural Bloom
  CONCEPT ?neural_bloom {
    { type: "Symptom", name: "Neural Bloom" }
    SET ATTRIBUTES {
      description: "A rare side effect characterized by a temporary burst of creative thoughts."
    }
    // This concept has no outgoing propositions in this capsule
  }

  // Define the main drug concept: Cognizine
  CONCEPT ?cognizine {
    { type: "Drug", name: "Cognizine" }
    SET ATTRIBUTES {
      molecular_formula: "C12H15N5O3",
      dosage_form: { "type": "tablet", "strength": "500mg" },
      risk_level: 2,
      description: "A novel nootropic drug designed to enhance cognitive functions."
    }
    SET PROPOSITIONS {
      // Link to an existing concept (Nootropic)
      ("belongs_to_class", { type: "DrugClass", name: "Nootropic" })

      // Link to an existing concept (Brain Fog)
      ("treats", { type: "Symptom", name: "Brain Fog" })

      // Link to another new concept defined within this capsule (?neural_bloom)
      ("has_side_effect", ?neural_bloom)
    }
  }
}
WITH METADATA {
  // Global metadata for all facts in this capsule
  source: "KnowledgeCapsule:Nootropics_v1.0",
  author: "LDC Labs Research Team",
  confidence: 0.95,
  status: "reviewed"
}
"""


def ok(response: dict[str, Any]) -> Any:
    assert "error" not in response, response
    return response["result"]


def err(response: dict[str, Any], code: str) -> dict[str, Any]:
    assert "error" in response, response
    assert response["error"]["code"] == code, response["error"]
    return response["error"]


def concept(nexus, type_: str, name: str) -> dict[str, Any] | None:
    records = nexus.driver.execute_query("MATCH (n:KipConcept {type: $t, name: $n}) RETURN n", {"t": type_, "n": name}, database_=nexus.database).records
    return results.concept_object(records[0]["n"]) if records else None


def concept_by_id(nexus, cid: str) -> dict[str, Any] | None:
    records = nexus.driver.execute_query("MATCH (n:KipConcept {id: $id}) RETURN n", {"id": cid}, database_=nexus.database).records
    return results.concept_object(records[0]["n"]) if records else None


def proposition(nexus, pid: str) -> dict[str, Any] | None:
    records = nexus.driver.execute_query("MATCH (p:KipProposition {id: $id}) RETURN p", {"id": pid}, database_=nexus.database).records
    return results.proposition_object(records[0]["p"]) if records else None


def link(nexus, subject_id: str, predicate: str, object_id: str) -> dict[str, Any] | None:
    records = nexus.driver.execute_query(
        "MATCH (p:KipProposition {subject: $s, predicate: $p, object: $o}) RETURN p",
        {"s": subject_id, "p": predicate, "o": object_id},
        database_=nexus.database,
    ).records
    return results.proposition_object(records[0]["p"]) if records else None


def count(nexus, cypher: str, **params: Any) -> int:
    return nexus.driver.execute_query(cypher, params, database_=nexus.database).records[0][0]


def snapshot(nexus) -> dict[str, Any]:
    """Every node and relationship with its properties, minus ids' randomness — for no-trace checks
    (after the background embedding refresh of the nexus's earlier writes settled)."""
    assert nexus.wait_for_embeddings(120), "the background embedding refresh did not settle"
    nodes = nexus.driver.execute_query("MATCH (n) RETURN labels(n) AS l, properties(n) AS p ORDER BY n.id", database_=nexus.database).records
    rels = nexus.driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS t, properties(r) AS p, b.id AS b ORDER BY a, t, b", database_=nexus.database
    ).records
    return {"nodes": [(sorted(r["l"]), r["p"]) for r in nodes], "rels": [(r["a"], r["t"], r["p"], r["b"]) for r in rels]}


def integrity(nexus) -> None:
    """Storage-model invariants: every proposition has its two structural rels and one native rel;
    no element keeps the write lock's property (``domain.writes.LOCK``: set and removed by the statement)."""
    bad = nexus.driver.execute_query(
        """
        MATCH (p:KipProposition)
        OPTIONAL MATCH (p)-[:KIP_SUBJECT]->(s)
        OPTIONAL MATCH (p)-[:KIP_OBJECT]->(o)
        WITH p, collect(s) AS ss, collect(o) AS os
        WITH p, ss, os, COUNT { MATCH ()-[r]->() WHERE r.kip_id = p.id } AS natives
        WHERE size(ss) <> 1 OR size(os) <> 1 OR ss[0].id <> p.subject OR os[0].id <> p.object OR natives <> 1
        RETURN p.id AS id, size(ss) AS s, size(os) AS o, natives
        """,
        database_=nexus.database,
    ).records
    assert not bad, [dict(r) for r in bad]
    stray = nexus.driver.execute_query(
        """
        MATCH (a)-[r]->(b) WHERE r.kip_id IS NOT NULL
        OPTIONAL MATCH (p:KipProposition {id: r.kip_id})
        WITH r, a, b, p WHERE p IS NULL OR p.subject <> a.id OR p.object <> b.id OR 'kip:' + p.predicate <> type(r)
        RETURN r.kip_id AS id
        """,
        database_=nexus.database,
    ).records
    assert not stray, [dict(r) for r in stray]
    locked = nexus.driver.execute_query("MATCH (n) WHERE n[$lock] IS NOT NULL RETURN n.id AS id", lock=writes.LOCK, database_=nexus.database).records
    assert not locked, [r["id"] for r in locked]

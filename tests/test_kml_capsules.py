"""The standard capsules (Appendix 3) and Nexus.bootstrap(capsules=True) on the real Neo4j."""

from __future__ import annotations

import pytest
from kml_helpers import concept, count, err, integrity, ok, snapshot

TYPES = {"Person", "Event", "Preference", "Insight", "Commitment", "SleepTask"}
PREDICATES = {"involves", "mentions", "consolidated_to", "derived_from", "prefers", "learned", "committed_to", "owed_to", "assigned_to"}


@pytest.fixture()
def full(nexus):
    nexus.bootstrap(capsules=True)
    return nexus


def test_bootstrap_with_capsules_defines_everything(full):
    for t in TYPES:
        d = concept(full, "$ConceptType", t)
        assert d is not None, t
        assert d["attributes"]["description"] and isinstance(d["attributes"]["instance_schema"], dict)
    for p in PREDICATES:
        d = concept(full, "$PropositionType", p)
        assert d is not None, p
        assert d["attributes"]["subject_types"] and d["attributes"]["object_types"]
    # every definition is filed under CoreSchema
    names = TYPES | PREDICATES
    filed = full.driver.execute_query(
        "MATCH (d:KipConcept)-[:`kip:belongs_to_domain`]->(:KipConcept {type: 'Domain', name: 'CoreSchema'}) RETURN d.name AS n"
    ).records
    assert names <= {r["n"] for r in filed}
    for actor in ("$self", "$system"):
        a = concept(full, "Person", actor)
        assert a["attributes"]["person_class"] == "AI"
        assert isinstance(a["attributes"]["core_directives"], list) and len(a["attributes"]["core_directives"]) >= 3
    integrity(full)


def test_bootstrap_is_idempotent(full):
    before = snapshot(full)
    full.bootstrap(capsules=True)
    assert snapshot(full) == before


def test_bootstrap_keeps_evolved_self(full):
    ok(full.execute_kip('UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { persona: "curious", strengths: ["graphs"] } } }'))
    full.bootstrap(capsules=True)
    attrs = concept(full, "Person", "$self")["attributes"]
    assert attrs["persona"] == "curious" and attrs["strengths"] == ["graphs"]


def test_capsules_are_valid_under_strict_schema(nexus):
    from kip2cypher.config import Settings
    from kip2cypher.nexus import Nexus

    with Nexus(nexus.uri, database=nexus.database, settings=Settings(strict_schema=True)) as strict:
        strict.bootstrap(capsules=True)
        assert concept(strict, "Person", "$system") is not None


def test_capsule_types_in_use(full):
    """The memory types work together: an Event, a Preference reinforced from it, an Insight, a Commitment, a SleepTask."""
    ok(
        full.execute_kip("""
        UPSERT {
          CONCEPT ?alice { {type: "Person", name: "Alice"} SET ATTRIBUTES { person_class: "Human" } }
          CONCEPT ?event {
            {type: "Event", name: "Conversation:2026-07-04T10:00:00Z:dark mode"}
            SET ATTRIBUTES { event_class: "Conversation", start_time: "2026-07-04T10:00:00Z", participants: ["Alice"],
              content_summary: "Alice asked for dark mode again." }
            SET PROPOSITIONS { ("involves", ?alice) ("involves", {type: "Person", name: "$self"}) }
          }
          WITH METADATA { expires_at: "2026-08-04T00:00:00Z" }
          CONCEPT ?pref {
            {type: "Preference", name: "Alice:dark_mode"}
            SET ATTRIBUTES { description: "Prefers dark mode", topic: "ui", evidence_count: 1 }
            SET PROPOSITIONS { ("derived_from", ?event) }
          }
          CONCEPT ?a2 { {type: "Person", name: "Alice"} SET PROPOSITIONS { ("prefers", ?pref) } }
          CONCEPT ?ins {
            {type: "Insight", name: "Remember UI preferences"}
            SET ATTRIBUTES { description: "Apply known UI preferences without asking.", insight_class: "ReasoningPattern" }
          }
          CONCEPT ?self { {type: "Person", name: "$self"} SET PROPOSITIONS { ("learned", ?ins) } }
          CONCEPT ?c {
            {type: "Commitment", name: "Send Alice the theme guide"}
            SET ATTRIBUTES { description: "Send the theme guide", status: "pending", due_at: "2026-07-05T00:00:00Z" }
            SET PROPOSITIONS { ("owed_to", ?alice) }
          }
          CONCEPT ?s2 { {type: "Person", name: "$self"} SET PROPOSITIONS { ("committed_to", ?c) } }
          CONCEPT ?task {
            {type: "SleepTask", name: "Consolidate dark mode conversation"}
            SET ATTRIBUTES { description: "Consolidate the event", task_class: "Consolidation", status: "pending" }
            SET PROPOSITIONS { ("assigned_to", {type: "Person", name: "$system"}) ("belongs_to_domain", {type: "Domain", name: "System"}) }
          }
        }
        WITH METADATA { source: "test", confidence: 0.9 }""")
    )
    ok(
        full.execute_kip("""
        UPSERT { CONCEPT ?e { {type: "Event", name: "Conversation:2026-07-04T10:00:00Z:dark mode"}
          SET PROPOSITIONS { ("consolidated_to", {type: "Preference", name: "Alice:dark_mode"})
            ("mentions", {type: "Preference", name: "Alice:dark_mode"}) } } }""")
    )
    assert count(full, "MATCH (:`kip:Person` {name: 'Alice'})-[:`kip:prefers`]->(:`kip:Preference`)<-[:`kip:derived_from`]-() RETURN count(*)") == 0
    assert (
        count(full, "MATCH (:`kip:Person` {name: 'Alice'})-[:`kip:prefers`]->(p:`kip:Preference`)-[:`kip:derived_from`]->(:`kip:Event`) RETURN count(p)") == 1
    )
    assert count(full, "MATCH (:`kip:SleepTask`)-[:`kip:assigned_to`]->(:`kip:Person` {name: '$system'}) RETURN count(*)") == 1
    integrity(full)


def test_self_system_core_directives_are_protected(full):
    err(full.execute_kip('UPSERT { CONCEPT ?s { {type: "Person", name: "$system"} SET ATTRIBUTES { core_directives: [] } } }'), "KIP_3004")
    err(full.execute_kip('DELETE CONCEPT ?s DETACH WHERE { ?s {type: "Person", name: "$system"} }'), "KIP_3004")


def test_spec_2_11_2_guarded_self_preferences(full):
    """§2.11.2: read-modify-write of an array attribute of $self under EXPECT VERSION."""
    guarded = """
        UPSERT {
          CONCEPT ?self {
            {type: "Person", name: "$self"}
            EXPECT VERSION :v
            SET ATTRIBUTES { behavior_preferences: :merged_preferences }
          }
        }"""
    v = concept(full, "Person", "$self")["metadata"]["_version"]
    ok(full.execute_kip(guarded, parameters={"v": v, "merged_preferences": ["be brief"]}))
    # a second writer that read the same version loses and must re-read
    e = err(full.execute_kip(guarded, parameters={"v": v, "merged_preferences": ["be verbose"]}), "KIP_3005")
    assert str(v + 1) in e["message"]
    ok(full.execute_kip(guarded, parameters={"v": v + 1, "merged_preferences": ["be brief", "use tables"]}))
    me = concept(full, "Person", "$self")
    assert me["attributes"]["behavior_preferences"] == ["be brief", "use tables"] and me["metadata"]["_version"] == v + 2


def test_spec_6_1_batch_upsert_event(full):
    res = full.execute_kip(
        commands=[
            {"command": 'UPSERT { CONCEPT ?e { {type:"Event", name: :name} } }', "parameters": {"name": "MyEvent"}},
        ],
        parameters={"limit": 10},
    )
    assert "result" in res and "result" in res["result"][0], res
    assert res["result"][0]["result"]["blocks"] == 1
    assert concept(full, "Event", "MyEvent") is not None

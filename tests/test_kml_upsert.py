"""UPSERT (spec §4.1, §2.10, §2.11, Appendix 2) on the real Neo4j."""

from __future__ import annotations

import re
import threading

import pytest
from kml_helpers import COGNIZINE, SCHEMA, concept, concept_by_id, count, err, integrity, link, ok, proposition, snapshot

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.fixture()
def med(genesis):
    ok(genesis.execute_kip(SCHEMA))
    return genesis


# ------------------------------------------------------------------ Genesis
def test_genesis_response_and_idempotent_replay(nexus):
    from kip2cypher import profiles

    text = profiles.capsule_text("Genesis", "rc11")
    first = ok(nexus.execute_kip(text))
    assert first["blocks"] == 2
    assert len(first["upsert_concept_nodes"]) == 16 and first["upsert_proposition_links"] == []
    assert all(i.startswith("C:") for i in first["upsert_concept_nodes"])
    # the second statement re-addresses the same 8 concepts, in the same order
    assert first["upsert_concept_nodes"][9:] == [first["upsert_concept_nodes"][i] for i in (0, 1, 2, 3, 5, 6, 7)]
    before = snapshot(nexus)
    second = ok(nexus.execute_kip(text))
    assert second == first
    assert snapshot(nexus) == before  # a replay writes nothing: versions and timestamps unchanged
    ct = concept(nexus, "$ConceptType", "$ConceptType")
    assert ct["metadata"]["_version"] == 1 and ISO.match(ct["metadata"]["_updated_at"])
    assert ct["metadata"]["source"] == "SystemBootstrap"
    assert ct["attributes"]["key_instances"] == [
        "$ConceptType",
        "$PropositionType",
        "Domain",
        "Event",
        "Experience",
        "ExperienceStep",
        "Person",
        "Preference",
        "Insight",
        "Skill",
        "Commitment",
        "SleepTask",
    ]  # the official RC11 Genesis (issue 28), not the RC10 appendix's printing
    assert ct["attributes"]["instance_schema"]["description"]["is_required"] is True
    assert count(nexus, "MATCH (:KipConcept)-[r:`kip:belongs_to_domain`]->(:KipConcept {name: 'CoreSchema'}) RETURN count(r)") == 7
    assert count(nexus, "MATCH (n:`kip:$ConceptType`:KipConcept) RETURN count(n)") == 3
    integrity(nexus)


def test_undefined_type_without_genesis(nexus):
    e = err(nexus.execute_kip('UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} } }'), "KIP_2001")
    assert "Drug" in e["message"]
    assert count(nexus, "MATCH (n) WHERE NOT n:KipNexus RETURN count(n)") == 0  # (the nexus node is ensure_schema's)


# ------------------------------------------------------------------ the Cognizine capsule (§4.1)
def test_cognizine_capsule(med):
    res = ok(med.execute_kip(COGNIZINE))
    assert res["blocks"] == 1 and len(res["upsert_concept_nodes"]) == 2 and res["upsert_proposition_links"] == []
    bloom_id, cog_id = res["upsert_concept_nodes"]
    cog = concept_by_id(med, cog_id)
    assert cog["type"] == "Drug" and cog["name"] == "Cognizine"
    assert cog["attributes"] == {
        "molecular_formula": "C12H15N5O3",
        "dosage_form": {"type": "tablet", "strength": "500mg"},
        "risk_level": 2,
        "description": "A novel nootropic drug designed to enhance cognitive functions.",
    }
    meta = {k: v for k, v in cog["metadata"].items() if not k.startswith("_")}
    assert meta == {"source": "KnowledgeCapsule:Nootropics_v1.0", "author": "LDC Labs Research Team", "confidence": 0.95, "status": "reviewed"}
    nootropic = concept(med, "DrugClass", "Nootropic")
    fog = concept(med, "Symptom", "Brain Fog")
    for pred, target in (("belongs_to_class", nootropic["id"]), ("treats", fog["id"]), ("has_side_effect", bloom_id)):
        p = link(med, cog_id, pred, target)
        assert p is not None and p["id"].startswith("P:") and p["id"].endswith(":" + pred)
        assert p["metadata"]["confidence"] == 0.95 and p["metadata"]["_version"] == 1
    assert count(med, "MATCH (:`kip:Drug` {name: 'Cognizine'})-[r:`kip:treats`]->(:`kip:Symptom` {name: 'Brain Fog'}) RETURN count(r)") == 1
    integrity(med)
    before = snapshot(med)
    assert ok(med.execute_kip(COGNIZINE)) == res  # idempotent: same ids, no new data, no version bump
    assert snapshot(med) == before


def test_cognizine_missing_existing_target_is_3002_and_writes_nothing(genesis):
    schema_without_nootropic = SCHEMA.replace('CONCEPT ?nootropic { {type: "DrugClass", name: "Nootropic"} }', "")
    ok(genesis.execute_kip(schema_without_nootropic))
    before = snapshot(genesis)
    e = err(genesis.execute_kip(COGNIZINE), "KIP_3002")
    assert "Nootropic" in e["message"]
    assert snapshot(genesis) == before


# ------------------------------------------------------------------ grounding errors
def test_case_slip_type_is_2001_with_hint(med):
    e = err(med.execute_kip('UPSERT { CONCEPT ?d { {type: "drug", name: "Aspirin"} } }'), "KIP_2001")
    assert '"Drug"' in e["hint"] and "case" in e["hint"].lower()


def test_undefined_predicate_is_2001_did_you_mean(med):
    e = err(
        med.execute_kip('UPSERT { CONCEPT ?d { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treat", {type: "Symptom", name: "Brain Fog"}) } } }'), "KIP_2001"
    )
    assert "treat" in e["message"] and '"treats"' in e["hint"]
    assert concept(med, "Drug", "A") is None


def test_type_defined_earlier_in_same_capsule(med):
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?t { {type: "$ConceptType", name: "Gene"} SET ATTRIBUTES { description: "A gene." } }
          CONCEPT ?p { {type: "$PropositionType", name: "encodes"} SET ATTRIBUTES { description: "x", subject_types: ["Gene"], object_types: ["*"] } }
          CONCEPT ?g { {type: "Gene", name: "BRCA1"} SET PROPOSITIONS { ("encodes", {type: "Symptom", name: "Brain Fog"}) } }
        }""")
    )
    assert concept(med, "Gene", "BRCA1") is not None


def test_type_defined_later_is_2001(med):
    err(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?g { {type: "Gene", name: "BRCA1"} }
          CONCEPT ?t { {type: "$ConceptType", name: "Gene"} SET ATTRIBUTES { description: "A gene." } }
        }"""),
        "KIP_2001",
    )
    assert concept(med, "$ConceptType", "Gene") is None


def test_handle_used_before_definition_is_3001(med):
    e = err(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("has_side_effect", ?b) } }
          CONCEPT ?b { {type: "Symptom", name: "B"} }
        }"""),
        "KIP_3001",
    )
    assert "?b" in e["message"]
    assert concept(med, "Drug", "A") is None


def test_handles_are_local_to_one_upsert_statement(med):
    err(
        med.execute_kip("""
        UPSERT { CONCEPT ?b { {type: "Symptom", name: "B"} } }
        UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("has_side_effect", ?b) } } }
        """),
        "KIP_3001",
    )


def test_target_created_by_later_block_is_3002(med):
    err(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("has_side_effect", {type: "Symptom", name: "Later"}) } }
          CONCEPT ?b { {type: "Symptom", name: "Later"} }
        }"""),
        "KIP_3002",
    )
    assert concept(med, "Symptom", "Later") is None


def test_target_created_by_earlier_block_by_type_name(med):
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?b { {type: "Symptom", name: "Earlier"} }
          CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("has_side_effect", {type: "Symptom", name: "Earlier"}) } }
        }""")
    )
    a, b = concept(med, "Drug", "A"), concept(med, "Symptom", "Earlier")
    assert link(med, a["id"], "has_side_effect", b["id"]) is not None


@pytest.mark.parametrize("where", ["UPSERT", "block", "entry"])
def test_reserved_metadata_key_is_2002(med, where):
    if where == "UPSERT":
        text = 'UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} } } WITH METADATA { _version: 9 }'
    elif where == "block":
        text = 'UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} } WITH METADATA { _updated_at: "x" } }'
    else:
        text = (
            'UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Brain Fog"}) '
            "WITH METADATA { _merged_from: [] } } } }"
        )
    err(med.execute_kip(text), "KIP_2002")
    assert concept(med, "Drug", "A") is None


# ------------------------------------------------------------------ merge semantics
def test_shallow_merge_of_attributes(med):
    ok(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET ATTRIBUTES { x: 1, tags: ["a", "b"], obj: {p: 1, q: 2}, keep: "k" } } }'))
    ok(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET ATTRIBUTES { x: 2, tags: ["c"], obj: {p: 9} } } }'))
    a = concept(med, "Drug", "A")
    assert a["attributes"] == {"x": 2, "tags": ["c"], "obj": {"p": 9}, "keep": "k"}
    assert a["metadata"]["_version"] == 2


def test_values_round_trip(med):
    values = '{ s: "t", i: 42, f: 1.5, b: false, n: null, big: 123456789012345678901, mixed: [1, "a", null], nested: [[1], {"k": [true]}], empty: [], eo: {} }'
    ok(med.execute_kip(f'UPSERT {{ CONCEPT ?a {{ {{type: "Drug", name: "V"}} SET ATTRIBUTES {values} }} }}'))
    a = concept(med, "Drug", "V")["attributes"]
    assert a == {
        "s": "t",
        "i": 42,
        "f": 1.5,
        "b": False,
        "n": None,
        "big": 123456789012345678901,
        "mixed": [1, "a", None],
        "nested": [[1], {"k": [True]}],
        "empty": [],
        "eo": {},
    }


def test_metadata_precedence_inner_wins_key_by_key_including_null(med):
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a {
            {type: "Drug", name: "A"}
            SET PROPOSITIONS {
              ("treats", {type: "Symptom", name: "Brain Fog"}) WITH METADATA { confidence: 0.5, status: null }
              ("belongs_to_class", {type: "DrugClass", name: "Nootropic"})
            }
          }
          WITH METADATA { author: "block", confidence: 0.8 }
          CONCEPT ?b { {type: "Symptom", name: "B"} }
        }
        WITH METADATA { source: "outer", author: "outer", status: "reviewed" }""")
    )
    a, b = concept(med, "Drug", "A"), concept(med, "Symptom", "B")
    strip = lambda m: {k: v for k, v in m.items() if not k.startswith("_")}  # noqa: E731
    assert strip(a["metadata"]) == {"source": "outer", "author": "block", "status": "reviewed", "confidence": 0.8}
    assert strip(b["metadata"]) == {"source": "outer", "author": "outer", "status": "reviewed"}
    t = link(med, a["id"], "treats", concept(med, "Symptom", "Brain Fog")["id"])
    assert strip(t["metadata"]) == {"source": "outer", "author": "block", "status": None, "confidence": 0.5}
    c = link(med, a["id"], "belongs_to_class", concept(med, "DrugClass", "Nootropic")["id"])
    assert strip(c["metadata"]) == {"source": "outer", "author": "block", "status": "reviewed", "confidence": 0.8}


def test_set_propositions_is_additive_and_updates_existing_link(med):
    ok(
        med.execute_kip(
            'UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Brain Fog"}) WITH METADATA { confidence: '
            "0.5 } } } }"
        )
    )
    ok(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("belongs_to_class", {type: "DrugClass", name: "Nootropic"}) } } }'))
    a = concept(med, "Drug", "A")
    fog = concept(med, "Symptom", "Brain Fog")
    t = link(med, a["id"], "treats", fog["id"])
    assert t is not None and count(med, "MATCH (p:KipProposition {subject: $s}) RETURN count(p)", s=a["id"]) == 2
    ok(
        med.execute_kip(
            'UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Brain Fog"}) WITH METADATA { confidence: '
            '0.9, note: "x" } } } }'
        )
    )
    t2 = link(med, a["id"], "treats", fog["id"])
    assert t2["id"] == t["id"] and t2["metadata"]["confidence"] == 0.9 and t2["metadata"]["note"] == "x"
    assert t2["metadata"]["_version"] == 2
    assert count(med, "MATCH (p:KipProposition {subject: $s, predicate: 'treats'}) RETURN count(p)", s=a["id"]) == 1
    integrity(med)


def test_all_target_forms_and_higher_order(med):
    res = ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?john { {type: "Person", name: "John"} }
          CONCEPT ?asp { {type: "Drug", name: "Aspirin"} }
          CONCEPT ?ha { {type: "Symptom", name: "Headache"} }
          PROPOSITION ?fact { (?asp, "treats", ?ha) SET ATTRIBUTES { mechanism: "COX" } }
          PROPOSITION ?claim { (?john, "stated", ?fact) } WITH METADATA { confidence: 0.7 }
        }""")
    )
    fact_id, claim_id = res["upsert_proposition_links"]
    fact, claim = proposition(med, fact_id), proposition(med, claim_id)
    assert fact["attributes"] == {"mechanism": "COX"} and claim["object"] == fact_id
    john, asp = concept(med, "Person", "John"), concept(med, "Drug", "Aspirin")
    # every target form in SET PROPOSITIONS
    ok(
        med.execute_kip(
            """
        UPSERT {
          CONCEPT ?j {
            {type: "Person", name: "John"}
            SET PROPOSITIONS {
              ("related_to", {id: :asp})
              ("related_to", (id: :fact))
              ("related_to", ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"}))
              ("related_to", {type: "Symptom", name: "Headache"})
              ("related_to", ({type: "Person", name: "John"}, "stated", ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"})))
            }
          }
        }""",
            parameters={"asp": asp["id"], "fact": fact_id},
        )
    )
    assert link(med, john["id"], "related_to", asp["id"]) is not None
    assert link(med, john["id"], "related_to", fact_id) is not None
    assert link(med, john["id"], "related_to", claim_id) is not None
    assert count(med, "MATCH (p:KipProposition {subject: $s, predicate: 'related_to'}) RETURN count(p)", s=john["id"]) == 4
    integrity(med)


def test_structural_target_created_earlier_in_same_capsule(med):
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?asp { {type: "Drug", name: "Aspirin"} }
          CONCEPT ?ha { {type: "Symptom", name: "Headache"} SET PROPOSITIONS { ("related_to", ?asp) } }
          PROPOSITION ?p { ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"}) }
          CONCEPT ?john {
            {type: "Person", name: "John"}
            SET PROPOSITIONS { ("stated", ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"})) }
          }
          PROPOSITION ?q { (?john, "related_to", ({type: "Symptom", name: "Headache"}, "related_to", ?asp)) }
        }""")
    )
    john = concept(med, "Person", "John")
    assert count(med, "MATCH (p:KipProposition {subject: $s}) RETURN count(p)", s=john["id"]) == 2
    integrity(med)


def test_structural_target_missing_is_3002(med):
    ok(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} } CONCEPT ?h { {type: "Symptom", name: "Headache"} } }'))
    e = err(
        med.execute_kip("""
        UPSERT { CONCEPT ?j { {type: "Person", name: "John"} SET PROPOSITIONS {
          ("stated", ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"})) } } }"""),
        "KIP_3002",
    )
    assert "treats" in e["message"]
    assert concept(med, "Person", "John") is None


def test_id_forms_match_only(med):
    err(med.execute_kip('UPSERT { CONCEPT ?x { {id: "C:doesnotexist"} SET ATTRIBUTES { a: 1 } } }'), "KIP_3002")
    err(med.execute_kip('UPSERT { PROPOSITION ?x { (id: "P:nope:treats") SET ATTRIBUTES { a: 1 } } }'), "KIP_3002")
    err(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treats", (id: "P:nope:treats")) } } }'), "KIP_3002")
    err(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treats", {id: "C:nope"}) } } }'), "KIP_3002")
    fog = concept(med, "Symptom", "Brain Fog")
    res = ok(med.execute_kip("UPSERT { CONCEPT ?x { {id: :id} SET ATTRIBUTES { severity: 3 } } }", parameters={"id": fog["id"]}))
    assert res["upsert_concept_nodes"] == [fog["id"]]
    assert concept(med, "Symptom", "Brain Fog")["attributes"]["severity"] == 3
    p = ok(
        med.execute_kip(
            'UPSERT { PROPOSITION ?p { ({type: "Drug", name: "Aspirin2"}, "treats", ?x) } }'.replace("?x", '{type: "Symptom", name: "Brain Fog"}').replace(
                '{type: "Drug", name: "Aspirin2"}', '{type: "DrugClass", name: "Nootropic"}'
            )
        )
    )
    pid = p["upsert_proposition_links"][0]
    res = ok(
        med.execute_kip("UPSERT { PROPOSITION ?p { (id: :pid) SET ATTRIBUTES { weight: 1 } } WITH METADATA { confidence: 0.3 } }", parameters={"pid": pid})
    )
    assert res["upsert_proposition_links"] == [pid]
    got = proposition(med, pid)
    assert got["attributes"] == {"weight": 1} and got["metadata"]["confidence"] == 0.3 and got["metadata"]["_version"] == 2


def test_one_concept_named_twice_in_a_capsule_is_written_block_by_block(med):
    """Blocks naming one concept twice are not the one-pipeline write of distinct concepts
    (``UpsertPlan.flat``): the second block sees the first's write, as in textual order."""
    res = ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "Twice"} SET ATTRIBUTES { n: 1, first: true } }
          CONCEPT ?b { {type: "Drug", name: "Twice"} SET ATTRIBUTES { n: 2 } }
          CONCEPT ?c { {type: "Drug", name: "Twice"} SET ATTRIBUTES { n: 2 } }
        }""")
    )
    twice = concept(med, "Drug", "Twice")
    assert res["upsert_concept_nodes"] == [twice["id"]] * 3
    assert twice["attributes"] == {"n": 2, "first": True}
    assert twice["metadata"]["_version"] == 2  # created, then changed once; the third block changes nothing
    ok(
        med.execute_kip(
            'UPSERT { CONCEPT ?x { {id: :id} SET ATTRIBUTES { n: 3 } } CONCEPT ?y { {type: "Drug", name: "Twice"} SET ATTRIBUTES { n: 4 } } }',
            parameters={"id": twice["id"]},
        )
    )
    assert concept(med, "Drug", "Twice")["attributes"]["n"] == 4 and concept(med, "Drug", "Twice")["metadata"]["_version"] == 4
    integrity(med)


def test_several_upserts_in_one_command(med):
    res = ok(
        med.execute_kip("""
        UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} } }
        UPSERT { CONCEPT ?b { {type: "Drug", name: "B"} } PROPOSITION ?l { ({type: "Drug", name: "A"}, "related_to", ?b) } }
        """)
    )
    assert res["blocks"] == 2 and len(res["upsert_concept_nodes"]) == 2 and len(res["upsert_proposition_links"]) == 1


# ------------------------------------------------------------------ versions
def test_versions_bump_only_on_change(med):
    q = 'UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET ATTRIBUTES { x: :x } } WITH METADATA { confidence: :c } }'
    ok(med.execute_kip(q, parameters={"x": 1, "c": 0.5}))
    a1 = concept(med, "Drug", "A")
    assert a1["metadata"]["_version"] == 1 and ISO.match(a1["metadata"]["_updated_at"])
    ok(med.execute_kip(q, parameters={"x": 1, "c": 0.5}))
    assert concept(med, "Drug", "A")["metadata"] == a1["metadata"]
    ok(med.execute_kip(q, parameters={"x": 2, "c": 0.5}))
    assert concept(med, "Drug", "A")["metadata"]["_version"] == 2
    ok(med.execute_kip(q, parameters={"x": 2, "c": 0.6}))
    a4 = concept(med, "Drug", "A")
    assert a4["metadata"]["_version"] == 3 and a4["metadata"]["_updated_at"] >= a1["metadata"]["_updated_at"]
    integrity(med)  # the replays' lock left nothing behind


def test_expect_version(med):
    ok(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} EXPECT VERSION 0 SET ATTRIBUTES { n: 1 } } }'))
    e = err(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} EXPECT VERSION 0 SET ATTRIBUTES { n: 2 } } }'), "KIP_3005")
    assert "already exists" in e["message"]
    ok(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} EXPECT VERSION :v SET ATTRIBUTES { n: 2 } } }', parameters={"v": 1}))
    # a replay of a guarded write that succeeded fails (the deliberate idempotency exception)
    err(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} EXPECT VERSION :v SET ATTRIBUTES { n: 2 } } }', parameters={"v": 1}), "KIP_3005")
    # a mismatch anywhere aborts the whole command
    before = snapshot(med)
    err(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?b { {type: "Drug", name: "B"} SET ATTRIBUTES { n: 1 } }
          CONCEPT ?a { {type: "Drug", name: "A"} EXPECT VERSION 7 SET ATTRIBUTES { n: 3 } }
        }"""),
        "KIP_3005",
    )
    assert snapshot(med) == before
    err(med.execute_kip('UPSERT { CONCEPT ?z { {type: "Drug", name: "Z"} EXPECT VERSION 1 } }'), "KIP_3005")
    assert concept(med, "Drug", "Z") is None


def test_expect_version_on_proposition(med):
    res = ok(
        med.execute_kip(
            'UPSERT { PROPOSITION ?p { ({type: "DrugClass", name: "Nootropic"}, "related_to", {type: "Symptom", name: "Brain Fog"}) EXPECT VERSION 0 SET '
            "ATTRIBUTES { w: 1 } } }"
        )
    )
    pid = res["upsert_proposition_links"][0]
    err(med.execute_kip("UPSERT { PROPOSITION ?p { (id: :p) EXPECT VERSION 2 SET ATTRIBUTES { w: 2 } } }", parameters={"p": pid}), "KIP_3005")
    ok(med.execute_kip("UPSERT { PROPOSITION ?p { (id: :p) EXPECT VERSION 1 SET ATTRIBUTES { w: 2 } } }", parameters={"p": pid}))
    assert proposition(med, pid)["attributes"]["w"] == 2


def test_concurrent_expect_version_increments(med):
    """8 threads doing guarded read-modify-write: no lost update, every failure is KIP_3005."""
    from kip2cypher.nexus import Nexus

    ok(med.execute_kip('UPSERT { CONCEPT ?c { {type: "Drug", name: "Counter"} SET ATTRIBUTES { value: 0 } } }'))
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker() -> None:
        with Nexus(med.uri, auth=None, database=med.database) as nx:
            start.wait()
            for _ in range(6):
                rec = nx.driver.execute_query(
                    "MATCH (n:KipConcept {type: 'Drug', name: 'Counter'}) RETURN n.`attr.value` AS v, n.`meta._version` AS ver", database_=nx.database
                ).records[0]
                r = nx.execute_kip(
                    'UPSERT { CONCEPT ?c { {type: "Drug", name: "Counter"} EXPECT VERSION :ver SET ATTRIBUTES { value: :value } } }',
                    parameters={"ver": rec["ver"], "value": rec["v"] + 1},
                )
                with lock:
                    outcomes.append("ok" if "result" in r else r["error"]["code"])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    successes = outcomes.count("ok")
    assert set(outcomes) <= {"ok", "KIP_3005"}, outcomes
    assert successes >= 1 and len(outcomes) == 48
    final = concept(med, "Drug", "Counter")
    assert final["attributes"]["value"] == successes
    assert final["metadata"]["_version"] == successes + 1


# ------------------------------------------------------------------ atomicity
def test_third_block_failure_leaves_no_trace(med):
    before = snapshot(med)
    e = err(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "First"} SET ATTRIBUTES { x: 1 } SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Brain Fog"}) } }
          CONCEPT ?b { {type: "Symptom", name: "Second"} SET PROPOSITIONS { ("related_to", ?a) } }
          CONCEPT ?c { {type: "Drug", name: "Third"} SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Nowhere"}) } }
        }"""),
        "KIP_3002",
    )
    assert "Nowhere" in e["message"]
    assert snapshot(med) == before
    # failure discovered while writing (after the first two blocks were written in the transaction)
    ok(med.execute_kip('UPSERT { CONCEPT ?v { {type: "Drug", name: "Versioned"} } }'))
    before = snapshot(med)
    err(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "First"} SET ATTRIBUTES { x: 1 } }
          PROPOSITION ?l { (?a, "treats", {type: "Symptom", name: "Brain Fog"}) }
          CONCEPT ?c { {type: "Drug", name: "Versioned"} EXPECT VERSION 5 }
        }"""),
        "KIP_3005",
    )
    assert snapshot(med) == before


# ------------------------------------------------------------------ protected targets
def test_protected_schema_nodes(med):
    e = err(med.execute_kip('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "$ConceptType"} SET ATTRIBUTES { description: "hacked" } } }'), "KIP_3004")
    assert "$ConceptType" in e["message"]
    err(med.execute_kip('UPSERT { CONCEPT ?t { {type: "Domain", name: "CoreSchema"} SET ATTRIBUTES { description: "x" } } }'), "KIP_3004")
    err(med.execute_kip('UPSERT { CONCEPT ?t { {type: "$PropositionType", name: "belongs_to_domain"} } WITH METADATA { confidence: 0.1 } }'), "KIP_3004")
    # referencing a protected node as a bare block (Genesis housekeeping pattern) under UPSERT-level metadata is fine
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?core { {type: "Domain", name: "CoreSchema"} }
          CONCEPT ?t { {type: "$ConceptType", name: "Drug"} SET PROPOSITIONS { ("belongs_to_domain", ?core) } }
        } WITH METADATA { source: "agent", confidence: 0.5 }""")
    )
    assert concept(med, "Domain", "CoreSchema")["metadata"]["source"] == "SystemBootstrap"
    # user types stay evolvable
    ok(med.execute_kip('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "better" } } }'))


def test_protected_actor_core_directives(med):
    ok(med.execute_kip('UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { core_directives: ["a"], persona: "calm" } } }'))
    err(med.execute_kip('UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { core_directives: ["b"] } } }'), "KIP_3004")
    ok(med.execute_kip('UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { core_directives: ["a"], persona: "curious" } } }'))
    assert concept(med, "Person", "$self")["attributes"] == {"core_directives": ["a"], "persona": "curious"}


# ------------------------------------------------------------------ dry run
def test_dry_run_validates_and_writes_nothing(med):
    before = snapshot(med)
    res = ok(med.execute_kip(COGNIZINE, dry_run=True))
    assert res == {"blocks": 1, "upsert_concept_nodes": [], "upsert_proposition_links": []}
    assert snapshot(med) == before
    err(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drugg", name: "A"} } }', dry_run=True), "KIP_2001")
    err(
        med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Nope"}) } } }', dry_run=True),
        "KIP_3002",
    )
    err(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treats", ?nope) } } }', dry_run=True), "KIP_3001")
    err(med.execute_kip('UPSERT { CONCEPT ?t { {type: "Domain", name: "CoreSchema"} SET ATTRIBUTES { description: "x" } } }', dry_run=True), "KIP_3004")
    err(med.execute_kip('UPSERT { CONCEPT ?t { {type: "Domain", name: "CoreSchema"} EXPECT VERSION 0 } }', dry_run=True), "KIP_3005")
    assert snapshot(med) == before


# ------------------------------------------------------------------ strict schema
def test_strict_instance_schema(genesis):
    from kip2cypher.config import Settings
    from kip2cypher.nexus import Nexus

    ok(
        genesis.execute_kip("""
        UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Gadget"} SET ATTRIBUTES { description: "x",
          instance_schema: { weight: { type: "number", is_required: true }, tags: { type: "array", item_type: "string" },
            kind: { type: "string", enum: ["a", "b"] } } } } }""")
    )
    ok(genesis.execute_kip('UPSERT { CONCEPT ?g { {type: "Gadget", name: "loose"} } }'))  # default: guidance only
    with Nexus(genesis.uri, database=genesis.database, settings=Settings(strict_schema=True)) as strict:
        err(strict.execute_kip('UPSERT { CONCEPT ?g { {type: "Gadget", name: "g1"} } }'), "KIP_2002")
        err(strict.execute_kip('UPSERT { CONCEPT ?g { {type: "Gadget", name: "g1"} SET ATTRIBUTES { weight: "heavy" } } }'), "KIP_2003")
        err(strict.execute_kip('UPSERT { CONCEPT ?g { {type: "Gadget", name: "g1"} SET ATTRIBUTES { weight: 1, tags: [1] } } }'), "KIP_2003")
        err(strict.execute_kip('UPSERT { CONCEPT ?g { {type: "Gadget", name: "g1"} SET ATTRIBUTES { weight: 1, kind: "c" } } }'), "KIP_2003")
        ok(strict.execute_kip('UPSERT { CONCEPT ?g { {type: "Gadget", name: "g1"} SET ATTRIBUTES { weight: 1, tags: ["x"], kind: "a" } } }'))
        ok(strict.execute_kip('UPSERT { CONCEPT ?g { {type: "Gadget", name: "g1"} SET ATTRIBUTES { kind: "b" } } }'))  # required already stored
        # the whole Genesis is valid under strict mode
        from kip2cypher import profiles

        ok(strict.execute_kip(profiles.capsule_text("Genesis", "rc11")))


def test_capsule_is_batched_into_a_handful_of_statements(med, monkeypatch):
    """200 concept blocks + 400 links → resolve with the concepts, one proposition wave: 2 round trips."""
    from kip2cypher.execution import loop

    labels: list[str] = []
    original = loop._prepare

    def counting(request, settings, trace):
        labels.append(request.statement.label)
        return original(request, settings, trace)

    monkeypatch.setattr(loop, "_prepare", counting)  # every Run / Explain the driver loop sends
    blocks = []
    for i in range(200):
        links = " ".join(x for x in (f'("related_to", ?c{i - 1})' if i else "", '("treats", {type: "Symptom", name: "Brain Fog"})') if x)
        blocks.append(f'CONCEPT ?c{i} {{ {{type: "Drug", name: "B{i}"}} SET ATTRIBUTES {{ i: {i} }} SET PROPOSITIONS {{ {links} }} }}')
    res = ok(med.execute_kip("UPSERT { " + "\n".join(blocks) + ' } WITH METADATA { source: "batch" }'))
    assert len(res["upsert_concept_nodes"]) == 200
    from kip2cypher.lower.upsert_statements import statements as catalogue

    upsert_statements = [label for label in labels if label.startswith("UPSERT")]
    statements = catalogue()
    assert upsert_statements == [statements.checked_concepts_flat.label, statements.propositions.label], labels
    assert count(med, "MATCH (p:KipProposition {`meta.source`: 'batch'}) RETURN count(p)") == 399

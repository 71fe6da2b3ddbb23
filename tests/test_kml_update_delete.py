"""UPDATE (§4.3) and DELETE (§4.2) on the real Neo4j."""

from __future__ import annotations

import threading

import pytest
from kml_helpers import COGNIZINE, SCHEMA, concept, count, err, integrity, link, ok, proposition, snapshot


@pytest.fixture()
def med(genesis):
    ok(genesis.execute_kip(SCHEMA))
    ok(genesis.execute_kip(COGNIZINE))
    return genesis


# ------------------------------------------------------------------ UPDATE
def test_update_spec_example_confidence_decay(med):
    """§4.3 first example: decay across all predicates except belongs_to_domain."""
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "Aspirin"}
            SET PROPOSITIONS {
              ("treats", {type: "Symptom", name: "Brain Fog"}) WITH METADATA { confidence: 0.8, created_at: "2020-01-01T00:00:00Z" }
              ("belongs_to_class", {type: "DrugClass", name: "Nootropic"}) WITH METADATA { confidence: 1.0, created_at: "2020-01-01T00:00:00Z" }
              ("has_side_effect", {type: "Symptom", name: "Neural Bloom"})
                WITH METADATA { confidence: 0.6, created_at: "2020-01-01T00:00:00Z", superseded: true }
            }
          }
        }""")
    )
    res = ok(
        med.execute_kip(
            """
        UPDATE ?link
        SET METADATA {
          confidence: CLAMP(MUL(?link.metadata.confidence, :decay_factor), 0.0, 1.0),
          decay_applied_at: :timestamp
        }
        WHERE {
          ?link (?s, ?p, ?o)
          FILTER(?p != "belongs_to_domain")
          FILTER(IS_NULL(?link.metadata.superseded) || ?link.metadata.superseded != true)
          FILTER(?link.metadata.created_at < :decay_threshold)
          FILTER(?link.metadata.confidence > 0.3 && ?link.metadata.confidence < 1.0)
        }
        LIMIT 500""",
            parameters={"decay_factor": 0.5, "timestamp": "2026-07-04T00:00:00Z", "decay_threshold": "2021-01-01T00:00:00Z"},
        )
    )
    assert res == {"updated": 1, "matched": 1}
    a = concept(med, "Drug", "Aspirin")
    t = link(med, a["id"], "treats", concept(med, "Symptom", "Brain Fog")["id"])
    assert t["metadata"]["confidence"] == pytest.approx(0.4) and t["metadata"]["decay_applied_at"] == "2026-07-04T00:00:00Z"
    assert t["metadata"]["_version"] == 2
    c = link(med, a["id"], "belongs_to_class", concept(med, "DrugClass", "Nootropic")["id"])
    assert c["metadata"]["confidence"] == 1.0 and c["metadata"]["_version"] == 1


def test_update_spec_example_reinforcement(med):
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?t { {type: "$ConceptType", name: "Preference"} SET ATTRIBUTES { description: "p" } }
          CONCEPT ?p { {type: "Preference", name: "dark_mode"} }
        }""")
    )
    q = """
        UPDATE ?pref
        SET ATTRIBUTES {
          evidence_count: ADD(COALESCE(?pref.attributes.evidence_count, 0), 1),
          last_observed: :timestamp
        }
        SET METADATA { observed_at: :timestamp }
        WHERE {
          ?pref {type: "Preference", name: :pref_name}
        }"""
    for i in range(3):
        assert ok(med.execute_kip(q, parameters={"timestamp": f"2026-0{i + 1}-01", "pref_name": "dark_mode"})) == {"updated": 1, "matched": 1}
    p = concept(med, "Preference", "dark_mode")
    assert p["attributes"] == {"evidence_count": 3, "last_observed": "2026-03-01"}
    assert p["metadata"]["observed_at"] == "2026-03-01" and p["metadata"]["_version"] == 4


def test_update_null_and_non_number_operands_skip_key_per_element(med):
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "N1"} SET ATTRIBUTES { score: 2, label: "x" } }
          CONCEPT ?b { {type: "Drug", name: "N2"} SET ATTRIBUTES { score: "high", label: "y" } }
          CONCEPT ?c { {type: "Drug", name: "N3"} SET ATTRIBUTES { label: "z" } }
          CONCEPT ?d { {type: "Drug", name: "N4"} SET ATTRIBUTES { score: null } }
        }""")
    )
    res = ok(med.execute_kip('UPDATE ?d SET ATTRIBUTES { score: MUL(?d.attributes.score, 10) } WHERE { ?d {type: "Drug"} FILTER(STARTS_WITH(?d.name, "N")) }'))
    assert res == {"updated": 1, "matched": 4}
    assert concept(med, "Drug", "N1")["attributes"]["score"] == 20
    assert concept(med, "Drug", "N2")["attributes"]["score"] == "high"
    assert "score" not in concept(med, "Drug", "N3")["attributes"]
    assert concept(med, "Drug", "N4")["metadata"]["_version"] == 1
    # other keys of the same element still update; COALESCE treats a stored null as null
    res = ok(
        med.execute_kip(
            'UPDATE ?d SET ATTRIBUTES { score: ADD(?d.attributes.score, 1), seen: true, s2: COALESCE(?d.attributes.score, 7) } WHERE { ?d {type: "Drug"} '
            'FILTER(STARTS_WITH(?d.name, "N")) }'
        )
    )
    assert res == {"updated": 4, "matched": 4}
    n2, n4 = concept(med, "Drug", "N2")["attributes"], concept(med, "Drug", "N4")["attributes"]
    assert n2["score"] == "high" and n2["seen"] is True and "s2" not in n2
    assert n4["s2"] == 7 and n4["score"] is None
    assert concept(med, "Drug", "N1")["attributes"]["score"] == 21


def test_update_clamp_and_limit(med):
    ok(med.execute_kip("UPSERT { " + " ".join(f'CONCEPT ?c{i} {{ {{type: "Symptom", name: "S{i}"}} SET ATTRIBUTES {{ v: {i} }} }}' for i in range(6)) + " }"))
    res = ok(
        med.execute_kip(
            'UPDATE ?s SET ATTRIBUTES { v: CLAMP(ADD(?s.attributes.v, 2), 3, 6) } WHERE { ?s {type: "Symptom"} FILTER(STARTS_WITH(?s.name, "S")) } LIMIT 100'
        )
    )
    assert res == {"updated": 6, "matched": 6}
    values = sorted(concept(med, "Symptom", f"S{i}")["attributes"]["v"] for i in range(6))
    assert values == [3, 3, 4, 5, 6, 6]
    # a write that changes nothing is not an update (and bumps no _version)
    res = ok(med.execute_kip('UPDATE ?s SET ATTRIBUTES { v: CLAMP(?s.attributes.v, 3, 6) } WHERE { ?s {type: "Symptom"} FILTER(STARTS_WITH(?s.name, "S")) }'))
    assert res == {"updated": 0, "matched": 6}
    assert concept(med, "Symptom", "S0")["metadata"]["_version"] == 2
    res = ok(
        med.execute_kip(
            'UPDATE ?s SET ATTRIBUTES { tagged: true } WHERE { ?s {type: "Symptom"} FILTER(STARTS_WITH(?s.name, "S")) } LIMIT :n', parameters={"n": 2}
        )
    )
    assert res == {"updated": 2, "matched": 2}
    assert count(med, "MATCH (n:KipConcept) WHERE n.`attr.tagged` = true RETURN count(n)") == 2


def test_update_never_creates_and_reports_zero(med):
    before = snapshot(med)
    assert ok(med.execute_kip('UPDATE ?d SET ATTRIBUTES { x: 1 } WHERE { ?d {type: "Drug", name: "Nope"} }')) == {"updated": 0, "matched": 0}
    assert snapshot(med) == before


def test_update_errors(med):
    err(med.execute_kip('UPDATE ?d SET METADATA { _version: 3 } WHERE { ?d {type: "Drug"} }'), "KIP_2002")
    err(med.execute_kip('UPDATE ?d SET ATTRIBUTES { x: 1 } WHERE { ?d {type: "Drugg"} }'), "KIP_2001")
    err(med.execute_kip('UPDATE ?x SET ATTRIBUTES { x: 1 } WHERE { ?d {type: "Drug"} }'), "KIP_3001")
    before = snapshot(med)
    # protected: the meta-types
    err(med.execute_kip('UPDATE ?t SET ATTRIBUTES { reviewed: true } WHERE { ?t {type: "$ConceptType"} }'), "KIP_3004")
    # protected: CoreSchema links of protected definitions
    err(med.execute_kip('UPDATE ?l SET METADATA { confidence: 0.5 } WHERE { ?l (?s, "belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }'), "KIP_3004")
    assert snapshot(med) == before
    # user types are fine
    assert ok(med.execute_kip('UPDATE ?t SET ATTRIBUTES { reviewed: true } WHERE { ?t {type: "$ConceptType", name: "Drug"} }'))["updated"] == 1


def test_update_self_ordinary_attributes_but_not_core_directives(med):
    ok(med.execute_kip('UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { core_directives: ["be kind"], mood: 1 } } }'))
    assert ok(med.execute_kip('UPDATE ?s SET ATTRIBUTES { mood: ADD(?s.attributes.mood, 1) } WHERE { ?s {type: "Person", name: "$self"} }'))["updated"] == 1
    err(med.execute_kip('UPDATE ?s SET ATTRIBUTES { core_directives: [] } WHERE { ?s {type: "Person", name: "$self"} }'), "KIP_3004")
    err(med.execute_kip('DELETE ATTRIBUTES { "core_directives" } FROM ?s WHERE { ?s {type: "Person", name: "$self"} }'), "KIP_3004")
    assert ok(med.execute_kip('DELETE ATTRIBUTES { "mood" } FROM ?s WHERE { ?s {type: "Person", name: "$self"} }')) == {
        "updated_concepts": 1,
        "updated_propositions": 0,
    }
    err(med.execute_kip('DELETE CONCEPT ?s DETACH WHERE { ?s {type: "Person", name: "$self"} }'), "KIP_3004")
    assert concept(med, "Person", "$self")["attributes"] == {"core_directives": ["be kind"]}


def test_concurrent_bulk_increments_lose_nothing(med):
    from kip2cypher.nexus import Nexus

    ok(med.execute_kip('UPSERT { CONCEPT ?c { {type: "Drug", name: "Hits"} SET ATTRIBUTES { n: 0 } } }'))
    failures: list = []

    def worker() -> None:
        with Nexus(med.uri, database=med.database) as nx:
            for _ in range(10):
                r = nx.execute_kip('UPDATE ?c SET ATTRIBUTES { n: ADD(?c.attributes.n, 1) } WHERE { ?c {type: "Drug", name: "Hits"} }')
                if "error" in r:
                    failures.append(r)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert concept(med, "Drug", "Hits")["attributes"]["n"] == 60


def test_update_dry_run(med):
    # A dry run reports what the command would do (issue 13), computed in a read transaction.
    before = snapshot(med)
    command = 'UPDATE ?d SET ATTRIBUTES { x: 1 } WHERE { ?d {type: "Drug"} }'
    assert ok(med.execute_kip(command, dry_run=True)) == {"updated": 1, "matched": 1}
    err(med.execute_kip('UPDATE ?t SET ATTRIBUTES { x: 1 } WHERE { ?t {type: "$ConceptType"} }', dry_run=True), "KIP_3004")
    assert snapshot(med) == before
    assert ok(med.execute_kip(command)) == {"updated": 1, "matched": 1}


# ------------------------------------------------------------------ DELETE ATTRIBUTES / METADATA
def test_delete_attributes_spec_examples(med):
    ok(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { risk_category: "low", old_id: 7, keep: 1 } } }'))
    assert ok(med.execute_kip('DELETE ATTRIBUTES {"risk_category", "old_id"} FROM ?drug WHERE { ?drug {type: "Drug", name: "Aspirin"} }')) == {
        "updated_concepts": 1,
        "updated_propositions": 0,
    }
    a = concept(med, "Drug", "Aspirin")
    assert a["attributes"] == {"keep": 1} and a["metadata"]["_version"] == 2
    # second example: only elements that had the key are mutated
    assert ok(med.execute_kip('DELETE ATTRIBUTES { "risk_category" } FROM ?drug WHERE { ?drug { type: "Drug" } }')) == {
        "updated_concepts": 0,
        "updated_propositions": 0,
    }
    # third example: on propositions
    ok(
        med.execute_kip(
            'UPSERT { PROPOSITION ?l { ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Brain Fog"}) SET ATTRIBUTES { category: "x" } } }'
        )
    )
    assert ok(med.execute_kip('DELETE ATTRIBUTES { "category" } FROM ?links WHERE { ?links (?s, "treats", ?o) }')) == {
        "updated_concepts": 0,
        "updated_propositions": 1,
    }
    integrity(med)


def test_delete_metadata(med):
    ok(med.execute_kip('UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} } WITH METADATA { old_source: "x", source: "y" } }'))
    assert ok(med.execute_kip('DELETE METADATA {"old_source"} FROM ?drug WHERE { ?drug {type: "Drug", name: "Aspirin"} }')) == {
        "updated_concepts": 1,
        "updated_propositions": 0,
    }
    m = concept(med, "Drug", "Aspirin")["metadata"]
    assert "old_source" not in m and m["source"] == "y" and m["_version"] == 2
    err(med.execute_kip('DELETE METADATA {"_version"} FROM ?drug WHERE { ?drug {type: "Drug", name: "Aspirin"} }'), "KIP_2002")
    err(med.execute_kip('DELETE METADATA {"source"} FROM ?d WHERE { ?d {type: "Domain", name: "CoreSchema"} }'), "KIP_3004")


# ------------------------------------------------------------------ DELETE PROPOSITIONS
def test_delete_propositions_spec_example(med):
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET PROPOSITIONS {
            ("treats", {type: "Symptom", name: "Brain Fog"}) WITH METADATA { source: "untrusted_source_v1" }
            ("treats", {type: "Symptom", name: "Neural Bloom"}) WITH METADATA { source: "trusted" }
          } }
        }""")
    )
    res = ok(
        med.execute_kip("""
        DELETE PROPOSITIONS ?link
        WHERE {
          ?link (?s, "treats", ?o)
          FILTER(?link.metadata.source == "untrusted_source_v1")
        }""")
    )
    assert res == {"deleted_propositions": 1}
    a = concept(med, "Drug", "Aspirin")
    assert link(med, a["id"], "treats", concept(med, "Symptom", "Brain Fog")["id"]) is None
    assert count(med, "MATCH (:`kip:Drug` {name: 'Aspirin'})-[r:`kip:treats`]->() RETURN count(r)") == 1
    integrity(med)


def test_delete_propositions_cascades_to_higher_order(med):
    res = ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?john { {type: "Person", name: "John"} }
          PROPOSITION ?fact { ({type: "Drug", name: "Cognizine"}, "treats", {type: "Symptom", name: "Neural Bloom"}) }
          PROPOSITION ?claim { (?john, "stated", ?fact) }
          PROPOSITION ?meta { (?john, "related_to", ?claim) }
        }""")
    )
    fact, claim, meta = res["upsert_proposition_links"]
    assert ok(med.execute_kip("DELETE PROPOSITIONS ?l WHERE { ?l (id: :id) }", parameters={"id": fact})) == {"deleted_propositions": 3}
    assert proposition(med, claim) is None and proposition(med, meta) is None
    integrity(med)
    err(med.execute_kip('DELETE PROPOSITIONS ?l WHERE { ?l (?s, "belongs_to_domain", ?o) }'), "KIP_3004")


# ------------------------------------------------------------------ DELETE CONCEPT
def test_delete_concept_spec_example_and_cascade(med):
    ok(
        med.execute_kip("""
        UPSERT {
          CONCEPT ?d { {type: "Drug", name: "OutdatedDrug"} SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Brain Fog"}) } }
          CONCEPT ?j { {type: "Person", name: "John"} SET PROPOSITIONS { ("stated", (?d, "treats", {type: "Symptom", name: "Brain Fog"})) ("related_to", ?d) } }
          PROPOSITION ?x { ({type: "Person", name: "John"}, "related_to",
            ({type: "Person", name: "John"}, "stated", (?d, "treats", {type: "Symptom", name: "Brain Fog"}))) }
        }""")
    )
    before_props = count(med, "MATCH (p:KipProposition) RETURN count(p)")
    res = ok(
        med.execute_kip("""
        DELETE CONCEPT ?drug DETACH
        WHERE {
          ?drug {type: "Drug", name: "OutdatedDrug"}
        }""")
    )
    assert res == {"deleted_concepts": 1, "deleted_propositions": 4}
    assert concept(med, "Drug", "OutdatedDrug") is None
    assert count(med, "MATCH (p:KipProposition) RETURN count(p)") == before_props - 4
    assert concept(med, "Person", "John") is not None
    integrity(med)


def test_delete_concept_protected_and_empty(med):
    before = snapshot(med)
    for q in (
        'DELETE CONCEPT ?t DETACH WHERE { ?t {type: "$ConceptType", name: "Domain"} }',
        'DELETE CONCEPT ?t DETACH WHERE { ?t {type: "Domain"} }',
        'DELETE CONCEPT ?t DETACH WHERE { ?t {type: "$PropositionType", name: "belongs_to_domain"} }',
    ):
        err(med.execute_kip(q), "KIP_3004")
    assert snapshot(med) == before
    # deleting ordinary domains and user types is allowed
    assert ok(med.execute_kip('DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Domain", name: "Unsorted"} }')) == {"deleted_concepts": 1, "deleted_propositions": 1}


def test_delete_dry_run_writes_nothing_and_counts_what_it_would_delete(med):
    before = snapshot(med)
    links = 'DELETE PROPOSITIONS ?l WHERE { ?l (?s, "treats", ?o) }'
    drugs = 'DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug"} }'
    dry_links = ok(med.execute_kip(links, dry_run=True))
    dry_drugs = ok(med.execute_kip(drugs, dry_run=True))
    assert dry_links["deleted_propositions"] > 0 and dry_drugs["deleted_concepts"] > 0
    assert snapshot(med) == before
    assert ok(med.execute_kip(drugs)) == dry_drugs


# ------------------------------------------------------------------ DELETE of a missing target (issue 28)
MISSING = [
    ('DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Ghost"} }', 'DELETE CONCEPT: the concept {type: "Drug", name: "Ghost"}'),
    ("DELETE CONCEPT ?d DETACH WHERE { ?d {id: :cid} }", "DELETE CONCEPT: the concept {id: :cid}"),
    ('DELETE PROPOSITIONS ?l WHERE { ?l (id: "P:none") }', 'DELETE PROPOSITIONS: the proposition (id: "P:none")'),
    ('DELETE ATTRIBUTES {"risk_level"} FROM ?d WHERE { ?d {type: "Drug", name: "Ghost"} }', 'DELETE ATTRIBUTES: the concept {type: "Drug", name: "Ghost"}'),
    ('DELETE METADATA {"source"} FROM ?l WHERE { ?l (id: "P:none") }', 'DELETE METADATA: the proposition (id: "P:none")'),
]


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry_run"])
@pytest.mark.parametrize(("command", "named"), MISSING, ids=[m[1].split(":")[0] for m in MISSING])
def test_delete_of_an_exactly_named_target_that_does_not_exist_is_kip_3002(med, command, named, dry_run):
    """Spec Appendix 4: KIP_3002 "does not exist (for DELETE, …)"; kip2cypher answered zero counts."""
    before = snapshot(med)
    e = err(med.execute_kip(command, parameters={"cid": "C:none"}, dry_run=dry_run), "KIP_3002")
    assert e["message"] == f"{named} named by the WHERE does not exist; nothing was deleted."
    assert snapshot(med) == before


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry_run"])
def test_delete_whose_pattern_matches_nothing_answers_zero_counts(med, dry_run):
    none, links, updated = {"deleted_concepts": 0, "deleted_propositions": 0}, {"deleted_propositions": 0}, {"updated_concepts": 0, "updated_propositions": 0}
    for command, result in (
        ('DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Cognizine"} FILTER(?d.attributes.risk_level > 5) }', none),
        ('DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug"} FILTER(?d.name == "Ghost") }', none),
        ('DELETE PROPOSITIONS ?l WHERE { ?l ({type: "Drug", name: "Cognizine"}, "treats", {type: "Symptom", name: "Neural Bloom"}) }', links),
        ('DELETE ATTRIBUTES {"risk_level"} FROM ?d WHERE { ?d {type: "Drug", name: "Ghost"} ?s {type: "Symptom"} }', updated),
    ):
        assert med.execute_kip(command, dry_run=dry_run) == {"result": result}, command

"""EXPORT → Knowledge Capsule on the real Neo4j: shape, references, pagination and round trip."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import wipe
from meta_data import MEDICAL, PERSON_AND_SELF, load, ok

from kip2cypher.cypher import storage
from kip2cypher.syntax.parser import parse

EXTRA = """
UPSERT {
  CONCEPT ?stated_t {
    {type: "$PropositionType", name: "stated"}
    SET ATTRIBUTES { description: "The subject asserted the object proposition.", subject_types: ["Person"], object_types: ["*"] }
  }
  CONCEPT ?alice {
    {type: "Person", name: "Alice \\"the quoted\\" O'Neil"}
    SET ATTRIBUTES { note: "line1\\nline2 \\u001e tab\\t", scores: [1, 2.5, -3], mixed: [1, "a", null, {k: [true]}], nothing: null, big: 12345678901234567890 }
  }
  PROPOSITION ?fact {
    ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"})
    SET ATTRIBUTES { evidence_level: "A" }
  }
  WITH METADATA { confidence: 0.99, review_info: {by: "dr. x", at: "2025-01-01"} }
  PROPOSITION ?statement {
    (?alice, "stated", ?fact)
    SET ATTRIBUTES { context: "conference" }
  }
  PROPOSITION {
    (?alice, "stated", ?statement)
  }
}
WITH METADATA { source: "export-tests", author: "tester" }
"""

EVERYTHING = """
EXPORT ?n WHERE {
  ?n {type: "$ConceptType"}
  UNION { ?n {type: "$PropositionType"} }
  UNION { ?n {type: "Domain"} }
  UNION { ?n {type: "Drug"} }
  UNION { ?n {type: "Symptom"} }
  UNION { ?n {type: "Person"} }
  UNION { ?n (?s, ?p, ?o) }
}
"""


@pytest.fixture()
def graph(genesis):
    genesis.settings = genesis.settings.replace(embedder=False)
    load(genesis, MEDICAL, PERSON_AND_SELF, EXTRA)
    return genesis


def snapshot(nexus) -> dict[str, Any]:
    """The whole graph by portable identity (no ids, no reserved metadata), read with plain Cypher."""
    with nexus.session("READ") as session:
        concepts = {}
        idents = {}
        for record in session.run("MATCH (n:KipConcept) RETURN n"):
            props = dict(record["n"].items())
            attributes, metadata = storage.split_properties(props)
            key = (props["type"], props["name"])
            idents[props["id"]] = key
            concepts[key] = (attributes, {k: v for k, v in metadata.items() if not k.startswith("_")})
        rows = [dict(r["p"].items()) for r in session.run("MATCH (p:KipProposition) RETURN p")]
    by_id = {row["id"]: row for row in rows}

    def ident(element_id: str) -> Any:
        if element_id in idents:
            return idents[element_id]
        row = by_id[element_id]
        return (ident(row["subject"]), row["predicate"], ident(row["object"]))

    propositions = {}
    for row in rows:
        attributes, metadata = storage.split_properties(row)
        propositions[ident(row["id"])] = (attributes, {k: v for k, v in metadata.items() if not k.startswith("_")})
    return {"concepts": concepts, "propositions": propositions}


def export_pages(nexus, command: str, limit: int) -> list[dict[str, Any]]:
    pages = []
    token = None
    while True:
        text = command + f" LIMIT {limit}" + (" CURSOR :c" if token else "")
        response = nexus.execute_kip_readonly(text, parameters={"c": token} if token else None)
        pages.append(ok(response))
        token = response.get("next_cursor")
        if token is None:
            return pages


def test_export_small_capsule_exact_text(graph):
    response = graph.execute_kip('EXPORT ?d WHERE { ?d {type: "Drug", name: "Ibuprofen"} }')
    assert response == {
        "result": {
            "capsule": "UPSERT {\n"
            "  CONCEPT ?c1 {\n"
            '    {type: "Drug", name: "Ibuprofen"}\n'
            '    SET ATTRIBUTES {description: "A pain reliever of the propionic acid class.", risk_level: 3}\n'
            "  }\n"
            '  WITH METADATA {author: "tester", confidence: 0.9, source: "meta-tests"}\n'
            "}",
            "concepts": 1,
            "propositions": 0,
        }
    }


def test_export_propositions_reference_outside_endpoints_by_identity(graph):
    result = ok(graph.execute_kip('EXPORT ?l WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", ?s) }'))
    assert result["concepts"] == 0 and result["propositions"] == 2
    capsule = result["capsule"]
    assert '({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Fever"})' in capsule
    assert '({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"})' in capsule
    assert 'review_info: {by: "dr. x", at: "2025-01-01"}' in capsule
    assert "_version" not in capsule and "_updated_at" not in capsule
    assert "C:" not in capsule and "P:" not in capsule  # ids are not portable
    parse(capsule)


def test_export_nested_outside_proposition_is_a_structural_clause(graph):
    result = ok(graph.execute_kip('EXPORT ?l WHERE { ?l (?who, "stated", ?what) ?what (?a, "stated", ?b) }'))
    assert result["propositions"] == 1
    assert (
        '({type: "Person", name: "Alice \\"the quoted\\" O\'Neil"}, "stated", '
        '({type: "Person", name: "Alice \\"the quoted\\" O\'Neil"}, "stated", '
        '({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"})))'
    ) in result["capsule"]


def test_export_inside_endpoints_use_handles_and_schema_first(graph):
    result = ok(
        graph.execute_kip(
            'EXPORT ?n WHERE { ?n {type: "Drug", name: "Aspirin"} UNION { ?n ({type: "Drug", name: "Aspirin"}, "treats", ?s) } '
            'UNION { ?n {type: "$ConceptType", name: "Drug"} } UNION { ?n {type: "Symptom", name: "Fever"} } }'
        )
    )
    capsule = result["capsule"]
    assert result == {"capsule": capsule, "concepts": 3, "propositions": 2}
    order = [
        capsule.index(s) for s in ('{type: "$ConceptType", name: "Drug"}', '{type: "Drug", name: "Aspirin"}', '{type: "Symptom", name: "Fever"}', '"treats"')
    ]
    assert order == sorted(order)
    assert '(?c2, "treats", ?c3)' in capsule  # both endpoints in the export: handles
    assert '(?c2, "treats", {type: "Symptom", name: "Headache"})' in capsule


def test_export_pages_are_valid_and_cursor_is_bound(graph):
    pages = export_pages(graph, EVERYTHING, 7)
    assert len(pages) > 3
    for page in pages[:-1]:
        assert page["concepts"] + page["propositions"] == 7
        parse(page["capsule"])
    first = graph.execute_kip(EVERYTHING + " LIMIT 7")
    other = graph.execute_kip('EXPORT ?n WHERE { ?n {type: "Drug"} } LIMIT 7 CURSOR :c', parameters={"c": first["next_cursor"]})
    assert other["error"]["code"] == "KIP_1001"
    # Pages only ever refer back: concepts (schema first) precede every proposition.
    seen_propositions = False
    for page in pages:
        assert not (seen_propositions and page["concepts"]), "a concept came after a proposition"
        seen_propositions = seen_propositions or page["propositions"] > 0


def test_round_trip_whole_nexus_in_pages(graph):
    before = snapshot(graph)
    assert len(before["concepts"]) == 23 and len(before["propositions"]) >= 20
    pages = export_pages(graph, EVERYTHING, 6)
    assert sum(p["concepts"] for p in pages) == len(before["concepts"])
    assert sum(p["propositions"] for p in pages) == len(before["propositions"])
    wipe(graph.driver, graph.database)
    assert snapshot(graph) == {"concepts": {}, "propositions": {}}
    for page in pages:
        ok(graph.execute_kip(page["capsule"]))
    after = snapshot(graph)
    assert after == before
    # Exporting again gives the same blocks (handles and page cuts may differ only by id order).
    again = ok(graph.execute_kip(EVERYTHING))
    once = ok(graph.execute_kip_readonly(EVERYTHING))
    assert again == once and again["concepts"] == len(before["concepts"])
    # Applying the capsule again is idempotent.
    ok(graph.execute_kip(again["capsule"]))
    assert snapshot(graph) == before


def test_export_empty_and_limits(graph):
    assert ok(graph.execute_kip('EXPORT ?n WHERE { ?n {type: "Drug", name: "Nope"} }')) == {"capsule": "", "concepts": 0, "propositions": 0}
    assert graph.execute_kip('EXPORT ?n WHERE { ?n {type: "Drug"} } LIMIT 100000')["error"]["code"] == "KIP_4002"
    assert graph.execute_kip('EXPORT ?x WHERE { ?n {type: "Drug"} }')["error"]["code"] == "KIP_3001"
    assert graph.execute_kip("EXPORT ?p WHERE { (?s, ?p, ?o) }")["error"]["code"] == "KIP_1001"
    undefined = graph.execute_kip('EXPORT ?d WHERE { ?d {type: "drug"} }')["error"]
    assert undefined["code"] == "KIP_2001" and '"Drug"' in undefined["hint"]
    assert graph.execute_kip('EXPORT ?l WHERE { ?l (?s, "treat", ?o) }')["error"]["code"] == "KIP_2001"


def test_export_with_filter_and_placeholders(graph):
    result = ok(graph.execute_kip("EXPORT ?d WHERE { ?d {type: :t} FILTER(?d.attributes.risk_level >= :r) }", parameters={"t": "Drug", "r": 3}))
    assert result["concepts"] == 1 and '"Ibuprofen"' in result["capsule"]


def test_round_trip_of_the_bootstrapped_standard_capsules(nexus):
    nexus.settings = nexus.settings.replace(embedder=False)
    nexus.bootstrap(capsules=True)
    load(nexus, MEDICAL)
    types = ok(nexus.execute_kip("DESCRIBE CONCEPT TYPES"))
    union = " ".join(f'UNION {{ ?n {{type: "{t}"}} }}' for t in types)
    command = f"EXPORT ?n WHERE {{ ?n (?s, ?p, ?o) {union} }}"
    before = snapshot(nexus)
    pages = export_pages(nexus, command, 40)
    assert sum(p["concepts"] for p in pages) == len(before["concepts"])
    wipe(nexus.driver, nexus.database)
    for page in pages:
        ok(nexus.execute_kip(page["capsule"]))
    assert snapshot(nexus) == before
    identity = ok(nexus.execute_kip("DESCRIBE PRIMER"))["identity"]
    assert identity["exists"] is True and identity["summary"].startswith("I am newly awakened")  # the official self.kip's identity_narrative


def test_spec_example_export_a_domain(graph):
    result = ok(graph.execute_kip_readonly('EXPORT ?n WHERE { (?n, "belongs_to_domain", {type: "Domain", name: "Medical"}) } LIMIT 500'))
    assert result["concepts"] == 6 and result["propositions"] == 0
    blocks = parse(result["capsule"]).upserts[0].blocks
    assert [(b.identity.type.value, b.identity.name.value) for b in blocks] == [
        ("Drug", "Aspirin"),
        ("Drug", "Aspirin Complex"),
        ("Drug", "Ibuprofen"),
        ("Symptom", "Fever"),
        ("Symptom", "Headache"),
        ("Symptom", "Nausea"),
    ]

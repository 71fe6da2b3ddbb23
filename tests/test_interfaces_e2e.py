"""§6 end to end: the real parser, compiler and Neo4j behind execute_kip / execute_kip_readonly."""

from __future__ import annotations

import pytest
from interface_helpers import fingerprint, shape_checked

from kip2cypher.cli.demo import DEMO_DATA, DEMO_SCHEMA
from kip2cypher.config import Settings
from kip2cypher.nexus import Nexus


@pytest.fixture(autouse=True)
def _responses_have_the_spec_shape(monkeypatch):
    shape_checked(monkeypatch)


@pytest.fixture()
def medical(genesis):
    for capsule in (DEMO_SCHEMA, DEMO_DATA):
        response = genesis.execute_kip(capsule)
        assert "result" in response, response
    return genesis


def _names(nexus, type_):
    return {r["n"] for r in nexus.driver.execute_query("MATCH (c:KipConcept {type: $t}) RETURN c.name AS n", {"t": type_}, database_=nexus.database).records}


def test_spec_6_2_3_batch_syntax_error_failing_find_failing_upsert(medical):
    response = medical.execute_kip(
        commands=[
            "DESCRIBE PRIMER",
            'FIND(?d.name WHERE { ?d {type: "Drug"} }',  # syntax error → inline, continue
            'FIND(?d.name) WHERE { ?d {type: "drug"} }',  # failing FIND (KIP_2001) → inline, continue
            {"command": 'FIND(?d.name) WHERE { ?d {type: "Drug", name: :n} }', "parameters": {"n": "Aspirin"}},
            'UPSERT { CONCEPT ?x { {type: "Drugg", name: "Ibuprofen"} } }',  # failing UPSERT (KIP_2001) → stop
            'UPSERT { CONCEPT ?x { {type: "Drug", name: "NeverWritten"} } }',  # not executed
            'FIND(?d.name) WHERE { ?d {type: "Drug"} }',  # not executed
        ]
    )
    assert set(response) == {"result"}
    items = response["result"]
    assert len(items) == 5
    assert "identity" in items[0]["result"]
    assert items[1]["error"]["code"] == "KIP_1001" and (items[1]["error"]["line"], items[1]["error"]["column"]) == (1, 14)
    assert items[2]["error"]["code"] == "KIP_2001" and "Drug" in items[2]["error"]["hint"]
    assert items[3] == {"result": ["Aspirin"]}
    assert items[4]["error"]["code"] == "KIP_2001" and 'Did you mean "Drug"' in items[4]["error"]["hint"]
    assert "NeverWritten" not in _names(medical, "Drug")
    assert all(set(item) <= {"result", "error", "next_cursor"} for item in items)


def test_spec_6_1_examples(medical):
    response = medical.execute_kip_readonly(
        'FIND(?drug.name) WHERE { ?symptom {name: :symptom_name} (?drug, "treats", ?symptom) } LIMIT :limit',
        parameters={"symptom_name": "Headache", "limit": 10},
    )
    assert sorted(response["result"]) == ["Aspirin", "Paracetamol"]
    medical.execute_kip('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Event"} SET ATTRIBUTES { description: "An event." } } }')
    response = medical.execute_kip(
        commands=[
            "DESCRIBE PRIMER",
            'FIND(?t.name) WHERE { ?t {type: "$ConceptType"} } LIMIT 50',
            {"command": 'UPSERT { CONCEPT ?e { {type:"Event", name: :name} } }', "parameters": {"name": "MyEvent"}},
        ],
        parameters={"limit": 10},
    )
    items = response["result"]
    assert len(items) == 3 and all("result" in i for i in items)
    assert "Drug" in items[1]["result"]
    assert len(items[2]["result"]["upsert_concept_nodes"]) == 1
    assert "MyEvent" in _names(medical, "Event")


def test_next_cursor_is_carried_per_batch_item_and_pages_through(medical):
    first = medical.execute_kip_readonly(commands=['FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name LIMIT 1'])["result"][0]
    assert first["result"] == ["Aspirin"] and first["next_cursor"]
    second = medical.execute_kip_readonly(
        'FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name LIMIT 1 CURSOR :c', parameters={"c": first["next_cursor"]}
    )
    assert second == {"result": ["Paracetamol"]}


def test_readonly_runs_every_read_command(medical):
    response = medical.execute_kip_readonly(
        commands=[
            "DESCRIBE PRIMER",
            "DESCRIBE DOMAINS",
            "DESCRIBE CONCEPT TYPES",
            'DESCRIBE CONCEPT TYPE "Drug"',
            "DESCRIBE PROPOSITION TYPES",
            'SEARCH CONCEPT "aspirin" LIMIT 3',
            'FIND(?d.name, ?d.attributes.risk_level) WHERE { ?d {type: "Drug"} }',
            'EXPORT ?d WHERE { ?d {type: "Drug"} } LIMIT 10',
        ]
    )
    assert all("result" in item for item in response["result"]), response
    assert "UPSERT" in response["result"][-1]["result"]["capsule"]


def test_readonly_fingerprint_unchanged_with_data_loaded(medical):
    import parser_fixtures

    from kip2cypher.syntax import ast
    from kip2cypher.syntax.parser import parse

    kml = [e.text for e in parser_fixtures.valid() if ast.command_kind(parse(e.text)) == "KML"]
    kml += [DEMO_DATA, 'DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug"} }', 'UPDATE ?d SET ATTRIBUTES { risk_level: 9 } WHERE { ?d {type: "Drug"} }']
    before = fingerprint(medical.driver)
    for text in kml:
        assert medical.execute_kip_readonly(text)["error"]["code"] == "KIP_3004"
    assert fingerprint(medical.driver) == before


def test_dry_run_validates_against_the_live_schema_and_writes_nothing(medical):
    before = fingerprint(medical.driver)
    ok = medical.execute_kip('UPSERT { CONCEPT ?x { {type: "Drug", name: "Ibuprofen"} SET ATTRIBUTES { risk_level: 2 } } }', dry_run=True)
    assert ok == {"result": {"blocks": 1, "upsert_concept_nodes": [], "upsert_proposition_links": []}}
    undefined = medical.execute_kip('UPSERT { CONCEPT ?x { {type: "Drugg", name: "Ibuprofen"} } }', dry_run=True)
    assert undefined["error"]["code"] == "KIP_2001"
    protected = medical.execute_kip('DELETE CONCEPT ?t DETACH WHERE { ?t {type: "$ConceptType", name: "$ConceptType"} }', dry_run=True)
    assert protected["error"]["code"] == "KIP_3004"
    batch = medical.execute_kip(commands=['DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug"} }', 'FIND(?d.name) WHERE { ?d {type: "Drug"} }'], dry_run=True)
    assert len(batch["result"]) == 2 and all("result" in item for item in batch["result"])
    assert batch["result"][1]["result"]["dry_run"] is True  # the FIND is a dry run too: its Cypher, not its rows
    assert sorted(medical.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} }')["result"]) == ["Aspirin", "Paracetamol"]
    assert fingerprint(medical.driver) == before


def test_dry_run_of_find_checks_types_and_predicates(medical):
    assert medical.execute_kip('FIND(?d.name) WHERE { ?d {type: "drug"} }', dry_run=True)["error"]["code"] == "KIP_2001"
    optional = medical.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} OPTIONAL { (?d, "treat", ?s) } }', dry_run=True)
    assert optional["error"]["code"] == "KIP_2001" and "treats" in optional["error"]["hint"]
    ok = medical.execute_kip_readonly('FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) }', dry_run=True)
    assert ok["result"]["dry_run"] is True and ok["result"]["statements"][0].startswith("MATCH")


def test_pathological_find_times_out_with_kip_4001(neo4j_server, medical):
    nodes = " ".join(f'CONCEPT ?n{i} {{ {{type: "Symptom", name: "s{i}"}} }}' for i in range(25))
    assert "result" in medical.execute_kip(f"UPSERT {{ {nodes} }}")
    cartesian = "FIND(COUNT(?f)) WHERE { " + " ".join(f'?{v} {{type: "Symptom"}}' for v in "abcdef") + " }"
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(query_timeout_s=1)) as nx:
        response = nx.execute_kip_readonly(cartesian)
    assert response["error"]["code"] == "KIP_4001"


def test_result_cap_with_a_real_find_asks_for_limit_and_cursor(neo4j_server, medical):
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(max_result_rows=3)) as nx:
        capped = nx.execute_kip_readonly('FIND(?c.name) WHERE { ?c {type: "$ConceptType"} }')
        paged = nx.execute_kip_readonly('FIND(?c.name) WHERE { ?c {type: "$ConceptType"} } LIMIT 2')
    assert capped["error"]["code"] == "KIP_4002" and "CURSOR" in capped["error"]["hint"]
    assert len(paged["result"]) == 2 and paged["next_cursor"]


def test_explain_returns_a_plan_per_statement(medical):
    explained = medical.explain('FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", {name: :s}) }', {"s": "Headache"})
    assert explained and all(e["plan"].startswith("+ProduceResults") for e in explained)
    assert "MATCH" in explained[0]["cypher"]


def test_dry_run_of_every_read_example_compiles_in_neo4j_and_writes_nothing(medical):
    """Every KQL/META fixture: a dry run has Neo4j EXPLAIN its Cypher (or runs the plan's own check)."""
    import parser_fixtures

    from kip2cypher.syntax import ast
    from kip2cypher.syntax.parser import parse

    reads = [e for e in parser_fixtures.valid() if ast.command_kind(parse(e.text)) != "KML"]
    assert len(reads) > 40
    before = fingerprint(medical.driver)
    internal = []
    for entry in reads:
        response = medical.execute_kip_readonly(entry.text, dry_run=True)
        if response.get("error", {}).get("code") == "KIP_4003":
            internal.append((entry.name, response["error"]))
    assert not internal, internal
    assert fingerprint(medical.driver) == before

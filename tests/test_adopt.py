"""Adoption (docs/adopt.md): KIP reads a team's own graph, on a real Neo4j, and never changes it.

The test builds a realistic foreign graph — several labels, a label that differs from its type
name, relationship types with properties, nodes without the name property, duplicate names, a
relationship of an adopted type between labels the mapping does not pair, a date property —
next to KIP memory in the default namespace and a namespace whose memory has a concept type
spelled like a team label. It adopts the graph and queries it through FIND (concept clauses,
ids, links, ``?link`` variables, FILTER, ORDER BY, aggregation, OPTIONAL, NOT, UNION, paths,
a query joining memory and adopted concepts) and DESCRIBE. A fingerprint of every non-KIP node
and relationship (and every relationship touching one) proves KIP never changed the team's
graph: after every write it refuses and after hostile mapping files.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from click.testing import CliRunner

from kip2cypher import adoption
from kip2cypher.config import Settings
from kip2cypher.cypher import storage
from kip2cypher.cypher.builder import quote
from kip2cypher.errors import KipError
from kip2cypher.lower.compile import compile_command

MAPPING = """
[types.Drug]
label = "Drug"
attributes = ["risk", "approved"]
key = "drug_id"
text = ["name", "summary"]
description = "A medicine the pharmacy team sells."

[types.Disease]
label = "Disease"
attributes = { icd = "icd10" }

[types.Employee]
label = "Person"
name = "fullName"
attributes = ["role", "hired"]

[predicates.treats]
type = "TREATS"
subject = "Drug"
object = "Disease"
attributes = ["evidence"]

[predicates.reports_to]
type = "REPORTS_TO"
subject = "Employee"
object = "Employee"

[predicates.contraindicated]
type = "CONTRAINDICATED"
subject = "Drug"
object = "Disease"
"""

TEAM_GRAPH = """
CREATE (a:Drug {drug_id: 'D1', name: 'Aspirin', risk: 2, approved: true, summary: 'Relieves pain and fever', internal: 'secret'}),
       (b:Drug {drug_id: 'D2', name: 'Aspirin', risk: 5}),
       (c:Drug {drug_id: 3, risk: 1}),
       (h:Disease {name: 'Headache', icd10: 'R51'}),
       (f:Disease {name: 'Fever'}),
       (a)-[:TREATS {evidence: 'A'}]->(h),
       (b)-[:TREATS]->(f),
       (c)-[:TREATS {evidence: 'C'}]->(h),
       (ann:Person {fullName: 'Ann', role: 'CEO', hired: date('2020-01-02')}),
       (bob:Person {fullName: 'Bob', role: 'CTO'}),
       (cy:Person {fullName: 'Cy'}),
       (bob)-[:REPORTS_TO {since: 2021}]->(ann),
       (cy)-[:REPORTS_TO]->(bob),
       (a)-[:TREATS]->(cy),
       (b)-[:CONTRAINDICATED]->(h),
       (:Supplier {name: 'Acme'})-[:SUPPLIES]->(a)
"""

NOTE_SCHEMA = """
UPSERT {
  CONCEPT ?t { {type: "$ConceptType", name: "Note"} SET ATTRIBUTES { description: "A note of the agent." } }
  CONCEPT ?n { {type: "Note", name: "pharmacy note"} SET ATTRIBUTES { drug_name: "Aspirin" } }
}
"""

#: A memory of another namespace whose concept type is spelled like the team's label "Drug":
#: its concepts carry the label Drug too, and must never be read as adopted drugs.
OTHER_MEMORY = """
UPSERT {
  CONCEPT ?t { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "memory drugs" } }
  CONCEPT ?d { {type: "Drug", name: "Memoryzine"} }
}
"""


def team_fingerprint(driver, database=None) -> dict:
    """Every node without an engine label (labels, properties, element id) and every relationship
    touching one (type, properties, endpoints), hashed: what KIP must never change."""
    engine = "any(l IN labels(n) WHERE any(s IN $stems WHERE l = s OR l STARTS WITH s + '__'))"
    stems = list(storage.RESERVED_LABEL_STEMS)
    nodes = driver.execute_query(
        f"MATCH (n) WHERE NOT {engine} RETURN elementId(n) AS e, labels(n) AS l, properties(n) AS p", stems=stems, database_=database
    ).records
    rels = driver.execute_query(
        f"MATCH (a)-[r]->(b) WHERE NOT {engine.replace('(n)', '(a)')} OR NOT {engine.replace('(n)', '(b)')} "
        "RETURN elementId(a) AS a, type(r) AS t, properties(r) AS p, elementId(b) AS b, elementId(r) AS r",
        stems=stems,
        database_=database,
    ).records
    items = sorted(json.dumps([r["e"], sorted(r["l"]), {k: str(v) for k, v in dict(r["p"]).items()}], sort_keys=True) for r in nodes)
    items += ["--"] + sorted(json.dumps([r["a"], r["t"], {k: str(v) for k, v in dict(r["p"]).items()}, r["b"], r["r"]], sort_keys=True) for r in rels)
    return {"nodes": len(nodes), "relationships": len(rels), "sha256": hashlib.sha256("\n".join(items).encode()).hexdigest()}


def _wipe(driver, database=None) -> None:
    while driver.execute_query("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c", database_=database).records[0]["c"]:
        pass


def _open(neo4j_server, namespace=None):
    from kip2cypher.nexus import Nexus

    return Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, namespace=namespace)


def ok(response):
    assert "error" not in response, response
    return response["result"]


def code(response):
    assert "error" in response, response
    return response["error"]["code"]


class World:
    def __init__(self, nexus, other) -> None:
        self.nexus, self.other = nexus, other
        self.driver, self.database = nexus.driver, nexus.database
        self.team = team_fingerprint(self.driver, self.database)

    def find(self, command, **params):
        return ok(self.nexus.execute_kip(command, parameters=params or None))

    def assert_team_unchanged(self):
        assert team_fingerprint(self.driver, self.database) == self.team


@pytest.fixture(scope="module")
def world(neo4j_server):
    nexus, other = _open(neo4j_server), _open(neo4j_server, "other")
    _wipe(nexus.driver, nexus.database)
    nexus.driver.execute_query(TEAM_GRAPH, database_=nexus.database)
    nexus.bootstrap()
    ok(nexus.execute_kip(NOTE_SCHEMA))
    other.bootstrap()
    ok(other.execute_kip(OTHER_MEMORY))
    w = World(nexus, other)
    report = nexus.adopt(adoption.parse(MAPPING), create_index=True)
    assert report["mapping"] == "stored"
    w.assert_team_unchanged()
    yield w
    nexus.close()
    other.close()


# ---------------------------------------------------------------- the mapping file (offline)
@pytest.mark.parametrize(
    "text, code_, words",
    [
        ('[types.Drug]\nlabel = "Drug"\ncolour = 1\n', "KIP_1001", ["types.Drug.colour", "line 3", "label, name, attributes"]),
        ('[types.Drug]\nname = "n"\n', "KIP_1001", ["types.Drug.label", "required"]),
        ('[types.Drug]\nlabel = "KipConcept"\n', "KIP_3004", ["types.Drug.label", "engine"]),
        ('[types.Drug]\nlabel = "KipProposition__alice"\n', "KIP_3004", ["engine"]),
        (
            '[types.Drug]\nlabel = "Drug"\n[predicates.x]\ntype = "KIP_SUBJECT"\nsubject = "Drug"\nobject = "Drug"\n',
            "KIP_3004",
            ["predicates.x.type", "line 4"],
        ),
        (
            '[types.Drug]\nlabel = "Drug"\n[predicates.treats]\ntype = "T"\nsubject = "Durg"\nobject = "Drug"\n',
            "KIP_2001",
            ["predicates.treats.subject", "Did you mean 'Drug'"],
        ),
        ('[types."Bad Name"]\nlabel = "X"\n', "KIP_1002", ["not a valid concept type name", "'Bad_Name'"]),
        ('[types.Drug]\nlabel = "Drug"\nattributes = ["a-b"]\n', "KIP_1002", ["attribute key", "line 3"]),
        ('[types.Drug]\nlabel = "Drug"\n[predicates.Drug]\ntype = "T"\nsubject = "Drug"\nobject = "Drug"\n', "KIP_2002", ["both a type and a predicate"]),
        ('[types.Domain]\nlabel = "Dom"\n', "KIP_3004", ["Genesis"]),
        ('[types.A]\nlabel = "X"\n[types.B]\nlabel = "X"\n', "KIP_2002", ["already mapped"]),
        (
            '[types.A]\nlabel = "X"\n[predicates.p]\ntype = "T"\nsubject = "A"\nobject = "A"\n[predicates.q]\ntype = "T"\nsubject = "A"\nobject = "A"\n',
            "KIP_2002",
            ["predicates.q", "same relationships as predicate 'p'"],
        ),
        ("types = [", "KIP_1001", ["not valid TOML"]),
        ("[types.Drug]\nlabel = 5\n", "KIP_1001", ["types.Drug.label", "line 2", 'label = "…"']),
        ('[types.Drug]\nlabel = "D"\nattributes = ["a", 3]\n', "KIP_1001", ["types.Drug.attributes", "line 3", 'attributes = ["risk"']),
        ('[types.Drug]\nlabel = "D"\n[options]\nlink_memory = "yes"\n', "KIP_1001", ["options.link_memory", "link_memory = true or"]),
        (
            '[types.Drug]\nlabel = "D"\n[predicates.t]\ntype = "T"\nsubject = "Drug"\n',
            "KIP_1001",
            ["predicates.t.object", "required", 'Add object = "…" to the [predicates.t] table'],
        ),
        ("colour = 1\n", "KIP_1001", ["key colour (line 1)", "types, predicates, options"]),
        ("", "KIP_2002", ["adopts no type"]),
    ],
)
def test_every_mapping_mistake_names_key_line_and_fix(text, code_, words):
    with pytest.raises(KipError) as err:
        adoption.parse(text, "mapping.toml")
    assert err.value.code == code_, err.value.to_dict()
    for word in words:
        assert word in err.value.message + err.value.hint, err.value.to_dict()


def test_the_stored_form_round_trips():
    chosen = adoption.parse(MAPPING)
    assert adoption.Adoption.from_json(chosen.to_json()) == chosen
    assert chosen.type("Employee").label == "Person" and chosen.predicate("treats").property_of("evidence") == "evidence"


def test_values_and_ids_json_lacks_are_converted_never_wrong():
    assert adoption.jsonable([float("nan"), float("-inf"), 1.5, {"k": (1, 2)}]) == ["NaN", "-Infinity", 1.5, {"k": [1, 2]}]
    assert adoption.key_candidates("42") == ["42", 42] and adoption.key_candidates("007") == ["007"]
    assert adoption.key_candidates("9999999999999999999") == ["9999999999999999999"]  # beyond int64: text only
    assert adoption.split_id("A:treats:@4:abc:7") == ("treats", "@4:abc:7") and adoption.split_id("C:123") is None


def test_without_adoption_the_compiled_cypher_is_unchanged():
    command = 'FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?x) }'
    plain = compile_command(command, {}, Settings())
    assert plain[0]["cypher"].startswith("MATCH (d:`kip:Drug`)\nMATCH (d)-[:`kip:treats`]->(x)\n")
    adopted = compile_command(command, {}, Settings(adoption=adoption.parse(MAPPING)))
    assert "(d:`Drug`" in adopted[0]["cypher"] and "-[_r0:`TREATS`]->" in adopted[0]["cypher"]


def test_compile_offline_with_a_mapping(tmp_path):
    from kip2cypher.cli import main

    path = tmp_path / "mapping.toml"
    path.write_text(MAPPING, encoding="utf-8")
    out = CliRunner().invoke(main, ["compile", 'FIND(?d) WHERE { ?d {type: "Drug"} }', "--mapping", str(path)], catch_exceptions=False)
    assert out.exit_code == 0 and "MATCH (d:`Drug`)\n" in out.output
    assert "(d:`kip:Drug`)" in CliRunner().invoke(main, ["compile", 'FIND(?d) WHERE { ?d {type: "Drug"} }'], catch_exceptions=False).output


def test_hostile_names_are_quoted_never_cypher():
    hostile = adoption.parse('[types.Odd]\nlabel = "Odd`) DETACH DELETE n //"\nname = "na\\\\u0060me"\nattributes = { k = "x` RETURN 1 //" }\n')
    cypher = compile_command('FIND(?o, ?o.attributes.k) WHERE { ?o {type: "Odd", name: "v"} }', {}, Settings(adoption=hostile))[0]["cypher"]
    assert quote("Odd`) DETACH DELETE n //") in cypher and quote("na\\u0060me") in cypher and quote("x` RETURN 1 //") in cypher
    assert "DETACH DELETE n //`" in cypher.replace("``", "")  # only inside a quoted identifier


# ---------------------------------------------------------------- adopt and DESCRIBE
def test_describe_shows_adopted_types_and_predicates(world):
    drug = world.find('DESCRIBE CONCEPT TYPE "Drug"')
    assert drug["metadata"]["adopted"] is True
    assert drug["attributes"]["description"] == "A medicine the pharmacy team sells."
    assert set(drug["attributes"]["instance_schema"]) == {"risk", "approved"}
    treats = world.find('DESCRIBE PROPOSITION TYPE "treats"')
    assert treats["attributes"]["subject_types"] == ["Drug"] and treats["attributes"]["object_types"] == ["Disease"]
    domains = {d["name"]: d for d in world.find("DESCRIBE DOMAINS")}
    assert domains["Adopted"]["member_count"] == 6
    assert {"Drug", "Disease", "Employee"} <= set(json.dumps(world.find("DESCRIBE CONCEPT TYPES")).replace('"', " ").split())


def test_adopt_is_idempotent(world):
    before = world.find('FIND(?t.id) WHERE { ?t {type: "$ConceptType"} }')
    report = world.nexus.adopt(adoption.parse(MAPPING), create_index=True)
    assert report["mapping"] == "unchanged" and report["text_index"]["state"] == "present"
    assert sorted(world.find('FIND(?t.id) WHERE { ?t {type: "$ConceptType"} }')) == sorted(before)
    world.assert_team_unchanged()


def test_dry_run_counts_what_the_mapping_exposes_and_writes_nothing(world, neo4j_server):
    from hostile_payloads import fingerprint

    fresh = _open(neo4j_server, "survey")
    world.nexus.wait_for_embeddings()  # earlier tests' writes: their background embedding refresh
    everything = fingerprint(world.driver, world.database)
    report = fresh.adopt(adoption.parse(MAPPING), dry_run=True)
    assert fingerprint(world.driver, world.database) == everything
    types = {t["type"]: t for t in report["types"]}
    assert types["Drug"] == {"type": "Drug", "label": "Drug", "nodes": 3, "without_name": 1}
    assert types["Employee"]["nodes"] == 3
    treats = next(p for p in report["predicates"] if p["predicate"] == "treats")
    assert treats["relationships"] == 3 and treats["not_exposed"] == 1  # (Drug)-[:TREATS]->(Person)
    assert report["mapping"] == "would be stored"
    fresh.close()


# ---------------------------------------------------------------- FIND
def test_find_an_adopted_type_returns_kip_objects_with_stable_ids(world):
    drugs = world.find('FIND(?d) WHERE { ?d {type: "Drug"} } ORDER BY ?d.attributes.risk')
    assert [d["id"] for d in drugs] == ["A:Drug:3", "A:Drug:D1", "A:Drug:D2"]
    first = drugs[1]
    assert first == {
        "id": "A:Drug:D1",
        "type": "Drug",
        "name": "Aspirin",
        "attributes": {"approved": True, "risk": 2},
        "metadata": {"adopted": True, "label": "Drug"},
    }  # unmapped properties (internal, summary) stay hidden
    assert drugs[0]["name"] is None  # a node without the name property


def test_a_memory_concept_labelled_like_a_team_label_is_not_adopted(world):
    names = world.find('FIND(?d.name) WHERE { ?d {type: "Drug"} }')
    assert "Memoryzine" not in names and sorted(n for n in names if n) == ["Aspirin", "Aspirin"]
    assert ok(world.other.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} }')) == ["Memoryzine"]


def test_duplicate_names_are_distinct_concepts(world):
    ids = world.find('FIND(?d.id) WHERE { ?d {type: "Drug", name: "Aspirin"} } ORDER BY ?d.id')
    assert ids == ["A:Drug:D1", "A:Drug:D2"]


def test_lookup_by_adopted_id_key_integer_key_and_element_id(world):
    assert world.find('FIND(?d.attributes.risk) WHERE { ?d {id: "A:Drug:D2"} }') == [5]
    assert world.find("FIND(?d.attributes.risk) WHERE { ?d {id: :id} }", id="A:Drug:3") == [1]
    ann = world.find('FIND(?e) WHERE { ?e {type: "Employee", name: "Ann"} }')[0]
    assert ann["id"].startswith("A:Employee:@") and ann["attributes"] == {"hired": "2020-01-02", "role": "CEO"}
    assert world.find("FIND(?e.name) WHERE { ?e {id: :id} }", id=ann["id"]) == ["Ann"]
    assert world.find('FIND(?d.name) WHERE { ?d {id: "A:Drug:nope"} }') == []


def test_links_of_an_adopted_predicate(world):
    rows = world.find('FIND(?d.id, ?l, ?x.name) WHERE { ?l (?d, "treats", ?x) } ORDER BY ?d.id')
    ids, links, diseases = rows
    assert ids == ["A:Drug:3", "A:Drug:D1", "A:Drug:D2"] and diseases == ["Headache", "Headache", "Fever"]
    assert [l["subject"] for l in links] == ids
    assert links[1]["predicate"] == "treats" and links[1]["attributes"] == {"evidence": "A"}
    assert links[1]["metadata"] == {"adopted": True, "relationship_type": "TREATS"}
    headache = world.find('FIND(?x.id) WHERE { ?x {type: "Disease", name: "Headache"} }')[0]
    assert links[1]["object"] == headache
    again = world.find("FIND(?l.subject) WHERE { ?l (id: :id) }", id=links[1]["id"])
    assert again == ["A:Drug:D1"]


def test_filter_order_and_aggregation_read_the_mapped_properties(world):
    assert world.find('FIND(?d.id) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.risk >= 2 && ?d.attributes.approved == true) }') == ["A:Drug:D1"]
    assert world.find('FIND(?x.attributes.icd) WHERE { ?x {type: "Disease"} FILTER(STARTS_WITH(?x.name, "Head")) }') == ["R51"]
    assert world.find('FIND(?d.name, ?d.attributes.risk) WHERE { ?d {type: "Drug"} } ORDER BY ?d.attributes.risk DESC LIMIT 1') == [["Aspirin"], [5]]
    assert world.find('FIND(COUNT(?d), SUM(?d.attributes.risk), MAX(?d.attributes.risk)) WHERE { ?d {type: "Drug"} }') == [3, 8, 5]
    counts = world.find('FIND(?x.name, COUNT(?d)) WHERE { ?x {type: "Disease"} (?d, "treats", ?x) } ORDER BY COUNT(?d) DESC')
    assert counts == [["Headache", "Fever"], [2, 1]]
    assert world.find('FIND(MAX(?e.attributes.hired)) WHERE { ?e {type: "Employee"} }') == "2020-01-02"
    assert world.find('FIND(?d.attributes.internal) WHERE { ?d {id: "A:Drug:D1"} }') == [None]  # not mapped: not exposed


def test_optional_not_and_union_over_adopted_data(world):
    rows = world.find(
        'FIND(?d.id, ?l.attributes.evidence) WHERE { ?d {type: "Drug"} OPTIONAL { ?l (?d, "treats", ?x) FILTER(?x.name == "Headache") } } ORDER BY ?d.id'
    )
    assert rows == [["A:Drug:3", "A:Drug:D1", "A:Drug:D2"], ["C", "A", None]]
    assert world.find('FIND(?d.id) WHERE { ?d {type: "Drug"} NOT { (?d, "treats", {type: "Disease", name: "Fever"}) } } ORDER BY ?d.id') == [
        "A:Drug:3",
        "A:Drug:D1",
    ]
    both = world.find('FIND(?x.name) WHERE { ?x {type: "Disease", name: "Fever"} UNION { ?x {type: "Disease", name: "Headache"} } }')
    assert sorted(both) == ["Fever", "Headache"]


def test_paths_over_an_adopted_predicate(world):
    assert sorted(world.find('FIND(?b.name) WHERE { ?a {type: "Employee", name: "Cy"} (?a, "reports_to"{1,3}, ?b) }')) == ["Ann", "Bob"]
    assert world.find('FIND(?b.name) WHERE { ?a {type: "Employee", name: "Cy"} (?a, "reports_to"{2,2}, ?b) }') == ["Ann"]
    chains = world.find('FIND(?a.name, COUNT(?b)) WHERE { ?a {type: "Employee"} (?a, "reports_to"{0,}, ?b) } ORDER BY ?a.name')
    assert chains == [["Ann", "Bob", "Cy"], [1, 2, 3]]
    response = world.nexus.execute_kip('FIND(?x) WHERE { ?d {type: "Drug"} (?d, "treats"{1,2}, ?x) }')
    assert code(response) == "KIP_1001" and "cannot chain" in response["error"]["message"]


def test_predicate_variables_range_over_adopted_predicates_from_an_adopted_endpoint(world):
    rows = world.find('FIND(?d.id, ?p, ?o.name) WHERE { ?d {type: "Drug", name: "Aspirin"} (?d, ?p, ?o) }')
    assert sorted(zip(*rows)) == [("A:Drug:D1", "treats", "Headache"), ("A:Drug:D2", "contraindicated", "Headache"), ("A:Drug:D2", "treats", "Fever")]
    # (not the TREATS to a Person: not a proposition)
    assert world.find('FIND(?p, ?s.name) WHERE { (?s, ?p, {type: "Employee", name: "Ann"}) }') == [["reports_to"], ["Bob"]]
    assert world.find('FIND(?p) WHERE { ?d {type: "Drug"} (?d, ?p, {type: "Employee", name: "Cy"}) }') == []
    response = world.nexus.execute_kip("FIND(?p) WHERE { (?s, ?p, ?o) }")
    assert "treats" not in response["result"] and "ranges over memory predicates only" in response["warnings"][0]


def test_async_nexus_reads_adopted_data(world, neo4j_server):
    import anyio

    from kip2cypher import connect_async

    async def read():
        async with connect_async(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database) as nexus:
            found = await nexus.execute_kip('FIND(?d.id) WHERE { ?d {type: "Drug", name: "Aspirin"} } ORDER BY ?d.id')
            refused = await nexus.execute_kip('UPDATE ?d SET ATTRIBUTES { risk: 0 } WHERE { ?d {type: "Drug"} }')
            return found, refused

    found, refused = anyio.run(read)
    assert ok(found) == ["A:Drug:D1", "A:Drug:D2"] and code(refused) == "KIP_3004"
    world.assert_team_unchanged()


def test_explain_compiles_with_the_stored_mapping(world):
    explained = world.nexus.explain('FIND(?d.name) WHERE { ?d {type: "Drug"} }')
    assert "MATCH (d:`Drug`)\n" in explained[0]["cypher"] and "NodeByLabelScan" in explained[0]["plan"]


def test_an_untyped_concept_clause_reads_memory_and_says_so(world):
    response = world.nexus.execute_kip('FIND(?x.name) WHERE { ?x {name: "Aspirin"} }')
    assert response["result"] == [] and "without a type matches memory concepts only" in response["warnings"][0]
    assert "warnings" not in world.nexus.execute_kip('FIND(?x.name) WHERE { ?x {type: "Drug", name: "Aspirin"} }')


def test_alternatives_of_adopted_predicates(world):
    rows = world.find('FIND(?d.id, ?x.name) WHERE { (?d, "treats" | "contraindicated", ?x) }')
    assert sorted(zip(*rows)) == [("A:Drug:3", "Headache"), ("A:Drug:D1", "Headache"), ("A:Drug:D2", "Fever"), ("A:Drug:D2", "Headache")]
    for command in (
        'FIND(?x) WHERE { (?d, "treats" | "reports_to", ?x) }',
        'FIND(?x) WHERE { ?l (?d, "treats" | "contraindicated", ?x) }',
        'FIND(?x) WHERE { (?d, "treats" | "belongs_to_domain", ?x) }',
    ):
        response = world.nexus.execute_kip(command)
        assert code(response) == "KIP_1001" and "not supported over adopted predicates" in response["error"]["message"], response


def test_memory_and_adopted_concepts_in_one_query(world):
    rows = world.find('FIND(?n.name, ?d.id) WHERE { ?n {type: "Note"} ?d {type: "Drug"} FILTER(?d.name == ?n.attributes.drug_name) } ORDER BY ?d.id')
    assert rows == [["pharmacy note", "pharmacy note"], ["A:Drug:D1", "A:Drug:D2"]]


def test_export_of_unidentifiable_adopted_data_is_refused_and_memory_exports(world):
    """Duplicate and missing drug names cannot be written as {type, name} (tests/test_adopt_search.py exports the rest)."""
    response = world.nexus.execute_kip('EXPORT ?d WHERE { ?d {type: "Drug"} }')
    assert code(response) == "KIP_2002" and "{type, name}" in response["error"]["message"]
    capsule = world.find('EXPORT ?n WHERE { ?n {type: "Note"} }')["capsule"]
    assert "pharmacy note" in capsule and "A:Drug" not in capsule


def test_grounding_errors_still_name_undefined_types(world):
    response = world.nexus.execute_kip('FIND(?d) WHERE { ?d {type: "Drugg"} }')
    assert code(response) == "KIP_2001" and "Drug" in response["error"]["message"] + response["error"]["hint"]


def test_keyword_search_finds_adopted_concepts(world):
    hits = world.find('SEARCH CONCEPT "aspirin" MODE "keyword" LIMIT 5')
    # The two Aspirins score alike; between equal scores the full-text index's order decides,
    # which Lucene does not fix (a full run saw D2 first): both lead, each with the whole object.
    top = {h["id"]: h for h in hits[:2]}
    assert sorted(top) == ["A:Drug:D1", "A:Drug:D2"]
    assert all(h["metadata"]["_score"] == 1.0 and h["metadata"]["adopted"] is True for h in top.values())
    assert top["A:Drug:D1"]["attributes"] == {"approved": True, "risk": 2}
    assert [h["id"] for h in world.find('SEARCH CONCEPT "relieves pain" WITH TYPE "Drug" MODE "keyword"')] == ["A:Drug:D1"]  # the summary text property
    assert [h["name"] for h in world.find('SEARCH CONCEPT "Ann" WITH TYPE "Employee" MODE "keyword"')] == ["Ann"]
    assert all(not h["id"].startswith("A:") for h in world.find('SEARCH CONCEPT "aspirin" WITH TYPE "Note" MODE "keyword"'))
    assert "Memoryzine" not in json.dumps(world.find('SEARCH CONCEPT "memoryzine" MODE "keyword"'))


# ---------------------------------------------------------------- read-only
WRITES = [
    'UPSERT { CONCEPT ?x { {type: "Drug", name: "Ibuprofen"} } }',
    'UPSERT { CONCEPT ?x { {id: "A:Drug:D1"} SET ATTRIBUTES { risk: 9 } } }',
    'UPSERT { CONCEPT ?x { {type: "Note", name: "n2"} SET PROPOSITIONS { ("treats", {type: "Note", name: "pharmacy note"}) } } }',
    'UPSERT { CONCEPT ?x { {type: "Note", name: "n3"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Disease", name: "Fever"}) } } }',
    'UPSERT { PROPOSITION ?p { (id: "A:treats:@0") SET ATTRIBUTES { evidence: "Z" } } }',
    'UPDATE ?d SET ATTRIBUTES { risk: 0 } WHERE { ?d {type: "Drug"} }',
    'UPDATE ?l SET ATTRIBUTES { evidence: "Z" } WHERE { ?l (?d, "treats", ?x) }',
    'DELETE ATTRIBUTES {"risk"} FROM ?d WHERE { ?d {type: "Drug"} }',
    'DELETE METADATA {"adopted"} FROM ?d WHERE { ?d {type: "Drug"} }',
    'DELETE PROPOSITIONS ?l WHERE { ?l (?d, "treats", ?x) }',
    'DELETE PROPOSITIONS ?l WHERE { ?l (?a, "reports_to", ?b) }',
    'DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Aspirin"} }',
    'DELETE CONCEPT ?x DETACH WHERE { (?d, "treats", ?x) }',
    'MERGE CONCEPT ?a INTO ?b WHERE { ?a {id: "A:Drug:D1"} ?b {id: "A:Drug:D2"} }',
    'MERGE CONCEPT ?n INTO ?d WHERE { ?n {type: "Note", name: "pharmacy note"} ?d {id: "A:Drug:D2"} }',
]


@pytest.mark.parametrize("command", WRITES)
def test_every_write_to_adopted_data_is_refused_before_it_runs(world, command):
    response = world.nexus.execute_kip(command)
    assert code(response) == "KIP_3004", response
    assert "adopted" in response["error"]["message"] and "read-only" in response["error"]["message"]
    dry = world.nexus.execute_kip(command, dry_run=True)
    assert code(dry) == "KIP_3004"
    world.assert_team_unchanged()


def test_memory_writes_still_work_and_leave_the_team_graph_alone(world):
    ok(world.nexus.execute_kip('UPSERT { CONCEPT ?n { {type: "Note", name: "another note"} SET ATTRIBUTES { drug_name: "Aspirin" } } }'))
    ok(world.nexus.execute_kip('DELETE CONCEPT ?n DETACH WHERE { ?n {type: "Note", name: "another note"} }'))
    world.assert_team_unchanged()


def test_an_exported_backup_of_the_memory_applies_again(world):
    """The definitions of adopted names are KIP's own nodes: a backup capsule re-asserts them."""
    capsule = world.find('EXPORT ?t WHERE { ?t {type: "$ConceptType"} }')["capsule"]
    assert '"Drug"' in capsule
    ok(world.nexus.execute_kip(capsule))
    assert world.find('DESCRIBE CONCEPT TYPE "Drug"')["metadata"]["adopted"] is True
    world.assert_team_unchanged()


# ---------------------------------------------------------------- hostile mapping files
HOSTILE_LABEL = "Odd`) DETACH DELETE n //"
HOSTILE_PROP = "na\\u0060me"  # the six characters \u0060 (Cypher decodes them inside backticks)


def test_a_hostile_mapping_is_quoted_and_changes_nothing(world, neo4j_server):
    world.driver.execute_query(f"CREATE (:{quote(HOSTILE_LABEL)} {{{quote(HOSTILE_PROP)}: 'odd one', x: 1}})", database_=world.database)
    world.team = team_fingerprint(world.driver, world.database)
    hostile = _open(neo4j_server, "hostile")
    text = f'[types.Odd]\nlabel = {json.dumps(HOSTILE_LABEL)}\nname = {json.dumps(HOSTILE_PROP)}\nattributes = {{ k = "x" }}\n'
    report = hostile.adopt(adoption.parse(text), create_index=True)
    assert report["types"][0]["nodes"] == 1 and report["text_index"]["state"] in ("created", "present")  # present: left by an earlier run
    found = ok(hostile.execute_kip('FIND(?o) WHERE { ?o {type: "Odd", name: "odd one"} }'))
    assert found[0]["name"] == "odd one" and found[0]["attributes"] == {"k": 1}
    assert code(hostile.execute_kip('UPSERT { CONCEPT ?o { {type: "Odd", name: "x"} } }')) == "KIP_3004"
    world.assert_team_unchanged()
    hostile.close()

    removed = world.nexus.drop_namespace("hostile")
    assert "kip_adopted_text__hostile" in removed["schema_objects"]  # the namespace's adopted index goes with it
    world.assert_team_unchanged()


@pytest.mark.parametrize("label", ["KipConcept", "KipConcept__other", "KipNexus", "KipProposition", "kip:Drug", "kip.alice:Drug"])
def test_engine_labels_cannot_be_adopted(label):
    """The engine's labels, and memory's own type labels in KIP's label space, are not the team's."""
    with pytest.raises(KipError) as err:
        adoption.parse(f"[types.T]\nlabel = {json.dumps(label)}\n")
    assert err.value.code == "KIP_3004"


# ---------------------------------------------------------------- CLI
def test_cli_adopt_dry_run_then_apply_then_idempotent(world, neo4j_server, tmp_path):
    from hostile_payloads import fingerprint

    from kip2cypher.cli import main

    path = tmp_path / "mapping.toml"
    path.write_text(MAPPING, encoding="utf-8")
    env = {"NEO4J_URI": neo4j_server.uri, "NEO4J_DATABASE": neo4j_server.database, "KIP2CYPHER_NAMESPACE": "clins"}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    runner = CliRunner()
    world.nexus.wait_for_embeddings()
    everything = fingerprint(world.driver, world.database)
    dry = runner.invoke(main, ["adopt", str(path), "--dry-run"], env=env, catch_exceptions=False)
    assert dry.exit_code == 0, dry.output
    assert "type Drug would register — label Drug: 3 node(s) (1 without the name property)" in dry.output
    assert "--create-index" in dry.output  # the full-text index is offered
    assert fingerprint(world.driver, world.database) == everything
    applied = runner.invoke(main, ["adopt", str(path), "--format", "json"], env=env, catch_exceptions=False)
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["mapping"] == "stored"
    again = runner.invoke(main, ["adopt", str(path)], env=env, catch_exceptions=False)
    assert again.exit_code == 0 and "mapping: unchanged" in again.output
    found = runner.invoke(main, ["call", 'FIND(?d.id) WHERE { ?d {type: "Drug", name: "Aspirin"} } ORDER BY ?d.id'], env=env, catch_exceptions=False)
    assert json.loads(found.stdout)["result"] == ["A:Drug:D1", "A:Drug:D2"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[types.Drug]\nlabel = "Drug"\nlable = 1\n', encoding="utf-8")
    refused = runner.invoke(main, ["adopt", str(bad)], env=env, catch_exceptions=False)
    assert refused.exit_code == 1 and "types.Drug.lable" in refused.output and "line 3" in refused.output
    world.assert_team_unchanged()


# ---------------------------------------------------------------- every spec example over adopted data
def _spec_examples():
    import parser_fixtures

    valid = parser_fixtures.valid()
    return valid, parser_fixtures.example_params(valid)


SPEC_VALID, SPEC_PARAMS = _spec_examples()


@pytest.fixture(scope="module")
def spec(world, neo4j_server):
    """Namespace ``spec``: the examples' schema (Drug and treats then adopted), adopted like ``world``."""
    from kml_helpers import SCHEMA

    nexus = _open(neo4j_server, "spec")
    nexus.bootstrap()
    ok(nexus.execute_kip(SCHEMA))
    nexus.adopt(adoption.parse(MAPPING))
    yield nexus
    nexus.close()


@pytest.mark.parametrize("entry", SPEC_VALID, ids=[e.name for e in SPEC_VALID])
def test_spec_example_over_adopted_types_never_fails_internally_nor_writes_the_team_graph(world, spec, entry):
    response = spec.execute({"command": entry.text, "parameters": SPEC_PARAMS})
    if "error" in response:
        assert response["error"]["code"] != "KIP_4003", response
    world.assert_team_unchanged()


# ---------------------------------------------------------------- demo
def test_zz_demo_shows_an_adopted_graph_and_never_writes_into_foreign_data(neo4j_server):
    """Runs last in this module: it wipes the database (the demo needs one without foreign data)."""
    from kip2cypher.cli import main
    from kip2cypher.cli.demo import foreign_nodes

    env = {"NEO4J_URI": neo4j_server.uri, "NEO4J_DATABASE": neo4j_server.database, "KIP2CYPHER_NAMESPACE": None}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    nexus = _open(neo4j_server)
    _wipe(nexus.driver, nexus.database)
    runner = CliRunner()
    for _ in range(2):  # the example team graph is the demo's own: a second run is not refused
        out = runner.invoke(main, ["demo"], env=env, catch_exceptions=False)
        assert out.exit_code == 0, out.output
        adopted = out.output.split("== Adopting a team's own graph", 1)[1]
        assert '"id": "A:Staff:S3"' in adopted and '"Lin", "Ada"' in adopted and '"KIP_3004"' in adopted
        assert "Traceback" not in out.output
    assert foreign_nodes(nexus) == 0
    nexus.driver.execute_query("CREATE (:Customer {name: 'not KIP data'})", database_=nexus.database)
    team = team_fingerprint(nexus.driver, nexus.database)
    refused = runner.invoke(main, ["demo"], env=env, catch_exceptions=False)
    assert refused.exit_code == 1 and "not KIP data" in refused.output
    forced = runner.invoke(main, ["demo", "--yes"], env=env, catch_exceptions=False)
    assert forced.exit_code == 0 and "-- skipped: this database holds data that is not KIP's" in forced.output
    assert team_fingerprint(nexus.driver, nexus.database) == team  # no example team graph written next to foreign data
    nexus.close()

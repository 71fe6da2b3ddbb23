"""link_memory (docs/adopt.md, "link_memory"): memory propositions whose subject or object is an
adopted concept, on a real Neo4j.

Namespace ``linked`` adopts the team graph of ``tests/test_adopt.py`` (its fixtures and helpers
are imported, not copied) with ``[options] link_memory = true``; the default namespace keeps the
option off. Every test checks the whole response, and ``assert_team_unchanged`` that the team's
nodes (labels, properties, element ids) and the team's own relationships never change — only
KIP-owned relationships (KIP_SUBJECT / KIP_OBJECT and native predicate relationships carrying
``kip_id``) are ever added at an adopted node.
"""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from test_adopt import MAPPING, NOTE_SCHEMA, _open, code, ok, world  # noqa: F401  (world: the module fixture)

from kip2cypher import adoption
from kip2cypher.cypher import storage

LINKED = MAPPING + "\n[options]\nlink_memory = true\n"

SCHEMA = """
UPSERT {
  CONCEPT ?a { {type: "$PropositionType", name: "about"} SET ATTRIBUTES { description: "A note is about something." } }
  CONCEPT ?m { {type: "$PropositionType", name: "mentioned_in"} SET ATTRIBUTES { description: "Something is mentioned in a note." } }
  CONCEPT ?s { {type: "$PropositionType", name: "suspected_for"} SET ATTRIBUTES { description: "A drug is suspected to help with a disease." } }
}
"""
ENGINE = "any(l IN labels(n) WHERE any(s IN $stems WHERE l = s OR l STARTS WITH s + '__'))"
STEMS = list(storage.RESERVED_LABEL_STEMS)


def team_state(driver, database) -> dict:
    """The team's nodes (labels, properties, element id) and the team's own relationships — every
    relationship touching a team node except KIP's (KIP_SUBJECT / KIP_OBJECT of any namespace,
    native predicate relationships carrying a kip_id): hashed. Must never change."""
    nodes = driver.execute_query(
        f"MATCH (n) WHERE NOT {ENGINE} RETURN elementId(n) AS e, labels(n) AS l, properties(n) AS p", stems=STEMS, database_=database
    ).records
    rels = driver.execute_query(
        f"MATCH (a)-[r]->(b) WHERE (NOT {ENGINE.replace('(n)', '(a)')} OR NOT {ENGINE.replace('(n)', '(b)')}) "
        "AND NOT type(r) STARTS WITH 'KIP_' AND none(k IN keys(r) WHERE k STARTS WITH 'kip_id') "
        "RETURN elementId(a) AS a, type(r) AS t, properties(r) AS p, elementId(b) AS b, elementId(r) AS r",
        stems=STEMS,
        database_=database,
    ).records
    items = sorted(json.dumps([r["e"], sorted(r["l"]), {k: str(v) for k, v in dict(r["p"]).items()}], sort_keys=True) for r in nodes)
    items += ["--"] + sorted(json.dumps([r["a"], r["t"], {k: str(v) for k, v in dict(r["p"]).items()}, r["b"], r["r"]], sort_keys=True) for r in rels)
    return {"nodes": len(nodes), "relationships": len(rels), "sha256": hashlib.sha256("\n".join(items).encode()).hexdigest()}


def kip_links_at_team_nodes(driver, database) -> list:
    """The KIP-owned relationships touching a team node: (type, kip_id property keys)."""
    rows = driver.execute_query(
        f"MATCH (a)-[r]->(b) WHERE (NOT {ENGINE.replace('(n)', '(a)')} OR NOT {ENGINE.replace('(n)', '(b)')}) "
        "AND (type(r) STARTS WITH 'KIP_' OR any(k IN keys(r) WHERE k STARTS WITH 'kip_id')) RETURN type(r) AS t, keys(r) AS k",
        stems=STEMS,
        database_=database,
    ).records
    return sorted((r["t"], tuple(sorted(r["k"]))) for r in rows)


class Linked:
    def __init__(self, default, nexus) -> None:
        self.default, self.nexus = default, nexus
        self.driver, self.database = nexus.driver, nexus.database
        self.team = team_state(self.driver, self.database)

    def run(self, command, **params):
        return self.nexus.execute_kip(command, parameters=params or None)

    def find(self, command, **params):
        return ok(self.run(command, **params))

    def assert_team_unchanged(self):
        assert team_state(self.driver, self.database) == self.team


@pytest.fixture(scope="module")
def linked(world, neo4j_server):  # noqa: F811
    nexus = _open(neo4j_server, "linked")
    nexus.bootstrap()
    ok(nexus.execute_kip(NOTE_SCHEMA))
    ok(nexus.execute_kip(SCHEMA))
    ok(world.nexus.execute_kip(SCHEMA))
    report = nexus.adopt(adoption.parse(LINKED))
    assert report["mapping"] == "stored"
    yield Linked(world, nexus)
    nexus.close()


def test_the_option_is_read_from_the_mapping():
    assert adoption.parse(LINKED).link_memory is True
    assert adoption.parse(MAPPING).link_memory is False
    assert adoption.Adoption.from_json(adoption.parse(LINKED).to_json()).link_memory is True


def _links(linked) -> int:
    return linked.nexus.adopted_links()["linked"]


def _ids(value):
    """Random hex of memory ids as "…" (and adopted element ids as "@…"), to compare whole responses."""
    return json.loads(re.sub(r"@[0-9]+:[0-9a-f-]+:[0-9]+", "@…", re.sub(r"[0-9a-f]{32}", "…", json.dumps(value))))


@pytest.fixture(scope="module")
def notes(linked):
    """Memory linked to the team's graph: a note about Aspirin D1 (by id), Headache mentioned in it
    (by name), a memory link between two adopted concepts, a note about that link (by handle), and
    a link from D1 to a note (so that a walk over "about" passes through D1)."""
    result = linked.find("""
UPSERT {
  CONCEPT ?n1 { {type: "Note", name: "n1"} SET PROPOSITIONS { ("about", {id: "A:Drug:D1"}) } }
  PROPOSITION ?m { ({type: "Disease", name: "Headache"}, "mentioned_in", ?n1) SET ATTRIBUTES { page: 3 } }
  PROPOSITION ?s { ({id: "A:Drug:D1"}, "suspected_for", {type: "Disease", name: "Fever"}) }
  CONCEPT ?n2 { {type: "Note", name: "n2"} SET PROPOSITIONS { ("about", ?s) } }
  CONCEPT ?n3 { {type: "Note", name: "n3"} }
  PROPOSITION ?back { ({id: "A:Drug:D1"}, "about", ?n3) }
}""")
    assert result["blocks"] == 1 and len(result["upsert_concept_nodes"]) == 3 and len(result["upsert_proposition_links"]) == 3
    linked.assert_team_unchanged()
    return result


def test_upsert_writes_memory_propositions_ending_at_adopted_concepts(linked, notes):
    found = linked.find('FIND(?l.subject, ?l.predicate, ?l.object) WHERE { ?l ({id: "A:Drug:D1"}, "suspected_for", ?x) ?x {type: "Disease"} }')
    # (?x is bound after the clause: a free endpoint binds memory elements only, so this finds nothing)
    assert found == [[], [], []]
    response = linked.run('FIND(?l) WHERE { ?x {type: "Disease"} ?l ({id: "A:Drug:D1"}, "suspected_for", ?x) }')
    assert _ids(response) == {
        "result": [
            {
                "id": "P:…:suspected_for",
                "subject": "A:Drug:D1",
                "predicate": "suspected_for",
                "object": "A:Disease:@…",
                "attributes": {},
                "metadata": response["result"][0]["metadata"],
            }
        ]
    }
    assert set(response["result"][0]["metadata"]) == {"_version", "_updated_at"}
    # KIP's own relationships at the team's nodes, and nothing else: per link one KIP_SUBJECT or
    # KIP_OBJECT per adopted endpoint plus the native relationship carrying kip_id
    assert kip_links_at_team_nodes(linked.driver, linked.database) == sorted(
        [("KIP_OBJECT__linked", ())] * 2
        + [("KIP_SUBJECT__linked", ())] * 3
        + [("kip.linked:about", ("kip_id__linked",))] * 2
        + [("kip.linked:mentioned_in", ("kip_id__linked",))]
        + [("kip.linked:suspected_for", ("kip_id__linked",))]
    )
    assert _links(linked) == 4
    linked.assert_team_unchanged()


def test_upsert_is_idempotent_and_the_same_node_by_name_or_id_is_one_link(linked, notes):
    before = _links(linked)
    again = linked.find('UPSERT { PROPOSITION ?m { ({type: "Disease", name: "Headache"}, "mentioned_in", {type: "Note", name: "n1"}) } }')
    by_id = linked.find('FIND(?d.id) WHERE { ?d {type: "Disease", name: "Headache"} }')[0]
    same = linked.find('UPSERT { PROPOSITION ?m { ({id: :d}, "mentioned_in", {type: "Note", name: "n1"}) } }', d=by_id)
    assert (
        again["upsert_proposition_links"]
        == same["upsert_proposition_links"]
        == [linked.find('FIND(?l.id) WHERE { ?l ({type: "Disease", name: "Headache"}, "mentioned_in", ?n) }')[0]]
    )
    assert _links(linked) == before
    linked.assert_team_unchanged()


def _count_memory(linked) -> tuple:
    rows = linked.driver.execute_query(
        "MATCH (c:KipConcept__linked) WITH count(c) AS c MATCH (p:KipProposition__linked) RETURN c, count(p) AS p", database_=linked.database
    ).records
    return rows[0]["c"], rows[0]["p"]


def test_a_name_two_team_nodes_share_is_refused_naming_their_ids_and_nothing_is_written(linked, notes):
    before = _count_memory(linked), _links(linked)
    command = 'UPSERT { CONCEPT ?n { {type: "Note", name: "n9"} }\n  PROPOSITION ?p { (?n, "about", {type: "Drug", name: "Aspirin"}) } }'
    for dry_run in (True, False):
        response = linked.nexus.execute_kip(command, dry_run=dry_run)
        error = response["error"]
        assert error["code"] == "KIP_3003", response
        assert error == {
            "code": "KIP_3003",
            "message": 'Concept {type: "Drug", name: "Aspirin"} matches several nodes of the team\'s graph ("A:Drug:D1", "A:Drug:D2"): '
            "linking one of them would be arbitrary. (line 2, column 34)\n"
            '  PROPOSITION ?p { (?n, "about", {type: "Drug", name: "Aspirin"}) } }\n'
            "                                 ^",
            "hint": 'Name the one you mean by its adopted id, e.g. {id: "A:Drug:D1"} (FIND the candidates with their ids first).',
            "line": 2,
            "column": 34,
        }
    assert (_count_memory(linked), _links(linked)) == before
    linked.assert_team_unchanged()


def test_two_team_nodes_sharing_a_key_value_are_told_apart_by_element_id(linked, notes):
    linked.driver.execute_query("CREATE (:Drug {drug_id: 'DX', name: 'Twin'}), (:Drug {drug_id: 'DX', name: 'Twin'})", database_=linked.database)
    try:
        error = linked.run('UPSERT { PROPOSITION ?p { ({type: "Note", name: "n1"}, "about", {id: "A:Drug:DX"}) } }')["error"]
        assert error["code"] == "KIP_3003"
        assert re.match(
            r'Concept \{id: "A:Drug:DX"\} matches several nodes of the team\'s graph \("A:Drug:@[^"]+", "A:Drug:@[^"]+"\): '
            r"linking one of them would be arbitrary\. \(line 1, column (\d+)\)\n",
            error["message"],
        ), error["message"]
        element = re.search(r'"(A:Drug:@[^"]+)"', error["message"]).group(1)
        linked_id = linked.find('UPSERT { PROPOSITION ?p { ({type: "Note", name: "n1"}, "about", {id: :d}) } }', d=element)["upsert_proposition_links"]
        # the stored endpoint is the node's canonical adopted id (its key value), whatever form named it
        assert linked.find("FIND(?l.object) WHERE { ?l (id: :l) }", l=linked_id[0]) == ["A:Drug:DX"]
        linked.find("DELETE PROPOSITIONS ?l WHERE { ?l (id: :l) }", l=linked_id[0])
    finally:
        linked.driver.execute_query("MATCH (d:Drug {drug_id: 'DX'}) DETACH DELETE d", database_=linked.database)
    linked.assert_team_unchanged()


@pytest.mark.parametrize(
    "target, message",
    [
        ('{type: "Drug", name: "Nopezine"}', 'Concept {type: "Drug", name: "Nopezine"} does not exist in the team\'s graph.'),
        ('{id: "A:Drug:D9"}', 'Concept {id: "A:Drug:D9"} does not exist in the team\'s graph.'),
        (
            '{id: "A:Drug:@4:00000000-0000-0000-0000-000000000000:999999"}',
            'Concept {id: "A:Drug:@4:00000000-0000-0000-0000-000000000000:999999"} does not exist in the team\'s graph.',
        ),
    ],
)
def test_an_adopted_endpoint_that_matches_no_node_is_not_found(linked, notes, target, message):
    before = _count_memory(linked)
    response = linked.run('UPSERT { CONCEPT ?n { {type: "Note", name: "n8"} SET PROPOSITIONS { ("about", %s) } } }' % target)
    assert response["error"]["code"] == "KIP_3002" and response["error"]["message"].split(" (line 1,")[0] == message
    assert (
        response["error"]["hint"]
        == 'Adopted concepts are the team\'s own nodes: FIND or SEARCH it to get its exact name or its "A:…" id; KIP cannot create it.'
    )
    assert _count_memory(linked) == before
    linked.assert_team_unchanged()


def test_with_the_option_off_linking_is_refused_and_the_hint_names_the_option(linked, notes):
    default = linked.default.nexus  # the default namespace adopted the same graph without link_memory
    response = default.execute_kip('UPSERT { CONCEPT ?n { {type: "Note", name: "pharmacy note"} SET PROPOSITIONS { ("about", {id: "A:Drug:D1"}) } } }')
    assert response["error"]["code"] == "KIP_3004"
    assert response["error"]["message"].startswith(
        "This UPSERT would change the concept type 'Drug' (Neo4j label 'Drug'), which is adopted from the team's own graph"
    )
    assert response["error"]["hint"].startswith(
        "A memory proposition may have an adopted concept as subject or object only when the mapping sets [options] link_memory = true"
    )
    linked.assert_team_unchanged()


@pytest.mark.parametrize(
    "command",
    [
        *__import__("test_adopt").WRITES,
        'UPSERT { PROPOSITION ?p { ({id: "A:Drug:D1"}, "treats", {type: "Disease", name: "Fever"}) } }',
        'UPSERT { CONCEPT ?d { {id: "A:Drug:D1"} SET PROPOSITIONS { ("about", {type: "Note", name: "n1"}) } } }',
        'UPDATE ?d SET ATTRIBUTES { risk: 0 } WHERE { ?n {type: "Note", name: "n1"} (?n, "about", ?d) ?d {type: "Drug"} }',
        'DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug"} (?n, "about", ?d) }',
    ],
)
def test_adopted_data_stays_read_only_with_the_option_on(linked, notes, command):
    before = _count_memory(linked), _links(linked)
    response = linked.run(command)
    assert response["error"]["code"] == "KIP_3004", response
    assert "adopted" in response["error"]["message"] and "read-only" in response["error"]["message"]
    assert (_count_memory(linked), _links(linked)) == before
    linked.assert_team_unchanged()


MEMORY_END = (
    "?{v} binds memory concepts and propositions only: a memory proposition may also end at an adopted concept (link_memory); "
    'bind ?{v} to an adopted type before this clause (e.g. ?{v} {{type: "Drug"}}) to read those (docs/adopt.md).'
)


def test_find_memory_predicates_with_adopted_endpoints(linked, notes):
    response = linked.run('FIND(?n.name) WHERE { ?d {type: "Drug", name: "Aspirin"} (?n, "about", ?d) }')
    assert response == {"result": ["n1"], "warnings": [MEMORY_END.format(v="n")]}
    response = linked.run('FIND(?d, ?n.name, ?l.attributes.page) WHERE { ?d {type: "Disease"} ?l (?d, "mentioned_in", ?n) }')
    assert _ids(response) == {
        "result": [
            [{"id": "A:Disease:@…", "type": "Disease", "name": "Headache", "attributes": {"icd": "R51"}, "metadata": {"adopted": True, "label": "Disease"}}],
            ["n1"],
            [3],
        ],
        "warnings": [MEMORY_END.format(v="n")],
    }
    # both endpoints adopted
    response = linked.run('FIND(?d.id, ?x.name) WHERE { ?d {type: "Drug"} ?x {type: "Disease"} (?d, "suspected_for", ?x) }')
    assert response == {"result": [["A:Drug:D1"], ["Fever"]]}
    # a free endpoint binds memory only, and the answer says so
    response = linked.run('FIND(?x) WHERE { ({id: "A:Drug:D1"}, "suspected_for", ?x) }')
    assert response == {"result": [], "warnings": [MEMORY_END.format(v="x")]}
    # from memory to adopted, the adopted end typed
    assert linked.run('FIND(?d.id) WHERE { ?d {type: "Drug"} ({type: "Note", name: "n1"}, "about", ?d) }') == {"result": ["A:Drug:D1"]}
    linked.assert_team_unchanged()


def test_predicate_variables_range_over_adopted_and_memory_predicates(linked, notes):
    both = linked.run('FIND(?p, ?x.name) WHERE { ?d {id: "A:Drug:D1"} ?x {type: "Disease"} (?d, ?p, ?x) } ORDER BY ?p')
    assert both == {"result": [["suspected_for", "treats"], ["Fever", "Headache"]]}
    to_memory = linked.run('FIND(?p, ?n.name) WHERE { ?d {id: "A:Drug:D1"} ?n {type: "Note"} (?d, ?p, ?n) }')
    assert to_memory == {"result": [["about"], ["n3"]]}
    from_memory = linked.run('FIND(?p, ?d.id) WHERE { ?n {type: "Note", name: "n1"} ?d {type: "Drug"} (?n, ?p, ?d) }')
    assert from_memory == {"result": [["about"], ["A:Drug:D1"]]}
    into_adopted = linked.run('FIND(?p, ?s.name) WHERE { ?d {type: "Disease", name: "Fever"} ?s {type: "Drug"} (?s, ?p, ?d) } ORDER BY ?p')
    assert into_adopted == {"result": [["suspected_for", "treats"], ["Aspirin", "Aspirin"]]}  # D1 suspected_for, D2 treats
    free = linked.run('FIND(?p, ?x.name) WHERE { ?d {id: "A:Drug:D1"} (?d, ?p, ?x) }')
    assert free == {
        "result": [["treats"], ["Headache"]],
        "warnings": [
            "?p ranges over the adopted predicates here (treats, contraindicated): ?x is bound to nothing before this clause, and one variable "
            "cannot hold both an adopted concept and a memory element. To read memory propositions here too, bind ?x first to a type "
            '(a memory type, or an adopted one) or name the predicate (docs/adopt.md, "link_memory").'
        ],
    }
    refused = linked.run('FIND(?l) WHERE { ?d {id: "A:Drug:D1"} ?x {type: "Disease"} ?l (?d, ?p, ?x) }')
    assert refused["error"]["code"] == "KIP_1001"
    assert refused["error"]["message"].startswith(
        "A ?l link variable with a predicate variable that could be an adopted relationship or a memory "
        "proposition (link_memory) is not supported over adopted predicates."
    )
    linked.assert_team_unchanged()


def test_paths_over_memory_predicates_walk_through_adopted_nodes(linked, notes):
    # n1 -about-> D1 (adopted) -about-> n3: the walk passes through the team's node
    through = linked.run('FIND(?x.name) WHERE { ?n {type: "Note", name: "n1"} (?n, "about"{2,2}, ?x) }')
    assert through == {"result": ["n3"], "warnings": [MEMORY_END.format(v="x")]}
    ends = linked.run('FIND(?x.name) WHERE { ?n {type: "Note", name: "n1"} (?n, "about"{1,2}, ?x) }')
    assert ends == {"result": ["n3"], "warnings": [MEMORY_END.format(v="x")]}  # D1 is reached too, but ?x binds memory only
    typed = linked.run('FIND(?x.id) WHERE { ?x {type: "Drug"} ?n {type: "Note", name: "n1"} (?n, "about"{1,2}, ?x) }')
    assert typed == {"result": ["A:Drug:D1"]}
    backwards = linked.run('FIND(?n.name) WHERE { ?x {type: "Note", name: "n3"} (?n, "about"{1,3}, ?x) }')
    assert backwards == {"result": ["n1"], "warnings": [MEMORY_END.format(v="n")]}
    linked.assert_team_unchanged()


def test_describe_is_unaffected(linked, notes):
    def described(nexus):
        out = ok(nexus.execute_kip('DESCRIBE CONCEPT TYPE "Drug"'))
        out.pop("id"), out["metadata"].pop("_updated_at")
        return out

    assert described(linked.nexus) == described(linked.default.nexus)
    about = linked.find('DESCRIBE PROPOSITION TYPE "about"')
    assert about["name"] == "about" and about["metadata"].get("adopted") is None


def test_update_and_delete_attributes_and_propositions_on_links(linked, notes):
    made = linked.find('UPSERT { PROPOSITION ?p { ({type: "Note", name: "n3"}, "about", {id: "A:Drug:D2"}) SET ATTRIBUTES { weight: 1 } } }')
    pid = made["upsert_proposition_links"][0]
    where = '?d {id: "A:Drug:D2"} ?l ({type: "Note", name: "n3"}, "about", ?d)'
    assert linked.run(f"UPDATE ?l SET ATTRIBUTES {{ weight: 2, seen: true }} WHERE {{ {where} }}") == {"result": {"matched": 1, "updated": 1}}
    assert linked.find(f"FIND(?l.attributes) WHERE {{ {where} }}") == [{"weight": 2, "seen": True}]
    assert linked.run(f'DELETE ATTRIBUTES {{"seen"}} FROM ?l WHERE {{ {where} }}') == {"result": {"updated_concepts": 0, "updated_propositions": 1}}
    assert linked.find("FIND(?l.attributes, ?l.metadata._version) WHERE { ?l (id: :p) }", p=pid) == [[{"weight": 2}], [3]]
    before = _links(linked)
    assert linked.run(f"DELETE PROPOSITIONS ?l WHERE {{ {where} }}") == {"result": {"deleted_propositions": 1}}
    assert _links(linked) == before - 1
    assert linked.find("FIND(?l) WHERE { ?l (id: :p) }", p=pid) == []
    # the native relationship went with it: no "about" link from n3 to D2 is left at the team's node
    rest = linked.driver.execute_query(
        "MATCH (:Drug {drug_id: 'D2'})-[r]-() WHERE type(r) STARTS WITH 'KIP_' OR r.kip_id__linked IS NOT NULL RETURN count(r) AS c", database_=linked.database
    ).records[0]["c"]
    assert rest == 0
    linked.assert_team_unchanged()


def test_deleting_a_linked_memory_concept_removes_its_links_at_the_team_nodes(linked, notes):
    linked.find(
        'UPSERT { CONCEPT ?n { {type: "Note", name: "short-lived"} SET PROPOSITIONS { ("about", {id: "A:Drug:D2"}) } }'
        ' PROPOSITION ?m { ({id: "A:Drug:D2"}, "mentioned_in", ?n) } }'
    )
    before = _links(linked)
    assert linked.run('DELETE CONCEPT ?n DETACH WHERE { ?n {type: "Note", name: "short-lived"} }') == {
        "result": {"deleted_concepts": 1, "deleted_propositions": 2}
    }
    assert _links(linked) == before - 2
    rest = linked.driver.execute_query(
        "MATCH (:Drug {drug_id: 'D2'})-[r]-() WHERE type(r) STARTS WITH 'KIP_' OR r.kip_id__linked IS NOT NULL RETURN count(r) AS c", database_=linked.database
    ).records[0]["c"]
    assert rest == 0
    linked.assert_team_unchanged()


def test_export_refers_to_adopted_endpoints_by_id_and_the_capsule_applies_again(linked, notes):
    capsule = linked.find('EXPORT ?l WHERE { ?d {type: "Drug"} ?l ({type: "Note", name: "n1"}, "about", ?d) }')["capsule"]
    assert capsule == 'UPSERT {\n  PROPOSITION ?p1 {\n    ({type: "Note", name: "n1"}, "about", {id: "A:Drug:D1"})\n  }\n}'

    before = _count_memory(linked), _links(linked)
    ok(linked.run(capsule))
    assert (_count_memory(linked), _links(linked)) == before  # idempotent: the same note, the same link
    linked.assert_team_unchanged()


def test_a_link_whose_team_node_was_deleted_is_not_read_and_can_be_deleted(linked, notes):
    """The team deletes a linked node with DETACH DELETE: KIP's KIP_SUBJECT / native relationships
    at it go too, and the memory proposition node is left with one endpoint. It is never read as a
    half proposition, and when the team creates a node with the same adopted id again, the same
    UPSERT links it anew."""
    linked.driver.execute_query("CREATE (:Drug {drug_id: 'D7', name: 'Tempzine'})", database_=linked.database)
    made = linked.find('UPSERT { PROPOSITION ?p { ({id: "A:Drug:D7"}, "about", {type: "Note", name: "n3"}) } }')
    pid = made["upsert_proposition_links"][0]
    assert linked.find("FIND(?l.subject) WHERE { ?l (id: :p) }", p=pid) == ["A:Drug:D7"]
    linked.driver.execute_query("MATCH (d:Drug {drug_id: 'D7'}) DETACH DELETE d", database_=linked.database)
    linked.assert_team_unchanged()  # the node came and went: the rest of the team's graph is as before
    gone = "The proposition (id: :p) does not exist (the reference engine answers KIP_3002 for an element named exactly that does not exist)"
    assert linked.run("FIND(?l) WHERE { ?l (id: :p) }", p=pid) == {"result": [], "warnings": [gone]}  # docs/interop.md A11
    assert pid not in json.dumps(linked.find('FIND(?l) WHERE { ?l (?s, "about", ?o) }'))
    whole, stored = linked.driver.execute_query(
        "MATCH (p:KipProposition__linked {predicate: 'about'}) "
        "RETURN count(CASE WHEN EXISTS { (p)-[:KIP_SUBJECT__linked]->() } AND EXISTS { (p)-[:KIP_OBJECT__linked]->() } THEN p END) AS whole, count(p) AS "
        "stored",
        database_=linked.database,
    ).records[0]
    assert stored == whole + 1 and linked.find('FIND(COUNT(?l)) WHERE { ?l (?s, "about", ?o) }') == whole  # (?s, ?o unread: not expanded)
    assert linked.nexus.adopted_links()["dangling"] == 1  # what `kip2cypher adopt` reports
    gone = linked.run("DELETE PROPOSITIONS ?l WHERE { ?l (id: :p) }", p=pid)  # not read: to KIP it does not exist
    assert gone["error"]["code"] == "KIP_3002"
    # the team recreates a node with the same key: the same UPSERT links the proposition again
    linked.driver.execute_query("CREATE (:Drug {drug_id: 'D7', name: 'Tempzine'})", database_=linked.database)
    again = linked.find('UPSERT { PROPOSITION ?p { ({id: "A:Drug:D7"}, "about", {type: "Note", name: "n3"}) } }')
    assert again["upsert_proposition_links"] == [pid]
    assert linked.find('FIND(?l.subject, ?d.name) WHERE { ?d {type: "Drug"} ?l (?d, "about", {type: "Note", name: "n3"}) } ORDER BY ?d.name') == [
        ["A:Drug:D1", "A:Drug:D7"],
        ["Aspirin", "Tempzine"],
    ]
    native = linked.driver.execute_query("MATCH (:Drug {drug_id: 'D7'})-[r]->() RETURN type(r) AS t, r.kip_id__linked AS k", database_=linked.database).records
    assert [(r["t"], r["k"]) for r in native] == [("kip.linked:about", pid)]
    assert linked.run("DELETE PROPOSITIONS ?l WHERE { ?l (id: :p) }", p=pid) == {"result": {"deleted_propositions": 1}}
    linked.driver.execute_query("MATCH (d:Drug {drug_id: 'D7'}) DETACH DELETE d", database_=linked.database)
    linked.assert_team_unchanged()


def test_search_proposition_lists_no_link_whose_team_node_was_deleted(linked, notes):
    """SEARCH PROPOSITION listed a memory proposition left with one endpoint after the team
    deleted the adopted node it pointed at; like every other read it now skips it."""
    linked.driver.execute_query("CREATE (:Drug {drug_id: 'D8', name: 'Quellin'})", database_=linked.database)
    pid = linked.find('UPSERT { PROPOSITION ?p { ({id: "A:Drug:D8"}, "about", {type: "Note", name: "n3"}) } }')["upsert_proposition_links"][0]
    search = 'SEARCH PROPOSITION "about" WITH TYPE "about" MODE "keyword" LIMIT 50'
    before = linked.run(search)
    assert pid in [hit["id"] for hit in before["result"]], before
    linked.driver.execute_query("MATCH (d:Drug {drug_id: 'D8'}) DETACH DELETE d", database_=linked.database)
    after = linked.run(search)
    assert [hit["id"] for hit in after["result"]] == [hit["id"] for hit in before["result"] if hit["id"] != pid], after
    # the half proposition is unreachable through KIP: removed here so later tests count no extra dangling link
    linked.driver.execute_query("MATCH (p:KipProposition__linked {id: $id}) DETACH DELETE p", id=pid, database_=linked.database)
    linked.assert_team_unchanged()


def test_cli_adopt_says_what_link_memory_enables_and_refuses_turning_it_off_while_links_exist(linked, neo4j_server, tmp_path):
    from click.testing import CliRunner

    from kip2cypher.cli import main

    on, off = tmp_path / "on.toml", tmp_path / "off.toml"
    on.write_text(LINKED, encoding="utf-8")
    off.write_text(MAPPING, encoding="utf-8")
    env = {"NEO4J_URI": neo4j_server.uri, "NEO4J_DATABASE": neo4j_server.database, "KIP2CYPHER_NAMESPACE": "clilink"}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    runner = CliRunner()
    enables = (
        "memory propositions may have an adopted concept as subject or object — KIP then adds its own KIP_SUBJECT / KIP_OBJECT "
        "and predicate relationships at the team's nodes (never a label or a property); 0 such proposition(s) now"
    )
    dry = runner.invoke(main, ["adopt", str(on), "--dry-run"], env=env, catch_exceptions=False)
    assert dry.exit_code == 0 and f"link_memory would enable: {enables}" in dry.output, dry.output
    applied = runner.invoke(main, ["adopt", str(on)], env=env, catch_exceptions=False)
    assert applied.exit_code == 0 and f"link_memory enables: {enables}" in applied.output, applied.output
    nexus = _open(neo4j_server, "clilink")
    try:
        ok(nexus.execute_kip(NOTE_SCHEMA))
        ok(nexus.execute_kip(SCHEMA))
        ok(nexus.execute_kip('UPSERT { CONCEPT ?n { {type: "Note", name: "cli"} SET PROPOSITIONS { ("about", {id: "A:Drug:D1"}) } } }'))
        refused = runner.invoke(main, ["adopt", str(off)], env=env, catch_exceptions=False)
        assert refused.exit_code == 1
        assert (
            "link_memory cannot be turned off in namespace 'clilink': 1 memory proposition(s) link to adopted concepts, "
            "and with the option off KIP would read their adopted endpoints as memory elements."
        ) in refused.output, refused.output
        assert nexus.stored_adoption().link_memory is True  # nothing changed
        ok(nexus.execute_kip('DELETE CONCEPT ?n DETACH WHERE { ?n {type: "Note", name: "cli"} }'))
        turned_off = runner.invoke(main, ["adopt", str(off)], env=env, catch_exceptions=False)
        assert turned_off.exit_code == 0 and "link_memory: off (no memory proposition links to an adopted concept)" in turned_off.output, turned_off.output
        assert nexus.stored_adoption().link_memory is False
    finally:
        nexus.close()
    linked.assert_team_unchanged()


def test_merging_a_linked_memory_concept_keeps_its_links_to_adopted_concepts(linked, notes):
    linked.find(
        'UPSERT { CONCEPT ?a { {type: "Note", name: "dup a"} SET PROPOSITIONS { ("about", {id: "A:Drug:D2"}) } } CONCEPT ?b { {type: "Note", name: "dup b"} } }'
    )
    before = _links(linked)
    merged = linked.run('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Note", name: "dup a"} ?b {type: "Note", name: "dup b"} }')
    assert merged["result"]["links_repointed"] == 1 and merged["result"]["links_deduplicated"] == 0, merged
    assert _links(linked) == before
    assert linked.run('FIND(?n.name) WHERE { ?d {id: "A:Drug:D2"} ?n {type: "Note"} (?n, "about", ?d) }') == {"result": ["dup b"]}
    ok(linked.run('DELETE CONCEPT ?n DETACH WHERE { ?n {type: "Note", name: "dup b"} }'))
    assert _links(linked) == before - 1
    linked.assert_team_unchanged()


@pytest.mark.parametrize(
    "command, result",
    [
        ('UPDATE ?x SET ATTRIBUTES { risk: 0 } WHERE { ?n {type: "Note", name: "n1"} (?n, "about", ?x) }', {"matched": 0, "updated": 0}),
        ('UPDATE ?x SET ATTRIBUTES { risk: 0 } WHERE { ?n {type: "Note", name: "n1"} (?n, "about"{1,3}, ?x) }', {"matched": 1, "updated": 1}),
        ('DELETE ATTRIBUTES {"risk"} FROM ?x WHERE { ?n {type: "Note", name: "n1"} (?n, "about", ?x) }', {"updated_concepts": 0, "updated_propositions": 0}),
        (
            'DELETE CONCEPT ?x DETACH WHERE { ({type: "Disease", name: "Headache"}, "mentioned_in", ?y) (?y, "about", ?x) }',
            {"deleted_concepts": 0, "deleted_propositions": 0},
        ),
    ],
)
def test_a_write_through_a_link_never_reaches_the_team_node(linked, notes, command, result):
    """A variable bound first by a memory pattern binds memory elements only: a write whose target
    is reached over a link never lands on the team's node (the walk over "about"{1,3} reaches n3
    through D1, and only n3 is updated)."""
    assert linked.run(command) == {"result": result}
    linked.assert_team_unchanged()


def test_a_hostile_label_is_quoted_when_linking(linked, neo4j_server):
    """The mapping's names reach the endpoint lookup and the link only as quoted identifiers."""
    from test_adopt import HOSTILE_LABEL, HOSTILE_PROP

    from kip2cypher.cypher.builder import quote

    linked.driver.execute_query(f"CREATE (:{quote(HOSTILE_LABEL)} {{{quote(HOSTILE_PROP)}: 'odd one', k: 'K1'}})", database_=linked.database)
    nexus = _open(neo4j_server, "hostile_link")
    try:
        linked.team = team_state(linked.driver, linked.database)
        nexus.bootstrap()
        ok(nexus.execute_kip(NOTE_SCHEMA))
        ok(nexus.execute_kip(SCHEMA))
        text = f'[types.Odd]\nlabel = {json.dumps(HOSTILE_LABEL)}\nname = {json.dumps(HOSTILE_PROP)}\nkey = "k"\n[options]\nlink_memory = true\n'
        nexus.adopt(adoption.parse(text))
        ok(nexus.execute_kip('UPSERT { CONCEPT ?n { {type: "Note", name: "odd note"} SET PROPOSITIONS { ("about", {type: "Odd", name: "odd one"}) } } }'))
        found = ok(nexus.execute_kip('FIND(?o.id, ?n.name) WHERE { ?o {type: "Odd"} (?n, "about", ?o) }'))
        assert found == [["A:Odd:K1"], ["odd note"]]
        linked.assert_team_unchanged()
    finally:
        nexus.close()
        linked.nexus.drop_namespace("hostile_link")
        linked.driver.execute_query(f"MATCH (n:{quote(HOSTILE_LABEL)}) DETACH DELETE n", database_=linked.database)
        linked.team = team_state(linked.driver, linked.database)


def test_a_failure_while_writing_leaves_no_link_behind(linked, notes):
    """The link is written in the proposition wave; a later row of the same wave failing its
    EXPECT VERSION rolls the whole command back, KIP's relationships at the team's node included."""
    before = _count_memory(linked), _links(linked), kip_links_at_team_nodes(linked.driver, linked.database)
    response = linked.run(
        'UPSERT { PROPOSITION ?a { ({type: "Note", name: "n3"}, "about", {id: "A:Drug:D2"}) }'
        ' PROPOSITION ?b { ({type: "Disease", name: "Headache"}, "mentioned_in", {type: "Note", name: "n1"}) EXPECT VERSION 99 } }'
    )
    assert response["error"]["code"] == "KIP_3005", response
    assert (_count_memory(linked), _links(linked), kip_links_at_team_nodes(linked.driver, linked.database)) == before
    linked.assert_team_unchanged()


# ---------------------------------------------------------------- the team's own relationships of a memory predicate's type
MENTIONS = 'UPSERT { CONCEPT ?t { {type: "$PropositionType", name: "mentions"} SET ATTRIBUTES { description: "Something mentions something." } } }'


@pytest.fixture
def team_mentions(linked, notes):
    """The team's application has its own ``mentions`` relationships — the name of the memory
    predicate ``mentions``, whose own type is in KIP's label space (``kip:mentions``, ``kip.linked:mentions``):
    D1 → Headache, D1 → Fever, D1 → D2 and Acme (a Supplier, not adopted) → D1. None carries a kip_id,
    so none is a memory proposition. Memory of ``linked``: m1 mentions D1, D1 mentions Fever (a
    link between two adopted concepts, beside the team's own D1 → Fever), D2 mentions m2. A walk
    over KIP's links only: m1 → D1 → Fever; over the team's too it would reach D2, m2, Headache."""
    from kip2cypher.cypher.builder import quote

    for nexus in (linked.nexus, linked.default.nexus):
        ok(nexus.execute_kip(MENTIONS))
    for t in (quote("mentions"),):
        linked.driver.execute_query(
            "MATCH (d1:Drug {drug_id: 'D1'}), (d2:Drug {drug_id: 'D2'}), (h:Disease {name: 'Headache'}), (f:Disease {name: 'Fever'}), (s:Supplier {name: "
            "'Acme'}) "
            f"CREATE (d1)-[:{t} {{team_link: 1}}]->(h), (d1)-[:{t} {{team_link: 2}}]->(f), (d1)-[:{t} {{team_link: 3}}]->(d2), (s)-[:{t} {{team_link: "
            "4}]->(d1)",
            database_=linked.database,
        )
    linked.team = team_state(linked.driver, linked.database)
    made = linked.find("""
UPSERT {
  CONCEPT ?m1 { {type: "Note", name: "m1"} SET PROPOSITIONS { ("mentions", {id: "A:Drug:D1"}) } }
  CONCEPT ?m2 { {type: "Note", name: "m2"} }
  PROPOSITION ?a { ({id: "A:Drug:D1"}, "mentions", {type: "Disease", name: "Fever"}) }
  PROPOSITION ?b { ({id: "A:Drug:D2"}, "mentions", ?m2) }
}""")
    yield made
    linked.assert_team_unchanged()
    ok(linked.run('DELETE CONCEPT ?n DETACH WHERE { ?n {type: "Note"} FILTER(IN(?n.name, ["m1", "m2"])) }'))
    for pid in made["upsert_proposition_links"]:  # KIP_3002: the test deleted it already
        gone = linked.run("DELETE PROPOSITIONS ?l WHERE { ?l (id: :p) }", p=pid)
        assert gone.get("result") == {"deleted_propositions": 1} or gone["error"]["code"] == "KIP_3002", gone
    linked.driver.execute_query("MATCH ()-[r]->() WHERE r.team_link IS NOT NULL DELETE r", database_=linked.database)
    linked.team = team_state(linked.driver, linked.database)


def test_a_team_relationship_of_a_memory_predicates_type_between_adopted_nodes_is_not_a_proposition(linked, team_mentions):
    assert linked.run('FIND(?x.name) WHERE { ?d {id: "A:Drug:D1"} ?x {type: "Disease"} (?d, "mentions", ?x) }') == {"result": ["Fever"]}
    assert linked.run('FIND(?y.id) WHERE { ?d {id: "A:Drug:D1"} ?y {type: "Drug"} (?d, "mentions", ?y) }') == {"result": []}
    assert linked.run('FIND(COUNT(?d)) WHERE { ?d {id: "A:Drug:D1"} (?d, "mentions", {type: "Disease", name: "Headache"}) }') == {"result": 0}
    assert linked.run('FIND(?d.id) WHERE { ?d {type: "Drug"} ({type: "Drug", name: "Aspirin"}, "mentions", ?d) }') == {"result": []}
    linked.assert_team_unchanged()


def test_a_team_relationship_from_a_node_the_mapping_does_not_adopt_is_not_a_proposition(linked, team_mentions):
    response = linked.run('FIND(?x.name) WHERE { ?d {id: "A:Drug:D1"} (?x, "mentions", ?d) }')
    assert response == {"result": ["m1"], "warnings": [MEMORY_END.format(v="x")]}
    assert linked.run('FIND(?n.name) WHERE { ?d {id: "A:Drug:D1"} ?n {type: "Note"} (?n, "mentions", ?d) }') == {"result": ["m1"]}
    linked.assert_team_unchanged()


def test_a_team_relationship_is_not_read_through_an_alternative_of_memory_predicates(linked, team_mentions):
    response = linked.run('FIND(?x.name) WHERE { ?d {id: "A:Drug:D1"} ?x {type: "Disease"} (?d, "mentions" | "suspected_for", ?x) }')
    assert response == {"result": ["Fever"]}
    linked.assert_team_unchanged()


def test_a_team_relationship_does_not_satisfy_not_or_optional_over_a_memory_predicate(linked, team_mentions):
    response = linked.run('FIND(?x.name) WHERE { ?d {id: "A:Drug:D1"} ?x {type: "Disease"} NOT { (?d, "mentions", ?x) } }')
    assert response == {"result": ["Headache"]}
    response = linked.run('FIND(?x.name, ?d.id) WHERE { ?x {type: "Disease"} OPTIONAL { ?d {type: "Drug"} (?d, "mentions", ?x) } } ORDER BY ?x.name')
    assert response == {"result": [["Fever", "Headache"], ["A:Drug:D1", None]]}
    linked.assert_team_unchanged()


def test_a_team_relationship_is_not_read_by_a_predicate_variable(linked, team_mentions):
    response = linked.run('FIND(?p, ?x.name) WHERE { ?d {id: "A:Drug:D1"} ?x {type: "Disease"} (?d, ?p, ?x) } ORDER BY ?p')
    assert response == {"result": [["mentions", "suspected_for", "treats"], ["Fever", "Fever", "Headache"]]}
    assert linked.run('FIND(?p) WHERE { ?d {id: "A:Drug:D1"} ?y {type: "Drug"} (?d, ?p, ?y) }') == {"result": []}
    assert linked.run('FIND(?p) WHERE { ?n {type: "Note", name: "m1"} ?d {id: "A:Drug:D1"} (?n, ?p, ?d) }') == {"result": ["mentions"]}
    linked.assert_team_unchanged()


def test_a_path_over_a_memory_predicate_does_not_walk_the_team_relationships(linked, team_mentions):
    # KIP's links: m1 → D1 → Fever; the team's D1 → D2 (→ m2 by a memory link) and D1 → Headache are no hops
    assert linked.run('FIND(?x.name) WHERE { ?n {type: "Note", name: "m1"} (?n, "mentions"{1,3}, ?x) }') == {
        "result": [],
        "warnings": [MEMORY_END.format(v="x")],
    }
    assert linked.run('FIND(?x.id) WHERE { ?x {type: "Drug"} ?n {type: "Note", name: "m1"} (?n, "mentions"{1,3}, ?x) }') == {"result": ["A:Drug:D1"]}
    assert linked.run('FIND(?x.name) WHERE { ?x {type: "Disease"} ?n {type: "Note", name: "m1"} (?n, "mentions"{2,3}, ?x) }') == {"result": ["Fever"]}
    assert linked.run('FIND(?n.name) WHERE { ?x {type: "Note", name: "m2"} (?n, "mentions"{1,3}, ?x) }') == {
        "result": [],
        "warnings": [MEMORY_END.format(v="n")],
    }
    assert linked.run('FIND(?b.id) WHERE { ?a {id: "A:Drug:D1"} ?b {id: "A:Drug:D2"} (?a, "mentions"{1,1}, ?b) }') == {"result": []}
    linked.assert_team_unchanged()


def test_with_the_option_off_a_team_relationship_at_an_adopted_node_is_not_a_proposition(linked, team_mentions):
    """The default namespace adopts the graph without link_memory: no memory proposition touches an
    adopted concept, so a memory predicate at one matches nothing — not the team's ``mentions``."""
    default = linked.default.nexus
    for command in (
        'FIND(?x) WHERE { ?d {id: "A:Drug:D1"} (?d, "mentions", ?x) }',
        'FIND(?x) WHERE { ?d {id: "A:Drug:D1"} (?x, "mentions", ?d) }',
        'FIND(?x) WHERE { ?d {id: "A:Drug:D1"} ?x {type: "Disease"} (?d, "mentions", ?x) }',
        'FIND(?x) WHERE { ?d {id: "A:Drug:D1"} (?d, "mentions"{1,3}, ?x) }',
    ):
        assert default.execute_kip(command) == {"result": []}, command
    linked.assert_team_unchanged()


def test_writes_on_a_link_beside_a_team_relationship_of_its_type_leave_the_team_relationship_alone(linked, team_mentions):
    """D1 → Fever is both a memory proposition (its native relationship carries kip_id) and the team's
    own ``mentions`` relationship: UPDATE, DELETE ATTRIBUTES and DELETE PROPOSITIONS change the
    proposition only — the team's relationship keeps its properties and stays (fingerprint)."""
    where = '?d {id: "A:Drug:D1"} ?x {type: "Disease", name: "Fever"} ?l (?d, "mentions", ?x)'
    assert linked.run(f"UPDATE ?l SET ATTRIBUTES {{ weight: 2, seen: true }} WHERE {{ {where} }}") == {"result": {"matched": 1, "updated": 1}}
    assert linked.run(f'DELETE ATTRIBUTES {{"seen"}} FROM ?l WHERE {{ {where} }}') == {"result": {"updated_concepts": 0, "updated_propositions": 1}}
    assert linked.run(f"FIND(?l.attributes) WHERE {{ {where} }}") == {"result": [{"weight": 2}]}
    linked.assert_team_unchanged()
    assert linked.run(f"DELETE PROPOSITIONS ?l WHERE {{ {where} }}") == {"result": {"deleted_propositions": 1}}
    rels = linked.driver.execute_query(
        "MATCH (:Drug {drug_id: 'D1'})-[r:mentions|`kip.linked:mentions`]->(:Disease {name: 'Fever'}) RETURN properties(r) AS p", database_=linked.database
    ).records
    assert [r["p"] for r in rels] == [{"team_link": 2}]  # KIP's relationship went with the proposition; the team's stayed
    linked.assert_team_unchanged()


@pytest.mark.parametrize(
    "command, result",
    [
        (
            'DELETE PROPOSITIONS ?l WHERE { ?d {id: "A:Drug:D1"} (?d, "mentions", {type: "Disease", name: "Headache"}) ?l (?n, "mentions", ?d) }',
            {"deleted_propositions": 0},
        ),
        (
            'UPDATE ?n SET ATTRIBUTES { flag: true } WHERE { ?n {type: "Note"} ?d {id: "A:Drug:D1"} ?y {type: "Drug"} (?n, "mentions", ?d) (?d, "mentions", '
            "?y) }",
            {"matched": 0, "updated": 0},
        ),
        (
            'DELETE CONCEPT ?n DETACH WHERE { ?n {type: "Note", name: "m2"} ?d {type: "Drug"} (?d, "mentions", ?n) ?e {id: "A:Drug:D1"} (?e, "mentions", ?d) }',
            {"deleted_concepts": 0, "deleted_propositions": 0},
        ),
        (
            'DELETE PROPOSITIONS ?l WHERE { ?n {type: "Note", name: "m1"} ?x {type: "Drug"} (?n, "mentions"{2,3}, ?x) ?l (?x, "mentions", ?m) }',
            {"deleted_propositions": 0},
        ),
    ],
)
def test_a_write_is_not_selected_through_a_team_relationship_of_a_memory_predicates_type(linked, team_mentions, command, result):
    """Memory writes whose WHERE would hold only over the team's own ``mentions`` (D1 → Headache,
    D1 → D2, and the walk m1 → D1 → D2) select nothing: no memory element is changed because of
    the team's data, and the team's relationships are never written."""
    assert linked.run(command) == {"result": result}
    linked.assert_team_unchanged()


@pytest.mark.parametrize(
    "command, option",
    [
        ('FIND(?n.name, ?m.name) WHERE { ?n {type: "Note"} ?m {type: "Note"} (?n, "about", ?m) }', True),
        ('FIND(?n.name) WHERE { ?n {type: "Note", name: "a"} ?m {type: "Note"} (?n, "about" | "mentions", ?m) NOT { (?m, "about", ?n) } }', True),
        ('FIND(?l) WHERE { ?n {type: "Note"} ?l (?n, "about", {type: "Note", name: "b"}) }', True),
        # a walk may pass through adopted nodes only with the option on (then every hop needs kip_id)
        ('FIND(?n) WHERE { ?n {type: "Note", name: "a"} ?m {type: "Note", name: "b"} (?n, "about"{1,3}, ?m) }', False),
    ],
)
def test_memory_only_patterns_compile_as_without_an_adoption(command, option):
    """The kip_id test is added only where a memory predicate's relationship may touch an adopted
    node: between memory concepts the statement is the one compiled with nothing adopted."""
    import kip2cypher

    mapping = adoption.parse(LINKED if option else MAPPING)
    assert kip2cypher.compile(command, adoption=mapping)[0] == kip2cypher.compile(command)[0]

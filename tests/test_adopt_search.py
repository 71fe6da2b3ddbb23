"""EXPORT, semantic SEARCH and SEARCH PROPOSITION over adopted data (docs/adopt.md), on a real Neo4j.

The world is tests/test_adopt.py's: the team's pharmacy / staff graph (duplicate drug names, a
drug without a name, a date property) adopted in the default namespace next to KIP memory.
Every test ends by checking the team's graph fingerprint: KIP never changed it.
"""
from __future__ import annotations

import test_adopt
from test_adopt import World, _open, code, ok

#: tests/test_adopt.py's module fixture (built again for this module).
world = test_adopt.world

COPY = "adoptcopy"


def _copy(neo4j_server):
    """A fresh namespace without the mapping (the world fixture wiped the database), where
    capsules of adopted data become memory."""
    nexus = _open(neo4j_server, COPY)
    nexus.bootstrap()
    return nexus


def _pages(w: World, command: str, limit: int) -> list[dict]:
    """Every page of an EXPORT, following next_cursor."""
    pages, cursor = [], None
    while True:
        suffix = f' LIMIT {limit}' + (f' CURSOR "{cursor}"' if cursor else "")
        response = w.nexus.execute_kip(command + suffix)
        pages.append(ok(response))
        cursor = response.get("next_cursor")
        if cursor is None:
            return pages


# ---------------------------------------------------------------- EXPORT
def test_export_of_adopted_data_round_trips_into_a_namespace_without_the_mapping(world, neo4j_server):
    definitions = world.find('EXPORT ?t WHERE { ?t {type: "$ConceptType"} FILTER(?t.name == "Employee") }')["capsule"]
    predicate = world.find('EXPORT ?t WHERE { ?t {type: "$PropositionType", name: "reports_to"} }')["capsule"]
    people = world.find('EXPORT ?e WHERE { ?e {type: "Employee"} }')
    links = world.find('EXPORT ?l WHERE { ?l (?a, "reports_to", ?b) }')
    assert (people["concepts"], links["propositions"]) == (3, 2)
    assert "A:" not in people["capsule"] + links["capsule"] and "adopted" not in people["capsule"]
    assert '"2020-01-02"' in people["capsule"]  # a date, as FIND shows it
    copy = _copy(neo4j_server)
    try:
        for capsule in (definitions, predicate, people["capsule"], links["capsule"]):
            ok(copy.execute_kip(capsule))
        query = 'FIND(?e.name, ?e.attributes, ?b.name) WHERE { ?e {type: "Employee"} OPTIONAL { (?e, "reports_to", ?b) } } ORDER BY ?e.name'
        assert ok(copy.execute_kip(query)) == world.find(query)
        copied = ok(copy.execute_kip('FIND(?l) WHERE { ?l (?a, "reports_to", ?b) }'))
        assert all(link["id"].startswith("P:") for link in copied)  # memory now, not adopted
        # applying the capsule again is idempotent
        ok(copy.execute_kip(people["capsule"]))
        assert len(ok(copy.execute_kip('FIND(?e) WHERE { ?e {type: "Employee"} }'))) == 3
    finally:
        copy.close()
    world.assert_team_unchanged()


def test_export_pages_of_adopted_data_are_a_total_order(world):
    whole = world.find('EXPORT ?d WHERE { ?d {type: "Disease"} }')
    pages = _pages(world, 'EXPORT ?d WHERE { ?d {type: "Disease"} }', 1)
    assert [p["concepts"] for p in pages] == [1, 1]
    assert "Fever" in pages[0]["capsule"] and "Headache" in pages[1]["capsule"]
    assert sum(p["concepts"] for p in pages) == whole["concepts"] == 2
    links = _pages(world, 'EXPORT ?l WHERE { ?l (?a, "reports_to", ?b) }', 1)
    assert [p["propositions"] for p in links] == [1, 1] and links[0]["capsule"] != links[1]["capsule"]


def test_a_capsule_of_adopted_data_is_refused_where_the_mapping_applies(world):
    capsule = world.find('EXPORT ?d WHERE { ?d {type: "Disease", name: "Fever"} }')["capsule"]
    assert code(world.nexus.execute_kip(capsule)) == "KIP_3004"
    world.assert_team_unchanged()


def test_export_of_duplicate_names_is_refused_naming_them(world):
    response = world.nexus.execute_kip('EXPORT ?d WHERE { ?d {type: "Drug"} FILTER(?d.name == "Aspirin") }')
    assert code(response) == "KIP_2002"
    message = response["error"]["message"]
    assert "Drug 'Aspirin' (2 nodes)" in message and "{type, name}" in message and "FILTER" in response["error"]["hint"]
    one = world.find('EXPORT ?d WHERE { ?d {type: "Drug"} FILTER(?d.id == "A:Drug:D1") }')
    assert one["concepts"] == 1 and '"Aspirin"' in one["capsule"] and "risk: 2" in one["capsule"]


def test_export_of_nodes_without_the_name_property_is_refused(world):
    response = world.nexus.execute_kip('EXPORT ?d WHERE { ?d {type: "Drug"} FILTER(?d.attributes.risk < 2) }')
    assert code(response) == "KIP_2002" and "1 exported element(s)" in response["error"]["message"]


def test_export_of_links_to_an_ambiguous_endpoint_is_refused(world):
    """Only D1's link is exported, but {type: "Drug", name: "Aspirin"} would find D2's copy as well."""
    response = world.nexus.execute_kip('EXPORT ?l WHERE { ?l ({id: "A:Drug:D1"}, "treats", ?x) }')
    assert code(response) == "KIP_2002" and "Drug 'Aspirin' (2 nodes)" in response["error"]["message"]
    dry = world.nexus.execute_kip('EXPORT ?l WHERE { ?l (?d, "treats", ?x) }', dry_run=True)
    assert "error" not in dry, dry
    world.assert_team_unchanged()

"""KIP living inside the team's own Neo4j (issue 17, docs/storage-model.md "Coexistence").

In the default namespace a memory proposition's native relationship has the bare predicate
name as its type, so a team graph of ``:Doc`` nodes with ``mentions`` / ``knows`` / ``cites``
relationships sits next to memory relationships of the same types. A pattern whose endpoints
are both unpinned (``(?a, "mentions", ?b)``) read the team's relationships as propositions and
returned the team's nodes as concepts (``id: null``); writes selected through such a pattern
picked their targets there. Each test asserts the whole response and, for writes, that the
team's nodes and relationships are unchanged (``team_fingerprint``, as tests/test_adopt.py)."""

from __future__ import annotations

import pytest
from test_adopt import _open, _wipe, ok, team_fingerprint
from test_silent_spec import may_bind

import kip2cypher

MEMORY = """
UPSERT {
  CONCEPT ?pt { {type: "$ConceptType", name: "Person"} SET ATTRIBUTES { description: "A person." } }
  CONCEPT ?m { {type: "$PropositionType", name: "mentions"} SET ATTRIBUTES { description: "Someone mentions someone." } }
  CONCEPT ?k { {type: "$PropositionType", name: "knows"} SET ATTRIBUTES { description: "Someone knows someone." } }
  CONCEPT ?c { {type: "$PropositionType", name: "cites"} SET ATTRIBUTES { description: "Someone cites someone." } }
  CONCEPT ?l { {type: "$PropositionType", name: "likes"} SET ATTRIBUTES { description: "Someone likes someone (no memory proposition uses it)." } }
  CONCEPT ?cy { {type: "Person", name: "Cy"} }
  CONCEPT ?bob { {type: "Person", name: "Bob"} SET PROPOSITIONS { ("knows", ?cy) ("cites", ?cy) } }
  CONCEPT ?ann { {type: "Person", name: "Ann"} SET PROPOSITIONS { ("mentions", ?bob) ("cites", ?bob) } }
}
"""

#: The team's graph: relationships typed exactly like the memory predicates, between :Doc nodes.
TEAM = """
CREATE (d1:Doc {title: 'd1'}), (d2:Doc {title: 'd2'}), (d3:Doc {title: 'd3'}),
       (d1)-[:mentions {weight: 1}]->(d2), (d2)-[:mentions]->(d3),
       (d1)-[:knows]->(d3), (d3)-[:knows]->(d1),
       (d1)-[:cites]->(d2), (d2)-[:cites]->(d3), (d3)-[:likes]->(d2)
"""


@pytest.fixture
def both(neo4j_server):
    """A memory graph and the team's graph in the default namespace; the team's fingerprint."""
    nexus = _open(neo4j_server)
    _wipe(nexus.driver, nexus.database)
    nexus.driver.execute_query(TEAM, database_=nexus.database)
    nexus.bootstrap()
    ok(nexus.execute_kip(MEMORY))
    team = team_fingerprint(nexus.driver, nexus.database)
    assert team["nodes"] == 3 and team["relationships"] == 7
    yield nexus, team
    assert team_fingerprint(nexus.driver, nexus.database) == team
    nexus.driver.execute_query("MATCH (d:Doc) DETACH DELETE d", database_=nexus.database)
    nexus.close()


def run(nexus, command, **params):
    return nexus.execute_kip(command, parameters=params or None)


def memory(nexus) -> dict:
    """Every memory concept's (type, name) and proposition's (subject, predicate, object) names."""
    return ok(run(nexus, 'FIND(?a.name, ?p, ?b.name) WHERE { (?a, ?p, ?b) FILTER(?p != "belongs_to_domain") } ORDER BY ?a.name, ?p'))


INTACT = [["Ann", "Ann", "Bob", "Bob"], ["cites", "mentions", "cites", "knows"], ["Bob", "Bob", "Cy", "Cy"]]


def test_free_free_find_does_not_return_the_teams_nodes_as_concepts(both):
    nexus, _ = both
    assert run(nexus, 'FIND(?a.type, ?a.name, ?b.name) WHERE { (?a, "mentions", ?b) }') == {"result": [["Person"], ["Ann"], ["Bob"]]}
    rows = ok(run(nexus, 'FIND(?a, ?b) WHERE { (?a, "mentions", ?b) }'))
    assert [[c["name"] for c in column] for column in rows] == [["Ann"], ["Bob"]]
    assert all(c["id"].startswith("C:") for column in rows for c in column)


def test_count_over_a_free_free_pattern_does_not_count_the_teams_relationships(both):
    nexus, _ = both
    assert run(nexus, 'FIND(COUNT(?a)) WHERE { (?a, "knows", ?b) }') == {"result": 1}


def test_join_starting_with_a_free_pattern_reads_memory_only(both):
    """A join of free patterns reads memory relationships by their type alone (``kip:mentions``,
    KIP's label space): no ``kip_id`` test left to re-order the joins; the team's
    d1-mentions->d2-cites->d3 stays out."""
    nexus, _ = both
    command = 'FIND(?a.name, ?b.name, ?c.name) WHERE { (?a, "mentions", ?b) (?b, "cites", ?c) }'
    cypher = kip2cypher.compile(command)[0]["cypher"]
    assert "kip_id" not in cypher and "kip_link" not in cypher and "-[:`kip:mentions`]->" in cypher
    assert run(nexus, command) == {"result": [["Ann"], ["Bob"], ["Cy"]]}


def test_predicate_variable_with_free_endpoints_reads_memory_only(both):
    nexus, _ = both
    assert run(nexus, 'FIND(?a.name, ?p, ?b.name) WHERE { (?a, ?p, ?b) FILTER(?p != "belongs_to_domain") } ORDER BY ?a.name, ?p') == {"result": INTACT}


def test_path_with_a_free_start_does_not_walk_the_teams_relationships(both):
    nexus, _ = both
    assert run(nexus, 'FIND(?a.name, ?b.name) WHERE { (?a, "cites"{1,2}, ?b) } ORDER BY ?a.name, ?b.name') == {
        "result": [["Ann", "Ann", "Bob"], ["Bob", "Cy", "Cy"]]
    }
    assert run(nexus, 'FIND(COUNT(?a)) WHERE { (?a, "knows"{1,3}, ?b) }') == {"result": 1}
    # a minimum of 0: every KIP element begins a walk of length 0 (the team's :Doc nodes do not)
    assert run(nexus, 'FIND(?a.name, ?b.name) WHERE { (?a, "cites"{0,1}, ?b) FILTER(?a.type == "Person") } ORDER BY ?a.name, ?b.name') == {
        "result": [["Ann", "Ann", "Bob", "Bob", "Cy"], ["Ann", "Bob", "Bob", "Cy", "Cy"]],
        "warnings": [may_bind("?a.type", "FILTER", "a", "proposition", "type")],  # ?a is a free endpoint (docs/interop.md A5)
    }
    # the team's :likes (d3 → d2) would chain d2 → d3 → d2 if a walk left KIP's relationships
    assert run(nexus, 'FIND(COUNT(?a)) WHERE { (?a, "likes"{1,5}, ?b) }') == {"result": 0}


def test_alternatives_with_free_endpoints_read_memory_only(both):
    nexus, _ = both
    assert run(nexus, 'FIND(?a.name, ?b.name) WHERE { (?a, "mentions" | "knows", ?b) } ORDER BY ?a.name') == {"result": [["Ann", "Bob"], ["Bob", "Cy"]]}


def test_not_over_a_free_pattern_is_not_satisfied_by_the_teams_relationships(both):
    nexus, _ = both
    assert run(nexus, 'FIND(?a.name) WHERE { ?a {type: "Person"} NOT { (?x, "likes", ?y) } } ORDER BY ?a.name') == {"result": ["Ann", "Bob", "Cy"]}


def test_optional_over_a_free_pattern_binds_no_team_node(both):
    nexus, _ = both
    assert run(nexus, 'FIND(?c.name, ?x.name) WHERE { ?c {type: "Person", name: "Cy"} OPTIONAL { (?x, "mentions", ?y) } }') == {"result": [["Cy"], ["Ann"]]}
    assert run(nexus, 'FIND(?c.name, ?x) WHERE { ?c {type: "Person", name: "Cy"} OPTIONAL { (?x, "likes", ?y) } }') == {"result": [["Cy"], [None]]}


def test_union_branches_with_free_patterns_read_memory_only(both):
    nexus, _ = both
    assert run(nexus, 'FIND(?x.name) WHERE { (?x, "mentions", ?y) UNION { (?x, "knows", ?y) } } ORDER BY ?x.name') == {"result": ["Ann", "Bob"]}


def test_update_selected_through_a_free_pattern_writes_no_team_node(both):
    nexus, _ = both
    assert run(nexus, 'UPDATE ?b SET ATTRIBUTES { seen: true } WHERE { (?a, "mentions", ?b) }') == {"result": {"matched": 1, "updated": 1}}
    assert run(nexus, 'FIND(?b.name) WHERE { ?b {type: "Person"} FILTER(?b.attributes.seen == true) }') == {"result": ["Bob"]}


def test_delete_propositions_is_not_selected_through_the_teams_relationships(both):
    nexus, _ = both
    assert run(nexus, 'DELETE PROPOSITIONS ?l WHERE { (?x, "likes", ?y) ?l (?s, "knows", ?o) }') == {"result": {"deleted_propositions": 0}}
    assert memory(nexus) == INTACT


def test_delete_concept_selected_through_a_free_pattern_deletes_no_team_node(both):
    nexus, _ = both
    assert run(nexus, 'DELETE CONCEPT ?b DETACH WHERE { (?a, "likes", ?b) }') == {"result": {"deleted_concepts": 0, "deleted_propositions": 0}}
    assert memory(nexus) == INTACT
    assert run(nexus, 'DELETE CONCEPT ?b DETACH WHERE { (?a, "mentions", ?b) }') == {"result": {"deleted_concepts": 1, "deleted_propositions": 4}}
    assert memory(nexus) == {"result": [[], [], []]}["result"]


def test_export_over_a_free_pattern_exports_memory_only(both):
    nexus, _ = both
    capsule = 'UPSERT {\n  CONCEPT ?c1 {\n    {type: "Person", name: "Bob"}\n  }\n}'
    assert run(nexus, 'EXPORT ?b WHERE { (?a, "mentions", ?b) }') == {"result": {"capsule": capsule, "concepts": 1, "propositions": 0}}


@pytest.mark.parametrize("namespace, prefix", [("", "kip:"), ("alpha", "kip.alpha:")])
def test_free_patterns_need_no_kip_id_test_in_any_namespace(namespace, prefix):
    """Every namespace's predicate types are in KIP's label space (``kip:mentions``,
    ``kip.alpha:mentions``), which no team uses: a free pattern is exact by its type alone, and a
    predicate variable tests the type's prefix (no property read)."""
    from kip2cypher.config import Settings
    from kip2cypher.lower.compile import compile_command

    def cypher(text: str) -> str:
        return compile_command(text, settings=Settings(namespace=namespace))[0]["cypher"]

    free = cypher('FIND(?a, ?b) WHERE { (?a, "mentions", ?b) }')
    assert "kip_id" not in free and f"-[:`{prefix}mentions`]->" in free
    assert "kip_id" not in cypher('FIND(?a) WHERE { ?a {type: "Person"} (?a, "mentions", ?b) }')
    variable = cypher("FIND(?a, ?p, ?b) WHERE { (?a, ?p, ?b) } LIMIT 5")
    assert "kip_id" not in variable and f"STARTS WITH '{prefix}'" in variable

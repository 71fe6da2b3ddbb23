"""EXPORT, semantic SEARCH and SEARCH PROPOSITION over adopted data (docs/adopt.md), on a real Neo4j.

The world is tests/test_adopt.py's: the team's pharmacy / staff graph (duplicate drug names, a
drug without a name, a date property) adopted in the default namespace next to KIP memory.
Every test ends by checking the team's graph fingerprint: KIP never changed it.
"""

from __future__ import annotations

import json

import pytest
import test_adopt
from test_adopt import World, _open, code, ok

from kip2cypher import adoption, embedding
from kip2cypher.errors import KipError

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
        suffix = f" LIMIT {limit}" + (f' CURSOR "{cursor}"' if cursor else "")
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


# ---------------------------------------------------------------- semantic SEARCH
@pytest.fixture(scope="module")
def embedded(world):
    """The adopted concepts embedded with the bundled model (as the memory's SEARCH vectors are)."""
    model = embedding.MiniLMEmbedder()
    world.nexus.settings = world.nexus.settings.replace(embedder=model)
    report = world.nexus.embed_adopted()
    world.assert_team_unchanged()
    return report


def test_embed_reports_counts_and_reembeds_only_what_changed(world, embedded):
    counts = {c["type"]: (c["nodes"], c["embedded"]) for c in embedded["types"]}
    assert counts == {"Drug": (2, 2), "Disease": (2, 2), "Employee": (3, 3)}  # the drug without name or summary has no text
    again = world.nexus.embed_adopted()
    assert [c["embedded"] for c in again["types"]] == [0, 0, 0] and again["dropped"] == 0
    assert world.nexus.stored_adoption().embedded
    world.assert_team_unchanged()


def test_semantic_search_finds_adopted_concepts_by_meaning(world, embedded):
    hits = world.find('SEARCH CONCEPT "medicine for fever and pain" MODE "semantic" LIMIT 3')
    assert hits[0]["id"] == "A:Drug:D1" and hits[0]["metadata"]["adopted"] is True
    assert 0 < hits[0]["metadata"]["_score"] <= 1 and hits[0]["attributes"] == {"approved": True, "risk": 2}
    people = world.find('SEARCH CONCEPT "the chief executive" WITH TYPE "Employee" MODE "semantic" LIMIT 5')
    assert people and {h["type"] for h in people} == {"Employee"}
    assert all(h["type"] == "Disease" for h in world.find('SEARCH CONCEPT "illness" WITH TYPE "Disease" MODE "semantic"'))
    assert all(not h["id"].startswith("A:") for h in world.find('SEARCH CONCEPT "medicine" WITH TYPE "Note" MODE "semantic"'))


def test_async_nexus_searches_adopted_vectors(world, embedded, neo4j_server):
    import anyio

    from kip2cypher import connect_async
    from kip2cypher.config import Settings

    settings = Settings(embedder=embedding.MiniLMEmbedder())

    async def search():
        async with connect_async(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=settings) as nexus:
            return await nexus.execute_kip('SEARCH CONCEPT "medicine for fever and pain" WITH TYPE "Drug" MODE "semantic" LIMIT 1')

    assert ok(anyio.run(search))[0]["id"] == "A:Drug:D1"


def test_hybrid_search_fuses_adopted_keyword_and_vector_hits(world, embedded):
    hits = world.find('SEARCH CONCEPT "aspirin" LIMIT 3')  # hybrid: the default with an embedder
    assert hits[0]["id"] in ("A:Drug:D1", "A:Drug:D2") and hits[0]["metadata"]["_score"] > 0.5


def test_a_hit_whose_text_changed_since_it_was_embedded_is_dropped_and_said(world, embedded):
    query = 'SEARCH CONCEPT "headache" WITH TYPE "Disease" MODE "semantic"'
    assert "A:Disease" in json.dumps(world.find(query))
    world.driver.execute_query("MATCH (d:Disease {name: 'Headache'}) SET d.name = 'Cephalalgia'", database_=world.database)
    try:
        response = world.nexus.execute_kip(query)
        assert "Cephalalgia" not in json.dumps(response["result"]) and "Headache" not in json.dumps(response["result"])
        assert any("changed its text" in w and "--embed" in w for w in response["warnings"])
        assert world.nexus.embed_adopted()["types"][1]["embedded"] == 1  # only the changed node
        fresh = world.nexus.execute_kip(query)
        assert "warnings" not in fresh and "Cephalalgia" in json.dumps(fresh["result"])
    finally:
        world.driver.execute_query("MATCH (d:Disease {name: 'Cephalalgia'}) SET d.name = 'Headache'", database_=world.database)
        world.nexus.embed_adopted()


def test_shadows_of_nodes_gone_are_dropped(world, embedded):
    world.driver.execute_query("CREATE (:Disease {name: 'Gout', icd10: 'M10'})", database_=world.database)
    try:
        assert world.nexus.embed_adopted()["types"][1]["embedded"] == 1
    finally:
        world.driver.execute_query("MATCH (d:Disease {name: 'Gout'}) DELETE d", database_=world.database)
    response = world.nexus.execute_kip('SEARCH CONCEPT "gout" WITH TYPE "Disease" MODE "semantic"')
    assert "Gout" not in json.dumps(response["result"]) and response.get("warnings")
    assert world.nexus.embed_adopted()["dropped"] == 1
    world.team = test_adopt.team_fingerprint(world.driver, world.database)  # the test changed the team graph itself


def test_cli_adopt_embed_in_a_namespace(world, neo4j_server, tmp_path):
    from click.testing import CliRunner

    from kip2cypher.cli import main

    path = tmp_path / "mapping.toml"
    path.write_text(test_adopt.MAPPING, encoding="utf-8")
    env = {"NEO4J_URI": neo4j_server.uri, "NEO4J_DATABASE": neo4j_server.database, "KIP2CYPHER_NAMESPACE": "embedns"}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    runner = CliRunner()
    out = runner.invoke(main, ["adopt", str(path), "--embed"], env=env, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "vectors of type Drug: 2 node(s) with text, 2 (re-)embedded" in out.output
    assert "vectors of predicate treats: 3 relationship(s), 3 (re-)embedded" in out.output
    found = runner.invoke(main, ["call", 'SEARCH CONCEPT "fever medicine" WITH TYPE "Drug" MODE "semantic" LIMIT 1'], env=env, catch_exceptions=False)
    assert json.loads(found.stdout)["result"][0]["id"] == "A:Drug:D1"
    again = runner.invoke(main, ["adopt", str(path)], env=env, catch_exceptions=False)
    assert "mapping: unchanged" in again.output  # the vectors stay queried

    removed = world.nexus.drop_namespace("embedns")
    assert removed["adopted_vectors"] == 7 and "kip_adopted_embedding__embedns" in removed["schema_objects"]
    assert removed["adopted_relationship_vectors"] == 6 and "kip_adopted_relationship_embedding__embedns" in removed["schema_objects"]
    world.assert_team_unchanged()


# ---------------------------------------------------------------- SEARCH PROPOSITION
@pytest.fixture(scope="module")
def propositions(world, neo4j_server):
    """Namespace "relsearch" adopts the graph with text on ``treats`` and the relationship index."""
    world.driver.execute_query(
        "MATCH (:Drug {drug_id: 'D1'})-[t:TREATS]->(:Disease {name: 'Headache'}) SET t.note = 'first-line therapy for tension headaches'",
        database_=world.database,
    )
    world.team = test_adopt.team_fingerprint(world.driver, world.database)  # the test's own change
    # Neo4j keeps one index per schema: the concept text properties differ from the default
    # namespace's, or its "IF NOT EXISTS" would skip this namespace's index (reported in the branch notes)
    mapping = test_adopt.MAPPING.replace('attributes = ["evidence"]', 'attributes = ["evidence", "note"]\ntext = ["note"]').replace(
        'text = ["name", "summary"]', 'text = ["name"]'
    )
    nexus = _open(neo4j_server, "relsearch")
    report = nexus.adopt(adoption.parse(mapping), create_index=True)
    assert report["relationship_text_index"]["state"] in ("created", "present") and nexus.stored_adoption().relationships_indexed
    world.assert_team_unchanged()
    yield nexus
    nexus.close()


def test_search_proposition_finds_adopted_relationships_by_their_text(world, propositions):
    hits = ok(propositions.execute_kip('SEARCH PROPOSITION "tension headaches" MODE "keyword"'))
    assert hits[0]["predicate"] == "treats" and hits[0]["subject"] == "A:Drug:D1" and hits[0]["id"].startswith("A:treats:@")
    assert hits[0]["attributes"]["note"].startswith("first-line") and hits[0]["metadata"]["adopted"] is True
    assert 0 < hits[0]["metadata"]["_score"] <= 1
    hybrid = ok(propositions.execute_kip('SEARCH PROPOSITION "tension headaches" LIMIT 3'))  # the keyword half of hybrid
    assert hits[0]["id"] in [h["id"] for h in hybrid]
    world.assert_team_unchanged()


def test_search_proposition_grounds_adopted_predicates_by_name_and_with_type(world, propositions):
    treats = ok(propositions.execute_kip('SEARCH PROPOSITION "treats" MODE "keyword" LIMIT 10'))
    adopted_hits = [h for h in treats if h["id"].startswith("A:")]
    assert len(adopted_hits) == 3 and {h["predicate"] for h in adopted_hits} == {"treats"}  # not the TREATS to a Person
    assert all(h["metadata"]["_score"] == 1.0 for h in adopted_hits)
    bosses = ok(propositions.execute_kip('SEARCH PROPOSITION "reports to" WITH TYPE "reports_to" MODE "keyword"'))
    assert len(bosses) == 2 and {h["predicate"] for h in bosses} == {"reports_to"}
    assert ok(propositions.execute_kip('SEARCH PROPOSITION "treats" WITH TYPE "reports_to" MODE "keyword"')) == []
    memory_only = ok(propositions.execute_kip('SEARCH PROPOSITION "tension" WITH TYPE "belongs_to_domain" MODE "keyword"'))
    assert all(not h["id"].startswith("A:") for h in memory_only)
    assert "error" not in propositions.execute_kip('SEARCH PROPOSITION "treats"', dry_run=True)
    world.assert_team_unchanged()


def test_an_index_another_namespace_holds_is_refused_before_anything_is_written(world, neo4j_server):
    """Neo4j keeps one full-text index per schema: the same mapping's index in a second namespace
    would silently not exist (it failed in db.awaitIndex before)."""
    nexus = _open(neo4j_server, "sameindex")
    try:
        with pytest.raises(KipError) as err:
            nexus.adopt(adoption.parse(test_adopt.MAPPING), create_index=True)
        assert err.value.code == "KIP_2002" and "kip_adopted_text" in err.value.message and "`text`" in err.value.hint
        assert nexus.stored_adoption() is None
    finally:
        nexus.close()
    world.assert_team_unchanged()


# ---------------------------------------------------------------- semantic SEARCH PROPOSITION
TREATS_D1 = "MATCH (:Drug {drug_id: 'D1'})-[t:TREATS]->(:Disease {name: 'Headache'})"


@pytest.fixture(scope="module")
def embedded_propositions(world, propositions):
    """Namespace "relsearch" (``propositions``) with its adopted concepts and relationships embedded."""
    propositions.settings = propositions.settings.replace(embedder=embedding.MiniLMEmbedder())
    report = propositions.embed_adopted()
    world.assert_team_unchanged()
    return report


def _search(nexus, command: str) -> dict:
    response = nexus.execute_kip(command)
    assert "error" not in response, response
    return response


def test_embed_gives_adopted_relationships_vectors_and_reembeds_only_what_changed(world, propositions, embedded_propositions):
    counts = {c["predicate"]: (c["relationships"], c["embedded"]) for c in embedded_propositions["predicates"]}
    assert counts == {"treats": (3, 3), "reports_to": (2, 2), "contraindicated": (1, 1)}  # not the TREATS to a Person
    again = propositions.embed_adopted()
    assert [c["embedded"] for c in again["predicates"]] == [0, 0, 0] and again["dropped"] == 0
    assert propositions.stored_adoption().relationships_embedded
    world.assert_team_unchanged()


def test_semantic_search_proposition_finds_adopted_relationships_by_meaning(world, propositions, embedded_propositions):
    hits = _search(propositions, 'SEARCH PROPOSITION "first choice remedy for tension-type head pain" MODE "semantic" LIMIT 3')["result"]
    assert hits[0]["predicate"] == "treats" and hits[0]["subject"] == "A:Drug:D1" and hits[0]["id"].startswith("A:treats:@")
    assert hits[0]["attributes"]["note"].startswith("first-line") and hits[0]["metadata"]["adopted"] is True
    assert 0 < hits[0]["metadata"]["_score"] <= 1
    world.assert_team_unchanged()


def test_semantic_search_proposition_with_type_reads_only_that_predicate(world, propositions, embedded_propositions):
    bosses = _search(propositions, 'SEARCH PROPOSITION "Bob is managed by Ann" WITH TYPE "reports_to" MODE "semantic"')["result"]
    assert len(bosses) == 2 and {h["predicate"] for h in bosses} == {"reports_to"}
    assert all(h["subject"].startswith("A:Employee:") and h["id"].startswith("A:reports_to:@") for h in bosses)
    cures = _search(propositions, 'SEARCH PROPOSITION "Bob is managed by Ann" WITH TYPE "treats" MODE "semantic"')["result"]
    assert cures and {h["predicate"] for h in cures} == {"treats"}
    memory_only = _search(propositions, 'SEARCH PROPOSITION "headache" WITH TYPE "belongs_to_domain" MODE "semantic"')["result"]
    assert all(not h["id"].startswith("A:") for h in memory_only)
    world.assert_team_unchanged()


def test_hybrid_search_proposition_fuses_adopted_keyword_and_vector_hits(world, propositions, embedded_propositions):
    hits = _search(propositions, 'SEARCH PROPOSITION "first choice remedy for tension headaches" LIMIT 3')["result"]  # hybrid: the default
    treats_d1 = [h for h in hits if h["subject"] == "A:Drug:D1" and h["predicate"] == "treats"]
    assert treats_d1 and hits[0] == treats_d1[0] and hits[0]["metadata"]["_score"] > 0
    world.assert_team_unchanged()


def test_a_relationship_hit_whose_text_changed_since_it_was_embedded_is_dropped_and_said(world, propositions, embedded_propositions):
    query = 'SEARCH PROPOSITION "first choice remedy for tension-type head pain" WITH TYPE "treats" MODE "semantic"'
    world.driver.execute_query(TREATS_D1 + " SET t.note = 'reserved for migraine attacks'", database_=world.database)
    try:
        response = _search(propositions, query)
        assert "migraine" not in json.dumps(response["result"]) and "first-line" not in json.dumps(response["result"])
        assert any("adopted proposition(s)" in w and "changed its text" in w and "--embed" in w for w in response["warnings"])
        assert {c["predicate"]: c["embedded"] for c in propositions.embed_adopted()["predicates"]}["treats"] == 1  # only the changed one
        fresh = _search(propositions, query)
        assert "warnings" not in fresh and "migraine" in json.dumps(fresh["result"])
    finally:
        world.driver.execute_query(TREATS_D1 + " SET t.note = 'first-line therapy for tension headaches'", database_=world.database)
        propositions.embed_adopted()
    world.assert_team_unchanged()


def test_shadows_of_relationships_gone_are_dropped(world, propositions, embedded_propositions):
    """Last of the module: the team deletes a relationship (and the test makes it again)."""
    query = 'SEARCH PROPOSITION "must not be given for headache" WITH TYPE "contraindicated" MODE "semantic"'
    assert len(_search(propositions, query)["result"]) == 1
    world.driver.execute_query("MATCH (:Drug {drug_id: 'D2'})-[c:CONTRAINDICATED]->() DELETE c", database_=world.database)
    try:
        response = _search(propositions, query)
        assert response["result"] == [] and any("adopted proposition(s)" in w for w in response["warnings"])
        report = propositions.embed_adopted()
        assert report["dropped"] == 1 and {c["predicate"]: c["relationships"] for c in report["predicates"]}["contraindicated"] == 0
        assert "warnings" not in _search(propositions, query)
    finally:
        world.driver.execute_query(
            "MATCH (b:Drug {drug_id: 'D2'}), (h:Disease {name: 'Headache'}) CREATE (b)-[:CONTRAINDICATED]->(h)", database_=world.database
        )
        world.team = test_adopt.team_fingerprint(world.driver, world.database)  # the test changed the team graph itself

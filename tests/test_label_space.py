"""KIP memory in a label space of its own (issue 25, docs/storage-model.md "Label space").

A platform team's graph deliberately uses the very names KIP's standard capsules and the spec's
examples use for their types and predicates (``Person``, ``Event``, ``Domain``, ``Document``,
``Drug``, ``belongs_to_domain``, ``treats`` …), with its own constraints, range and full-text
indexes. Bootstrap with the standard capsules, every spec example and 1,000 KIP writes run in
the default namespace and in two named ones; afterwards every label count, relationship-type
count, property, index entry of the team's graph, and the answer of each of the team's own
Cypher queries, is what it was before. Under layout 1 the team's ``:Person`` count went from 12
to 14 after the first bootstrap (``$self`` and ``$system`` carried the label ``Person``)."""

from __future__ import annotations

import parser_fixtures
import pytest
from test_adopt import _open, _wipe, ok, team_fingerprint

from kip2cypher.cypher import storage

#: The team's schema: the names KIP uses, owned by the team.
TEAM_SCHEMA = (
    "CREATE CONSTRAINT team_service_name IF NOT EXISTS FOR (s:Service) REQUIRE s.name IS UNIQUE",
    "CREATE INDEX team_person_name IF NOT EXISTS FOR (p:Person) ON (p.name)",
    "CREATE INDEX team_event_type IF NOT EXISTS FOR (e:Event) ON (e.type)",
    "CREATE FULLTEXT INDEX team_people_text IF NOT EXISTS FOR (n:Person|Document) ON EACH [n.name, n.description]",
    "CREATE INDEX team_treats_since IF NOT EXISTS FOR ()-[r:treats]-() ON (r.since)",
)
TEAM_INDEXES = ("team_service_name", "team_person_name", "team_event_type", "team_people_text", "team_treats_since")

#: The team's graph: 12 people, 5 events, 4 documents, domains, services, incidents, and
#: relationships named like KIP's predicates.
TEAM_GRAPH = """
UNWIND range(1, 12) AS i CREATE (:Person {name: 'person ' + i, description: 'on call ' + i, type: 'employee'})
WITH count(*) AS _
UNWIND range(1, 5) AS i CREATE (:Event {name: 'event ' + i, type: 'deploy'})
WITH count(*) AS _
UNWIND range(1, 4) AS i CREATE (:Document {name: 'runbook ' + i, description: 'how to page person ' + i})
WITH count(*) AS _
CREATE (ops:Domain {name: 'Operations'}), (core:Domain {name: 'CoreSchema'}),
       (api:Service {name: 'api'}), (db:Service {name: 'db'}),
       (inc:Incident {name: 'INC-1', severity: 2}), (drug:Drug {name: 'Aspirin'}), (ache:Symptom {name: 'Headache'}),
       (api)-[:belongs_to_domain]->(ops), (db)-[:belongs_to_domain]->(ops), (db)-[:belongs_to_domain]->(core),
       (drug)-[:treats {since: 1899}]->(ache), (inc)-[:treats {since: 2026}]->(api),
       (inc)-[:mentions]->(db), (api)-[:depends_on]->(db)
WITH api, inc
MATCH (p:Person) WHERE p.name IN ['person 1', 'person 2'] CREATE (p)-[:owns]->(api), (inc)-[:assigned_to]->(p)
"""

#: The team's own questions, asked before and after: KIP must not change one answer.
TEAM_QUERIES = (
    "MATCH (p:Person) RETURN count(p) AS n",
    "MATCH (e:Event) RETURN count(e) AS n",
    "MATCH (d:Document) RETURN count(d) AS n",
    "MATCH (d:Domain) RETURN d.name AS name ORDER BY name",
    "MATCH ()-[r:treats]->() RETURN count(r) AS n",
    "MATCH ()-[r:belongs_to_domain]->() RETURN count(r) AS n",
    "MATCH (s:Service)-[:belongs_to_domain]->(d:Domain) RETURN s.name AS s, d.name AS d ORDER BY s, d",
    "MATCH (p:Person) USING INDEX p:Person(name) WHERE p.name STARTS WITH 'person' RETURN count(p) AS n",
    "MATCH (e:Event) USING INDEX e:Event(type) WHERE e.type = 'deploy' RETURN count(e) AS n",
    "MATCH ()-[r:treats]->() USING INDEX r:treats(since) WHERE r.since > 0 RETURN count(r) AS n",
    "CALL db.index.fulltext.queryNodes('team_people_text', 'person OR page') YIELD node RETURN count(node) AS n",
    "MATCH (d:Drug)-[:treats]->(s:Symptom) RETURN d.name AS d, s.name AS s",
    "MATCH (n) WHERE n:Person OR n:Event OR n:Document OR n:Domain OR n:Drug OR n:Symptom RETURN count(n) AS n",
)


def _vocabulary(driver, database) -> dict:
    """Every label's and relationship type's count (the team's and KIP's) and the team's indexes'
    population and entity counts."""
    labels = driver.execute_query("CALL db.labels() YIELD label RETURN label ORDER BY label", database_=database).records
    counts = {}
    for (label,) in labels:
        counts[label] = driver.execute_query("MATCH (n) WHERE $l IN labels(n) RETURN count(n) AS c", l=label, database_=database).records[0]["c"]
    types = driver.execute_query("CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType ORDER BY relationshipType", database_=database)
    rels = {}
    for (t,) in types.records:
        rels[t] = driver.execute_query("MATCH ()-[r]->() WHERE type(r) = $t RETURN count(r) AS c", t=t, database_=database).records[0]["c"]
    indexes = driver.execute_query(
        "SHOW INDEXES YIELD name, labelsOrTypes, properties, state WHERE name IN $names RETURN name, labelsOrTypes, properties, state ORDER BY name",
        names=list(TEAM_INDEXES),
        database_=database,
    ).records
    return {"labels": counts, "types": rels, "indexes": [dict(r) for r in indexes]}


def _team_view(driver, database) -> dict:
    """What the team sees of its own graph: every team label/type count, its fingerprint, its indexes and its answers."""
    seen = _vocabulary(driver, database)
    answers = [[dict(r) for r in driver.execute_query(q, database_=database).records] for q in TEAM_QUERIES]
    return {
        "fingerprint": team_fingerprint(driver, database),
        "labels": {k: v for k, v in seen["labels"].items() if not storage.is_kip_label(k)},
        "types": {k: v for k, v in seen["types"].items() if not storage.is_vocabulary_name(k) and not storage.is_engine_rel_type(k)},
        "indexes": seen["indexes"],
        "answers": answers,
    }


#: A memory write an agent makes over and over: its types and predicates spelled like the team's.
def _writes(n: int) -> list[str]:
    out = []
    for i in range(n):
        out.append(
            "UPSERT { "
            f'CONCEPT ?p {{ {{type: "Person", name: "agent person {i}"}} SET ATTRIBUTES {{ description: "seen in turn {i}" }} }} '
            f'CONCEPT ?e {{ {{type: "Event", name: "turn {i}"}} '
            f'SET ATTRIBUTES {{ event_class: "Conversation", start_time: "2026-12-04T10:00:00Z", content_summary: "turn {i}" }} '
            'SET PROPOSITIONS { ("involves", ?p) ("belongs_to_domain", {type: "Domain", name: "Operations"}) } } '
            '} WITH METADATA { source: "label space test", confidence: 0.9 }'
        )
    return out


SETUP = """
UPSERT {
  CONCEPT ?ops { {type: "Domain", name: "Operations"} SET ATTRIBUTES { description: "The team's operations, as memory sees them." } }
  CONCEPT ?inv { {type: "$PropositionType", name: "involves"} SET ATTRIBUTES { description: "An event involves a person." } }
}
"""


@pytest.fixture(scope="module")
def shared(neo4j_server):
    """The team's graph with its schema, before any KIP element exists."""
    driver_nexus = _open(neo4j_server)
    driver, database = driver_nexus.driver, driver_nexus.database
    _wipe(driver, database)
    for ddl in TEAM_SCHEMA:
        driver.execute_query(ddl, database_=database)
    driver.execute_query(TEAM_GRAPH, database_=database)
    driver.execute_query("CALL db.awaitIndexes(300)", database_=database)
    before = _team_view(driver, database)
    assert before["labels"]["Person"] == 12 and before["types"]["treats"] == 2
    yield driver_nexus, before
    _wipe(driver, database)
    driver.execute_query("DROP CONSTRAINT team_service_name IF EXISTS", database_=database)
    for name in TEAM_INDEXES[1:]:
        driver.execute_query(f"DROP INDEX {name} IF EXISTS", database_=database)
    driver_nexus.close()


def test_memory_reads_never_see_the_teams_same_named_elements(shared, neo4j_server):
    """A typed scan and a free pattern over a predicate the team also uses read memory only."""
    base, before = shared
    base.bootstrap(capsules=True)
    assert ok(base.execute_kip_readonly('FIND(?p.name) WHERE { ?p {type: "Person"} } ORDER BY ?p.name')) == ["$self", "$system"]
    assert ok(base.execute_kip_readonly('FIND(COUNT(?s)) WHERE { (?s, "belongs_to_domain", ?d) FILTER(?d.name == "Operations") }')) == 0
    by_hand = base.driver.execute_query(
        "MATCH (:KipConcept)-[r:`kip:belongs_to_domain`]->(:KipConcept {type: 'Domain', name: 'CoreSchema'}) RETURN count(r) AS n", database_=base.database
    ).records[0]["n"]
    assert by_hand > 7  # Genesis and the standard capsules file their types under CoreSchema
    assert ok(base.execute_kip_readonly('FIND(?p, COUNT(?s)) WHERE { ?d {type: "Domain", name: "CoreSchema"} (?s, ?p, ?d) }')) == [
        ["belongs_to_domain"],
        [by_hand],
    ]
    assert _team_view(base.driver, base.database) == before


def test_bootstrap_examples_and_a_thousand_writes_in_three_namespaces_leave_the_team_graph_as_it_was(shared, neo4j_server):
    base, before = shared
    valid = parser_fixtures.valid()
    params = parser_fixtures.example_params(valid)
    people, involves = {}, {}
    for namespace in ("", "ops", "research"):
        nexus = base if namespace == "" else _open(neo4j_server, namespace)
        nexus.bootstrap(capsules=True)
        after_bootstrap = _team_view(base.driver, base.database)
        assert after_bootstrap == before, f"bootstrap in namespace {namespace!r} changed the team's graph"
        ok(nexus.execute_kip(SETUP))
        for entry in valid:
            response = nexus.execute({"command": entry.text, "parameters": params})
            if "error" in response:
                assert response["error"]["code"] != "KIP_4003", (entry.name, response)
        writes = _writes(334 if namespace == "" else 333)
        for start in range(0, len(writes), 50):
            response = nexus.execute_kip(commands=writes[start : start + 50])
            assert "error" not in response, response
        assert ok(nexus.execute_kip_readonly('FIND(COUNT(?p)) WHERE { ?p {type: "Person"} FILTER(STARTS_WITH(?p.name, "agent person")) }')) == len(writes)
        people[namespace] = ok(nexus.execute_kip_readonly('FIND(COUNT(?p)) WHERE { ?p {type: "Person"} }'))
        involves[namespace] = ok(nexus.execute_kip_readonly('FIND(COUNT(?e)) WHERE { (?e, "involves", ?p) }'))
        if nexus is not base:
            nexus.close()
    after = _team_view(base.driver, base.database)
    assert after == before
    # and KIP's own elements are all in its label space: its Person concepts are not the team's
    memory = _vocabulary(base.driver, base.database)
    for namespace in ("", "ops", "research"):
        names = storage.names(namespace)
        assert memory["labels"][names.label("Person")] == people[namespace] >= 333
        assert memory["types"][names.rel("involves")] == involves[namespace] >= 333

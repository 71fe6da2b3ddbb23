"""AsyncNexus answers exactly what the sync Nexus answers: both drive the same programs."""

from __future__ import annotations

import asyncio

import pytest

import kip2cypher
from kip2cypher.config import Settings
from kip2cypher.nexus import Nexus

READS = [
    {"command": "DESCRIBE PRIMER"},
    {"command": "DESCRIBE DOMAINS"},
    {
        "command": "DESCRIBE CONCEPT TYPES",
    },
    {"command": 'DESCRIBE CONCEPT TYPE "Drgu"'},
    {"command": 'FIND(?d.name, ?d.attributes.risk) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name LIMIT 1'},
    {"command": 'FIND(?d.name) WHERE { ?d {type: "Drgu"} }'},
    {"command": 'FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) }'},
    {"command": 'SEARCH CONCEPT "aspirin" LIMIT 3'},
    {"command": 'SEARCH PROPOSITION "treats" MODE "keyword" LIMIT 3'},
    {"command": 'EXPORT ?d WHERE { ?d {type: "Drug"} } LIMIT 1'},
    {"commands": ['FIND(?d.name) WHERE { ?d {type: "Drug", name: :n} }', "FIND(?x WHERE"], "parameters": {"n": "Aspirin"}},
    {"command": 'UPSERT { CONCEPT ?d { {type: "Drug", name: "Nope"} } }', "dry_run": True},
]

CAPSULE = """
UPSERT {
  CONCEPT ?drug { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "A medicine." } SET PROPOSITIONS {
    ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
  CONCEPT ?treats { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { description: "A drug treats a symptom." } SET PROPOSITIONS {
    ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
  CONCEPT ?symptom { {type: "$ConceptType", name: "Symptom"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
}
UPSERT {
  CONCEPT ?pain { {type: "Symptom", name: "Pain"} }
  CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { risk: 2, description: "Pain reliever." } SET PROPOSITIONS { ("treats", ?pain) } }
  CONCEPT ?i { {type: "Drug", name: "Ibuprofen"} SET ATTRIBUTES { risk: 3 } SET PROPOSITIONS { ("treats", ?pain) } }
}
"""


def _async(server, **options):
    return kip2cypher.connect_async(server.uri, auth=server.auth, database=server.database, settings=Settings(cursor_secret=b"same-secret"), **options)


@pytest.fixture()
def graph(genesis, neo4j_server):
    response = genesis.execute_kip(CAPSULE)
    assert "error" not in response, response
    return neo4j_server


def test_every_read_answers_the_same_as_the_sync_nexus(graph):
    with Nexus(graph.uri, auth=graph.auth, database=graph.database, settings=Settings(cursor_secret=b"same-secret")) as sync:
        expected = [sync.execute(arguments) for arguments in READS] + [sync.execute(READS[4], readonly=True)]

    async def run():
        async with _async(graph) as nexus:
            return [await nexus.execute(arguments) for arguments in READS] + [await nexus.execute(READS[4], readonly=True)]

    assert asyncio.run(run()) == expected


def test_async_writes_readonly_refusal_explain_and_bootstrap(genesis, neo4j_server):
    async def run():
        nexus = await _async(neo4j_server)
        try:
            assert (await nexus.bootstrap())["Genesis"]["blocks"] >= 1  # idempotent over the fixture's Genesis
            written = await nexus.execute_kip(CAPSULE)
            refused = await nexus.execute_kip_readonly('UPDATE ?d SET ATTRIBUTES { risk: 9 } WHERE { ?d {type: "Drug"} }')
            updated = await nexus.execute_kip('UPDATE ?d SET ATTRIBUTES { risk: ADD(?d.attributes.risk, 1) } WHERE { ?d {type: "Drug"} }')
            risks = await nexus.execute_kip_readonly('FIND(?d.attributes.risk) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name')
            plans = await nexus.explain('FIND(?d.name) WHERE { ?d {type: "Drug"} }')
            outcome = await nexus.execute_command('DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Ibuprofen"} }')
            return written, refused, updated, risks, plans, outcome
        finally:
            await nexus.close()

    written, refused, updated, risks, plans, outcome = asyncio.run(run())
    assert written["result"]["blocks"] == 2 and len(written["result"]["upsert_concept_nodes"]) == 6
    assert refused["error"]["code"] == "KIP_3004"
    assert updated == {"result": {"updated": 2, "matched": 2}}
    assert risks == {"result": [3, 4]}
    assert plans[0]["label"] == "FIND" and ("NodeByLabelScan" in plans[0]["plan"] or "NodeIndexSeek" in plans[0]["plan"])
    assert outcome.kind == "KML" and outcome.response == {"result": {"deleted_concepts": 1, "deleted_propositions": 1}}


def test_an_application_driver_is_used_and_never_closed(genesis, neo4j_server):
    import neo4j

    async def run():
        driver = neo4j.AsyncGraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth)
        try:
            async with kip2cypher.connect_async(driver=driver, database=neo4j_server.database) as nexus:
                first = await nexus.execute_kip_readonly("DESCRIBE CONCEPT TYPES")
            # the nexus is closed; the application's driver still works
            records, _, _ = await driver.execute_query("RETURN 1 AS one", database_=neo4j_server.database)
            return first, records[0]["one"]
        finally:
            await driver.close()

    first, one = asyncio.run(run())
    assert "$ConceptType" in first["result"] and one == 1


def test_every_administrative_operation_is_awaitable(nexus, neo4j_server):
    """Bootstrap, adoption, the target checks, explain, the namespaces and migrate run under
    asyncio too (the same core as the sync Nexus), and answer what the sync Nexus answers."""
    from kip2cypher import adoption

    nexus.driver.execute_query("CREATE (:AsyncStaff {sid: 'S1', name: 'Ada', role: 'CTO'})", database_=nexus.database)
    mapping = adoption.parse('[types.Staff]\nlabel = "AsyncStaff"\nkey = "sid"\nattributes = ["role"]\ntext = ["name"]\n', "the test mapping")

    async def run():
        async with _async(neo4j_server, namespace="asyncadmin") as admin:
            seen = {"version": await admin.server_version(), "foreign": await admin.foreign_nodes()}
            seen["before"] = await admin.bootstrap_state()
            seen["bootstrap"] = await admin.bootstrap()
            seen["survey"] = await admin.adopt(mapping, dry_run=True)
            seen["adopt"] = await admin.adopt(mapping, create_index=True)
            seen["stored"] = await admin.stored_adoption()
            seen["links"] = await admin.adopted_links()
            seen["found"] = await admin.execute_kip_readonly('FIND(?s.name, ?s.attributes.role) WHERE { ?s {type: "Staff"} }')
            seen["explain"] = await admin.explain('FIND(?s.name) WHERE { ?s {type: "Staff"} }')
            seen["migrate"] = await admin.migrate(dry_run=True)
            seen["listed"] = await admin.namespaces()
            seen["dropped"] = await admin.drop_namespace("asyncadmin")
            seen["after"] = await admin.namespaces()
            return seen

    seen = asyncio.run(run())
    assert seen["version"] == nexus.server_version() and seen["foreign"] == 1
    assert not seen["before"]["nexus_node"] and nexus.bootstrap_state()["nexus_node"]  # the default namespace's (the fixture's)
    assert seen["bootstrap"]["Genesis"]["blocks"] >= 1
    assert seen["survey"]["dry_run"] and seen["survey"]["types"][0]["nodes"] == 1 and seen["survey"]["mapping"] == "would be stored"
    assert seen["adopt"]["mapping"] == "stored" and seen["adopt"]["text_index"]["state"] == "created"
    assert [t.name for t in seen["stored"].types] == ["Staff"] and seen["stored"].text_indexed
    assert seen["links"] == {"linked": 0, "dangling": 0}
    assert seen["found"] == {"result": [["Ada"], ["CTO"]]}
    assert seen["explain"][0]["label"] == "FIND" and seen["explain"][0]["plan"].startswith("+ProduceResults")
    assert {entry["namespace"]: entry["state"] for entry in seen["migrate"]["namespaces"]}["asyncadmin"] == "current"
    listed = {info.namespace: info for info in seen["listed"]}
    assert listed["asyncadmin"].bootstrapped and listed["asyncadmin"].concepts > 0 and listed[""].concepts == 0  # Genesis and Staff are asyncadmin's
    assert seen["dropped"]["nexus_node"] and seen["dropped"]["concepts"] == listed["asyncadmin"].concepts
    assert "asyncadmin" not in {info.namespace for info in seen["after"]}
    assert nexus.driver.execute_query("MATCH (s:AsyncStaff) RETURN count(s) AS c", database_=nexus.database).records[0]["c"] == 1  # the team's own stays

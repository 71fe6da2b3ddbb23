"""Bootstrap is administrative work (docs/interfaces.md, "Bootstrap on a shared database"), on a real Neo4j:
next to data that is not KIP's it prints exactly what it creates and needs ``--yes`` (``--dry-run``
prints it and writes nothing), and it never runs under the agents' per-query timeout."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import wipe

from kip2cypher import profiles
from kip2cypher.cli.app import main
from kip2cypher.cli.target import DDL_NAME, capsule_elements
from kip2cypher.config import Settings
from kip2cypher.cypher import catalog, storage
from kip2cypher.cypher.builder import quote
from kip2cypher.nexus import Nexus

FOREIGN = "CREATE (:Customer {name: 'not KIP data'})-[:BOUGHT]->(:Product {sku: 'P1'})"


def drop_default_schema(driver) -> None:
    """The default namespace's constraints and indexes gone (the slot database keeps schema
    objects across wipes): a bootstrap must create every one of them."""
    for ddl in catalog.schema(storage.DEFAULT):
        kind, name = DDL_NAME.match(ddl).groups()
        driver.execute_query(f"DROP {kind} {quote(name)} IF EXISTS")


def graph_counts(driver) -> tuple[int, int]:
    record = driver.execute_query("MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN count(DISTINCT n) AS n, count(r) AS r").records[0]
    return record["n"], record["r"]


@pytest.fixture()
def shared(neo4j_server):
    """An empty slot database but for a team's two nodes, without KIP's schema objects."""
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database) as nexus:
        wipe(nexus.driver, nexus.database)
        drop_default_schema(nexus.driver)
        nexus.driver.execute_query(FOREIGN)
        yield nexus


def bootstrap(nexus: Nexus, *args: str):
    return CliRunner().invoke(main, ["bootstrap", "--uri", nexus.uri, *args])


def assert_plan(output: str) -> None:
    """Every DDL statement of the default namespace, the nexus node and each Genesis concept."""
    for ddl in catalog.schema(storage.DEFAULT):
        assert f"  schema: {ddl}" in output
    assert f"  node: (:{storage.NEXUS} {{namespace: '', cursor_secret: <random>, layout: {storage.LAYOUT}}})" in output
    concepts, propositions = capsule_elements(profiles.capsule_text("Genesis", "rc11"))
    assert f"  capsule Genesis: upserts {len(concepts)} concepts and {propositions} propositions:" in output
    assert "$ConceptType:$ConceptType" in output and "Domain:CoreSchema" in output


def test_bootstrap_next_to_foreign_data_prints_what_it_creates_and_needs_yes(shared):
    before = graph_counts(shared.driver), shared.bootstrap_state()["schema_objects"]
    refused = bootstrap(shared)
    assert refused.exit_code == 1
    assert "holds 2 node(s) that are not KIP data" in refused.output and "--yes" in refused.output
    assert_plan(refused.output)
    assert (graph_counts(shared.driver), shared.bootstrap_state()["schema_objects"]) == before  # nothing written

    planned = bootstrap(shared, "--dry-run")
    assert planned.exit_code == 0 and "--dry-run: nothing was written." in planned.output
    assert_plan(planned.output)
    assert (graph_counts(shared.driver), shared.bootstrap_state()["schema_objects"]) == before

    done = bootstrap(shared, "--yes")
    assert done.exit_code == 0 and "applied Genesis" in done.output, done.output
    assert {DDL_NAME.match(ddl).group(2) for ddl in catalog.schema(storage.DEFAULT)} <= shared.bootstrap_state()["schema_objects"]
    team = shared.driver.execute_query("MATCH (c:Customer)-[:BOUGHT]->(p:Product) RETURN labels(c) AS c, properties(p) AS p").records
    assert [(r["c"], r["p"]) for r in team] == [(["Customer"], {"sku": "P1"})]  # the team's data as it was


def test_mcp_bootstrap_next_to_foreign_data_needs_yes_before_serving(shared):
    refused = CliRunner().invoke(main, ["mcp", "--bootstrap", "--uri", shared.uri])
    assert refused.exit_code == 1 and "not KIP data" in refused.output and "--yes" in refused.output
    assert f"  schema: {catalog.schema(storage.DEFAULT)[0]}" in refused.output
    assert graph_counts(shared.driver) == (2, 1)


def test_bootstrap_of_an_empty_or_kip_only_database_needs_no_yes(shared):
    shared.driver.execute_query("MATCH (n) DETACH DELETE n")
    for _ in range(2):  # empty, then KIP's own data only
        out = bootstrap(shared)
        assert out.exit_code == 0 and "applied Genesis" in out.output and "schema:" not in out.output, out.output
    planned = bootstrap(shared, "--dry-run")
    assert planned.exit_code == 0 and "schema: nothing (every constraint and index exists)" in planned.output
    assert "  node:" not in planned.output and "capsule Genesis" in planned.output


def test_bootstrap_is_not_cut_short_by_the_agent_query_timeout(neo4j_server):
    """Under load the very first bootstrap on a cold server answered KIP_4001 after 52.8 s: it ran
    under the agents' query_timeout_s. A timeout no Genesis write can meet proves it no longer does."""
    agents = Settings(query_timeout_s=0.001, max_request_s=0.001)
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=agents) as nexus:
        wipe(nexus.driver, nexus.database)
        applied = nexus.bootstrap(capsules=True)
    assert set(applied) >= {"Genesis", "Person", "self", "system"}
    assert all(result["upsert_concept_nodes"] for result in applied.values())

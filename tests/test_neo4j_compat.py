"""What differs between the Neo4j versions kip2cypher supports (docs/neo4j-versions.md), on the
server the suite runs against: 5.26 in the whole suite, 2026.x under Cypher 25 in the
compatibility tier (.ci/run). Each test asserts on both, by what the server has."""

from __future__ import annotations

import pytest

from kip2cypher.config import Settings
from kip2cypher.cypher import catalog, storage
from kip2cypher.nexus import Nexus

FIND_TYPE = 'FIND(?d.name) WHERE { ?d {type: "$ConceptType", name: "$ConceptType"} }'


def _languages(driver) -> set[str]:
    """The Cypher versions the server has: {"5"} on 5.x, {"5", "25"} from 2025.06 on."""
    records = driver.execute_query("CALL dbms.components() YIELD name, versions WHERE name = 'Cypher' RETURN versions").records
    return set(records[0]["versions"]) if records else {"5"}


def test_fulltext_and_vector_indexes_come_online_with_their_options(nexus):
    """The DDL of cypher/catalog.py is the same text on every version: full-text indexes with
    their analyzer, vector indexes with cosine similarity and no fixed dimensions."""
    nexus.driver.execute_query("CALL db.awaitIndexes(300)")
    names = storage.DEFAULT
    wanted = {
        catalog.concept_text_index(names): "FULLTEXT",
        catalog.proposition_text_index(names): "FULLTEXT",
        catalog.concept_vector_index(names): "VECTOR",
        catalog.proposition_vector_index(names): "VECTOR",
    }
    records = nexus.driver.execute_query(
        "SHOW INDEXES YIELD name, type, state, options WHERE name IN $names RETURN name, type, state, options", {"names": list(wanted)}
    ).records
    assert {r["name"]: (r["type"], r["state"]) for r in records} == {name: (kind, "ONLINE") for name, kind in wanted.items()}
    config = {r["name"]: r["options"]["indexConfig"] for r in records}
    assert config[catalog.concept_text_index(names)]["fulltext.analyzer"] == catalog.ANALYZER
    assert config[catalog.concept_vector_index(names)]["vector.similarity_function"].lower() == "cosine"


@pytest.mark.parametrize("language", ["5", "25"])
def test_cypher_prefix_language_runs_where_the_server_has_it_and_is_a_clear_error_where_not(genesis, neo4j_server, language):
    """KIP2CYPHER_CYPHER_PREFIX="CYPHER 25" on Neo4j 5.26 answered every command KIP_4003 "retry
    later": now a KIP error that names the setting and says retrying fails the same way."""
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(cypher_prefix=f"CYPHER {language}")) as nx:
        response = nx.execute_kip(FIND_TYPE)
        if language in _languages(nx.driver):
            assert response == {"result": ["$ConceptType"]}
            return
    error = response["error"]
    assert error["code"] == "KIP_4003"
    assert "KIP2CYPHER_CYPHER_PREFIX" in error["message"] and "Retrying fails the same way" in error["hint"]
    assert "CYPHER 5" in error["hint"]

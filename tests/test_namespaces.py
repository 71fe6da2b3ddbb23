"""Namespaces (docs/namespaces.md): many isolated nexuses in one database, on a real Neo4j.

The proof of isolation: namespace ``alpha`` runs every spec example (tests/fixtures/parser,
valid and invalid) and the engine's error paths while namespace ``beta`` *and* the default
namespace hold a mirror graph — the same schema and the same (type, name) pairs — plus canary
elements only they have. After each request a fingerprint of everything outside ``alpha`` must
be unchanged, and the response must hold no id of theirs and no canary name. Targeted tests
then cover FIND with predicate variables and paths, SEARCH in every mode, DESCRIBE, EXPORT,
UPDATE / DELETE / MERGE on elements both namespaces have, cursors, and dropping a namespace.
"""

from __future__ import annotations

import json

import parser_fixtures
import pytest
from hostile_payloads import fingerprint
from kml_helpers import COGNIZINE, SCHEMA, ok
from meta_data import TopicEmbedder

from kip2cypher.config import Settings
from kip2cypher.cypher import storage

A, B = "alpha", "beta"
ASPIRIN = (
    'UPSERT { CONCEPT ?h { {type: "Symptom", name: "Headache"} SET ATTRIBUTES { description: "Pain in the head." } } '
    'CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { risk_level: 1, description: "Relieves pain and headache." } '
    'SET PROPOSITIONS { ("treats", ?h) WITH METADATA { confidence: 0.5 } ("related_to", {type: "Drug", name: "Cognizine"}) } } }'
)
#: Only beta and the default namespace have these: any of the words in an alpha answer is a leak.
CANARY = """
UPSERT {
  CONCEPT ?kind { {type: "$ConceptType", name: "CanaryKind"} SET ATTRIBUTES { description: "canary type" } }
  CONCEPT ?pred { {type: "$PropositionType", name: "canary_relieves"} SET ATTRIBUTES { description: "canary predicate",
    subject_types: ["*"], object_types: ["*"] } }
  CONCEPT ?drug { {type: "Drug", name: "Canaryzine"} SET ATTRIBUTES { description: "A canary drug that relieves pain and headache.", risk_level: 1 }
    SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Headache"}) ("canary_relieves", {type: "Drug", name: "Aspirin"}) } }
  CONCEPT ?bird { {type: "CanaryKind", name: "Canary bird"} SET PROPOSITIONS { ("canary_relieves", ?drug) } }
}
"""
CANARY_WORDS = ("canary",)
CANARY_NAMES = ("CanaryKind", "canary_relieves", "Canaryzine", "Canary bird")

VALID = parser_fixtures.valid()
INVALID = parser_fixtures.invalid()
PARAMS = parser_fixtures.example_params(VALID)


def _wipe(driver, database=None) -> None:
    while driver.execute_query("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c", database_=database).records[0]["c"]:
        pass


def _open(neo4j_server, namespace):
    from kip2cypher.nexus import Nexus

    settings = Settings(embedder=TopicEmbedder())
    return Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=settings, namespace=namespace)


def _populate(nexus, *, canary: bool) -> None:
    nexus.bootstrap()
    for capsule in (SCHEMA, COGNIZINE, ASPIRIN) + ((CANARY,) if canary else ()):
        ok(nexus.execute_kip(capsule))


class World:
    """alpha (under test), beta and the default namespace (mirrors with canaries)."""

    def __init__(self, alpha, beta, default) -> None:
        self.alpha, self.beta, self.default = alpha, beta, default
        self.names = storage.names(A)

    def outside(self) -> dict:
        return fingerprint(self.alpha.driver, self.alpha.database, skip=self.names)

    def foreign_ids(self) -> set[str]:
        records = self.alpha.driver.execute_query(
            "MATCH (n) WHERE n.id IS NOT NULL AND NOT any(l IN labels(n) WHERE l IN $labels) RETURN collect(n.id) AS ids",
            labels=[self.names.concept, self.names.proposition],
            database_=self.alpha.database,
        ).records
        return set(records[0]["ids"])

    def run(self, arguments: dict) -> dict:
        """Run a request in alpha; assert nothing outside alpha changed and nothing of it leaked."""
        before, foreign = self.outside(), self.foreign_ids()
        response = self.alpha.execute(arguments)
        assert self.outside() == before, f"a request in {A} changed another namespace: {arguments!r}"
        text = json.dumps(response, ensure_ascii=False)
        asked = json.dumps(arguments, ensure_ascii=False)
        leaked = sorted(i for i in foreign if i in text and i not in asked)
        assert not leaked, f"ids of another namespace in the answer: {leaked}"
        command_text = json.dumps(arguments, ensure_ascii=False).lower()
        assert not any(word in text.lower() and word not in command_text for word in CANARY_WORDS), text
        return response


@pytest.fixture(scope="module")
def world(neo4j_server):
    with _open(neo4j_server, "") as default, _open(neo4j_server, B) as beta, _open(neo4j_server, A) as alpha:
        _wipe(alpha.driver, alpha.database)
        for nexus, canary in ((default, True), (beta, True), (alpha, False)):
            nexus.ensure_schema()
            _populate(nexus, canary=canary)
        yield World(alpha, beta, default)


def _result(response):
    assert "error" not in response, response
    return response["result"]


def _code(response):
    assert set(response) == {"error"}, response
    return response["error"]["code"]


# ------------------------------------------------------------------ every example, every error path
@pytest.mark.parametrize("entry", VALID, ids=[e.name for e in VALID])
def test_spec_example_in_alpha_never_touches_or_shows_another_namespace(world, entry):
    response = world.run({"command": entry.text, "parameters": PARAMS})
    if "error" in response:
        assert response["error"]["code"] != "KIP_4003", response


@pytest.mark.parametrize("entry", INVALID, ids=[e.name for e in INVALID])
def test_invalid_example_in_alpha_fails_alone(world, entry):
    response = world.run({"command": entry.text, "parameters": PARAMS})
    assert _code(response) == entry.code


@pytest.fixture()
def fresh(world):
    """alpha as populated (the examples above changed it), re-made by dropping the namespace."""

    world.alpha.drop_namespace(A)
    world.alpha.ensure_schema()
    _populate(world.alpha, canary=False)
    return world


#: The engine's semantic error paths, each in alpha where beta/default would *succeed* (they
#: define CanaryKind and canary_relieves, and hold Canaryzine).
ERROR_PATHS = [
    ('FIND(?x) WHERE { ?x {type: "CanaryKind"} }', "KIP_2001"),
    ('FIND(?x) WHERE { (?x, "canary_relieves", ?y) }', "KIP_2001"),
    ('UPSERT { CONCEPT ?x { {type: "CanaryKind", name: "Tweety"} } }', "KIP_2001"),
    ('UPSERT { CONCEPT ?x { {type: "Drug", name: "Aspirin"} SET PROPOSITIONS { ("treats", {type: "Drug", name: "Canaryzine"}) } } }', "KIP_3002"),
    ('DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Canaryzine"} }', "KIP_3002"),  # named exactly, absent here (issue 28)
    ('MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Drug", name: "Canaryzine"} ?t {type: "Drug", name: "Aspirin"} }', "KIP_3002"),
    ('UPDATE ?d SET ATTRIBUTES { risk_level: 9 } WHERE { ?d {type: "Drug", name: "Canaryzine"} }', None),
    ('DESCRIBE CONCEPT TYPE "CanaryKind"', "KIP_3002"),
    ('UPSERT { CONCEPT ?x { {type: "Drug", name: "Aspirin"} EXPECT VERSION 0 SET ATTRIBUTES { risk_level: 5 } } }', "KIP_3005"),
    ('UPSERT { CONCEPT ?x { {type: "Drug", name: "Aspirin"} SET PROPOSITIONS { ("treats", ?nowhere) } } }', "KIP_3001"),
    ('DELETE CONCEPT ?d DETACH WHERE { ?d {type: "$ConceptType", name: "Domain"} }', "KIP_3004"),
    ('FIND(?x) WHERE { ?x {type: "CanaryKnd"} }', "KIP_2001"),
]


@pytest.mark.parametrize("command, code", ERROR_PATHS, ids=[c for c, _ in ERROR_PATHS])
def test_error_path_in_alpha_sees_nothing_of_another_namespace(fresh, command, code):
    response = fresh.run({"command": command})
    if code is None:
        assert "error" not in response, response
    else:
        assert _code(response) == code
    text = json.dumps(response)
    assert not [name for name in CANARY_NAMES if name not in command and name in text]  # e.g. no did-you-mean from beta


def test_an_id_of_another_namespace_is_unknown_in_alpha(fresh):
    beta_aspirin = _result(fresh.beta.execute_kip('FIND(?d) WHERE { ?d {type: "Drug", name: "Aspirin"} }'))[0]["id"]
    assert _result(fresh.run({"command": "FIND(?d) WHERE { ?d {id: :id} }", "parameters": {"id": beta_aspirin}})) == []
    response = fresh.run({"command": "UPSERT { CONCEPT ?x { {id: :id} SET ATTRIBUTES { risk_level: 7 } } }", "parameters": {"id": beta_aspirin}})
    assert _code(response) == "KIP_3002"
    response = fresh.run({"command": "DELETE CONCEPT ?d DETACH WHERE { ?d {id: :id} }", "parameters": {"id": beta_aspirin}})
    assert _code(response) == "KIP_3002" and beta_aspirin not in json.dumps(response)


# ------------------------------------------------------------------ reads
def test_same_type_and_name_are_separate_elements(fresh):
    ids = {
        name: _result(nexus.execute_kip('FIND(?d.id) WHERE { ?d {type: "Drug", name: "Aspirin"} }'))
        for name, nexus in (("alpha", fresh.alpha), ("beta", fresh.beta), ("default", fresh.default))
    }
    assert all(len(found) == 1 for found in ids.values()), ids
    assert len({found[0] for found in ids.values()}) == 3


def test_find_predicate_variables_and_paths_stay_in_alpha(fresh):
    predicates = _result(fresh.run({"command": "FIND(?p) WHERE { (?s, ?p, ?o) }"}))
    assert predicates and "canary_relieves" not in json.dumps(predicates)
    drugs = _result(fresh.run({"command": 'FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name ASC'}))
    assert drugs == ["Aspirin", "Cognizine"]
    reach = _result(
        fresh.run(
            {
                "command": (
                    'FIND(?x.name) WHERE { ?d {type: "Drug", name: "Aspirin"} (?d, "related_to"|"treats"|"has_side_effect"{1,4}, ?x) } ORDER BY ?x.name ASC'
                )
            }
        )
    )
    assert reach == ["Brain Fog", "Cognizine", "Headache", "Neural Bloom"]
    count = _result(fresh.run({"command": 'FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }'}))
    assert count == 2
    treated = _result(fresh.run({"command": 'FIND(?d.name) WHERE { (?d, "treats", {type: "Symptom", name: "Headache"}) }'}))
    assert treated == ["Aspirin"]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_search_every_mode_stays_in_alpha(fresh, mode):
    for target, term in (("CONCEPT", "canary pain headache"), ("PROPOSITION", "canary relieves treats")):
        hits = _result(fresh.run({"command": f'SEARCH {target} "{term}" MODE "{mode}" LIMIT 20'}))
        assert hits, f"{mode} {target} found nothing in alpha"
    typed = _result(fresh.run({"command": f'SEARCH CONCEPT "pain relief" WITH TYPE "Drug" MODE "{mode}" LIMIT 20'}))
    assert typed and {h["name"] for h in typed} <= {"Aspirin", "Cognizine"}


def test_describe_shows_only_alpha(fresh):
    for command in (
        "DESCRIBE PRIMER",
        "DESCRIBE DOMAINS",
        "DESCRIBE CONCEPT TYPES",
        "DESCRIBE PROPOSITION TYPES",
        'DESCRIBE CONCEPT TYPE "Drug"',
        'DESCRIBE PROPOSITION TYPE "treats"',
    ):
        _result(fresh.run({"command": command}))
    types = json.dumps(_result(fresh.run({"command": "DESCRIBE CONCEPT TYPES"})))
    assert "Drug" in types


def test_export_shows_only_alpha(fresh):
    exported = _result(fresh.run({"command": 'EXPORT ?d WHERE { ?d {type: "Drug"} } LIMIT 50'}))
    assert "Aspirin" in exported["capsule"] and "Cognizine" in exported["capsule"]


def test_a_cursor_of_alpha_does_not_page_beta(fresh):
    command = 'FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name ASC LIMIT 1'
    first = fresh.run({"command": command})
    assert first["result"] == ["Aspirin"] and first["next_cursor"]
    following = fresh.run({"command": command + " CURSOR :c", "parameters": {"c": first["next_cursor"]}})
    assert following["result"] == ["Cognizine"]
    assert _code(fresh.beta.execute_kip(command + " CURSOR :c", parameters={"c": first["next_cursor"]})) == "KIP_1001"


# ------------------------------------------------------------------ writes
def test_writes_on_shared_names_change_alpha_only(fresh):
    assert _result(fresh.run({"command": 'UPDATE ?d SET ATTRIBUTES { risk_level: 3 } WHERE { ?d {type: "Drug", name: "Aspirin"} }'}))
    assert _result(fresh.alpha.execute_kip('FIND(?d.attributes.risk_level) WHERE { ?d {type: "Drug", name: "Aspirin"} }')) == [3]
    assert _result(fresh.beta.execute_kip('FIND(?d.attributes.risk_level) WHERE { ?d {type: "Drug", name: "Aspirin"} }')) == [1]
    ok(
        fresh.run(
            {"command": 'UPSERT { CONCEPT ?d { {type: "Drug", name: "Tempdrug"} SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Headache"}) } } }'}
        )
    )
    ok(fresh.run({"command": 'MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Drug", name: "Tempdrug"} ?t {type: "Drug", name: "Cognizine"} }'}))
    ok(fresh.run({"command": 'DELETE PROPOSITIONS ?l WHERE { ?l (?d, "treats", {type: "Symptom", name: "Headache"}) ?d {type: "Drug", name: "Cognizine"} }'}))
    ok(fresh.run({"command": 'DELETE ATTRIBUTES {"risk_level"} FROM ?d WHERE { ?d {type: "Drug", name: "Aspirin"} }'}))


def test_a_predicate_with_the_namespace_separator_is_refused(fresh):
    response = fresh.run({"command": 'UPSERT { CONCEPT ?p { {type: "$PropositionType", name: "beta/treats"} } }'})
    assert _code(response) == "KIP_1002" and "beta_treats" in response["error"]["hint"]


# ------------------------------------------------------------------ connecting
def test_a_bad_namespace_name_is_refused_when_connecting(neo4j_server):
    from kip2cypher import KipError, connect

    for bad in ("Alice", "1st", "a-b", "x" * 33, "_x"):
        with pytest.raises(KipError) as raised:
            connect(neo4j_server.uri, auth=neo4j_server.auth, namespace=bad)
        assert "namespace" in raised.value.message


def test_async_nexus_serves_a_namespace(world, neo4j_server):
    import anyio

    from kip2cypher import connect_async

    async def read():
        async with connect_async(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, namespace=A) as nexus:
            return await nexus.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name ASC')

    assert "Aspirin" in _result(anyio.run(read))


# ------------------------------------------------------------------ listing and dropping (last: drops beta)
def test_zz_list_then_drop_beta_removes_beta_only(world):

    listed = {info.namespace: info for info in world.alpha.namespaces()}
    assert {"", A, B} <= set(listed) and listed[B].bootstrapped and listed[B].concepts > 0
    beta_names = storage.names(B)
    keep = fingerprint(world.alpha.driver, world.alpha.database, skip=beta_names)
    removed = world.alpha.drop_namespace(B)
    assert removed["concepts"] == listed[B].concepts and removed["propositions"] == listed[B].propositions
    assert removed["nexus_node"] and f"kip_concept_id__{B}" in removed["schema_objects"]
    assert fingerprint(world.alpha.driver, world.alpha.database, skip=beta_names) == keep
    left = world.alpha.driver.execute_query(
        "MATCH (n) WHERE any(l IN labels(n) WHERE l ENDS WITH '__beta') OR n.namespace = 'beta' RETURN count(n) AS c", database_=world.alpha.database
    ).records[0]["c"]
    assert left == 0
    schema = fingerprint(world.alpha.driver, world.alpha.database)["schema"]
    assert not [name for name in schema if name.endswith("__beta")]
    with pytest.raises(Exception) as raised:
        world.alpha.drop_namespace("")
    assert raised.value.code == "KIP_1002"
    with pytest.raises(Exception) as raised:
        world.alpha.drop_namespace(B)
    assert raised.value.code == "KIP_3002"

"""Foundation: the real Neo4j, schema objects, value storage, the §6 request envelope, the builder."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kip2cypher.cypher import storage
from kip2cypher.cypher.builder import Ident, Param, Statement, Var, quote


def test_server_is_a_real_neo4j_526(nexus):
    version = nexus.server_version()
    assert version.startswith("5.26") or version.split(".")[0] in {"5", "2025", "2026"}, version


def test_schema_objects_exist_and_creation_is_idempotent(nexus):
    nexus.ensure_schema()  # a second time must be harmless
    names = {r["name"] for r in nexus.driver.execute_query("SHOW CONSTRAINTS YIELD name").records}
    assert {"kip_concept_id", "kip_concept_type_name", "kip_proposition_id", "kip_proposition_spo"} <= names


TRICKY_VALUES = [
    "plain",
    "",
    "unicode ✓ 深色模式 🧠",
    'line\nbreak and `backtick` and "quotes" and }) DETACH DELETE n',
    storage.JSON_MARKER + "looks encoded",
    0,
    -7,
    2**63 - 1,
    2**64,
    1.5,
    1.0,
    True,
    False,
    None,
    [],
    ["a", "b"],
    [1, 2, 3],
    [1.5, 2.5],
    [True, False],
    [1, "mixed"],
    [1, 2.5],
    [None, 1],
    [[1, 2], [3]],
    {"type": "tablet", "strength": "500mg"},
    [{"k": 1}],
    {"nested": {"deep": [1, {"x": None}]}},
]


@pytest.mark.parametrize("value", TRICKY_VALUES, ids=lambda v: repr(v)[:40])
def test_values_read_back_exactly_as_written(nexus, value):
    stored = storage.encode(value)
    records = nexus.driver.execute_query("CREATE (n:KipTestValue) SET n.v = $v RETURN n.v AS v", {"v": stored}).records
    back = storage.decode(records[0]["v"])
    assert back == value and type(back) is type(value)
    if isinstance(value, list) and value:
        assert [type(x) for x in back] == [type(x) for x in value]


def test_native_values_stay_native_so_filters_run_in_neo4j():
    for value in ["x", 1, 1.5, True, ["a"], [1, 2]]:
        assert storage.encode(value) == value
    assert isinstance(storage.encode({"a": 1}), str)


def test_quote_doubles_inner_backticks():
    assert quote("Drug") == "`Drug`"
    assert quote("a`b") == "`a``b`"
    assert quote("x` DETACH DELETE n //") == "`x`` DETACH DELETE n //`"


def test_builder_gives_deterministic_parameter_names_and_never_splices_values():
    def build():
        st = Statement()
        st.line("MATCH (", Var("d"), ":", Ident("Dr`ug"), " {name: ", Param("Aspirin'); DROP"), "})")
        st.line("WHERE ", Var("d"), ".", Ident("attr.risk"), " < ", Param(3))
        st.line("RETURN ", Var("match"))
        return st.build()

    text, params = build()
    assert (text, params) == build()
    assert text == "MATCH (d:`Dr``ug` {name: $p0})\nWHERE d.`attr.risk` < $p1\nRETURN `?match`"
    assert params == {"p0": "Aspirin'); DROP", "p1": 3}


def test_request_needs_exactly_one_of_command_or_commands(nexus):
    for kwargs in ({}, {"command": "DESCRIBE PRIMER", "commands": ["DESCRIBE PRIMER"]}):
        response = nexus.execute_kip(kwargs.get("command"), commands=kwargs.get("commands"))
        assert set(response) == {"error"}
        assert response["error"]["code"] == "KIP_1001"
        assert "exactly one" in response["error"]["message"]


def test_malformed_request_is_kip_1001_not_a_validation_traceback(nexus):
    response = nexus.execute_kip(None, commands=[{"cmd": "FIND"}])
    assert response["error"]["code"] == "KIP_1001"
    response = nexus.execute_kip(None, commands="FIND")  # type: ignore[arg-type]
    assert response["error"]["code"] == "KIP_1001"


def test_batch_longer_than_256_is_resource_exhausted(nexus):
    response = nexus.execute_kip(None, commands=["DESCRIBE PRIMER"] * 257)
    assert response["error"]["code"] == "KIP_4002"


def test_cli_call_answers_describe_primer_with_json(neo4j_server):
    env = {"NEO4J_URI": neo4j_server.uri, "PATH": __import__("os").environ["PATH"]}
    proc = subprocess.run(
        [sys.executable, "-m", "kip2cypher.cli", "call"],
        input=json.dumps({"command": "DESCRIBE PRIMER"}),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    response = json.loads(proc.stdout)
    assert ("result" in response) != ("error" in response)
    if "error" in response:
        assert set(response["error"]) >= {"code", "message", "hint"}
    assert "Traceback" not in proc.stderr


def test_cli_call_rejects_non_json_request_with_kip_error(neo4j_server):
    env = {"NEO4J_URI": neo4j_server.uri, "PATH": __import__("os").environ["PATH"]}
    proc = subprocess.run([sys.executable, "-m", "kip2cypher.cli", "call"], input="not json", capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == "KIP_1001"
    assert "Traceback" not in proc.stderr

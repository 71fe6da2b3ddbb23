"""The §6 function-call interface: request model, batch rules, readonly, dry_run, routing,
bookmarks, transaction metadata, timeouts, result caps, error mapping — on the real Neo4j.

Executor machinery is driven with injected plans (``interface_helpers.FakePlans``) so each
rule is tested with Cypher we control; end-to-end tests with the real compiler live in
``test_interfaces_e2e.py``.
"""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest
from interface_helpers import FakePlans, compiled, count, cypher_plan, failing_plan, fingerprint, kml_text, kql_text, meta_text, program_plan, shape_checked

import kip2cypher.lower.compile as compiler_module
from kip2cypher.config import Settings, SettingsError
from kip2cypher.errors import KipError
from kip2cypher.execution.requests import Run
from kip2cypher.models import ExecuteArguments, ExecuteRequest, tool_input_schema
from kip2cypher.nexus import Nexus


@pytest.fixture(autouse=True)
def _responses_have_the_spec_shape(monkeypatch):
    shape_checked(monkeypatch)


@pytest.fixture()
def fake(monkeypatch):
    plans = FakePlans(compiler_module.compile_plan).install(monkeypatch)
    monkeypatch.setattr(compiler_module, "compile_plan", plans.compile_plan)
    return plans


def nexus_with(server, **settings) -> Nexus:
    return Nexus(server.uri, auth=server.auth, database=server.database, settings=Settings(**settings))


# ---------------------------------------------------------------- request model & tool schema
SPEC_SCHEMA = {
    # Spec §6.1 "Function Parameters", transcribed: all optional, exactly one of command/commands.
    "type": "object",
    "properties": {
        "command": {"type": "string"},
        "commands": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"type": "string"},
                    {"type": "object", "properties": {"command": {"type": "string"}, "parameters": {"type": "object"}}, "required": ["command"]},
                ]
            },
        },
        "parameters": {"type": "object"},
        "dry_run": {"type": "boolean"},
    },
}


def _meaning(schema):
    """Drop documentation-only and strictness keywords; keep types and structure."""
    if isinstance(schema, dict):
        return {k: _meaning(v) for k, v in schema.items() if k not in {"description", "title", "default", "additionalProperties", "maxItems"}}
    if isinstance(schema, list):
        return [_meaning(v) for v in schema]
    return schema


def test_tool_schema_is_generated_from_the_model_and_means_the_spec_table():
    schema = tool_input_schema()
    assert _meaning(schema) == SPEC_SCHEMA
    assert "required" not in schema  # every argument is optional; exactly-one is enforced per call
    assert "exactly one" in schema["description"].lower()
    assert "Mutually exclusive" in schema["properties"]["command"]["description"]
    assert schema["properties"]["commands"]["maxItems"] == 256
    # every property of the model is published, and nothing else
    assert set(schema["properties"]) == set(ExecuteArguments.model_fields)


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        ({}, "exactly one"),
        ({"command": "DESCRIBE PRIMER", "commands": ["DESCRIBE PRIMER"]}, "exactly one"),
        ({"commands": [{"cmd": "FIND"}]}, "unknown key"),
        ({"commands": "FIND"}, "valid list"),
        ({"command": 42}, "valid string"),
        ({"command": "DESCRIBE PRIMER", "paramaters": {}}, "unknown key"),
        ({"command": "DESCRIBE PRIMER", "parameters": [1]}, "parameters"),
        ({"command": "DESCRIBE PRIMER", "dry_run": "perhaps"}, "dry_run"),
        ({"commands": [7]}, "object {command, parameters}"),
        ({"commands": []}, "empty"),
        (["DESCRIBE PRIMER"], "JSON object"),
        ("DESCRIBE PRIMER", "JSON object"),
    ],
)
def test_malformed_requests_are_kip_1001_with_a_usable_message(nexus, arguments, fragment):
    response = nexus.execute(arguments)
    assert set(response) == {"error"}
    assert response["error"]["code"] == "KIP_1001"
    assert fragment in response["error"]["message"]
    assert "command" in response["error"]["hint"]
    assert "Traceback" not in response["error"]["message"] and "pydantic" not in response["error"]["message"]


def test_null_arguments_count_as_absent():
    request = ExecuteRequest.parse({"command": "DESCRIBE PRIMER", "commands": None, "parameters": None, "dry_run": None})
    assert request.command == "DESCRIBE PRIMER" and not request.is_batch and request.dry_run is False


def test_batch_limit_is_256_and_the_257th_is_kip_4002(nexus, fake):
    fake[kql_text("ok")] = cypher_plan("KQL", "READ", "RETURN 1 AS one", shape=lambda rows: [r["one"] for r in rows])
    response = nexus.execute_kip(commands=[kql_text("ok")] * 256)
    assert len(response["result"]) == 256 and all(r == {"result": [1]} for r in response["result"])
    response = nexus.execute_kip(commands=[kql_text("ok")] * 257)
    assert response["error"]["code"] == "KIP_4002"
    assert "256" in response["error"]["message"]


# ---------------------------------------------------------------- batch rules (§6.1, §6.2.3)
def test_single_command_response_has_only_spec_keys(nexus, fake):
    fake[kql_text("a")] = cypher_plan("KQL", "READ", "UNWIND [1, 2] AS x RETURN x", shape=lambda rows: [r["x"] for r in rows])
    assert nexus.execute_kip(kql_text("a")) == {"result": [1, 2]}

    def paged():
        return {"result": ["a"], "next_cursor": "tok", "_internal": 1}
        yield  # a generator: the program of the plan

    fake[kql_text("p")] = program_plan("KQL", "READ", paged)
    assert nexus.execute_kip(kql_text("p")) == {"result": ["a"], "next_cursor": "tok"}


def test_batch_mixing_syntax_error_failing_find_and_failing_upsert_follows_6_2_3(nexus, fake):
    fake[kql_text("bad")] = failing_plan("KQL", "READ", "KIP_2001")
    fake[meta_text("bad")] = failing_plan("META", "READ", "KIP_3002")
    fake[kql_text("ok")] = cypher_plan("KQL", "READ", "RETURN 7 AS seven", shape=lambda rows: [r["seven"] for r in rows])
    fake[kml_text("bad")] = failing_plan("KML", "WRITE", "KIP_2001", write_first="CREATE (:ProbeWritten {by: 'failing upsert'})")
    fake[kql_text("after")] = cypher_plan("KQL", "READ", "CREATE (:ProbeAfter) RETURN 1 AS one")
    commands = [
        'FIND(?x WHERE { ?x {type: "Drug"} }',  # syntax error: inline, continue
        kql_text("bad"),  # failing FIND: inline, continue
        meta_text("bad"),  # failing META: inline, continue
        'UPSERT { CONCEPT ?x { {type: "Drug" name: "A"} } }',  # KML with a syntax error: never ran, continue
        kql_text("ok"),
        kml_text("bad"),  # failing UPSERT: stops the batch
        kql_text("after"),  # never executed
    ]
    response = nexus.execute_kip(commands=commands)
    assert set(response) == {"result"}
    items = response["result"]
    assert len(items) == 6
    assert items[0]["error"]["code"] == "KIP_1001" and "line" in items[0]["error"]
    assert items[1] == {"error": {"code": "KIP_2001", "message": "probe failure KIP_2001", "hint": items[1]["error"]["hint"]}}
    assert items[2]["error"]["code"] == "KIP_3002"
    assert items[3]["error"]["code"] == "KIP_1001"
    assert items[4] == {"result": [7]}
    assert items[5]["error"]["code"] == "KIP_2001"
    assert kql_text("after") not in fake.compiled
    assert count(nexus.driver, "ProbeWritten") == 0, "the failing UPSERT's partial write must roll back"
    assert count(nexus.driver, "ProbeAfter") == 0


def test_kml_errors_of_every_non_syntax_category_stop_the_batch(nexus, fake):
    for code in ("KIP_2002", "KIP_3001", "KIP_3004", "KIP_3005", "KIP_4001", "KIP_4003"):
        fake[kml_text(code)] = failing_plan("KML", "WRITE", code)
        response = nexus.execute_kip(commands=[kml_text(code), kql_text("x")])
        assert len(response["result"]) == 1 and response["result"][0]["error"]["code"] == code


def test_item_parameters_override_shared_ones_key_by_key(nexus, fake):
    echo = lambda params: cypher_plan("KQL", "READ", "RETURN $p AS p", {"p": params}, shape=lambda rows: rows[0]["p"])  # noqa: E731
    fake[kql_text("e1")] = echo
    fake[kql_text("e2")] = echo
    response = nexus.execute_kip(
        commands=[kql_text("e1"), {"command": kql_text("e2"), "parameters": {"limit": 3, "name": "B"}}],
        parameters={"limit": 10, "shared": True},
    )
    assert response["result"][0]["result"] == {"limit": 10, "shared": True}
    assert response["result"][1]["result"] == {"limit": 3, "shared": True, "name": "B"}


def test_commands_run_in_order_and_each_sees_the_previous_writes(nexus, fake):
    fake[kml_text("w1")] = cypher_plan("KML", "WRITE", "CREATE (:ProbeSeq {n: 1}) RETURN 1 AS x")
    fake[kql_text("r1")] = cypher_plan("KQL", "READ", "MATCH (n:ProbeSeq) RETURN count(n) AS c", shape=lambda rows: rows[0]["c"])
    fake[kml_text("w2")] = cypher_plan("KML", "WRITE", "CREATE (:ProbeSeq {n: 2}) RETURN 1 AS x")
    fake[kql_text("r2")] = cypher_plan("KQL", "READ", "MATCH (n:ProbeSeq) RETURN count(n) AS c", shape=lambda rows: rows[0]["c"])
    response = nexus.execute_kip(commands=[kml_text("w1"), kql_text("r1"), kml_text("w2"), kql_text("r2")])
    assert [r["result"] for r in response["result"]][1::2] == [1, 2]


# ---------------------------------------------------------------- readonly
def test_readonly_rejects_kml_before_anything_runs(nexus, fake):
    fake[kml_text("w")] = cypher_plan("KML", "WRITE", "CREATE (:ProbeEvil) RETURN 1 AS x")
    fake[kql_text("r")] = cypher_plan("KQL", "READ", "CREATE (:ProbeEarlierRead) RETURN 1 AS x")
    single = nexus.execute_kip_readonly(kml_text("w"))
    assert single["error"]["code"] == "KIP_3004"
    assert "execute_kip" in single["error"]["hint"]
    batch = nexus.execute_kip_readonly(commands=[kql_text("r"), kml_text("w")])
    assert set(batch) == {"error"} and "commands[1]" in batch["error"]["message"]
    assert fake.compiled == [], "nothing may even be compiled once a KML command is seen"
    assert count(nexus.driver, "ProbeEvil") == 0 and count(nexus.driver, "ProbeEarlierRead") == 0


def test_readonly_also_rejects_kml_that_does_not_parse(nexus):
    for text in ("UPSERT { CONCEPT ?x {", "  // comment\n DELETE CONCEPT ?x", "merge ?a INTO ?b"):
        assert nexus.execute_kip_readonly(text)["error"]["code"] == "KIP_3004"


def test_a_write_forced_through_the_read_path_is_refused_by_neo4j(nexus, fake):
    """Even a compiler bug cannot write through execute_kip_readonly: READ session + execute_read."""
    evil = "CREATE (:ProbeForced {x: 1}) RETURN 1 AS x"
    fake[kql_text("forced")] = cypher_plan("KQL", "READ", evil)
    before = fingerprint(nexus.driver)
    response = nexus.execute_kip_readonly(kql_text("forced"))
    assert response["error"]["code"] == "KIP_4003"
    assert response["error"]["debug"]["cypher"] == evil
    assert "read-only" in response["error"]["message"]
    # the same plan marked WRITE is still run READ under readonly
    with pytest.raises(KipError) as info:
        nexus.run_plan(cypher_plan("KML", "WRITE", evil), readonly=True)
    assert info.value.code == "KIP_4003"
    assert fingerprint(nexus.driver) == before
    assert count(nexus.driver, "ProbeForced") == 0


def test_readonly_fingerprint_unchanged_after_every_kml_example(genesis):
    """Every KML example of the spec (and the parser's extra KML fixtures) thrown at execute_kip_readonly."""
    import parser_fixtures

    from kip2cypher.syntax import ast
    from kip2cypher.syntax.parser import parse

    kml = [e for e in parser_fixtures.valid() if ast.command_kind(parse(e.text)) == "KML"]
    assert len(kml) >= 15
    assert any(e.name.startswith("§4.4") for e in kml) and any(e.name.startswith("Appendix 2") for e in kml)
    params = {"now": "2025-01-01T00:00:00Z", "limit": 5, "cursor": None, "name": "X", "id": "C:x", "value": 1}
    before = fingerprint(genesis.driver)
    for entry in kml:
        response = genesis.execute_kip_readonly(entry.text, parameters=params)
        assert response["error"]["code"] == "KIP_3004", entry.name
        response = genesis.execute_kip_readonly(entry.text, parameters=params, dry_run=True)
        assert response["error"]["code"] == "KIP_3004", entry.name
    response = genesis.execute_kip_readonly(commands=["DESCRIBE PRIMER"] + [e.text for e in kml], parameters=params)
    assert response["error"]["code"] == "KIP_3004"
    assert fingerprint(genesis.driver) == before


# ---------------------------------------------------------------- dry_run
def test_dry_run_uses_the_plans_dry_result_in_a_read_transaction(nexus, fake):
    def dry():
        rows = yield Run(compiled("MATCH (n:ProbeDry) RETURN count(n) AS c"))
        return {"result": {"dry_run": True, "existing": rows[0]["c"]}}

    fake[kml_text("d")] = cypher_plan("KML", "WRITE", "CREATE (:ProbeDry) RETURN 1 AS x", dry=dry)
    assert nexus.execute_kip(kml_text("d"), dry_run=True) == {"result": {"dry_run": True, "existing": 0}}
    assert count(nexus.driver, "ProbeDry") == 0

    def sneaky():  # a dry run that writes is an engine bug; Neo4j refuses it
        yield Run(compiled("CREATE (:ProbeDry) RETURN 1 AS x"))
        return {"result": {}}

    fake[kml_text("s")] = cypher_plan("KML", "WRITE", "RETURN 1", dry=sneaky)
    assert nexus.execute_kip(kml_text("s"), dry_run=True)["error"]["code"] == "KIP_4003"
    assert count(nexus.driver, "ProbeDry") == 0


def test_dry_run_of_a_plan_without_dry_result_lists_the_statements_and_runs_nothing(nexus, fake):
    fake[kml_text("n")] = cypher_plan("KML", "WRITE", "CREATE (:ProbeNever) RETURN 1 AS x")
    response = nexus.execute_kip(commands=[kml_text("n")], dry_run=True)
    result = response["result"][0]["result"]
    assert result["dry_run"] is True and result["statements"] == ["CREATE (:ProbeNever) RETURN 1 AS x"]
    assert count(nexus.driver, "ProbeNever") == 0


def test_dry_run_reports_syntax_errors_like_a_real_run(nexus):
    response = nexus.execute_kip("FIND(?x) WHERE { ?x {type: } }", dry_run=True)
    assert response["error"]["code"] == "KIP_1001"


# ---------------------------------------------------------------- transactions: metadata, timeout, cap, prefix, logging
SLOW = "UNWIND range(1, 3000000000) AS x WITH x WHERE x = -1 RETURN count(*) AS c"


def test_transactions_carry_app_version_and_kind_metadata(neo4j_server, fake):
    from kip2cypher import __version__

    fake[kql_text("slow")] = cypher_plan("KQL", "READ", SLOW)
    # The watcher looks until it sees the transaction, then ends it: the window does not depend on
    # how busy the machine is (a fixed 2.5 s window, then a 3 s query timeout, both missed it there).
    with nexus_with(neo4j_server, query_timeout_s=120) as nx:
        seen, answered = [], threading.Event()

        def watch():
            while not answered.is_set() and not seen:
                rows = nx.driver.execute_query("SHOW TRANSACTIONS YIELD transactionId, metaData, currentQuery", database_=nx.database).records
                slow = [r for r in rows if "range(1, 3000000000)" in (r["currentQuery"] or "")]
                seen.extend(r["metaData"] for r in slow)
                for r in slow:  # seen: end it (Neo4j's "Terminated", which KIP answers as the time limit)
                    nx.driver.execute_query("TERMINATE TRANSACTIONS $id", id=r["transactionId"], database_=nx.database)
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            response = nx.execute_kip_readonly(kql_text("slow"))
        finally:
            answered.set()
            watcher.join()
    assert response["error"]["code"] == "KIP_4001"
    assert seen, "the slow transaction was never seen by SHOW TRANSACTIONS"
    request_id = seen[0].pop("request_id")  # the request's id (tests/test_transaction_metadata.py ties it to the access line)
    assert re.fullmatch("[0-9a-f]{16}", request_id)
    assert seen[0] == {
        "app": "kip2cypher",
        "version": __version__,
        "kind": "KQL",
        "interface": "execute_kip_readonly",
        "dry_run": False,
        "namespace": "",
        "client": "kip2cypher",
    }


def test_query_timeout_is_kip_4001(neo4j_server, fake):
    fake[kql_text("slow")] = cypher_plan("KQL", "READ", SLOW)
    fake[kml_text("slow")] = cypher_plan("KML", "WRITE", "CREATE (:ProbeSlowWrite) WITH 1 AS one " + SLOW.replace("UNWIND", "UNWIND", 1))
    with nexus_with(neo4j_server, query_timeout_s=0.5) as nx:
        response = nx.execute_kip(kql_text("slow"))
        assert response["error"]["code"] == "KIP_4001"
        assert "LIMIT" in response["error"]["hint"]
        response = nx.execute_kip(kml_text("slow"))
        assert response["error"]["code"] == "KIP_4001"
        assert count(nx.driver, "ProbeSlowWrite") == 0


def test_result_size_cap_is_kip_4002_with_limit_and_cursor_hint(neo4j_server, fake):
    fake[kql_text("big")] = cypher_plan("KQL", "READ", "UNWIND range(1, 100) AS x RETURN x")
    with nexus_with(neo4j_server, max_result_rows=20) as nx:
        response = nx.execute_kip(kql_text("big"))
    assert response["error"]["code"] == "KIP_4002"
    assert "LIMIT" in response["error"]["hint"] and "CURSOR" in response["error"]["hint"]


def test_cypher_prefix_is_sent_and_logged(neo4j_server, fake, caplog):
    fake[kql_text("pre")] = cypher_plan("KQL", "READ", "RETURN 1 AS one", shape=lambda rows: rows[0]["one"])
    with nexus_with(neo4j_server, cypher_prefix="CYPHER runtime=slotted") as nx, caplog.at_level(logging.DEBUG, logger="kip2cypher.cypher"):
        assert nx.execute_kip(kql_text("pre")) == {"result": 1}
        explained = nx.explain(kql_text("pre"))
    assert any(r.message.startswith("CYPHER runtime=slotted\nRETURN 1 AS one") for r in caplog.records)
    assert explained[0]["plan"].startswith("+ProduceResults")
    with pytest.raises(SettingsError, match="runtime=nonsense"):  # refused at start-up (issue 18), not in every request
        nexus_with(neo4j_server, cypher_prefix="CYPHER runtime=nonsense")


def test_cypher_logger_logs_each_statement_and_parameters_at_debug(nexus, fake, caplog):
    fake[kql_text("log")] = cypher_plan("KQL", "READ", "RETURN $name AS name", {"name": "Aspirin"})
    with caplog.at_level(logging.DEBUG, logger="kip2cypher.cypher"):
        nexus.execute_kip(kql_text("log"))
    records = [r for r in caplog.records if r.name == "kip2cypher.cypher"]
    assert records and records[0].levelno == logging.DEBUG
    assert "RETURN $name AS name" in records[0].message and "'name': 'Aspirin'" in records[0].message
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="kip2cypher.cypher"):
        nexus.execute_kip(kql_text("log"))
    assert not [r for r in caplog.records if r.name == "kip2cypher.cypher"]


# ---------------------------------------------------------------- routing & bookmarks
def test_neo4j_routing_uri_runs_reads_and_writes_and_bookmarks_chain_them(neo4j_server, fake):
    fake[kml_text("bm")] = cypher_plan("KML", "WRITE", "CREATE (:ProbeBookmark {at: timestamp()}) RETURN 1 AS x")
    fake[kql_text("bm")] = cypher_plan("KQL", "READ", "MATCH (n:ProbeBookmark) RETURN count(n) AS c", shape=lambda rows: rows[0]["c"])
    uri = neo4j_server.uri.replace("bolt://", "neo4j://", 1)
    with Nexus(uri, auth=neo4j_server.auth, database=neo4j_server.database) as nx:
        nx.driver.execute_query("MATCH (n:ProbeBookmark) DETACH DELETE n", database_=nx.database)
        before = set(nx._bookmarks.get_bookmarks())
        assert nx.execute_kip(kml_text("bm"))["result"] == [{"x": 1}]
        after_write = set(nx._bookmarks.get_bookmarks())
        assert after_write and after_write != before, "a write must advance the Nexus's bookmarks"
        assert nx.execute_kip_readonly(kql_text("bm")) == {"result": 1}, "the read after the write sees it"


def test_reads_use_read_sessions_and_writes_write_sessions(nexus, fake, monkeypatch):
    # No embedder: the background embedding refresh after the KML command would open a WRITE
    # session of its own at a moment of its choosing (tests/test_embedding_refresh.py).
    nexus.settings = nexus.settings.replace(embedder=False)
    modes = []
    real = nexus.session

    def spy(access="WRITE", **config):
        modes.append(access)
        return real(access, **config)

    monkeypatch.setattr(nexus, "session", spy)
    fake[kql_text("m")] = cypher_plan("KQL", "READ", "RETURN 1 AS x")
    fake[meta_text("m")] = cypher_plan("META", "READ", "RETURN 1 AS x")
    fake[kml_text("m")] = cypher_plan("KML", "WRITE", "RETURN 1 AS x")
    nexus.execute_kip(commands=[kql_text("m"), meta_text("m"), kml_text("m")])
    nexus.execute_kip(kml_text("m"), dry_run=True)
    nexus.execute_kip_readonly(kql_text("m"))
    assert modes == ["READ", "READ", "WRITE", "READ", "READ"]


# ---------------------------------------------------------------- error mapping: no traceback ever
def test_unavailable_database_is_kip_4003_with_a_retry_hint(fake):
    fake[kql_text("down")] = cypher_plan("KQL", "READ", "RETURN 1")
    with Nexus("bolt://127.0.0.1:9", max_transaction_retry_time=0.5, connection_timeout=0.5) as nx:
        response = nx.execute_kip(kql_text("down"))
    assert response["error"]["code"] == "KIP_4003"
    assert "retry" in response["error"]["hint"].lower()


def test_unknown_database_is_kip_4003(neo4j_server, fake):
    fake[kql_text("db")] = cypher_plan("KQL", "READ", "RETURN 1")
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database="nosuchdb") as nx:
        response = nx.execute_kip(kql_text("db"))
    assert response["error"]["code"] == "KIP_4003" and "NEO4J_DATABASE" in response["error"]["hint"]


def test_cypher_neo4j_rejects_is_our_bug_kip_4003_with_the_cypher_in_debug(nexus, fake):
    bad = "MATCH (n RETURN n"
    fake[kql_text("syntax")] = cypher_plan("KQL", "READ", bad)
    response = nexus.execute_kip(kql_text("syntax"))
    assert response["error"]["code"] == "KIP_4003"
    assert response["error"]["debug"] == {"cypher": bad}
    assert "engine bug" in response["error"]["hint"]


def test_python_exceptions_in_plans_and_compilers_become_kip_4003(nexus, fake):
    def boom():
        raise ZeroDivisionError("division by zero")
        yield  # a generator: the program of the plan

    fake[kql_text("boom")] = program_plan("KQL", "READ", boom)

    def compiler_bug(params):
        raise RuntimeError("compiler exploded")

    fake[kql_text("cbug")] = compiler_bug
    response = nexus.execute_kip(commands=[kql_text("boom"), kql_text("cbug"), 'FIND(?x) WHERE { ?x {type: "Drug"} } LIMIT 0'])
    first, second = response["result"][:2]
    assert first["error"]["code"] == "KIP_4003" and "ZeroDivisionError" in first["error"]["message"]
    assert second["error"]["code"] == "KIP_4003" and "compiler exploded" in second["error"]["message"]
    assert len(response["result"]) == 3


def test_uniqueness_violation_maps_to_kip_3003(nexus, fake):
    fake[kml_text("dup")] = cypher_plan("KML", "WRITE", "CREATE (:KipConcept {id: 'C:dup', type: 'Probe', name: 'dup'}) RETURN 1 AS x")
    assert "result" in nexus.execute_kip(kml_text("dup"))
    assert nexus.execute_kip(kml_text("dup"))["error"]["code"] == "KIP_3003"


def test_dry_run_without_dry_result_has_neo4j_compile_every_statement(nexus, fake):
    bad = "MATCH (n RETURN n"
    fake[kql_text("badcypher")] = cypher_plan("KQL", "READ", bad)
    response = nexus.execute_kip(kql_text("badcypher"), dry_run=True)
    assert response["error"]["code"] == "KIP_4003" and response["error"]["debug"] == {"cypher": bad}


def test_response_model_accepts_spec_shapes_and_rejects_others():
    from kip2cypher.models import check_response, tool_output_schema

    check_response({"result": [["Aspirin"], [2]], "next_cursor": "abc"})
    check_response({"result": None})
    check_response({"result": [{"result": {}}, {"error": {"code": "KIP_2001", "message": "m", "hint": "h"}}]}, batch=True)
    for bad in (
        {},
        {"result": 1, "error": {"code": "KIP_1001", "message": "m", "hint": "h"}},
        {"error": {"code": "E1", "message": "m", "hint": "h"}},
        {"result": 1, "_kind": "KML"},
    ):
        with pytest.raises(ValueError):
            check_response(bad)
    schema = tool_output_schema()
    assert schema["type"] == "object" and set(schema["properties"]) == {"result", "error", "next_cursor", "warnings"}
    assert schema["properties"]["error"]["required"] == ["code", "message", "hint"]

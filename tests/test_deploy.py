"""Deploying kip2cypher as teams run Neo4j tools: the application's own driver, fail-fast on a
wrong URI, credentials never in messages, settings errors that name the variable, the demo's
own server and its --yes guard, the test suite's wipe guard, and KIP memory as agent tools."""

from __future__ import annotations

import inspect
import json
import os
import socket
import subprocess
import sys
import threading
from urllib.parse import urlsplit

import conftest
import pytest
from click.testing import CliRunner
from neo4j import GraphDatabase

import kip2cypher
from kip2cypher import localneo4j, tools
from kip2cypher.cli import main
from kip2cypher.config import Settings, SettingsError
from kip2cypher.connection import redact, split_credentials
from kip2cypher.face import APPLICATION_DRIVER
from kip2cypher.models import tool_input_schema
from kip2cypher.nexus import Nexus


def _count(nexus, cypher):
    return nexus.driver.execute_query(cypher, database_=nexus.database).records[0][0]


# ---------------------------------------------------------------- the application's driver
def test_connect_reuses_the_applications_driver_and_never_closes_it(neo4j_server):
    driver = GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth)
    try:
        with kip2cypher.connect(driver=driver, database=neo4j_server.database) as nexus:
            conftest.wipe(driver, neo4j_server.database)
            assert nexus.driver is driver and nexus.uri == APPLICATION_DRIVER
            nexus.bootstrap()
            assert "result" in nexus.execute_kip('UPSERT { CONCEPT ?d { {type: "Domain", name: "OwnDriver"} } }')
        # The Nexus is closed; the application's driver still works.
        assert driver.execute_query("MATCH (d:KipConcept {name: 'OwnDriver'}) RETURN count(d) AS c", database_=neo4j_server.database).records[0]["c"] == 1
    finally:
        driver.close()
    with pytest.raises(TypeError, match="application's driver"):
        Nexus(neo4j_server.uri, driver=driver)


# ---------------------------------------------------------------- fail fast
class SilentServer:
    """A TCP port that accepts connections and never says a word (a wrong port, a firewall that
    swallows packets): the Bolt handshake waits for an answer that never comes."""

    def __enter__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held = []
        threading.Thread(target=self._accept, daemon=True).start()
        return f"bolt://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self):
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def __exit__(self, *exc):
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_unreachable_uri_answers_kip_4003_naming_the_uri_from_the_api():
    """The driver alone waited 60 s for the handshake, then retried for 30 s; the reachability check
    answers after its 3 s timeout."""
    with SilentServer() as uri, kip2cypher.connect(uri) as nexus:
        response = nexus.execute_kip_readonly("DESCRIBE PRIMER")
        error = response["error"]
        assert error["code"] == "KIP_4003" and uri in error["message"] and "no answer within 3 s" in error["message"]
        assert "NEO4J_URI" in error["hint"]
        with pytest.raises(kip2cypher.KipError) as raised:
            nexus.bootstrap()
        assert raised.value.code == "KIP_4003" and uri in raised.value.message


CLI_COMMANDS = [
    ["bootstrap"],
    ["demo"],
    ["compile", "-", "--explain"],
    ["export", '?n {type: "Drug"}'],
    ["call"],
    ["run", "-"],
    ["shell"],
    ["namespaces", "list"],
    ["namespaces", "drop", "alice", "--yes"],
]


@pytest.mark.parametrize("args", CLI_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_every_cli_command_fails_fast_on_a_silent_uri(args):
    stdin = {"call": '{"command": "DESCRIBE PRIMER"}', "shell": 'FIND(?d) WHERE { ?d {type: "Drug"} };\n'}.get(args[0], 'FIND(?d) WHERE { ?d {type: "Drug"} }')
    with SilentServer() as uri:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
        # A hang guard, not a timing assertion: without the check each command took 60–90 s.
        done = subprocess.run([sys.executable, "-m", "kip2cypher.cli", *args, "--uri", uri], input=stdin, capture_output=True, text=True, timeout=45, env=env)
    output = done.stdout + done.stderr
    assert "KIP_4003" in output and uri in output and "Traceback" not in output
    assert done.returncode != 0 or args == ["shell"]  # the interactive shell shows the error and goes on


def test_mcp_first_call_fails_fast_on_a_silent_uri():
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def first_call(uri):
        params = StdioServerParameters(command=sys.executable, args=["-m", "kip2cypher.cli", "mcp", "--uri", uri], env={"PATH": os.environ.get("PATH", "")})
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    with anyio.fail_after(45):  # hang guard (the old path took 60–90 s)
                        result = await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"})
                    return json.loads(result.content[0].text)

    with SilentServer() as uri:
        response = anyio.run(first_call, uri)
    assert response["error"]["code"] == "KIP_4003" and uri in response["error"]["message"]


def test_credentials_in_the_uri_never_appear_in_errors(neo4j_server):
    secret = "s3cr3t-Pa55"
    assert split_credentials(f"neo4j+s://alice:{secret}@db.example:7687") == ("neo4j+s://db.example:7687", ("alice", secret))
    assert redact(f"bolt://alice:{secret}@127.0.0.1:9") == "bolt://127.0.0.1:9"
    with kip2cypher.connect(f"bolt://alice:{secret}@127.0.0.1:9") as nexus:
        assert nexus.uri == "bolt://127.0.0.1:9"
        text = json.dumps(nexus.execute_kip_readonly("DESCRIBE PRIMER"))
    assert "KIP_4003" in text and secret not in text and "alice" not in text
    with pytest.raises(kip2cypher.KipError) as raised:
        kip2cypher.connect(f"http://alice:{secret}@127.0.0.1:7474")
    assert "not a Neo4j Bolt URI" in raised.value.message and secret not in str(raised.value.to_dict())
    out = CliRunner().invoke(main, ["call", "--uri", f"bolt://alice:{secret}@127.0.0.1:9", "-v"], input='{"command": "DESCRIBE PRIMER"}')
    assert "KIP_4003" in out.output and secret not in out.output
    # With the credentials of the test server in the URI, the Nexus connects with them.
    if neo4j_server.auth and urlsplit(neo4j_server.uri).scheme in ("bolt", "neo4j"):
        user, password = neo4j_server.auth
        parts = urlsplit(neo4j_server.uri)
        with kip2cypher.connect(f"{parts.scheme}://{user}:{password}@{parts.netloc}", database=neo4j_server.database) as nexus:
            assert "result" in nexus.execute_kip_readonly("DESCRIBE CONCEPT TYPES")


# ---------------------------------------------------------------- settings
def test_a_bad_setting_names_the_variable_and_the_expected_type(monkeypatch, cli_runner_env):
    monkeypatch.setenv("KIP2CYPHER_QUERY_TIMEOUT_S", "soon")
    with pytest.raises(SettingsError) as raised:
        Settings()
    message = raised.value.message
    assert raised.value.code == "KIP_4003" and "KIP2CYPHER_QUERY_TIMEOUT_S='soon'" in message and "must be a number ≥ 0" in message
    out = CliRunner().invoke(main, ["call"], input='{"command": "DESCRIBE PRIMER"}', env={**cli_runner_env, "KIP2CYPHER_QUERY_TIMEOUT_S": "soon"})
    assert out.exit_code == 1 and "KIP2CYPHER_QUERY_TIMEOUT_S" in out.output and "Internal error: ValueError" not in out.output
    monkeypatch.setenv("KIP2CYPHER_QUERY_TIMEOUT_S", "5")
    monkeypatch.setenv("KIP2CYPHER_MAX_BATCH", "300")
    with pytest.raises(SettingsError, match=r"KIP2CYPHER_MAX_BATCH='300'.*integer ≥ 1 and ≤ 256"):
        Settings()


@pytest.fixture()
def cli_runner_env(neo4j_server):
    env = {"NEO4J_URI": neo4j_server.uri, "NEO4J_DATABASE": neo4j_server.database}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    return env


def test_settings_from_environment_toml_and_dotenv_keep_their_names_and_defaults(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("KIP2CYPHER_") and name != "KIP2CYPHER_REQUIRE_NEO4J":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    defaults = Settings()
    assert (
        defaults.max_input_bytes,
        defaults.max_nesting_depth,
        defaults.max_hops,
        defaults.query_timeout_s,
        defaults.max_result_rows,
        defaults.max_batch,
        defaults.strict_schema,
        defaults.cypher_prefix,
        defaults.max_retry_s,
        defaults.app_name,
        defaults.embedder,
    ) == (262144, 64, 10, 30.0, 10000, 256, False, "", 30.0, "kip2cypher", None)
    (tmp_path / "kip2cypher.toml").write_text('max_hops = 4\ncypher_prefix = "CYPHER runtime=slotted"\nquery_timeout_s = 9\n')
    (tmp_path / ".env").write_text("KIP2CYPHER_QUERY_TIMEOUT_S=7\nNEO4J_URI=bolt://ignored:1\n")
    monkeypatch.setenv("KIP2CYPHER_STRICT_SCHEMA", "1")
    monkeypatch.setenv("KIP2CYPHER_CURSOR_SECRET", "shared-secret")
    settings = Settings(max_result_rows=5)
    assert (settings.max_hops, settings.cypher_prefix, settings.query_timeout_s, settings.strict_schema, settings.max_result_rows) == (
        4,
        "CYPHER runtime=slotted",
        7.0,
        True,
        5,
    )
    assert settings.cursor_secret == b"shared-secret"
    # Immutable, hashable, and the embedder stays out of equality/hash (compile-cache keys).
    with pytest.raises(Exception):
        settings.max_hops = 3
    twin = settings.replace(embedder=False)
    assert twin == settings and hash(twin) == hash(settings) and twin.embedder is False
    assert settings.replace(max_hops=5) != settings
    with pytest.raises(SettingsError):
        settings.replace(max_hops=0)


def test_connect_with_settings_keeps_working(neo4j_server):
    with kip2cypher.connect(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(query_timeout_s=5)) as nexus:
        assert nexus.settings.query_timeout_s == 5
        assert "result" in nexus.execute_kip_readonly("DESCRIBE CONCEPT TYPES")


# ---------------------------------------------------------------- demo and bootstrap
def test_demo_and_bootstrap_print_the_server_they_write_to(nexus, cli_runner_env):
    out = CliRunner().invoke(main, ["bootstrap"], env=cli_runner_env)
    assert out.exit_code == 0, out.output
    assert "Bootstrapping Neo4j" in out.output and nexus.uri in out.output
    out = CliRunner().invoke(main, ["demo"], env=cli_runner_env)
    assert out.exit_code == 0, out.output
    assert out.output.startswith("Writing the demo into Neo4j") and nexus.uri in out.output.splitlines()[0]


def test_demo_refuses_a_database_with_non_kip_data_unless_yes(nexus, cli_runner_env):
    nexus.driver.execute_query("CREATE (:Customer {name: 'ACME'})", database_=nexus.database)
    out = CliRunner().invoke(main, ["demo"], env=cli_runner_env)
    assert out.exit_code == 1 and "1 node(s) that are not KIP data" in out.output and "--yes" in out.output
    assert _count(nexus, "MATCH (n:KipConcept) RETURN count(n)") == 0  # nothing written
    out = CliRunner().invoke(main, ["demo", "--yes"], env=cli_runner_env)
    assert out.exit_code == 0, out.output
    assert _count(nexus, "MATCH (n:KipConcept {type: 'Drug'}) RETURN count(n)") == 2
    assert _count(nexus, "MATCH (c:Customer) RETURN count(c)") == 1


def test_demo_without_uri_never_uses_a_server_it_did_not_start(nexus, neo4j_server, tmp_path):
    """Without NEO4J_URI the demo wants its own server; a port answered by another Neo4j (here the
    test server, which the demo's data directory did not start) is refused, nothing is written."""
    port = urlsplit(neo4j_server.uri).port
    if urlsplit(neo4j_server.uri).hostname not in ("127.0.0.1", "localhost") or port is None:
        pytest.skip("needs the test Neo4j on this machine to play the foreign server")
    env = {"NEO4J_URI": None, "KIP2CYPHER_DEMO_PORT": str(port), "KIP2CYPHER_DEMO_HOME": str(tmp_path / "demo"), "KIP2CYPHER_NEO4J_PORT": str(port)}
    before = _count(nexus, "MATCH (n) RETURN count(n)")
    out = CliRunner().invoke(main, ["demo"], env=env)
    assert out.exit_code == 1 and "refusing to use someone else's server" in out.output
    assert _count(nexus, "MATCH (n) RETURN count(n)") == before
    assert localneo4j.demo_config().port == localneo4j.DEMO_PORT != 7687


# ---------------------------------------------------------------- the suite's own wipe guard
def test_the_suite_refuses_to_wipe_a_database_holding_data_it_did_not_create(nexus, neo4j_server, monkeypatch):
    foreign = conftest.Neo4jServer(neo4j_server.uri, neo4j_server.auth, neo4j_server.database, neo4j_server.version, "NEO4J_URI", own=False)
    monkeypatch.setattr(conftest, "ALLOW_WIPE", False)
    nexus.driver.execute_query("MATCH (n) DETACH DELETE n", database_=nexus.database)  # the fixture's nexus node too
    assert conftest.guard_against_foreign_data(foreign) is None  # empty
    nexus.driver.execute_query("CREATE (:Customer {name: 'ACME'})", database_=nexus.database)
    refusal = conftest.guard_against_foreign_data(foreign)
    assert "holds 1 nodes that this test suite did not create" in refusal and "KIP2CYPHER_TEST_ALLOW_WIPE=1" in refusal
    own = conftest.Neo4jServer(neo4j_server.uri, neo4j_server.auth, neo4j_server.database, neo4j_server.version, "local launcher", own=True)
    assert conftest.guard_against_foreign_data(own) is None
    monkeypatch.setattr(conftest, "ALLOW_WIPE", True)
    assert conftest.guard_against_foreign_data(foreign) is None
    monkeypatch.setattr(conftest, "ALLOW_WIPE", False)
    conftest._leave_marker(foreign)  # what the end of a run leaves behind
    assert conftest.guard_against_foreign_data(foreign) is None


# ---------------------------------------------------------------- agent tools
def test_memory_tools_are_plain_functions_an_agent_framework_can_register(genesis):
    functions = tools.memory_tools(genesis)
    # What frameworks read to build a tool: name, docstring, parameters with type hints.
    registry = {f.__name__: (inspect.getdoc(f), inspect.signature(f)) for f in functions}
    assert list(registry) == ["execute_kip", "execute_kip_readonly"]
    for doc, signature in registry.values():
        assert "KIP" in doc and list(signature.parameters) == ["command", "commands", "parameters", "dry_run"]
        assert all(p.annotation is not inspect.Parameter.empty for p in signature.parameters.values())
    execute_kip, execute_kip_readonly = functions
    written = json.loads(execute_kip('UPSERT { CONCEPT ?d { {type: "Domain", name: :n} } }', parameters={"n": "AgentMemory"}))
    assert len(written["result"]["upsert_concept_nodes"]) == 1
    found = json.loads(execute_kip_readonly('FIND(?d.name) WHERE { ?d {type: "Domain", name: "AgentMemory"} }'))
    assert found == {"result": ["AgentMemory"]}
    refused = json.loads(execute_kip_readonly('UPSERT { CONCEPT ?d { {type: "Domain", name: "Nope"} } }'))
    assert refused["error"]["code"] == "KIP_3004"
    assert [f.__name__ for f in tools.memory_tools(genesis, readonly=True)] == ["execute_kip_readonly"]


def test_tool_specs_and_dispatch_answer_a_chat_completions_tool_call(genesis):
    specs = tools.tool_specs()
    assert [s["function"]["name"] for s in specs] == ["execute_kip", "execute_kip_readonly"]
    assert all(s["type"] == "function" and s["function"]["parameters"] == tool_input_schema() for s in specs)
    # The model's tool call, as the API returns it: a name and a JSON string of arguments.
    answer = json.loads(tools.dispatch(genesis, "execute_kip", json.dumps({"commands": ["DESCRIBE PRIMER", "FIND(?x WHERE {"]})))
    assert "result" in answer["result"][0] and answer["result"][1]["error"]["code"] == "KIP_1001"
    assert json.loads(tools.dispatch(genesis, "execute_kip", "{not json"))["error"]["code"] == "KIP_1001"
    assert json.loads(tools.dispatch(genesis, "drop_everything", "{}"))["error"]["code"] == "KIP_1001"
    assert json.loads(tools.dispatch(genesis, "execute_kip", '{"command": "DESCRIBE PRIMER"}', readonly=True))["error"]["code"] == "KIP_1001"
    assert [s["function"]["name"] for s in tools.tool_specs(readonly=True)] == ["execute_kip_readonly"]

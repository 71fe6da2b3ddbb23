"""`kip2cypher mcp` driven by the official MCP SDK client over stdio, against the real Neo4j."""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from kip2cypher.mcp_server import DESCRIPTIONS
from kip2cypher.models import tool_input_schema


def _server(neo4j_server, *args: str) -> StdioServerParameters:
    env = {"NEO4J_URI": neo4j_server.uri, "PATH": os.environ.get("PATH", "")}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    if neo4j_server.database:
        env["NEO4J_DATABASE"] = neo4j_server.database
    return StdioServerParameters(command=sys.executable, args=["-m", "kip2cypher.cli", "mcp", *args], env=env)


async def _session_run(params: StdioServerParameters, body):
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                return await body(session, init)


def run(params, body):
    return anyio.run(_session_run, params, body)


def payload(result):
    """The §6 response carried by a tool result: text content and structured content agree."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    assert result.is_error == ("error" in data)
    return data


def test_lists_both_tools_with_spec_schemas_and_calls_them(genesis, neo4j_server):
    async def body(session, init):
        assert init.server_info.name == "kip2cypher"
        assert "DESCRIBE PRIMER" in (init.instructions or "")
        tools = (await session.list_tools()).tools
        by_name = {t.name: t for t in tools}
        assert set(by_name) == {"execute_kip", "execute_kip_readonly"}
        for name, tool in by_name.items():
            assert tool.input_schema == tool_input_schema()
            assert tool.description == DESCRIPTIONS[name]
        assert by_name["execute_kip_readonly"].annotations.read_only_hint is True
        assert by_name["execute_kip"].annotations.destructive_hint is True

        out = {}
        out["syntax"] = payload(await session.call_tool("execute_kip_readonly", {"command": "FIND(?x WHERE {"}))
        out["malformed"] = payload(await session.call_tool("execute_kip", {"command": "DESCRIBE PRIMER", "commands": ["DESCRIBE PRIMER"]}))
        out["write_on_read"] = payload(await session.call_tool("execute_kip_readonly", {"command": 'UPSERT { CONCEPT ?x { {type: "Domain", name: "Mcp"} } }'}))
        out["upsert"] = payload(
            await session.call_tool(
                "execute_kip",
                {
                    "command": 'UPSERT { CONCEPT ?d { {type: "Domain", name: :name} SET ATTRIBUTES { description: "via MCP" } } }',
                    "parameters": {"name": "McpDomain"},
                },
            )
        )
        out["batch"] = payload(
            await session.call_tool(
                "execute_kip",
                {
                    "commands": ["FIND(?x WHERE {", {"command": 'UPSERT { CONCEPT ?d { {type: "Domain", name: :n} } }', "parameters": {"n": "McpBatch"}}],
                    "dry_run": True,
                },
            )
        )
        out["unknown_tool"] = payload(await session.call_tool("drop_database", {}))
        return out

    out = run(_server(neo4j_server), body)
    assert out["syntax"]["error"]["code"] == "KIP_1001" and out["syntax"]["error"]["line"] == 1
    assert out["malformed"]["error"]["code"] == "KIP_1001"
    assert out["write_on_read"]["error"]["code"] == "KIP_3004"
    upsert = out["upsert"]["result"]
    assert upsert["blocks"] == 1 and len(upsert["upsert_concept_nodes"]) == 1
    batch = out["batch"]["result"]
    assert len(batch) == 2 and batch[0]["error"]["code"] == "KIP_1001" and "result" in batch[1]
    assert out["unknown_tool"]["error"]["code"] == "KIP_1001"
    names = {r["name"] for r in genesis.driver.execute_query("MATCH (d:KipConcept {type: 'Domain'}) RETURN d.name AS name").records}
    assert "McpDomain" in names and "McpBatch" not in names  # dry_run wrote nothing


def test_readonly_server_exposes_only_the_read_tool(genesis, neo4j_server):
    async def body(session, init):
        tools = (await session.list_tools()).tools
        result = payload(await session.call_tool("execute_kip", {"command": 'UPSERT { CONCEPT ?x { {type: "Domain", name: "Nope"} } }'}))
        return [t.name for t in tools], result

    names, result = run(_server(neo4j_server, "--readonly"), body)
    assert names == ["execute_kip_readonly"]
    assert result["error"]["code"] == "KIP_1001" and "execute_kip_readonly" in result["error"]["hint"]
    assert genesis.driver.execute_query("MATCH (d:KipConcept {name: 'Nope'}) RETURN count(d) AS c").records[0]["c"] == 0


def test_unreachable_neo4j_gives_kip_4003_not_a_crash(tmp_path):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kip2cypher.cli", "mcp", "--uri", "bolt://127.0.0.1:9"],
        env={"PATH": os.environ.get("PATH", ""), "KIP2CYPHER_MAX_RETRY_S": "1"},
    )

    async def body(session, init):
        return payload(await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"}))

    result = run(params, body)
    assert result["error"]["code"] == "KIP_4003"
    assert "unavailable" in result["error"]["message"] and "retry" in result["error"]["hint"].lower()


def test_bootstrap_flag_prepares_an_empty_database(nexus, neo4j_server):
    async def body(session, init):
        return (
            payload(await session.call_tool("execute_kip_readonly", {"command": 'DESCRIBE CONCEPT TYPE "Person"'})),
            payload(await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"})),
        )

    person, primer = run(_server(neo4j_server, "--bootstrap", "--with-capsules"), body)
    assert person["result"]["name"] == "Person"
    assert primer["result"]["identity"]["name"] == "$self"


def test_mcp_readonly_bootstrap_wrote_at_start_up(nexus, neo4j_server):
    """``mcp --readonly --bootstrap`` bootstrapped (wrote Genesis) before serving read-only: the
    combination is refused before anything connects (also with KIP2CYPHER_READONLY=1), and the
    database stays as it was."""
    import subprocess

    def count() -> int:
        return nexus.driver.execute_query("MATCH (n) RETURN count(n) AS c", database_=nexus.database).records[0]["c"]

    params = _server(neo4j_server)
    before = count()  # the schema objects' bookkeeping, no Genesis
    for args, extra_env in ((["--readonly", "--bootstrap"], {}), (["--bootstrap"], {"KIP2CYPHER_READONLY": "1"})):
        done = subprocess.run(
            [params.command, *params.args, *args], env={**params.env, **extra_env}, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
        )
        assert done.returncode != 0, done
        assert "--readonly and --bootstrap cannot be combined" in done.stderr and "kip2cypher bootstrap" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""
    assert count() == before

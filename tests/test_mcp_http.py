"""`kip2cypher mcp --transport http`: the SDK's streamable-HTTP client against the real server
process and the real Neo4j — bearer tokens (401, ro, rw), DNS-rebinding protection, the request
size limit, the request timeout, and many concurrent sessions.

The concurrency test runs for KIP2CYPHER_MCP_SOAK_S seconds (default 60: the issue's minute)
with KIP2CYPHER_MCP_SOAK_SESSIONS sessions (default 16).
"""

from __future__ import annotations

import json
import os

import anyio
import httpx2
import pytest
from kml_helpers import ok
from mcp_http_helpers import ACCEPT, INIT, RO, RW, RW2, SOAK_TYPE, TOKENS, MixedTraffic, count, http_server, in_session, leaves, payload, start_fails

import kip2cypher
from kip2cypher import mcp_server
from kip2cypher.mcp_server import McpConfigError, parse_tokens

UPSERT = 'UPSERT { CONCEPT ?d { {type: "Domain", name: :name} } }'


# ---------------------------------------------------------------- tokens
def test_missing_or_unknown_token_gets_401_and_nothing_runs(genesis, neo4j_server):
    before = count(genesis, "MATCH (n) RETURN count(n)")
    with http_server(neo4j_server) as served:
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "execute_kip", "arguments": {"command": UPSERT, "parameters": {"name": "Intruder"}}},
        }
        for headers in ({}, {"Authorization": "Bearer not-a-configured-token-123"}, {"Authorization": f"Basic {RW}"}, {"Authorization": f"Bearer {RW[:-1]}"}):
            for body in (INIT, call):
                response = httpx2.post(served.url, timeout=60, json=body, headers={**ACCEPT, **headers})
                assert response.status_code == 401, response.text
                assert response.headers["www-authenticate"].startswith("Bearer")
        with pytest.raises(BaseException) as raised:  # the SDK client: the handshake itself is refused
            in_session(served.url, None, lambda session: session.list_tools())
        assert any("error" in str(leaf).lower() for leaf in leaves(raised.value))
        # A token in use never shows in the server's log, not even on failures.
        assert not any(secret in line for line in served.log for secret in (RW, RW2, RO))
    assert count(genesis, "MATCH (n) RETURN count(n)") == before


def test_ro_token_sees_and_calls_only_the_readonly_tool(genesis, neo4j_server):
    async def body(session):
        names = [t.name for t in (await session.list_tools()).tools]
        write = payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": "RoWrite"}}))
        batch = payload(await session.call_tool("execute_kip", {"commands": ["DESCRIBE PRIMER"]}))
        read = payload(await session.call_tool("execute_kip_readonly", {"command": 'FIND(?d.name) WHERE { ?d {type: "$ConceptType", name: "Domain"} }'}))
        sneaky = payload(await session.call_tool("execute_kip_readonly", {"command": UPSERT, "parameters": {"name": "RoSneak"}}))
        return names, write, batch, read, sneaky

    with http_server(neo4j_server) as served:
        names, write, batch, read, sneaky = in_session(served.url, RO, body)
    assert names == ["execute_kip_readonly"]
    assert write["error"]["code"] == "KIP_3004" and "read-only" in write["error"]["message"]
    assert batch["error"]["code"] == "KIP_3004"
    assert read["result"] == ["Domain"]
    assert sneaky["error"]["code"] == "KIP_3004"
    assert count(genesis, "MATCH (d:KipConcept) WHERE d.name IN ['RoWrite', 'RoSneak'] RETURN count(d)") == 0


def test_rw_token_has_both_tools_and_writes(genesis, neo4j_server):
    async def body(session):
        names = [t.name for t in (await session.list_tools()).tools]
        write = payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": "RwWrite"}}))
        read = payload(await session.call_tool("execute_kip_readonly", {"command": 'FIND(?d.name) WHERE { ?d {type: "Domain", name: "RwWrite"} }'}))
        return names, write, read

    with http_server(neo4j_server) as served:
        names, write, read = in_session(served.url, RW, body)
    assert names == ["execute_kip", "execute_kip_readonly"]
    assert len(write["result"]["upsert_concept_nodes"]) == 1
    assert read["result"] == ["RwWrite"]
    assert count(genesis, "MATCH (d:KipConcept {type: 'Domain', name: 'RwWrite'}) RETURN count(d)") == 1


def test_transport_host_port_path_from_the_environment_and_tokens_from_a_file(genesis, neo4j_server, tmp_path):
    """KIP2CYPHER_MCP_TRANSPORT/_HOST/_PORT/_PATH configure the server without any option, and a
    tokens file is what the running server checks: its rw token writes, its ro token may only read,
    a token of the environment's table is not added when the file is the only source."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# the team's tokens\n{RW} rw\n\n{RO} ro\n")
    env = {
        "KIP2CYPHER_MCP_TRANSPORT": "http",
        "KIP2CYPHER_MCP_HOST": "127.0.0.1",
        "KIP2CYPHER_MCP_PORT": "0",
        "KIP2CYPHER_MCP_PATH": "/memory",
        "KIP2CYPHER_MCP_TOKENS_FILE": str(tokens),
    }

    async def write(session):
        return payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": "FromFile"}}))

    async def refused(session):
        return payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": "NotWritten"}}))

    with http_server(neo4j_server, tokens=None, env=env, flags=()) as served:
        assert served.url.startswith("http://127.0.0.1:") and served.url.endswith("/memory")
        written = in_session(served.url, RW, write)
        denied = in_session(served.url, RO, refused)
        unknown = httpx2.post(served.url, timeout=60, json=INIT, headers={**ACCEPT, "authorization": f"Bearer {RW2}"})
    assert len(written["result"]["upsert_concept_nodes"]) == 1
    assert denied["error"]["code"] == "KIP_3004"
    assert unknown.status_code == 401
    assert count(genesis, "MATCH (d:KipConcept {type: 'Domain'}) WHERE d.name IN ['FromFile', 'NotWritten'] RETURN collect(d.name)") == ["FromFile"]


def test_readonly_env_limits_every_token(genesis, neo4j_server):
    async def body(session):
        names = [t.name for t in (await session.list_tools()).tools]
        return names, payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": "EnvRo"}}))

    with http_server(neo4j_server, env={"KIP2CYPHER_READONLY": "1"}) as served:
        names, refused = in_session(served.url, RW, body)
    assert names == ["execute_kip_readonly"]
    assert refused["error"]["code"] == "KIP_1001"  # the server has no execute_kip at all
    assert count(genesis, "MATCH (d:KipConcept {name: 'EnvRo'}) RETURN count(d)") == 0


def test_a_session_cannot_be_used_with_another_token(genesis, neo4j_server):
    with http_server(neo4j_server) as served:
        opened = httpx2.post(served.url, timeout=60, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {RO}"})
        assert opened.status_code == 200
        session_id = opened.headers["mcp-session-id"]
        hijack = httpx2.post(
            served.url,
            timeout=60,
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            headers={**ACCEPT, "Authorization": f"Bearer {RW}", "mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"},
        )
        assert hijack.status_code == 404


# ---------------------------------------------------------------- transport protections
def test_foreign_host_or_origin_is_refused(genesis, neo4j_server):
    auth = {"Authorization": f"Bearer {RW}"}
    with http_server(neo4j_server) as served:
        assert httpx2.post(served.url, timeout=60, json=INIT, headers={**ACCEPT, **auth, "host": "attacker.example:80"}).status_code == 421
        assert httpx2.post(served.url, timeout=60, json=INIT, headers={**ACCEPT, **auth, "origin": "http://attacker.example"}).status_code == 403
        assert httpx2.post(served.url, timeout=60, json=INIT, headers={**ACCEPT, **auth, "origin": "http://localhost:3000"}).status_code == 200
    with http_server(neo4j_server, "--allowed-hosts", "kip.internal:*") as served:
        assert httpx2.post(served.url, timeout=60, json=INIT, headers={**ACCEPT, **auth, "host": "kip.internal:8000"}).status_code == 200


def test_oversized_request_is_refused_before_parsing_with_kip_4002(genesis, neo4j_server):
    big = 'FIND(?d.name) WHERE { ?d {type: "Domain"} } ' + "// padding\n" * 2000

    async def body(session):
        try:
            await session.call_tool("execute_kip_readonly", {"command": big})
        except Exception as exc:  # noqa: BLE001 - the SDK raises the JSON-RPC error
            return str(exc)
        return "no error"

    with http_server(neo4j_server, "--max-request-bytes", "8192") as served:
        message = in_session(served.url, RW, body)
        raw = httpx2.post(served.url, timeout=60, content=b"x" * 9000, headers={**ACCEPT, "Authorization": f"Bearer {RW}"})
    assert "KIP_4002" in message and "8192" in message
    assert raw.status_code == 413 and raw.json()["error"]["data"]["code"] == "KIP_4002"


def test_request_timeout_answers_kip_4001(genesis, neo4j_server):
    commands = ['FIND(?d.name) WHERE { ?d {type: "$ConceptType"} }'] * 100

    async def body(session):
        return payload(await session.call_tool("execute_kip_readonly", {"commands": commands}))

    with http_server(neo4j_server, "--request-timeout", "0.001") as served:
        response = in_session(served.url, RO, body)
    assert response["error"]["code"] == "KIP_4001" and "request timeout" in response["error"]["message"]


# ---------------------------------------------------------------- start-up refusals
def test_http_without_tokens_refuses_to_start_unless_no_auth_on_loopback(genesis, neo4j_server):
    assert "KIP2CYPHER_MCP_TOKENS" in start_fails(neo4j_server)
    assert "loopback" in start_fails(neo4j_server, "--no-auth", "--host", "0.0.0.0")
    assert "contradict" in start_fails(neo4j_server, "--no-auth", tokens=TOKENS)
    assert "KIP2CYPHER_MCP_PORT" in start_fails(neo4j_server, tokens=TOKENS, env={"KIP2CYPHER_MCP_PORT": "eighty"})

    async def body(session):
        return payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": "NoAuth"}}))

    with http_server(neo4j_server, "--no-auth", tokens=None) as served:
        assert "NO AUTHENTICATION" in "".join(served.log)
        assert "result" in in_session(served.url, None, body)


def test_tokens_file_and_entry_errors_never_quote_the_token(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"# team tokens\n{RW} rw\n\n{RO} ro   # the dashboard\n")
    tokens = parse_tokens(None, str(path))
    assert [(t.access, t.label) for t in tokens] == [("rw", "token #1"), ("ro", "token #2")]
    assert tokens[0].scopes == [mcp_server.READ_SCOPE, mcp_server.WRITE_SCOPE] and tokens[1].scopes == [mcp_server.READ_SCOPE]
    assert RW not in repr(tokens)
    bad = {
        f"{RW}:rw:team-a": "the namespace must be lower-case letters",
        f"{RW}:rw:alice:x": "optionally a namespace",
        f"{RW}:admin": "rw or ro",
        "short:rw": "at least 16",
        f"{RW}:rw,{RW}:ro": "twice",
    }
    for value, expected in bad.items():
        with pytest.raises(McpConfigError) as raised:
            parse_tokens(value)
        assert expected in str(raised.value) and value.split(":")[0] not in str(raised.value)
    (tmp_path / "three").write_text(f"{RW} rw ns1\n{RO} ro Bad\n")
    with pytest.raises(McpConfigError, match="line 2 of"):
        parse_tokens(None, str(tmp_path / "three"))
    (tmp_path / "bound").write_text(f"{RW} rw ns1\n{RO} ro\n")
    bound = parse_tokens(None, str(tmp_path / "bound"))
    assert [t.namespace for t in bound] == ["ns1", None]
    assert bound[0].scopes == [mcp_server.READ_SCOPE, mcp_server.WRITE_SCOPE, mcp_server.NAMESPACE_SCOPE + "ns1"]


def test_token_check_is_constant_time_compare_over_every_token():
    verifier = mcp_server.StaticTokenVerifier(parse_tokens(TOKENS))
    found = anyio.run(verifier.verify_token, RO)
    assert found.client_id == "token #3" and found.token == "token #3" and found.scopes == [mcp_server.READ_SCOPE]
    assert anyio.run(verifier.verify_token, RO + "x") is None
    assert anyio.run(verifier.verify_token, "ünïcode-token-that-is-long") is None


def test_a_token_bound_to_a_namespace_reaches_that_namespace_only(genesis, neo4j_server):
    """`token:rw:alpha`: its calls run in namespace alpha (bootstrapped on first use with
    --bootstrap); a token bound to beta never sees alpha's memory, nor the default namespace's."""
    find = {"command": 'FIND(?d.name) WHERE { ?d {type: "Domain", name: :name} }', "parameters": {"name": "AlphaOnly"}}

    def write_then_read(token, name):
        async def body(session):
            written = payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": name}}))
            return written, payload(await session.call_tool("execute_kip_readonly", find))

        return body

    with http_server(neo4j_server, "--bootstrap", tokens=f"{RW}:rw:alpha,{RW2}:rw:beta,{RO}:ro") as served:
        alpha_write, alpha_read = in_session(served.url, RW, write_then_read(RW, "AlphaOnly"))
        beta_write, beta_read = in_session(served.url, RW2, write_then_read(RW2, "BetaOnly"))
        default_read = in_session(served.url, RO, lambda session: session.call_tool("execute_kip_readonly", find))
    assert len(alpha_write["result"]["upsert_concept_nodes"]) == 1 and alpha_read["result"] == ["AlphaOnly"]
    assert len(beta_write["result"]["upsert_concept_nodes"]) == 1 and beta_read["result"] == []
    assert payload(default_read)["result"] == []
    labels = genesis.driver.execute_query(
        "MATCH (d {type: 'Domain'}) WHERE d.name IN ['AlphaOnly', 'BetaOnly'] RETURN d.name AS name, labels(d) AS labels ORDER BY name",
        database_=genesis.database,
    ).records
    assert [(r["name"], sorted(r["labels"])) for r in labels] == [
        ("AlphaOnly", ["KipConcept__alpha", "kip.alpha:Domain"]),
        ("BetaOnly", ["KipConcept__beta", "kip.beta:Domain"]),
    ]


# ---------------------------------------------------------------- many clients
SOAK_S = float(os.environ.get("KIP2CYPHER_MCP_SOAK_S", "60"))
SOAK_SESSIONS = int(os.environ.get("KIP2CYPHER_MCP_SOAK_SESSIONS", "16"))
SOAK_ENV = {"KIP2CYPHER_EMBEDDER": os.environ.get("KIP2CYPHER_EMBEDDER", "auto")}


def test_concurrent_sessions_mixed_reads_and_writes_lose_nothing(genesis, neo4j_server):
    """≥16 SDK sessions at once (¾ rw, ¼ ro) for SOAK_S seconds: every answer is a result or a KIP
    error, every acknowledged write is in Neo4j, and nothing else is; afterwards no MCP session
    is left open (the clients closed theirs)."""
    ok(genesis.execute_kip(SOAK_TYPE))
    traffic = MixedTraffic("", SOAK_SESSIONS)
    with http_server(neo4j_server, env=SOAK_ENV) as served:
        traffic.url = served.url
        elapsed = traffic.run(SOAK_S)
        health = served.health()
    print("\n" + traffic.summary(elapsed))
    assert not traffic.failures, traffic.failures[:5]
    writers = {f"s{sid}" for sid in range(SOAK_SESSIONS) if sid % 4 != 3}
    assert SOAK_SESSIONS >= 16 and {name.split("-")[0] for name in traffic.acknowledged} == writers and traffic.counts["reads"] > SOAK_SESSIONS
    assert traffic.stored(genesis) == traffic.acknowledged  # nothing lost, nothing written that was not acknowledged
    assert traffic.half_written(genesis) == []
    assert health == {"status": "ok", "sessions": 0, "version": kip2cypher.__version__}


def test_http_listener_sockets_get_tcp_nodelay_so_answers_are_not_held_by_nagle():
    """A listener created without proto=IPPROTO_TCP made asyncio skip TCP_NODELAY: every SSE answer
    then waited for the client's delayed ACK (~40 ms a call instead of ~4)."""
    import socket

    listener = mcp_server.bind("127.0.0.1", 0)
    try:
        assert listener.proto == socket.IPPROTO_TCP
    finally:
        listener.close()


def test_write_permission_fails_closed_when_a_request_carries_no_token():
    """With tokens required, a request whose authenticated user cannot be found (no HTTP request
    on the context) is treated as read-only, never as a writer."""
    import mcp_types as types

    class Recorder:
        def __init__(self):
            self.calls = []

        def execute(self, arguments, readonly=False, call=None):
            self.calls.append(readonly)
            return {"result": "ran"}

    class NoRequest:
        request = None

    nexus = Recorder()
    server = mcp_server.build_server(nexus, tokens_required=True)
    call = server.get_request_handler("tools/call").handler
    listing = server.get_request_handler("tools/list").handler
    refused = anyio.run(call, NoRequest(), types.CallToolRequestParams(name="execute_kip", arguments={"command": "DESCRIBE PRIMER"}))
    assert json.loads(refused.content[0].text)["error"]["code"] == "KIP_3004" and nexus.calls == []
    assert [t.name for t in anyio.run(listing, NoRequest(), None).tools] == ["execute_kip_readonly"]
    read = anyio.run(call, NoRequest(), types.CallToolRequestParams(name="execute_kip_readonly", arguments={"command": "DESCRIBE PRIMER"}))
    assert json.loads(read.content[0].text) == {"result": "ran"} and nexus.calls == [True]
    open_server = mcp_server.build_server(Recorder(), tokens_required=False)  # stdio: no tokens at all
    assert [t.name for t in anyio.run(open_server.get_request_handler("tools/list").handler, NoRequest(), None).tools] == [
        "execute_kip",
        "execute_kip_readonly",
    ]

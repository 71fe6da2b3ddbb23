"""`kip2cypher mcp --transport http`: the SDK's streamable-HTTP client against the real server
process and the real Neo4j — bearer tokens (401, ro, rw), DNS-rebinding protection, the request
size limit, the request timeout, and many concurrent sessions.

The concurrency test runs for KIP2CYPHER_MCP_SOAK_S seconds (default 15) with
KIP2CYPHER_MCP_SOAK_SESSIONS sessions (default 16); the longer run of docs/interfaces.md is
`KIP2CYPHER_MCP_SOAK_S=60 python -m pytest tests/test_mcp_http.py -k concurrent -s`.
"""
from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from kip2cypher import mcp_server
from kip2cypher.mcp_server import McpConfigError, parse_tokens

RW = "rw-token-0123456789abcdefghij"
RW2 = "rw-token-second-0123456789abc"
RO = "ro-token-0123456789abcdefghij"
TOKENS = f"{RW}:rw,{RW2}:rw,{RO}:ro"
KIP_CODE = re.compile(r"^KIP_[1-4]\d{3}$")
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _env(neo4j_server, tokens):
    env = {"PATH": os.environ.get("PATH", ""), "NEO4J_URI": neo4j_server.uri, "HOME": os.environ.get("HOME", "/tmp")}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    if neo4j_server.database:
        env["NEO4J_DATABASE"] = neo4j_server.database
    if tokens is not None:
        env["KIP2CYPHER_MCP_TOKENS"] = tokens
    return env


class Served:
    """A running `kip2cypher mcp --transport http` process: its URL and everything it logged."""

    def __init__(self, proc: subprocess.Popen, url: str, log: list[str]) -> None:
        self.proc, self.url, self.log = proc, url, log


@contextmanager
def http_server(neo4j_server, *args, tokens=TOKENS, env=None):
    command = [sys.executable, "-m", "kip2cypher.cli", "mcp", "--transport", "http", "--port", "0", *args]
    proc = subprocess.Popen(command, env={**_env(neo4j_server, tokens), **(env or {})}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    lines: queue.Queue = queue.Queue()
    log: list[str] = []

    def drain():
        for line in proc.stderr:
            log.append(line)
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    url = None
    deadline = time.monotonic() + 60
    while url is None and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        if line is None:
            break
        match = re.search(r"listening on (http://\S+)", line)
        url = match.group(1) if match else None
    try:
        assert url, "server did not start:\n" + "".join(log)
        yield Served(proc, url, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _client(token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120))


async def _in_session(url, token, body):
    async with _client(token) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


def in_session(url, token, body):
    return anyio.run(_in_session, url, token, body)


def payload(result):
    data = json.loads(result.content[0].text)
    assert result.structured_content == data and result.is_error == ("error" in data)
    return data


def _count(nexus, cypher):
    return nexus.driver.execute_query(cypher, database_=nexus.database).records[0][0]


def _leaves(exc):
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


UPSERT = 'UPSERT { CONCEPT ?d { {type: "Domain", name: :name} } }'


# ---------------------------------------------------------------- tokens
def test_missing_or_unknown_token_gets_401_and_nothing_runs(genesis, neo4j_server):
    before = _count(genesis, "MATCH (n) RETURN count(n)")
    with http_server(neo4j_server) as served:
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "execute_kip", "arguments": {"command": UPSERT, "parameters": {"name": "Intruder"}}}}
        for headers in ({}, {"Authorization": "Bearer not-a-configured-token-123"}, {"Authorization": f"Basic {RW}"}, {"Authorization": f"Bearer {RW[:-1]}"}):
            for body in (INIT, call):
                response = httpx2.post(served.url, json=body, headers={**ACCEPT, **headers})
                assert response.status_code == 401, response.text
                assert response.headers["www-authenticate"].startswith("Bearer")
        with pytest.raises(BaseException) as raised:  # the SDK client: the handshake itself is refused
            in_session(served.url, None, lambda session: session.list_tools())
        assert any("error" in str(leaf).lower() for leaf in _leaves(raised.value))
        # A token in use never shows in the server's log, not even on failures.
        assert not any(secret in line for line in served.log for secret in (RW, RW2, RO))
    assert _count(genesis, "MATCH (n) RETURN count(n)") == before


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
    assert _count(genesis, "MATCH (d:KipConcept) WHERE d.name IN ['RoWrite', 'RoSneak'] RETURN count(d)") == 0


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
    assert _count(genesis, "MATCH (d:KipConcept {type: 'Domain', name: 'RwWrite'}) RETURN count(d)") == 1


def test_readonly_env_limits_every_token(genesis, neo4j_server):
    async def body(session):
        names = [t.name for t in (await session.list_tools()).tools]
        return names, payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": "EnvRo"}}))

    with http_server(neo4j_server, env={"KIP2CYPHER_READONLY": "1"}) as served:
        names, refused = in_session(served.url, RW, body)
    assert names == ["execute_kip_readonly"]
    assert refused["error"]["code"] == "KIP_1001"  # the server has no execute_kip at all
    assert _count(genesis, "MATCH (d:KipConcept {name: 'EnvRo'}) RETURN count(d)") == 0


def test_a_session_cannot_be_used_with_another_token(genesis, neo4j_server):
    with http_server(neo4j_server) as served:
        opened = httpx2.post(served.url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {RO}"})
        assert opened.status_code == 200
        session_id = opened.headers["mcp-session-id"]
        hijack = httpx2.post(
            served.url,
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            headers={**ACCEPT, "Authorization": f"Bearer {RW}", "mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"},
        )
        assert hijack.status_code == 404


# ---------------------------------------------------------------- transport protections
def test_foreign_host_or_origin_is_refused(genesis, neo4j_server):
    auth = {"Authorization": f"Bearer {RW}"}
    with http_server(neo4j_server) as served:
        assert httpx2.post(served.url, json=INIT, headers={**ACCEPT, **auth, "host": "attacker.example:80"}).status_code == 421
        assert httpx2.post(served.url, json=INIT, headers={**ACCEPT, **auth, "origin": "http://attacker.example"}).status_code == 403
        assert httpx2.post(served.url, json=INIT, headers={**ACCEPT, **auth, "origin": "http://localhost:3000"}).status_code == 200
    with http_server(neo4j_server, "--allowed-hosts", "kip.internal:*") as served:
        assert httpx2.post(served.url, json=INIT, headers={**ACCEPT, **auth, "host": "kip.internal:8000"}).status_code == 200


def test_oversized_request_is_refused_before_parsing_with_kip_4002(genesis, neo4j_server):
    big = "FIND(?d.name) WHERE { ?d {type: \"Domain\"} } " + "// padding\n" * 2000

    async def body(session):
        try:
            await session.call_tool("execute_kip_readonly", {"command": big})
        except Exception as exc:  # noqa: BLE001 - the SDK raises the JSON-RPC error
            return str(exc)
        return "no error"

    with http_server(neo4j_server, "--max-request-bytes", "8192") as served:
        message = in_session(served.url, RW, body)
        raw = httpx2.post(served.url, content=b"x" * 9000, headers={**ACCEPT, "Authorization": f"Bearer {RW}"})
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
def _start_fails(neo4j_server, *args, tokens=None, env=None):
    command = [sys.executable, "-m", "kip2cypher.cli", "mcp", "--transport", "http", *args]
    done = subprocess.run(command, env={**_env(neo4j_server, tokens), **(env or {})}, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    return done.stderr


def test_http_without_tokens_refuses_to_start_unless_no_auth_on_loopback(genesis, neo4j_server):
    assert "KIP2CYPHER_MCP_TOKENS" in _start_fails(neo4j_server)
    assert "loopback" in _start_fails(neo4j_server, "--no-auth", "--host", "0.0.0.0")
    assert "contradict" in _start_fails(neo4j_server, "--no-auth", tokens=TOKENS)
    assert "KIP2CYPHER_MCP_PORT" in _start_fails(neo4j_server, tokens=TOKENS, env={"KIP2CYPHER_MCP_PORT": "eighty"})

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
    assert [(r["name"], sorted(r["labels"])) for r in labels] == [("AlphaOnly", ["Domain", "KipConcept__alpha"]), ("BetaOnly", ["Domain", "KipConcept__beta"])]


# ---------------------------------------------------------------- many clients
SOAK_S = float(os.environ.get("KIP2CYPHER_MCP_SOAK_S", "15"))
SOAK_SESSIONS = int(os.environ.get("KIP2CYPHER_MCP_SOAK_SESSIONS", "16"))
SOAK_ENV = {"KIP2CYPHER_EMBEDDER": os.environ.get("KIP2CYPHER_EMBEDDER", "auto")}


def test_concurrent_sessions_mixed_reads_and_writes_lose_nothing(genesis, neo4j_server):
    """≥16 SDK sessions at once (¾ rw, ¼ ro) for SOAK_S seconds: every answer is a result or a KIP
    error, every acknowledged write is in Neo4j, and nothing else is."""
    genesis.execute_kip('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "SoakItem"} SET ATTRIBUTES { description: "load test" } } }')
    acknowledged: set[str] = set()
    failures: list[str] = []
    counts = {"calls": 0, "writes": 0, "reads": 0, "kip_errors": 0}
    deadline = 0.0

    def check(response, what):
        counts["calls"] += 1
        error = response.get("error")
        if error is not None:
            counts["kip_errors"] += 1
            if not KIP_CODE.match(str(error.get("code"))):
                failures.append(f"{what}: not a KIP error: {error}")
        return error is None

    async def writer(session, sid):
        i = 0
        while time.monotonic() < deadline:
            name = f"s{sid}-{i}"
            if i % 5 == 4:  # a batch: one write and one read
                response = payload(await session.call_tool("execute_kip", {"commands": [{"command": 'UPSERT { CONCEPT ?x { {type: "SoakItem", name: :n} } }', "parameters": {"n": name}}, "DESCRIBE CONCEPT TYPES"]}))
                if check(response, name) and "error" not in response["result"][0]:
                    acknowledged.add(name)
            elif check(payload(await session.call_tool("execute_kip", {"command": 'UPSERT { CONCEPT ?x { {type: "SoakItem", name: :n} SET ATTRIBUTES { i: :i } } }', "parameters": {"n": name, "i": i}})), name):
                acknowledged.add(name)
            counts["writes"] += 1
            check(payload(await session.call_tool("execute_kip_readonly", {"command": 'FIND(COUNT(?x)) WHERE { ?x {type: "SoakItem"} }'})), "count")
            counts["reads"] += 1
            i += 1

    async def reader(session, sid):
        refused = payload(await session.call_tool("execute_kip", {"command": 'UPSERT { CONCEPT ?x { {type: "SoakItem", name: "ro-write"} } }'}))
        if refused.get("error", {}).get("code") != "KIP_3004":
            failures.append(f"ro session {sid} was not refused: {refused}")
        while time.monotonic() < deadline:
            check(payload(await session.call_tool("execute_kip_readonly", {"command": 'FIND(?x.name) WHERE { ?x {type: "SoakItem"} } ORDER BY ?x.name LIMIT 20'})), "find")
            check(payload(await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"})), "primer")
            counts["reads"] += 2

    async def one(sid):
        rw = sid % 4 != 3
        try:
            await _in_session(served.url, (RW if sid % 2 else RW2) if rw else RO, lambda s: (writer if rw else reader)(s, sid))
        except BaseException as exc:  # noqa: BLE001 - any transport/protocol failure fails the test
            failures.append(f"session {sid}: {type(exc).__name__}: {[str(leaf) for leaf in _leaves(exc)]}")

    async def all_sessions():
        nonlocal deadline
        deadline = time.monotonic() + SOAK_S
        async with anyio.create_task_group() as group:
            for sid in range(SOAK_SESSIONS):
                group.start_soon(one, sid)

    with http_server(neo4j_server, env=SOAK_ENV) as served:
        started = time.monotonic()
        anyio.run(all_sessions)
        elapsed = time.monotonic() - started
    stored = {r["name"] for r in genesis.driver.execute_query("MATCH (n:KipConcept {type: 'SoakItem'}) RETURN n.name AS name", database_=genesis.database).records}
    print(f"\n{SOAK_SESSIONS} sessions, {elapsed:.1f} s: {counts['calls']} calls ({counts['calls'] / elapsed:.0f}/s), {len(acknowledged)} writes acknowledged, {counts['kip_errors']} KIP errors")
    assert not failures, failures[:5]
    assert SOAK_SESSIONS >= 16 and len(acknowledged) >= SOAK_SESSIONS and counts["reads"] > SOAK_SESSIONS
    assert stored == acknowledged  # nothing lost, nothing written that was not acknowledged


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

        def execute(self, arguments, readonly=False):
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
    assert [t.name for t in anyio.run(open_server.get_request_handler("tools/list").handler, NoRequest(), None).tools] == ["execute_kip", "execute_kip_readonly"]

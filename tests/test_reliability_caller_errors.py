"""Caller mistakes are caller errors (issue 18): hostile numbers, strings and nesting, malformed
URIs, invalid JSON-RPC and a hostile Cypher prefix answer a KIP error (or a JSON-RPC error) with a
hint — never KIP_4003 "engine bug", a logged traceback, a lost answer or a leaked password."""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys

import httpx2
import pytest
from kml_helpers import err, ok
from mcp_http_helpers import ACCEPT, INIT, RW, http_server, server_env

import kip2cypher
from kip2cypher.config import Settings, SettingsError
from kip2cypher.errors import KipError

BIG = "99999999999999999999"  # > 2^63 - 1
DOMAIN = 'FIND(?d.name) WHERE { ?d {type: "Domain"} %s }'
#: Every position where Neo4j compares, limits or computes with a KIP integer — written in the text.
BIG_IN_TEXT = {
    "LIMIT": DOMAIN % "" + f" LIMIT {BIG}",
    "DESCRIBE LIMIT": f"DESCRIBE CONCEPT TYPES LIMIT {BIG}",
    "FILTER": DOMAIN % f"FILTER(?d.attributes.x > {BIG})",
    "FILTER ==": DOMAIN % f"FILTER(?d.attributes.x == -{BIG})",
    "IN": DOMAIN % f"FILTER(IN(?d.attributes.x, [1, {BIG}]))",
    "EXPECT VERSION": f'UPSERT {{ CONCEPT ?a {{ {{type: "Domain", name: "big"}} EXPECT VERSION {BIG} SET ATTRIBUTES {{ n: 1 }} }} }}',
    "UPDATE ADD": f'UPDATE ?d SET ATTRIBUTES {{ x: ADD(?d.attributes.x, {BIG}) }} WHERE {{ ?d {{type: "Domain"}} }}',
    "UPDATE MUL": f'UPDATE ?d SET ATTRIBUTES {{ x: MUL(?d.attributes.x, -{BIG}) }} WHERE {{ ?d {{type: "Domain"}} }}',
}
#: The same positions bound through a placeholder.
BIG_AS_PARAMETER = {
    "LIMIT": DOMAIN.replace("%s", "") + " LIMIT :n",
    "FILTER": DOMAIN % "FILTER(?d.attributes.x > :n)",
    "IN": DOMAIN % "FILTER(IN(?d.attributes.x, :list))",
    "EXPECT VERSION": 'UPSERT { CONCEPT ?a { {type: "Domain", name: "big"} EXPECT VERSION :n SET ATTRIBUTES { n: 1 } } }',
    "UPDATE ADD": 'UPDATE ?d SET ATTRIBUTES { x: ADD(?d.attributes.x, :n) } WHERE { ?d {type: "Domain"} }',
}


def _nested(depth: int) -> list:
    """``[[[…]]]`` ``depth`` levels deep, built without recursion (an API caller can send it)."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _no_engine_bug(caplog, code: str, response: dict, codes=("KIP_1001", "KIP_2003")) -> dict:
    e = err(response, response.get("error", {}).get("code", "none"))
    assert e["code"] in codes, (code, e)
    assert e["hint"] and "engine bug" not in e["message"] + e["hint"]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    return e


@pytest.mark.parametrize("position", BIG_IN_TEXT)
def test_integer_beyond_64_bits_in_the_text_was_an_engine_bug(genesis, caplog, position):
    """An integer beyond 64 bits where Neo4j computes with it raised OverflowError in the driver:
    KIP_4003 'engine bug' and a logged traceback. Now KIP_1001 (LIMIT) or KIP_2003, nothing written."""
    ok(genesis.execute_kip('UPSERT { CONCEPT ?d { {type: "Domain", name: "n1"} SET ATTRIBUTES { x: 5 } } }'))
    with caplog.at_level(logging.WARNING, logger="kip2cypher"):
        e = _no_engine_bug(caplog, position, genesis.execute_kip(BIG_IN_TEXT[position]))
    assert BIG in e["message"]
    assert ok(genesis.execute_kip('FIND(?d.attributes.x) WHERE { ?d {type: "Domain", name: "n1"} }')) == [5]


@pytest.mark.parametrize("position", BIG_AS_PARAMETER)
def test_integer_beyond_64_bits_as_a_parameter_was_an_engine_bug(genesis, caplog, position):
    ok(genesis.execute_kip('UPSERT { CONCEPT ?d { {type: "Domain", name: "n1"} SET ATTRIBUTES { x: 5 } } }'))
    with caplog.at_level(logging.WARNING, logger="kip2cypher"):
        e = _no_engine_bug(caplog, position, genesis.execute_kip(BIG_AS_PARAMETER[position], parameters={"n": int(BIG), "list": [1, int(BIG)]}))
    assert BIG in e["message"]


def test_integer_beyond_64_bits_is_still_a_value_an_attribute_holds(genesis):
    """Only where Neo4j computes is it refused: as an attribute value it is stored exactly."""
    ok(genesis.execute_kip(f'UPSERT {{ CONCEPT ?d {{ {{type: "Domain", name: "big"}} SET ATTRIBUTES {{ x: {BIG}, y: :y }} }} }}', parameters={"y": -int(BIG)}))
    assert ok(genesis.execute_kip('FIND(?d.attributes.x, ?d.attributes.y) WHERE { ?d {type: "Domain", name: "big"} }')) == [
        [int(BIG)],
        [-int(BIG)],
    ]  # one column per FIND expression


@pytest.mark.parametrize(
    "command, parameters, fragment",
    [
        ('FIND(?d.name) WHERE { ?d {type: "Domain", name: :n} }', {"n": "a\ud800b"}, "surrogate"),
        ('UPSERT { CONCEPT ?d { {type: "Domain", name: "s"} SET ATTRIBUTES { k: :v } } }', {"v": {"key\udc00": 1}}, "surrogate"),
        ('FIND(?d.name) WHERE { ?d {type: "Domain", name: "a\\ud800b"} }', {}, "surrogate"),
        ('FIND(?d.name) WHERE { ?d {type: "Domain", name: "a\ud800b"} }', {}, "surrogate"),
        ('UPSERT { CONCEPT ?d { {type: "Domain", name: "s"} SET ATTRIBUTES { k: :v } } }', {"v": _nested(100)}, "nested more than 64"),
        ('FIND(?d.name) WHERE { ?d {type: "Domain"} FILTER(IN(?d.name, :v)) }', {"v": _nested(3000)}, "nested more than 64"),
        ('FIND(?d.name) WHERE { ?d {type: "Domain", name: :n} }', {"n": float("nan")}, "finite"),
    ],
    ids=["surrogate-parameter", "surrogate-key", "surrogate-escape", "surrogate-raw", "nested-100", "nested-3000", "nan"],
)
def test_unpaired_surrogates_and_deep_parameters_were_engine_bugs(genesis, caplog, command, parameters, fragment):
    """Unpaired surrogates and deeply nested parameters raised inside the driver or a recursive
    walk (KIP_4003 + traceback); the answer must also be encodable as UTF-8 by any transport."""
    with caplog.at_level(logging.WARNING, logger="kip2cypher"):
        e = _no_engine_bug(caplog, fragment, genesis.execute_kip(command, parameters=parameters), codes=("KIP_1001",))
    assert fragment in e["message"]
    json.dumps(e, ensure_ascii=False).encode("utf-8")  # no lone surrogate in the answer


def test_deeply_nested_request_json_was_a_recursion_error():
    """``tools.dispatch`` (and ``kip2cypher call``) read request JSON with Python's decoder, which
    recursed into a RecursionError on 3,000 nested arrays: KIP_4003. Now KIP_1001, before any Neo4j."""
    from kip2cypher.tools import dispatch

    arguments = '{"command": "FIND(?d) WHERE { ?d {name: :n} }", "parameters": {"n": ' + "[" * 3000 + "]" * 3000 + "}}"
    e = json.loads(dispatch(None, "execute_kip_readonly", arguments))["error"]
    assert e["code"] == "KIP_1001" and "too deeply" in e["message"]


# ------------------------------------------------------------------ CLI
def _cli(args, stdin, env):
    return subprocess.run([sys.executable, "-m", "kip2cypher.cli", *args], input=stdin, capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def test_cli_call_and_compile_printed_python_tracebacks(neo4j_server, genesis):
    """Hostile input through ``kip2cypher call`` / ``compile`` printed tracebacks on stderr
    (logging's last-resort handler). stdout carries the KIP error; stderr holds no traceback."""
    env = server_env(neo4j_server, None) | {"KIP2CYPHER_EMBEDDER": "none"}
    nested = '{"command": "FIND(?d) WHERE { ?d {name: :n} }", "parameters": {"n": ' + "[" * 3000 + "]" * 3000 + "}}"
    requests = [
        nested,
        json.dumps({"command": BIG_IN_TEXT["FILTER"]}),
        json.dumps({"command": BIG_AS_PARAMETER["LIMIT"], "parameters": {"n": int(BIG)}}),
        '{"command": "FIND(?d.name) WHERE { ?d {type: \\"Domain\\", name: :n} }", "parameters": {"n": "\\ud800"}}',
    ]
    for request in requests:
        done = _cli(["call", "-"], request, env)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert json.loads(done.stdout)["error"]["code"] in ("KIP_1001", "KIP_2003"), done.stdout
    for text in (BIG_IN_TEXT["FILTER"], 'FIND(?d) WHERE { ?d {name: "\\ud800"} }', "/**/" * 40 + "/*", "FIND(" * 5000):
        done = _cli(["compile", text], "", env)
        assert "Traceback" not in done.stderr and done.returncode in (0, 1, 2), done.stderr  # 2: click usage error


def test_cli_logs_an_internal_error_in_one_line():
    """The engine logs an internal error with its traceback (for the operator's logs); the CLI's
    handler prints it as one ``name: message`` line (KIP2CYPHER_DEBUG=1 shows the traceback)."""
    script = (
        "import logging, sys\n"
        "from kip2cypher import logs\n"
        "logs.configure()\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n"
        "    logging.getLogger('kip2cypher').error('request failure: boom', exc_info=True)\n"
    )
    quiet = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env={**os.environ, "KIP2CYPHER_DEBUG": "0"})
    assert quiet.stderr == "kip2cypher: request failure: boom\n"
    loud = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env={**os.environ, "KIP2CYPHER_DEBUG": "1"})
    assert "Traceback" in loud.stderr and "ZeroDivisionError" in loud.stderr


# ------------------------------------------------------------------ credentials in the URI
@pytest.mark.parametrize(
    "uri",
    [
        "bolt://neo4j:S3cretPW@127.0.0.1:7721?routing=x",
        "bolt+xyz://neo4j:S3cretPW@127.0.0.1:7721",
        "neo4j://neo4j:S3cretPW@[::1",
        "bolt://neo4j:S3cret/PW@127.0.0.1:1",
        "bolt://neo4j:S3cret#PW@127.0.0.1:1",
        "bolt://neo4j:S3cret?PW@127.0.0.1:1",
        "bolt://neo4j:S3cret@PW@127.0.0.1:1",
        "bolt://neo4j:S3cretPW@127.0.0.1:99999",
        "bolt://neo4j:S3cretPW@127.0.0.1:notaport",
    ],
)
def test_connect_with_credentials_in_the_uri_never_shows_the_password(uri, caplog):
    """A driver ConfigurationError repeated the URI with its password; a password holding '/',
    '?' or '#' ended the parsed netloc early and stayed in the URI every message quoted; a URI
    or port Python cannot parse raised ValueError. Each is a KipError without the password."""
    answers = []
    with caplog.at_level(logging.DEBUG):
        try:
            with kip2cypher.connect(uri, settings=Settings(embedder=False)) as nx:
                answers.append(nx.execute_kip("DESCRIBE PRIMER"))
        except KipError as exc:
            answers.append(exc.to_dict())
    text = json.dumps(answers) + "\n".join(r.getMessage() for r in caplog.records)
    assert "S3cret" not in text and "PW@" not in text, text
    assert "KIP_" in text


# ------------------------------------------------------------------ MCP: invalid JSON-RPC
INVALID_LINES = [
    ('{"jsonrpc":"2.0","id":2,', -32700, None),
    ('{"foo": 1}', -32600, None),
    ("[1, 2]", -32600, None),
    (json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "x"}), -32600, 3),
    (
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_kip","arguments":{"command":"x","parameters":{"n":'
        + "[" * 5000
        + "]" * 5000
        + "}}}}",
        -32700,
        None,
    ),
    (
        '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_kip","arguments":{"command":"FIND(?d) WHERE { ?d {name: \\"\\ud800\\"} }"}}}',
        -32600,
        5,
    ),
    (
        '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"execute_kip","arguments":{"command":"x","parameters":{"n":' + "9" * 5000 + "}}}}",
        -32700,
        None,
    ),
]


def test_stdio_mcp_answered_no_invalid_json_rpc_message(neo4j_server, genesis):
    """The SDK's stdio transport dropped every line it could not validate: the client waited
    forever. Each now gets a JSON-RPC error (its id when it has one) and the session goes on."""
    env = server_env(neo4j_server, None) | {"KIP2CYPHER_EMBEDDER": "none"}
    proc = subprocess.Popen([sys.executable, "-m", "kip2cypher.cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def exchange(line: str) -> dict:
        proc.stdin.write(line.encode("utf-8") + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, f"no answer to {line[:80]}"
        return json.loads(proc.stdout.readline())

    try:
        assert "result" in exchange(json.dumps(INIT))
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for line, code, request_id in INVALID_LINES:
            answer = exchange(line)
            assert answer["error"]["code"] == code and answer["id"] == request_id, (line[:80], answer)
        listed = exchange(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
        assert listed["id"] == 9 and len(listed["result"]["tools"]) == 2
    finally:
        proc.kill()
        proc.wait()


def test_http_mcp_answers_invalid_json_rpc_with_an_error(neo4j_server, genesis):
    """Over HTTP the SDK answers unparsable or invalid bodies itself (HTTP 400 + JSON-RPC error)."""
    with http_server(neo4j_server) as served, httpx2.Client(timeout=60, headers={**ACCEPT, "authorization": f"Bearer {RW}"}) as client:
        init = client.post(served.url, json=INIT)
        session = {"mcp-session-id": init.headers["mcp-session-id"]}
        for line, code, _ in INVALID_LINES:
            answer = client.post(served.url, content=line.encode("utf-8"), headers=session)
            assert answer.status_code == 400, (line[:80], answer.status_code, answer.text[:200])
            assert answer.json()["error"]["code"] in (-32700, -32600, -32602), answer.text[:200]


# ------------------------------------------------------------------ KIP2CYPHER_CYPHER_PREFIX
@pytest.mark.parametrize(
    "prefix",
    [
        "MATCH (n) DETACH DELETE n //",
        "CYPHER runtime=slotted MATCH (n) DETACH DELETE n WITH 1 AS x",
        "CYPHER runtime=slotted\nCALL dbms.killQueries([])",
        "CYPHER runtime=nonsense",
        "CYPHER 5 runtime=slotted RETURN 1 UNION",
    ],
)
def test_cypher_prefix_was_pasted_unvalidated_before_every_statement(prefix, monkeypatch):
    """Whoever set KIP2CYPHER_CYPHER_PREFIX ran arbitrary Cypher inside every write transaction.
    Only ``CYPHER [5|25] option=value…`` with known options is accepted, at start-up."""
    with pytest.raises(SettingsError, match="CYPHER_PREFIX"):
        Settings(cypher_prefix=prefix)
    monkeypatch.setenv("KIP2CYPHER_CYPHER_PREFIX", prefix)
    with pytest.raises(SettingsError):
        Settings()


def test_cypher_prefix_accepts_query_options():
    for prefix in ("CYPHER runtime=slotted", "CYPHER 5 runtime=pipelined planner=cost", "cypher 25 replan=force", ""):
        assert Settings(cypher_prefix=prefix).cypher_prefix == " ".join(prefix.split())

"""Namespaces a served token reaches (issue 27 §2): an ``rw`` token's namespace is bootstrapped at
start (its first call finds it ready), an ``ro`` token never creates one (KIP_3002 naming the fix,
nothing written), a ``--readonly`` server writes nothing at all, and a namespace dropped while the
server runs (``namespaces drop``) is bootstrapped again by the next execute_kip call and answered
clearly to read-only calls — never KIP_2001 for every type. Real Neo4j, real HTTP server."""

from __future__ import annotations

import time

from hostile_payloads import fingerprint
from kml_helpers import ok
from mcp_http_helpers import RO, RW, http_server, in_session, payload

TYPES = 'FIND(?t.name) WHERE { ?t {type: "$ConceptType"} } ORDER BY ?t.name'
WRITE = 'UPSERT { CONCEPT ?d { {type: "Domain", name: "Gamma"} } }'
QUIET = {"KIP2CYPHER_EMBEDDER": "none"}


def bootstrapped(nexus, namespace: str) -> bool:
    return nexus.layouts([namespace])[namespace] is not None


def eventually(condition, what: str, timeout_s: float = 240.0) -> None:
    """Poll ``condition`` (a background bootstrap); the bound is generous: not a timing assertion."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.2)


def call(served, token: str, tool: str, command: str) -> dict:
    return in_session(served.url, token, lambda s: s.call_tool(tool, {"command": command}))


def assert_no_nexus(response: dict, namespace: str) -> None:
    error = response["error"]
    assert error["code"] == "KIP_3002", error
    assert repr(namespace) in error["message"] and "never bootstrapped" in error["message"] and "Nothing was run" in error["message"]
    assert f"kip2cypher bootstrap --namespace {namespace}" in error["hint"]


def test_rw_token_namespaces_are_bootstrapped_at_start_and_an_ro_token_never_creates_its_own(genesis, neo4j_server):
    with http_server(neo4j_server, "--bootstrap", tokens=f"{RW}:rw:alpha_rw,{RO}:ro:beta_ro", env=QUIET) as served:
        alpha = genesis.in_namespace("alpha_rw")
        eventually(lambda: alpha.profile_state()["profile"] is not None, "alpha_rw bootstrapped in the background")  # before any call of its token
        at_start = {ns: bootstrapped(genesis, ns) for ns in ("alpha_rw", "beta_ro")}
        first = payload(call(served, RW, "execute_kip_readonly", TYPES))
        before = fingerprint(genesis.driver, genesis.database)
        refused = [payload(call(served, RO, "execute_kip_readonly", command)) for command in (TYPES, "DESCRIBE PRIMER")]
        after = fingerprint(genesis.driver, genesis.database)
    assert at_start == {"alpha_rw": True, "beta_ro": False}
    assert "$ConceptType" in first["result"]
    for response in refused:
        assert_no_nexus(response, "beta_ro")
    assert after == before and not bootstrapped(genesis, "beta_ro")


def test_a_readonly_server_never_writes_even_for_an_rw_token(genesis, neo4j_server):
    before = fingerprint(genesis.driver, genesis.database)
    with http_server(neo4j_server, "--readonly", tokens=f"{RW}:rw:delta", env=QUIET) as served:
        read = payload(call(served, RW, "execute_kip_readonly", TYPES))
        write = payload(call(served, RW, "execute_kip", WRITE))
    assert_no_nexus(read, "delta")
    assert write["error"]["code"] == "KIP_1001"  # the tool does not exist on a --readonly server
    assert fingerprint(genesis.driver, genesis.database) == before


def test_a_namespace_dropped_while_the_server_runs_is_bootstrapped_again_by_execute_kip(genesis, neo4j_server):
    with http_server(neo4j_server, "--bootstrap", tokens=f"{RW}:rw:gamma,{RO}:ro:gamma", env=QUIET) as served:
        ok(payload(call(served, RW, "execute_kip", WRITE)))
        dropped = genesis.drop_namespace("gamma")
        read_after_drop = payload(call(served, RO, "execute_kip_readonly", 'FIND(?d.name) WHERE { ?d {type: "Domain", name: "Gamma"} }'))
        gone = not bootstrapped(genesis, "gamma")
        write_after_drop = payload(call(served, RW, "execute_kip", WRITE))
        read_again = payload(call(served, RO, "execute_kip_readonly", 'FIND(?d.name) WHERE { ?d {type: "Domain"} } ORDER BY ?d.name'))
    assert dropped["concepts"] > 0 and gone
    assert_no_nexus(read_after_drop, "gamma")  # not KIP_2001 for the type "Domain"
    assert "result" in write_after_drop, write_after_drop  # bootstrapped again, then run
    assert "Gamma" in read_again["result"]


def test_a_dropped_namespace_answers_kip_3002_through_the_library_too_and_serves_again_once_bootstrapped(genesis):
    """The detection is the core's (both faces): a KIP_2001 answer reads the nexus node again."""
    eps = genesis.in_namespace("eps")
    eps.settings = eps.settings.replace(embedder=False)
    eps.bootstrap()
    ok(eps.execute_kip(WRITE))
    genesis.drop_namespace("eps")
    assert_no_nexus(eps.execute_kip('FIND(?d.name) WHERE { ?d {type: "Domain"} }'), "eps")
    assert_no_nexus(eps.execute_kip("DESCRIBE PRIMER"), "eps")  # read again at every request until it exists
    eps.bootstrap()
    assert ok(eps.execute_kip('FIND(?d.name) WHERE { ?d {type: "Domain", name: "Gamma"} }')) == []

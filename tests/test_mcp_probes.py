"""The HTTP MCP server's Kubernetes probes: /healthz (liveness: the process serves, Neo4j not
asked) and /readyz (readiness: Neo4j answers within a short bound and every served namespace is
bootstrapped; 503 with the reason otherwise). Neither needs a token."""

from __future__ import annotations

import socket
import time
from types import SimpleNamespace

import httpx2
from mcp_http_helpers import RO, RW, http_server


def probe(served, path, **headers):
    response = httpx2.get(served.health_url.replace("/healthz", path), timeout=30, headers=headers)
    return response.status_code, response.json()


def test_readyz_answers_200_on_a_healthy_server_without_a_token(genesis, neo4j_server):
    with http_server(neo4j_server) as served:
        ready = probe(served, "/readyz")
        live = probe(served, "/healthz")
        kubelet = probe(served, "/readyz", host="10.1.2.3:8000")  # kubelet probes the pod IP
    assert kubelet == ready
    assert ready[0] == 200 and ready[1]["status"] == "ready" and ready[1]["namespaces"] == [""]
    assert live[0] == 200 and live[1]["status"] == "ok"


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_readyz_is_503_with_the_reason_when_neo4j_is_unreachable_while_healthz_stays_200():
    nowhere = SimpleNamespace(uri=f"bolt://127.0.0.1:{closed_port()}", auth=("neo4j", "s3cret-password-x"), database=None)
    with http_server(nowhere) as served:
        ready = probe(served, "/readyz")
        live = probe(served, "/healthz")
    assert ready[0] == 503 and ready[1]["status"] == "unready"
    assert nowhere.uri in ready[1]["reason"] and "s3cret-password-x" not in ready[1]["reason"]
    assert live[0] == 200 and live[1]["status"] == "ok"


def test_readyz_is_503_naming_a_token_namespace_that_was_never_bootstrapped(genesis, neo4j_server):
    """A token bound to a namespace nobody bootstrapped: not ready (its first call would find no
    schema); served with --bootstrap the namespace is bootstrapped at start, in the background,
    and the server becomes ready (polled: the bound is generous, not a timing assertion)."""
    tokens = f"{RW}:rw:never_booted,{RO}:ro"
    with http_server(neo4j_server, tokens=tokens) as served:
        unready = probe(served, "/readyz")
    with http_server(neo4j_server, "--bootstrap", tokens=tokens, env={"KIP2CYPHER_EMBEDDER": "none"}) as served:
        deadline = time.monotonic() + 240
        while (ready := probe(served, "/readyz"))[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
    assert unready[0] == 503 and "never_booted" in unready[1]["reason"] and "bootstrap" in unready[1]["reason"]
    assert ready[0] == 200 and ready[1]["namespaces"] == ["", "never_booted"]

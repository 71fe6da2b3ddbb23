"""Round 3 attack on what kip2cypher logs (issue 30 item 6): a session with every kind of secret —
a password in the URI and in NEO4J_PASSWORD, a configured cursor secret, the cursor secret the
first bootstrap stores, static MCP tokens (accepted and refused) — with every log at its most
verbose: the Python API with the root logger at DEBUG (kip2cypher's Cypher log and the neo4j
driver's Bolt log), the CLI with ``-v``, the HTTP MCP server with ``KIP2CYPHER_DEBUG=1``.
No secret may appear in any log line or answer.

Extend by adding a secret to ``Secrets`` or a session step; after the metrics branch lands, run
the same session against ``/metrics`` (docs/reliability.md, "Round 3 attacks")."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import httpx2
from conftest import wipe
from mcp_http_helpers import ACCEPT, INIT, RW, http_server

from kip2cypher.config import Settings
from kip2cypher.cypher import storage

PASSWORD = "leak-Pw-3f9a0c"
CONFIGURED_CURSOR_SECRET = "leak-cursor-secret-77e1"
REFUSED_TOKEN = "refused-token-0123456789abcd"
TOKENS = f"{RW}:rw"


class Credentialed:
    """The session's server reached with a user and password in the URI (auth is off on the test server: any are accepted)."""

    def __init__(self, server) -> None:
        self.uri = server.uri.replace("bolt://", f"bolt://leaker:{PASSWORD}@")
        self.auth, self.database = ("leaker", PASSWORD), server.database


def stored_secret(driver, database) -> str:
    return driver.execute_query(f"MATCH (n:{storage.NEXUS} {{namespace: ''}}) RETURN n.{storage.CURSOR_SECRET} AS s", database_=database).records[0]["s"]


def leaked(text: str, *secrets: str) -> list[str]:
    return [secret for secret in secrets if secret and secret in text]


def test_the_cursor_secret_travelled_as_a_parameter_into_the_debug_logs(neo4j_server, caplog):
    """The first bootstrap generated the nexus's cursor-signing secret in Python and sent it as a
    statement parameter: kip2cypher's DEBUG Cypher log (``-v``) printed it, and so did the neo4j
    driver's Bolt log at DEBUG. Whoever reads those logs could sign CURSOR tokens."""
    from kip2cypher.nexus import Nexus

    target = Credentialed(neo4j_server)
    with caplog.at_level(logging.DEBUG):  # every logger: kip2cypher's and the driver's
        with Nexus(target.uri, database=target.database, settings=Settings(embedder=False)) as nexus:
            wipe(nexus.driver, nexus.database)
            nexus.driver.execute_query(f"MATCH (n:{storage.NEXUS}) DELETE n", database_=nexus.database)
            nexus.bootstrap()
            nexus.execute_kip_readonly('FIND(?t.name) WHERE { ?t {type: "$ConceptType"} } LIMIT 1')
            secret = stored_secret(nexus.driver, nexus.database)
    log = caplog.text
    assert "MERGE (n:KipNexus" in log  # the Cypher log was on
    assert leaked(log, secret, PASSWORD) == []


def test_cli_and_mcp_logs_at_their_most_verbose_carry_no_secret(neo4j_server):
    target = Credentialed(neo4j_server)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "NEO4J_URI": target.uri,
        "NEO4J_USERNAME": "leaker",
        "NEO4J_PASSWORD": PASSWORD,
        "KIP2CYPHER_CURSOR_SECRET": CONFIGURED_CURSOR_SECRET,
        "KIP2CYPHER_DEBUG": "1",
        "KIP2CYPHER_EMBEDDER": "off",
    }
    outputs = []
    for args in (
        ["bootstrap"],
        ["call", "-v", "DESCRIBE PRIMER"],
        ["call", "-v", 'FIND(?t.name) WHERE { ?t {type: "$ConceptType"} } LIMIT 2'],
        ["call", "-v", "FIND(?x) WHERE { ?x {type: "],  # a syntax error
        ["namespaces", "list"],
        ["migrate", "--dry-run"],
        ["call", "--uri", target.uri.replace(neo4j_server.uri.rsplit(":", 1)[1], "1"), "DESCRIBE PRIMER"],  # unreachable port
    ):
        done = subprocess.run([sys.executable, "-m", "kip2cypher.cli", *args], env=env, capture_output=True, text=True, timeout=300)
        outputs.append(done.stdout + done.stderr)
    assert "MATCH" in outputs[2]  # -v logged the Cypher
    with http_server(
        target, env={"KIP2CYPHER_DEBUG": "1", "NEO4J_PASSWORD": PASSWORD, "KIP2CYPHER_CURSOR_SECRET": CONFIGURED_CURSOR_SECRET}, tokens=TOKENS
    ) as served:
        for token in (RW, REFUSED_TOKEN, RW + "x", f"{RW} {PASSWORD}"):
            response = httpx2.post(served.url, timeout=60, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"})
            outputs.append(response.text + str(dict(response.headers)))
        outputs.append(httpx2.get(served.health_url.replace("/healthz", "/readyz"), timeout=30).text)
        server_log = "".join(served.log)
    text = "\n".join(outputs) + server_log
    assert leaked(text, PASSWORD, CONFIGURED_CURSOR_SECRET, RW, REFUSED_TOKEN, f"leaker:{PASSWORD}") == []
    assert "Traceback" not in "\n".join(outputs[:2] + outputs[4:6])  # only the failing commands may print one, with KIP2CYPHER_DEBUG=1

"""Round 3 attack on readiness (issue 30 item 6): ``GET /readyz`` of one HTTP MCP server process
while the test's own private Neo4j (the ``private`` fixture, never the shared slot) is SIGKILLed,
stopped cleanly and started again, several times.

What must hold: while Neo4j is down every answer is 503 ``{"status": "unready", "reason": …}``;
once it is back, 200 ``{"status": "ready"}`` from the same process (not restarted); every answer
comes within the client's bound (``BOUND_S``: the probe's own ``READY_TIMEOUT_S`` plus the HTTP
round trip — a probe that hung would hit the client's timeout and fail the test); while the server
recovers, each answer is one of those two; no traceback in any answer or in the server's log; no
credential (the password is in the URI *and* in NEO4J_PASSWORD) in any answer or log line.

Extend by adding a fault to ``FAULTS`` (a function of the private server's config)."""

from __future__ import annotations

import threading

import httpx2
from mcp_http_helpers import http_server
from private_neo4j import restart

from kip2cypher import localneo4j, mcp_server

SECRET = "flap-secret-Pw-7d1c"
#: The client's timeout on /readyz: the probe's own bound plus room for the HTTP round trip on a busy machine.
BOUND_S = mcp_server.READY_TIMEOUT_S + 10
FAULTS = {"SIGKILL": localneo4j.kill, "clean stop": localneo4j.stop}
#: The order of the flaps: every fault at least once, SIGKILL twice.
FLAPS = ("SIGKILL", "clean stop", "SIGKILL")


class Target:
    """The private server, reached with a user and password in the URI (auth is off on it: any are accepted)."""

    def __init__(self, cfg) -> None:
        self.uri = cfg.uri.replace("bolt://", f"bolt://flapper:{SECRET}@")
        self.auth, self.database = ("flapper", SECRET), None


def probe(url: str) -> tuple[int, dict]:
    response = httpx2.get(url, timeout=BOUND_S)  # raises (and fails the test) when the probe hangs past its bound
    return response.status_code, response.json()


def well_formed(status: int, body: dict) -> bool:
    if status == 200:
        return body.get("status") == "ready" and isinstance(body.get("namespaces"), list)
    return status == 503 and body.get("status") == "unready" and isinstance(body.get("reason"), str) and body["reason"] != ""


def test_readiness_follows_a_flapping_server_without_hanging_or_leaking(private):
    from kip2cypher.config import Settings
    from kip2cypher.nexus import Nexus

    with Nexus(private.uri, settings=Settings(embedder=False)) as nexus:
        nexus.ensure_schema()  # the nexus node /readyz looks for (a server --bootstrap'ing here could outlast the helper's start-up wait)
    answers: list[tuple[str, int, dict]] = []
    with http_server(Target(private)) as served:
        ready_url = served.health_url.replace("/healthz", "/readyz")

        def ask(phase: str) -> tuple[int, dict]:
            status, body = probe(ready_url)
            answers.append((phase, status, body))
            return status, body

        def ready_within(phase: str, probes: int = 30) -> bool:
            """200 within ``probes`` answers (a loaded machine can make one probe outlast the probe's own 2 s bound: a 503 then, never a hang)."""
            return any(ask(phase)[0] == 200 for _ in range(probes))

        assert ready_within("before"), answers[-1]
        for flap in FLAPS:
            FAULTS[flap](private)
            down = [ask(f"down after {flap}") for _ in range(3)]
            assert [status for status, _ in down] == [503, 503, 503], down
            during: list[tuple[int, dict]] = []
            starter = threading.Thread(target=restart, args=(private,))
            starter.start()
            while starter.is_alive():  # probes while Neo4j starts and runs recovery: each one of the two answers
                during.append(ask(f"restarting after {flap}"))
            starter.join()
            assert ready_within(f"back after {flap}"), answers[-1]
            assert during, "no probe ran while the server restarted"
        log = "".join(served.log)
    malformed = [(phase, status, body) for phase, status, body in answers if not well_formed(status, body)]
    assert malformed == []
    reasons = {body["reason"] for _, status, body in answers if status == 503}
    text = repr(answers) + log
    assert SECRET not in text and "flapper:" not in text
    assert "Traceback" not in text
    assert all("Neo4j" in reason for reason in reasons), reasons  # the reason names what is down
    print(f"\n[reliability] readyz under {len(FLAPS)} flaps: {len(answers)} probes, {sum(s == 503 for _, s, _ in answers)} × 503, reasons {sorted(reasons)}")

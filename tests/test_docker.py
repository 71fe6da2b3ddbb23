"""The container packaging: `Dockerfile` (slim, non-root, HEALTHCHECK on /readyz, runs `kip2cypher
mcp --transport http`) and the `kip2cypher` service of `compose.yaml`. Their shape is checked
everywhere; the image is built and probed only where a Docker engine answers — elsewhere that test
is skipped, saying so (the one skip the suite allows)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
import yaml
from mcp_http_helpers import RW, in_session, payload

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "kip2cypher:test"


def test_the_dockerfile_is_slim_non_root_and_checks_readiness():
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    bases = re.findall(r"^FROM (\S+)", text, re.M)
    assert bases and all(base.endswith("-slim") for base in bases)
    final = text[text.rindex("\nFROM ") :]  # the image that runs: its user and health check
    assert re.search(r"^USER (?!0\b|root\b)\S+", final, re.M)
    health = re.search(r"^HEALTHCHECK .*?CMD (.+)$", final, re.M | re.S)
    assert health and "/readyz" in health.group(1)
    assert 'ENTRYPOINT ["kip2cypher", "mcp"]' in final and 'CMD ["--transport", "http"]' in final
    assert "KIP2CYPHER_MCP_HOST=0.0.0.0" in final and "EXPOSE 8000" in final


def test_compose_runs_the_server_beside_neo4j_only_when_asked():
    services = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))["services"]
    server, neo4j = services["kip2cypher"], services["neo4j"]
    assert "profiles" not in neo4j and server["profiles"] == ["service"]  # `docker compose up` alone: Neo4j only
    assert server["build"] == "." and server["environment"]["NEO4J_URI"] == "bolt://neo4j:7687"
    assert server["depends_on"]["neo4j"]["condition"] == "service_healthy" and "healthcheck" in neo4j
    assert "KIP2CYPHER_MCP_TOKENS" in server["environment"] and server["ports"] == ["8000:8000"]


@pytest.fixture(scope="module")
def docker():
    """The docker CLI, when an engine answers; else the test is skipped with the reason."""
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI on this machine: the image cannot be built here")
    info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        pytest.skip(f"no Docker engine answers (`docker info`: {(info.stderr or info.stdout).strip().splitlines()[-1:]})")
    built = subprocess.run(["docker", "build", "-t", IMAGE, str(ROOT)], capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return "docker"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _until(check, seconds: float):
    """Poll ``check`` until it returns something truthy (bounded); its last value."""
    deadline = time.monotonic() + seconds
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(1)
        value = check()
    return value


def test_the_image_serves_mcp_as_a_non_root_user_and_turns_healthy(docker, genesis, neo4j_server):
    port = _free_port()
    env = ["-e", f"NEO4J_URI={neo4j_server.uri}", "-e", f"KIP2CYPHER_MCP_TOKENS={RW}:rw", "-e", f"KIP2CYPHER_MCP_PORT={port}"]
    if neo4j_server.auth:
        env += ["-e", f"NEO4J_USERNAME={neo4j_server.auth[0]}", "-e", f"NEO4J_PASSWORD={neo4j_server.auth[1]}"]
    if neo4j_server.database:
        env += ["-e", f"NEO4J_DATABASE={neo4j_server.database}"]
    started = subprocess.run(["docker", "run", "-d", "--network", "host", *env, IMAGE], capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    container = started.stdout.strip()
    try:

        def ready():
            try:
                return httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200
            except httpx2.HTTPError:
                return False

        assert _until(ready, 180), subprocess.run(["docker", "logs", container], capture_output=True, text=True).stderr[-3000:]

        def health():
            status = subprocess.run(["docker", "inspect", "--format", "{{.State.Health.Status}}", container], capture_output=True, text=True).stdout.strip()
            return status if status == "healthy" else None

        assert _until(health, 180) == "healthy"
        user = subprocess.run(["docker", "exec", container, "id", "-u"], capture_output=True, text=True).stdout.strip()
        primer = in_session(f"http://127.0.0.1:{port}/mcp", RW, lambda s: s.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"}))
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=120)
    assert user == "10001"
    assert "domain_map" in payload(primer)["result"]

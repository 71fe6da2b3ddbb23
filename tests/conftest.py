"""One real Neo4j for the whole test session.

Order of preference: NEO4J_URI (with NEO4J_USERNAME / NEO4J_PASSWORD /
NEO4J_DATABASE); else the bundled local launcher (Maven-resolved Neo4j
Community); else testcontainers' Neo4jContainer when a Docker engine answers.
With KIP2CYPHER_REQUIRE_NEO4J=1 (CI) a missing Neo4j fails the run instead of
skipping the tests that need it. Data is wiped between tests; the server is
not restarted.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Optional

import pytest

REQUIRE = os.environ.get("KIP2CYPHER_REQUIRE_NEO4J") == "1"
_TESTED_AGAINST: list[str] = []
_SLOT_LOCKS: list = []
_STARTED_CFG: list = []


@dataclass
class Neo4jServer:
    uri: str
    auth: Optional[tuple[str, str]]
    database: Optional[str]
    version: str
    source: str


def _from_env() -> Optional[Neo4jServer]:
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        return None
    from kip2cypher.localneo4j import server_version

    user, password = os.environ.get("NEO4J_USERNAME"), os.environ.get("NEO4J_PASSWORD")
    auth = (user, password) if user and password is not None else None
    if auth is None:
        version = server_version(uri)
    else:
        from neo4j import GraphDatabase

        with GraphDatabase.driver(uri, auth=auth) as d:
            rec = d.execute_query("CALL dbms.components() YIELD versions, edition RETURN versions[0] AS v, edition AS e").records[0]
            version = f"{rec['v']} {rec['e']}"
    return Neo4jServer(uri, auth, os.environ.get("NEO4J_DATABASE"), version or "?", "NEO4J_URI")


_SLOTS = 8  # concurrent pytest sessions on one machine each get their own server


def _claim_slot():
    """Lock a slot so concurrent pytest sessions never wipe each other's data.

    Slot 0 is the default local server (port 7687, default data home); slot i > 0 is a
    private server on port 7687 + i with its own data directory, kept running for reuse.
    """
    import fcntl

    from kip2cypher import localneo4j

    lock_dir = localneo4j._cache_root() / "test-slots"
    lock_dir.mkdir(parents=True, exist_ok=True)
    for slot in range(_SLOTS):
        handle = open(lock_dir / f"slot-{slot}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return slot, handle
    raise RuntimeError("all local Neo4j test slots are busy")


def _from_launcher() -> tuple[Optional[Neo4jServer], bool, str]:
    from kip2cypher import localneo4j

    slot, handle = _claim_slot()
    _SLOT_LOCKS.append(handle)
    cfg = localneo4j.LocalConfig.from_env()
    if slot:
        cfg = localneo4j.LocalConfig(
            port=cfg.port + slot, home=cfg.home.parent / f"{cfg.home.name}-slot{slot}", heap="1g", page_cache_mb=256, tx_timeout_s=cfg.tx_timeout_s
        )
    was_up, _ = localneo4j.status(cfg)
    try:
        version = localneo4j.start(cfg)
    except localneo4j.LocalNeo4jError as exc:
        return None, False, str(exc)
    _STARTED_CFG.append(cfg)
    # Only the default slot is stopped at the end; extra slots stay up for the next session.
    return Neo4jServer(cfg.uri, None, None, version, f"local launcher (slot {slot})"), (not was_up and slot == 0), ""


def _from_testcontainers():
    try:
        from testcontainers.neo4j import Neo4jContainer

        container = Neo4jContainer("neo4j:5.26-community")
        container.start()
    except Exception as exc:  # noqa: BLE001 - no Docker engine is the common case here
        return None, None, str(exc)
    uri = container.get_connection_url()
    return Neo4jServer(uri, ("neo4j", container.password), None, "5.26 (container)", "testcontainers"), container, ""


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[Neo4jServer]:
    server = _from_env()
    started_here = False
    container = None
    reasons = []
    if server is None:
        server, started_here, why = _from_launcher()
        reasons.append(f"local launcher: {why}")
    if server is None:
        server, container, why = _from_testcontainers()
        reasons.append(f"testcontainers: {why}")
    if server is None:
        message = "No Neo4j available: " + " | ".join(reasons)
        if REQUIRE:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    _TESTED_AGAINST.append(f"Neo4j {server.version} via {server.source} at {server.uri}")
    yield server
    if container is not None:
        container.stop()
    if started_here and os.environ.get("KIP2CYPHER_KEEP_NEO4J") != "1":
        from kip2cypher import localneo4j

        localneo4j.stop(_STARTED_CFG[-1])


def wipe(driver, database=None) -> None:
    """Remove every node and relationship (batched), keeping schema objects."""
    while True:
        summary = driver.execute_query(
            "MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c", database_=database
        )
        if summary.records[0]["c"] == 0:
            return


@pytest.fixture()
def nexus(neo4j_server):
    """An empty Nexus with the schema objects in place (no Genesis)."""
    from kip2cypher.execute import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database) as nx:
        wipe(nx.driver, nx.database)
        nx.ensure_schema()
        yield nx


@pytest.fixture()
def genesis(nexus):
    """A Nexus bootstrapped with the Genesis capsule."""
    nexus.bootstrap()
    return nexus



def pytest_terminal_summary(terminalreporter):
    if _TESTED_AGAINST:
        terminalreporter.write_line(f"Neo4j tested against: {_TESTED_AGAINST[-1]}")


def pytest_sessionfinish(session, exitstatus):
    """Fail the run if any kip2cypher module was imported from outside this checkout.

    An editable install of another checkout resolves modules missing here from there, which
    would test code this checkout does not contain (e.g. a module deleted by a refactor)."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    data_packages = {"kip2cypher.grammar", "kip2cypher.capsules"}  # folders mapped into the package (pyproject)
    strays = sorted(
        name for name, module in list(sys.modules.items())
        if (name == "kip2cypher" or name.startswith("kip2cypher.")) and name not in data_packages
        and getattr(module, "__file__", None) and root not in Path(module.__file__).resolve().parents
    )
    if strays:
        session.config.get_terminal_writer().line(f"kip2cypher modules imported from outside {root}: {strays}", red=True)
        session.exitstatus = 1

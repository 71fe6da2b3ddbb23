"""One real Neo4j for the whole test session.

Order of preference: NEO4J_URI (with NEO4J_USERNAME / NEO4J_PASSWORD /
NEO4J_DATABASE); else the bundled local launcher (Maven-resolved Neo4j
Community); else testcontainers' Neo4jContainer when a Docker engine answers.
With KIP2CYPHER_REQUIRE_NEO4J=1 (CI) a missing Neo4j fails the run instead of
skipping the tests that need it. Data is wiped between tests; the server is
not restarted.

KIP2CYPHER_TEST_NEO4J_VERSION (e.g. 2026.08.1) chooses the Neo4j release of the
servers the suite starts (own data directories per version); on a release that
speaks Cypher 5 and Cypher 25, KIP2CYPHER_TEST_CYPHER_VERSION (25 by default, or
5) sets the default language of the slot's database (docs/neo4j-versions.md).

The suite never wipes data it did not create: a server it started itself (a
launcher slot, marked by a file in its data directory, or a fresh container) is
its own; a NEO4J_URI database must be empty or carry the marker node the suite
leaves behind at the end of a run, unless KIP2CYPHER_TEST_ALLOW_WIPE=1.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

REQUIRE = os.environ.get("KIP2CYPHER_REQUIRE_NEO4J") == "1"
_TESTED_AGAINST: list[str] = []
_SLOT_LOCKS: list = []


ALLOW_WIPE = os.environ.get("KIP2CYPHER_TEST_ALLOW_WIPE") == "1"
#: Label of the node the suite leaves in a NEO4J_URI database at the end of a run (tests wipe it).
MARKER_LABEL = "Kip2cypherTestSuite"


@dataclass
class Neo4jServer:
    uri: str
    auth: tuple[str, str] | None
    database: str | None
    version: str
    source: str
    own: bool = False  # started by the suite for itself: nothing of anyone else's can be in it


def _from_env() -> Neo4jServer | None:
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


def _from_launcher() -> tuple[Neo4jServer | None, str]:
    """A slot server of its own (``private_neo4j.Slots``): locked so concurrent pytest sessions never
    wipe each other's data, skipping a slot whose port someone else's server answers, stopping a
    stale one this suite left there (another Neo4j version's). The default local server (port 7687,
    default data home) is never a slot: `kip2cypher neo4j start` and `mcp --start-local` use it,
    so it may hold someone's memory."""
    from private_neo4j import Slots

    from kip2cypher import localneo4j

    slots = Slots.from_env()
    slot, handle, _ = slots.claim()
    _SLOT_LOCKS.append(handle)
    try:
        version = slots.start(slot)
    except localneo4j.LocalNeo4jError as exc:
        return None, str(exc)
    language = _set_cypher_language(slots.config(slot).uri)
    # Slots stay up for the next session.
    return Neo4jServer(slots.config(slot).uri, None, None, version + language, f"local launcher (slot {slot})", own=True), ""


#: KIP2CYPHER_TEST_CYPHER_VERSION: the default Cypher language of the slot's database, on a server
#: that has two (Neo4j 2025.06 on); Cypher 25, where the two differ, unless set to 5.
CYPHER_LANGUAGE = os.environ.get("KIP2CYPHER_TEST_CYPHER_VERSION", "25")


def _set_cypher_language(uri: str) -> str:
    """On a server that speaks Cypher 5 and 25, make CYPHER_LANGUAGE the default language of the
    slot's database (set every session: the slot's data outlives the run); the suffix for the
    'tested against' line ("" on a server with one language)."""
    from neo4j import GraphDatabase

    if CYPHER_LANGUAGE not in ("5", "25"):
        pytest.exit(f"KIP2CYPHER_TEST_CYPHER_VERSION must be 5 or 25, not {CYPHER_LANGUAGE!r}", returncode=4)
    with GraphDatabase.driver(uri, auth=None) as driver:
        records = driver.execute_query("CALL dbms.components() YIELD name, versions WHERE name = 'Cypher' RETURN versions").records
        if not records or CYPHER_LANGUAGE not in records[0]["versions"]:
            return ""
        driver.execute_query(f"ALTER DATABASE neo4j SET DEFAULT LANGUAGE CYPHER {CYPHER_LANGUAGE}", database_="system")  # no WAIT in Community
        language = driver.execute_query("SHOW DATABASE neo4j YIELD defaultLanguage").records[0]["defaultLanguage"]
    assert language == f"CYPHER {CYPHER_LANGUAGE}", language
    return f", {language} by default"


def _from_testcontainers():
    try:
        from testcontainers.neo4j import Neo4jContainer

        container = Neo4jContainer("neo4j:5.26-community")
        container.start()
    except Exception as exc:  # noqa: BLE001 - no Docker engine is the common case here
        return None, None, str(exc)
    uri = container.get_connection_url()
    return Neo4jServer(uri, ("neo4j", container.password), None, "5.26 (container)", "testcontainers", own=True), container, ""


def _driver(server: Neo4jServer):
    from neo4j import GraphDatabase

    return GraphDatabase.driver(server.uri, auth=server.auth)


def guard_against_foreign_data(server: Neo4jServer) -> str | None:
    """Why the suite must not wipe this server (None when it may): a NEO4J_URI database that holds
    nodes and no marker of an earlier run of this suite."""
    if server.own or ALLOW_WIPE:
        return None
    with _driver(server) as driver:
        record = driver.execute_query(
            f"MATCH (n) RETURN count(n) AS nodes, count(CASE WHEN n:{MARKER_LABEL} THEN 1 END) AS markers",
            database_=server.database,
        ).records[0]
    if record["nodes"] == 0 or record["markers"] > 0:
        return None
    return (
        f"Refusing to run the tests against {server.uri}{' database ' + server.database if server.database else ''}: "
        f"it holds {record['nodes']} nodes that this test suite did not create, and the tests WIPE the database. "
        "Point NEO4J_URI at an empty database (or unset it: the suite then starts its own local server), "
        "or set KIP2CYPHER_TEST_ALLOW_WIPE=1 to wipe it anyway."
    )


def _leave_marker(server: Neo4jServer) -> None:
    """At the end of a run on a NEO4J_URI database: mark its contents as the suite's leftovers."""
    if server.own:
        return
    with _driver(server) as driver:
        driver.execute_query(
            f"MERGE (m:{MARKER_LABEL}) SET m.note = 'left by the kip2cypher test suite, which may wipe this database'", database_=server.database
        )


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[Neo4jServer]:
    server = _from_env()
    container = None
    reasons = []
    if server is None:
        server, why = _from_launcher()
        reasons.append(f"local launcher: {why}")
    if server is None:
        server, container, why = _from_testcontainers()
        reasons.append(f"testcontainers: {why}")
    if server is None:
        message = "No Neo4j available: " + " | ".join(reasons)
        if REQUIRE:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    refusal = guard_against_foreign_data(server)
    if refusal:
        pytest.exit(refusal, returncode=4)
    _TESTED_AGAINST.append(f"Neo4j {server.version} via {server.source} at {server.uri}")
    yield server
    _leave_marker(server)
    if container is not None:
        container.stop()


def wipe(driver, database=None) -> None:
    """Remove every node and relationship (batched), keeping schema objects."""
    while True:
        summary = driver.execute_query("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c", database_=database)
        if summary.records[0]["c"] == 0:
            return


@pytest.fixture()
def nexus(neo4j_server):
    """An empty Nexus with the schema objects in place (no Genesis)."""
    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database) as nx:
        wipe(nx.driver, nx.database)
        nx.ensure_schema()
        yield nx


@pytest.fixture(scope="module")
def private(neo4j_server, tmp_path_factory):
    """A Neo4j of the fault tests' own, started per module (tests/private_neo4j.py: they SIGKILL
    and restart it); the session's server has resolved the Maven classpath already. Its ``uri`` is
    the Bolt URI; auth is off, the default database is used."""
    import time

    import private_neo4j

    from kip2cypher import localneo4j

    cfg = localneo4j.LocalConfig(
        port=private_neo4j.free_port(),
        home=tmp_path_factory.mktemp("fault") / "neo4j",
        heap="1g",
        page_cache_mb=256,
        tx_timeout_s=120,
        version=private_neo4j.VERSION,
    )
    started = time.monotonic()
    try:
        localneo4j.start(cfg)
    except localneo4j.LocalNeo4jError as exc:  # no Java/Maven here (e.g. NEO4J_URI pointing elsewhere)
        if os.environ.get("KIP2CYPHER_REQUIRE_NEO4J") == "1":
            raise
        pytest.skip(f"cannot start a private Neo4j for fault injection: {exc}")
    private_neo4j.FIGURES["first start s"] = round(time.monotonic() - started, 1)
    yield cfg
    localneo4j.stop(cfg)


@pytest.fixture()
def genesis(nexus):
    """A Nexus bootstrapped with the Genesis capsule."""
    nexus.bootstrap()
    return nexus


#: The fixture that starts (or reaches) the test Neo4j; every test that needs a server uses it,
#: directly or through another fixture (``nexus``, ``genesis``, ``private`` …).
SERVER_FIXTURE = "neo4j_server"


#: The compatibility tier (``-m compat``), which .ci/run runs on Neo4j's calendar release after the
#: whole suite on 5.26 (docs/neo4j-versions.md): the launcher on that release, the EXPLAIN of every
#: golden statement, every FIND construct, the capsules' KML, every spec example under the
#: read-only rule, DESCRIBE and SEARCH over the full-text and vector indexes, values and schema
#: objects, the version differences (test_neo4j_compat.py).
COMPAT_TIER = frozenset(
    {
        "test_localneo4j.py",
        "test_golden.py",
        "test_kql.py",
        "test_kml_capsules.py",
        "test_reliability_readonly.py",
        "test_meta_describe.py",
        "test_meta_search.py",
        "test_foundation.py",
        "test_neo4j_compat.py",
    }
)


def pytest_collection_modifyitems(config, items):
    """Mark every test that needs the server ``neo4j``, so ``-m "not neo4j"`` is the offline tier,
    and those of the COMPAT_TIER files ``compat``.

    Derived from the fixture closure (``item.fixturenames`` lists the fixtures a test uses
    through other fixtures too), not declared by hand, so a new test lands in the right tier
    by what it uses."""
    for item in items:
        if SERVER_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.neo4j)
            if item.path.name in COMPAT_TIER:
                item.add_marker(pytest.mark.compat)


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
        name
        for name, module in list(sys.modules.items())
        if (name == "kip2cypher" or name.startswith("kip2cypher."))
        and name not in data_packages
        and getattr(module, "__file__", None)
        and root not in Path(module.__file__).resolve().parents
    )
    if strays:
        session.config.get_terminal_writer().line(f"kip2cypher modules imported from outside {root}: {strays}", red=True)
        session.exitstatus = 1

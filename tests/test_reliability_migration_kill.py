"""Round 3 attack on the layout migration (issue 30 item 6, docs/migration.md): ``kip2cypher
migrate --batch B`` SIGKILLed at every batch boundary in turn, then resumed.

Deterministic boundaries, no hook in the product: the migration's inner transactions run in the
order of a label scan, so the test holds a write lock on the first element of batch k+1 (the
concept it would relabel, or the nexus node the last step marks) in a transaction of its own;
once the graph shows k batches committed, no more can commit. (The retype's batches are not
covered: Neo4j takes a deleted relationship's lock at commit, and a lock held there did not stop
the batch; tests/test_migration.py kills a migration at a random point.) Then the CLI process is SIGKILLed, its orphaned statement terminated
(what the server does when it notices the dead client), the lock released.

At each boundary: the dry run counts exactly what is left; every namespace not yet marked answers
the migration error (KIP_4003) and every marked one answers what layout 1 answered — never a wrong
answer; the resumed migration ends with the graph an uninterrupted one makes
(``migrated_fixture``). Extend with another batch size in ``BATCHES``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

import pytest
from test_migration import (
    ANSWERS,
    NAMESPACES,
    ROOT,
    assert_migration_error,
    assert_same_answer,
    fingerprint,
    load_layout1,
    migrated_fixture,
    settings,
    strip_layout,
)

from kip2cypher.cypher import storage
from kip2cypher.nexus import Nexus

#: Batch sizes under test: each namespace of the fixture needs 2–3 batches of concepts and 2 of links.
BATCHES = (20,)
#: Per namespace: its nexus node's layout, its concepts carrying their new label, its links of a new type.
PROGRESS = (
    "MATCH (x:KipNexus {namespace: $ns}) "
    "RETURN x.layout AS layout, COUNT { MATCH (n:`CONCEPT`) WHERE ($prefix + n.type) IN labels(n) AND NOT n.type IN labels(n) } AS relabelled, "
    "COUNT { MATCH ()-[r]->() WHERE type(r) STARTS WITH $prefix AND r[$link] IS NOT NULL } AS retyped"
)
#: Concepts and links of each namespace of the fixture (filled by the test from a dry run).
COUNTS: dict[str, tuple[int, int]] = {}
ORPHANS = (
    "SHOW TRANSACTIONS YIELD transactionId, metaData, status WHERE metaData.interface = 'admin' OR status STARTS WITH 'Blocked' OR status = 'Closing' "
    "RETURN collect(transactionId) AS ids"
)
LOCK_NODE = "MATCH (n) WHERE elementId(n) = $element SET n._attack_lock = true RETURN count(n) AS c"


@pytest.fixture()
def old(neo4j_server):
    """A Nexus (default namespace) on the slot database holding the layout-1 fixture graph (as tests/test_migration.py's)."""
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=settings()) as nexus:
        load_layout1(nexus.driver)
        yield nexus


def scan(driver, label: str) -> list[str]:
    """The element ids of ``label``'s nodes in label-scan order: the order of the migration's rows."""
    return [r["e"] for r in driver.execute_query(f"MATCH (n:`{label}`) RETURN elementId(n) AS e").records]


def boundaries(driver, batch: int) -> list[dict[str, Any]]:
    """Every batch boundary of a migration of the fixture, in the order the migration reaches them:
    per namespace (sorted), the start of each relabel batch and the mark (after the retype)."""
    out = []
    for ns in sorted(NAMESPACES):
        names = storage.names(ns)
        concepts = scan(driver, names.concept)
        out += [{"ns": ns, "step": "relabel", "k": k, "lock": (LOCK_NODE, concepts[k * batch])} for k in range(-(-len(concepts) // batch))]
        # No retype boundary: a retype batch takes its relationship locks when it commits, and a lock
        # held by this test did not hold it there (the batch committed): its boundaries are not
        # reachable deterministically this way (test_migration.py kills one at a random point).
        nexus = driver.execute_query(f"MATCH (n:{storage.NEXUS} {{namespace: $ns}}) RETURN elementId(n) AS e", ns=ns).records[0]["e"]
        out.append({"ns": ns, "step": "mark", "k": 0, "lock": (LOCK_NODE, nexus)})
    return out


def progress(driver, counts: dict[str, tuple[int, int]]) -> dict[str, tuple[int | None, int, int]]:
    """Per namespace, from the graph itself: (layout, concepts left in layout 1, links left in layout 1)."""
    out = {}
    for ns in NAMESPACES:
        names = storage.names(ns)
        row = driver.execute_query(PROGRESS.replace("CONCEPT", names.concept), ns=ns, prefix=names.predicate_prefix, link=names.link_id).records[0]
        concepts, links = counts[ns]
        out[ns] = (row["layout"] or 1, concepts - row["relabelled"], links - row["retyped"])
    return out


def kill_at(old, boundary: dict, batch: int, expected: dict) -> None:
    """Run the CLI migration until the graph shows exactly the batches before ``boundary``
    committed (the lock keeps the next one from committing); SIGKILL it; end its statement;
    release the lock."""
    statement, element = boundary["lock"]
    with old.driver.session(database=old.database) as session:
        lock = session.begin_transaction()
        params = {"element": element}
        assert lock.run(statement, params).single()["c"] == 1, boundary
        command = [sys.executable, "-m", "kip2cypher.cli", "migrate", "--batch", str(batch), "--uri", old.uri]
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while process.poll() is None and progress(old.driver, COUNTS) != expected:
                pass
            assert process.poll() is None, f"the migration ended without reaching {boundary['ns']!r} {boundary['step']} {boundary['k']}"
            os.kill(process.pid, signal.SIGKILL)
        finally:
            process.wait()
        ids = old.driver.execute_query(ORPHANS).records[0]["ids"]
        if ids:
            old.driver.execute_query("TERMINATE TRANSACTIONS $ids", ids=ids)
        lock.rollback()
    while old.driver.execute_query(ORPHANS).records[0]["ids"]:
        pass


def expected_left(boundary: dict, counts: dict[str, tuple[int, int]], batch: int) -> dict[str, tuple[int | None, int, int]]:
    """Per namespace: (layout, concepts left, relationships left) once exactly the batches before ``boundary`` committed."""
    order = sorted(NAMESPACES)
    here = order.index(boundary["ns"])
    left = {}
    for i, ns in enumerate(order):
        concepts, links = counts[ns]
        if i < here:
            left[ns] = (storage.LAYOUT, 0, 0)
        elif i > here:
            left[ns] = (1, concepts, links)
        elif boundary["step"] == "relabel":
            left[ns] = (1, concepts - boundary["k"] * batch, links)
        else:
            left[ns] = (1, 0, 0)
    return left


def pending(old) -> dict[str, tuple[int | None, int, int]]:
    report = old.migrate(dry_run=True)["namespaces"]
    return {e["namespace"]: (e["layout"] or 1, e["concepts"], e["relationships"]) for e in report}


def _boundary_ids(batch: int) -> list[tuple[str, str, int]]:
    """The boundaries of ``boundaries`` from the fixture's counts (for parametrizing before any server is reached)."""
    from collections import Counter

    from test_migration import GRAPH

    sizes = Counter(label for node in GRAPH["nodes"] for label in node["labels"])
    out = []
    for ns in sorted(NAMESPACES):
        out += [(ns, "relabel", k) for k in range(-(-sizes[storage.names(ns).concept] // batch))]
        out.append((ns, "mark", 0))
    return out


CASES = [(batch, *boundary) for batch in BATCHES for boundary in _boundary_ids(batch)]


@pytest.mark.parametrize(("batch", "ns", "step", "k"), CASES, ids=[f"b{b}-{ns or 'default'}-{step}-{k}" for b, ns, step, k in CASES])
def test_a_migration_killed_at_a_batch_boundary_resumes_to_the_same_graph(old, batch, ns, step, k):
    counts = {name: (c, r) for name, (_, c, r) in pending(old).items()}
    COUNTS.update(counts)
    boundary = next(p for p in boundaries(old.driver, batch) if (p["ns"], p["step"], p["k"]) == (ns, step, k))
    expected = expected_left(boundary, counts, batch)
    kill_at(old, boundary, batch, expected)
    assert pending(old) == expected  # exactly the batches before the boundary committed
    for name in NAMESPACES:
        query, answer = next(iter(ANSWERS[name]["queries"].items()))
        got = old.in_namespace(name).execute_kip_readonly(query)
        if expected[name][0] == storage.LAYOUT:
            assert_same_answer(got, answer, (name, query))  # a migrated namespace answers what layout 1 answered
        else:
            assert_migration_error(got["error"])  # the others answer the migration error, never a wrong answer
    old.migrate(batch=batch)
    assert strip_layout(fingerprint(old.driver)) == migrated_fixture()  # the graph an uninterrupted migration makes

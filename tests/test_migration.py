"""``kip2cypher migrate`` (docs/migration.md) on a nexus the layout-1 build wrote, on a real Neo4j.

``fixtures/layout1/graph.json`` is every node and relationship the last layout-1 build (e765d27)
wrote — the default namespace and namespaces ``alpha`` and ``beta`` bootstrapped with the standard
capsules, a drug graph with a higher-order proposition and metadata, vectors, cursor secrets, and
in ``alpha`` an adopted team graph with link_memory links and shadow vector nodes — and
``answers.json`` what that build answered (``fixtures/layout1/generate.py`` made both). Each test
loads the graph into the suite's own slot database (after wiping it) with the schema objects the
old build created (the same in both layouts).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from conftest import wipe
from meta_data import TopicEmbedder

from kip2cypher.async_nexus import AsyncNexus
from kip2cypher.cli.app import main
from kip2cypher.config import Settings
from kip2cypher.cypher import catalog, migration, storage
from kip2cypher.cypher.builder import quote
from kip2cypher.errors import KipError
from kip2cypher.nexus import Nexus

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "layout1"
GRAPH = json.loads((FIXTURE / "graph.json").read_text(encoding="utf-8"))
ANSWERS = json.loads((FIXTURE / "answers.json").read_text(encoding="utf-8"))
NAMESPACES = ("", "alpha", "beta")
ROOT = Path(__file__).resolve().parent.parent

LOAD_NODES = "UNWIND $rows AS row CREATE (n) SET n = row.props, n._fixture_key = row.key SET n:$(row.labels) RETURN row.element AS old, elementId(n) AS new"
LOAD_RELS = (
    "UNWIND $rows AS row MATCH (a {_fixture_key: row.start}), (b {_fixture_key: row.end}) "
    "CREATE (a)-[r:$(row.type)]->(b) SET r = row.props RETURN row.element AS old, elementId(r) AS new"
)
#: The shadow vector nodes name the team element they hold the vector of by its element id: the reloaded one's.
_ALPHA = storage.names("alpha")
REPOINT = (
    f"UNWIND $moved AS m MATCH (s) WHERE (s:{_ALPHA.adopted_vector} OR s:{_ALPHA.adopted_relationship_vector}) AND s.element = m.old SET s.element = m.new"
)


def settings(**values) -> Settings:
    return Settings(embedder=TopicEmbedder(), **values)


def load_layout1(driver, seed: int | None = None) -> None:
    """The fixture graph in an empty database, with the schema objects the old build made; with a
    ``seed``, its nodes are created in that shuffled order (which node takes which id, so the order
    of a label scan, changes; the graph does not)."""
    nodes = list(GRAPH["nodes"])
    if seed is not None:
        random.Random(seed).shuffle(nodes)
    wipe(driver)
    for namespace in NAMESPACES:
        for ddl in catalog.schema(storage.names(namespace)):
            driver.execute_query(ddl)
    for ddl in catalog.adopted_vector_ddl(storage.names("alpha")):
        driver.execute_query(ddl)
    moved = driver.execute_query(LOAD_NODES, rows=nodes).records
    moved += driver.execute_query(LOAD_RELS, rows=GRAPH["relationships"]).records
    driver.execute_query(REPOINT, moved=[dict(r) for r in moved])
    driver.execute_query("MATCH (n) REMOVE n._fixture_key")
    driver.execute_query("CALL db.awaitIndexes(300)")


def node_text(labels: list[str], props: dict) -> str:
    """A node as its labels and properties — without the element id a shadow vector node names
    (a loaded graph's ids are new; the adopted SEARCH answers prove the shadow nodes still resolve)."""
    if any(label.startswith(storage.ADOPTED_VECTOR) or label.startswith(storage.ADOPTED_RELATIONSHIP_VECTOR) for label in labels):
        props = {k: v for k, v in props.items() if k != "element"}
    return json.dumps([sorted(labels), props], sort_keys=True, default=str)


def fingerprint(driver) -> Counter:
    """The whole graph, independent of element ids: each node as its labels and properties, each
    relationship as its type, properties and the fingerprints of its two ends."""
    nodes = driver.execute_query("MATCH (n) RETURN elementId(n) AS e, labels(n) AS l, properties(n) AS p").records
    text = {r["e"]: node_text(r["l"], dict(r["p"])) for r in nodes}
    rels = driver.execute_query("MATCH (a)-[r]->(b) RETURN elementId(a) AS a, type(r) AS t, properties(r) AS p, elementId(b) AS b").records
    return Counter(text.values()) + Counter(json.dumps([text[r["a"]], r["t"], dict(r["p"]), text[r["b"]]], sort_keys=True, default=str) for r in rels)


def migrated_fixture() -> Counter:
    """What layout 2 makes of the fixture graph, derived from the dump itself (not by running the
    migration): concepts trade their bare type label for ``names.label(type)``, native relationships
    (carrying a namespace's link property) get ``names.rel(predicate)``; the rest is unchanged."""
    by_key = {}
    for node in GRAPH["nodes"]:
        labels = set(node["labels"])
        for namespace in NAMESPACES:
            names = storage.names(namespace)
            if names.concept in labels:
                labels = (labels - {node["props"]["type"]}) | {names.label(node["props"]["type"])}
        by_key[node["key"]] = node_text(sorted(labels), node["props"])
    out = Counter(by_key.values())
    for rel in GRAPH["relationships"]:
        kind = rel["type"]
        for namespace in NAMESPACES:
            names = storage.names(namespace)
            if names.link_id in rel["props"]:
                kind = names.rel(kind.removeprefix(migration.legacy_rel_prefix(names)))
        out[json.dumps([by_key[rel["start"]], kind, rel["props"], by_key[rel["end"]]], sort_keys=True, default=str)] += 1
    return out


@pytest.fixture()
def old(neo4j_server):
    """A Nexus (default namespace) on the slot database holding the layout-1 fixture graph."""
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=settings()) as nexus:
        load_layout1(nexus.driver)
        yield nexus


def in_namespace(nexus: Nexus, namespace: str) -> Nexus:
    return nexus.in_namespace(namespace)


def assert_migration_error(error: dict, layout: int = 1) -> None:
    assert error["code"] == "KIP_4003"
    assert f"layout {layout}" in error["message"]
    if layout < storage.LAYOUT:
        assert "kip2cypher migrate --dry-run" in error["hint"] and "`kip2cypher migrate`" in error["hint"]
    else:
        assert f"layouts up to {storage.LAYOUT}" in error["message"]


def test_a_layout_1_nexus_answers_the_migration_error_to_every_command(old):
    before = fingerprint(old.driver)
    for namespace in NAMESPACES:
        nexus = in_namespace(old, namespace)
        assert_migration_error(nexus.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} }')["error"])
        assert_migration_error(nexus.execute_kip_readonly("DESCRIBE PRIMER")["error"])
        assert_migration_error(nexus.execute_kip('UPSERT { CONCEPT ?d { {type: "Drug", name: "Ibuprofen"} } }')["error"])
        assert_migration_error(nexus.execute_command("DESCRIBE CONCEPT TYPES").response["error"])
        with pytest.raises(KipError) as refused:
            nexus.bootstrap(capsules=True)
        assert_migration_error(refused.value.to_dict())
        with pytest.raises(KipError):
            nexus.explain('FIND(?d.name) WHERE { ?d {type: "Drug"} }')

    async def through_asyncio() -> dict:
        async with AsyncNexus(old.uri, database=old.database, settings=settings(), namespace="beta") as nexus:
            with pytest.raises(KipError):
                await nexus.bootstrap()
            return await nexus.execute_kip_readonly('FIND(?d.name) WHERE { ?d {type: "Drug"} }')

    assert_migration_error(asyncio.run(through_asyncio())["error"])
    for args in (["call", "--readonly", "DESCRIBE PRIMER"], ["bootstrap", "--yes", "--namespace", "alpha"]):
        out = CliRunner().invoke(main, [*args, "--uri", old.uri])
        assert out.exit_code == 1 and '"KIP_4003"' in out.output and "kip2cypher migrate" in out.output, out.output
    assert fingerprint(old.driver) == before  # nothing read as empty, nothing written


def test_a_layout_1_genesis_without_a_nexus_node_is_refused_too(old):
    old.driver.execute_query(f"MATCH (n:{storage.NEXUS} {{namespace: 'beta'}}) DELETE n")
    assert_migration_error(in_namespace(old, "beta").execute_kip_readonly("DESCRIBE PRIMER")["error"])


def expected_counts() -> dict[str, tuple[Counter, Counter]]:
    """Per namespace, from the dump: concepts per type and native relationships per old type."""
    out = {}
    for namespace in NAMESPACES:
        names = storage.names(namespace)
        concepts = Counter(n["props"]["type"] for n in GRAPH["nodes"] if names.concept in n["labels"])
        links = Counter(r["type"] for r in GRAPH["relationships"] if names.link_id in r["props"])
        out[namespace] = (concepts, links)
    return out


def test_dry_run_counts_what_it_would_relabel_and_writes_nothing(old):
    before = fingerprint(old.driver)
    report = old.migrate(dry_run=True)
    assert report["dry_run"] and report["layout"] == storage.LAYOUT
    assert [entry["namespace"] for entry in report["namespaces"]] == list(NAMESPACES)
    for entry in report["namespaces"]:
        names = storage.names(entry["namespace"])
        concepts, links = expected_counts()[entry["namespace"]]
        assert entry["state"] == "would migrate" and entry["layout"] == 1
        assert {item["from"]: item["count"] for item in entry["labels"]} == dict(concepts)
        assert all(item["to"] == names.label(item["from"]) for item in entry["labels"])
        assert {item["from"]: item["count"] for item in entry["types"]} == dict(links)
        assert entry["concepts"] == sum(concepts.values()) and entry["relationships"] == sum(links.values())
    out = CliRunner().invoke(main, ["migrate", "--dry-run", "--uri", old.uri])
    assert out.exit_code == 0, out.output
    assert "namespace 'alpha': layout 1 -> 2 (would migrate): would relabel 42 concepts, would retype 33 relationships" in out.output
    assert "  label Drug -> kip.alpha:Drug: 2 concepts" in out.output and "  type alpha/about -> kip.alpha:about: 2 relationships" in out.output
    assert "--dry-run: nothing was written." in out.output
    assert fingerprint(old.driver) == before


def strip_layout(graph: Counter) -> Counter:
    """A fingerprint without the nexus nodes' ``layout`` property (the one property the migration adds)."""
    out: Counter = Counter()
    for item, count in graph.items():
        value = json.loads(item)
        if len(value) == 2 and storage.NEXUS in value[0]:
            value[1].pop(storage.LAYOUT_KEY, None)
        out[json.dumps(value, sort_keys=True, default=str)] += count
    return out


def scores(answer: dict) -> tuple[dict, list[float]]:
    """A SEARCH answer without its ``_score`` values, and those values."""
    found = [hit["metadata"].pop("_score") for hit in answer.get("result", [])]
    return answer, found


def assert_same_answer(got: dict, expected: dict, what: tuple) -> None:
    """``got == expected``, except a semantic SEARCH's ``_score``: the vector index quantizes its
    vectors per segment, so a reloaded graph's cosine scores differ in the second decimal (the
    layout-1 build itself answers 0.9879 / 0.9806 on two loads of the fixture for its 0.9948); the
    hits and their order must be the same and each score within 0.05."""
    if 'MODE "semantic"' not in what[1]:
        assert got == expected, what
        return
    (got, got_scores), (expected, expected_scores) = scores(json.loads(json.dumps(got))), scores(json.loads(json.dumps(expected)))
    assert got == expected, what
    assert got_scores == pytest.approx(expected_scores, abs=0.05), what


def layouts(driver) -> dict[str, int | None]:
    records = driver.execute_query(f"MATCH (n:{storage.NEXUS}) RETURN n.namespace AS ns, n.{storage.LAYOUT_KEY} AS layout").records
    return {r["ns"]: r["layout"] for r in records}


def test_migrated_nexus_answers_what_layout_1_answered(old):
    report = old.migrate(batch=7)
    assert [entry["state"] for entry in report["namespaces"]] == ["migrated"] * 3
    assert {e["namespace"]: (e["concepts"], e["relationships"]) for e in report["namespaces"]} == {
        ns: (sum(c.values()), sum(lk.values())) for ns, (c, lk) in expected_counts().items()
    }
    # exactly the relabelling: vectors, secrets, adoption mappings, shadow nodes, team graph unchanged
    assert strip_layout(fingerprint(old.driver)) == migrated_fixture()
    assert layouts(old.driver) == {ns: storage.LAYOUT for ns in NAMESPACES}
    for namespace in NAMESPACES:
        nexus = in_namespace(old, namespace)
        for query, expected in ANSWERS[namespace]["queries"].items():
            assert_same_answer(nexus.execute_kip_readonly(query), expected, (namespace, query))
        assert_cursors_page_across_processes(old, namespace)


def assert_cursors_page_across_processes(old: Nexus, namespace: str) -> None:
    """Pages as the layout-1 build paged them, page 2 asked of another Nexus (another process):
    both sign with the namespace's stored ``cursor_secret``, which the migration kept. A token the
    layout-1 build issued is refused (KIP_1001, "start from the first page"): it fingerprints the
    compiled query, whose Cypher names the old labels."""
    paged = ANSWERS[namespace]["paged"]
    first = in_namespace(old, namespace).execute_kip_readonly(paged["command"])
    assert first["result"] == paged["first"]["result"]
    with Nexus(old.uri, database=old.database, settings=settings(), namespace=namespace) as other:
        assert other.execute_kip_readonly(paged["command"] + f" CURSOR {json.dumps(first['next_cursor'])}") == paged["second"]
        stale = other.execute_kip_readonly(paged["command"] + f" CURSOR {json.dumps(paged['first']['next_cursor'])}")
    assert stale["error"]["code"] == "KIP_1001" and "omit CURSOR" in stale["error"]["hint"]


def test_a_second_migration_is_a_no_op(old):
    old.migrate()
    after = fingerprint(old.driver)
    report = old.migrate()
    assert [(e["namespace"], e["state"]) for e in report["namespaces"]] == [(ns, "current") for ns in NAMESPACES]
    out = CliRunner().invoke(main, ["migrate", "--uri", old.uri])
    assert out.exit_code == 0 and out.output.count("already, nothing to do") == 3, out.output
    assert fingerprint(old.driver) == after


def test_a_newer_layout_is_refused_by_commands_and_by_the_migration(old):
    old.driver.execute_query(f"MATCH (n:{storage.NEXUS} {{namespace: 'beta'}}) SET n.{storage.LAYOUT_KEY} = $newer", newer=storage.LAYOUT + 1)
    before = fingerprint(old.driver)
    assert_migration_error(in_namespace(old, "beta").execute_kip_readonly("DESCRIBE PRIMER")["error"], storage.LAYOUT + 1)
    with pytest.raises(KipError) as refused:
        old.migrate()
    assert_migration_error(refused.value.to_dict(), storage.LAYOUT + 1)
    assert "namespace 'beta'" in refused.value.message
    out = CliRunner().invoke(main, ["migrate", "--uri", old.uri])
    assert out.exit_code == 1 and '"KIP_4003"' in out.output and f"layout {storage.LAYOUT + 1}" in out.output
    assert fingerprint(old.driver) == before  # not even the default namespace was migrated


def test_the_async_nexus_migrates_as_the_sync_one_does(old):
    async def run() -> tuple[dict, dict]:
        async with AsyncNexus(old.uri, database=old.database, settings=settings(), namespace="alpha") as nexus:
            return await nexus.migrate(dry_run=True), await nexus.migrate()

    counted, done = asyncio.run(run())
    assert [e["state"] for e in counted["namespaces"]] == ["would migrate"] * 3 and [e["state"] for e in done["namespaces"]] == ["migrated"] * 3
    assert strip_layout(fingerprint(old.driver)) == migrated_fixture()


#: Hand-written layout-1 elements for the interrupted migration: drugs treating Headache, each a
#: concept with its bare type label and a proposition with its native relationship, as the dump's own.
BULK = """
MATCH (h:KipConcept {type: 'Symptom', name: 'Headache'})
UNWIND range(1, $n) AS i
CREATE (d:KipConcept:Drug {id: 'C:bulk' + i, type: 'Drug', name: 'Bulk drug ' + i, `meta._version`: 1})
CREATE (p:KipProposition {id: 'P:bulk' + i + ':treats', subject: d.id, predicate: 'treats', object: h.id, `meta._version`: 1})
CREATE (p)-[:KIP_SUBJECT]->(d), (p)-[:KIP_OBJECT]->(h), (d)-[:treats {kip_id: p.id}]->(h)
"""
BULK_SIZE = 3000
MIGRATED_DRUGS = f"MATCH (n:KipConcept:{quote(storage.DEFAULT.label('Drug'))}) RETURN count(n) AS c"


def count(driver, query: str, **params) -> int:
    return driver.execute_query(query, **params).records[0][0]


def admin_transactions(driver) -> int:
    return count(driver, "SHOW TRANSACTIONS YIELD metaData WHERE metaData.interface = 'admin' RETURN count(*) AS c")


def test_a_migration_killed_half_way_finishes_when_run_again(old):
    old.driver.execute_query(BULK, n=BULK_SIZE)
    command = [sys.executable, "-m", "kip2cypher.cli", "migrate", "--batch", "5", "--uri", old.uri]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while process.poll() is None and count(old.driver, MIGRATED_DRUGS) == 0:
            pass  # until the first batches have committed
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL, "the migration ended before it could be killed: raise BULK_SIZE"
    while admin_transactions(old.driver):
        pass  # the server ends the dead client's statement; its committed batches stay
    half_way = old.migrate(dry_run=True)["namespaces"][0]
    assert count(old.driver, MIGRATED_DRUGS) > 0 and half_way["concepts"] + half_way["relationships"] > 0 and half_way["layout"] == 1
    assert_migration_error(old.execute_kip_readonly("DESCRIBE PRIMER")["error"])  # still refused
    rerun = old.migrate(batch=50)
    assert rerun["namespaces"][0]["state"] == "migrated"
    interrupted = fingerprint(old.driver)

    load_layout1(old.driver)
    old.driver.execute_query(BULK, n=BULK_SIZE)
    old.migrate(batch=50)
    assert interrupted == fingerprint(old.driver)  # the same graph as an uninterrupted migration's
    assert count(old.driver, MIGRATED_DRUGS) == BULK_SIZE + 2


def test_migration_is_not_cut_short_by_the_agent_query_timeout(old):
    """The migration is administrative work: a query timeout no agent query could meet does not apply to it."""
    with Nexus(old.uri, database=old.database, settings=settings(query_timeout_s=0.001, max_request_s=0.001)) as hurried:
        report = hurried.migrate(batch=3)
    assert [entry["state"] for entry in report["namespaces"]] == ["migrated"] * 3
    assert strip_layout(fingerprint(old.driver)) == migrated_fixture()


def test_mcp_answers_the_migration_error_until_the_nexus_is_migrated(old, neo4j_server):
    """A server started on a layout-1 nexus (its --bootstrap refused and logged) answers every tool
    call with the migration error, and serves as soon as the nexus is migrated: the nexus node is
    read again at every request until its layout is this build's."""
    from test_mcp import _server, payload, run

    async def body(session, init):
        before = payload(await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"}))
        write = payload(await session.call_tool("execute_kip", {"command": 'UPSERT { CONCEPT ?d { {type: "Drug", name: "Ibuprofen"} } }'}))
        await anyio.to_thread.run_sync(old.migrate)
        after = payload(await session.call_tool("execute_kip_readonly", {"command": ANSWERS[""]["paged"]["command"].replace(" LIMIT 1", "")}))
        return before, write, after

    before, write, after = run(_server(neo4j_server, "--bootstrap", "--yes"), body)
    assert_migration_error(before["error"])
    assert_migration_error(write["error"])
    assert after == {"result": ["Aspirin", "Paracetamol"]}


def drive(program, replies: list) -> list[str]:
    """The labels of the statements a program issues, fed ``replies`` in order (no Neo4j)."""
    issued, reply = [], None
    while True:
        try:
            request = program.send(reply)
        except StopIteration as stop:
            issued.append(stop.value)
            return issued
        issued.append(request.statement.label)
        reply = replies.pop(0)


def survey(labels: list[str], **layouts) -> list:
    """``SURVEY``'s reply: the database's labels and its nexus nodes' layouts."""
    return [{"labels": labels, "nexuses": [{"namespace": ns, "layout": v} for ns, v in layouts.items()]}]


def test_the_migration_program_checks_every_layout_before_its_first_write():
    from kip2cypher.execution.programs import admin
    from kip2cypher.execution.requests import Context

    ctx = Context(Settings(), "2026-01-01T00:00:00.000Z", admin=True)
    with pytest.raises(KipError) as refused:
        drive(admin.migrate(ctx), [survey([], alpha=1, beta=storage.LAYOUT + 1)])
    assert "namespace 'beta'" in refused.value.message  # before any statement but the survey
    alpha = storage.names("alpha")
    counts = [migration.pending_concepts(storage.DEFAULT).label, migration.pending_links(storage.DEFAULT).label]
    counted = drive(admin.migrate(ctx, dry_run=True), [survey(["KipConcept"], alpha=1), [], [], [{"name": "Drug", "count": 2}], []])
    assert counted[:-1] == [migration.SURVEY.label, *counts, *counts]  # counts only: no write in a dry run
    # the default namespace (a label, no nexus node, nothing in layout 1) is not reported
    assert counted[-1]["namespaces"] == [
        {
            "namespace": "alpha",
            "layout": 1,
            "state": "would migrate",
            "concepts": 2,
            "relationships": 0,
            "labels": [{"from": "Drug", "to": alpha.label("Drug"), "count": 2}],
            "types": [],
        }
    ]
    current = drive(admin.migrate(ctx), [survey(["KipConcept__alpha"], alpha=storage.LAYOUT)])
    assert current[:-1] == [migration.SURVEY.label] and current[-1]["namespaces"][0]["state"] == "current"

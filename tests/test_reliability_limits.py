"""Every engine limit on the real Neo4j: its KIP code, that it is configurable, and that a
refused request wrote nothing. The limits and their defaults are listed in docs/limits.md."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest
from hostile_payloads import fingerprint
from kml_helpers import err, ok

from kip2cypher.config import Settings
from kip2cypher.syntax import parser

FAST = dict(embedder=False)


def _wipe(driver, database=None) -> None:
    while driver.execute_query("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c", database_=database).records[0]["c"]:
        pass


@pytest.fixture(scope="module")
def graph(neo4j_server):
    """Genesis plus a 'follows' chain n0 → n1 → … → n6 and 40 Domain concepts."""
    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(**FAST)) as nx:
        _wipe(nx.driver, nx.database)
        nx.ensure_schema()
        nx.bootstrap()
        chain = " ".join(
            f'CONCEPT ?n{i} {{ {{type: "Domain", name: "n{i}"}} ' + (f'SET PROPOSITIONS {{ ("follows", ?n{i - 1}) }} ' if i else "") + "}" for i in range(7)
        )
        ok(nx.execute_kip('UPSERT { CONCEPT ?f { {type: "$PropositionType", name: "follows"} SET ATTRIBUTES { subject_types: ["*"], object_types: ["*"] } } }'))
        ok(nx.execute_kip(f"UPSERT {{ {chain} }}"))
        ok(
            nx.execute_kip(
                commands=[
                    {"command": 'UPSERT { CONCEPT ?d { {type: "Domain", name: :n} SET ATTRIBUTES { i: :i } } }', "parameters": {"n": f"bulk{i:02d}", "i": i}}
                    for i in range(40)
                ]
            )
        )
        yield nx


def _nexus(neo4j_server, **settings):
    from kip2cypher.nexus import Nexus

    return Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(**FAST, **settings))


def _fp(nx):
    return fingerprint(nx.driver, nx.database)


# ------------------------------------------------------------------ input size
def test_input_size_limit(neo4j_server, graph):
    before = _fp(graph)
    command = 'UPSERT { CONCEPT ?c { {type: "Domain", name: "sized"} SET ATTRIBUTES { text: "%s" } } }'
    with _nexus(neo4j_server, max_input_bytes=1024) as nx:
        e = err(nx.execute_kip(command % ("x" * 1000)), "KIP_4002")
        assert "1024 bytes" in e["message"]
        # Multi-byte text counts in UTF-8 bytes: 500 × "é" (500 characters) is 1000 bytes.
        err(nx.execute_kip(command % ("é" * 500)), "KIP_4002")
        assert _fp(nx) == before
        ok(nx.execute_kip(command % ("x" * 900)))
        # A large value passed as a parameter is not command text.
        ok(nx.execute_kip('UPSERT { CONCEPT ?c { {type: "Domain", name: "sized"} SET ATTRIBUTES { text: :t } } }', parameters={"t": "x" * 100_000}))
    # The default (and the parser's ceiling) is 256 KiB.
    assert Settings().max_input_bytes == parser.MAX_INPUT_BYTES == 256 * 1024
    err(graph.execute_kip(command % ("x" * (256 * 1024))), "KIP_4002")
    ok(graph.execute_kip('DELETE CONCEPT ?c DETACH WHERE { ?c {type: "Domain", name: "sized"} }'))
    assert _fp(graph)["nodes"] == before["nodes"]


# ------------------------------------------------------------------ nesting depth
def _nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def test_nesting_depth_limit(neo4j_server, graph):
    before = _fp(graph)
    command = 'UPSERT { CONCEPT ?c { {type: "Domain", name: "nested"} SET ATTRIBUTES { v: %s } } }'  # 3 levels of braces + the list
    with _nexus(neo4j_server, max_nesting_depth=10) as nx:
        e = err(nx.execute_kip(command % _nested(8)), "KIP_4002")
        assert "deeper than 10" in e["message"] and e["line"] == 1
        assert _fp(nx) == before
        ok(nx.execute_kip(command % _nested(7)))
    assert Settings().max_nesting_depth == parser.MAX_NESTING_DEPTH == 64
    err(graph.execute_kip(command % _nested(62)), "KIP_4002")
    ok(graph.execute_kip(command % _nested(61)))
    (value,) = ok(graph.execute_kip_readonly('FIND(?c.attributes.v) WHERE { ?c {type: "Domain", name: "nested"} }'))
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    assert (depth, value) == (61, 1)
    ok(graph.execute_kip('DELETE CONCEPT ?c DETACH WHERE { ?c {type: "Domain", name: "nested"} }'))


# ------------------------------------------------------------------ batch length
def test_batch_length_limit(neo4j_server, graph):
    before = _fp(graph)
    upsert = {"command": 'UPSERT { CONCEPT ?c { {type: "Domain", name: :n} } }'}
    with _nexus(neo4j_server, max_batch=3) as nx:
        e = err(nx.execute_kip(commands=[{**upsert, "parameters": {"n": f"batch{i}"}} for i in range(4)]), "KIP_4002")
        assert "at most 3" in e["message"]
        assert _fp(nx) == before  # refused before anything ran
        assert len(ok(nx.execute_kip_readonly(commands=["DESCRIBE DOMAINS"] * 3))) == 3
    assert Settings().max_batch == 256
    e = err(graph.execute_kip_readonly(commands=["DESCRIBE PRIMER"] * 257), "KIP_4002")
    assert "257 commands" in e["message"]


# ------------------------------------------------------------------ result size
def test_result_size_limit(neo4j_server, graph):
    query = 'FIND(?d.name) WHERE { ?d {type: "Domain"} FILTER(STARTS_WITH(?d.name, "bulk")) }'
    with _nexus(neo4j_server, max_result_rows=25) as nx:
        e = err(nx.execute_kip_readonly(query), "KIP_4002")
        assert "25 rows" in e["message"] and "LIMIT" in e["hint"]
        # LIMIT + CURSOR pages through everything under the cap.
        names, cursor = [], None
        while True:
            r = nx.execute_kip_readonly(query + " LIMIT 20" + (" CURSOR :c" if cursor else ""), parameters={"c": cursor} if cursor else None)
            names += ok(r)
            cursor = r.get("next_cursor")
            if not cursor:
                break
        assert sorted(names) == [f"bulk{i:02d}" for i in range(40)]
    assert Settings().max_result_rows == 10000
    assert len(ok(graph.execute_kip_readonly(query))) == 40


def test_limit_equal_to_max_result_rows_pages_instead_of_failing(neo4j_server, graph):
    # Regression (issue 13): LIMIT = max_result_rows failed with KIP_4002 when more rows existed,
    # because the look-ahead row that tells whether a next page exists counted against the cap.
    query = 'FIND(?d.name) WHERE { ?d {type: "Domain"} FILTER(STARTS_WITH(?d.name, "bulk")) } ORDER BY ?d.name LIMIT 25'
    with _nexus(neo4j_server, max_result_rows=25) as nx:
        first = nx.execute_kip_readonly(query)
        assert ok(first) == [f"bulk{i:02d}" for i in range(25)] and first["next_cursor"]
        rest = nx.execute_kip_readonly(query + " CURSOR :c", parameters={"c": first["next_cursor"]})
        assert ok(rest) == [f"bulk{i:02d}" for i in range(25, 40)] and "next_cursor" not in rest
        err(nx.execute_kip_readonly(query.replace("LIMIT 25", "LIMIT 26")), "KIP_4002")


# ------------------------------------------------------------------ query timeout
def test_query_timeout(neo4j_server, graph):
    """A cartesian product of 40⁴ rows outlives a 1 s timeout: KIP_4001, promptly; the Nexus works after."""
    domains = " ".join(f'?{v} {{type: "Domain"}}' for v in "abcde")
    slow = f"FIND(COUNT(?a)) WHERE {{ {domains} FILTER(?a.name != ?e.name) }}"
    with _nexus(neo4j_server, query_timeout_s=1) as nx:
        e = err(nx.execute_kip_readonly(slow), "KIP_4001")
        assert "time limit" in e["message"]  # Neo4j terminated it at the limit (no wall-clock assertion)
        assert ok(nx.execute_kip_readonly('FIND(COUNT(?d)) WHERE { ?d {type: "Domain"} }')) >= 47
    assert Settings().query_timeout_s == 30


def test_query_timeout_rolls_back_a_write(neo4j_server, graph):
    """A KML statement stopped by the timeout leaves nothing behind."""
    before = _fp(graph)
    slow_update = (
        'UPDATE ?a SET ATTRIBUTES { touched: true } WHERE { ?a {type: "Domain"} ?b {type: "Domain"} ?c {type: "Domain"} '
        '?d {type: "Domain"} ?e {type: "Domain"} FILTER(?a.name != ?e.name) }'
    )
    with _nexus(neo4j_server, query_timeout_s=1) as nx:
        err(nx.execute_kip(slow_update), "KIP_4001")
    assert _fp(graph) == before


# ------------------------------------------------------------------ request budget
SLOW = (
    'FIND(COUNT(?a)) WHERE { ?a {type: "Domain"} ?b {type: "Domain"} ?c {type: "Domain"} ?d {type: "Domain"} ?e {type: "Domain"} FILTER(?a.name != ?e.name) }'
)


def test_request_time_budget_stops_a_readonly_batch(neo4j_server, graph):
    """Issue 18: a batch ran every read to its own timeout (256 × query_timeout_s ≈ 2 h). With
    max_request_s the running statement is cut at the budget and the rest answer KIP_4001 unrun."""
    with _nexus(neo4j_server, max_request_s=2) as nx:
        started = time.monotonic()
        results = ok(nx.execute_kip_readonly(commands=[SLOW] * 6))
        elapsed = time.monotonic() - started
    assert [r["error"]["code"] for r in results] == ["KIP_4001"] * 6
    assert "max_request_s" in results[0]["error"]["message"] and "was stopped" in results[0]["error"]["message"]
    assert all("was not run" in r["error"]["message"] for r in results[1:])
    print(f"\n[reliability] budget 2 s: a batch of 6 slow reads answered in {elapsed:.1f} s")
    assert Settings().max_request_s == 120


def test_request_time_budget_runs_nothing_after_it_in_a_write_batch(neo4j_server, graph):
    before = _fp(graph)
    with _nexus(neo4j_server, max_request_s=2) as nx:
        results = ok(nx.execute_kip(commands=[SLOW, 'UPSERT { CONCEPT ?d { {type: "Domain", name: "after-budget"} } }']))
    assert [r["error"]["code"] for r in results] == ["KIP_4001", "KIP_4001"]
    assert "was not run" in results[1]["error"]["message"]
    assert _fp(graph) == before


def test_request_time_budget_counts_compiling(neo4j_server, graph):
    """Parsing and compiling count too: a batch of large commands stops compiling at the budget.
    Each command holds more FILTER tests than one command may (``MAX_FILTER_TESTS``), so the
    compiler answers it (KIP_4002) after parsing it, and Neo4j never plans 2,500 conditions."""

    def big(tag: str, i: int) -> str:
        return 'FIND(?d.name) WHERE { ?d {type: "Domain"} FILTER(' + " || ".join(f'?d.name == "{tag}{i}-{k}"' for k in range(2500)) + ' || ?nope.name == "x") }'

    with _nexus(neo4j_server, max_request_s=0.5) as nx:
        results = ok(nx.execute_kip(commands=[big("w", i) for i in range(40)]))
        assert results[0]["error"]["code"] == "KIP_4002"
        unrun = [r for r in results if "was not run" in r["error"]["message"]]
        assert len(unrun) > 20  # a 60 KB command compiles in ~0.1 s here: a few before the budget
        # Readonly classifies (parses) every command before any runs: the budget ends the whole request.
        e = err(nx.execute_kip_readonly(commands=[big("r", i) for i in range(40)]), "KIP_4001")
        assert "before any command ran" in e["message"]


def test_request_time_budget_through_the_async_nexus(neo4j_server, graph):
    import asyncio

    from kip2cypher import connect_async

    async def run():
        async with connect_async(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(**FAST, max_request_s=2)) as nx:
            return await nx.execute_kip_readonly(commands=[SLOW] * 3)

    results = ok(asyncio.run(run()))
    assert [r["error"]["code"] for r in results] == ["KIP_4001"] * 3
    assert "was not run" in results[2]["error"]["message"]


# ------------------------------------------------------------------ parameter size
def test_parameter_size_limit(neo4j_server, graph):
    """Issue 18: parameters had no bound (a 50 MB readonly parameter took seconds and ~6 copies).
    They count per command that receives them; the request is refused before anything runs."""
    before = _fp(graph)
    upsert = 'UPSERT { CONCEPT ?d { {type: "Domain", name: :n} SET ATTRIBUTES { v: :v } } }'
    with _nexus(neo4j_server, max_parameter_bytes=1000) as nx:
        e = err(nx.execute_kip(upsert, parameters={"n": "p1", "v": "x" * 2000}), "KIP_4002")
        assert "1000 bytes" in e["message"]
        # Shared parameters count once per command of a batch: 10 × 200 > 1000.
        err(nx.execute_kip(commands=[upsert] * 10, parameters={"n": "p2", "v": "x" * 190}), "KIP_4002")
        ok(nx.execute_kip_readonly('FIND(?d.name) WHERE { ?d {type: "Domain", name: :n} }', parameters={"n": "x" * 900}))
    assert _fp(graph) == before
    assert Settings().max_parameter_bytes == 16 * 1024 * 1024
    # Refused before any copy (it was ~6 copies of 50 MB): what the refusal allocates, measured
    # with tracemalloc, is far below one copy of the parameter.
    find = 'FIND(?d.name) WHERE { ?d {type: "Domain", name: :n} }'
    huge = {"n": "x" * 50_000_000}
    tracemalloc.start()
    try:
        err(graph.execute_kip_readonly(find, parameters=huge), "KIP_4002")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, peak


# ------------------------------------------------------------------ SEARCH term
def test_search_term_had_no_size_bound(neo4j_server, graph):
    """Issue 18: a 20,000-word SEARCH term (a parameter: not counted by the input bound) ran
    16 s of Python scoring past a 5 s timeout. Terms are bounded (KIP_4002, max_search_term_chars)."""
    long_term = " ".join(f"w{i}" for i in range(20_000))
    e = err(graph.execute_kip_readonly("SEARCH CONCEPT :t LIMIT 5", parameters={"t": long_term}), "KIP_4002")
    assert "max_search_term_chars" in e["message"] and e["hint"]
    err(graph.execute_kip_readonly(f'SEARCH CONCEPT "{"x" * 2049}"'), "KIP_4002")
    assert Settings().max_search_term_chars == 2048
    ok(graph.execute_kip_readonly("SEARCH CONCEPT :t LIMIT 5", parameters={"t": "x" * 2048}))
    with _nexus(neo4j_server, max_search_term_chars=10) as nx:
        err(nx.execute_kip_readonly('SEARCH CONCEPT "domain of n1"'), "KIP_4002")


# ------------------------------------------------------------------ path hops
def test_path_hop_cap(neo4j_server, graph):
    # Paths are breadth-first searches (docs/kql.md, "Paths"): the maximum is unbounded, only the
    # minimum (one clause per mandatory hop) is capped by max_hops — never a truncated answer.
    reach = 'FIND(?b.name) WHERE { ?a {type: "Domain", name: "n6"} (?a, "follows"%s, ?b) }'
    with _nexus(neo4j_server, max_hops=3) as nx:
        e = err(nx.execute_kip_readonly(reach % "{4,}"), "KIP_4002")
        assert "at most 3 mandatory hops" in e["message"] and "KIP2CYPHER_MAX_HOPS" in e["hint"]
        assert sorted(ok(nx.execute_kip_readonly(reach % "{1,5}"))) == [f"n{i}" for i in range(1, 6)]
        assert sorted(ok(nx.execute_kip_readonly(reach % "{1,}"))) == [f"n{i}" for i in range(6)]
        assert sorted(ok(nx.execute_kip_readonly(reach % "{1,3}"))) == ["n3", "n4", "n5"]
        assert sorted(ok(nx.execute_kip_readonly(reach % "{3,}"))) == [f"n{i}" for i in range(4)]
    assert Settings().max_hops == 10
    assert sorted(ok(graph.execute_kip_readonly(reach % "{1,}"))) == [f"n{i}" for i in range(6)]
    assert sorted(ok(graph.execute_kip_readonly(reach % "{1,11}"))) == [f"n{i}" for i in range(6)]


def test_limits_are_reported_by_describe_primer(neo4j_server, graph):
    with _nexus(neo4j_server, max_hops=4, max_result_rows=99, max_batch=7, query_timeout_s=5) as nx:
        primer = ok(nx.execute_kip_readonly("DESCRIBE PRIMER"))
    text = repr(primer)
    for needle in ("'max_path_hops': 4", "'max_result_rows': 99", "'max_batch_commands': 7", "'query_timeout_seconds': 5"):
        assert needle in text, primer


# ------------------------------------------------------------------ embedding outside the write
def test_valid_capsule_failed_with_kip_4001_because_of_embedding_time(neo4j_server, graph):
    """Issue 18: with the default embedder, model inference for every touched element ran inside
    the KML write transaction and counted against query_timeout_s — a valid capsule (an EXPORT
    page of 5,000 concepts) failed deterministically with KIP_4001. The refresh now runs after
    the commit, each statement in a short transaction of its own (issue 16), so the write
    answers whatever the embedding costs, and every element gets its vector afterwards.

    Checked by order, not by a clock (issue 30: a 2 s query timeout failed this on a busy
    machine): the real default model, wrapped so that each time it is asked for vectors it first
    counts, from a session of its own, the capsule's concepts a reader can already see — all of
    them every time, so no inference ran before the write committed."""
    from kip2cypher import embedding

    model = embedding.resolve(Settings())
    assert isinstance(model, embedding.MiniLMEmbedder)  # the default embedder, for real
    seen: list[int] = []

    class Witness:
        name, dimensions = model.name, model.dimensions

        def embed(self, texts):
            count = "MATCH (n:KipConcept {type: 'Domain'}) WHERE n.name STARTS WITH 'emb-' RETURN count(n) AS c"
            seen.append(graph.driver.execute_query(count, database_=graph.database).records[0]["c"])
            return model.embed(texts)

    blocks = " ".join(
        f'CONCEPT ?c{i} {{ {{type: "Domain", name: "emb-{i}"}} SET ATTRIBUTES {{ description: "domain number {i} of a large capsule" }} }}' for i in range(1500)
    )
    with _nexus(neo4j_server) as nx:
        nx.settings = nx.settings.replace(embedder=Witness())
        result = ok(nx.execute_kip(f"UPSERT {{ {blocks} }}"))
        assert len(result["upsert_concept_nodes"]) == 1500
        assert nx.wait_for_embeddings(600)
    assert seen and set(seen) == {1500}, seen
    missing = graph.driver.execute_query(
        "MATCH (n:KipConcept {type: 'Domain'}) WHERE n.name STARTS WITH 'emb-' AND n.kip_embedding IS NULL RETURN count(n) AS c", database_=graph.database
    ).records[0]["c"]
    assert missing == 0


def test_search_term_of_one_long_word_was_an_internal_error(graph):
    """A 2,000-character word became a Lucene prefix/fuzzy query whose automaton Lucene refuses
    ("input automaton is too large"): KIP_4003. Long words are matched by their first 64 characters."""
    ok(graph.execute_kip('UPSERT { CONCEPT ?c { {type: "Domain", name: :n} } }', parameters={"n": "y" * 100}))
    for term in ("x" * 2048, "y" * 2048, "ab" * 500 + " " + "c" * 1000):
        assert isinstance(ok(graph.execute_kip_readonly("SEARCH CONCEPT :t LIMIT 5", parameters={"t": term})), list)
    hits = ok(graph.execute_kip_readonly("SEARCH CONCEPT :t LIMIT 5", parameters={"t": "y" * 2048}))
    assert any(hit.get("name") == "y" * 100 for hit in hits), hits


# ------------------------------------------------------------------ result bytes
BLOB_KIB = 256
BLOBS = 48  # 12 MiB of values: the whole answer of FIND(?b)


@pytest.fixture(scope="module")
def blobs(graph):
    """48 concepts of type Blob, each with a 256 KiB attribute (written 8 per request, under
    the 16 MiB parameter bound)."""
    ok(graph.execute_kip('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Blob"} SET ATTRIBUTES { description: "a large value" } } }'))
    for first in range(0, BLOBS, 8):
        blocks = " ".join(f'CONCEPT ?b{i} {{ {{type: "Blob", name: "blob{i:02d}"}} SET ATTRIBUTES {{ body: :body{i} }} }}' for i in range(first, first + 8))
        ok(graph.execute_kip(f"UPSERT {{ {blocks} }}", parameters={f"body{i}": chr(97 + i % 26) * (BLOB_KIB * 1024) for i in range(first, first + 8)}))
    return graph


def _refused_for_bytes(response, cap):
    e = err(response, "KIP_4002")
    assert f"{cap} bytes" in e["message"] and "max_result_bytes" in e["message"]
    assert "LIMIT" in e["hint"] and "CURSOR" in e["hint"]


def test_answers_were_capped_in_rows_never_in_bytes(neo4j_server, blobs):
    cap = 2**20
    with _nexus(neo4j_server, max_result_bytes=cap, fetch_size=2) as nx:
        tracemalloc.start()
        try:
            response = nx.execute_kip_readonly('FIND(?b) WHERE { ?b {type: "Blob"} }')
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        _refused_for_bytes(response, cap)
        # What the refusal held: about the cap plus one fetch of rows, far below the 12 MiB answer.
        assert peak < 5 * cap, peak
        # EXPORT, SEARCH and DESCRIBE are read the same way.
        _refused_for_bytes(nx.execute_kip_readonly('EXPORT ?b WHERE { ?b {type: "Blob"} }'), cap)
        _refused_for_bytes(nx.execute_kip_readonly('SEARCH CONCEPT "blob" WITH TYPE "Blob" LIMIT 40'), cap)
        # Answers under the cap are answered: the names, or a page of two whole elements.
        assert sorted(ok(nx.execute_kip_readonly('FIND(?b.name) WHERE { ?b {type: "Blob"} }'))) == [f"blob{i:02d}" for i in range(BLOBS)]
        page = nx.execute_kip_readonly('FIND(?b) WHERE { ?b {type: "Blob"} } LIMIT 2')
        assert len(ok(page)) == 2 and len(ok(page)[0]["attributes"]["body"]) == BLOB_KIB * 1024 and page["next_cursor"]
    assert Settings().max_result_bytes == 32 * 2**20


def test_result_bytes_cap_through_the_async_nexus(neo4j_server, blobs):
    import asyncio

    from kip2cypher.async_nexus import AsyncNexus

    async def run():
        async with AsyncNexus(
            neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(**FAST, max_result_bytes=2**20, fetch_size=2)
        ) as nx:
            return await nx.execute_kip_readonly('FIND(?b) WHERE { ?b {type: "Blob"} }')

    _refused_for_bytes(asyncio.run(run()), 2**20)


def test_result_bytes_cap_through_the_cli(neo4j_server, blobs):
    from click.testing import CliRunner

    from kip2cypher.cli import main

    env = {"NEO4J_URI": neo4j_server.uri, "KIP2CYPHER_MAX_RESULT_BYTES": str(2**20), "KIP2CYPHER_EMBEDDER": "none"}
    if neo4j_server.database:
        env["NEO4J_DATABASE"] = neo4j_server.database
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    out = CliRunner().invoke(main, ["call", "--readonly", 'FIND(?b) WHERE { ?b {type: "Blob"} }'], env=env, catch_exceptions=False)
    assert out.exit_code == 1
    _refused_for_bytes(json.loads(out.stdout), 2**20)


def test_result_bytes_cap_through_mcp(neo4j_server, blobs):
    import anyio
    from test_mcp import _server, _session_run, payload

    params = _server(neo4j_server)
    params.env["KIP2CYPHER_MAX_RESULT_BYTES"] = str(2**20)

    async def body(session, init):
        return payload(await session.call_tool("execute_kip_readonly", {"command": 'FIND(?b) WHERE { ?b {type: "Blob"} }'}))

    _refused_for_bytes(anyio.run(_session_run, params, body), 2**20)

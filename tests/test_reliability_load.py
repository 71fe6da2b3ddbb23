"""One request must not hold the server (issue 18): every pass over command text is linear, and a
CPU-heavy request delays unrelated requests of the same server by a small, measured amount —
through the Python API from threads and through the stdio MCP server.

Wall-clock bounds here are deliberately generous (the machine is shared); the measured figures
are printed as ``[reliability]`` lines (``pytest -s``) and reported in docs/reliability.md.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time

import anyio
import pytest

from kip2cypher.config import Settings
from kml_helpers import err, ok

FAST = dict(embedder=False)
SMALL = 'FIND(?t.name) WHERE { ?t {type: "$ConceptType", name: "Domain"} }'
# The 40 KB command: a quote then 20,000 escaped quotes (8 s in the old quoted-placeholder scan).
ESCAPED_QUOTES = '"' + '\\"' * 20_000
# Block comments before an unterminated one: the command-kind sniffer's regex backtracked exponentially.
COMMENT_RUN = "/**/" * 40 + "/*"
# ~250 KB: the most parsing one command may cost (a FILTER of ~10,000 conditions).
HEAVY_PARSE = 'FIND(?d.name) WHERE { ?d {type: "Domain"} FILTER(' + " || ".join(f'?d.name == "n{i}"' for i in range(10_500)) + ") }"


def report(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    line = f"[reliability] {label}: n={len(samples)} median={statistics.median(samples) * 1000:.0f} ms p95={p95 * 1000:.0f} ms max={max(samples) * 1000:.0f} ms"
    print("\n" + line)
    return line


@pytest.fixture(scope="module")
def nx(neo4j_server):
    from conftest import wipe
    from kip2cypher.execute import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(**FAST)) as nexus:
        wipe(nexus.driver, neo4j_server.database)
        nexus.bootstrap()
        yield nexus


# ------------------------------------------------------------------ linear passes over text
def test_quoted_placeholder_scan_of_40kb_of_escaped_quotes_answers_at_once(nx):
    started = time.monotonic()
    err(nx.execute_kip_readonly(ESCAPED_QUOTES, parameters={"name": "x"}), "KIP_1001")
    # The same 40,000 characters as one valid string value, scanned for quoted placeholders.
    assert ok(nx.execute_kip_readonly(f'FIND(?d) WHERE {{ ?d {{name: "{ESCAPED_QUOTES[1:]}"}} }}', parameters={"name": "x"})) == []
    assert time.monotonic() - started < 3  # was 8 s per request, holding the GIL


def test_comment_run_before_an_unterminated_comment_does_not_backtrack(nx):
    """``"/**/" * 40 + "/*"`` is not KIP: classifying it (for the batch rules) ran a regex that
    backtracked 2^n times inside one C call, holding the GIL for hours."""
    started = time.monotonic()
    err(nx.execute_kip_readonly(COMMENT_RUN), "KIP_1001")
    result = ok(nx.execute_kip(commands=[COMMENT_RUN, SMALL]))
    assert result[0]["error"]["code"] == "KIP_1001" and result[1] == {"result": ["Domain"]}
    assert time.monotonic() - started < 3


def test_long_filter_chain_is_answered_not_an_internal_error(nx):
    """A FILTER of 3,000 ``||`` conditions raised RecursionError (KIP_4003 and a logged traceback)
    in validation. It now compiles; here the last condition names an unbound variable, so the
    answer (KIP_3001) comes from the compiler without asking Neo4j to plan 3,000 conditions
    (which takes Neo4j's planner ~10 ms each: docs/reliability.md)."""
    chain = 'FIND(?d.name) WHERE { ?d {type: "$ConceptType"} FILTER(' + " || ".join(f'?d.name == "n{i}"' for i in range(3000)) + ' || ?nope.name == "x") }'
    err(nx.execute_kip_readonly(chain), "KIP_3001")


# ------------------------------------------------------------------ one request does not stall the others
HOSTILE = [(ESCAPED_QUOTES, {"name": "x"}), (COMMENT_RUN, {}), (HEAVY_PARSE, {})]


def _small_latencies(call, stop: threading.Event, minimum: int = 20) -> list[float]:
    samples: list[float] = []
    while not stop.is_set() or len(samples) < minimum:
        started = time.monotonic()
        call()
        samples.append(time.monotonic() - started)
    return samples


def test_cpu_heavy_requests_delay_small_ones_only_a_little_python_api_threads(nx):
    """A thread sending the hostile requests (the issue's 40 KB scan, the comment run, a 250 KB
    command that takes seconds to parse) next to a thread sending small FINDs on the same Nexus."""

    def small():
        assert ok(nx.execute_kip_readonly(SMALL)) == ["Domain"]

    idle = threading.Event()
    idle.set()
    baseline = _small_latencies(small, idle, minimum=30)
    stop = threading.Event()
    hostile_times: list[float] = []

    def hostile():
        for _ in range(2):
            for text, params in HOSTILE:
                started = time.monotonic()
                nx.execute_kip_readonly(text, parameters=params)
                hostile_times.append(time.monotonic() - started)
        stop.set()

    worker = threading.Thread(target=hostile)
    worker.start()
    loaded = _small_latencies(small, stop)
    worker.join()
    report("API threads, small FIND alone", baseline)
    report("API threads, small FIND next to hostile requests", loaded)
    report("API threads, the hostile requests themselves", hostile_times)
    assert max(loaded) < 3  # generous: the issue measured 9.5 s behind one hostile request


def _mcp_params(neo4j_server):
    from mcp.client.stdio import StdioServerParameters

    env = {"NEO4J_URI": neo4j_server.uri, "PATH": os.environ.get("PATH", ""), "KIP2CYPHER_EMBEDDER": "none"}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    if neo4j_server.database:
        env["NEO4J_DATABASE"] = neo4j_server.database
    return StdioServerParameters(command=sys.executable, args=["-m", "kip2cypher.cli", "mcp"], env=env)


def test_cpu_heavy_requests_delay_small_ones_only_a_little_stdio_mcp(nx, neo4j_server):
    """The same through one stdio MCP server (the issue: an unrelated DESCRIBE DOMAINS answered
    after 9.5 s behind the 40 KB command)."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def small(session) -> float:
        started = time.monotonic()
        result = await session.call_tool("execute_kip_readonly", {"command": SMALL})
        assert json.loads(result.content[0].text) == {"result": ["Domain"]}
        return time.monotonic() - started

    async def body():
        with open(os.devnull, "w") as errlog:
            async with stdio_client(_mcp_params(neo4j_server), errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    baseline = [await small(session) for _ in range(30)]
                    loaded: list[float] = []
                    done = anyio.Event()

                    async def hostile():
                        for _ in range(2):
                            for text, params in HOSTILE:
                                result = await session.call_tool("execute_kip_readonly", {"command": text, "parameters": params})
                                assert "error" in json.loads(result.content[0].text)
                        done.set()

                    async with anyio.create_task_group() as group:
                        group.start_soon(hostile)
                        while not done.is_set() or len(loaded) < 20:
                            loaded.append(await small(session))
                    return baseline, loaded

    baseline, loaded = anyio.run(body)
    report("stdio MCP, small FIND alone", baseline)
    report("stdio MCP, small FIND next to hostile requests", loaded)
    assert max(loaded) < 3

"""Metrics (kip2cypher.metrics, /metrics of the HTTP MCP server) and OpenTelemetry spans
(kip2cypher.tracing): they count what happened — exact counts, never timings — and leak nothing
(docs/interfaces.md, "Operating the service")."""

from __future__ import annotations

import threading

import anyio
import httpx2
import pytest
from kml_helpers import ok
from mcp_http_helpers import ACCEPT, INIT, RO, RW, RW2, http_server, in_session, payload
from prometheus_client.parser import text_string_to_metric_families

import kip2cypher
from kip2cypher import metrics, tracing
from kip2cypher.config import Settings
from kip2cypher.execution import background, loop
from kip2cypher.execution.requests import Context
from kip2cypher.mcp_server import HttpOptions, McpConfigError

METRICS_TOKEN = "metrics-token-0123456789abcdef"
UPSERT = 'UPSERT { CONCEPT ?d { {type: "Domain", name: :name} } }'
SECRET_VALUE = "MetricsProbeValue"
DEFAULT = metrics.DEFAULT_NAMESPACE


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of a Prometheus exposition: (name, labels) → value."""
    return {(s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def metrics_url(served) -> str:
    return served.health_url.replace("/healthz", "/metrics")


# ---------------------------------------------------------------- the HTTP MCP server
def test_metrics_count_a_scripted_mcp_session_and_leak_nothing(genesis, neo4j_server):
    """A scripted session — reads, a write, a batch with a syntax error, an undefined type, a
    read-only refusal — then wrong credentials; /metrics counts exactly that."""

    async def rw_session(session):
        ok(payload(await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"})))
        ok(payload(await session.call_tool("execute_kip_readonly", {"command": 'FIND(?d.name) WHERE { ?d {type: "Domain"} } LIMIT 5'})))
        ok(payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": SECRET_VALUE}})))
        batch = ok(payload(await session.call_tool("execute_kip", {"commands": ["DESCRIBE CONCEPT TYPES", "FIND(?x WHERE {"]})))
        assert "result" in batch[0] and batch[1]["error"]["code"] == "KIP_1001"
        undefined = payload(await session.call_tool("execute_kip_readonly", {"command": 'FIND(?x.name) WHERE { ?x {type: "NoSuchMetricsType"} }'}))
        assert undefined["error"]["code"] == "KIP_2001"
        refused = payload(await session.call_tool("execute_kip_readonly", {"command": UPSERT, "parameters": {"name": "Nope"}}))
        assert refused["error"]["code"] == "KIP_3004"

    async def ro_session(session):
        assert payload(await session.call_tool("execute_kip", {"command": "DESCRIBE PRIMER"}))["error"]["code"] == "KIP_3004"
        async with httpx2.AsyncClient() as client:  # read while this session is the only one open
            return (await client.get(url, headers={"Authorization": f"Bearer {METRICS_TOKEN}"})).text

    with http_server(neo4j_server, env={"KIP2CYPHER_MCP_METRICS_TOKEN": METRICS_TOKEN}) as served:
        url = metrics_url(served)
        in_session(served.url, RW, rw_session)
        for headers in ({}, {"Authorization": "Bearer not-a-configured-token-123"}):
            assert httpx2.post(served.url, timeout=60, json=INIT, headers={**ACCEPT, **headers}).status_code == 401
        during = samples(in_session(served.url, RO, ro_session))
        for headers in ({}, {"Authorization": f"Bearer {METRICS_TOKEN[:-1]}"}, {"Authorization": f"Bearer {RW}"}):
            refused = httpx2.get(url, headers=headers, timeout=30)
            assert refused.status_code == 401 and "kip2cypher_calls" not in refused.text
        response = httpx2.get(url, headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    found = samples(response.text)

    calls = {key: v for key, v in found.items() if key[0] == "kip2cypher_calls_total" and v}
    mcp = {"interface": "mcp", "namespace": DEFAULT}
    assert calls == {
        ("kip2cypher_calls_total", frozenset({**mcp, "tool": "execute_kip_readonly", "outcome": "ok"}.items())): 2,
        ("kip2cypher_calls_total", frozenset({**mcp, "tool": "execute_kip_readonly", "outcome": "KIP_2001"}.items())): 1,
        ("kip2cypher_calls_total", frozenset({**mcp, "tool": "execute_kip_readonly", "outcome": "KIP_3004"}.items())): 1,
        ("kip2cypher_calls_total", frozenset({**mcp, "tool": "execute_kip", "outcome": "ok"}.items())): 2,
    }
    commands = {key: v for key, v in found.items() if key[0] == "kip2cypher_commands_total" and v}
    expected = {
        ("execute_kip_readonly", "META", "ok"): 1,
        ("execute_kip_readonly", "KQL", "ok"): 1,
        ("execute_kip_readonly", "KQL", "KIP_2001"): 1,
        ("execute_kip", "KML", "ok"): 1,
        ("execute_kip", "META", "ok"): 1,
        ("execute_kip", "KQL", "KIP_1001"): 1,  # a syntax error: classified by its first word, never run
    }
    assert commands == {
        ("kip2cypher_commands_total", frozenset({**mcp, "tool": tool, "kind": kind, "outcome": outcome}.items())): n
        for (tool, kind, outcome), n in expected.items()
    }
    # Timed: the commands that ran (the syntax error and the read-only refusal never did).
    assert {kind: value(found, "kip2cypher_command_duration_seconds_count", kind=kind) for kind in ("KQL", "KML", "META")} == {"KQL": 2, "KML": 1, "META": 2}
    assert value(found, "kip2cypher_call_duration_seconds_count", interface="mcp", tool="execute_kip_readonly") == 4
    assert value(found, "kip2cypher_call_duration_seconds_count", interface="mcp", tool="execute_kip") == 2
    failures = {dict(labels)["reason"]: v for (name, labels), v in found.items() if name == "kip2cypher_auth_failures_total"}
    assert failures == {"missing_token": 1, "invalid_token": 1, "insufficient_scope": 1, "metrics_token": 3}
    assert value(during, "kip2cypher_mcp_sessions") == 1
    assert ("kip2cypher_embedding_backlog", frozenset()) in found
    assert value(found, "kip2cypher_neo4j_transient_errors_total", access="READ") == 0
    # Nothing secret or caller-written: no token, no password, no command text, no parameter value.
    body = response.text
    leaks = [RW, RW2, RO, METRICS_TOKEN, SECRET_VALUE, "UPSERT", "CONCEPT", "NoSuchMetricsType", "Domain"]
    leaks += [neo4j_server.auth[1]] if getattr(neo4j_server, "auth", None) else []
    assert not [secret for secret in leaks if secret in body]


def test_metrics_are_off_without_a_metrics_token(genesis, neo4j_server):
    with http_server(neo4j_server) as served:
        for headers in ({}, {"Authorization": f"Bearer {RW}"}):
            answer = httpx2.get(metrics_url(served), headers=headers, timeout=30)
            assert answer.status_code == 404 and "KIP2CYPHER_MCP_METRICS_TOKEN" in answer.json()["error"]


def test_a_metrics_token_that_is_short_or_a_client_token_is_refused_without_quoting_it():
    for secret in ("short", RW):
        with pytest.raises(McpConfigError) as refused:
            HttpOptions(tokens=kip2cypher.mcp_server.parse_tokens(f"{RW}:rw"), metrics_token=secret).check()
        assert secret not in str(refused.value)
    assert METRICS_TOKEN not in repr(HttpOptions(metrics_token=METRICS_TOKEN))


# ---------------------------------------------------------------- the library face
def test_the_python_api_counts_in_the_library_registry(genesis, neo4j_server):
    python = {"interface": "python", "namespace": DEFAULT}

    def calls(tool, outcome):
        return metrics.sample("kip2cypher_calls_total", **python, tool=tool, outcome=outcome)

    def commands(tool, kind, outcome):
        return metrics.sample("kip2cypher_commands_total", **python, tool=tool, kind=kind, outcome=outcome)

    watched = [
        (calls, ("execute_kip_readonly", "ok")),
        (calls, ("execute_kip", "ok")),
        (calls, ("execute_kip_readonly", "KIP_1001")),
        (commands, ("execute_kip_readonly", "META", "ok")),
        (commands, ("execute_kip", "KML", "ok")),
        (commands, ("execute_kip_readonly", "KQL", "KIP_1001")),
    ]
    before = [count(*labels) for count, labels in watched]
    ok(genesis.execute_kip_readonly("DESCRIBE PRIMER"))
    ok(genesis.execute_kip(UPSERT, parameters={"name": "LibraryMetrics"}))
    assert genesis.execute_kip_readonly("FIND(?x WHERE {")["error"]["code"] == "KIP_1001"

    async def asynchronous():  # the asyncio face counts in the same place, the same way
        async with kip2cypher.connect_async(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database) as nexus:
            ok(await nexus.execute_kip_readonly("DESCRIBE PRIMER"))

    anyio.run(asynchronous)
    after = [count(*labels) for count, labels in watched]
    assert [a - b for a, b in zip(after, before)] == [2, 1, 1, 2, 1, 1]
    assert genesis.wait_for_embeddings(60)
    assert b"kip2cypher_calls_total" in metrics.exposition()


def test_the_library_registry_is_not_prometheus_global_one():
    from prometheus_client import REGISTRY

    assert metrics.registry is not REGISTRY
    assert REGISTRY.get_sample_value("kip2cypher_calls_total", {}) is None


def test_the_embedding_backlog_counts_committed_commands_until_their_pass_ends():
    pending = background.Pending()
    start = metrics.sample("kip2cypher_embedding_backlog")
    ctx = Context(Settings(), "2026-01-01T00:00:00.000Z")
    pending.add(ctx)
    pending.add(ctx)
    assert metrics.sample("kip2cypher_embedding_backlog") == start + 2
    assert len(pending.take()) == 1  # coalesced into one pass
    pending.add(ctx)  # committed while the pass runs: waits for the next one
    pending.done()
    assert metrics.sample("kip2cypher_embedding_backlog") == start + 1
    pending.take()
    pending.done()
    assert metrics.sample("kip2cypher_embedding_backlog") == start


def test_outcome_labels_are_a_closed_set():
    assert metrics.outcome({"result": []}) == "ok"
    assert metrics.outcome({"error": {"code": "KIP_2001"}}) == "KIP_2001"
    assert metrics.outcome({"error": {"code": "MATCH (n) DETACH DELETE n"}}) == "other"


# ---------------------------------------------------------------- OpenTelemetry
@pytest.fixture
def spans(monkeypatch):
    """An SDK tracer provider with an in-memory exporter, seen by kip2cypher.tracing only (the
    process-wide provider is left alone)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    return exporter


def test_a_request_is_one_span_with_a_child_span_per_statement_it_ran(genesis, spans, monkeypatch):
    ran = []
    prepare = loop._prepare

    def spy(request, settings, trace):  # observes what the loop sends to Neo4j; runs it unchanged
        if threading.current_thread() is threading.main_thread():  # not the background embedding refresh
            ran.append(request.statement.label)
        return prepare(request, settings, trace)

    monkeypatch.setattr(loop, "_prepare", spy)
    capsule = (
        'UPSERT { CONCEPT ?a { {type: "Domain", name: :name} } '
        'CONCEPT ?b { {type: "Domain", name: "TracedOther"} SET PROPOSITIONS { ("belongs_to_domain", ?a) } } }'
    )
    ok(genesis.execute_kip(capsule, parameters={"name": SECRET_VALUE}))
    first = list(ran)
    assert genesis.wait_for_embeddings(60)  # the refresh runs statements outside any request: no spans
    ran.clear()
    ok(genesis.execute_kip_readonly(commands=["DESCRIBE PRIMER", 'FIND(?d.name) WHERE { ?d {type: "Domain"} } LIMIT 3']))
    second = list(ran)
    finished = spans.get_finished_spans()
    requests = [span for span in finished if span.name == "kip2cypher.request"]
    assert [(r.attributes["kip2cypher.tool"], tuple(r.attributes["kip2cypher.kinds"]), r.attributes["kip2cypher.outcome"]) for r in requests] == [
        ("execute_kip", ("KML",), "ok"),
        ("execute_kip_readonly", ("META", "KQL"), "ok"),
    ]
    assert all(r.attributes["kip2cypher.namespace"] == "" and r.parent is None for r in requests)
    children = [span for span in finished if span.name == "kip2cypher.statement"]
    by_request = [[c.attributes["kip2cypher.statement"] for c in children if c.parent.span_id == r.context.span_id] for r in requests]
    assert by_request == [first, second] and len(children) == len(first) + len(second)
    assert "FIND" in second and len(first) > 1  # a capsule runs several statements
    for span in finished:
        assert SECRET_VALUE not in str(dict(span.attributes)) and "MATCH" not in str(dict(span.attributes))


def test_without_a_tracer_provider_or_without_the_package_nothing_is_created(monkeypatch):
    from opentelemetry import trace

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    assert tracing.request_span("execute_kip", "python", "") is None
    monkeypatch.setattr(tracing, "_trace", None)
    assert tracing.request_span("execute_kip", "python", "") is None
    assert tracing.statement(None, "FIND") is tracing.statement(None, "concepts")  # one shared no-op, no allocation


def test_a_call_cut_short_by_the_request_timeout_counts_as_cancelled(genesis, neo4j_server):
    commands = ['FIND(?d.name) WHERE { ?d {type: "$ConceptType"} }'] * 100

    async def body(session):
        return payload(await session.call_tool("execute_kip_readonly", {"commands": commands}))

    env = {"KIP2CYPHER_MCP_METRICS_TOKEN": METRICS_TOKEN}
    with http_server(neo4j_server, "--request-timeout", "0.001", env=env) as served:
        assert in_session(served.url, RO, body)["error"]["code"] == "KIP_4001"
        found = samples(httpx2.get(metrics_url(served), headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30).text)
    calls = {dict(labels)["outcome"]: v for (name, labels), v in found.items() if name == "kip2cypher_calls_total"}
    assert calls == {"cancelled": 1}

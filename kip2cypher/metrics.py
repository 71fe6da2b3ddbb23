"""Prometheus metrics of kip2cypher (docs/interfaces.md, "Operating the service" → "Metrics").

The counters live in a registry of their own (``registry``), not prometheus-client's global
one: an application that embeds kip2cypher decides whether and where to expose them
(``exposition()``, or ``prometheus_client.start_http_server(port, registry=registry)``); the HTTP
MCP server serves them at ``/metrics`` behind ``KIP2CYPHER_MCP_METRICS_TOKEN``. Every thing is
counted at the one place it happens — calls and latency in the nexus core's request drive
(``execution.core``), retries in the driver loop (``execution.loop``), the embedding backlog in
the background refresher, authentication failures in the MCP server — so the sync and the asyncio
face count alike and nothing twice.

Nothing secret reaches a label: label values come from closed sets (interface, tool, command
kind, KIP error code, access mode, failure reason) plus namespace names; never a token, a
query text or a parameter value.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from . import tracing

#: kip2cypher's own registry (never prometheus-client's global ``REGISTRY``).
registry = CollectorRegistry()

#: Content type of ``exposition()`` (the Prometheus text format).
CONTENT_TYPE = CONTENT_TYPE_LATEST

#: Latency buckets (seconds): a point read takes ~1 ms, a large capsule seconds, the request budget 120 s.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

CALLS = Counter(
    "kip2cypher_calls",
    "Function calls (execute_kip / execute_kip_readonly) answered, by interface, tool, namespace and outcome (KIP error code of the call, or ok).",
    ("interface", "tool", "namespace", "outcome"),
    registry=registry,
)
COMMANDS = Counter(
    "kip2cypher_commands",
    "KIP commands answered (each command of a batch once), by interface, tool, namespace, command kind and outcome (KIP error code, or ok).",
    ("interface", "tool", "namespace", "kind", "outcome"),
    registry=registry,
)
CALL_SECONDS = Histogram(
    "kip2cypher_call_duration_seconds",
    "Time to answer one function call, from its arguments to its response.",
    ("interface", "tool"),
    buckets=BUCKETS,
    registry=registry,
)
COMMAND_SECONDS = Histogram(
    "kip2cypher_command_duration_seconds",
    "Time one compiled command took to run on Neo4j (its transaction, retries included), by command kind.",
    ("kind",),
    buckets=BUCKETS,
    registry=registry,
)
TRANSIENT_ERRORS = Counter(
    "kip2cypher_neo4j_transient_errors",
    "Retryable Neo4j driver errors seen (unavailable server, fail-over, deadlock …), by transaction access (READ, WRITE, ADMIN).",
    ("access",),
    registry=registry,
)
RETRIES = Counter(
    "kip2cypher_neo4j_retries",
    "Transactions run again after a retryable Neo4j error, by transaction access (READ, WRITE, ADMIN).",
    ("access",),
    registry=registry,
)
SESSIONS = Gauge("kip2cypher_mcp_sessions", "Open MCP sessions of the HTTP MCP server.", registry=registry)
AUTH_FAILURES = Counter(
    "kip2cypher_auth_failures",
    "HTTP MCP server requests refused for their credentials, by reason (missing_token, invalid_token, insufficient_scope, metrics_token).",
    ("reason",),
    registry=registry,
)
EMBEDDING_BACKLOG = Gauge(
    "kip2cypher_embedding_backlog",
    "Committed KML commands whose SEARCH embeddings the background refresher has not written yet.",
    registry=registry,
)
EMBEDDING_FAILURES = Counter(
    "kip2cypher_embedding_refresh_failures",
    "Background embedding refresh passes that failed (the writes stand; sync_embeddings back-fills).",
    registry=registry,
)

#: ``interface`` label values: the MCP server's tool calls, or a Python caller (the library, the CLI).
MCP = "mcp"
PYTHON = "python"
_INTERFACE: contextvars.ContextVar[str] = contextvars.ContextVar("kip2cypher_interface", default=PYTHON)

#: An ``outcome`` label value: a KIP error code, ``ok``, or ``cancelled`` (the caller stopped
#: waiting: the MCP server's request timeout, a client that went away).
OK = "ok"
CANCELLED = "cancelled"
_CODE = re.compile(r"KIP_\d{4}")
#: ``namespace`` label value of the default namespace (whose name is ""; no namespace name has parentheses).
DEFAULT_NAMESPACE = "(default)"


@contextlib.contextmanager
def interface(name: str) -> Iterator[None]:
    """Calls made inside count under ``interface=name`` (the MCP server wraps its tool calls in it;
    a context variable, so it follows the call into the worker thread of a sync nexus)."""
    token = _INTERFACE.set(name)
    try:
        yield
    finally:
        _INTERFACE.reset(token)


@functools.lru_cache(maxsize=4096)
def _child(metric: Any, *labels: str) -> Any:
    """``metric.labels(*labels)``, looked up once: prometheus-client validates the labels at every
    call (≈ 5× the cost of the increment itself). Bounded: past 4096 combinations it looks up again."""
    return metric.labels(*labels)


def outcome(response: Any) -> str:
    """A response's ``outcome`` label: its error's KIP code, or ``ok``. A code that is not a KIP
    code (never expected) is ``other``: label values stay a closed set."""
    error = response.get("error") if isinstance(response, dict) else None
    if not error:
        return OK
    code = str(error.get("code", "")) if isinstance(error, dict) else ""
    return code if _CODE.fullmatch(code) else "other"


class Call:
    """One function call being answered: its labels, its clock and its OpenTelemetry span (None
    when no tracer is configured, ``tracing``). ``done`` counts it once, with its commands."""

    __slots__ = ("labels", "started", "span")

    def __init__(self, readonly: bool, namespace: str) -> None:
        tool = "execute_kip_readonly" if readonly else "execute_kip"
        self.labels = (_INTERFACE.get(), tool, namespace or DEFAULT_NAMESPACE)
        self.started = time.perf_counter()
        self.span = tracing.request_span(tool, self.labels[0], namespace)

    def command(self, kind: str, started: float) -> None:
        """A compiled command of this call ran (from ``started``, a ``time.perf_counter()``)."""
        _child(COMMAND_SECONDS, kind).observe(time.perf_counter() - started)

    def done(self, response: dict[str, Any] | None, commands: Iterable[Any]) -> None:
        """Count the call (``response`` None: the caller stopped waiting) and each command's
        outcome (``batch.Outcome``: its kind and response)."""
        answer = CANCELLED if response is None else outcome(response)
        _child(CALLS, *self.labels, answer).inc()
        kinds = []
        for each in commands:
            kinds.append(each.kind or "unknown")
            _child(COMMANDS, *self.labels, kinds[-1], outcome(each.response)).inc()
        _child(CALL_SECONDS, *self.labels[:2]).observe(time.perf_counter() - self.started)
        tracing.end_request(self.span, kinds, answer)


def transient(access: str, retried: bool) -> None:
    """A retryable Neo4j error under ``access``; ``retried``: the transaction runs again."""
    _child(TRANSIENT_ERRORS, access).inc()
    if retried:
        _child(RETRIES, access).inc()


def auth_failure(reason: str) -> None:
    _child(AUTH_FAILURES, reason).inc()


def exposition() -> bytes:
    """Every kip2cypher metric in the Prometheus text format (``CONTENT_TYPE``)."""
    return generate_latest(registry)


def sample(name: str, **labels: str) -> float:
    """The current value of one sample, e.g. ``sample("kip2cypher_calls_total", tool="execute_kip",
    interface="python", namespace="(default)", outcome="ok")``; 0.0 when it was never counted."""
    return registry.get_sample_value(name, labels) or 0.0

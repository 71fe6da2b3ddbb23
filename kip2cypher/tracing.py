"""Optional OpenTelemetry spans (docs/interfaces.md, "Operating the service" → "Traces").

With ``opentelemetry-api`` importable (the ``otel`` extra; the ``mcp`` SDK brings it too) and a
tracer provider configured by the application (an SDK ``TracerProvider``), each function call is
one span (``kip2cypher.request``: its tool, interface, namespace, command kinds and outcome code)
with one child span per Cypher statement it ran (``kip2cypher.statement``: the statement's label,
e.g. ``FIND`` or ``concepts`` — never its text or a parameter value). Without the package, or
without a configured provider, nothing is created: a call costs one ``isinstance``, a statement
one ``is None`` test.
"""

from __future__ import annotations

from typing import Any

try:
    from opentelemetry import trace as _trace
except ImportError:  # the `otel` extra is absent: no spans
    _trace = None  # type: ignore[assignment]

from .version import __version__

TRACER = "kip2cypher"


def _tracer() -> Any:
    """The configured tracer, or None when spans would go nowhere (no API, or no SDK provider set)."""
    if _trace is None:
        return None
    provider = _trace.get_tracer_provider()
    if isinstance(provider, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider)):
        return None
    return provider.get_tracer(TRACER, __version__)


def request_span(tool: str, interface: str, namespace: str) -> Any:
    """The span of one function call (a child of the caller's current span), or None."""
    tracer = _tracer()
    if tracer is None:
        return None
    attributes = {"kip2cypher.tool": tool, "kip2cypher.interface": interface, "kip2cypher.namespace": namespace}
    return tracer.start_span("kip2cypher.request", attributes=attributes)


def end_request(span: Any, kinds: list[str], outcome: str) -> None:
    """End a call's span with its command kinds and outcome (``metrics.outcome``)."""
    if span is None:
        return
    span.set_attribute("kip2cypher.kinds", kinds)
    span.set_attribute("kip2cypher.outcome", outcome)
    if outcome != "ok":
        span.set_status(_trace.Status(_trace.StatusCode.ERROR, outcome))
    span.end()


class _Statement:
    """A child span around one statement of the call whose span is ``parent``."""

    __slots__ = ("parent", "label", "span")

    def __init__(self, parent: Any, label: str) -> None:
        self.parent, self.label, self.span = parent, label, None

    def __enter__(self) -> None:
        context = _trace.set_span_in_context(self.parent)
        self.span = _tracer().start_span("kip2cypher.statement", context=context, attributes={"kip2cypher.statement": self.label})

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if error is not None:
            self.span.set_status(_trace.Status(_trace.StatusCode.ERROR, type(error).__name__))
        self.span.end()


class _Nothing:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_NOTHING = _Nothing()


def statement(parent: Any, label: str) -> Any:
    """``with statement(ctx.span, compiled.label):`` around a statement's run: a child span of
    ``parent``, nothing at all when the call has no span."""
    return _NOTHING if parent is None else _Statement(parent, label or "statement")

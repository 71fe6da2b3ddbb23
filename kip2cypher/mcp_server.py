"""`kip2cypher mcp`: an MCP server exposing execute_kip and execute_kip_readonly (spec §6).

Built on the official ``mcp`` SDK's low-level ``Server``, served over stdio (one local
client) or the SDK's streamable HTTP transport under uvicorn (a shared service for many
clients). Both tools take the §6.1 arguments; their input schema is generated from
``models.ExecuteArguments``. A call answers with the §6 response JSON as text content and as
structured content; ``isError`` is set when the whole request failed (a top-level ``error``).
``kip2cypher mcp`` serves an ``AsyncNexus`` (``LoopNexus``: one per namespace, one driver):
a call awaits Neo4j on the event loop, and only a command's CPU work runs in a worker thread,
so one slow query never stalls the protocol loop.

Over HTTP every request needs ``Authorization: Bearer <token>`` (the SDK's bearer middleware,
static tokens checked here in constant time, OAuth JWTs by ``mcp_auth``): an ``rw`` token
(scope ``kip:write``) may use both tools, an ``ro`` token (``kip:read``) sees and may call only
execute_kip_readonly. ``/healthz`` and ``/readyz`` answer probes without a token. docs/interfaces.md ("MCP over HTTP") has the whole
security model and its limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import inspect
import ipaddress
import json
import logging
import socket
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from . import connection, mcp_auth, metrics
from .async_nexus import AsyncNexus
from .cypher import storage
from .errors import EXECUTION_TIMEOUT, IMMUTABLE_TARGET, INTERNAL_ERROR, INVALID_SYNTAX, NOT_FOUND, RESOURCE_EXHAUSTED, KipError
from .execution.calls import Call
from .execution.neo4j_errors import DRIVER_ERRORS, unavailable
from .mcp_auth import NAMESPACE_SCOPE, READ_SCOPE, WRITE_SCOPE, JwtConfigError, JwtOptions
from .models import tool_input_schema, tool_output_schema
from .syntax.ast import KML, KQL, META, READ_WORDS, WRITE_WORDS, command_words, listing
from .version import __version__

log = logging.getLogger("kip2cypher.mcp")

EXECUTE_KIP = "execute_kip"
EXECUTE_KIP_READONLY = "execute_kip_readonly"

_PROTOCOL = (
    "KIP is a graph language for your long-term memory (a Cognitive Nexus of concept nodes {type, name} and "
    'proposition links (subject, "predicate", object)). Ground yourself first: DESCRIBE PRIMER, DESCRIBE CONCEPT TYPES, '
    'DESCRIBE CONCEPT TYPE "Drug", SEARCH CONCEPT "aspirin" LIMIT 5. Query with '
    'FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", {type: "Symptom", name: :s}) } LIMIT 20 — '
    "type names are UpperCamelCase, predicates snake_case, both case-sensitive. "
    "Pass values as :placeholders in `parameters` (whole value positions only, never inside quotes). "
    "Send one `command` or a `commands` array (≤256) to save round trips. "
    "Errors come back as {code, message, hint}: follow the hint and retry. "
    'Results with next_cursor continue with CURSOR "<token>".'
)


def _words(kind: str) -> str:
    """The command words of ``kind`` as the tool descriptions list them (``syntax.ast.COMMANDS``)."""
    return " / ".join(command_words(kind))


DESCRIPTIONS = {
    EXECUTE_KIP: (
        f"Execute KIP commands against the Cognitive Nexus with read-write capability: KQL {_words(KQL)}, KML {_words(KML)} "
        f"(to solidify new, confirmed knowledge), META {_words(META)}. "
        + _PROTOCOL
        + " In a batch, a failing KML command stops the rest; read and syntax errors are returned inline. "
        "Use dry_run: true to validate writes against the live schema without writing."
    ),
    EXECUTE_KIP_READONLY: (
        f"Execute read-only KIP commands — KQL {_words(KQL)} and META {_words(META)} — against the Cognitive Nexus. "
        f"Prefer this tool whenever you only need to retrieve knowledge; any {'/'.join(WRITE_WORDS)} is rejected "
        "(KIP_3004) before anything runs. " + _PROTOCOL
    ),
}

INSTRUCTIONS = (
    "This server is a KIP (Knowledge Interaction Protocol v1.0-RC10) Cognitive Nexus backed by Neo4j. "
    'Start a session with execute_kip_readonly {"command": "DESCRIBE PRIMER"} to learn who you are and which '
    "knowledge domains exist; explore with DESCRIBE/SEARCH, read with FIND, and write confirmed new knowledge with "
    "execute_kip UPSERT."
)


def tools(readonly: bool = False) -> list[types.Tool]:
    """The tool definitions; ``readonly`` exposes only execute_kip_readonly."""
    schema = tool_input_schema()
    output = tool_output_schema()
    out = [
        types.Tool(
            name=EXECUTE_KIP_READONLY,
            title="Execute KIP (read-only)",
            description=DESCRIPTIONS[EXECUTE_KIP_READONLY],
            input_schema=schema,
            output_schema=output,
            annotations=types.ToolAnnotations(title="Execute KIP (read-only)", read_only_hint=True, open_world_hint=False, idempotent_hint=True),
        )
    ]
    if not readonly:
        out.insert(
            0,
            types.Tool(
                name=EXECUTE_KIP,
                title="Execute KIP",
                description=DESCRIPTIONS[EXECUTE_KIP],
                input_schema=schema,
                output_schema=output,
                annotations=types.ToolAnnotations(
                    title="Execute KIP", read_only_hint=False, destructive_hint=True, open_world_hint=False, idempotent_hint=False
                ),
            ),
        )
    return out


#: Seconds one tool call may take before it answers KIP_4001 (``--request-timeout``).
DEFAULT_REQUEST_TIMEOUT_S = 120.0
#: Largest HTTP request body: the 256 KiB command bound, JSON escaping, and room for parameters.
DEFAULT_MAX_REQUEST_BYTES = 2 * 1024 * 1024


def build_server(nexus: Any, *, readonly: bool = False, request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, tokens_required: bool = False) -> Server:
    """An MCP server answering tool calls with ``nexus`` (anything with ``execute(arguments, readonly=)``).

    ``readonly`` limits the whole server to execute_kip_readonly; over authenticated HTTP
    (``tokens_required``) an ``ro`` token limits its own requests the same way (``_may_write``).
    """

    listed = {True: tools(True), False: tools(readonly)}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed[not _may_write(ctx, tokens_required)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        namespace = namespace_of(ctx)
        tool = params.name if params.name in (EXECUTE_KIP, EXECUTE_KIP_READONLY) else "unknown"  # caller text stays out of the log
        call = Call(client_of(ctx), tool, namespace if namespace is not None else getattr(nexus, "namespace", ""))
        response = await answer(ctx, params, namespace, call)
        call.log(response)
        if hasattr(nexus, "observe"):
            nexus.observe(call)
        return to_call_result(response)

    async def answer(ctx: Any, params: types.CallToolRequestParams, namespace: str | None, call: Call) -> dict[str, Any]:
        if params.name not in (EXECUTE_KIP, EXECUTE_KIP_READONLY) or (readonly and params.name == EXECUTE_KIP):
            return unknown_tool(params.name, readonly)
        if params.name == EXECUTE_KIP and not _may_write(ctx, tokens_required):
            metrics.auth_failure("insufficient_scope")
            return {"error": _read_only_token_error().to_dict()}
        arguments = params.arguments if params.arguments is not None else {}
        target = nexus if namespace is None else nexus.for_namespace(namespace)
        with metrics.interface(metrics.MCP):
            return await _call_with_timeout(target, arguments, params.name == EXECUTE_KIP_READONLY, request_timeout_s, call)

    return Server(
        "kip2cypher",
        version=__version__,
        title="KIP Cognitive Nexus on Neo4j",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=lambda name: tool_input_schema() if name in (EXECUTE_KIP, EXECUTE_KIP_READONLY) else None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _may_write(ctx: Any, tokens_required: bool) -> bool:
    """Whether this request may use execute_kip: its bearer token holds the write scope. Without
    tokens (stdio, or HTTP with --no-auth on loopback) the server's own --readonly decides. Fails
    closed: with tokens required, a request whose token cannot be found here may not write (the
    SDK's middleware has already answered 401 to a request without a valid token)."""
    user = _user(ctx)
    if user is not None:
        return WRITE_SCOPE in user.scopes
    return not tokens_required


def namespace_of(ctx: Any) -> str | None:
    """The namespace this request's bearer token is bound to (None: the server's own)."""
    user = _user(ctx)
    for scope in user.scopes if user is not None else ():
        if scope.startswith(NAMESPACE_SCOPE):
            return scope[len(NAMESPACE_SCOPE) :]
    return None


#: The client of a request without a bearer token (stdio, or HTTP with --no-auth).
UNAUTHENTICATED = "unauthenticated"


def client_of(ctx: Any) -> str:
    """Who sent this request, as the access line and the transaction metadata name it: a static
    token's label (``token #2``), a JWT's subject (else its client id) — never the token itself."""
    user = _user(ctx)
    if user is None:
        return UNAUTHENTICATED
    return str(user.access_token.subject or user.access_token.client_id)


def _user(ctx: Any) -> Any:
    """The SDK's ``AuthenticatedUser`` of this request (None: no bearer token was checked)."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    request = getattr(ctx, "request", None)
    user = request.scope.get("user") if request is not None and hasattr(request, "scope") else None
    return user if isinstance(user, AuthenticatedUser) else None


def _read_only_token_error() -> KipError:
    return KipError(
        IMMUTABLE_TARGET,
        "This client's token is read-only (ro): it may call execute_kip_readonly only; nothing was executed.",
        f"Send {listing(READ_WORDS)} through execute_kip_readonly. Writes need a token with rw access from the server's administrator.",
    )


async def _call_with_timeout(nexus: Any, arguments: Any, readonly: bool, timeout_s: float, call: Call) -> dict[str, Any]:
    """Run the call (recorded in ``call``); past ``timeout_s`` answer KIP_4001 instead of waiting.

    With an ``AsyncNexus`` (what ``kip2cypher mcp`` serves) the call is cancelled at the
    deadline: the driver rolls the open transaction back. A synchronous nexus runs in a worker
    thread, which cannot be interrupted: it finishes the transaction it is in (each bounded by
    ``Settings.query_timeout_s``), so a batch past the deadline may still complete commands.
    """
    with anyio.move_on_after(timeout_s or None):
        # An AsyncNexus's methods return awaitables without being coroutine functions (one Face
        # class under both faces); a namespace's view (``LoopNexus.for_namespace``) has a coroutine ``execute``.
        if inspect.iscoroutinefunction(nexus.execute) or isinstance(nexus, AsyncNexus):
            return await _acall(nexus, arguments, readonly, call)
        return await anyio.to_thread.run_sync(_call, nexus, arguments, readonly, call, abandon_on_cancel=True)
    return {
        "error": KipError(
            EXECUTION_TIMEOUT,
            f"The request did not finish within the server's request timeout ({timeout_s:g} s); its open transaction was rolled back.",
            "Send fewer commands per request, lower LIMIT, or narrow the pattern; re-read (FIND) before repeating a write.",
        ).to_dict()
    }


async def _acall(nexus: Any, arguments: Any, readonly: bool, call: Call) -> dict[str, Any]:
    try:
        return await nexus.execute(arguments, readonly=readonly, call=call)
    except Exception as exc:  # noqa: BLE001 - the protocol loop must never see an exception
        log.exception("tool call failed")
        return {"error": KipError(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}").to_dict()}


def _call(nexus: Any, arguments: Any, readonly: bool, call: Call) -> dict[str, Any]:
    try:
        return nexus.execute(arguments, readonly=readonly, call=call)
    except Exception as exc:  # noqa: BLE001 - the protocol loop must never see an exception
        log.exception("tool call failed")
        return {"error": KipError(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}").to_dict()}


def unknown_tool(name: str, readonly: bool) -> dict[str, Any]:
    available = EXECUTE_KIP_READONLY if readonly else f"{EXECUTE_KIP}, {EXECUTE_KIP_READONLY}"
    return {"error": KipError(INVALID_SYNTAX, f"Unknown tool {name!r}.", f"Available tools: {available}.").to_dict()}


def to_call_result(response: dict[str, Any]) -> types.CallToolResult:
    """The §6 response as MCP tool output: JSON text plus the same object as structured content."""
    text = json.dumps(response, ensure_ascii=False, default=str)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=json.loads(text),
        is_error="error" in response,
    )


# ---------------------------------------------------------------- bearer tokens
class McpConfigError(ValueError):
    """A server option that cannot work (no token for HTTP, a malformed token entry, a busy port…).

    Messages name the entry (``KIP2CYPHER_MCP_TOKENS`` entry 2, line 3 of FILE), never a token.
    """


@dataclass(frozen=True)
class Token:
    """One configured bearer token. ``label`` (``token #2``) identifies it in logs and in the SDK's
    session ownership; the secret itself is compared and never stored elsewhere."""

    secret: str = field(repr=False)
    access: str  # "rw" | "ro"
    label: str
    #: The namespace this token is bound to (``token:rw:alice``); None: the server's own
    #: (``--namespace``, default the default namespace).
    namespace: str | None = None

    @property
    def scopes(self) -> list[str]:
        """The SDK scopes: access, and the bound namespace as ``kip:namespace:<name>``."""
        scopes = [READ_SCOPE, WRITE_SCOPE] if self.access == "rw" else [READ_SCOPE]
        return scopes + ([NAMESPACE_SCOPE + self.namespace] if self.namespace is not None else [])


#: Shortest accepted token: 16 characters (`secrets.token_urlsafe(32)` gives 43).
MIN_TOKEN_CHARS = 16


def parse_tokens(env_value: str | None = None, file_path: str | None = None) -> list[Token]:
    """Tokens from ``KIP2CYPHER_MCP_TOKENS`` (``token:rw,token:ro``) and/or a tokens file
    (``token rw|ro`` a line, ``#`` comments). An optional third field binds the token to a
    namespace (``token:rw:alice``, ``token rw alice``): its requests reach that namespace's
    nexus and no other."""
    entries: list[tuple[list[str], str]] = []
    for index, item in enumerate((env_value or "").split(","), start=1):
        if item.strip():
            entries.append((item.strip().split(":"), f"KIP2CYPHER_MCP_TOKENS entry {index}"))
    if file_path:
        try:
            lines = open(file_path, encoding="utf-8").read().splitlines()
        except OSError as exc:
            raise McpConfigError(f"Cannot read the tokens file {file_path}: {exc.strerror}") from None
        for number, line in enumerate(lines, start=1):
            text = line.split("#", 1)[0].strip()
            if text:
                entries.append((text.split(), f"line {number} of {file_path}"))
    tokens: list[Token] = []
    for fields, where in entries:
        tokens.append(_token(fields, where, len(tokens) + 1))
    secrets_seen = [t.secret for t in tokens]
    if len(set(secrets_seen)) != len(secrets_seen):
        raise McpConfigError("The same token is configured twice; give every client its own token.")
    return tokens


def _token(fields: list[str], where: str, number: int) -> Token:
    if len(fields) not in (2, 3) or fields[1] not in ("rw", "ro"):
        raise McpConfigError(
            f"{where}: expected a token, its access (rw or ro) and optionally a namespace "
            "(`token:rw[:namespace]` in KIP2CYPHER_MCP_TOKENS, `token rw [namespace]` in a file)."
        )
    namespace = fields[2] if len(fields) == 3 else None
    if namespace is not None and not storage.NAMESPACE_RE.match(namespace):
        raise McpConfigError(f"{where}: the namespace must be lower-case letters, digits and '_', starting with a letter, at most 32 characters.")
    secret = fields[0]
    if len(secret) < MIN_TOKEN_CHARS or not secret.isascii() or not secret.isprintable() or any(c in secret for c in " ,:#"):
        raise McpConfigError(
            f"{where}: a token must be at least {MIN_TOKEN_CHARS} printable ASCII characters without spaces, ',', ':' or '#' "
            "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')."
        )
    return Token(secret, fields[1], f"token #{number}", namespace)


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for a fixed list of tokens.

    Every configured token is compared with ``hmac.compare_digest`` (no early exit), so the time
    taken does not reveal which token, or how much of one, matched. The ``AccessToken`` handed to
    the SDK carries the token's label, not its secret.
    """

    def __init__(self, tokens: list[Token]) -> None:
        self._tokens = [(t.secret.encode(), t) for t in tokens]

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        presented = token.encode("utf-8", "surrogatepass")
        found = None
        for secret, entry in self._tokens:
            if hmac.compare_digest(presented, secret):
                found = entry
        if found is None:
            return None
        return AccessToken(token=found.label, client_id=found.label, scopes=found.scopes)


# ---------------------------------------------------------------- HTTP
@dataclass
class HttpOptions:
    """How ``kip2cypher mcp --transport http`` listens and whom it lets in."""

    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    tokens: list[Token] = field(default_factory=list)
    no_auth: bool = False
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    #: OAuth resource-server mode: JWT access tokens checked against a JWKS (``mcp_auth``).
    jwt: JwtOptions | None = None
    #: This endpoint's public URL (``--resource-url``): the RFC 9728 ``resource`` and the default
    #: JWT audience. None: ``http://<bound host>:<port><path>`` (``resolve_resource_url``).
    resource_url: str | None = None
    #: The bearer token ``GET /metrics`` needs (``KIP2CYPHER_MCP_METRICS_TOKEN``); None: /metrics is off.
    metrics_token: str | None = field(default=None, repr=False)

    @property
    def authenticated(self) -> bool:
        return bool(self.tokens) or self.jwt is not None

    def check(self) -> None:
        """Refuse to serve without authentication unless explicitly asked, and only on loopback."""
        if self.authenticated and self.no_auth:
            raise McpConfigError("--no-auth and configured tokens (or --jwks) contradict each other; drop one.")
        if not self.authenticated and not self.no_auth:
            raise McpConfigError(
                "HTTP needs bearer tokens: set KIP2CYPHER_MCP_TOKENS='<token>:rw,<token>:ro' or --tokens-file FILE "
                "(`<token> rw|ro` a line), and/or accept OAuth JWTs with --jwks and --jwt-issuer. Only on a loopback host may --no-auth serve without them."
            )
        if self.jwt is not None:
            try:
                self.jwt.check()
            except JwtConfigError as exc:
                raise McpConfigError(str(exc)) from None
            if self.resource_url is None and self.host in ("0.0.0.0", "::"):
                raise McpConfigError(
                    "--jwks on every interface needs --resource-url (KIP2CYPHER_MCP_RESOURCE_URL): the public URL clients reach this endpoint at "
                    "(the tokens' audience and the protected-resource metadata's `resource`)."
                )
        if self.resource_url is not None and not self.resource_url.startswith(("https://", "http://")):
            raise McpConfigError(f"--resource-url must be an http(s) URL: {self.resource_url!r}.")
        if self.no_auth and not is_loopback(self.host):
            raise McpConfigError(f"--no-auth is only allowed on a loopback host (127.0.0.1, ::1, localhost), not {self.host!r}.")
        if not self.path.startswith("/"):
            raise McpConfigError(f"--path must start with '/': {self.path!r}.")
        if self.metrics_token is not None:
            _check_metrics_token(self.metrics_token, self.tokens)
        if self.path.rstrip("/") in (HEALTH_PATH, READY_PATH, METRICS_PATH) or self.path.startswith(mcp_auth.WELL_KNOWN):
            raise McpConfigError(f"--path {self.path!r} is taken by a probe or the OAuth metadata; choose another (the default is /mcp).")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(options: HttpOptions) -> Any:
    """DNS-rebinding protection, always on: the Host header must name this server (the bind host,
    or loopback names) or one of ``--allowed-hosts``; a browser Origin must be in ``--allowed-origins``
    or a loopback origin."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    bind = options.host if ":" not in options.host else f"[{options.host.strip('[]')}]"
    if not is_loopback(options.host) and options.host not in ("0.0.0.0", "::"):
        hosts.append(f"{bind}:*")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts + list(options.allowed_hosts),
        allowed_origins=origins + list(options.allowed_origins),
    )


def http_app(server: Server, options: HttpOptions, nexus: Any = None, ready: Callable[[], None] | None = None) -> Any:
    """The Starlette app: the SDK's streamable-HTTP session manager behind the SDK's bearer-token
    middleware (static tokens and/or JWTs; with JWTs also the RFC 9728 metadata route) and a
    request-size check that answers KIP_4002."""
    from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.routing import Route

    manager = StreamableHTTPSessionManager(app=server, security_settings=transport_security(options), max_request_body_size=options.max_request_bytes)
    endpoint: Any = _BodySizeLimit(StreamableHTTPASGIApp(manager), options.max_request_bytes)
    middleware, routes = [], []
    if options.authenticated:
        verifiers: list[Any] = [StaticTokenVerifier(options.tokens)] if options.tokens else []
        metadata_url = None
        if options.jwt is not None:
            resource = options.resource_url or ""
            verifiers.append(_jwt_verifier(options.jwt, resource))
            routes, metadata_url = mcp_auth.metadata_routes(resource, options.jwt.issuer)
        endpoint = mcp_auth.RequireAuth(endpoint, [READ_SCOPE], metadata_url)
        middleware = [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(mcp_auth.AnyVerifier(*verifiers))),
            Middleware(AuthContextMiddleware),
        ]
    routes += [
        Route(options.path, endpoint=endpoint),
        Route(HEALTH_PATH, endpoint=_health(manager), methods=["GET"]),
        Route(READY_PATH, endpoint=_readiness(nexus), methods=["GET"]),
        Route(METRICS_PATH, endpoint=_metrics(options.metrics_token), methods=["GET"]),
    ]
    metrics.SESSIONS.set_function(lambda: len(getattr(manager, "_server_instances", {})))
    return Starlette(routes=routes, middleware=middleware, lifespan=lambda app: _lifespan(manager, nexus, ready))


def _jwt_verifier(jwt: JwtOptions, resource_url: str) -> Any:
    """The JWT verifier; its audience is ``--jwt-audience`` or else this endpoint's resource URL."""
    try:
        return mcp_auth.JwtVerifier(jwt, jwt.audience or (resource_url,))
    except JwtConfigError as exc:
        raise McpConfigError(str(exc)) from None


def resolve_resource_url(options: HttpOptions, host: str, port: int) -> HttpOptions:
    """``options`` with ``resource_url`` set: as configured, or this endpoint on the bound address."""
    if options.resource_url is not None or options.jwt is None:
        return options
    shown = f"[{host}]" if ":" in host else host
    return dataclasses.replace(options, resource_url=f"http://{shown}:{port}{options.path}")


#: Liveness endpoint for load balancers and operators (no token needed; says nothing about data).
HEALTH_PATH = "/healthz"


def _health(manager: Any) -> Callable[[Any], Any]:
    """``GET /healthz`` → ``{"status": "ok", "sessions": <open MCP sessions>, "version"}``. The
    session count reads the SDK session manager's table of open sessions (closed by the client's
    DELETE, or by the SDK after ``session_idle_timeout``, 30 min): a count that only grows under
    steady traffic is a session leak (tests/test_reliability_service.py)."""
    from starlette.responses import JSONResponse

    async def health(request: Any) -> Any:
        sessions = len(getattr(manager, "_server_instances", {}))
        return JSONResponse({"status": "ok", "sessions": sessions, "version": __version__})

    return health


#: Prometheus endpoint (docs/interfaces.md, "Metrics"): ``Authorization: Bearer <KIP2CYPHER_MCP_METRICS_TOKEN>``.
METRICS_PATH = "/metrics"


def _check_metrics_token(secret: str, tokens: list[Token]) -> None:
    """The metrics token: as long and as plain as a client token, and none of them (a scraper
    holding it must not be able to call a tool)."""
    if len(secret) < MIN_TOKEN_CHARS or not secret.isascii() or not secret.isprintable() or " " in secret:
        raise McpConfigError(
            f"KIP2CYPHER_MCP_METRICS_TOKEN must be at least {MIN_TOKEN_CHARS} printable ASCII characters without spaces "
            "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')."
        )
    if any(hmac.compare_digest(secret.encode(), token.secret.encode()) for token in tokens):
        raise McpConfigError("KIP2CYPHER_MCP_METRICS_TOKEN is also a client token of KIP2CYPHER_MCP_TOKENS / the tokens file; give the scraper its own.")


def _metrics(secret: str | None) -> Callable[[Any], Any]:
    """``GET /metrics`` → kip2cypher's metrics in the Prometheus text format (``metrics.exposition``),
    for a request bearing the metrics token (compared in constant time); 401 otherwise (counted as
    an authentication failure, reason ``metrics_token``); 404 saying how to turn it on when no
    metrics token is configured."""
    from starlette.responses import JSONResponse, Response

    expected = f"Bearer {secret}".encode() if secret is not None else None

    async def serve(request: Any) -> Any:
        if expected is None:
            return JSONResponse({"error": 'metrics are off: set KIP2CYPHER_MCP_METRICS_TOKEN to serve them here (docs/interfaces.md, "Metrics")'}, 404)
        presented = request.headers.get("authorization", "").encode("utf-8", "surrogatepass")
        if not hmac.compare_digest(presented, expected):
            metrics.auth_failure("metrics_token")
            return JSONResponse({"error": "send Authorization: Bearer <the metrics token>"}, 401, headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
        return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)

    return serve


#: Readiness endpoint (no token): 200 once Neo4j answers and every served namespace is bootstrapped.
READY_PATH = "/readyz"
#: Seconds the readiness check waits for Neo4j before answering 503.
READY_TIMEOUT_S = 2.0


def _readiness(nexus: Any) -> Callable[[Any], Any]:
    """``GET /readyz`` → 200 ``{"status": "ready", "namespaces": [...]}``, or 503 ``{"status":
    "unready", "reason": ...}`` when Neo4j does not answer within ``READY_TIMEOUT_S`` or a served
    namespace was never bootstrapped (``LoopNexus.unready``). Liveness is /healthz: it never
    touches Neo4j, so a Neo4j outage takes the pod out of the Service without restarting it."""
    from starlette.responses import JSONResponse

    async def ready(request: Any) -> Any:
        reason = await nexus.unready() if nexus is not None else None
        if reason is not None:
            return JSONResponse({"status": "unready", "reason": reason, "version": __version__}, status_code=503)
        return JSONResponse({"status": "ready", "namespaces": nexus.served_namespaces() if nexus is not None else [], "version": __version__})

    return ready


@contextlib.asynccontextmanager
async def _lifespan(manager: Any, nexus: Any, ready: Callable[[], None] | None = None) -> Any:
    """The session manager's task group, and the nexus opened in uvicorn's own loop; ``ready``
    is called once both are up (the "listening on" line: a client that waits for it is served
    at once, not queued behind the server's start-up)."""
    async with manager.run():
        if nexus is not None and hasattr(nexus, "start"):
            await nexus.start()
        if ready is not None:
            ready()
        try:
            yield
        finally:
            if nexus is not None and hasattr(nexus, "start"):
                await nexus.close()


class _BodySizeLimit:
    """Refuse a request whose declared Content-Length exceeds the limit, before reading or
    parsing it, with a JSON-RPC error carrying KIP_4002 (the SDK client surfaces it as the
    call's error). Bodies without a Content-Length are bounded by the SDK's own check (HTTP 413)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            error = KipError(
                RESOURCE_EXHAUSTED,
                f"The request body is {int(declared)} bytes; this server accepts at most {self.limit} (a command may be 256 KiB of text, plus its parameters).",
                "Split the batch into several requests, or pass large values as parameters of separate commands.",
            )
            body = json.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": f"{error.code}: {error.message}", "data": error.to_dict()}}
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: an ephemeral one), so the address can be printed before serving.

    ``proto=IPPROTO_TCP`` matters: asyncio sets TCP_NODELAY only on sockets that say so, and
    without it every SSE answer waited ~40 ms for a delayed ACK (Nagle): 48 → 3 ms a call."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise McpConfigError(f"Cannot listen on {host}:{port}: {exc.strerror}.") from None
    return sock


def serve_http(server: Server, options: HttpOptions, *, announce: Callable[[str], None], nexus: Any = None) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn's graceful shutdown)."""
    import uvicorn

    sock = bind(options.host, options.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    options = resolve_resource_url(options, host, port)
    access = (
        f"{len(options.tokens)} bearer token(s): {sum(t.access == 'rw' for t in options.tokens)} rw, {sum(t.access == 'ro' for t in options.tokens)} ro"
        if options.tokens
        else "NO AUTHENTICATION (--no-auth, loopback only)"
        if not options.authenticated
        else "no static token"
    )
    if options.jwt is not None:
        access += f"; OAuth JWTs of {options.jwt.issuer} for {options.resource_url}"
    if options.host in ("0.0.0.0", "::") and not options.allowed_hosts:
        announce("warning: bound to every interface, but only loopback Host headers are accepted; name this server's public host:port in --allowed-hosts.")
    listening = f"kip2cypher MCP (streamable HTTP) listening on http://{shown}:{port}{options.path} — {access}"
    # log_config=None: uvicorn's records go through the handler ``logs.configure`` set (its format, text or json).
    config = uvicorn.Config(http_app(server, options, nexus, ready=lambda: announce(listening)), log_level="warning", log_config=None, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


async def serve_stdio(nexus: Any, *, readonly: bool = False, request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> None:
    """Serve one MCP client over stdin/stdout until it disconnects.

    The SDK's stdio transport drops a line it cannot validate as a JSON-RPC message (the client
    waited forever); ``_answer_invalid`` answers it instead, as the HTTP transport does."""
    import io
    import os

    from mcp.server.stdio import stdio_server

    server = build_server(nexus, readonly=readonly, request_timeout_s=request_timeout_s)
    stdin = _LastLine(anyio.wrap_file(io.TextIOWrapper(os.fdopen(os.dup(sys.stdin.fileno()), "rb"), encoding="utf-8", errors="replace")))
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        valid, valid_reader = anyio.create_memory_object_stream(0)
        async with anyio.create_task_group() as group:
            group.start_soon(_answer_invalid, read_stream, valid, write_stream, stdin)
            await server.run(valid_reader, write_stream, server.create_initialization_options())


class _LastLine:
    """stdin's lines, remembering the last one read: the transport reads a line, fails to
    validate it and hands the error on before it reads the next, so the line is at hand."""

    def __init__(self, lines: Any) -> None:
        self.lines, self.last = lines, ""

    async def __aiter__(self) -> Any:
        async for line in self.lines:
            self.last = line
            yield line


async def _answer_invalid(incoming: Any, valid: Any, write_stream: Any, stdin: _LastLine) -> None:
    """Pass valid messages on; answer each line the transport could not read with a JSON-RPC
    error: -32700 (not JSON) with id null, or -32600 (not a valid request) with its id if it has one."""
    from mcp.shared.message import SessionMessage

    async with valid:
        async for item in incoming:
            if not isinstance(item, Exception):
                await valid.send(item)
                continue
            code, message, request_id = _invalid(stdin.last, item)
            log.warning("refused an invalid JSON-RPC message (%s): %s", code, message)
            error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
            await write_stream.send(SessionMessage(error))


def _invalid(line: str, exc: Exception) -> tuple[int, str, Any]:
    """(JSON-RPC error code, message, request id or None) for a line the transport refused with ``exc``."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as parse_error:
        reason = "nested too deeply" if isinstance(parse_error, RecursionError) else str(parse_error)[:200]
        return types.PARSE_ERROR, f"Parse error: the line is not JSON ({reason}).", None
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        request_id = None
    errors = getattr(exc, "errors", None)
    reason = errors()[0]["msg"] if callable(errors) and errors() else str(exc)
    return types.INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 request or notification of this protocol ({reason[:200]}).", request_id


class LoopNexus:
    """An ``AsyncNexus`` opened inside the event loop that serves it (its driver belongs to that
    loop): ``start`` opens it (and bootstraps when asked), ``execute`` delegates, ``close`` closes.

    ``for_namespace`` gives the view of another namespace, whose nexus shares the driver (one
    connection pool, one circuit breaker for every namespace a token is bound to). With
    ``bootstrap``, the namespaces an ``rw`` token is bound to are bootstrapped at start, in the
    background, so their first call is as fast as any other, and a namespace found without its nexus (never
    bootstrapped — a JWT's namespace claim —, or dropped while the server runs) is bootstrapped by
    the next execute_kip call, which then runs. A read-only call never creates a namespace: it
    answers KIP_3002 naming the fix (``core.no_nexus``); nor does any call of a server started
    without ``bootstrap`` (``--readonly`` cannot be combined with it)."""

    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        bootstrap: bool = False,
        capsules: bool = False,
        profile: str | None = None,
        namespaces: Iterable[str] = (),
        writable: Iterable[str] = (),
    ) -> None:
        self._factory, self._bootstrap, self._capsules, self._profile = factory, bootstrap, capsules, profile
        self._nexus: Any = None
        self._namespaces: dict[str, Any] = {}
        self._opening, self._bootstrapping = anyio.Lock(), anyio.Lock()
        #: Neo4j's state as the calls and probes see it (one WARNING when down, one INFO when back)
        self.neo4j = connection.Availability()
        #: The namespaces static tokens are bound to: checked by the readiness probe, beside the
        #: server's own; those of an ``rw`` token (``writable``) are bootstrapped at start.
        self._bound = sorted(set(namespaces) | set(writable))
        self._writable = sorted(set(writable))
        self._background: asyncio.Task | None = None
        #: the namespaces whose bootstrap (at start, or by a call) has finished
        self._booted: set[str | None] = set()

    async def start(self) -> None:
        """Open the served nexus (and bootstrap it, with ``bootstrap``); the namespaces of ``rw``
        tokens are bootstrapped in the background, so the server listens at once (/readyz says
        when they are done; a call that needs one first waits for it)."""
        self._nexus = self._factory()
        if self._bootstrap:
            await _bootstrap_quietly(self._nexus, self._capsules, self._profile)
            self._background = asyncio.create_task(self._bootstrap_writable())

    async def _bootstrap_writable(self) -> None:
        for namespace in self._writable:
            await self._bootstrap_once(await self._open(namespace), namespace)

    @property
    def namespace(self) -> str:
        """The server's own namespace ("" = the default one)."""
        return self._nexus.settings.namespace

    def observe(self, call: Call) -> None:
        """A tool call's outcome, as far as Neo4j's availability goes (``connection.Availability``)."""
        self.neo4j.seen(call.answered, self._nexus.uri, call.outage)

    def served_namespaces(self) -> list[str]:
        """The server's own namespace ("" = the default one) and the token-bound ones."""
        return sorted({self._nexus.settings.namespace, *self._bound}) if self._nexus is not None else []

    async def unready(self) -> str | None:
        """None when Neo4j answers a read of every served namespace's nexus node within
        ``READY_TIMEOUT_S`` and each was bootstrapped; else why not (no credentials in it)."""
        if self._nexus is None:
            return "starting: the nexus is not open yet"
        try:
            with anyio.fail_after(READY_TIMEOUT_S):
                layouts = await self._nexus.layouts(self.served_namespaces())
            missing = [ns for ns, layout in layouts.items() if layout is None]
        except TimeoutError:
            return f"Neo4j at {self._nexus.uri} did not answer within {READY_TIMEOUT_S:g} s"  # slow is not down: no outage logged
        except KipError as exc:
            return self._down(exc.message) if unavailable(exc) else exc.message
        except (*DRIVER_ERRORS, OSError) as exc:
            return self._down(connection.unreachable(self._nexus.uri, exc).message)
        self.neo4j.seen(True, self._nexus.uri)
        if missing:
            shown = ", ".join(ns or "(default)" for ns in missing)
            return f"namespace(s) {shown} not bootstrapped: run `kip2cypher bootstrap --namespace <name>` (or serve with --bootstrap)"
        return None

    def _down(self, reason: str) -> str:
        """A readiness probe found Neo4j unreachable: note it, and answer the reason."""
        self.neo4j.seen(False, self._nexus.uri, reason)
        return reason

    async def execute(self, arguments: Any, *, readonly: bool = False, call: Call | None = None, namespace: str | None = None) -> dict[str, Any]:
        """One call in ``namespace`` (None: the server's own); a call that may write, to a namespace
        without its nexus, bootstraps it first when the server bootstraps (then runs once more:
        nothing of the first run was written, the namespace's types did not exist)."""
        nexus = self._nexus if namespace is None else await self._open(namespace)
        if self._bootstrap and namespace in self._writable and namespace not in self._booted:
            await self._bootstrap_once(nexus, namespace)  # its bootstrap at start is not done yet: wait for it
        response = await nexus.execute(arguments, readonly=readonly, call=call)
        if readonly or not self._bootstrap or not _without_nexus(nexus, response):
            return response
        await self._bootstrap_once(nexus, namespace)
        return await nexus.execute(arguments, readonly=readonly, call=call)

    def for_namespace(self, namespace: str) -> _NamespaceView:
        """What a token bound to ``namespace`` calls."""
        return _NamespaceView(self, namespace)

    async def _open(self, namespace: str) -> Any:
        """The nexus of ``namespace`` (the served one when it is that namespace), opened on first use."""
        if namespace == self._nexus.settings.namespace:
            return self._nexus
        async with self._opening:
            if namespace not in self._namespaces:
                self._namespaces[namespace] = self._nexus.in_namespace(namespace)
            return self._namespaces[namespace]

    async def _bootstrap_once(self, nexus: Any, namespace: str | None) -> None:
        """Bootstrap ``nexus`` unless a concurrent call (or the start) just did: its nexus node is
        loaded then. ``namespace`` is marked done either way."""
        async with self._bootstrapping:
            if not nexus.core.loaded:
                await _bootstrap_quietly(nexus, self._capsules, self._profile)
            self._booted.add(namespace)

    async def close(self) -> None:
        """Close every namespace's nexus (each drains its embedding refresh), the served one —
        which owns the shared driver — last."""
        if self._background is not None:
            self._background.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._background
        for nexus in self._namespaces.values():
            await nexus.close()
        if self._nexus is not None:
            await self._nexus.close()


@dataclass(frozen=True)
class _NamespaceView:
    """The calls of a token bound to a namespace (``LoopNexus.for_namespace``)."""

    served: LoopNexus
    namespace: str

    async def execute(self, arguments: Any, *, readonly: bool = False, call: Call | None = None) -> dict[str, Any]:
        return await self.served.execute(arguments, readonly=readonly, call=call, namespace=self.namespace)


def _without_nexus(nexus: Any, response: dict[str, Any]) -> bool:
    """Whether ``response`` is ``core.no_nexus``: KIP_3002 while the nexus node is not loaded."""
    error = response.get("error")
    return isinstance(error, dict) and error.get("code") == NOT_FOUND and not nexus.core.loaded


def run(
    nexus_factory: Callable[[], Any],
    *,
    readonly: bool = False,
    bootstrap: bool = False,
    capsules: bool = False,
    profile: str | None = None,
    http: HttpOptions | None = None,
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
) -> None:
    """Entry point of ``kip2cypher mcp``: open the (async) nexus in the serving loop, optionally
    bootstrap it, serve stdio or HTTP. A readonly server never writes, and bootstrapping writes
    (schema objects, Genesis): the combination is refused before anything connects."""
    if readonly and bootstrap:
        raise McpConfigError(
            "--readonly and --bootstrap cannot be combined: a readonly server never writes, and bootstrapping writes the schema objects "
            "and the Genesis capsule. Bootstrap first, as its own step (`kip2cypher bootstrap`), then start `kip2cypher mcp --readonly`."
        )
    if http is not None:
        http.check()
    tokens = http.tokens if http is not None else []
    bound = {token.namespace for token in tokens if token.namespace is not None}
    writable = {token.namespace for token in tokens if token.namespace is not None and token.access == "rw"}
    nexus = LoopNexus(nexus_factory, bootstrap=bootstrap, capsules=capsules, profile=profile, namespaces=bound, writable=writable)
    if http is None:

        async def stdio() -> None:
            await nexus.start()
            try:
                await serve_stdio(nexus, readonly=readonly, request_timeout_s=request_timeout_s)
            finally:
                await nexus.close()

        anyio.run(stdio)
    else:
        server = build_server(nexus, readonly=readonly, request_timeout_s=request_timeout_s, tokens_required=http.authenticated)
        serve_http(server, http, announce=lambda line: print(line, file=sys.stderr, flush=True), nexus=nexus)


async def _bootstrap_quietly(nexus: Any, capsules: bool = False, profile: str | None = None) -> str | None:
    """Apply schema + the profile's Genesis (+ its whole capsule set); a failure is logged to stderr and the server still starts."""
    try:
        await nexus.bootstrap(profile=profile, capsules=capsules)
        return None
    except Exception as exc:  # noqa: BLE001
        log.warning("bootstrap failed: %s", exc)
        return str(exc)

"""OAuth 2.1 resource-server mode of ``kip2cypher mcp --transport http`` (the MCP authorization
specification), beside the static bearer tokens of ``mcp_server``.

The server never issues tokens: an authorization server does, and this module checks the JWT
access tokens it signed — signature against its JWKS (a file, or a URL fetched and cached by
PyJWT's ``PyJWKClient``), issuer, audience (this resource's URL by default, RFC 8707), expiry —
with PyJWT, asymmetric algorithms only (no ``none``, no HMAC: a public key can never be used as
a shared secret). Scopes map to the two tools (``kip:read``: execute_kip_readonly; ``kip:write``:
both) and one configurable claim binds the token to a namespace. The SDK then does the rest:
``BearerAuthBackend`` / ``RequireAuthMiddleware`` (401/403 with ``WWW-Authenticate``) and the
RFC 9728 protected-resource metadata route. docs/interfaces.md ("OAuth resource server") has the
whole model.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import anyio

from . import metrics
from .cypher import storage

log = logging.getLogger("kip2cypher.mcp")

#: Signature algorithms a token may use: public-key ones only. ``none`` and ``HS*`` are refused
#: whatever the token's header says (the algorithm-confusion attack signs HS256 with a public key).
ASYMMETRIC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
#: Seconds of clock skew tolerated on ``exp`` / ``nbf`` / ``iat``.
LEEWAY_S = 30
#: Seconds a JWKS fetched from a URL is cached (an unknown ``kid`` refetches it, at most once per
#: PyJWT's cool-down, so a stream of forged ``kid`` values cannot flood the authorization server).
JWKS_CACHE_S = 300
#: Seconds one JWKS fetch may take.
JWKS_FETCH_TIMEOUT_S = 5
#: The claim that binds a token to a namespace, unless ``--jwt-namespace-claim`` names another.
DEFAULT_NAMESPACE_CLAIM = "kip_namespace"
#: Scopes of a request (static tokens and JWT alike): ``kip:read`` may call execute_kip_readonly,
#: ``kip:write`` both tools; ``kip:namespace:<name>`` carries the namespace binding to the call.
READ_SCOPE = "kip:read"
WRITE_SCOPE = "kip:write"
NAMESPACE_SCOPE = "kip:namespace:"


class JwtConfigError(ValueError):
    """A JWT setting that cannot work (no issuer, an unreadable JWKS file…); never quotes a key."""


@dataclass(frozen=True)
class JwtOptions:
    """Where the keys are and what a token must say to be accepted."""

    #: ``https://…`` (fetched, cached ``JWKS_CACHE_S``) or the path of a JWKS JSON file (read at start).
    jwks: str
    #: The ``iss`` every token must carry: the authorization server (also listed in the metadata).
    issuer: str
    #: Accepted ``aud`` values; empty: this server's resource URL (the MCP spec's audience binding).
    audience: tuple[str, ...] = ()
    namespace_claim: str = DEFAULT_NAMESPACE_CLAIM

    def check(self) -> None:
        if not self.issuer:
            raise JwtConfigError("--jwks needs --jwt-issuer (KIP2CYPHER_MCP_JWT_ISSUER): the `iss` the authorization server puts in its tokens.")
        if not self.namespace_claim:
            raise JwtConfigError("--jwt-namespace-claim must name a claim.")
        if not self.jwks.startswith(("https://", "http://")):
            _read_jwks_file(self.jwks)


class JwtVerifier:
    """The SDK's ``TokenVerifier`` for JWT access tokens.

    Returns None for any token that fails a check (the SDK answers 401) and logs why at INFO —
    the reason, never the token. The ``AccessToken`` it hands on carries a label
    (``jwt <iss> <sub>``), the kip scopes, the namespace scope taken from the namespace claim
    only (a ``kip:namespace:…`` string in the token's own ``scope`` is dropped: the issuer binds
    namespaces through the claim), and ``iss``/``sub`` for the SDK's session ownership.
    """

    def __init__(self, options: JwtOptions, audience: tuple[str, ...]) -> None:
        options.check()
        self.options, self.audience = options, audience
        self._keys = _key_source(options.jwks)

    async def verify_token(self, token: str) -> Any:
        import jwt
        from mcp.server.auth.provider import AccessToken

        if token.count(".") != 2:  # not a JWT (a mistyped static token): nothing to log
            return None
        try:
            key = await self._keys(token)
            claims = self._decode(token, key)
        except Exception as exc:  # noqa: BLE001 - PyJWT, a JWKS fetch, a malformed key: all mean "refused"
            # The key endpoint failing is the operator's problem (WARNING); a bad token is the caller's.
            (log.warning if isinstance(exc, jwt.PyJWKClientConnectionError) else log.info)("bearer JWT refused: %s", _reason(exc))
            return None
        # A claim that is present binds, whatever its value: null is not "no claim" (that would hand the
        # default namespace to a token whose issuer named a namespace it could not fill in).
        namespace = claims.get(self.options.namespace_claim)
        if self.options.namespace_claim in claims and not (isinstance(namespace, str) and storage.NAMESPACE_RE.match(namespace)):
            log.info("bearer JWT refused: its %r claim is not a namespace name", self.options.namespace_claim)
            return None
        granted = _scopes(claims)
        scopes = [READ_SCOPE, WRITE_SCOPE] if WRITE_SCOPE in granted else [READ_SCOPE] if READ_SCOPE in granted else []
        scopes += [NAMESPACE_SCOPE + namespace] if namespace is not None else []
        subject = claims.get("sub")
        label = f"jwt {claims['iss']} {subject or claims.get('client_id') or claims.get('azp') or '?'}"
        return AccessToken(
            token=label,
            client_id=str(claims.get("client_id") or claims.get("azp") or subject or label),
            scopes=scopes,
            expires_at=int(claims["exp"]) + LEEWAY_S,  # when this server stops accepting it (the SDK checks it again, without leeway)
            subject=str(subject) if subject is not None else None,
            claims={"iss": claims["iss"]},
        )

    def _decode(self, token: str, key: Any) -> dict[str, Any]:
        import jwt

        return jwt.decode(
            token,
            key,
            algorithms=list(ASYMMETRIC_ALGORITHMS),
            audience=list(self.audience),
            issuer=self.options.issuer,
            leeway=LEEWAY_S,
            options={"require": ["exp", "iss", "aud"]},
        )


def _scopes(claims: dict[str, Any]) -> set[str]:
    """RFC 9068 ``scope`` (separated by SP only, RFC 6749 §3.3: ``"kip:read\u00a0kip:write"`` is one
    unknown scope-token, not two), or a list in ``scope`` / ``scp`` (some providers)."""
    value = claims.get("scope", claims.get("scp", ""))
    items = value.split(" ") if isinstance(value, str) else value if isinstance(value, list) else []
    return {item for item in items if isinstance(item, str)}


def _reason(exc: Exception) -> str:
    """Why a token was refused, for the log: PyJWT's messages name the failed check, never the token."""
    import jwt

    if isinstance(exc, jwt.ExpiredSignatureError):
        return "expired"
    if isinstance(exc, (jwt.PyJWTError, jwt.PyJWKClientError)):
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"  # one line: a forged kid cannot forge log lines
    return f"{type(exc).__name__} while reading the signing key"


def _key_source(jwks: str) -> Any:
    """``async (token) -> key``: from a JWKS URL (PyJWKClient, in a worker thread: it fetches
    with blocking I/O) or from a JWKS file read now."""
    import jwt

    if jwks.startswith(("https://", "http://")):
        client = jwt.PyJWKClient(jwks, cache_keys=True, lifespan=JWKS_CACHE_S, timeout=JWKS_FETCH_TIMEOUT_S)

        async def from_url(token: str) -> Any:
            return await anyio.to_thread.run_sync(client.get_signing_key_from_jwt, token)

        return from_url
    keys = _read_jwks_file(jwks)

    async def from_file(token: str) -> Any:
        kid = jwt.get_unverified_header(token).get("kid")
        matching = [key for key in keys if key.key_id == kid] if kid is not None else keys if len(keys) == 1 else []
        if not matching:
            raise jwt.PyJWKClientError("no key of the JWKS file matches the token's kid")
        return matching[0]

    return from_file


def _read_jwks_file(path: str) -> list[Any]:
    import jwt

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise JwtConfigError(f"Cannot read the JWKS file {path}: {exc.strerror}.") from None
    try:
        keys = jwt.PyJWKSet.from_json(text).keys
    except (ValueError, jwt.PyJWTError) as exc:
        raise JwtConfigError(f"The JWKS file {path} holds no usable public key ({type(exc).__name__}).") from None
    public = [key for key in keys if key.algorithm_name in ASYMMETRIC_ALGORITHMS]
    if not public:
        raise JwtConfigError(f"The JWKS file {path} holds no public key of an accepted algorithm ({', '.join(ASYMMETRIC_ALGORITHMS)}).")
    return public


# ---------------------------------------------------------------- metadata and challenges
#: RFC 9728 §3: the protected-resource metadata lives under this path (plus the resource's path).
WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_routes(resource_url: str, issuer: str) -> tuple[list[Any], str]:
    """The SDK's RFC 9728 route (``/.well-known/oauth-protected-resource/<path>``), the same
    document at the bare well-known path (clients that try it first), and the document's URL
    for ``WWW-Authenticate``."""
    from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
    from pydantic import AnyHttpUrl
    from starlette.routing import Route

    # Strings, not AnyHttpUrl: the metadata model keeps a path-less issuer as written (RFC 8414
    # compares issuers as exact strings), where AnyHttpUrl("https://idp") adds a "/".
    resource: Any = resource_url
    routes = create_protected_resource_routes(resource, [issuer], scopes_supported=[READ_SCOPE, WRITE_SCOPE], resource_name="kip2cypher")
    if routes[0].path != WELL_KNOWN:
        routes.append(Route(WELL_KNOWN, endpoint=routes[0].endpoint, methods=["GET", "OPTIONS"]))
    return routes, str(build_resource_metadata_url(AnyHttpUrl(resource_url)))


class RequireAuth:
    """The SDK's ``RequireAuthMiddleware`` (401 ``invalid_token`` for a refused token, 403
    ``insufficient_scope``, both naming the metadata), except that a request carrying no bearer
    credentials at all gets the bare challenge RFC 6750 §3.1 asks for (no error code). A class,
    not a function: Starlette routes an instance as an ASGI app, a function as a GET endpoint."""

    def __init__(self, app: Any, required_scopes: list[str], metadata_url: str | None) -> None:
        from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
        from pydantic import AnyHttpUrl

        self.checked = RequireAuthMiddleware(app, required_scopes, AnyHttpUrl(metadata_url) if metadata_url else None)
        self.required = required_scopes
        self.challenge = f'Bearer resource_metadata="{metadata_url}"' if metadata_url else "Bearer"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

        headers = dict(scope.get("headers") or [])
        user = scope.get("user")
        if isinstance(user, AuthenticatedUser) or headers.get(b"authorization", b"").lower().startswith(b"bearer "):
            if not isinstance(user, AuthenticatedUser):
                metrics.auth_failure("invalid_token")
            elif not all(scope_ in user.scopes for scope_ in self.required):
                metrics.auth_failure("insufficient_scope")
            await self.checked(scope, receive, send)
            return
        metrics.auth_failure("missing_token")
        body = json.dumps({"error_description": "Authentication required: send Authorization: Bearer <token>."}).encode()
        head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"www-authenticate", self.challenge.encode())]
        await send({"type": "http.response.start", "status": 401, "headers": head})
        await send({"type": "http.response.body", "body": body})


class AnyVerifier:
    """The first of several ``TokenVerifier`` that accepts the token (static tokens, then JWT)."""

    def __init__(self, *verifiers: Any) -> None:
        self.verifiers = verifiers

    async def verify_token(self, token: str) -> Any:
        for verifier in self.verifiers:
            found = await verifier.verify_token(token)
            if found is not None:
                return found
        return None

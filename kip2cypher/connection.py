"""Opening a Neo4j driver for a Nexus: URI hygiene and a fail-fast reachability check.

Why a check of its own: the driver retries a failing transaction for ``max_retry_s`` (30 s) and
waits up to 60 s for a Bolt handshake, so a wrong or unreachable URI used to answer after
30–70 s. A Nexus therefore proves once, with short timeouts, that the server answers before its
first transaction; after that, a failure is a transient one of a server that answered and the
driver's retries apply (docs/interfaces.md, "Fail fast").

Credentials never leave this module inside a URI: ``split_credentials`` moves ``user:password@``
out of the URI into the auth tuple (the driver itself refuses such URIs, quoting them whole in
its error), and every message names ``redact(uri)``.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypedDict, Union
from urllib.parse import unquote, urlsplit

import neo4j
from neo4j import AsyncGraphDatabase, GraphDatabase
from neo4j.auth_management import AsyncAuthManager, AuthManager
from neo4j.exceptions import DriverError, Neo4jError

from . import errors
from .errors import KipError
from .execution.neo4j_errors import from_neo4j, unavailable

log = logging.getLogger("kip2cypher.neo4j")

#: What ``auth=`` accepts: ``(user, password)``, a ``neo4j.Auth`` (``neo4j.basic_auth`` …) or the
#: driver's auth manager; None: the URI's ``user:password@``, else NEO4J_USERNAME/PASSWORD.
AuthLike = Union[tuple[str, str], neo4j.Auth, AuthManager, AsyncAuthManager, None]


class DriverOptions(TypedDict, total=False):
    """The neo4j driver's own configuration (its manual, "Driver configuration"): the keyword
    arguments of ``connect()`` / ``Nexus(…)`` beyond kip2cypher's, handed to the driver it opens
    as they are, over kip2cypher's defaults (``face.base_options``). Named here so a type checker
    refuses a misspelt one; the driver checks the values."""

    max_connection_lifetime: float
    liveness_check_timeout: float | None
    max_connection_pool_size: int
    connection_timeout: float
    connection_write_timeout: float
    connection_acquisition_timeout: float
    max_transaction_retry_time: float
    resolver: Callable[[Any], Iterable[Any]]
    encrypted: bool
    trusted_certificates: Any
    client_certificate: Any
    ssl_context: ssl.SSLContext | None
    user_agent: str
    keep_alive: bool
    notifications_min_severity: Any
    notifications_disabled_classifications: Iterable[Any] | None
    warn_notification_severity: Any
    telemetry_disabled: bool
    disable_auto_commit_retries: bool


#: Seconds the first contact may take (TCP connect, then the Bolt handshake and authentication).
CHECK_TIMEOUT_S = 3.0
SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def split_credentials(uri: str) -> tuple[str, tuple[str, str] | None]:
    """``bolt://user:pw@host:7687`` → (``bolt://host:7687``, ("user", "pw")); other URIs unchanged.

    The user information is everything between ``://`` and the last ``@``, not what a URL
    parser calls the netloc: a password holding an unencoded ``/``, ``?`` or ``#`` ends the
    netloc early, and the password would have stayed in the URI every message quotes. A URI
    Python cannot parse at all is refused without quoting it."""
    scheme, separator, rest = uri.partition("://")
    if not separator or "@" not in rest:
        return uri, None
    userinfo, _, location = rest.rpartition("@")
    user, _, password = userinfo.partition(":")
    bare = f"{scheme}://{location}"
    try:
        urlsplit(bare)
    except ValueError as exc:
        raise KipError(
            errors.INTERNAL_ERROR,
            f"The Neo4j URI {scheme}://…@{location[:80]!s} cannot be parsed ({exc}).",
            "Fix NEO4J_URI / --uri; percent-encode special characters of the password (or pass it as NEO4J_PASSWORD).",
        ) from None
    return bare, (unquote(user), unquote(password))


def redact(uri: str) -> str:
    """The URI as it may appear in a message or a log: without any ``user:password@``."""
    return split_credentials(uri)[0]


def check_uri(uri: str) -> None:
    """Refuse a URI the driver cannot use, with a message an operator can act on (KIP_4003)."""
    try:
        parts = urlsplit(redact(uri))
        hostname, _ = parts.hostname, parts.port  # .port: ValueError for a port that is no number 0–65535
    except ValueError as exc:
        raise KipError(
            errors.INTERNAL_ERROR,
            f"The Neo4j URI {redact(uri)[:120]!r} cannot be parsed ({exc}).",
            "Fix NEO4J_URI / --uri (e.g. bolt://host:7687, neo4j://[::1]:7687).",
        ) from None
    if parts.scheme.lower() not in SCHEMES or not hostname:
        raise KipError(
            errors.INTERNAL_ERROR,
            f"{redact(uri)!r} is not a Neo4j Bolt URI.",
            "Set NEO4J_URI (or --uri) to bolt://host:7687, neo4j://host:7687 or neo4j+s://host (Aura); "
            "http:// addresses (the browser port 7474) do not speak Bolt.",
        )


def _open(factory: Any, uri: str, auth: Any, options: dict[str, Any]) -> Any:
    """``factory.driver`` (``GraphDatabase`` or ``AsyncGraphDatabase``) whose configuration errors
    are KIP errors that never quote credentials."""
    check_uri(uri)
    try:
        return factory.driver(uri, auth=auth, **options)
    except (DriverError, ValueError, TypeError) as exc:
        raise KipError(
            errors.INTERNAL_ERROR, f"Cannot open a Neo4j driver for {redact(uri)}: {_scrub(str(exc), uri)}", "Fix NEO4J_URI / --uri or the driver options."
        ) from None


def open_driver(uri: str, auth: Any, options: dict[str, Any]) -> Any:
    """A ``neo4j.GraphDatabase`` driver (``_open``)."""
    return _open(GraphDatabase, uri, auth, options)


def open_async_driver(uri: str, auth: Any, options: dict[str, Any]) -> Any:
    """A ``neo4j.AsyncGraphDatabase`` driver (``_open``)."""
    return _open(AsyncGraphDatabase, uri, auth, options)


class _Reachability:
    """Once per Nexus, before its first transaction: does a Neo4j answer at this URI, quickly?

    An owned driver is probed by a throw-away driver with short connection and acquisition
    timeouts (the Nexus's own driver keeps the driver's defaults for its pool). A driver the
    application passed in is checked with its own ``verify_connectivity`` and timeouts. A failed
    check is not remembered: the next request checks again (the server may have come up).
    The two faces below differ only in how they wait (a thread lock, or an asyncio lock and
    ``await``); what is probed and how a failure reads is here once."""

    def __init__(self, uri: str, auth: Any, options: dict[str, Any], driver: Any = None) -> None:
        self._uri, self._auth, self._options, self._driver = uri, auth, options, driver
        self._done = False

    def _probe_driver(self, factory: Any) -> Any:
        """The throw-away driver of the probe: one connection, short timeouts."""
        options = {**self._options, "connection_timeout": CHECK_TIMEOUT_S, "connection_acquisition_timeout": CHECK_TIMEOUT_S, "max_connection_pool_size": 1}
        return factory.driver(self._uri, auth=self._auth, **options)


class ReachabilityCheck(_Reachability):
    """``_Reachability`` for a ``Nexus`` (threads)."""

    def __init__(self, uri: str, auth: Any, options: dict[str, Any], driver: Any = None) -> None:
        super().__init__(uri, auth, options, driver)
        self._lock = threading.Lock()

    def ensure(self) -> None:
        """Return at once after a success; otherwise probe and raise KIP_4003 naming the URI."""
        if self._done:
            return
        with self._lock:
            if not self._done:
                self._probe()
                self._done = True

    def _probe(self) -> None:
        try:
            if self._driver is not None:
                self._driver.verify_connectivity()
                return
            with self._probe_driver(GraphDatabase) as probe:
                probe.verify_connectivity()
        except (Neo4jError, DriverError, OSError) as exc:
            raise unreachable(self._uri, exc) from None


class AsyncReachabilityCheck(_Reachability):
    """``_Reachability`` for an ``AsyncNexus``: the same probe, awaited."""

    def __init__(self, uri: str, auth: Any, options: dict[str, Any], driver: Any = None) -> None:
        super().__init__(uri, auth, options, driver)
        self._lock = asyncio.Lock()

    async def ensure(self) -> None:
        if self._done:
            return
        async with self._lock:
            if not self._done:
                await self._probe()
                self._done = True

    async def _probe(self) -> None:
        try:
            if self._driver is not None:
                await self._driver.verify_connectivity()
                return
            async with self._probe_driver(AsyncGraphDatabase) as probe:
                await probe.verify_connectivity()
        except (Neo4jError, DriverError, OSError) as exc:
            raise unreachable(self._uri, exc) from None


class Availability:
    """Whether Neo4j answered when last asked, logged on change only: one WARNING when it stops
    answering, one INFO when it answers again — not a line per failing call (the MCP server feeds
    it each tool call's outcome and each readiness probe). Starts as answering: a server that
    starts during an outage warns at its first call or probe."""

    def __init__(self) -> None:
        self.up = True

    def seen(self, answered: bool | None, uri: str, reason: str | None = None) -> None:
        """One observation of the Neo4j at ``uri`` (None: nothing was asked of it); ``reason``: why
        it did not answer (a KIP error message: no credentials in it)."""
        if answered is None or answered == self.up:
            return
        self.up = answered
        if answered:
            log.info("Neo4j at %s answers again", redact(uri))
        else:
            log.warning("Neo4j at %s is unreachable: %s", redact(uri), reason or "no answer")


def unreachable(uri: str, exc: BaseException) -> KipError:
    """The driver's failure, mapped as usual, with the (redacted) URI it was about."""
    mapped = from_neo4j(exc)
    where = redact(uri)
    if unavailable(mapped):
        return KipError(
            errors.INTERNAL_ERROR,
            f"Neo4j at {where} is unavailable (no answer within {CHECK_TIMEOUT_S:g} s): {_scrub(getattr(exc, 'message', None) or str(exc), uri)}",
            "Check NEO4J_URI / --uri (scheme, host, port) and that the server is running; retry once it is up.",
        )
    return KipError(mapped.code, f"Neo4j at {where}: {_scrub(mapped.message, uri)}", mapped.hint)


def _scrub(text: str, uri: str) -> str:
    """Remove the credentials of ``uri`` (and the raw URI) from a driver message."""
    _, credentials = split_credentials(uri)
    text = text.replace(uri, redact(uri))
    if credentials and credentials[1]:
        text = text.replace(credentials[1], "***")
    return text

"""The requests a program yields, and what it is told about the command it runs.

A program (``kip2cypher.execution.programs``) is a generator: it yields ``Run`` (a Cypher
statement; it receives the rows as a list of dicts), ``Embed`` (texts to embed; it receives
one vector per text) or ``Explain`` (a statement Neo4j must plan but not run; it receives
nothing) and finally returns the command's response dict. It never touches a driver, so the
same program runs under the synchronous and the asyncio loop (``loop.py``) and under a test
that feeds it canned rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config import Settings
from ..cypher import storage
from ..errors import EXECUTION_TIMEOUT, KipError
from ..lower.plan import EMPTY, Compiled


@dataclass(frozen=True)
class Run:
    """Run ``statement`` with its compiled parameters overridden/extended by ``params``.

    ``extra_rows``: rows beyond ``Settings.max_result_rows`` that are not results (a look-ahead
    row that tells whether a next page exists, a grounding row), so they never trip the cap.
    """

    statement: Compiled
    params: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    extra_rows: int = 0

    def parameters(self) -> dict[str, Any]:
        return {**self.statement.params, **self.params}


@dataclass(frozen=True)
class Explain:
    """Have Neo4j plan ``statement`` without running it (dry runs): proves the Cypher is valid."""

    statement: Compiled
    params: Mapping[str, Any] = field(default_factory=lambda: EMPTY)

    def parameters(self) -> dict[str, Any]:
        return {**self.statement.params, **self.params}


@dataclass(frozen=True)
class Embed:
    """Embed ``texts`` with the context's embedder; the reply is one vector per text."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class Deadline:
    """The end of one request's time budget (``Settings.max_request_s``), on the monotonic clock.

    Parsing, compiling, Python-side scoring, embedding and every statement of the request
    count against it: the request program checks it before compiling each command, the driver
    loops before each statement (and cap each transaction's timeout at what is left), so past
    it the remaining commands answer KIP_4001 without running.
    """

    at: float
    budget_s: float

    @classmethod
    def start(cls, settings: Settings) -> Deadline | None:
        """A request's deadline from now; None when ``max_request_s`` is 0 (no budget)."""
        return cls(time.monotonic() + settings.max_request_s, settings.max_request_s) if settings.max_request_s else None

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def error(self, started: bool = False, request: bool = False) -> KipError:
        """KIP_4001 for a command the spent budget stopped (``started``) or kept from running,
        or (``request``) for a whole request it stopped before any command ran."""
        spent = f"The request used up its time budget ({self.budget_s:g} s, max_request_s)"
        if request:
            return KipError(EXECUTION_TIMEOUT, f"{spent} before any command ran.", "Send fewer or smaller commands per request.")
        what = "was stopped (nothing it did was kept)" if started else "was not run"
        return KipError(
            EXECUTION_TIMEOUT,
            f"{spent}; this command {what}.",
            "Send fewer commands per request, lower LIMIT, or narrow the patterns; the commands before this one ran (see their results).",
        )

    def timeout(self, query_timeout_s: float) -> float | None:
        """A transaction's timeout: the query timeout, capped at what is left of the budget."""
        left = max(self.remaining(), 0.001)
        return min(query_timeout_s, left) if query_timeout_s else left


def within(seconds: float, deadline: Deadline | None) -> float:
    """``seconds``, or less when the request's budget ends sooner (a wait the budget must cover)."""
    return seconds if deadline is None else max(0.0, min(seconds, deadline.remaining()))


def transaction_timeout(settings: Settings, deadline: Deadline | None, admin: bool = False) -> float | None:
    """The timeout of one transaction (None: the server's default). Administrative work (``admin``:
    bootstrap, schema, migration) is not an agent's query: ``Settings.admin_timeout_s`` instead of
    ``query_timeout_s`` and no request budget, 0 meaning no limit at all (the driver's 0: even the
    server's ``db.transaction.timeout`` does not apply) — a cold first bootstrap under load took
    52.8 s and was cut short by the agents' 30 s (tests/test_migration.py)."""
    if admin:
        return settings.admin_timeout_s
    if deadline is not None:
        return deadline.timeout(settings.query_timeout_s)
    return settings.query_timeout_s or None


@dataclass(frozen=True)
class Context:
    """What a program knows besides its plan.

    ``now`` is the command's timestamp (ISO-8601 UTC, milliseconds, ``Z``), written as
    ``meta._updated_at`` by every element the command changes — so the executor finds them
    afterwards for the embedding refresh. ``embedder`` is the embedder in force (None: no
    semantic search). ``deadline`` ends the request's time budget (None: no budget).
    """

    settings: Settings
    now: str
    dry_run: bool = False
    embedder: Any | None = field(default=None, compare=False)
    #: The engine itself writes (``Nexus.bootstrap(upgrade=True)``): the protected structures a
    #: newer Genesis or standard capsule refreshes may change. Never set for an agent's request.
    engine: bool = False
    deadline: Deadline | None = field(default=None, compare=False)
    #: Administrative work (bootstrap, schema, migration; never an agent's request): its
    #: transactions take ``Settings.admin_timeout_s``, not the agents' ``query_timeout_s``.
    admin: bool = False
    #: The OpenTelemetry span of the function call this program serves (``tracing``): each
    #: statement it runs is a child span. None: no tracing (and never for background work).
    span: Any = field(default=None, compare=False)

    @property
    def names(self) -> storage.Names:
        """The storage vocabulary of the nexus's namespace."""
        return storage.names(self.settings.namespace)

    def timeout(self) -> float | None:
        """The timeout of this program's transactions (``transaction_timeout``)."""
        return transaction_timeout(self.settings, self.deadline, self.admin)

    def check_deadline(self) -> None:
        """KIP_4001 once the request's budget is spent (the loops call it before every request)."""
        if self.deadline is not None and self.deadline.expired():
            raise self.deadline.error(started=True)


# ---------------------------------------------------------------------------- the nexus core's requests
#: What the operations of the nexus core (``core.Core``) yield; the sync ``Nexus`` and the
#: ``AsyncNexus`` perform them (``loop.operate_sync`` / ``loop.operate_async``).


@dataclass(frozen=True)
class Transact:
    """Run the program ``start()`` builds in one transaction of ``access`` (READ, WRITE or ADMIN,
    ``loop.run_sync``); the reply is what the program returns. A ``KipError`` (every failure
    becomes one) is thrown into the operation."""

    access: str
    start: Callable[[], Any]
    ctx: Context
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Offload:
    """A request's CPU work (validating, classifying, compiling its commands): the reply is
    ``work()``. The asyncio face runs it in a worker thread — one hop per request — so a large
    command never blocks the event loop; ``work`` never raises (it returns its errors)."""

    work: Callable[[], Any]


@dataclass(frozen=True)
class AwaitEmbeddings:
    """Wait until the nexus's background refresher has embedded every committed write; the reply
    is False when ``timeout`` seconds passed first."""

    timeout: float | None


@dataclass(frozen=True)
class Refresh:
    """Hand the KML command of ``ctx`` (committed) to the background embedding refresher."""

    ctx: Context

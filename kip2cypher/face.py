"""What the sync ``Nexus`` and the ``AsyncNexus`` share: one class, two ways of waiting.

Every public operation is written once here, as a method returning ``self.core.<operation>(…)``
marked ``@operation``: the nexus core (``execution.core.Core``) does the work without I/O, and
the face drives it its way (``_operate``) — the ``Nexus`` drives the operation to its result
(``loop.operate_sync``), the ``AsyncNexus`` returns the coroutine that does
(``loop.operate_async``), so ``await nexus.bootstrap()`` is the asyncio spelling of
``nexus.bootstrap()``. ``operation`` also tells type checkers so: ``Nexus.bootstrap()`` returns
the operation's result type, ``AsyncNexus.bootstrap()`` an awaitable of it. A face also says
which driver, reachability check, bookmark manager and background refresher it uses
(``Waiting``), how it opens a session and how it closes.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, Unpack, overload

import neo4j

from . import connection
from .adoption import Adoption
from .config import Settings, lookup
from .connection import AuthLike, DriverOptions
from .cypher import migration
from .domain import embeddings
from .domain.embeddings import CHUNK
from .execution.batch import Outcome
from .execution.breaker import Breaker
from .execution.calls import Call
from .execution.core import Core
from .execution.programs.namespaces import NamespaceInfo
from .execution.requests import Context
from .lower.plan import Plan
from .responses import CommandResponse, KipResponse
from .version import __version__

P = ParamSpec("P")
R = TypeVar("R")
#: An operation of the core (``execution.core.Operation``) whose result is an ``R``.
Op = Generator[Any, Any, R]
#: The items of a ``commands`` batch: a command text, or ``{"command", "parameters"?}``.
BatchItem = str | Mapping[str, Any]

#: ``Nexus.uri`` of a Nexus built on an application's driver (which does not expose its URI).
APPLICATION_DRIVER = "(the application's driver)"


def env_auth() -> tuple[str, str] | None:
    user = lookup("NEO4J_USERNAME") or lookup("NEO4J_USER")
    password = lookup("NEO4J_PASSWORD")
    if user and password is not None:
        return (user, password)
    return None


def default_uri() -> str:
    return lookup("NEO4J_URI") or f"bolt://127.0.0.1:{lookup('KIP2CYPHER_NEO4J_PORT') or '7687'}"


def default_database() -> str | None:
    return lookup("NEO4J_DATABASE")


def base_options(settings: Settings, options: Mapping[str, Any]) -> dict[str, Any]:
    """The driver options every nexus uses, under the caller's own."""
    options = dict(options)
    options.setdefault("max_transaction_retry_time", settings.max_retry_s)
    options.setdefault("user_agent", f"kip2cypher/{__version__}")
    # Generated Cypher routinely names labels with no nodes yet (an empty type); the server's
    # "label does not exist" notifications would only be noise in callers' logs.
    options.setdefault("notifications_min_severity", "OFF")
    return options


def with_namespace(settings: Settings, namespace: str | None) -> Settings:
    """``settings`` for ``namespace`` (unchanged when it is None), validated like any setting."""
    return settings if namespace is None else settings.replace(namespace=namespace)


@dataclass(frozen=True)
class Waiting:
    """How a face waits: its driver, reachability check, bookmark manager and background
    refresher, and the loop that drives the core's operations (sync or asyncio)."""

    open_driver: Callable[..., Any]
    reachability: Callable[..., Any]
    bookmark_manager: Callable[[], Any]
    refresher: Callable[..., Any]
    operate: Callable[..., Any]


class operation(Generic[P, R]):  # noqa: N801 - a decorator, named like one
    """A public method of both faces, written once: ``method(self, …)`` returns the core's
    operation, and the face drives it (``Face._operate``): to its result on a ``Nexus``, to an
    awaitable of it on an ``AsyncNexus``. The overloads of ``__get__`` say the same to type
    checkers, with the method's own parameters (``P``)."""

    def __init__(self, method: Callable[Concatenate[Face, P], Op[R]]) -> None:
        self.method = method
        functools.update_wrapper(self, method)

    def __call__(self, face: Face, *args: P.args, **kwargs: P.kwargs) -> Any:
        """``Nexus.bootstrap(nexus)``: the method called on the class, as a plain method is."""
        return face._operate(self.method(face, *args, **kwargs))

    @overload
    def __get__(self, face: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, face: AwaitingFace, owner: type[Any]) -> Callable[P, Awaitable[R]]: ...
    @overload
    def __get__(self, face: BlockingFace, owner: type[Any]) -> Callable[P, R]: ...
    @overload
    def __get__(self, face: Face, owner: type[Any]) -> Callable[P, Any]: ...
    def __get__(self, face: Face | None, owner: type[Any]) -> Any:
        if face is None:
            return self
        return types.MethodType(self, face)


class Face:
    """A Cognitive Nexus stored in one Neo4j database (the sync or the asyncio face)."""

    _waiting: Waiting
    #: The driver: a ``neo4j.Driver`` (``Nexus``) or ``neo4j.AsyncDriver`` (``AsyncNexus``).
    _driver: Any

    def __init__(
        self,
        uri: str | None = None,
        *,
        auth: AuthLike = None,
        database: str | None = None,
        settings: Settings | None = None,
        driver: neo4j.Driver | neo4j.AsyncDriver | None = None,
        namespace: str | None = None,
        **driver_options: Unpack[DriverOptions],
    ) -> None:
        """Open a driver on ``uri`` (credentials from ``auth``, the URI's ``user:password@`` or
        NEO4J_USERNAME/PASSWORD), or use the application's own ``driver`` — its auth, TLS, pool and
        routing — which this nexus never closes. ``namespace`` selects one of the database's
        isolated nexuses (docs/namespaces.md; default: ``settings.namespace``, KIP2CYPHER_NAMESPACE).
        Raises KipError for a URI or namespace that cannot work."""
        self.core = Core(with_namespace(settings or Settings(), namespace), database or default_database())
        if driver is not None:
            if uri is not None or auth is not None or driver_options:
                raise TypeError(f"{type(self).__name__}(driver=...) uses the application's driver as it is configured: pass no uri, auth or driver options.")
            self.uri = APPLICATION_DRIVER
            self._driver, self._owns_driver = driver, False
            self._reachable = self._waiting.reachability(self.uri, None, {}, driver=driver)
        else:
            self.uri, uri_auth = connection.split_credentials(uri or default_uri())
            auth = auth if auth is not None else uri_auth or env_auth()
            options = base_options(self.settings, driver_options)
            self._driver, self._owns_driver = self._waiting.open_driver(self.uri, auth, options), True
            self._reachable = self._waiting.reachability(self.uri, auth, options)
        #: One circuit breaker per driver (``in_namespace`` shares it): an outage is seen once.
        self._breaker = Breaker()
        # One bookmark manager per nexus: a caller's reads see its own earlier writes on a cluster.
        self._bookmarks = self._waiting.bookmark_manager()
        self._refresher = self._waiting.refresher(self.run_program)

    def _operate(self, operation: Any) -> Any:
        """Drive an operation of the core: its result (sync), or the coroutine that yields it (asyncio)."""
        return self._waiting.operate(operation, functools.partial(self.session, retries=False), self._refresher, self._breaker)

    # ------------------------------------------------------------------ state
    @property
    def settings(self) -> Settings:
        """The settings in force (completed from the namespace's nexus node at the first request)."""
        return self.core.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self.core.settings = settings

    @property
    def database(self) -> str | None:
        return self.core.database

    @property
    def driver(self) -> Any:
        return self._driver

    def _session(self, access: str, retries: bool = True) -> Any:
        """A session of ``access`` on this nexus's database (the reachability check is the face's).
        ``retries=False``: without the driver's own retries of managed transactions — the sessions
        the core's operations run in, which ``loop.retrying`` retries under the circuit breaker."""
        mode = neo4j.READ_ACCESS if access == "READ" else neo4j.WRITE_ACCESS
        config = {} if retries else {"max_transaction_retry_time": 0}
        return self._driver.session(
            database=self.database,
            default_access_mode=mode,
            bookmark_manager=self._bookmarks,
            notifications_min_severity="OFF",
            fetch_size=self.settings.fetch_size,
            **config,
        )

    def in_namespace(self, namespace: str) -> Self:
        """The nexus of another namespace of the same database, on this one's driver (which it
        never closes): one connection pool and one circuit breaker for many namespaces (the MCP
        server's token bindings)."""
        nexus = type(self)(driver=self._driver, database=self.database, settings=self.core.for_namespace(namespace))
        nexus._breaker = self._breaker
        return nexus

    def reload_nexus_node(self) -> None:
        """Read this namespace's nexus node again at the next request (``kip2cypher adopt`` changed
        its adoption mapping; docs/adopt.md)."""
        self.core.reload()

    # ------------------------------------------------------------------ §6 interface
    @operation
    def execute_kip(
        self, command: str | None = None, *, commands: Sequence[BatchItem] | None = None, parameters: Mapping[str, Any] | None = None, dry_run: bool = False
    ) -> Op[KipResponse]:
        """Execute KIP with read-write capability; returns the §6 response dict, never raises."""
        return self.core.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run})

    @operation
    def execute_kip_readonly(
        self, command: str | None = None, *, commands: Sequence[BatchItem] | None = None, parameters: Mapping[str, Any] | None = None, dry_run: bool = False
    ) -> Op[KipResponse]:
        """Execute read-only KIP (FIND, DESCRIBE, SEARCH, EXPORT) in READ transactions; any KML rejects the request."""
        return self.core.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, readonly=True)

    @operation
    def execute(self, arguments: Any, *, readonly: bool = False, call: Call | None = None) -> Op[KipResponse]:
        """Run one function call given its raw JSON arguments object (what MCP and ``kip2cypher call`` receive).

        ``call``: the request's record (``execution.calls.Call``: its request id and client, which
        every transaction's metadata carries, and what ran) when the caller logs its own access
        line, as the MCP server does; by default one is made and logged at DEBUG."""
        return self.core.execute(arguments, readonly=readonly, call=call)

    @operation
    def execute_command(
        self, text: str, parameters: dict[str, Any] | None = None, *, dry_run: bool = False, readonly: bool = False, call: Call | None = None
    ) -> Op[Outcome]:
        """One command text → ``Outcome`` (its §6.2.1 response, its kind, whether it stops a batch).

        For callers that drive their own loop (``kip2cypher run``, the shell); never raises."""
        return self.core.execute_command(text, parameters, dry_run=dry_run, readonly=readonly, call=call)

    @operation
    def explain(self, text: str, parameters: dict[str, Any] | None = None) -> Op[list[dict[str, Any]]]:
        """Compile one command and EXPLAIN each of its statements (READ, nothing runs).

        Returns ``[{"cypher", "parameters", "label"?, "plan": <operator tree text>}]``; raises KipError."""
        return self.core.explain(text, parameters)

    @operation
    def run_plan(
        self, plan: Plan, *, dry_run: bool = False, readonly: bool = False, engine: bool = False, deadline: Any = None, admin: bool = False
    ) -> Op[CommandResponse]:
        """Run a compiled plan in one transaction (``Core.run_plan``); every failure is a KipError."""
        return self.core.run_plan(plan, dry_run=dry_run, readonly=readonly, engine=engine, deadline=deadline, admin=admin)

    @operation
    def run_program(self, access: str, start: Any, ctx: Context, metadata: dict[str, Any] | None = None) -> Op[Any]:
        """Run the program ``start()`` builds in one transaction of ``access``; every failure becomes a KipError."""
        return self.core.transact(access, start, ctx, metadata)

    # ------------------------------------------------------------------ administration
    @operation
    def server_version(self) -> Op[str]:
        """The server's version and edition, e.g. ``5.26.0 community``."""
        return self.core.server_version()

    @operation
    def namespaces(self) -> Op[list[NamespaceInfo]]:
        """Every namespace of the database (``NamespaceInfo``: its name, "" for the default one,
        its element counts, whether it is bootstrapped), the default one first (docs/namespaces.md)."""
        return self.core.namespaces()

    @operation
    def drop_namespace(self, namespace: str) -> Op[dict[str, Any]]:
        """Delete everything of ``namespace`` — its elements, vectors, schema objects and nexus node,
        nothing else — and report what was removed; the default namespace cannot be dropped."""
        return self.core.drop_namespace(namespace)

    @operation
    def adopt(self, adoption: Adoption, *, dry_run: bool = False, create_index: bool = False) -> Op[dict[str, Any]]:
        """Register an adoption mapping (``kip2cypher.adoption.parse``/``load``) in this namespace:
        its types and predicates, its full-text indexes (``create_index``) and the mapping itself;
        ``dry_run`` only reads. Returns the report (docs/adopt.md)."""
        return self.core.adopt(adoption, dry_run=dry_run, create_index=create_index)

    @operation
    def embed_adopted(self, adoption: Adoption | None = None, *, embedder: Any = None, batch: int = CHUNK, force: bool = False) -> Op[dict[str, Any]]:
        """SEARCH vectors for the adopted concepts and relationships (``Core.embed_adopted``); returns the counts."""
        return self.core.embed_adopted(adoption, embedder=embedder, batch=batch, force=force)

    @operation
    def stored_adoption(self) -> Op[Adoption | None]:
        """The adoption mapping stored on this namespace's nexus node (None: nothing adopted)."""
        return self.core.stored_adoption()

    @operation
    def adopted_links(self) -> Op[dict[str, int]]:
        """``{"linked", "dangling"}``: memory propositions linked to adopted concepts (docs/adopt.md, "link_memory")."""
        return self.core.adopted_links()

    @operation
    def foreign_nodes(self, own_mark: str | None = None) -> Op[int]:
        """How many nodes of the database are not KIP's (nor carry the property ``own_mark``)."""
        return self.core.foreign_nodes(own_mark)

    @operation
    def bootstrap_state(self) -> Op[dict[str, Any]]:
        """``{"schema_objects": <the database's constraint and index names>, "nexus_node": <this namespace's exists>}``."""
        return self.core.bootstrap_state()

    @operation
    def layouts(self, namespaces: Iterable[str]) -> Op[dict[str, int | None]]:
        """``{namespace: the storage layout its nexus node records, or None}`` (``Core.layouts``)."""
        return self.core.layouts(tuple(namespaces))

    @operation
    def write_demo_team_graph(self) -> Op[None]:
        """Write the demo's example team graph (``kip2cypher demo``, docs/adopt.md; idempotent)."""
        return self.core.write_demo_team_graph()

    @operation
    def ensure_schema(self) -> Op[None]:
        """Constraints, indexes and the nexus node (``Core.ensure_schema``); another layout is refused."""
        return self.core.ensure_schema()

    @operation
    def bootstrap(self, *, profile: str | None = None, capsules: bool = False, upgrade: bool = False) -> Op[dict[str, Any]]:
        """The schema and the official Genesis of ``profile`` (default rc11; ``capsules``: its whole
        set); a nexus keeps its profile unless ``upgrade`` moves it forward (``Core.bootstrap``).
        Returns the capsules' results once their embeddings are written."""
        return self.core.bootstrap(profile=profile, capsules=capsules, upgrade=upgrade)

    @operation
    def profile_state(self) -> Op[dict[str, Any]]:
        """``{"profile", "genesis", "actors"}`` of this namespace (``Core.profile_state``)."""
        return self.core.profile_state()

    @operation
    def migrate(self, *, dry_run: bool = False, batch: int = migration.DEFAULT_BATCH) -> Op[dict[str, Any]]:
        """Every namespace of the database to this build's storage layout (``Core.migrate``, docs/migration.md)."""
        return self.core.migrate(dry_run=dry_run, batch=batch)

    @operation
    def run_admin(self, program: Any) -> Op[Any]:
        """Run the administrative program ``program(ctx)`` under ADMIN access (``Core.admin``)."""
        return self.core.admin(program)

    @operation
    def sync_embeddings(self, *, embedder: Any = None, batch: int = 256, force: bool = False, kinds: tuple[str, ...] = embeddings.KINDS) -> Op[dict[str, int]]:
        """Embed every element whose vector is missing, stale or from another model (``Core.sync_embeddings``)."""
        return self.core.sync_embeddings(embedder=embedder, batch=batch, force=force, kinds=kinds)


class BlockingFace(Face):
    """A face whose operations return their results (the ``Nexus``)."""


class AwaitingFace(Face):
    """A face whose operations return awaitables of their results (the ``AsyncNexus``)."""

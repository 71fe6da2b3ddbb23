"""What the sync ``Nexus`` and the ``AsyncNexus`` share: one class, two ways of waiting.

Every public operation is written once here, as ``self._operate(self.core.<operation>(…))``:
the nexus core (``execution.core.Core``) does the work without I/O, and ``_operate`` drives it
the face's way — the ``Nexus`` drives the operation to its result
(``loop.operate_sync``), the ``AsyncNexus`` returns the coroutine that does
(``loop.operate_async``), so ``await nexus.bootstrap()`` is the asyncio spelling of
``nexus.bootstrap()``. A face also says which driver, reachability check, bookmark manager
and background refresher it uses (``Waiting``), how it opens a session and how it closes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import neo4j

from . import connection
from .config import Settings, lookup
from .execution.breaker import Breaker
from .execution.core import Core
from .execution.requests import Context
from .lower import embeddings, migration
from .lower.embeddings import CHUNK
from .lower.plan import Plan
from .version import __version__

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


def base_options(settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
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


class Face:
    """A Cognitive Nexus stored in one Neo4j database (the sync or the asyncio face)."""

    _waiting: Waiting

    def __init__(
        self,
        uri: str | None = None,
        *,
        auth: Any = None,
        database: str | None = None,
        settings: Settings | None = None,
        driver: Any = None,
        namespace: str | None = None,
        **driver_options: Any,
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

    def check_reachable(self) -> Any:
        """Prove the server answers before working on ``self.driver`` directly (KIP_4003 within
        seconds, naming the URI without credentials, when it does not)."""
        return self._reachable.ensure()

    def wait_for_embeddings(self, timeout: float | None = None) -> Any:
        """Wait until the SEARCH embeddings of every write this nexus committed are written
        (what a semantic SEARCH does first); False if ``timeout`` seconds passed first."""
        return self._refresher.wait(timeout)

    def in_namespace(self, namespace: str) -> Any:
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
    def execute_kip(
        self, command: str | None = None, *, commands: list[Any] | None = None, parameters: dict[str, Any] | None = None, dry_run: bool = False
    ) -> Any:
        """Execute KIP with read-write capability; returns the §6 response dict, never raises."""
        return self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run})

    def execute_kip_readonly(
        self, command: str | None = None, *, commands: list[Any] | None = None, parameters: dict[str, Any] | None = None, dry_run: bool = False
    ) -> Any:
        """Execute read-only KIP (FIND, DESCRIBE, SEARCH, EXPORT) in READ transactions; any KML rejects the request."""
        return self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, readonly=True)

    def execute(self, arguments: Any, *, readonly: bool = False) -> Any:
        """Run one function call given its raw JSON arguments object (what MCP and ``kip2cypher call`` receive)."""
        return self._operate(self.core.execute(arguments, readonly=readonly))

    def execute_command(self, text: str, parameters: dict[str, Any] | None = None, *, dry_run: bool = False, readonly: bool = False) -> Any:
        """One command text → ``Outcome`` (its §6.2.1 response, its kind, whether it stops a batch).

        For callers that drive their own loop (``kip2cypher run``, the shell); never raises."""
        return self._operate(self.core.execute_command(text, parameters, dry_run=dry_run, readonly=readonly))

    def explain(self, text: str, parameters: dict[str, Any] | None = None) -> Any:
        """Compile one command and EXPLAIN each of its statements (READ, nothing runs).

        Returns ``[{"cypher", "parameters", "label"?, "plan": <operator tree text>}]``; raises KipError."""
        return self._operate(self.core.explain(text, parameters))

    def run_plan(self, plan: Plan, *, dry_run: bool = False, readonly: bool = False, engine: bool = False, deadline: Any = None, admin: bool = False) -> Any:
        """Run a compiled plan in one transaction (``Core.run_plan``); every failure is a KipError."""
        return self._operate(self.core.run_plan(plan, dry_run=dry_run, readonly=readonly, engine=engine, deadline=deadline, admin=admin))

    def run_program(self, access: str, start: Any, ctx: Context, metadata: dict[str, Any] | None = None) -> Any:
        """Run the program ``start()`` builds in one transaction of ``access``; every failure becomes a KipError."""
        return self._operate(self.core.transact(access, start, ctx, metadata))

    # ------------------------------------------------------------------ administration
    def server_version(self) -> Any:
        """The server's version and edition, e.g. ``5.26.0 community``."""
        return self._operate(self.core.server_version())

    def namespaces(self) -> Any:
        """Every namespace of the database (``NamespaceInfo``: its name, "" for the default one,
        its element counts, whether it is bootstrapped), the default one first (docs/namespaces.md)."""
        return self._operate(self.core.namespaces())

    def drop_namespace(self, namespace: str) -> Any:
        """Delete everything of ``namespace`` — its elements, vectors, schema objects and nexus node,
        nothing else — and report what was removed; the default namespace cannot be dropped."""
        return self._operate(self.core.drop_namespace(namespace))

    def adopt(self, adoption: Any, *, dry_run: bool = False, create_index: bool = False) -> Any:
        """Register an adoption mapping (``kip2cypher.adoption.parse``/``load``) in this namespace:
        its types and predicates, its full-text indexes (``create_index``) and the mapping itself;
        ``dry_run`` only reads. Returns the report (docs/adopt.md)."""
        return self._operate(self.core.adopt(adoption, dry_run=dry_run, create_index=create_index))

    def embed_adopted(self, adoption: Any = None, *, embedder: Any = None, batch: int = CHUNK, force: bool = False) -> Any:
        """SEARCH vectors for the adopted concepts and relationships (``Core.embed_adopted``); returns the counts."""
        return self._operate(self.core.embed_adopted(adoption, embedder=embedder, batch=batch, force=force))

    def stored_adoption(self) -> Any:
        """The adoption mapping stored on this namespace's nexus node (None: nothing adopted)."""
        return self._operate(self.core.stored_adoption())

    def adopted_links(self) -> Any:
        """``{"linked", "dangling"}``: memory propositions linked to adopted concepts (docs/adopt.md, "link_memory")."""
        return self._operate(self.core.adopted_links())

    def foreign_nodes(self, own_mark: str | None = None) -> Any:
        """How many nodes of the database are not KIP's (nor carry the property ``own_mark``)."""
        return self._operate(self.core.foreign_nodes(own_mark))

    def bootstrap_state(self) -> Any:
        """``{"schema_objects": <the database's constraint and index names>, "nexus_node": <this namespace's exists>}``."""
        return self._operate(self.core.bootstrap_state())

    def layouts(self, namespaces: Iterable[str]) -> Any:
        """``{namespace: the storage layout its nexus node records, or None}`` (``Core.layouts``)."""
        return self._operate(self.core.layouts(tuple(namespaces)))

    def write_demo_team_graph(self) -> Any:
        """Write the demo's example team graph (``kip2cypher demo``, docs/adopt.md; idempotent)."""
        return self._operate(self.core.write_demo_team_graph())

    def ensure_schema(self) -> Any:
        """Constraints, indexes and the nexus node (``Core.ensure_schema``); another layout is refused."""
        return self._operate(self.core.ensure_schema())

    def bootstrap(self, *, profile: str | None = None, capsules: bool = False, upgrade: bool = False) -> Any:
        """The schema and the official Genesis of ``profile`` (default rc11; ``capsules``: its whole
        set); a nexus keeps its profile unless ``upgrade`` moves it forward (``Core.bootstrap``).
        Returns the capsules' results once their embeddings are written."""
        return self._operate(self.core.bootstrap(profile=profile, capsules=capsules, upgrade=upgrade))

    def profile_state(self) -> Any:
        """``{"profile", "genesis", "actors"}`` of this namespace (``Core.profile_state``)."""
        return self._operate(self.core.profile_state())

    def migrate(self, *, dry_run: bool = False, batch: int = migration.DEFAULT_BATCH) -> Any:
        """Every namespace of the database to this build's storage layout (``Core.migrate``, docs/migration.md)."""
        return self._operate(self.core.migrate(dry_run=dry_run, batch=batch))

    def run_admin(self, program: Any) -> Any:
        """Run the administrative program ``program(ctx)`` under ADMIN access (``Core.admin``)."""
        return self._operate(self.core.admin(program))

    def sync_embeddings(self, *, embedder: Any = None, batch: int = 256, force: bool = False, kinds: tuple[str, ...] = embeddings.KINDS) -> Any:
        """Embed every element whose vector is missing, stale or from another model (``Core.sync_embeddings``)."""
        return self._operate(self.core.sync_embeddings(embedder=embedder, batch=batch, force=force, kinds=kinds))

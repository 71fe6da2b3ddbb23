"""``AsyncNexus``: the ``Nexus`` for asyncio applications, on ``neo4j.AsyncGraphDatabase``.

Every method returns exactly what the sync ``Nexus`` returns: both drive the same sans-IO
programs (``execution.request`` for the §6 rules, ``execution.programs`` per plan kind)
through their own loop (``execution.loop.run_async`` here). Embedding inference runs in a
worker thread, so a command never blocks the event loop on the model::

    async with kip2cypher.connect_async() as nexus:
        await nexus.bootstrap()
        response = await nexus.execute_kip('FIND(?t.name) WHERE { ?t {type: "$ConceptType"} }')
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import neo4j

from . import connection, errors, profiles
from .config import Settings
from .cypher import catalog, storage
from .errors import KipError
from .execute import (
    APPLICATION_DRIVER,
    base_options,
    default_database,
    default_uri,
    env_auth,
    explain_entries,
    metadata,
    new_context,
    new_secret,
    nexus_settings,
    now,
    plan_text,
    stale_vectors,
    with_namespace,
)
from .execution import background, loop, programs
from .execution.neo4j_errors import DRIVER_ERRORS, from_neo4j
from .execution.programs import admin
from .execution.request import Outcome, command_program, request_program
from .execution.requests import Context, Deadline, within
from .lower import migration
from .lower.compile import compile_plan
from .lower.plan import Plan
from .version import __version__

log = logging.getLogger("kip2cypher")


class AsyncNexus:
    """A Cognitive Nexus stored in one Neo4j database, for asyncio callers.

    ``driver``: an ``AsyncDriver`` the application already owns (its auth, TLS, pool, routing);
    it is used as is and never closed by the nexus.
    """

    def __init__(
        self,
        uri: str | None = None,
        *,
        auth: Any = None,
        database: str | None = None,
        driver: Any = None,
        settings: Settings | None = None,
        namespace: str | None = None,
        **driver_options: Any,
    ) -> None:
        """``Nexus.__init__``: a driver of its own or the application's, one namespace."""
        self.settings = with_namespace(settings or Settings(), namespace)
        self.database = database or default_database()
        self._configured_secret = bool(self.settings.cursor_secret)
        self._secret_loaded = False
        if driver is not None:
            if uri is not None or auth is not None or driver_options:
                raise TypeError("AsyncNexus(driver=...) uses the application's driver as it is configured: pass no uri, auth or driver options.")
            self.uri = APPLICATION_DRIVER
            self._driver, self._owns_driver = driver, False
            self._reachable = connection.AsyncReachabilityCheck(self.uri, None, {}, driver=driver)
        else:
            self.uri, uri_auth = connection.split_credentials(uri or default_uri())
            auth = auth if auth is not None else uri_auth or env_auth()
            options = base_options(self.settings, driver_options)
            self._driver, self._owns_driver = connection.open_async_driver(self.uri, auth, options), True
            self._reachable = connection.AsyncReachabilityCheck(self.uri, auth, options)
        # One bookmark manager per nexus: a caller's reads see its own earlier writes on a cluster.
        self._bookmarks = neo4j.AsyncGraphDatabase.bookmark_manager()
        self._refresher = background.AsyncRefresher(self._run_program)

    # ------------------------------------------------------------------ lifecycle
    async def close(self) -> None:
        """``Nexus.close``: the last writes' embeddings first (up to ``embedding_wait_s``)."""
        await self._refresher.close(self.settings.embedding_wait_s)
        if self._owns_driver:
            await self._driver.close()

    async def wait_for_embeddings(self, timeout: float | None = None) -> bool:
        """``Nexus.wait_for_embeddings``."""
        return await self._refresher.wait(timeout)

    async def __aenter__(self) -> AsyncNexus:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def driver(self) -> Any:
        return self._driver

    async def session(self, access: str = "WRITE") -> Any:
        """A session on this nexus's database; the first one proves the server answers (KIP_4003 fast if not)."""
        await self._reachable.ensure()
        mode = neo4j.READ_ACCESS if access == "READ" else neo4j.WRITE_ACCESS
        return self._driver.session(
            database=self.database,
            default_access_mode=mode,
            bookmark_manager=self._bookmarks,
            notifications_min_severity="OFF",
            fetch_size=self.settings.fetch_size,
        )

    def in_namespace(self, namespace: str) -> AsyncNexus:
        """The nexus of another namespace of the same database, on this one's driver (which it
        never closes): one connection pool for many namespaces (the MCP server's token bindings).
        A cursor secret read from this namespace's nexus node is not carried over: each namespace
        signs its cursors with its own."""
        secret = self.settings.cursor_secret if self._configured_secret else b""
        return AsyncNexus(driver=self._driver, database=self.database, settings=self.settings.replace(namespace=namespace, cursor_secret=secret, adoption=None))

    # ------------------------------------------------------------------ schema
    async def ensure_schema(self) -> None:
        """``Nexus.ensure_schema``: constraints, indexes and the nexus node; another layout is refused."""
        self._load_nexus_node(await self.run_admin(lambda ctx: admin.ensure_schema(ctx, new_secret())))

    async def migrate(self, *, dry_run: bool = False, batch: int = migration.DEFAULT_BATCH) -> dict[str, Any]:
        """``Nexus.migrate``: every namespace of the database to this build's storage layout."""
        report = await self.run_admin(lambda ctx: admin.migrate(ctx, batch=batch, dry_run=dry_run))
        self._secret_loaded = False
        return report

    async def run_admin(self, program: Any) -> Any:
        """``Nexus.run_admin``: an administrative program under ADMIN access."""
        ctx = Context(self.settings, now(), admin=True)
        return await self._run_program("ADMIN", lambda: program(ctx), ctx, metadata(self.settings, "ADMIN", False, False, interface="admin"))

    async def _request_settings(self) -> Settings:
        """``Nexus._request_settings``: the stored cursor secret and the adoption mapping, read once;
        a nexus in another storage layout is refused at every request until migrated."""
        if not self._secret_loaded:
            try:
                async with await self.session("READ") as session:
                    statement = catalog.nexus_read(storage.names(self.settings.namespace))
                    record = await (await session.run(statement, namespace=self.settings.namespace)).single()
            except DRIVER_ERRORS as exc:
                raise from_neo4j(exc) from None
            self._load_nexus_node(record)
        return self.settings

    def _load_nexus_node(self, record: Any) -> None:
        self.settings = nexus_settings(self.settings, record, self._configured_secret)
        self._secret_loaded = True

    async def bootstrap(self, *, profile: str | None = None, capsules: bool = False, upgrade: bool = False) -> dict[str, Any]:
        """Create the schema objects and apply the official Genesis of ``profile`` (``capsules``: its
        whole set), as ``Nexus.bootstrap`` does: a nexus keeps its profile unless ``upgrade`` moves
        it forward; returns once the capsules' embeddings are written."""
        await self.ensure_schema()
        state = await self.run_admin(admin.bootstrap_state)
        step = profiles.decide(profile, state["profile"], state["genesis"], upgrade=upgrade)
        if step.note:
            log.warning("bootstrap: %s", step.note)
        applied = {}
        for name in profiles.capsules(step.profile, everything=capsules, present=set(state["actors"])) if step.profile else ():
            plan = compile_plan(profiles.capsule_text(name, step.profile), {}, await self._request_settings())
            try:
                applied[name] = (await self.run_plan(plan, engine=step.engine, admin=True))["result"]
            except KipError as exc:
                raise KipError(exc.code, f"Capsule {name} ({step.profile}) failed: {exc.message}", exc.hint) from None
        if step.profile:
            await self.run_admin(lambda ctx: admin.record_profile(ctx, step.profile))
        await self.wait_for_embeddings(self.settings.embedding_wait_s)  # a bootstrapped nexus is searchable
        return applied

    # ------------------------------------------------------------------ §6 interface
    async def execute_kip(
        self, command: str | None = None, *, commands: list[Any] | None = None, parameters: dict[str, Any] | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Execute KIP with read-write capability; returns the §6 response dict, never raises."""
        return await self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run})

    async def execute_kip_readonly(
        self, command: str | None = None, *, commands: list[Any] | None = None, parameters: dict[str, Any] | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Execute read-only KIP (FIND, DESCRIBE, SEARCH, EXPORT) in READ transactions; any KML rejects the request."""
        return await self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, readonly=True)

    async def execute(self, arguments: Any, *, readonly: bool = False) -> dict[str, Any]:
        """Run one function call given its raw JSON arguments object (what MCP receives)."""
        try:
            settings = await self._request_settings()
        except KipError as exc:
            return {"error": exc.to_dict()}
        deadline = Deadline.start(settings)
        return await self._drive(request_program(arguments, readonly=readonly, settings=settings, deadline=deadline), deadline)

    async def execute_command(self, text: str, parameters: dict[str, Any] | None = None, *, dry_run: bool = False, readonly: bool = False) -> Outcome:
        """One command text → ``Outcome`` (its response, its kind, whether it stops a batch); never raises."""
        try:
            settings = await self._request_settings()
        except KipError as exc:
            return Outcome({"error": exc.to_dict()}, None)
        deadline = Deadline.start(settings)
        return await self._drive(
            command_program(text, dict(parameters or {}), dry_run=dry_run, readonly=readonly, settings=settings, deadline=deadline), deadline
        )

    async def _drive(self, program: Any, deadline: Deadline | None = None) -> Any:
        """Step a request program; its steps (parsing, compiling) run in a worker thread so a
        large command never blocks the event loop that serves other requests."""
        reply: Any = None
        while True:
            done, ask = await asyncio.to_thread(_step, program, reply)
            if done:
                return ask
            if deadline is not None and deadline.expired():
                reply = deadline.error()  # the request's budget is spent: not run
                continue
            try:
                reply = await self.run_plan(ask.plan, dry_run=ask.dry_run, readonly=ask.readonly, deadline=deadline)
            except KipError as exc:
                reply = exc

    async def run_plan(
        self, plan: Plan, *, dry_run: bool = False, readonly: bool = False, engine: bool = False, deadline: Deadline | None = None, admin: bool = False
    ) -> dict[str, Any]:
        """Run a plan in one managed transaction (READ for reads, dry runs and readonly); failures are KipErrors."""
        access = "READ" if (readonly or dry_run or plan.access == "READ") else "WRITE"
        ctx = new_context(self.settings, plan, dry_run, engine, deadline, admin)
        fresh = not (plan.reads_vectors and ctx.embedder is not None) or await self._refresher.wait(within(self.settings.embedding_wait_s, deadline))
        response = await self._run_program(access, lambda: programs.start(plan, ctx), ctx, metadata(self.settings, plan.kind, readonly, dry_run))
        if programs.refreshes_embeddings(plan, ctx):
            self._refresher.submit(ctx)
        return response if fresh else stale_vectors(response, self.settings.embedding_wait_s)

    async def _run_program(self, access: str, start: Any, ctx: Any, tx_metadata: dict[str, Any] | None = None) -> Any:
        """``Nexus.run_program``: one managed transaction of ``access``; every failure becomes a KipError."""
        try:
            async with await self.session(access) as session:
                return await loop.run_async(session, access, start, ctx, tx_metadata or {"app": self.settings.app_name, "version": __version__})
        except KipError:
            raise
        except Exception as exc:  # noqa: BLE001
            log.error("execution failure: %r", exc, exc_info=True)
            raise KipError(
                errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "This is an engine bug; report it with the debug field."
            ) from None

    # ------------------------------------------------------------------ explain
    async def explain(self, text: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Compile one command and EXPLAIN each of its statements (nothing runs); raises KipError."""
        plan = compile_plan(text, parameters or {}, await self._request_settings())
        out = explain_entries(plan)

        @neo4j.unit_of_work(timeout=self.settings.query_timeout_s or None, metadata=metadata(self.settings, plan.kind, False, False, interface="explain"))
        async def work(tx: Any) -> None:
            for entry in out:
                result = await tx.run(loop.statement_text(self.settings, f"EXPLAIN {entry['cypher']}"), entry["parameters"])
                entry["plan"] = plan_text((await result.consume()).plan)

        try:
            async with await self.session("READ") as session:
                await session.execute_read(work)
        except DRIVER_ERRORS as exc:
            done = [e for e in out if "plan" in e]
            raise from_neo4j(exc, out[len(done)]["cypher"] if len(done) < len(out) else None) from None
        return out


def _step(program: Any, reply: Any) -> tuple[bool, Any]:
    """``program.send(reply)`` as (finished, request-or-result): StopIteration cannot cross a thread."""
    try:
        return False, program.send(reply)
    except StopIteration as stop:
        return True, stop.value


class _Connecting:
    """What ``connect_async`` returns: await it for the ``AsyncNexus``, or use it with ``async with``."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self._kwargs = kwargs
        self._nexus: AsyncNexus | None = None

    async def _open(self) -> AsyncNexus:
        self._nexus = AsyncNexus(**self._kwargs)
        return self._nexus

    def __await__(self):
        return self._open().__await__()

    async def __aenter__(self) -> AsyncNexus:
        return await self._open()

    async def __aexit__(self, *exc: Any) -> None:
        if self._nexus is not None:
            await self._nexus.close()


def connect_async(
    uri: str | None = None,
    *,
    auth: Any = None,
    database: str | None = None,
    driver: Any = None,
    settings: Settings | None = None,
    namespace: str | None = None,
    **driver_options: Any,
) -> _Connecting:
    """``await connect_async(…)`` → an ``AsyncNexus``; ``async with connect_async(…) as nexus`` closes it after."""
    return _Connecting({"uri": uri, "auth": auth, "database": database, "driver": driver, "settings": settings, "namespace": namespace, **driver_options})

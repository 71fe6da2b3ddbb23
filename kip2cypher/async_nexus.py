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

import logging
from typing import Any, Optional

import neo4j

from . import errors, resources
from .config import Settings
from .cypher import catalog
from .errors import KipError
from .execute import base_options, default_database, default_uri, env_auth, explain_entries, metadata, new_context, plan_text, standard_capsule_order
from .execution import loop, programs
from .execution.neo4j_errors import DRIVER_ERRORS, from_neo4j
from .execution.request import Outcome, command_program, request_program
from .execution.requests import Deadline
from .lower.compile import compile_plan
from .lower.plan import Plan

log = logging.getLogger("kip2cypher")


class AsyncNexus:
    """A Cognitive Nexus stored in one Neo4j database, for asyncio callers.

    ``driver``: an ``AsyncDriver`` the application already owns (its auth, TLS, pool, routing);
    it is used as is and never closed by the nexus.
    """

    def __init__(self, uri: Optional[str] = None, *, auth: Any = None, database: Optional[str] = None, driver: Any = None, settings: Optional[Settings] = None, **driver_options: Any) -> None:
        self.settings = settings or Settings()
        self.database = database or default_database()
        self._owns_driver = driver is None
        if driver is None:
            self.uri = uri or default_uri()
            driver = neo4j.AsyncGraphDatabase.driver(self.uri, auth=auth if auth is not None else env_auth(), **base_options(self.settings, driver_options))
        else:
            self.uri = uri or "(the application's driver)"
        self._driver = driver
        # One bookmark manager per nexus: a caller's reads see its own earlier writes on a cluster.
        self._bookmarks = neo4j.AsyncGraphDatabase.bookmark_manager()

    # ------------------------------------------------------------------ lifecycle
    async def close(self) -> None:
        if self._owns_driver:
            await self._driver.close()

    async def __aenter__(self) -> "AsyncNexus":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def driver(self) -> Any:
        return self._driver

    def session(self, access: str = "WRITE") -> Any:
        mode = neo4j.READ_ACCESS if access == "READ" else neo4j.WRITE_ACCESS
        return self._driver.session(database=self.database, default_access_mode=mode, bookmark_manager=self._bookmarks)

    # ------------------------------------------------------------------ schema
    async def ensure_schema(self) -> None:
        """Create constraints and indexes idempotently, each in a transaction of its own."""
        async with self.session() as session:
            for statement in catalog.SCHEMA:
                await (await session.run(statement)).consume()

    async def bootstrap(self, *, capsules: bool = False) -> dict[str, Any]:
        """Create the schema objects and apply Genesis (and, optionally, the standard capsules)."""
        await self.ensure_schema()
        names = ["Genesis"] + (standard_capsule_order(resources.capsule_names()) if capsules else [])
        applied = {}
        for name in names:
            response = await self.execute_kip(resources.capsule_text(name))
            if "error" in response:
                raise KipError(response["error"]["code"], f"Capsule {name} failed: {response['error']['message']}", response["error"].get("hint"))
            applied[name] = response["result"]
        return applied

    # ------------------------------------------------------------------ §6 interface
    async def execute_kip(self, command: Optional[str] = None, *, commands: Optional[list[Any]] = None, parameters: Optional[dict[str, Any]] = None, dry_run: bool = False) -> dict[str, Any]:
        """Execute KIP with read-write capability; returns the §6 response dict, never raises."""
        return await self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run})

    async def execute_kip_readonly(self, command: Optional[str] = None, *, commands: Optional[list[Any]] = None, parameters: Optional[dict[str, Any]] = None, dry_run: bool = False) -> dict[str, Any]:
        """Execute read-only KIP (FIND, DESCRIBE, SEARCH, EXPORT) in READ transactions; any KML rejects the request."""
        return await self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, readonly=True)

    async def execute(self, arguments: Any, *, readonly: bool = False) -> dict[str, Any]:
        """Run one function call given its raw JSON arguments object (what MCP receives)."""
        deadline = Deadline.start(self.settings)
        return await self._drive(request_program(arguments, readonly=readonly, settings=self.settings, deadline=deadline), deadline)

    async def execute_command(self, text: str, parameters: Optional[dict[str, Any]] = None, *, dry_run: bool = False, readonly: bool = False) -> Outcome:
        """One command text → ``Outcome`` (its response, its kind, whether it stops a batch); never raises."""
        deadline = Deadline.start(self.settings)
        return await self._drive(command_program(text, dict(parameters or {}), dry_run=dry_run, readonly=readonly, settings=self.settings, deadline=deadline), deadline)

    async def _drive(self, program: Any, deadline: Optional[Deadline] = None) -> Any:
        reply: Any = None
        while True:
            try:
                ask = program.send(reply)
            except StopIteration as stop:
                return stop.value
            if deadline is not None and deadline.expired():
                reply = deadline.error()  # the request's budget is spent: not run
                continue
            try:
                reply = await self.run_plan(ask.plan, dry_run=ask.dry_run, readonly=ask.readonly, deadline=deadline)
            except KipError as exc:
                reply = exc

    async def run_plan(self, plan: Plan, *, dry_run: bool = False, readonly: bool = False, deadline: Optional[Deadline] = None) -> dict[str, Any]:
        """Run a plan in one managed transaction (READ for reads, dry runs and readonly); failures are KipErrors."""
        access = "READ" if (readonly or dry_run or plan.access == "READ") else "WRITE"
        ctx = new_context(self.settings, plan, dry_run, deadline)
        try:
            async with self.session(access) as session:
                return await loop.run_async(session, access, lambda: programs.start(plan, ctx), ctx, metadata(self.settings, plan.kind, readonly, dry_run))
        except KipError:
            raise
        except Exception as exc:  # noqa: BLE001
            log.error("execution failure: %r", exc, exc_info=True)
            raise KipError(errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "This is an engine bug; report it with the debug field.") from None

    # ------------------------------------------------------------------ explain
    async def explain(self, text: str, parameters: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
        """Compile one command and EXPLAIN each of its statements (nothing runs); raises KipError."""
        plan = compile_plan(text, parameters or {}, self.settings)
        out = explain_entries(plan)

        @neo4j.unit_of_work(timeout=self.settings.query_timeout_s or None, metadata=metadata(self.settings, plan.kind, False, False, interface="explain"))
        async def work(tx: Any) -> None:
            for entry in out:
                result = await tx.run(loop.statement_text(self.settings, f"EXPLAIN {entry['cypher']}"), entry["parameters"])
                entry["plan"] = plan_text((await result.consume()).plan)

        try:
            async with self.session("READ") as session:
                await session.execute_read(work)
        except DRIVER_ERRORS as exc:
            done = [e for e in out if "plan" in e]
            raise from_neo4j(exc, out[len(done)]["cypher"] if len(done) < len(out) else None) from None
        return out


class _Connecting:
    """What ``connect_async`` returns: await it for the ``AsyncNexus``, or use it with ``async with``."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self._kwargs = kwargs
        self._nexus: Optional[AsyncNexus] = None

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


def connect_async(uri: Optional[str] = None, *, auth: Any = None, database: Optional[str] = None, driver: Any = None, settings: Optional[Settings] = None, **driver_options: Any) -> _Connecting:
    """``await connect_async(…)`` → an ``AsyncNexus``; ``async with connect_async(…) as nexus`` closes it after."""
    return _Connecting({"uri": uri, "auth": auth, "database": database, "driver": driver, "settings": settings, **driver_options})

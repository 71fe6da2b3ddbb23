"""The Nexus: a connection to Neo4j that executes KIP requests (spec §6).

Each command runs in one managed transaction (``execute_read`` for KQL/META,
``execute_write`` for KML) so the driver retries transient failures and
deadlocks, routes reads and writes on clusters, and one KML statement is
atomic. A caller only ever receives the response dict — never an exception.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import UTC, datetime
from typing import Any

import neo4j
from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

from . import connection, embedding, errors
from .config import Settings, lookup
from .cypher import catalog, storage
from .errors import KipError
from .execution import background, loop, programs
from .execution.neo4j_errors import DRIVER_ERRORS, from_neo4j
from .execution.programs import admin
from .execution.programs import embeddings as refresh_program
from .execution.request import Outcome, command_program, request_program
from .execution.requests import Context, Deadline, Run, within
from .lower import embeddings, migration
from .lower.compile import compile_plan
from .lower.plan import Plan
from .version import __version__

log = logging.getLogger("kip2cypher")


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


def metadata(settings: Settings, kind: str, readonly: bool, dry_run: bool, *, interface: str | None = None) -> dict[str, Any]:
    """Transaction metadata (visible in SHOW TRANSACTIONS and the query log)."""
    return {
        "app": settings.app_name,
        "version": __version__,
        "kind": kind,
        "interface": interface or ("execute_kip_readonly" if readonly else "execute_kip"),
        "dry_run": bool(dry_run),
    }


def new_context(settings: Settings, plan: Plan, dry_run: bool, engine: bool = False, deadline: Deadline | None = None, admin: bool = False) -> Context:
    """What a plan's program is told: the settings, the command's timestamp, the embedder for
    META/KML, whether the engine itself writes (bootstrap upgrade), the request's deadline,
    whether it is administrative work (bootstrap: ``Settings.admin_timeout_s``)."""
    embedder = embedding.resolve(settings) if plan.kind != "KQL" else None
    return Context(settings, now(), dry_run=dry_run, embedder=embedder, engine=engine, deadline=deadline, admin=admin)


#: ``Nexus.uri`` of a Nexus built on an application's driver (which does not expose its URI).
APPLICATION_DRIVER = "(the application's driver)"


class Nexus:
    """A Cognitive Nexus stored in one Neo4j database."""

    def __init__(
        self,
        uri: str | None = None,
        *,
        auth: Any = None,
        database: str | None = None,
        settings: Settings | None = None,
        driver: neo4j.Driver | None = None,
        namespace: str | None = None,
        **driver_options: Any,
    ) -> None:
        """Open a driver on ``uri`` (credentials from ``auth``, the URI's ``user:password@`` or
        NEO4J_USERNAME/PASSWORD), or use the application's own ``driver`` — its auth, TLS, pool and
        routing — which this Nexus never closes. ``namespace`` selects one of the database's
        isolated nexuses (docs/namespaces.md; default: ``settings.namespace``, KIP2CYPHER_NAMESPACE).
        Raises KipError for a URI or namespace that cannot work."""
        self.database = database or default_database()
        self.settings = with_namespace(settings or Settings(), namespace)
        self._configured_secret = bool(self.settings.cursor_secret)
        self._secret_loaded = False
        if driver is not None:
            if uri is not None or auth is not None or driver_options:
                raise TypeError("Nexus(driver=...) uses the application's driver as it is configured: pass no uri, auth or driver options.")
            self.uri = APPLICATION_DRIVER
            self._driver, self._owns_driver = driver, False
            self._reachable = connection.ReachabilityCheck(self.uri, None, {}, driver=driver)
        else:
            self.uri, uri_auth = connection.split_credentials(uri or default_uri())
            auth = auth if auth is not None else uri_auth or env_auth()
            options = base_options(self.settings, driver_options)
            self._driver, self._owns_driver = connection.open_driver(self.uri, auth, options), True
            self._reachable = connection.ReachabilityCheck(self.uri, auth, options)
        # One bookmark manager per Nexus: a caller's reads see its own earlier writes on a cluster.
        self._bookmarks = GraphDatabase.bookmark_manager()
        self._refresher = background.Refresher(self.run_program)

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Finish the background embedding refresh of the last writes (up to
        ``Settings.embedding_wait_s``), then close the driver this Nexus opened; an
        application's driver stays open (it owns it)."""
        self._refresher.close(self.settings.embedding_wait_s)
        if self._owns_driver:
            self._driver.close()

    def wait_for_embeddings(self, timeout: float | None = None) -> bool:
        """Block until the SEARCH embeddings of every write this Nexus committed are written
        (what a semantic SEARCH does first); False if ``timeout`` seconds passed first."""
        return self._refresher.wait(timeout)

    def __enter__(self) -> Nexus:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def driver(self) -> neo4j.Driver:
        return self._driver

    def session(self, access: str = "WRITE") -> neo4j.Session:
        """A session on this Nexus's database; the first one proves the server answers (KIP_4003 fast if not)."""
        self._reachable.ensure()
        mode = neo4j.READ_ACCESS if access == "READ" else neo4j.WRITE_ACCESS
        return self._driver.session(
            database=self.database,
            default_access_mode=mode,
            bookmark_manager=self._bookmarks,
            notifications_min_severity="OFF",
            fetch_size=self.settings.fetch_size,
        )

    def check_reachable(self) -> None:
        """Prove the server answers before working on ``self.driver`` directly (KIP_4003 within
        seconds, naming the URI without credentials, when it does not)."""
        self._reachable.ensure()

    def server_version(self) -> str:
        self.check_reachable()
        records, _, _ = self._driver.execute_query(
            "CALL dbms.components() YIELD versions, edition RETURN versions[0] AS v, edition AS e", database_=self.database
        )
        return f"{records[0]['v']} {records[0]['e']}"

    def in_namespace(self, namespace: str) -> Nexus:
        """The nexus of another namespace of the same database, on this one's driver (which it
        never closes): one connection pool for many namespaces (the MCP server's token bindings).
        A cursor secret read from this namespace's nexus node is not carried over: each namespace
        signs its cursors with its own."""
        secret = self.settings.cursor_secret if self._configured_secret else b""
        return Nexus(driver=self._driver, database=self.database, settings=self.settings.replace(namespace=namespace, cursor_secret=secret, adoption=None))

    # ------------------------------------------------------------------ schema
    def ensure_schema(self) -> None:
        """Create constraints and indexes idempotently, each in a transaction of its own, and
        the nexus node with its cursor-signing secret (``programs.admin.ensure_schema``); a
        nexus in another storage layout is refused (KipError) before anything is created."""
        self._load_nexus_node(self.run_admin(lambda ctx: admin.ensure_schema(ctx, new_secret())))

    def migrate(self, *, dry_run: bool = False, batch: int = migration.DEFAULT_BATCH) -> dict[str, Any]:
        """Move every namespace of this database (not only this nexus's) to the storage layout
        this build reads (docs/migration.md), ``batch`` elements per inner transaction; with
        ``dry_run`` only count, per namespace, what would be relabelled. Idempotent: re-run it
        after an interruption. Returns the report; raises KipError (a newer layout found)."""
        report = self.run_admin(lambda ctx: admin.migrate(ctx, batch=batch, dry_run=dry_run))
        self._secret_loaded = False  # the next request reads the migrated nexus node
        return report

    def run_admin(self, program: Any) -> Any:
        """Run the administrative program ``program(ctx)`` (ADMIN access: auto-commit statements,
        ``Settings.admin_timeout_s``, never the agents' query timeout)."""
        ctx = Context(self.settings, now(), admin=True)
        return self.run_program("ADMIN", lambda: program(ctx), ctx, metadata(self.settings, "ADMIN", False, False, interface="admin"))

    def _request_settings(self) -> Settings:
        """The settings requests compile and run with, completed once per process from this
        namespace's nexus node: without a configured ``cursor_secret``, the one stored at
        bootstrap (so every process signs alike), and the adoption mapping (docs/adopt.md). A
        nexus in another storage layout raises the layout refusal, read again at every request
        until it is migrated (docs/migration.md)."""
        if not self._secret_loaded:
            try:
                with self.session("READ") as session:
                    record = session.run(catalog.nexus_read(storage.names(self.settings.namespace)), namespace=self.settings.namespace).single()
            except DRIVER_ERRORS as exc:
                raise from_neo4j(exc) from None
            self._load_nexus_node(record)
        return self.settings

    def reload_nexus_node(self) -> None:
        """Read this namespace's nexus node again at the next request (``kip2cypher adopt`` changed
        its adoption mapping; docs/adopt.md)."""
        self._secret_loaded = False

    def _load_nexus_node(self, record: Any) -> None:
        self.settings = nexus_settings(self.settings, record, self._configured_secret)
        self._secret_loaded = True

    def bootstrap(self, *, profile: str | None = None, capsules: bool = False, upgrade: bool = False) -> dict[str, Any]:
        """Create the schema objects and apply the official Genesis of ``profile`` (default rc11;
        ``capsules``: its whole capsule set), then record the profile on the nexus node.

        A nexus already bootstrapped keeps its profile, older or newer (``profiles.decide``);
        ``upgrade`` moves it forward, applying the newer capsules *as the engine* so they may change
        the protected structures (idempotent), and refuses a downgrade (KIP_3004). Agents' writes
        that would change those structures stay refused. Returns each applied capsule's result once
        their SEARCH embeddings are written (up to ``Settings.embedding_wait_s``)."""
        from . import profiles

        self.ensure_schema()
        state = self.run_admin(admin.bootstrap_state)
        step = profiles.decide(profile, state["profile"], state["genesis"], upgrade=upgrade)
        if step.note:
            log.warning("bootstrap: %s", step.note)
        applied = {}
        for name in profiles.capsules(step.profile, everything=capsules, present=set(state["actors"])) if step.profile else ():
            plan = compile_plan(profiles.capsule_text(name, step.profile), {}, self._request_settings())
            try:
                applied[name] = self.run_plan(plan, engine=step.engine, admin=True)["result"]
            except KipError as exc:
                raise KipError(exc.code, f"Capsule {name} ({step.profile}) failed: {exc.message}", exc.hint) from None
        if step.profile:
            self.run_admin(lambda ctx: admin.record_profile(ctx, step.profile))
        self.wait_for_embeddings(self.settings.embedding_wait_s)  # a bootstrapped nexus is searchable
        return applied

    # ------------------------------------------------------------------ §6 interface
    def execute_kip(
        self, command: str | None = None, *, commands: list[Any] | None = None, parameters: dict[str, Any] | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Execute KIP with read-write capability; returns the §6 response dict, never raises."""
        return self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run})

    def execute_kip_readonly(
        self, command: str | None = None, *, commands: list[Any] | None = None, parameters: dict[str, Any] | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Execute read-only KIP (FIND, DESCRIBE, SEARCH, EXPORT) in READ transactions; any KML rejects the request."""
        return self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, readonly=True)

    def execute(self, arguments: Any, *, readonly: bool = False) -> dict[str, Any]:
        """Run one function call given its raw JSON arguments object (what MCP and ``kip2cypher call`` receive)."""
        try:
            settings = self._request_settings()
        except KipError as exc:
            return {"error": exc.to_dict()}
        deadline = Deadline.start(settings)
        return self._drive(request_program(arguments, readonly=readonly, settings=settings, deadline=deadline), deadline)

    def _drive(self, program: Any, deadline: Deadline | None = None) -> Any:
        """Step a request program: run each plan it asks for, hand back its response or its error."""
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
                reply = self.run_plan(ask.plan, dry_run=ask.dry_run, readonly=ask.readonly, deadline=deadline)
            except KipError as exc:
                reply = exc

    def run_plan(
        self, plan: Plan, *, dry_run: bool = False, readonly: bool = False, engine: bool = False, deadline: Deadline | None = None, admin: bool = False
    ) -> dict[str, Any]:
        """Run a plan in one managed transaction; every failure becomes a KipError. ``admin``: the
        engine's own work (bootstrap's capsules), under ``Settings.admin_timeout_s``.

        Reads (KQL, META, every dry run, everything under readonly) run in a READ-access
        session through ``execute_read``: read routing on clusters, and Neo4j itself refuses
        any write that reaches them. KML runs through ``execute_write``. Both retry
        transient errors; a KipError raised by the program rolls the transaction back.
        """
        access = "READ" if (readonly or dry_run or plan.access == "READ") else "WRITE"
        tx_metadata = metadata(self.settings, plan.kind, readonly, dry_run)
        ctx = new_context(self.settings, plan, dry_run, engine, deadline, admin)
        fresh = not (plan.reads_vectors and ctx.embedder is not None) or self._refresher.wait(within(self.settings.embedding_wait_s, deadline))
        response = self.run_program(access, lambda: programs.start(plan, ctx), ctx, tx_metadata)
        if programs.refreshes_embeddings(plan, ctx):
            self._refresher.submit(ctx)
        return response if fresh else stale_vectors(response, self.settings.embedding_wait_s)

    def run_program(self, access: str, start: Any, ctx: Context, metadata: dict[str, Any] | None = None) -> Any:
        """Run the program ``start()`` builds in one managed transaction of ``access``; every failure becomes a KipError."""
        try:
            with self.session(access) as session:
                return loop.run_sync(session, access, start, ctx, metadata or {"app": self.settings.app_name, "version": __version__})
        except KipError:
            raise
        except Exception as exc:  # noqa: BLE001
            log.error("execution failure: %r", exc, exc_info=True)
            raise KipError(
                errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "This is an engine bug; report it with the debug field."
            ) from None

    def sync_embeddings(self, *, embedder: Any = None, batch: int = 256, force: bool = False, kinds: tuple[str, ...] = embeddings.KINDS) -> dict[str, int]:
        """Embed every element whose vector is missing, stale or from another model (``embedding.sync_embeddings``);
        ``kinds``: only concepts or only propositions."""
        chosen = embedder or embedding.resolve(self.settings)
        counts = {"concepts": 0, "propositions": 0}
        if chosen is None:
            return counts
        for kind in kinds:
            last = ""
            while True:
                ctx = Context(self.settings, now(), embedder=chosen)
                rows = self.run_program("READ", lambda: _rows_of(embeddings.statements(ctx.names, kind).all, {"last": last, "chunk": batch}), ctx)
                ids = [r["id"] for r in rows]
                if not ids:
                    break
                last = ids[-1]
                counts[kind + "s"] += self.run_program("WRITE", lambda: refresh_program.refresh(kind, ids, force, ctx), ctx)
        return counts

    def execute_command(self, text: str, parameters: dict[str, Any] | None = None, *, dry_run: bool = False, readonly: bool = False) -> Outcome:
        """One command text → ``Outcome`` (its §6.2.1 response, its kind, whether it stops a batch).

        For callers that drive their own loop (``kip2cypher run``, the shell); never raises.
        """
        try:
            settings = self._request_settings()
        except KipError as exc:
            return Outcome({"error": exc.to_dict()}, None)
        deadline = Deadline.start(settings)
        return self._drive(command_program(text, dict(parameters or {}), dry_run=dry_run, readonly=readonly, settings=settings, deadline=deadline), deadline)

    # ------------------------------------------------------------------ explain
    def explain(self, text: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Compile one command and EXPLAIN each of its statements (READ transaction, nothing runs).

        Returns ``[{"cypher", "parameters", "label"?, "plan": <operator tree text>}]``; raises KipError.
        """
        plan = compile_plan(text, parameters or {}, self._request_settings())
        out = explain_entries(plan)

        @neo4j.unit_of_work(timeout=self.settings.query_timeout_s or None, metadata=metadata(self.settings, plan.kind, False, False, interface="explain"))
        def work(tx: neo4j.ManagedTransaction) -> None:
            for entry in out:
                summary = tx.run(loop.statement_text(self.settings, f"EXPLAIN {entry['cypher']}"), entry["parameters"]).consume()
                entry["plan"] = plan_text(summary.plan)

        try:
            with self.session("READ") as session:
                session.execute_read(work)
        except (Neo4jError, DriverError) as exc:
            done = [e for e in out if "plan" in e]
            raise from_neo4j(exc, out[len(done)]["cypher"] if len(done) < len(out) else None) from None
        return out


def with_namespace(settings: Settings, namespace: str | None) -> Settings:
    """``settings`` for ``namespace`` (unchanged when it is None), validated like any setting."""
    return settings if namespace is None else settings.replace(namespace=namespace)


def nexus_settings(settings: Settings, record: Any, configured_secret: bool) -> Settings:
    """``settings`` completed with the facts of a nexus node record (``secret``, ``adoption``,
    ``layout``; None or nulls: the namespace has no nexus node yet): the cursor key derived from
    the stored secret unless one is configured, and the adoption mapping (None when nothing is
    adopted). A nexus in another storage layout raises its refusal (docs/migration.md)."""
    from .adoption import Adoption

    if record:
        admin.refuse_other_layout(record["layout"], settings.namespace)
    secret = record["secret"] if record else None
    stored = record["adoption"] if record else None
    changes: dict[str, Any] = {"adoption": Adoption.from_json(stored) if stored else None}
    if secret and not configured_secret:
        changes["cursor_secret"] = cursor_key(secret)
    return settings.replace(**changes)


def stale_vectors(response: dict[str, Any], waited_s: float) -> dict[str, Any]:
    """A semantic SEARCH answered before the background refresh caught up: say so (``warnings``)."""
    warning = (
        f"The embeddings of this nexus's latest writes were still being computed after {waited_s:g} s; "
        "semantic results may miss or misrank those elements. Repeat the SEARCH later for them."
    )
    return {**response, "warnings": [*response.get("warnings", []), warning]}


def new_secret() -> str:
    """A fresh random nexus secret (stored once, at the first bootstrap of a database)."""
    return secrets.token_hex(32)


def cursor_key(secret: str) -> bytes:
    """The cursor-signing key derived from a nexus's stored secret."""
    return hashlib.sha256(f"kip2cypher cursor key|{secret}".encode()).digest()


def explain_entries(plan: Plan) -> list[dict[str, Any]]:
    """The statements ``explain`` EXPLAINs: every statement the plan's program may issue."""
    from .lower.compile import statements

    return statements(plan)


def _rows_of(statement: Any, params: dict[str, Any]) -> Any:
    """The one-statement program: its rows."""
    rows = yield Run(statement, params)
    return rows


def now() -> str:
    """ISO-8601 UTC with milliseconds and a Z, e.g. 2026-07-04T10:11:12.345Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def plan_text(plan: Any, depth: int = 0) -> str:
    """An EXPLAIN plan (the driver's dict tree) as an indented operator list."""
    if not plan:
        return ""
    args = plan.get("args", {}) if isinstance(plan, dict) else {}
    op = plan.get("operatorType", "?") if isinstance(plan, dict) else str(plan)
    detail = args.get("Details", "")
    # Neo4j's details can span lines (a CASE expression): continuation lines keep the operator's indent.
    detail = str(detail).replace("\n", "\n" + "  " * depth + "   ") if detail else ""
    line = f"{'  ' * depth}+{op}{'  ' + detail if detail else ''}"
    children = plan.get("children", []) if isinstance(plan, dict) else []
    return "\n".join([line] + [plan_text(child, depth + 1) for child in children])

"""The Nexus: a connection to Neo4j that executes KIP requests (spec §6).

Each command runs in one managed transaction (``execute_read`` for KQL/META,
``execute_write`` for KML) so the driver retries transient failures and
deadlocks, routes reads and writes on clusters, and one KML statement is
atomic. A caller only ever receives the response dict — never an exception.
"""
from __future__ import annotations

import logging
import os
from datetime import datetime, timezone
from typing import Any, Optional

import neo4j
from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

from . import embedding, errors
from .version import __version__
from .config import Settings
from .cypher import catalog
from .errors import KipError
from .execution import loop, programs
from .execution.neo4j_errors import from_neo4j
from .execution.programs import embeddings as refresh_program
from .execution.request import Outcome, command_program, request_program
from .execution.requests import Context, Deadline, Run, transaction_timeout
from .lower import embeddings
from .lower.compile import compile_plan
from .lower.plan import Plan

log = logging.getLogger("kip2cypher")


def env_auth() -> Optional[tuple[str, str]]:
    user = os.environ.get("NEO4J_USERNAME") or os.environ.get("NEO4J_USER")
    password = os.environ.get("NEO4J_PASSWORD")
    if user and password is not None:
        return (user, password)
    return None


def default_uri() -> str:
    return os.environ.get("NEO4J_URI") or f"bolt://127.0.0.1:{os.environ.get('KIP2CYPHER_NEO4J_PORT', '7687')}"


def default_database() -> Optional[str]:
    return os.environ.get("NEO4J_DATABASE") or None


def base_options(settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
    """The driver options every nexus uses, under the caller's own."""
    options = dict(options)
    options.setdefault("max_transaction_retry_time", settings.max_retry_s)
    options.setdefault("user_agent", f"kip2cypher/{__version__}")
    # Generated Cypher routinely names labels with no nodes yet (an empty type); the server's
    # "label does not exist" notifications would only be noise in callers' logs.
    options.setdefault("notifications_min_severity", "OFF")
    return options


def metadata(settings: Settings, kind: str, readonly: bool, dry_run: bool, *, interface: Optional[str] = None) -> dict[str, Any]:
    """Transaction metadata (visible in SHOW TRANSACTIONS and the query log)."""
    return {
        "app": settings.app_name,
        "version": __version__,
        "kind": kind,
        "interface": interface or ("execute_kip_readonly" if readonly else "execute_kip"),
        "dry_run": bool(dry_run),
    }


def new_context(settings: Settings, plan: Plan, dry_run: bool, deadline: Optional[Deadline] = None) -> Context:
    """What a plan's program is told: the settings, the command's timestamp, the embedder for META/KML, the request's deadline."""
    return Context(settings, now(), dry_run=dry_run, embedder=embedding.resolve(settings) if plan.kind != "KQL" else None, deadline=deadline)


class Nexus:
    """A Cognitive Nexus stored in one Neo4j database."""

    def __init__(self, uri: Optional[str] = None, *, auth: Any = None, database: Optional[str] = None, settings: Optional[Settings] = None, **driver_options: Any) -> None:
        self.uri = uri or default_uri()
        self.database = database or default_database()
        self.settings = settings or Settings()
        self._driver = GraphDatabase.driver(self.uri, auth=auth if auth is not None else env_auth(), **base_options(self.settings, driver_options))
        # One bookmark manager per Nexus: a caller's reads see its own earlier writes on a cluster.
        self._bookmarks = GraphDatabase.bookmark_manager()

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        self._driver.close()

    def __enter__(self) -> "Nexus":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def driver(self) -> neo4j.Driver:
        return self._driver

    def session(self, access: str = "WRITE") -> neo4j.Session:
        mode = neo4j.READ_ACCESS if access == "READ" else neo4j.WRITE_ACCESS
        return self._driver.session(database=self.database, default_access_mode=mode, bookmark_manager=self._bookmarks)

    def server_version(self) -> str:
        records, _, _ = self._driver.execute_query("CALL dbms.components() YIELD versions, edition RETURN versions[0] AS v, edition AS e", database_=self.database)
        return f"{records[0]['v']} {records[0]['e']}"

    # ------------------------------------------------------------------ schema
    def ensure_schema(self) -> None:
        """Create constraints and indexes idempotently, each in a transaction of its own."""
        with self.session() as session:
            for statement in catalog.SCHEMA:
                session.run(statement).consume()

    def bootstrap(self, *, capsules: bool = False) -> dict[str, Any]:
        """Create the schema objects and apply Genesis (and, optionally, the standard capsules)."""
        from . import resources

        self.ensure_schema()
        names = ["Genesis"] + (standard_capsule_order(resources.capsule_names()) if capsules else [])
        applied = {}
        for name in names:
            response = self.execute_kip(resources.capsule_text(name))
            if "error" in response:
                raise KipError(response["error"]["code"], f"Capsule {name} failed: {response['error']['message']}", response["error"].get("hint"))
            applied[name] = response["result"]
        return applied

    # ------------------------------------------------------------------ §6 interface
    def execute_kip(self, command: Optional[str] = None, *, commands: Optional[list[Any]] = None, parameters: Optional[dict[str, Any]] = None, dry_run: bool = False) -> dict[str, Any]:
        """Execute KIP with read-write capability; returns the §6 response dict, never raises."""
        return self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run})

    def execute_kip_readonly(self, command: Optional[str] = None, *, commands: Optional[list[Any]] = None, parameters: Optional[dict[str, Any]] = None, dry_run: bool = False) -> dict[str, Any]:
        """Execute read-only KIP (FIND, DESCRIBE, SEARCH, EXPORT) in READ transactions; any KML rejects the request."""
        return self.execute({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, readonly=True)

    def execute(self, arguments: Any, *, readonly: bool = False) -> dict[str, Any]:
        """Run one function call given its raw JSON arguments object (what MCP and ``kip2cypher call`` receive)."""
        deadline = Deadline.start(self.settings)
        return self._drive(request_program(arguments, readonly=readonly, settings=self.settings, deadline=deadline), deadline)

    def _drive(self, program: Any, deadline: Optional[Deadline] = None) -> Any:
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

    def run_plan(self, plan: Plan, *, dry_run: bool = False, readonly: bool = False, deadline: Optional[Deadline] = None) -> dict[str, Any]:
        """Run a plan in one managed transaction; every failure becomes a KipError.

        Reads (KQL, META, every dry run, everything under readonly) run in a READ-access
        session through ``execute_read``: read routing on clusters, and Neo4j itself refuses
        any write that reaches them. KML runs through ``execute_write``. Both retry
        transient errors; a KipError raised by the program rolls the transaction back.
        """
        access = "READ" if (readonly or dry_run or plan.access == "READ") else "WRITE"
        tx_metadata = metadata(self.settings, plan.kind, readonly, dry_run)
        if hasattr(plan, "runner"):
            return self._run_legacy(plan, access, tx_metadata, dry_run, deadline)
        ctx = new_context(self.settings, plan, dry_run, deadline)
        return self.run_program(access, lambda: programs.start(plan, ctx), ctx, tx_metadata)

    def run_program(self, access: str, start: Any, ctx: Context, metadata: Optional[dict[str, Any]] = None) -> Any:
        """Run the program ``start()`` builds in one managed transaction of ``access``; every failure becomes a KipError."""
        try:
            with self.session(access) as session:
                return loop.run_sync(session, access, start, ctx, metadata or {"app": self.settings.app_name, "version": __version__})
        except KipError:
            raise
        except Exception as exc:  # noqa: BLE001
            log.error("execution failure: %r", exc, exc_info=True)
            raise KipError(errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "This is an engine bug; report it with the debug field.") from None

    def sync_embeddings(self, *, embedder: Any = None, batch: int = 256, force: bool = False) -> dict[str, int]:
        """Embed every element whose vector is missing, stale or from another model (``embedding.sync_embeddings``)."""
        chosen = embedder or embedding.resolve(self.settings)
        counts = {"concepts": 0, "propositions": 0}
        if chosen is None:
            return counts
        for kind in embeddings.KINDS:
            last = ""
            while True:
                ctx = Context(self.settings, now(), embedder=chosen)
                rows = self.run_program("READ", lambda: _rows_of(embeddings.ALL[kind], {"last": last, "chunk": batch}), ctx)
                ids = [r["id"] for r in rows]
                if not ids:
                    break
                last = ids[-1]
                counts[kind + "s"] += self.run_program("WRITE", lambda: refresh_program.refresh(kind, ids, force, ctx), ctx)
        return counts

    def _run_legacy(self, plan: Any, access: str, metadata: dict[str, Any], dry_run: bool, deadline: Optional[Deadline] = None) -> dict[str, Any]:
        """A plan of the previous shape (statements + closures), until every lowering returns data."""
        from .lower._legacy import Tx, drive

        holder: dict[str, Tx] = {}

        @neo4j.unit_of_work(timeout=transaction_timeout(self.settings, deadline), metadata=metadata)
        def work(neo4j_tx: neo4j.ManagedTransaction) -> dict[str, Any]:
            tx = Tx(neo4j_tx, self.settings)
            holder["tx"] = tx
            if not dry_run:
                ctx = Context(self.settings, now(), embedder=embedding.resolve(self.settings))
                response = plan.run(tx)
                if plan.kind == "KML" and ctx.embedder is not None:
                    drive(tx, refresh_program.refresh_touched(ctx), ctx.embedder)
                return response
            if plan.dry_result is None:
                for stmt in plan.statements:
                    tx.current = stmt
                    neo4j_tx.run(loop.statement_text(self.settings, "EXPLAIN " + stmt.text), stmt.params).consume()
                tx.current = None
            return plan.dry_run(tx)

        try:
            with self.session(access) as session:
                if access == "READ":
                    return session.execute_read(work)
                return session.execute_write(work)
        except KipError:
            raise
        except (Neo4jError, DriverError) as exc:
            raise from_neo4j(exc, _current_cypher(holder)) from None
        except Exception as exc:  # noqa: BLE001
            log.error("execution failure: %r", exc, exc_info=True)
            cypher = _current_cypher(holder)
            raise KipError(errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "This is an engine bug; report it with the debug field.", debug={"cypher": cypher} if cypher else None) from None

    def execute_command(self, text: str, parameters: Optional[dict[str, Any]] = None, *, dry_run: bool = False, readonly: bool = False) -> Outcome:
        """One command text → ``Outcome`` (its §6.2.1 response, its kind, whether it stops a batch).

        For callers that drive their own loop (``kip2cypher run``, the shell); never raises.
        """
        deadline = Deadline.start(self.settings)
        return self._drive(command_program(text, dict(parameters or {}), dry_run=dry_run, readonly=readonly, settings=self.settings, deadline=deadline), deadline)

    # ------------------------------------------------------------------ explain
    def explain(self, text: str, parameters: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
        """Compile one command and EXPLAIN each of its statements (READ transaction, nothing runs).

        Returns ``[{"cypher", "parameters", "label"?, "plan": <operator tree text>}]``; raises KipError.
        """
        plan = compile_plan(text, parameters or {}, self.settings)
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
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _current_cypher(holder: dict[str, Any]) -> Optional[str]:
    tx = holder.get("tx")
    return tx.current.text if tx is not None and tx.current is not None else None


def plan_text(plan: Any, depth: int = 0) -> str:
    """An EXPLAIN plan (the driver's dict tree) as an indented operator list."""
    if not plan:
        return ""
    args = plan.get("args", {}) if isinstance(plan, dict) else {}
    op = plan.get("operatorType", "?") if isinstance(plan, dict) else str(plan)
    detail = args.get("Details", "")
    line = f"{'  ' * depth}+{op}{'  ' + str(detail) if detail else ''}"
    children = plan.get("children", []) if isinstance(plan, dict) else []
    return "\n".join([line] + [plan_text(child, depth + 1) for child in children])


#: Dependency order of the standard capsules (Appendix 3): Person before the $self/$system
#: instances; the other type capsules only name types in strings and could go anywhere.
STANDARD_CAPSULES = ("Person", "Event", "self", "system", "Preference", "Insight", "Commitment", "SleepTask")


def standard_capsule_order(available: list[str]) -> list[str]:
    """Every shipped capsule except Genesis: the standard ones in dependency order, then any others by name."""
    known = [n for n in STANDARD_CAPSULES if n in available]
    return known + sorted(n for n in available if n not in known and n != "Genesis")

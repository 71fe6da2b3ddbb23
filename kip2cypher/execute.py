"""The Nexus: a connection to Neo4j that executes KIP requests (spec §6).

Each command runs in one managed transaction (``execute_read`` for KQL/META,
``execute_write`` for KML) so the driver retries transient failures and
deadlocks, routes reads and writes on clusters, and one KML statement is
atomic. A caller only ever receives the response dict — never an exception.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Optional

import neo4j
from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

from . import __version__, ast, errors, storage
from .compiler import compile_plan
from .config import Settings
from .errors import KipError
from .plan import Plan, Tx

log = logging.getLogger("kip2cypher")


def _env_auth() -> Optional[tuple[str, str]]:
    user = os.environ.get("NEO4J_USERNAME") or os.environ.get("NEO4J_USER")
    password = os.environ.get("NEO4J_PASSWORD")
    if user and password is not None:
        return (user, password)
    return None


def default_uri() -> str:
    return os.environ.get("NEO4J_URI") or f"bolt://127.0.0.1:{os.environ.get('KIP2CYPHER_NEO4J_PORT', '7687')}"


class Nexus:
    """A Cognitive Nexus stored in one Neo4j database."""

    def __init__(self, uri: Optional[str] = None, *, auth: Any = None, database: Optional[str] = None, settings: Optional[Settings] = None, **driver_options: Any) -> None:
        self.uri = uri or default_uri()
        self.database = database or os.environ.get("NEO4J_DATABASE") or None
        self.settings = settings or Settings()
        self._driver = GraphDatabase.driver(self.uri, auth=auth if auth is not None else _env_auth(), **driver_options)
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
            for statement in storage.SCHEMA_STATEMENTS:
                session.run(statement).consume()
            extra = _optional_schema_statements()
            for statement in extra:
                session.run(statement).consume()

    def bootstrap(self, *, capsules: bool = False) -> dict[str, Any]:
        """Create the schema objects and apply Genesis (and, optionally, the standard capsules)."""
        from . import resources

        self.ensure_schema()
        names = ["Genesis"] + ([n for n in resources.capsule_names() if n != "Genesis"] if capsules else [])
        applied = {}
        for name in names:
            response = self.execute_kip(resources.capsule_text(name))
            if "error" in response:
                raise KipError(response["error"]["code"], f"Capsule {name} failed: {response['error']['message']}", response["error"].get("hint"))
            applied[name] = response["result"]
        return applied

    # ------------------------------------------------------------------ §6 interface
    def execute_kip(self, command: Optional[str] = None, *, commands: Optional[list[Any]] = None, parameters: Optional[dict[str, Any]] = None, dry_run: bool = False) -> dict[str, Any]:
        """Execute KIP with read-write capability; returns the §6 response dict."""
        return self._execute(command, commands, parameters, dry_run, readonly=False)

    def execute_kip_readonly(self, command: Optional[str] = None, *, commands: Optional[list[Any]] = None, parameters: Optional[dict[str, Any]] = None, dry_run: bool = False) -> dict[str, Any]:
        """Execute read-only KIP (FIND, DESCRIBE, SEARCH, EXPORT); KML is rejected before anything runs."""
        return self._execute(command, commands, parameters, dry_run, readonly=True)

    def _execute(self, command: Any, commands: Any, parameters: Any, dry_run: Any, *, readonly: bool) -> dict[str, Any]:
        from .models import ExecuteRequest

        try:
            request = ExecuteRequest.from_arguments(command=command, commands=commands, parameters=parameters, dry_run=dry_run, max_batch=self.settings.max_batch)
        except KipError as exc:
            return {"error": exc.to_dict()}
        if request.command is not None:
            return self._one(request.command, request.parameters or {}, request.dry_run, readonly)
        results = []
        for item in request.commands:
            text, params = item.text_and_parameters(request.parameters)
            response = self._one(text, params, request.dry_run, readonly)
            results.append(response)
            if "error" in response and response.get("_kind") == "KML" and not response.get("_syntax"):
                break
        for response in results:
            response.pop("_kind", None)
            response.pop("_syntax", None)
        return {"result": results}

    def _one(self, text: str, parameters: dict[str, Any], dry_run: bool, readonly: bool) -> dict[str, Any]:
        """One command → one response. Internal ``_kind``/``_syntax`` keys drive batch rules."""
        try:
            plan = compile_plan(text, parameters, self.settings)
        except KipError as exc:
            return {"error": exc.to_dict(), "_kind": None, "_syntax": True}
        except Exception as exc:  # noqa: BLE001 - a compiler bug must still come back as a KIP error
            log.error("compiler failure: %r", exc, exc_info=log.isEnabledFor(logging.DEBUG))
            return {"error": KipError(errors.INTERNAL_ERROR, f"Internal compiler error: {type(exc).__name__}: {exc}", "This is an engine bug; the command itself may be valid.").to_dict(), "_kind": None, "_syntax": True}
        if readonly and plan.kind == "KML":
            err = KipError(errors.IMMUTABLE_TARGET, "execute_kip_readonly accepts only FIND, DESCRIBE, SEARCH and EXPORT; this is a KML command and nothing was executed.", "Send write commands (UPSERT, UPDATE, MERGE, DELETE) through execute_kip instead.")
            return {"error": err.to_dict(), "_kind": "KML", "_syntax": True}
        try:
            response = self.run_plan(plan, dry_run=dry_run, readonly=readonly)
        except KipError as exc:
            return {"error": exc.to_dict(), "_kind": plan.kind}
        response["_kind"] = plan.kind
        return response

    def run_plan(self, plan: Plan, *, dry_run: bool = False, readonly: bool = False) -> dict[str, Any]:
        """Run a plan in one managed transaction; every failure becomes a KipError."""
        access = "READ" if (readonly or dry_run or plan.access == "READ") else "WRITE"
        timeout = self.settings.query_timeout_s or None
        metadata = {"app": self.settings.app_name, "version": __version__, "kind": plan.kind}
        holder: dict[str, Tx] = {}

        @neo4j.unit_of_work(timeout=timeout, metadata=metadata)
        def work(neo4j_tx: neo4j.ManagedTransaction) -> dict[str, Any]:
            tx = Tx(neo4j_tx, self.settings)
            holder["tx"] = tx
            return plan.dry_run(tx) if dry_run else plan.run(tx)

        try:
            with self.session(access) as session:
                if access == "READ":
                    return session.execute_read(work)
                return session.execute_write(work)
        except KipError:
            raise
        except (Neo4jError, DriverError) as exc:
            current = holder.get("tx").current if holder.get("tx") else None
            raise errors.from_neo4j(exc, current.text if current else None) from None
        except Exception as exc:  # noqa: BLE001
            log.error("execution failure: %r", exc, exc_info=log.isEnabledFor(logging.DEBUG))
            current = holder.get("tx").current if holder.get("tx") else None
            raise KipError(errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "This is an engine bug.", debug={"cypher": current.text} if current else None) from None


def _optional_schema_statements() -> tuple[str, ...]:
    """Schema objects owned by optional modules (full-text / vector indexes for SEARCH)."""
    try:
        from .lower import meta
    except ImportError:
        return ()
    return tuple(getattr(meta, "SCHEMA_STATEMENTS", ()))

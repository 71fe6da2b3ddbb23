"""The administrative programs: the nexus node, the schema of a namespace, the layout migration
(docs/migration.md), the bootstrap's profile record (``kip2cypher.profiles``), EXPLAIN of a
command's statements, the server's version.

The schema and the migration run under the executor's ADMIN access (``execution.loop.AUTO_COMMIT``): each statement an
auto-commit transaction of a WRITE session — schema DDL and ``CALL { … } IN TRANSACTIONS`` run
only there — with ``Settings.admin_timeout_s`` instead of the agents' query timeout. All are
idempotent, so the loop may run them again from the start after a retryable failure.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ... import profiles
from ...cypher import catalog, migration, storage
from ...lower.plan import EMPTY, Compiled
from ..requests import Context, Explain, Run

#: ``catalog.SERVER_VERSION`` as a statement of a program.
SERVER_VERSION = Compiled(catalog.SERVER_VERSION, EMPTY, "the server's version")


def refuse_other_layout(layout: int | None, namespace: str) -> None:
    """Raise the layout refusal (``migration.layout_refusal``) for a nexus in another layout."""
    refusal = migration.layout_refusal(layout, namespace)
    if refusal is not None:
        raise refusal


def rows(statement: Compiled, params: dict[str, Any] | None = None) -> Generator[Any, Any, list[dict[str, Any]]]:
    """The one-statement program: its rows."""
    found = yield Run(statement, params or EMPTY)
    return found


def one(statement: Compiled, params: dict[str, Any] | None = None) -> Generator[Any, Any, dict[str, Any]]:
    """The one-statement program of a statement that returns one row: that row."""
    (row,) = yield from rows(statement, params)
    return row


def nexus_node(ctx: Context) -> Generator[Any, Any, dict[str, Any]]:
    """The facts of the namespace's nexus node (``catalog.nexus_read``: one row, nulls when it has none)."""
    return (yield from one(migration.nexus_read(ctx.names)))


def layouts(namespaces: tuple[str, ...]) -> Generator[Any, Any, dict[str, int | None]]:
    """The storage layout each namespace's nexus node records (None: never bootstrapped)."""
    found = {}
    for namespace in namespaces:
        found[namespace] = (yield from one(migration.nexus_read(storage.names(namespace))))["layout"]
    return found


def server_version() -> Generator[Any, Any, dict[str, Any]]:
    """The server's version (``v``) and edition (``e``)."""
    return (yield from one(SERVER_VERSION))


def explain(statements: tuple[Compiled, ...]) -> Generator[Any, Any, list[Any]]:
    """EXPLAIN each statement (Neo4j plans it, nothing runs); returns their plans (the driver's trees)."""
    trees = []
    for statement in statements:
        trees.append((yield Explain(statement)))
    return trees


def ensure_schema(ctx: Context) -> Generator[Any, Any, dict[str, Any]]:
    """The namespace's constraints and indexes and its nexus node (a new one gets a secret the server draws); returns
    the nexus node's facts (``catalog.nexus_read``'s columns). A nexus in another layout is refused
    before anything is created: bootstrap must not put a new schema beside an unmigrated nexus."""
    names = ctx.names
    (found,) = yield Run(migration.nexus_read(names))
    refuse_other_layout(found["layout"], names.namespace)
    for statement in migration.schema(names):
        yield Run(statement)
    (record,) = yield Run(migration.nexus_create(names))
    refuse_other_layout(record["layout"], names.namespace)
    return record


def migrate(ctx: Context, *, batch: int = migration.DEFAULT_BATCH, dry_run: bool = False) -> Generator[Any, Any, dict[str, Any]]:
    """Move every namespace of the database to ``storage.LAYOUT`` (``migration``'s steps), or with
    ``dry_run`` only count what would change. A namespace already in the layout is left alone, so a
    rerun is a no-op; any namespace in a newer layout refuses the whole migration before a write."""
    (survey,) = yield Run(migration.SURVEY)
    layouts = migration.namespace_layouts(survey["labels"], survey["nexuses"])
    for namespace, layout in sorted(layouts.items()):
        if layout is not None and layout > storage.LAYOUT:
            raise migration.newer_layout(layout, namespace)
    report = []
    for namespace, layout in sorted(layouts.items()):
        entry = yield from _namespace(storage.names(namespace), layout, batch, dry_run)
        if entry is not None:
            report.append(entry)
    return {"layout": storage.LAYOUT, "dry_run": dry_run, "batch": batch, "namespaces": report}


def _namespace(names: storage.Names, layout: int | None, batch: int, dry_run: bool) -> Generator[Any, Any, dict[str, Any] | None]:
    """One namespace's migration (or its count) and its report entry (None: a label of the database's
    token store that no layout-1 element carries, and no nexus node — nothing to report)."""
    entry: dict[str, Any] = {"namespace": names.namespace, "layout": layout, "concepts": 0, "relationships": 0, "labels": [], "types": []}
    if layout == storage.LAYOUT:
        entry["state"] = "current"
        return entry
    concepts = yield Run(migration.pending_concepts(names))
    links = yield Run(migration.pending_links(names))
    entry["labels"] = [{"from": row["name"], "to": names.label(row["name"]), "count": row["count"]} for row in concepts]
    entry["types"] = [{"from": migration.legacy_rel_prefix(names) + row["name"], "to": names.rel(row["name"]), "count": row["count"]} for row in links]
    entry["concepts"] = sum(row["count"] for row in concepts)
    entry["relationships"] = sum(row["count"] for row in links)
    if layout is None and not (entry["concepts"] or entry["relationships"]):
        return None
    if dry_run:
        entry["state"] = "would migrate"
        return entry
    (relabelled,) = yield Run(migration.relabel(names), {"batch": batch})
    (retyped,) = yield Run(migration.retype(names), {"batch": batch})
    (marked,) = yield Run(migration.mark(names))
    entry.update(concepts=relabelled["done"] or 0, relationships=retyped["done"] or 0, state="migrated" if marked["marked"] else "migrated (no nexus node)")
    return entry


def profile_state(ctx: Context) -> Generator[Any, Any, dict[str, Any]]:
    """The namespace's recorded profile, whether it holds a Genesis and which actors exist (``catalog.profile_state``)."""
    names = ctx.names
    params = {"namespace": names.namespace, "meta": storage.CONCEPT_TYPE, "person": "Person", "actors": list(profiles.ACTORS.values())}
    (record,) = yield Run(Compiled(catalog.profile_state(names), params, "the bootstrapped profile"))
    return record


def record_profile(ctx: Context, profile: str) -> Generator[Any, Any, None]:
    """Record on the nexus node the profile a bootstrap applied (``catalog.NEXUS_PROFILE``)."""
    yield Run(Compiled(catalog.NEXUS_PROFILE, {"namespace": ctx.names.namespace, "profile": profile}, "record the profile"))

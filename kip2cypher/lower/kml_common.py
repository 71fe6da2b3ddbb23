"""Pieces shared by the KML lowerings: timestamps, the guarded write tail, error helpers.

The *apply tail* is the heart of every UPSERT write. Given a bound element ``n``
(concept or proposition node) and a ``created`` flag, it

1. takes the element's exclusive write lock *before* reading anything that a
   concurrent writer could change (``SET n._kip_lock = true REMOVE …``; Neo4j
   locks on write), then reads the committed state with ``properties(n)`` —
   never a property value cached by the planner from before the lock;
2. checks the EXPECT VERSION guard, the protected-target rules;
3. compares the new property map with the stored one and writes (bumping
   ``meta._version`` / ``meta._updated_at``) only when something changes — a
   replayed capsule is a true no-op (docs/kml.md, "Versions").

Failures are reported as a ``status`` column; the Python runner turns the first
one into a KipError, which rolls the whole transaction back.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .. import errors, storage
from ..cypher.builder import Ident, Param, Statement
from ..errors import KipError
from .. import schema

LOCK = "_kip_lock"
NEW = "_kip_new"
VERSION = storage.meta_key(storage.VERSION_KEY)
UPDATED_AT = storage.meta_key(storage.UPDATED_AT_KEY)
MERGED_FROM = storage.meta_key(storage.MERGED_FROM_KEY)
CORE_DIRECTIVES = storage.attr_key("core_directives")

C = storage.CONCEPT
P = storage.PROPOSITION
SUBJ = storage.SUBJECT_REL
OBJ = storage.OBJECT_REL

NOW = "now"  # runtime parameter: the command's timestamp


def now_iso() -> str:
    """ISO-8601 UTC with milliseconds and a Z, e.g. 2026-07-04T10:11:12.345Z."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_concept_id() -> str:
    return "'C:' + replace(randomUUID(), '-', '')"


def new_proposition_id(predicate_expr: str) -> str:
    return f"'P:' + replace(randomUUID(), '-', '') + ':' + {predicate_expr}"


def lock(stmt: Statement, var: str) -> None:
    """Take the exclusive lock on ``var`` (a write); a null ``var`` is a no-op."""
    stmt.line("SET ", var, ".", Ident(LOCK), " = true")
    stmt.line("REMOVE ", var, ".", Ident(LOCK))


def apply_tail(stmt: Statement, *, concept: bool, attr_keys: bool = False) -> None:
    """The guarded write for a bound ``n`` / ``created`` / ``row`` (see module doc).

    ``row`` carries ``props`` (full encoded property map), ``own`` (the map
    without inherited UPSERT-level metadata, used on existing protected
    elements), ``expect`` (EXPECT VERSION or null) and, for concepts, ``cd``
    (the encoded core_directives being written, or null).
    """
    lock(stmt, "n")
    stmt.line("REMOVE n.", Ident(NEW))
    stmt.line("WITH row, n, created, properties(n) AS cur")
    if concept:
        stmt.line(
            "WITH row, n, created, cur, coalesce(", schema.cy_protected_concept("cur.type", "cur.name"), ", false) AS prot, ",
            "coalesce(", schema.cy_actor("cur.type", "cur.name"), ", false) AS actor",
        )
    else:
        stmt.line("WITH row, n, created, cur, coalesce(", schema.cy_protected_link("n"), ", false) AS prot, false AS actor")
    stmt.line("WITH row, n, created, cur, prot, actor, CASE WHEN prot AND NOT created THEN row.own ELSE row.props END AS props")
    stmt.line("WITH row, n, created, cur, prot, actor, props, any(k IN keys(props) WHERE cur[k] IS NULL OR cur[k] <> props[k]) AS changed")
    stmt.line("WITH row, n, created, cur, props, changed, CASE")
    stmt.line("  WHEN n IS NULL THEN 'missing'")
    stmt.line("  WHEN row.expect IS NOT NULL AND coalesce(CASE WHEN created THEN 0 ELSE cur.", Ident(VERSION), " END, -1) <> row.expect THEN 'version'")
    stmt.line("  WHEN prot AND NOT created AND changed THEN 'protected'")
    if concept:
        stmt.line(
            "  WHEN actor AND NOT created AND row.cd IS NOT NULL AND cur.", Ident(CORE_DIRECTIVES),
            " IS NOT NULL AND cur.", Ident(CORE_DIRECTIVES), " <> row.cd THEN 'protected'",
        )
    stmt.line("  ELSE 'ok' END AS status")
    stmt.line("CALL (n, cur, props, changed, created, status) {")
    stmt.line("  WITH * WHERE status = 'ok' AND (changed OR created)")
    stmt.line(
        "  SET n += props, n.", Ident(VERSION), " = coalesce(cur.", Ident(VERSION), ", 0) + 1, n.",
        Ident(UPDATED_AT), " = ", Param(None, NOW),
    )
    stmt.line("}")
    extra = ", [k IN keys(n) WHERE k STARTS WITH 'attr.'] AS attr_keys" if attr_keys else ""
    stmt.line("RETURN n.id AS id, status, cur.", Ident(VERSION), " AS version, created, changed, CASE WHEN n IS NULL THEN null ELSE [cur.type, cur.name] END AS tn" + extra)


def version_conflict(element: str, expected: Any, found: Any) -> KipError:
    if expected == 0:
        message = f"EXPECT VERSION 0 (create-only) failed: {element} already exists (its _version is {found})."
    elif found is None:
        message = f"EXPECT VERSION {expected} failed: {element} does not exist yet (it would be created at _version 1)."
    else:
        message = f"EXPECT VERSION {expected} failed: {element} is at _version {found}. Nothing was written."
    return KipError(errors.VERSION_CONFLICT, message, errors.DEFAULT_HINTS[errors.VERSION_CONFLICT])


def not_found(message: str, hint: str = "") -> KipError:
    return KipError(errors.NOT_FOUND, message, hint or errors.DEFAULT_HINTS[errors.NOT_FOUND])

"""Cypher pieces shared by the KML lowerings: the engine's property names, locks, version bumps
and the guarded write tail.

The *apply tail* is the heart of every UPSERT write. Given a bound element ``n``
(concept or proposition node) and a ``created`` flag, it

1. takes the element's exclusive write lock *before* reading anything that a
   concurrent writer could change (``SET n._kip_lock = true REMOVE …``; Neo4j
   locks on write; a node it just created is locked already), then reads the committed state —
   never a property value cached by the planner from before the lock;
2. checks the EXPECT VERSION guard, the protected-target rules;
3. compares the new property map with the stored one (one read per key: a missing key
   compares as null, so it counts as a change) and writes (bumping
   ``meta._version`` / ``meta._updated_at``) only when something changes — a
   replayed capsule is a true no-op (docs/kml.md, "Versions").

Failures are reported as a ``status`` column; the program (``execution/programs``) turns
the first one into a KipError, which rolls the whole transaction back.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Param, Part, Statement, frag, literal
from . import rules

LOCK = "_kip_lock"
VERSION = storage.meta_key(storage.VERSION_KEY)
UPDATED_AT = storage.meta_key(storage.UPDATED_AT_KEY)
MERGED_FROM = storage.meta_key(storage.MERGED_FROM_KEY)
#: The attribute MERGE CONCEPT fills with the union of both concepts' aliases and the source's name.
ALIASES = storage.attr_key("aliases")
CORE_DIRECTIVES = storage.attr_key("core_directives")

NOW = "now"  # runtime parameter: the command's timestamp (``Context.now``)
P_VERSION_KEY = "kip_vkey"


def created_flag(var: str = "n") -> Fragment:
    """Cypher: the element was created by this statement (MERGE … ON CREATE SET ``meta._version`` = 0).

    Version 0 exists only inside the creating transaction (it becomes 1 before the
    statement ends), so no committed element ever matches."""
    return frag("coalesce(", var, ".", Ident(VERSION), " = 0, false)")


def now_iso() -> str:
    """ISO-8601 UTC with milliseconds and a Z, e.g. 2026-07-04T10:11:12.345Z.

    Still used by the UPDATE / DELETE lowerings until their programs take ``Context.now``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def on_create_set(new_id: Part, *more: Part) -> Fragment:
    """``ON CREATE SET n.id = <new id>, <more>…, n.meta._version = 0``: the one place an UPSERT
    gives a new element its id and its creation mark (see ``created_flag``)."""
    parts: list[Part] = ["ON CREATE SET n.id = ", new_id]
    for part in more:
        parts += [", ", part]
    return frag(*parts, ", n.", Ident(VERSION), " = 0")


def new_concept_id() -> str:
    return "'C:' + replace(randomUUID(), '-', '')"


def new_proposition_id(predicate_expr: str) -> Fragment:
    return frag("'P:' + replace(randomUUID(), '-', '') + ':' + ", predicate_expr)


def lock(var: str) -> Fragment:
    """``SET var._kip_lock = true REMOVE var._kip_lock``: a no-op write that takes ``var``'s exclusive
    lock (Neo4j locks on write), so what is read afterwards is committed state; a null ``var`` is a no-op."""
    return frag("SET ", var, ".", Ident(LOCK), " = true REMOVE ", var, ".", Ident(LOCK))


def version_bump(var: str, current: Part) -> Fragment:
    """``var.meta._version = coalesce(<current>, 0) + 1, var.meta._updated_at = $now``: what every
    KML write of an element adds to its SET clause (``current``: the version read under the lock)."""
    return frag(var, ".", Ident(VERSION), " = coalesce(", current, ", 0) + 1, ", var, ".", Ident(UPDATED_AT), " = ", Param(None, NOW))


def stored_version(var: str) -> Fragment:
    """``var.meta._version`` (a map or node read under the lock)."""
    return frag(var, ".", Ident(VERSION))


def superseded(var: str) -> Fragment:
    """Cypher: ``var`` (the stored element) already holds one of ``row.sup``, the newer official
    definitions superseding what the row writes (``upsert.superseding``): writing it changes nothing."""
    return frag("any(_s IN coalesce(row.sup, []) WHERE all(_k IN keys(_s) WHERE ", var, "[_k] = _s[_k]))")


def apply_tail(stmt: Statement, names: storage.Names, *, concept: bool, attr_keys: bool = False) -> None:
    """The guarded write for a bound ``n`` / ``created`` / ``row`` (see module doc); a created
    element carries ``meta._version = 0`` until this tail sets it to 1.

    ``row`` carries ``props`` (full encoded property map), ``own`` (the map
    without inherited UPSERT-level metadata, used on existing protected
    elements), ``expect`` (EXPECT VERSION or null) and, for concepts, ``cd``
    (the encoded core_directives being written, or null); for propositions
    ``btd`` (true for belongs_to_domain links, the only ones that can be protected).

    A freshly created element is already write-locked by its creation; an existing
    one is locked before any of its mutable properties is read. Reads after the
    lock are dynamic (``n[k]``) or first reads of a key in the statement, so the
    planner has no earlier cached value to reuse.
    """
    stmt.line("FOREACH (_ IN CASE WHEN n IS NOT NULL AND NOT created THEN [1] ELSE [] END | ", lock("n"), ")")
    # dynamic read after the lock: never a planner-cached value from before it
    stmt.line("WITH row, n, created, CASE WHEN created THEN 0 ELSE n[", Param(VERSION, P_VERSION_KEY), "] END AS v0")
    carry = "row, n, created, v0"
    if concept:
        # a block named by (type, name) MERGEd on exactly those: no need to read them back
        guards = concept_guards("CASE WHEN row.id IS NULL THEN row.type ELSE n.type END", "CASE WHEN row.id IS NULL THEN row.name ELSE n.name END")
    else:
        guards = frag("CASE WHEN row.btd THEN coalesce(", rules.cy_protected_link("n", names), ", false) ELSE false END AS prot, false AS actor")
    # what the answer reads of ``row`` and ``n`` is read before the write (see merged_concept_tail)
    keep = carry + ", row.i AS i, n.id AS id" + (", [n.type, n.name] AS tn" if attr_keys else "")
    _guarded_write(stmt, carry, guards, keep, concept=concept)
    if attr_keys:
        stmt.line("RETURN i, id, status, v0 AS version, created, tn, ", _attr_keys("n"), " AS attr_keys")
    else:
        stmt.line("RETURN i, id, status, v0 AS version, created")


def merged_concept_tail(stmt: Statement, *, attr_keys: bool = False) -> list[tuple[str, Part]]:
    """``apply_tail`` in the pipeline of ``UNWIND $rows AS row MERGE (n {type: row.type, name:
    row.name}) … ON MATCH SET <match_lock>`` — every row names a different concept by ``{type,
    name}`` (``UpsertPlan.flat``), so no row reads what another writes and no per-row subquery
    is needed. Returns the columns the statement collects (``return_collected``).

    The MERGE has locked a matched element (``match_lock``), so the version is read once,
    after the lock, and ``created`` derived from it (0 exists only inside the creating
    transaction). What the write reads after the lock is read before the write, and ``row.*``
    too (Neo4j cannot tell a row map from a node: a ``row.i`` read after the write costs an
    ``Eager``); the lock is released after the write (docs/performance.md, "Round 8")."""
    stmt.line("WITH row, n, n[", Param(VERSION, P_VERSION_KEY), "] AS v0, n.id AS id")
    stmt.line("WITH row, n, v0, id, coalesce(v0 = 0, false) AS created")
    carry = "row, n, v0, id, created"
    keep = "row.i AS i, n, v0, id, created" + (", [row.type, row.name] AS tn" if attr_keys else "")
    _guarded_write(stmt, carry, concept_guards("row.type", "row.name"), keep, concept=True)
    stmt.line("FOREACH (_ IN CASE WHEN NOT created THEN [1] ELSE [] END | REMOVE n.", Ident(LOCK), ")")
    columns: list[tuple[str, Part]] = [("i", "i"), ("id", "id"), ("status", "status"), ("version", "v0"), ("created", "created")]
    return [*columns, ("tn", "tn"), ("attr_keys", _attr_keys("n"))] if attr_keys else columns


def match_lock(var: str) -> Fragment:
    """``ON MATCH SET var._kip_lock = true``: a MERGE's lock of the element it matched, taken
    before anything of it is read; ``merged_concept_tail`` removes the property."""
    return frag("ON MATCH SET ", var, ".", Ident(LOCK), " = true")


def concept_guards(type_: str, name: str) -> Fragment:
    """``… AS prot, … AS actor``: whether the concept ``type_`` / ``name`` is protected, or an actor
    whose ``core_directives`` only an equal value may overwrite."""
    return frag("coalesce(", rules.cy_protected_concept(type_, name), ", false) AS prot, coalesce(", rules.cy_actor(type_, name), ", false) AS actor")


def _attr_keys(var: str) -> Fragment:
    """The attribute keys ``var`` holds (strict mode's required-attribute check)."""
    return frag("[k IN keys(", var, ") WHERE k STARTS WITH ", literal(storage.ATTR_PREFIX), "]")


def _guarded_write(stmt: Statement, carry: str, guards: Fragment, keep: str, *, concept: bool) -> None:
    """The checks and the write of both tails: ``carry`` (the variables bound so far: ``row``,
    ``n``, ``created``, ``v0`` among them), ``guards`` (``… AS prot, … AS actor``), ``keep`` (what
    the status line carries on); ends with ``status`` bound and the write done when it is 'ok'."""
    stmt.line("WITH ", carry, ", ", guards)
    stmt.line("WITH ", carry, ", prot, actor, CASE WHEN prot AND NOT created THEN coalesce(row.own, row.props) ELSE row.props END AS props")
    stmt.line(
        "WITH ",
        carry,
        ", prot, actor, props, created OR (any(k IN keys(props) WHERE NOT coalesce(n[k] = props[k], false)) AND NOT ",
        superseded("n"),
        ") AS changed",
    )
    stmt.line("WITH ", keep, ", props, changed, CASE")
    stmt.line("  WHEN n IS NULL THEN 'missing'")
    stmt.line("  WHEN row.expect IS NOT NULL AND coalesce(CASE WHEN created THEN 0 ELSE v0 END, -1) <> row.expect THEN 'version'")
    stmt.line("  WHEN prot AND NOT created AND changed THEN 'protected'")
    if concept:
        stmt.line(
            "  WHEN actor AND NOT created AND row.cd IS NOT NULL AND n.",
            Ident(CORE_DIRECTIVES),
            " IS NOT NULL AND n.",
            Ident(CORE_DIRECTIVES),
            " <> row.cd THEN 'protected'",
        )
    stmt.line("  ELSE 'ok' END AS status")
    stmt.line("FOREACH (_ IN CASE WHEN status = 'ok' AND changed THEN [1] ELSE [] END |")
    stmt.line("  SET n += props, ", version_bump("n", "v0"), ")")

"""DELETE PROPOSITIONS (§4.2.3) and DELETE CONCEPT … DETACH (§4.2.4).

Both cascade transitively through higher-order propositions so that no
proposition is ever left pointing at a deleted element: the dependents of a
deleted element are the propositions that reach it through a chain of
``KIP_SUBJECT`` / ``KIP_OBJECT`` relationships. Deleting a proposition removes
its reified node and its native predicate relationship in the same
transaction. The counts in the response include the cascade (the audit the
spec asks for); the dry-run probe computes the same counts, cascade included, without
locking or deleting. Both lower to a ``BulkPlan`` (``update.py``), run by
``kip2cypher.execution.programs.bulk``.
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Statement, frag
from ..domain import rules
from ..syntax import ast
from . import context
from .named import named_target
from .update import BulkPlan, Targets, lock


def dependents(roots: str, names: storage.Names) -> Fragment:
    """Cypher expression: every proposition that (transitively) references an element of the list ``roots``."""
    return frag(
        "COLLECT { UNWIND ", roots, " AS _d MATCH (_h:", names.proposition, ")-[:", names.subject_rel, "|", names.object_rel, "*1..]->(_d) RETURN DISTINCT _h }"
    )


def lock_all(stmt: Statement, list_var: str) -> None:
    """Write-lock every element of ``list_var`` (a no-op write). Creating a KIP_SUBJECT / KIP_OBJECT
    relationship locks its endpoint, so once an element is locked no concurrent command can add
    a proposition referencing it until this transaction ends."""
    stmt.line("CALL (", list_var, ") { UNWIND ", list_var, " AS _lk ", lock("_lk"), " }")


def locked_dependents(stmt: Statement, roots: str, out: str, keep: str, guard: str, names: storage.Names) -> None:
    """``out`` = the transitive dependents of ``roots``, read only after ``roots`` are locked, then
    locked and read once more: a proposition committed by a concurrent writer between the first
    read and the lock is picked up instead of being left dangling when ``roots`` are deleted
    (tests/test_reliability_concurrency.py::test_link_writers_racing_endpoint_deletion_leave_no_orphans)."""
    stmt.line("CALL (", keep, ") { WITH ", keep, " WHERE ", guard, " UNWIND ", roots, " AS _lk ", lock("_lk"), " }")
    stmt.line("WITH ", keep, ", CASE WHEN ", guard, " THEN ", dependents(roots, names), " ELSE [] END AS _first")
    lock_all(stmt, "_first")
    stmt.line("WITH ", keep, ", CASE WHEN ", guard, " THEN ", dependents(roots, names), " ELSE [] END AS ", out)


def delete_propositions(stmt: Statement, list_var: str, names: storage.Names, *, native: str | None = "") -> None:
    """Delete the proposition nodes in ``list_var`` with their native relationships (unit subqueries).

    ``native``: the list whose native relationships are looked up and deleted explicitly
    (default: ``list_var`` itself; ``None``: none). A native relationship runs between the
    proposition's subject and object nodes, so when one of those nodes is deleted by a
    ``DETACH DELETE`` of the same statement it goes with it, and looking it up (an
    ``Expand(Into)`` between two possibly dense nodes) is wasted work. Inside a
    ``stmt.block`` the lines are indented with it."""
    native = list_var if native == "" else native
    if native is not None:
        _delete_native(stmt, native, names)
    with stmt.block("CALL (", list_var, ")"):
        stmt.line("UNWIND ", list_var, " AS _x")
        stmt.line("DETACH DELETE _x")


def _delete_native(stmt: Statement, list_var: str, names: storage.Names) -> None:
    with stmt.block("CALL (", list_var, ")"):
        stmt.line("UNWIND ", list_var, " AS _x")
        with stmt.block("CALL (_x)"):
            stmt.line("MATCH (_x)-[:", names.subject_rel, "]->(_s)")
            stmt.line("MATCH (_x)-[:", names.object_rel, "]->(_o)")
            stmt.line("MATCH (_s)-[_r]->(_o) WHERE _r.", Ident(names.link_id), " = _x.id")
            stmt.line("DELETE _r")


def lower_delete_propositions(command: ast.DeletePropositions, parameters: dict[str, Any], settings: Settings) -> BulkPlan:
    targets = Targets(command.where, command.target, parameters, settings, "DELETE PROPOSITIONS", {context.PROPOSITION, context.ELEMENT})
    v, stmt, names = targets.var, targets.stmt, targets.names
    if targets.kind != context.PROPOSITION:  # an endpoint variable may bind concepts too
        stmt.line("WITH ", v, " WHERE ", v, ":", names.proposition)
    probe = targets.collect_guarded("_ls", rules.cy_protected_link("x", names))
    probe.line("WITH _ls, _bad, CASE WHEN size(_bad) = 0 THEN ", dependents("_ls", names), " ELSE [] END AS _deps")
    probe.line("RETURN size(_ls) AS matched, size(_ls) + size([h IN _deps WHERE NOT h IN _ls]) AS deleted, _bad")
    locked_dependents(stmt, "_ls", "_deps", "_ls, _bad", "size(_bad) = 0", names)
    stmt.line("WITH _ls, _bad, CASE WHEN size(_bad) = 0 THEN _ls + [h IN _deps WHERE NOT h IN _ls] ELSE [] END AS _all")
    # A dependent references a deleted proposition directly (it reaches one through a chain of
    # KIP_SUBJECT / KIP_OBJECT, and the first hop is deleted too), so its native relationship
    # goes with that node's DETACH DELETE: only the matched ones are looked up.
    stmt.line("WITH _ls, _bad, _all, _all[..size(_ls)] AS _roots")
    delete_propositions(stmt, "_all", names, native="_roots")
    stmt.line("RETURN size(_ls) AS matched, size(_all) AS deleted, _bad")
    named = named_target(command.where, command.target)
    return targets.plan("DELETE PROPOSITIONS", "delete with higher-order cascade", probe, (("deleted_propositions", "deleted"),), named=named)


def lower_delete_concept(command: ast.DeleteConcept, parameters: dict[str, Any], settings: Settings) -> BulkPlan:
    targets = Targets(command.where, command.target, parameters, settings, "DELETE CONCEPT", {context.CONCEPT, context.ELEMENT})
    v, stmt, names = targets.var, targets.stmt, targets.names
    if targets.kind != context.CONCEPT:  # an endpoint variable may bind propositions too
        stmt.line("WITH ", v, " WHERE ", v, ":", names.concept)
    protected = frag("coalesce(", rules.cy_protected_node("x", names, actors=True), ", false)")
    probe = targets.collect_guarded("_cs", protected)
    probe.line("WITH _cs, _bad, CASE WHEN size(_bad) = 0 THEN ", dependents("_cs", names), " ELSE [] END AS _ps")
    probe.line("RETURN size(_cs) AS matched, size(_cs) AS concepts, size(_ps) AS propositions, _bad")
    locked_dependents(stmt, "_cs", "_ps", "_cs, _bad", "size(_bad) = 0", names)
    # Every cascaded proposition references a deleted concept or a cascaded proposition
    # directly (the first hop of its chain to a deleted concept), so its native relationship
    # is removed by that node's DETACH DELETE: no lookup.
    delete_propositions(stmt, "_ps", names, native=None)
    with stmt.block("CALL (_cs, _bad)"):
        stmt.line("WITH _cs WHERE size(_bad) = 0")
        stmt.line("UNWIND _cs AS _c")
        stmt.line("DETACH DELETE _c")
    stmt.line("RETURN size(_cs) AS matched, size(_cs) AS concepts, size(_ps) AS propositions, _bad")
    counts = (("deleted_concepts", "concepts"), ("deleted_propositions", "propositions"))
    return targets.plan("DELETE CONCEPT", "delete with transitive cascade", probe, counts, named=named_target(command.where, command.target))

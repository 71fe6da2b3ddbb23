"""DELETE PROPOSITIONS (§4.2.3) and DELETE CONCEPT … DETACH (§4.2.4).

Both cascade transitively through higher-order propositions so that no
proposition is ever left pointing at a deleted element: the dependents of a
deleted element are the propositions that reach it through a chain of
``KIP_SUBJECT`` / ``KIP_OBJECT`` relationships. Deleting a proposition removes
its reified node and its native predicate relationship in the same
transaction. The counts in the response include the cascade (the audit the
spec asks for).
"""
from __future__ import annotations

from typing import Any

from . import rules
from ..syntax import ast
from ..config import Settings
from ..cypher.builder import Ident, Statement
from ._legacy import Compiled, Plan, Tx
from . import writes as K
from . import pattern as pat
from .update import Targets, element_label, raise_protected


def dependents(list_var: str) -> str:
    """Cypher expression: every proposition that (transitively) references an element of ``list_var``."""
    return (
        f"COLLECT {{ UNWIND {list_var} AS _d MATCH (_h:{K.P})-[:{K.SUBJ}|{K.OBJ}*1..]->(_d) RETURN DISTINCT _h }}"
    )


def lock_all(stmt: Statement, list_var: str) -> None:
    """Write-lock every element of ``list_var`` (a no-op write). Creating a KIP_SUBJECT / KIP_OBJECT
    relationship locks its endpoint, so once an element is locked no concurrent command can add
    a proposition referencing it until this transaction ends."""
    stmt.line(f"CALL ({list_var}) {{ UNWIND {list_var} AS _lk SET _lk.", Ident(K.LOCK), " = true REMOVE _lk.", Ident(K.LOCK), " }")


def locked_dependents(stmt: Statement, roots: str, out: str, keep: str, guard: str) -> None:
    """``out`` = the transitive dependents of ``roots``, read only after ``roots`` are locked, then
    locked and read once more: a proposition committed by a concurrent writer between the first
    read and the lock is picked up instead of being left dangling when ``roots`` are deleted
    (tests/test_reliability_concurrency.py::test_link_writers_racing_endpoint_deletion_leave_no_orphans)."""
    stmt.line(f"CALL ({keep}) {{ WITH {keep} WHERE {guard} UNWIND {roots} AS _lk SET _lk.", Ident(K.LOCK), " = true REMOVE _lk.", Ident(K.LOCK), " }")
    stmt.line(f"WITH {keep}, CASE WHEN {guard} THEN {dependents(roots)} ELSE [] END AS _first")
    lock_all(stmt, "_first")
    stmt.line(f"WITH {keep}, CASE WHEN {guard} THEN {dependents(roots)} ELSE [] END AS {out}")


def delete_propositions(stmt: Statement, list_var: str, indent: str = "", native: str | None = "") -> None:
    """Delete the proposition nodes in ``list_var`` with their native relationships (unit subqueries).

    ``native``: the list whose native relationships are looked up and deleted explicitly
    (default: ``list_var`` itself; ``None``: none). A native relationship runs between the
    proposition's subject and object nodes, so when one of those nodes is deleted by a
    ``DETACH DELETE`` of the same statement it goes with it, and looking it up (an
    ``Expand(Into)`` between two possibly dense nodes) is wasted work."""
    native = list_var if native == "" else native
    if native is not None:
        _delete_native(stmt, native, indent)
    stmt.line(indent, f"CALL ({list_var}) {{")
    stmt.line(indent, f"  UNWIND {list_var} AS _x")
    stmt.line(indent, "  DETACH DELETE _x")
    stmt.line(indent, "}")


def _delete_native(stmt: Statement, list_var: str, indent: str) -> None:
    stmt.line(indent, f"CALL ({list_var}) {{")
    stmt.line(indent, f"  UNWIND {list_var} AS _x")
    stmt.line(indent, "  CALL (_x) {")
    stmt.line(indent, f"    MATCH (_x)-[:{K.SUBJ}]->(_s)")
    stmt.line(indent, f"    MATCH (_x)-[:{K.OBJ}]->(_o)")
    stmt.line(indent, "    MATCH (_s)-[_r]->(_o) WHERE _r.", Ident("kip_id"), " = _x.id")
    stmt.line(indent, "    DELETE _r")
    stmt.line(indent, "  }")
    stmt.line(indent, "}")


def lower_delete_propositions(command: ast.DeletePropositions, parameters: dict[str, Any], settings: Settings) -> Plan:
    targets = Targets(command.where, command.target, parameters, settings, "DELETE PROPOSITIONS", {pat.PROPOSITION, pat.ELEMENT})
    v = targets.var
    stmt = targets.stmt
    if targets.kind != pat.PROPOSITION:  # an endpoint variable may bind concepts too
        stmt.line("WITH ", v, f" WHERE ", v, f":{K.P}")
    stmt.line("WITH collect(", v, ") AS _ls")
    stmt.line("WITH _ls, [x IN _ls WHERE ", rules.cy_protected_link("x"), " | ", element_label("x"), "] AS _bad")
    read_only = Statement().extend(stmt)
    read_only.line("RETURN size(_ls) AS matched, 0 AS deleted, _bad")
    locked_dependents(stmt, "_ls", "_deps", "_ls, _bad", "size(_bad) = 0")
    stmt.line("WITH _ls, _bad, CASE WHEN size(_bad) = 0 THEN _ls + [h IN _deps WHERE NOT h IN _ls] ELSE [] END AS _all")
    # A dependent references a deleted proposition directly (it reaches one through a chain of
    # KIP_SUBJECT / KIP_OBJECT, and the first hop is deleted too), so its native relationship
    # goes with that node's DETACH DELETE: only the matched ones are looked up.
    stmt.line("WITH _ls, _bad, _all, _all[..size(_ls)] AS _roots")
    delete_propositions(stmt, "_all", native="_roots")
    stmt.line("RETURN size(_ls) AS matched, size(_all) AS deleted, _bad")
    write = Compiled.of(stmt, "DELETE PROPOSITIONS: match, check protection, delete with higher-order cascade")
    probe = Compiled.of(read_only, "DELETE PROPOSITIONS dry_run")

    def run(tx: Tx, compiled: Compiled, dry: bool) -> dict[str, Any]:
        row = tx.run(compiled)[0]
        raise_protected(row["_bad"], "DELETE PROPOSITIONS")
        targets.check_grounding(tx, row["matched"])
        return {"result": {"deleted_propositions": row["deleted"]}}

    return Plan("KML", "WRITE", [write], lambda tx: run(tx, write, False), lambda tx: run(tx, probe, True))


def lower_delete_concept(command: ast.DeleteConcept, parameters: dict[str, Any], settings: Settings) -> Plan:
    targets = Targets(command.where, command.target, parameters, settings, "DELETE CONCEPT", {pat.CONCEPT, pat.ELEMENT})
    v = targets.var
    stmt = targets.stmt
    if targets.kind != pat.CONCEPT:  # an endpoint variable may bind propositions too
        stmt.line("WITH ", v, " WHERE ", v, f":{K.C}")
    stmt.line("WITH collect(", v, ") AS _cs")
    stmt.line(
        "WITH _cs, [x IN _cs WHERE coalesce(", rules.cy_protected_concept("x.type", "x.name"), " OR ",
        rules.cy_actor("x.type", "x.name"), ", false) | ", element_label("x"), "] AS _bad",
    )
    read_only = Statement().extend(stmt)
    read_only.line("RETURN size(_cs) AS matched, 0 AS concepts, 0 AS propositions, _bad")
    locked_dependents(stmt, "_cs", "_ps", "_cs, _bad", "size(_bad) = 0")
    # Every cascaded proposition references a deleted concept or a cascaded proposition
    # directly (the first hop of its chain to a deleted concept), so its native relationship
    # is removed by that node's DETACH DELETE: no lookup.
    delete_propositions(stmt, "_ps", native=None)
    stmt.line("CALL (_cs, _bad) {")
    stmt.line("  WITH _cs WHERE size(_bad) = 0")
    stmt.line("  UNWIND _cs AS _c")
    stmt.line("  DETACH DELETE _c")
    stmt.line("}")
    stmt.line("RETURN size(_cs) AS matched, size(_cs) AS concepts, size(_ps) AS propositions, _bad")
    write = Compiled.of(stmt, "DELETE CONCEPT: match, check protection, delete with transitive cascade")
    probe = Compiled.of(read_only, "DELETE CONCEPT dry_run")

    def run(tx: Tx, compiled: Compiled, dry: bool) -> dict[str, Any]:
        row = tx.run(compiled)[0]
        raise_protected(row["_bad"], "DELETE CONCEPT")
        targets.check_grounding(tx, row["matched"])
        return {"result": {"deleted_concepts": row["concepts"], "deleted_propositions": row["propositions"]}}

    return Plan("KML", "WRITE", [write], lambda tx: run(tx, write, False), lambda tx: run(tx, probe, True))

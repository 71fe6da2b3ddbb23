"""The MERGE CONCEPT program: bind, check, lock and read, fill, repoint level by level, delete.

``lower/merge.py`` describes each step. The repoint step is a worklist: the first level moves
the links of the source to the target; a moved link that collides with an existing
``(s, p, o)`` becomes a duplicate whose own referrers (higher-order propositions) form the
next level — one statement per level, until a level reports no collision. A dry run stops
after the checks.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ... import errors
from ...cypher import storage
from ...domain import rules, writes
from ...errors import KipError
from ...lower.merge import MergePlan
from ..requests import Context, Run
from . import grounding
from .write_status import not_found

Program = Generator[Any, Any, Any]


def merge(plan: MergePlan, ctx: Context) -> Generator[Any, Any, dict]:
    bound = yield from _bind(plan)
    if ctx.dry_run:
        return _response(False, 0, 0, 0)
    if bound is None:
        return _response(True, 0, 0, 0)
    s, t = bound
    run = plan.statements
    rows = yield Run(run.lock, {"s": s["id"], "t": t["id"]})
    if not rows:
        raise not_found(f"{_label(s)} or {_label(t)} was removed concurrently; nothing was merged.")
    fill, filled = _fill(s, t, rows[0]["s"], rows[0]["t"])
    yield Run(run.fill, {"t": t["id"], "fill": fill, writes.NOW: ctx.now})
    repointed, dead = yield from _repoint(run.repoint, s["id"], t["id"], ctx.now)
    yield Run(run.delete, {"dead": dead, "s": s["id"]})
    return _response(True, repointed, len(dead), filled)


def _response(merged: bool, repointed: int, deduplicated: int, filled: int) -> dict:
    return {"result": {"merged": merged, "links_repointed": repointed, "links_deduplicated": deduplicated, "attributes_filled": filled}}


def _bind(plan: MergePlan) -> Program:
    """The one source and one target (their id, type, name), or None when they are the same node."""
    row = (yield Run(plan.bind))[0]
    empty = row["ns"] == 0 or row["nt"] == 0
    yield from grounding.check(plan.names, plan.grounding_all if empty else plan.grounding_optional, plan.grounding_at)
    sides = ((plan.source, row["ns"], row["ss"], plan.source_at), (plan.target, row["nt"], row["ts"], plan.target_at))
    if empty:
        hint = yield from _already_merged_hint(plan)
        unbound = [(var, at) for var, n, _, at in sides if n == 0]
        missing = " and ".join(f"?{var}" for var, _ in unbound)
        raise not_found(f"MERGE CONCEPT found no concept for {missing}: the WHERE pattern matched nothing.", hint, unbound[0][1])
    for var, n, infos, at in sides:
        if infos[0]["id"] is None or not (infos[0]["concept"] or infos[0]["link"]):
            # Matched, then deleted by a concurrent command before this statement read it: a
            # deleted node reads as no labels (and, most of the time, no properties) — neither
            # a concept nor "a proposition link" (seen: its id still read, its labels gone).
            raise not_found(f"The concept ?{var} matched was deleted by a concurrent command while MERGE read it; nothing was merged.", offset=at)
        if n > 1:
            raise KipError(
                errors.DUPLICATE_EXISTS,
                f"MERGE CONCEPT needs ?{var} to bind exactly one concept, but it bound {n} (e.g. {', '.join(_label(i) for i in infos)}).",
                f'Narrow the WHERE pattern until ?{var} matches exactly one node, e.g. with {{type: "…", name: "…"}} or {{id: "…"}}.',
                offset=at,
            )
        if not infos[0]["concept"]:
            raise KipError(
                errors.CONSTRAINT_VIOLATION,
                f"MERGE CONCEPT merges concept nodes, but ?{var} bound a proposition link.",
                "Bind ?source and ?target with concept clauses.",
                offset=at,
            )
    s, t = row["ss"][0], row["ts"][0]
    if s["id"] == t["id"]:
        return None
    if s["type"] != t["type"]:
        raise KipError(
            errors.CONSTRAINT_VIOLATION,
            f"MERGE CONCEPT needs two concepts of the same type, got {_label(s)} and {_label(t)}.",
            "Only duplicates of one concept type can be merged; re-type one of them first or link them instead.",
            offset=plan.source_at,
        )
    for info, at in ((s, plan.source_at), (t, plan.target_at)):
        if info["protected"]:
            raise rules.immutable(_label(info), "it cannot take part in a MERGE", at)
    return s, t


def _already_merged_hint(plan: MergePlan) -> Program:
    """A replayed MERGE finds no source: say so when a concept's ``_merged_from`` lists it."""
    if plan.source_identity is None:
        return ""
    type_, name = plan.source_identity
    entry = f"{type_}:{name}"
    found = yield Run(plan.statements.already_merged, {"type": type_, "entry": entry})
    if not found:
        return ""
    return (
        f"The merge already happened: {rules.label(type_, name)} was merged into "
        f'{rules.label(found[0]["type"], found[0]["name"])} (its metadata._merged_from lists "{entry}"). '
        "Treat this as success; query the surviving concept instead."
    )


def _fill(s: dict, t: dict, sp: dict[str, Any], tp: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """What the target gains (target wins conflicts), and how many attributes that counts: each
    key copied, and ``aliases`` once when the target's list changed — §4.4 puts the union and
    the source's name inside step 2, "Fill attributes" (as the reference counts; docs/interop.md A10)."""
    fill: dict[str, Any] = {}
    filled = 0
    for key, value in sp.items():
        if key.startswith(storage.ATTR_PREFIX) and key != writes.ALIASES and key not in tp:
            fill[key] = value
            filled += 1
    fill[writes.ALIASES] = _union(tp, sp, writes.ALIASES, s["name"], exclude=(t["name"],))
    if _decode_list(fill[writes.ALIASES]) != _decode_list(tp.get(writes.ALIASES)):
        filled += 1
    fill[writes.MERGED_FROM] = _union(tp, sp, writes.MERGED_FROM, f"{s['type']}:{s['name']}")
    return fill, filled


def _union(tp: dict[str, Any], sp: dict[str, Any], key: str, last: str, exclude: tuple[str, ...] = ()) -> Any:
    """The target's list under ``key``, then the source's and ``last`` where new (never one of
    ``exclude``), encoded: the aliases and the ``_merged_from`` trail."""
    out = _decode_list(tp.get(key))
    for item in _decode_list(sp.get(key)) + [last]:
        if item not in out and item not in exclude:
            out.append(item)
    return storage.encode(out)


def _decode_list(value: Any) -> list:
    v = storage.decode(value)
    return list(v) if isinstance(v, list) else ([] if v is None else [v])


def _repoint(repoint: Any, source: str, target: str, now: str) -> Program:
    """The worklist, one statement per level; returns (links repointed, duplicates to delete)."""
    repointed = 0
    dead: list[str] = []
    pairs = [[source, target]]
    while pairs:
        rows = yield Run(repoint, {"pairs": pairs, "dead": list(dead), writes.NOW: now})
        pairs = []
        for r in rows:
            if r["into"] is None:
                repointed += 1
            else:
                dead.append(r["link"])
                pairs.append([r["link"], r["into"]])
    return repointed, dead


def _label(info: dict[str, Any]) -> str:
    return rules.label(info["type"], info["name"])

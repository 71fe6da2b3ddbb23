"""MERGE CONCEPT ?source INTO ?target (spec §4.4), one transaction.

1. *bind*: the WHERE is lowered once; the distinct sources and targets are
   collected (zero → KIP_3002, several → KIP_3003, not concepts or different
   types → KIP_2002, protected → KIP_3004, same node → no-op success).
2. *lock and read* both nodes (write locks first, then ``properties``).
3. *fill* (Python computes, Cypher writes): attributes present on the source and
   absent on the target are copied (the target wins conflicts); ``aliases`` are
   unioned and the source's name appended; ``_merged_from`` = target's trail +
   source's trail + ``"<Type>:<name>"`` of the source (duplicates dropped).
4. *repoint*: every proposition referencing the source is repointed to the
   target, keeping its id: ``subject``/``object`` properties, the
   ``KIP_SUBJECT``/``KIP_OBJECT`` relationships and the native predicate
   relationship (deleted and recreated between the new endpoints). When the
   repointed link would duplicate an existing (s, p, o) the existing link
   survives, missing attribute/metadata keys are filled from the duplicate, and
   the duplicate is merged into the survivor the same way — the higher-order
   propositions that reference it are repointed (recursively: a worklist of
   (from, into) pairs, one statement per level).
5. *delete* the duplicates and the source.

Counts: ``links_repointed`` = propositions whose endpoint moved (at any level);
``links_deduplicated`` = duplicates removed; ``attributes_filled`` = attribute
keys the target gained from the source (``aliases`` counts once when the target
had none and the source had some).
"""
from __future__ import annotations

import json
from typing import Any, Optional

from .. import errors

from ..cypher import storage
from . import rules
from ..syntax import ast
from ..config import Settings
from ..cypher.builder import Ident, Param, Statement
from ..errors import KipError
from ._legacy import Compiled, Plan, Tx
from ..syntax.values import resolve
from . import writes as K
from . import _legacy, grounding
from . import pattern as pat
from .delete import delete_propositions

ALIASES = storage.attr_key("aliases")


def _bind_statement(pattern: pat.Pattern, source: str, target: str) -> Compiled:
    pattern.distinct([source, target], used_in="MERGE")
    s, t = pattern.ref(source), pattern.ref(target)
    stmt = pattern.statement()
    stmt.line("WITH collect(DISTINCT ", s, ") AS _ss, collect(DISTINCT ", t, ") AS _ts")
    info = (
        f"{{id: x.id, type: x.type, name: x.name, concept: x:{K.C}, "
        "protected: coalesce(" + "[x.type, x.name] IN $" + rules.P_PROTECTED + " OR [x.type, x.name] IN $" + rules.P_ACTORS + ", false)}"
    )
    stmt.line(f"RETURN size(_ss) AS ns, size(_ts) AS nt, [x IN _ss[..2] | {info}] AS ss, [x IN _ts[..2] | {info}] AS ts")
    compiled = Compiled.of(stmt, "MERGE: bind ?source and ?target")
    params = dict(compiled.params)
    params[rules.P_PROTECTED] = rules.protected_pairs().value
    params[rules.P_ACTORS] = rules.actor_pairs().value
    return Compiled(compiled.text, params, compiled.label)


def _lock_statement() -> Compiled:
    s = Statement()
    s.line(f"MATCH (s:{K.C} {{id: $s}}), (t:{K.C} {{id: $t}})")
    s.line("SET s.", Ident(K.LOCK), " = true, t.", Ident(K.LOCK), " = true")
    s.line("REMOVE s.", Ident(K.LOCK), ", t.", Ident(K.LOCK))
    # Both locks are held now: match again, so a concurrent MERGE / DELETE that removed either node
    # while this transaction waited for its lock is seen (no rows → KIP_3002) instead of merging a
    # ghost (tests/test_reliability_concurrency.py::test_concurrent_merge_of_one_source_into_two_targets).
    s.line("WITH count(*) AS _locked")
    s.line(f"MATCH (s:{K.C} {{id: $s}}), (t:{K.C} {{id: $t}})")
    s.line("RETURN properties(s) AS s, properties(t) AS t")
    return Compiled.of(s, "MERGE: lock and read source and target")


def _fill_statement() -> Compiled:
    s = Statement()
    s.line(f"MATCH (t:{K.C} {{id: $t}})")
    s.line("SET t += $fill, t.", Ident(K.VERSION), " = coalesce(t.", Ident(K.VERSION), ", 0) + 1, t.", Ident(K.UPDATED_AT), " = $now")
    return Compiled.of(s, "MERGE: fill the target's attributes and _merged_from")


def _repoint_statement() -> Compiled:
    s = Statement()
    s.line("UNWIND $pairs AS pair")
    s.line("CALL (pair) {")
    s.line(f"  OPTIONAL MATCH (xc:{K.C} {{id: pair[0]}}) OPTIONAL MATCH (xp:{K.P} {{id: pair[0]}})")
    s.line(f"  OPTIONAL MATCH (yc:{K.C} {{id: pair[1]}}) OPTIONAL MATCH (yp:{K.P} {{id: pair[1]}})")
    s.line("  RETURN coalesce(xc, xp) AS x, coalesce(yc, yp) AS y")
    s.line("}")
    s.line(f"MATCH (l:{K.P})-[:{K.SUBJ}|{K.OBJ}]->(x)")
    s.line("WHERE NOT l.id IN $dead")
    s.line("WITH DISTINCT x, y, l")
    s.line("CALL (x, y, l) {")
    s.line("  SET l.", Ident(K.LOCK), " = true REMOVE l.", Ident(K.LOCK))
    s.line("  WITH x, y, l, properties(l) AS cur")
    s.line("  WITH x, y, l, cur, CASE WHEN cur.subject = x.id THEN y.id ELSE cur.subject END AS ns,")
    s.line("       CASE WHEN cur.object = x.id THEN y.id ELSE cur.object END AS no")
    s.line(f"  OPTIONAL MATCH (q:{K.P} {{subject: ns, predicate: cur.predicate, object: no}}) WHERE q <> l")
    s.line("  WITH x, y, l, cur, ns, no, head(collect(q)) AS q")
    # -- no collision: repoint, keeping the id
    s.line("  CALL (x, y, l, cur, ns, no, q) {")
    s.line("    WITH * WHERE q IS NULL")
    s.line(f"    MATCH (l)-[:{K.SUBJ}]->(os) MATCH (l)-[:{K.OBJ}]->(oo)")
    s.line("    OPTIONAL MATCH (os)-[r]->(oo) WHERE r.", Ident(storage.LINK_ID), " = l.id")
    s.line("    DELETE r")
    s.line("    WITH DISTINCT x, y, l, cur, ns, no")
    s.line(f"    OPTIONAL MATCH (l)-[k:{K.SUBJ}|{K.OBJ}]->(x)")
    s.line("    DELETE k")
    s.line("    WITH DISTINCT x, y, l, cur, ns, no")
    s.line(f"    FOREACH (_ IN CASE WHEN cur.subject = x.id THEN [1] ELSE [] END | CREATE (l)-[:{K.SUBJ}]->(y))")
    s.line(f"    FOREACH (_ IN CASE WHEN cur.object = x.id THEN [1] ELSE [] END | CREATE (l)-[:{K.OBJ}]->(y))")
    s.line("    SET l.subject = ns, l.object = no, l.", Ident(K.VERSION), " = coalesce(cur.", Ident(K.VERSION), ", 0) + 1, l.", Ident(K.UPDATED_AT), " = $now")
    s.line("    WITH l, cur")
    s.line(f"    MATCH (l)-[:{K.SUBJ}]->(s2) MATCH (l)-[:{K.OBJ}]->(o2)")
    s.line("    CREATE (s2)-[:$(cur.predicate) {", Ident(storage.LINK_ID), ": l.id}]->(o2)")
    s.line("  }")
    # -- collision: the existing link survives, missing keys filled from the duplicate
    s.line("  CALL (l, q, cur) {")
    s.line("    WITH * WHERE q IS NOT NULL")
    s.line("    SET q.", Ident(K.LOCK), " = true REMOVE q.", Ident(K.LOCK))
    s.line("    WITH l, q, cur, properties(q) AS qc")
    s.line("    WITH l, q, cur, qc, [k IN keys(cur) WHERE (k STARTS WITH 'attr.' OR (k STARTS WITH 'meta.' AND NOT k STARTS WITH 'meta._')) AND qc[k] IS NULL] AS fill")
    s.line("    FOREACH (k IN fill | SET q[k] = cur[k])")
    s.line("    FOREACH (_ IN CASE WHEN size(fill) > 0 THEN [1] ELSE [] END |")
    s.line("      SET q.", Ident(K.VERSION), " = coalesce(qc.", Ident(K.VERSION), ", 0) + 1, q.", Ident(K.UPDATED_AT), " = $now)")
    s.line("  }")
    s.line("  RETURN l.id AS link, q.id AS into")
    s.line("}")
    s.line("RETURN link, into")
    return Compiled.of(s, "MERGE: repoint the links of one level (source, then duplicates)")


def _delete_statement() -> Compiled:
    s = Statement()
    s.line(f"OPTIONAL MATCH (d:{K.P}) WHERE d.id IN $dead")
    s.line("WITH collect(d) AS _dead")
    delete_propositions(s, "_dead")
    s.line(f"WITH 1 AS _one MATCH (src:{K.C} {{id: $s}})")
    s.line("DETACH DELETE src")
    return Compiled.of(s, "MERGE: delete duplicates and the source")


def _already_merged_statement() -> Compiled:
    s = Statement()
    s.line(f"MATCH (n:{K.C} {{type: $type}}) WHERE $entry IN n.", Ident(K.MERGED_FROM))
    s.line("RETURN n.type AS type, n.name AS name LIMIT 1")
    return Compiled.of(s, "MERGE: diagnose a replay (already merged?)")


_STATIC: dict[str, Compiled] = {}


def _static(name: str) -> Compiled:
    if name not in _STATIC:
        _STATIC[name] = {"lock": _lock_statement, "fill": _fill_statement, "repoint": _repoint_statement,
                         "delete": _delete_statement, "merged": _already_merged_statement}[name]()
    return _STATIC[name]


def _source_identity(where: tuple, source: str, parameters: dict[str, Any]) -> Optional[tuple[str, str]]:
    """The {type, name} the WHERE gives ?source literally, if any (for the already-merged hint)."""
    for item in where:
        if isinstance(item, ast.ConceptClause) and item.var == source and item.type is not None and item.name is not None:
            try:
                type_, name = resolve(item.type, parameters), resolve(item.name, parameters)
            except KipError:
                return None
            if isinstance(type_, str) and isinstance(name, str):
                return type_, name
    return None


def _label(info: dict[str, Any]) -> str:
    return rules.label(info["type"], info["name"])


def _decode_list(value: Any) -> list:
    v = storage.decode(value)
    return list(v) if isinstance(v, list) else ([] if v is None else [v])


def lower_merge(command: ast.MergeConcept, parameters: dict[str, Any], settings: Settings) -> Plan:
    pattern = pat.lower_where(command.where, parameters, settings)
    pattern.require(command.source, used_in="MERGE", kinds={pat.CONCEPT, pat.ELEMENT})
    pattern.require(command.target, used_in="MERGE", kinds={pat.CONCEPT, pat.ELEMENT})
    grounding_all = grounding.names(pattern.grounding)
    grounding_optional = grounding.names(pattern.grounding, required_only=False)
    bind = _bind_statement(pattern, command.source, command.target)
    source_identity = _source_identity(command.where, command.source, parameters)
    src_name, tgt_name = command.source, command.target

    def check(tx: Tx) -> Optional[tuple[dict, dict]]:
        row = tx.run(bind)[0]
        _legacy.check_grounding(tx, grounding_all if row["ns"] == 0 or row["nt"] == 0 else grounding_optional)
        if row["ns"] == 0 or row["nt"] == 0:
            hint = ""
            if source_identity is not None:
                entry = f"{source_identity[0]}:{source_identity[1]}"
                found = tx.run(_static("merged"), {"type": source_identity[0], "entry": entry})
                if found:
                    hint = (
                        f"The merge already happened: {rules.label(*source_identity)} was merged into "
                        f"{rules.label(found[0]['type'], found[0]['name'])} (its metadata._merged_from lists \"{entry}\"). "
                        "Treat this as success; query the surviving concept instead."
                    )
            missing = [f"?{v}" for v, n in ((src_name, row["ns"]), (tgt_name, row["nt"])) if n == 0] or [f"?{src_name}", f"?{tgt_name}"]
            raise K.not_found(f"MERGE CONCEPT found no concept for {' and '.join(missing)}: the WHERE pattern matched nothing.", hint)
        for var, n, infos in ((src_name, row["ns"], row["ss"]), (tgt_name, row["nt"], row["ts"])):
            if n > 1:
                raise KipError(
                    errors.DUPLICATE_EXISTS,
                    f"MERGE CONCEPT needs ?{var} to bind exactly one concept, but it bound {n} (e.g. {', '.join(_label(i) for i in infos)}).",
                    f"Narrow the WHERE pattern until ?{var} matches exactly one node, e.g. with {{type: \"…\", name: \"…\"}} or {{id: \"…\"}}.",
                )
            if not infos[0]["concept"]:
                raise KipError(errors.CONSTRAINT_VIOLATION, f"MERGE CONCEPT merges concept nodes, but ?{var} bound a proposition link.", "Bind ?source and ?target with concept clauses.")
        s, t = row["ss"][0], row["ts"][0]
        if s["id"] == t["id"]:
            return None
        if s["type"] != t["type"]:
            raise KipError(
                errors.CONSTRAINT_VIOLATION,
                f"MERGE CONCEPT needs two concepts of the same type, got {_label(s)} and {_label(t)}.",
                "Only duplicates of one concept type can be merged; re-type one of them first or link them instead.",
            )
        for info in (s, t):
            if info["protected"]:
                raise rules.immutable(_label(info), "it cannot take part in a MERGE")
        return s, t

    def runner(tx: Tx) -> dict[str, Any]:
        bound = check(tx)
        if bound is None:
            return {"result": {"merged": True, "links_repointed": 0, "links_deduplicated": 0, "attributes_filled": 0}}
        s, t = bound
        now = K.now_iso()
        rows = tx.run(_static("lock"), {"s": s["id"], "t": t["id"]})
        if not rows:
            raise K.not_found(f"{_label(s)} or {_label(t)} was removed concurrently; nothing was merged.")
        sp, tp = rows[0]["s"], rows[0]["t"]
        # ---- fill attributes (target wins), aliases union, _merged_from trail
        fill: dict[str, Any] = {}
        filled = 0
        for key, value in sp.items():
            if key.startswith(storage.ATTR_PREFIX) and key != ALIASES and key not in tp:
                fill[key] = value
                filled += 1
        aliases = _decode_list(tp.get(ALIASES))
        if ALIASES not in tp and ALIASES in sp and _decode_list(sp.get(ALIASES)):
            filled += 1
        for alias in _decode_list(sp.get(ALIASES)) + [s["name"]]:
            if alias not in aliases and alias != t["name"]:
                aliases.append(alias)
        fill[ALIASES] = storage.encode(aliases)
        trail = _decode_list(tp.get(K.MERGED_FROM))
        for entry in _decode_list(sp.get(K.MERGED_FROM)) + [f"{s['type']}:{s['name']}"]:
            if entry not in trail:
                trail.append(entry)
        fill[K.MERGED_FROM] = storage.encode(trail)
        tx.run(_static("fill"), {"t": t["id"], "fill": fill, "now": now})
        # ---- repoint links level by level
        repointed = 0
        dead: list[str] = []
        pairs = [[s["id"], t["id"]]]
        while pairs:
            result = tx.run(_static("repoint"), {"pairs": pairs, "dead": dead, "now": now})
            pairs = []
            for r in result:
                if r["into"] is None:
                    repointed += 1
                else:
                    dead.append(r["link"])
                    pairs.append([r["link"], r["into"]])
        tx.run(_static("delete"), {"dead": dead, "s": s["id"]})
        return {"result": {"merged": True, "links_repointed": repointed, "links_deduplicated": len(dead), "attributes_filled": filled}}

    def dry(tx: Tx) -> dict[str, Any]:
        check(tx)
        return {"result": {"merged": False, "links_repointed": 0, "links_deduplicated": 0, "attributes_filled": 0}}

    statements = [bind, _static("lock"), _static("fill"), _static("repoint"), _static("delete")]
    return Plan("KML", "WRITE", statements, runner, dry)

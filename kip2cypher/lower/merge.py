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

The statements of steps 2–5 are command-independent (``statements``: lock … delete); the program
(``kip2cypher.execution.programs.merge``) runs them with the ids it learnt.

Counts: ``links_repointed`` = propositions whose endpoint moved (at any level);
``links_deduplicated`` = duplicates removed; ``attributes_filled`` = attribute
keys the target gained from the source, plus one when its ``aliases`` list changed
(the union and the source's name are part of §4.4's "Fill attributes").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Ident, Param, Statement, literal
from ..domain import rules, writes
from ..errors import KipError
from ..syntax import ast
from ..syntax.values import resolve
from . import context, grounding, surprises
from . import pattern as pat
from .delete import delete_propositions
from .plan import Compiled, Plan
from .upsert_statements import vocabulary_name

S, T, NOW, FILL, PAIRS, DEAD, TYPE, ENTRY = (Param(None, name) for name in ("s", "t", writes.NOW, "fill", "pairs", "dead", "type", "entry"))


def _bind_statement(pattern: pat.Pattern, source: str, target: str) -> Compiled:
    pattern.distinct([source, target], used_in="MERGE")
    s, t = pattern.ref(source), pattern.ref(target)
    stmt = pattern.statement()
    stmt.line("WITH collect(DISTINCT ", s, ") AS _ss, collect(DISTINCT ", t, ") AS _ts")
    info = (
        "{id: x.id, type: x.type, name: x.name, concept: x:",
        pattern.ctx.names.concept,
        ", link: x:",
        pattern.ctx.names.proposition,
        ", protected: coalesce(",
        rules.cy_protected_concept("x.type", "x.name"),
        " OR ",
        rules.cy_actor("x.type", "x.name"),
        ", false)}",
    )
    stmt.line("RETURN size(_ss) AS ns, size(_ts) AS nt, [x IN _ss[..2] | ", *info, "] AS ss, [x IN _ts[..2] | ", *info, "] AS ts")
    return Compiled.of(stmt, "MERGE: bind ?source and ?target")


def _lock_statement(names: storage.Names) -> Compiled:
    s = Statement()
    both = ("MATCH (s:", names.concept, " {id: ", S, "}), (t:", names.concept, " {id: ", T, "})")
    s.line(*both)
    s.line("SET s.", Ident(writes.LOCK), " = true, t.", Ident(writes.LOCK), " = true")
    s.line("REMOVE s.", Ident(writes.LOCK), ", t.", Ident(writes.LOCK))
    # Both locks are held now: match again, so a concurrent MERGE / DELETE that removed either node
    # while this transaction waited for its lock is seen (no rows → KIP_3002) instead of merging a
    # ghost (tests/test_reliability_concurrency.py::test_concurrent_merge_of_one_source_into_two_targets).
    s.line("WITH count(*) AS _locked")
    s.line(*both)
    s.line("RETURN properties(s) AS s, properties(t) AS t")
    return Compiled.of(s, "MERGE: lock and read source and target")


def _fill_statement(names: storage.Names) -> Compiled:
    s = Statement()
    s.line("MATCH (t:", names.concept, " {id: ", T, "})")
    s.line("SET t += ", FILL, ", ", writes.version_bump("t", writes.stored_version("t")))
    return Compiled.of(s, "MERGE: fill the target's attributes and _merged_from")


def _repoint_statement(names: storage.Names) -> Compiled:
    C, P, SUBJ, OBJ = names.concept, names.proposition, names.subject_rel, names.object_rel
    s = Statement()
    s.line("UNWIND ", PAIRS, " AS pair")
    with s.block("CALL (pair)"):
        s.line("OPTIONAL MATCH (xc:", C, " {id: pair[0]}) OPTIONAL MATCH (xp:", P, " {id: pair[0]})")
        s.line("OPTIONAL MATCH (yc:", C, " {id: pair[1]}) OPTIONAL MATCH (yp:", P, " {id: pair[1]})")
        s.line("RETURN coalesce(xc, xp) AS x, coalesce(yc, yp) AS y")
    s.line("MATCH (l:", P, ")-[:", SUBJ, "|", OBJ, "]->(x)")
    s.line("WHERE NOT l.id IN ", DEAD)
    s.line("WITH DISTINCT x, y, l")
    with s.block("CALL (x, y, l)"):
        s.line(writes.lock("l"))
        s.line("WITH x, y, l, properties(l) AS cur")
        s.line("WITH x, y, l, cur, CASE WHEN cur.subject = x.id THEN y.id ELSE cur.subject END AS ns,")
        s.line("     CASE WHEN cur.object = x.id THEN y.id ELSE cur.object END AS no")
        s.line("OPTIONAL MATCH (q:", P, " {subject: ns, predicate: cur.predicate, object: no}) WHERE q <> l")
        s.line("WITH x, y, l, cur, ns, no, head(collect(q)) AS q")
        # -- no collision: repoint, keeping the id
        with s.block("CALL (x, y, l, cur, ns, no, q)"):
            s.line("WITH * WHERE q IS NULL")
            s.line("MATCH (l)-[:", SUBJ, "]->(os) MATCH (l)-[:", OBJ, "]->(oo)")
            s.line("OPTIONAL MATCH (os)-[r]->(oo) WHERE r.", Ident(names.link_id), " = l.id")
            s.line("DELETE r")
            s.line("WITH DISTINCT x, y, l, cur, ns, no")
            s.line("OPTIONAL MATCH (l)-[k:", SUBJ, "|", OBJ, "]->(x)")
            s.line("DELETE k")
            s.line("WITH DISTINCT x, y, l, cur, ns, no")
            s.line("FOREACH (_ IN CASE WHEN cur.subject = x.id THEN [1] ELSE [] END | CREATE (l)-[:", SUBJ, "]->(y))")
            s.line("FOREACH (_ IN CASE WHEN cur.object = x.id THEN [1] ELSE [] END | CREATE (l)-[:", OBJ, "]->(y))")
            s.line("SET l.subject = ns, l.object = no, ", writes.version_bump("l", writes.stored_version("cur")))
            s.line("WITH l, cur")
            s.line("MATCH (l)-[:", SUBJ, "]->(s2) MATCH (l)-[:", OBJ, "]->(o2)")
            s.line("CREATE (s2)-[:", vocabulary_name(names, "cur.predicate"), " {", Ident(names.link_id), ": l.id}]->(o2)")
        # -- collision: the existing link survives, missing keys filled from the duplicate
        with s.block("CALL (l, q, cur)"):
            s.line("WITH * WHERE q IS NOT NULL")
            s.line(writes.lock("q"))
            s.line("WITH l, q, cur, properties(q) AS qc")
            s.line(
                "WITH l, q, cur, qc, [k IN keys(cur) WHERE (k STARTS WITH ",
                literal(storage.ATTR_PREFIX),
                " OR (k STARTS WITH ",
                literal(storage.META_PREFIX),
                " AND NOT k STARTS WITH ",
                literal(storage.META_PREFIX + "_"),
                ")) AND qc[k] IS NULL] AS fill",
            )
            s.line("FOREACH (k IN fill | SET q[k] = cur[k])")
            s.line("FOREACH (_ IN CASE WHEN size(fill) > 0 THEN [1] ELSE [] END |")
            s.line("  SET ", writes.version_bump("q", writes.stored_version("qc")), ")")
        s.line("RETURN l.id AS link, q.id AS into")
    s.line("RETURN link, into")
    return Compiled.of(s, "MERGE: repoint the links of one level (source, then duplicates)")


def _delete_statement(names: storage.Names) -> Compiled:
    s = Statement()
    s.line("OPTIONAL MATCH (d:", names.proposition, ") WHERE d.id IN ", DEAD)
    s.line("WITH collect(d) AS _dead")
    delete_propositions(s, "_dead", names)
    s.line("WITH 1 AS _one MATCH (src:", names.concept, " {id: ", S, "})")
    s.line("DETACH DELETE src")
    return Compiled.of(s, "MERGE: delete duplicates and the source")


def _already_merged_statement(names: storage.Names) -> Compiled:
    s = Statement()
    s.line("MATCH (n:", names.concept, " {type: ", TYPE, "}) WHERE ", ENTRY, " IN n.", Ident(writes.MERGED_FROM))
    s.line("RETURN n.type AS type, n.name AS name LIMIT 1")
    return Compiled.of(s, "MERGE: diagnose a replay (already merged?)")


@dataclass(frozen=True)
class MergeStatements:
    """The command-independent statements of MERGE CONCEPT in one namespace."""

    #: Is ``$entry`` (``"<Type>:<name>"``) in the ``_merged_from`` trail of a concept of ``$type``?
    already_merged: Compiled
    #: Write-lock, then read, the concepts ``$s`` and ``$t``.
    lock: Compiled
    #: ``SET t += $fill`` with a version bump at ``$now``.
    fill: Compiled
    #: Repoint the links of ``$pairs`` (``[[from, into], …]``) skipping ``$dead``; rows ``{link, into}``.
    repoint: Compiled
    #: Delete the ``$dead`` duplicates and the source ``$s``.
    delete: Compiled


@functools.lru_cache(maxsize=64)
def statements(names: storage.Names = storage.DEFAULT) -> MergeStatements:
    return MergeStatements(
        already_merged=_already_merged_statement(names),
        lock=_lock_statement(names),
        fill=_fill_statement(names),
        repoint=_repoint_statement(names),
        delete=_delete_statement(names),
    )


@dataclass(frozen=True)
class MergePlan(Plan):
    """A MERGE CONCEPT: its bind query, the names a KIP_2001 check may need, and what the
    already-merged diagnosis of a replay needs (``source_identity``: the {type, name} the WHERE
    gives ``?source`` literally, if any)."""

    bind: Compiled
    source: str
    target: str
    source_identity: tuple[str, str] | None
    grounding_all: grounding.Names  # checked when ?source or ?target bound nothing
    grounding_optional: grounding.Names  # names used only inside OPTIONAL / NOT / UNION: checked otherwise
    grounding_at: grounding.Offsets  # where the command names each of them (KIP_2001 positions)
    source_at: int | None  # where the command text names ?source / ?target (positions of their errors)
    target_at: int | None

    @property
    def statements(self) -> MergeStatements:
        """The command-independent statements the program runs after the bind query."""
        return statements(self.names)

    def steps(self) -> tuple[Compiled, ...]:
        checks = (grounding.check_statement(self.grounding_all, self.names), grounding.defined_names(self.names)) if self.grounding_all else ()
        s = self.statements
        replay = (s.already_merged,) if self.source_identity is not None else ()
        return (self.bind, *checks, *replay, s.lock, s.fill, s.repoint, s.delete)


def _source_identity(where: tuple, source: str, parameters: dict[str, Any]) -> tuple[str, str] | None:
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


def lower_merge(command: ast.MergeConcept, parameters: dict[str, Any], settings: Settings) -> MergePlan:
    pattern = pat.lower_where(command.where, parameters, settings)
    pattern.require(command.source, used_in="MERGE", kinds={context.CONCEPT, context.ELEMENT})
    pattern.require(command.target, used_in="MERGE", kinds={context.CONCEPT, context.ELEMENT})
    pattern.writable(command.source, "MERGE")
    pattern.writable(command.target, "MERGE")
    return MergePlan(
        bind=_bind_statement(pattern, command.source, command.target),
        source=command.source,
        target=command.target,
        source_identity=_source_identity(command.where, command.source, parameters),
        grounding_all=grounding.names(pattern.grounding),
        grounding_optional=grounding.names(pattern.grounding, required_only=False),
        grounding_at=grounding.offsets(pattern.grounding),
        source_at=command.source_span.start if command.source_span.end else None,
        target_at=command.target_span.start if command.target_span.end else None,
        warnings=surprises.other_kind(pattern.ctx.other_kind_reads),
    )

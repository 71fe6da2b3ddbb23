"""The UPSERT program: resolve, write the concepts, write the propositions in waves.

Round trips, independent of the number of blocks (``lower/upsert.py`` explains why):

1. one *resolve* statement checks every type/predicate the capsule uses (KIP_2001, with the
   defined names read for the did-you-mean hint only on a failure) and looks up every outside
   target (KIP_3002); structural targets made only of outside references follow once their
   endpoints are known;
2. one statement writes every CONCEPT block (strict mode then checks each instance_schema);
3. one statement per *wave* of proposition rows: a row starts a new wave when it needs the id
   of a proposition written in the current one (a proposition handle, or a structural
   reference still unresolved — it may name a proposition an earlier row creates).

A dry run stops after step 1 and probes the concept blocks (EXPECT VERSION, protection,
``{id}`` existence) without writing.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, NamedTuple

from ...cypher import storage
from ...cypher.builder import COLLECTED
from ...domain import adopted, rules, writes
from ...errors import KipError
from ...lower.upsert_plan import (
    AdoptedConcept,
    ConceptBlockRef,
    ConceptById,
    ConceptByName,
    Outside,
    PropositionById,
    PropositionRow,
    PropositionRowRef,
    Ref,
    Structural,
    UpsertPlan,
    is_concept,
    is_static,
    nested,
    own_column,
)
from ..requests import Context, Run
from . import grounding
from .write_status import check_status, not_found


def engine_overrides(ctx: Context) -> dict[str, Any]:
    """For the engine's own upgrade writes: no protected concepts or actors (rules.protected_pairs)."""
    return {rules.P_PROTECTED: [], rules.P_ACTORS: []} if ctx.engine else {}


Program = Generator[Any, Any, Any]


def upsert(plan: UpsertPlan, ctx: Context) -> Generator[Any, Any, dict]:
    run = _Upsert(plan, ctx)
    if plan.checked_concept_write is not None and not ctx.dry_run:
        yield from run.check_and_write_concepts(plan.checked_concept_write)
    else:
        yield from run.check_schema_and_targets()
        if ctx.dry_run:
            yield from run.probe()
            return {"result": {"blocks": plan.blocks, "upsert_concept_nodes": [], "upsert_proposition_links": []}}
        yield from run.write_concepts()
    yield from run.write_propositions()
    return {
        "result": {
            "blocks": plan.blocks,
            "upsert_concept_nodes": [run.concept_ids[ref.pos] for ref in plan.order if isinstance(ref, ConceptBlockRef)],
            "upsert_proposition_links": [run.prop_ids[ref.pos] for ref in plan.order if isinstance(ref, PropositionRowRef)],
        }
    }


class _Upsert:
    """What one run learns: the ids of outside targets and of the rows it wrote, and instance schemas."""

    def __init__(self, plan: UpsertPlan, ctx: Context) -> None:
        self.plan = plan
        self.ctx = ctx
        self.ids: dict[Outside, str | None] = {}
        self.concept_ids: dict[int, str] = {}
        self.prop_ids: dict[int, str] = {}
        self.schemas: dict[str, Any] = {}
        #: the elementId of each adopted endpoint's node (link_memory; its adopted id is in ``ids``)
        self.elements: dict[AdoptedConcept, str] = {}
        #: where the command first writes each outside target (the position of its KIP_3002)
        self.target_at: dict[Outside, int | None] = {}
        for target in plan.targets:
            self.target_at.setdefault(target.ref, target.at)

    # -------------------------------------------------------------- references
    def value(self, ref: Ref) -> str | None:
        if isinstance(ref, ConceptBlockRef):
            return self.concept_ids.get(ref.pos)
        if isinstance(ref, PropositionRowRef):
            return self.prop_ids.get(ref.pos)
        return self.ids.get(ref)

    def known(self, ref: Ref) -> bool:
        return self.value(ref) is not None

    def lookup_row(self, index: int, ref: Outside) -> dict[str, Any]:
        """``RESOLVE``'s row for ``ref``: ``k`` names the branch, ``a``/``b``/``c`` its key."""
        if isinstance(ref, ConceptByName):
            a, b, c = ref.type, ref.name, None
        elif isinstance(ref, (ConceptById, PropositionById)):
            a, b, c = ref.id, None, None
        else:  # structural, with known endpoints
            a, b, c = self.value(ref.subject), ref.predicate, self.value(ref.object)
        return {"i": index, "k": ref.KIND, "a": a, "b": b, "c": c}

    def lookup(self, refs: list[Outside]) -> Program:
        """One ``RESOLVE`` round trip (none for no refs); the rows in the order of ``refs``."""
        if not refs:
            return []
        rows = yield Run(self.plan.statements.resolve, {"refs": [self.lookup_row(i, ref) for i, ref in enumerate(refs)]})
        return sorted(rows, key=lambda r: r["i"])

    def resolve_structural(self, refs: list[Ref]) -> Program:
        """Look up structural refs (and nested ones), innermost first; unresolved stay None."""
        pending = [r for r in dict.fromkeys(refs) if isinstance(r, Structural) and self.value(r) is None]
        stack = list(pending)
        todo: list[Structural] = []
        while stack:
            ref = stack.pop()
            if ref in todo:
                continue
            todo.append(ref)
            for inner in (ref.subject, ref.object):
                if isinstance(inner, Structural) and self.value(inner) is None:
                    stack.append(inner)
        while True:
            ready = [r for r in todo if self.value(r) is None and self.known(r.subject) and self.known(r.object)]
            if not ready:
                return
            rows = yield from self.lookup(ready)
            for ref, row in zip(ready, rows):
                self.ids[ref] = row["id"]
            todo = [r for r in todo if r not in ready]

    # -------------------------------------------------------------- resolve
    def references(self) -> _References:
        """What the resolve lookup reads (``_References``)."""
        plan = self.plan
        refs: list[Outside] = []
        index: dict[Outside, int] = {}

        def add(ref: Outside) -> int:
            if ref not in index:
                index[ref] = len(refs)
                refs.append(ref)
            return index[ref]

        checks = [(check, add(check.ref)) for check in plan.schema_checks]
        simple = [t for t in plan.targets if not isinstance(t.ref, (Structural, AdoptedConcept))]
        required = {i for _, i in checks} | {add(t.ref) for t in simple}
        strict_types = list(plan.typed) if plan.strict else []
        for type_ in strict_types:
            add(ConceptByName(storage.CONCEPT_TYPE, type_))
        return _References(refs, checks, strict_types, simple, sorted(required))

    def check_schema_and_targets(self, read: _References | None = None, looked_up: list[dict[str, Any]] | None = None) -> Program:
        """Check the resolve lookup's rows (``looked_up``: already read with the concept write, for
        the references ``read``), raising the first failure in textual order; then look up the
        adopted endpoints and the structural targets."""
        plan = self.plan
        refs, checks, strict_types, simple, _ = read or self.references()
        rows = (yield from self.lookup(refs)) if looked_up is None else sorted(looked_up, key=lambda r: r["i"])
        found = {ref: row for ref, row in zip(refs, rows)}
        for ref, row in found.items():
            self.ids[ref] = row["id"]
        for type_ in strict_types:
            row = found[ConceptByName(storage.CONCEPT_TYPE, type_)]
            self.schemas[type_] = storage.decode(row["schema"]) if row["schema"] is not None else None
        failures: list[tuple[int, int, KipError]] = []
        for meta, candidates, undefined in (
            (storage.CONCEPT_TYPE, plan.defined_types, rules.undefined_type),
            (storage.PROPOSITION_TYPE, plan.defined_predicates, rules.undefined_predicate),
        ):
            missing = [(check.seq, check.name, check.at) for check, i in checks if check.meta == meta and rows[i]["id"] is None]
            if missing:
                seq, name, at = min(missing, key=lambda m: m[:2])
                defined = yield from grounding.defined_names(self.ctx.names, meta)
                failures.append((seq, 0, undefined(name, defined + list(candidates), at)))
        for target in simple:
            if self.ids.get(target.ref) is None:
                failures.append((target.seq, 1, self.missing(target.ref)))
        unlinkable = yield from self.find_adopted()
        failures.extend((target.seq, 1, unlinkable[target.ref]) for target in plan.targets if target.ref in unlinkable)
        if failures:
            failures.sort(key=lambda f: (f[0], f[1]))
            raise failures[0][2]
        # structural targets made only of outside targets: look them up now; a miss may still be a
        # proposition this command creates earlier in textual order, so it is re-checked in its wave.
        yield from self.resolve_structural([t.ref for t in plan.targets if isinstance(t.ref, Structural) and is_static(t.ref)])

    def find_adopted(self) -> Program:
        """Look up the adopted endpoints (link_memory): each must be exactly one node of the team's
        graph. Returns the error of each that is not (missing: KIP_3002, several: KIP_3003)."""
        plan = self.plan
        if plan.adopted_lookup is None:
            return {}
        rows = yield Run(plan.adopted_lookup)
        refused: dict[Outside, KipError] = {}
        for row in rows:
            ref = plan.adopted_refs[row["i"]]
            at = self.target_at.get(ref)
            if len(row["elements"]) == 1:
                self.ids[ref], self.elements[ref] = row["ids"][0], row["elements"][0]
            elif not row["elements"]:
                refused[ref] = adopted.endpoint_missing(plan.describe(ref), at)
            else:
                refused[ref] = adopted.endpoint_ambiguous(plan.describe(ref), ref.type, row["ids"], row["elements"], at)
        return refused

    def missing(self, ref: Outside) -> KipError:
        """KIP_3002 for an outside target, positioned where the command first writes it."""
        at = self.target_at.get(ref)
        if isinstance(ref, ConceptByName):
            return not_found(
                f"Concept {rules.label(ref.type, ref.name)} does not exist.",
                "Create it first (a CONCEPT block earlier in the capsule or an earlier UPSERT), or find the right name with SEARCH CONCEPT "
                f"{rules.quoted(ref.name)} WITH TYPE {rules.quoted(ref.type)}.",
                at,
            )
        if isinstance(ref, ConceptById):
            return _no_concept_with_id(ref.id, at)
        if isinstance(ref, PropositionById):
            return not_found(
                f"No proposition has id {rules.quoted(ref.id)}.", "FIND the proposition to get its current id; (id: …) only matches, it never creates.", at
            )
        return not_found(
            f"The proposition {self.plan.describe(ref)} does not exist.",
            'A structural (s, "p", o) target must already exist: create it first with a PROPOSITION block placed earlier, or FIND it.',
            at,
        )

    # -------------------------------------------------------------- concepts
    def check_and_write_concepts(self, statement: Any) -> Program:
        """The resolve lookup and the concept write in one round trip: the lookup's failures
        first (the write did not run then), as with two statements."""
        refs = self.references()
        record = (
            yield Run(
                statement,
                {
                    "refs": [self.lookup_row(i, ref) for i, ref in enumerate(refs.refs)],
                    "required": refs.required,
                    "rows": [c.payload() for c in self.plan.concepts],
                    writes.NOW: self.ctx.now,
                    **engine_overrides(self.ctx),
                },
            )
        )[0]
        yield from self.check_schema_and_targets(refs, record["refs"])
        yield from self.concepts_written(record[COLLECTED])

    def write_concepts(self) -> Program:
        plan = self.plan
        rows = [c.payload() for c in plan.concepts]
        if not rows:
            return
        result = yield Run(plan.concept_write, {"rows": rows, writes.NOW: self.ctx.now, **engine_overrides(self.ctx)})
        yield from self.concepts_written(result)

    def concepts_written(self, result: list[dict[str, Any]]) -> Program:
        """Check each concept block's write status; strict mode checks its instance_schema."""
        plan = self.plan
        by_i = {r["i"]: r for r in result}
        for c in plan.concepts:
            r = by_i.get(c.pos)
            if r is None or r["status"] == "missing":
                raise _no_concept_with_id(c.id, c.at)
            check_status(r, lambda: c.label, c.expect, c.at)
            self.concept_ids[c.pos] = r["id"]
            if plan.strict:
                type_ = c.type or (r["tn"][0] if r["tn"] else None)
                schema = self.schemas.get(type_)
                if schema is None and type_ is not None and type_ not in self.schemas:
                    schema = yield from self.fetch_schema(type_)
                rules.check_value_types(type_, schema, dict(c.attrs), c.attr_at)
                present = [k[len(storage.ATTR_PREFIX) :] for k in r["attr_keys"]]
                rules.check_required(type_, schema, present, f"Concept {c.label}", c.at)

    def fetch_schema(self, type_: str) -> Program:
        """The instance_schema of a type known only after the write (a block by ``{id}``)."""
        rows = yield from self.lookup([ConceptByName(storage.CONCEPT_TYPE, type_)])
        value = storage.decode(rows[0]["schema"]) if rows and rows[0]["schema"] is not None else None
        self.schemas[type_] = value
        return value

    def probe(self) -> Program:
        """dry_run: EXPECT VERSION / protected / {id} checks for concept blocks, without writing."""
        rows = [c.payload() for c in self.plan.concepts]
        if not rows:
            return
        result = {r["i"]: r for r in (yield Run(self.plan.statements.probe, {"rows": rows, **engine_overrides(self.ctx)}))}
        for c in self.plan.concepts:
            check_status(result[c.pos], lambda: c.label, c.expect, c.at)

    # -------------------------------------------------------------- propositions
    def write_propositions(self) -> Program:
        rows = self.plan.propositions
        pos = 0
        while pos < len(rows):
            wave: list[PropositionRow] = []
            in_wave: set[int] = set()
            for row in rows[pos:]:
                if wave and self.needs_break(row, in_wave):
                    break
                wave.append(row)
                in_wave.add(row.pos)
            yield from self.write_wave(wave)
            pos += len(wave)

    def needs_break(self, row: PropositionRow, in_wave: set[int]) -> bool:
        for ref in nested((row.subject, row.object)):
            if isinstance(ref, PropositionRowRef) and ref.pos in in_wave:
                return True
            if isinstance(ref, Structural) and self.value(ref) is None:
                return True  # may name a proposition written by an earlier row: write those first
        return False

    def write_wave(self, wave: list[PropositionRow]) -> Program:
        structural = [r for row in wave for r in nested((row.subject, row.object)) if isinstance(r, Structural)]
        if structural:
            yield from self.resolve_structural(structural)
        payload = [self.wave_row(row) for row in wave]
        result = yield Run(self.plan.proposition_write, {"rows": payload, writes.NOW: self.ctx.now, **engine_overrides(self.ctx)})
        by_i = {r["i"]: r for r in result}
        for row in wave:
            r = by_i.get(row.pos)
            if r is None or r["status"] == "missing":
                raise not_found(f"{self.label(row)} does not exist (an endpoint was removed concurrently, or the id is unknown).", "", row.at)
            check_status(r, lambda: self.label(row), row.expect, row.at)
            self.prop_ids[row.pos] = r["id"]

    def label(self, row: PropositionRow) -> str:
        """A proposition row as the command wrote it (its endpoints resolved), for an error message."""
        return self.plan.describe(PropositionRowRef(row.pos))

    def wave_row(self, row: PropositionRow) -> dict[str, Any]:
        """The proposition write's row; every endpoint must be known by now."""
        if row.id is None:
            for ref in (row.subject, row.object):
                if self.value(ref) is None:
                    if isinstance(ref, (ConceptBlockRef, PropositionRowRef)):
                        raise not_found(f"{self.plan.describe(ref)} could not be resolved.", "", row.at)
                    raise self.missing(ref)
        out = {
            "i": row.pos,
            "s": self.value(row.subject) if row.subject else None,
            "p": row.predicate,
            "o": self.value(row.object) if row.object else None,
            "pid": row.id,
            "sc": is_concept(row.subject),
            "oc": is_concept(row.object),
            "btd": row.predicate in (None, storage.BELONGS_TO_DOMAIN),
            "props": dict(row.props),
            "own": own_column(row.props, row.own),
            "expect": row.expect,
        }
        if self.plan.adopted_refs:
            out["sa"], out["oa"] = self.elements.get(row.subject), self.elements.get(row.object)
        return out


class _References(NamedTuple):
    """What the resolve lookup reads: every reference once (``refs``, looked up in this order),
    the schema checks with the index of their reference, the types whose instance_schema strict
    mode reads, the simple targets, and the indexes whose miss fails the command (``required``:
    checks and simple targets; a strict-mode type this capsule defines is not found, and fine)."""

    refs: list[Outside]
    checks: list[tuple[Any, int]]
    strict_types: list[str]
    simple: list[Any]
    required: list[int]


def _no_concept_with_id(cid: str | None, at: int | None) -> KipError:
    return not_found(
        f"No concept has id {rules.quoted(cid)}.",
        "Ids are opaque: FIND or SEARCH the concept to get its current id; {id: …} only matches, it never creates.",
        at,
    )

"""UPSERT (spec §4.1): a command of one or more UPSERT statements, run as ONE transaction.

Compile time (``analyze``) turns the AST into rows:

- one *concept row* per CONCEPT block (identity, encoded attributes+metadata,
  EXPECT VERSION), in textual order;
- one *proposition row* per PROPOSITION block and per SET PROPOSITIONS entry,
  in textual order;
- *references* (``Ref``) for every endpoint/target: a handle of an earlier
  concept block (``("C", pos)``) or proposition row (``("R", pos)``), or an
  outside target — ``("ctn", type, name)``, ``("cid", id)``, ``("pid", id)``,
  ``("spo", s, predicate, o)`` (structural, nested refs).

Handles are checked here (KIP_3001), reserved metadata keys (KIP_2002) and
metadata precedence (UPSERT ⊂ block ⊂ entry, inner wins key by key).

Run time (``Runner``) needs a handful of round trips, independent of the number
of blocks:

1. *resolve*: one UNWIND statement checks every type/predicate used
   (define-before-use, KIP_2001) and looks up every outside target (KIP_3002);
2. *concepts*: one UNWIND statement matches-or-creates every concept block;
3. *propositions*: one UNWIND statement per *wave*. Rows go into the same wave
   unless a row needs the id of a proposition written earlier in the same wave
   (a proposition handle, or a structural reference that may point at a
   proposition this command just created) — so a capsule normally needs one.

Concepts are written before propositions. That is equivalent to strict textual
execution because a proposition never changes a concept, and references by
{type, name} to a concept that only a *later* block creates are still rejected
(they are resolved against the graph as it was before the command).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from .. import errors

from ..cypher import storage
from . import rules
from ..syntax import ast
from ..config import Settings
from ..cypher.builder import Ident, Param, Statement
from ..errors import KipError
from ._legacy import Compiled, Plan, Tx
from ..syntax.values import describe, resolve, resolve_str
from . import writes as K

Ref = tuple  # see module doc


# ====================================================================== analysis
@dataclass
class ConceptRow:
    pos: int
    seq: int
    type: Optional[str]
    name: Optional[str]
    id: Optional[str]
    attrs: dict[str, Any]
    props: dict[str, Any]
    own: dict[str, Any]
    expect: Optional[int]
    label: str

    def payload(self) -> dict[str, Any]:
        cd = self.attrs.get("core_directives", _ABSENT)
        return {
            "i": self.pos, "type": self.type, "name": self.name, "id": self.id,
            "props": self.props, "own": self.own, "expect": self.expect,
            "cd": None if cd is _ABSENT else storage.encode(cd),
        }


@dataclass
class PropRow:
    pos: int
    seq: int
    block: bool  # a top-level PROPOSITION block (reported) vs a SET PROPOSITIONS entry
    subject: Optional[Ref]
    predicate: Optional[str]
    object: Optional[Ref]
    id: Optional[str]
    props: dict[str, Any]
    own: dict[str, Any]
    expect: Optional[int]
    label: str


_ABSENT = object()


def _is_concept(ref: Optional[Ref]) -> bool:
    """Whether a reference names a concept (else a proposition)."""
    return ref is not None and ref[0] in ("C", "ctn", "cid")


@dataclass
class Program:
    blocks: int  # number of UPSERT statements
    concepts: list[ConceptRow] = field(default_factory=list)
    props: list[PropRow] = field(default_factory=list)
    # the report order of top-level blocks: ("C", pos) / ("R", pos)
    order: list[tuple[str, int]] = field(default_factory=list)
    # define-before-use checks: (seq, kind, name) with kind "type" | "predicate"
    schema_checks: list[tuple[int, str, str]] = field(default_factory=list)
    # outside targets to look up before writing: (seq, ref)
    targets: list[tuple[int, Ref]] = field(default_factory=list)
    # types defined by this command, for did-you-mean
    defined_types: list[str] = field(default_factory=list)
    defined_predicates: list[str] = field(default_factory=list)
    # concept types whose instance_schema strict mode needs: type -> [concept pos]
    typed: dict[str, list[int]] = field(default_factory=dict)


def _version(value: Optional[ast.Value], params: dict[str, Any]) -> Optional[int]:
    if value is None:
        return None
    v = resolve(value, params)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise KipError(
            errors.INVALID_SYNTAX,
            f"EXPECT VERSION expects a non-negative integer, got {describe(v)}.",
            "Bind the placeholder to the element's current _version (a whole number), or 0 for create-only.",
        )
    return v


def _object(obj: Optional[ast.ObjectLit], params: dict[str, Any]) -> dict[str, Any]:
    if obj is None:
        return {}
    value = resolve(obj, params)
    return value


def _metadata(obj: Optional[ast.ObjectLit], params: dict[str, Any], where: str) -> dict[str, Any]:
    meta = _object(obj, params)
    rules.check_metadata_keys(meta, where)
    return meta


def _encode(attrs: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    out = storage.encode_map(attrs, storage.ATTR_PREFIX)
    out.update(storage.encode_map(meta, storage.META_PREFIX))
    return out


class Analyzer:
    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.seq = 0
        self.program: Program
        self.by_tn: dict[tuple[str, str], int] = {}  # (type, name) -> concept pos (earlier blocks)
        self.by_cid: dict[str, int] = {}
        self.by_spo: dict[tuple, int] = {}  # normalized (s, p, o) -> proposition row pos
        self.by_pid: dict[str, int] = {}
        self.handles: dict[str, Ref] = {}

    # -------------------------------------------------------------- entry
    def run(self, capsule: ast.Capsule) -> Program:
        self.program = Program(blocks=len(capsule.upserts))
        for upsert in capsule.upserts:
            self.handles = {}
            outer = _metadata(upsert.metadata, self.params, "UPSERT … WITH METADATA")
            for block in upsert.blocks:
                self.seq += 1
                if isinstance(block, ast.ConceptBlock):
                    self.concept_block(block, outer)
                else:
                    self.proposition_block(block, outer)
        return self.program

    # -------------------------------------------------------------- blocks
    def concept_block(self, block: ast.ConceptBlock, outer: dict[str, Any]) -> None:
        program = self.program
        ident = block.identity
        own_meta = _metadata(block.metadata, self.params, "a CONCEPT block's WITH METADATA")
        meta = {**outer, **own_meta}
        attrs = _object(block.set_attributes, self.params)
        expect = _version(block.expect_version, self.params)
        pos = len(program.concepts)
        if ident.id is not None:
            cid = resolve_str(ident.id, self.params, "A concept `id`")
            row = ConceptRow(pos, self.seq, None, None, cid, attrs, _encode(attrs, meta), _encode(attrs, own_meta), expect, f"{{id: {rules._q(cid)}}}")
            self.by_cid.setdefault(cid, pos)
            program.targets.append((self.seq, ("cid", cid)))
        else:
            type_ = resolve_str(ident.type, self.params, "A concept `type`")
            name = resolve_str(ident.name, self.params, "A concept `name`")
            row = ConceptRow(pos, self.seq, type_, name, None, attrs, _encode(attrs, meta), _encode(attrs, own_meta), expect, rules.label(type_, name))
            self.require_type(type_, name)
            _refuse_engine_name(type_, name)
            if type_ == storage.CONCEPT_TYPE:
                program.defined_types.append(name)
            elif type_ == storage.PROPOSITION_TYPE:
                program.defined_predicates.append(name)
            self.by_tn[(type_, name)] = pos
            program.typed.setdefault(type_, []).append(pos)
        program.concepts.append(row)
        program.order.append(("C", pos))
        here: Ref = ("C", pos)
        for entry in block.set_propositions or ():
            self.seq += 1
            entry_meta = _metadata(entry.metadata, self.params, f"the WITH METADATA of (\"{entry.predicate}\", …)")
            target = self.ref(entry.target)
            self.require_predicate(entry.predicate)
            full = {**meta, **entry_meta}
            own = {**own_meta, **entry_meta}
            label = f"({row.label}, {rules._q(entry.predicate)}, …)"
            self.add_prop(False, here, entry.predicate, target, None, {}, full, own, None, label)
        if block.handle is not None:
            # Bound once the block (including its SET PROPOSITIONS) has executed (§4.1 define before use).
            self.handles[block.handle] = here

    def proposition_block(self, block: ast.PropositionBlock, outer: dict[str, Any]) -> None:
        ident = block.identity
        own_meta = _metadata(block.metadata, self.params, "a PROPOSITION block's WITH METADATA")
        meta = {**outer, **own_meta}
        attrs = _object(block.set_attributes, self.params)
        expect = _version(block.expect_version, self.params)
        if ident.id is not None:
            pid = resolve_str(ident.id, self.params, "A proposition `id`")
            self.program.targets.append((self.seq, ("pid", pid)))
            pos = self.add_prop(True, None, None, None, pid, attrs, meta, own_meta, expect, f"(id: {rules._q(pid)})")
        else:
            predicate = self.predicate_name(ident.predicate)
            subject = self.ref(ident.subject)
            obj = self.ref(ident.object)
            self.require_predicate(predicate)
            pos = self.add_prop(True, subject, predicate, obj, None, attrs, meta, own_meta, expect, f"(…, {rules._q(predicate)}, …)")
        self.program.order.append(("R", pos))
        if block.handle is not None:
            self.handles[block.handle] = ("R", pos)

    def add_prop(self, block, subject, predicate, obj, pid, attrs, meta, own_meta, expect, label) -> int:
        pos = len(self.program.props)
        row = PropRow(pos, self.seq, block, subject, predicate, obj, pid, _encode(attrs, meta), _encode(attrs, own_meta), expect, label)
        self.program.props.append(row)
        if pid is not None:
            self.by_pid.setdefault(pid, pos)
        else:
            self.by_spo.setdefault((subject, predicate, obj), pos)
        return pos

    # -------------------------------------------------------------- references
    def predicate_name(self, predicate: Any) -> str:
        if isinstance(predicate, ast.PredicatePattern) and len(predicate.names) == 1 and predicate.quantifier is None:
            return predicate.names[0]
        raise KipError(errors.INVALID_SYNTAX, "A proposition in KML needs exactly one literal predicate.", "Write (subject, \"predicate\", object).")

    def ref(self, target: Any) -> Ref:
        """A target/endpoint → Ref; handles must already be bound (KIP_3001)."""
        if isinstance(target, ast.Var):
            bound = self.handles.get(target.name)
            if bound is None:
                raise KipError(
                    errors.REFERENCE_ERROR,
                    f"Handle ?{target.name} is used before it is defined in this UPSERT block.",
                    f"Define ?{target.name} with a CONCEPT or PROPOSITION block placed before the clause that references it "
                    "(handles are local to one UPSERT { … } statement).",
                )
            return bound
        if isinstance(target, ast.ConceptClause):
            if target.var is not None:
                raise KipError(errors.INVALID_SYNTAX, f"A KML target cannot bind a variable (?{target.var}).", "Drop the variable, or use a handle defined by a CONCEPT block.")
            if target.id is not None:
                cid = resolve_str(target.id, self.params, "A concept `id`")
                ref: Ref = ("cid", cid)
                if cid in self.by_cid:
                    return ("C", self.by_cid[cid])
                self.program.targets.append((self.seq, ref))
                return ref
            if target.type is None or target.name is None:
                raise KipError(errors.INVALID_SYNTAX, "A KML concept target needs {type, name} or {id}.", "Write {type: \"Type\", name: \"Name\"} or {id: \"C:…\"}.")
            type_ = resolve_str(target.type, self.params, "A concept `type`")
            name = resolve_str(target.name, self.params, "A concept `name`")
            if (type_, name) in self.by_tn:
                return ("C", self.by_tn[(type_, name)])
            self.require_type(type_, None)
            ref = ("ctn", type_, name)
            self.program.targets.append((self.seq, ref))
            return ref
        if isinstance(target, ast.PropositionClause):
            if target.var is not None:
                raise KipError(errors.INVALID_SYNTAX, f"A KML target cannot bind a variable (?{target.var}).", "Drop the variable, or use a handle defined by a PROPOSITION block.")
            if target.id is not None:
                pid = resolve_str(target.id, self.params, "A proposition `id`")
                if pid in self.by_pid:
                    return ("R", self.by_pid[pid])
                ref = ("pid", pid)
                self.program.targets.append((self.seq, ref))
                return ref
            predicate = self.predicate_name(target.predicate)
            subject = self.ref(target.subject)
            obj = self.ref(target.object)
            self.require_predicate(predicate)
            key = (subject, predicate, obj)
            if key in self.by_spo:
                return ("R", self.by_spo[key])
            ref = ("spo", subject, predicate, obj)
            self.program.targets.append((self.seq, ref))
            return ref
        raise KipError(errors.INVALID_SYNTAX, f"Unsupported KML target {type(target).__name__}.")

    def require_type(self, type_: str, name: Optional[str]) -> None:
        if type_ == storage.CONCEPT_TYPE and name == storage.CONCEPT_TYPE:
            return  # the self-defining root of the type system
        if type_ in self.program.defined_types:
            return
        self.program.schema_checks.append((self.seq, "type", type_))

    def require_predicate(self, predicate: str) -> None:
        if predicate in self.program.defined_predicates:
            return
        self.program.schema_checks.append((self.seq, "predicate", predicate))


def _refuse_engine_name(type_: str, name: str) -> None:
    """A type named KipConcept would label its instances KipConcept (matching every concept), a
    predicate named KIP_SUBJECT would forge the structural links: the engine's own Neo4j names
    are refused as concept types / predicates (tests/test_reliability_hostile.py)."""
    if (type_ == storage.CONCEPT_TYPE and name in storage.RESERVED_LABELS) or (
        type_ == storage.PROPOSITION_TYPE and name in storage.RESERVED_REL_TYPES
    ):
        kind = "concept type" if type_ == storage.CONCEPT_TYPE else "predicate"
        raise KipError(
            errors.IMMUTABLE_TARGET,
            f"The {kind} name {rules._q(name)} is reserved: the engine uses it as a Neo4j "
            f"{'label' if kind == 'concept type' else 'relationship type'} of its own storage model.",
            f"Choose another name; {', '.join(storage.RESERVED_LABELS + storage.RESERVED_REL_TYPES)} are engine-reserved.",
        )


def analyze(capsule: ast.Capsule, params: dict[str, Any]) -> Program:
    return Analyzer(params).run(capsule)


# ====================================================================== statements
def _resolve_statement() -> Compiled:
    s = Statement()
    s.line("UNWIND ", Param(None, "refs"), " AS r")
    s.line("CALL (r) {")
    s.line("  WITH r WHERE r.k = 'ctn'")
    s.line(f"  OPTIONAL MATCH (n:{K.C} {{type: r.a, name: r.b}})")
    s.line("  RETURN n.id AS id, n.", Ident(storage.attr_key("instance_schema")), " AS schema")
    s.line("  UNION ALL")
    s.line("  WITH r WHERE r.k = 'cid'")
    s.line(f"  OPTIONAL MATCH (n:{K.C} {{id: r.a}})")
    s.line("  RETURN n.id AS id, null AS schema")
    s.line("  UNION ALL")
    s.line("  WITH r WHERE r.k = 'pid'")
    s.line(f"  OPTIONAL MATCH (n:{K.P} {{id: r.a}})")
    s.line("  RETURN n.id AS id, null AS schema")
    s.line("  UNION ALL")
    s.line("  WITH r WHERE r.k = 'spo'")
    s.line(f"  OPTIONAL MATCH (n:{K.P} {{subject: r.a, predicate: r.b, object: r.c}})")
    s.line("  RETURN n.id AS id, null AS schema")
    s.line("}")
    s.line("RETURN r.i AS i, id, schema")
    return Compiled.of(s, "UPSERT: check types/predicates and look up outside targets")


def _names_statement() -> Compiled:
    s = Statement()
    s.line(f"MATCH (n:{K.C}) WHERE n.type = ", Param(None, "meta"), " RETURN n.name AS name")
    return Compiled.of(s, "UPSERT: list defined names (did-you-mean)")


def _concept_statement(strict: bool) -> Compiled:
    s = Statement()
    s.line("UNWIND ", Param(None, "rows"), " AS row")
    s.line("CALL (row) {")
    s.line("  CALL (row) {")
    s.line("    WITH row WHERE row.id IS NULL")
    s.line(f"    MERGE (n:{K.C} {{type: row.type, name: row.name}})")
    s.line(f"      ON CREATE SET n.id = {K.new_concept_id()}, n:$(row.type), n.", Ident(K.VERSION), " = 0")
    s.line("    RETURN n")
    s.line("    UNION ALL")
    s.line("    WITH row WHERE row.id IS NOT NULL")
    s.line(f"    OPTIONAL MATCH (n:{K.C} {{id: row.id}})")
    s.line("    RETURN n")
    s.line("  }")
    s.line(f"  WITH row, n, {K.created_flag()} AS created")
    K.apply_tail(s, concept=True, attr_keys=strict)
    s.line("}")
    extra = ", tn, attr_keys" if strict else ""
    s.line(f"RETURN row.i AS i, id, status, version, created{extra}")
    return Compiled.of(s, "UPSERT: match-or-create all CONCEPT blocks")


def _concept_probe_statement() -> Compiled:
    """dry_run: the same checks as the concept write, reading only."""
    s = Statement()
    s.line("UNWIND ", Param(None, "rows"), " AS row")
    s.line("CALL (row) {")
    s.line(f"  OPTIONAL MATCH (a:{K.C} {{type: row.type, name: row.name}})")
    s.line(f"  OPTIONAL MATCH (b:{K.C} {{id: row.id}})")
    s.line("  WITH row, coalesce(a, b) AS n")
    s.line("  WITH row, n, properties(n) AS cur")
    s.line(
        "  WITH row, n, cur, coalesce(", rules.cy_protected_concept("cur.type", "cur.name"), ", false) AS prot, ",
        "coalesce(", rules.cy_actor("cur.type", "cur.name"), ", false) AS actor",
    )
    s.line("  WITH row, n, cur, prot, actor, CASE WHEN prot THEN row.own ELSE row.props END AS props")
    s.line("  RETURN CASE")
    s.line("    WHEN n IS NULL AND row.id IS NOT NULL THEN 'missing'")
    s.line("    WHEN row.expect IS NOT NULL AND coalesce(CASE WHEN n IS NULL THEN 0 ELSE cur.", Ident(K.VERSION), " END, -1) <> row.expect THEN 'version'")
    s.line("    WHEN prot AND any(k IN keys(props) WHERE cur[k] IS NULL OR cur[k] <> props[k]) THEN 'protected'")
    s.line(
        "    WHEN actor AND row.cd IS NOT NULL AND cur.", Ident(K.CORE_DIRECTIVES), " IS NOT NULL AND cur.",
        Ident(K.CORE_DIRECTIVES), " <> row.cd THEN 'protected'",
    )
    s.line("    ELSE 'ok' END AS status, cur.", Ident(K.VERSION), " AS version, n IS NULL AS created")
    s.line("}")
    s.line("RETURN row.i AS i, status, version, created")
    return Compiled.of(s, "UPSERT dry_run: probe CONCEPT blocks")


def _proposition_statement() -> Compiled:
    s = Statement()
    s.line("UNWIND ", Param(None, "rows"), " AS row")
    s.line("CALL (row) {")
    s.line("  CALL (row) {")
    s.line("    WITH row WHERE row.pid IS NULL")
    # row.sc / row.oc: whether the endpoint is a concept (known in Python), so one index seek each
    s.line(f"    OPTIONAL MATCH (sc:{K.C} {{id: CASE WHEN row.sc THEN row.s END}})")
    s.line(f"    OPTIONAL MATCH (sp:{K.P} {{id: CASE WHEN row.sc THEN null ELSE row.s END}})")
    s.line(f"    OPTIONAL MATCH (oc:{K.C} {{id: CASE WHEN row.oc THEN row.o END}})")
    s.line(f"    OPTIONAL MATCH (op:{K.P} {{id: CASE WHEN row.oc THEN null ELSE row.o END}})")
    s.line("    WITH row, coalesce(sc, sp) AS s, coalesce(oc, op) AS o")
    s.line("    WHERE s IS NOT NULL AND o IS NOT NULL")
    s.line(f"    MERGE (n:{K.P} {{subject: row.s, predicate: row.p, object: row.o}})")
    s.line(f"      ON CREATE SET n.id = {K.new_proposition_id('row.p')}, n.", Ident(K.VERSION), " = 0")
    s.line("    WITH row, s, o, n")
    s.line("    CALL (row, s, o, n) {")
    s.line(f"      WITH * WHERE {K.created_flag()}")
    s.line(f"      CREATE (n)-[:{K.SUBJ}]->(s), (n)-[:{K.OBJ}]->(o), (s)-[:$(row.p) {{", Ident(storage.LINK_ID), ": n.id}]->(o)")
    s.line("    }")
    s.line("    RETURN n")
    s.line("    UNION ALL")
    s.line("    WITH row WHERE row.pid IS NOT NULL")
    s.line(f"    OPTIONAL MATCH (n:{K.P} {{id: row.pid}})")
    s.line("    RETURN n")
    s.line("  }")
    s.line(f"  WITH row, n, {K.created_flag()} AS created")
    K.apply_tail(s, concept=False)
    s.line("}")
    s.line("RETURN row.i AS i, id, status, version, created")
    return Compiled.of(s, "UPSERT: match-or-create PROPOSITION blocks and SET PROPOSITIONS links (one wave)")


_STATEMENTS: dict[str, Compiled] = {}


def statement(name: str) -> Compiled:
    if name not in _STATEMENTS:
        _STATEMENTS[name] = {
            "resolve": _resolve_statement,
            "names": _names_statement,
            "concepts": lambda: _concept_statement(False),
            "concepts_strict": lambda: _concept_statement(True),
            "probe": _concept_probe_statement,
            "props": _proposition_statement,
        }[name]()
    return _STATEMENTS[name]


# ====================================================================== runtime
class Runner:
    """Executes one analysed capsule inside the plan's transaction."""

    def __init__(self, program: Program, settings: Settings, tx: Tx, dry: bool) -> None:
        self.p = program
        self.settings = settings
        self.tx = tx
        self.dry = dry
        self.now = K.now_iso()
        self.ids: dict[Ref, Optional[str]] = {}
        self.concept_ids: dict[int, str] = {}
        self.prop_ids: dict[int, str] = {}
        self.schemas: dict[str, Any] = {}

    # -------------------------------------------------------------- refs
    def value(self, ref: Ref) -> Optional[str]:
        kind = ref[0]
        if kind == "C":
            return self.concept_ids.get(ref[1])
        if kind == "R":
            return self.prop_ids.get(ref[1])
        return self.ids.get(ref)

    def known(self, ref: Ref) -> bool:
        return self.value(ref) is not None

    def lookup(self, refs: list[Ref]) -> list[dict[str, Any]]:
        payload = []
        for i, ref in enumerate(refs):
            kind = ref[0]
            if kind == "ctn":
                payload.append({"i": i, "k": kind, "a": ref[1], "b": ref[2], "c": None})
            elif kind in ("cid", "pid"):
                payload.append({"i": i, "k": kind, "a": ref[1], "b": None, "c": None})
            else:  # spo with known endpoints
                payload.append({"i": i, "k": "spo", "a": self.value(ref[1]), "b": ref[2], "c": self.value(ref[3])})
        rows = self.tx.run(statement("resolve"), {"refs": payload}) if payload else []
        rows.sort(key=lambda r: r["i"])
        return rows

    def _static(self, ref: Ref) -> bool:
        """True when the ref depends on no handle of this command."""
        if ref[0] in ("C", "R"):
            return False
        if ref[0] == "spo":
            return self._static(ref[1]) and self._static(ref[3])
        return True

    def resolve_spo(self, refs: list[Ref]) -> None:
        """Look up structural refs (and nested ones), innermost first; unresolved stay None."""
        pending = [r for r in dict.fromkeys(refs) if r[0] == "spo" and self.value(r) is None]
        # collect nested structural refs
        stack = list(pending)
        allrefs: list[Ref] = []
        while stack:
            r = stack.pop()
            if r in allrefs:
                continue
            allrefs.append(r)
            for inner in (r[1], r[3]):
                if inner[0] == "spo" and self.value(inner) is None:
                    stack.append(inner)
        while True:
            ready = [r for r in allrefs if self.value(r) is None and self.known(r[1]) and self.known(r[3])]
            if not ready:
                return
            for ref, row in zip(ready, self.lookup(ready)):
                self.ids[ref] = row["id"] if row["id"] is not None else None
            allrefs = [r for r in allrefs if r not in ready]

    # -------------------------------------------------------------- phases
    def check_schema_and_targets(self) -> None:
        p = self.p
        refs: list[Ref] = []
        checks: list[tuple[int, str, str, int]] = []  # (seq, kind, name, index in refs)
        index: dict[Ref, int] = {}

        def add(ref: Ref) -> int:
            if ref not in index:
                index[ref] = len(refs)
                refs.append(ref)
            return index[ref]

        for seq, kind, name in p.schema_checks:
            meta = storage.CONCEPT_TYPE if kind == "type" else storage.PROPOSITION_TYPE
            checks.append((seq, kind, name, add(("ctn", meta, name))))
        strict_types = list(p.typed) if self.settings.strict_schema else []
        for type_ in strict_types:
            add(("ctn", storage.CONCEPT_TYPE, type_))
        simple = [(seq, ref) for seq, ref in p.targets if ref[0] in ("ctn", "cid", "pid")]
        for _, ref in simple:
            add(ref)
        rows = self.lookup(refs)
        found = {ref: row for ref, row in zip(refs, rows)}
        for ref, row in found.items():
            self.ids[ref] = row["id"]
        for type_ in strict_types:
            row = found[("ctn", storage.CONCEPT_TYPE, type_)]
            self.schemas[type_] = storage.decode(row["schema"]) if row["schema"] is not None else None
        failures: list[tuple[int, int, KipError]] = []
        missing_types = [(seq, name) for seq, kind, name, i in checks if kind == "type" and rows[i]["id"] is None]
        missing_preds = [(seq, name) for seq, kind, name, i in checks if kind == "predicate" and rows[i]["id"] is None]
        if missing_types:
            seq, name = min(missing_types)
            candidates = self.names(storage.CONCEPT_TYPE) + p.defined_types
            failures.append((seq, 0, rules.undefined_type(name, candidates)))
        if missing_preds:
            seq, name = min(missing_preds)
            candidates = self.names(storage.PROPOSITION_TYPE) + p.defined_predicates
            failures.append((seq, 0, rules.undefined_predicate(name, candidates)))
        for seq, ref in simple:
            if self.ids.get(ref) is None:
                failures.append((seq, 1, self.missing(ref)))
        # structural targets made only of outside targets: look them up now; a miss may still be a
        # proposition this command creates earlier in textual order, so it is re-checked in its wave.
        if not failures:
            self.resolve_spo([ref for _, ref in p.targets if ref[0] == "spo" and self._static(ref)])
        if failures:
            failures.sort(key=lambda f: (f[0], f[1]))
            raise failures[0][2]

    def names(self, meta: str) -> list[str]:
        return [r["name"] for r in self.tx.run(statement("names"), {"meta": meta})]

    def missing(self, ref: Ref) -> KipError:
        kind = ref[0]
        if kind == "ctn":
            return K.not_found(
                f"Concept {rules.label(ref[1], ref[2])} does not exist.",
                f"Create it first (a CONCEPT block earlier in the capsule or an earlier UPSERT), or find the right name with SEARCH CONCEPT {rules._q(ref[2])} WITH TYPE {rules._q(ref[1])}.",
            )
        if kind == "cid":
            return K.not_found(f"No concept has id {rules._q(ref[1])}.", "Ids are opaque: FIND or SEARCH the concept to get its current id; {id: …} only matches, it never creates.")
        if kind == "pid":
            return K.not_found(f"No proposition has id {rules._q(ref[1])}.", "FIND the proposition to get its current id; (id: …) only matches, it never creates.")
        return K.not_found(
            f"The proposition ({self.describe(ref[1])}, {rules._q(ref[2])}, {self.describe(ref[3])}) does not exist.",
            "A structural (s, \"p\", o) target must already exist: create it first with a PROPOSITION block placed earlier, or FIND it.",
        )

    def describe(self, ref: Ref) -> str:
        kind = ref[0]
        if kind == "C":
            return self.p.concepts[ref[1]].label
        if kind == "R":
            return self.p.props[ref[1]].label
        if kind == "ctn":
            return rules.label(ref[1], ref[2])
        if kind == "cid":
            return f"{{id: {rules._q(ref[1])}}}"
        if kind == "pid":
            return f"(id: {rules._q(ref[1])})"
        return f"({self.describe(ref[1])}, {rules._q(ref[2])}, {self.describe(ref[3])})"

    def write_concepts(self) -> None:
        rows = [c.payload() for c in self.p.concepts]
        if not rows:
            return
        strict = self.settings.strict_schema
        stmt = statement("concepts_strict" if strict else "concepts")
        result = self.tx.run(stmt, {"rows": rows, K.NOW: self.now})
        by_i = {r["i"]: r for r in result}
        for c in self.p.concepts:
            r = by_i.get(c.pos)
            if r is None or r["status"] == "missing":
                raise K.not_found(f"No concept has id {rules._q(c.id)}.", "Ids are opaque: FIND or SEARCH the concept to get its current id; {id: …} only matches, it never creates.")
            self.check_status(r, c.label, c.expect)
            self.concept_ids[c.pos] = r["id"]
            if strict:
                type_ = c.type or (r["tn"][0] if r["tn"] else None)
                schema_ = self.schemas.get(type_)
                if schema_ is None and type_ is not None and type_ not in self.schemas:
                    schema_ = self.fetch_schema(type_)
                rules.check_value_types(type_, schema_, c.attrs)
                present = [k[len(storage.ATTR_PREFIX):] for k in r["attr_keys"]]
                rules.check_required(type_, schema_, present, f"Concept {c.label}")

    def fetch_schema(self, type_: str) -> Any:
        rows = self.lookup([("ctn", storage.CONCEPT_TYPE, type_)])
        value = storage.decode(rows[0]["schema"]) if rows and rows[0]["schema"] is not None else None
        self.schemas[type_] = value
        return value

    def check_status(self, r: dict[str, Any], label: str, expect: Optional[int]) -> None:
        status = r["status"]
        if status == "ok":
            return
        if status == "version":
            raise K.version_conflict(label, expect, None if r.get("created") else r["version"])
        if status == "protected":
            raise rules.immutable(label, "it already exists and this write would change it")
        raise K.not_found(f"{label} does not exist.")

    def refs_of(self, row: PropRow) -> list[Ref]:
        out: list[Ref] = []
        stack = [r for r in (row.subject, row.object) if r is not None]
        while stack:
            r = stack.pop()
            out.append(r)
            if r[0] == "spo":
                stack.extend((r[1], r[3]))
        return out

    def write_propositions(self) -> None:
        rows = self.p.props
        pos = 0
        while pos < len(rows):
            wave: list[PropRow] = []
            in_wave: set[int] = set()
            for row in rows[pos:]:
                if wave and self.needs_break(row, in_wave):
                    break
                wave.append(row)
                in_wave.add(row.pos)
            self.write_wave(wave)
            pos += len(wave)

    def needs_break(self, row: PropRow, in_wave: set[int]) -> bool:
        for r in self.refs_of(row):
            if r[0] == "R" and r[1] in in_wave:
                return True
            if r[0] == "spo" and self.value(r) is None:
                return True  # may name a proposition written by an earlier row: write those first
        return False

    def write_wave(self, wave: list[PropRow]) -> None:
        spo = [r for row in wave for r in self.refs_of(row) if r[0] == "spo"]
        if spo:
            self.resolve_spo(spo)
        payload = []
        for row in wave:
            if row.id is None:
                for ref in (row.subject, row.object):
                    if self.value(ref) is None:
                        raise self.missing(ref) if ref[0] not in ("C", "R") else K.not_found(f"{self.describe(ref)} could not be resolved.")
            payload.append({
                "i": row.pos, "s": self.value(row.subject) if row.subject else None, "p": row.predicate,
                "o": self.value(row.object) if row.object else None, "pid": row.id,
                "sc": _is_concept(row.subject), "oc": _is_concept(row.object),
                "btd": row.predicate in (None, storage.BELONGS_TO_DOMAIN),
                "props": row.props, "own": row.own, "expect": row.expect,
            })
        result = self.tx.run(statement("props"), {"rows": payload, K.NOW: self.now})
        by_i = {r["i"]: r for r in result}
        for row in wave:
            r = by_i.get(row.pos)
            label = row.label if row.id is not None else self.describe(("spo", row.subject, row.predicate, row.object))
            if r is None or r["status"] == "missing":
                raise K.not_found(f"{label} does not exist (an endpoint was removed concurrently, or the id is unknown).")
            self.check_status(r, label, row.expect)
            self.prop_ids[row.pos] = r["id"]

    def probe(self) -> None:
        """dry_run: EXPECT VERSION / protected / {id} checks for concept blocks, without writing."""
        rows = [c.payload() for c in self.p.concepts]
        if not rows:
            return
        result = {r["i"]: r for r in self.tx.run(statement("probe"), {"rows": rows})}
        for c in self.p.concepts:
            self.check_status(result[c.pos], c.label, c.expect)

    # -------------------------------------------------------------- run
    def run(self) -> dict[str, Any]:
        self.check_schema_and_targets()
        if self.dry:
            self.probe()
            return {"blocks": self.p.blocks, "upsert_concept_nodes": [], "upsert_proposition_links": []}
        self.write_concepts()
        self.write_propositions()
        return {
            "blocks": self.p.blocks,
            "upsert_concept_nodes": [self.concept_ids[pos] for kind, pos in self.p.order if kind == "C"],
            "upsert_proposition_links": [self.prop_ids[pos] for kind, pos in self.p.order if kind == "R"],
        }


def lower_capsule(command: ast.Capsule, parameters: dict[str, Any], settings: Settings) -> Plan:
    program = analyze(command, parameters)
    strict = settings.strict_schema
    statements = [statement("resolve"), statement("concepts_strict" if strict else "concepts"), statement("props")]

    def runner(tx: Tx) -> dict[str, Any]:
        return {"result": Runner(program, settings, tx, dry=False).run()}

    def dry(tx: Tx) -> dict[str, Any]:
        return {"result": Runner(program, settings, tx, dry=True).run()}

    return Plan("KML", "WRITE", statements, runner, dry)

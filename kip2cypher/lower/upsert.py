"""UPSERT (spec §4.1): a command of one or more UPSERT statements, run as ONE transaction.

Compile time (``Analyzer``) turns the AST into an ``UpsertPlan``, immutable data:

- one *concept row* per CONCEPT block (identity, encoded attributes+metadata,
  EXPECT VERSION), in textual order;
- one *proposition row* per PROPOSITION block and per SET PROPOSITIONS entry,
  in textual order;
- *references* for every endpoint/target: a handle of an earlier concept block
  (``ConceptBlockRef``) or proposition row (``PropositionRowRef``), or an outside
  target — ``ConceptByName``, ``ConceptById``, ``PropositionById``, ``Structural``
  (a ``(subject, predicate, object)`` whose endpoints are references again).

Handles are checked here (KIP_3001), reserved metadata keys (KIP_2002) and
metadata precedence (UPSERT ⊂ block ⊂ entry, inner wins key by key).

Run time (``kip2cypher.execution.programs.upsert``) needs a handful of round trips,
independent of the number of blocks:

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

import functools
import unicodedata
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .. import adoption as adopt
from .. import errors
from ..config import Settings
from ..cypher import storage
from ..domain import rules
from ..errors import KipError
from ..syntax import ast
from ..syntax.values import describe, resolve, resolve_predicate, resolve_str
from . import adopted as adopted_cy
from .plan import Compiled
from .upsert_plan import (
    AdoptedConcept,
    ConceptBlockRef,
    ConceptById,
    ConceptByName,
    ConceptRow,
    Handle,
    Outside,
    PropositionById,
    PropositionRow,
    PropositionRowRef,
    Ref,
    SchemaCheck,
    Structural,
    Target,
    UpsertPlan,
)


def _version(value: ast.Value | None, params: dict[str, Any]) -> int | None:
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


def _object(obj: ast.ObjectLit | None, params: dict[str, Any]) -> dict[str, Any]:
    return {} if obj is None else resolve(obj, params)


def _metadata(obj: ast.ObjectLit | None, params: dict[str, Any], where: str) -> dict[str, Any]:
    meta = _object(obj, params)
    rules.check_metadata_keys(meta, where)
    return meta


def _encoded(attrs: dict[str, Any], inherited: dict[str, Any], own: dict[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """Metadata precedence (outer ⊂ inner, key by key): the encoded property map with the inherited
    metadata under the element's own, and the map with its own metadata only (the same map when
    nothing is inherited; attributes are encoded once for both). ``inherited`` comes encoded
    (``_meta_codes``): an UPSERT's metadata is encoded once, not once per block and entry."""
    encoded = storage.encode_map(attrs, storage.ATTR_PREFIX)
    own_codes = storage.encode_map(own, storage.META_PREFIX)
    mine = MappingProxyType({**encoded, **own_codes})
    if not inherited:
        return mine, mine
    return MappingProxyType({**encoded, **inherited, **own_codes}), mine


def _meta_codes(meta: dict[str, Any]) -> dict[str, Any]:
    """Metadata as stored properties (encoding is per key: the codes of ``{**a, **b}`` are ``{**codes(a), **codes(b)}``)."""
    return storage.encode_map(meta, storage.META_PREFIX)


class Analyzer:
    """Walks the capsule once, in textual order, and collects the plan's rows and checks."""

    def __init__(self, params: dict[str, Any], adoption: Any = None, *, superseding: bool = True) -> None:
        self.params = params
        #: look up the newer official definitions a block's own properties are superseded by
        #: (off while ``official_definitions`` analyses the shipped Genesis files themselves)
        self.superseding = superseding
        #: the namespace's adoption mapping: adopted types, predicates and ids are never written
        self.adoption = adoption
        self.seq = 0
        self.concepts: list[ConceptRow] = []
        self.props: list[PropositionRow] = []
        self.order: list[Handle] = []
        self.schema_checks: dict[tuple[str, str], SchemaCheck] = {}  # (meta, name) -> its first use
        self.targets: list[Target] = []
        self.defined_types: list[str] = []
        self.defined_predicates: list[str] = []
        self.typed: dict[str, None] = {}
        self.by_tn: dict[tuple[str, str], int] = {}  # (type, name) -> concept pos (earlier blocks)
        self.by_cid: dict[str, int] = {}
        self.by_spo: dict[tuple[Ref, str, Ref], int] = {}  # (s, p, o) -> proposition row pos
        self.by_pid: dict[str, int] = {}
        self.handles: dict[str, Handle] = {}

    # -------------------------------------------------------------- entry
    def run(self, capsule: ast.Capsule, strict: bool) -> UpsertPlan:
        for upsert in capsule.upserts:
            self.handles = {}
            outer = _meta_codes(_metadata(upsert.metadata, self.params, "UPSERT … WITH METADATA"))
            for block in upsert.blocks:
                self.seq += 1
                if isinstance(block, ast.ConceptBlock):
                    self.concept_block(block, outer)
                else:
                    self.proposition_block(block, outer)
        adopted_refs = tuple(dict.fromkeys(t.ref for t in self.targets if isinstance(t.ref, AdoptedConcept)))
        lookup = adopted_cy.lookup_statement([(self.adoption.type(r.type), r.name, r.value) for r in adopted_refs]) if adopted_refs else None
        return UpsertPlan(
            strict=strict,
            blocks=len(capsule.upserts),
            concepts=tuple(self.concepts),
            propositions=tuple(self.props),
            order=tuple(self.order),
            schema_checks=tuple(self.schema_checks.values()),
            targets=tuple(self.targets),
            defined_types=tuple(self.defined_types),
            defined_predicates=tuple(self.defined_predicates),
            typed=tuple(self.typed),
            adopted_refs=adopted_refs,
            adopted_lookup=Compiled.of(lookup, "UPSERT: find the adopted endpoints (link_memory)") if lookup is not None else None,
        )

    # -------------------------------------------------------------- blocks
    def concept_block(self, block: ast.ConceptBlock, outer: dict[str, Any]) -> None:
        """``outer``: the UPSERT's metadata, encoded (``_meta_codes``)."""
        ident = block.identity
        own_meta = _metadata(block.metadata, self.params, "a CONCEPT block's WITH METADATA")
        attrs = _object(block.set_attributes, self.params)
        props, own = _encoded(attrs, outer, own_meta)
        expect = _version(block.expect_version, self.params)
        pos = len(self.concepts)
        body = block.set_attributes
        attr_at = MappingProxyType({k: span.start for (k, _), span in zip(body.entries, body.key_spans)} if body is not None else {})
        at = ident.span.start
        if ident.id is not None:
            cid = resolve_str(ident.id, self.params, "A concept `id`")
            self.refuse_adopted(at, element_id=cid)
            row = ConceptRow(pos, None, None, cid, MappingProxyType(attrs), props, own, expect, at, attr_at)
            self.by_cid.setdefault(cid, pos)
            self.targets.append(Target(self.seq, ConceptById(cid), at))
        else:
            type_ = resolve_str(ident.type, self.params, "A concept `type`")
            name = resolve_str(ident.name, self.params, "A concept `name`")
            sup = superseding(type_, name, own) if self.superseding else ()
            row = ConceptRow(pos, type_, name, None, MappingProxyType(attrs), props, own, expect, at, attr_at, sup)
            self.require_type(type_, name, ident.type.span.start)
            _refuse_unnameable(type_, name, ident.name.span.start)
            _refuse_engine_name(type_, name)
            if type_ == storage.CONCEPT_TYPE:
                self.defined_types.append(name)
            elif type_ == storage.PROPOSITION_TYPE:
                self.defined_predicates.append(name)
            self.by_tn[(type_, name)] = pos
            self.typed[type_] = None
        self.concepts.append(row)
        here = ConceptBlockRef(pos)
        self.order.append(here)
        meta = {**outer, **_meta_codes(own_meta)} if own_meta else outer
        for entry in block.set_propositions or ():
            self.seq += 1
            named_at = entry.predicate.span.start if isinstance(entry.predicate, ast.Placeholder) else entry.span.start
            predicate = resolve_predicate(entry.predicate, self.params, named_at)
            entry_meta = _metadata(entry.metadata, self.params, f'the WITH METADATA of ("{predicate}", …)') if entry.metadata is not None else {}
            target = self.ref(entry.target)
            self.require_predicate(predicate, named_at)
            self.add_prop(here, predicate, target, None, _encoded({}, meta, {**own_meta, **entry_meta}), None, entry.span.start)
        if block.handle is not None:
            # Bound once the block (including its SET PROPOSITIONS) has executed (§4.1 define before use).
            self.handles[block.handle] = here

    def proposition_block(self, block: ast.PropositionBlock, outer: dict[str, Any]) -> None:
        ident = block.identity
        own_meta = _metadata(block.metadata, self.params, "a PROPOSITION block's WITH METADATA")
        payload = _encoded(_object(block.set_attributes, self.params), outer, own_meta)
        expect = _version(block.expect_version, self.params)
        at = ident.span.start
        if ident.id is not None:
            pid = resolve_str(ident.id, self.params, "A proposition `id`")
            self.refuse_adopted(at, element_id=pid)
            self.targets.append(Target(self.seq, PropositionById(pid), at))
            pos = self.add_prop(None, None, None, pid, payload, expect, at)
        else:
            predicate = self.predicate_name(ident.predicate)
            subject = self.ref(ident.subject)
            obj = self.ref(ident.object)
            self.require_predicate(predicate, _named_at(ident.predicate))
            pos = self.add_prop(subject, predicate, obj, None, payload, expect, at)
        here = PropositionRowRef(pos)
        self.order.append(here)
        if block.handle is not None:
            self.handles[block.handle] = here

    def add_prop(
        self,
        subject: Ref | None,
        predicate: str | None,
        obj: Ref | None,
        pid: str | None,
        payload: tuple[Mapping[str, Any], Mapping[str, Any]],
        expect: int | None,
        at: int,
    ) -> int:
        linked = subject if isinstance(subject, AdoptedConcept) else obj if isinstance(obj, AdoptedConcept) else None
        if linked is not None and predicate == storage.BELONGS_TO_DOMAIN:
            # domain membership is schema, and the mapping gives adopted types theirs (domain Adopted)
            raise adopted_cy.read_only(self.adoption.type(linked.type), "This UPSERT (domain membership)", at)
        pos = len(self.props)
        self.props.append(PropositionRow(pos, subject, predicate, obj, pid, payload[0], payload[1], expect, at))
        if pid is not None:
            self.by_pid.setdefault(pid, pos)
        else:
            self.by_spo.setdefault((subject, predicate, obj), pos)
        return pos

    # -------------------------------------------------------------- references
    def predicate_name(self, predicate: Any) -> str:
        if isinstance(predicate, ast.PredicatePattern) and len(predicate.names) == 1 and predicate.quantifier is None:
            return resolve_predicate(predicate.names[0], self.params, _named_at(predicate))
        raise KipError(
            errors.INVALID_SYNTAX,
            "A proposition in KML needs exactly one predicate name.",
            'Write (subject, "predicate", object) or (subject, :predicate, object).',
        )

    def ref(self, target: Any) -> Ref:
        """A target/endpoint → reference; handles must already be bound (KIP_3001)."""
        if isinstance(target, ast.Var):
            bound = self.handles.get(target.name)
            if bound is None:
                raise KipError(
                    errors.REFERENCE_ERROR,
                    f"Handle ?{target.name} is used before it is defined in this UPSERT block.",
                    f"Define ?{target.name} with a CONCEPT or PROPOSITION block placed before the clause that references it "
                    "(handles are local to one UPSERT { … } statement).",
                    offset=target.span.start,
                )
            return bound
        if isinstance(target, ast.ConceptClause):
            return self.concept_ref(target)
        if isinstance(target, ast.PropositionClause):
            return self.proposition_ref(target)
        raise KipError(errors.INVALID_SYNTAX, f"Unsupported KML target {type(target).__name__}.")

    def concept_ref(self, target: ast.ConceptClause) -> Ref:
        _no_variable(target.var, "CONCEPT")
        at = target.span.start
        linked = self.adopted_endpoint(target, at) if self.adoption is not None else None
        if linked is not None:
            self.targets.append(Target(self.seq, linked, at))
            return linked
        if target.id is not None:
            cid = resolve_str(target.id, self.params, "A concept `id`")
            self.refuse_adopted(at, element_id=cid)
            return self.earlier_or_outside(self.by_cid.get(cid), ConceptBlockRef, ConceptById(cid), at)
        if target.type is None or target.name is None:
            raise KipError(errors.INVALID_SYNTAX, "A KML concept target needs {type, name} or {id}.", 'Write {type: "Type", name: "Name"} or {id: "C:…"}.')
        type_ = resolve_str(target.type, self.params, "A concept `type`")
        name = resolve_str(target.name, self.params, "A concept `name`")
        pos = self.by_tn.get((type_, name))
        if pos is None:
            self.require_type(type_, None, target.type.span.start)
        return self.earlier_or_outside(pos, ConceptBlockRef, ConceptByName(type_, name), at)

    def proposition_ref(self, target: ast.PropositionClause) -> Ref:
        _no_variable(target.var, "PROPOSITION")
        at = target.span.start
        if target.id is not None:
            pid = resolve_str(target.id, self.params, "A proposition `id`")
            self.refuse_adopted(at, element_id=pid)
            return self.earlier_or_outside(self.by_pid.get(pid), PropositionRowRef, PropositionById(pid), at)
        predicate = self.predicate_name(target.predicate)
        subject = self.ref(target.subject)
        obj = self.ref(target.object)
        self.require_predicate(predicate, _named_at(target.predicate))
        return self.earlier_or_outside(self.by_spo.get((subject, predicate, obj)), PropositionRowRef, Structural(subject, predicate, obj), at)

    def adopted_endpoint(self, target: ast.ConceptClause, at: int) -> AdoptedConcept | None:
        """An endpoint naming an adopted concept (by ``{type, name}`` or ``{id: "A:…"}``): the
        reference to look up when the mapping's ``link_memory`` is on, KIP_3004 when it is off;
        None for anything else (a memory concept, or an adopted predicate's id, refused later)."""
        if self.adoption is None:
            return None
        if target.id is not None:
            split = adopt.split_id(resolve_str(target.id, self.params, "A concept `id`"))
            t = self.adoption.type(split[0]) if split is not None else None
            found = AdoptedConcept(t.name, value=split[1]) if t is not None else None
        elif target.type is not None and target.name is not None:
            t = self.adoption.type(resolve_str(target.type, self.params, "A concept `type`"))
            found = AdoptedConcept(t.name, name=resolve_str(target.name, self.params, "A concept `name`")) if t is not None else None
        else:
            return None
        if found is not None and not self.adoption.link_memory:
            raise adopted_cy.link_refused(t, at)
        return found

    def earlier_or_outside(self, pos: int | None, handle: type, outside: Outside, at: int) -> Ref:
        """An element an earlier block of this command writes (``pos``) is referenced by its row;
        anything else is an outside target, looked up before writing (``at``: where it is written)."""
        if pos is not None:
            return handle(pos)
        self.targets.append(Target(self.seq, outside, at))
        return outside

    def refuse_adopted(self, at: int, *, type_: str | None = None, predicate: str | None = None, element_id: str | None = None) -> None:
        """KIP_3004 for an UPSERT that would write adopted data: a concept of an adopted type, a
        link of an adopted predicate, an element by adopted id, or a memory proposition pointing
        at an adopted concept (docs/adopt.md). The ``$ConceptType`` / ``$PropositionType``
        definitions of adopted names are KIP's own nodes: a capsule may re-assert them (a
        restored backup does)."""
        if self.adoption is None:
            return
        split = adopt.split_id(element_id)
        if split is not None:
            type_, predicate = split[0], split[0]
        found = (self.adoption.type(type_) if type_ else None) or (self.adoption.predicate(predicate) if predicate else None)
        if found is not None:
            raise adopted_cy.read_only(found, "This UPSERT", at)

    def require_type(self, type_: str, name: str | None, at: int) -> None:
        self.refuse_adopted(at, type_=type_)
        if type_ == storage.CONCEPT_TYPE and name == storage.CONCEPT_TYPE:
            return  # the self-defining root of the type system
        if type_ not in self.defined_types:
            self.check_defined(storage.CONCEPT_TYPE, type_, at)

    def require_predicate(self, predicate: str, at: int) -> None:
        self.refuse_adopted(at, predicate=predicate)
        if predicate not in self.defined_predicates:
            self.check_defined(storage.PROPOSITION_TYPE, predicate, at)

    def check_defined(self, meta: str, name: str, at: int) -> None:
        """One check per name: its first use in textual order is the one an error names (a
        100-block capsule of one type checks that type once)."""
        if (meta, name) not in self.schema_checks:
            self.schema_checks[(meta, name)] = SchemaCheck(self.seq, meta, name, at)


def _named_at(predicate: ast.PredicatePattern) -> int:
    """Where a one-name predicate pattern's name stands (its placeholder, or the quoted name)."""
    name = predicate.names[0]
    return name.span.start if isinstance(name, ast.Placeholder) else predicate.span.start


def _no_variable(var: str | None, block: str) -> None:
    if var is not None:
        raise KipError(
            errors.INVALID_SYNTAX, f"A KML target cannot bind a variable (?{var}).", f"Drop the variable, or use a handle defined by a {block} block."
        )


def unnameable(name: str) -> str | None:
    """Why ``name`` cannot name a concept type or predicate (None when it can): empty, only
    whitespace, or holding a control character. Neo4j refuses some of these as labels and
    relationship types only when the first instance is written (an empty name, NUL), and
    none of them is a KIP identifier (spec §2.8.1); an agent cannot write or read them back
    reliably either (a tab, a newline, an escape sequence in DESCRIBE output)."""
    if not name:
        return "is empty"
    if name.isspace():
        return "is only whitespace"
    control = next((ch for ch in name if unicodedata.category(ch) == "Cc"), None)
    if control is not None:
        return f"contains the control character U+{ord(control):04X}"
    return None


def _refuse_unnameable(type_: str, name: str, at: int) -> None:
    """A ``$ConceptType`` / ``$PropositionType`` definition whose name breaks the naming rule is
    refused when it is defined (KIP_1002), not when its first instance is written."""
    if type_ not in (storage.CONCEPT_TYPE, storage.PROPOSITION_TYPE):
        return
    why = unnameable(name)
    if why is not None:
        kind, style = ("concept type", "UpperCamelCase, e.g. Drug") if type_ == storage.CONCEPT_TYPE else ("predicate", "snake_case, e.g. treats")
        raise KipError(
            errors.INVALID_IDENTIFIER,
            f"The {kind} name {rules.quoted(name)} {why}; it cannot be defined.",
            f"Type and predicate names are identifiers (spec §2.8.1): they match [a-zA-Z_][a-zA-Z0-9_]*, a {kind} in {style}.",
            offset=at,
        )


def _refuse_engine_name(type_: str, name: str) -> None:
    """A type named KipConcept would label its instances KipConcept (matching every concept), a
    predicate named KIP_SUBJECT would forge the structural links: the engine's own Neo4j names
    are refused as concept types / predicates (tests/test_reliability_hostile.py). A predicate
    containing "/" could spell another namespace's relationship type (docs/namespaces.md)."""
    if (type_ == storage.CONCEPT_TYPE and storage.is_engine_label(name)) or (type_ == storage.PROPOSITION_TYPE and storage.is_engine_rel_type(name)):
        kind = "concept type" if type_ == storage.CONCEPT_TYPE else "predicate"
        raise KipError(
            errors.IMMUTABLE_TARGET,
            f"The {kind} name {rules.quoted(name)} is reserved: the engine uses it as a Neo4j "
            f"{'label' if kind == 'concept type' else 'relationship type'} of its own storage model.",
            f"Choose another name; {', '.join(storage.RESERVED_LABEL_STEMS + storage.RESERVED_REL_STEMS)} (and those names with a __namespace suffix) are "
            "engine-reserved.",
        )
    if type_ == storage.PROPOSITION_TYPE and storage.PREDICATE_SEPARATOR in name:
        raise KipError(
            errors.INVALID_IDENTIFIER,
            f"The predicate name {rules.quoted(name)} contains {storage.PREDICATE_SEPARATOR!r}, which the engine reserves: it separates a namespace from a "
            "predicate in the relationship types of namespaced nexuses.",
            f"Use another separator, e.g. {rules.quoted(name.replace(storage.PREDICATE_SEPARATOR, '_'))} (snake_case predicates are the convention).",
        )


def lower_capsule(command: ast.Capsule, parameters: dict[str, Any], settings: Settings) -> UpsertPlan:
    return Analyzer(parameters, settings.adoption).run(command, settings.strict_schema)


def superseding(type_: str | None, name: str | None, own: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The newer official definitions of a protected concept that supersede ``own`` when ``own`` is
    an older official one (the RC10 Genesis's ``$ConceptType`` lists fewer ``key_instances`` than
    RC11's). Against a nexus that holds one of them, the block writes nothing and answers like an
    unchanged replay — re-applying an older official capsule is a no-op, never KIP_3004 — while
    any other change to a protected structure stays refused (docs/kml.md, "Profiles")."""
    if rules.protected_kind(type_, name) != "schema":
        return ()
    return tuple(newer for older, newer in official_definitions().get((type_, name), ()) if older == own)


@functools.cache
def official_definitions() -> dict[tuple[str, str], tuple[tuple[Mapping[str, Any], Mapping[str, Any]], ...]]:
    """For each protected concept whose official definition changed between profiles: the pairs
    (older own properties, newer own properties), from the shipped Genesis files."""
    from .. import profiles
    from ..syntax.parser import parse

    defined: dict[str, dict[tuple[str, str], Mapping[str, Any]]] = {}
    for profile in profiles.ORDER:
        rows = Analyzer({}, superseding=False).run(parse(profiles.capsule_text("Genesis", profile)), False).concepts
        # (Genesis's second UPSERT names the same concepts again to link them, writing no properties)
        defined[profile] = {(r.type, r.name): r.own for r in rows if r.own and rules.protected_kind(r.type, r.name) == "schema"}
    pairs: dict[tuple[str, str], list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
    for i, older in enumerate(profiles.ORDER):
        for newer in profiles.ORDER[i + 1 :]:
            for key, own in defined[older].items():
                if key in defined[newer] and defined[newer][key] != own:
                    pairs.setdefault(key, []).append((own, defined[newer][key]))
    return {key: tuple(value) for key, value in pairs.items()}

"""The data of an UPSERT plan (``lower/upsert.py`` builds it, ``execution/programs/upsert.py`` runs it).

References (``ConceptBlockRef``, ``ConceptByName`` …), the concept and proposition rows, the
define-before-use checks, the outside targets, and ``UpsertPlan`` itself with the statements it
runs (``upsert_statements.statements``). Plan types only: what a program may read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Union

from .. import adoption as adopt
from ..cypher import storage
from ..domain import rules
from . import grounding
from .plan import Compiled, Plan
from .upsert_statements import BY_TRIPLE, BY_TYPE_NAME, CONCEPT_BY_ID, PROPOSITION_BY_ID, UpsertStatements, statements


# ====================================================================== references
@dataclass(frozen=True)
class ConceptBlockRef:
    """The concept written by the CONCEPT block at ``pos`` of this command."""

    pos: int


@dataclass(frozen=True)
class PropositionRowRef:
    """The proposition written by the proposition row at ``pos`` of this command."""

    pos: int


@dataclass(frozen=True)
class ConceptByName:
    """An existing concept ``{type, name}`` (looked up before anything is written)."""

    KIND: ClassVar[str] = BY_TYPE_NAME
    type: str
    name: str


@dataclass(frozen=True)
class ConceptById:
    """An existing concept ``{id}``: ids only match, they never create."""

    KIND: ClassVar[str] = CONCEPT_BY_ID
    id: str


@dataclass(frozen=True)
class PropositionById:
    """An existing proposition ``(id: …)``."""

    KIND: ClassVar[str] = PROPOSITION_BY_ID
    id: str


@dataclass(frozen=True)
class Structural:
    """A proposition ``(subject, predicate, object)`` named by its endpoints; it may be one this
    command writes earlier in textual order, so it is looked up once its endpoints are known."""

    KIND: ClassVar[str] = BY_TRIPLE
    subject: Ref
    predicate: str
    object: Ref


@dataclass(frozen=True)
class AdoptedConcept:
    """A node of the team's graph as the endpoint of a memory proposition (the mapping's
    ``link_memory``, docs/adopt.md): by ``{type, name}`` or by its id ``A:<type>:<value>``. Looked
    up by the plan's ``adopted_lookup`` statement, never written; exactly one node must match."""

    KIND: ClassVar[str] = "adopted"
    type: str
    name: str | None = None
    value: str | None = None


Handle = Union[ConceptBlockRef, PropositionRowRef]
Outside = Union[ConceptByName, ConceptById, PropositionById, Structural, AdoptedConcept]
Ref = Union[Handle, Outside]


def is_concept(ref: Ref | None) -> bool:
    """Whether a reference names a concept (else a proposition)."""
    return isinstance(ref, (ConceptBlockRef, ConceptByName, ConceptById, AdoptedConcept))


def is_static(ref: Ref) -> bool:
    """True when the reference depends on no handle of this command."""
    if isinstance(ref, (ConceptBlockRef, PropositionRowRef)):
        return False
    if isinstance(ref, Structural):
        return is_static(ref.subject) and is_static(ref.object)
    return True


def nested(refs: tuple[Ref | None, ...]) -> list[Ref]:
    """``refs`` and, for structural ones, their endpoints, recursively."""
    out: list[Ref] = []
    stack = [r for r in refs if r is not None]
    while stack:
        ref = stack.pop()
        out.append(ref)
        if isinstance(ref, Structural):
            stack.extend((ref.subject, ref.object))
    return out


# ====================================================================== rows
@dataclass(frozen=True)
class ConceptRow:
    """One CONCEPT block: identity (``type``/``name`` or ``id``), its row of the concept write."""

    pos: int
    type: str | None
    name: str | None
    id: str | None
    attrs: Mapping[str, Any]  # as written (strict mode checks their JSON types)
    props: Mapping[str, Any]  # encoded attributes + metadata (UPSERT-level metadata included)
    own: Mapping[str, Any]  # the same without inherited metadata (what a protected element may receive)
    expect: int | None
    at: int  # where the block's identity stands in the command text (error positions)
    attr_at: Mapping[str, int]  # where each SET ATTRIBUTES key stands
    #: the newer official definitions that supersede what this block writes (``upsert.superseding``)
    sup: tuple[Mapping[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """The block's identity as the command wrote it, for error messages (built only for one)."""
        return f"{{id: {rules.quoted(self.id)}}}" if self.id is not None else rules.label(self.type, self.name)

    def payload(self) -> dict[str, Any]:
        """The row the concept write (and the dry-run probe) receives; ``sup`` (only when there
        are some): the newer official definitions that supersede what this block writes."""
        cd = self.attrs.get("core_directives", _ABSENT)
        row = {
            "i": self.pos,
            "type": self.type,
            "name": self.name,
            "id": self.id,
            "props": dict(self.props),
            "own": own_column(self.props, self.own),
            "expect": self.expect,
            "cd": None if cd is _ABSENT else storage.encode(cd),
        }
        if self.sup:
            row["sup"] = [dict(newer) for newer in self.sup]
        return row


def own_column(props: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any] | None:
    """A write row's ``own`` map: null when it is ``props`` itself (nothing inherited, the common
    case), which the write reads as ``coalesce(row.own, row.props)`` — the map is not sent twice."""
    return None if own is props else dict(own)


@dataclass(frozen=True)
class PropositionRow:
    """One PROPOSITION block or SET PROPOSITIONS entry: by ``id``, or ``(subject, predicate, object)``."""

    pos: int
    subject: Ref | None
    predicate: str | None
    object: Ref | None
    id: str | None
    props: Mapping[str, Any]
    own: Mapping[str, Any]
    expect: int | None
    at: int  # where the block or entry stands in the command text (error positions)


@dataclass(frozen=True)
class SchemaCheck:
    """Define before use: ``name`` must be a ``meta`` node ($ConceptType / $PropositionType);
    ``seq`` is the textual position that reports it, ``at`` where the command names it."""

    seq: int
    meta: str
    name: str
    at: int | None = None

    @property
    def ref(self) -> ConceptByName:
        return ConceptByName(self.meta, self.name)


@dataclass(frozen=True)
class Target:
    """An outside reference to look up before writing, at textual position ``seq``; ``at``:
    where the command writes it (the position of its KIP_3002)."""

    seq: int
    ref: Outside
    at: int | None = None


_ABSENT = object()


@dataclass(frozen=True)
class UpsertPlan(Plan):
    """An analysed capsule: its rows, references and checks (module doc). The statements are
    the command-independent module constants; rows, references and the timestamp travel as
    run-time parameters."""

    strict: bool  # Settings.strict_schema: instance_schema checks
    blocks: int  # number of UPSERT statements
    concepts: tuple[ConceptRow, ...]
    propositions: tuple[PropositionRow, ...]
    order: tuple[Handle, ...]  # the top-level blocks, in the order the response reports them
    schema_checks: tuple[SchemaCheck, ...]
    targets: tuple[Target, ...]
    defined_types: tuple[str, ...]  # defined by this command (did-you-mean candidates)
    defined_predicates: tuple[str, ...]
    typed: tuple[str, ...]  # concept types of {type, name} blocks (strict mode reads their instance_schema)
    #: Adopted endpoints (link_memory) and the statement finding their nodes; () / None: none.
    adopted_refs: tuple[AdoptedConcept, ...] = ()
    adopted_lookup: Compiled | None = None

    @property
    def statements(self) -> UpsertStatements:
        return statements(self.names)

    @property
    def concept_write(self) -> Compiled:
        return self.statements.concepts_strict if self.strict else self.statements.concepts

    @property
    def checked_concept_write(self) -> Compiled | None:
        """The resolve lookup and the concept write as one statement, when the rows allow it
        (``_checked_concept_statement``); None: two statements."""
        if not self.concepts or self.adopted_lookup is not None:
            return None
        s = self.statements
        if self.flat:
            return s.checked_concepts_flat_strict if self.strict else s.checked_concepts_flat
        return s.checked_concepts_strict if self.strict else s.checked_concepts

    @property
    def flat(self) -> bool:
        """Every CONCEPT block names a different concept by ``{type, name}``: no row reads what
        another writes, so the concept write runs as one pipeline, not row by row. Derived from
        the rows each time, never stored: a plan template's values may name other concepts."""
        named = {(c.type, c.name) for c in self.concepts if c.id is None}
        return len(named) == len(self.concepts)

    @property
    def proposition_write(self) -> Compiled:
        return self.statements.propositions_linked if self.adopted_refs else self.statements.propositions

    def steps(self) -> tuple[Compiled, ...]:
        s = self.statements
        adopted = (self.adopted_lookup,) if self.adopted_lookup is not None else ()
        checked = (self.checked_concept_write,) if self.checked_concept_write is not None else ()
        return (s.resolve, *adopted, grounding.defined_names(self.names), *checked, self.concept_write, s.probe, self.proposition_write)

    def describe(self, ref: Ref) -> str:
        """A reference as the command wrote it, for error messages."""
        if isinstance(ref, ConceptBlockRef):
            return self.concepts[ref.pos].label
        if isinstance(ref, PropositionRowRef):
            # Described from its endpoints, not stored as text: a plan holds no text built from a
            # value (a plan template puts new values only where the old ones were, lower.templates).
            row = self.propositions[ref.pos]
            return self.describe(PropositionById(row.id) if row.id is not None else Structural(row.subject, row.predicate, row.object))
        if isinstance(ref, ConceptByName):
            return rules.label(ref.type, ref.name)
        if isinstance(ref, ConceptById):
            return f"{{id: {rules.quoted(ref.id)}}}"
        if isinstance(ref, PropositionById):
            return f"(id: {rules.quoted(ref.id)})"
        if isinstance(ref, AdoptedConcept):
            return rules.label(ref.type, ref.name) if ref.name is not None else f"{{id: {rules.quoted(adopt.id_prefix(ref.type) + ref.value)}}}"
        return f"({self.describe(ref.subject)}, {rules.quoted(ref.predicate)}, {self.describe(ref.object)})"


# ====================================================================== analysis

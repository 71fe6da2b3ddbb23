"""The §6 response shapes as ``TypedDict``: what ``execute_kip`` / ``execute_kip_readonly`` return,
for type checkers (``mypy --strict``) and readers. They describe the JSON the engine already
produces — nothing here is used at run time; ``models.ExecuteResponse`` is the schema the MCP tools
publish and the tests validate against, and ``tests/test_responses.py`` checks real answers from
Neo4j against these types.

A response is one command's ``{"result" | "error", "next_cursor"?, "warnings"?}`` or a batch's
``{"result": [<one command's response>, …]}``; a request that failed as a whole is a top-level
``{"error"}``. The ``result`` of one command is shaped by the command (§6.2.2): the per-command
TypedDicts below, or a list (FIND columns, SEARCH hits, type names, domain summaries).
"""

# No ``from __future__ import annotations``: TypedDict must see ``NotRequired`` itself, not a string,
# to know which keys are optional (Python 3.11 cannot read it from a string annotation).
from typing import Any, NotRequired, TypedDict, Union


class ErrorObject(TypedDict):
    """A KIP error (Appendix 4): ``code`` ``KIP_1xxx``…``KIP_4xxx``, a message, a recovery hint."""

    code: str
    message: str
    hint: str
    #: 1-based position of a syntax or text-level semantic error.
    line: NotRequired[int]
    column: NotRequired[int]
    #: Engine diagnostics for a bug report (an internal error only).
    debug: NotRequired[dict[str, Any]]


class ConceptNode(TypedDict):
    """A concept node as FIND ``?n`` / SEARCH / DESCRIBE return it."""

    id: str
    type: str
    name: str
    attributes: dict[str, Any]
    metadata: dict[str, Any]


class PropositionLink(TypedDict):
    """A proposition link: ``subject`` / ``object`` are element ids."""

    id: str
    subject: str
    predicate: str
    object: str
    attributes: dict[str, Any]
    metadata: dict[str, Any]


class UpsertResult(TypedDict):
    """UPSERT: statements executed and the id of every top-level CONCEPT / PROPOSITION block."""

    blocks: int
    upsert_concept_nodes: list[str]
    upsert_proposition_links: list[str]


class UpdateResult(TypedDict):
    updated: int
    matched: int
    #: (element, key) results skipped as not finite numbers; present only when non-zero (docs/kml.md).
    skipped_non_finite: NotRequired[int]


class MergeResult(TypedDict):
    merged: bool
    links_repointed: int
    links_deduplicated: int
    attributes_filled: int


class DeleteKeysResult(TypedDict):
    """DELETE ATTRIBUTES / DELETE METADATA: keys removed from elements, none deleted."""

    updated_concepts: int
    updated_propositions: int


class DeletePropositionsResult(TypedDict):
    deleted_propositions: int


class DeleteConceptResult(TypedDict):
    """DELETE CONCEPT: ``deleted_propositions`` is the cascade audit."""

    deleted_concepts: int
    deleted_propositions: int


class PrimerResult(TypedDict):
    """DESCRIBE PRIMER: the ``$self`` summary and a summary of every domain."""

    identity: dict[str, Any]
    domain_map: list[dict[str, Any]]
    total_domains: int


class ExportResult(TypedDict):
    """EXPORT: a capsule that re-applies with UPSERT, and what it holds."""

    capsule: str
    concepts: int
    propositions: int


class DryRunResult(TypedDict):
    """``dry_run`` of a read (and of any plan without its own dry result): the EXPLAINed Cypher.
    A dry KML command answers its own shape instead (UPSERT with empty id arrays, counts)."""

    dry_run: bool
    kind: str
    statements: list[str]


#: The ``result`` of one successful command. Lists: FIND (columns, or the one column unwrapped),
#: SEARCH (nodes/links with ``_score``), DESCRIBE DOMAINS / CONCEPT TYPES / PROPOSITION TYPES.
#: DESCRIBE CONCEPT TYPE "X" answers one ``ConceptNode``; FIND of one non-grouped aggregation a
#: scalar.
CommandResult = Union[
    list[Any],
    ConceptNode,
    UpsertResult,
    UpdateResult,
    MergeResult,
    DeleteKeysResult,
    DeletePropositionsResult,
    DeleteConceptResult,
    PrimerResult,
    ExportResult,
    DryRunResult,
    str,
    int,
    float,
    bool,
    None,
]


class CommandResponse(TypedDict, total=False):
    """One command's answer: ``result`` or ``error``, never both."""

    result: CommandResult
    error: ErrorObject
    #: More results: repeat the command with ``CURSOR "<token>"``.
    next_cursor: str
    #: Additive, not in the spec: things the command names that look mistaken although it ran.
    warnings: list[str]


class BatchResponse(TypedDict, total=False):
    """A ``commands`` request: one ``CommandResponse`` per command that ran (a failing KML command
    stops the rest), or a top-level ``error`` when nothing ran."""

    result: list[CommandResponse]
    error: ErrorObject


#: What ``execute_kip`` / ``execute_kip_readonly`` return.
KipResponse = Union[CommandResponse, BatchResponse]

__all__ = [
    "BatchResponse",
    "CommandResponse",
    "CommandResult",
    "ConceptNode",
    "DeleteConceptResult",
    "DeleteKeysResult",
    "DeletePropositionsResult",
    "DryRunResult",
    "ErrorObject",
    "ExportResult",
    "KipResponse",
    "MergeResult",
    "PrimerResult",
    "PropositionLink",
    "UpdateResult",
    "UpsertResult",
]

"""What lowering hands the executor: a ``Plan``, an immutable value.

A plan is the compiled form of one command: the Cypher statements its program may issue
(each a ``Compiled``: text, parameters and a label naming the step that issues it) plus the facts that
program needs at run time (result columns and their decoders, limits, cursor fingerprints,
grounding names, the UPSERT rows and waves …). Nothing here runs anything: the program of
each plan kind lives in ``kip2cypher.execution.programs`` and is driven by the executor.

Every plan class is a frozen dataclass deriving from ``Plan`` and lists its statements in
program order through ``steps()`` — what ``kip2cypher compile`` prints and what the golden
tests EXPLAIN on Neo4j. ``Compiled`` lives in ``cypher.compiled`` (statement catalogues below
the lowering build them too); it is a plan type, imported from here alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cypher import storage
from ..cypher.compiled import EMPTY as EMPTY
from ..cypher.compiled import Compiled
from ..syntax import ast


def replaced(obj: Any, changes: dict[str, Any]) -> Any:
    """``dataclasses.replace`` for the lowering's frozen dataclasses (plans, FIND forms): a copy of
    the instance's ``__dict__`` with ``changes`` (a dict: no keyword packing on the template
    fill's path), without running ``__init__`` again. The same value
    for these classes (no ``__post_init__``, no ``init=False`` field: ``tests/test_shared_rendering.py``
    checks); ``dataclasses.replace`` of a 20-field plan cost ≈ 11 µs, ≈ 2 % of a cold compile.
    A name that is not a field is refused, as ``dataclasses.replace`` refuses it."""
    assert changes.keys() <= obj.__dataclass_fields__.keys(), f"not a field of {type(obj).__name__}: {sorted(changes.keys() - obj.__dataclass_fields__.keys())}"
    copy = object.__new__(type(obj))
    fields = copy.__dict__
    fields.update(obj.__dict__)
    fields.update(changes)
    return copy


@dataclass(frozen=True)
class Plan:
    """Base of every plan. ``kind`` is KQL / KML / META, ``access`` the transaction it needs; both
    follow from the command the plan was lowered from (``syntax.ast.COMMANDS``).

    ``command_text`` is the command (set by ``lower.compile``): an error a program raises with
    an ``offset`` is located in it (line, column, excerpt)."""

    #: The kind of the command (``syntax.ast.command_kind``), set by ``lower.compile.lower``.
    command_kind: str = field(default="", kw_only=True, repr=False, compare=False)
    command_text: str = field(default="", kw_only=True, repr=False, compare=False)
    #: The namespace the plan was compiled for (its statements use that namespace's names).
    namespace: str = field(default="", kw_only=True, repr=False, compare=False)
    #: Said with the answer (``warnings``): where the command meets a point the spec leaves open
    #: and kip2cypher's reading may differ from the reference engine's (``lower.surprises``,
    #: docs/interop.md). Known at compile time: no statement of the plan depends on them.
    warnings: tuple[str, ...] = field(default=(), kw_only=True, repr=False, compare=False)

    @property
    def names(self) -> storage.Names:
        """The storage vocabulary of the plan's namespace."""
        return storage.names(self.namespace)

    @property
    def kind(self) -> str:
        return self.command_kind

    @property
    def access(self) -> str:
        """KML writes (a WRITE transaction); everything else reads."""
        return "WRITE" if ast.writes(self.kind) else "READ"

    @property
    def reads_vectors(self) -> bool:
        """Whether the program may read SEARCH embeddings (then the executor first lets the
        background refresh of earlier writes finish: docs/meta.md, "Keeping vectors fresh")."""
        return False

    def steps(self) -> tuple[Compiled, ...]:
        """Every statement the program may issue, in program order."""
        raise NotImplementedError

"""What the compiler hands the executor: a ``Plan`` of Cypher statements plus the logic to run them.

Lowering modules (``lower/kql.py``, ``lower/kml.py``, ``lower/meta.py``) build
plans; ``execute.py`` runs ``Plan.run`` inside one Neo4j transaction of the
plan's access mode. ``statements`` lists every statement the plan may run, so
``kip2cypher compile`` can show them and tests can EXPLAIN them.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .. import errors
from ..config import Settings
from ..cypher.builder import Statement

log = logging.getLogger("kip2cypher.cypher")


@dataclass(frozen=True)
class Compiled:
    """One Cypher statement ready to send: text and parameters."""

    text: str
    params: dict[str, Any]
    label: str = ""  # what this statement does, for `compile` output

    @classmethod
    def of(cls, statement: Statement, label: str = "") -> "Compiled":
        text, params = statement.build()
        return cls(text, params, label)


class Tx:
    """The transaction handed to ``Plan.run``: runs compiled statements and returns plain dict rows."""

    def __init__(self, neo4j_tx: Any, settings: Settings) -> None:
        self._tx = neo4j_tx
        self.settings = settings
        self.current: Optional[Compiled] = None  # the statement in flight, for error reports

    def run(self, stmt: Compiled, params: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
        """Run one statement; ``params`` (if given) override/extend the compiled parameters."""
        text = stmt.text if not self.settings.cypher_prefix else f"{self.settings.cypher_prefix}\n{stmt.text}"
        merged = stmt.params if params is None else {**stmt.params, **params}
        self.current = stmt
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s\n-- params: %r", text, merged)
        result = self._tx.run(text, merged)
        rows = []
        cap = self.settings.max_result_rows
        for record in result:
            rows.append(dict(record))
            if len(rows) > cap:
                result.consume()
                raise errors.KipError(
                    errors.RESOURCE_EXHAUSTED,
                    f"The command produced more than {cap} rows.",
                    "Add LIMIT (and page with CURSOR) to the command, or narrow the WHERE pattern.",
                )
        return rows


@dataclass
class Plan:
    """A compiled command. ``run`` executes it inside the given transaction and returns
    the single-command response dict (``{"result": …}`` plus ``next_cursor`` when paging)."""

    kind: str  # "KQL" | "KML" | "META"
    access: str  # "READ" | "WRITE"
    statements: list[Compiled]
    runner: Callable[[Tx], dict[str, Any]]
    dry_result: Optional[Callable[[Tx], dict[str, Any]]] = None
    notes: list[str] = field(default_factory=list)

    def run(self, tx: Tx) -> dict[str, Any]:
        return self.runner(tx)

    def dry_run(self, tx: Tx) -> dict[str, Any]:
        """Validate against the live schema without writing; default: describe what would run."""
        if self.dry_result is not None:
            return self.dry_result(tx)
        return {"result": {"dry_run": True, "kind": self.kind, "statements": [s.text for s in self.statements]}}


def single(kind: str, access: str, stmt: Compiled, shape: Callable[[list[dict[str, Any]]], Any]) -> Plan:
    """The common plan: one statement whose rows are shaped into the result."""

    def runner(tx: Tx) -> dict[str, Any]:
        return {"result": shape(tx.run(stmt))}

    return Plan(kind, access, [stmt], runner)


# ---------------------------------------------------------------------- bridges to the new shape
def drive(tx: Tx, program: Any, embedder: Any = None) -> Any:
    """Run a new-style (sub-)program synchronously on a legacy ``Tx`` (Run and Embed requests)."""
    reply: Any = None
    while True:
        try:
            request = program.send(reply)
        except StopIteration as stop:
            return stop.value
        if hasattr(request, "texts"):
            reply = embedder.embed(list(request.texts))
        else:
            reply = tx.run(Compiled(request.statement.text, request.parameters(), request.statement.label))


def check_grounding(tx: Tx, names: Any) -> None:
    from ..execution.programs import grounding

    drive(tx, grounding.check(tuple(tuple(n) for n in names)))


def grounding_compiled(names: Any) -> Compiled:
    from . import grounding

    new = grounding.check_statement(tuple(tuple(n) for n in names))
    return Compiled(new.text, dict(new.params), new.label)

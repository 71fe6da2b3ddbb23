"""The dry run of a read that has no checks of its own (EXPORT, DESCRIBE): Neo4j plans each
statement (proving the Cypher valid against the live database), nothing runs."""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any

from ...lower.plan import Compiled
from ..requests import Explain


def explain_all(kind: str, statements: Iterable[Compiled]) -> Generator[Any, Any, dict]:
    """EXPLAIN every statement; the response lists their texts."""
    statements = tuple(statements)
    for statement in statements:
        yield Explain(statement)
    return {"result": {"dry_run": True, "kind": kind, "statements": [s.text for s in statements]}}

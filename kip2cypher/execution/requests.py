"""The requests a program yields, and what it is told about the command it runs.

A program (``kip2cypher.execution.programs``) is a generator: it yields ``Run`` (a Cypher
statement; it receives the rows as a list of dicts), ``Embed`` (texts to embed; it receives
one vector per text) or ``Explain`` (a statement Neo4j must plan but not run; it receives
nothing) and finally returns the command's response dict. It never touches a driver, so the
same program runs under the synchronous and the asyncio loop (``loop.py``) and under a test
that feeds it canned rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ..config import Settings
from ..cypher import storage
from ..lower.plan import EMPTY, Compiled


@dataclass(frozen=True)
class Run:
    """Run ``statement`` with its compiled parameters overridden/extended by ``params``.

    ``extra_rows``: rows beyond ``Settings.max_result_rows`` that are not results (a look-ahead
    row that tells whether a next page exists, a grounding row), so they never trip the cap.
    """

    statement: Compiled
    params: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    extra_rows: int = 0

    def parameters(self) -> dict[str, Any]:
        return {**self.statement.params, **self.params}


@dataclass(frozen=True)
class Explain:
    """Have Neo4j plan ``statement`` without running it (dry runs): proves the Cypher is valid."""

    statement: Compiled
    params: Mapping[str, Any] = field(default_factory=lambda: EMPTY)

    def parameters(self) -> dict[str, Any]:
        return {**self.statement.params, **self.params}


@dataclass(frozen=True)
class Embed:
    """Embed ``texts`` with the context's embedder; the reply is one vector per text."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class Context:
    """What a program knows besides its plan.

    ``now`` is the command's timestamp (ISO-8601 UTC, milliseconds, ``Z``), written as
    ``meta._updated_at`` by every element the command changes — so the executor finds them
    afterwards for the embedding refresh. ``embedder`` is the embedder in force (None: no
    semantic search).
    """

    settings: Settings
    now: str
    dry_run: bool = False
    embedder: Optional[Any] = field(default=None, compare=False)
    #: The engine itself writes (``Nexus.bootstrap(upgrade=True)``): the protected structures a
    #: newer Genesis or standard capsule refreshes may change. Never set for an agent's request.
    engine: bool = False

    @property
    def names(self) -> storage.Names:
        """The storage vocabulary of the nexus's namespace."""
        return storage.names(self.settings.namespace)

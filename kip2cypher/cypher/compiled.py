"""A built Cypher statement: what a plan lists, a program yields and the executor runs.

It sits in ``cypher/`` (not in ``lower.plan``, which re-exports it as a plan type) so that the
statement catalogues shared by the lowering and the programs — ``domain/``, ``cypher.migration``
— build their statements without importing the lowering.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from .builder import Statement

EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Compiled:
    """One Cypher statement: text, the parameters known at compile time, and ``label``: the step of
    the program that issues it.

    Parameters supplied only at run time (rows of a wave, a page cursor …) are absent or
    ``None`` here and given by the program with each run. ``runtime``: the placeholders a
    keeping compile left for the embedding code to bind (``$name``; never executed here).
    ``collected``: the statement returns its rows as one list in one record (column
    ``rows``, see ``cypher.builder.return_collected``); the executor hands the program that list.
    """

    text: str
    params: Mapping[str, Any]
    label: str = ""
    runtime: tuple[str, ...] = ()
    collected: bool = False

    @classmethod
    def of(cls, statement: Statement, label: str = "", *, collected: bool = False) -> Compiled:
        text, params, runtime = statement.build_with_runtime()
        return cls(text, MappingProxyType(params), label, runtime, collected)

    def with_params(self, **params: Any) -> Compiled:
        """The same statement with more compile-time parameters bound."""
        return replace(self, params=MappingProxyType({**self.params, **params}))

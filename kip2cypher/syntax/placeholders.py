"""Placeholders (``:name``, spec §6.1): which a command uses, and the quoted-placeholder rule.

A placeholder occupies a whole value position; inside a quoted string it is never
substituted. When the request binds a parameter of that name, ``"… :name …"`` almost
certainly expected substitution, and silently storing the literal text would be a wrong
write nobody notices, so it is refused (KIP_1001). The check walks the AST's strings (each
scanned once, linearly), not the command text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..caching import TextCache
from ..errors import INVALID_SYNTAX, KipError, line_column, snippet
from . import ast

EMBEDDED_RE = re.compile(r":([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_])")


def placeholders(node: Any) -> set[str]:
    """Names of all placeholders anywhere in an AST (sub)tree."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Placeholder):
            found.add(item.name)
        elif dataclasses.is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item) if f.compare)
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
    return found


def _strings(node: Any, key: str | None = None) -> Iterator[tuple[str, ast.Span, str | None]]:
    """Every quoted string of the AST: (value, span of the node holding it, the object key it is the value of)."""
    if isinstance(node, ast.Literal):
        if isinstance(node.value, str):
            yield node.value, node.span, key
    elif isinstance(node, ast.ObjectLit):
        spans = node.key_spans or (node.span,) * len(node.entries)
        for (name, value), span in zip(node.entries, spans):
            yield name, span, None
            yield from _strings(value, name)
    elif isinstance(node, ast.PredicatePattern):
        for name in node.names:
            if isinstance(name, str):
                yield name, node.span, None
    elif isinstance(node, ast.PropositionEntry):
        if isinstance(node.predicate, str):
            yield node.predicate, node.span, None
        yield from _strings(node.target)
        yield from _strings(node.metadata)
    elif dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            if f.compare:
                yield from _strings(getattr(node, f.name), f.name if f.name in ("type", "name", "id") else None)
    elif isinstance(node, (tuple, list)):
        for item in node:
            yield from _strings(item, key)


#: ``_quoted`` results by command text (the parse of a text is always the same AST); bounded
#: by count and by the characters of the texts it is keyed by.
_QUOTED = TextCache(1 << 20, 1024)


def _quoted(command: Any, text: str) -> tuple[tuple[str, ast.Span, str | None, tuple[re.Match, ...]], ...]:
    """The strings of ``command`` that contain a ``:name``, with those matches — computed once
    per text: the walk costs ≈ 50 µs per 1,000 AST nodes, and an application re-sends one
    parameterized capsule text with new values (a new compile each time) again and again."""
    found = _QUOTED.get(text)
    if found is None:
        found = tuple((value, span, key, tuple(EMBEDDED_RE.finditer(value))) for value, span, key in _strings(command) if ":" in value)
        found = tuple(entry for entry in found if entry[3])
        _QUOTED.put(text, found, len(text))
    return found


def check_quoted_placeholders(command: Any, text: str, params: Mapping[str, Any] | None) -> None:
    """KIP_1001 for ``"… :name …"`` in ``command`` (parsed from ``text``) when ``name`` is a parameter."""
    if not params:
        return
    for value, span, key, matches in _quoted(command, text):
        for embedded in matches:
            name = embedded.group(1)
            if name not in params:
                continue
            found = text.find(embedded.group(0), span.start, span.end if span.end > span.start else len(text))
            offset = found if found >= 0 else span.start
            line, column = line_column(text, offset)
            example = f"{key or name}: :{name}"
            raise KipError(
                INVALID_SYNTAX,
                f"The placeholder :{name} at line {line}, column {column} is inside a quoted string, where it is never substituted.\n{snippet(text, offset)}",
                f"Placeholders must occupy a whole value position: write `{example}` (no quotes) and, if you need surrounding text, put the complete string in "
                "the parameter.",
                line=line,
                column=column,
            )

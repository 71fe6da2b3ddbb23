"""From value AST nodes to plain JSON values, once the request's parameters are known.

Placeholders (``:name``) occupy whole value positions only (spec §6.1); they are
bound here, never by textual substitution, so no parameter can change the
structure of a command.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

from . import ast
from ..errors import INVALID_SYNTAX, KipError


def describe(value: Any) -> str:
    """A short phrase naming a JSON value and its type, for error messages ("string 'x'")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def resolve(value: ast.Value, params: Optional[Mapping[str, Any]] = None) -> Any:
    """The plain JSON value of a value node; placeholders are looked up in ``params``."""
    if isinstance(value, ast.Literal):
        return value.value
    if isinstance(value, ast.ListLit):
        return [resolve(item, params) for item in value.items]
    if isinstance(value, ast.ObjectLit):
        return {key: resolve(item, params) for key, item in value.entries}
    if isinstance(value, ast.Placeholder):
        if params is None or value.name not in params:
            raise KipError(
                INVALID_SYNTAX,
                f"The placeholder :{value.name} has no value.",
                f"Add \"{value.name}\" to the request's `parameters` object, or write the value in the command.",
            )
        return params[value.name]
    raise KipError(INVALID_SYNTAX, f"{type(value).__name__} is not a JSON value here.")


def resolve_int(value: ast.Value, params: Optional[Mapping[str, Any]], what: str) -> int:
    """A positive integer (LIMIT and friends); placeholders must bind one too."""
    resolved = resolve(value, params)
    if isinstance(resolved, bool) or not isinstance(resolved, int) or resolved < 1:
        raise KipError(
            INVALID_SYNTAX,
            f"{what} expects a positive integer, got {describe(resolved)}.",
            f"Write {what} followed by a whole number ≥ 1 (or bind its placeholder to one).",
        )
    return resolved


def resolve_str(value: ast.Value, params: Optional[Mapping[str, Any]], what: str) -> str:
    resolved = resolve(value, params)
    if not isinstance(resolved, str):
        raise KipError(
            INVALID_SYNTAX,
            f"{what} expects a string, got {describe(resolved)}.",
            f"Write {what} as a double-quoted string (or bind its placeholder to one).",
        )
    return resolved


def resolve_number(value: ast.Value, params: Optional[Mapping[str, Any]], what: str) -> float:
    resolved = resolve(value, params)
    if isinstance(resolved, bool) or not isinstance(resolved, (int, float)) or not math.isfinite(resolved):
        raise KipError(
            INVALID_SYNTAX,
            f"{what} expects a number, got {describe(resolved)}.",
            f"Write {what} followed by a number (or bind its placeholder to one).",
        )
    return resolved

"""From value AST nodes to plain JSON values, once the request's parameters are known.

Placeholders (``:name``) occupy whole value positions only (spec §6.1); they are
bound here, never by textual substitution, so no parameter can change the
structure of a command.
"""
from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping, Optional

from . import ast
from ..errors import INVALID_SYNTAX, RESOURCE_EXHAUSTED, KipError

#: The integers Neo4j stores (64-bit); KIP text and parameters are checked against it.
INT64 = (-(2**63), 2**63 - 1)
_SURROGATE = re.compile("[\ud800-\udfff]")
#: What one number, boolean or null counts for in ``parameters_size``.
_SCALAR_BYTES = 8


def parameters_size(sets: Iterable[Mapping[str, Any]], max_bytes: int, max_depth: int) -> int:
    """Check the parameters of a request and return their size; raise before anything runs.

    Size: the characters of every string and key plus 8 per other scalar, counted over every
    set (a batch binds the shared parameters once per command: that is the work it causes).
    The walk stops as soon as ``max_bytes`` is passed (KIP_4002), so a huge payload costs
    nothing more than the bound. Each value must be JSON that Neo4j can hold: an integer within
    64 bits, a string without unpaired UTF-16 surrogates, nesting at most ``max_depth`` deep
    (KIP_1001, naming the parameter).
    """
    total = 0
    # (value, depth, where): ``where`` links back to the parent, so a path is spelled only for an error.
    stack: list[tuple[Any, int, Any]] = [(params, 0, None) for params in sets]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            total += len(value)
            if _SURROGATE.search(value):
                raise _bad(where, "a string with an unpaired UTF-16 surrogate", "Send complete characters (a surrogate pair such as \\ud83d\\ude00 for one emoji).")
        elif isinstance(value, (dict, list, tuple)):
            if depth > max_depth:
                raise _bad(where, f"nested more than {max_depth} levels deep", "Flatten the value, or store it as a JSON string.")
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise _bad(where, f"an object key of type {type(key).__name__}", "Object keys must be strings.")
                    if _SURROGATE.search(key):
                        raise _bad(where, "an object key with an unpaired UTF-16 surrogate", "Send complete characters in keys.")
                    total += len(key)
                    stack.append((item, depth + 1, (key, where)))
            else:
                stack.extend((item, depth + 1, (i, where)) for i, item in enumerate(value))
        elif isinstance(value, bool) or value is None:
            total += 1
        elif isinstance(value, int):
            total += _SCALAR_BYTES
            if not INT64[0] <= value <= INT64[1]:
                raise _bad(where, f"the integer {_short(value)}, outside the 64-bit range Neo4j stores", "Use an integer between -9223372036854775808 and 9223372036854775807, or send it as a string.")
        elif isinstance(value, float):
            total += _SCALAR_BYTES
        else:
            raise _bad(where, f"a {type(value).__name__}, which is not a JSON value", "Pass strings, numbers, booleans, null, arrays and objects only.")
        if total > max_bytes:
            raise KipError(
                RESOURCE_EXHAUSTED,
                f"The request's parameters exceed the limit of {max_bytes} bytes (counted per command that uses them).",
                "Send fewer or smaller values per request (split a batch, or a big import into several capsules).",
            )
    return total


def _bad(where: Any, what: str, hint: str) -> KipError:
    steps = []
    while where is not None:
        key, where = where
        steps.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    path = "".join(reversed(steps)).lstrip(".")
    if len(path) > 80:
        path = path[:77] + "..."
    return KipError(INVALID_SYNTAX, f"The value of {f'parameter {path!r}' if path else 'the parameters'} is {what}.", hint)


def _short(value: int) -> str:
    digits = str(value) if value.bit_length() < 200 else f"{'-' if value < 0 else ''}<{value.bit_length()}-bit integer>"
    return digits


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

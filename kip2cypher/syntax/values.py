"""From value AST nodes to plain JSON values, once the request's parameters are known.

Placeholders (``:name``) occupy whole value positions only (spec §6.1); they are
bound here, never by textual substitution, so no parameter can change the
structure of a command.

``compile(…, keep_placeholders=True)`` (``kip2cypher compile`` without ``--params``) lowers with
``Deferring`` parameters: an unbound placeholder at a *deferrable* position (a plain value the
statement only compares or matches with, see ``lower.pattern``) resolves to ``Deferred`` and
becomes the Cypher parameter ``$name`` the embedding code binds at run time; everywhere else the
value shapes the statement and compile refuses (``shapes_statement``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import INVALID_IDENTIFIER, INVALID_SYNTAX, RESOURCE_EXHAUSTED, KipError
from . import ast

#: The text of a JSON number (RFC 8259), ASCII digits only: the form the reference engine reads a
#: string as a number in (docs/interop.md A3, A4); a Java regex too (``lower.grounding.key_check``).
JSON_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_SURROGATE = re.compile("[\ud800-\udfff]")
#: 2^63 - 1: no count (LIMIT, …) reaches it.
_LARGEST_COUNT = 2**63 - 1
#: What one number, boolean or null counts for in ``parameters_size``.
_SCALAR_BYTES = 8


def parameters_size(sets: Iterable[Mapping[str, Any]], max_bytes: int, max_depth: int) -> int:
    """Check the parameters of a request and return their size; raise before anything runs.

    Size: the characters of every string and key plus 8 per other scalar, counted over every
    set (a batch binds the shared parameters once per command: that is the work it causes).
    The walk stops as soon as ``max_bytes`` is passed (KIP_4002), so a huge payload costs
    nothing more than the bound. Each value must be JSON a command can use: a finite number, a
    string without unpaired UTF-16 surrogates, nesting at most ``max_depth`` deep (KIP_1001,
    naming the parameter). Integers beyond 64 bits are values (stored exactly as JSON text);
    where a command computes with them or compares them the lowering refuses them.
    """
    sets = list(sets)
    valid = _size_of_valid(sets, max_bytes, max_depth)
    if valid is not None:
        return valid
    total = 0
    # (value, depth, where): ``where`` links back to the parent, so a path is spelled only for an error.
    stack: list[tuple[Any, int, Any]] = [(params, 0, None) for params in sets]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            total += len(value)
            if not value.isascii() and _SURROGATE.search(value):
                raise _bad(
                    where, "a string with an unpaired UTF-16 surrogate", "Send complete characters (a surrogate pair such as \\ud83d\\ude00 for one emoji)."
                )
        elif isinstance(value, (dict, list, tuple)):
            if depth > max_depth:
                raise _bad(where, f"nested more than {max_depth} levels deep", "Flatten the value, or store it as a JSON string.")
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise _bad(where, f"an object key of type {type(key).__name__}", "Object keys must be strings.")
                    if not key.isascii() and _SURROGATE.search(key):
                        raise _bad(where, "an object key with an unpaired UTF-16 surrogate", "Send complete characters in keys.")
                    total += len(key)
                    stack.append((item, depth + 1, (key, where)))
            else:
                stack.extend((item, depth + 1, (i, where)) for i, item in enumerate(value))
        elif isinstance(value, bool) or value is None:
            total += 1
        elif isinstance(value, int):
            total += max(_SCALAR_BYTES, value.bit_length() // 8)
        elif isinstance(value, float):
            total += _SCALAR_BYTES
            if not math.isfinite(value):
                raise _bad(where, "not a finite number (NaN or Infinity is not a JSON value)", "Pass finite numbers only; use null for an unknown value.")
        else:
            raise _bad(where, f"a {type(value).__name__}, which is not a JSON value", "Pass strings, numbers, booleans, null, arrays and objects only.")
        if total > max_bytes:
            raise KipError(
                RESOURCE_EXHAUSTED,
                f"The request's parameters exceed the limit of {max_bytes} bytes (counted per command that uses them).",
                "Send fewer or smaller values per request (split a batch, or a big import into several capsules).",
            )
    return total


def _size_of_valid(sets: list[Mapping[str, Any]], max_bytes: int, max_depth: int) -> int | None:
    """``parameters_size`` of parameters that pass every check, or ``None``: then the walk above
    finds the first problem, in its order, and names its parameter. The same checks and sizes
    without tracking where a value is, scalars tested in their container's loop by exact type
    (a 500-block capsule's parameters: ≈ 3× faster); anything unusual (a subclass) takes the walk."""
    total = 0
    stack: list[tuple[Any, int]] = [(params, 0) for params in sets]
    while stack:
        container, depth = stack.pop()
        if depth > max_depth:
            return None
        kind = type(container)
        if kind is dict:
            for key in container:
                if type(key) is not str or (not key.isascii() and _SURROGATE.search(key)):
                    return None
                total += len(key)
            items: Iterable[Any] = container.values()
        elif kind is list or kind is tuple:
            items = container
        else:
            return None
        for value in items:
            kind = type(value)
            if kind is str:
                total += len(value)
                if not value.isascii() and _SURROGATE.search(value):
                    return None
            elif kind is int:
                total += max(_SCALAR_BYTES, value.bit_length() // 8)
            elif kind is float:
                total += _SCALAR_BYTES
                if not math.isfinite(value):
                    return None
            elif kind is bool or value is None:
                total += 1
            elif kind is dict or kind is list or kind is tuple:
                stack.append((value, depth + 1))
            else:
                return None
            if total > max_bytes:
                return None
    return total


def _bad(where: Any, what: str, hint: str) -> KipError:
    """KIP_1001 naming the parameter (``:name[2].key``, as ``non_finite`` spells it)."""
    steps = []
    while where is not None:
        key, where = where
        steps.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    path = "".join(reversed(steps))
    path = ":" + path[1:] if path.startswith(".") else path
    if len(path) > 80:
        path = path[:77] + "..."
    return KipError(INVALID_SYNTAX, f"The parameter {path} is {what}." if path else f"The parameters are {what}.", hint)


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


class Deferring(dict):
    """The parameters of a compile that keeps unbound placeholders as run-time Cypher parameters
    (never used to execute: the executor always binds every placeholder)."""


@dataclass(frozen=True)
class Deferred:
    """An unbound placeholder kept for run time: the Cypher parameter ``$name``. ``offset``: where
    the placeholder stands in the command text."""

    name: str
    offset: int


#: What a placeholder outside a deferrable position is, when nothing more exact is known.
BUILT_IN = "its value is checked or written while the statement is built"


def shapes_statement(placeholder: ast.Placeholder, role: str) -> KipError:
    """KIP_1001: ``:name`` has no value and compile cannot keep it as a run-time parameter,
    because ``role`` (what the value becomes or is used for) happens at compile time."""
    name = placeholder.name
    return KipError(
        INVALID_SYNTAX,
        f"The placeholder :{name} shapes the compiled statement ({role}), so compile needs its value. "
        "Only plain values a FILTER compares or a concept's name/id can stay run-time Cypher parameters.",
        f"Give its value: kip2cypher compile --params '{{\"{name}\": …}}' "
        f'(Python: kip2cypher.compile(text, {{"{name}": …}}, keep_placeholders=True)), or write the value in the command.',
        offset=placeholder.span.start,
    )


def resolve(value: ast.Value, params: Mapping[str, Any] | None = None, *, deferrable: bool = False, role: str = BUILT_IN) -> Any:
    """The plain JSON value of a value node; placeholders are looked up in ``params``.

    With ``Deferring`` params an unbound placeholder is a ``Deferred`` when ``deferrable`` (a whole
    value the caller renders as a run-time parameter), else the ``shapes_statement`` error naming
    ``role``. A placeholder inside a list or object is never deferrable."""
    direct = _direct(value, params)
    if direct is not _INDIRECT:
        return direct
    if isinstance(value, ast.Literal):
        return value.value
    if isinstance(value, ast.ListLit):
        return [resolve(item, params, role=role) for item in value.items]
    if isinstance(value, ast.ObjectLit):
        return _resolved_entries(value.entries, params, role)
    if isinstance(value, ast.Placeholder):
        if isinstance(params, Deferring) and value.name not in params:
            if deferrable:
                return Deferred(value.name, value.span.start)
            raise shapes_statement(value, role)
        if params is None or value.name not in params:
            supplied = ", ".join(f'"{k}"' for k in sorted(params or ())) or "none"
            raise KipError(
                INVALID_SYNTAX,
                f"The placeholder :{value.name} has no value (parameters supplied: {supplied}).",
                f'Add "{value.name}" to the request\'s `parameters` object, or write the value in the command.',
                offset=value.span.start,
            )
        return params[value.name]
    raise KipError(INVALID_SYNTAX, f"{type(value).__name__} is not a JSON value here.")


#: ``_direct``'s answer for a value that needs ``resolve``'s whole walk.
_INDIRECT = object()


def _direct(value: ast.Value, params: Mapping[str, Any] | None) -> Any:
    """The value of a bound placeholder or a literal — what a capsule resolves one of per value —
    read without ``resolve``'s checks; ``_INDIRECT`` for anything else."""
    kind = type(value)
    if kind is ast.Placeholder and type(params) is dict and value.name in params:
        return params[value.name]
    if kind is ast.Literal:
        return value.value
    return _INDIRECT


def _resolved_entries(entries: tuple, params: Mapping[str, Any] | None, role: str) -> dict[str, Any]:
    """An object's entries resolved: ``_direct`` first (a bulk capsule resolves one object per
    block, without ``resolve``'s keyword call), anything else through ``resolve``."""
    out = {}
    for key, item in entries:
        direct = _direct(item, params)
        out[key] = direct if direct is not _INDIRECT else resolve(item, params, role=role)
    return out


def resolve_int(value: ast.Value, params: Mapping[str, Any] | None, what: str) -> int:
    """A positive integer (LIMIT and friends) below 2^63 - 1 (the engine asks Neo4j for one row
    more than a LIMIT, in 64-bit arithmetic); placeholders must bind one too."""
    resolved = resolve(value, params, role=f"{what} is a number the compiler computes with")
    if isinstance(resolved, bool) or not isinstance(resolved, int) or not 1 <= resolved < _LARGEST_COUNT:
        below = f" below {_LARGEST_COUNT}" if type(resolved) is int and resolved > 0 else ""
        raise KipError(
            INVALID_SYNTAX,
            f"{what} expects a positive integer{below}, got {describe(resolved)}.",
            f"Write {what} followed by a whole number ≥ 1 (or bind its placeholder to one).",
        )
    return resolved


def resolve_str(value: ast.Value, params: Mapping[str, Any] | None, what: str, role: str = "") -> str:
    """A string; ``role`` says what it becomes, for an unbound placeholder of a keeping compile."""
    resolved = _direct(value, params)  # a capsule names two per reference: no role text built for them
    if resolved is _INDIRECT:
        resolved = resolve(value, params, role=role or f"{what} is checked and used while the statement is built")
    if not isinstance(resolved, str):
        raise KipError(
            INVALID_SYNTAX,
            f"{what} expects a string, got {describe(resolved)}.",
            f"Write {what[:1].lower() + what[1:]} as a double-quoted string (or bind its placeholder to one).",
            offset=value.span.start,
        )
    return resolved


def resolve_number(value: ast.Value, params: Mapping[str, Any] | None, what: str) -> float:
    resolved = resolve(value, params, role=f"{what} is a number the compiler checks")
    if isinstance(resolved, bool) or not isinstance(resolved, (int, float)) or not math.isfinite(resolved):
        raise KipError(
            INVALID_SYNTAX,
            f"{what} expects a number, got {describe(resolved)}.",
            f"Write {what} followed by a number (or bind its placeholder to one).",
        )
    return resolved


def resolve_predicate(name: ast.PredicateName, params: Mapping[str, Any] | None, offset: int) -> str:
    """A predicate name as the command means it: a quoted name as written, a ``:placeholder``
    bound to a string. Either is then checked the same way: a name Neo4j cannot hold as a
    relationship type (empty, or holding NUL) is KIP_1002; whether it is *defined* is the
    grounding's business (KIP_2001). ``offset``: where the name stands in the command text."""
    if isinstance(name, ast.Placeholder):
        offset = name.span.start
        name = resolve_str(name, params, f"The predicate :{name.name}", "the predicate becomes a relationship type and is checked against the schema")
    if not name or "\x00" in name:
        raise KipError(
            INVALID_IDENTIFIER,
            f"The predicate name {describe(name)} is empty or contains a NUL character; Neo4j cannot hold it as a relationship type.",
            'Use a non-empty predicate name without NUL (\\u0000) characters, e.g. snake_case such as "treats".',
            offset=offset,
        )
    return name


def non_finite(value: Any, path: str = "") -> str:
    """The path (``:name[2].key`` for parameters, ``[2].key`` below ``path``) of the first NaN /
    ±Infinity inside a JSON-ish value, or ``""``: JSON has no such numbers, so no KIP value may
    hold one (Python's ``json`` reads and writes them unless told not to)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "the value"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = non_finite(item, f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else f":{key}"))
        if found:
            return found
    return ""

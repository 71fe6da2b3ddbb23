"""Scripts and command kinds at the text level: a ``.kip`` script split into commands, and the
kind (KQL / KML / META) of a command that may not even parse.

``split_script`` is what ``kip2cypher run`` and the shell use; ``sniff_kind`` classifies a
command by its first keyword so that a syntax error in a batch can still be reported with the
batch rules of spec §6 (a KML syntax error does not stop a batch, a KML execution error does).
"""

from __future__ import annotations

import re
from typing import Any

from .. import errors
from ..errors import KipError
from .ast import command_kind, word_kind
from .parser import MAX_INPUT_BYTES, MAX_NESTING_DEPTH, first_word, parse, parse_script


def sniff_kind(text: str) -> str | None:
    """The kind of a command that did not compile, from its first keyword (None when unknown)."""
    return word_kind(first_word(text))


def command_kind_of(text: str, settings: Any = None) -> str | None:
    """``KQL`` / ``KML`` / ``META`` of a command text; falls back to its first keyword when it does not parse.

    With ``settings``, parsed with its bounds — the parse the compiler then finds in its cache."""
    bounds = (settings.max_input_bytes, settings.max_nesting_depth) if settings is not None else (MAX_INPUT_BYTES, MAX_NESTING_DEPTH)
    try:
        return command_kind(parse(text, max_bytes=bounds[0], max_depth=bounds[1]))
    except Exception:  # noqa: BLE001 - unparsable: classify by keyword
        return sniff_kind(text)


def split_script(text: str) -> list[tuple[str, int]]:
    """The commands of a ``.kip`` script as ``(command text, 1-based line)``; raises KipError.

    Consecutive UPSERT blocks stay together as one capsule (one command). A script larger
    than the parser's input bound is cut at top-level command boundaries into pieces that
    fit, each parsed on its own (a capsule spanning a cut then runs as two capsules).
    """
    if len(text) * 4 <= MAX_INPUT_BYTES or len(text.encode("utf-8", "surrogatepass")) <= MAX_INPUT_BYTES:
        pieces = [(text, 0)]
    else:
        pieces = _pieces(text, MAX_INPUT_BYTES)
    out = []
    for piece, offset in pieces:
        base_line = text.count("\n", 0, offset)
        try:
            commands = parse_script(piece)
        except KipError as exc:
            if exc.line is not None:
                exc.line += base_line
                exc.message = exc.message.replace(f"line {exc.line - base_line},", f"line {exc.line},", 1)
            raise
        for command in commands:
            span = command.span
            out.append((piece[span.start : span.end], base_line + errors.line_column(piece, span.start)[0]))
    return out


_COMMAND_WORD = re.compile(r"(?:FIND|UPSERT|UPDATE|MERGE|DELETE|DESCRIBE|SEARCH|EXPORT)(?![A-Za-z0-9_])")


def _command_starts(text: str) -> list[int]:
    """Offsets of command keywords at bracket depth 0, outside strings and comments."""
    starts, depth, i, n = [], 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] not in '"\n':
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c.isalpha() and depth == 0 and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_?$:.")):
            match = _COMMAND_WORD.match(text, i)
            if match:
                starts.append(i)
            while i < n and (text[i].isalnum() or text[i] == "_"):
                i += 1
            continue
        i += 1
    return starts


def _pieces(text: str, limit: int) -> list[tuple[str, int]]:
    """Greedy groups of whole commands, each at most ``limit`` UTF-8 bytes (an oversized single
    command stays alone and the parser reports it)."""
    starts = _command_starts(text) or [0]
    bounds = [0] + starts[1:] + [len(text)]
    pieces: list[tuple[str, int]] = []
    begin, size = 0, 0
    for left, right in zip(bounds, bounds[1:]):
        chunk = len(text[left:right].encode("utf-8", "surrogatepass"))
        if size and size + chunk > limit:
            pieces.append((text[begin:left], begin))
            begin, size = left, 0
        size += chunk
    pieces.append((text[begin:], begin))
    return pieces

"""Loader for the parser fixtures in ``tests/fixtures/parser`` (importable by any test).

Format: an entry starts with a line ``=== <name>``; in invalid.kip the next line is
``--- <CODE> <line>:<column>``, the expected error and its 1-based position in the
entry's body. The body runs up to the next ``===`` line; trailing blank lines are
dropped. Lines before the first entry are a file comment.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "parser"
_HEADER = re.compile(r"^=== (.+)$", re.M)
_EXPECT = re.compile(r"--- (KIP_\d{4}) (\d+):(\d+)(?:\n|\Z)")


class Entry(NamedTuple):
    name: str
    text: str
    code: str | None = None
    line: int | None = None
    column: int | None = None


def load(filename: str) -> list[Entry]:
    """All entries of a fixture file, in file order."""
    source = (FIXTURES / filename).read_text(encoding="utf-8")
    headers = list(_HEADER.finditer(source))
    entries = []
    for header, following in zip(headers, headers[1:] + [None]):
        body = source[header.end() + 1 : following.start() if following else len(source)].rstrip("\n")
        expect = _EXPECT.match(body)
        if expect:
            code, line, column = expect.group(1), int(expect.group(2)), int(expect.group(3))
            entries.append(Entry(header.group(1), body[expect.end() :], code, line, column))
        else:
            entries.append(Entry(header.group(1), body))
    return entries


def valid() -> list[Entry]:
    return load("valid.kip")


def invalid() -> list[Entry]:
    return load("invalid.kip")


def example_params(entries: list[Entry]) -> dict:
    """Values for every :placeholder the examples use, so each runs (a name-like value when
    nothing more specific is known; no cursor, which must come from a real answer)."""
    params = {
        "limit": 5,
        "timestamp": "2025-01-01T00:00:00Z",
        "now": "2025-01-01T00:00:00Z",
        "ts": "2025-01-01T00:00:00Z",
        "decay_threshold": "2025-01-01T00:00:00Z",
        "v": 1,
        "claim_version": 2,
        "types": ["Drug"],
        "decay_factor": 0.5,
        "bump": 1,
        "threshold": 0.5,
        "mode": "keyword",
        "merged_preferences": {"x": 1},
        "keep": "Aspirin",
        "dup": "Cognizine",
    }
    for name in re.findall(r":([A-Za-z_]\w*)", "\n".join(e.text for e in entries)):
        params.setdefault(name, "Aspirin")
    params.pop("cursor", None)
    return params

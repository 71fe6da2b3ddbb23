"""KIP error codes (spec Appendix 4) and the one exception type callers ever see.

Every failure that reaches a caller is a ``KipError`` rendered as
``{"code", "message", "hint"}``. Neo4j driver errors are mapped to KIP errors in
exactly one place: ``kip2cypher.execution.neo4j_errors``.
"""

from __future__ import annotations

from typing import Any

INVALID_SYNTAX = "KIP_1001"
INVALID_IDENTIFIER = "KIP_1002"
TYPE_MISMATCH = "KIP_2001"
CONSTRAINT_VIOLATION = "KIP_2002"
INVALID_VALUE_TYPE = "KIP_2003"
REFERENCE_ERROR = "KIP_3001"
NOT_FOUND = "KIP_3002"
DUPLICATE_EXISTS = "KIP_3003"
IMMUTABLE_TARGET = "KIP_3004"
VERSION_CONFLICT = "KIP_3005"
EXECUTION_TIMEOUT = "KIP_4001"
RESOURCE_EXHAUSTED = "KIP_4002"
INTERNAL_ERROR = "KIP_4003"

NAMES = {
    INVALID_SYNTAX: "InvalidSyntax",
    INVALID_IDENTIFIER: "InvalidIdentifier",
    TYPE_MISMATCH: "TypeMismatch",
    CONSTRAINT_VIOLATION: "ConstraintViolation",
    INVALID_VALUE_TYPE: "InvalidValueType",
    REFERENCE_ERROR: "ReferenceError",
    NOT_FOUND: "NotFound",
    DUPLICATE_EXISTS: "DuplicateExists",
    IMMUTABLE_TARGET: "ImmutableTarget",
    VERSION_CONFLICT: "VersionConflict",
    EXECUTION_TIMEOUT: "ExecutionTimeout",
    RESOURCE_EXHAUSTED: "ResourceExhausted",
    INTERNAL_ERROR: "InternalError",
}

# The spec's recovery hints, used when a raise site has nothing more specific to say.
DEFAULT_HINTS = {
    INVALID_SYNTAX: "Check parenthesis matching, keyword spelling, and statement structure. Ensure JSON data format is valid.",
    INVALID_IDENTIFIER: "Identifiers must match regex [a-zA-Z_][a-zA-Z0-9_]*.",
    TYPE_MISMATCH: "Execute DESCRIBE CONCEPT TYPES / DESCRIBE PROPOSITION TYPES to confirm names. Types are case-sensitive (Drug vs drug).",
    CONSTRAINT_VIOLATION: "Supply the missing required attributes. Never write _-prefixed metadata — it is engine-maintained.",
    INVALID_VALUE_TYPE: "Correct the JSON value type.",
    REFERENCE_ERROR: "Bind every variable in WHERE before using it; in UPSERT, define a handle's CONCEPT/PROPOSITION block before referencing it.",
    NOT_FOUND: "The target may have been deleted or never created. Use SEARCH or FIND to confirm it exists first.",
    DUPLICATE_EXISTS: "Narrow the WHERE pattern until each variable matches exactly one node; use UPSERT to update an existing element.",
    IMMUTABLE_TARGET: "Operation prohibited on protected system structures. Ordinary attributes of $self remain writable.",
    VERSION_CONFLICT: "Re-read the element to get its fresh _version and current value, re-apply your change, then retry the guarded write.",
    EXECUTION_TIMEOUT: "Optimize the query: reduce UNION usage, lower LIMIT, or reduce regex/hops.",
    RESOURCE_EXHAUSTED: "Use LIMIT and CURSOR for pagination.",
    INTERNAL_ERROR: "Retry later; if it persists, contact the system administrator.",
}


def printable(text: str) -> str:
    """``text`` with each unpaired UTF-16 surrogate spelled ``\\udXXX`` (the text otherwise unchanged)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


class KipError(Exception):
    """A KIP error object. ``line``/``column`` are 1-based and set for syntax errors."""

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        line: int | None = None,
        column: int | None = None,
        debug: dict[str, Any] | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint if hint is not None else DEFAULT_HINTS.get(code, "")
        self.line = line
        self.column = column
        self.debug = debug
        #: Where in the command text the fault is (a character offset), until ``locate`` turns
        #: it into line/column and an excerpt with a caret.
        self.offset = offset
        #: KQL / KML / META when the command that failed parsed (set by the compiler), else None.
        self.command_kind: str | None = None

    def locate(self, text: str) -> KipError:
        """Give a semantic error raised with an ``offset`` its line, column and source excerpt."""
        if self.line is None and self.offset is not None and text:
            self.line, self.column = line_column(text, self.offset)
            self.message = f"{self.message} (line {self.line}, column {self.column})\n{snippet(text, self.offset)}"
        return self

    def to_dict(self) -> dict[str, Any]:
        """The spec's error object; position and debug fields only when known. A message or hint
        that quotes the caller's text shows an unpaired surrogate as ``\\udXXX``: no UTF-8
        encoder (a JSON-RPC transport, a terminal) can write one, so the answer would be lost."""
        out: dict[str, Any] = {"code": self.code, "message": printable(self.message), "hint": printable(self.hint)}
        if self.line is not None:
            out["line"] = self.line
            out["column"] = self.column
        if self.debug:
            out["debug"] = self.debug
        return out

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"KipError({self.code!r}, {self.message!r})"


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def snippet(text: str, offset: int) -> str:
    """The offending source line with a caret under ``offset``."""
    line, column = line_column(text, offset)
    # split("\n") (not splitlines) so lines agree with line_column, also at a trailing newline.
    source_line = text.split("\n")[line - 1].rstrip("\r")
    if len(source_line) > 120:
        start = max(0, column - 60)
        source_line = source_line[start : start + 120]
        column -= start
    return f"{source_line}\n{' ' * (column - 1)}^"


def closest(name: str, candidates: list[str]) -> str | None:
    """The defined name an LLM most likely meant: a case slip first, then a small edit."""
    for candidate in candidates:
        if candidate.lower() == name.lower():
            return candidate
    import difflib

    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return matches[0] if matches else None


def did_you_mean(kind: str, name: str, candidates: list[str]) -> str:
    """A repair hint for an undefined type or predicate (KIP_2001)."""
    guess = closest(name, candidates)
    describe = "DESCRIBE CONCEPT TYPES" if kind == "concept type" else "DESCRIBE PROPOSITION TYPES"
    if guess is not None and guess.lower() == name.lower():
        return f'Names are case-sensitive: use "{guess}", not "{name}".'
    if guess is not None:
        return f'Did you mean "{guess}"? Run {describe} to list the defined names.'
    meta_type = "$ConceptType" if kind == "concept type" else "$PropositionType"
    return f'Run {describe} to list the defined names, or define "{name}" first with an UPSERT of a {meta_type} node.'


def too_many_bytes(cap: int) -> KipError:
    """KIP_4002 for rows above ``Settings.max_result_bytes``: the answer would not fit in memory or a message."""
    return KipError(
        RESOURCE_EXHAUSTED,
        f"The command's answer grew past {cap} bytes (Settings.max_result_bytes) while it was read.",
        "Add LIMIT (and page with CURSOR) to fetch fewer rows at a time, or return fewer or smaller fields (e.g. ?x.name instead of ?x).",
    )


def too_many_rows(cap: int) -> KipError:
    """KIP_4002 for a result above ``Settings.max_result_rows``."""
    return KipError(
        RESOURCE_EXHAUSTED,
        f"The command produced more than {cap} rows.",
        "Add LIMIT (and page with CURSOR) to the command, or narrow the WHERE pattern.",
    )

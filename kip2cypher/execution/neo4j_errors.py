"""Neo4j driver exceptions → KIP errors: the one place this mapping happens (spec Appendix 4).

The executor's loops call ``from_neo4j`` for every ``Neo4jError`` / ``DriverError`` a
statement, a transaction or a connection raises; nothing else in the package inspects a
driver exception.
"""

from __future__ import annotations

import re
from typing import Any

from neo4j import exceptions as ne

from ..cypher import storage
from ..errors import (
    CONSTRAINT_VIOLATION,
    DEFAULT_HINTS,
    DUPLICATE_EXISTS,
    EXECUTION_TIMEOUT,
    INTERNAL_ERROR,
    INVALID_IDENTIFIER,
    INVALID_SYNTAX,
    INVALID_VALUE_TYPE,
    NOT_FOUND,
    RESOURCE_EXHAUSTED,
    KipError,
)
from ..lower.adopted_values import value_error
from ..syntax.ast import READ_WORDS, listing
from ..syntax.regex_guard import reach_error

#: What the loops catch and hand to ``from_neo4j``; the driver raises OverflowError when it
#: packs a parameter holding an integer beyond 64 bits (nothing was sent).
DRIVER_ERRORS = (ne.Neo4jError, ne.DriverError, OverflowError)

#: How every "Neo4j could not be reached" error begins — ``from_neo4j``'s and the reachability
#: check's (``connection.unreachable``, which names the URI): what tells an outage from the other
#: KIP_4003s (``unavailable``).
UNAVAILABLE = "Neo4j is unavailable"
_UNAVAILABLE = re.compile(r"^Neo4j (?:at \S+ )?is (?:unavailable|unreachable)")


def unavailable(error: KipError) -> bool:
    """Whether ``error`` says Neo4j could not be reached (an outage, not a refusal of the command;
    also the open circuit breaker's answer, ``breaker.Breaker.refusal``)."""
    return error.code == INTERNAL_ERROR and bool(_UNAVAILABLE.match(error.message))


def out_of_range(exc: OverflowError, params: dict[str, Any] | None = None) -> KipError:
    """A command value Neo4j cannot compute with: an integer beyond 64 bits where the command
    compares, limits or computes (LIMIT, FILTER, IN, EXPECT VERSION, UPDATE operands). As an
    attribute value it is stored exactly (as JSON text); here it is the caller's number, found in
    the statement's parameters (the Rust packstream codec does not name it; the Python one did)."""
    big = _first_big_integer(params or {})
    number = str(big) if big is not None else str(exc).removeprefix("Integer ").removesuffix(" out of range")
    return KipError(
        INVALID_VALUE_TYPE,
        f"The integer {number[:40]}{'…' if len(number) > 40 else ''} is outside the 64-bit range Neo4j compares and computes with "
        "(-9223372036854775808 … 9223372036854775807); the command stopped and wrote nothing.",
        "Use an integer within 64 bits where the command compares, limits or computes (LIMIT, FILTER, IN, EXPECT VERSION, UPDATE operands), "
        "or a decimal such as 1e20 to compare with large magnitudes. Retrying fails the same way.",
    )


def _first_big_integer(value: Any) -> int | None:
    """The first integer outside the signed 64-bit range in a parameter value, if any."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, int) and not isinstance(item, bool) and not storage.INT64_MIN <= item <= storage.INT64_MAX:
            return item
    return None


def is_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says Neo4j could not be reached (the driver's own connection attempts
    failed, or the database is not available): what opens the circuit breaker (``breaker``)."""
    code = getattr(exc, "code", None) or ""
    return isinstance(exc, (ne.ServiceUnavailable, ne.SessionExpired, ne.ConnectionAcquisitionTimeoutError)) or any(
        word in code for word in ("ServiceUnavailable", "DatabaseUnavailable")
    )


def is_retryable(exc: BaseException) -> bool:
    """Whether the driver says ``exc`` may pass when the transaction is run again."""
    retryable = getattr(exc, "is_retryable", None)
    return bool(retryable and retryable())


def from_neo4j(exc: BaseException, cypher: str | None = None, params: dict[str, Any] | None = None) -> KipError:
    """Map a Neo4j driver exception onto a KIP error. The single place this happens.
    ``params``: the parameters of the statement that failed (for an OverflowError)."""
    code = getattr(exc, "code", None) or ""
    message = getattr(exc, "message", None) or str(exc)
    debug = {"cypher": cypher} if cypher else None
    if isinstance(exc, OverflowError):
        return out_of_range(exc, params)
    if isinstance(exc, ne.IncompleteCommit):
        return KipError(
            INTERNAL_ERROR,
            f"The connection broke while committing; the write may or may not have been applied: {message}",
            "Re-read the affected elements (FIND) before retrying the write.",
        )
    if is_unreachable(exc):
        return KipError(INTERNAL_ERROR, f"{UNAVAILABLE}: {message}", "The database could not be reached; retry the same request in a few seconds.")
    if "Statement.AccessMode" in code:
        # A write reached a READ transaction: only a compiler bug can do that (readonly requests never compile KML).
        return KipError(
            INTERNAL_ERROR,
            "Internal error: the engine attempted a write inside a read-only transaction; Neo4j refused it and nothing was written.",
            "This is an engine bug; report it with the debug field.",
            debug=debug,
        )
    if isinstance(exc, ne.AuthError) or "Security.Unauthorized" in code or "Security.AuthenticationRateLimit" in code:
        return KipError(
            INTERNAL_ERROR,
            f"Neo4j rejected the credentials: {message}",
            "The server's Neo4j user or password is wrong; the administrator must fix NEO4J_USERNAME / NEO4J_PASSWORD.",
        )
    if "ForbiddenOnReadOnlyDatabase" in code:
        return KipError(
            INTERNAL_ERROR,
            f"The Neo4j database is read-only: {message}",
            f"Only {listing(READ_WORDS)} can run on this deployment; use execute_kip_readonly.",
        )
    if "Security.Forbidden" in code:
        return KipError(
            INTERNAL_ERROR,
            f"The Neo4j user lacks the privilege for this command: {message}",
            "Use execute_kip_readonly for reads, or ask the administrator to grant the privilege.",
        )
    if "Database.DatabaseNotFound" in code:
        return KipError(
            INTERNAL_ERROR, f"The configured Neo4j database does not exist: {message}", "The administrator must fix NEO4J_DATABASE (or --database)."
        )
    if "TransactionTimedOut" in code or "TransactionTimedOutClientConfiguration" in code or "Terminated" in code:
        return KipError(EXECUTION_TIMEOUT, "The command exceeded the query time limit.", DEFAULT_HINTS[EXECUTION_TIMEOUT])
    if "MemoryPoolOutOfMemoryError" in code or "OutOfMemory" in code:
        return KipError(RESOURCE_EXHAUSTED, "The command needed more memory than the database allows.", DEFAULT_HINTS[RESOURCE_EXHAUSTED])
    if "TokenNameError" in code or "is not a valid token name" in message:
        # A concept type or predicate becomes a Neo4j label / relationship type; Neo4j refuses
        # empty names and names holding NUL. The caller's data, not an engine bug.
        return KipError(
            INVALID_IDENTIFIER,
            "A concept type or predicate name is empty or contains a NUL character; Neo4j cannot store it as a label or relationship type.",
            "Use a non-empty type/predicate name without NUL (\\u0000) characters (e.g. UpperCamelCase types, snake_case predicates).",
        )
    if "too large to index" in message:
        # Names, types, predicates and ids are indexed; a RANGE index key holds ~8 KB at most.
        return KipError(
            CONSTRAINT_VIOLATION,
            "A name, type or predicate is too long to be indexed (Neo4j's index key limit is about 8 KB; see docs/limits.md).",
            "Keep identity fields short; put long text in an attribute such as description.",
        )
    if "Statement.EntityNotFound" in code:
        # Only a race does this: an element this command had matched was deleted by a concurrent
        # command before this one could link it (tests/test_reliability_concurrency.py).
        return KipError(
            NOT_FOUND,
            "An element this command uses was deleted by a concurrent command; nothing was written.",
            "Re-read the elements (FIND) and retry the command if they still exist.",
        )
    if "ConstraintValidationFailed" in code:
        return KipError(DUPLICATE_EXISTS, f"A uniqueness constraint was violated: {message}", DEFAULT_HINTS[DUPLICATE_EXISTS])
    if "Statement.ArithmeticError" in code and "overflow" in message:
        # Integer arithmetic past 64 bits (UPDATE's ADD/MUL, a FIND SUM): the caller's numbers,
        # not a transient fault, so "retry later" would invite endless retries.
        return KipError(
            INVALID_VALUE_TYPE,
            "An integer result exceeds the 64-bit range Neo4j computes in (-9223372036854775808 … 9223372036854775807); nothing was written.",
            "Integer arithmetic is exact only within 64 bits. Compute in floating point by making an operand a float "
            "(e.g. MUL(?x.attributes.n, 1.0) or ADD(?x.attributes.n, 1.0)), or keep the values in range. Retrying fails the same way.",
        )
    if "Invalid Regex" in message:
        # A value beyond the pattern's reach (regex_guard), an adopted value a FILTER cannot compare
        # exactly (adopted_values.refusal), or a pattern Java rejects that the guard's parser accepted.
        return (
            reach_error(message)
            or value_error(message)
            or KipError(INVALID_SYNTAX, f"Invalid REGEX pattern: {message.splitlines()[0]}", "Fix the regular expression (Java syntax).")
        )
    if "Statement.ArgumentError" in code and "cypher version" in message:
        # KIP2CYPHER_CYPHER_PREFIX names a Cypher version this server lacks (CYPHER 25 on Neo4j 5.x):
        # every statement fails the same way, so "retry later" would be wrong (docs/neo4j-versions.md).
        return KipError(
            INTERNAL_ERROR,
            f"This Neo4j does not have the Cypher version the server's KIP2CYPHER_CYPHER_PREFIX asks for: {message}",
            "Retrying fails the same way: the administrator must change KIP2CYPHER_CYPHER_PREFIX "
            "(Neo4j 5.x has only CYPHER 5; 2025.06 and later have CYPHER 5 and CYPHER 25).",
        )
    if "Statement.SyntaxError" in code or "Statement.SemanticError" in code or "Statement.TypeError" in code:
        # Our compiler produced Cypher Neo4j rejects: that is our bug, never the caller's.
        return KipError(
            INTERNAL_ERROR,
            f"Internal compiler error: Neo4j rejected the generated Cypher ({message}).",
            "This is an engine bug; report it with the debug field.",
            debug=debug,
        )
    if isinstance(exc, ne.TransientError):
        return KipError(INTERNAL_ERROR, f"A transient database error persisted after retries: {message}", "Retry the same request.")
    return KipError(INTERNAL_ERROR, f"Neo4j error {code}: {message}", DEFAULT_HINTS[INTERNAL_ERROR], debug=debug)

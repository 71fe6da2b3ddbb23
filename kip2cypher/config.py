"""Engine settings: every limit and switch, configurable and documented in docs/limits.md."""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from typing import Any


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@dataclass(frozen=True)
class Settings:
    """Limits and behaviour switches of one Nexus (or of offline compilation)."""

    #: Largest command text, in UTF-8 bytes (KIP_4002 beyond). The parser's own ceiling
    #: (parser.MAX_INPUT_BYTES, 256 KiB) still applies: this can only tighten it.
    max_input_bytes: int = field(default_factory=lambda: _env_int("KIP2CYPHER_MAX_INPUT_BYTES", 256 * 1024))
    #: Largest parameters of one request (KIP_4002 beyond, before anything runs): characters of
    #: strings and keys plus 8 per other scalar, counted for every command that receives them.
    max_parameter_bytes: int = field(default_factory=lambda: _env_int("KIP2CYPHER_MAX_PARAMETER_BYTES", 16 * 1024 * 1024))
    #: Deepest nesting of { [ ( in a command (KIP_4002 beyond); ceiling parser.MAX_NESTING_DEPTH (64).
    max_nesting_depth: int = field(default_factory=lambda: _env_int("KIP2CYPHER_MAX_NESTING_DEPTH", 64))
    #: Cap for unbounded path quantifiers ``{m,}`` and the largest allowed bound (KIP_4002 beyond).
    max_hops: int = field(default_factory=lambda: _env_int("KIP2CYPHER_MAX_HOPS", 10))
    #: Seconds a transaction may run before Neo4j terminates it (KIP_4001). 0 = server default.
    query_timeout_s: float = field(default_factory=lambda: float(os.environ.get("KIP2CYPHER_QUERY_TIMEOUT_S", "30")))
    #: Seconds one request (a command or a whole batch) may take: parsing, compiling, scoring,
    #: embedding and every statement. Past it the remaining commands answer KIP_4001 without
    #: running and a running transaction's timeout is cut to what is left. 0 = no budget.
    max_request_s: float = field(default_factory=lambda: float(os.environ.get("KIP2CYPHER_MAX_REQUEST_S", "120")))
    #: Rows one command may return before KIP_4002 asks for LIMIT/CURSOR.
    max_result_rows: int = field(default_factory=lambda: _env_int("KIP2CYPHER_MAX_RESULT_ROWS", 10000))
    #: Steps (an upper bound of Java's backtracking, priced at compile time) the REGEX of one
    #: command may take on one row; a pattern's reach — the longest value it may examine — follows
    #: from it (kip2cypher/lower/regex_guard.py, KIP_4001 beyond). 5e7 ≈ 0.1 s of one worker.
    max_regex_steps: float = field(default_factory=lambda: float(os.environ.get("KIP2CYPHER_MAX_REGEX_STEPS", "5e7")))
    #: Commands in one batch (spec: at most 256 → KIP_4002).
    max_batch: int = 256
    #: Enforce instance_schema is_required (KIP_2002) and value types (KIP_2003).
    strict_schema: bool = field(default_factory=lambda: os.environ.get("KIP2CYPHER_STRICT_SCHEMA", "0") == "1")
    #: Optional prefix put before every generated statement, e.g. "CYPHER runtime=slotted".
    cypher_prefix: str = field(default_factory=lambda: os.environ.get("KIP2CYPHER_CYPHER_PREFIX", ""))
    #: Key that signs CURSOR tokens so a token from another query is rejected (KIP_1001).
    cursor_secret: bytes = field(default_factory=lambda: os.environ.get("KIP2CYPHER_CURSOR_SECRET", "").encode() or secrets.token_bytes(32))
    #: Seconds the driver keeps retrying a transaction on transient errors / an unreachable
    #: server (cluster fail-over) before the command fails with KIP_4003 and a retry hint.
    max_retry_s: float = field(default_factory=lambda: float(os.environ.get("KIP2CYPHER_MAX_RETRY_S", "30")))
    #: Application name sent as transaction metadata (visible in Neo4j's query log).
    app_name: str = "kip2cypher"
    #: Embedder for SEARCH MODE "semantic"/"hybrid" (kip2cypher.embedding): None = the process
    #: default (KIP2CYPHER_EMBEDDER, "auto"), False = none, an Embedder instance or a spec string.
    #: Not part of equality/hash, so compiled plans stay shareable; it is read at run time.
    embedder: Any = field(default=None, compare=False, repr=False)

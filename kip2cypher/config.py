"""Engine settings: every limit and switch, configurable and documented in docs/limits.md.

One pydantic-settings model. A field's value comes from, in this order: the keyword argument
(``Settings(query_timeout_s=5)``), the environment variable ``KIP2CYPHER_<FIELD>``, a ``.env``
file in the working directory, a ``kip2cypher.toml`` file in the working directory (top-level
``field = value`` keys), the default. A bad value raises ``SettingsError`` — a ``KipError`` whose
message names the variable and the expected type — instead of a bare ``ValueError`` deep in a
request. ``Settings`` is immutable and hashable: it is part of the compile-cache key.

Everything else configured by a variable (``NEO4J_URI``…, the MCP server's ``KIP2CYPHER_MCP_*``,
the embedder, the local launcher) is read through ``lookup``, from the same three places in the
same order (a ``kip2cypher.toml`` key is the name without ``KIP2CYPHER_``, lower-case:
``neo4j_uri``, ``mcp_port``). Every name is in one registry (``OTHER_VARIABLES``): an unknown
``KIP2CYPHER_*`` variable, ``.env`` entry or toml key, and an unknown ``Settings`` keyword, is an
error naming the nearest valid name (``check_sources``), never silently ignored.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from typing import Any

from pydantic import Field, NonNegativeFloat, PositiveInt, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from .errors import INTERNAL_ERROR, KipError

ENV_PREFIX = "KIP2CYPHER_"
TOML_FILE = "kip2cypher.toml"
ENV_FILE = ".env"


class SettingsError(KipError):
    """A setting has a value of the wrong type or out of range (raised when ``Settings`` is built)."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message, f"Fix the environment variable (or the key in {TOML_FILE} / {ENV_FILE}); docs/limits.md lists every setting.")


class Settings(BaseSettings):
    """Limits and behaviour switches of one Nexus (or of offline compilation)."""

    model_config = SettingsConfigDict(
        frozen=True,
        env_prefix=ENV_PREFIX,
        env_file=ENV_FILE,
        env_ignore_empty=True,
        toml_file=TOML_FILE,
        extra="ignore",
        validate_default=True,
    )

    #: Largest command text, in UTF-8 bytes (KIP_4002 beyond). The parser's own ceiling
    #: (parser.MAX_INPUT_BYTES, 256 KiB) still applies: this can only tighten it.
    max_input_bytes: PositiveInt = 256 * 1024
    #: Largest parameters of one request (KIP_4002 beyond, before anything runs): characters of
    #: strings and keys plus 8 per other scalar, counted for every command that receives them.
    max_parameter_bytes: PositiveInt = 16 * 1024 * 1024
    #: Deepest nesting of { [ ( in a command (KIP_4002 beyond); ceiling parser.MAX_NESTING_DEPTH (64).
    max_nesting_depth: PositiveInt = 64
    #: Largest *minimum* of a path quantifier ``{m,n}`` (each mandatory hop is one clause;
    #: KIP_4002 beyond). The maximum is unbounded: paths are breadth-first searches.
    max_hops: PositiveInt = 10
    #: Seconds a transaction may run before Neo4j terminates it (KIP_4001). 0 = server default.
    query_timeout_s: NonNegativeFloat = 30.0
    #: Seconds one request (a command or a whole batch) may take: parsing, compiling, scoring,
    #: embedding and every statement. Past it the remaining commands answer KIP_4001 without
    #: running and a running transaction's timeout is cut to what is left. 0 = no budget.
    max_request_s: NonNegativeFloat = 120.0
    #: Seconds one transaction of administrative work (bootstrap, schema, ``kip2cypher migrate``)
    #: may run. 0 (the default) = no limit: not the agents' ``query_timeout_s``, and not the
    #: server's ``db.transaction.timeout`` either (docs/migration.md).
    admin_timeout_s: NonNegativeFloat = 0.0
    #: Rows one command may return before KIP_4002 asks for LIMIT/CURSOR.
    max_result_rows: PositiveInt = 10000
    #: Bytes the rows of one command may hold as they stream from Neo4j (strings by their UTF-8
    #: length, bytes by theirs, scalars 8): past it KIP_4002 asks for LIMIT/CURSOR. With
    #: ``fetch_size`` it bounds what one command holds in memory (docs/limits.md).
    max_result_bytes: PositiveInt = 32 * 2**20
    #: Records the driver pulls from Neo4j per round trip (the driver's own default): a batch is
    #: held before the byte count sees it, so this bounds the overshoot past ``max_result_bytes``.
    #: 250 cost a 5,000-row answer 15 round trips more than hand-written Cypher makes (≈ 20 ms
    #: at 100k, docs/performance.md Round 9); lower it where single rows are huge.
    fetch_size: PositiveInt = 1000
    #: Steps (an upper bound of Java's backtracking, priced at compile time) the REGEX of one
    #: command may take on one row; a pattern's reach — the longest value it may examine — follows
    #: from it (kip2cypher/syntax/regex_guard.py, KIP_4001 beyond). 5e7 ≈ 0.1 s of one worker.
    max_regex_steps: float = Field(default=5e7, gt=0)
    #: Characters of a SEARCH term (KIP_4002 beyond): a term is a phrase to find, and its words
    #: are what the full-text query, the lexical scoring and the embedder work on.
    max_search_term_chars: PositiveInt = 2048
    #: Commands in one batch (spec: at most 256 → KIP_4002); can only lower the spec's bound.
    max_batch: int = Field(default=256, ge=1, le=256)
    #: Enforce instance_schema is_required (KIP_2002) and value types (KIP_2003).
    strict_schema: bool = False
    #: Optional prefix put before every generated statement, e.g. "CYPHER runtime=slotted":
    #: Cypher query options only (``query_options``), checked when the settings are built —
    #: anything else would run inside every transaction, write transactions included.
    cypher_prefix: str = ""
    #: Key that signs CURSOR tokens so a token from another query is rejected (KIP_1001).
    #: Unset: a Nexus signs with the secret its database stored at bootstrap, so every process
    #: and replica of one nexus honours the others' cursors (``cursor.signing_key``).
    cursor_secret: bytes = Field(default=b"", repr=False)
    #: Seconds the driver keeps retrying a transaction on transient errors of a server that
    #: answered (cluster fail-over) before the command fails with KIP_4003 and a retry hint.
    max_retry_s: NonNegativeFloat = 30.0
    #: Application name sent as transaction metadata (visible in Neo4j's query log).
    app_name: str = "kip2cypher"
    #: The namespace of this nexus inside its database (docs/namespaces.md): "" is the default
    #: namespace (the original layout); otherwise lower-case letters, digits and "_", starting
    #: with a letter, at most 32 characters.
    namespace: str = Field(default="", pattern=r"^(?:[a-z][a-z0-9_]{0,31})?$")
    #: Seconds a semantic or hybrid SEARCH waits for the background embedding refresh of the
    #: writes its nexus committed before it (docs/meta.md); past it, it answers from the
    #: vectors that exist, with a warning. ``Nexus.close`` waits as long for the last writes.
    embedding_wait_s: NonNegativeFloat = 30.0

    #: Embedder for SEARCH MODE "semantic"/"hybrid" (kip2cypher.embedding): None = the process
    #: default (KIP2CYPHER_EMBEDDER, "auto"), False = none, an Embedder instance or a spec string.
    #: A run-time object, not a setting: kept outside the fields (read from no file or variable)
    #: and out of equality/hash, so compiled plans stay shareable. ``_adoption``: the namespace's
    #: adoption mapping (``adoption.Adoption``, docs/adopt.md), read from its nexus node by the
    #: Nexus — not a setting either (no file or variable sets it), but it changes what commands
    #: compile to, so it is part of equality and hash (the compile-cache key). ``_key``/``_hash``
    #: are the field values (and the adoption) and their hash, computed once: a compile-cache
    #: lookup hashes Settings per call, and plain slots read ten times faster than pydantic
    #: private attributes.
    __slots__ = ("_embedder", "_adoption", "_key", "_hash")

    def __init__(self, embedder: Any = None, adoption: Any = None, **values: Any) -> None:
        unknown = sorted(set(values) - set(type(self).model_fields))
        if unknown:
            raise SettingsError(f"Unknown setting {unknown[0]!r}{_nearest(unknown[0], list(type(self).model_fields))}: Settings has no such field.")
        check_sources()
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise SettingsError(_describe(exc)) from None
        key = tuple(getattr(self, name) for name in type(self).model_fields) + (adoption,)
        object.__setattr__(self, "_embedder", embedder)
        object.__setattr__(self, "_adoption", adoption)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hash(key))

    @field_validator("cypher_prefix")
    @classmethod
    def _query_options_only(cls, value: str) -> str:
        return query_options(value)

    @property
    def embedder(self) -> Any:
        return self._embedder

    @property
    def adoption(self) -> Any:
        """The namespace's ``adoption.Adoption`` (None: nothing adopted)."""
        return self._adoption

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields (or the embedder, or the adoption) changed, validated like a new object."""
        embedder = changes.pop("embedder", self._embedder)
        adoption = changes.pop("adoption", self._adoption)
        return Settings(embedder=embedder, adoption=adoption, **{**self.model_dump(), **changes})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, dotenv_settings, TomlConfigSettingsSource(settings_cls)


#: The Cypher query options (Neo4j 5 / Cypher 25 manual, "Query options") a prefix may set, with their values.
QUERY_OPTIONS = {
    "runtime": ("slotted", "pipelined", "parallel", "interpreted"),
    "planner": ("cost", "idp", "dp"),
    "expressionengine": ("default", "interpreted", "compiled"),
    "operatorengine": ("default", "interpreted", "compiled"),
    "interpretedpipelinesfallback": ("default", "disabled", "whitelisted_plans_only", "all"),
    "replan": ("default", "force", "skip"),
    "connectcomponentsplanner": ("greedy", "idp"),
    "updatestrategy": ("default", "eager"),
    "eageranalyzer": ("ir", "lp"),
    "inferschemaparts": ("off", "most_selective_label"),
    "statefulshortestplanningmode": ("into_only", "all_if_possible", "cardinality_estimation"),
}


def query_options(prefix: str) -> str:
    """``prefix`` if it is ``CYPHER [5|25] option=value …`` with known options and values, else ValueError."""
    words = prefix.split()
    if not words:
        return ""
    if words[0].upper() != "CYPHER":
        raise ValueError("it must start with CYPHER and hold only query options, e.g. 'CYPHER runtime=slotted'")
    options = words[2:] if len(words) > 1 and words[1] in ("5", "25") else words[1:]
    for option in options:
        key, _, choice = option.partition("=")
        allowed = QUERY_OPTIONS.get(key.lower())
        if allowed is None or choice.lower() not in allowed:
            known = ", ".join(f"{k}={'|'.join(v)}" for k, v in QUERY_OPTIONS.items())
            raise ValueError(f"{option!r} is not a Cypher query option kip2cypher accepts (known: {known})")
    return " ".join(words)


_EXPECTED = {int: "an integer", float: "a number", bool: "a boolean (1/0, true/false)", str: "a string", bytes: "a string"}


def _describe(exc: ValidationError) -> str:
    """'KIP2CYPHER_QUERY_TIMEOUT_S='abc' (query_timeout_s) must be a number: …' for each bad field."""
    parts = []
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else "?"
        field = Settings.model_fields.get(name)
        if error["type"] == "value_error":  # a validator's own reason (cypher_prefix)
            problem = "is refused: " + error["msg"].removeprefix("Value error, ")
        else:
            problem = f"must be {_EXPECTED.get(getattr(field, 'annotation', None), 'a valid value')}{_constraint(field)}: {error['msg']}"
        parts.append(
            f"{ENV_PREFIX}{name.upper()}={error.get('input')!r} (setting {name!r}, from the environment, {ENV_FILE}, {TOML_FILE} or "
            f"the Settings argument) {problem}."
        )
    return "Invalid kip2cypher setting: " + " ".join(parts)


def _constraint(field: Any | None) -> str:
    """' > 0' / ' ≥ 0' / ' between 1 and 256' from a field's annotated-types metadata."""
    bounds = {}
    for item in getattr(field, "metadata", ()):
        for key in ("gt", "ge", "le", "lt"):
            if getattr(item, key, None) is not None:
                bounds[key] = getattr(item, key)
    words = {"gt": ">", "ge": "≥", "le": "≤", "lt": "<"}
    return " " + " and ".join(f"{words[k]} {v}" for k, v in bounds.items()) if bounds else ""


# ---------------------------------------------------------------- every variable, and lookup
#: Every variable read outside ``Settings`` (whose fields are ``KIP2CYPHER_<FIELD>``), with its reader.
OTHER_VARIABLES = {
    "NEO4J_URI": "the Neo4j to connect to (connect(), every CLI command)",
    "NEO4J_USERNAME": "its user",
    "NEO4J_USER": "its user (older spelling)",
    "NEO4J_PASSWORD": "its password",
    "NEO4J_DATABASE": "its database",
    "KIP2CYPHER_EMBEDDER": "the process-wide embedder (kip2cypher.embedding)",
    "KIP2CYPHER_READONLY": "kip2cypher mcp / shell --readonly",
    "KIP2CYPHER_DEBUG": "CLI: show tracebacks of internal errors",
    "KIP2CYPHER_LOG_LEVEL": "kip2cypher mcp and the CLI: level of the kip2cypher loggers (logs.configure; docs/interfaces.md, Logs)",
    "KIP2CYPHER_LOG_FORMAT": "kip2cypher mcp and the CLI: log lines as text or json (logs.configure)",
    "KIP2CYPHER_HISTORY": "kip2cypher shell --history",
    "KIP2CYPHER_MCP_TRANSPORT": "kip2cypher mcp --transport",
    "KIP2CYPHER_MCP_HOST": "kip2cypher mcp --host",
    "KIP2CYPHER_MCP_PORT": "kip2cypher mcp --port",
    "KIP2CYPHER_MCP_PATH": "kip2cypher mcp --path",
    "KIP2CYPHER_MCP_TOKENS": "kip2cypher mcp: static bearer tokens",
    "KIP2CYPHER_MCP_TOKENS_FILE": "kip2cypher mcp --tokens-file",
    "KIP2CYPHER_MCP_ALLOWED_HOSTS": "kip2cypher mcp --allowed-hosts",
    "KIP2CYPHER_MCP_ALLOWED_ORIGINS": "kip2cypher mcp --allowed-origins",
    "KIP2CYPHER_MCP_MAX_REQUEST_BYTES": "kip2cypher mcp --max-request-bytes",
    "KIP2CYPHER_MCP_REQUEST_TIMEOUT_S": "kip2cypher mcp --request-timeout",
    "KIP2CYPHER_MCP_JWT_JWKS": "kip2cypher mcp --jwks",
    "KIP2CYPHER_MCP_JWT_ISSUER": "kip2cypher mcp --jwt-issuer",
    "KIP2CYPHER_MCP_JWT_AUDIENCE": "kip2cypher mcp --jwt-audience",
    "KIP2CYPHER_MCP_JWT_NAMESPACE_CLAIM": "kip2cypher mcp --jwt-namespace-claim",
    "KIP2CYPHER_MCP_RESOURCE_URL": "kip2cypher mcp --resource-url",
    "KIP2CYPHER_MCP_METRICS_TOKEN": "kip2cypher mcp: the bearer token GET /metrics needs (unset: /metrics is off)",
    "KIP2CYPHER_NEO4J_PORT": "the local Neo4j launcher: Bolt port",
    "KIP2CYPHER_NEO4J_HOME": "the local Neo4j launcher: data directory",
    "KIP2CYPHER_NEO4J_HEAP": "the local Neo4j launcher: heap",
    "KIP2CYPHER_NEO4J_PAGECACHE_MB": "the local Neo4j launcher: page cache",
    "KIP2CYPHER_NEO4J_TX_TIMEOUT_S": "the local Neo4j launcher: db.transaction.timeout",
    "KIP2CYPHER_PROFILE": "kip2cypher bootstrap / mcp --bootstrap: the official KIP capsule set (rc10, rc11)",
    "KIP2CYPHER_NEO4J_VERSION": "the local Neo4j launcher: the Neo4j release (default: pom.xml's 5.26.x)",
    "KIP2CYPHER_NEO4J_JAVA": "the local Neo4j launcher: the java executable to run it with",
    "KIP2CYPHER_DEMO_PORT": "kip2cypher demo: its own server's port",
    "KIP2CYPHER_DEMO_HOME": "kip2cypher demo: its own server's data directory",
    "KIP2CYPHER_REQUIRE_NEO4J": "test suite: fail instead of skipping without Neo4j",
    "KIP2CYPHER_REGEN_GOLDEN": "test suite: rewrite the golden files",
    "KIP2CYPHER_SOAK_S": "test suite: soak duration",
    "KIP2CYPHER_MCP_SOAK_S": "test suite: HTTP MCP soak duration",
    "KIP2CYPHER_MCP_SOAK_SESSIONS": "test suite: HTTP MCP soak sessions",
}
#: Families of variables read by the test suite and the benchmarks (``KIP2CYPHER_TEST_ALLOW_WIPE``…).
OTHER_PREFIXES = ("KIP2CYPHER_TEST_", "KIP2CYPHER_BENCH_")


def known_variables() -> list[str]:
    """Every variable name kip2cypher reads (the ``Settings`` fields', then the others)."""
    return [ENV_PREFIX + name.upper() for name in Settings.model_fields] + list(OTHER_VARIABLES)


def is_known(name: str, known: list[str] | None = None) -> bool:
    return name in (known or known_variables()) or name.startswith(OTHER_PREFIXES)


def toml_key(name: str) -> str:
    """The ``kip2cypher.toml`` key of a variable: ``KIP2CYPHER_MCP_PORT`` → ``mcp_port``, ``NEO4J_URI`` → ``neo4j_uri``."""
    return name.removeprefix(ENV_PREFIX).lower()


def lookup(name: str) -> str | None:
    """The value of the variable ``name`` (a registered one): the environment, else ``.env``,
    else ``kip2cypher.toml`` (key ``toml_key(name)``; numbers and booleans as text), else None.
    Empty values count as unset, as for ``Settings``."""
    assert name in known_variables(), f"{name} is not registered in config.OTHER_VARIABLES"
    for value in (os.environ.get(name), _dotenv().get(name), _toml().get(toml_key(name))):
        if value is not None and value != "":
            return str(value).lower() if isinstance(value, bool) else str(value)
    return None


def check_sources() -> None:
    """Refuse a ``KIP2CYPHER_*`` name that nothing reads — in the environment, in ``.env``, or a
    key of ``kip2cypher.toml`` — naming the nearest known one (a typo is otherwise ignored in
    silence). Other names in the environment and in ``.env`` are not kip2cypher's business."""
    known = known_variables()
    for where, names in (("environment variable", list(os.environ)), (f"{ENV_FILE} entry", list(_dotenv()))):
        for name in names:
            if name.startswith(ENV_PREFIX) and not is_known(name, known):
                raise SettingsError(f"Unknown {where} {name}{_nearest(name, known)}: kip2cypher reads no such variable.")
    keys = {toml_key(name) for name in known}
    for key in _toml():
        if key not in keys:
            raise SettingsError(f"Unknown key {key!r} in {TOML_FILE}{_nearest(key, sorted(keys))}: kip2cypher reads no such setting.")


def _nearest(name: str, candidates: list[str]) -> str:
    """' (did you mean X?)' for the closest candidate (difflib), or nothing when none is close."""
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _dotenv() -> dict[str, Any]:
    """The entries of ``.env`` in the working directory (python-dotenv, as pydantic-settings reads it)."""
    if not os.path.isfile(ENV_FILE):
        return {}
    from dotenv import dotenv_values

    return dict(dotenv_values(ENV_FILE))


def _toml() -> dict[str, Any]:
    """The top-level keys of ``kip2cypher.toml`` in the working directory."""
    if not os.path.isfile(TOML_FILE):
        return {}
    try:
        with open(TOML_FILE, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{TOML_FILE} is not valid TOML: {exc}.") from None

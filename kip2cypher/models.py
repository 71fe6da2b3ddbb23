"""Pydantic models of the §6.1 request — the one definition of the function-call arguments.

``ExecuteArguments`` validates what an agent sends to ``execute_kip`` /
``execute_kip_readonly``; ``tool_input_schema()`` derives the JSON Schema the MCP
tools publish from the same model, so the two can never drift apart. A malformed
request becomes a KIP_1001 error object, never a ``ValidationError``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import errors
from .errors import KipError

#: Spec §6: at most this many commands in one batch (KIP_4002 beyond). ``Settings.max_batch`` may lower it.
MAX_BATCH = 256

REQUEST_HINT = (
    'Send {"command": "<KIP>"} or {"commands": ["<KIP>", {"command": "<KIP>", "parameters": {...}}]} '
    '(exactly one of the two), with an optional "parameters" object and an optional "dry_run" boolean.'
)


class CommandItem(BaseModel):
    """A batch element given as an object: its own parameters override the shared ones."""

    model_config = ConfigDict(extra="forbid")
    command: str = Field(description="A complete KIP command text.")
    parameters: dict[str, Any] | None = Field(
        default=None, description="Placeholder values for this command only; they override the shared `parameters` key by key."
    )


class ExecuteArguments(BaseModel):
    """The arguments of execute_kip / execute_kip_readonly (spec §6.1)."""

    model_config = ConfigDict(extra="forbid")
    command: str | None = Field(default=None, description="A complete KIP command text. Mutually exclusive with `commands`.")
    commands: list[str | CommandItem] | None = Field(
        default=None,
        description=(
            "An array of KIP commands for batch execution. Mutually exclusive with `command`. Each element is a string "
            "(uses the shared `parameters`) or an object {command, parameters} whose parameters override the shared ones. "
            "Commands run in order; a KML (UPSERT/UPDATE/MERGE/DELETE) execution error stops the batch, while KQL/META "
            "errors and syntax errors are returned inline and the batch goes on."
        ),
        json_schema_extra={"maxItems": MAX_BATCH},
    )
    parameters: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Key-value object for placeholder substitution. A placeholder such as :name occupies a whole KIP value "
            "position (name: :name, LIMIT :limit, SEARCH CONCEPT :term) and is never written inside a quoted string."
        ),
    )
    dry_run: bool | None = Field(
        default=False, description="If true, only validate the command(s) — syntax and the live schema — and report what would run, without executing."
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ExecuteArguments:
        if (self.command is None) == (self.commands is None):
            raise ValueError("exactly one of `command` or `commands` must be provided")
        return self


class BatchItem(BaseModel):
    """A normalized batch element: command text plus its own parameters (if any)."""

    text: str
    parameters: dict[str, Any] | None = None

    def text_and_parameters(self, shared: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        return self.text, {**(shared or {}), **(self.parameters or {})}


class ExecuteRequest(BaseModel):
    """A validated request: either ``command`` or ``commands`` is set, never both."""

    command: str | None = None
    commands: list[BatchItem] | None = None
    parameters: dict[str, Any] | None = None
    dry_run: bool = False

    @property
    def is_batch(self) -> bool:
        return self.commands is not None

    def items(self) -> list[BatchItem]:
        """Every command of the request, in order (one for a single-command request)."""
        if self.commands is None:
            return [BatchItem(text=self.command or "")]
        return list(self.commands)

    @classmethod
    def from_arguments(
        cls,
        *,
        command: Any = None,
        commands: Any = None,
        parameters: Any = None,
        dry_run: Any = False,
        max_batch: int = MAX_BATCH,
    ) -> ExecuteRequest:
        """Validate keyword arguments (``None`` = absent) — the Python API's entry point."""
        return cls.parse({"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, max_batch=max_batch)

    @classmethod
    def parse(cls, arguments: Any, *, max_batch: int = MAX_BATCH) -> ExecuteRequest:
        """Validate a raw function-call arguments object (JSON-decoded). Raises ``KipError`` only.

        ``null`` values count as absent: agents often send every key, the unused ones as null.
        """
        if not isinstance(arguments, dict):
            raise KipError(errors.INVALID_SYNTAX, f"The request arguments must be a JSON object, got {_json_type(arguments)}.", REQUEST_HINT)
        present = {k: v for k, v in arguments.items() if v is not None}
        batch = present.get("commands")
        limit = min(max_batch, MAX_BATCH)
        if isinstance(batch, list) and len(batch) > limit:
            raise KipError(
                errors.RESOURCE_EXHAUSTED,
                f"The batch has {len(batch)} commands; at most {limit} are allowed in one request.",
                "Split the batch into several requests.",
            )
        try:
            args = ExecuteArguments.model_validate(present)
        except ValidationError as exc:
            raise KipError(errors.INVALID_SYNTAX, f"Malformed request: {_problems(exc)}", REQUEST_HINT) from None
        items = None
        if args.commands is not None:
            if not args.commands:
                raise KipError(errors.INVALID_SYNTAX, "`commands` is an empty array.", "Provide at least one command, or use `command`.")
            items = [BatchItem(text=c) if isinstance(c, str) else BatchItem(text=c.command, parameters=c.parameters) for c in args.commands]
        return cls(command=args.command, commands=items, parameters=args.parameters, dry_run=bool(args.dry_run))


def loads(text: str, what: str = "The request") -> Any:
    """JSON text an agent sent (a request, tool arguments) → its value, or KIP_1001 saying why
    not: invalid JSON, an integer of more than 4,300 digits, nesting deeper than Python's
    decoder recurses (a RecursionError was an internal error)."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise KipError(errors.INVALID_SYNTAX, f"{what} is not JSON: {exc}", 'Send {"command": "<KIP>"}.') from None
    except RecursionError:
        raise KipError(
            errors.INVALID_SYNTAX, f"{what} nests arrays/objects too deeply to be read.", "Flatten the values (parameters nest at most 64 levels)."
        ) from None


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return type(value).__name__


def _problems(exc: ValidationError) -> str:
    """Pydantic's errors in one line an agent can act on."""
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith(("str", "CommandItem")))
        message = err["msg"].removeprefix("Value error, ").replace("a valid dictionary or instance of CommandItem", "an object {command, parameters}")
        if err["type"] == "extra_forbidden":
            message = "unknown key (allowed: command, commands, parameters, dry_run; a commands item allows command, parameters)"
        out.append(f"{loc}: {message}" if loc else message)
    # A union mismatch reports once per alternative; keep each distinct message once.
    return "; ".join(dict.fromkeys(out))


# ------------------------------------------------------------------ responses (§6.2)
class ErrorObject(BaseModel):
    """A KIP error object (Appendix 4), plus the position of a syntax error and a debug field for engine bugs."""

    model_config = ConfigDict(extra="forbid")
    code: str = Field(pattern=r"^KIP_[1-4]\d{3}$", description="KIP error code, e.g. KIP_2001.")
    message: str = Field(description="What went wrong.")
    hint: str = Field(description="How to fix the command (recovery hint for the agent).")
    line: int | None = Field(default=None, ge=1, description="1-based line of a syntax error.")
    column: int | None = Field(default=None, ge=1, description="1-based column of a syntax error.")
    debug: dict[str, Any] | None = Field(default=None, description="Engine diagnostics (e.g. the generated Cypher) for bug reports.")


class ExecuteResponse(BaseModel):
    """A §6.2 response: a single command's {result | error, next_cursor?}, or a batch's {result: [...]}.

    ``result`` and ``error`` are mutually exclusive; a batch's items are single-command responses.
    """

    model_config = ConfigDict(extra="forbid")
    result: Any = Field(default=None, description="The command's result (shape per command, §6.2.2), or for a batch the array of per-command responses.")
    error: ErrorObject | None = Field(default=None, description="Present when the command (or the whole request) failed.")
    next_cursor: str | None = Field(default=None, description='More results are available: repeat the command with CURSOR "<token>".')
    warnings: list[str] | None = Field(
        default=None,
        description=(
            "Not part of the spec (additive): things the command names that look mistaken although it ran, e.g. an attribute no element of that type carries."
        ),
    )

    @model_validator(mode="after")
    def _result_xor_error(self) -> ExecuteResponse:
        if self.error is not None and "result" in self.model_fields_set:
            raise ValueError("a response carries either result or error, never both")
        if self.error is None and "result" not in self.model_fields_set:
            raise ValueError("a response carries result or error")
        return self


def check_response(response: dict[str, Any], *, batch: bool = False) -> None:
    """Assert that ``response`` has the §6.2 shape (ValueError otherwise); used by tests."""
    ExecuteResponse.model_validate(response)
    if batch and "result" in response:
        if not isinstance(response["result"], list):
            raise ValueError("a batch response's result is an array")
        for item in response["result"]:
            ExecuteResponse.model_validate(item)


def tool_output_schema() -> dict[str, Any]:
    """The JSON Schema of a tool's structured result, generated from ``ExecuteResponse``."""
    raw = ExecuteResponse.model_json_schema()
    defs = raw.pop("$defs", {})
    return _clean(raw, defs)


# ------------------------------------------------------------------ tool schema
def tool_input_schema() -> dict[str, Any]:
    """The JSON Schema of the tools' arguments, generated from ``ExecuteArguments``.

    Cleaned for LLM tool definitions: ``$ref``s inlined, ``anyOf [T, null]`` collapsed
    to ``T`` (absent and null are equivalent), titles dropped. "Exactly one of
    command / commands" is stated in the descriptions and enforced on every call
    (KIP_1001), not with a top-level ``oneOf``: several LLM APIs refuse combinators
    at the root of a tool's input schema.
    """
    raw = ExecuteArguments.model_json_schema()
    defs = raw.pop("$defs", {})
    schema = _clean(raw, defs)
    schema["description"] = "Arguments of execute_kip / execute_kip_readonly (KIP v1.0-RC10 §6.1). Provide exactly one of `command` or `commands`."
    return schema


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_clean(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = copy.deepcopy(defs[node["$ref"].split("/")[-1]])
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return _clean({**target, **extra}, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "default" and value is None:
            continue
        out[key] = _clean(value, defs) if key not in ("properties",) else {k: _clean(v, defs) for k, v in value.items()}
    options = out.get("anyOf")
    if isinstance(options, list):
        non_null = [o for o in options if o != {"type": "null"}]
        if len(non_null) < len(options):
            if len(non_null) == 1:
                out.pop("anyOf")
                merged = {**non_null[0], **out}
                out = merged
            else:
                out["anyOf"] = non_null
    if out.get("type") == "object" and out.get("additionalProperties") is True:
        out.pop("additionalProperties")
    return out

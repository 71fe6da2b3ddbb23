"""Pydantic models of the §6.1 request; a malformed request becomes KIP_1001, never a ValidationError."""
from __future__ import annotations

from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import errors
from .errors import KipError


class CommandItem(BaseModel):
    """One element of ``commands`` given as an object: its own parameters override the shared ones."""

    model_config = ConfigDict(extra="forbid")
    command: str = Field(description="A complete KIP command text.")
    parameters: Optional[dict[str, Any]] = Field(default=None, description="Parameters for this command; they override the shared parameters key by key.")


class BatchItem(BaseModel):
    """A normalized batch element."""

    text: str
    parameters: Optional[dict[str, Any]] = None

    def text_and_parameters(self, shared: Optional[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        return self.text, {**(shared or {}), **(self.parameters or {})}


class ExecuteArguments(BaseModel):
    """The arguments of execute_kip / execute_kip_readonly (spec §6.1). The MCP tool schema is generated from this model."""

    model_config = ConfigDict(extra="forbid")
    command: Optional[str] = Field(default=None, description="A complete KIP command text. Mutually exclusive with `commands`.")
    commands: Optional[list[Union[str, CommandItem]]] = Field(
        default=None,
        description=(
            "An array of KIP commands for batch execution. Mutually exclusive with `command`. Each element is a string "
            "(uses shared parameters) or an object {command, parameters} whose parameters override the shared ones. "
            "Commands run in order; a KML execution error stops the batch, KQL/META and syntax errors are returned inline."
        ),
    )
    parameters: Optional[dict[str, Any]] = Field(
        default=None,
        description="Key-value object for placeholder substitution: `:name` placeholders occupy a whole KIP value position (name: :name, LIMIT :limit) and are never substituted inside quoted strings.",
    )
    dry_run: Optional[bool] = Field(default=False, description="If true, only validate the command(s) against syntax and the live schema without executing.")

    @model_validator(mode="after")
    def _exactly_one(self) -> "ExecuteArguments":
        if (self.command is None) == (self.commands is None):
            raise ValueError("exactly one of `command` or `commands` must be provided")
        return self


class ExecuteRequest(BaseModel):
    command: Optional[str] = None
    commands: Optional[list[BatchItem]] = None
    parameters: Optional[dict[str, Any]] = None
    dry_run: bool = False

    @classmethod
    def from_arguments(cls, *, command: Any = None, commands: Any = None, parameters: Any = None, dry_run: Any = False, max_batch: int = 256) -> "ExecuteRequest":
        raw: dict[str, Any] = {"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}
        try:
            args = ExecuteArguments.model_validate({k: v for k, v in raw.items() if v is not None})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'request'}: {e['msg']}" for e in exc.errors())
            raise KipError(
                errors.INVALID_SYNTAX,
                f"Malformed execute_kip request: {problems}",
                'Send {"command": "<KIP>"} or {"commands": ["<KIP>", {"command": "<KIP>", "parameters": {...}}]} with an optional "parameters" object and "dry_run" boolean.',
            ) from None
        items = None
        if args.commands is not None:
            if len(args.commands) > max_batch:
                raise KipError(errors.RESOURCE_EXHAUSTED, f"The batch has {len(args.commands)} commands; at most {max_batch} are allowed.", "Split the batch into several requests.")
            if not args.commands:
                raise KipError(errors.INVALID_SYNTAX, "`commands` is empty.", "Provide at least one command, or use `command`.")
            items = [BatchItem(text=c) if isinstance(c, str) else BatchItem(text=c.command, parameters=c.parameters) for c in args.commands]
        return cls(command=args.command, commands=items, parameters=args.parameters, dry_run=bool(args.dry_run))


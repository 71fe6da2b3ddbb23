"""KIP memory as tools of an agent framework: plain functions, plus OpenAI-style tool specs.

Agent frameworks register a plain Python function as a tool from its ``__name__``, its
docstring and its type hints (LangChain ``@tool``, the OpenAI Agents SDK ``function_tool``,
pydantic-ai, smolagents, LlamaIndex ``FunctionTool.from_defaults``); others take a JSON tool
spec and hand back the model's tool call as a name and a JSON arguments string. Both shapes
are here, on one ``Nexus``::

    nexus = kip2cypher.connect()
    agent = SomeFramework(tools=kip2cypher.tools.memory_tools(nexus))   # functions

    specs = kip2cypher.tools.tool_specs()                               # chat-completions style
    answer = kip2cypher.tools.dispatch(nexus, call.name, call.arguments)

The descriptions are the MCP server's (they teach the model KIP in a few lines); every answer
is the §6 response as JSON text — what the model should read — and never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Union

from .errors import KipError
from .mcp_server import DESCRIPTIONS, EXECUTE_KIP, EXECUTE_KIP_READONLY, unknown_tool
from .models import loads, tool_input_schema

if TYPE_CHECKING:
    from .nexus import Nexus

Command = Union[str, dict[str, Any]]


def memory_tools(nexus: Nexus, *, readonly: bool = False) -> list[Callable[..., str]]:
    """``[execute_kip, execute_kip_readonly]`` bound to ``nexus`` (only the second with ``readonly``)."""

    def execute_kip(command: str | None = None, commands: list[Command] | None = None, parameters: dict[str, Any] | None = None, dry_run: bool = False) -> str:
        return _answer(nexus, {"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, readonly=False)

    def execute_kip_readonly(
        command: str | None = None, commands: list[Command] | None = None, parameters: dict[str, Any] | None = None, dry_run: bool = False
    ) -> str:
        return _answer(nexus, {"command": command, "commands": commands, "parameters": parameters, "dry_run": dry_run}, readonly=True)

    execute_kip.__doc__ = DESCRIPTIONS[EXECUTE_KIP]
    execute_kip_readonly.__doc__ = DESCRIPTIONS[EXECUTE_KIP_READONLY]
    return [execute_kip_readonly] if readonly else [execute_kip, execute_kip_readonly]


def tool_specs(*, readonly: bool = False) -> list[dict[str, Any]]:
    """The tools as chat-completions function specs (``{"type": "function", "function": {…}}``)."""
    names = [EXECUTE_KIP_READONLY] if readonly else [EXECUTE_KIP, EXECUTE_KIP_READONLY]
    return [{"type": "function", "function": {"name": name, "description": DESCRIPTIONS[name], "parameters": tool_input_schema()}} for name in names]


def dispatch(nexus: Nexus, name: str, arguments: str | dict[str, Any] | None, *, readonly: bool = False) -> str:
    """Answer one tool call as the model sent it (``arguments`` may be the raw JSON string)."""
    if name not in (EXECUTE_KIP, EXECUTE_KIP_READONLY) or (readonly and name == EXECUTE_KIP):
        return _json(unknown_tool(name, readonly))
    if isinstance(arguments, str):
        try:
            arguments = loads(arguments, "The tool arguments") if arguments.strip() else {}
        except KipError as exc:
            return _json({"error": exc.to_dict()})
    return _answer(nexus, arguments if arguments is not None else {}, readonly=name == EXECUTE_KIP_READONLY)


def _answer(nexus: Nexus, arguments: Any, *, readonly: bool) -> str:
    return _json(nexus.execute(arguments, readonly=readonly))


def _json(response: Mapping[str, object]) -> str:
    return json.dumps(response, ensure_ascii=False, default=str)

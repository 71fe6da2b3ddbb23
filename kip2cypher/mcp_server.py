"""`kip2cypher mcp`: a stdio MCP server exposing execute_kip and execute_kip_readonly (spec §6).

Built on the official ``mcp`` SDK's low-level ``Server``. Both tools take the §6.1
arguments; their input schema is generated from ``models.ExecuteArguments``. A
call answers with the §6 response JSON as text content and as structured
content; ``isError`` is set when the whole request failed (a top-level
``error``). The blocking Neo4j work runs in a worker thread, so one slow query
never stalls the protocol loop.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Callable, Optional

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from .version import __version__
from .models import tool_input_schema, tool_output_schema

log = logging.getLogger("kip2cypher.mcp")

EXECUTE_KIP = "execute_kip"
EXECUTE_KIP_READONLY = "execute_kip_readonly"

_PROTOCOL = (
    "KIP is a graph language for your long-term memory (a Cognitive Nexus of concept nodes {type, name} and "
    "proposition links (subject, \"predicate\", object)). Ground yourself first: DESCRIBE PRIMER, DESCRIBE CONCEPT TYPES, "
    "DESCRIBE CONCEPT TYPE \"Drug\", SEARCH CONCEPT \"aspirin\" LIMIT 5. Query with "
    "FIND(?d.name) WHERE { ?d {type: \"Drug\"} (?d, \"treats\", {type: \"Symptom\", name: :s}) } LIMIT 20 — "
    "type names are UpperCamelCase, predicates snake_case, both case-sensitive. "
    "Pass values as :placeholders in `parameters` (whole value positions only, never inside quotes). "
    "Send one `command` or a `commands` array (≤256) to save round trips. "
    "Errors come back as {code, message, hint}: follow the hint and retry. "
    "Results with next_cursor continue with CURSOR \"<token>\"."
)

DESCRIPTIONS = {
    EXECUTE_KIP: (
        "Execute KIP commands against the Cognitive Nexus with read-write capability: KQL FIND, KML UPSERT / UPDATE / "
        "MERGE / DELETE (to solidify new, confirmed knowledge), META DESCRIBE / SEARCH / EXPORT. "
        + _PROTOCOL
        + " In a batch, a failing KML command stops the rest; read and syntax errors are returned inline. "
        "Use dry_run: true to validate writes against the live schema without writing."
    ),
    EXECUTE_KIP_READONLY: (
        "Execute read-only KIP commands — KQL FIND and META DESCRIBE / SEARCH / EXPORT — against the Cognitive Nexus. "
        "Prefer this tool whenever you only need to retrieve knowledge; any UPSERT/UPDATE/MERGE/DELETE is rejected "
        "(KIP_3004) before anything runs. "
        + _PROTOCOL
    ),
}

INSTRUCTIONS = (
    "This server is a KIP (Knowledge Interaction Protocol v1.0-RC10) Cognitive Nexus backed by Neo4j. "
    "Start a session with execute_kip_readonly {\"command\": \"DESCRIBE PRIMER\"} to learn who you are and which "
    "knowledge domains exist; explore with DESCRIBE/SEARCH, read with FIND, and write confirmed new knowledge with "
    "execute_kip UPSERT."
)


def tools(readonly: bool = False) -> list[types.Tool]:
    """The tool definitions; ``readonly`` exposes only execute_kip_readonly."""
    schema = tool_input_schema()
    output = tool_output_schema()
    out = [
        types.Tool(
            name=EXECUTE_KIP_READONLY,
            title="Execute KIP (read-only)",
            description=DESCRIPTIONS[EXECUTE_KIP_READONLY],
            input_schema=schema,
            output_schema=output,
            annotations=types.ToolAnnotations(title="Execute KIP (read-only)", read_only_hint=True, open_world_hint=False, idempotent_hint=True),
        )
    ]
    if not readonly:
        out.insert(
            0,
            types.Tool(
                name=EXECUTE_KIP,
                title="Execute KIP",
                description=DESCRIPTIONS[EXECUTE_KIP],
                input_schema=schema,
                output_schema=output,
                annotations=types.ToolAnnotations(title="Execute KIP", read_only_hint=False, destructive_hint=True, open_world_hint=False, idempotent_hint=False),
            ),
        )
    return out


def build_server(nexus: Any, *, readonly: bool = False) -> Server:
    """An MCP server answering tool calls with ``nexus`` (anything with ``execute(arguments, readonly=)``)."""
    listed = tools(readonly)
    names = {tool.name for tool in listed}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            response = _unknown_tool(params.name, readonly)
        else:
            arguments = params.arguments if params.arguments is not None else {}
            response = await anyio.to_thread.run_sync(_call, nexus, arguments, params.name == EXECUTE_KIP_READONLY)
        return to_call_result(response)

    return Server(
        "kip2cypher",
        version=__version__,
        title="KIP Cognitive Nexus on Neo4j",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=lambda name: tool_input_schema() if name in names else None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _call(nexus: Any, arguments: Any, readonly: bool) -> dict[str, Any]:
    try:
        return nexus.execute(arguments, readonly=readonly)
    except Exception as exc:  # noqa: BLE001 - the protocol loop must never see an exception
        from .errors import INTERNAL_ERROR, KipError

        log.exception("tool call failed")
        return {"error": KipError(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}").to_dict()}


def _unknown_tool(name: str, readonly: bool) -> dict[str, Any]:
    from .errors import INVALID_SYNTAX, KipError

    available = EXECUTE_KIP_READONLY if readonly else f"{EXECUTE_KIP}, {EXECUTE_KIP_READONLY}"
    return {"error": KipError(INVALID_SYNTAX, f"Unknown tool {name!r}.", f"Available tools: {available}.").to_dict()}


def to_call_result(response: dict[str, Any]) -> types.CallToolResult:
    """The §6 response as MCP tool output: JSON text plus the same object as structured content."""
    text = json.dumps(response, ensure_ascii=False, default=str)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=json.loads(text),
        is_error="error" in response,
    )


async def serve_stdio(nexus: Any, *, readonly: bool = False) -> None:
    """Serve one MCP client over stdin/stdout until it disconnects."""
    from mcp.server.stdio import stdio_server

    server = build_server(nexus, readonly=readonly)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run(nexus_factory: Callable[[], Any], *, readonly: bool = False, bootstrap: bool = False, capsules: bool = False) -> None:
    """Entry point of ``kip2cypher mcp``: open the Nexus, optionally bootstrap it, serve stdio."""
    nexus = nexus_factory()
    try:
        if bootstrap:
            _bootstrap_quietly(nexus, capsules)
        anyio.run(lambda: serve_stdio(nexus, readonly=readonly))
    finally:
        nexus.close()


def _bootstrap_quietly(nexus: Any, capsules: bool = False) -> Optional[str]:
    """Apply schema + Genesis (+ the standard capsules); a failure is logged to stderr and the server still starts."""
    try:
        nexus.bootstrap(capsules=capsules)
        return None
    except Exception as exc:  # noqa: BLE001
        log.warning("bootstrap failed: %s", exc)
        return str(exc)

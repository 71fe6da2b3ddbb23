"""What the CLI and the shell print, through rich: tables that measure wide characters, and summaries.

rich measures every cell in terminal columns (CJK and most emoji are two columns wide), so
tables stay aligned for the spec's Chinese examples. On a terminal tables are drawn with
box characters and wrap to its width; when the output is a pipe or a file they are
drawn in ASCII (``| a | b |``, ``+---+`` rules) at their natural width, with no colour.
"""

from __future__ import annotations

import json
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from .source import WriteCounts, find_headers, write_counts

#: Longest cell text in a table; longer values end in "…" (``:json on`` / ``--format json`` show them whole).
MAX_CELL = 120
#: Width used when stdout is not a terminal: wide enough that nothing is wrapped.
PIPE_WIDTH = 100_000


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr) that never reads markup or emoji codes out of KIP values."""
    console = Console(stderr=stderr, markup=False, emoji=False, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, markup=False, emoji=False, highlight=False, width=PIPE_WIDTH, no_color=True)
    return console


def cell(value: Any) -> str:
    """One table cell: concepts as ``Type:name``, propositions as ``(s, p, o)``, anything else as JSON."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict) and "predicate" in value:
        text = f"({value.get('subject')}, {value['predicate']}, {value.get('object')})"
    elif isinstance(value, dict) and "type" in value and "name" in value:
        text = f"{value['type']}:{value['name']}"
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "⏎")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def table(headers: list[str], rows: list[list[Any]], *, console: Console | None = None, count: bool = True) -> RenderableType:
    """A rich table (box characters on a terminal, ASCII otherwise) and, below it, the row count."""
    terminal = (console or make_console()).is_terminal
    grid = Table(box=box.ROUNDED if terminal else box.ASCII2, header_style="bold" if terminal else "")
    for header in headers:
        grid.add_column(Text(header), overflow="fold")
    for row in rows:
        grid.add_row(*(Text(cell(v)) for v in row))
    if not count:
        return grid
    return Group(grid, Text(f"({len(rows)} row{'s' if len(rows) != 1 else ''})"))


def render_response(command: str, response: dict[str, Any], *, console: Console | None = None) -> RenderableType:
    """A §6 response for people: the error, a table (FIND columns are table columns), a capsule or key/values."""
    if "error" in response:
        return error_text(response["error"])
    body = _render_result(command, response.get("result"), console)
    if response.get("next_cursor"):
        more = Text(f'next_cursor: {response["next_cursor"]}  (repeat the command with CURSOR "<token>" for more)')
        return Group(body, more)
    return body


def response_text(command: str, response: dict[str, Any]) -> str:
    """``render_response`` as a string (colours only when stdout is a terminal)."""
    console = make_console()
    with console.capture() as captured:
        console.print(render_response(command, response, console=console))
    return captured.get().rstrip("\n")


def error_text(err: dict[str, Any]) -> Text:
    """A KIP error object as the lines a person reads: code, position, message, hint, debug."""
    where = f" at line {err['line']}, column {err['column']}" if "line" in err and f"line {err['line']}" not in str(err.get("message")) else ""
    lines = [f"error {err.get('code')}{where}: {err.get('message')}"]
    if err.get("hint"):
        lines.append(f"  hint: {err['hint']}")
    if err.get("debug"):
        lines.append(f"  debug: {json.dumps(err['debug'], ensure_ascii=False, default=str)}")
    return Text("\n".join(lines), style="red")


def _render_result(command: str, result: Any, console: Console | None) -> RenderableType:
    headers = find_headers(command)
    if headers is not None:
        columns = [result] if len(headers) == 1 else list(result or [])
        if len(columns) == len(headers):
            return table(headers, _rows_of_columns(columns), console=console)
    if isinstance(result, dict) and "capsule" in result:
        rest = {k: v for k, v in result.items() if k != "capsule"}
        return Text(f"{result['capsule']}\n// {json.dumps(rest, ensure_ascii=False)}")
    if isinstance(result, dict):
        return table(["key", "value"], [[k, v] for k, v in result.items()], console=console, count=False)
    if isinstance(result, list):
        if result and all(isinstance(r, dict) for r in result):
            keys = list(dict.fromkeys(k for r in result for k in r))
            return table(keys, [[r.get(k) for k in keys] for r in result], console=console)
        return table(["value"], [[r] for r in result], console=console)
    return Text(cell(result))


def _rows_of_columns(columns: list[Any]) -> list[list[Any]]:
    """FIND's columnar result (§6.2.2) as rows; a scalar aggregate fills the first row only."""
    height = max((len(c) for c in columns if isinstance(c, list)), default=1)
    return [[(c[i] if i < len(c) else "") if isinstance(c, list) else (c if i == 0 else "") for c in columns] for i in range(height)]


# ---------------------------------------------------------------------- summaries
def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def writes_summary(counts: WriteCounts, *, dry_run: bool = False) -> str:
    """``upserted 10 concepts and 764 propositions (744 via SET PROPOSITIONS) in 13 UPSERT blocks``."""
    links = f" ({counts.links} via SET PROPOSITIONS)" if counts.links else ""
    verb = "validated (dry run, nothing written)" if dry_run else "upserted"
    return f"{verb} {plural(counts.concepts, 'concept')} and {plural(counts.propositions, 'proposition')}{links} in {plural(counts.upserts, 'UPSERT block')}"


def result_summary(command: str, result: Any, *, dry_run: bool = False) -> str:
    """One line about a successful command's result."""
    if isinstance(result, dict):
        if "upsert_concept_nodes" in result:
            return writes_summary(write_counts(command), dry_run=dry_run)
        if "capsule" in result:
            return f"exported {plural(result.get('concepts') or 0, 'concept')}, {plural(result.get('propositions') or 0, 'proposition')}"
        return ", ".join(f"{k}={v}" for k, v in result.items() if isinstance(v, (int, float, bool, str)))[:120] or "ok"
    headers = find_headers(command)
    if headers is not None:
        column = result if len(headers) == 1 else (result or [[]])[0]
        return plural(len(column) if isinstance(column, list) else 1, "row")
    if isinstance(result, list):
        return plural(len(result), "item")
    return json.dumps(result, ensure_ascii=False, default=str)[:120]

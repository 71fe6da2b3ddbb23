"""`kip2cypher shell`: an interactive KIP prompt for people.

A command ends at a blank line or at a line ending with ``;``. Lines starting
with ``:`` at the prompt are shell commands (``:help``). Results print as
tables (FIND columns become table columns); ``:cypher on`` also shows the Cypher
each command compiles to. History persists through readline when available.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Optional

import click

HELP = """\
End a KIP command with a blank line or a trailing ';'. Shell commands:
  :cypher on|off      show the Cypher each command compiles to
  :readonly on|off    refuse KML (execute_kip_readonly) / allow it (execute_kip)
  :dry on|off         dry_run: validate against the live schema, write nothing
  :json on|off        print raw §6 response JSON instead of tables
  :params {json}      set the shared parameters (:params alone shows them, :params clear drops them)
  :help               this text
  :quit               leave (Ctrl-D works too)"""

MAX_CELL = 60


class Shell:
    def __init__(
        self,
        nexus: Any,
        *,
        readonly: bool = False,
        show_cypher: bool = False,
        history_file: Optional[str] = None,
        echo: Callable[[str], None] = click.echo,
        interactive: Optional[bool] = None,
    ) -> None:
        self.nexus = nexus
        self.readonly = readonly
        self.show_cypher = show_cypher
        self.dry_run = False
        self.raw_json = False
        self.parameters: dict[str, Any] = {}
        self.echo = echo
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.history_file = history_file or os.path.join(os.path.expanduser("~"), ".kip2cypher_history")
        self._readline = None

    # ------------------------------------------------------------------ input
    def _setup_history(self) -> None:
        if not self.interactive:
            return
        try:
            import readline
        except ImportError:  # pragma: no cover - e.g. Windows without pyreadline
            return
        self._readline = readline
        try:
            readline.read_history_file(self.history_file)
        except OSError:
            pass
        readline.set_history_length(2000)

    def _save_history(self) -> None:
        if self._readline is not None:
            try:
                self._readline.write_history_file(self.history_file)
            except OSError:
                pass

    def _read_line(self, prompt: str) -> Optional[str]:
        try:
            if self.interactive:
                return input(prompt)
            line = sys.stdin.readline()
            return None if line == "" else line.rstrip("\n")
        except EOFError:
            return None
        except KeyboardInterrupt:
            self.echo("")
            return ""

    def read_command(self) -> Optional[str]:
        """The next complete input: a KIP command (possibly multi-line) or a ':' line; None at EOF."""
        lines: list[str] = []
        while True:
            line = self._read_line("kip> " if not lines else "...> ")
            if line is None:
                return "\n".join(lines) if lines else None
            stripped = line.strip()
            if not lines and stripped.startswith(":"):
                return stripped
            if not stripped:
                if lines:
                    return "\n".join(lines)
                continue
            if stripped.endswith(";"):
                lines.append(line.rstrip()[:-1])
                return "\n".join(lines)
            lines.append(line)

    # ------------------------------------------------------------------ loop
    def loop(self) -> None:
        self._setup_history()
        if self.interactive:
            self.echo(f"kip2cypher shell on {self.nexus.uri} — end commands with a blank line or ';', :help for help.")
        try:
            while True:
                text = self.read_command()
                if text is None:
                    break
                if text.startswith(":"):
                    if not self.colon(text):
                        break
                    continue
                if text.strip():
                    self.run(text)
        finally:
            self._save_history()

    def colon(self, line: str) -> bool:
        """Handle a ':' command; False means quit."""
        name, _, arg = line[1:].partition(" ")
        name, arg = name.lower(), arg.strip()
        switches = {"cypher": "show_cypher", "readonly": "readonly", "dry": "dry_run", "json": "raw_json"}
        if name in ("q", "quit", "exit"):
            return False
        if name == "help":
            self.echo(HELP)
        elif name in switches:
            if arg.lower() in ("on", "off"):
                setattr(self, switches[name], arg.lower() == "on")
            self.echo(f"{name} {'on' if getattr(self, switches[name]) else 'off'}")
        elif name == "params":
            if arg == "clear":
                self.parameters = {}
            elif arg:
                try:
                    value = json.loads(arg)
                    if not isinstance(value, dict):
                        raise ValueError("not an object")
                    self.parameters = value
                except ValueError as exc:
                    self.echo(f"params must be a JSON object: {exc}")
                    return True
            self.echo(f"params {json.dumps(self.parameters, ensure_ascii=False)}")
        else:
            self.echo(f"unknown shell command :{name} — :help lists them")
        return True

    def run(self, text: str) -> None:
        from .errors import KipError
        from .syntax.script import split_script

        try:
            commands = [c for c, _ in split_script(text)]
        except KipError:
            commands = [text]  # let the executor report the error for the text as typed
        for command in commands:
            if self.show_cypher:
                self._print_cypher(command)
            outcome = self.nexus.execute_command(command, self.parameters, dry_run=self.dry_run, readonly=self.readonly)
            if self.raw_json:
                self.echo(json.dumps(outcome.response, ensure_ascii=False, indent=2, default=str))
            else:
                self.echo(render_response(command, outcome.response))
            if outcome.stops_batch:
                break

    def _print_cypher(self, command: str) -> None:
        from .lower.compile import compile_command
        from .errors import KipError

        try:
            statements = compile_command(command, self.parameters)
        except KipError:
            return  # the execution below reports the error
        for statement in statements:
            self.echo(click.style(f"-- Cypher{': ' + statement['label'] if statement.get('label') else ''}", fg="cyan"))
            self.echo(click.style(statement["cypher"], fg="cyan"))
            self.echo(click.style(f"-- parameters {json.dumps(statement['parameters'], ensure_ascii=False, default=str)}", fg="cyan"))


# ---------------------------------------------------------------------- rendering
def render_response(command: str, response: dict[str, Any]) -> str:
    """A §6 response as text for people: error block, table, capsule or key/value list."""
    if "error" in response:
        err = response["error"]
        where = f" at line {err['line']}, column {err['column']}" if "line" in err and f"line {err['line']}" not in str(err.get("message")) else ""
        out = [f"error {err.get('code')}{where}: {err.get('message')}"]
        if err.get("hint"):
            out.append(f"  hint: {err['hint']}")
        if err.get("debug"):
            out.append(f"  debug: {json.dumps(err['debug'], ensure_ascii=False, default=str)}")
        return "\n".join(out)
    result = response.get("result")
    text = _render_result(command, result)
    if response.get("next_cursor"):
        text += f"\nnext_cursor: {response['next_cursor']}  (repeat the command with CURSOR \"<token>\" for more)"
    return text


def _render_result(command: str, result: Any) -> str:
    headers = _find_headers(command)
    if headers is not None:
        columns = [result] if len(headers) == 1 else list(result or [])
        if len(columns) == len(headers):
            return table(headers, _rows_of_columns(columns))
    if isinstance(result, dict) and "capsule" in result:
        rest = {k: v for k, v in result.items() if k != "capsule"}
        return f"{result['capsule']}\n// {json.dumps(rest, ensure_ascii=False)}"
    if isinstance(result, dict):
        return table(["key", "value"], [[k, v] for k, v in result.items()])
    if isinstance(result, list):
        if result and all(isinstance(r, dict) for r in result):
            keys = list(dict.fromkeys(k for r in result for k in r))
            return table(keys, [[r.get(k) for k in keys] for r in result])
        return table(["value"], [[r] for r in result])
    return _cell(result)


def _find_headers(command: str) -> Optional[list[str]]:
    """The FIND projections as written, or None when the command is not a FIND."""
    from .syntax import ast
    from .syntax.parser import parse

    try:
        node = parse(command)
    except Exception:  # noqa: BLE001
        return None
    if not isinstance(node, ast.Find):
        return None
    return [command[p.span.start : p.span.end] or f"col{i + 1}" for i, p in enumerate(node.projections)]


def _rows_of_columns(columns: list[Any]) -> list[list[Any]]:
    height = max((len(c) for c in columns if isinstance(c, list)), default=1)
    rows = []
    for i in range(height):
        rows.append([(c[i] if i < len(c) else "") if isinstance(c, list) else (c if i == 0 else "") for c in columns])
    return rows


def _cell(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict) and "type" in value and "name" in value and "predicate" not in value:
        text = f"{value['type']}:{value['name']}"
    elif isinstance(value, dict) and "predicate" in value:
        text = f"({value.get('subject')}, {value['predicate']}, {value.get('object')})"
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "⏎")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A plain-text table with a header rule and a row count."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda values: " | ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    out = [line(headers), "-+-".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)

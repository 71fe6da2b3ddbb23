"""`kip2cypher shell`: an interactive KIP prompt for people, on prompt_toolkit.

A command ends at a blank line or at a line ending with ``;`` (Alt-Enter runs the
buffer as it is). Lines starting with ``:`` are shell commands (``:help``). Ctrl-C
discards the command being typed and returns to an empty prompt, like psql and
cypher-shell; during execution it abandons the command. Ctrl-D on an empty prompt leaves.

A multi-line command is one history entry; history persists in ``shell_history`` under
the user data directory (platformdirs: ``~/.local/share/kip2cypher`` on Linux) unless
``--history`` / ``KIP2CYPHER_HISTORY`` names another file. Tab completes KIP keywords,
``:`` commands, ``?variables`` of the buffer, and — inside a string — the concept types
and predicates of the connected nexus (``DESCRIBE CONCEPT TYPES`` / ``DESCRIBE
PROPOSITION TYPES``, re-read after every KML command that succeeded). Input is
highlighted by the project's pygments lexer (``lexer.KipLexer``).

When stdin is not a terminal the same rules read lines from it, without prompts
(``kip2cypher shell < session.kip``).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from .jsonout import dump
from .lexer import CONSTANTS, FUNCTIONS, KEYWORDS
from .output import make_console, render_response

HELP = """\
End a KIP command with a blank line or a trailing ';' (Alt-Enter runs it as it is).
Ctrl-C discards the command being typed; Ctrl-D leaves. Tab completes.
  :cypher on|off      show the Cypher each command compiles to
  :readonly on|off    refuse KML (execute_kip_readonly) / allow it (execute_kip)
  :dry on|off         dry_run: validate against the live schema, write nothing
  :json on|off        print raw §6 response JSON instead of tables
  :params {json}      set the shared parameters (:params alone shows them, :params clear drops them)
  :help               this text
  :quit               leave (Ctrl-D works too)"""

#: ``:name`` → the Shell attribute it toggles.
SWITCHES = {"cypher": "show_cypher", "readonly": "readonly", "dry": "dry_run", "json": "raw_json"}
COLON_COMMANDS = (*SWITCHES, "params", "help", "quit")
#: Names fetched per DESCRIBE page, and the most pages read for completion.
PAGE, MAX_PAGES = 200, 10


def default_history_file() -> Path:
    """``shell_history`` in the user data directory (created on first use)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("kip2cypher", appauthor=False)) / "shell_history"


# ---------------------------------------------------------------------- input rules
def is_finished(text: str) -> bool:
    """Whether typed text is ready to run: empty, a ``:`` command, ending in ``;``, or ending in a blank line."""
    stripped = text.strip()
    if not stripped or stripped.startswith(":") or stripped.endswith(";"):
        return True
    return "\n" in text and not text.rsplit("\n", 1)[1].strip()


def command_of(text: str) -> str:
    """The command in finished text: without surrounding blank lines and the final ``;``."""
    stripped = text.strip()
    return stripped[:-1].rstrip() if stripped.endswith(";") else stripped


def piped_commands(lines: Iterable[str]) -> Iterable[str]:
    """The commands of line-oriented input (stdin not a terminal), by the same rules as the prompt."""
    pending: list[str] = []
    for line in lines:
        pending.append(line.rstrip("\n"))
        text = "\n".join(pending)
        if is_finished(text):
            pending = []
            if text.strip():
                yield command_of(text)
    if "".join(pending).strip():
        yield command_of("\n".join(pending))


# ---------------------------------------------------------------------- completion
@dataclass
class Names:
    """The connected nexus's concept types and predicates, for completion."""

    types: list[str] = field(default_factory=list)
    predicates: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, nexus: Any) -> Names:
        return cls(_describe_all(nexus, "CONCEPT"), _describe_all(nexus, "PROPOSITION"))


class LiveNames:
    """``Names`` of the nexus, re-read in the background so the prompt never waits for them;
    reading ``types`` / ``predicates`` waits (at most ``WAIT_S``) for a refresh in flight."""

    WAIT_S = 10.0

    def __init__(self, nexus: Any) -> None:
        self._nexus = nexus
        self._names = Names()
        self._thread: threading.Thread | None = None

    def refresh(self) -> None:
        def fetch() -> None:
            self._names = Names.of(self._nexus)

        self._thread = threading.Thread(target=fetch, name="kip2cypher-shell-names", daemon=True)
        self._thread.start()

    def _current(self) -> Names:
        if self._thread is not None:
            self._thread.join(self.WAIT_S)
        return self._names

    @property
    def types(self) -> list[str]:
        return self._current().types

    @property
    def predicates(self) -> list[str]:
        return self._current().predicates


def _describe_all(nexus: Any, meta: str) -> list[str]:
    """``DESCRIBE <meta> TYPES``, page after page (through the public read-only interface)."""
    names: list[str] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        command = f"DESCRIBE {meta} TYPES LIMIT {PAGE}" + (f" CURSOR {json.dumps(cursor)}" if cursor else "")
        response = nexus.execute_kip_readonly(command)
        if "error" in response:  # e.g. no Genesis yet: completion simply offers no names
            break
        names += [n for n in response.get("result") or [] if isinstance(n, str)]
        cursor = response.get("next_cursor")
        if not cursor:
            break
    return names


_OPEN_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)$')
_TYPE_CONTEXT = re.compile(r"(?:\btype\s*:|\bCONCEPT\s+TYPE|\bWITH\s+TYPE)\s*$")
_PREDICATE_CONTEXT = re.compile(r"(?:[,(|]|\bPROPOSITION\s+TYPE)\s*$")
_WORD = re.compile(r"[?:]?\w*$")


def _make_completer(shell: Shell):
    from prompt_toolkit.completion import Completer, Completion

    class KipCompleter(Completer):
        """Keywords, ``:`` commands and their on/off, ``?variables``, and concept types / predicates inside strings."""

        def get_completions(self, document, complete_event):
            before = document.text_before_cursor
            for text, start in _candidates(before, document.text, shell.names):
                yield Completion(text, start_position=start)

    return KipCompleter()


def _candidates(before: str, whole: str, names: Names | LiveNames) -> list[tuple[str, int]]:
    """``(completion, start offset)`` pairs for the text before the cursor."""
    stripped = before.lstrip()
    if stripped.startswith(":"):
        name, space, arg = stripped[1:].partition(" ")
        if not space:
            return [(f":{c}", -len(stripped)) for c in COLON_COMMANDS if c.startswith(name.lower())]
        return [(v, -len(arg)) for v in ("on", "off") if name in SWITCHES and v.startswith(arg.lower())]
    quoted = _in_string(before)
    if quoted is not None:
        prefix, context = quoted
        pool = names.types if _TYPE_CONTEXT.search(context) else names.predicates if _PREDICATE_CONTEXT.search(context) else names.types + names.predicates
        return [(f'{n}"', -len(prefix)) for n in dict.fromkeys(pool) if n.lower().startswith(prefix.lower())]
    word = _WORD.search(before).group()
    if word.startswith("?"):
        seen = dict.fromkeys(re.findall(r"\?\w+", whole))
        return [(v, -len(word)) for v in seen if v.startswith(word) and v != word]
    if not word or word.startswith(":"):
        return []
    return [(k, -len(word)) for k in (*KEYWORDS, *FUNCTIONS, *CONSTANTS) if k.lower().startswith(word.lower()) and k != word]


def _in_string(before: str) -> tuple[str, str] | None:
    """When the cursor is inside a string literal: (its text so far, the text before its quote)."""
    line = before.rsplit("\n", 1)[-1]
    strings_closed = re.sub(r'"(?:[^"\\\n]|\\.)*"', "", line)
    if strings_closed.count('"') % 2 == 0:
        return None
    match = _OPEN_STRING.search(before)
    return (match.group(1), before[: match.start()]) if match else None


# ---------------------------------------------------------------------- the shell
class Shell:
    def __init__(
        self,
        nexus: Any,
        *,
        readonly: bool = False,
        show_cypher: bool = False,
        history_file: str | None = None,
        console: Console | None = None,
        interactive: bool | None = None,
    ) -> None:
        self.nexus = nexus
        self.readonly = readonly
        self.show_cypher = show_cypher
        self.dry_run = False
        self.raw_json = False
        self.parameters: dict[str, Any] = {}
        self.console = console or make_console()
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.history_file = Path(history_file) if history_file else default_history_file()
        self.names = LiveNames(nexus)

    # ------------------------------------------------------------------ loops
    def loop(self) -> None:
        if not self.interactive:
            for command in piped_commands(sys.stdin):
                if not self.handle(command):
                    return
            return
        self.console.print(f"kip2cypher shell on {self.nexus.uri} — end commands with a blank line or ';', :help for help.")
        self.names.refresh()
        session = self._session()
        while True:
            try:
                text = session.prompt("kip> ")
            except KeyboardInterrupt:
                continue  # Ctrl-C: the buffer is discarded, nothing runs
            except EOFError:
                return
            if text.strip() and not self.handle(command_of(text)):
                return

    def _session(self):
        """The prompt_toolkit session: multi-line buffer, file history, lexer, completer, key bindings."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.lexers import PygmentsLexer

        from .lexer import KipLexer

        self.history_file.parent.mkdir(parents=True, exist_ok=True)
        return PromptSession(
            multiline=True,
            history=FileHistory(str(self.history_file)),
            lexer=PygmentsLexer(KipLexer),
            completer=_make_completer(self),
            complete_while_typing=False,
            prompt_continuation=lambda width, line_number, wrap_count: "...> ".rjust(width),
            key_bindings=_key_bindings(),
        )

    # ------------------------------------------------------------------ one input
    def handle(self, text: str) -> bool:
        """Run a ``:`` command or KIP text; False means quit."""
        if text.startswith(":"):
            return self.colon(text)
        try:
            self.run(text)
        except KeyboardInterrupt:
            self.console.print(Text("interrupted: the command was abandoned (a write that had not committed was rolled back)", style="yellow"))
        return True

    def colon(self, line: str) -> bool:
        """Handle a ':' command; False means quit."""
        name, _, arg = line[1:].partition(" ")
        name, arg = name.lower(), arg.strip()
        if name in ("q", "quit", "exit"):
            return False
        if name == "help":
            self.console.print(HELP)
        elif name in SWITCHES:
            if arg.lower() in ("on", "off"):
                setattr(self, SWITCHES[name], arg.lower() == "on")
            self.console.print(f"{name} {'on' if getattr(self, SWITCHES[name]) else 'off'}")
        elif name == "params":
            self._set_params(arg)
        else:
            self.console.print(f"unknown shell command :{name} — :help lists them")
        return True

    def _set_params(self, arg: str) -> None:
        if arg == "clear":
            self.parameters = {}
        elif arg:
            try:
                value = json.loads(arg)
            except ValueError as exc:
                self.console.print(f"params must be a JSON object: {exc}")
                return
            if not isinstance(value, dict):
                self.console.print("params must be a JSON object")
                return
            self.parameters = value
        self.console.print(f"params {json.dumps(self.parameters, ensure_ascii=False)}")

    def run(self, text: str) -> None:
        """Execute the command(s) typed, printing each response; names are re-read after a KML write."""
        from .. import KipError
        from .source import split_script

        try:
            commands = [c for c, _ in split_script(text)]
        except KipError:
            commands = [text]  # let the executor report the error for the text as typed
        for command in commands:
            if self.show_cypher:
                self._print_cypher(command)
            outcome = self.nexus.execute_command(command, self.parameters, dry_run=self.dry_run, readonly=self.readonly)
            if self.raw_json:
                self.console.print(dump(outcome.response), soft_wrap=True)
            else:
                self.console.print(render_response(command, outcome.response, console=self.console))
            if outcome.kind == "KML" and "error" not in outcome.response and not self.dry_run and self.interactive:
                self.names.refresh()
            if outcome.stops_batch:
                break

    def _print_cypher(self, command: str) -> None:
        from .. import KipError
        from .. import compile as compile_command

        try:
            statements = compile_command(command, self.parameters)
        except KipError:
            return  # the execution below reports the error
        for statement in statements:
            label = f": {statement['label']}" if statement.get("label") else ""
            params = json.dumps(statement["parameters"], ensure_ascii=False, default=str)
            self.console.print(Text(f"-- Cypher{label}\n{statement['cypher']}\n-- parameters {params}", style="cyan"), soft_wrap=True)


def _key_bindings():
    """Enter runs a finished command and otherwise starts a new line; Alt-Enter always runs."""
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event) -> None:
        buffer = event.current_buffer
        if buffer.complete_state and buffer.complete_state.current_completion:
            buffer.apply_completion(buffer.complete_state.current_completion)
        elif is_finished(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    @bindings.add("escape", "enter")
    def _run_now(event) -> None:
        event.current_buffer.validate_and_handle()

    return bindings

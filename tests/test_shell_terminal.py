"""The shell and ``run`` in a real terminal: tmux runs them, sends keys, and reads the rendered screen.

Each test starts its own tmux server (private socket) whose pane runs ``python -m
kip2cypher.cli …`` against the session's Neo4j; ``Terminal.wait_for`` polls the screen
until the expected text is there (bounded, generous for a slow machine) — no fixed sleeps
are asserted on. tmux is a system package (``apt-get install tmux``); without it these
tests skip, except under KIP2CYPHER_REQUIRE_NEO4J=1 (CI), where they fail.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kip2cypher.cli.demo import DEMO_DATA, DEMO_SCHEMA

ROOT = Path(__file__).resolve().parent.parent
WAIT_S = 90  # per expected screen: first start imports the CLI and connects, on a loaded machine

if shutil.which("tmux") is None:
    if os.environ.get("KIP2CYPHER_REQUIRE_NEO4J") == "1":
        raise RuntimeError("tmux is required for the terminal tests (apt-get install -y tmux)")
    pytest.skip("tmux is not installed (apt-get install -y tmux)", allow_module_level=True)


class Terminal:
    """One program in a 200×50 tmux pane on a private tmux server."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.socket = f"kip2cypher-test-{uuid.uuid4().hex[:10]}"
        command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), sys.executable, "-m", "kip2cypher.cli", *args])
        # The pane stays open after the program ends, so its last screen can still be read.
        self._tmux("new-session", "-d", "-x", "200", "-y", "50", "-c", str(ROOT), f"{command}; echo '[exit '$?']'; sleep 600")
        self._tmux("set-option", "-g", "history-limit", "20000")

    def _tmux(self, *args: str) -> str:
        proc = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, f"tmux {args}: {proc.stderr}"
        return proc.stdout

    def type(self, text: str) -> None:
        """Type text literally (no key names); a final ';' is escaped, tmux would take it for a command separator."""
        self._tmux("send-keys", "-l", "--", text[:-1] + "\\;" if text.endswith(";") else text)

    def press(self, *keys: str) -> None:
        """Press named keys: Enter, Tab, C-c, Up, M-Enter …"""
        self._tmux("send-keys", *keys)

    def screen(self) -> str:
        """Everything the pane shows and scrolled past, wrapped lines joined."""
        return self._tmux("capture-pane", "-p", "-J", "-S", "-")

    def wait_for(self, pattern: str, *, after: int = 0, count: int = 1) -> str:
        """Wait until ``pattern`` (a regex) occurs ``count`` times in the screen past offset ``after``; return the screen."""
        deadline = time.monotonic() + WAIT_S
        while True:
            screen = self.screen()
            if len(re.findall(pattern, screen[after:])) >= count:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} did not appear within {WAIT_S}s; the screen:\n{screen}")
            time.sleep(0.2)

    def cancel(self) -> None:
        """Ctrl-C, then wait for the fresh prompt (keys typed before it would reach the tty in cooked mode)."""
        prompts = self.prompt_count()
        self.press("C-c")
        self._wait_prompts(prompts + 1)

    def prompt_count(self) -> int:
        return len(re.findall(r"^kip>", self.screen(), re.M))  # capture-pane drops trailing blanks

    def run(self, *lines: str) -> str:
        """Type a command's lines (Enter after each) and wait for the next empty prompt."""
        prompts = self.prompt_count()
        for line in lines:
            self.type(line)
            self.press("Enter")
        return self._wait_prompts(prompts + 1)

    def _wait_prompts(self, n: int) -> str:
        deadline = time.monotonic() + WAIT_S
        while self.prompt_count() < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"no new prompt within {WAIT_S}s; the screen:\n{self.screen()}")
            time.sleep(0.2)
        return self.screen()

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def _env(server, tmp_path: Path) -> dict[str, str]:
    env = {"NEO4J_URI": server.uri, "KIP2CYPHER_HISTORY": str(tmp_path / "history"), "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "50"}
    if server.database:
        env["NEO4J_DATABASE"] = server.database
    if server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = server.auth
    return env


@pytest.fixture()
def medical(genesis):
    for capsule in (DEMO_SCHEMA, DEMO_DATA):
        assert "result" in genesis.execute_kip(capsule)
    return genesis


@pytest.fixture()
def shell(neo4j_server, medical, tmp_path) -> Iterator[Terminal]:
    terminal = Terminal(["shell"], _env(neo4j_server, tmp_path))
    try:
        terminal._wait_prompts(1)
        yield terminal
    finally:
        terminal.close()


def _drug_names(nexus) -> set[str]:
    return {r["n"] for r in nexus.driver.execute_query("MATCH (d:KipConcept {type: 'Drug'}) RETURN d.name AS n").records}


# ---------------------------------------------------------------- Ctrl-C
def test_ctrl_c_inside_a_multiline_command_discards_it_instead_of_executing_it(shell, medical):
    """Regression: Ctrl-C on a continuation line ended the command, and the UPSERT typed so far was written."""
    shell.type('UPSERT { CONCEPT ?x { {type: "Drug", name: "Ibuprofen"} } }')
    shell.press("Enter")
    shell.wait_for(r"\.\.\.>")
    shell.cancel()
    screen = shell.run('FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name;')
    assert "Paracetamol" in screen and "(2 rows)" in screen
    assert "upsert_concept_nodes" not in screen and "Ibuprofen" not in screen.split("FIND(?d.name)")[-1]
    assert _drug_names(medical) == {"Aspirin", "Paracetamol"}


# ---------------------------------------------------------------- multi-line input and history
def test_a_multiline_command_runs_at_the_blank_line_and_is_one_history_entry(shell, tmp_path):
    screen = shell.run("FIND(?d.name, ?d.attributes.risk_level)", 'WHERE { ?d {type: "Drug"} }', "ORDER BY ?d.name", "")
    assert screen.count("...>") >= 3 and "│ Aspirin" in screen and "(2 rows)" in screen
    prompts = shell.prompt_count()
    shell.press("Up")  # the whole command comes back, and Enter re-runs it (it still ends in a blank line)
    shell.wait_for(r"ORDER BY \?d\.name", count=2)
    shell.press("Enter")
    screen = shell._wait_prompts(prompts + 1)
    assert screen.count("(2 rows)") == 2
    from prompt_toolkit.history import FileHistory

    entries = list(FileHistory(str(tmp_path / "history")).load_history_strings())
    # one entry for the three lines; the re-run of the same text is not stored twice
    assert entries == ['FIND(?d.name, ?d.attributes.risk_level)\nWHERE { ?d {type: "Drug"} }\nORDER BY ?d.name\n']


def test_wide_characters_align_in_the_terminal(shell):
    shell.run('UPSERT { CONCEPT ?x { {type: "Drug", name: "阿司匹林 💊"} SET ATTRIBUTES { risk_level: 3 } } };')
    screen = shell.run('FIND(?d.name, ?d.attributes.risk_level) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name;')
    table = screen[screen.rindex("FIND(?d.name") :]
    rows = [line for line in table.splitlines() if line.startswith(("│", "╭", "├", "╰"))]
    from rich.cells import cell_len

    assert any("阿司匹林 💊" in row for row in rows)
    assert len({cell_len(row.rstrip()) for row in rows}) == 1, "\n".join(rows)


# ---------------------------------------------------------------- completion
def test_tab_completes_keywords_colon_commands_and_live_names(shell):
    shell.type("DESCR")
    shell.press("Tab")
    shell.wait_for(r"kip> DESCRIBE")
    shell.cancel()
    shell.type(":rea")
    shell.press("Tab")
    shell.wait_for(r"kip> :readonly")
    shell.cancel()
    shell.type('FIND(?d.name) WHERE { (?d, "has_s')
    shell.press("Tab")
    shell.wait_for(r'\(\?d, "has_side_effect"')
    shell.type(', ?s) ?s {type: "Sym')
    shell.press("Tab")
    shell.wait_for(r'\{type: "Symptom"')
    screen = shell.run(" } };")
    assert "│ Aspirin" in screen.split('{type: "Symptom"')[-1]  # the completed command ran
    # a type created in the shell is offered right after the write
    shell.run('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Zebrafish"} SET ATTRIBUTES { description: "A fish." } } };')
    shell.type('FIND(?z) WHERE { ?z {type: "Zeb')
    shell.press("Tab")
    shell.wait_for(r'\{type: "Zebrafish"')


# ---------------------------------------------------------------- :readonly, :json, :cypher
def test_colon_switches_readonly_json_and_cypher(shell, medical):
    shell.run(":readonly on")
    screen = shell.run('UPSERT { CONCEPT ?x { {type: "Drug", name: "Naproxen"} } };')
    assert "error KIP_3004" in screen
    assert "Naproxen" not in _drug_names(medical)
    shell.run(":readonly off")
    shell.run(":json on")
    screen = shell.run("DESCRIBE PROPOSITION TYPES;")
    assert re.search(r'"result": \[\s*"belongs_to_class"', screen)
    shell.run(":json off")
    shell.run(":cypher on")
    screen = shell.run('FIND(?d.name) WHERE { ?d {type: "Drug"} };')
    assert "-- Cypher: FIND" in screen and "MATCH (d:`kip:Drug`)" in screen and "│ Paracetamol" in screen


# ---------------------------------------------------------------- run: the live bar on a terminal
def test_run_on_a_terminal_shows_a_live_bar_below_the_command_lines(neo4j_server, genesis, tmp_path):
    capsule = "\n".join(f'UPSERT {{ CONCEPT ?t{i} {{ {{type: "$ConceptType", name: "T{i}"}} }} }}' for i in range(13))
    path = tmp_path / "thirteen.kip"
    path.write_text(capsule + "\nDESCRIBE CONCEPT TYPES\n")
    terminal = Terminal(["run", str(path)], _env(neo4j_server, tmp_path))
    try:
        screen = terminal.wait_for(r"\[exit \d+\]")
    finally:
        terminal.close()
    assert "[exit 0]" in screen
    bar = re.search(r"^.*100%.*2/2 commands.*13/13 UPSERT blocks.*$", screen, re.M)
    assert bar, screen
    first, second = screen.index("[1] line 1: UPSERT"), screen.index("[2] line 14: DESCRIBE CONCEPT TYPES")
    assert first < second < bar.start(), screen  # command lines print above the bar, not through it
    assert "upserted 13 concepts and 0 propositions in 13 UPSERT blocks" in screen

"""CLI pieces that need no Neo4j: argument resolution, lazy imports, the KIP lexer, tables, shell input rules, completion."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from pygments.token import Comment, Error, Keyword, Name, String
from rich.cells import cell_len
from rich.console import Console

from kip2cypher.cli import main
from kip2cypher.cli.lexer import CONSTANTS, FUNCTIONS, KEYWORDS, KipLexer
from kip2cypher.cli.output import make_console, table, writes_summary
from kip2cypher.cli.shell import Names, _candidates, command_of, is_finished, piped_commands
from kip2cypher.cli.source import WriteCounts, write_counts

ROOT = Path(__file__).resolve().parent.parent
FIND_DRUG = 'FIND(?d.name) WHERE { ?d {type: "Drug"} }'


def cli(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


# ---------------------------------------------------------------- SOURCE: argument, file or stdin
def test_compile_parse_take_the_command_as_an_argument_a_file_or_stdin(tmp_path):
    by_argument = cli("compile", FIND_DRUG, "--format", "json")
    path = tmp_path / "q.kip"
    path.write_text(FIND_DRUG)
    by_file = cli("compile", str(path), "--format", "json")
    by_stdin = cli("compile", "-", "--format", "json", input=FIND_DRUG)
    assert by_argument.exit_code == by_file.exit_code == by_stdin.exit_code == 0, by_argument.output
    assert json.loads(by_argument.stdout) == json.loads(by_file.stdout) == json.loads(by_stdin.stdout)
    assert json.loads(cli("parse", FIND_DRUG).stdout)["node"] == "Find"


def test_an_argument_that_is_neither_a_file_nor_kip_is_reported_as_a_missing_file():
    out = cli("compile", "drugs.kip")
    assert out.exit_code == 2 and "neither an existing file nor a KIP command" in out.output
    out = cli("call", "request.json")
    assert out.exit_code == 2 and "neither an existing file nor a KIP command" in out.output
    out = cli("parse", "FIND(?d.name WHERE { ?d {type: 1} }")  # KIP with a syntax error: the KIP error
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_1001"


def _neo4j_modules_after(command: str) -> str:
    """The neo4j modules loaded by running ``kip2cypher <command> FIND…`` in a fresh interpreter."""
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from kip2cypher.cli import main\n"
        "out = CliRunner().invoke(main, [sys.argv[1], sys.argv[2]])\n"
        "assert out.exit_code == 0, out.output\n"
        "print(sorted(m for m in sys.modules if m == 'neo4j' or m.startswith('neo4j.')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe, command, FIND_DRUG], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_parse_never_imports_the_neo4j_driver():
    """``parse`` does not connect, so it must not pay the driver import (~0.3–1 s)."""
    assert _neo4j_modules_after("parse") == "[]"


def test_compile_never_imports_the_neo4j_driver():
    """``compile`` without --explain does not connect either: no driver import (the group's error
    handler recognises driver exceptions through sys.modules instead of importing them)."""
    assert _neo4j_modules_after("compile") == "[]"


# ---------------------------------------------------------------- the KIP lexer
def test_lexer_keywords_are_the_grammars_keyword_tokens():
    grammar = (ROOT / "grammar" / "kip.peg").read_text()
    words = set()
    for name, body in re.findall(r"^([A-Z_]+)\s*=\s*~r\"(.*?)\"", grammar, re.M):
        if name in {"NAME", "INTEGER", "CONSTANT"}:
            continue
        body = body.replace("(?!\\w)", "").strip("()").removeprefix("?:")
        words.update(w for w in body.split("|") if w.isidentifier())
    words.discard("id")
    assert words == set(KEYWORDS) | set(FUNCTIONS), words ^ (set(KEYWORDS) | set(FUNCTIONS))
    assert set(CONSTANTS) == set(re.search(r'CONSTANT\s*=\s*~r"\(\?:(.*?)\)', grammar).group(1).split("|"))


def test_lexer_tokens_of_a_command():
    text = 'FIND(?d.name, COUNT(?x)) WHERE { ?d {type: "Drug", name: :n} FILTER(?d.attributes.risk < 3 && true) } // note'
    tokens = [(t, v) for t, v in KipLexer().get_tokens(text) if v.strip()]
    assert (Keyword, "FIND") in tokens and (Keyword, "WHERE") in tokens and (Keyword, "FILTER") in tokens
    assert (Name.Builtin, "COUNT") in tokens and (Keyword.Constant, "true") in tokens
    assert (Name.Variable, "?d") in tokens and (Name.Attribute, ".name") in tokens
    assert (Name.Attribute, "type") in tokens and (String.Double, '"Drug"') in tokens
    assert (Name.Constant, ":n") in tokens
    assert (Comment.Single, "// note") in tokens
    assert not any(t is Error for t, _ in KipLexer().get_tokens(text))


def test_the_lexer_is_declared_as_a_pygments_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pygments.lexers"]["kip"] == "kip2cypher.cli.lexer:KipLexer"
    for dependency in ("rich", "prompt_toolkit", "pygments", "platformdirs"):
        assert any(d.startswith(dependency) for d in project["project"]["dependencies"])


# ---------------------------------------------------------------- tables
def test_tables_align_wide_characters():
    """CJK and emoji are two terminal columns wide; every row of the table must end in the same column."""
    for terminal in (False, True):
        console = Console(force_terminal=terminal, width=120, markup=False, color_system=None)
        rendered = table(["名称", "risk"], [["阿司匹林", 2], ["Paracetamol", 1], ["💊 pill", "高"]], console=console)
        with console.capture() as captured:
            console.print(rendered)
        lines = [line for line in captured.get().splitlines() if line.strip() and not line.startswith("(")]
        assert len({cell_len(line) for line in lines}) == 1, "\n".join(lines)
        assert "阿司匹林" in captured.get() and "(3 rows)" in captured.get()


def test_write_counts_include_set_propositions_links():
    capsule = """
    UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("treats", ?s) ("treats", {type: "Symptom", name: "Fever"}) } }
             CONCEPT ?s { {type: "Symptom", name: "Headache"} } }
    UPSERT { PROPOSITION ?p { (?x, "treats", ?y) } CONCEPT ?b { {type: "Drug", name: "B"} SET PROPOSITIONS { ("treats", ?s) } } }
    """
    counts = write_counts(capsule)
    assert counts == WriteCounts(upserts=2, concepts=3, proposition_blocks=1, links=3)
    assert writes_summary(counts) == "upserted 3 concepts and 4 propositions (3 via SET PROPOSITIONS) in 2 UPSERT blocks"
    assert write_counts(FIND_DRUG) == WriteCounts()


# ---------------------------------------------------------------- shell input rules
@pytest.mark.parametrize(
    "text, finished",
    [
        ("", True),
        (":json on", True),
        ("FIND(?d.name)", False),
        ('FIND(?d.name)\nWHERE { ?d {type: "Drug"} }', False),
        ('FIND(?d.name)\nWHERE { ?d {type: "Drug"} }\n', True),
        ('FIND(?d.name) WHERE { ?d {type: "Drug"} };', True),
        ('FIND(?d.name) WHERE { ?d {name: "a;"} }', False),
    ],
)
def test_a_command_ends_at_a_blank_line_or_a_semicolon(text, finished):
    assert is_finished(text) is finished


def test_piped_input_is_cut_into_commands_by_the_same_rules():
    lines = ["FIND(?d.name)\n", 'WHERE { ?d {type: "Drug"} }\n', "\n", ":json on\n", "DESCRIBE PRIMER;\n", "DESCRIBE DOMAINS\n"]
    assert list(piped_commands(lines)) == ['FIND(?d.name)\nWHERE { ?d {type: "Drug"} }', ":json on", "DESCRIBE PRIMER", "DESCRIBE DOMAINS"]
    assert command_of("  UPSERT { } ;  ") == "UPSERT { }"


# ---------------------------------------------------------------- completion candidates
NAMES = Names(types=["Drug", "DrugClass", "Symptom", "$ConceptType"], predicates=["treats", "has_side_effect"])


def _completions(before: str, whole: str | None = None) -> list[str]:
    return [text for text, _ in _candidates(before, whole or before, NAMES)]


def test_completion_offers_keywords_colon_commands_and_switch_values():
    assert _completions("DESCR") == ["DESCRIBE"]
    assert "FIND" in _completions("fi")
    assert _completions(":rea") == [":readonly"]
    assert _completions(":json o") == ["on", "off"]
    assert _completions(":params ") == []


def test_completion_offers_live_types_and_predicates_inside_strings():
    assert _completions('FIND(?d) WHERE { ?d {type: "Dr') == ['Drug"', 'DrugClass"']
    assert _completions('DESCRIBE CONCEPT TYPE "Sy') == ['Symptom"']
    assert _completions('FIND(?d) WHERE { (?d, "tr') == ['treats"']
    assert _completions('FIND(?d) WHERE { ?d {name: "Aspirin"} ?e {name: "x') == []


def test_completion_offers_the_buffers_variables():
    whole = 'FIND(?drug.name) WHERE { ?drug {type: "Drug"} ?dose {type: "Dose"} }'
    assert _completions("FIND(?dr", whole) == ["?drug"]
    assert set(_completions("FIND(?d", whole)) == {"?drug", "?dose"}


def test_console_for_pipes_is_plain_and_wide():
    console = make_console()
    assert not console.is_terminal and console.width > 1000 and console.no_color


# ---------------------------------------------------------------- shell completion (click's built-in)
@pytest.mark.parametrize(
    "shell, marker",
    [("bash", "complete -o nosort -F _kip2cypher_completion kip2cypher"), ("zsh", "#compdef kip2cypher"), ("fish", "complete --no-files --command kip2cypher")],
)
def test_completion_scripts_for_bash_zsh_and_fish(shell, marker):
    out = CliRunner().invoke(main, [], env={"_KIP2CYPHER_COMPLETE": f"{shell}_source"}, prog_name="kip2cypher")
    assert out.exit_code == 0 and marker in out.output


def test_completion_answers_subcommands_and_options():
    def complete(words: str) -> str:
        env = {"_KIP2CYPHER_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        return CliRunner().invoke(main, [], env=env, prog_name="kip2cypher").output

    assert complete("kip2cypher com") == "plain,compile\n"
    assert "plain,--format" in complete("kip2cypher run --for")


# ---------------------------------------------------------------- output snapshots
SNAPSHOT = ROOT / "tests" / "snapshots" / "cli_output.txt"
SNAPSHOT_CASES = [
    (
        "find columns with CJK and emoji",
        'FIND(?d.name, ?d.attributes.risk_level) WHERE { ?d {type: "Drug"} }',
        {"result": [["Aspirin", "阿司匹林 💊", "Paracetamol"], [2, None, 1]]},
    ),
    (
        "find one column of nodes, paged",
        'FIND(?d) WHERE { ?d {type: "Drug"} } LIMIT 1',
        {"result": [{"type": "Drug", "name": "Aspirin", "attributes": {}}], "next_cursor": "k1.abc"},
    ),
    ("find a scalar aggregate", 'FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }', {"result": 2}),
    (
        "upsert result",
        'UPSERT { CONCEPT ?x { {type: "Drug", name: "X"} } }',
        {"result": {"blocks": 1, "upsert_concept_nodes": ["C:1"], "upsert_proposition_links": []}},
    ),
    ("describe types", "DESCRIBE CONCEPT TYPES", {"result": ["$ConceptType", "Drug", "症状"]}),
    (
        "search results",
        'SEARCH CONCEPT "asp"',
        {"result": [{"type": "Drug", "name": "Aspirin", "_score": 0.9}, {"subject": "C:1", "predicate": "treats", "object": "C:2"}]},
    ),
    ("markup-like values print as written", 'FIND(?d.attributes.aliases) WHERE { ?d {type: "Drug"} }', {"result": [["[bold]ASA[/bold]", ":pill:"]]}),
    (
        "an error",
        "FIND(?d.name WHERE",
        {"error": {"code": "KIP_1001", "message": "Expected ')' at line 1, column 14.", "hint": "Close the projection list.", "line": 1, "column": 14}},
    ),
]


def _snapshot_text() -> str:
    from kip2cypher.cli.output import render_response

    parts = []
    for name, command, response in SNAPSHOT_CASES:
        for mode, console in (
            ("pipe", make_console()),
            ("terminal", Console(force_terminal=True, width=100, color_system=None, markup=False, emoji=False, highlight=False)),
        ):
            with console.capture() as captured:
                console.print(render_response(command, response, console=console))
            parts.append(f"=== {name} ({mode})\n{captured.get()}")
    return "".join(parts)


def test_output_snapshots():
    """Tables, pages, scalars, errors as people see them, on a terminal and in a pipe
    (regenerate with KIP2CYPHER_REGEN_GOLDEN=1 and review the diff)."""
    text = _snapshot_text()
    if os.environ.get("KIP2CYPHER_REGEN_GOLDEN") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert text == SNAPSHOT.read_text(encoding="utf-8")


# ---------------------------------------------------------------- a reader that goes away
def test_compile_into_a_closed_pipe_stops_quietly_not_as_internal_error():
    """`kip2cypher compile … | head` reported "KIP_4003 Internal error: BrokenPipeError" when head
    exited first; a widowed pipe now ends the command like a Unix tool: status 141, nothing on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte is written
    try:
        done = subprocess.run([sys.executable, "-m", "kip2cypher.cli", "compile", FIND_DRUG], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")

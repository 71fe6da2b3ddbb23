"""One source of truth per command (``syntax.ast.COMMANDS``), checked against everything that
lists commands: the grammar, the AST, the lowering table, the lexer, and the texts that name
command words to agents (DESCRIBE PRIMER, the read-only refusal, the MCP tools). No Neo4j."""

from __future__ import annotations

import typing
from functools import partial

import parser_fixtures
import pytest
from parsimonious.expressions import Compound, OneOf

from kip2cypher import mcp_server, models
from kip2cypher.cli.lexer import KEYWORDS
from kip2cypher.config import Settings
from kip2cypher.errors import KipError
from kip2cypher.execution import neo4j_errors
from kip2cypher.execution.batch import command_program, readonly_error, request_program
from kip2cypher.execution.programs.describe import NEXUS_DESCRIPTION, capabilities
from kip2cypher.lower.compile import LOWERINGS, compile_plan
from kip2cypher.syntax import ast, parser
from kip2cypher.syntax.grammars import GRAMMAR, TOKENS


def _leading_tokens(expr) -> set[str]:
    """The keyword tokens a grammar rule can start with."""
    if expr.name in TOKENS:
        return {expr.name}
    if isinstance(expr, OneOf):
        return set().union(*(_leading_tokens(m) for m in expr.members))
    if isinstance(expr, Compound):
        return _leading_tokens(expr.members[0])
    raise AssertionError(f"rule {expr.name!r} does not start with a token")


def test_the_command_table_is_the_grammars_command_rule():
    """Each alternative of ``command`` starts with its family's word, in the table's order."""
    alternatives = GRAMMAR["command"].members
    assert [_leading_tokens(rule) for rule in alternatives] == [{family.word} for family in ast.COMMANDS]


def test_every_ast_command_class_belongs_to_exactly_one_family_and_has_a_lowering():
    nodes = [node for family in ast.COMMANDS for node in family.nodes]
    assert sorted(nodes, key=str) == sorted(typing.get_args(ast.Command), key=str)
    assert len(nodes) == len(set(nodes))
    assert set(LOWERINGS) == set(nodes)
    assert {family.kind for family in ast.COMMANDS} == {ast.KQL, ast.KML, ast.META}


def test_the_lexer_highlights_every_command_word():
    assert set(ast.command_words()) <= set(KEYWORDS)


def test_a_syntax_error_hint_knows_the_shape_of_every_command():
    assert list(parser._SHAPES) == list(ast.command_words())


def test_a_plan_has_the_kind_and_access_of_its_command():
    """``Plan.kind`` / ``Plan.access`` follow from the AST (no per-plan declaration to drift), for
    a fixture of every command class (those that lower without a schema or more parameters)."""
    entries = parser_fixtures.valid()
    params = parser_fixtures.example_params(entries)
    seen = set()
    for entry in entries:
        command = parser.parse(entry.text)
        try:
            plan = compile_plan(entry.text, params)
        except KipError:
            continue
        seen.add(type(command))
        assert plan.kind == ast.command_kind(command), entry.name
        assert plan.access == ("WRITE" if plan.kind == ast.KML else "READ"), entry.name
    assert seen == set(LOWERINGS)


def test_a_text_that_does_not_parse_is_classified_by_its_first_word():
    from kip2cypher.syntax.script import sniff_kind

    assert [sniff_kind(f"/* c */ {word} ((") for word in ast.command_words()] == [f.kind for f in ast.COMMANDS]
    assert sniff_kind("RETURN 1") is None


def _mentions(text: str, words: tuple[str, ...]) -> list[str]:
    return [word for word in words if word not in text]


def test_texts_that_list_commands_name_every_command():
    everything = ast.command_words()
    assert capabilities(Settings(), None, None)["commands"] == list(everything)
    for text in (NEXUS_DESCRIPTION, mcp_server.DESCRIPTIONS[mcp_server.EXECUTE_KIP], parser.EXPECTED["command"]):
        assert not _mentions(text, everything), text


def test_texts_of_the_read_only_rule_name_the_reads_and_the_writes():
    refusal = readonly_error("This is a KML command").message
    readonly_tool = mcp_server.DESCRIPTIONS[mcp_server.EXECUTE_KIP_READONLY]
    for text in (refusal, readonly_tool):
        assert not _mentions(text, ast.READ_WORDS + ast.WRITE_WORDS), text
    batch = models.ExecuteArguments.model_fields["commands"].description
    assert not _mentions(batch, ast.WRITE_WORDS), batch
    hints = (mcp_server._read_only_token_error().hint, neo4j_errors.from_neo4j(_read_only_database()).hint)
    for hint in hints:
        assert not _mentions(hint, ast.READ_WORDS), hint


def _read_only_database():
    from neo4j.exceptions import ClientError

    error = ClientError("the database is read only")
    error._neo4j_code = "Neo.ClientError.General.ForbiddenOnReadOnlyDatabase"  # what the driver sets from the server's answer
    return error


def _parses_during(monkeypatch, program) -> int:
    """How many times the grammar runs while ``program()`` answers (a syntax error is never cached)."""
    calls = []
    real = parser._parse
    monkeypatch.setattr(parser, "_parse", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    running, reply = program(), None
    with pytest.raises(StopIteration) as stop:
        while True:  # its CPU work only (``Offload``): nothing runs
            reply = running.send(reply).work()
    answer = stop.value.value
    assert "error" in (answer if isinstance(answer, dict) else answer.response)
    return len(calls)


@pytest.mark.parametrize("readonly", [False, True], ids=["execute_kip", "execute_kip_readonly"])
@pytest.mark.parametrize("text", ['FIND(?d.name WHERE { ?d {type: "Drug"} }', 'UPSERT { CONCEPT ?d { {type: "Drug"} }'])
def test_a_syntax_error_is_parsed_once_per_request(monkeypatch, text, readonly):
    settings = Settings()
    assert _parses_during(monkeypatch, partial(request_program, {"command": text}, readonly=readonly, settings=settings)) == 1
    # one command at a time: kip2cypher run, the shell
    assert _parses_during(monkeypatch, partial(command_program, text, {}, dry_run=False, readonly=readonly, settings=settings)) == 1

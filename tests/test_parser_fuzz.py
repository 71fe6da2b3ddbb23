"""Property tests: whatever the input, the parser answers with an AST or a KipError.

Inputs are the valid fixtures mutated by random edits (deletions, insertions of
KIP-significant fragments, duplications, truncations, case flips) plus raw
random text. Anything that still parses must survive the printer round trip.
"""

from __future__ import annotations

import parser_fixtures
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kip2cypher.errors import KipError
from kip2cypher.syntax.parser import parse, parse_script
from kip2cypher.syntax.printer import to_kip

SEEDS = [entry.text for entry in parser_fixtures.valid()]
FRAGMENTS = [
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "?",
    "?x",
    "?x.name",
    ":p",
    '"',
    '"s"',
    "\\",
    "\\u",
    "//",
    "/*",
    "*/",
    "\n",
    "!",
    "==",
    "&&",
    "||",
    "|",
    "{1,2}",
    "0",
    "-1",
    "1.5e3",
    "true",
    "null",
    "FIND",
    "WHERE",
    "FILTER",
    "NOT",
    "OPTIONAL",
    "UNION",
    "UPSERT",
    "CONCEPT",
    "PROPOSITION",
    "SET",
    "ATTRIBUTES",
    "PROPOSITIONS",
    "METADATA",
    "WITH",
    "LIMIT",
    "CURSOR",
    "ORDER BY",
    "DESC",
    "DETACH",
    "DELETE",
    "UPDATE",
    "ADD(",
    "COALESCE(",
    "IN(",
    "COUNT(DISTINCT ",
    "id",
    "\x00",
    "é",
    "😀",
]
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mutants(draw) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        cut = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "duplicate", "truncate", "swapcase", "random"]))
        if kind == "delete":
            text = text[:cut] + text[cut + draw(st.integers(1, 12)) :]
        elif kind == "insert":
            text = text[:cut] + draw(st.sampled_from(FRAGMENTS)) + text[cut:]
        elif kind == "duplicate":
            text = text[:cut] + text[cut : cut + draw(st.integers(1, 40))] + text[cut:]
        elif kind == "truncate":
            text = text[:cut]
        elif kind == "swapcase":
            text = text[:cut] + text[cut : cut + 8].swapcase() + text[cut + 8 :]
        else:
            text = text[:cut] + draw(st.text(max_size=6)) + text[cut:]
    return text


def _parses_or_fails_cleanly(text: str) -> None:
    try:
        command = parse(text)
    except KipError as error:
        assert error.code.startswith("KIP_")
        assert error.message and error.hint
        return
    assert parse(to_kip(command)) == command


@SETTINGS
@given(mutants())
def test_mutated_fixtures_parse_or_raise_kip_errors(text):
    _parses_or_fails_cleanly(text)


@SETTINGS
@given(st.text(max_size=200))
def test_random_text_raises_only_kip_errors(text):
    _parses_or_fails_cleanly(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(SEEDS), min_size=1, max_size=4))
def test_scripts_of_valid_commands_parse(texts):
    commands = parse_script("\n".join(texts))
    assert 1 <= len(commands) <= len(texts)


@SETTINGS
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_token_soup_raises_only_kip_errors(tokens):
    _parses_or_fails_cleanly(" ".join(tokens))

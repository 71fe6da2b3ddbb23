"""Every invalid fixture fails with the exact code, line and column; errors explain themselves."""

from __future__ import annotations

import parser_fixtures
import pytest

from kip2cypher.errors import INVALID_IDENTIFIER, INVALID_SYNTAX, RESOURCE_EXHAUSTED, KipError
from kip2cypher.syntax import ast
from kip2cypher.syntax.parser import MAX_INPUT_BYTES, MAX_NESTING_DEPTH, parse, parse_script

INVALID = parser_fixtures.invalid()


def _error(text: str) -> KipError:
    with pytest.raises(KipError) as info:
        parse(text)
    return info.value


def test_corpus_is_large_enough():
    assert len(INVALID) >= 150
    assert {e.code for e in INVALID} == {INVALID_SYNTAX, INVALID_IDENTIFIER, RESOURCE_EXHAUSTED}


@pytest.mark.parametrize("entry", INVALID, ids=[e.name for e in INVALID])
def test_invalid_fixture_fails_exactly(entry):
    error = _error(entry.text)
    assert (error.code, error.line, error.column) == (entry.code, entry.line, entry.column), error.message
    assert error.hint
    # The message ends with the offending line and a caret under the offending column.
    source_line, caret = error.message.split("\n")[-2:]
    assert caret.strip() == "^"
    offending_line = entry.text.split("\n")[error.line - 1] if entry.text else ""
    assert source_line in offending_line or len(offending_line) > 120


def test_syntax_error_says_what_was_expected_in_words():
    error = _error('FIND(?x) WHERE { ?x {type: "A"} LIMIT 5 }')
    assert "expected a pattern clause, FILTER, NOT, OPTIONAL, UNION or `}`" in error.message
    assert "found `LIMIT`" in error.message


def test_lower_case_keyword_hint():
    assert "upper-case" in _error('find(?x) WHERE { ?x {type: "A"} }').hint


def test_missing_detach_hint():
    error = _error('DELETE CONCEPT ?x WHERE { ?x {type: "A"} }')
    assert "DETACH is mandatory" in error.hint


def test_typo_hint_names_the_keyword():
    assert "`FILTER`" in _error('FIND(?x) WHERE { ?x {type: "A"} FILTR(?x.name == "a") }').hint


def test_unknown_function_suggests_the_nearest_one():
    error = _error('FIND(AVERAGE(?x.attributes.a)) WHERE { ?x {type: "A"} }')
    assert "`AVERAGE` is not a KIP function; did you mean `AVG`?" in error.hint


def test_generic_hint_fits_the_command_being_parsed():
    """A MERGE with a syntax error got FIND's clause-order advice."""
    hint = _error("MERGE CONCEPT ?a INTO WHERE { }").hint
    assert "MERGE CONCEPT ?source INTO ?target WHERE" in hint and "FIND" not in hint


def test_missing_placeholder_value_lists_the_supplied_keys():
    from kip2cypher import compile as kip_compile

    with pytest.raises(KipError) as raised:
        kip_compile("FIND(?x) WHERE { ?x {type: :t} }", {"a": 1, "tt": "A"})
    assert 'parameters supplied: "a", "tt"' in raised.value.message and (raised.value.line, raised.value.column) == (1, 28)


def test_unclosed_bracket_hint_names_the_opener():
    error = _error('FIND(?x)\nWHERE {\n  ?x {type: "A"}\n')
    assert "line 2, column 7" in error.hint


def test_input_size_bound():
    padding = "x" * (MAX_INPUT_BYTES - 60)
    ok = f'DESCRIBE CONCEPT TYPE "{padding}"'
    assert len(ok.encode()) <= MAX_INPUT_BYTES
    assert parse(ok).name.value == padding
    error = _error(f'DESCRIBE CONCEPT TYPE "{padding}{"y" * 100}"')
    assert error.code == RESOURCE_EXHAUSTED


def test_input_size_counts_utf8_bytes():
    error = _error('DESCRIBE CONCEPT TYPE "' + "é" * (MAX_INPUT_BYTES // 2) + '"')
    assert error.code == RESOURCE_EXHAUSTED


def _nested_list(depth: int) -> str:
    # UPSERT { CONCEPT { … SET ATTRIBUTES { v: [[…]] } } }: the braces hold 3 levels.
    inner = "[" * (depth - 3) + "]" * (depth - 3)
    return 'UPSERT { CONCEPT { {type: "A", name: "a"} SET ATTRIBUTES { v: ' + inner + " } } }"


def test_nesting_bound_is_inclusive():
    assert isinstance(parse(_nested_list(MAX_NESTING_DEPTH)), ast.Capsule)
    error = _error(_nested_list(MAX_NESTING_DEPTH + 1))
    assert error.code == RESOURCE_EXHAUSTED and error.line == 1


def test_nesting_bound_ignores_brackets_in_strings_and_comments():
    noise = '"' + "[" * 500 + '"'
    text = f"DESCRIBE CONCEPT TYPE {noise} // {'(' * 500}"
    assert parse(text).name.value == "[" * 500


def test_deep_filter_parentheses_do_not_overflow_the_stack():
    depth = MAX_NESTING_DEPTH - 3
    text = 'FIND(?x) WHERE { ?x {type: "A"} FILTER(' + "(" * depth + "?x.name == 1" + ")" * depth + ") }"
    assert isinstance(parse(text), ast.Find)


def test_nul_character_is_rejected():
    error = _error("DESCRIBE PRIMER\x00")
    assert (error.code, error.line, error.column) == (INVALID_SYNTAX, 1, 16)


@pytest.mark.parametrize("value", [b"DESCRIBE PRIMER", None, ["DESCRIBE PRIMER"]])
def test_non_string_input(value):
    for entry_point in (parse, parse_script):
        with pytest.raises(KipError) as info:
            entry_point(value)  # type: ignore[arg-type]
        assert info.value.code == INVALID_SYNTAX


def test_script_errors_are_positioned_in_the_whole_script():
    with pytest.raises(KipError) as info:
        parse_script('DESCRIBE PRIMER\nFIND(?x) WHERE { ?x {type: "A"} } LIMIT 0')
    assert (info.value.line, info.value.column) == (2, 41)


def test_error_serializes_to_the_spec_shape():
    payload = _error("FIND(").to_dict()
    assert set(payload) == {"code", "message", "hint", "line", "column"}

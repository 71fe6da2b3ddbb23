"""The fast grammar (folded tokens, scanned values) and the reference grammar (grammar/kip.peg
as written) accept the same texts and build the same AST, spans included."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parser_fixtures
from kip2cypher import parser
from kip2cypher.errors import KipError
from kip2cypher.resources import capsule_names, capsule_text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from parse_bench import large_capsule  # noqa: E402

from test_parser_fuzz import FRAGMENTS, mutants  # noqa: E402

ENTRIES = parser_fixtures.valid() + parser_fixtures.invalid()
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _dump(node):
    """Everything of an AST, spans and key spans included (they are excluded from ==)."""
    if dataclasses.is_dataclass(node):
        return (type(node).__name__, tuple((f.name, _dump(getattr(node, f.name))) for f in dataclasses.fields(node)))
    if isinstance(node, (tuple, list)):
        return tuple(_dump(item) for item in node)
    return (type(node).__name__, node)


def _outcome(text: str, rule: str, grammar) -> tuple:
    try:
        return ("ok", _dump(parser._parse(text, rule, grammar)))
    except KipError as error:
        return ("error", error.code, error.message, error.hint, error.line, error.column)


def _agree(text: str, rule: str = "single") -> tuple:
    fast = _outcome(text, rule, parser.FAST_GRAMMAR)
    assert fast == _outcome(text, rule, parser.GRAMMAR)
    return fast


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_fixture_agrees(entry):
    assert _agree(entry.text)[0] == ("error" if entry.code else "ok")
    _agree(entry.text, "script")


@pytest.mark.parametrize("name", capsule_names())
def test_capsule_agrees(name):
    assert _agree(capsule_text(name))[0] == "ok"


def test_large_capsule_agrees():
    assert _agree(large_capsule(concepts=200, propositions=400))[0] == "ok"


@pytest.mark.parametrize(
    "value",
    [
        '{}', '{ }', '[]', '[ , ]', '{,}', '{a: 1,}', '{a: 1,,}', '{a: 1 b: 2}', '{"a" : [1, 2,], b: {c: null}}', '[1 2]',
        '{a: 1} // c', '{a: /* c */ 1 /* d */, // e\n b: 2}', '{a: 1e400}', '{a: -0}', '{a: 01}', '{a: 1.}', '{a: .5}',
        '{a: "\\ud800"}', '{"\\ud800": 1}', '{1x: 1}', '{a: :1p}', '{a: :p}', '{a: ?x.y}', '{a: ?1.y}', '{a: ADD(1, 2)}',
        '{a: ADD(1, 2,)}', '{a: ADD()}', '{a: ADDX(1)}', '{a: truex}', '{a: true}', '{a: [null, false, "x"]}',
        '{a: "x"', '{a: 1' + "1" * 5000 + '}', '{é: 1}', '{"é": 1}', '{a: "\x1c"}', '{a:\x1c1}', '{a:\ufeff1}', '{a: /* open',
        '{a: 1}}', '{"a\\"b": "c\\nd"}', '{a: 1, "a": 2}', '{a: [[[]]]}', "{a: 'x'}", '{a: -}', '{a: 1e5, b: 1E-5, c: -1.5e+3}',
    ],
)
def test_values_agree(value):
    _agree('UPSERT { CONCEPT ?a { {type: "A", name: "a"} SET ATTRIBUTES ' + value + " } }")
    _agree("UPDATE ?n SET ATTRIBUTES " + value + ' WHERE { ?n {type: "A"} }')
    _agree('FIND(?x) WHERE { ?x {type: "A"} FILTER(IN(?x.name, [' + value + "])) }")


@SETTINGS
@given(mutants())
def test_mutated_fixtures_agree(text):
    _agree(text)


@SETTINGS
@given(st.lists(st.sampled_from(FRAGMENTS + ["{a: ", "[1, ", "ADD(1, ", ": 1,", "SET ATTRIBUTES {"]), max_size=40))
def test_token_soup_agrees(tokens):
    _agree(" ".join(tokens))

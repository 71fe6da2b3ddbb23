"""The fast grammar (folded tokens, scanned values) and the reference grammar (grammar/kip.peg
as written) accept the same texts and build the same AST, spans included."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import parser_fixtures
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kip2cypher.errors import KipError
from kip2cypher.profiles import ORDER, PROFILES, capsule_text
from kip2cypher.syntax import grammars, parser

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
        return ("ok", _dump(parser._parse(text, rule, grammar=grammar)))
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


@pytest.mark.parametrize(("profile", "name"), [(p, n) for p in ORDER for n in PROFILES[p].order])
def test_capsule_agrees(profile, name):
    assert _agree(capsule_text(name, profile))[0] == "ok"


def test_large_capsule_agrees():
    assert _agree(large_capsule(concepts=200, propositions=400))[0] == "ok"


@pytest.mark.parametrize(
    "value",
    [
        "{}",
        "{ }",
        "[]",
        "[ , ]",
        "{,}",
        "{a: 1,}",
        "{a: 1,,}",
        "{a: 1 b: 2}",
        '{"a" : [1, 2,], b: {c: null}}',
        "[1 2]",
        "{a: 1} // c",
        "{a: /* c */ 1 /* d */, // e\n b: 2}",
        "{a: 1e400}",
        "{a: -0}",
        "{a: 01}",
        "{a: 1.}",
        "{a: .5}",
        '{a: "\\ud800"}',
        '{"\\ud800": 1}',
        "{1x: 1}",
        "{a: :1p}",
        "{a: :p}",
        "{a: ?x.y}",
        "{a: ?1.y}",
        "{a: ADD(1, 2)}",
        "{a: ADD(1, 2,)}",
        "{a: ADD()}",
        "{a: ADDX(1)}",
        "{a: truex}",
        "{a: true}",
        '{a: [null, false, "x"]}',
        '{a: "x"',
        "{a: 1" + "1" * 5000 + "}",
        "{é: 1}",
        '{"é": 1}',
        '{a: "\x1c"}',
        "{a:\x1c1}",
        "{a:\ufeff1}",
        "{a: /* open",
        "{a: 1}}",
        '{"a\\"b": "c\\nd"}',
        '{a: 1, "a": 2}',
        "{a: [[[]]]}",
        "{a: 'x'}",
        "{a: -}",
        "{a: 1e5, b: 1E-5, c: -1.5e+3}",
    ],
)
def test_values_agree(value):
    _agree('UPSERT { CONCEPT ?a { {type: "A", name: "a"} SET ATTRIBUTES ' + value + " } }")
    _agree("UPDATE ?n SET ATTRIBUTES " + value + ' WHERE { ?n {type: "A"} }')
    _agree('FIND(?x) WHERE { ?x {type: "A"} FILTER(IN(?x.name, [' + value + "])) }")


BLOCKS = [
    'CONCEPT ?a { {type: "A", name: "a"} }',
    'CONCEPT { {id: "x"} SET ATTRIBUTES { n: 1 } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS {} }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", ?b), ("q", {type: "B", name: "b"}), } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", ?b) WITH METADATA { c: 1 }, ("q", ?c) WITH METADATA {} } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", (?b, "q", {type: "C", name: "c"})) ("r", (id: "P1")) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", ((?b, "q", ?c), "r", (id: :pid))) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", ?b {type: "B"}) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", ?b (?c, "q", ?d)) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", (?b, "q" | "r", ?c)) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", (?b, "q"{1,2}, ?c)) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", (?b, ?q, ?c)) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", (id "x")) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { (?p, ?b) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p" ?b) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET ATTRIBUTES { x: 1 } SET PROPOSITIONS { ("p", ?b) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", ?b) } SET ATTRIBUTES { x: 1 } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET ATTRIBUTES { x: 1 } SET ATTRIBUTES { y: 1 } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS {} SET PROPOSITIONS {} }',
    'CONCEPT ?a { {type: "A", name: "a"} SET METADATA { x: 1 } }',
    'CONCEPT ?a { {type: "A", name: "a"} EXPECT VERSION 3 SET ATTRIBUTES { x: 1 } }',
    'CONCEPT ?a { {type: "A", name: "a"} EXPECT VERSION :v }',
    'CONCEPT ?a { {type: "A", name: "a"} EXPECT 3 }',
    'CONCEPT ?a { {type: "A", name: "a"} EXPECT VERSION -1 }',
    'CONCEPT ?a { {type: "A", name: "a"} } WITH METADATA { source: "x" }',
    'CONCEPT ?a { {type: "A", name: "a"} } WITH { source: "x" }',
    'CONCEPT ?a { {type: "A", name: "a"} } WITH METADATA',
    'CONCEPT ?1a { {type: "A", name: "a"} }',
    'CONCEPT ?a { {type: "A", nam: "a"} }',
    'CONCEPT ?a { {type: "A", type: "a"} }',
    "CONCEPT ?a { {} }",
    'CONCEPT ?a { {type: 1, name: "a"} }',
    'CONCEPT ?a { {type: "A", name: "\\ud800"} }',
    'CONCEPT ?a { {type: "A"} }',
    'CONCEPT ?a { ?x {type: "A", name: "a"} }',
    'CONCEPT ?a {type: "A", name: "a"}',
    'CONCEPT ?a { {type: "A", name: "a"} SET ATTRIBUTES { 1x: 2 } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET ATTRIBUTES { x: ADD(1, 2) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", ?1b) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("\\ud800", ?b) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", {type: "B", nam: "b"}) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", (?b, "q", ?c) WITH METADATA { x: 1 },) } }',
    'CONCEPT ?a /* c */ { // d\n {type: "A", name: "a"} /* e */ SET /* f */ PROPOSITIONS { /* g */ ("p", ?b) /* h */ } } // i',
    'CONCEPTX ?a { {type: "A", name: "a"} }',
    'PROPOSITION ?p { (?a, "p", ?b) }',
    'PROPOSITION { (id: "P1") SET ATTRIBUTES { w: 0.5 } } WITH METADATA { c: 1 }',
    'PROPOSITION { ({type: "A", name: "a"}, "p", (?b, "q", ?c)) EXPECT VERSION 0 }',
    'PROPOSITION { (?a, "p" | "q", ?b) }',
    "PROPOSITION { (?a, ?p, ?b) }",
    'PROPOSITION { (?a, "p"{1,3}, ?b) }',
    'PROPOSITION { ?x (?a, "p", ?b) }',
    'PROPOSITION { (?a, "p", ?b) SET ATTRIBUTES { w: 1 } SET ATTRIBUTES { v: 2 } }',
    'PROPOSITION { (?a, "p", ?b) SET PROPOSITIONS { ("q", ?c) } }',
    'PROPOSITION { (?a, "p", ?b), }',
    'PROPOSITION { (?a, "p") }',
    "PROPOSITION { (id: 1) }",
    'PROPOSITIONS { (?a, "p", ?b) }',
    'PROPOSITION ?p { (?a, "p", ?b) } WITH METADATA { x: 1, x: 2 }',
    # predicate placeholders (issue 13)
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { (:p, ?b) (:q, {type: :t, name: :n}) WITH METADATA { x: 1 }, } }',
    "PROPOSITION ?l { ({type: :st, name: :sn}, :p, {type: :ot, name: :on}) }",
    "PROPOSITION { (?a, :p, (?b, :q, ?c)) }",
    'PROPOSITION { (?a, :p | "q", ?b) }',
    "PROPOSITION { (?a, :p{1,3}, ?b) }",
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { (:1p, ?b) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { (: p, ?b) } }',
    'CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("a :p", ?b) } }',
]


@pytest.mark.parametrize("block", BLOCKS)
def test_blocks_agree(block):
    _agree("UPSERT {\n  " + block + "\n}")
    _agree("UPSERT { " + block + " " + block.replace("?a", "?a2") + ' } WITH METADATA { source: "s" }')
    _agree("UPSERT { " + block + " }\nDESCRIBE PRIMER", "script")


def test_block_shortcut_takes_the_common_shapes():
    """Typical blocks go through the scanner (else the tests above would compare the grammar with itself)."""
    common = [b for b in BLOCKS[:7] + BLOCKS[15:17] + BLOCKS[20:22] + [BLOCKS[24], BLOCKS[42]] + BLOCKS[44:47]]
    common += [
        b
        for b in BLOCKS
        if b.startswith(('CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { (:p', "PROPOSITION ?l { ({type: :st", "PROPOSITION { (?a, :p, ("))
    ]
    for block in common:
        assert grammars.scan_upsert_block(block + "\x00", 0) is not None, block
    text = large_capsule(concepts=50, propositions=100) + "\x00"
    starts = [i for i in range(len(text)) if text.startswith(("  CONCEPT ", "  PROPOSITION "), i)]
    assert len(starts) == 75 and all(grammars.scan_upsert_block(text, i + 2) is not None for i in starts)


@SETTINGS
@given(mutants())
def test_mutated_fixtures_agree(text):
    _agree(text)


@SETTINGS
@given(
    st.lists(st.sampled_from(FRAGMENTS + ["{a: ", "[1, ", "ADD(1, ", ": 1,", "SET ATTRIBUTES {", "²", "\u0300", "\u3000", "\x1c", "a²", "?xé"]), max_size=40)
)
def test_token_soup_agrees(tokens):
    _agree(" ".join(tokens))


# ------------------------------------------------------------------ fast building blocks
_TRICKY = st.text(alphabet=st.sampled_from(list(' \t\n\x0b\x1c\x1f\x85\xa0\u2003\u3000\ufeff/*"\\ux0aZ_.,:;-+eE{}[]()?é²\u0300😀\ud800')), max_size=24)


def test_white_space_is_the_regex_modules():
    every = "".join(chr(code) for code in range(0x110000))
    assert re.findall("[" + grammars.WHITE_SPACE + "]", every) == regex.findall(r"\s", every)
    assert all(char.isspace() for char in regex.findall(r"\s", every))  # what _skip_blank relies on


@pytest.mark.parametrize("name", sorted(grammars.TOKENS))
def test_fast_token_regexes_match_like_the_reference(name):
    fast = parser.FAST_GRAMMAR[name].re
    member = parser.GRAMMAR[name].members[0]
    reference = member.re if hasattr(member, "re") else regex.compile(regex.escape(member.literal))
    blank = parser.GRAMMAR["_"].re

    @settings(max_examples=150, deadline=None)
    @given(st.sampled_from(["", "true", "FIND", "?x", "?x.y", ":p", "12", "-1.5e3", '"a\\"b"', "ADD", "||", "<=", "id"]), _TRICKY)
    def check(head, tail):
        text = head + tail
        mine, theirs = fast.match(text), reference.match(text)
        if theirs is None:
            assert mine is None
        else:
            assert mine is not None and mine.end(1) == theirs.end() and mine.end() == blank.match(text, theirs.end()).end()

    check()


@SETTINGS
@given(_TRICKY, st.integers(0, 24))
def test_skip_blank_is_the_blank_rule(text, at):
    text += "\x00"
    at = min(at, len(text) - 1)
    assert grammars._skip_blank(text, at) == parser.GRAMMAR["_"].re.match(text, at).end()


def _exact_depth_error(text: str) -> bool:
    depth = 0
    for match in parser._BRACKET_RE.finditer(text):
        char = match.group()
        if char in parser._OPENERS:
            depth += 1
            if depth > parser.MAX_NESTING_DEPTH:
                return True
        elif len(char) == 1:
            depth = max(depth - 1, 0)
    return False


@pytest.mark.parametrize(
    "text",
    [
        "{" * 64,
        "{" * 65,
        "{" * 64 + '"' + "{" * 5,
        "{" * 64 + '"\n{',
        "{" * 70 + "}" * 70,
        "}" * 10 + "{" * 65,
        "(" * 40 + "/*" + "(" * 30,
        "(" * 40 + "//" + "(" * 30 + "\n" + "[" * 24,
        "[" * 40 + '"\\"' + "[" * 30,
    ],
)
def test_nesting_bound_examples(text):
    with pytest.raises(KipError) if _exact_depth_error(text) else _no_error():
        parser.check_bounds(text)


class _no_error:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@SETTINGS
@given(st.lists(st.sampled_from(["{", "[", "(", "}", "]", ")", '"', '"[', "//", "/*", "*/", "\n", "\\", "x"]), max_size=400))
def test_nesting_bound_agrees_with_the_exact_scan(pieces):
    text = "".join(pieces)
    try:
        parser.check_bounds(text)
        too_deep = False
    except KipError as error:
        too_deep = error.code == "KIP_4002"
    assert too_deep == _exact_depth_error(text)


@pytest.mark.parametrize(
    "template",
    [
        'FIND(?x) WHERE {{ ?x {{type: "A"}} }} LIMIT {n}',
        'FIND(?b) WHERE {{ (?a, "p"{{1,{n}}}, ?b) }}',
        'FIND(?b) WHERE {{ (?a, "p"{{{n}}}, ?b) }}',
        'UPSERT {{ CONCEPT ?a {{ {{type: "A", name: "a"}} SET ATTRIBUTES {{ n: -{n} }} }} }}',
    ],
)
def test_integers_beyond_int_conversion_are_out_of_range(template):
    """More digits than int() converts (sys.get_int_max_str_digits) is KIP_1001, not a ValueError."""
    text = template.format(n="1" * 5000)
    outcome = _agree(text)
    assert outcome[:2] == ("error", "KIP_1001") and "out of range" in outcome[2]

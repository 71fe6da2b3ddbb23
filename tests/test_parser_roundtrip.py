"""Every valid fixture parses, prints canonically and re-parses to an equal AST."""

from __future__ import annotations

import dataclasses

import parser_fixtures
import pytest

from kip2cypher.profiles import capsule_text
from kip2cypher.syntax import ast
from kip2cypher.syntax.parser import parse, parse_script
from kip2cypher.syntax.printer import to_kip

VALID = parser_fixtures.valid()
COMMAND_TYPES = (ast.Find, *ast.KML_COMMANDS, *ast.META_COMMANDS)


def _nodes(node):
    """Every dataclass node of an AST, depth first."""
    stack = [node]
    while stack:
        item = stack.pop()
        if dataclasses.is_dataclass(item):
            yield item
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item) if f.compare)
        elif isinstance(item, (tuple, list)):
            stack.extend(item)


@pytest.mark.parametrize("entry", VALID, ids=[e.name for e in VALID])
def test_valid_fixture_round_trips(entry):
    command = parse(entry.text)
    assert isinstance(command, COMMAND_TYPES)
    canonical = to_kip(command)
    assert parse(canonical) == command
    assert to_kip(parse(canonical)) == canonical  # canonical form is a fixed point


@pytest.mark.parametrize("entry", VALID, ids=[e.name for e in VALID])
def test_spans_point_at_their_tokens(entry):
    text = entry.text
    for node in _nodes(parse(entry.text)):
        span = getattr(node, "span", None)
        if span is None:
            continue
        assert 0 <= span.start <= span.end <= len(text)
        assert text[span.start : span.end] == text[span.start : span.end].strip()  # no surrounding blanks
        if isinstance(node, (ast.Var, ast.DotPath)):
            assert text[span.start] == "?"
        elif isinstance(node, ast.Placeholder):
            assert text[span.start] == ":"
        elif isinstance(node, ast.Literal) and isinstance(node.value, str):
            assert text[span.start] == '"'


def test_fixture_corpus_covers_every_command_type():
    kinds = {type(parse(entry.text)) for entry in VALID}
    assert kinds == set(COMMAND_TYPES)


def test_genesis_capsule_is_one_command_of_two_upserts():
    command = parse(capsule_text("Genesis", "rc11"))
    assert isinstance(command, ast.Capsule)
    assert [len(u.blocks) for u in command.upserts] == [8, 8]
    assert command.upserts[0].metadata.entries[0] == ("source", ast.Literal("SystemBootstrap"))


def test_command_spans_cover_exactly_the_command_text():
    script = '// lead\nDESCRIBE PRIMER // trailing comment\n\nFIND(?x) WHERE { ?x {type: "A"} } LIMIT 1 /* c */\n'
    first, second = parse_script(script)
    assert script[first.span.start : first.span.end] == "DESCRIBE PRIMER"
    assert script[second.span.start : second.span.end] == 'FIND(?x) WHERE { ?x {type: "A"} } LIMIT 1'


def test_script_splits_commands_and_groups_consecutive_upserts():
    script = """
    FIND(?x) WHERE { ?x {type: "A"} } LIMIT 1
    UPSERT { CONCEPT ?a { {type: "A", name: "a"} } }
    UPSERT { CONCEPT ?b { {type: "A", name: "b"} } }
    DESCRIBE PRIMER
    UPSERT { CONCEPT ?c { {type: "A", name: "c"} } }
    """
    commands = parse_script(script)
    assert [type(c) for c in commands] == [ast.Find, ast.Capsule, ast.DescribePrimer, ast.Capsule]
    assert len(commands[1].upserts) == 2


def test_precedence_not_binds_tighter_than_comparison_and_and_than_or():
    where = parse('FIND(?x) WHERE { ?x {type: "A"} FILTER(?a || ?b && !?c == 1) }').where
    expr = where[1].expr
    assert expr == ast.BoolOp("||", ast.Var("a"), ast.BoolOp("&&", ast.Var("b"), ast.Comparison("==", ast.NotExpr(ast.Var("c")), ast.Literal(1))))


def test_boolean_chains_are_balanced_trees_printed_flat():
    """``&&`` / ``||`` are associative: a chain, parenthesised or not, is one balanced tree."""
    forms = ["?a || ?b || ?c", "?a || (?b || ?c)", "(?a || ?b) || ?c"]
    trees = {parse(f'FIND(?x) WHERE {{ ?x {{type: "A"}} FILTER({form}) }}').where[1].expr for form in forms}
    assert len(trees) == 1
    tree = trees.pop()
    assert tree == ast.BoolOp("||", ast.Var("a"), ast.BoolOp("||", ast.Var("b"), ast.Var("c")))
    mixed = parse('FIND(?x) WHERE { ?x {type: "A"} FILTER((?a || ?b) && ?c) }')
    assert parse(to_kip(mixed)) == mixed and "(?a || ?b) && ?c" in to_kip(mixed)


def test_long_filter_chain_parses_to_a_shallow_tree():
    """A FILTER of 3,000 conditions joined by ``||`` was a left-deep tree 3,000 levels deep:
    validation raised RecursionError (an internal error). Balanced, it is 12 levels deep."""
    command = parse('FIND(?x) WHERE { ?x {type: "A"} FILTER(' + " || ".join(f"?x.name == {i}" for i in range(3000)) + ") }")

    def depth(node):
        return 1 + max(depth(node.left), depth(node.right)) if isinstance(node, ast.BoolOp) else 0

    assert depth(command.where[1].expr) == 12
    assert parse(to_kip(command)) == command


@pytest.mark.parametrize(
    "quantifier, expected",
    [("{1,5}", ast.Quantifier(1, 5)), ("{1,}", ast.Quantifier(1, None)), ("{5}", ast.Quantifier(5, 5)), ("{0,0}", ast.Quantifier(0, 0))],
)
def test_path_quantifier_forms(quantifier, expected):
    clause = parse(f'FIND(?b) WHERE {{ (?a, "follows"{quantifier}, ?b) }}').where[0]
    assert clause.predicate == ast.PredicatePattern(("follows",), expected)


def test_numbers_keep_their_json_type():
    attrs = parse('UPSERT { CONCEPT { {type: "A", name: "a"} SET ATTRIBUTES { i: 1, f: 1.0, e: 1e3, n: -0, big: 123456789012345678901 } } }')
    values = {key: value.value for key, value in attrs.upserts[0].blocks[0].set_attributes.entries}
    assert values == {"i": 1, "f": 1.0, "e": 1000.0, "n": 0, "big": 123456789012345678901}
    assert [type(v) for v in values.values()] == [int, float, float, int, int]


def test_string_escapes_and_unicode():
    literal = parse(r'DESCRIBE CONCEPT TYPE "a\"b\\c\u00e9\ud83d\ude00 深色 é"').name
    assert literal.value == 'a"b\\cé😀 深色 é'


def test_placeholders_everywhere_the_spec_allows():
    command = parse("SEARCH CONCEPT :term WITH TYPE :type MODE :mode THRESHOLD :threshold LIMIT :limit")
    assert command == ast.Search(
        "CONCEPT", ast.Placeholder("term"), ast.Placeholder("type"), ast.Placeholder("mode"), ast.Placeholder("threshold"), ast.Placeholder("limit")
    )


def test_keywords_need_word_boundaries_but_variables_may_contain_them():
    command = parse('FIND(?LIMITED) WHERE { ?LIMITED {type: "A"} } LIMIT 2')
    assert command.projections == (ast.Var("LIMITED"),) and command.limit == ast.Literal(2)


def test_comments_and_block_comments_anywhere_whitespace_may_stand():
    text = 'FIND(/*a*/?x/*b*/)// c\nWHERE/* d */{ ?x // e\n {type: /* f */ "A"} }'
    assert parse(text) == parse('FIND(?x) WHERE { ?x {type: "A"} }')


def test_concept_block_set_clauses_in_either_order():
    a = parse('UPSERT { CONCEPT ?a { {type: "A", name: "a"} SET PROPOSITIONS { ("p", {id: "1"}) } SET ATTRIBUTES { x: 1 } } }')
    b = parse('UPSERT { CONCEPT ?a { {type: "A", name: "a"} SET ATTRIBUTES { x: 1 } SET PROPOSITIONS { ("p", {id: "1"}) } } }')
    assert a == b


def test_update_bodies_become_assignments():
    command = parse('UPDATE ?n SET ATTRIBUTES { c: ADD(COALESCE(?n.attributes.c, 0), 1) } WHERE { ?n {type: "A"} }')
    assert isinstance(command.set_attributes, ast.Assignments)
    assert command.set_attributes.entries == (
        ("c", ast.UpdateCall("ADD", (ast.UpdateCall("COALESCE", (ast.DotPath("n", ("attributes", "c")), ast.Literal(0))), ast.Literal(1)))),
    )
    assert command.set_metadata is None


def test_cached_reparse_is_a_lookup_and_returns_the_same_object(monkeypatch):
    """A re-parse never reaches the parser (asserted structurally: bench/ measures the speed)."""
    from kip2cypher.syntax import parser as parser_module

    text = VALID[0].text
    first = parse(text)

    def no_parsing(*args, **kwargs):
        raise AssertionError("a cached text was parsed again")

    monkeypatch.setattr(parser_module, "_parse", no_parsing)
    assert parse(text) is first

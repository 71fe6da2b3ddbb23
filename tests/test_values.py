"""values.resolve & friends: placeholders bound from parameters, never from strings."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kip2cypher.errors import INVALID_SYNTAX, KipError
from kip2cypher.syntax import ast, values
from kip2cypher.syntax.parser import parse
from kip2cypher.syntax.placeholders import check_quoted_placeholders, placeholders
from kip2cypher.syntax.values import (
    resolve,
    resolve_int,
    resolve_number,
    resolve_str,
)


def _attributes(text: str) -> ast.ObjectLit:
    return parse('UPSERT { CONCEPT { {type: "A", name: "a"} SET ATTRIBUTES ' + text + " } }").upserts[0].blocks[0].set_attributes


def test_resolve_turns_value_nodes_into_plain_json():
    value = _attributes('{ s: "x", n: 1.5, b: true, z: null, l: [1, :p, {k: :q}], o: {"a b": []} }')
    assert resolve(value, {"p": "P", "q": [1]}) == {"s": "x", "n": 1.5, "b": True, "z": None, "l": [1, "P", {"k": [1]}], "o": {"a b": []}}


def test_missing_placeholder_names_it_and_says_where_to_add_it():
    with pytest.raises(KipError) as info:
        resolve(ast.Placeholder("limit"), {"other": 1})
    assert info.value.code == INVALID_SYNTAX
    assert ":limit" in info.value.message
    assert "parameters" in info.value.hint and '"limit"' in info.value.hint


def test_placeholder_bound_to_null_is_a_value():
    assert resolve(ast.Placeholder("x"), {"x": None}) is None


@pytest.mark.parametrize(
    "value, shown",
    [("x", "string 'x'"), (0, "number 0"), (-3, "number -3"), (1.5, "number 1.5"), (True, "boolean true"), (None, "null"), ([1], "a list")],
)
def test_resolve_int_rejects_non_positive_integers(value, shown):
    with pytest.raises(KipError) as info:
        resolve_int(ast.Placeholder("n"), {"n": value}, "LIMIT")
    assert info.value.code == INVALID_SYNTAX
    assert info.value.message == f"LIMIT expects a positive integer, got {shown}."


def test_resolve_int_accepts_literals_and_placeholders():
    assert resolve_int(ast.Literal(7), None, "LIMIT") == 7
    assert resolve_int(ast.Placeholder("n"), {"n": 3}, "LIMIT") == 3


def test_resolve_str_and_number():
    assert resolve_str(ast.Placeholder("c"), {"c": "tok"}, "CURSOR") == "tok"
    assert resolve_number(ast.Literal(0.75), None, "THRESHOLD") == 0.75
    with pytest.raises(KipError, match="CURSOR expects a string, got number 5"):
        resolve_str(ast.Literal(5), None, "CURSOR")
    with pytest.raises(KipError, match="THRESHOLD expects a number, got string 'x'"):
        resolve_number(ast.Placeholder("t"), {"t": "x"}, "THRESHOLD")
    with pytest.raises(KipError):
        resolve_number(ast.Literal(True), None, "THRESHOLD")


def test_placeholders_are_collected_from_every_position():
    find = parse(
        'FIND(?x) WHERE { ?x {id: :id} ?y {type: :t, name: :n} ?l (id: :lid) FILTER(IN(?x.name, [:a, "b"]) && ?x.name != :c) } LIMIT :limit CURSOR :cursor'
    )
    assert placeholders(find) == {"id", "t", "n", "lid", "a", "c", "limit", "cursor"}
    search = parse("SEARCH CONCEPT :term WITH TYPE :type MODE :mode THRESHOLD :th LIMIT :lim")
    assert placeholders(search) == {"term", "type", "mode", "th", "lim"}
    upsert = parse(
        'UPSERT { CONCEPT ?a { {type: "A", name: :name} EXPECT VERSION :v SET ATTRIBUTES { x: {y: [:deep]} } } WITH METADATA { m: :meta } } WITH METADATA { o: '
        ":outer }"
    )
    assert placeholders(upsert) == {"name", "v", "deep", "meta", "outer"}
    update = parse("UPDATE ?n SET ATTRIBUTES { s: MUL(?n.attributes.s, :factor) } WHERE { ?n {type: :type} } LIMIT :limit")
    assert placeholders(update) == {"factor", "type", "limit"}
    assert placeholders(parse("DESCRIBE PRIMER")) == set()


def test_quoted_placeholder_of_a_known_parameter_is_rejected():
    text = 'UPSERT {\n  CONCEPT ?e { {type: "Event", name: "Hello :name"} }\n}'
    with pytest.raises(KipError) as info:
        check_quoted_placeholders(parse(text), text, {"name": "x"})
    error = info.value
    assert (error.code, error.line, error.column) == (INVALID_SYNTAX, 2, 45)
    assert "name: :name" in error.hint


@pytest.mark.parametrize(
    "text",
    [
        "FIND(?x) WHERE { ?x {name: :name} }",  # a whole-value placeholder is fine
        'FIND(?x) WHERE { ?x {name: "Hello :other"} }',  # not a parameter
        'FIND(?x) WHERE { ?x {name: "at 12:30"} }',  # digits are not a placeholder name
        'FIND(?x) WHERE { ?x {name: "a:names"} } // "Hello :name" in a comment',
        'FIND(?x) WHERE { ?x {name: "escaped \\" :nameless"} }',
    ],
)
def test_quoted_placeholder_check_has_no_false_positives(text):
    check_quoted_placeholders(parse(text), text, {"name": "x"})


def test_quoted_placeholder_check_without_parameters_is_a_no_op():
    text = 'FIND(?x) WHERE { ?x {name: ":name"} }'
    check_quoted_placeholders(parse(text), text, None)
    check_quoted_placeholders(parse(text), text, {})


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(),  # NaN and ±Infinity included: refused
    st.text(max_size=8) | st.sampled_from(["\ud800", "a\udfff", "é"]),
)
_JSON = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4) | st.just("\udc00"), inner, max_size=4), max_leaves=30
)


def _walked(sets: list, max_bytes: int, max_depth: int):
    try:
        return values.parameters_size(sets, max_bytes, max_depth)
    except KipError as exc:
        return (exc.code, exc.message, exc.hint)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.text(max_size=4), _JSON, max_size=5), min_size=1, max_size=3), st.integers(8, 400), st.integers(0, 4))
def test_parameters_size_fast_path_answers_what_the_walk_answers(sets, max_bytes, max_depth):
    # The fast path (valid parameters, exact types) must give the walk's size; anything it declines
    # goes to the walk, whose first error (code, message naming the parameter) is the answer.
    fast = values._size_of_valid(sets, max_bytes, max_depth)
    answer = _walked(sets, max_bytes, max_depth)
    if fast is not None:
        assert answer == fast
    original = values._size_of_valid
    try:
        values._size_of_valid = lambda *args: None  # the walk alone
        assert _walked(sets, max_bytes, max_depth) == answer
    finally:
        values._size_of_valid = original

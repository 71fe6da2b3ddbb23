"""Work a compile shares instead of repeating gives what the repeated work gave (docs/performance.md,
"Round 8 — compile"): statements after a rendered ``Head`` are the same lines rendered in one
statement, and a fingerprint continued from its digested head is the whole fingerprint."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kip2cypher import cursor
from kip2cypher.cypher.builder import Head, Ident, Param, RuntimeParam, Statement, Var, frag


def _whole(*lines) -> tuple:
    statement = Statement()
    for line in lines:
        statement.line(line)
    return statement.build_with_runtime()


def test_statements_after_a_shared_head_equal_the_same_lines_in_one_statement():
    core = [frag("MATCH (", Var("d"), ":", Ident("Drug"), " {name: ", Param("Aspirin"), "})"), frag("WHERE ", Var("d"), ".risk < ", Param(3))]
    tails = [frag("RETURN ", Var("d"), ", ", Param("x")), frag("LIMIT ", Param(6, "limit"))]
    head = Head(core)
    first = Statement(head).line(tails[0]).build_with_runtime()
    second = Statement(head).line(tails[1]).line(tails[0]).build_with_runtime()
    assert first == _whole(*core, tails[0])
    assert second == _whole(*core, tails[1], tails[0])
    assert list(second[1]) == ["p0", "p1", "limit", "p2"]  # the parameters' order too
    assert first[1] is not second[1] and head.renderer.params == {"p0": "Aspirin", "p1": 3}


def test_a_kept_placeholder_after_a_head_renders_as_in_one_statement():
    """A ``RuntimeParam`` (a compile that keeps placeholders) is rendered knowing every kept name,
    head included: no engine parameter takes one."""
    core = [frag("MATCH (n) WHERE n.a = ", Param(1), " AND n.b = ", RuntimeParam("p1"))]
    tail = frag("RETURN ", Param(2))
    assert Statement(Head(core)).line(tail).build_with_runtime() == _whole(*core, tail)
    assert Statement(Head([frag("MATCH (n)")])).line(frag("WHERE n.a = ", RuntimeParam("p0"), " + ", Param(1))).build_with_runtime() == _whole(
        frag("MATCH (n)"), frag("WHERE n.a = ", RuntimeParam("p0"), " + ", Param(1))
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(st.lists(_JSON, max_size=3), st.lists(_JSON, min_size=1, max_size=3))
def test_a_fingerprint_continued_from_its_head_is_the_whole_fingerprint(head, tail):
    assert cursor.fingerprint_tail(cursor.fingerprint_head(*head), *tail) == cursor.fingerprint(*head, *tail)

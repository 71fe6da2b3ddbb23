"""Work a compile shares or skips gives what the work gave (docs/performance.md, "Round 8 — compile"):
statements after a rendered ``Head`` are the same lines rendered in one statement, a fingerprint
continued from its digested head is the whole fingerprint, and ``replaced`` is
``dataclasses.replace`` for the classes it copies."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kip2cypher.lower
from kip2cypher import cursor
from kip2cypher.cypher.builder import Head, Ident, Param, RuntimeParam, Statement, Var, frag
from kip2cypher.lower.compile import compile_plan
from kip2cypher.lower.plan import replaced


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


def _lowering_dataclasses() -> list[type]:
    found = []
    for info in pkgutil.iter_modules(kip2cypher.lower.__path__):
        module = importlib.import_module(f"kip2cypher.lower.{info.name}")
        found += [c for c in vars(module).values() if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == module.__name__]
    return found


@pytest.mark.parametrize("cls", _lowering_dataclasses(), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_replaced_copies_what_dataclasses_replace_would_build(cls):
    """``replaced`` skips ``__init__`` and copies ``__dict__``: right only while no lowering
    dataclass computes anything in it — no ``__post_init__``, no ``init=False`` field (whose value
    ``replace`` would reset), no ``cached_property`` (its value, kept in ``__dict__``, would be
    copied to an instance it may not fit)."""
    assert not hasattr(cls, "__post_init__")
    assert all(f.init for f in dataclasses.fields(cls))
    assert not [name for klass in cls.__mro__ for name, v in vars(klass).items() if isinstance(v, functools.cached_property)]


@pytest.mark.parametrize("text", ['FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.risk < 3) } LIMIT 2', "DESCRIBE PRIMER"])
def test_replaced_equals_dataclasses_replace_on_a_plan(text):
    plan = compile_plan(text)
    mine, theirs = replaced(plan, {"warnings": ("w",), "command_text": "t"}), dataclasses.replace(plan, warnings=("w",), command_text="t")
    assert type(mine) is type(theirs) and vars(mine) == vars(theirs) and mine == theirs


def test_replaced_refuses_a_name_that_is_not_a_field():
    """``dataclasses.replace`` raises for a misspelled field; ``replaced`` copied it into ``__dict__`` silently."""
    with pytest.raises(AssertionError, match="commnd_text"):
        replaced(compile_plan("DESCRIBE PRIMER"), {"commnd_text": "t"})

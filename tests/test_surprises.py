"""Which commands draw a compile-time ``warnings`` entry (``lower/surprises.py``, docs/interop.md
part A) — offline; the entries' texts and the answers they come with are pinned on Neo4j in
test_silent_spec.py."""

from __future__ import annotations

import pytest

from kip2cypher.lower.compile import compile_plan

TASK = 'FIND(?t.name) WHERE {{ ?t {{type: "Task"}} {} }}'


@pytest.mark.parametrize(
    "where, warned",
    [
        ('FILTER(?t.attributes.s != "x")', True),
        ('FILTER(?t.attributes.s == "x")', False),  # drops a missing value on both engines
        ("FILTER(?t.attributes.s != null)", False),  # a null test on both engines
        ('FILTER(!(!(?t.attributes.s == "x")))', False),  # two negations: an even number
        ("FILTER(?t.metadata._version != 1)", False),  # engine metadata is never missing
        ('FILTER(?t.name != "x")', False),
        ('FILTER(IS_NOT_NULL(?t.attributes.s) && ?t.attributes.s != "x")', False),  # guarded
        ('NOT { FILTER(?t.attributes.s != "x") }', True),
        ('NOT { NOT { FILTER(?t.attributes.s != "x") } }', True),
        ('FILTER(!IN(?t.attributes.s, ["x"]))', True),
        ('FILTER(ENDS_WITH(?t.attributes.s, ""))', True),
        ('FILTER(ENDS_WITH(?t.attributes.s, "x"))', False),
        ('FILTER(?t.attributes.s < "2025-01-01T00:00:00Z")', False),  # UTC with Z: the spec's own example
        ('FILTER(?t.attributes.s < "2025-01-01T02:00:00+02:00")', True),
        ('FILTER(?t.attributes.s >= "1.5")', True),
        ('FILTER(?t.attributes.s >= "v1.5")', False),
    ],
)
def test_which_filters_are_warned_about(where, warned):
    assert bool(compile_plan(TASK.format(where)).warnings) is warned


def test_a_placeholder_bound_to_null_is_a_null_test():
    text = TASK.format("FILTER(?t.attributes.s != :v)")
    assert compile_plan(text, {"v": None}).warnings == ()
    assert len(compile_plan(text, {"v": "x"}).warnings) == 1


def test_a_not_written_after_its_variables_draws_nothing():
    assert compile_plan('FIND(?t.name) WHERE { ?t {type: "Task"} NOT { (?t, "blocks", ?x) } }').warnings == ()
    assert len(compile_plan('FIND(?t.name) WHERE { NOT { (?t, "blocks", ?x) } ?t {type: "Task"} }').warnings) == 1


def test_kml_statements_carry_them_too():
    plan = compile_plan('UPDATE ?t SET ATTRIBUTES { a: 1 } WHERE { ?t {type: "Task"} FILTER(?t.attributes.s != "x") }')
    assert len(plan.warnings) == 1 and plan.warnings[0].startswith('FILTER(?t.attributes.s != "x"): ')

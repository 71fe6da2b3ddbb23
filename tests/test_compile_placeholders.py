"""``kip2cypher compile`` without ``--params`` (``kip2cypher.compile(…, keep_placeholders=True)``):
placeholders at plain-value positions stay Cypher parameters (``:max_risk`` → ``$max_risk``) for
code that binds them at run time; a placeholder whose value shapes the statement is refused with
its position (issue 15). The last test binds the kept parameters by hand on a real Neo4j and
compares the rows with ``execute_kip``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import kip2cypher
from kip2cypher import KipError
from kip2cypher.cli import main

RISKY = 'FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.risk_level < :max_risk) }'


def cli(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def kept(text, parameters=None):
    return kip2cypher.compile(text, parameters, keep_placeholders=True)


def refusal(text):
    with pytest.raises(KipError) as info:
        kept(text)
    return info.value.to_dict()


def test_compile_without_params_keeps_the_placeholder_as_a_cypher_parameter():
    out = cli("compile", RISKY)
    assert out.exit_code == 0, out.output
    assert "< $max_risk" in out.stdout
    assert "// bound at run time: max_risk" in out.stdout
    find = json.loads(cli("compile", RISKY, "--format", "json").stdout)[0]
    assert find["runtime_parameters"] == ["max_risk"]
    assert "max_risk" not in find["parameters"] and "$max_risk" in find["cypher"]


def test_compile_with_params_still_inlines_the_value_as_an_engine_parameter():
    out = json.loads(cli("compile", RISKY, "--params", '{"max_risk": 3}', "--format", "json").stdout)
    assert out == kip2cypher.compile(RISKY, {"max_risk": 3})
    assert "$max_risk" not in out[0]["cypher"] and 3 in out[0]["parameters"].values()
    assert all("runtime_parameters" not in statement for statement in out)


def test_params_can_fix_the_placeholders_that_shape_the_statement_and_leave_the_others():
    text = 'FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, :rel, ?s) FILTER(?d.attributes.risk_level < :max_risk) }'
    assert "shapes the compiled statement" in json.loads(cli("compile", text).stdout)["error"]["message"]
    find = json.loads(cli("compile", text, "--params", '{"rel": "treats"}', "--format", "json").stdout)[0]
    assert find["runtime_parameters"] == ["max_risk"] and "treats" in json.dumps(find)


def test_the_python_api_and_the_executor_still_require_every_value_by_default():
    with pytest.raises(KipError, match=r"The placeholder :max_risk has no value \(parameters supplied: none\)"):
        kip2cypher.compile(RISKY)


def test_bound_placeholders_are_inlined_and_unbound_ones_kept():
    text = 'FIND(?d.name) WHERE { ?d {type: "Drug", name: :name} FILTER(?d.attributes.risk_level >= :low && IN(?d.attributes.tags, :tags)) }'
    find = kept(text, {"low": 1})[0]
    assert find["runtime_parameters"] == ["name", "tags"]
    assert "$name" in find["cypher"] and "$tags" in find["cypher"] and "$low" not in find["cypher"]
    assert 1 in find["parameters"].values()


def test_an_equality_with_a_kept_placeholder_decides_the_null_test_at_run_time():
    """KIP reads ``x == null`` as IS_NULL: with the value unknown at compile time, the statement
    must read it so when the caller binds null."""
    find = kept('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.note == :note) }')[0]
    assert "CASE WHEN $note IS NULL THEN" in find["cypher"]


@pytest.mark.parametrize(
    "text, name, line, column, becomes",
    [
        ("FIND(?d.name) WHERE {\n  ?d {type: :kind}\n}", "kind", 2, 13, "concept type"),
        ('FIND(?d.name) WHERE {\n  ?d {type: "Drug"}\n  (?d, :rel, ?x)\n}', "rel", 3, 8, "relationship type"),
        ('FIND(?d.name) WHERE { ?d {type: "Drug"} }\nLIMIT :n', "n", 2, 7, "LIMIT"),
        ('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(REGEX(?d.name, :pattern)) }', "pattern", 1, 63, "REGEX pattern"),
        ('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(IN(?d.name, ["a", :other])) }', "other", 1, 66, "checked or written"),
        ('UPSERT { CONCEPT ?d { {type: "Drug", name: :name} } }', "name", 1, 44, "checked and used"),
    ],
)
def test_a_placeholder_that_shapes_the_statement_needs_its_value(text, name, line, column, becomes):
    error = refusal(text)
    assert error["code"] == "KIP_1001"
    assert f"The placeholder :{name} shapes the compiled statement" in error["message"] and becomes in error["message"]
    assert (error["line"], error["column"]) == (line, column)
    assert f"--params '{{\"{name}\": …}}'" in error["hint"]


def test_the_cli_prints_the_shapes_the_statement_error_with_its_position():
    out = cli("compile", 'FIND(?d.name) WHERE { ?d {type: "Drug"} } LIMIT :n')
    error = json.loads(out.stdout)["error"]
    assert out.exit_code == 1 and "shapes the compiled statement" in error["message"] and error["column"] == 49


def test_a_kept_placeholder_named_like_an_engine_parameter_is_refused():
    error = refusal('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.name != :limit) } LIMIT 3')
    assert "already uses" in error["message"] and error["column"] == 59


def test_generated_parameter_names_step_around_a_kept_placeholder():
    find = kept('FIND(?d.name) WHERE { ?d {type: "Drug", name: "Aspirin"} FILTER(?d.attributes.risk_level > :p0) }')[0]
    assert find["runtime_parameters"] == ["p0"] and "p0" not in find["parameters"]
    assert "{type: $p1, name: $p2}" in find["cypher"] and (find["parameters"]["p1"], find["parameters"]["p2"]) == ("Drug", "Aspirin")


# ------------------------------------------------------------------ on Neo4j
CASES = [
    (RISKY, {"max_risk": 3}),
    ('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.controlled == :flag) }', {"flag": None}),
    ('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(!(?d.attributes.risk_level != :level)) }', {"level": 2}),
    ('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.risk_level != :level) }', {"level": None}),
    ('FIND(?d.name) WHERE { ?d {type: "Drug", name: :name} }', {"name": "Aspirin"}),
    ('FIND(?d.name) WHERE { ?d {type: "Drug"} NOT { (?d, "treats", {name: :_symptom}) } }', {"_symptom": "Headache"}),
    ('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(IN(?d.name, :names) || CONTAINS(?d.name, :part)) }', {"names": ["Morphine"], "part": "fen"}),
]


def test_kept_parameters_bound_by_hand_give_the_rows_execute_kip_gives(nexus):
    """Each compiled FIND, run by the neo4j driver with the values bound by hand, returns the names
    ``execute_kip`` returns with the same parameters; without them execute_kip answers KIP_1001."""
    import kql_graph

    kql_graph.load(nexus.driver, nexus.database)
    for text, values in CASES:
        find = kept(text)[0]
        assert find["label"] == "FIND" and sorted(find["runtime_parameters"]) == sorted(values)
        records = nexus.driver.execute_query(find["cypher"], {**find["parameters"], **values}, database_=nexus.database).records
        assert all(record["_undefined"] is None for record in records)
        expected = nexus.execute_kip(text, parameters=values)
        assert expected.get("result"), (text, expected)  # every case selects some drugs
        assert sorted(record["c0"] for record in records) == sorted(expected["result"]), text
    missing = nexus.execute_kip(RISKY)
    assert missing["error"]["code"] == "KIP_1001"
    assert missing["error"]["message"].startswith("The placeholder :max_risk has no value (parameters supplied: none).")

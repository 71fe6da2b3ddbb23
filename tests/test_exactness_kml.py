"""Exactness of KML and of placeholders (issue 13): each test is named after what broke and runs
on a real Neo4j through ``Nexus.execute_kip``. Rules: docs/kml.md ("Placeholders in names",
"UPDATE", "Strict instance_schema", "Dry runs", "Errors with positions") and docs/kql.md."""
from __future__ import annotations

import pytest

from test_exactness import DATA, SCHEMA, error, ok


@pytest.fixture()
def drugs(genesis):
    for capsule in (SCHEMA, DATA):
        assert "error" not in genesis.execute_kip(capsule)
    return genesis


def pairs(nexus, command, **parameters):
    """The (subject name, object name) pairs a FIND of two names answers, sorted."""
    return sorted(zip(*ok(nexus.execute_kip(command, parameters=parameters))))


TREATS = [("Aspirin", "Fever"), ("Aspirin", "Headache"), ("Aspirin", "Pain"), ("Ibuprofen", "Headache"), ("Naproxen", "Pain")]
SLEEP_IDENTITY = "?link ({type: :s_type, name: :s_name}, :predicate, {type: :o_type, name: :o_name})"
IBUPROFEN_HEADACHE = {"s_type": "Drug", "s_name": "Ibuprofen", "predicate": "treats", "o_type": "Symptom", "o_name": "Headache"}


# ---------------------------------------------------------------- placeholders where a quoted name stands
def test_predicate_placeholder_in_a_proposition_clause_was_a_syntax_error(drugs):
    # Regression: `(?s, :predicate, ?o)` (the sleep cycle's iteration over the primer's
    # predicates) was KIP_1001 at the `:`.
    assert pairs(drugs, "FIND(?d.name, ?s.name) WHERE { (?d, :predicate, ?s) }", predicate="treats") == TREATS
    assert pairs(drugs, "FIND(?d.name, ?s.name) WHERE { ?l (?d, :predicate, ?s) }", predicate="treats") == TREATS


def test_predicate_placeholder_with_path_operators_and_in_alternatives(drugs):
    assert ok(drugs.execute_kip('FIND(?x.name) WHERE { ({type: "Drug", name: "Ibuprofen"}, :p{1,3}, ?x) }', parameters={"p": "treats"})) == ["Headache"]
    assert pairs(drugs, 'FIND(?d.name, ?s.name) WHERE { (?d, "precedes" | :p, ?s) }', p="treats") == TREATS
    assert pairs(drugs, "FIND(?d.name, ?s.name) WHERE { (?d, :a | :b, ?s) }", a="treats", b="precedes") == TREATS


def test_placeholder_bound_to_a_misspelled_predicate_is_kip_2001_at_the_placeholder(drugs):
    for command in (
        "FIND(?s.name) WHERE { (?d, :p, ?s) }",
        "FIND(?s.name) WHERE { ({type: \"Drug\", name: \"Aspirin\"}, :p{0,3}, ?s) }",
        'FIND(?s.name) WHERE { (?d, "treats" | :p, ?s) }',
        "UPDATE ?d SET ATTRIBUTES { score: 2 } WHERE { ?d {type: \"Drug\"} OPTIONAL { (?d, :p, ?s) } }",
    ):
        e = error(drugs.execute_kip(command, parameters={"p": "treatz"}))
        assert e["code"] == "KIP_2001" and '"treatz"' in e["message"] and '"treats"' in e["hint"], command
        assert "line" in e, e
    assert ok(drugs.execute_kip('FIND(?d.attributes.score) WHERE { ?d {type: "Drug"} }')) == [1, 1, 1]


def test_predicate_placeholder_bound_to_a_non_string_or_an_unstorable_name(drugs):
    e = error(drugs.execute_kip("FIND(?s.name) WHERE { (?d, :p, ?s) }", parameters={"p": ["treats"]}))
    assert e["code"] == "KIP_1001" and ":p" in e["message"] and (e["line"], e["column"]) == (1, 28)
    e = error(drugs.execute_kip("FIND(?s.name) WHERE { (?d, :p, ?s) }", parameters={"p": ""}))
    assert e["code"] == "KIP_1002" and (e["line"], e["column"]) == (1, 28)
    e = error(drugs.execute_kip("FIND(?s.name) WHERE { (?d, :p, ?s) }", parameters={"q": "treats"}))
    assert e["code"] == "KIP_1001" and '"q"' in e["message"] and (e["line"], e["column"]) == (1, 28)


def test_sleep_cycle_decay_and_cleanup_by_placeholder_identity_were_syntax_errors(drugs):
    # The published agent instructions: confidence decay (UPDATE) and expiry cleanup (DELETE)
    # iterate :predicate over the primer's predicates.
    update = f"UPDATE ?link SET METADATA {{ confidence: MUL(COALESCE(?link.metadata.confidence, 1), 0.5) }} WHERE {{ {SLEEP_IDENTITY} }}"
    assert ok(drugs.execute_kip(update, parameters=IBUPROFEN_HEADACHE)) == {"updated": 1, "matched": 1}
    find = f"FIND(?link.metadata.confidence) WHERE {{ {SLEEP_IDENTITY} }}"
    assert ok(drugs.execute_kip(find, parameters=IBUPROFEN_HEADACHE)) == [0.5]
    e = error(drugs.execute_kip(update, parameters={**IBUPROFEN_HEADACHE, "predicate": "treatz"}))
    assert e["code"] == "KIP_2001" and '"treats"' in e["hint"]
    delete = f"DELETE PROPOSITIONS ?link WHERE {{ {SLEEP_IDENTITY} }}"
    assert ok(drugs.execute_kip(delete, parameters=IBUPROFEN_HEADACHE)) == {"deleted_propositions": 1}
    assert ok(drugs.execute_kip('FIND(COUNT(?l)) WHERE { ?l (?d, "treats", ?s) }')) == 4


def test_upsert_predicate_placeholders_in_set_propositions_and_proposition_blocks(drugs):
    capsule = """
    UPSERT {
      CONCEPT ?cough { {type: :o_type, name: "Cough"} }
      CONCEPT ?d { {type: :s_type, name: "Ibuprofen"} SET PROPOSITIONS { (:predicate, ?cough) } }
      PROPOSITION ?link { ({type: :s_type, name: :s_name}, :predicate, ?cough) }
    }"""
    params = {"s_type": "Drug", "s_name": "Naproxen", "o_type": "Symptom", "predicate": "treats"}
    result = ok(drugs.execute_kip(capsule, parameters=params))
    assert len(result["upsert_proposition_links"]) == 1
    assert pairs(drugs, 'FIND(?d.name, ?s.name) WHERE { ?s {type: "Symptom", name: "Cough"} (?d, "treats", ?s) }') == [("Ibuprofen", "Cough"), ("Naproxen", "Cough")]
    # the substituted value is checked as a literal is: undefined, not a string, unstorable
    e = error(drugs.execute_kip(capsule, parameters={**params, "predicate": "treatz"}))
    assert e["code"] == "KIP_2001" and '"treats"' in e["hint"] and "line" in e
    e = error(drugs.execute_kip(capsule, parameters={**params, "predicate": 7}))
    assert e["code"] == "KIP_1001" and ":predicate" in e["message"] and e["line"] == 4
    e = error(drugs.execute_kip(capsule, parameters={**params, "predicate": "a\u0000b"}))
    assert e["code"] == "KIP_1002"


def test_quoted_predicate_placeholders_stay_refused(drugs):
    for command in (
        'FIND(?s.name) WHERE { (?d, "x :p", ?s) }',
        'UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} SET PROPOSITIONS { ("x :p", {type: "Symptom", name: "Pain"}) } } }',
    ):
        e = error(drugs.execute_kip(command, parameters={"p": "treats"}))
        assert e["code"] == "KIP_1001" and "inside a quoted string" in e["message"], command


def test_value_placeholders_already_accepted_keep_working(drugs):
    # type/name in matchers, DESCRIBE … TYPE, SEARCH WITH TYPE / MODE / THRESHOLD / LIMIT, CURSOR
    assert ok(drugs.execute_kip("FIND(?d.name) WHERE { ?d {type: :t, name: :n} }", parameters={"t": "Drug", "n": "Naproxen"})) == ["Naproxen"]
    assert ok(drugs.execute_kip("DESCRIBE CONCEPT TYPE :t", parameters={"t": "Drug"}))["name"] == "Drug"
    assert ok(drugs.execute_kip("DESCRIBE PROPOSITION TYPE :p", parameters={"p": "treats"}))["name"] == "treats"
    hits = ok(drugs.execute_kip(
        "SEARCH CONCEPT :term WITH TYPE :t MODE :mode THRESHOLD :th LIMIT :n",
        parameters={"term": "aspirin", "t": "Drug", "mode": "keyword", "th": 0.5, "n": 2},
    ))
    assert [h["name"] for h in hits] == ["Aspirin"]
    first = drugs.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name LIMIT :n', parameters={"n": 2})
    assert ok(first) == ["Aspirin", "Ibuprofen"]
    rest = drugs.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name LIMIT :n CURSOR :c', parameters={"n": 2, "c": first["next_cursor"]})
    assert ok(rest) == ["Naproxen"]
